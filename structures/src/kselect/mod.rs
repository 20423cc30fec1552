//! Batch k-selection: the k-th smallest key of every sub-list of a list set, by one of two
//! methods ([`Strategy`]): the ad-heap seed's heap (a max-heap of the first k keys; every
//! later key smaller than the root replaces it by update-key; the root is the answer), or MSD
//! radix select (a histogram of one 8-bit digit per pass, keeping only the k-th's bucket).
//!
//! Keys are `i32`, `u32` or `f32`. Internally every key is mapped to an "ordered" `i32` whose
//! signed order is the key's order ([`Key`]), so one heap and one kernel serve all three.
//! `f32` follows [`f32::total_cmp`]: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN.
//!
//! Modes ([`Mode`]):
//! - **CpuOnly**: the pinned latency threads claim sub-lists from one counter and run the
//!   cache-aligned d-heap ([`DHeap`]) or radix select on them (few long sub-lists: every
//!   thread takes a share of each, histograms merged).
//! - **GpuOnly**: the device runs `kernels/kselect.cl` (heap) or `kernels/kselect_radix.cl`,
//!   one work-group per sub-list, in chunks staged through two sets of SVM buffers so the
//!   host copies chunk i+1 while the device computes chunk i (double buffering; on the coarse
//!   transport each hand-off is an unmap and a kernel launch). Keys already in SVM skip the
//!   staging: [`KSelector::select_svm`].
//! - **Cooperative**, in one of two ways ([`Cooperation`]):
//!   - *by amount* (the default): latency threads and the device claim sub-lists from the same
//!     counter, each with the strategy's method for its side. The device first claims a small
//!     probe (1/256 of the sub-lists), then claims its measured share of the throughput
//!     applied to what remains (at most a full chunk), and stops claiming once that share
//!     rounds to nothing, so a slow device cannot leave the CPU waiting at the end and a fast
//!     one is not starved ([`KSelector::with_device_share`] fixes the split instead);
//!   - *by kind*, the ad-heap bridge ([`crate::adheap`], heap strategy only): every update-key
//!     is split, the CPU filtering keys, writing roots and applying bridges, the device
//!     walking the max-child path; live through the signal rings on the fine transport, in
//!     double-buffered batches on any transport (`bridge.rs`).

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

use asym_runtime::{Error, LatencyPool, Mode, Result, Runtime};

use crate::dheap::{check_d, DHeap};
use crate::key::Key;
use device::{min_known, ClaimPolicy, Copier, DeviceOutcome, DevicePlan, DeviceShape, StageCache};

/// Keys below which the latency threads' side of a call runs on the calling thread.
const INLINE_KEYS: usize = 1 << 14;

/// Batch k-selection on a runtime (optional: CpuOnly needs none) and a latency pool.
pub struct KSelector {
    rt: Option<Runtime>,
    pool: std::sync::Arc<LatencyPool>,
    d: usize,
    work_group: Option<usize>,
    device_update: DeviceUpdate,
    local_heap_limit: Option<usize>,
    device_staging: DeviceStaging,
    staging_threads: Option<usize>,
    /// The staging copier pool of Cooperative mode, kept between calls: (threads, pool).
    staging_pool: std::sync::Mutex<Option<(usize, std::sync::Arc<rayon::ThreadPool>)>>,
    cooperation: Cooperation,
    bridge_checks: bool,
    strategy: Strategy,
    /// Keys per work-group of the device radix's tiled form (0: one work-group per
    /// sub-list always).
    radix_tile: usize,
    /// A fixed device share for Cooperative by amount (`None`: learned).
    device_share: Option<f64>,
    /// Measured speeds per sub-list length (bucketed by log2) and CPU method, for
    /// Cooperative's split.
    learned: std::sync::Mutex<std::collections::HashMap<u32, Learned>>,
    /// Device staging buffers kept between calls.
    stages: StageCache,
    /// The resident path's offsets and answers, kept while the cut stays the same.
    resident: resident::ResidentCache,
    /// The range split's device buffers, kept while later calls fit in them.
    range: range_split::RangeCache,
    /// The part count's device site, kept while later calls fit in it.
    part: part::PartCache,
    /// The devices of a set beyond one (empty on one device): see `spread.rs`.
    members: Vec<spread::Member>,
    /// Whole-call speeds over the set, together and alone.
    set_plans: spread::SetPlans,
    /// The set's failure record and injected faults (a step is a launch).
    failures: std::sync::Mutex<asym_runtime::spread::Failures>,
}

