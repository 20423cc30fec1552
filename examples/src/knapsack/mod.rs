//! 0/1 knapsack: instances (the seed's text format and Pisinger's generated classes), dynamic
//! programming, and best-first branch-and-bound on the generalized heap, the concurrent-heap
//! seed's second application.
//!
//! One front answers an instance by any method: [`front::Knapsack::solve`], a [`front::Method`]
//! (auto, the dynamic program, the sequential search, or branch-and-bound in a
//! [`Mode`](asym_runtime::Mode)) and one [`front::SolveOptions`]. The functions here and in
//! [`device`] and [`dp`] are its engines, public for tests that drive one directly.
//!
//! Branch-and-bound (the `bounds` module has the details): items sorted by profit/weight,
//! descending, and reduced (items whose value Martello and Toth's test fixes leave the
//! problem); a node fixes the first `level` free items and carries its profit, weight and the
//! Martello–Toth bound U2. The heap orders nodes by bound, best first; each thread takes a batch of the best
//! nodes, drops those whose bound cannot beat the best solution found so far (the seed's
//! garbage collection of useless nodes), and expands the rest, walking forward through the
//! items that fit and inserting the "skip" children on the way. The search ends when the heap
//! is empty and no thread is expanding.
//!
//! [`device`] runs the same search with the heap on the throughput device (GpuOnly) or split
//! between host and device (Cooperative): the latency threads expand nodes kept in a host
//! arena, the heap orders `(bound key, arena index)` pairs; on a GPU, by default, the device
//! expands them as well (`device_expand`, `kernels/knapsack.cl`), with rounds that go
//! straight on, many to a launch, while the frontier fits one round and the heap is empty.

mod bounds;
pub mod device;
mod device_expand;
pub mod dp;
pub mod front;
pub mod solution;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use asym_runtime::backoff::{Backoff, Deadline};
use asym_runtime::{host_memory, Error, LatencyPool, Named, Result, Side};

use asym_structures::{ConcurrentGeneralizedHeap, GeneralizedHeap, InsertDirection};
use bounds::Problem;
use rand::Rng;

use crate::rng::seeded;

/// One item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    /// Profit (≥ 0).
    pub profit: u64,
    /// Weight (≥ 1).
    pub weight: u64,
}

/// A 0/1 knapsack instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The items.
    pub items: Vec<Item>,
    /// The capacity.
    pub capacity: u64,
}

/// Pisinger's instance classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Profits and weights independent, uniform in 1..=R.
    Uncorrelated,
    /// Profit within R/10 of the weight.
    WeaklyCorrelated,
    /// Profit = weight + R/10.
    StronglyCorrelated,
    /// Profit = weight + R/10 ± R/500.
    AlmostStronglyCorrelated,
    /// Even weights, profit = weight + R/10, odd capacity.
    EvenOddStronglyCorrelated,
    /// Profit = weight.
    SubsetSum,
}

impl Class {
    /// Every class, in the order above.
    pub const ALL: [Class; 6] = [
        Class::Uncorrelated,
        Class::WeaklyCorrelated,
        Class::StronglyCorrelated,
        Class::AlmostStronglyCorrelated,
        Class::EvenOddStronglyCorrelated,
        Class::SubsetSum,
    ];
}

impl Named for Class {
    const KIND: &'static str = "instance class";
    const ALL: &'static [Class] = &Class::ALL;
    fn name(self) -> &'static str {
        match self {
            Class::Uncorrelated => "uncorrelated",
            Class::WeaklyCorrelated => "weakly",
            Class::StronglyCorrelated => "strongly",
            Class::AlmostStronglyCorrelated => "almost-strongly",
            Class::EvenOddStronglyCorrelated => "even-odd",
            Class::SubsetSum => "subset-sum",
        }
    }
}

