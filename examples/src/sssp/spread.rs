//! SSSP over a device set ([`SpreadSssp`]): every member holds the graph and its own distances;
//! each iteration's frontier is split between the members by measured speed, each expands its
//! slice with `sssp_expand` (`kernels/sssp.cl`), and what they lowered is merged on one of
//! them.
//!
//! **One iteration, together.** The frontier and the merged distances live on the *primary*
//! (the member measured fastest when the search starts). When the split gives other members
//! slices, the host reads the primary's frontier (and, for a member that did not expand in
//! the previous iteration, its distances) before the primary expands; each other member
//! catches up (the previous iteration's changes through `sssp_apply`, or the whole distance
//! array), expands its slice and returns the vertices whose distance it lowered; the primary
//! expands its own slice meanwhile, then `sssp_merge` folds the others' distances into its
//! own with the same stamp, so each vertex is queued once, and its queued vertices form the
//! next frontier, as on one device. Every distance another member lowers reaches the primary,
//! so after catching up a member's distances equal the merged ones and a frontier entry is
//! stale on it exactly when it is stale on the primary. An iteration the primary runs alone
//! costs what it costs on the primary alone: no host round trip. With the heap
//! ([`Order::Heap`]) the heap lives on the primary, and the changes the heap took from the
//! frontier are kept on the host for the others' catch-up.
//!
//! **The latency threads** ([`SpreadSssp::with_latency_threads`]) are one more worker: they
//! keep their own distances and stamps in host memory (made when they first get a slice),
//! catch up the same two ways, expand with [`cpu`]'s relaxation and return what they lowered
//! for the primary's merge; alone they run [`cpu::shortest_paths`].
//!
//! **The split.** Each member's time for an iteration is modelled as a fixed part (copies and
//! launches: the shortest iteration it was measured at) plus its entries over its speed
//! (frontier entries per second, measured on slices of at least [`SAMPLE_MIN`] entries). An
//! iteration goes to the fastest members that finish it soonest together (each member added
//! must save 5 %): a small frontier goes to one member, a large one is shared. Members not
//! measured yet share frontiers large enough to measure them evenly.
//!
//! **Call after call.** The first calls of each order try, two calls each, the set together
//! and every member alone; later calls keep the fastest (together unless it is more than 3 %
//! slower than the best alone). [`SpreadRun::exploring`] marks the trial calls.
//!
//! **A member that fails** (an OpenCL error, a lost device, a launch past the timeout): one
//! that is not the primary leaves its slice to the primary (same stamp: what the primary
//! queued stays queued once) and the search finishes; the primary, or a member alone, takes
//! the merged distances with it, so the search runs again on the others. Later calls leave a
//! failed member out; with every member failed the call returns an error naming them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::Instant;

use asym_runtime::{DeviceSet, Error, LatencyPool, Result};

use super::cpu;
use super::device::DeviceSssp;
use super::{next_iteration, search, Order, Pair, Relaxer, SsspRun};
use crate::graph::Graph;
use asym_structures::HeapPlacement;

/// Slices smaller than this do not measure a member's speed (its fixed costs dominate).
pub const SAMPLE_MIN: usize = 2048;

/// How a search over a set runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetPlan {
    /// Every member not failed, frontiers split by speed and merged on the host.
    Together,
    /// Member `i` alone, its frontier resident on the device.
    Alone(usize),
    /// The latency threads alone ([`cpu::shortest_paths`]), where the set has them.
    LatencyThreads,
}

/// What one member did in a search over a set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemberShare {
    /// The device.
    pub device: String,
    /// Index of the member in the set; the set's length for the latency threads.
    pub member: usize,
    /// Frontier entries it expanded (visited and stale).
    pub entries: u64,
    /// Iterations in which it expanded a slice.
    pub iterations: u64,
    /// Seconds its driver was busy (copies, launches, waits).
    pub busy_s: f64,
    /// Why it stopped, if it failed during the search.
    pub error: Option<String>,
}

/// A search over a set: the distances and counters, and who did what.
#[derive(Clone, Debug)]
pub struct SpreadRun {
    /// Distances and counters, as one device's search gives them.
    pub run: SsspRun,
    /// How the search ran.
    pub plan: SetPlan,
    /// Whether this call was one of the trials that measure each plan.
    pub exploring: bool,
    /// Each member's share (members left out earlier are absent).
    pub members: Vec<MemberShare>,
    /// Frontier entries expanded again because a member failed with them.
    pub redone_entries: u64,
}