impl std::fmt::Debug for KSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KSelector")
            .field("rt", &self.rt)
            .field("d", &self.d)
            .finish()
    }
}

impl KSelector {
    /// A selector with heaps of arity `d` (2, 4, 8, 16, 32 or 64) on `pool`'s threads (owned,
    /// or an `Arc` shared with other structures).
    pub fn new(
        rt: Option<Runtime>,
        pool: impl Into<std::sync::Arc<LatencyPool>>,
        d: usize,
    ) -> Result<Self> {
        check_d(d)?;
        Ok(KSelector {
            rt,
            pool: pool.into(),
            d,
            work_group: None,
            device_update: DeviceUpdate::default(),
            local_heap_limit: None,
            device_staging: DeviceStaging::default(),
            staging_threads: None,
            staging_pool: Default::default(),
            cooperation: Cooperation::default(),
            bridge_checks: false,
            strategy: Strategy::default(),
            device_share: None,
            radix_tile: device_radix::DEFAULT_TILE,
            learned: Default::default(),
            stages: Default::default(),
            resident: Default::default(),
            range: Default::default(),
            part: Default::default(),
            members: Vec::new(),
            set_plans: Default::default(),
            failures: std::sync::Mutex::new(asym_runtime::spread::Failures::new(Vec::new())),
        })
    }

    /// Sets how each sub-list's k-th is found (default [`Strategy::Auto`]).
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// How each sub-list's k-th is found.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Overrides the device work-group size (a power of two ≥ d) of both device methods
    /// (default: see `batch_kselect --help`; 256 for radix).
    pub fn with_work_group(mut self, wg: usize) -> Result<Self> {
        if !wg.is_power_of_two() || wg < self.d {
            return Err(Error::out_of_range(
                "work-group size",
                wg,
                format!("must be a power of two ≥ d = {}", self.d),
            ));
        }
        self.work_group = Some(wg);
        Ok(self)
    }

    /// Sets how the device kernel runs an update-key.
    pub fn with_device_update(mut self, update: DeviceUpdate) -> Self {
        self.device_update = update;
        self
    }

    /// Caps the local memory a device heap may use, in bytes (by default what the device
    /// has, less the kernel's own). A heap that does not fit is split (its top levels in local
    /// memory, the rest in global) with the single-item kernel, else kept in global memory;
    /// 0 keeps every heap in global memory. For tests and measurements.
    pub fn with_device_local_heap_limit(mut self, bytes: usize) -> Self {
        self.local_heap_limit = Some(bytes);
        self
    }

    /// Sets how keys reach the device.
    pub fn with_device_staging(mut self, staging: DeviceStaging) -> Self {
        self.device_staging = staging;
        self
    }

    /// Sets how many of the latency pool's cores Cooperative mode leaves to the device's
    /// staging copies (default: half of them with 4 or more latency threads, else none;
    /// GpuOnly always copies on every core). 0 means the driver thread copies alone.
    ///
    /// Staging is bound by host memory bandwidth more than by cores (half the threads feed a
    /// discrete GPU nearly as fast as all of them, a quarter do not), so half the cores
    /// stage by default.
    pub fn with_staging_threads(mut self, threads: usize) -> Result<Self> {
        if threads >= self.pool.len() {
            return Err(Error::InvalidArgument(format!(
                "{threads} staging threads would leave none of the {} latency threads to select",
                self.pool.len()
            )));
        }
        self.staging_threads = Some(threads);
        Ok(self)
    }

