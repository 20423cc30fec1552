//! Heap-based batch k-selection: the k-th smallest key of every sub-list of a list set, as in
//! the ad-heap seed (max-heap of the first k keys; every later key smaller than the root
//! replaces it by update-key; the root is the answer).
//!
//! Keys are `i32`, `u32` or `f32`. Internally every key is mapped to an "ordered" `i32` whose
//! signed order is the key's order ([`SelectKey`]), so one heap and one kernel serve all three.
//! `f32` follows [`f32::total_cmp`]: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN.
//!
//! Modes ([`Mode`]):
//! - **CpuOnly**: the pinned latency threads claim sub-lists from one counter and run the
//!   cache-aligned d-heap ([`DHeap`]) on them.
//! - **GpuOnly**: the device runs `kernels/kselect.cl`, one work-group per sub-list, in chunks
//!   staged through two sets of SVM buffers so the host copies chunk i+1 while the device
//!   computes chunk i (double buffering; on the coarse transport each hand-off is an unmap and
//!   a kernel launch).
//! - **Cooperative** (by amount): latency threads and the device claim sub-lists from the same
//!   counter. The device first claims a small probe (1/256 of the sub-lists), then claims its
//!   measured share of the throughput applied to what remains (at most a full chunk), and stops
//!   claiming once that share rounds to nothing, so a slow device cannot leave the CPU waiting
//!   at the end and a fast one is not starved.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::time::Instant;

use asym_runtime::{Error, Kernel, LatencyPool, Launch, Mode, Result, Runtime, SvmBuffer};
use rayon::prelude::*;

use crate::dheap::{check_d, DHeap};

/// A key type batch k-selection accepts.
pub trait SelectKey: Copy + Send + Sync + std::fmt::Debug + PartialEq + 'static {
    /// NumPy dtype string (`<i4`, `<u4`, `<f4`).
    const DTYPE: &'static str;
    /// Maps the key to an `i32` whose signed order is the key's order.
    fn to_ordered(self) -> i32;
    /// Inverse of [`SelectKey::to_ordered`].
    fn from_ordered(v: i32) -> Self;
    /// The key's order (total), for references and tests.
    fn cmp_keys(a: &Self, b: &Self) -> std::cmp::Ordering {
        a.to_ordered().cmp(&b.to_ordered())
    }
}

impl SelectKey for i32 {
    const DTYPE: &'static str = "<i4";
    #[inline]
    fn to_ordered(self) -> i32 {
        self
    }
    #[inline]
    fn from_ordered(v: i32) -> Self {
        v
    }
}

impl SelectKey for u32 {
    const DTYPE: &'static str = "<u4";
    #[inline]
    fn to_ordered(self) -> i32 {
        (self ^ 0x8000_0000) as i32
    }
    #[inline]
    fn from_ordered(v: i32) -> Self {
        (v as u32) ^ 0x8000_0000
    }
}

impl SelectKey for f32 {
    const DTYPE: &'static str = "<f4";
    #[inline]
    fn to_ordered(self) -> i32 {
        // total_cmp's trick: flip the magnitude bits of negatives.
        let b = self.to_bits() as i32;
        b ^ (((b >> 31) as u32) >> 1) as i32
    }
    #[inline]
    fn from_ordered(v: i32) -> Self {
        f32::from_bits((v ^ (((v >> 31) as u32) >> 1) as i32) as u32)
    }
}

/// How the list set is cut into sub-lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sublists {
    /// Consecutive sub-lists of this length (the total must be a multiple of it).
    Equal(usize),
    /// Boundaries: sub-list i is `offsets[i]..offsets[i + 1]`; starts at 0, ends at the total,
    /// strictly increasing.
    Offsets(Vec<usize>),
}

