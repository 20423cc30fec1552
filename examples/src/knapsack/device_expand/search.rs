//! One device search ([`Search::run`]): the setup, then rounds until the heap is empty, the
//! dive proves the optimum or the time limit passes. Each pass of the loop is one of
//!
//! - rounds on the device alone, many to a launch (`knapsack_rounds`), while no heap
//!   exists and the device keeps its work-groups resident;
//! - one round (`knapsack_expand` then `knapsack_release`), run again with room for its worst
//!   case where it filled the arena;
//! - the heap's part: the round's children in and the next round out (one call), or, past
//!   the garbage collector's threshold, the children in, a collection, the next round out.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use asym_runtime::backoff::Deadline;
use asym_runtime::{DeviceBuffer, Error, Kernel, Program, Result, Runtime};
use asym_structures::{DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey};

use super::{
    collect_garbage, fits_64_bits, micros, program, read_words, run_copy, Arena, KeyShape,
    RoundKernels, RoundPairs, Rounds, SearchArgs, BEST, CTL_WORDS, EXIT_ABORT, EXIT_FULL,
    EXIT_HEAP, EXPANDED, FREED, FULL, KIDS, MAX_KIDS, PRUNED, ST_BARS, ST_EXIT, ST_EXPANDED,
    ST_FREE, ST_LEN, ST_POPPED, ST_PRUNED, ST_RAN, WG,
};
use crate::knapsack::bounds::Problem;
use crate::knapsack::BnbStats;

/// A search to run: [`super::run_rounds`] with `resident` groups for the rounds on the
/// device alone (or none).
pub(super) struct Search<'a> {
    pub(super) problem: &'a Problem,
    pub(super) rt: &'a Runtime,
    pub(super) config: &'a Rounds<'a>,
    pub(super) resident: Option<usize>,
    pub(super) shape: KeyShape,
    pub(super) best: &'a AtomicU64,
    pub(super) dive_done: &'a AtomicBool,
}

/// What a pass of the loop leaves for the next.
enum Pass {
    /// The next pass: more rounds, or the loop's checks.
    Next,
    /// A round made `kids` children that the heap takes.
    Heap(usize),
    /// The resident rounds' groups were not all resident: the search runs again.
    Abort,
    /// The time limit passed before the heap's part.
    Stop,
}

/// A search as it runs: its buffers, kernels and counters.
struct State<'a> {
    s: &'a Search<'a>,
    program: Program,
    search: SearchArgs,
    /// `knapsack_copy` (made with the arena's first growth) and `knapsack_rounds` (where
    /// rounds run resident).
    copy: Option<Kernel>,
    rounds: Option<Kernel>,
    /// The resident rounds' grid barrier: its counter and abort word, and the counter's
    /// value at the next launch (common.cl's asym_grid_barrier).
    bar: DeviceBuffer<u32>,
    bar_base: u32,
    /// After a resident launch stopped at a round that filled the arena, that round runs
    /// alone (a launch per round grows the arena as it needs).
    round_alone: bool,
    /// The control words and the tables, and the control words as last read.
    ctl: DeviceBuffer<u64>,
    words: [u64; CTL_WORDS],
    heap_config: DeviceHeapConfig,
    heap: Option<DeviceGeneralizedHeap<(u32, u32)>>,
    arena: Arena,
    pairs: RoundPairs,
    gc_at: usize,
    /// Children per popped node in the last round: the next round gets room for half as
    /// many again (early rounds of a few nodes, where the ratio swings, get their worst case
    /// within the slack).
    kids_per_node: f64,
    /// Rounds that ran out of arena slots and ran again.
    retries: usize,
    /// Nodes of the round to expand.
    n_popped: usize,
}

