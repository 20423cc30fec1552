//! Best-first branch-and-bound with the heap on the device (GpuOnly) or split between host and
//! device (Cooperative): the latency threads expand the nodes, which live in a host arena; the
//! heap orders `(bound key, arena index)` pairs. With the heap on a GPU the device expands the
//! nodes too by default ([`Expansion`]; `super::device_expand` has those rounds, whose nodes
//! never leave the device); what follows is the latency threads' rounds.
//!
//! Each round takes the `pop` best nodes from the heap, drops those whose bound cannot beat
//! the incumbent (the seed's garbage collection), expands the rest on the latency threads
//! (chunks taken by an atomic counter), and inserts the children whose bound still beats the
//! incumbent. The heap's work overlaps the expansion: while the latency threads expand round
//! r's nodes, the calling thread inserts round r - 1's children and pops round r + 1's nodes,
//! so a round's nodes are the heap's best without the children of the round just before
//! (those wait one round more). Every node is still expanded or pruned, so the answer is the
//! same, and the nodes expanded stay within a small fraction of the unlagged search's. The
//! expanding threads also file their own children (`NodeArena`: a slot each, handed out
//! atomically, and the key pair for the heap), so nothing per child is left to the calling
//! thread, whose heap calls are the round's longer half. A node's key packs how far its bound lies below the root's (shifted right just
//! enough to fit; every live node's bound lies between the first incumbent and the root's
//! bound) above its distance from the last level, so the best bound comes first and, among
//! equal bounds, the deepest node, as in the sequential search: without that tie-break a
//! search whose bounds all tie (subset sums, capped by the cardinality bound) goes breadth
//! first and never completes a solution. Pruning always uses the exact bound kept in the
//! arena.
//!
//! Garbage collection (the seed's "knapsack with GC"): rounds of parallel expansion can grow
//! the heap with nodes a sequential search would never have kept; once the heap holds more
//! than `gc_threshold` nodes, the search drains it, drops every node whose bound cannot beat
//! the incumbent, and inserts the rest back (when most survive, the next pass waits until the
//! heap has doubled, so a pass never runs every round).
//!
//! The dive (`OffloadConfig::dive`): large rounds are what the device heap is for, but they
//! break the depth-first dive that finds an exact fill (on subset sums a search of 65,536
//! nodes per round did not finish where the sequential search proves the optimum at once).
//! So beside the rounds one more thread runs the sequential best-first search of
//! the same tree; the two share the incumbent (an atomic maximum: each prunes with the best
//! value either found), and whichever finishes first has proved the optimum, the other stops.
//! The last latency thread sits the rounds out while the dive runs, leaving its core to it.
//! Its heap is bounded (`DIVE_KEYS`); a dive that outgrows it just stops.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use asym_runtime::backoff::Deadline;
use asym_runtime::{Error, LatencyPool, Named, Result, Runtime};

use super::bounds::Problem;
use super::device_expand::{self, KeyShape, Rounds};
use super::{best_first, BnbStats, Instance, NodeKey};
use asym_structures::{BatchHeap, HeapPlacement};

/// Search nodes a thread expands at a time.
const CHUNK: usize = 16;
/// Search nodes the dive's heap may hold (128 MiB of keys).
const DIVE_KEYS: usize = 1 << 22;
/// Keys per node of the dive's heap, whatever the rounds' K: the sequential search's own
/// (it takes K nodes at a time, so the rounds' 1024 on a GPU would break its depth-first
/// order; on Pisinger's subset-sum instances the dive then proved nothing before the
/// rounds: docs/decisions.md).
const DIVE_BATCH: usize = 16;

/// How an offloaded search runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadConfig {
    /// Where the heap lives.
    pub placement: HeapPlacement,
    /// Keys per heap node (K).
    pub batch: usize,
    /// Search nodes taken from the heap per round.
    pub pop: usize,
    /// Most search nodes alive at once (else [`Error::CapacityExceeded`]).
    pub max_live: usize,
    /// Heap size (search nodes) above which a garbage collection runs (`usize::MAX`: never).
    pub gc_threshold: usize,
    /// Stop after this long with the best solution found ([`BnbStats::proved`] false).
    pub time_limit: Option<Duration>,
    /// Run the sequential search beside the rounds, sharing the incumbent (module docs).
    pub dive: bool,
    /// Who expands a round's nodes.
    pub expansion: Expansion,
    /// Nodes expanded on the device: work-groups of the rounds that run many to a launch
    /// while the heap is empty (`Some(0)`: a launch per round); `None`: one per compute unit
    /// on a GPU, a launch per round elsewhere.
    pub resident_groups: Option<usize>,
}