impl Sublists {
    /// Checks the cut against `total` keys and `k`, returning the boundaries.
    pub fn boundaries(&self, total: usize, k: usize) -> Result<Vec<usize>> {
        if total == 0 {
            return Err(Error::InvalidArgument("the input is empty".into()));
        }
        let offs = match self {
            Sublists::Equal(0) => return Err(Error::InvalidArgument("sub-list length 0".into())),
            Sublists::Equal(len) => {
                if total % len != 0 {
                    return Err(Error::InvalidArgument(format!(
                        "{total} keys cannot be cut into sub-lists of {len} ({total} is not a multiple of {len})"
                    )));
                }
                (0..=total / len).map(|i| i * len).collect()
            }
            Sublists::Offsets(o) => {
                if o.len() < 2 || o[0] != 0 || *o.last().unwrap_or(&0) != total {
                    return Err(Error::InvalidArgument(format!(
                        "sub-list offsets must start at 0 and end at {total} (the number of keys)"
                    )));
                }
                if let Some(w) = o.windows(2).position(|w| w[1] <= w[0]) {
                    return Err(Error::InvalidArgument(format!(
                        "sub-list {w} is empty or offsets decrease"
                    )));
                }
                o.clone()
            }
        };
        let shortest = offs.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(0);
        if k == 0 || k > shortest {
            return Err(Error::InvalidArgument(format!(
                "k = {k} is out of range: it must be between 1 and the shortest sub-list's length, {shortest}"
            )));
        }
        Ok(offs)
    }
}

/// What a selection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SelectStats {
    /// Sub-lists the latency threads handled.
    pub cpu_sublists: usize,
    /// Sub-lists the device handled.
    pub device_sublists: usize,
    /// Device launches.
    pub launches: usize,
    /// Whether the device kept its heaps in local memory.
    pub local_heap: bool,
}

/// Batch k-selection on a runtime (optional: CpuOnly needs none) and a latency pool.
pub struct KSelector {
    rt: Option<Runtime>,
    pool: LatencyPool,
    d: usize,
    work_group: Option<usize>,
    /// Measured speeds per sub-list length (bucketed by log2), for Cooperative's split.
    learned: std::sync::Mutex<std::collections::HashMap<u32, Learned>>,
    /// Device staging buffers kept between calls.
    stages: StageCache,
}

/// What earlier selections measured for one sub-list length bucket.
#[derive(Clone, Copy, Debug, Default)]
struct Learned {
    /// All latency threads together, keys per second (0: unknown).
    cpu_keys_per_s: f64,
    /// The device, keys per second over whole chunks (0: unknown).
    dev_keys_per_s: f64,
    /// Shortest time from claim to answers of one device launch, seconds (0: unknown).
    dev_launch_s: f64,
}

fn bucket(avg_len: usize) -> u32 {
    usize::BITS - avg_len.max(1).leading_zeros()
}

impl std::fmt::Debug for KSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KSelector")
            .field("rt", &self.rt)
            .field("d", &self.d)
            .finish()
    }
}

/// Sub-lists handed out from one counter to every worker, CPU or device.
struct Claims {
    next: AtomicUsize,
    n: usize,
}

impl Claims {
    fn claim(&self, count: usize) -> Option<std::ops::Range<usize>> {
        let start = self.next.fetch_add(count.max(1), Ordering::Relaxed);
        (start < self.n).then(|| start..(start + count.max(1)).min(self.n))
    }
    fn remaining(&self) -> usize {
        self.n.saturating_sub(self.next.load(Ordering::Relaxed))
    }
}

/// Progress shared by the workers of one selection (keys done per side, for the split).
struct Progress {
    cpu_keys: AtomicUsize,
    started: Instant,
}

impl KSelector {
    /// A selector with heaps of arity `d` (2, 4, 8, 16, 32 or 64).
    pub fn new(rt: Option<Runtime>, pool: LatencyPool, d: usize) -> Result<Self> {
        check_d(d)?;
        Ok(KSelector {
            rt,
            pool,
            d,
            work_group: None,
            learned: Default::default(),
            stages: Default::default(),
        })
    }

    /// Overrides the device work-group size (a power of two ≥ d).
    pub fn with_work_group(mut self, wg: usize) -> Result<Self> {
        if !wg.is_power_of_two() || wg < self.d {
            return Err(Error::InvalidArgument(format!(
                "work-group size {wg} must be a power of two ≥ d = {}",
                self.d
            )));
        }
        self.work_group = Some(wg);
        Ok(self)
    }

    /// The heap arity.
    pub fn d(&self) -> usize {
        self.d
    }

    /// The runtime, if any.
    pub fn runtime(&self) -> Option<&Runtime> {
        self.rt.as_ref()
    }

    /// The latency pool.
    pub fn pool(&self) -> &LatencyPool {
        &self.pool
    }

