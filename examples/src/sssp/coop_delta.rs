//! Cooperative delta-stepping: the latency threads settle light buckets, the device expands
//! heavy ones, and the search moves between them as the buckets' sizes change.
//!
//! A delta-stepping search alternates between two kinds of bucket. Light ones (the source's,
//! the last ones of a Kronecker graph, most of a road-like graph's on small machines) cost
//! the device a grid-wide step per iteration whatever their size, and the latency threads a
//! few microseconds. Heavy ones (the middle of a Kronecker search: millions of edges) are
//! what the device's thousands of lanes are for. So the search runs in *stints*:
//!
//! - **On the latency threads** ([`delta`](super::delta)'s search, on the device's own
//!   distance buffer mapped to the host) until a round's vertices have
//!   [`CoopSplit::to_device`] edges or more to scan (a round is measured in edges: one hub
//!   of a Kronecker graph is as heavy as thousands of ordinary vertices, and a single thread
//!   expands it); that round is not expanded, and its entries plus every thread's buckets
//!   are what waits.
//! - **On the device** (the near-far search, `kernels/sssp_near_far.cl`) from the distances and the
//!   waiting vertices as its far pile, until a bucket opens whose near list has fewer than
//!   [`CoopSplit::to_host`] edges by the graph's mean degree (the device does not sum
//!   degrees); the near list and the far pile are what waits.
//!
//! Every hand-over keeps delta-stepping's invariant: each vertex whose distance dropped and
//! that was not expanded with it since is among the waiting vertices, and every vertex
//! nearer than the nearest of them is settled. Either side resumes from there, so the
//! distances are exact whatever the split. On fine-grained SVM the map is free and both
//! sides work on the same words; on coarse SVM a hand-over maps the distance array (one copy
//! each way, 4 bytes per vertex).
//!
//! **The split, measured.** An adaptive [`CoopSplit`] learns from the searches' times, call
//! after call (one graph, many sources, as an application runs it): after a warm-up search
//! (not measured), the first keeps to the latency threads (recording its heaviest round),
//! the second gives the device every round; from the faster of the two the threshold moves
//! by a factor of 4 (up from 4,096 edges on the device's side, down from the heaviest round
//! on the threads' side) while each step makes the search at least 10 % faster, and settles
//! on the fastest measured. A source whose own edges reach the threshold goes to the device
//! without a stint on the threads. [`CoopSplit::fixed`] keeps a threshold as given.
//! [`CoopStats`] reports each side's vertices and time, so the rates behind the choice are
//! in every run's output. On a discrete GPU over coarse SVM the split tends to settle on the
//! device taking every round (hand-overs cost more than the threads' first buckets save);
//! where the device shares the threads' cores, on the threads alone
//! (docs/benchmarks/sssp.md).
//!
//! The sides take turns; they never expand one round together. Over coarse SVM a round
//! split between them would cross the bus twice for a device iteration far shorter than a
//! hand-over (docs/benchmarks/sssp.md).

use std::time::{Duration, Instant};

use asym_runtime::{Error, LatencyPool, Result};

use super::delta::{check_delta, Stint};
use super::device::DeviceSssp;
use super::near_far::{DeviceStintEnd, StintClock};
use super::{atomic_words, AnswerMemory, SsspRun, SsspStats};

/// Where the adaptive split's climb from the device's side starts (edges to scan).
const MIN_TO_DEVICE: usize = 4096;
/// Each step of the adaptive split's search multiplies or divides the threshold by this.
const STEP: usize = 4;
/// A threshold's search must take less than this share of the best one's to replace it.
const MARGIN: f64 = 0.9;
/// Hysteresis: the device hands back buckets this many times lighter than the ones it takes.
const HYSTERESIS: usize = 4;

/// Where cooperative delta-stepping moves a search between the sides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoopSplit {
    to_device: usize,
    learning: Learning,
    /// The fastest threshold measured so far and its search's time, seconds.
    best: Option<(usize, f64)>,
    /// The search on the latency threads alone: its time and heaviest round.
    host_alone: Option<(f64, usize)>,
}

/// Where the adaptive split's search over thresholds stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Learning {
    /// A fixed split.
    Fixed,
    /// A first search on the latency threads alone, not measured (it warms the threads, the
    /// distance arrays' pages and the caches).
    WarmUp,
    /// Measuring the latency threads alone.
    HostAlone,
    /// Measuring the device with every round (the latency threads run none).
    DeviceMost,
    /// Moving the threshold by [`STEP`] (up or down) while the searches get faster.
    Climbing { up: bool },
    /// Settled on the best threshold measured.
    Settled,
}

impl Default for CoopSplit {
    fn default() -> Self {
        CoopSplit::adaptive()
    }
}

impl CoopSplit {
    /// A split that learns from the searches' measured times: after a warm-up search, the
    /// first keeps to the latency threads, the second gives the device every round; from the
    /// faster of the two
    /// the threshold moves (from 4,096 edges up, or from the heaviest round down) by a
    /// factor of 4 while that helps, and settles on the fastest measured.
    pub fn adaptive() -> Self {
        CoopSplit {
            to_device: usize::MAX,
            learning: Learning::WarmUp,
            best: None,
            host_alone: None,
        }
    }