impl Search<'_> {
    /// Runs the search; `None` when the resident rounds' groups were not all resident.
    pub(super) fn run(&self, stats: &mut BnbStats) -> Result<Option<usize>> {
        let mut st = State::new(self, stats)?;
        let config = self.config;
        loop {
            let t_expand = Instant::now();
            let allocs_at_expand = st.allocations();
            if config.stop.is_some_and(Deadline::expired) {
                break;
            }
            if self.dive_done.load(Ordering::Acquire) {
                stats.proved = true;
                stats.proved_by_dive = true;
                break;
            }
            if st.n_popped == 0 {
                stats.proved = true;
                break;
            }
            let resident = matches!(st.pairs, RoundPairs::Device { .. })
                && self.resident.is_some()
                && !st.round_alone
                && st.rounds.is_some();
            st.round_alone = false;
            let pass = if resident {
                st.resident_rounds(stats)?
            } else {
                st.one_round(stats)?
            };
            stats.device_times_us[1] += micros(t_expand);
            stats.device_allocations[1] += st.allocations() - allocs_at_expand;
            let kids = match pass {
                Pass::Next => continue,
                Pass::Abort => return Ok(None),
                Pass::Stop => break,
                Pass::Heap(kids) => kids,
            };
            let t_heap = Instant::now();
            let allocs_at_heap = st.allocations();
            let pass = st.heap_part(kids, stats)?;
            stats.device_times_us[2] += micros(t_heap);
            stats.device_allocations[2] += st.allocations() - allocs_at_heap;
            if let Pass::Stop = pass {
                break;
            }
        }
        st.finish(stats);
        Ok(Some(st.retries))
    }
}

impl<'a> State<'a> {
    /// The setup: the checks, the program, the tables and control words, the arena with the
    /// root, and the first round (the root alone).
    fn new(s: &'a Search<'a>, stats: &mut BnbStats) -> Result<Self> {
        let (rt, config, problem) = (s.rt, s.config, s.problem);
        let started = Instant::now();
        let allocs_at_start = rt.svm_stats().driver_allocations();
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
                "expanding on the device needs the bounds' products within 64 bits (weights \
                 and profits this large need the latency threads' expansion)"
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
        // (`RoundPairs`), the arena's copy with its first growth: a search that never makes
        // a heap makes three, not eight.
        let mut rounds = s.resident.map(|_| kernel("knapsack_rounds")).transpose()?;
        let t_tables = Instant::now();
        let t = problem.tables();
        let n = u32::try_from(t.items.len())
            .map_err(|_| Error::InvalidArgument("more than 2^32 items".into()))?;
        let search = SearchArgs {
            n,
            capacity: t.capacity,
            cap: t.cap,
            lambda: t.lambda,
            shape: s.shape,
        };
        if let Some(rounds) = rounds.as_mut() {
            search.set(rounds)?;
        }
        // One buffer, outside SVM (the host reads the control words once a round, through a
        // blocking copy): the control words, then the tables in the order
        // kernels/knapsack.cl's `kn_tables` expects.
        let mut data: Vec<u64> = vec![0; CTL_WORDS];
        data[BEST] = s.best.load(Ordering::Acquire);
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
        // garbage collector's threshold): until then every node goes straight to the next
        // round, and on BGPQ's smaller files that is the whole search.
        let t_heap_new = Instant::now();
        let heap_config = DeviceHeapConfig {
            batch: config.batch,
            ..config.heap.clone()
        };
        let t_buffers = Instant::now();
        let mut arena = Arena::new(rt, config.first_slots.min(max_live).max(1))?;
        let root = problem.root();
        let root_bound = u64::MAX - root.0;
        arena.nodes.write_range(0, &[root_bound, 0, 0, 0])?;
        arena.len = 1;
        let mut popped = rt.device_buffer::<i64>(pop.max(1))?;
        let kids_out = rt.device_buffer::<i64>(pop.max(1) * (MAX_KIDS + 1))?;
        // The first round is the root alone: written where a round's nodes go, without a
        // trip through the heap (two heap calls fewer). The heap starts empty and takes the
        // root's children.
        let t_root = Instant::now();
        popped.write_range(0, &[(s.shape.key(root_bound, 0), 0u32).to_upload()])?;
        let pairs = RoundPairs::Device {
            popped,
            kids: kids_out,
            kernels: RoundKernels::new(&kernel, &search)?,
        };
        let bar = rt.device_buffer::<u32>(2)?;
        let d = &mut stats.device_profile;
        d.setup_kernels_us += (t_tables - t_kernels).as_micros() as u64;
        d.setup_tables_us += (t_heap_new - t_tables).as_micros() as u64;
        d.setup_heap_us += (t_buffers - t_heap_new).as_micros() as u64;
        d.setup_buffers_us += (t_root - t_buffers).as_micros() as u64;
        d.setup_root_us += micros(t_root);
        stats.device_times_us[0] += micros(started);
        stats.device_allocations[0] += rt.svm_stats().driver_allocations() - allocs_at_start;
        Ok(State {
            s,
            program,
            search,
            copy: None,
            rounds,
            bar,
            bar_base: 0,
            round_alone: false,
            ctl,
            words,
            heap_config,
            heap: None,
            arena,
            pairs,
            gc_at: config.gc_threshold,
            kids_per_node: 1.0,
            retries: 0,
            n_popped: 1,
        })
    }

