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
//!   counter; the device's chunk shrinks as the end nears, in proportion to its measured share of
//!   the throughput, so neither side is left with a long tail.

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
        };
        let mut stats = SelectStats::default();
        match mode {
            Mode::CpuOnly => {
                stats.cpu_sublists = self.cpu_workers(&job)?;
            }
            Mode::GpuOnly => {
                let dev = self.device_worker(&job, false)?;
                stats.device_sublists = dev.sublists;
                stats.launches = dev.launches;
                stats.local_heap = dev.local_heap;
            }
            Mode::Cooperative => {
                let (dev, cpu) = std::thread::scope(|s| {
                    let dev = s.spawn(|| self.device_worker(&job, true));
                    let cpu = self.cpu_workers(&job);
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

    fn cpu_workers<K: SelectKey>(&self, job: &Job<'_, K>) -> Result<usize> {
        let d = self.d;
        let counts = self.pool.broadcast_scoped(|_| -> Result<usize> {
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

    fn device_worker<K: SelectKey>(
        &self,
        job: &Job<'_, K>,
        cooperative: bool,
    ) -> Result<DeviceOutcome> {
        let rt = self.rt.as_ref().ok_or_else(|| {
            Error::InvalidArgument(
                "the gpu and coop modes need an OpenCL device; none was opened".into(),
            )
        })?;
        DevicePlan::new(rt, self.d, self.work_group, job)?.run(job, cooperative)
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
}

/// Device-side sizes for one selection.
struct DevicePlan {
    rt: Runtime,
    wg: usize,
    local_heap: bool,
    heap_words: usize,
    chunk: usize,
    chunk_keys: usize,
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
}

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
        let fixed_local = (wg + 2 * d + 8) * 4 + 256;
        let local_heap = (heap_words * 4 + fixed_local) as u64 <= p.local_mem_bytes;
        let n = job.claims.n;
        let avg = job.data.len() / n;
        let chunk = (CHUNK_KEYS / avg.max(1))
            .max(p.compute_units as usize * 4)
            .clamp(1, n);
        // The most keys any `chunk` consecutive sub-lists hold (the staging buffers' size).
        let chunk_keys = (0..n)
            .step_by(1)
            .map(|i| job.offs[(i + chunk).min(n)] - job.offs[i])
            .max()
            .unwrap_or(0);
        if chunk_keys > u32::MAX as usize {
            return Err(Error::InvalidArgument(
                "a device chunk exceeds 2^32 keys".into(),
            ));
        }
        let options = format!("-DD={d} -DWG={wg} -DHEAP_LOCAL={}", u8::from(local_heap));
        Ok(DevicePlan {
            rt: rt.clone(),
            wg,
            local_heap,
            heap_words,
            chunk,
            chunk_keys,
            options,
        })
    }

    fn stage(&self, k: usize) -> Result<Stage> {
        let rt = &self.rt;
        let data = rt.alloc::<i32>(self.chunk_keys)?;
        let offs = rt.alloc::<u32>(self.chunk + 1)?;
        let out = rt.alloc::<i32>(self.chunk)?;
        let scratch = rt.alloc::<i32>(if self.local_heap {
            1
        } else {
            self.chunk * self.heap_words
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
        })
    }

    fn run<K: SelectKey>(&self, job: &Job<'_, K>, cooperative: bool) -> Result<DeviceOutcome> {
        let mut stages = [self.stage(job.k)?, self.stage(job.k)?];
        let mut cur = 0;
        let mut outcome = DeviceOutcome {
            sublists: 0,
            launches: 0,
            local_heap: self.local_heap,
        };
        let mut device_keys = 0usize;
        let mut device_time = 0f64;
        loop {
            let count = if cooperative {
                self.guided_chunk(job, device_keys, device_time)
            } else {
                self.chunk
            };
            let Some(range) = job.claims.claim(count) else {
                break;
            };
            let t = Instant::now();
            if let Some(done) = self.finish(&mut stages[cur], job)? {
                outcome.sublists += done;
            }
            self.start(&mut stages[cur], job, range.clone(), !cooperative)?;
            outcome.launches += 1;
            device_keys += job.offs[range.end] - job.offs[range.start];
            device_time += t.elapsed().as_secs_f64();
            cur ^= 1;
        }
        for s in [cur, cur ^ 1] {
            if let Some(done) = self.finish(&mut stages[s], job)? {
                outcome.sublists += done;
            }
        }
        Ok(outcome)
    }

    /// Sub-lists for the device's next claim when sharing with the CPU: its full chunk while
    /// much remains, then its measured share of what is left.
    fn guided_chunk<K>(&self, job: &Job<'_, K>, device_keys: usize, device_time: f64) -> usize {
        let remaining = job.claims.remaining();
        let elapsed = job.progress.started.elapsed().as_secs_f64();
        let cpu_rate = job.progress.cpu_keys.load(Ordering::Relaxed) as f64 / elapsed.max(1e-9);
        let dev_rate = if device_time > 0.0 {
            device_keys as f64 / device_time
        } else {
            cpu_rate.max(1.0)
        };
        let share = dev_rate / (dev_rate + cpu_rate).max(1e-9);
        ((remaining as f64 * share * 0.5).ceil() as usize).clamp(1, self.chunk)
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
        let src = &job.data[base..end];
        {
            let mut map = stage.data.map()?;
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
            let mut map = stage.offs.map()?;
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

    fn finish<K>(&self, stage: &mut Stage, job: &Job<'_, K>) -> Result<Option<usize>> {
        let Some((launch, range)) = stage.launch.take() else {
            return Ok(None);
        };
        launch.wait()?;
        let map = stage.out.map()?;
        for (j, i) in range.clone().enumerate() {
            job.results[i].store(map[j], Ordering::Relaxed);
        }
        map.unmap()?;
        Ok(Some(range.len()))
    }
}
