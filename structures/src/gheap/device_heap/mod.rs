//! The generalized heap on the throughput device (GpuOnly): the seed's TD-INS/TD-DEL heap (the
//! default) or BU-INS/TD-DEL heap ([`DeviceHeapConfig::with_direction`]) run by many
//! work-groups at once, with per-node lock words taken by atomic compare-and-swap. With
//! BU-INS a DEL waits for the climbs in flight (the seed's BU heap is not linearizable with a
//! partial buffer: `concurrent.rs` has the argument). BU-INS was not faster on the GPU
//! machine (docs/benchmarks/heap.md), hence the default.
//!
//! The heap lives in device-visible SVM between launches (nodes, lock words, the header with
//! the node count and the partial buffer); each call of the host API is one launch of
//! `gheap_run` (`kernels/gheap_run.cl`; the protocol and its memory-ordering argument are
//! written down in `kernels/gheap_locks.cl`) whose work-groups take the call's INS and DEL operations by ticket, run them
//! concurrently, and leave. The call's inserted batches are sorted before it by one
//! `gheap_sort_batches` launch (a work-group per batch, all at once), so an INS only merges;
//! a TD-INS loads a node only when the node's largest key says the batch changes it. A call
//! of DELs alone (a delete) runs on `gheap_delete` instead, the same TD-DEL with the control
//! computed by every work-item rather than built by one for the group to interpret, which
//! shortens every DEL (docs/benchmarks/heap.md).
//! Between launches the host only reads the small header, so the coarse transport (NVIDIA)
//! and the fine one (PoCL) behave the same.
//!
//! A call that moves a large share of the heap (an insert of many batches, a delete of many
//! keys) can instead rebuild it: one device sort of every key, the result laid out again as
//! a generalized heap ([`BulkPolicy`], module `bulk`). The seed's operations serialize on the
//! root lock; the rebuild has no serial section (docs/benchmarks/heap.md).
//!
//! Host threads may share one heap: calls are serialized on a mutex (one launch at a time);
//! the concurrency is among the work-groups of a launch.
//!
//! Capacity grows between launches: before an insert the host computes how many nodes the
//! heap can reach and, if the arrays are too small, allocates larger ones and copies the
//! heap on the device (doubling, up to an optional limit that gives
//! [`Error::CapacityExceeded`]). A failed launch (a lock wait past its bound, a node in a
//! state the protocol does not allow) poisons the heap: later calls return the error.

use std::sync::{Mutex, MutexGuard};

use asym_runtime::{Error, Kernel, Launch, Result, Runtime, Side, SvmBuffer, SvmElement};

use super::batch::{position, tree_slots};
use super::device_batch_ops::{check_local_memory, max_work_group, MAX_DEVICE_BATCH};
use super::InsertDirection;

mod bulk;
mod config;
mod key;
mod launch;
mod layout;
pub use bulk::BulkPolicy;
use bulk::{BulkKernels, BulkPlan, Out, Source};
pub use config::{DeviceHeapConfig, DeviceHeapProfile, DeviceHeapStats, HeapOp, LaunchTrace};
pub use key::{DeviceHeapKey, FillEach, FillKeys};
use launch::{alloc_zeroed, copy_keys, stride_items, to_u32};
pub(crate) use layout::gheap_cl_defines;
use layout::*;
pub use layout::{GHEAP_GENERAL_DELETE_ENV, GHEAP_PROFILE_ENV};

/// A generalized min-heap (batches of `K` keys) whose INS and DEL run as device work-groups.
pub struct DeviceGeneralizedHeap<T: DeviceHeapKey> {
    inner: Mutex<Inner<T>>,
    batch: usize,
}