/// Who expands the nodes of an offloaded search's rounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Expansion {
    /// The device where it can ([`Expansion::Device`]'s conditions) and is a GPU, else the
    /// latency threads: on a CPU device (PoCL) the kernel runs on the threads' own cores,
    /// and the long searches gain nothing (docs/benchmarks/knapsack.md).
    #[default]
    Auto,
    /// The latency threads, the nodes in a host arena (either heap placement).
    Threads,
    /// The device (`kernels/knapsack.cl`), the nodes in a device arena, the children handed
    /// to the device heap where the kernel wrote them: GpuOnly only, on devices with 64-bit
    /// atomics, for instances whose bounds' products fit 64 bits (`device_expand`).
    Device,
}

impl Named for Expansion {
    const KIND: &'static str = "expansion";
    const ALL: &'static [Expansion] = &[Expansion::Auto, Expansion::Threads, Expansion::Device];
    fn name(self) -> &'static str {
        match self {
            Expansion::Auto => "auto",
            Expansion::Threads => "threads",
            Expansion::Device => "device",
        }
    }
}

/// Builds the device programs a search with `config` uses (the heap's and, where the device
/// may expand the nodes, the expansion's), so that the first search does not pay for
/// compiling them (NVIDIA's compiler takes seconds over the expansion's kernels).
pub fn prepare_offloaded(rt: &Runtime, config: &OffloadConfig) -> Result<()> {
    config.placement.build::<(u32, u32)>(rt, config.batch)?;
    let may_expand = config.expansion != Expansion::Threads
        && matches!(config.placement, HeapPlacement::Device(_))
        && rt.profile().int64_atomics;
    if may_expand {
        device_expand::program(rt)?;
    }
    Ok(())
}