    /// The k-th smallest key of every sub-list of `data`, in sub-list order.
    pub fn select<K: SelectKey>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
    ) -> Result<Vec<K>> {
        self.select_with_stats(data, sublists, k, mode)
            .map(|(v, _)| v)
    }

    /// [`KSelector::select`], also reporting who did what.
    pub fn select_with_stats<K: SelectKey>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
    ) -> Result<(Vec<K>, SelectStats)> {
        let offs = sublists.boundaries(data.len(), k)?;
        let n = offs.len() - 1;
        let results: Vec<AtomicI32> = (0..n).map(|_| AtomicI32::new(0)).collect();
        let claims = Claims {
            next: AtomicUsize::new(0),
            n,
        };
        let progress = Progress {
            cpu_keys: AtomicUsize::new(0),
            started: Instant::now(),
        };
        let job = Job {
            data,
            offs: &offs,
            k,
            results: &results,
            claims: &claims,
            progress: &progress,
            cpu_threads: self.pool.len(),
        };
        let mut stats = SelectStats::default();
        let key = bucket(data.len() / n);
        let hint = self
            .learned
            .lock()
            .map(|l| l.get(&key).copied().unwrap_or_default())
            .unwrap_or_default();
        let started = Instant::now();
        match mode {
            Mode::CpuOnly => {
                stats.cpu_sublists = self.cpu_workers(&job)?;
                let rate = data.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
                self.learn(key, |l| l.cpu_keys_per_s = rate);
            }
            Mode::GpuOnly => {
                let dev = self.device_worker(&job, None)?;
                stats.device_sublists = dev.sublists;
                stats.launches = dev.launches;
                stats.local_heap = dev.local_heap;
                let rate = data.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
                self.learn(key, |l| {
                    l.dev_keys_per_s = rate;
                    l.dev_launch_s = min_known(l.dev_launch_s, dev.fastest_launch_s);
                });
            }
            Mode::Cooperative => {
                let (dev, cpu) = std::thread::scope(|s| {
                    let dev = s.spawn(|| self.device_worker(&job, Some(hint)));
                    let cpu = self.cpu_workers_leaving(&job, self.pool.len() >= 4);
                    let dev = dev.join().unwrap_or_else(|_| {
                        Err(Error::Lost("the device driver thread panicked".into()))
                    });
                    (dev, cpu)
                });
                let dev = dev?;
                stats.cpu_sublists = cpu?;
                stats.device_sublists = dev.sublists;
                stats.launches = dev.launches;
                stats.local_heap = dev.local_heap;
                let cpu_rate = job.progress.cpu_keys.load(Ordering::Relaxed) as f64
                    / started.elapsed().as_secs_f64().max(1e-9);
                self.learn(key, |l| {
                    if stats.cpu_sublists > 0 {
                        l.cpu_keys_per_s = cpu_rate;
                    }
                    l.dev_launch_s = min_known(l.dev_launch_s, dev.fastest_launch_s);
                    if dev.device_s > 0.0 && dev.keys > 0 {
                        l.dev_keys_per_s = dev.keys as f64 / dev.device_s;
                    }
                });
            }
        }
        if stats.cpu_sublists + stats.device_sublists != n {
            return Err(Error::Lost(format!(
                "{} of {n} sub-lists were handled (cpu {}, device {})",
                stats.cpu_sublists + stats.device_sublists,
                stats.cpu_sublists,
                stats.device_sublists
            )));
        }
        Ok((
            results
                .into_iter()
                .map(|r| K::from_ordered(r.into_inner()))
                .collect(),
            stats,
        ))
    }

    fn learn(&self, key: u32, f: impl FnOnce(&mut Learned)) {
        if let Ok(mut l) = self.learned.lock() {
            f(l.entry(key).or_default());
        }
    }

    fn cpu_workers<K: SelectKey>(&self, job: &Job<'_, K>) -> Result<usize> {
        self.cpu_workers_leaving(job, false)
    }

    /// The latency threads' side; with `leave_one`, the last thread sits out so the device's
    /// driver thread (staging copies, launches) has a core of its own.
    fn cpu_workers_leaving<K: SelectKey>(
        &self,
        job: &Job<'_, K>,
        leave_one: bool,
    ) -> Result<usize> {
        let d = self.d;
        let counts = self.pool.broadcast_scoped(|w| -> Result<usize> {
            if leave_one && w.index + 1 == w.threads {
                return Ok(0);
            }
            let mut heap = DHeap::<i32>::with_capacity(d, job.k)?;
            let mut first = Vec::with_capacity(job.k);
            let mut done = 0;
            let avg = job.data.len() / job.claims.n;
            let chunk = ((1 << 15) / avg.max(1)).max(1);
            while let Some(range) = job.claims.claim(chunk) {
                let mut keys = 0;
                for i in range {
                    let list = &job.data[job.offs[i]..job.offs[i + 1]];
                    job.results[i].store(
                        select_one(list, job.k, &mut heap, &mut first),
                        Ordering::Relaxed,
                    );
                    keys += list.len();
                    done += 1;
                }
                job.progress.cpu_keys.fetch_add(keys, Ordering::Relaxed);
            }
            Ok(done)
        })?;
        counts.into_iter().sum()
    }

    /// Runs the device side; `cooperative` carries what earlier runs learned (Cooperative mode),
    /// `None` means the device does everything (GpuOnly).
    fn device_worker<K: SelectKey>(
        &self,
        job: &Job<'_, K>,
        cooperative: Option<Learned>,
    ) -> Result<DeviceOutcome> {
        let rt = self.rt.as_ref().ok_or_else(|| {
            Error::InvalidArgument(
                "the gpu and coop modes need an OpenCL device; none was opened".into(),
            )
        })?;
        DevicePlan::new(rt, self.d, self.work_group, job)?.run(job, cooperative, &self.stages)
    }
}