    /// The runtime's driver allocations so far.
    fn allocations(&self) -> u64 {
        self.s.rt.svm_stats().driver_allocations()
    }

    /// A kernel object of the search's program.
    fn kernel(&self, name: &str) -> Result<Kernel> {
        Kernel::from_program(self.s.rt, &self.program, name)
    }

    /// The arena grown to at least `slots` (and the grow's time booked).
    fn grow_arena(&mut self, slots: usize, stats: &mut BnbStats) -> Result<()> {
        let t_grow = Instant::now();
        let (rt, program) = (self.s.rt, &self.program);
        let kernel = |name: &str| Kernel::from_program(rt, program, name);
        self.arena.grow_to(rt, &mut self.copy, &kernel, slots)?;
        stats.device_profile.expand_grow_us += micros(t_grow);
        Ok(())
    }

    /// Rounds on the device alone while the heap has not been made, many to a launch: room
    /// for the first round's worst case (a round that fills the arena stops the launch).
    fn resident_rounds(&mut self, stats: &mut BnbStats) -> Result<Pass> {
        let (config, max_live, pop) = (self.s.config, self.max_live(), self.s.config.pop);
        let worst = self.n_popped * (MAX_KIDS + 1);
        let slots = (self.arena.len + worst)
            .saturating_sub(self.arena.n_free)
            .min(max_live);
        self.grow_arena(slots, stats)?;
        let (RoundPairs::Device { popped, kids, .. }, Some(groups), Some(rounds)) =
            (&self.pairs, self.s.resident, self.rounds.as_mut())
        else {
            return Err(Error::corrupted(
                "the knapsack search's rounds",
                "resident rounds without their kernel or device pairs",
            ));
        };
        let t_launch = Instant::now();
        rounds
            .arg_buffer("popped", popped)?
            .arg_buffer("arena", &self.arena.nodes)?
            .arg_buffer("free", &self.arena.free)?
            .arg_buffer("out", kids)?
            .arg_buffer("ctl", &self.ctl)?
            .arg_buffer("bar", &self.bar)?
            .arg_scalar("n_popped", self.n_popped as u64)?
            .arg_scalar("n_free", self.arena.n_free as u64)?
            .arg_scalar("arena_len", self.arena.len as u64)?
            .arg_scalar("kids_base", self.words[KIDS])?
            .arg_scalar("limit", self.arena.slots().min(max_live) as u64)?
            .arg_scalar("carry_max", pop as u64)?
            .arg_scalar("max_rounds", config.resident_rounds.max(1))?
            .arg_scalar("bar_base", self.bar_base)?
            .arg_scalar("host_best", self.s.best.load(Ordering::Acquire))?;
        let launched = rounds.launch(groups * WG, Some(WG))?;
        let t_wait = Instant::now();
        launched.wait()?;
        let t_read = Instant::now();
        let seen = read_words(&self.ctl)?;
        book_expansion(stats, t_launch, t_wait, t_read);
        stats.resident_launches += 1;
        if seen[ST_EXIT] == EXIT_ABORT {
            return Ok(Pass::Abort);
        }
        let bars = (seen[ST_BARS] as u32).wrapping_mul(groups as u32);
        self.bar_base = self.bar_base.wrapping_add(bars);
        self.s.best.fetch_max(seen[BEST], Ordering::AcqRel);
        let ran = seen[ST_RAN];
        // A round that filled the arena does not count (as a launch per round's): the
        // counts up to the rounds completed, then the counters' values as the next
        // baseline, past the failed round's part.
        let words = &self.words;
        let (expanded, pruned) = match (seen[ST_EXIT], ran) {
            (EXIT_FULL, 0) => (words[EXPANDED], words[PRUNED]),
            (EXIT_FULL, _) => (seen[ST_EXPANDED], seen[ST_PRUNED]),
            _ => (seen[EXPANDED], seen[PRUNED]),
        };
        stats.expanded += expanded - words[EXPANDED];
        stats.pruned += pruned - words[PRUNED];
        stats.rounds += ran;
        stats.direct_rounds += ran - u64::from(seen[ST_EXIT] == EXIT_HEAP);
        self.words = seen;
        self.arena.len = seen[ST_LEN] as usize;
        self.arena.n_free = seen[ST_FREE] as usize;
        self.n_popped = seen[ST_POPPED] as usize;
        match seen[ST_EXIT] {
            // The last round's children, more than a round: the heap takes them.
            EXIT_HEAP => Ok(Pass::Heap(self.n_popped)),
            EXIT_FULL => {
                self.words[FULL] = 0;
                self.ctl.write_range(FULL, &[0u64])?;
                self.round_alone = true;
                self.retries += 1;
                Ok(Pass::Next)
            }
            // Done (no children: the next pass proves it) or more rounds to launch.
            _ => Ok(Pass::Next),
        }
    }