/// One member's model of an iteration's time: `fixed_s + entries / entries_per_s`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SpeedModel {
    /// Shortest iteration measured, seconds (0: unknown).
    fixed_s: f64,
    /// Frontier entries per second on slices of at least [`SAMPLE_MIN`] (0: unknown).
    entries_per_s: f64,
}

impl SpeedModel {
    fn record(&mut self, entries: usize, secs: f64) {
        if secs <= 0.0 {
            return;
        }
        self.fixed_s = if self.fixed_s > 0.0 {
            self.fixed_s.min(secs)
        } else {
            secs
        };
        if entries >= SAMPLE_MIN {
            let sample = entries as f64 / secs;
            self.entries_per_s = if self.entries_per_s > 0.0 {
                0.7 * self.entries_per_s + 0.3 * sample
            } else {
                sample
            };
        }
    }
}

/// Splits `frontier` entries among members with `models` (index, model): the ranges each
/// expands, in member order, empty ranges left out. See the module documentation.
fn split(models: &[(usize, SpeedModel)], frontier: usize) -> Vec<(usize, std::ops::Range<usize>)> {
    if models.is_empty() || frontier == 0 {
        return Vec::new();
    }
    let unknown = models.iter().any(|(_, m)| m.entries_per_s <= 0.0);
    let shares: Vec<(usize, usize)> = if unknown {
        if frontier >= SAMPLE_MIN * models.len() {
            // Equal shares, so that every member is measured.
            let each = frontier / models.len();
            models
                .iter()
                .enumerate()
                .map(|(j, (i, _))| {
                    let extra = usize::from(j < frontier % models.len());
                    (*i, each + extra)
                })
                .collect()
        } else {
            // Too small to measure anyone: the member known fastest, else the first.
            let best = models
                .iter()
                .fold(models[0], |best, m| {
                    if m.1.entries_per_s > best.1.entries_per_s {
                        *m
                    } else {
                        best
                    }
                })
                .0;
            vec![(best, frontier)]
        }
    } else {
        let mut by_speed: Vec<(usize, SpeedModel)> = models.to_vec();
        by_speed.sort_by(|a, b| b.1.entries_per_s.total_cmp(&a.1.entries_per_s));
        // The k fastest finish together at T = (F + sum fixed·rate) / sum rate, if every one
        // of them has T above its fixed part (else it would get no entries).
        let f = frontier as f64;
        let mut best: Option<(f64, usize)> = None;
        let (mut fixed_rate, mut rate) = (0.0, 0.0);
        for (k, (_, m)) in by_speed.iter().enumerate() {
            fixed_rate += m.fixed_s * m.entries_per_s;
            rate += m.entries_per_s;
            let t = (f + fixed_rate) / rate;
            let valid = by_speed[..=k].iter().all(|(_, m)| t > m.fixed_s);
            // Another member must save 5 %: the model leaves out the host merging more lists.
            if valid && best.is_none_or(|(bt, _)| t < 0.95 * bt) {
                best = Some((t, k + 1));
            }
        }
        let (t, k) = best.unwrap_or((0.0, 1));
        let mut shares: Vec<(usize, usize)> = by_speed[..k]
            .iter()
            .map(|(i, m)| (*i, ((t - m.fixed_s) * m.entries_per_s).max(0.0) as usize))
            .collect();
        if k == 1 {
            shares[0].1 = frontier;
        }
        // Rounding: whatever is left over or over-given settles on the fastest.
        let given: usize = shares.iter().map(|s| s.1).sum();
        if given > frontier {
            let mut over = given - frontier;
            for s in shares.iter_mut().rev() {
                let cut = over.min(s.1);
                s.1 -= cut;
                over -= cut;
            }
        } else {
            shares[0].1 += frontier - given;
        }
        shares.sort_by_key(|s| s.0);
        shares
    };
    let mut start = 0;
    shares
        .into_iter()
        .filter(|s| s.1 > 0)
        .map(|(i, n)| {
            let r = (i, start..start + n);
            start += n;
            r
        })
        .collect()
}

/// How a share of the latency threads is labelled.
fn latency_label(pool: &LatencyPool) -> String {
    format!("latency threads ({})", pool.len())
}

/// The members that have not failed.
fn live(members: &[SetMember<'_>]) -> Vec<usize> {
    (0..members.len())
        .filter(|&i| members[i].failed.is_none())
        .collect()
}

/// One device of the set with the graph on it.
struct SetMember<'g> {
    sssp: DeviceSssp<'g>,
    model: SpeedModel,
    failed: Option<String>,
    /// An injected failure: the iteration (counted from 0 in the next search together it
    /// takes part in) whose expansion fails (tests).
    fail_at: Option<u64>,
}