impl Instance {
    /// Pisinger's class `class` with `n` items and data range `range` (10 ≤ R ≤ 10^7); the capacity is
    /// half the total weight (made odd for the even-odd class).
    pub fn generate(class: Class, n: usize, range: u64, seed: u64) -> Result<Self> {
        // Pisinger's classes go up to R = 10^7; beyond it the subset-sum class alone takes
        // branch-and-bound from milliseconds to hours (n = 40: 54 ms at 10^7, 19.5 s at 10^9).
        if !(10..=10_000_000).contains(&range) {
            return Err(Error::InvalidArgument(format!(
                "range {range}: between 10 and 10^7"
            )));
        }
        host_memory::ensure_available(
            (n as u64).saturating_mul(2 * std::mem::size_of::<Item>() as u64),
            &format!("a knapsack instance of {n} items"),
        )?;
        let mut rng = seeded(seed);
        let r10 = range / 10;
        let r500 = (range / 500).max(1);
        let items: Vec<Item> = (0..n)
            .map(|_| {
                let w = rng.gen_range(1..=range);
                match class {
                    Class::Uncorrelated => Item {
                        profit: rng.gen_range(1..=range),
                        weight: w,
                    },
                    Class::WeaklyCorrelated => Item {
                        profit: rng.gen_range(w.saturating_sub(r10).max(1)..=w + r10),
                        weight: w,
                    },
                    Class::StronglyCorrelated => Item {
                        profit: w + r10,
                        weight: w,
                    },
                    Class::AlmostStronglyCorrelated => Item {
                        profit: rng.gen_range(w + r10 - r500.min(r10)..=w + r10 + r500),
                        weight: w,
                    },
                    Class::EvenOddStronglyCorrelated => {
                        let w = (w / 2).max(1) * 2;
                        Item {
                            profit: w + r10,
                            weight: w,
                        }
                    }
                    Class::SubsetSum => Item {
                        profit: w,
                        weight: w,
                    },
                }
            })
            .collect();
        let total: u64 = items.iter().map(|i| i.weight).sum();
        let mut capacity = total / 2;
        if class == Class::EvenOddStronglyCorrelated {
            capacity |= 1;
        }
        Ok(Instance { items, capacity })
    }

    /// The total profit and weight of all items (`None` when either exceeds 2^64): every
    /// search relies on the sums fitting.
    pub fn totals(&self) -> Option<(u64, u64)> {
        self.items.iter().try_fold((0u64, 0u64), |(p, w), it| {
            Some((p.checked_add(it.profit)?, w.checked_add(it.weight)?))
        })
    }

    /// The optimum by dynamic programming over capacities (O(n·capacity) time, O(capacity)
    /// memory), or `None` when that exceeds `max_cells` or the table does not fit in the
    /// host memory available.
    pub fn dp_optimum(&self, max_cells: u64) -> Option<u64> {
        let row = self.capacity.checked_add(1)?;
        let cells = (self.items.len().max(1) as u64).checked_mul(row)?;
        if cells > max_cells {
            return None;
        }
        let c = usize::try_from(self.capacity).ok()?;
        let mut best = host_memory::try_filled(c.checked_add(1)?, 0u64, "the DP table").ok()?;
        for it in &self.items {
            let w = it.weight as usize;
            if w > c {
                continue;
            }
            for cap in (w..=c).rev() {
                best[cap] = best[cap].max(best[cap - w] + it.profit);
            }
        }
        Some(best[c])
    }
}

/// A branch-and-bound node as a heap key `(u64::MAX - bound, u32::MAX - level, profit,
/// weight)`: the best bound first, and among equal bounds the deepest node (so the search
/// reaches complete solutions, and a good incumbent, early).
pub(crate) type NodeKey = (u64, u32, u64, u64);

pub(crate) fn node(b: u64, level: usize, profit: u64, weight: u64) -> NodeKey {
    (u64::MAX - b, u32::MAX - level as u32, profit, weight)
}

pub(crate) fn level_of(n: &NodeKey) -> usize {
    (u32::MAX - n.1) as usize
}