    /// The arena's bound on live nodes.
    fn max_live(&self) -> usize {
        self.s.config.max_live.min(u32::MAX as usize)
    }

    /// One round, a launch pair: room for the children the rounds so far suggest; a round
    /// that makes more stops (KC_FULL), changes nothing that matters (module docs) and runs
    /// again with room for the most it can make. While the heap is empty and the children
    /// fit one round, they are the next round (no heap call).
    fn one_round(&mut self, stats: &mut BnbStats) -> Result<Pass> {
        let (config, max_live) = (self.s.config, self.max_live());
        let worst = self.n_popped * (MAX_KIDS + 1);
        let likely = (self.n_popped as f64 * self.kids_per_node * 1.5) as usize + config.slack;
        let mut room = likely.min(worst);
        let kids = loop {
            let slots = (self.arena.len + room)
                .saturating_sub(self.arena.n_free)
                .min(max_live);
            self.grow_arena(slots, stats)?;
            if let Some(kids) = self.launch_round(stats)? {
                break kids;
            }
            if self.arena.slots() >= max_live || room == worst {
                return Err(Error::CapacityExceeded {
                    what: "branch-and-bound search nodes".into(),
                    capacity: max_live,
                });
            }
            room = worst;
            self.retries += 1;
        };
        let n_popped = self.n_popped;
        self.kids_per_node = kids as f64 / n_popped as f64;
        let reused = kids.min(self.arena.n_free);
        self.arena.len += kids - reused;
        self.arena.n_free -= reused;
        self.arena.n_free += n_popped;
        stats.rounds += 1;
        if self.heap_is_empty() && kids <= config.pop {
            // The whole frontier is the next round, as the heap would hand it out (every
            // node it holds): the release has copied the children's pairs over the round's.
            stats.direct_rounds += 1;
            self.n_popped = kids;
            return Ok(Pass::Next);
        }
        Ok(Pass::Heap(kids))
    }