/// A graph on every device of a set, ready for searches from any source.
pub struct SpreadSssp<'g> {
    graph: &'g Graph,
    members: Vec<SetMember<'g>>,
    /// The latency threads as one more worker ([`SpreadSssp::with_latency_threads`]).
    pool: Option<&'g LatencyPool>,
    /// Their speed, and why they are left out if they failed.
    cpu_model: SpeedModel,
    cpu_failed: Option<String>,
    /// Tests: each iteration together goes whole to the next worker in turn.
    round_robin: bool,
    /// Keys per second of each plan, per order (the faster of its calls), and calls each.
    plans: HashMap<(bool, SetPlan), (f64, u32)>,
}

impl std::fmt::Debug for SpreadSssp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpreadSssp")
            .field("vertices", &self.graph.vertices())
            .field("members", &self.members.len())
            .finish()
    }
}

/// Calls of each plan while exploring (the first warms its buffers and programs).
const TRIALS: u32 = 2;

impl<'g> SpreadSssp<'g> {
    /// Uploads `graph` to every member of `set` and builds the kernels there.
    pub fn new(set: &DeviceSet, graph: &'g Graph) -> Result<Self> {
        let members = set
            .members()
            .iter()
            .map(|rt| {
                Ok(SetMember {
                    sssp: DeviceSssp::new(rt, graph)?,
                    model: SpeedModel::default(),
                    failed: None,
                    fail_at: None,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SpreadSssp {
            graph,
            members,
            pool: None,
            cpu_model: SpeedModel::default(),
            cpu_failed: None,
            round_robin: false,
            plans: HashMap::new(),
        })
    }

    /// Adds `pool`'s latency threads as one more worker: searches together give them slices
    /// of large frontiers as they give the devices (their distances in host memory), and
    /// they are tried alone ([`SetPlan::LatencyThreads`]).
    pub fn with_latency_threads(mut self, pool: &'g LatencyPool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The latency threads, while they take part.
    fn cpu(&self) -> Option<&'g LatencyPool> {
        self.pool.filter(|_| self.cpu_failed.is_none())
    }

    /// Workers still taking part: live members, and the latency threads.
    fn workers(&self) -> usize {
        self.live().len() + usize::from(self.cpu().is_some())
    }

    /// The members, by label.
    pub fn devices(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| m.sssp.runtime().profile().label())
            .collect()
    }

    /// The members that failed during a search and are left out since, with their errors.
    pub fn failed_devices(&self) -> Vec<(String, String)> {
        self.members
            .iter()
            .filter_map(|m| {
                m.failed
                    .clone()
                    .map(|e| (m.sssp.runtime().profile().label(), e))
            })
            .collect()
    }

    /// Makes member `member` fail with [`Error::Lost`] when it expands iteration `iteration`
    /// (from 0) of the next search together it takes part in: a fault injection for tests.
    #[doc(hidden)]
    pub fn inject_member_failure(&mut self, member: usize, iteration: u64) -> Result<()> {
        let n = self.members.len();
        let m = self
            .members
            .get_mut(member)
            .ok_or_else(|| Error::InvalidArgument(format!("member {member} of a set of {n}")))?;
        m.fail_at = Some(iteration);
        Ok(())
    }

    /// Makes each iteration of a search together go whole to the next worker in turn, so
    /// that every worker catches up after sitting out (tests of the catch-up).
    #[doc(hidden)]
    pub fn round_robin(&mut self, on: bool) {
        self.round_robin = on;
    }

    /// Runs the next search as `plan` (while it is a plan the set can run), bypassing what
    /// was measured: for benchmarks that compare the plans.
    pub fn shortest_paths_as(
        &mut self,
        plan: SetPlan,
        source: usize,
        order: Order,
        heap: &HeapPlacement,
    ) -> Result<SpreadRun> {
        self.graph.check_source(source)?;
        let live = self.live();
        let runnable = match plan {
            SetPlan::Together => !live.is_empty(),
            SetPlan::Alone(i) => live.contains(&i),
            SetPlan::LatencyThreads => self.cpu().is_some(),
        };
        if !runnable {
            return Err(Error::InvalidArgument(format!(
                "{plan:?} over a set whose live members are {live:?}"
            )));
        }
        self.run_plan(plan, false, source, order, heap)
    }

    /// Shortest distances from `source` (0-based), as [`DeviceSssp::shortest_paths`] gives
    /// them, run as the plan measured fastest for `order` (see the module documentation).
    pub fn shortest_paths(
        &mut self,
        source: usize,
        order: Order,
        heap: &HeapPlacement,
    ) -> Result<SpreadRun> {
        self.graph.check_source(source)?;
        loop {
            let workers = self.workers();
            if workers == 0 {
                return Err(self.all_failed());
            }
            let (plan, exploring) = self.choose(order);
            match self.run_plan(plan, exploring, source, order, heap) {
                // A worker holding the distances failed (it is marked): the search runs
                // again on the others.
                Err(_) if self.workers() < workers => continue,
                other => return other,
            }
        }
    }

    fn live(&self) -> Vec<usize> {
        live(&self.members)
    }

    fn all_failed(&self) -> Error {
        let mut failed: Vec<String> = self
            .failed_devices()
            .iter()
            .map(|(d, e)| format!("{d}: {e}"))
            .collect();
        if let Some(e) = &self.cpu_failed {
            failed.push(format!("the latency threads: {e}"));
        }
        Error::device_lost("every device of the set", failed.join("; "))
    }

    /// The plan for the next call of `order`: the next trial, else the fastest measured.
    fn choose(&self, order: Order) -> (SetPlan, bool) {
        let live = self.live();
        let heap = matches!(order, Order::Heap { .. });
        let together = !live.is_empty() && self.workers() > 1;
        let candidates: Vec<SetPlan> = together
            .then_some(SetPlan::Together)
            .into_iter()
            .chain(live.iter().map(|&i| SetPlan::Alone(i)))
            .chain(self.cpu().map(|_| SetPlan::LatencyThreads))
            .collect();
        if candidates.len() == 1 {
            return (candidates[0], false);
        }
        if let Some(trial) = candidates.iter().find(|p| {
            self.plans
                .get(&(heap, **p))
                .is_none_or(|(_, calls)| *calls < TRIALS)
        }) {
            return (*trial, true);
        }
        let rate = |p: &SetPlan| self.plans.get(&(heap, *p)).map_or(0.0, |r| r.0);
        let best = candidates
            .iter()
            .copied()
            .max_by(|a, b| rate(a).total_cmp(&rate(b)))
            .unwrap_or(SetPlan::Together);
        if together && rate(&SetPlan::Together) * 1.03 >= rate(&best) {
            (SetPlan::Together, false)
        } else {
            (best, false)
        }
    }

    fn run_plan(
        &mut self,
        plan: SetPlan,
        exploring: bool,
        source: usize,
        order: Order,
        heap: &HeapPlacement,
    ) -> Result<SpreadRun> {
        let started = Instant::now();
        let result = match plan {
            SetPlan::Alone(i) => {
                let member = &mut self.members[i];
                let run = match injected(member, 0) {
                    Some(e) => Err(e),
                    None => member.sssp.shortest_paths(source, order, heap),
                };
                if let Err(e) = &run {
                    if e.is_device_fault() {
                        member.failed = Some(e.to_string());
                    }
                }
                let run = run?;
                let share = MemberShare {
                    device: member.sssp.runtime().profile().label(),
                    member: i,
                    entries: run.stats.visited + run.stats.stale,
                    iterations: run.stats.iterations,
                    busy_s: started.elapsed().as_secs_f64(),
                    error: None,
                };
                SpreadRun {
                    run,
                    plan,
                    exploring,
                    members: vec![share],
                    redone_entries: 0,
                }
            }
            SetPlan::LatencyThreads => {
                let pool = self.cpu().ok_or_else(|| self.all_failed())?;
                let run = cpu::shortest_paths(self.graph, source, pool, order);
                if let Err(e @ Error::LatencyThreadPanicked { .. }) = &run {
                    self.cpu_failed = Some(e.to_string());
                }
                let run = run?;
                SpreadRun {
                    members: vec![MemberShare {
                        device: latency_label(pool),
                        member: self.members.len(),
                        entries: run.stats.visited + run.stats.stale,
                        iterations: run.stats.iterations,
                        busy_s: started.elapsed().as_secs_f64(),
                        error: None,
                    }],
                    run,
                    plan,
                    exploring,
                    redone_entries: 0,
                }
            }
            SetPlan::Together => self.together(source, order, heap, exploring)?,
        };
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let work = (result.run.stats.visited + result.run.stats.stale).max(1) as f64;
        let heap_order = matches!(order, Order::Heap { .. });
        if result.members.iter().all(|m| m.error.is_none()) {
            let entry = self.plans.entry((heap_order, plan)).or_insert((0.0, 0));
            entry.0 = entry.0.max(work / secs);
            entry.1 += 1;
        }
        Ok(result)
    }

    /// The live member measured fastest (the first on ties and before any measurement).
    fn fastest(&self) -> Option<usize> {
        self.live()
            .into_iter()
            .fold(None, |best: Option<usize>, i| match best {
                Some(b)
                    if self.members[b].model.entries_per_s
                        >= self.members[i].model.entries_per_s =>
                {
                    Some(b)
                }
                _ => Some(i),
            })
    }

    fn together(
        &mut self,
        source: usize,
        order: Order,
        heap: &HeapPlacement,
        exploring: bool,
    ) -> Result<SpreadRun> {
        let primary = self.fastest().ok_or_else(|| self.all_failed())?;
        // The others start over when they first get a slice (their stamps from an earlier
        // search would keep vertices from being queued: stamps count from 1 in each search).
        {
            let m = &mut self.members[primary];
            if let Err(e) = m.sssp.reset(source) {
                if e.is_device_fault() {
                    m.failed = Some(e.to_string());
                }
                return Err(e);
            }
        }
        let live = self.live();
        let members = self.members.len();
        let cpu = self.cpu().map(|pool| CpuSide {
            pool,
            model: &mut self.cpu_model,
            failed: &mut self.cpu_failed,
            dist: Vec::new(),
            stamp: Vec::new(),
        });
        let mut relax = SetRelaxer {
            graph: self.graph,
            cpu,
            members: &mut self.members,
            primary,
            len: 0,
            frontier_is_changes: false,
            changes_on_host: None,
            expanded_in: vec![None; members + 1],
            source,
            round_robin: self.round_robin,
            round: 0,
            stamp: 0,
            shares: Vec::new(),
            redone: 0,
        };
        relax.shares = live
            .iter()
            .map(|&i| MemberShare {
                device: relax.members[i].sssp.runtime().profile().label(),
                member: i,
                ..Default::default()
            })
            .collect();
        if let Some(cpu) = &relax.cpu {
            relax.shares.push(MemberShare {
                device: latency_label(cpu.pool),
                member: members,
                ..Default::default()
            });
        }
        let run = match order {
            Order::Frontier => search(&mut relax, None, order, source as u32),
            Order::Heap { batch, .. } => {
                let rt = relax.members[primary].sssp.runtime().clone();
                heap.build(&rt, batch).and_then(|mut heap| {
                    search(&mut relax, Some(heap.as_mut()), order, source as u32)
                })
            }
        };
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                if e.is_device_fault() && relax.members[primary].failed.is_none() {
                    relax.members[primary].failed = Some(e.to_string());
                }
                return Err(e);
            }
        };
        Ok(SpreadRun {
            run,
            plan: SetPlan::Together,
            exploring,
            members: relax.shares,
            redone_entries: relax.redone,
        })
    }
}