/// Statistics of a branch-and-bound run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BnbStats {
    /// The optimum.
    pub optimum: u64,
    /// Nodes taken from the heap and expanded.
    pub expanded: u64,
    /// Nodes taken from the heap and dropped: their bound could not beat the incumbent.
    pub pruned: u64,
    /// Nodes removed by garbage collections of the heap (the offloaded search's filter pass
    /// once the heap outgrows its threshold), and how many passes ran.
    pub collected: u64,
    /// Garbage-collection passes.
    pub collections: u64,
    /// Items the reduction fixed before the search (taken or left out in every better
    /// solution).
    pub fixed: u64,
    /// Whether the search ran to the end, so `optimum` is proved optimal; `false` when a
    /// time limit stopped it first, and `optimum` is the best solution found.
    pub proved: bool,
    /// Offloaded searches: nodes the sequential dive beside the rounds expanded (not in
    /// `expanded`).
    pub dive_expanded: u64,
    /// Offloaded searches: whether the dive finished first (it then proved the optimum).
    pub proved_by_dive: bool,
    /// Offloaded searches: whether the device expanded the rounds' nodes
    /// ([`device::Expansion`]).
    pub device_expansion: bool,
    /// Searches expanding on the device: the rounds run.
    pub rounds: u64,
    /// Of those, rounds whose children all went straight to the next round: the heap was
    /// empty and they fit one round, so the heap would have handed every one of them out.
    pub direct_rounds: u64,
    /// Searches expanding on the device: launches of the resident rounds (many rounds in one
    /// launch while the heap is empty, on GPUs).
    pub resident_launches: u64,
    /// Searches expanding on the device: times the resident rounds found their work-groups
    /// not all resident and the search ran again a launch per round.
    pub resident_fallbacks: u64,
    /// Searches expanding on the device: where the time went, µs: the setup (buffers, the
    /// heap, the root), the rounds' expansion (the kernels and reading their counters) and
    /// their heap calls (the children in, the next round out).
    pub device_times_us: [u64; 3],
    /// Searches expanding on the device: the SVM allocations that called the driver in the
    /// same three parts (buffers and each growth of them; a buffer the runtime had freed is
    /// reused without one).
    pub device_allocations: [u64; 3],
    /// Searches expanding on the device: where the rounds' time goes.
    pub device_profile: DeviceRoundProfile,
}

/// Where a device-expanding search's rounds spend their time, µs added up over the rounds.
/// The expansion's parts are always measured; the heap's, with `ASYM_GHEAP_PROFILE=1`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceRoundProfile {
    /// Setup: the expansion's program (built before the search) and its four kernels.
    pub setup_kernels_us: u64,
    /// Setup: the item tables and control words, allocated and copied to the device.
    pub setup_tables_us: u64,
    /// The device heap (its kernels and five buffers), made when the first round's children
    /// do not fit the next round.
    pub setup_heap_us: u64,
    /// Setup: the arena and the round buffers.
    pub setup_buffers_us: u64,
    /// Setup: the root written as the first round's one node.
    pub setup_root_us: u64,
    /// Growing the arena of search nodes (driver allocations and a copy on the device).
    pub expand_grow_us: u64,
    /// Setting the expansion's arguments and enqueueing its two launches.
    pub expand_launch_us: u64,
    /// Waiting for them.
    pub expand_wait_us: u64,
    /// Reading the round's control words back.
    pub expand_read_us: u64,
    /// The heap calls' kernel launches.
    pub heap_launches: u64,
    /// The time those kernels ran on the device, added up.
    pub heap_busy_us: u64,
    /// From each call's first kernel start to its last kernel end on the device.
    pub heap_span_us: u64,
    /// The calls' host work before their launches (staging, arguments).
    pub heap_prepare_us: u64,
    /// Of which: growing the heap's arrays and staging buffers.
    pub heap_alloc_us: u64,
    /// Of which: enqueueing the copy of the children's keys.
    pub heap_copy_us: u64,
    /// From their first launch to the completion of their last.
    pub heap_kernel_us: u64,
    /// Their host work after it.
    pub heap_read_us: u64,
}

/// Best-first branch-and-bound on one thread with the sequential generalized heap of at most
/// `max_nodes` heap nodes (or, with `batch = 1`, one search node at a time: the classic
/// best-first search). Strongly correlated instances can need exponentially many search
/// nodes: past the bound the search stops with [`Error::CapacityExceeded`].
pub fn solve_sequential(inst: &Instance, batch: usize, max_nodes: usize) -> Result<BnbStats> {
    solve_sequential_within(inst, batch, max_nodes, None)
}

/// [`solve_sequential`] that stops after `time_limit` (if given) with the best solution found
/// so far and [`BnbStats::proved`] false.
pub fn solve_sequential_within(
    inst: &Instance,
    batch: usize,
    max_nodes: usize,
    time_limit: Option<Duration>,
) -> Result<BnbStats> {
    let stop = time_limit.map(Deadline::after);
    let problem = Problem::new(inst)?;
    let best = AtomicU64::new(problem.incumbent());
    let mut stats = BnbStats {
        fixed: problem.fixed() as u64,
        ..BnbStats::default()
    };
    let never = AtomicBool::new(false);
    stats.proved = best_first(
        &problem,
        batch,
        max_nodes,
        stop.as_ref(),
        &best,
        &never,
        &mut stats,
    )?;
    stats.optimum = problem.optimum(best.load(Ordering::Acquire));
    Ok(stats)
}