    /// Whether no heap holds nodes (none made yet, or an empty one).
    fn heap_is_empty(&self) -> bool {
        self.heap
            .as_ref()
            .is_none_or(DeviceGeneralizedHeap::is_empty)
    }

    /// The expansion and the release of one round, waited for: the children made, or `None`
    /// where the round filled the arena (its counts do not count; its children's keys are
    /// written over when it runs again).
    fn launch_round(&mut self, stats: &mut BnbStats) -> Result<Option<usize>> {
        let (max_live, pop) = (self.max_live(), self.s.config.pop);
        let t_launch = Instant::now();
        // While the heap is empty, a round whose children fit one goes straight on: the
        // release copies the children's pairs over the round's (module docs).
        let carry = self.heap_is_empty();
        let RoundKernels { expand, release } = match &mut self.pairs {
            RoundPairs::Device {
                popped,
                kids,
                kernels: k,
            } => {
                k.expand
                    .arg_buffer("popped", popped)?
                    .arg_buffer("out", kids)?;
                k.release
                    .arg_buffer("popped", popped)?
                    .arg_buffer("out", kids)?;
                k
            }
            RoundPairs::Svm {
                popped,
                kids,
                kernels: k,
                ..
            } => {
                k.expand.arg_svm("popped", popped)?.arg_svm("out", kids)?;
                k.release.arg_svm("popped", popped)?.arg_svm("out", kids)?;
                k
            }
        };
        let (arena, words, n_popped) = (&self.arena, &self.words, self.n_popped);
        expand
            .arg_scalar("n_popped", n_popped as u32)?
            .arg_buffer("arena", &arena.nodes)?
            .arg_buffer("free", &arena.free)?
            .arg_scalar("n_free", arena.n_free as u64)?
            .arg_scalar("arena_len", arena.len as u64)?
            .arg_scalar("limit", arena.slots().min(max_live) as u64)?
            .arg_buffer("ctl", &self.ctl)?
            .arg_scalar("kids_base", words[KIDS])?
            .arg_scalar("host_best", self.s.best.load(Ordering::Acquire))?;
        release
            .arg_scalar("n_popped", n_popped as u32)?
            .arg_buffer("free", &arena.free)?
            .arg_scalar("n_free", arena.n_free as u64)?
            .arg_buffer("ctl", &self.ctl)?
            .arg_scalar("kids_base", words[KIDS])?
            .arg_scalar("carry", u32::from(carry))?
            .arg_scalar("carry_max", pop as u32)?;
        // In-order queue: the release runs after the expansion, then the host reads. (A
        // read queued behind them, one wait for all three, made NVIDIA's rounds slower: its
        // copy into pageable memory cost more than the waits it saved.)
        let items = n_popped.div_ceil(WG) * WG;
        let expanded = expand.launch_unflushed(items, Some(WG))?;
        let released = release.launch(items, Some(WG))?;
        let t_wait = Instant::now();
        released.wait()?;
        expanded.wait()?;
        let t_read = Instant::now();
        let seen = read_words(&self.ctl)?;
        book_expansion(stats, t_launch, t_wait, t_read);
        self.s.best.fetch_max(seen[BEST], Ordering::AcqRel);
        let kids = (seen[KIDS] - self.words[KIDS]) as usize;
        if seen[FULL] == 0 {
            stats.expanded += seen[EXPANDED] - self.words[EXPANDED];
            stats.pruned += seen[PRUNED] - self.words[PRUNED];
            self.words = seen;
            return Ok(Some(kids));
        }
        self.words = seen;
        self.words[FULL] = 0;
        self.ctl.write_range(FULL, &[0u64])?;
        Ok(None)
    }