/// One selection's shared state.
struct Job<'a, K> {
    data: &'a [K],
    offs: &'a [usize],
    k: usize,
    results: &'a [AtomicI32],
    claims: &'a Claims,
    progress: &'a Progress,
    cpu_threads: usize,
}

/// The k-th smallest of `list` with a d-heap (`heap` and `first` are reused scratch).
#[inline]
pub fn select_one<K: SelectKey>(
    list: &[K],
    k: usize,
    heap: &mut DHeap<i32>,
    first: &mut Vec<i32>,
) -> i32 {
    first.clear();
    first.extend(list[..k].iter().map(|x| x.to_ordered()));
    heap.rebuild_from(first);
    let mut root = heap.peek().unwrap_or(i32::MAX);
    for x in &list[k..] {
        let v = x.to_ordered();
        if v < root {
            heap.replace_top(v);
            root = heap.peek().unwrap_or(v);
        }
    }
    root
}

struct DeviceOutcome {
    sublists: usize,
    launches: usize,
    local_heap: bool,
    /// Keys the device answered and the time it spent from its first claim to its last answer.
    keys: usize,
    device_s: f64,
    /// The shortest claim-to-answer time of one launch (0: none measured).
    fastest_launch_s: f64,
}

fn min_known(a: f64, b: f64) -> f64 {
    match (a > 0.0, b > 0.0) {
        (true, true) => a.min(b),
        (true, false) => a,
        _ => b,
    }
}

/// Device-side sizes for one selection.
struct DevicePlan {
    rt: Runtime,
    wg: usize,
    local_heap: bool,
    heap_words: usize,
    chunk: usize,
    options: String,
}

/// One set of staging buffers and the kernel bound to them.
struct Stage {
    data: SvmBuffer<i32>,
    offs: SvmBuffer<u32>,
    out: SvmBuffer<i32>,
    _scratch: SvmBuffer<i32>,
    kernel: Kernel,
    launch: Option<(Launch, std::ops::Range<usize>)>,
    keys: usize,
    subs: usize,
    /// The program options and heap stride the stage was made for (reuse needs both equal).
    options: String,
    heap_words: usize,
}

/// Stages kept between selections: SVM allocation and zeroing cost milliseconds per call
/// (tens of MiB on a GPU), so a selector reuses its staging buffers.
type StageCache = std::sync::Mutex<Vec<Stage>>;

/// Keys per device chunk: enough to keep the device busy, small enough to pipeline.
const CHUNK_KEYS: usize = 1 << 23;