    /// Staging threads for Cooperative mode (see [`KSelector::with_staging_threads`]).
    pub fn staging_threads(&self) -> usize {
        self.staging_threads.unwrap_or(if self.pool.len() >= 4 {
            self.pool.len() / 2
        } else {
            0
        })
    }

    fn staging_copier(&self, threads: usize) -> Result<Copier> {
        if threads == 0 {
            return Ok(Copier::Serial);
        }
        let mut slot = self.staging_pool.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((n, pool)) = slot.as_ref() {
            if *n == threads {
                return Ok(Copier::Pool(pool.clone()));
            }
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("asym-staging-{i}"))
            .build()
            .map_err(|e| {
                Error::thread_lost(
                    format!("{threads} staging threads"),
                    format!("could not start {threads} staging threads: {e}"),
                )
            })?;
        let pool = std::sync::Arc::new(pool);
        *slot = Some((threads, pool.clone()));
        Ok(Copier::Pool(pool))
    }

    /// Fixes the share of the sub-lists Cooperative by amount gives the device: the first
    /// `share` of them (rounded to whole sub-lists; 0.0 all on the latency threads, 1.0 all on
    /// the device), the rest to the latency threads, both running at once. `None` (the
    /// default) lets the selector split by the speeds it measured. For measurements, and for
    /// a split known to suit a machine.
    pub fn with_device_share(mut self, share: Option<f64>) -> Result<Self> {
        if let Some(s) = share {
            if !(0.0..=1.0).contains(&s) {
                return Err(Error::out_of_range(
                    "device share",
                    s,
                    "must be between 0 and 1",
                ));
            }
        }
        self.device_share = share;
        Ok(self)
    }

    /// Sets how many keys one work-group of the device radix takes: sub-lists longer than
    /// `keys` are cut into tiles of at most that many, a work-group each, with histograms
    /// merged through global memory (four launches instead of one); 0 keeps one work-group
    /// per sub-list at any length. The default comes from a sweep (docs/decisions.md).
    pub fn with_radix_tile(mut self, keys: usize) -> Result<Self> {
        if keys != 0 && keys < 256 {
            return Err(Error::out_of_range(
                "radix tile keys",
                keys,
                "use at least 256, or 0 for one work-group per sub-list",
            ));
        }
        self.radix_tile = keys;
        Ok(self)
    }

    /// Sets how Cooperative mode divides the work.
    pub fn with_cooperation(mut self, cooperation: Cooperation) -> Self {
        self.cooperation = cooperation;
        self
    }

    /// With `true`, Cooperative-by-kind checks every bridge against the ad-heap's rules before
    /// applying it and the whole heap after (slow: for tests and debugging).
    pub fn with_bridge_checks(mut self, on: bool) -> Self {
        self.bridge_checks = on;
        self
    }

    /// How Cooperative mode divides the work.
    pub fn cooperation(&self) -> Cooperation {
        self.cooperation
    }

    /// The bridge schedule `cooperation` runs here (`BridgeLive` or `BridgePipelined`; `Bridge`
    /// resolves by transport), or `None` for by-amount or without a device.
    pub fn bridge_schedule(&self, cooperation: Cooperation) -> Option<Cooperation> {
        match cooperation {
            Cooperation::ByAmount => None,
            Cooperation::BridgeLive | Cooperation::BridgePipelined => Some(cooperation),
            Cooperation::Bridge => Some(
                if self.rt.as_ref()?.transport() == asym_runtime::Transport::Fine {
                    Cooperation::BridgeLive
                } else {
                    Cooperation::BridgePipelined
                },
            ),
        }
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
    pub fn select<K: Key>(
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
    pub fn select_with_stats<K: Key>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
    ) -> Result<(Vec<K>, SelectStats)> {
        self.select_cooperating(data, sublists, k, mode, self.cooperation)
    }

    /// [`KSelector::select_with_stats`] with Cooperative mode dividing the work as
    /// `cooperation` says (the other modes ignore it).
    pub fn select_cooperating<K: Key>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
        cooperation: Cooperation,
    ) -> Result<(Vec<K>, SelectStats)> {
        self.select_using(data, sublists, k, mode, cooperation, self.strategy)
    }

