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

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use asym_kernels::{cl_defines, ClConst};
use asym_runtime::backoff::Deadline;
use asym_runtime::{DeviceBuffer, Error, Kernel, Result, Runtime, SvmBuffer};

use super::bounds::Problem;
use super::BnbStats;
use asym_structures::{DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey};

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
        match search(problem, rt, config, resident, shape, best, dive_done, stats)? {
            Some(retries) => return Ok(retries),
            None => {
                *stats = entry;
                stats.resident_fallbacks += 1;
                resident = None;
            }
        }
    }
}

/// [`run_rounds`] with `resident` groups for the rounds on the device alone (or none);
/// `None` when those groups were not all resident.
#[allow(clippy::too_many_arguments)]
fn search(
    problem: &Problem,
    rt: &Runtime,
    config: &Rounds<'_>,
    resident: Option<usize>,
    shape: KeyShape,
    best: &AtomicU64,
    dive_done: &AtomicBool,
    stats: &mut BnbStats,
) -> Result<Option<usize>> {
    let started = Instant::now();
    let allocations = || rt.svm_stats().driver_allocations();
    let allocs_at_start = allocations();
    let profile = rt.profile();
    if !profile.int64_atomics {
        return Err(Error::Unsupported {
            device: profile.label(),
            what: "expand knapsack nodes on the device".into(),
            lacks: "64-bit atomics (cl_khr_int64_base_atomics)".into(),
        });
    }
    if !fits_64_bits(problem) {
        return Err(Error::InvalidArgument(
            "expanding on the device needs the bounds' products within 64 bits (weights and \
             profits this large need the latency threads' expansion)"
                .into(),
        ));
    }
    let pop = config.pop;
    // A round's children are counted and indexed in 32 bits on the device.
    let most_pop = u32::MAX as usize / (MAX_KIDS + 1);
    if pop > most_pop {
        return Err(Error::InvalidArgument(format!(
            "{pop} nodes per round: expanding on the device takes at most {most_pop}"
        )));
    }
    let max_live = config.max_live.min(u32::MAX as usize);
    let t_kernels = Instant::now();
    let program = program(rt)?;
    let kernel = |name: &str| Kernel::from_program(rt, &program, name);
    // Kernel objects, each made when first needed: the rounds' own with their pairs
    // (`RoundPairs`), the arena's copy with its first growth: a search that never makes a
    // heap makes three, not eight.
    let mut copy: Option<Kernel> = None;
    let mut rounds = resident.map(|_| kernel("knapsack_rounds")).transpose()?;
    // The resident rounds' grid barrier: its counter and abort word, and the counter's value
    // at the next launch (common.cl's asym_grid_barrier).
    let bar = rt.device_buffer::<u32>(2)?;
    let mut bar_base = 0u32;
    // After a resident launch stopped at a round that filled the arena, that round runs
    // alone (a launch per round grows the arena as it needs).
    let mut round_alone = false;
    let t_tables = Instant::now();
    let t = problem.tables();
    let n = u32::try_from(t.items.len())
        .map_err(|_| Error::InvalidArgument("more than 2^32 items".into()))?;
    let search = SearchArgs {
        n,
        capacity: t.capacity,
        cap: t.cap,
        lambda: t.lambda,
        shape,
    };
    if let Some(rounds) = rounds.as_mut() {
        search.set(rounds, ROUNDS_SEARCH_ARGS)?;
    }
    // One buffer, outside SVM (the host reads the control words once a round, through a
    // blocking copy): the control words, then the tables in the order kernels/knapsack.cl's
    // `kn_tables` expects.
    let mut data: Vec<u64> = vec![0; CTL_WORDS];
    data[BEST] = best.load(Ordering::Acquire);
    data.extend(t.items.iter().map(|i| i.profit));
    data.extend(t.items.iter().map(|i| i.weight));
    data.extend_from_slice(t.profits);
    data.extend_from_slice(t.weights);
    data.extend_from_slice(if t.lightest.is_empty() {
        &[1]
    } else {
        t.lightest
    });
    let mut ctl = rt.device_buffer::<u64>(data.len())?;
    ctl.write_range(0, &data)?;
    let mut words = [0u64; CTL_WORDS];
    words.copy_from_slice(&data[..CTL_WORDS]);

    // The heap is made when a round's children first outnumber a round (or reach the
    // garbage collector's threshold): until then every node goes straight to the next round,
    // and on BGPQ's smaller files that is the whole search.
    let t_heap_new = Instant::now();
    let heap_config = DeviceHeapConfig {
        batch: config.batch,
        ..config.heap.clone()
    };
    let mut heap: Option<DeviceGeneralizedHeap<(u32, u32)>> = None;
    let t_buffers = Instant::now();
    let mut arena = Arena::new(rt, config.first_slots.min(max_live).max(1))?;
    let root = problem.root();
    let root_bound = u64::MAX - root.0;
    arena.nodes.write_range(0, &[root_bound, 0, 0, 0])?;
    arena.len = 1;
    let mut popped = rt.device_buffer::<i64>(pop.max(1))?;
    let kids_out = rt.device_buffer::<i64>(pop.max(1) * (MAX_KIDS + 1))?;
    // The first round is the root alone: written where a round's nodes go, without a trip
    // through the heap (an INS launch and a pop: two heap calls fewer; on the H200 the setup
    // shrank by their 2.7-4.1 ms, the whole search moved within its spread). The heap starts
    // empty and takes the root's children.
    let t_root = Instant::now();
    popped.write_range(0, &[(shape.key(root_bound, 0), 0u32).to_upload()])?;
    let mut pairs = RoundPairs::Device {
        popped,
        kids: kids_out,
        kernels: RoundKernels::new(&kernel, &search)?,
    };
    let mut gc_at = config.gc_threshold;
    // Children per popped node in the last round: the next round gets room for half as
    // many again (early rounds of a few nodes, where the ratio swings, get their worst case
    // within the slack).
    let mut kids_per_node = 1.0f64;
    let mut retries = 0;

    let mut n_popped = 1;
    let d = &mut stats.device_profile;
    d.setup_kernels_us += (t_tables - t_kernels).as_micros() as u64;
    d.setup_tables_us += (t_heap_new - t_tables).as_micros() as u64;
    d.setup_heap_us += (t_buffers - t_heap_new).as_micros() as u64;
    d.setup_buffers_us += (t_root - t_buffers).as_micros() as u64;
    d.setup_root_us += micros(t_root);
    let [setup, expanding, heaping] = &mut stats.device_times_us;
    *setup += micros(started);
    let [setup_allocs, expand_allocs, heap_allocs] = &mut stats.device_allocations;
    *setup_allocs += allocations() - allocs_at_start;
    loop {
        let t_expand = Instant::now();
        let allocs_at_expand = allocations();
        if config.stop.is_some_and(Deadline::expired) {
            break;
        }
        if dive_done.load(Ordering::Acquire) {
            stats.proved = true;
            stats.proved_by_dive = true;
            break;
        }
        if n_popped == 0 {
            stats.proved = true;
            break;
        }
        // Room for the children the rounds so far suggest; a round that makes more stops
        // (KC_FULL), changes nothing that matters (module docs) and runs again with room for
        // the most it can make.
        let worst = n_popped * (MAX_KIDS + 1);
        let likely = (n_popped as f64 * kids_per_node * 1.5) as usize + config.slack;
        let mut room = likely.min(worst);
        let resident_pairs = match (&pairs, resident, round_alone, rounds.as_mut()) {
            (RoundPairs::Device { popped, kids, .. }, Some(groups), false, Some(rounds)) => {
                Some((popped, kids, groups, rounds))
            }
            _ => None,
        };
        round_alone = false;
        let kids = if let Some((popped, out, groups, rounds)) = resident_pairs {
            // Rounds on the device alone while the heap has not been made: room for the
            // first round's worst case (a round that fills the arena stops the launch).
            let slots = (arena.len + worst)
                .saturating_sub(arena.n_free)
                .min(max_live);
            let t_grow = Instant::now();
            arena.grow_to(rt, &mut copy, &kernel, slots)?;
            let t_launch = Instant::now();
            stats.device_profile.expand_grow_us += (t_launch - t_grow).as_micros() as u64;
            rounds
                .arg_buffer(0, popped)?
                .arg_buffer(1, &arena.nodes)?
                .arg_buffer(2, &arena.free)?
                .arg_buffer(3, out)?
                .arg_buffer(4, &ctl)?
                .arg_buffer(5, &bar)?
                .arg_scalar(6, n_popped as u64)?
                .arg_scalar(7, arena.n_free as u64)?
                .arg_scalar(8, arena.len as u64)?
                .arg_scalar(9, words[KIDS])?
                .arg_scalar(10, arena.slots().min(max_live) as u64)?
                .arg_scalar(11, pop as u64)?
                .arg_scalar(12, config.resident_rounds.max(1))?
                .arg_scalar(13, bar_base)?
                .arg_scalar(14, best.load(Ordering::Acquire))?;
            let launched = rounds.launch(groups * WG, Some(WG))?;
            let t_wait = Instant::now();
            launched.wait()?;
            let t_read = Instant::now();
            let seen = read_words(&ctl)?;
            let d = &mut stats.device_profile;
            d.expand_launch_us += (t_wait - t_launch).as_micros() as u64;
            d.expand_wait_us += (t_read - t_wait).as_micros() as u64;
            d.expand_read_us += micros(t_read);
            stats.resident_launches += 1;
            if seen[ST_EXIT] == EXIT_ABORT {
                return Ok(None);
            }
            bar_base = bar_base.wrapping_add((seen[ST_BARS] as u32).wrapping_mul(groups as u32));
            best.fetch_max(seen[BEST], Ordering::AcqRel);
            let ran = seen[ST_RAN];
            // A round that filled the arena does not count (as a launch per round's): the
            // counts up to the rounds completed, then the counters' values as the next
            // baseline, past the failed round's part.
            let (expanded, pruned) = match (seen[ST_EXIT], ran) {
                (EXIT_FULL, 0) => (words[EXPANDED], words[PRUNED]),
                (EXIT_FULL, _) => (seen[ST_EXPANDED], seen[ST_PRUNED]),
                _ => (seen[EXPANDED], seen[PRUNED]),
            };
            stats.expanded += expanded - words[EXPANDED];
            stats.pruned += pruned - words[PRUNED];
            stats.rounds += ran;
            stats.direct_rounds += ran - u64::from(seen[ST_EXIT] == EXIT_HEAP);
            words = seen;
            arena.len = seen[ST_LEN] as usize;
            arena.n_free = seen[ST_FREE] as usize;
            n_popped = seen[ST_POPPED] as usize;
            *expanding += micros(t_expand);
            *expand_allocs += allocations() - allocs_at_expand;
            match seen[ST_EXIT] {
                // The last round's children, more than a round: the heap takes them.
                EXIT_HEAP => n_popped,
                EXIT_FULL => {
                    words[FULL] = 0;
                    ctl.write_range(FULL, &[0u64])?;
                    round_alone = true;
                    retries += 1;
                    continue;
                }
                // Done (no children: the next pass proves it) or more rounds to launch.
                _ => continue,
            }
        } else {
            let kids = loop {
                let slots = (arena.len + room)
                    .saturating_sub(arena.n_free)
                    .min(max_live);
                let t_grow = Instant::now();
                arena.grow_to(rt, &mut copy, &kernel, slots)?;
                let t_expand_round = Instant::now();
                stats.device_profile.expand_grow_us += (t_expand_round - t_grow).as_micros() as u64;
                // While the heap is empty, a round whose children fit one goes straight on: the
                // release copies the children's pairs over the round's (module docs).
                let carry = heap.as_ref().is_none_or(DeviceGeneralizedHeap::is_empty);
                let RoundKernels { expand, release } = match &mut pairs {
                    RoundPairs::Device {
                        popped,
                        kids,
                        kernels: k,
                    } => {
                        k.expand.arg_buffer(0, popped)?.arg_buffer(7, kids)?;
                        k.release.arg_buffer(0, popped)?.arg_buffer(6, kids)?;
                        k
                    }
                    RoundPairs::Svm {
                        popped,
                        kids,
                        kernels: k,
                        ..
                    } => {
                        k.expand.arg_svm(0, popped)?.arg_svm(7, kids)?;
                        k.release.arg_svm(0, popped)?.arg_svm(6, kids)?;
                        k
                    }
                };
                expand
                    .arg_scalar(1, n_popped as u32)?
                    .arg_buffer(2, &arena.nodes)?
                    .arg_buffer(3, &arena.free)?
                    .arg_scalar(4, arena.n_free as u64)?
                    .arg_scalar(5, arena.len as u64)?
                    .arg_scalar(6, arena.slots().min(max_live) as u64)?
                    .arg_buffer(8, &ctl)?
                    .arg_scalar(9, words[KIDS])?
                    .arg_scalar(10, best.load(Ordering::Acquire))?;
                release
                    .arg_scalar(1, n_popped as u32)?
                    .arg_buffer(2, &arena.free)?
                    .arg_scalar(3, arena.n_free as u64)?
                    .arg_buffer(4, &ctl)?
                    .arg_scalar(5, words[KIDS])?
                    .arg_scalar(7, u32::from(carry))?
                    .arg_scalar(8, pop as u32)?;
                // In-order queue: the release runs after the expansion, then the host reads. (A
                // read queued behind them, one wait for all three, made NVIDIA's rounds slower:
                // its copy into pageable memory cost more than the waits it saved.)
                let expanded = expand.launch_unflushed(n_popped.div_ceil(WG) * WG, Some(WG))?;
                let released = release.launch(n_popped.div_ceil(WG) * WG, Some(WG))?;
                let t_wait = Instant::now();
                released.wait()?;
                expanded.wait()?;
                let t_read = Instant::now();
                let seen = read_words(&ctl)?;
                let d = &mut stats.device_profile;
                d.expand_launch_us += (t_wait - t_expand_round).as_micros() as u64;
                d.expand_wait_us += (t_read - t_wait).as_micros() as u64;
                d.expand_read_us += micros(t_read);
                best.fetch_max(seen[BEST], Ordering::AcqRel);
                let kids = (seen[KIDS] - words[KIDS]) as usize;
                if seen[FULL] == 0 {
                    stats.expanded += seen[EXPANDED] - words[EXPANDED];
                    stats.pruned += seen[PRUNED] - words[PRUNED];
                    words = seen;
                    break kids;
                }
                if arena.slots() >= max_live || room == worst {
                    return Err(Error::CapacityExceeded {
                        what: "branch-and-bound search nodes".into(),
                        capacity: max_live,
                    });
                }
                // The attempt's counts do not count; its children's keys are written over.
                words = seen;
                words[FULL] = 0;
                ctl.write_range(FULL, &[0u64])?;
                room = worst;
                retries += 1;
            };
            kids_per_node = kids as f64 / n_popped as f64;
            let reused = kids.min(arena.n_free);
            arena.len += kids - reused;
            arena.n_free -= reused;
            arena.n_free += n_popped;
            *expanding += micros(t_expand);
            *expand_allocs += allocations() - allocs_at_expand;
            stats.rounds += 1;
            if heap.as_ref().is_none_or(DeviceGeneralizedHeap::is_empty) && kids <= pop {
                // The whole frontier is the next round, as the heap would hand it out (every node
                // it holds): the release has copied the children's pairs over the round's.
                stats.direct_rounds += 1;
                n_popped = kids;
                continue;
            }
            kids
        };
        let t_heap = Instant::now();
        let allocs_at_heap = allocations();
        let heap = match &heap {
            Some(h) => h,
            None => {
                let t_new = Instant::now();
                let made = heap.insert(DeviceGeneralizedHeap::new(rt, &heap_config)?);
                if let RoundPairs::Device { kids: out, .. } = &pairs {
                    // The heap's calls on the device take SVM: the pairs move there.
                    let svm_kids = rt.alloc::<i64>(out.len())?;
                    let mut to_svm = kernel("knapsack_copy")?;
                    to_svm.arg_buffer(0, out)?.arg_svm(1, &svm_kids)?;
                    run_copy(&mut to_svm, 2 * kids)?;
                    pairs = RoundPairs::Svm {
                        popped: rt.alloc::<i64>(pop.max(1))?,
                        kids: svm_kids,
                        kernels: RoundKernels::new(&kernel, &search)?,
                        collect: kernel("knapsack_collect")?,
                    };
                }
                stats.device_profile.setup_heap_us += micros(t_new);
                made
            }
        };
        let RoundPairs::Svm {
            popped,
            kids: kids_out,
            collect,
            ..
        } = &mut pairs
        else {
            unreachable!("the pairs are in SVM once the heap exists")
        };
        if heap.len() + kids <= gc_at {
            // The children in and the next round out, one sort where the heap rebuilds.
            n_popped = pop.min(heap.len() + kids);
            // Returns once the launches are enqueued: the next round's expansion follows them
            // on the in-order queue, and its wait covers theirs.
            heap.enqueue_insert_then_delete_on_device(kids_out, kids, n_popped, popped)?;
            *heaping += micros(t_heap);
            *heap_allocs += allocations() - allocs_at_heap;
            continue;
        }
        // The heap outgrows the threshold: the children in, then a garbage collection (past
        // the time limit, neither: the search ends here, as at the next round's start).
        if config.stop.is_some_and(Deadline::expired) {
            break;
        }
        heap.insert_from_device(kids_out, kids)?;
        let kept = collect_garbage(
            rt,
            heap,
            collect,
            &mut arena,
            &ctl,
            &mut words,
            best.load(Ordering::Acquire),
        )?;
        stats.collections += 1;
        // When most nodes survive, wait until the heap doubles before the next pass.
        gc_at = config.gc_threshold.max(kept.saturating_mul(2));
        n_popped = pop.min(heap.len());
        heap.enqueue_delete_min_to_device(n_popped, popped)?;
        *heaping += micros(t_heap);
        *heap_allocs += allocations() - allocs_at_heap;
    }
    stats.collected += words[FREED];
    if let Some(p) = heap.as_ref().and_then(DeviceGeneralizedHeap::profile) {
        let d = &mut stats.device_profile;
        d.heap_launches = p.bulk_launches;
        d.heap_busy_us = p.bulk_device_busy_us as u64;
        d.heap_span_us = p.bulk_device_span_us as u64;
        d.heap_prepare_us = p.host_prepare_us as u64;
        d.heap_alloc_us = p.host_alloc_us as u64;
        d.heap_copy_us = p.host_copy_us as u64;
        d.heap_kernel_us = p.kernel_us as u64;
        d.heap_read_us = p.host_read_us as u64;
    }
    Ok(Some(retries))
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
        .arg_svm(0, &all)?
        .arg_scalar(1, n as u32)?
        .arg_buffer(2, &arena.nodes)?
        .arg_scalar(3, best)?
        .arg_svm(4, &kept)?
        .arg_buffer(5, &arena.free)?
        .arg_scalar(6, arena.n_free as u64)?
        .arg_buffer(7, ctl)?
        .arg_scalar(8, words[KEPT])?
        .arg_scalar(9, words[FREED])?;
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
/// buffers while the rounds go past the heap (a driver allocation of SVM costs the H200
/// about 0.6 ms and 0.25 ms per MiB, a buffer object a fraction of it), in SVM from the round
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
        search.set(&mut expand, EXPAND_SEARCH_ARGS)?;
        Ok(RoundKernels {
            expand,
            release: kernel("knapsack_release")?,
        })
    }
}