impl DevicePlan {
    fn new<K>(rt: &Runtime, d: usize, wg: Option<usize>, job: &Job<'_, K>) -> Result<Self> {
        let p = rt.profile();
        let k = job.k;
        if k > (u32::MAX as usize) / 64 - 64 {
            return Err(Error::InvalidArgument(format!(
                "k = {k} is too large for the device kernel (at most 2^26)"
            )));
        }
        let max_wg = p.max_work_group_size.max(1);
        let wg = wg.unwrap_or(if p.kind == asym_runtime::DeviceKind::Gpu {
            d.max(64)
        } else {
            d.max(16)
        });
        if wg > max_wg {
            return Err(Error::Unsupported {
                device: p.label(),
                what: format!("run k-selection with work-groups of {wg}"),
                lacks: format!("work-groups that large (max {max_wg})"),
            });
        }
        let heap_words = (d - 1 + k).next_multiple_of(16) + 16;
        // cand (2·WG), redv, redi, redv2, redi2, scan (WG each), root; plus slack.
        let fixed_local = (7 * wg + 8) * 4 + 256;
        let local_heap = (heap_words * 4 + fixed_local) as u64 <= p.local_mem_bytes;
        let n = job.claims.n;
        let avg = job.data.len() / n;
        let chunk = (CHUNK_KEYS / avg.max(1))
            .max(p.compute_units as usize * 4)
            .clamp(1, n);
        let options = format!("-DD={d} -DWG={wg} -DHEAP_LOCAL={}", u8::from(local_heap));
        Ok(DevicePlan {
            rt: rt.clone(),
            wg,
            local_heap,
            heap_words,
            chunk,
            options,
        })
    }

    /// Staging buffers for up to `subs` sub-lists holding up to `keys` keys, and the kernel
    /// bound to them.
    fn stage(&self, k: usize, keys: usize, subs: usize) -> Result<Stage> {
        let rt = &self.rt;
        let data = rt.alloc::<i32>(keys)?;
        let offs = rt.alloc::<u32>(subs + 1)?;
        let out = rt.alloc::<i32>(subs)?;
        let scratch = rt.alloc::<i32>(if self.local_heap {
            1
        } else {
            subs * self.heap_words
        })?;
        let program = rt.program_with(&asym_kernels::KSELECT, &self.options)?;
        let mut kernel = Kernel::from_program(rt, &program, "kselect_dheap")?;
        kernel
            .arg_svm(0, &data)?
            .arg_svm(1, &offs)?
            .arg_svm(2, &out)?
            .arg_svm(3, &scratch)?
            .arg_scalar(4, k as u32)?
            .arg_scalar(5, 0u32)?
            .arg_scalar(6, self.heap_words as u32)?
            .arg_local::<i32>(7, if self.local_heap { self.heap_words } else { 1 })?;
        Ok(Stage {
            data,
            offs,
            out,
            _scratch: scratch,
            kernel,
            launch: None,
            keys,
            subs,
            options: self.options.clone(),
            heap_words: self.heap_words,
        })
    }

    /// Takes a cached stage made for this plan (same program, same heap stride) and sets the
    /// per-selection arguments.
    fn reuse(&self, cache: &StageCache, k: usize) -> Result<Option<Stage>> {
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        let Some(i) = cache
            .iter()
            .position(|s| s.options == self.options && s.heap_words == self.heap_words)
        else {
            return Ok(None);
        };
        let mut stage = cache.swap_remove(i);
        stage.kernel.arg_scalar(4, k as u32)?;
        Ok(Some(stage))
    }

