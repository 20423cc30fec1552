//! Branch-and-bound rounds whose nodes never leave the device: the device heap hands a
//! round's best nodes to `knapsack_expand` (`kernels/knapsack.cl`) in a device buffer, the
//! kernel expands them and writes the children's nodes into a device arena and their heap
//! keys into another buffer, and the heap takes them from there. The host sees a few counters
//! per round (children made, nodes expanded and dropped, the incumbent), not the nodes.
//!
//! A round whose children fit the next round while the heap is empty skips the heap: the
//! heap would hand every one of them out, so `knapsack_release` (the launch after the
//! expansion) copies them over the round's nodes. Searches of BGPQ's smaller files never
//! hold more than a round of nodes and never make a heap (it is made, and the rounds'
//! buffers move from device buffers to the SVM its calls take, when the children first
//! outnumber a round). A round is then two launches, a wait and a read of the control words;
//! on a GPU, rounds without a heap run many to a launch instead (`knapsack_rounds`: one
//! work-group per compute unit, a grid barrier where each launch boundary was; the launch
//! stops where the host is needed: a full arena, children for the heap, or after
//! [`RESIDENT_ROUNDS`]), so BGPQ's smaller files are searched in a launch or two.
//!
//! Against the latency threads expanding (`super::device`), this removes what the host did
//! per node: reading the popped pairs back, filing each child (arena slot, key pair) and
//! uploading the children's keys, which on BGPQ's files took about as long as the heap's own
//! work (docs/benchmarks/knapsack.md). What stays serial is the heap's operations.
//!
//! Slots: the arena is a device array of nodes (bound, profit, weight, level), grown between
//! rounds by a device copy. Its free slots form a stack the host keeps the length of; a
//! round's children take slots from its top, then past the arena's end, and the popped
//! nodes' slots join it after the round (`knapsack_release`, the next launch, which reads
//! the children's count on the device), never during the launch that reads them.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Instant;

use asym_kernels::{cl_defines, ClConst};
use asym_runtime::backoff::Deadline;
use asym_runtime::{DeviceBuffer, Error, Kernel, Result, Runtime, SvmBuffer};

use super::bounds::Problem;
use super::BnbStats;
use asym_structures::{DeviceGeneralizedHeap, DeviceHeapConfig};

mod search;

/// Work-items per group of the expansion.
const WG: usize = 64;
/// Skip children one walk makes before it stops with its continuation.
pub(crate) const MAX_KIDS: usize = 8;
/// Levels one walk goes down before it stops with its continuation.
pub(crate) const MAX_STEPS: usize = 64;
/// Nodes the arena starts with room for (it grows as the search needs).
pub(crate) const FIRST_SLOTS: usize = 1 << 16;

// Control words (`KC_*` in kernels/knapsack.cl): the incumbent and the running counters,
// then knapsack_rounds' state at its end (`KC_ST_*`).
const BEST: usize = 0;
const KIDS: usize = 1;
const EXPANDED: usize = 2;
const PRUNED: usize = 3;
const FULL: usize = 4;
const KEPT: usize = 5;
const FREED: usize = 6;
const ST_POPPED: usize = 7;
const ST_FREE: usize = 8;
const ST_LEN: usize = 9;
const ST_RAN: usize = 10;
const ST_EXIT: usize = 11;
const ST_BARS: usize = 12;
const ST_EXPANDED: usize = 13;
const ST_PRUNED: usize = 14;
const CTL_WORDS: usize = 16;
// Why knapsack_rounds stopped (`KN_EXIT_*`): its rounds ran out (the state is the next
// round's), a round made no children, a round's children outnumber a round (released, left
// for the heap), the round at the state filled the arena (not released), or the groups were
// not all resident (the search runs again).
const EXIT_MORE: u64 = 0;
const EXIT_DONE: u64 = 1;
const EXIT_HEAP: u64 = 2;
const EXIT_FULL: u64 = 3;
const EXIT_ABORT: u64 = 4;

