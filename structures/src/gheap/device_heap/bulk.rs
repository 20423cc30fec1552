//! Bulk calls of the device heap: an insert or delete that moves a large share of the heap
//! rebuilds it by one device sort instead of running one INS or DEL per batch (the kernels
//! and the argument that the rebuilt layout is a generalized heap: `kernels/gheap_bulk.cl`,
//! "Bulk calls").
//!
//! Why: every INS and DEL of the seed's heap passes through the root's lock, one after the
//! other, so a call of `b` batches costs about `b` root critical sections however many
//! work-groups run (docs/benchmarks/heap.md). A sort of all `n` keys costs `log2(n / K)`
//! merge passes over memory and no serial section. The rebuild
//! is to the heap what std's `BinaryHeap::extend` rebuilding instead of sifting each key is
//! to a binary heap.
//!
//! A bulk call is one operation: it runs under the heap's lock, between launches, so it
//! linearizes at its call like any other host call.

use asym_runtime::faults::retry_once;
use asym_runtime::{
    DeviceKind, Error, Kernel, Launch, Program, Result, Runtime, SvmBuffer, SvmElement, SvmMap,
};

use super::{copy_keys, staged, stride_items, to_u32, DeviceHeapKey, Inner};

/// When a host call rebuilds the device heap (one sort of every key) instead of running the
/// seed's INS and DEL operations, one per batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BulkPolicy {
    /// When the call moves enough keys that the sort is the cheaper way: at least
    /// [`BulkPolicy::MIN_BATCHES`] batches and at least a share of the keys involved (those
    /// held plus those inserted): 1/[`BulkPolicy::GPU_SHARE`] on a GPU,
    /// 1/[`BulkPolicy::CPU_SHARE`] on other devices.
    #[default]
    Auto,
    /// Never: every call runs INS and DEL operations (the seed's algorithm).
    Never,
    /// Every insert and delete (for tests and measurements).
    Always,
}

impl BulkPolicy {
    /// Fewest batches a call must move for [`BulkPolicy::Auto`] to rebuild: smaller calls
    /// are a few operations, cheap on any heap.
    pub const MIN_BATCHES: usize = 32;
    /// On a GPU, [`BulkPolicy::Auto`] rebuilds when the call moves at least 1/64 of the keys:
    /// a rebuild (one launch per merge pass, no serial section) of a heap of 16M keys at
    /// K = 1024 costs what 128 DELs or 512 INS cost, and of 1M keys less than 8 DELs
    /// (docs/benchmarks/heap.md).
    pub const GPU_SHARE: usize = 64;
    /// On a CPU device (PoCL on two cores, 2^18 keys held, K = 256) the sort costs about
    /// as much as INS of 1/5 and DEL of 1/16 of the heap: rebuild from 1/8.
    pub const CPU_SHARE: usize = 8;

    /// Whether a call of `batches` batches of `k` keys, on a heap holding `held` keys,
    /// rebuilds (`inserted` of the call's keys join the heap; `gpu`: the device is a GPU).
    pub fn rebuilds(
        self,
        batches: usize,
        k: usize,
        held: usize,
        inserted: usize,
        gpu: bool,
    ) -> bool {
        match self {
            BulkPolicy::Never => false,
            BulkPolicy::Always => true,
            BulkPolicy::Auto => {
                let share = if gpu {
                    Self::GPU_SHARE
                } else {
                    Self::CPU_SHARE
                };
                batches >= Self::MIN_BATCHES
                    && batches.saturating_mul(k).saturating_mul(share) >= held + inserted
            }
        }
    }
}

impl asym_runtime::Named for BulkPolicy {
    const KIND: &'static str = "bulk policy";
    const ALL: &'static [BulkPolicy] = &[BulkPolicy::Never, BulkPolicy::Auto, BulkPolicy::Always];
    fn name(self) -> &'static str {
        match self {
            BulkPolicy::Never => "never",
            BulkPolicy::Auto => "auto",
            BulkPolicy::Always => "always",
        }
    }
}

/// Merge passes of at most this many tiles per compute unit run as one launch (where the
/// heap does so at all: `DeviceHeapConfig::one_launch_merges`).
const ONE_LAUNCH_WAVES: usize = 4;

