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

use asym_runtime::spread::{
    split, Failures, MemberReport, PlanBook, SpeedModel, SplitRule, Worker,
};
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

/// How the set splits a frontier: slices under [`SAMPLE_MIN`] entries teach no speed, and
/// the host's merge is left to the 5 % each more member must save.
const RULE: SplitRule = SplitRule {
    sample_min: SAMPLE_MIN,
    split_s_per_item: 0.0,
};

/// A search over a set: the distances and counters, and who did what.
#[derive(Clone, Debug)]
pub struct SpreadRun {
    /// Distances and counters, as one device's search gives them.
    pub run: SsspRun,
    /// How the search ran.
    pub plan: SetPlan,
    /// Whether this call was one of the trials that measure each plan.
    pub exploring: bool,
    /// Each worker's share: its frontier entries expanded (`items`) and iterations
    /// (`pieces`); members left out earlier are absent.
    pub members: Vec<MemberReport>,
    /// Frontier entries expanded again because a member failed with them.
    pub redone_entries: u64,
}

/// The plan a group of workers is: one worker alone, else together.
fn plan_of(group: &[Worker]) -> SetPlan {
    match group {
        [Worker::Device(i)] => SetPlan::Alone(*i),
        [Worker::LatencyThreads] => SetPlan::LatencyThreads,
        _ => SetPlan::Together,
    }
}

/// How a share of the latency threads is labelled.
fn latency_label(pool: &LatencyPool) -> String {
    format!("latency threads ({})", pool.len())
}

/// One device of the set with the graph on it.
struct SetMember<'g> {
    sssp: DeviceSssp<'g>,
    model: SpeedModel,
}

/// A graph on every device of a set, ready for searches from any source.
pub struct SpreadSssp<'g> {
    graph: &'g Graph,
    members: Vec<SetMember<'g>>,
    /// Which members failed, and the faults tests inject (a step is an iteration, counted
    /// from 0 in the next search the member takes part in).
    failures: Failures,
    /// The latency threads as one more worker ([`SpreadSssp::with_latency_threads`]).
    pool: Option<&'g LatencyPool>,
    /// Their speed.
    cpu_model: SpeedModel,
    /// Tests: each iteration together goes whole to the next worker in turn.
    round_robin: bool,
    /// The groups of workers tried, per order (`true`: the heap order).
    plans: HashMap<bool, PlanBook>,
}