/// Nanoseconds a cell of the dynamic program takes, about, in rows that stay in cache
/// (measured on BGPQ's `1000.data` on the development and GPU machines' hosts) ...
const DP_NS_PER_CELL: f64 = 0.5;

/// ... and in rows of 2^16 capacities or more, which stream through memory on rayon's
/// threads: bound by memory bandwidth more than by the threads (dev's 2 cores 0.34, the H100
/// machine's 16 cores 0.24 on Pisinger classes with 2.4·10^6 and 5·10^7 capacities).
const DP_NS_PER_CELL_LONG: f64 = 0.25;

/// Dynamic programs expected to take less than this (ms) run without a search first.
const SEARCH_FIRST_FROM_MS: f64 = 50.0;

/// Search nodes per heap batch of [`search_first`]'s sequential search (as the knapsack
/// example's seq mode).
pub const SEARCH_FIRST_BATCH: usize = 16;

/// Depth-first nodes the search for a proved optimum's items may take.
const ITEM_SEARCH_NODES: u64 = 1 << 22;

/// What [`search_first`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchFirst {
    /// The search proved the optimum and found its items (indices into the instance's
    /// items, ascending).
    Answered {
        /// The search (boxed: its counters are large beside the other variant).
        stats: Box<BnbStats>,
        /// The items of a solution worth the optimum.
        taken: Vec<usize>,
    },
    /// The dynamic program is short enough to run at once (nothing tried), or the search
    /// did not prove the optimum in its time, or its items took too many nodes: the time it
    /// took.
    Declined(Duration),
}

/// The fastest exact answer's first try, for an instance the dynamic program would answer:
/// where the program would take 50 ms or more (its cells at about 0.5 ns, 0.25 in long rows),
/// the sequential best-first search with an eighth of that time and at
/// most `max_nodes` heap nodes, then its optimum's items by a depth-first search
/// ([`solution::items_worth`]). Branch-and-bound proves easy instances with large capacities
/// in microseconds, where the program's time grows with `n · capacity` whatever the
/// instance; where the search declines, the program answers an eighth later at most.
pub fn search_first(inst: &Instance, max_nodes: usize) -> Result<SearchFirst> {
    let cells = inst.items.len() as f64 * (inst.capacity as f64 + 1.0);
    let ns = if inst.capacity >= 1 << 16 {
        DP_NS_PER_CELL_LONG
    } else {
        DP_NS_PER_CELL
    };
    let dp_ms = cells * ns / 1e6;
    if dp_ms < SEARCH_FIRST_FROM_MS {
        return Ok(SearchFirst::Declined(Duration::ZERO));
    }
    let t = std::time::Instant::now();
    let budget = Duration::from_secs_f64(dp_ms / 8.0 / 1e3);
    let stats = match solve_sequential_within(inst, SEARCH_FIRST_BATCH, max_nodes, Some(budget)) {
        Ok(s) if s.proved => s,
        Ok(_) | Err(Error::CapacityExceeded { .. }) => {
            return Ok(SearchFirst::Declined(t.elapsed()))
        }
        Err(e) => return Err(e),
    };
    Ok(
        match solution::items_worth(inst, stats.optimum, ITEM_SEARCH_NODES) {
            Some(taken) => SearchFirst::Answered {
                stats: Box::new(stats),
                taken,
            },
            None => SearchFirst::Declined(t.elapsed()),
        },
    )
}

/// The sequential best-first search of `problem` with a generalized heap of at most
/// `max_nodes` nodes, sharing its incumbent through `best` with any other search of the same
/// tree (read before each batch, raised with `fetch_max` when it finds better), counting in
/// `stats.expanded` and `stats.pruned`. Returns whether it finished, which proves `best`
/// optimal: every node was expanded or pruned against a value some search found; `false` when
/// `quit` was set or `stop` passed first.
pub(crate) fn best_first(
    problem: &Problem,
    batch: usize,
    max_nodes: usize,
    stop: Option<&Deadline>,
    best: &AtomicU64,
    quit: &AtomicBool,
    stats: &mut BnbStats,
) -> Result<bool> {
    let mut heap = GeneralizedHeap::new(batch)?.with_max_nodes(max_nodes);
    heap.insert(&[problem.root()])?;
    let mut children = Vec::new();
    while !heap.is_empty() {
        if stop.is_some_and(Deadline::expired) || quit.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let shared = best.load(Ordering::Acquire);
        let mut local = shared;
        for node in heap.delete_min(batch) {
            if u64::MAX - node.0 <= local {
                stats.pruned += 1;
                continue;
            }
            stats.expanded += 1;
            children.clear();
            local = problem.expand(node, local, &mut children);
            heap.insert(&children)?;
        }
        if local > shared {
            best.fetch_max(local, Ordering::AcqRel);
        }
    }
    Ok(true)
}