/// The bulk call's kernels (built from the heap's program).
pub(super) struct BulkKernels {
    gather: Kernel,
    sort_in: Kernel,
    split: Kernel,
    merge: Kernel,
    /// Split and merge in one launch (gheap_bulk_merge_pass), where the heap's configuration
    /// says so, for passes of at most `one_launch_tiles` tiles.
    merge_pass: Option<Kernel>,
    one_launch_tiles: usize,
    place: Kernel,
}

impl BulkKernels {
    pub(super) fn new(rt: &Runtime, program: &Program, one_launch_merges: bool) -> Result<Self> {
        Ok(BulkKernels {
            gather: Kernel::from_program(rt, program, "gheap_bulk_gather")?,
            sort_in: Kernel::from_program(rt, program, "gheap_sort_batches")?,
            split: Kernel::from_program(rt, program, "gheap_bulk_split")?,
            merge: Kernel::from_program(rt, program, "gheap_bulk_merge")?,
            merge_pass: match one_launch_merges {
                true => Some(Kernel::from_program(rt, program, "gheap_bulk_merge_pass")?),
                false => None,
            },
            // A pass's groups search their bounds in rounds of global loads: worth a launch
            // while the pass is a few waves of groups (on the H200 a 64M-key sort, 65,536
            // tiles a pass, took 88 ms to insert with every pass in one launch against 29).
            one_launch_tiles: ONE_LAUNCH_WAVES * (rt.profile().compute_units.max(1) as usize),
            place: Kernel::from_program(rt, program, "gheap_bulk_place")?,
        })
    }

    /// Sorts the `len` keys of `io` from `at` in place as batches of `k`, one work-group each
    /// (a batch is read whole into local memory before it is written back; the last is
    /// padded with the largest key up to `k`: `io` must hold it), mapped to the ordered form:
    /// a bulk call's new runs, and an INS/DEL launch's inserted batches. The launch after it
    /// on the in-order queue sees them.
    pub(super) fn sort_batches<E: SvmElement>(
        &mut self,
        io: &SvmBuffer<E>,
        at: usize,
        len: usize,
        k: usize,
        wg: usize,
    ) -> Result<Launch> {
        self.sort_in
            .arg_svm("keys", io)?
            .arg_scalar("at", at as u64)?
            .arg_scalar("len", len as u64)?;
        // A later launch's submission (or a wait) carries this one to the device.
        // Retried once on a device fault (`retry_once`): a launch that failed was not
        // enqueued, and inside a bulk call every launch is past the point of no return.
        retry_once(|| {
            self.sort_in
                .launch_unflushed(len.div_ceil(k) * wg, Some(wg))
        })
    }
}

/// A bulk call worked out by [`Inner::bulk_plan`], before its keys are uploaded.
pub(super) struct BulkPlan {
    t_start: std::time::Instant,
    alloc: std::time::Duration,
    inserted: usize,
    n_out: usize,
    /// Keys the heap keeps.
    kept: usize,
    /// Runs of K keys the heap holds before the call (nodes and the partial buffer).
    old_runs: usize,
    /// Runs with the call's keys.
    runs: usize,
    /// A launch the sort must follow (the call's keys copied into the staging buffer).
    before: Option<Launch>,
}

/// The keys a bulk call inserts.
pub(super) enum Source<'a, T: DeviceHeapKey> {
    /// These keys.
    Keys(&'a [T]),
    /// This many keys, written by the function into the mapped staging range.
    Fill(usize, &'a super::FillKeys<'a, T>),
    /// The first this many keys of a device buffer, in the upload form.
    Device(&'a SvmBuffer<T::Upload>, usize),
}

/// Where a bulk call's removed keys go.
pub(super) enum Out<'a, T: DeviceHeapKey> {
    /// Returned by the call.
    Return,
    /// Into this slice, exactly as long as the keys removed.
    Into(&'a mut [T]),
    /// To the front of a device buffer, in the upload form, copied on the device; `true`:
    /// the call returns before its launches complete (`Inner::pending`).
    Device(&'a SvmBuffer<T::Upload>, bool),
}

impl<T: DeviceHeapKey> Source<'_, T> {
    fn len(&self) -> usize {
        match self {
            Source::Keys(keys) => keys.len(),
            Source::Fill(len, _) | Source::Device(_, len) => *len,
        }
    }
}

/// The buffers a bulk call's sort moves keys between.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Buf {
    /// The staging buffer: where the runs start, and where the call's result leaves from.
    Io,
    /// The heap's key array (its nodes are gathered into the runs first).
    Keys,
    /// A buffer of the call's own, when the key array is too short.
    Scratch,
}