/// The constants kernels/knapsack.cl takes from the host (one source for both sides).
const KERNEL_CONSTANTS: &[ClConst] = &[
    ClConst::int("KC_BEST", BEST as u64),
    ClConst::int("KC_KIDS", KIDS as u64),
    ClConst::int("KC_EXPANDED", EXPANDED as u64),
    ClConst::int("KC_PRUNED", PRUNED as u64),
    ClConst::int("KC_FULL", FULL as u64),
    ClConst::int("KC_KEPT", KEPT as u64),
    ClConst::int("KC_FREED", FREED as u64),
    ClConst::int("KC_ST_POPPED", ST_POPPED as u64),
    ClConst::int("KC_ST_FREE", ST_FREE as u64),
    ClConst::int("KC_ST_LEN", ST_LEN as u64),
    ClConst::int("KC_ST_RAN", ST_RAN as u64),
    ClConst::int("KC_ST_EXIT", ST_EXIT as u64),
    ClConst::int("KC_ST_BARS", ST_BARS as u64),
    ClConst::int("KC_ST_EXPANDED", ST_EXPANDED as u64),
    ClConst::int("KC_ST_PRUNED", ST_PRUNED as u64),
    ClConst::int("KN_CTL_WORDS", CTL_WORDS as u64),
    ClConst::uint("KN_MAX_KIDS", MAX_KIDS as u64),
    ClConst::uint("KN_MAX_STEPS", MAX_STEPS as u64),
    ClConst::uint("KN_EXIT_MORE", EXIT_MORE),
    ClConst::uint("KN_EXIT_DONE", EXIT_DONE),
    ClConst::uint("KN_EXIT_HEAP", EXIT_HEAP),
    ClConst::uint("KN_EXIT_FULL", EXIT_FULL),
    ClConst::uint("KN_EXIT_ABORT", EXIT_ABORT),
];

/// Rounds one launch of `knapsack_rounds` runs at most (the host checks the time limit and
/// the dive between launches).
pub(crate) const RESIDENT_ROUNDS: u32 = 64;

/// How a node's heap key is made from its bound and level (the same in both searches):
/// how far the bound lies below the root's, shifted right `shift` bits, above the levels
/// left, `depth_bits` bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyShape {
    pub root_bound: u64,
    pub shift: u32,
    pub depth_bits: u32,
    pub levels: u32,
}

impl KeyShape {
    /// The shape for `problem`: the gap between the root's bound and the first incumbent
    /// shifted into the bits the levels leave. An error past 2^24 levels.
    pub(crate) fn of(problem: &Problem) -> Result<Self> {
        // The root's bound is the largest of any node.
        let root_bound = u64::MAX - problem.root().0;
        let levels = problem.items() as u64;
        let depth_bits = 64 - levels.leading_zeros();
        if depth_bits > 24 {
            return Err(Error::InvalidArgument(format!(
                "{levels} items left after the reduction: the device heap's 32-bit keys hold \
                 at most 2^24 levels"
            )));
        }
        let gap = root_bound.saturating_sub(problem.incumbent());
        Ok(KeyShape {
            root_bound,
            shift: (64 - gap.leading_zeros()).saturating_sub(32 - depth_bits),
            depth_bits,
            levels: levels as u32,
        })
    }

    /// The key of a node with bound `bound` at `level`.
    pub(crate) fn key(&self, bound: u64, level: usize) -> u32 {
        let below = (self.root_bound.saturating_sub(bound) >> self.shift).min(u32::MAX as u64);
        let left = u64::from(self.levels) - level as u64;
        ((below << self.depth_bits) | left).min(u32::MAX as u64) as u32
    }
}