/// Branch-and-bound with the heap placed by `config.placement`.
pub fn solve_offloaded(
    inst: &Instance,
    pool: &LatencyPool,
    rt: &Runtime,
    config: &OffloadConfig,
) -> Result<BnbStats> {
    let OffloadConfig {
        ref placement,
        batch,
        pop,
        max_live,
        gc_threshold,
        time_limit,
        dive,
        expansion,
        resident_groups,
    } = *config;
    let stop = time_limit.map(Deadline::after);
    if pop == 0 || max_live == 0 {
        return Err(Error::InvalidArgument(format!(
            "pop {pop} and node limit {max_live}: both must be at least 1"
        )));
    }
    let problem = Problem::new(inst)?;
    let shape = KeyShape::of(&problem)?;
    let root_bound = shape.root_bound;
    let on_device = match (expansion, placement) {
        (Expansion::Threads, _) => None,
        (Expansion::Auto, HeapPlacement::Device(c)) => {
            let p = rt.profile();
            let gpu = p.kind == asym_runtime::DeviceKind::Gpu;
            (gpu && p.int64_atomics && device_expand::fits_64_bits(&problem)).then_some(c)
        }
        (Expansion::Auto, _) => None,
        (Expansion::Device, HeapPlacement::Device(c)) => Some(c),
        (Expansion::Device, _) => {
            return Err(Error::InvalidArgument(
                "expanding on the device needs the heap on the device (GpuOnly)".into(),
            ))
        }
    };
    if root_bound <= problem.incumbent() {
        // The first incumbent is optimal (the bounds settle it at the root): no heap to
        // build, no round to run (on BGPQ's motivate/300 and 700 files that setup was all
        // the time, 11-25 ms on the H200 against 0.1 ms for the sequential search).
        return Ok(BnbStats {
            optimum: problem.optimum(problem.incumbent()),
            pruned: 1,
            fixed: problem.fixed() as u64,
            proved: true,
            device_expansion: on_device.is_some(),
            ..BnbStats::default()
        });
    }
    let best = AtomicU64::new(problem.incumbent());
    let mut stats = BnbStats {
        fixed: problem.fixed() as u64,
        ..BnbStats::default()
    };
    let quit = AtomicBool::new(false);
    let dive_done = AtomicBool::new(false);
    let dive_alive = AtomicBool::new(dive);
    stats.device_expansion = on_device.is_some();
    let mut rounds = || -> Result<()> {
        if let Some(heap_config) = on_device {
            let config = Rounds {
                heap: heap_config,
                batch,
                pop,
                max_live,
                gc_threshold,
                stop: stop.as_ref(),
                slack: device_expand::SLACK,
                first_slots: device_expand::FIRST_SLOTS,
                resident_groups: match resident_groups {
                    Some(0) => None,
                    Some(groups) => Some(groups),
                    None => device_expand::resident_groups(rt),
                },
                resident_rounds: device_expand::RESIDENT_ROUNDS,
            };
            return device_expand::run_rounds(
                &problem, rt, &config, shape, &best, &dive_done, &mut stats,
            )
            .map(|_| ());
        }
        let search = HostRounds {
            problem: &problem,
            pool,
            shape,
            best: &best,
            dive_done: &dive_done,
            dive_alive: &dive_alive,
            stop: stop.as_ref(),
            pop,
            gc_threshold,
        };
        let heap = placement.build(rt, batch)?;
        search.run(heap, max_live, &mut stats)
    };
    let dived = std::thread::scope(|scope| {
        let diver = dive.then(|| {
            scope.spawn(|| {
                let mut st = BnbStats::default();
                let max_nodes = DIVE_KEYS.div_ceil(DIVE_BATCH);
                // A dive that fails (its heap full) just stops: the rounds go on.
                if let Ok(true) = best_first(
                    &problem,
                    DIVE_BATCH,
                    max_nodes,
                    stop.as_ref(),
                    &best,
                    &quit,
                    &mut st,
                ) {
                    dive_done.store(true, Ordering::Release);
                }
                dive_alive.store(false, Ordering::Relaxed);
                st.expanded
            })
        });
        let outcome = rounds();
        quit.store(true, Ordering::Relaxed);
        let expanded = match diver {
            Some(h) => h.join().map_err(|_| {
                Error::thread_lost("the knapsack search's dive thread", "it panicked")
            })?,
            None => 0,
        };
        outcome.map(|()| expanded)
    });
    stats.dive_expanded = dived?;
    stats.optimum = problem.optimum(best.load(Ordering::Acquire));
    Ok(stats)
}

/// A search whose rounds the latency threads expand, the heap's calls overlapping them:
/// what every round shares.
struct HostRounds<'a> {
    problem: &'a Problem,
    pool: &'a LatencyPool,
    shape: KeyShape,
    best: &'a AtomicU64,
    /// Set when the dive proved the optimum; `dive_alive` while it runs.
    dive_done: &'a AtomicBool,
    dive_alive: &'a AtomicBool,
    stop: Option<&'a Deadline>,
    /// Search nodes a round takes from the heap.
    pop: usize,
    /// Heap size (search nodes) above which a garbage collection runs.
    gc_threshold: usize,
}