/// A bulk call's sort as it is enqueued: the buffers its launches name, and the launches so
/// far.
struct Sorter<'a, R: SvmElement> {
    kn: &'a mut BulkKernels,
    copy: &'a mut Kernel,
    io: &'a SvmBuffer<R>,
    heap_keys: &'a SvmBuffer<R>,
    /// The call's own second buffer, when the key array is too short.
    scratch: Option<&'a SvmBuffer<R>>,
    splits: &'a SvmBuffer<u32>,
    k: usize,
    wg: usize,
    launches: Vec<Launch>,
}

impl<'a, R: SvmElement> Sorter<'a, R> {
    /// The buffer `buf` names.
    fn buffer(&self, buf: Buf) -> Result<&'a SvmBuffer<R>> {
        match (buf, self.scratch) {
            (Buf::Io, _) => Ok(self.io),
            (Buf::Keys, _) => Ok(self.heap_keys),
            (Buf::Scratch, Some(s)) => Ok(s),
            (Buf::Scratch, None) => Err(Error::corrupted(
                "the device heap",
                "a bulk call's sort named a scratch buffer it was not given",
            )),
        }
    }

    /// The heap's `runs` runs (its nodes, then its partial buffer of `plen` keys) gathered
    /// into the staging buffer.
    fn gather(&mut self, partial: &SvmBuffer<R>, count: u32, plen: u32, runs: usize) -> Result<()> {
        self.kn
            .gather
            .arg_svm("keys", self.heap_keys)?
            .arg_svm("partial", partial)?
            .arg_svm("runs", self.io)?
            .arg_scalar("count", count)?
            .arg_scalar("plen", plen)?;
        let items = stride_items(runs * self.k, self.wg);
        let launch = retry_once(|| self.kn.gather.launch_unflushed(items, Some(self.wg)))?;
        self.launches.push(launch);
        Ok(())
    }

    /// One merge pass from `src` to `dst` over `total` keys from `at` (runs of `run`, or two
    /// runs, the first `first` keys long).
    fn pass(
        &mut self,
        src: Buf,
        dst: Buf,
        total: usize,
        run: usize,
        at: usize,
        first: usize,
    ) -> Result<()> {
        let (k, wg) = (self.k, self.wg);
        let tiles = total / k;
        let (src, dst) = (self.buffer(src)?, self.buffer(dst)?);
        let small = tiles <= self.kn.one_launch_tiles;
        if let (Some(merge_pass), true) = (&mut self.kn.merge_pass, small) {
            // One launch: each group finds its tile's bounds itself.
            to_u32(tiles, "batches in a bulk call")?;
            merge_pass
                .arg_svm("src", src)?
                .arg_svm("dst", dst)?
                .arg_scalar("total", total as u64)?
                .arg_scalar("run", run as u64)?
                .arg_scalar("at", at as u64)?
                .arg_scalar("first", first as u64)?;
            let launch = retry_once(|| merge_pass.launch_unflushed(tiles * wg, Some(wg)))?;
            self.launches.push(launch);
            return Ok(());
        }
        let kn = &mut *self.kn;
        kn.split
            .arg_svm("src", src)?
            .arg_svm("splits", self.splits)?
            .arg_scalar("total", total as u64)?
            .arg_scalar("run", run as u64)?
            .arg_scalar("tiles", to_u32(tiles, "batches in a bulk call")?)?
            .arg_scalar("at", at as u64)?
            .arg_scalar("first", first as u64)?;
        let launch = retry_once(|| kn.split.launch_unflushed(tiles.div_ceil(wg) * wg, Some(wg)))?;
        self.launches.push(launch);
        kn.merge
            .arg_svm("src", src)?
            .arg_svm("dst", dst)?
            .arg_svm("splits", self.splits)?
            .arg_scalar("total", total as u64)?
            .arg_scalar("run", run as u64)?
            .arg_scalar("at", at as u64)?
            .arg_scalar("first", first as u64)?;
        let launch = retry_once(|| kn.merge.launch_unflushed(tiles * wg, Some(wg)))?;
        self.launches.push(launch);
        Ok(())
    }

    /// The `total` keys from `at`, runs of K, merged pass after pass between the staging
    /// buffer and `partner` until one run is left: the buffer that holds it.
    fn sort(&mut self, partner: Buf, total: usize, at: usize) -> Result<Buf> {
        let (mut from, mut to) = (Buf::Io, partner);
        let mut run = self.k;
        while run < total {
            self.pass(from, to, total, run, at, 0)?;
            std::mem::swap(&mut from, &mut to);
            run *= 2;
        }
        Ok(from)
    }

    /// Keys `at..at + len` of `from` copied to the same place in the staging buffer.
    fn copy_back(&mut self, from: Buf, at: usize, len: usize) -> Result<()> {
        let from = self.buffer(from)?;
        let launch = copy_keys(self.copy, from, at, self.io, at, len)?;
        self.launches.push(launch);
        Ok(())
    }
}