/// Heap nodes of `batch` search nodes each that fit in half the host memory available now
/// (at least 1): the bound a search takes when the user sets none.
pub fn node_limit_for_memory(batch: usize) -> usize {
    // A search node is a 32-byte key in the heap plus its share of the node's bookkeeping.
    let per_node = (batch.max(1) * std::mem::size_of::<NodeKey>() + 64) as u64;
    let avail = host_memory::available().unwrap_or(8 << 30);
    ((avail / 2) / per_node).max(1) as usize
}

/// Heap nodes a concurrent search may use: it starts with `initial` and doubles them, up to
/// `max`, whenever the heap fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeBudget {
    /// Heap nodes allocated when the search starts.
    pub initial: usize,
    /// Heap nodes the search may grow to before it fails with [`Error::CapacityExceeded`].
    pub max: usize,
}

impl NodeBudget {
    /// Up to `max` heap nodes, starting from 2^16 (or `max` if smaller).
    pub fn up_to(max: usize) -> Self {
        NodeBudget {
            initial: max.clamp(1, 1 << 16),
            max: max.max(1),
        }
    }
}

/// Best-first branch-and-bound on the latency threads sharing one concurrent generalized
/// heap of at most `budget.max` nodes. The heap starts at `budget.initial` and grows between phases: when
/// an insert finds it full, the threads stop, the refused children wait aside, the heap
/// doubles, and the search goes on. A thread that finds the heap empty while others are
/// still expanding waits (bounded by `timeout`) for their children. With a `time_limit` the
/// search stops after it with the best solution found ([`BnbStats::proved`] false).
pub fn solve_concurrent(
    inst: &Instance,
    pool: &LatencyPool,
    batch: usize,
    direction: InsertDirection,
    budget: NodeBudget,
    timeout: Duration,
    time_limit: Option<Duration>,
) -> Result<BnbStats> {
    let stop = time_limit.map(Deadline::after);
    let problem = Problem::new(inst)?;
    let max_nodes = budget.max.max(1);
    let mut nodes = budget.initial.clamp(1, max_nodes);
    let mut heap = ConcurrentGeneralizedHeap::new(batch, nodes)?.with_insert_direction(direction);
    let best = AtomicU64::new(problem.incumbent());
    let expanded = AtomicU64::new(0);
    let pruned = AtomicU64::new(0);
    let mut waiting = vec![problem.root()];
    let mut proved = false;
    loop {
        heap.insert(&waiting)?;
        let phase = Phase {
            heap: &heap,
            problem: &problem,
            best: &best,
            expanded: &expanded,
            pruned: &pruned,
            timeout,
            stop: stop.as_ref(),
        };
        let overflow = phase.run(pool)?;
        if overflow.is_empty() {
            // Over, or stopped by the time limit with nodes left.
            proved = heap.is_empty();
            break;
        }
        if stop.as_ref().is_some_and(Deadline::expired) {
            break;
        }
        // Room for what the heap holds and every refused child, at least twice the nodes.
        let needed = (heap.len() + overflow.len()) / batch + 1;
        if needed > max_nodes || nodes >= max_nodes {
            return Err(Error::CapacityExceeded {
                what: format!("a concurrent generalized heap of batches of {batch} keys"),
                capacity: max_nodes * batch + batch - 1,
            });
        }
        nodes = nodes.saturating_mul(2).max(needed).min(max_nodes);
        heap.grow(nodes)?;
        waiting = overflow;
    }
    Ok(BnbStats {
        optimum: problem.optimum(best.load(Ordering::Acquire)),
        expanded: expanded.load(Ordering::Relaxed),
        pruned: pruned.load(Ordering::Relaxed),
        fixed: problem.fixed() as u64,
        proved,
        ..BnbStats::default()
    })
}

/// One phase of the concurrent search: runs until the heap is empty and nobody is busy
/// (returns no children), until an insert finds the heap full (returns the children the
/// full heap refused, every thread stopped; the heap holds the rest), or until `stop`.
struct Phase<'a> {
    heap: &'a ConcurrentGeneralizedHeap<NodeKey>,
    problem: &'a Problem,
    best: &'a AtomicU64,
    expanded: &'a AtomicU64,
    pruned: &'a AtomicU64,
    timeout: Duration,
    stop: Option<&'a Deadline>,
}