    fn run<K: SelectKey>(
        &self,
        job: &Job<'_, K>,
        cooperative: Option<Learned>,
        cache: &StageCache,
    ) -> Result<DeviceOutcome> {
        // Staging buffers come from the selector's cache or are made on first use, sized to the
        // claim (a small probe in Cooperative mode, a full chunk in GpuOnly), and regrown if a
        // later claim is larger; they go back to the cache at the end.
        let mut stages: [Option<Stage>; 2] = [self.reuse(cache, job.k)?, self.reuse(cache, job.k)?];
        let mut claimed_at: [Option<Instant>; 2] = [None, None];
        let mut cur = 0;
        let mut outcome = DeviceOutcome {
            sublists: 0,
            launches: 0,
            local_heap: self.local_heap,
            keys: 0,
            device_s: 0.0,
            fastest_launch_s: 0.0,
        };
        let started = Instant::now();
        let total_keys = job.data.len();
        // Waits for a stage, books its answers and its claim-to-answer time.
        let settle = |stage: &mut Stage,
                      at: &mut Option<Instant>,
                      outcome: &mut DeviceOutcome|
         -> Result<()> {
            if let Some((done, keys)) = self.finish(stage, job)? {
                outcome.sublists += done;
                outcome.keys += keys;
                if let Some(t) = at.take() {
                    outcome.fastest_launch_s =
                        min_known(outcome.fastest_launch_s, t.elapsed().as_secs_f64());
                }
            }
            Ok(())
        };
        loop {
            let count = match cooperative {
                None => self.chunk,
                Some(hint) if outcome.launches == 0 => {
                    match self.first_cooperative_claim(job, hint, total_keys) {
                        Some(c) => c,
                        None => break,
                    }
                }
                Some(_) => match self.guided_chunk(job, outcome.keys, started) {
                    Some(c) => c,
                    None => break,
                },
            };
            let Some(range) = job.claims.claim(count) else {
                break;
            };
            if let Some(stage) = stages[cur].as_mut() {
                settle(stage, &mut claimed_at[cur], &mut outcome)?;
            }
            let keys = job.offs[range.end] - job.offs[range.start];
            if stages[cur]
                .as_ref()
                .is_none_or(|s| s.keys < keys || s.subs < range.len())
            {
                let (keys, subs) = match stages[cur].as_ref() {
                    Some(s) => (keys.max(s.keys), range.len().max(s.subs)),
                    None => (keys, range.len()),
                };
                stages[cur] = Some(self.stage(job.k, keys, subs)?);
            }
            let stage = stages[cur].as_mut().expect("made above");
            claimed_at[cur] = Some(Instant::now());
            self.start(stage, job, range, cooperative.is_none())?;
            outcome.launches += 1;
            if cooperative.is_some() && outcome.launches == 1 {
                // Measure the first launch before deciding on the next claim.
                settle(stage, &mut claimed_at[cur], &mut outcome)?;
            }
            cur ^= 1;
        }
        for s in [cur, cur ^ 1] {
            if let Some(stage) = stages[s].as_mut() {
                settle(stage, &mut claimed_at[s], &mut outcome)?;
            }
        }
        outcome.device_s = started.elapsed().as_secs_f64();
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.extend(stages.into_iter().flatten());
        // Keep the cache bounded: the two largest stages per program suffice.
        cache.sort_by_key(|s| std::cmp::Reverse(s.keys));
        let mut seen: Vec<(String, usize, usize)> = Vec::new();
        cache.retain(|s| {
            let n = seen
                .iter()
                .filter(|(o, h, _)| *o == s.options && *h == s.heap_words)
                .count();
            seen.push((s.options.clone(), s.heap_words, 0));
            n < 2
        });
        Ok(outcome)
    }

    /// The device's first claim in Cooperative mode, or `None` to leave everything to the CPU.
    ///
    /// With measurements from earlier runs of this sub-list length: sit out when one launch
    /// takes longer than half of what the CPU needs for the whole job (the device would set the
    /// finish time), else claim the device's share of the throughput. Without: probe with 1/256
    /// of the sub-lists, unless there are fewer than 8 per latency thread (then even one
    /// sub-list is too big a bet on a device of unknown speed).
    fn first_cooperative_claim<K>(
        &self,
        job: &Job<'_, K>,
        hint: Learned,
        total_keys: usize,
    ) -> Option<usize> {
        if hint.cpu_keys_per_s > 0.0 && hint.dev_keys_per_s > 0.0 && hint.dev_launch_s > 0.0 {
            let cpu_alone_s = total_keys as f64 / hint.cpu_keys_per_s;
            if hint.dev_launch_s > 0.5 * cpu_alone_s {
                return None;
            }
            let share = hint.dev_keys_per_s / (hint.dev_keys_per_s + hint.cpu_keys_per_s);
            let count = (job.claims.n as f64 * share * 0.9).floor() as usize;
            return (count > 0).then(|| count.min(self.chunk));
        }
        if job.claims.n < 8 * job.cpu_threads {
            return None;
        }
        Some((job.claims.n / 256).clamp(1, self.chunk))
    }