/// How the rounds run.
pub(crate) struct Rounds<'a> {
    pub heap: &'a DeviceHeapConfig,
    pub batch: usize,
    pub pop: usize,
    pub max_live: usize,
    pub gc_threshold: usize,
    pub stop: Option<&'a Deadline>,
    /// Arena slots a round gets beyond what the rounds before suggest, and the arena's
    /// first size ([`SLACK`], [`FIRST_SLOTS`]; the tests give little of both, so that rounds
    /// run out and run again).
    pub slack: usize,
    pub first_slots: usize,
    /// Work-groups of `knapsack_rounds`, the rounds run on the device alone while the heap is
    /// empty (one per compute unit on GPUs: [`resident_groups`]); `None`: a launch per round.
    pub resident_groups: Option<usize>,
    /// Rounds per `knapsack_rounds` launch ([`RESIDENT_ROUNDS`]; the tests give few, so that
    /// searches span launches).
    pub resident_rounds: u32,
}

/// [`Rounds::resident_groups`] on `rt`'s device: one work-group per compute unit on a GPU
/// (all resident at once on every GPU we know; where they are not, the search runs again a
/// launch per round), none elsewhere (a CPU device runs a launch's groups as its threads
/// come free).
pub(crate) fn resident_groups(rt: &Runtime) -> Option<usize> {
    let p = rt.profile();
    (p.kind == asym_runtime::DeviceKind::Gpu).then_some(p.compute_units.max(1) as usize)
}

/// [`Rounds::slack`] of a search.
pub(crate) const SLACK: usize = 1024;

/// Whether the device can expand `problem`'s nodes: its bounds' products must fit 64 bits
/// (the host computes them in 128), as the kernel's header says.
pub(crate) fn fits_64_bits(problem: &Problem) -> bool {
    let t = problem.tables();
    let max_w = t.items.iter().map(|i| i.weight).max().unwrap_or(0);
    let max_p = t.items.iter().map(|i| i.profit).max().unwrap_or(0);
    let n = t.items.len() as u128;
    let lambda = u128::from(t.lambda);
    (u128::from(max_w) + lambda) * u128::from(max_p) < u128::from(u64::MAX)
        && u128::from(t.capacity) + lambda * n + u128::from(*t.weights.last().unwrap_or(&0))
            < u128::from(u64::MAX)
}

/// The expansion's kernels, built once per runtime.
pub(crate) fn program(rt: &Runtime) -> Result<asym_runtime::Program> {
    rt.program_with(
        &asym_kernels::KNAPSACK,
        &format!(
            "-DWG={WG} -DASYM_INT64_ATOMICS=1 {}",
            cl_defines(KERNEL_CONSTANTS)
        ),
    )
}

/// The device's part: rounds until the heap is empty (proved), the dive proves the optimum
/// (`dive_done`), or `stop` passes. The incumbent is shared with the dive through `best`.
/// Returns how many rounds ran out of arena slots and ran again. A search whose resident
/// rounds find their groups not all resident runs again a launch per round (the incumbent it
/// raised stays: it is a solution's value).
pub(crate) fn run_rounds(
    problem: &Problem,
    rt: &Runtime,
    config: &Rounds<'_>,
    shape: KeyShape,
    best: &AtomicU64,
    dive_done: &AtomicBool,
    stats: &mut BnbStats,
) -> Result<usize> {
    let entry = *stats;
    let mut resident = config.resident_groups;
    loop {
        let run = search::Search {
            problem,
            rt,
            config,
            resident,
            shape,
            best,
            dive_done,
        };
        match run.run(stats)? {
            Some(retries) => return Ok(retries),
            None => {
                *stats = entry;
                stats.resident_fallbacks += 1;
                resident = None;
            }
        }
    }
}

fn micros(since: Instant) -> u64 {
    since.elapsed().as_micros() as u64
}

/// The control words alone (the tables behind them in the same buffer stay on the device).
fn read_words(ctl: &DeviceBuffer<u64>) -> Result<[u64; CTL_WORDS]> {
    let mut w = [0u64; CTL_WORDS];
    ctl.read_range_into(0, &mut w)?;
    Ok(w)
}