impl HostRounds<'_> {
    /// The heap's key of search node `n`.
    fn key(&self, n: &NodeKey) -> u32 {
        self.shape.key(u64::MAX - n.0, super::level_of(n))
    }

    /// Rounds until the heap and the children are exhausted (proved), the dive proves the
    /// optimum, or the time limit passes. While the threads expand a round's nodes, the
    /// calling thread inserts the previous round's children and pops the next round's.
    fn run(
        &self,
        mut heap: Box<dyn BatchHeap<(u32, u32)>>,
        max_live: usize,
        stats: &mut BnbStats,
    ) -> Result<()> {
        let root = self.problem.root();
        let mut arena = NodeArena::new(max_live.min(u32::MAX as usize));
        let mut claimed = Vec::new();
        let root_slot = arena.alloc_from(&mut claimed).ok_or_else(|| arena.full())?;
        arena.set(root_slot, root);
        arena.settle(claimed);
        heap.insert(&[(self.key(&root), root_slot)])?;
        // Children not yet in the heap (the last round's), and the nodes of the round to
        // expand.
        let mut pending: Vec<(u32, u32)> = Vec::new();
        let mut popped = heap.delete_min(self.pop)?;
        let mut gc_at = self.gc_threshold;
        loop {
            if self.stop.is_some_and(Deadline::expired) {
                return Ok(());
            }
            if self.dive_done.load(Ordering::Acquire) {
                stats.proved = true;
                stats.proved_by_dive = true;
                return Ok(());
            }
            if popped.is_empty() && pending.is_empty() {
                stats.proved = true;
                return Ok(());
            }
            // The popped nodes leave the arena here; their slots serve this round's children
            // (the next round's nodes, popped below, keep theirs until they are copied out).
            let nodes: Vec<NodeKey> = popped.iter().map(|&(_, i)| arena.get(i)).collect();
            arena.settle(popped.iter().map(|&(_, i)| i));
            let mut collected_slots = Vec::new();
            let arena_ref = &arena;
            let (parts, next_popped) = std::thread::scope(|scope| -> Result<_> {
                let expansion =
                    (!nodes.is_empty()).then(|| scope.spawn(|| self.expand(&nodes, arena_ref)));
                // Meanwhile: the last round's children into the heap, and the next round out.
                let mut gc = Collection {
                    at: &mut gc_at,
                    slots: &mut collected_slots,
                    stats: &mut *stats,
                };
                let heap_work = self.heap_step(heap.as_mut(), &mut pending, arena_ref, &mut gc);
                let parts = match expansion {
                    Some(h) => h.join().map_err(|_| {
                        Error::thread_lost("the knapsack search's expanding thread", "it panicked")
                    })??,
                    None => Vec::new(),
                };
                Ok((parts, heap_work?))
            })?;
            popped = next_popped;
            for filed in parts {
                stats.expanded += filed.expanded;
                stats.pruned += filed.pruned;
                if filed.full {
                    return Err(arena.full());
                }
                collected_slots.extend(filed.unused);
                pending.extend(filed.pairs);
            }
            arena.settle(collected_slots);
        }
    }

    /// A round's `nodes` expanded on the latency threads, chunks taken from a counter; each
    /// thread files its own children (a slot each, and the pair the heap will order).
    fn expand(&self, nodes: &[NodeKey], arena: &NodeArena) -> Result<Vec<Filed>> {
        let next = AtomicUsize::new(0);
        self.pool.broadcast_scoped(|info| {
            // The last thread's core is the dive's while it runs: sixteen pinned threads
            // expanding beside it took its time slices (the dive took five times as long, and
            // the rounds lost a third of their speed).
            if info.threads > 1
                && info.index + 1 == info.threads
                && self.dive_alive.load(Ordering::Relaxed)
            {
                return Filed::default();
            }
            self.expand_share(nodes, &next, arena)
        })
    }

    /// One thread's chunks of a round, until none is left, the arena is full or the time
    /// limit passes (the search then ends with this round, not proved: a round of 65,536
    /// nodes on one thread had taken a search seconds past its limit).
    fn expand_share(&self, nodes: &[NodeKey], next: &AtomicUsize, arena: &NodeArena) -> Filed {
        let mut filed = Filed::default();
        let (mut children, mut slots) = (Vec::new(), Vec::new());
        loop {
            let late = self.stop.is_some_and(Deadline::expired);
            let start = next.fetch_add(CHUNK, Ordering::Relaxed);
            if start >= nodes.len() || filed.full || late {
                filed.unused = slots;
                return filed;
            }
            for &n in &nodes[start..(start + CHUNK).min(nodes.len())] {
                if filed.full {
                    break;
                }
                let incumbent = self.best.load(Ordering::Acquire);
                if u64::MAX - n.0 <= incumbent {
                    filed.pruned += 1;
                    continue;
                }
                filed.expanded += 1;
                let found = self.problem.expand(n, incumbent, &mut children);
                if found > incumbent {
                    self.best.fetch_max(found, Ordering::AcqRel);
                }
                let incumbent = self.best.load(Ordering::Acquire);
                for c in children.drain(..) {
                    if u64::MAX - c.0 <= incumbent {
                        filed.pruned += 1;
                        continue;
                    }
                    let Some(slot) = arena.alloc_from(&mut slots) else {
                        filed.full = true;
                        break;
                    };
                    arena.set(slot, c);
                    filed.pairs.push((self.key(&c), slot));
                }
            }
        }
    }

    /// The heap's part of a round: the last round's children in, a garbage collection where
    /// the heap outgrew its threshold, and the next round's nodes out. Past the time limit no
    /// heap call starts (one on millions of keys runs to its end).
    fn heap_step(
        &self,
        heap: &mut dyn BatchHeap<(u32, u32)>,
        pending: &mut Vec<(u32, u32)>,
        arena: &NodeArena,
        gc: &mut Collection<'_>,
    ) -> Result<Vec<(u32, u32)>> {
        let late = || self.stop.is_some_and(Deadline::expired);
        if late() {
            return Ok(Vec::new());
        }
        heap.insert(pending)?;
        pending.clear();
        if heap.len() > *gc.at && !late() {
            let incumbent = self.best.load(Ordering::Acquire);
            let all = heap.delete_min(usize::MAX)?;
            let before = all.len();
            let kept: Vec<(u32, u32)> = all
                .into_iter()
                .filter(|&(_, i)| {
                    let keep = u64::MAX - arena.get(i).0 > incumbent;
                    if !keep {
                        gc.slots.push(i);
                    }
                    keep
                })
                .collect();
            gc.stats.collected += (before - kept.len()) as u64;
            gc.stats.collections += 1;
            // If most nodes survive, wait until the heap doubles before the next pass.
            *gc.at = self.gc_threshold.max(kept.len().saturating_mul(2));
            heap.insert(&kept)?;
        }
        if late() {
            return Ok(Vec::new());
        }
        heap.delete_min(self.pop)
    }
}