    /// The heap, made now if this is the first round it takes children from (the round's
    /// pairs then move to SVM, which its calls take: `kids` children's pairs copied).
    fn heap_for(&mut self, kids: usize, stats: &mut BnbStats) -> Result<()> {
        if self.heap.is_some() {
            return Ok(());
        }
        let rt = self.s.rt;
        let t_new = Instant::now();
        self.heap = Some(DeviceGeneralizedHeap::new(rt, &self.heap_config)?);
        if let RoundPairs::Device { kids: out, .. } = &self.pairs {
            let svm_kids = rt.alloc::<i64>(out.len())?;
            let mut to_svm = self.kernel("knapsack_copy")?;
            to_svm.arg_buffer("src", out)?.arg_svm("dst", &svm_kids)?;
            run_copy(&mut to_svm, 2 * kids)?;
            let (rt, program) = (self.s.rt, &self.program);
            let kernel = |name: &str| Kernel::from_program(rt, program, name);
            self.pairs = RoundPairs::Svm {
                popped: rt.alloc::<i64>(self.s.config.pop.max(1))?,
                kids: svm_kids,
                kernels: RoundKernels::new(&kernel, &self.search)?,
                collect: kernel("knapsack_collect")?,
            };
        }
        stats.device_profile.setup_heap_us += micros(t_new);
        Ok(())
    }

    /// The heap's part of a round: `kids` children in and the next round out (one call,
    /// enqueued: the next round's expansion follows it on the in-order queue); past the
    /// garbage collector's threshold, the children in, a collection, the next round out.
    fn heap_part(&mut self, kids: usize, stats: &mut BnbStats) -> Result<Pass> {
        self.heap_for(kids, stats)?;
        let config = self.s.config;
        let (
            Some(heap),
            RoundPairs::Svm {
                popped,
                kids: kids_out,
                collect,
                ..
            },
        ) = (&self.heap, &mut self.pairs)
        else {
            return Err(Error::corrupted(
                "the knapsack search's rounds",
                "the heap's part of a round without the heap or its SVM pairs",
            ));
        };
        if heap.len() + kids <= self.gc_at {
            // The children in and the next round out, one sort where the heap rebuilds.
            self.n_popped = config.pop.min(heap.len() + kids);
            heap.enqueue_insert_then_delete_on_device(kids_out, kids, self.n_popped, popped)?;
            return Ok(Pass::Next);
        }
        // The heap outgrows the threshold: the children in, then a garbage collection (past
        // the time limit, neither: the search ends here, as at the next round's start).
        if config.stop.is_some_and(Deadline::expired) {
            return Ok(Pass::Stop);
        }
        heap.insert_from_device(kids_out, kids)?;
        let kept = collect_garbage(
            self.s.rt,
            heap,
            collect,
            &mut self.arena,
            &self.ctl,
            &mut self.words,
            self.s.best.load(Ordering::Acquire),
        )?;
        stats.collections += 1;
        // When most nodes survive, wait until the heap doubles before the next pass.
        self.gc_at = config.gc_threshold.max(kept.saturating_mul(2));
        self.n_popped = config.pop.min(heap.len());
        heap.enqueue_delete_min_to_device(self.n_popped, popped)?;
        Ok(Pass::Next)
    }

    /// The search's last counts: the nodes collected, and the heap's profile where it kept
    /// one.
    fn finish(&self, stats: &mut BnbStats) {
        stats.collected += self.words[FREED];
        if let Some(p) = self.heap.as_ref().and_then(DeviceGeneralizedHeap::profile) {
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
    }
}

/// A round's launch, wait and read of the control words, in the device profile.
fn book_expansion(stats: &mut BnbStats, t_launch: Instant, t_wait: Instant, t_read: Instant) {
    let d = &mut stats.device_profile;
    d.expand_launch_us += (t_wait - t_launch).as_micros() as u64;
    d.expand_wait_us += (t_read - t_wait).as_micros() as u64;
    d.expand_read_us += micros(t_read);
}
