//! One round of a set's selection: every worker of a group claims sub-lists from the
//! counter until none is left. A driver thread per member runs the one-device pipeline with
//! its claim policy; the latency threads run on the calling thread. The round then books
//! what each worker did and settles a member that failed.

use std::sync::atomic::Ordering;
use std::time::Instant;

use asym_runtime::spread::{MemberReport, Worker};
use asym_runtime::{Error, Result};

use super::super::device::{min_known, ClaimPolicy, Copier, DeviceOutcome, DevicePlan};
use super::super::{Job, KSelector, Key, Learned, SelectStats};
use super::{member_key, LATENCY};

/// A worker's share of one round, with the device's outcome for a member that finished.
pub(super) type RoundShare = (Worker, MemberReport, Option<DeviceOutcome>);

/// What the latency threads did in a round: sub-lists, keys and seconds busy.
type CpuDone = Result<(usize, usize, f64)>;

/// The workers of one round and what they share.
struct Round<'a> {
    workers: &'a [Worker],
    /// The member devices among the workers.
    members: Vec<usize>,
    /// Whether the latency threads take part.
    cpu: bool,
    /// The learned-speed key of the selection.
    key: u32,
}

impl KSelector {
    /// One pass of `workers` over the counter. Returns each worker's share (a failed
    /// member's with its error) and the first member error.
    pub(super) fn one_round<K: Key>(
        &self,
        job: &Job<'_, K>,
        workers: &[Worker],
        key: u32,
    ) -> Result<(Vec<RoundShare>, Option<Error>)> {
        let round = Round {
            workers,
            members: workers
                .iter()
                .filter_map(|w| match w {
                    Worker::Device(i) => Some(*i),
                    Worker::LatencyThreads => None,
                })
                .collect(),
            cpu: workers.contains(&Worker::LatencyThreads),
            key,
        };
        let shape = self.device_shape(job.device_strategy);
        let mut plans = Vec::with_capacity(round.members.len());
        for &i in &round.members {
            let mut plan = DevicePlan::new(&self.members[i].rt, shape, job)?;
            plan.fail_at_launch = self.failures().take_armed(i).map(|at| at as usize);
            plans.push(plan);
        }
        let staging = if round.cpu { self.staging_threads() } else { 0 };
        let copier = if round.cpu {
            self.staging_copier(staging)?
        } else {
            Copier::Global
        };
        let leave = if round.cpu && !round.members.is_empty() && self.pool.len() >= 4 {
            staging.max(round.members.len().min(self.pool.len() - 1))
        } else {
            0
        };
        let policies = self.claim_policies(job, &round, &plans);
        let started = Instant::now();
        let (outcomes, cpu_done) = std::thread::scope(|s| {
            let handles: Vec<_> = round
                .members
                .iter()
                .zip(&plans)
                .zip(&policies)
                .map(|((&i, plan), &policy)| {
                    let copier = &copier;
                    let stages = &self.members[i].stages;
                    s.spawn(move || plan.run(job, policy, stages, copier))
                })
                .collect();
            let cpu_done = round.cpu.then(|| {
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
        let (mut shares, first_error) = self.member_shares(&round, &plans, outcomes)?;
        if let Some(done) = cpu_done {
            shares.push(self.cpu_share(key, done, elapsed)?);
        }
        // A failed member answered some sub-lists before it stopped: they count as its own.
        let answered = job.answered();
        let counted: u64 = shares.iter().map(|(_, s, _)| s.pieces).sum();
        if let Some((_, share, _)) = shares.iter_mut().find(|(_, s, _)| s.error.is_some()) {
            share.pieces = (answered as u64).saturating_sub(counted);
        }
        Ok((shares, first_error))
    }

    /// Each member's claim policy. A member whose speed is not known yet gets its probe
    /// claimed here, before any driver starts: on busy cores a driver thread can start after
    /// the others emptied the counter, and the call is meant to measure everyone.
    fn claim_policies<K: Key>(
        &self,
        job: &Job<'_, K>,
        round: &Round<'_>,
        plans: &[DevicePlan],
    ) -> Vec<ClaimPolicy> {
        let (workers, members, cpu, key) = (round.workers, &round.members, round.cpu, round.key);
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
        members
            .iter()
            .zip(plans)
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
            .collect()
    }

    /// The members' shares of a round, learning the speed of each that finished and
    /// settling each that failed. Only a device fault fails over
    /// ([`Error::is_device_fault`]): any other error is the call's, the same on every member.
    fn member_shares(
        &self,
        round: &Round<'_>,
        plans: &[DevicePlan],
        outcomes: Vec<Result<DeviceOutcome>>,
    ) -> Result<(Vec<RoundShare>, Option<Error>)> {
        let mut shares = Vec::new();
        let mut first_error = None;
        for ((&i, plan), outcome) in round.members.iter().zip(plans).zip(outcomes) {
            let label = self.members[i].rt.profile().label();
            let worker = Worker::Device(i);
            match outcome {
                Ok(dev) => {
                    if dev.launches == 0 {
                        // An injected failure waits for a call in which the member launches.
                        if let Some(at) = plan.fail_at_launch {
                            self.failures().inject(i, at as u64)?;
                        }
                    }
                    self.learn(member_key(round.key, i), |l| {
                        l.dev_launch_s = min_known(l.dev_launch_s, dev.fastest_launch_s);
                        if dev.device_s > 0.0 && dev.keys > 0 {
                            l.dev_keys_per_s = dev.keys as f64 / dev.device_s;
                        }
                    });
                    let report = MemberReport {
                        pieces: dev.sublists as u64,
                        items: dev.keys as u64,
                        launches: dev.launches as u64,
                        busy_s: if dev.launches > 0 { dev.device_s } else { 0.0 },
                        ..MemberReport::of(worker, label)
                    };
                    shares.push((worker, report, Some(dev)));
                }
                Err(e) if !e.is_device_fault() => return Err(e),
                Err(e) => {
                    self.failures().settle(worker, &e);
                    let report = MemberReport {
                        error: Some(e.to_string()),
                        ..MemberReport::of(worker, label)
                    };
                    shares.push((worker, report, None));
                    first_error.get_or_insert(e);
                }
            }
        }
        Ok((shares, first_error))
    }

    /// The latency threads' share of a round, learning their speed.
    fn cpu_share(&self, key: u32, done: CpuDone, elapsed: f64) -> Result<RoundShare> {
        let (sublists, keys, busy_s) = done?;
        if sublists > 0 {
            self.learn(key, |l| l.cpu_keys_per_s = keys as f64 / elapsed);
        }
        let report = MemberReport {
            pieces: sublists as u64,
            items: keys as u64,
            busy_s: if sublists > 0 { busy_s } else { 0.0 },
            ..MemberReport::of(Worker::LatencyThreads, LATENCY)
        };
        Ok((Worker::LatencyThreads, report, None))
    }
}

/// Adds one worker's share to the stats (merging with its share of an earlier round).
pub(super) fn book(
    stats: &mut SelectStats,
    worker: Worker,
    share: MemberReport,
    dev: Option<&DeviceOutcome>,
) {
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
pub(super) fn undone_runs<K>(job: &Job<'_, K>) -> Vec<std::ops::Range<usize>> {
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
