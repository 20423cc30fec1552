//! Batch k-selection over a device set ([`KSelector::on_devices`]): every member device
//! (GpuOnly) or every member and the latency threads (Cooperative by amount) claim whole
//! sub-lists from one counter.
//!
//! **Claims.** Each member has a driver thread running the one-device pipeline
//! (`device.rs`, double-buffered staging) with guided claims: a first claim sized by the
//! speeds earlier calls measured (or a small probe, claimed for the member before any driver
//! thread starts, so that a thread the OS starts late still gets measured), then the member's
//! share of the throughput of everyone working, applied to what is left, so all finish
//! together. A member
//! whose single launch would outlast the others' time for the whole call sits out; one
//! worker (the latency threads, or in GpuOnly the member measured fastest) never sits out, so
//! the counter always empties.
//!
//! **Refined call after call.** Speeds are learned per member and sub-list length. The first
//! calls with a length run everyone together; the next ones try, two calls each, each worker
//! alone and the groups of all but one that could win (the engine's `PlanBook`); later calls keep
//! the fastest group. The members share host cores and memory bandwidth for staging, so
//! together can lose: PoCL's kernels on the host's cores slow a GPU's staging copies more
//! than PoCL adds (docs/benchmarks/device-sets.md). [`SelectStats::exploring`] marks the trial calls.
//!
//! **A member that fails** (an OpenCL error, a lost device, a launch past the timeout):
//! its claims stop, the others empty the counter, and the sub-lists it had claimed but not
//! answered are selected again by the workers left (per-sub-list done flags say which). The
//! call succeeds; its `MemberReport` carries the error, and later calls leave the member
//! out ([`KSelector::failed_devices`]). In GpuOnly with every member failed the call
//! returns the first error.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use asym_runtime::spread::{Failures, MemberReport, PlanBook, Worker};
use asym_runtime::{DeviceSet, Error, LatencyPool, Mode, Result, Runtime};

use super::device::StageCache;
use super::{Claims, Job, KSelector, Key, SelectStats};

/// One device of a selector's set, with what it keeps between calls.
pub(super) struct Member {
    rt: Runtime,
    stages: StageCache,
    /// The resident path's buffers on this member.
    resident: super::resident::ResidentCache,
    /// Resident keys per second measured on this member (0: not yet).
    resident_keys_per_s: Mutex<f64>,
}

impl Member {
    fn new(rt: &Runtime) -> Self {
        Member {
            rt: rt.clone(),
            stages: Default::default(),
            resident: Default::default(),
            resident_keys_per_s: Mutex::new(0.0),
        }
    }
}

/// Whole-call speeds per (learned-speed key, GpuOnly): the engine's plan exploration,
/// groups of all but one worker included.
pub(super) type SetPlans = Mutex<HashMap<(u32, bool), PlanBook>>;

/// The share name of the latency threads.
pub(super) const LATENCY: &str = "latency threads";

mod resident;
mod round;

use round::{book, undone_runs};

pub use resident::SpreadKeys;

impl KSelector {
    /// A selector over every device of `set` (one device: as [`KSelector::new`]). GpuOnly
    /// spreads whole sub-lists over the members, Cooperative by amount over the members and
    /// the latency threads (see `kselect/spread/`); cooperation by kind, the range split
    /// of few long sub-lists and [`KSelector::select_svm`] run on one device, the set's first.
    pub fn on_devices(set: &DeviceSet, pool: LatencyPool, d: usize) -> Result<Self> {
        let mut selector = Self::new(set.members().first().cloned(), pool, d)?;
        if set.len() > 1 {
            selector.members = set.members().iter().map(Member::new).collect();
            let labels = set
                .members()
                .iter()
                .map(|rt| rt.profile().label())
                .collect();
            selector.failures = Mutex::new(Failures::new(labels));
        }
        Ok(selector)
    }

    /// The devices this selector runs on: a set's members, or its one runtime.
    pub fn devices(&self) -> Vec<&Runtime> {
        if self.members.is_empty() {
            self.rt.iter().collect()
        } else {
            self.members.iter().map(|m| &m.rt).collect()
        }
    }

    /// The members of the set that failed during a selection and are left out since, with
    /// the error each gave.
    pub fn failed_devices(&self) -> Vec<(String, String)> {
        self.failures().failed()
    }

    /// The set's failure record.
    fn failures(&self) -> std::sync::MutexGuard<'_, Failures> {
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether member `i` of the set is still in it.
    fn is_live(&self, i: usize) -> bool {
        self.failures().is_live(i)
    }

    /// Makes member `member` of the set fail with [`Error::DeviceLost`] right after it
    /// starts its launch number `launch` (counted from 0, that launch left in flight) in the
    /// next selection it takes part in: a fault injection for tests of the recovery.
    #[doc(hidden)]
    pub fn inject_member_failure(&self, member: usize, launch: usize) -> Result<()> {
        self.failures().inject(member, launch as u64)
    }