    /// Sub-lists for the device's next claim when sharing with the CPU: the device's measured
    /// share of the throughput applied to what is left (so both sides finish together), at
    /// most a full chunk; `None` once that share rounds to nothing (the device is too slow to
    /// help with the rest).
    fn guided_chunk<K>(
        &self,
        job: &Job<'_, K>,
        device_keys: usize,
        device_started: Instant,
    ) -> Option<usize> {
        let remaining = job.claims.remaining();
        let cpu_rate = job.progress.cpu_keys.load(Ordering::Relaxed) as f64
            / job.progress.started.elapsed().as_secs_f64().max(1e-9);
        let dev_rate = device_keys as f64 / device_started.elapsed().as_secs_f64().max(1e-9);
        let share = if cpu_rate > 0.0 {
            dev_rate / (dev_rate + cpu_rate)
        } else {
            1.0
        };
        let count = (remaining as f64 * share * 0.9).floor() as usize;
        (count > 0).then(|| count.min(self.chunk))
    }

    fn start<K: SelectKey>(
        &self,
        stage: &mut Stage,
        job: &Job<'_, K>,
        range: std::ops::Range<usize>,
        parallel_copy: bool,
    ) -> Result<()> {
        let base = job.offs[range.start];
        let end = job.offs[range.end];
        if u32::try_from(end - base).is_err() {
            return Err(Error::InvalidArgument(format!(
                "a device chunk of {} keys exceeds 2^32",
                end - base
            )));
        }
        let src = &job.data[base..end];
        {
            let mut map = stage.data.map_for_overwrite()?;
            let dst = &mut map[..src.len()];
            if parallel_copy && src.len() > 1 << 16 {
                dst.par_chunks_mut(1 << 14)
                    .zip(src.par_chunks(1 << 14))
                    .for_each(|(d, s)| {
                        d.iter_mut().zip(s).for_each(|(d, s)| *d = s.to_ordered());
                    });
            } else {
                dst.iter_mut()
                    .zip(src)
                    .for_each(|(d, s)| *d = s.to_ordered());
            }
            map.unmap()?;
        }
        {
            let mut map = stage.offs.map_for_overwrite()?;
            for (j, i) in (range.start..=range.end).enumerate() {
                map[j] = (job.offs[i] - base) as u32;
            }
            map.unmap()?;
        }
        let count = range.len();
        stage.kernel.arg_scalar(5, count as u32)?;
        let launch = stage.kernel.launch(count * self.wg, Some(self.wg))?;
        stage.launch = Some((launch, range));
        Ok(())
    }

    /// Waits for a stage's launch and stores its answers: (sub-lists, keys) done.
    fn finish<K>(&self, stage: &mut Stage, job: &Job<'_, K>) -> Result<Option<(usize, usize)>> {
        let Some((launch, range)) = stage.launch.take() else {
            return Ok(None);
        };
        launch.wait()?;
        let map = stage.out.map()?;
        for (j, i) in range.clone().enumerate() {
            job.results[i].store(map[j], Ordering::Relaxed);
        }
        map.unmap()?;
        Ok(Some((
            range.len(),
            job.offs[range.end] - job.offs[range.start],
        )))
    }
}

/// The peers a user would pick instead of asym's heaps, for checks and benchmarks: both run
/// one sub-list per rayon task.
pub mod peers {
    use std::collections::BinaryHeap;

    use rayon::prelude::*;

    use super::SelectKey;

    /// The k-th smallest of each sub-list by `select_nth_unstable_by` (quickselect).
    pub fn select_nth<K: SelectKey>(data: &[K], offs: &[usize], k: usize) -> Vec<K> {
        offs.par_windows(2)
            .map(|w| {
                let mut v = data[w[0]..w[1]].to_vec();
                *v.select_nth_unstable_by(k - 1, K::cmp_keys).1
            })
            .collect()
    }

    /// Heap-based k-selection with std's `BinaryHeap` (max-heap of the first k; smaller keys
    /// replace the root through `peek_mut`).
    pub fn binary_heap<K: SelectKey>(data: &[K], offs: &[usize], k: usize) -> Vec<K> {
        offs.par_windows(2)
            .map(|w| {
                let list = &data[w[0]..w[1]];
                let mut heap: BinaryHeap<i32> = list[..k].iter().map(|x| x.to_ordered()).collect();
                for x in &list[k..] {
                    let v = x.to_ordered();
                    if let Some(mut top) = heap.peek_mut() {
                        if v < *top {
                            *top = v;
                        }
                    }
                }
                K::from_ordered(heap.peek().copied().unwrap_or(i32::MAX))
            })
            .collect()
    }
}