/// Takes every node out of the heap, frees the slots of those whose bound cannot beat `best`
/// and puts the rest back; returns how many were kept.
fn collect_garbage(
    rt: &Runtime,
    heap: &DeviceGeneralizedHeap<(u32, u32)>,
    collect: &mut Kernel,
    arena: &mut Arena,
    ctl: &DeviceBuffer<u64>,
    words: &mut [u64; CTL_WORDS],
    best: u64,
) -> Result<usize> {
    let n = heap.len();
    let all = rt.alloc::<i64>(n.max(1))?;
    let kept = rt.alloc::<i64>(n.max(1))?;
    heap.delete_min_to_device(n, &all)?;
    collect
        .arg_svm("pairs", &all)?
        .arg_scalar("n", n as u32)?
        .arg_buffer("arena", &arena.nodes)?
        .arg_scalar("best", best)?
        .arg_svm("kept", &kept)?
        .arg_buffer("free", &arena.free)?
        .arg_scalar("n_free", arena.n_free as u64)?
        .arg_buffer("ctl", ctl)?
        .arg_scalar("kept_base", words[KEPT])?
        .arg_scalar("freed_base", words[FREED])?;
    collect
        .launch(n.max(1).div_ceil(WG) * WG, Some(WG))?
        .wait()?;
    let seen = read_words(ctl)?;
    let (n_kept, n_freed) = (
        (seen[KEPT] - words[KEPT]) as usize,
        (seen[FREED] - words[FREED]) as usize,
    );
    *words = seen;
    if n_kept + n_freed != n {
        return Err(Error::corrupted(
            "the knapsack search's node arena",
            format!("a garbage collection of {n} search nodes kept {n_kept} and freed {n_freed}"),
        ));
    }
    arena.n_free += n_freed;
    heap.insert_from_device(&kept, n_kept)?;
    Ok(n_kept)
}

/// The device's search nodes: four words each (bound, profit, weight, level), `len` slots
/// handed out so far, and the stack of free slots (`n_free` of them), as long as the arena.
/// Device buffers, not SVM: only the kernels touch them (and the root's one write), and on
/// NVIDIA an SVM allocation costs by its size where a buffer object does not
/// (docs/benchmarks/runtime.md).
struct Arena {
    nodes: DeviceBuffer<u64>,
    free: DeviceBuffer<u32>,
    len: usize,
    n_free: usize,
}

impl Arena {
    fn new(rt: &Runtime, slots: usize) -> Result<Self> {
        Ok(Arena {
            nodes: rt.device_buffer::<u64>(4 * slots)?,
            free: rt.device_buffer::<u32>(slots)?,
            len: 0,
            n_free: 0,
        })
    }

    fn slots(&self) -> usize {
        self.free.len()
    }

    /// Room for at least `slots` nodes (doubling: the arena's buffers are large from the
    /// start, and a driver allocation costs by its size; fourfold growth cost more,
    /// docs/decisions.md), the used part copied on the device.
    fn grow_to(
        &mut self,
        rt: &Runtime,
        copy: &mut Option<Kernel>,
        kernel: &dyn Fn(&str) -> Result<Kernel>,
        slots: usize,
    ) -> Result<()> {
        if slots <= self.slots() {
            return Ok(());
        }
        if copy.is_none() {
            *copy = Some(kernel("knapsack_copy")?);
        }
        let Some(copy) = copy.as_mut() else {
            unreachable!("made above")
        };
        let grown = slots.max(2 * self.slots());
        let nodes = rt.device_buffer::<u64>(4 * grown)?;
        let free = rt.device_buffer::<u32>(grown)?;
        // Both as 32-bit words: the arena's used nodes, the free stack's entries.
        copy_words(copy, &self.nodes, &nodes, 8 * self.len)?;
        copy_words(copy, &self.free, &free, self.n_free)?;
        self.nodes = nodes;
        self.free = free;
        Ok(())
    }
}