/// The search loop's view of a set searching together. The frontier and the merged distances
/// live on the primary member (the fastest when the search started); the others get slices
/// of the frontier, and the distances they lower are merged on the primary (`sssp_merge`).
/// An iteration the primary runs alone costs what it costs on the primary alone.
struct SetRelaxer<'a, 'g> {
    graph: &'g Graph,
    members: &'a mut Vec<SetMember<'g>>,
    /// The latency threads, where the set has them (worker index: the members' count).
    cpu: Option<CpuSide<'a>>,
    primary: usize,
    /// Entries in the primary's frontier.
    len: usize,
    /// Whether the primary's frontier is the list of vertices whose distance dropped in the
    /// last iteration (not a heap's pop).
    frontier_is_changes: bool,
    /// That list, where the heap took it from the frontier.
    changes_on_host: Option<Vec<Pair>>,
    /// Per member, then the latency threads: the last iteration it expanded a slice in. A
    /// worker that expanded in the previous iteration catches up by applying that
    /// iteration's changes; any other gets the primary's whole distance array.
    expanded_in: Vec<Option<u64>>,
    /// The search's source (a member is reset when it first gets a slice).
    source: usize,
    /// See [`SpreadSssp::round_robin`].
    round_robin: bool,
    /// Iterations expanded.
    round: u64,
    /// The stamp of the current iteration (every member's launches of one iteration share it).
    stamp: u32,
    shares: Vec<MemberShare>,
    redone: u64,
}