    /// [`KSelector::select_cooperating`] with `strategy` for this call instead of the
    /// selector's own.
    pub fn select_using<K: Key>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
        cooperation: Cooperation,
        strategy: Strategy,
    ) -> Result<(Vec<K>, SelectStats)> {
        let offs = sublists.boundaries(data.len(), k)?;
        let n = offs.len() - 1;
        let results: Vec<AtomicI32> = (0..n).map(|_| AtomicI32::new(0)).collect();
        let claims = Claims::new(0..n, n);
        let spread = self.spreads(mode, cooperation);
        let progress = Progress::new(if spread { self.members.len() } else { 0 });
        let done: Vec<std::sync::atomic::AtomicBool> = if spread {
            (0..n).map(|_| Default::default()).collect()
        } else {
            Vec::new()
        };
        let job = Job {
            done: &done,
            data,
            offs: &offs,
            k,
            results: &results,
            claims: &claims,
            progress: &progress,
            cpu_threads: self.pool.len(),
            cpu_strategy: strategy.on_cpu(data.len() / n, k),
            device_strategy: strategy.on_device(),
        };
        if strategy == Strategy::Radix
            && mode == Mode::Cooperative
            && cooperation != Cooperation::ByAmount
        {
            return Err(Error::Unsupported {
                device: self
                    .rt
                    .as_ref()
                    .map_or_else(|| "none".into(), |rt| rt.profile().label()),
                what: format!("run radix select cooperating by {cooperation}"),
                lacks: "a radix form of the ad-heap bridge (cooperation by kind shares heaps: \
                        use the heap strategy, or cooperation by amount for radix)"
                    .into(),
            });
        }
        let mut stats = SelectStats::default();
        // Speeds are learned per length and per method on each side (they differ several-fold).
        let key = bucket(data.len() / n)
            | ((job.cpu_strategy == Strategy::Radix) as u32) << 16
            | ((job.device_strategy == Strategy::Radix) as u32) << 17;
        let hint = self
            .learned
            .lock()
            .map(|l| l.get(&key).copied().unwrap_or_default())
            .unwrap_or_default();
        let plan = match mode {
            Mode::CpuOnly => CoopPlan::CpuAlone,
            Mode::GpuOnly => CoopPlan::DeviceAlone,
            Mode::Cooperative => hint.coop_plan(),
        };
        if self.members.len() > 1
            && mode == Mode::Cooperative
            && (cooperation != Cooperation::ByAmount || self.device_share.is_some())
        {
            return Err(Error::Unsupported {
                device: self
                    .devices()
                    .iter()
                    .map(|rt| rt.profile().label())
                    .collect::<Vec<_>>()
                    .join(" + "),
                what: if self.device_share.is_some() {
                    "give a fixed device share".into()
                } else {
                    format!("cooperate by {cooperation}")
                },
                lacks: "one device: a set of several splits by amount, from measured speeds \
                        (open one device for the bridge or a fixed share)"
                    .into(),
            });
        }
        match mode {
            _ if spread => self.run_spread(&job, mode, key, &mut stats)?,
            Mode::CpuOnly | Mode::GpuOnly => self.run_alone(&job, plan, key, &mut stats)?,
            Mode::Cooperative if cooperation != Cooperation::ByAmount => {
                let b = self.bridge_worker(&job, cooperation)?;
                stats.bridge_sublists = b.sublists;
                stats.bridge_updates = b.updates;
                stats.launches = b.launches;
            }
            Mode::Cooperative if self.range_splits(&job) => {
                self.run_by_range(&job, hint, plan, key, &mut stats)?
            }
            Mode::Cooperative if self.device_share.is_some() => {
                let share = self.device_share.unwrap_or_default();
                self.run_fixed_split(&job, share, &mut stats)?
            }
            Mode::Cooperative if plan != CoopPlan::Split => {
                self.run_alone(&job, plan, key, &mut stats)?
            }
            Mode::Cooperative => self.run_split(&job, hint, key, &mut stats)?,
        }
        stats.cpu_strategy =
            (stats.cpu_sublists + stats.split_sublists > 0).then_some(job.cpu_strategy);
        stats.device_strategy = if stats.bridge_sublists > 0 {
            Some(Strategy::Heap)
        } else {
            (stats.device_sublists + stats.split_sublists > 0).then_some(job.device_strategy)
        };
        let handled = stats.cpu_sublists
            + stats.device_sublists
            + stats.bridge_sublists
            + stats.split_sublists;
        if handled != n {
            return Err(Error::corrupted(
                "a k-selection",
                format!(
                "{handled} of {n} sub-lists were handled (cpu {}, device {}, bridge {}, split {})",
                stats.cpu_sublists,
                stats.device_sublists,
                stats.bridge_sublists,
                stats.split_sublists
            ),
            ));
        }
        Ok((
            results
                .into_iter()
                .map(|r| K::from_ordered(r.into_inner()))
                .collect(),
            stats,
        ))
    }

    /// One side does everything (CpuOnly, GpuOnly, or Cooperative when that measured faster).
    fn run_alone<K: Key>(
        &self,
        job: &Job<'_, K>,
        plan: CoopPlan,
        key: u32,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let started = Instant::now();
        if plan == CoopPlan::DeviceAlone {
            let dev = self.device_worker(job, None, &Copier::Global)?;
            stats.record_device(&dev);
            let rate = job.data.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
            self.learn(key, |l| {
                l.dev_keys_per_s = rate;
                l.dev_launch_s = min_known(l.dev_launch_s, dev.fastest_launch_s);
                l.whole_keys_per_s[plan as usize] = rate;
            });
        } else {
            stats.cpu_sublists = if self.split_sublists(job) {
                self.radix_split(job)?
            } else {
                self.cpu_workers(job)?
            };
            let rate = job.data.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
            self.learn(key, |l| {
                l.cpu_keys_per_s = rate;
                l.whole_keys_per_s[plan as usize] = rate;
            });
        }
        Ok(())
    }

    /// Cooperative by amount: the latency threads and the device claim sub-lists from one
    /// counter; the device's claims follow the measured speeds.
    fn run_split<K: Key>(
        &self,
        job: &Job<'_, K>,
        hint: Learned,
        key: u32,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let started = Instant::now();
        let rt = self.device_runtime()?;
        let plan = DevicePlan::new(rt, self.device_shape(job.device_strategy), job)?;
        if plan
            .first_cooperative_claim(job, hint, job.cpu_threads)
            .is_none()
        {
            // The device would sit out: every latency thread selects.
            return self.run_alone(job, CoopPlan::CpuAlone, key, stats);
        }
        let (dev, cpu) = self.device_beside_cpu(&plan, job, job, Some(hint))?;
        stats.cpu_sublists = cpu;
        stats.record_device(&dev);
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        let cpu_rate = job.progress.cpu_keys.load(Ordering::Relaxed) as f64 / elapsed;
        self.learn(key, |l| {
            if stats.cpu_sublists > 0 {
                l.cpu_keys_per_s = cpu_rate;
            }
            l.dev_launch_s = min_known(l.dev_launch_s, dev.fastest_launch_s);
            if dev.device_s > 0.0 && dev.keys > 0 {
                l.dev_keys_per_s = dev.keys as f64 / dev.device_s;
            }
            l.whole_keys_per_s[CoopPlan::Split as usize] = job.data.len() as f64 / elapsed;
        });
        Ok(())
    }

    /// Cooperative by amount with a fixed split: the device takes the first `share` of the
    /// sub-lists (rounded), the latency threads the rest, both at once.
    fn run_fixed_split<K: Key>(
        &self,
        job: &Job<'_, K>,
        share: f64,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let n = job.claims.n;
        let m = ((n as f64 * share).round() as usize).min(n);
        let rt = self.device_runtime()?;
        let dev_claims = Claims::new(0..m, n);
        let cpu_claims = Claims::new(m..n, n);
        let dev_job = Job {
            claims: &dev_claims,
            ..*job
        };
        let cpu_job = Job {
            claims: &cpu_claims,
            ..*job
        };
        let plan = DevicePlan::new(rt, self.device_shape(job.device_strategy), job)?;
        let (dev, cpu) = self.device_beside_cpu(&plan, &dev_job, &cpu_job, None)?;
        stats.cpu_sublists = cpu;
        stats.record_device(&dev);
        Ok(())
    }

    /// The device's claims of `dev_job` (guided by `hint` when given, else all it can take)
    /// on a driver thread while the latency threads claim from `cpu_job`, leaving the
    /// staging threads' cores free, and with 4 or more one core for the driver thread.
    /// Returns the device's outcome and the sub-lists the latency threads did.
    fn device_beside_cpu<K: Key>(
        &self,
        plan: &DevicePlan,
        dev_job: &Job<'_, K>,
        cpu_job: &Job<'_, K>,
        hint: Option<Learned>,
    ) -> Result<(DeviceOutcome, usize)> {
        let staging = self.staging_threads();
        let copier = self.staging_copier(staging)?;
        let leave = staging.max(usize::from(self.pool.len() >= 4));
        let (dev, cpu) = beside(
            || {
                let policy = ClaimPolicy::one_device(hint, dev_job.cpu_threads);
                plan.run(dev_job, policy, &self.stages, &copier)
            },
            || self.cpu_workers_leaving(cpu_job, leave),
        );
        Ok((dev?, cpu?))
    }

    /// Whether Cooperative by amount splits each sub-list by range instead of handing out
    /// whole ones: radix on both sides and too few long sub-lists to keep the latency
    /// threads busy (where [`KSelector::split_sublists`] shares them on the CPU alone).
    fn range_splits<K: Key>(&self, job: &Job<'_, K>) -> bool {
        job.device_strategy == Strategy::Radix && self.split_sublists(job)
    }

    /// Cooperative by amount on few long sub-lists: the device's share of each from
    /// [`KSelector::with_device_share`], else from the learned plan (both sides' measured
    /// speeds; 20 % before any are known: the best share of a sweep, docs/decisions.md).
    fn run_by_range<K: Key>(
        &self,
        job: &Job<'_, K>,
        hint: Learned,
        plan: CoopPlan,
        key: u32,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let share = match self.device_share {
            Some(share) => share,
            None if plan != CoopPlan::Split => return self.run_alone(job, plan, key, stats),
            None if hint.dev_keys_per_s > 0.0 && hint.cpu_keys_per_s > 0.0 => {
                (hint.dev_keys_per_s / (hint.dev_keys_per_s + hint.cpu_keys_per_s)).clamp(0.05, 0.5)
            }
            None => 0.2,
        };
        if share <= 0.0 {
            return self.run_alone(job, CoopPlan::CpuAlone, key, stats);
        }
        if share >= 1.0 {
            return self.run_alone(job, CoopPlan::DeviceAlone, key, stats);
        }
        let started = Instant::now();
        let dev = self.run_range_split(job, share, stats)?;
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        self.learn(key, |l| {
            if dev.device_s > 0.0 && dev.device_keys > 0 {
                l.dev_keys_per_s = dev.device_keys as f64 / dev.device_s;
            }
            l.whole_keys_per_s[CoopPlan::Split as usize] = job.data.len() as f64 / elapsed;
        });
        Ok(())
    }

    fn learn(&self, key: u32, f: impl FnOnce(&mut Learned)) {
        if let Ok(mut l) = self.learned.lock() {
            f(l.entry(key).or_default());
        }
    }

    /// Whether the latency threads should share each sub-list instead of taking whole ones:
    /// radix select on long sub-lists that whole would keep fewer than 60 % of the threads
    /// busy on average (n sub-lists on T threads take ceil(n/T) rounds: 4 of 2^26 keys on 16
    /// threads, 0.25). Sharing costs two hand-offs per sub-list and one thread finishing
    /// its candidates, so busy threads take sub-lists whole.
    fn split_sublists<K: Key>(&self, job: &Job<'_, K>) -> bool {
        let threads = self.pool.len();
        let n = job.claims.n;
        let busy = n as f64 / (threads * n.div_ceil(threads)) as f64;
        job.cpu_strategy == Strategy::Radix
            && threads > 1
            && busy < 0.6
            && job.data.len() / n >= SPLIT_FROM
    }

    /// Radix select with every latency thread on each sub-list in turn: each counts the top
    /// digit of its share, the histograms are merged, each gathers its share's keys of the
    /// k-th's bucket, and the later digits run on the gathered candidates.
    fn radix_split<K: Key>(&self, job: &Job<'_, K>) -> Result<usize> {
        let mut scratch = radix::RadixScratch::default();
        let mut done = 0;
        while let Some(range) = job.claims.claim(1) {
            for i in range {
                let list = &job.data[job.offs[i]..job.offs[i + 1]];
                let share = list.len().div_ceil(self.pool.len());
                let part = |index: usize| {
                    let start = (index * share).min(list.len());
                    &list[start..(start + share).min(list.len())]
                };
                let hists = self.pool.broadcast_scoped(|w| {
                    radix::top_histogram(part(w.index), &mut radix::RadixScratch::default())
                })?;
                let mut merged = [0u32; radix::DIGIT_BUCKETS];
                for h in &hists {
                    for (m, c) in merged.iter_mut().zip(h) {
                        *m += c;
                    }
                }
                let (bucket, rank, prefix, shift) = radix::locate_top(&merged, job.k);
                let parts = self
                    .pool
                    .broadcast_scoped(|w| radix::gather_bucket(part(w.index), bucket))?;
                scratch.set_candidates(parts.concat());
                job.results[i].store(
                    radix::finish_digits(&mut scratch, rank, prefix, shift),
                    Ordering::Relaxed,
                );
                job.progress
                    .cpu_keys
                    .fetch_add(list.len(), Ordering::Relaxed);
                done += 1;
            }
        }
        Ok(done)
    }

    fn cpu_workers<K: Key>(&self, job: &Job<'_, K>) -> Result<usize> {
        self.cpu_workers_leaving(job, 0)
    }

    /// The latency threads' side; the last `leave` threads sit out, so the device's driver
    /// thread and staging copies have cores of their own. A call of fewer than
    /// [`INLINE_KEYS`] keys runs on the calling thread: waking the pool would cost more
    /// than the selection.
    fn cpu_workers_leaving<K: Key>(&self, job: &Job<'_, K>, leave: usize) -> Result<usize> {
        if leave == 0 && job.data.len() < INLINE_KEYS {
            return self.cpu_worker(job);
        }
        let counts = self.pool.broadcast_scoped(|w| -> Result<usize> {
            if w.index + leave >= w.threads {
                return Ok(0);
            }
            self.cpu_worker(job)
        })?;
        counts.into_iter().sum()
    }

    /// One latency thread's loop: claim sub-lists and select them until none is left.
    fn cpu_worker<K: Key>(&self, job: &Job<'_, K>) -> Result<usize> {
        if job.cpu_strategy == Strategy::Radix {
            let mut scratch = radix::RadixScratch::default();
            return Ok(claim_sublists(job, |list| {
                radix::select_one(list, job.k, &mut scratch)
            }));
        }
        let mut heap = DHeap::<i32>::with_capacity(self.d, job.k)?;
        let mut first = Vec::with_capacity(job.k);
        Ok(claim_sublists(job, |list| {
            select_one(list, job.k, &mut heap, &mut first)
        }))
    }

    /// Cooperative by kind: every sub-list on an ad-heap shared by both kinds of cores.
    fn bridge_worker<K: Key>(
        &self,
        job: &Job<'_, K>,
        cooperation: Cooperation,
    ) -> Result<bridge::BridgeOutcome> {
        let rt = self.device_runtime()?;
        let opts = bridge::BridgeOptions {
            d: self.d,
            work_group: self.work_group,
            checks: self.bridge_checks,
        };
        if self.bridge_schedule(cooperation) == Some(Cooperation::BridgeLive) {
            bridge::live(rt, &self.pool, opts, job)
        } else {
            bridge::pipelined(rt, &self.pool, opts, job)
        }
    }

    fn device_runtime(&self) -> Result<&Runtime> {
        self.rt.as_ref().ok_or_else(|| {
            Error::InvalidArgument(
                "the gpu and coop modes need an OpenCL device; none was opened".into(),
            )
        })
    }

    /// Runs the device side; `cooperative` carries what earlier runs learned (Cooperative mode),
    /// `None` means the device does everything (GpuOnly).
    fn device_worker<K: Key>(
        &self,
        job: &Job<'_, K>,
        cooperative: Option<Learned>,
        copier: &Copier,
    ) -> Result<DeviceOutcome> {
        let rt = self.device_runtime()?;
        let policy = ClaimPolicy::one_device(cooperative, job.cpu_threads);
        DevicePlan::new(rt, self.device_shape(job.device_strategy), job)?.run(
            job,
            policy,
            &self.stages,
            copier,
        )
    }

    fn device_shape(&self, method: Strategy) -> DeviceShape {
        DeviceShape {
            method,
            radix_tile: self.radix_tile,
            d: self.d,
            work_group: self.work_group,
            update: self.device_update,
            local_heap_limit: self.local_heap_limit,
            staging: self.device_staging,
        }
    }
}