/// A round's nodes (pairs as the heap hands them out) and its children's pairs: in device
/// buffers while the rounds go past the heap (a driver allocation of SVM costs by its size, a
/// buffer object a fraction of it: docs/benchmarks/runtime.md), in SVM from the round
/// the heap first takes children (its calls on the device take SVM).
/// Each kind carries the kernel objects its buffers are arguments of (an argument keeps to
/// one kind of memory, `Kernel::arg_buffer`).
enum RoundPairs {
    Device {
        popped: DeviceBuffer<i64>,
        kids: DeviceBuffer<i64>,
        kernels: RoundKernels,
    },
    Svm {
        popped: SvmBuffer<i64>,
        kids: SvmBuffer<i64>,
        kernels: RoundKernels,
        /// The garbage collection's kernel (the heap's nodes go through SVM pairs).
        collect: Kernel,
    },
}

/// The kernels whose arguments are a round's pairs, one set per kind of [`RoundPairs`].
struct RoundKernels {
    expand: Kernel,
    release: Kernel,
}

impl RoundKernels {
    fn new(kernel: &dyn Fn(&str) -> Result<Kernel>, search: &SearchArgs) -> Result<Self> {
        let mut expand = kernel("knapsack_expand")?;
        search.set(&mut expand)?;
        Ok(RoundKernels {
            expand,
            release: kernel("knapsack_release")?,
        })
    }
}

/// A search's constants, the last arguments of knapsack_expand and knapsack_rounds (the
/// item count, the tables' capacity, cardinality cap and multiplier, the key's shape): set
/// once, when the kernel object is made, instead of before every launch.
struct SearchArgs {
    n: u32,
    capacity: u64,
    cap: u64,
    lambda: u64,
    shape: KeyShape,
}

impl SearchArgs {
    fn set(&self, k: &mut Kernel) -> Result<()> {
        k.arg_scalar("n", self.n)?
            .arg_scalar("capacity", self.capacity)?
            .arg_scalar("cap", self.cap)?
            .arg_scalar("lambda", self.lambda)?
            .arg_scalar("root_bound", self.shape.root_bound)?
            .arg_scalar("shift", self.shape.shift)?
            .arg_scalar("depth_bits", self.shape.depth_bits)?;
        Ok(())
    }
}

fn copy_words<A: asym_runtime::SvmElement>(
    copy: &mut Kernel,
    src: &DeviceBuffer<A>,
    dst: &DeviceBuffer<A>,
    words: usize,
) -> Result<()> {
    copy.arg_buffer("src", src)?.arg_buffer("dst", dst)?;
    run_copy(copy, words)
}