/// The latency threads as a worker of one search: their own distances and stamps in host
/// memory (made when they first get a slice), caught up like a device's.
struct CpuSide<'a> {
    pool: &'a LatencyPool,
    model: &'a mut SpeedModel,
    failed: &'a mut Option<String>,
    dist: Vec<AtomicU32>,
    stamp: Vec<AtomicU32>,
}

impl CpuSide<'_> {
    /// Catches up as `catch_up` says and expands `slice` with stamp `stamp`.
    fn expand(
        &mut self,
        graph: &Graph,
        catch_up: &CatchUp,
        changes: &[Pair],
        dist: &[u32],
        slice: &[Pair],
        stamp: u32,
    ) -> Result<(Vec<Pair>, u64, u64)> {
        match catch_up {
            CatchUp::Changes => {
                for &(d, v) in changes {
                    self.dist[v as usize].fetch_min(d, Relaxed);
                }
            }
            CatchUp::Everything { .. } if self.dist.len() != dist.len() => {
                self.dist = dist.iter().map(|&d| AtomicU32::new(d)).collect();
                self.stamp = (0..dist.len()).map(|_| AtomicU32::new(0)).collect();
            }
            CatchUp::Everything { .. } => {
                for (a, &d) in self.dist.iter().zip(dist) {
                    a.store(d, Relaxed);
                }
            }
        }
        cpu::expand_slice(graph, self.pool, &self.dist, &self.stamp, slice, stamp)
    }
}