impl Phase<'_> {
    fn run(&self, pool: &LatencyPool) -> Result<Vec<NodeKey>> {
        let Phase {
            heap,
            problem,
            best,
            expanded,
            pruned,
            timeout,
            stop,
        } = *self;
        let batch = heap.batch();
        let overflow = std::sync::Mutex::new(Vec::new());
        // Termination: `busy` counts threads between announcing a take and finishing the inserts
        // of what they took; `epoch` counts finished expansions. The search is over when a thread
        // sees nobody busy, an empty heap, and still nobody busy with no expansion finished in
        // between (a thread that took the last nodes is busy until its children are in).
        let busy = AtomicUsize::new(0);
        let epoch = AtomicU64::new(0);
        let done = AtomicBool::new(false);
        let results = pool.broadcast_scoped(|_| -> Result<()> {
            let mut children = Vec::new();
            let mut backoff = Backoff::new();
            let mut idle_since: Option<Deadline> = None;
            loop {
                if done.load(Ordering::Acquire) {
                    return Ok(());
                }
                if stop.is_some_and(Deadline::expired) {
                    done.store(true, Ordering::Release);
                    return Ok(());
                }
                if idle_since.is_some() && heap.is_empty() {
                    // Idle: wait for work without entering the busy count (so it can reach zero).
                    let e1 = epoch.load(Ordering::Acquire);
                    if busy.load(Ordering::Acquire) == 0
                        && heap.is_empty()
                        && busy.load(Ordering::Acquire) == 0
                        && epoch.load(Ordering::Acquire) == e1
                    {
                        done.store(true, Ordering::Release);
                        return Ok(());
                    }
                    let since = idle_since.get_or_insert_with(|| Deadline::after(timeout));
                    if since.expired() {
                        return Err(Error::Stalled {
                            side: Side::Host,
                            waiting_for: "produce branch-and-bound nodes".into(),
                            waited_ms: since.waited_ms(),
                            detail: format!(
                                "{} other thread(s) stayed busy",
                                busy.load(Ordering::Relaxed)
                            ),
                        });
                    }
                    backoff.snooze();
                    continue;
                }
                // Announce work before taking it.
                busy.fetch_add(1, Ordering::AcqRel);
                let nodes = match heap.delete_min(batch) {
                    Ok(n) => n,
                    Err(e) => {
                        busy.fetch_sub(1, Ordering::AcqRel);
                        return Err(e);
                    }
                };
                if nodes.is_empty() {
                    busy.fetch_sub(1, Ordering::AcqRel);
                    idle_since.get_or_insert_with(|| Deadline::after(timeout));
                    continue;
                }
                idle_since = None;
                backoff = Backoff::new();
                children.clear();
                for node in nodes {
                    let incumbent = best.load(Ordering::Acquire);
                    if u64::MAX - node.0 <= incumbent {
                        pruned.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    expanded.fetch_add(1, Ordering::Relaxed);
                    let found = problem.expand(node, incumbent, &mut children);
                    if found > incumbent {
                        best.fetch_max(found, Ordering::AcqRel);
                    }
                }
                // INS operations one batch at a time, so a full heap refuses a known suffix.
                let mut refused = None;
                for (i, part) in children.chunks(batch).enumerate() {
                    match heap.insert(part) {
                        Ok(()) => {}
                        Err(Error::CapacityExceeded { .. }) => {
                            refused = Some(i * batch);
                            break;
                        }
                        Err(e) => {
                            epoch.fetch_add(1, Ordering::AcqRel);
                            busy.fetch_sub(1, Ordering::AcqRel);
                            done.store(true, Ordering::Release);
                            return Err(e);
                        }
                    }
                }
                if let Some(from) = refused {
                    // Keep the refused children for the next phase and stop every thread: the
                    // heap grows once nobody is inside it.
                    overflow
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend_from_slice(&children[from..]);
                    done.store(true, Ordering::Release);
                }
                epoch.fetch_add(1, Ordering::AcqRel);
                busy.fetch_sub(1, Ordering::AcqRel);
            }
        })?;
        results.into_iter().collect::<Result<()>>()?;
        Ok(overflow.into_inner().unwrap_or_else(|p| p.into_inner()))
    }
}