/// Runs `copy` (a `knapsack_copy` whose buffers are set) over `words` 32-bit words and waits.
fn run_copy(copy: &mut Kernel, words: usize) -> Result<()> {
    if words == 0 {
        return Ok(());
    }
    copy.arg_scalar("n", words as u64)?
        .launch(words.div_ceil(256).min(4096) * 256, Some(256))?
        .wait()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knapsack::{Class, Instance};
    use asym_runtime::{select_device, Named, Transport};
    use std::sync::atomic::Ordering;

    /// One search of a generated instance of `class` (40 items) by [`run_rounds`], `pop`
    /// nodes a round, no slack and an arena of one slot to start (so rounds run out of
    /// slots), its answer checked against dynamic programming: the rounds that ran again,
    /// and the search's counts.
    fn search_checked(
        rt: &Runtime,
        class: Class,
        seed: u64,
        pop: usize,
        resident_groups: Option<usize>,
        resident_rounds: u32,
        what: &str,
    ) -> (usize, BnbStats) {
        let inst = Instance::generate(class, 40, 1000, seed).unwrap();
        let problem = Problem::new(&inst).unwrap();
        let config = Rounds {
            heap: &DeviceHeapConfig::new(16),
            batch: 16,
            pop,
            max_live: 1 << 20,
            gc_threshold: usize::MAX,
            stop: None,
            slack: 0,
            first_slots: 1,
            resident_groups,
            resident_rounds,
        };
        let best = AtomicU64::new(problem.incumbent());
        let mut stats = BnbStats::default();
        let retries = run_rounds(
            &problem,
            rt,
            &config,
            KeyShape::of(&problem).unwrap(),
            &best,
            &AtomicBool::new(false),
            &mut stats,
        )
        .unwrap();
        assert!(stats.proved, "{what}");
        assert_eq!(
            problem.optimum(best.load(Ordering::Acquire)),
            inst.dp_optimum(1 << 26).unwrap(),
            "{what}"
        );
        (retries, stats)
    }

    /// Rounds given no slack run out of arena slots and run again; rounds of at most 64 nodes
    /// go straight to the next round while the heap is empty and through the heap after;
    /// the answers stay those of dynamic programming, on both transports.
    #[test]
    fn rounds_that_run_out_of_slots_run_again() {
        let device = select_device(None).expect("an OpenCL device");
        let mut retries = 0;
        let (mut direct, mut through_heap) = (0, 0);
        for t in Transport::candidates(&device).unwrap() {
            let rt = Runtime::open(device.clone(), Some(t), None).unwrap();
            for class in Class::ALL {
                for seed in 0..3 {
                    let what = format!("{t} {} seed {seed}", class.name());
                    let (tried, stats) =
                        search_checked(&rt, class, seed, 64, None, RESIDENT_ROUNDS, &what);
                    retries += tried;
                    direct += stats.direct_rounds;
                    through_heap += stats.rounds - stats.direct_rounds;
                }
            }
        }
        assert!(retries > 0, "no round ran out of slots");
        assert!(
            direct > 0 && through_heap > 0,
            "{direct} rounds straight to the next, {through_heap} through the heap"
        );
    }

    /// Rounds on the device alone (one launch of `knapsack_rounds` for up to 3 rounds, with
    /// one group and with two): the answers of dynamic programming, launches that stop at a
    /// full arena (the round then runs alone and the launches go on), at children too many
    /// for a round (the heap takes them) and after their 3 rounds, on both transports. One
    /// group is always resident; two may not be on a CPU device, and such a search runs
    /// again a launch per round.
    #[test]
    fn resident_rounds_match_dynamic_programming() {
        let device = select_device(None).expect("an OpenCL device");
        for t in Transport::candidates(&device).unwrap() {
            let rt = Runtime::open(device.clone(), Some(t), None).unwrap();
            for groups in [1, 2] {
                let (mut retries, mut launches, mut direct, mut through_heap) = (0, 0, 0, 0);
                let mut fallbacks = 0;
                for class in Class::ALL {
                    for (seed, pop) in [(0, 64), (1, 64), (2, 4096), (3, 4096)] {
                        let what = format!("{t} {groups} groups {} seed {seed}", class.name());
                        let (tried, stats) =
                            search_checked(&rt, class, seed, pop, Some(groups), 3, &what);
                        retries += tried;
                        launches += stats.resident_launches;
                        fallbacks += stats.resident_fallbacks;
                        direct += stats.direct_rounds;
                        through_heap += stats.rounds - stats.direct_rounds;
                    }
                }
                if groups == 1 {
                    assert_eq!(fallbacks, 0, "{t}: one group is always resident");
                }
                if fallbacks == 0 {
                    assert!(
                        retries > 0,
                        "{t} {groups}: no launch stopped at a full arena"
                    );
                    assert!(
                        launches > direct / 3 && through_heap > 0,
                        "{t} {groups}: {launches} launches, {direct} rounds straight on, \
                         {through_heap} through the heap"
                    );
                }
            }
        }
    }
}