impl<T: DeviceHeapKey> Inner<T> {
    /// Whether a call moving `batches` batches goes the bulk way (`inserted`: keys the call
    /// adds).
    pub(super) fn prefers_bulk(&self, batches: usize, inserted: usize) -> bool {
        let k = self.partial.len();
        let gpu = self.rt.profile().kind == DeviceKind::Gpu;
        self.bulk_policy
            .rebuilds(batches, k, self.count * k + self.plen, inserted, gpu)
    }

    /// One bulk call: inserts the keys of `src`, then removes the `n_out` smallest of
    /// everything and returns them sorted (`n_out` at most the keys held plus the keys
    /// inserted), or writes them where `out` says and returns nothing.
    pub(super) fn bulk(
        &mut self,
        src: Source<'_, T>,
        n_out: usize,
        out: Out<'_, T>,
    ) -> Result<Vec<T>> {
        let out_len = match &out {
            Out::Into(o) => Some(o.len()),
            Out::Device(d, _) if d.len() < n_out => Some(d.len()),
            _ => None,
        };
        let mut plan = self.bulk_plan(src.len(), n_out, out_len)?;
        let t_copy = std::time::Instant::now();
        match src {
            Source::Keys([]) => {}
            Source::Keys(keys) => {
                let at = plan.old_runs * self.partial.len();
                let io = self.staging.keys.as_mut().expect("staged by the plan");
                io.write_range(at, &T::upload(keys))?
            }
            Source::Fill(_, fill) => {
                let mut map = self.bulk_staging(&plan)?;
                let filled = fill(&mut map);
                map.unmap()?;
                filled?;
            }
            Source::Device(src, len) => {
                let at = plan.old_runs * self.partial.len();
                let io = self.staging.keys.as_ref().expect("staged by the plan");
                // In-order queue: the sort sees the copy; bulk_finish waits for it.
                plan.before = Some(copy_keys(&mut self.copy, src, 0, io, at, len)?);
            }
        }
        let copy = t_copy.elapsed();
        self.bulk_finish(plan, copy, out)
    }

    /// Adds completed launches of a bulk call to the profile, where there is one.
    pub(super) fn record_bulk_launches(&mut self, launches: &[Launch]) {
        let Some(p) = &mut self.profile else {
            return;
        };
        let times: Vec<(u64, u64)> = launches
            .iter()
            .filter_map(Launch::device_interval)
            .collect();
        p.bulk_launches += launches.len() as u64;
        let busy: u64 = times.iter().map(|(s, e)| e.saturating_sub(*s)).sum();
        p.bulk_device_busy_us += busy as f64 / 1e3;
        let first = times.iter().map(|t| t.0).min();
        let last = times.iter().map(|t| t.1).max();
        if let (Some(first), Some(last)) = (first, last) {
            p.bulk_device_span_us += last.saturating_sub(first) as f64 / 1e3;
        }
    }

