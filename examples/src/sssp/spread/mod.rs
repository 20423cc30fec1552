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
//! slower than the best alone). [`SetReport::exploring`] marks the trial calls.
//!
//! **A member that fails** (an OpenCL error, a lost device, a launch past the timeout): one
//! that is not the primary leaves its slice to the primary (same stamp: what the primary
//! queued stays queued once) and the search finishes; the primary, or a member alone, takes
//! the merged distances with it, so the search runs again on the others. Later calls leave a
//! failed member out; with every member failed the call returns an error naming them.

use std::collections::HashMap;
use std::time::Instant;

use asym_runtime::spread::{Failures, MemberReport, PlanBook, SpeedModel, SplitRule, Worker};
use asym_runtime::{DeviceSet, Error, LatencyPool, Result};

mod relax;

use relax::{CpuSide, SetRelaxer};

use super::cpu;
use super::device::DeviceSssp;
use super::{search, Order, SsspRun};
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
    min_gain: 0.05,
};

/// A search over a set: the distances and counters, and who did what.
#[derive(Clone, Debug)]
pub struct SpreadRun {
    /// Distances and counters, as one device's search gives them.
    pub run: SsspRun,
    /// How the set ran it.
    pub set: SetReport,
}

impl SpreadRun {
    /// A search one worker (`who`) ran alone as `plan`, started at `started`: its share is
    /// every entry and iteration of the search.
    fn alone(
        run: SsspRun,
        plan: SetPlan,
        exploring: bool,
        who: MemberReport,
        started: Instant,
    ) -> Self {
        let share = MemberReport {
            items: run.stats.visited + run.stats.stale,
            pieces: run.stats.iterations,
            busy_s: started.elapsed().as_secs_f64(),
            ..who
        };
        SpreadRun {
            run,
            set: SetReport {
                plan,
                exploring,
                members: vec![share],
                redone_entries: 0,
            },
        }
    }
}

/// How a search over a set ran.
#[derive(Clone, Debug)]
pub struct SetReport {
    /// The plan it ran as.
    pub plan: SetPlan,
    /// Whether this call was one of the trials that measure each plan.
    pub exploring: bool,
    /// Each worker's share: its frontier entries expanded (`items`) and iterations
    /// (`pieces`); members left out earlier are absent.
    pub members: Vec<MemberReport>,
    /// Frontier entries expanded again because a member failed with them.
    pub redone_entries: u64,
}

/// A set runs the frontier and heap orders; delta-stepping runs on one device.
fn check_order(order: Order) -> Result<()> {
    match order {
        Order::Delta { width } => Err(Error::InvalidArgument(format!(
            "delta-stepping (width {width}) over a device set: it runs on one device"
        ))),
        _ => Ok(()),
    }
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

    /// The graph on the set's first member, for the searches that run on one device.
    pub(crate) fn first_member(&mut self) -> &mut DeviceSssp<'g> {
        &mut self.members[0].sssp
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
        check_order(order)?;
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
        check_order(order)?;
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
                let who = MemberReport {
                    items_per_s: member.model.items_per_s,
                    ..MemberReport::of(Worker::Device(i), self.failures.label(i))
                };
                SpreadRun::alone(run?, plan, exploring, who, started)
            }
            SetPlan::LatencyThreads => {
                let pool = self.cpu().ok_or_else(|| self.failures.all_failed())?;
                let run = cpu::shortest_paths(self.graph, source, pool, order)?;
                let who = MemberReport::of(Worker::LatencyThreads, latency_label(pool));
                SpreadRun::alone(run, plan, exploring, who, started)
            }
            SetPlan::Together => self.together(source, order, heap, exploring)?,
        };
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        let work = (result.run.stats.visited + result.run.stats.stale).max(1) as f64;
        let heap_order = matches!(order, Order::Heap { .. });
        if result.set.members.iter().all(|m| m.error.is_none()) {
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
            Order::Frontier | Order::Delta { .. } => search(&mut relax, None, order, source as u32),
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
            set: SetReport {
                plan: SetPlan::Together,
                exploring,
                members: relax.shares,
                redone_entries: relax.redone,
            },
        })
    }
}
