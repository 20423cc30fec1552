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
//! together can lose: on the H200 machine PoCL's kernels on all 16 cores slow NVIDIA's
//! staging copies more than PoCL adds. [`SelectStats::exploring`] marks the trial calls.
//!
//! **A member that fails** (an OpenCL error, a lost device, a launch past the timeout):
//! its claims stop, the others empty the counter, and the sub-lists it had claimed but not
//! answered are selected again by the workers left (per-sub-list done flags say which). The
//! call succeeds; its `MemberReport` carries the error, and later calls leave the member
//! out ([`KSelector::failed_devices`]). In GpuOnly with every member failed the call
//! returns the first error.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use asym_runtime::spread::{Failures, MemberReport, PlanBook, Worker};
use asym_runtime::{DeviceSet, Error, LatencyPool, Mode, Result, Runtime};

use super::device::{min_known, ClaimPolicy, Copier, DeviceOutcome, DevicePlan, StageCache};
use super::{Claims, Job, KSelector, Key, Learned, SelectStats};

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

/// A worker's share of one round, with the device's outcome for a member that finished.
type RoundShare = (Worker, MemberReport, Option<DeviceOutcome>);

/// The share name of the latency threads.
const LATENCY: &str = "latency threads";

mod resident;

pub use resident::SpreadKeys;

impl KSelector {
    /// A selector over every device of `set` (one device: as [`KSelector::new`]). GpuOnly
    /// spreads whole sub-lists over the members, Cooperative by amount over the members and
    /// the latency threads (see `kselect/spread.rs`); cooperation by kind, the range split
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