impl std::fmt::Debug for SpreadSssp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpreadSssp")
            .field("vertices", &self.graph.vertices())
            .field("members", &self.members.len())
            .finish()
    }
}

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
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let failures = Failures::new(
            set.members()
                .iter()
                .map(|rt| rt.profile().label())
                .collect(),
        );
        Ok(SpreadSssp {
            graph,
            members,
            failures,
            pool: None,
            cpu_model: SpeedModel::default(),
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

    /// The latency threads, where the set has them.
    fn cpu(&self) -> Option<&'g LatencyPool> {
        self.pool
    }

    /// Workers still taking part: live members, then the latency threads.
    fn workers(&self) -> Vec<Worker> {
        let live = self.failures.live().into_iter().map(Worker::Device);
        live.chain(self.cpu().map(|_| Worker::LatencyThreads))
            .collect()
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
        self.failures.failed()
    }

    /// Makes member `member` fail with [`Error::DeviceLost`] when it expands iteration
    /// `iteration` (from 0) of the next search it takes part in: a fault injection for tests.
    #[doc(hidden)]
    pub fn inject_member_failure(&mut self, member: usize, iteration: u64) -> Result<()> {
        self.failures.inject(member, iteration)
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
        let runnable = match plan {
            SetPlan::Together => !self.failures.live().is_empty(),
            SetPlan::Alone(i) => self.failures.is_live(i),
            SetPlan::LatencyThreads => self.cpu().is_some(),
        };
        if !runnable {
            return Err(Error::out_of_range(
                "plan",
                format!("{plan:?}"),
                format!("the set's live members are {:?}", self.failures.live()),
            ));
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
            let workers = self.workers().len();
            if workers == 0 {
                return Err(self.failures.all_failed());
            }
            let (plan, exploring) = self.choose(order);
            match self.run_plan(plan, exploring, source, order, heap) {
                // A member holding the distances failed (it left the set): the search runs
                // again on the others.
                Err(_) if self.workers().len() < workers => continue,
                other => return other,
            }
        }
    }

    /// The plan for the next call of `order` and whether it is a trial: the set's
    /// [`PlanBook`] over its workers (together, each alone), trials ordered by speed.
    fn choose(&self, order: Order) -> (SetPlan, bool) {
        let workers = self.workers();
        if workers.len() == 1 {
            return (plan_of(&workers), false);
        }
        let book = self.plans.get(&matches!(order, Order::Heap { .. }));
        let guess = |w: Worker| match w {
            Worker::Device(i) => self.members[i].model.items_per_s,
            Worker::LatencyThreads => self.cpu_model.items_per_s,
        };
        let (group, exploring) = book.cloned().unwrap_or_default().plan(&workers, guess);
        (plan_of(&group), exploring)
    }

    /// The group of workers `plan` runs on.
    fn group_of(&self, plan: SetPlan) -> Vec<Worker> {
        match plan {
            SetPlan::Together => self.workers(),
            SetPlan::Alone(i) => vec![Worker::Device(i)],
            SetPlan::LatencyThreads => vec![Worker::LatencyThreads],
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
                let run = match self.failures.due(i, 0) {
                    Some(e) => Err(e),
                    None => member.sssp.shortest_paths(source, order, heap),
                };
                if let Err(e) = &run {
                    self.failures.settle(Worker::Device(i), e);
                }
                let run = run?;
                let share = MemberReport {
                    items: run.stats.visited + run.stats.stale,
                    pieces: run.stats.iterations,
                    busy_s: started.elapsed().as_secs_f64(),
                    items_per_s: member.model.items_per_s,
                    ..MemberReport::of(Worker::Device(i), self.failures.label(i))
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
                let pool = self.cpu().ok_or_else(|| self.failures.all_failed())?;
                let run = cpu::shortest_paths(self.graph, source, pool, order)?;
                SpreadRun {
                    members: vec![MemberReport {
                        items: run.stats.visited + run.stats.stale,
                        pieces: run.stats.iterations,
                        busy_s: started.elapsed().as_secs_f64(),
                        ..MemberReport::of(Worker::LatencyThreads, latency_label(pool))
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
            let group = self.group_of(plan);
            self.plans
                .entry(heap_order)
                .or_default()
                .record(&group, work / secs);
        }
        Ok(result)
    }

    /// The live member measured fastest (the first on ties and before any measurement).
    fn fastest(&self) -> Option<usize> {
        self.failures
            .live()
            .into_iter()
            .fold(None, |best: Option<usize>, i| match best {
                Some(b)
                    if self.members[b].model.items_per_s >= self.members[i].model.items_per_s =>
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
        let primary = self.fastest().ok_or_else(|| self.failures.all_failed())?;
        // The others start over when they first get a slice (their stamps from an earlier
        // search would keep vertices from being queued: stamps count from 1 in each search).
        if let Err(e) = self.members[primary].sssp.reset(source) {
            self.failures.settle(Worker::Device(primary), &e);
            return Err(e);
        }
        let live = self.failures.live();
        let members = self.members.len();
        let cpu = self.cpu().map(|pool| CpuSide {
            pool,
            model: &mut self.cpu_model,
            dist: Vec::new(),
            stamp: Vec::new(),
        });
        let mut relax = SetRelaxer {
            graph: self.graph,
            cpu,
            members: &mut self.members,
            failures: &mut self.failures,
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
            .map(|&i| MemberReport::of(Worker::Device(i), relax.failures.label(i)))
            .collect();
        if let Some(cpu) = &relax.cpu {
            let label = latency_label(cpu.pool);
            relax
                .shares
                .push(MemberReport::of(Worker::LatencyThreads, label));
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
                relax.failures.settle(Worker::Device(primary), &e);
                return Err(e);
            }
        };
        for share in &mut relax.shares {
            share.items_per_s = match share.member {
                Some(i) => relax.members[i].model.items_per_s,
                None => relax.cpu.as_ref().map_or(0.0, |c| c.model.items_per_s),
            };
        }
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
    failures: &'a mut Failures,
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
    shares: Vec<MemberReport>,
    redone: u64,
}

/// The latency threads as a worker of one search: their own distances and stamps in host
/// memory (made when they first get a slice), caught up like a device's.
struct CpuSide<'a> {
    pool: &'a LatencyPool,
    model: &'a mut SpeedModel,
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

impl SetRelaxer<'_, '_> {
    /// The share of worker `w` (index `w` of the members, or theirs for the latency threads).
    fn share(&mut self, w: usize) -> Option<&mut MemberReport> {
        let member = (w < self.members.len()).then_some(w);
        self.shares.iter_mut().find(|s| s.member == member)
    }

    /// The worker of index `w`.
    fn worker(&self, w: usize) -> Worker {
        if w < self.members.len() {
            Worker::Device(w)
        } else {
            Worker::LatencyThreads
        }
    }

    /// The primary failed: the search cannot go on (its distances were the merged ones).
    fn primary_failed(&mut self, e: Error) -> Error {
        let p = self.primary;
        self.failures.settle(Worker::Device(p), &e);
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
        let mut models: Vec<(Worker, SpeedModel)> = self
            .failures
            .live()
            .into_iter()
            .map(|i| (Worker::Device(i), self.members[i].model))
            .collect();
        if let Some(c) = self.cpu.as_ref() {
            models.push((Worker::LatencyThreads, *c.model));
        }
        let ranges: Vec<(usize, std::ops::Range<usize>)> = if self.round_robin {
            let (worker, _) = models[(round % models.len() as u64) as usize];
            vec![(worker, 0..self.len)]
        } else {
            split(&models, self.len, RULE)
        }
        .into_iter()
        .map(|(w, r)| match w {
            Worker::Device(i) => (i, r),
            Worker::LatencyThreads => (cpu_index, r),
        })
        .collect();
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
        // Faults injected into members expanding in this iteration (tests).
        let mut injected: Vec<Option<Error>> = (0..self.members.len())
            .map(|i| {
                let expands = i == p || others.iter().any(|o| o.0 == i);
                expands.then(|| self.failures.due(i, round)).flatten()
            })
            .collect();
        let mut primary_fault = None;
        let mut primary_secs = 0.0;
        let outcomes: Vec<Expanded> = {
            let mut primary_member = None;
            let mut work = Vec::new();
            for (i, m) in self.members.iter_mut().enumerate() {
                if i == p {
                    primary_member = Some(m);
                } else if let Some((_, r, c)) = others.iter().find(|o| o.0 == i) {
                    work.push((i, r.clone(), c, m, injected[i].take()));
                }
            }
            let primary_injected = injected[p].take();
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
                    .map(|(i, range, catch_up, m, fault)| {
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
                                if let Some(e) = fault {
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
                    if let Some(e) = primary_injected {
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
                .record(primary_range.len(), primary_secs, SAMPLE_MIN);
            if let Some(share) = self.share(p) {
                share.items += primary_range.len() as u64;
                share.pieces += 1;
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
                    model.record(out.range.len(), out.secs, SAMPLE_MIN);
                    self.expanded_in[out.member] = Some(round);
                    if let Some(share) = self.share(out.member) {
                        share.items += out.range.len() as u64;
                        share.pieces += 1;
                        share.busy_s += out.secs;
                    }
                    visited += v;
                    stale += st;
                    lowered.extend_from_slice(&pairs);
                }
                Err(e) => {
                    if let Some(share) = self.share(out.member) {
                        share.error = Some(e.to_string());
                        share.busy_s += out.secs;
                    }
                    // Only a device fault fails over; any other error is the search's.
                    let worker = self.worker(out.member);
                    if !self.failures.settle(worker, &e) {
                        return Err(e);
                    }
                    // Its distances are left behind; the primary expands its slice again
                    // (same stamp: whatever it queued already stays queued once).
                    self.redone += out.range.len() as u64;
                    let primary = &mut self.members[p].sssp;
                    primary
                        .expand_launch(out.range.start, out.range.end, stamp)
                        .map_err(|e| self.primary_failed(e))?;
                    if let Some(share) = self.share(p) {
                        share.items += out.range.len() as u64;
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