/// Runs `device` on a thread of its own (the device's driver) while this thread runs `host`;
/// a panic of the driver thread comes back as [`Error::ThreadLost`].
fn beside<D: Send, H>(
    device: impl FnOnce() -> Result<D> + Send,
    host: impl FnOnce() -> H,
) -> (Result<D>, H) {
    std::thread::scope(|s| {
        let device = s.spawn(device);
        let host = host();
        let device = device.join().unwrap_or_else(|_| {
            Err(Error::thread_lost(
                "the device driver thread",
                "the device driver thread panicked",
            ))
        });
        (device, host)
    })
}

/// The k-th smallest of `list` with a d-heap (`heap` and `first` are reused scratch).
#[inline]
pub fn select_one<K: Key>(
    list: &[K],
    k: usize,
    heap: &mut DHeap<i32>,
    first: &mut Vec<i32>,
) -> i32 {
    first.clear();
    first.extend(list[..k].iter().map(|x| x.to_ordered()));
    heap.rebuild_from(first);
    let mut root = heap.peek().unwrap_or(i32::MAX);
    // Blocks of 16 keys: one branch-free (vectorisable) pass marks the keys below the root as
    // it was at the block's start, then only marked keys are looked at again. The root only
    // falls within a block, so the marks are a superset of the keys to insert; each is
    // checked against the current root. This replaces a data-dependent branch per key
    // (taken for ~23 % of keys at k = 0.1 · length: often mispredicted) by one per block.
    let rest = &list[k..];
    let mut blocks = rest.chunks_exact(16);
    for block in &mut blocks {
        let mut vals = [0i32; 16];
        let mut mask = 0u32;
        for (j, x) in block.iter().enumerate() {
            vals[j] = x.to_ordered();
            mask |= u32::from(vals[j] < root) << j;
        }
        while mask != 0 {
            let v = vals[mask.trailing_zeros() as usize];
            mask &= mask - 1;
            if v < root {
                heap.replace_top(v);
                root = heap.peek().unwrap_or(v);
            }
        }
    }
    for x in blocks.remainder() {
        let v = x.to_ordered();
        if v < root {
            heap.replace_top(v);
            root = heap.peek().unwrap_or(v);
        }
    }
    root
}

mod bridge;
mod claims;
mod device;
mod device_radix;
mod learned;
mod options;
mod part;

mod radix;
mod range_split;
mod resident;
mod spread;
mod stats;

use claims::{claim_sublists, Claims, Job, Progress, SPLIT_FROM};
use learned::{bucket, CoopPlan, Learned};
pub use options::{Cooperation, DeviceStaging, DeviceUpdate, Strategy, Sublists};
pub use part::{PartCount, PartKept};
pub use spread::SpreadKeys;
pub use stats::{DeviceTimes, SelectStats};