    /// A bulk call inserting `inserted` keys and removing `n_out` (into a slice of `out_len`
    /// where given), worked out: checked, the heap's arrays grown and the staging buffers
    /// made for it. The inserted keys go to the staging range [`Inner::bulk_staging`] maps.
    pub(super) fn bulk_plan(
        &mut self,
        inserted: usize,
        n_out: usize,
        out_len: Option<usize>,
    ) -> Result<BulkPlan> {
        let t_start = std::time::Instant::now();
        let k = self.partial.len();
        let held = self.count * k + self.plen;
        let total = held + inserted;
        if n_out > total || out_len.is_some_and(|o| o != n_out) {
            return Err(Error::too_large("keys a bulk call removes", n_out, total));
        }
        let kept = total - n_out;
        // Runs of K keys: the nodes, the partial buffer (padded), the call's batches (the
        // last padded).
        let old_runs = self.count + usize::from(self.plen > 0);
        let runs = old_runs + inserted.div_ceil(k);
        to_u32(runs, "batches in a bulk call")?;
        to_u32(kept / k, "nodes")?;
        let t_alloc = std::time::Instant::now();
        self.reserve(kept / k)?;
        let st = &mut self.staging;
        let rt = &self.rt;
        // The runs start in the staging buffer: the heap's nodes and partial buffer first,
        // the call's keys uploaded after them and sorted in place. Merge passes ping-pong
        // between it and the heap's own key array, free once gathered (when it is long
        // enough: it can fall short by two nodes near its capacity, then a scratch buffer
        // stands in), so a bulk call allocates no more than an operation call: SVM
        // allocation is slow on the H200 (`reserve_staging` says how slow).
        staged(rt, &mut st.keys, runs * k)?;
        if self.slots < runs {
            staged(rt, &mut st.runs, runs * k)?;
        }
        staged(rt, &mut st.splits, runs)?;
        Ok(BulkPlan {
            t_start,
            alloc: t_alloc.elapsed(),
            inserted,
            n_out,
            kept,
            old_runs,
            runs,
            before: None,
        })
    }