struct Inner<T: DeviceHeapKey> {
    rt: Runtime,
    run: Kernel,
    /// `gheap_delete`, for launches of DELs alone (`None`: `run` takes those too).
    delete: Option<Kernel>,
    copy: Kernel,
    bulk: BulkKernels,
    bulk_policy: BulkPolicy,
    wg: usize,
    groups: usize,
    keys: SvmBuffer<T::Repr>,
    words: SvmBuffer<u32>,
    hdr: SvmBuffer<u32>,
    partial: SvmBuffer<T::Repr>,
    /// Full nodes the arrays have room for, and the array length in nodes.
    max_nodes: usize,
    slots: usize,
    limit: Option<usize>,
    /// 1 for BU-INS (the kernel's `bottom_up` argument).
    bottom_up: u32,
    /// The header as the last launch left it.
    count: usize,
    plen: usize,
    /// Whether the nodes in the order added and then the partial buffer hold the keys in
    /// sorted order, as a bulk call leaves them (until an INS or DEL launch): a bulk call
    /// then sorts only its own keys.
    sorted_layout: bool,
    poisoned: Option<String>,
    stats: DeviceHeapStats,
    /// `Some` in a profiling build (`ASYM_GHEAP_PROFILE`).
    profile: Option<DeviceHeapProfile>,
    /// Per-call buffers, kept between calls and grown when a call needs more: an SVM
    /// allocation per call cost a heap-ordered search's calls ten times their work.
    staging: Staging<T::Repr>,
    /// The launches of the last call that returned before they completed (a bulk call whose
    /// keys stay on the device: the caller's next launch follows them on the in-order queue
    /// and its wait covers theirs), waited for when the heap is next locked.
    pending: Vec<Launch>,
}

/// One heap's part of [`DeviceGeneralizedHeap::insert_each_with`].
enum EachPart {
    /// A bulk call, planned.
    Bulk(BulkPlan),
    /// INS operations of this many keys, staged at the start of the staging buffer.
    Ops(usize),
}

/// Where a call's inserted keys come from.
#[derive(Clone, Copy)]
enum Keys<'a, T: DeviceHeapKey> {
    /// These keys, uploaded by the call.
    Host(&'a [T]),
    /// The first `len` keys of a device buffer, in the upload form, copied on the device.
    Device(&'a SvmBuffer<T::Upload>, usize),
    /// `len` keys already written to the start of the staging buffer
    /// ([`Inner::ops_staging`]).
    Staged(usize),
}

impl<T: DeviceHeapKey> Keys<'_, T> {
    fn len(&self) -> usize {
        match self {
            Keys::Host(keys) => keys.len(),
            Keys::Device(_, len) | Keys::Staged(len) => *len,
        }
    }
}

/// What one launch returned: the operations' linearization order (when asked for), and each
/// DEL's keys (`lens[seq]` keys at `out[seq·K..]`, `seq` the DEL's place among the DELs in
/// linearization order).
struct RawLaunch<T> {
    order: Vec<u32>,
    lens: Vec<u32>,
    out: Vec<T>,
}

impl<T: Copy> RawLaunch<T> {
    /// Every DEL's keys, in linearization order: the slots compacted in place (a DEL that
    /// returned fewer than K keys leaves a gap), so the read-back vector is the result.
    fn deleted_in_order(self, k: usize) -> Vec<T> {
        let mut all = self.out;
        let mut end = 0;
        for (seq, &n) in self.lens.iter().enumerate() {
            let n = (n as usize).min(k);
            if end != seq * k {
                all.copy_within(seq * k..seq * k + n, end);
            }
            end += n;
        }
        all.truncate(end);
        all
    }
}

/// A call's inputs and outputs in SVM (the keys buffer as long as the heap's key array, grown
/// with it, and longer when a call needs it); the host writes and reads only the ranges a
/// call uses (`copy_from_host`, `read_range`), so their size costs nothing on the coarse
/// transport.
/// One buffer holds the inserted keys and, after them, the DELs' keys: a call of either
/// kind reuses what the other grew (an SVM allocation costs by its size on NVIDIA:
/// docs/benchmarks/runtime.md).
struct Staging<R: SvmElement> {
    keys: Option<SvmBuffer<R>>,
    ops: Option<SvmBuffer<u32>>,
    out_len: Option<SvmBuffer<u32>>,
    order: Option<SvmBuffer<u32>>,
    /// A bulk call's sort: the merge passes' second buffer when the key array is too short,
    /// and each merge tile's split (for passes that do not find their own).
    runs: Option<SvmBuffer<R>>,
    splits: Option<SvmBuffer<u32>>,
}

impl<R: SvmElement> Staging<R> {
    fn new() -> Self {
        Staging {
            keys: None,
            ops: None,
            out_len: None,
            order: None,
            runs: None,
            splits: None,
        }
    }
}