    /// One pass of `workers` over the counter: a driver thread per member, the latency
    /// threads on this one. Returns each worker's share (a failed member's with its error)
    /// and the first member error.
    fn one_round<K: Key>(
        &self,
        job: &Job<'_, K>,
        workers: &[Worker],
        key: u32,
    ) -> Result<(Vec<RoundShare>, Option<Error>)> {
        let members: Vec<usize> = workers
            .iter()
            .filter_map(|w| match w {
                Worker::Device(i) => Some(*i),
                Worker::LatencyThreads => None,
            })
            .collect();
        let cpu = workers.contains(&Worker::LatencyThreads);
        let shape = self.device_shape(job.device_strategy);
        let mut plans = Vec::with_capacity(members.len());
        for &i in &members {
            let member = &self.members[i];
            let mut plan = DevicePlan::new(&member.rt, shape, job)?;
            plan.fail_at_launch = self.failures().take_armed(i).map(|at| at as usize);
            plans.push(plan);
        }
        // The anchor empties the counter: the latency threads, else the fastest member.
        let anchor = (!cpu)
            .then(|| {
                members.iter().copied().max_by(|a, b| {
                    self.worker_rate(key, Worker::Device(*a))
                        .total_cmp(&self.worker_rate(key, Worker::Device(*b)))
                })
            })
            .flatten();
        // What the others were measured at, for each member's first claim (0 when any is
        // unknown: the member probes).
        let others_rate = |me: usize| -> f64 {
            let mut sum = 0.0;
            for w in workers.iter().filter(|w| **w != Worker::Device(me)) {
                let r = self.worker_rate(key, *w);
                if r <= 0.0 {
                    return 0.0;
                }
                sum += r;
            }
            sum
        };
        let staging = if cpu { self.staging_threads() } else { 0 };
        let copier = if cpu {
            self.staging_copier(staging)?
        } else {
            Copier::Global
        };
        let leave = if cpu && !members.is_empty() && self.pool.len() >= 4 {
            staging.max(members.len().min(self.pool.len() - 1))
        } else {
            0
        };
        // Each member's claim policy. A member whose speed is not known yet gets its probe
        // claimed here, before any driver starts: on busy cores a driver thread can start
        // after the others emptied the counter, and the call is meant to measure everyone.
        let policies: Vec<ClaimPolicy> = members
            .iter()
            .zip(&plans)
            .map(|(&i, plan)| {
                if workers.len() == 1 {
                    // A member alone takes full chunks, as on one device.
                    return ClaimPolicy::Full;
                }
                let learned = self
                    .learned
                    .lock()
                    .map(|l| l.get(&member_key(key, i)).copied().unwrap_or_default())
                    .unwrap_or_default();
                let hint = Learned {
                    cpu_keys_per_s: others_rate(i),
                    ..learned
                };
                let others = if cpu { job.cpu_threads } else { 0 } + members.len() - 1;
                let probe = if hint.sizes_a_share() {
                    None
                } else {
                    plan.first_cooperative_claim(job, hint, others)
                        .and_then(|count| job.claims.claim(count))
                        .map(|r| (r.start, r.end))
                };
                ClaimPolicy::Guided {
                    hint,
                    member: Some(i),
                    anchor: anchor == Some(i),
                    others,
                    peers: usize::from(cpu) + members.len() - 1,
                    probe,
                }
            })
            .collect();
        let started = Instant::now();
        let (outcomes, cpu_done) = std::thread::scope(|s| {
            let handles: Vec<_> = members
                .iter()
                .zip(&plans)
                .zip(&policies)
                .map(|((&i, plan), &policy)| {
                    let copier = &copier;
                    let stages = &self.members[i].stages;
                    s.spawn(move || plan.run(job, policy, stages, copier))
                })
                .collect();
            let cpu_done = cpu.then(|| {
                let t = Instant::now();
                let before = job.progress.cpu_keys.load(Ordering::Relaxed);
                self.cpu_workers_leaving(job, leave).map(|n| {
                    let keys = job.progress.cpu_keys.load(Ordering::Relaxed) - before;
                    (n, keys, t.elapsed().as_secs_f64())
                })
            });
            let outcomes: Vec<Result<DeviceOutcome>> = handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::thread_lost(
                            "a device driver thread",
                            "a device driver thread panicked",
                        ))
                    })
                })
                .collect();
            (outcomes, cpu_done)
        });
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        let mut shares = Vec::new();
        let mut first_error = None;
        for ((&i, plan), outcome) in members.iter().zip(&plans).zip(outcomes) {
            let member = &self.members[i];
            let label = member.rt.profile().label();
            match outcome {
                Ok(dev) => {
                    if dev.launches == 0 {
                        // An injected failure waits for a call in which the member launches.
                        if let Some(at) = plan.fail_at_launch {
                            self.failures().inject(i, at as u64)?;
                        }
                    }
                    self.learn(member_key(key, i), |l| {
                        l.dev_launch_s = min_known(l.dev_launch_s, dev.fastest_launch_s);
                        if dev.device_s > 0.0 && dev.keys > 0 {
                            l.dev_keys_per_s = dev.keys as f64 / dev.device_s;
                        }
                    });
                    shares.push((
                        Worker::Device(i),
                        MemberReport {
                            pieces: dev.sublists as u64,
                            items: dev.keys as u64,
                            launches: dev.launches as u64,
                            busy_s: if dev.launches > 0 { dev.device_s } else { 0.0 },
                            ..MemberReport::of(Worker::Device(i), label)
                        },
                        Some(dev),
                    ));
                }
                // Only a device fault fails over (Error::is_device_fault): any other error is
                // the call's, the same on every member.
                Err(e) if !e.is_device_fault() => return Err(e),
                Err(e) => {
                    self.failures().settle(Worker::Device(i), &e);
                    shares.push((
                        Worker::Device(i),
                        MemberReport {
                            error: Some(e.to_string()),
                            ..MemberReport::of(Worker::Device(i), label)
                        },
                        None,
                    ));
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(done) = cpu_done {
            let (sublists, keys, busy_s) = done?;
            if sublists > 0 {
                self.learn(key, |l| l.cpu_keys_per_s = keys as f64 / elapsed);
            }
            shares.push((
                Worker::LatencyThreads,
                MemberReport {
                    pieces: sublists as u64,
                    items: keys as u64,
                    busy_s: if sublists > 0 { busy_s } else { 0.0 },
                    ..MemberReport::of(Worker::LatencyThreads, LATENCY)
                },
                None,
            ));
        }
        // A failed member answered some sub-lists before it stopped: they count as its own.
        let answered = job.answered();
        let counted: u64 = shares.iter().map(|(_, s, _)| s.pieces).sum();
        if let Some((_, share, _)) = shares.iter_mut().find(|(_, s, _)| s.error.is_some()) {
            share.pieces = (answered as u64).saturating_sub(counted);
        }
        Ok((shares, first_error))
    }
}

/// The learned-speed key of set member `i` for a selection keyed `key`.
fn member_key(key: u32, i: usize) -> u32 {
    key | ((i as u32 + 1) << 20)
}

/// Adds one worker's share to the stats (merging with its share of an earlier round).
fn book(stats: &mut SelectStats, worker: Worker, share: MemberReport, dev: Option<&DeviceOutcome>) {
    match worker {
        Worker::LatencyThreads => stats.cpu_sublists += share.pieces as usize,
        Worker::Device(_) => {
            stats.device_sublists += share.pieces as usize;
            stats.launches += share.launches as usize;
        }
    }
    if let Some(dev) = dev {
        let t = &mut stats.device_times;
        t.stage_s += dev.times.stage_s;
        t.transfer_s += dev.times.transfer_s;
        t.kernel_s += dev.times.kernel_s;
        t.wait_s += dev.times.wait_s;
        t.readback_s += dev.times.readback_s;
        stats.local_heap |= dev.local_heap;
        stats.local_heap_nodes = stats.local_heap_nodes.max(dev.local_heap_nodes);
    }
    match stats
        .workers
        .iter_mut()
        .find(|s| s.worker == share.worker && s.member == share.member)
    {
        Some(s) => {
            s.pieces += share.pieces;
            s.items += share.items;
            s.launches += share.launches;
            s.busy_s += share.busy_s;
            if s.error.is_none() {
                s.error = share.error;
            }
        }
        None => stats.workers.push(share),
    }
}

/// The runs of consecutive sub-lists of `job`'s range not answered yet.
fn undone_runs<K>(job: &Job<'_, K>) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    let mut start = None;
    let range = job.claims.range();
    for i in range.clone() {
        let done = job.done[i].load(Ordering::Relaxed);
        match (done, start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                runs.push(s..i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push(s..range.end);
    }
    runs
}
