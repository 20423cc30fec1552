//! SSSP over a device set ([`SpreadSssp`]): every member holds the graph and its own distances;
//! each iteration's frontier is split between the members by measured speed, each expands its
//! slice with `sssp_expand` (`kernels/sssp.cl`), and the host merges what they lowered.
//!
//! **One iteration, together.** The host keeps the frontier and the merged distances. Every
//! member gets the whole frontier (its vertices are exactly the ones whose distance dropped in
//! the last iteration) and first lowers its own distances to it with `sssp_apply`, so all
//! members start the iteration with the merged distances; then it expands its slice
//! `[first, end)`, and returns the vertices whose distance it lowered with their new
//! distances. The host keeps each vertex's smallest (a host stamp queues each vertex once),
//! and those vertices form the next frontier. Every distance a member lowers is returned, so
//! the merged distance of a vertex is never above a member's: after the apply every member's
//! distances equal the merged ones, and a frontier entry is stale on a member exactly when it
//! is stale on the host. With the heap ([`Order::Heap`]) the frontier goes through a heap on
//! one member; the merged updates are still applied to every member before the next
//! expansion.
//!
//! **The split.** Each member's time for an iteration is modelled as a fixed part (copies and
//! launches: the shortest iteration it was measured at) plus its entries over its speed
//! (frontier entries per second, measured on slices of at least [`SAMPLE_MIN`] entries). An
//! iteration goes to the fastest members that finish it soonest together (each member added
//! must save 5 %): a small frontier goes to one member, a large one is shared. A member not measured yet gets an equal share
//! of a frontier large enough to measure it.
//!
//! **Call after call.** A search together pays the host round trip every iteration, which a
//! member alone ([`DeviceSssp`], frontier resident on the device) does not. The first calls
//! of each order try, two calls each, the set together and every member alone; later calls
//! keep the fastest (together unless it is more than 3 % slower than the best alone).
//! [`SpreadRun::exploring`] marks the trial calls.
//!
//! **A member that fails** (an OpenCL error, a lost device, a launch past the timeout) during
//! an iteration together: its slice is expanded again by the others (with a new stamp, so
//! their own vertices of the iteration can be queued again), the search finishes, and later
//! calls leave the member out. A member failing alone: the search runs again on the others.
//! With every member failed the call returns the first error.

use std::collections::HashMap;
use std::time::Instant;

use asym_runtime::{DeviceSet, Error, Result};

use super::device::{next_iteration, DeviceSssp};
use super::{overflow_error, search, Order, Pair, Relaxer, SsspRun, DISTANCE_LIMIT};
use crate::apps::graph::{Graph, UNREACHABLE};
use crate::gheap::HeapPlacement;

/// Slices smaller than this do not measure a member's speed (its fixed costs dominate).
pub const SAMPLE_MIN: usize = 2048;

/// How a search over a set runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetPlan {
    /// Every member not failed, frontiers split by speed and merged on the host.
    Together,
    /// Member `i` alone, its frontier resident on the device.
    Alone(usize),
}

/// What one member did in a search over a set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemberShare {
    /// The device.
    pub device: String,
    /// Index of the member in the set.
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