/// A round's garbage collection: the heap size that starts the next, the slots of the nodes
/// it dropped, and the counters.
struct Collection<'a> {
    at: &'a mut usize,
    slots: &'a mut Vec<u32>,
    stats: &'a mut BnbStats,
}

/// What one expanding thread did in a round: its children filed (heap pairs, the nodes
/// already in the arena), the nodes it expanded and pruned, and whether the arena ran out.
#[derive(Default)]
struct Filed {
    pairs: Vec<(u32, u32)>,
    expanded: u64,
    pruned: u64,
    full: bool,
    /// Slots the thread claimed and did not use.
    unused: Vec<u32>,
}

/// Slots of the arena's segments.
const ARENA_SEGMENT: usize = 1 << 16;
/// Slots a thread claims at a time (one claim per child made sixteen threads contend on the
/// shared counters: the round took twice as long).
const SLOT_CLAIM: usize = 256;

/// The search nodes the heap refers to, by slot. The expanding threads file children into it
/// in parallel: a slot comes from the round's free list (a shared cursor hands them out) or
/// past the arena's end (a shared length), and a node is four atomic words, so threads write
/// and the calling thread reads (collecting garbage) without locks. Relaxed accesses
/// suffice: a slot is written by the one thread it was handed to, and read only after the
/// round's join (the heap's pairs travel through it) or, for slots in the heap, never
/// written during the round. Segments are allocated the first time a slot in them is
/// handed out.
struct NodeArena {
    segments: Vec<OnceLock<Box<[[AtomicU64; 4]]>>>,
    /// Slots ever handed out past the free list (may overshoot `capacity` when full).
    len: AtomicUsize,
    capacity: usize,
    /// Slots free for this round's children, handed out from the front by `taken`.
    free: Vec<u32>,
    taken: AtomicUsize,
}

impl NodeArena {
    fn new(capacity: usize) -> Self {
        NodeArena {
            segments: (0..capacity.div_ceil(ARENA_SEGMENT))
                .map(|_| OnceLock::new())
                .collect(),
            len: AtomicUsize::new(0),
            capacity,
            free: Vec::new(),
            taken: AtomicUsize::new(0),
        }
    }