    /// Rounds with `to_device` edges or more to scan go to the device, always. `usize::MAX`
    /// keeps the search on the latency threads; 1 gives the device every round, the source's
    /// too (unless it has no edges).
    pub fn fixed(to_device: usize) -> Result<Self> {
        if to_device == 0 {
            return Err(Error::InvalidArgument(
                "a cooperative split at 0 entries: rounds of at least 1 entry go to the device"
                    .into(),
            ));
        }
        Ok(CoopSplit {
            to_device,
            learning: Learning::Fixed,
            best: None,
            host_alone: None,
        })
    }

    /// A round whose vertices have this many edges or more to scan goes to the device.
    pub fn to_device(&self) -> usize {
        self.to_device
    }

    /// A bucket that opens on the device with fewer edges than this (its near vertices
    /// times the graph's mean degree) goes back to the latency threads.
    pub fn to_host(&self) -> usize {
        (self.to_device / HYSTERESIS).max(1)
    }

    /// Whether the threshold follows the measured times.
    pub fn is_adaptive(&self) -> bool {
        self.learning != Learning::Fixed
    }

    /// Whether an adaptive split is still measuring thresholds (the next search may run
    /// with another one).
    pub fn is_learning(&self) -> bool {
        !matches!(self.learning, Learning::Fixed | Learning::Settled)
    }

    /// Takes in a search's time (seconds) at the current threshold and chooses the next.
    fn learn(&mut self, secs: f64, stats: &CoopStats) {
        if self.learning == Learning::WarmUp {
            self.learning = Learning::HostAlone;
            return;
        }
        // A threshold must be clearly faster to displace the best (one search per threshold:
        // the spread between runs would otherwise decide).
        let better = self.best.is_none_or(|(_, best)| secs < best * MARGIN);
        if better {
            self.best = Some((self.to_device, secs));
        }
        match self.learning {
            Learning::Fixed | Learning::Settled | Learning::WarmUp => {}
            Learning::HostAlone => {
                self.host_alone = Some((secs, stats.peak_round));
                self.to_device = 1;
                self.learning = Learning::DeviceMost;
            }
            Learning::DeviceMost => {
                let (_, peak) = self.host_alone.unwrap_or((secs, 0));
                if better {
                    // The device was faster: try the latency threads on the lightest rounds.
                    self.to_device = MIN_TO_DEVICE;
                    self.learning = Learning::Climbing { up: true };
                } else if peak / STEP > MIN_TO_DEVICE {
                    // The threads were faster: try the device on the heaviest rounds only.
                    self.to_device = peak / STEP;
                    self.learning = Learning::Climbing { up: false };
                } else {
                    self.settle();
                }
            }
            Learning::Climbing { up } => {
                let next = if up {
                    self.to_device.saturating_mul(STEP)
                } else {
                    self.to_device / STEP
                };
                let peak = self.host_alone.map_or(0, |(_, p)| p);
                if better && next >= MIN_TO_DEVICE && (!up || next <= peak) {
                    self.to_device = next;
                } else {
                    self.settle();
                }
            }
        }
    }

    fn settle(&mut self) {
        self.to_device = self.best.map_or(self.to_device, |(t, _)| t);
        self.learning = Learning::Settled;
    }
}

/// Who did what in a cooperative search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CoopStats {
    /// The threshold this search ran with ([`CoopSplit::to_device`], edges).
    pub to_device: usize,
    /// Stints on the latency threads (the first is always theirs).
    pub host_stints: u64,
    /// Stints on the device.
    pub device_stints: u64,
    /// Vertices the latency threads expanded.
    pub host_visited: u64,
    /// Vertices the device expanded.
    pub device_visited: u64,
    /// Time in the latency threads' stints.
    pub host_time: Duration,
    /// Time in the device's stints (launches, reading back the waiting vertices).
    pub device_time: Duration,
    /// Time handing the distances over (mapping and unmapping them: free on fine SVM).
    pub handover_time: Duration,
    /// The most edges a round on the latency threads had to scan (the waiting vertices
    /// a stint starts from count as a round).
    pub peak_round: usize,
}

impl CoopStats {
    /// Vertices the latency threads expanded per second of their stints.
    pub fn host_rate(&self) -> f64 {
        rate(self.host_visited, self.host_time)
    }

    /// Vertices the device expanded per second of its stints and the hand-overs.
    pub fn device_rate(&self) -> f64 {
        rate(self.device_visited, self.device_time + self.handover_time)
    }
}

fn rate(visited: u64, time: Duration) -> f64 {
    let s = time.as_secs_f64();
    if s > 0.0 {
        visited as f64 / s
    } else {
        0.0
    }
}

/// A cooperative search's distances and counters, and who did what.
#[derive(Clone, Debug)]
pub struct CoopDeltaRun {
    /// Distances and the counters summed over both sides (`launches`: the device's).
    pub run: SsspRun,
    /// The split and each side's share.
    pub coop: CoopStats,
}