/// Whether `e` says the device itself failed (not the input or a host limit).
fn is_device_fault(e: &Error) -> bool {
    matches!(
        e,
        Error::OpenCl { .. } | Error::Lost(_) | Error::Stalled { .. }
    )
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
    /// Keys per second of each plan, per order (the faster of its calls), and calls each.
    plans: HashMap<(bool, SetPlan), (f64, u32)>,
    /// Vertices a member may fall behind by before it gets the whole distance array instead
    /// (default: half the vertices).
    resync_after: usize,
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
            plans: HashMap::new(),
            resync_after: graph.vertices() / 2,
        })
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

    /// Makes a member that fell behind by more than `vertices` lowered distances get the
    /// whole distance array instead (tests of both ways of catching up).
    #[doc(hidden)]
    pub fn resync_after(&mut self, vertices: usize) {
        self.resync_after = vertices;
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
            let live = self.live();
            if live.is_empty() {
                return Err(self.all_failed());
            }
            let (plan, exploring) = self.choose(&live, order);
            match self.run_plan(plan, exploring, source, order, heap) {
                // A member that failed alone is marked; the search runs again on the others.
                Err(_) if matches!(plan, SetPlan::Alone(i) if self.members[i].failed.is_some()) => {
                    continue
                }
                other => return other,
            }
        }
    }

    fn live(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| self.members[i].failed.is_none())
            .collect()
    }

    fn all_failed(&self) -> Error {
        Error::Lost(format!(
            "every device of the set failed: {}",
            self.failed_devices()
                .iter()
                .map(|(d, e)| format!("{d}: {e}"))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    }

    /// The plan for the next call of `order`: the next trial, else the fastest measured.
    fn choose(&self, live: &[usize], order: Order) -> (SetPlan, bool) {
        if live.len() == 1 {
            return (SetPlan::Alone(live[0]), false);
        }
        let heap = matches!(order, Order::Heap { .. });
        let candidates: Vec<SetPlan> = std::iter::once(SetPlan::Together)
            .chain(live.iter().map(|&i| SetPlan::Alone(i)))
            .collect();
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
        if rate(&SetPlan::Together) * 1.03 >= rate(&best) {
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
                let run = member.sssp.shortest_paths(source, order, heap);
                if let Err(e) = &run {
                    if is_device_fault(e) {
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

    fn together(
        &mut self,
        source: usize,
        order: Order,
        heap: &HeapPlacement,
        exploring: bool,
    ) -> Result<SpreadRun> {
        let live = self.live();
        for &i in &live {
            let m = &mut self.members[i];
            if let Err(e) = m.sssp.reset(source) {
                m.failed = Some(e.to_string());
            }
        }
        let n = self.graph.vertices();
        let mut dist = vec![u32::MAX; n];
        dist[source] = 0;
        // The heap lives on the member measured fastest (the first, before any measurement).
        let heap_member = self
            .live()
            .into_iter()
            .max_by(|a, b| {
                self.members[*a]
                    .model
                    .entries_per_s
                    .total_cmp(&self.members[*b].model.entries_per_s)
            })
            .ok_or_else(|| self.all_failed())?;
        let members = self.members.len();
        let mut relax = SetRelaxer {
            graph: self.graph,
            members: &mut self.members,
            dist,
            stamp: vec![0; n],
            frontier: Vec::new(),
            behind: vec![Behind::Nothing; members],
            seen: vec![0; n],
            seen_mark: 0,
            resync_after: self.resync_after,
            round: 0,
            stamp_now: 0,
            shares: Vec::new(),
            redone: 0,
        };
        relax.shares = live
            .iter()
            .map(|&i| MemberShare {
                device: relax.members[i].sssp.runtime().profile().label(),
                member: i,
                error: relax.members[i].failed.clone(),
                ..Default::default()
            })
            .collect();
        let run = match order {
            Order::Frontier => search(&mut relax, None, order, source as u32)?,
            Order::Heap { batch, .. } => {
                let rt = relax.members[heap_member].sssp.runtime().clone();
                let mut heap = heap.build(&rt, batch)?;
                search(&mut relax, Some(heap.as_mut()), order, source as u32)?
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

/// The search loop's view of a set searching together: the frontier and merged distances on
/// the host.
struct SetRelaxer<'a, 'g> {
    graph: &'g Graph,
    members: &'a mut Vec<SetMember<'g>>,
    /// Merged distances.
    dist: Vec<u32>,
    /// The host iteration that last queued each vertex.
    stamp: Vec<u32>,
    frontier: Vec<Pair>,
    /// Per member: what it has not applied yet (see [`Behind`]).
    behind: Vec<Behind>,
    /// Scratch marks for building one member's updates without duplicates.
    seen: Vec<u32>,
    seen_mark: u32,
    /// See [`SpreadSssp::resync_after`].
    resync_after: usize,
    /// Iterations expanded (for injected failures and the host stamp).
    round: u64,
    /// The last stamp the devices used (a redo takes a new one).
    stamp_now: u32,
    shares: Vec<MemberShare>,
    redone: u64,
}

/// The merged distances a member has not applied yet: it applies them just before it next
/// expands a slice, so a member without a share in an iteration costs nothing in it.
#[derive(Clone, Debug, Default)]
enum Behind {
    /// Up to date.
    #[default]
    Nothing,
    /// These vertices' distances dropped since (duplicates possible).
    Vertices(Vec<u32>),
    /// More than [`SpreadSssp::resync_after`] vertices (half of them unless a test says
    /// otherwise): the whole distance array is uploaded instead.
    Everything,
}

/// What a member applies before expanding: none, these `(distance, vertex)` pairs, or the
/// whole distance array.
enum Sync {
    None,
    Pairs(Vec<Pair>),
    All,
}

/// What one member returned from an iteration.
struct Expanded {
    member: usize,
    range: std::ops::Range<usize>,
    result: Result<(Vec<Pair>, u64, u64)>,
    secs: f64,
}

impl SetRelaxer<'_, '_> {
    fn live(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| self.members[i].failed.is_none())
            .collect()
    }

    /// What member `i` must apply before it expands, with its backlog cleared.
    fn take_sync(&mut self, i: usize) -> Sync {
        match std::mem::take(&mut self.behind[i]) {
            Behind::Nothing => Sync::None,
            Behind::Everything => Sync::All,
            Behind::Vertices(vs) => {
                self.seen_mark = self.seen_mark.wrapping_add(1);
                if self.seen_mark == 0 {
                    self.seen.fill(0);
                    self.seen_mark = 1;
                }
                let mut pairs = Vec::with_capacity(vs.len());
                for v in vs {
                    let slot = &mut self.seen[v as usize];
                    if *slot != self.seen_mark {
                        *slot = self.seen_mark;
                        pairs.push((self.dist[v as usize], v));
                    }
                }
                Sync::Pairs(pairs)
            }
        }
    }

    /// Records that `lowered` vertices' merged distances dropped, for every live member but
    /// `except` (the only member that expanded: its own distances are those already).
    fn fall_behind(&mut self, lowered: &[u32], except: Option<usize>) {
        let limit = self.resync_after;
        for (i, b) in self.behind.iter_mut().enumerate() {
            if Some(i) == except || lowered.is_empty() {
                continue;
            }
            match b {
                Behind::Everything => {}
                Behind::Nothing => *b = Behind::Vertices(lowered.to_vec()),
                Behind::Vertices(vs) => {
                    if vs.len() + lowered.len() > limit {
                        *b = Behind::Everything;
                    } else {
                        vs.extend_from_slice(lowered);
                    }
                }
            }
        }
    }

    /// Each member with a range applies what it is behind and expands its range of
    /// `frontier` with stamp `stamp`; one member runs on this thread, several on their own.
    fn expand_on(
        &mut self,
        ranges: &[(usize, std::ops::Range<usize>)],
        frontier: &[Pair],
        stamp: u32,
    ) -> Vec<Expanded> {
        let mut syncs: Vec<Option<(std::ops::Range<usize>, Sync)>> =
            (0..self.members.len()).map(|_| None).collect();
        for (i, r) in ranges {
            syncs[*i] = Some((r.clone(), self.take_sync(*i)));
        }
        let dist: &[u32] = &self.dist;
        let round = self.round;
        let mut work: Vec<_> = self
            .members
            .iter_mut()
            .zip(syncs)
            .enumerate()
            .filter_map(|(i, (m, w))| w.map(|(r, sync)| (i, r, sync, m)))
            .collect();
        let run = |i: usize, range: std::ops::Range<usize>, sync: Sync, m: &mut SetMember<'_>| {
            let t = Instant::now();
            let fail = m.fail_at == Some(round);
            if fail {
                m.fail_at = None;
            }
            let result = (|| {
                match &sync {
                    Sync::None => {}
                    Sync::Pairs(p) => {
                        m.sssp.write_frontier(p)?;
                        m.sssp.apply_frontier(p.len())?;
                    }
                    Sync::All => m.sssp.write_distances(dist)?,
                }
                m.sssp.write_frontier(&frontier[range.clone()])?;
                if fail {
                    return Err(Error::Lost(format!(
                        "{}: a failure injected in iteration {round}",
                        m.sssp.runtime().profile().label()
                    )));
                }
                let (next, visited, stale) = m.sssp.expand_range(0, range.len(), stamp)?;
                Ok((m.sssp.read_frontier(next)?, visited, stale))
            })();
            Expanded {
                member: i,
                range,
                result,
                secs: t.elapsed().as_secs_f64(),
            }
        };
        if work.len() == 1 {
            let (i, r, sync, m) = work.pop().expect("one");
            return vec![run(i, r, sync, m)];
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = work
                .into_iter()
                .map(|(i, r, sync, m)| {
                    let run = &run;
                    (i, s.spawn(move || run(i, r, sync, m)))
                })
                .collect();
            handles
                .into_iter()
                .map(|(i, h)| {
                    h.join().unwrap_or_else(|_| Expanded {
                        member: i,
                        range: 0..0,
                        result: Err(Error::Lost("an SSSP driver thread panicked".into())),
                        secs: 0.0,
                    })
                })
                .collect()
        })
    }

    /// Merges one member's lowered distances into the host's, queueing each vertex once.
    fn merge(&mut self, lowered: &[Pair], next: &mut Vec<u32>, host_stamp: u32) {
        for &(d, v) in lowered {
            let v_ = v as usize;
            if d < self.dist[v_] {
                self.dist[v_] = d;
                if self.stamp[v_] != host_stamp {
                    self.stamp[v_] = host_stamp;
                    next.push(v);
                }
            }
        }
    }
}

impl Relaxer for SetRelaxer<'_, '_> {
    fn frontier_len(&self) -> usize {
        self.frontier.len()
    }

    fn take_frontier(&mut self) -> Result<Vec<Pair>> {
        Ok(std::mem::take(&mut self.frontier))
    }

    fn set_frontier(&mut self, pairs: &[Pair]) -> Result<()> {
        if pairs.len() > self.graph.vertices().max(1) {
            return Err(Error::CapacityExceeded {
                what: "the SSSP frontier".into(),
                capacity: self.graph.vertices().max(1),
            });
        }
        self.frontier = pairs.to_vec();
        Ok(())
    }

    fn expand(&mut self) -> Result<(u64, u64)> {
        let host_stamp = u32::try_from(self.round + 1)
            .map_err(|_| Error::InvalidArgument("the search ran 2^32 - 1 iterations".into()))?;
        let frontier = std::mem::take(&mut self.frontier);
        // Entries to expand: the whole frontier, then the slices of members that failed.
        let mut todo: Vec<std::ops::Range<usize>> = Vec::new();
        todo.push(0..frontier.len());
        let mut next = Vec::new();
        let (mut visited, mut stale) = (0, 0);
        let mut expanders: Vec<usize> = Vec::new();
        let mut failures = 0;
        while let Some(work) = todo.pop() {
            let models: Vec<(usize, SpeedModel)> = self
                .live()
                .into_iter()
                .map(|i| (i, self.members[i].model))
                .collect();
            if models.is_empty() {
                return Err(Error::Lost(format!(
                    "every device of the set failed: {}",
                    self.members
                        .iter()
                        .filter_map(|m| m.failed.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                )));
            }
            let ranges: Vec<(usize, std::ops::Range<usize>)> = split(&models, work.len())
                .into_iter()
                .map(|(i, r)| (i, work.start + r.start..work.start + r.end))
                .collect();
            self.stamp_now = next_iteration(self.stamp_now)?;
            let outcomes = self.expand_on(&ranges, &frontier, self.stamp_now);
            for out in outcomes {
                let m = &mut self.members[out.member];
                let share = self.shares.iter_mut().find(|s| s.member == out.member);
                match out.result {
                    Ok((lowered, v, st)) => {
                        m.model.record(out.range.len(), out.secs);
                        if let Some(share) = share {
                            share.entries += out.range.len() as u64;
                            share.iterations += 1;
                            share.busy_s += out.secs;
                        }
                        visited += v;
                        stale += st;
                        if !expanders.contains(&out.member) {
                            expanders.push(out.member);
                        }
                        self.merge(&lowered, &mut next, host_stamp);
                    }
                    Err(e) => {
                        failures += 1;
                        m.failed = Some(e.to_string());
                        if let Some(share) = share {
                            share.error = Some(e.to_string());
                            share.busy_s += out.secs;
                        }
                        // A failed member's distances are left behind; its slice goes round
                        // again among the others.
                        if !out.range.is_empty() {
                            self.redone += out.range.len() as u64;
                            todo.push(out.range);
                        }
                    }
                }
            }
        }
        self.round += 1;
        // The only member that expanded holds the merged distances already.
        let only = (expanders.len() == 1 && failures == 0).then(|| expanders[0]);
        self.fall_behind(&next, only);
        self.frontier = next
            .into_iter()
            .map(|v| (self.dist[v as usize], v))
            .collect();
        Ok((visited, stale))
    }

    fn distances(&mut self) -> Result<Vec<u64>> {
        let mut out = Vec::with_capacity(self.dist.len());
        for &d in &self.dist {
            match d {
                u32::MAX => out.push(UNREACHABLE),
                d if d as u64 >= DISTANCE_LIMIT => return Err(overflow_error(self.graph)),
                d => out.push(d as u64),
            }
        }
        Ok(out)
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