    fn full(&self) -> Error {
        Error::CapacityExceeded {
            what: "branch-and-bound search nodes".into(),
            capacity: self.capacity,
        }
    }

    fn words(&self, slot: u32) -> &[AtomicU64; 4] {
        let s = slot as usize;
        let segment = self.segments[s / ARENA_SEGMENT].get_or_init(|| {
            (0..ARENA_SEGMENT)
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect()
        });
        &segment[s % ARENA_SEGMENT]
    }

    /// A slot for a new node (`None` when the arena is full) from `claimed`, a thread's own,
    /// which claims `SLOT_CLAIM` more when it is empty: freed slots first, then unused ones
    /// past the end. Slots left in `claimed` go back through [`NodeArena::settle`].
    fn alloc_from(&self, claimed: &mut Vec<u32>) -> Option<u32> {
        if let Some(slot) = claimed.pop() {
            return Some(slot);
        }
        let t = self.taken.fetch_add(SLOT_CLAIM, Ordering::Relaxed);
        if t < self.free.len() {
            claimed.extend_from_slice(&self.free[t..(t + SLOT_CLAIM).min(self.free.len())]);
        } else {
            let s = self.len.fetch_add(SLOT_CLAIM, Ordering::Relaxed);
            if s < self.capacity {
                claimed.extend((s..(s + SLOT_CLAIM).min(self.capacity)).map(|x| x as u32));
            }
        }
        claimed.pop()
    }

    fn set(&self, slot: u32, n: NodeKey) {
        let w = self.words(slot);
        w[0].store(n.0, Ordering::Relaxed);
        w[1].store(n.1 as u64, Ordering::Relaxed);
        w[2].store(n.2, Ordering::Relaxed);
        w[3].store(n.3, Ordering::Relaxed);
    }

    fn get(&self, slot: u32) -> NodeKey {
        let w = self.words(slot);
        (
            w[0].load(Ordering::Relaxed),
            w[1].load(Ordering::Relaxed) as u32,
            w[2].load(Ordering::Relaxed),
            w[3].load(Ordering::Relaxed),
        )
    }

    /// Between rounds (no thread handing out slots): the free slots handed out leave the
    /// list, `freed` join it.
    fn settle(&mut self, freed: impl IntoIterator<Item = u32>) {
        let taken = (*self.taken.get_mut()).min(self.free.len());
        self.free.drain(..taken);
        *self.taken.get_mut() = 0;
        self.free.extend(freed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads claiming slots at once get distinct ones, freed slots first, never past the
    /// capacity; what they leave goes back to the free list; a node reads back as written.
    #[test]
    fn arena_slots_are_distinct_reused_and_bounded() {
        let capacity = 3 * ARENA_SEGMENT + 17;
        let mut arena = NodeArena::new(capacity);
        let mut claimed = Vec::new();
        let first: Vec<u32> = (0..1000)
            .map(|_| arena.alloc_from(&mut claimed).unwrap())
            .collect();
        arena.settle(claimed.drain(..).chain(first[..500].iter().copied()));
        let freed: std::collections::BTreeSet<u32> = arena.free.iter().copied().collect();
        let taken: Vec<Vec<u32>> = std::thread::scope(|s| {
            let arena = &arena;
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    s.spawn(move || {
                        let mut mine = Vec::new();
                        let mut got = Vec::new();
                        while let Some(slot) = arena.alloc_from(&mut mine) {
                            arena.set(slot, (slot as u64, t, 2 * slot as u64, 3));
                            got.push(slot);
                        }
                        got
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<u32> = taken.concat();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a slot was handed out twice");
        // Every slot not still held from the first batch: the freed ones and the rest.
        assert_eq!(n, capacity - 500);
        assert!(all.iter().all(|&s| (s as usize) < capacity));
        assert!(freed.iter().all(|s| all.binary_search(s).is_ok()));
        for (t, slots) in taken.iter().enumerate() {
            for &slot in slots {
                assert_eq!(arena.get(slot), (slot as u64, t as u32, 2 * slot as u64, 3));
            }
        }
        let mut none = Vec::new();
        assert_eq!(arena.alloc_from(&mut none), None, "full");
    }
}