    /// The staging range a planned bulk call's inserted keys go to, mapped for writing.
    pub(super) fn bulk_staging(&mut self, plan: &BulkPlan) -> Result<SvmMap<'_, T::Upload>> {
        let k = self.partial.len();
        let io = self.staging.keys.as_mut().expect("staged by the plan");
        io.map_range_for_overwrite_as::<T::Upload>(plan.old_runs * k, plan.inserted)
    }

    /// A finished bulk call's `n_out` keys removed, from the staging buffer where `out` asks
    /// for them on the host.
    fn bulk_out(&mut self, out: Out<'_, T>, n_out: usize) -> Result<Vec<T>> {
        let io = self.staging.keys.as_mut().ok_or_else(|| {
            Error::corrupted("the device heap", "a bulk call lost its staging buffer")
        })?;
        // The removed keys live only here now: each read is tried again once rather than
        // lose them.
        Ok(match out {
            _ if n_out == 0 => Vec::new(),
            Out::Return => T::download(retry_once(|| io.read_range_as::<T::Upload>(0, n_out))?),
            // The placement wrote them there.
            Out::Device(..) => Vec::new(),
            Out::Into(dst) => {
                match T::as_upload_mut(dst) {
                    Some(stored) => retry_once(|| io.read_range_into(0, stored))?,
                    None => {
                        let keys = retry_once(|| io.read_range_as(0, n_out))?;
                        dst.copy_from_slice(&T::download(keys))
                    }
                }
                Vec::new()
            }
        })
    }

    /// The rest of a planned bulk call whose keys are in the staging buffer (`copy`: the
    /// time uploading them took): the sort, the new layout, and the keys removed.
    pub(super) fn bulk_finish(
        &mut self,
        plan: BulkPlan,
        copy: std::time::Duration,
        out: Out<'_, T>,
    ) -> Result<Vec<T>> {
        let BulkPlan {
            t_start,
            alloc,
            inserted,
            n_out,
            kept,
            old_runs,
            runs,
            before,
        } = plan;
        let k = self.partial.len();
        let (count, plen) = (kept / k, kept % k);
        let padded = runs * k;
        let count_u32 = to_u32(count, "nodes")?;
        let use_keys = self.slots >= runs;
        // A heap that is one sorted run gathers as one (kernels/gheap_bulk.cl).
        let one_run = self.sorted_layout && old_runs > 0;
        let wg = self.wg;
        let st = &mut self.staging;
        let (Some(io), Some(splits)) = (&st.keys, &st.splits) else {
            unreachable!("staged() filled every buffer");
        };
        let heap_keys = &self.keys;
        let (partial, words, slots, hdr) = (&self.partial, &self.words, self.slots, &self.hdr);
        let (out_device, queued) = match &out {
            Out::Device(dst, queued) => (Some(*dst), *queued),
            _ => (None, false),
        };
        let (heap_count, heap_plen) = (self.count as u32, self.plen as u32);
        let mut sorter = Sorter {
            kn: &mut self.bulk,
            copy: &mut self.copy,
            io,
            heap_keys,
            scratch: st.runs.as_ref(),
            splits,
            k,
            wg,
            // In-order queue: each launch sees what the ones before it wrote; the last is
            // submitted (carrying the others: a flush per launch costs a driver call each;
            // flushing after the first launch and each pass gained nothing,
            // docs/decisions.md) and waited for, and dropping the rest then finds them
            // complete.
            launches: before.into_iter().collect(),
        };
        let t_kernel = std::time::Instant::now();
        // The launches, waited for. Merge passes write the key array before the placement
        // does, so from the first launch on the call cannot be undone: each launch is retried
        // once on a device fault (a transient one is survived), and a failure that persists
        // poisons the heap.
        let sorted = (|| -> Result<Vec<Launch>> {
            if old_runs > 0 {
                sorter.gather(partial, heap_count, heap_plen, old_runs)?;
            }
            if inserted > 0 {
                let launch = sorter.kn.sort_batches(io, old_runs * k, inserted, k, wg)?;
                sorter.launches.push(launch);
            }
            let partner = if use_keys { Buf::Keys } else { Buf::Scratch };
            let mut src = Buf::Io;
            let old_len = old_runs * k;
            if !one_run {
                // Every run paired, pass after pass, until one is left.
                src = sorter.sort(partner, padded, 0)?;
            } else if padded > old_len {
                // The heap is one sorted run already: the call's keys alone are sorted (in
                // their region), then the two runs merged in one pass.
                let new_len = padded - old_len;
                let from = sorter.sort(partner, new_len, old_len)?;
                if from != Buf::Io {
                    sorter.copy_back(from, old_len, new_len)?;
                }
                sorter.pass(Buf::Io, partner, padded, 0, 0, old_len)?;
                src = partner;
            }
            if src == Buf::Keys {
                // The placement writes the key array: the sorted keys move out of it first.
                sorter.copy_back(Buf::Keys, 0, padded)?;
                src = Buf::Io;
            }
            let src = sorter.buffer(src)?;
            let kn = &mut *sorter.kn;
            kn.place.arg_svm("sorted", src)?;
            // The keys removed go where the caller takes them from on the device, or to the
            // staging buffer to be read back.
            match out_device {
                Some(dst) => kn.place.arg_svm("out", dst)?,
                None => kn.place.arg_svm("out", io)?,
            };
            kn.place
                .arg_svm("keys", heap_keys)?
                .arg_svm("partial", partial)?
                .arg_svm("word", words)?
                .arg_scalar("n_out", n_out as u64)?
                .arg_scalar("count", count_u32)?
                .arg_scalar("plen", plen as u32)?
                .arg_scalar("slots", to_u32(slots, "node slots")?)?
                .arg_svm("hdr", hdr)?;
            let items = stride_items((n_out + kept).max(slots), wg);
            let mut place = retry_once(|| kn.place.launch(items, Some(wg)))?;
            if !queued {
                // A wait that failed may still have seen the kernel through: wait again.
                retry_once(|| place.wait_in_place())?;
            }
            sorter.launches.push(place);
            Ok(std::mem::take(&mut sorter.launches))
        })();
        let launches = match sorted {
            Ok(launches) => launches,
            Err(e) => {
                self.poisoned = Some(e.to_string());
                return Err(e);
            }
        };
        if queued {
            // The keys removed stay on the device: the caller's next launch follows these on
            // the in-order queue, and the next call on the heap waits for them (`settle`).
            // A round of the knapsack's device search then expands its nodes without the
            // host waiting between the heap's launches and its own.
            self.pending = launches;
        } else {
            // Every launch has completed (the last one was waited for, on an in-order queue);
            // the buffers are the host's again once the launches are gone.
            self.record_bulk_launches(&launches);
            drop(launches);
        }
        let t_kernel_end = std::time::Instant::now();
        // The placement wrote the header's count and partial length.
        self.count = count;
        self.plen = plen;
        self.sorted_layout = true;
        self.stats.launches += 1;
        self.stats.bulk_calls += 1;
        let out = self.bulk_out(out, n_out)?;
        if let Some(p) = &mut self.profile {
            p.host_alloc_us += alloc.as_secs_f64() * 1e6;
            p.host_copy_us += copy.as_secs_f64() * 1e6;
            p.host_prepare_us += (t_kernel - t_start).as_secs_f64() * 1e6;
            p.kernel_us += (t_kernel_end - t_kernel).as_secs_f64() * 1e6;
            p.host_read_us += t_kernel_end.elapsed().as_secs_f64() * 1e6;
        }
        Ok(out)
    }
}