/// `slot`'s buffer, reallocated (to the next power of two) when shorter than `len`.
fn staged<'a, E: SvmElement>(
    rt: &Runtime,
    slot: &'a mut Option<SvmBuffer<E>>,
    len: usize,
) -> Result<&'a mut SvmBuffer<E>> {
    let len = len.max(1);
    if slot.as_ref().is_none_or(|b| b.len() < len) {
        *slot = None;
        *slot = Some(rt.alloc::<E>(len.next_power_of_two())?);
    }
    Ok(slot.as_mut().expect("allocated above"))
}

impl<T: DeviceHeapKey> std::fmt::Debug for DeviceGeneralizedHeap<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceGeneralizedHeap")
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl<T: DeviceHeapKey> DeviceGeneralizedHeap<T> {
    /// An empty heap on `rt`'s device.
    pub fn new(rt: &Runtime, config: &DeviceHeapConfig) -> Result<Self> {
        let k = config.batch;
        if !k.is_power_of_two() || !(2..=MAX_DEVICE_BATCH).contains(&k) {
            return Err(Error::out_of_range(
                "batch size",
                k,
                format!("the device heap takes a power of two from 2 to {MAX_DEVICE_BATCH}"),
            ));
        }
        // Five arrays of K keys, the control state and the step broadcast.
        check_local_memory(
            rt,
            5 * k * std::mem::size_of::<T::Repr>() + 2048,
            &format!("run a device heap of batches of {k} keys"),
        )?;
        let max_wg = max_work_group(rt);
        let wg = match config.work_group_size {
            Some(w) => {
                if !w.is_power_of_two() || w > k || w > max_wg {
                    return Err(Error::out_of_range(
                        "work-group size",
                        w,
                        format!(
                            "the device heap needs a power of two up to the batch size {k} \
                             and the device's limit {max_wg}"
                        ),
                    ));
                }
                w
            }
            None => DeviceHeapConfig::default_shape(rt, k).1,
        };
        rt.check_work_group(wg, "run the device generalized heap")?;
        let groups = match config.work_groups {
            Some(0) => {
                return Err(Error::out_of_range(
                    "work-groups",
                    0,
                    "the device heap needs at least one work-group",
                ))
            }
            Some(g) => g,
            None => DeviceHeapConfig::default_shape(rt, k).0,
        };
        if let Some(limit) = config.max_nodes {
            if limit == 0 {
                return Err(Error::out_of_range(
                    "nodes",
                    0,
                    "a device heap must have room for at least one node",
                ));
            }
        }
        let profiled = asym_runtime::env::switch(GHEAP_PROFILE_ENV)?;
        let program = rt.program_with(
            &asym_kernels::GHEAP,
            &format!(
                "{} -DKEY_MAP={} {}{}",
                gheap_cl_defines(k, wg),
                T::KEY_MAP,
                T::CL_DEFINES,
                if profiled { " -DGH_PROFILE" } else { "" },
            ),
        )?;
        let initial = config
            .initial_nodes
            .max(1)
            .min(config.max_nodes.unwrap_or(usize::MAX));
        let slots = tree_slots(initial);
        let mut hdr = rt.alloc::<u32>(HDR_WORDS)?;
        let mut h = vec![0u32; HDR_WORDS];
        h[HDR_MAX_NODES] = to_u32(initial, "nodes")?;
        hdr.write(&h)?;
        let partial = rt.alloc::<T::Repr>(k)?;
        let mut inner = Inner {
            run: Kernel::from_program(rt, &program, "gheap_run")?,
            delete: if profiled || asym_runtime::env::switch(GHEAP_GENERAL_DELETE_ENV)? {
                None
            } else {
                Some(Kernel::from_program(rt, &program, "gheap_delete")?)
            },
            copy: Kernel::from_program(rt, &program, "gheap_copy_keys")?,
            bulk: BulkKernels::new(
                rt,
                &program,
                config
                    .one_launch_merges
                    .unwrap_or(rt.profile().kind == asym_runtime::DeviceKind::Gpu),
            )?,
            bulk_policy: config.bulk,
            keys: alloc_zeroed::<T::Repr>(rt, slots * k)?,
            words: alloc_zeroed::<u32>(rt, slots)?,
            rt: rt.clone(),
            wg,
            groups,
            hdr,
            partial,
            max_nodes: initial,
            slots,
            limit: config.max_nodes,
            bottom_up: u32::from(config.direction == InsertDirection::BottomUp),
            count: 0,
            plen: 0,
            sorted_layout: true,
            poisoned: None,
            stats: DeviceHeapStats::default(),
            profile: profiled.then(DeviceHeapProfile::default),
            staging: Staging::new(),
            pending: Vec::new(),
        };
        inner.reserve_staging()?;
        Ok(DeviceGeneralizedHeap {
            inner: Mutex::new(inner),
            batch: k,
        })
    }

    /// Keys per node.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Work-groups and work-items per group of each launch.
    pub fn launch_shape(&self) -> (usize, usize) {
        let g = self.lock();
        (g.groups, g.wg)
    }

    /// Keys in the heap once its calls' launches complete. It does not wait for them: a call
    /// sets the host's count when it enqueues its launches (a round of the knapsack's device
    /// search asks before each launch, and must not wait for the heap's last call there).
    pub fn len(&self) -> usize {
        let g = self.mirror();
        g.count * self.batch + g.plen
    }

    /// Whether the heap holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits (bounded) for the launches an enqueued call left; their failure, if any, is
    /// returned here (and by every later call).
    pub fn finish(&self) -> Result<()> {
        self.lock().usable()
    }

    /// Full nodes the heap has room for now (it grows on demand up to its limit).
    pub fn capacity_nodes(&self) -> usize {
        self.lock().max_nodes
    }

    /// Launches so far (one per call that had work).
    pub fn launches(&self) -> u64 {
        self.lock().stats.launches
    }

    /// Changes when calls rebuild the heap instead of running INS and DEL operations.
    pub fn set_bulk_policy(&self, policy: BulkPolicy) {
        self.lock().bulk_policy = policy;
    }

    /// What the launches did so far (for measurements and tests).
    pub fn stats(&self) -> DeviceHeapStats {
        self.lock().stats
    }

    /// Where the DELs' time went, in a profiling build ([`DeviceHeapProfile`]).
    pub fn profile(&self) -> Option<DeviceHeapProfile> {
        self.lock().profile
    }

    /// Inserts `keys` as INS operations of at most `K` keys each, run concurrently by the
    /// launch's work-groups, or, when the call moves a large share of the heap (the
    /// configuration's [`BulkPolicy`]), by one rebuild: every key sorted on the device.
    pub fn insert(&self, keys: &[T]) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        if keys.is_empty() {
            return Ok(());
        }
        let batches = keys.len().div_ceil(self.batch);
        if g.prefers_bulk(batches, keys.len()) {
            return g.bulk(Source::Keys(keys), 0, Out::Return).map(|_| ());
        }
        let ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
        g.run(Keys::Host(keys), &ops, false, false).map(|_| ())
    }

    /// Inserts `len` keys that `fill` writes, in their upload form
    /// ([`DeviceHeapKey::to_upload`]), into the memory they travel to the device from: on a
    /// bulk call a mapped range of the staging buffer, so a caller that makes or picks the
    /// keys (a device set routing an insert among its members) writes each key once, with
    /// no host vector between. `fill` must write every element; an error it returns ends the
    /// call before anything is inserted.
    pub fn insert_with(&self, len: usize, fill: &FillKeys<'_, T>) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        if len == 0 {
            return Ok(());
        }
        let batches = len.div_ceil(self.batch);
        if g.prefers_bulk(batches, len) {
            return g.bulk(Source::Fill(len, fill), 0, Out::Return).map(|_| ());
        }
        let mut stored = vec![T::Upload::default(); len];
        fill(&mut stored)?;
        let keys = T::download(stored);
        let ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
        g.run(Keys::Host(&keys), &ops, false, false).map(|_| ())
    }

    /// Whether an insert of `len` keys would be one bulk call (a rebuild by one device sort,
    /// as [`BulkPolicy`] decides), the kind [`DeviceGeneralizedHeap::insert_each_with`] makes.
    pub fn insert_rebuilds(&self, len: usize) -> bool {
        let g = self.lock();
        len > 0 && g.prefers_bulk(len.div_ceil(self.batch), len)
    }

    /// Inserts into each of `heaps` (distinct heaps, owned by one caller, which locks them
    /// in the order given) `lens[i]` keys that one call of `fill` writes straight into every
    /// heap's mapped staging at once, one slice per heap: a caller routing one set of keys
    /// among the heaps (a device set, the lanes of one device) reads each key once. Then
    /// every heap runs its part at once, a thread each: a bulk call's sort where the heap's
    /// [`BulkPolicy`] takes the insert as one, else its INS operations. Returns each heap's
    /// outcome and the seconds its part took (the shared upload included); an error before
    /// the parts run (a heap unusable, a size refused, `fill` failing) leaves every heap as
    /// it was and is returned as the whole result.
    pub fn insert_each_with(
        heaps: &[&Self],
        lens: &[usize],
        fill: &FillEach<'_, T>,
    ) -> Result<Vec<(Result<()>, f64)>> {
        if heaps.len() != lens.len() {
            return Err(Error::InvalidArgument(format!(
                "{} heaps and {} lengths",
                heaps.len(),
                lens.len()
            )));
        }
        for (i, a) in heaps.iter().enumerate() {
            if heaps[..i].iter().any(|b| std::ptr::eq(*a, *b)) {
                return Err(Error::InvalidArgument(
                    "a heap given twice to one insert".into(),
                ));
            }
        }
        let started = std::time::Instant::now();
        let mut guards: Vec<MutexGuard<'_, Inner<T>>> = heaps.iter().map(|h| h.lock()).collect();
        let mut plans = Vec::with_capacity(guards.len());
        for (g, &len) in guards.iter_mut().zip(lens) {
            g.usable()?;
            let k = g.partial.len();
            plans.push(if len > 0 && g.prefers_bulk(len.div_ceil(k), len) {
                EachPart::Bulk(g.bulk_plan(len, 0, None)?)
            } else {
                EachPart::Ops(len)
            });
        }
        let t_copy = std::time::Instant::now();
        {
            let mut maps = Vec::with_capacity(guards.len());
            for (g, plan) in guards.iter_mut().zip(&plans) {
                maps.push(match plan {
                    EachPart::Bulk(plan) => g.bulk_staging(plan)?,
                    EachPart::Ops(len) => g.ops_staging(*len)?,
                });
            }
            let filled = {
                let mut slices: Vec<&mut [T::Upload]> = maps.iter_mut().map(|m| &mut **m).collect();
                fill(&mut slices)
            };
            for map in maps {
                map.unmap()?;
            }
            filled?;
        }
        let copy = t_copy.elapsed();
        let shared_s = started.elapsed().as_secs_f64();
        let inners = guards.iter_mut().map(|g| &mut **g).zip(plans);
        let done = super::on_threads(
            inners,
            "a heap's inserting thread",
            |(inner, plan)| match plan {
                EachPart::Bulk(plan) => inner.bulk_finish(plan, copy, Out::Return).map(|_| ()),
                EachPart::Ops(0) => Ok(()),
                EachPart::Ops(len) => {
                    let batches = len.div_ceil(inner.partial.len());
                    let ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
                    inner.run(Keys::Staged(len), &ops, false, false).map(|_| ())
                }
            },
        );
        Ok(done
            .into_iter()
            .map(|(r, secs)| (r, shared_s + secs))
            .collect())
    }

    /// Removes the `out.len()` smallest keys into `out`, sorted: a bulk call copies them from
    /// the device straight into `out` (several heaps can fill the parts of one vector). An
    /// error if the heap holds fewer keys.
    pub fn delete_min_into(&self, out: &mut [T]) -> Result<()> {
        let n = out.len();
        let mut g = self.lock();
        g.usable()?;
        let held = g.count * self.batch + g.plen;
        if n > held {
            return Err(Error::too_large(
                format!("a delete into a buffer from a heap holding {held}"),
                n,
                held,
            ));
        }
        if n == 0 {
            return Ok(());
        }
        if g.prefers_bulk(n.div_ceil(self.batch), 0) {
            return g.bulk(Source::Keys(&[]), n, Out::Into(out)).map(|_| ());
        }
        out.copy_from_slice(&g.delete_by_operations(n)?);
        Ok(())
    }

    /// Removes the `n` smallest keys and returns them sorted (fewer if the heap holds fewer).
    /// `n ≤ K` is one DEL; larger `n` are ⌈n/K⌉ DELs run concurrently, whose results in
    /// linearization order are the sorted sequence, or one rebuild when `n` is a large share
    /// of the heap ([`BulkPolicy`]).
    pub fn delete_min(&self, n: usize) -> Result<Vec<T>> {
        let mut g = self.lock();
        g.usable()?;
        let n = n.min(g.count * self.batch + g.plen);
        if n == 0 {
            return Ok(Vec::new());
        }
        if g.prefers_bulk(n.div_ceil(self.batch), 0) {
            return g.bulk(Source::Keys(&[]), n, Out::Return);
        }
        g.delete_by_operations(n)
    }

    /// Inserts the first `len` keys of `src`, a buffer on this heap's device holding keys in
    /// their upload form ([`DeviceHeapKey::to_upload`]), without them crossing to the host:
    /// a kernel that makes keys (a search expanding nodes on the device) hands them over
    /// where it wrote them. The keys are copied on the device, then inserted as
    /// [`DeviceGeneralizedHeap::insert`] would (operations, or a rebuild by the
    /// [`BulkPolicy`]). An error if `src` is shorter than `len`.
    pub fn insert_from_device(&self, src: &SvmBuffer<T::Upload>, len: usize) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        if len > src.len() {
            return Err(Error::too_large(
                "an insert from a device buffer",
                len,
                src.len(),
            ));
        }
        if len == 0 {
            return Ok(());
        }
        let batches = len.div_ceil(self.batch);
        if g.prefers_bulk(batches, len) {
            return g.bulk(Source::Device(src, len), 0, Out::Return).map(|_| ());
        }
        let ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
        g.run(Keys::Device(src, len), &ops, false, false)
            .map(|_| ())
    }

    /// Removes the `n` smallest keys into `dst[..n]`, a buffer on this heap's device, sorted
    /// and in their upload form, without them crossing to the host (the other half of
    /// [`DeviceGeneralizedHeap::insert_from_device`]). An error if the heap holds fewer
    /// than `n` keys or `dst` is shorter.
    pub fn delete_min_to_device(&self, n: usize, dst: &SvmBuffer<T::Upload>) -> Result<()> {
        self.delete_to(n, dst, false)
    }

    /// [`DeviceGeneralizedHeap::delete_min_to_device`] that may return before its launches
    /// complete (where the heap rebuilds): `dst` holds the keys once a later launch on the
    /// runtime's main queue has been waited for (the queue runs in order), once the heap's
    /// next call returns (it waits first), or after [`DeviceGeneralizedHeap::finish`]
    /// ([`DeviceGeneralizedHeap::len`] does not wait). Host access to `dst` or the heap's
    /// buffers before that is refused with [`Error::Busy`]. A caller that launches its own
    /// kernel on `dst` next (a branch-and-bound round expanding the nodes taken out) spares
    /// a wait for the host between the two.
    pub fn enqueue_delete_min_to_device(&self, n: usize, dst: &SvmBuffer<T::Upload>) -> Result<()> {
        self.delete_to(n, dst, true)
    }

    fn delete_to(&self, n: usize, dst: &SvmBuffer<T::Upload>, queued: bool) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        let held = g.count * self.batch + g.plen;
        if n > held || n > dst.len() {
            return Err(Error::InvalidArgument(format!(
                "a delete of {n} keys from a heap holding {held} into a device buffer of {}",
                dst.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        if g.prefers_bulk(n.div_ceil(self.batch), 0) {
            return g
                .bulk(Source::Keys(&[]), n, Out::Device(dst, queued))
                .map(|_| ());
        }
        g.delete_to_device(n, dst)
    }

    /// [`DeviceGeneralizedHeap::insert_from_device`] of `src[..len]`, then
    /// [`DeviceGeneralizedHeap::delete_min_to_device`] of `n_out` keys into `dst`, as one
    /// call: where the [`BulkPolicy`] rebuilds, one sort of everything serves both (a
    /// branch-and-bound round handing its children in and taking the next round's nodes out
    /// sorts once, not twice); otherwise the INS operations, then the DELs. An error if
    /// `n_out` exceeds the keys held plus `len`, or a buffer is too short; the heap is then
    /// unchanged.
    pub fn insert_then_delete_on_device(
        &self,
        src: &SvmBuffer<T::Upload>,
        len: usize,
        n_out: usize,
        dst: &SvmBuffer<T::Upload>,
    ) -> Result<()> {
        self.insert_then_delete(src, len, n_out, dst, false)
    }

    /// [`DeviceGeneralizedHeap::insert_then_delete_on_device`] that may return before its
    /// launches complete, as [`DeviceGeneralizedHeap::enqueue_delete_min_to_device`] does
    /// (`src` too is the device's until then).
    pub fn enqueue_insert_then_delete_on_device(
        &self,
        src: &SvmBuffer<T::Upload>,
        len: usize,
        n_out: usize,
        dst: &SvmBuffer<T::Upload>,
    ) -> Result<()> {
        self.insert_then_delete(src, len, n_out, dst, true)
    }

    fn insert_then_delete(
        &self,
        src: &SvmBuffer<T::Upload>,
        len: usize,
        n_out: usize,
        dst: &SvmBuffer<T::Upload>,
        queued: bool,
    ) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        let held = g.count * self.batch + g.plen;
        if len > src.len() || n_out > held + len || n_out > dst.len() {
            return Err(Error::InvalidArgument(format!(
                "an insert of {len} keys from a device buffer of {} and a delete of {n_out} \
                 into one of {}, on a heap holding {held}",
                src.len(),
                dst.len()
            )));
        }
        let batches = len.div_ceil(self.batch) + n_out.div_ceil(self.batch);
        if g.prefers_bulk(batches, len) {
            return g
                .bulk(Source::Device(src, len), n_out, Out::Device(dst, queued))
                .map(|_| ());
        }
        if len > 0 {
            let ops: Vec<HeapOp> = (0..len.div_ceil(self.batch)).map(HeapOp::Insert).collect();
            g.run(Keys::Device(src, len), &ops, false, false)?;
        }
        if n_out > 0 {
            g.delete_to_device(n_out, dst)?;
        }
        Ok(())
    }

    /// One launch running `ops` concurrently, its work-groups taking them in list order;
    /// INS operations take their batches from `keys`. Returns the order in which they took
    /// effect and what each DEL returned: replaying that order on a sequential priority queue
    /// must give the same results (the tests do).
    pub fn run_concurrent(&self, keys: &[T], ops: &[HeapOp]) -> Result<LaunchTrace<T>> {
        let mut g = self.lock();
        g.usable()?;
        let batches = keys.len().div_ceil(self.batch);
        for (i, op) in ops.iter().enumerate() {
            match *op {
                HeapOp::Insert(b) if b >= batches => {
                    return Err(Error::InvalidArgument(format!(
                        "operation {i} inserts batch {b}, but {} keys make {batches} batches",
                        keys.len()
                    )))
                }
                HeapOp::Delete(n) if n == 0 || n > self.batch => {
                    return Err(Error::out_of_range(
                        format!("operation {i} deletes"),
                        n,
                        format!("a DEL takes 1 to K = {} keys", self.batch),
                    ))
                }
                _ => {}
            }
        }
        let raw = g.run(Keys::Host(keys), ops, true, true)?;
        let order: Vec<usize> = raw.order.iter().map(|&t| t as usize).collect();
        let k = self.batch;
        let mut deleted = vec![Vec::new(); ops.len()];
        let dels_in_order = order
            .iter()
            .filter(|&&i| matches!(ops[i], HeapOp::Delete(_)));
        for (seq, &i) in dels_in_order.enumerate() {
            let n = (raw.lens[seq] as usize).min(k);
            deleted[i] = raw.out[seq * k..seq * k + n].to_vec();
        }
        Ok(LaunchTrace { order, deleted })
    }

    /// The seed's mixed workload in one launch: for each batch of `keys`, an INS of it and a
    /// DEL of K keys, all concurrent. Returns each DEL's keys in linearization order.
    pub fn insert_delete_pairs(&self, keys: &[T]) -> Result<Vec<Vec<T>>> {
        let ops: Vec<HeapOp> = (0..keys.len().div_ceil(self.batch))
            .flat_map(|b| [HeapOp::Insert(b), HeapOp::Delete(self.batch)])
            .collect();
        let trace = self.run_concurrent(keys, &ops)?;
        let mut deleted = trace.deleted;
        Ok(trace
            .order
            .iter()
            .filter(|&&i| matches!(ops[i], HeapOp::Delete(_)))
            .map(|&i| std::mem::take(&mut deleted[i]))
            .collect())
    }

    /// The smallest key, without removing it.
    pub fn peek(&self) -> Result<Option<T>> {
        let mut g = self.lock();
        g.usable()?;
        if g.count == 0 && g.plen == 0 {
            return Ok(None);
        }
        // A DEL of one key, then an INS of it back, would disturb the heap: read instead.
        let k = self.batch;
        let source = if g.count > 0 { 0 } else { 1 };
        let first = g.read_first(source, k)?;
        Ok(Some(T::from_repr(first)))
    }

    /// Reads the whole heap back (a map of every node: for tests and debugging, not for hot
    /// paths) and checks the generalized heap properties between launches: exactly the first
    /// `count` positions of the bit-reversal order hold nodes (`AVAIL`, every other slot
    /// `EMPTY` — the root's may stay `AVAIL` in an empty heap — no lock held, no BU-INS claim
    /// left), each node is sorted and no smaller than its parent's largest key, the partial
    /// buffer is sorted, shorter than K and no smaller than the root's largest key. A
    /// violation is [`Error::Corrupted`] naming it.
    pub fn check_invariants(&self) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        let k = self.batch;
        let (count, plen) = (g.count, g.plen);
        let words = g.words.read()?;
        let keys = g.keys.read()?;
        let partial = g.partial.read()?;
        let bad = |what: String| {
            Err(Error::corrupted(
                "the device heap",
                format!("invariant broken: {what}"),
            ))
        };
        let present: std::collections::HashSet<usize> = (0..count).map(position).collect();
        for (pos, &w) in words.iter().enumerate() {
            let want = u32::from(present.contains(&pos));
            // The root's word doubles as the header's lock: an empty heap may leave it AVAIL.
            let root_of_empty = pos == 0 && count == 0 && w == 1;
            if w != want && !root_of_empty {
                return bad(format!(
                    "node slot {pos} has lock word {w:#x}, expected {want} (count {count})"
                ));
            }
        }
        let node = |pos: usize| &keys[pos * k..(pos + 1) * k];
        for &pos in &present {
            let n = node(pos);
            if n.windows(2).any(|w| w[0] > w[1]) {
                return bad(format!("node {pos} is not sorted"));
            }
            if pos > 0 && n[0] < node((pos - 1) / 2)[k - 1] {
                return bad(format!("node {pos} holds a key below its parent's largest"));
            }
        }
        let part = &partial[..plen];
        if plen >= k || part.windows(2).any(|w| w[0] > w[1]) {
            return bad(format!(
                "the partial buffer ({plen} keys) is unsorted or full"
            ));
        }
        if count > 0 && plen > 0 && part[0] < node(0)[k - 1] {
            return bad("the partial buffer holds a key below the root's largest".into());
        }
        Ok(())
    }

    /// Removes every key (keeps the arrays).
    pub fn clear(&self) -> Result<()> {
        let mut g = self.lock();
        let slots = g.slots;
        g.words.write(&vec![0; slots])?;
        let mut h = vec![0u32; HDR_WORDS];
        h[HDR_MAX_NODES] = to_u32(g.max_nodes, "nodes")?;
        g.hdr.write(&h)?;
        g.count = 0;
        g.plen = 0;
        g.sorted_layout = true;
        g.poisoned = None;
        g.stats = DeviceHeapStats::default();
        if g.profile.is_some() {
            g.profile = Some(DeviceHeapProfile::default());
        }
        Ok(())
    }

    /// The heap's state without waiting for launches a call left: for what the host
    /// mirrors (sizes), which calls set when they enqueue.
    fn mirror(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        // A panic in a call leaves the host mirror possibly stale; the next launch re-reads
        // the header, so carrying on is sound.
        let mut g = self.mirror();
        g.settle();
        g
    }
}