    /// Forgets every speed measured so far: the next selection of each shape starts over
    /// with every worker together and first claims as probes (tests of the spread).
    #[doc(hidden)]
    pub fn forget_speeds(&self) {
        if let Ok(mut l) = self.learned.lock() {
            l.clear();
        }
        if let Ok(mut p) = self.set_plans.lock() {
            p.clear();
        }
    }

    /// Whether a call in `mode` spreads over the set.
    pub(super) fn spreads(&self, mode: Mode, cooperation: super::Cooperation) -> bool {
        self.members.len() > 1
            && match mode {
                Mode::GpuOnly => true,
                Mode::Cooperative => cooperation == super::Cooperation::ByAmount,
                Mode::CpuOnly => false,
            }
    }

    /// The set's share of a selection: the group of workers [`PlanBook::plan`] picks (every
    /// worker together, a trial group, or the fastest measured; see the module
    /// documentation).
    pub(super) fn run_spread<K: Key>(
        &self,
        job: &Job<'_, K>,
        mode: Mode,
        key: u32,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let gpu_only = mode == Mode::GpuOnly;
        let mut workers: Vec<Worker> = self
            .failures()
            .live()
            .into_iter()
            .map(Worker::Device)
            .collect();
        if !gpu_only {
            workers.push(Worker::LatencyThreads);
        }
        if workers.is_empty() {
            return Err(self.failures().all_failed());
        }
        let plan_key = (key, gpu_only);
        let rates = self
            .set_plans
            .lock()
            .map(|p| p.get(&plan_key).cloned())
            .ok()
            .flatten()
            .unwrap_or_else(PlanBook::with_subgroups);
        let (group, exploring) = rates.plan(&workers, |w| self.worker_rate(key, w));
        stats.exploring = exploring;
        let started = Instant::now();
        let failures = if group == [Worker::LatencyThreads] {
            // Every latency thread, as CpuOnly runs them (sharing long sub-lists too); the
            // stats' sub-list count is theirs already.
            self.run_alone(job, super::CoopPlan::CpuAlone, key, stats)?;
            stats.workers.push(MemberReport {
                pieces: stats.cpu_sublists as u64,
                items: job.data.len() as u64,
                busy_s: started.elapsed().as_secs_f64(),
                ..MemberReport::of(Worker::LatencyThreads, LATENCY)
            });
            0
        } else {
            self.spread_over(job, &group, key, stats)?
        };
        let rate = job.data.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
        if failures == 0 {
            if let Ok(mut plans) = self.set_plans.lock() {
                plans
                    .entry(plan_key)
                    .or_insert_with(PlanBook::with_subgroups)
                    .record(&group, rate);
            }
        }
        Ok(())
    }

    /// Keys per second `worker` was measured at (0: unknown).
    fn worker_rate(&self, key: u32, worker: Worker) -> f64 {
        let learned = |k: u32| {
            self.learned
                .lock()
                .map(|l| l.get(&k).copied().unwrap_or_default())
                .unwrap_or_default()
        };
        match worker {
            Worker::LatencyThreads => learned(key).cpu_keys_per_s,
            Worker::Device(i) => learned(member_key(key, i)).dev_keys_per_s,
        }
    }

    /// `workers` claim the sub-lists of `job` until none is left, then the sub-lists a failed
    /// member left unanswered go round again among the rest. Returns how many members failed.
    fn spread_over<K: Key>(
        &self,
        job: &Job<'_, K>,
        workers: &[Worker],
        key: u32,
        stats: &mut SelectStats,
    ) -> Result<usize> {
        let (shares, first_error) = self.one_round(job, workers, key)?;
        let failures = shares.iter().filter(|(_, s, _)| s.error.is_some()).count();
        for (w, share, dev) in shares {
            book(stats, w, share, dev.as_ref());
        }
        if failures == 0 {
            return Ok(0);
        }
        let survivors: Vec<Worker> = workers
            .iter()
            .copied()
            .filter(|w| match w {
                Worker::Device(i) => self.is_live(*i),
                Worker::LatencyThreads => true,
            })
            .collect();
        let undone = undone_runs(job);
        if undone.is_empty() {
            return Ok(failures);
        }
        if survivors.is_empty() {
            return Err(first_error.unwrap_or_else(|| self.failures().all_failed()));
        }
        stats.redone_sublists += undone.iter().map(|r| r.len()).sum::<usize>();
        let mut more = 0;
        for run in undone {
            let claims = Claims::new(run, job.claims.n);
            let redo = Job {
                claims: &claims,
                ..*job
            };
            more += self.spread_over(&redo, &survivors, key, stats)?;
        }
        Ok(failures + more)
    }
}

/// The learned-speed key of set member `i` for a selection keyed `key`.
pub(super) fn member_key(key: u32, i: usize) -> u32 {
    key | ((i as u32 + 1) << 20)
}