/// What a member applies before expanding its slice.
enum CatchUp {
    /// The last iteration's changes (it expanded in that iteration).
    Changes,
    /// The primary's whole distance array (after a reset of its stamps where this is its
    /// first slice of the search).
    Everything { first: bool },
}

/// What one other member returned from an iteration.
struct Expanded {
    member: usize,
    range: std::ops::Range<usize>,
    result: Result<(Vec<Pair>, u64, u64)>,
    secs: f64,
}

/// Whether the member's injected failure is due in iteration `round`.
fn injected(m: &mut SetMember<'_>, round: u64) -> Option<Error> {
    if m.fail_at.is_some_and(|at| round >= at) {
        m.fail_at = None;
        Some(Error::device_lost(
            m.sssp.runtime().profile().label(),
            format!("a failure injected in iteration {round}"),
        ))
    } else {
        None
    }
}

impl SetRelaxer<'_, '_> {
    fn live(&self) -> Vec<usize> {
        live(self.members)
    }

    fn share(&mut self, member: usize) -> Option<&mut MemberShare> {
        self.shares.iter_mut().find(|s| s.member == member)
    }

    /// The primary failed: the search cannot go on (its distances were the merged ones).
    fn primary_failed(&mut self, e: Error) -> Error {
        let p = self.primary;
        self.members[p].failed = Some(e.to_string());
        if let Some(share) = self.share(p) {
            share.error = Some(e.to_string());
        }
        e
    }
}

impl Relaxer for SetRelaxer<'_, '_> {
    fn frontier_len(&self) -> usize {
        self.len
    }

    fn take_frontier(&mut self) -> Result<Vec<Pair>> {
        let p = self.primary;
        let pairs = self.members[p].sssp.read_frontier(self.len)?;
        // Kept only for a worker that can catch up with them: one that expanded in the
        // iteration that made them (any other gets the whole distance array).
        let last = self.round.checked_sub(1);
        let needed = self
            .expanded_in
            .iter()
            .enumerate()
            .any(|(i, e)| i != p && e.is_some() && *e == last);
        if self.frontier_is_changes && needed {
            self.changes_on_host = Some(pairs.clone());
        }
        self.frontier_is_changes = false;
        self.len = 0;
        Ok(pairs)
    }

    fn set_frontier(&mut self, pairs: &[Pair]) -> Result<()> {
        let p = self.primary;
        self.members[p].sssp.write_frontier(pairs)?;
        self.len = pairs.len();
        self.frontier_is_changes = false;
        Ok(())
    }