impl DeviceSssp<'_> {
    /// Shortest distances from `source` (0-based) by delta-stepping with buckets `delta`
    /// wide, light buckets on `pool`'s threads and heavy ones on the device, split by
    /// `split` (see [`coop_delta`](super::coop_delta)); an adaptive split learns from the
    /// search's measured rates for the next call.
    pub fn cooperative_delta_stepping(
        &mut self,
        pool: &LatencyPool,
        source: usize,
        delta: u32,
        split: &mut CoopSplit,
    ) -> Result<CoopDeltaRun> {
        self.graph.check_source(source)?;
        check_delta(delta)?;
        let started = Instant::now();
        let answer = AnswerMemory::start(self.graph.vertices());
        let (mut stats, coop) = loop {
            if let Some(done) = self.cooperative_search(pool, source, delta, split)? {
                break done;
            }
            // The device's resident launch did not fit: the stints' state is gone with it,
            // and the device runs one launch per iteration from now on.
        };
        let distances = self.read_distances(Some(answer))?;
        stats.compute_time = started.elapsed();
        stats.transfer_time = stats
            .compute_time
            .saturating_sub(coop.host_time + coop.device_time + coop.handover_time);
        split.learn(stats.compute_time.as_secs_f64(), &coop);
        Ok(CoopDeltaRun {
            run: SsspRun { distances, stats },
            coop,
        })
    }

    /// One cooperative search; `None` when the device's resident launch did not fit.
    fn cooperative_search(
        &mut self,
        pool: &LatencyPool,
        source: usize,
        delta: u32,
        split: &CoopSplit,
    ) -> Result<Option<(SsspStats, CoopStats)>> {
        self.begin_stints(source)?;
        let n = self.graph.vertices();
        // Made on the first stint the latency threads run.
        let mut expanded = None;
        let mut stats = SsspStats::default();
        let mut coop = CoopStats {
            to_device: split.to_device(),
            ..CoopStats::default()
        };
        let mut clock = StintClock::new();
        // The device's hand-back threshold in near vertices.
        let mean_degree = (self.graph.edges() / n.max(1)).max(1);
        let yield_below = u32::try_from(split.to_host().div_ceil(mean_degree)).unwrap_or(u32::MAX);
        // A source heavy by itself (a hub) goes to the device at once, without a map of the
        // distances for the latency threads.
        let source_edges = self.graph.out_degree(source as u32);
        coop.peak_round = source_edges;
        let mut handed: Option<(Vec<u32>, u32)> =
            (source_edges >= split.to_device()).then(|| (vec![source as u32], 0));
        let mut waiting = vec![source as u32];
        loop {
            let (heavy, lowest) = match handed.take() {
                Some(h) => h,
                None => {
                    // The latency threads, on the device's distances mapped to the host.
                    let t = Instant::now();
                    let mut map = self.dist.map()?;
                    let mapped = t.elapsed();
                    let t = Instant::now();
                    let expanded = expanded.get_or_insert_with(|| atomic_words(n, u32::MAX));
                    let dist = map.atomics();
                    let end = Stint {
                        graph: self.graph,
                        dist,
                        expanded,
                        delta,
                        stop_at: split.to_device(),
                        measure_rounds: true,
                    }
                    .run(pool, &waiting)?;
                    add(&mut stats, &end.stats);
                    coop.host_stints += 1;
                    coop.host_visited += end.stats.visited;
                    coop.host_time += t.elapsed();
                    coop.peak_round = coop.peak_round.max(end.peak_round);
                    let lowest = end.waiting.as_ref().map(|w| {
                        w.iter()
                            .map(|&v| dist[v as usize].load(std::sync::atomic::Ordering::Relaxed))
                            .min()
                            .unwrap_or(u32::MAX)
                    });
                    let t = Instant::now();
                    map.unmap()?;
                    coop.handover_time += mapped + t.elapsed();
                    match (end.waiting, lowest) {
                        (Some(heavy), Some(lowest)) => (heavy, lowest),
                        _ => return Ok(Some((stats, coop))),
                    }
                }
            };
            // The device, from there.
            let t = Instant::now();
            let ended = self.device_stint(&mut clock, &heavy, lowest, delta, yield_below)?;
            coop.device_time += t.elapsed();
            coop.device_stints += 1;
            match ended {
                DeviceStintEnd::NotResident => return Ok(None),
                DeviceStintEnd::Finished(s) => {
                    coop.device_visited += s.visited;
                    add(&mut stats, &s);
                    return Ok(Some((stats, coop)));
                }
                DeviceStintEnd::Yielded(s, light) => {
                    coop.device_visited += s.visited;
                    add(&mut stats, &s);
                    waiting = light;
                }
            }
        }
    }
}

/// Adds one stint's counters to the search's.
fn add(total: &mut SsspStats, stint: &SsspStats) {
    total.iterations += stint.iterations;
    total.buckets += stint.buckets;
    total.visited += stint.visited;
    total.stale += stint.stale;
    total.relaxed += stint.relaxed;
    total.launches += stint.launches;
    total.wait_time += stint.wait_time;
}