/// Where the search's constants start in knapsack_expand's and knapsack_rounds' arguments.
const EXPAND_SEARCH_ARGS: u32 = 11;
const ROUNDS_SEARCH_ARGS: u32 = 15;

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
    fn set(&self, k: &mut Kernel, first: u32) -> Result<()> {
        k.arg_scalar(first, self.n)?
            .arg_scalar(first + 1, self.capacity)?
            .arg_scalar(first + 2, self.cap)?
            .arg_scalar(first + 3, self.lambda)?
            .arg_scalar(first + 4, self.shape.root_bound)?
            .arg_scalar(first + 5, self.shape.shift)?
            .arg_scalar(first + 6, self.shape.depth_bits)?;
        Ok(())
    }
}

fn copy_words<A: asym_runtime::SvmElement>(
    copy: &mut Kernel,
    src: &DeviceBuffer<A>,
    dst: &DeviceBuffer<A>,
    words: usize,
) -> Result<()> {
    copy.arg_buffer(0, src)?.arg_buffer(1, dst)?;
    run_copy(copy, words)
}

/// Runs `copy` (a `knapsack_copy` whose buffers are set) over `words` 32-bit words and waits.
fn run_copy(copy: &mut Kernel, words: usize) -> Result<()> {
    if words == 0 {
        return Ok(());
    }
    copy.arg_scalar(2, words as u64)?
        .launch(words.div_ceil(256).min(4096) * 256, Some(256))?
        .wait()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knapsack::{Class, Instance};
    use asym_runtime::{select_device, Named, Transport};

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