    fn expand(&mut self) -> Result<(u64, u64)> {
        self.stamp = next_iteration(self.stamp)?;
        let (p, stamp, round, source) = (self.primary, self.stamp, self.round, self.source);
        let cpu_index = self.members.len();
        let mut models: Vec<(usize, SpeedModel)> = self
            .live()
            .into_iter()
            .map(|i| (i, self.members[i].model))
            .collect();
        if let Some(c) = self.cpu.as_ref().filter(|c| c.failed.is_none()) {
            models.push((cpu_index, *c.model));
        }
        let ranges = if self.round_robin {
            let (worker, _) = models[(round % models.len() as u64) as usize];
            vec![(worker, 0..self.len)]
        } else {
            split(&models, self.len)
        };
        let primary_range = ranges
            .iter()
            .find(|(i, _)| *i == p)
            .map_or(0..0, |(_, r)| r.clone());
        let others: Vec<(usize, std::ops::Range<usize>, CatchUp)> = ranges
            .iter()
            .filter(|(i, _)| *i != p)
            .map(|(i, r)| {
                let catch_up = match self.expanded_in[*i] {
                    Some(r) if r + 1 == round => CatchUp::Changes,
                    last => CatchUp::Everything {
                        first: last.is_none(),
                    },
                };
                (*i, r.clone(), catch_up)
            })
            .collect();
        // What the others need from the primary, read before it expands: the frontier (their
        // slices, and the last changes where the frontier holds them) and its distances.
        // The last iteration's changes: the frontier itself unless a heap took them.
        let changes_taken = self.changes_on_host.take();
        let (frontier, dist) = if others.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            let primary = &mut self.members[p].sssp;
            let frontier = primary
                .read_frontier(self.len)
                .map_err(|e| self.primary_failed(e))?;
            let needs_all = others
                .iter()
                .any(|o| matches!(o.2, CatchUp::Everything { .. }));
            let primary = &mut self.members[p].sssp;
            let dist = if needs_all {
                primary
                    .read_raw_distances()
                    .map_err(|e| self.primary_failed(e))?
            } else {
                Vec::new()
            };
            (frontier, dist)
        };
        let changes: &[Pair] = match &changes_taken {
            _ if self.frontier_is_changes => &frontier,
            Some(c) => c,
            None => &[],
        };
        let (frontier, dist) = (&frontier[..], &dist[..]);
        let mut primary_fault = None;
        let mut primary_secs = 0.0;
        let outcomes: Vec<Expanded> = {
            let mut primary_member = None;
            let mut work = Vec::new();
            for (i, m) in self.members.iter_mut().enumerate() {
                if i == p {
                    primary_member = Some(m);
                } else if let Some((_, r, c)) = others.iter().find(|o| o.0 == i) {
                    work.push((i, r.clone(), c, m));
                }
            }
            let primary_member = primary_member.expect("the primary is a member");
            let graph = self.graph;
            let cpu_work = others
                .iter()
                .find(|o| o.0 == cpu_index)
                .and_then(|(_, r, c)| self.cpu.as_mut().map(|cpu| (r.clone(), c, cpu)));
            std::thread::scope(|s| {
                let cpu_handle = cpu_work.map(|(range, catch_up, cpu)| {
                    s.spawn(move || {
                        let t = Instant::now();
                        let result = cpu.expand(
                            graph,
                            catch_up,
                            changes,
                            dist,
                            &frontier[range.clone()],
                            stamp,
                        );
                        Expanded {
                            member: cpu_index,
                            range,
                            result,
                            secs: t.elapsed().as_secs_f64(),
                        }
                    })
                });
                let handles: Vec<_> = work
                    .into_iter()
                    .map(|(i, range, catch_up, m)| {
                        let h = s.spawn(move || {
                            let t = Instant::now();
                            let result = (|| {
                                match catch_up {
                                    CatchUp::Changes => {
                                        m.sssp.write_frontier(changes)?;
                                        m.sssp.apply_frontier(changes.len())?;
                                    }
                                    CatchUp::Everything { first } => {
                                        if *first {
                                            m.sssp.reset(source)?;
                                        }
                                        m.sssp.write_distances(dist)?
                                    }
                                }
                                m.sssp.write_frontier(&frontier[range.clone()])?;
                                if let Some(e) = injected(m, round) {
                                    return Err(e);
                                }
                                let (next, visited, stale) =
                                    m.sssp.expand_range(0, range.len(), stamp)?;
                                Ok((m.sssp.read_frontier(next)?, visited, stale))
                            })();
                            Expanded {
                                member: i,
                                range,
                                result,
                                secs: t.elapsed().as_secs_f64(),
                            }
                        });
                        (i, h)
                    })
                    .collect();
                // The primary's own slice, on this thread.
                let t = Instant::now();
                let m = primary_member;
                let mine = (|| {
                    if let Some(e) = injected(m, round) {
                        return Err(e);
                    }
                    m.sssp.begin_iteration()?;
                    m.sssp
                        .expand_launch(primary_range.start, primary_range.end, stamp)
                })();
                primary_secs = t.elapsed().as_secs_f64();
                if let Err(e) = mine {
                    primary_fault = Some(e);
                }
                handles
                    .into_iter()
                    .chain(cpu_handle.map(|h| (cpu_index, h)))
                    .map(|(i, h)| {
                        h.join().unwrap_or_else(|_| Expanded {
                            member: i,
                            range: 0..0,
                            result: Err(Error::thread_lost("an SSSP driver thread", "it panicked")),
                            secs: 0.0,
                        })
                    })
                    .collect()
            })
        };
        if let Some(e) = primary_fault {
            return Err(self.primary_failed(e));
        }
        if !primary_range.is_empty() {
            self.members[p]
                .model
                .record(primary_range.len(), primary_secs);
            if let Some(share) = self.share(p) {
                share.entries += primary_range.len() as u64;
                share.iterations += 1;
                share.busy_s += primary_secs;
            }
        }
        let mut lowered = Vec::new();
        let (mut visited, mut stale) = (0, 0);
        for out in outcomes {
            match out.result {
                Ok((pairs, v, st)) => {
                    let model = match self.members.get_mut(out.member) {
                        Some(m) => &mut m.model,
                        None => &mut *self.cpu.as_mut().expect("the latency threads").model,
                    };
                    model.record(out.range.len(), out.secs);
                    self.expanded_in[out.member] = Some(round);
                    if let Some(share) = self.share(out.member) {
                        share.entries += out.range.len() as u64;
                        share.iterations += 1;
                        share.busy_s += out.secs;
                    }
                    visited += v;
                    stale += st;
                    lowered.extend_from_slice(&pairs);
                }
                Err(e) => {
                    match self.members.get_mut(out.member) {
                        Some(m) => m.failed = Some(e.to_string()),
                        None => {
                            if let Some(cpu) = self.cpu.as_mut() {
                                *cpu.failed = Some(e.to_string());
                            }
                        }
                    }
                    if let Some(share) = self.share(out.member) {
                        share.error = Some(e.to_string());
                        share.busy_s += out.secs;
                    }
                    // Its distances are left behind; the primary expands its slice again
                    // (same stamp: whatever it queued already stays queued once).
                    self.redone += out.range.len() as u64;
                    let primary = &mut self.members[p].sssp;
                    primary
                        .expand_launch(out.range.start, out.range.end, stamp)
                        .map_err(|e| self.primary_failed(e))?;
                    if let Some(share) = self.share(p) {
                        share.entries += out.range.len() as u64;
                    }
                }
            }
        }
        let primary = &mut self.members[p].sssp;
        let finished = primary
            .merge_launch(&lowered, stamp)
            .and_then(|()| primary.finish_iteration());
        let (next, pv, ps) = finished.map_err(|e| self.primary_failed(e))?;
        self.expanded_in[p] = Some(round);
        self.len = next;
        self.frontier_is_changes = true;
        self.round += 1;
        Ok((visited + pv, stale + ps))
    }

    fn distances(&mut self) -> Result<Vec<u64>> {
        let p = self.primary;
        self.members[p].sssp.read_distances(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(fixed_s: f64, entries_per_s: f64) -> SpeedModel {
        SpeedModel {
            fixed_s,
            entries_per_s,
        }
    }

    fn total(r: &[(usize, std::ops::Range<usize>)]) -> usize {
        r.iter().map(|(_, r)| r.len()).sum()
    }

    #[test]
    fn unmeasured_members_share_large_frontiers_evenly_and_small_ones_go_to_one() {
        let m = [(0, model(0.0, 0.0)), (2, model(0.0, 0.0))];
        let r = split(&m, 3 * SAMPLE_MIN + 1);
        assert_eq!(r.len(), 2);
        assert_eq!(total(&r), 3 * SAMPLE_MIN + 1);
        assert_eq!(r[0].1, 0..(3 * SAMPLE_MIN + 1).div_ceil(2));
        let r = split(&m, 10);
        assert_eq!(r, vec![(0, 0..10)]);
        assert!(split(&m, 0).is_empty());
    }

    #[test]
    fn measured_members_finish_together_and_small_frontiers_stay_on_the_fastest() {
        // Member 1: 10x the speed, same fixed cost.
        let m = [(0, model(1e-3, 1e6)), (1, model(1e-3, 1e7))];
        let r = split(&m, 1000);
        assert_eq!(r, vec![(1, 0..1000)], "too small to share");
        let f = 10_000_000;
        let r = split(&m, f);
        assert_eq!(total(&r), f);
        let t = |i: usize, n: usize| m[i].1.fixed_s + n as f64 / m[i].1.entries_per_s;
        let (a, b) = (r[0].1.len(), r[1].1.len());
        assert!((t(0, a) - t(1, b)).abs() < 1e-3, "{a} {b}");
        // A member with a large fixed cost is left out.
        let m = [(0, model(1.0, 1e6)), (1, model(1e-3, 1e7))];
        assert_eq!(split(&m, 100_000), vec![(1, 0..100_000)]);
    }

    #[test]
    fn speed_is_sampled_only_on_large_slices() {
        let mut m = SpeedModel::default();
        m.record(10, 1e-3);
        assert_eq!(m.fixed_s, 1e-3);
        assert_eq!(m.entries_per_s, 0.0);
        m.record(SAMPLE_MIN * 10, 2e-3);
        assert_eq!(m.fixed_s, 1e-3);
        assert!((m.entries_per_s - SAMPLE_MIN as f64 * 10.0 / 2e-3).abs() < 1.0);
    }
}
