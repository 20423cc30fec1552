//! Delta-stepping on the throughput device: the near-far search of `kernels/sssp_near_far.cl`
//! (`nf_step`), work-efficient where the frontier search re-expands vertices
//! whose label improves later (75 expansions per reached vertex on a road-like graph).
//!
//! One bucket is open at a time: the near list holds the vertices below the bucket's upper
//! limit and is expanded until empty; what lands above the limit waits in a far pile, which
//! is split when the near list empties (the limit moves up by at least `delta`, to past the
//! nearest waiting vertex). Each iteration is one launch that decides on the device whether
//! to expand or to split, so the host enqueues iterations in batches without reading anything
//! in between (only the iteration number changes between launches) and checks a few control
//! words once per batch: a road-like graph needs thousands of small iterations, and a round
//! trip to the host per iteration would cost more than the iteration.

use std::time::Instant;

use asym_kernels::ClConst;
use asym_runtime::{DeviceKind, Error, Kernel, Launch, Result, SvmBuffer};

use super::device::{groups, program, Batches, DeviceSssp, WG};
use super::{next_iteration, AnswerMemory, SsspRun, SsspStats};

// Control words (`NF_*`, `NA_*` in kernels/sssp_near_far.cl and sssp_async.cl, from
// `kernel_constants`).
/// Three words: the near length of iteration i at `NLEN + i % 3`.
const NLEN: usize = 0;
/// Two words each (low, high): vertices expanded, edges scanned.
const VISITED: usize = 3;
const RELAXED: usize = 5;
const ERROR: usize = 7;
const SPLITS: usize = 8;
const ROUNDS: usize = 9;
/// The near length and the iteration of a stint that yielded.
const YIELD_LEN: usize = 10;
const YIELD_ITER: usize = 11;
/// Iteration state, two slots by iteration parity: limit, phase, done, fresh.
const STATE: usize = 16;
const LIMIT: usize = 0;
const PHASE: usize = 1;
const DONE: usize = 2;
const FRESH: usize = 3;
/// `done` of a stint that handed the search back (`NF_DONE` 2).
const YIELDED: u32 = 2;
/// `fresh` of a stint's starting state: its first split does not count as a light bucket.
const FIRST_SPLIT: u32 = 2;
/// Far pile, three slots by phase mod 3: length, minimum.
const FAR: usize = 24;
const SLOT: usize = 4;
/// `nf_run`'s grid barrier (its counter, its give-up flag) and the iterations it completed.
const BAR_COUNT: usize = 36;
const ABORT: usize = 38;
const RAN: usize = 39;
/// `nf_async`'s pool counters (head, tail; two pairs by phase parity) and the near vertices
/// its bucket holds, each on a cache line of its own (idle groups poll them).
const POOL: usize = 48;
const PENDING: usize = 64;
const CTL_WORDS: usize = 80;
/// Local rounds per light iteration on GPUs unless set otherwise (more re-expand more:
/// docs/decisions.md).
const LOCAL_ROUNDS: u32 = 1;

/// A work-item holding no vertex.
const NO_VERTEX: u32 = u32::MAX;
/// Edges per work-item a group may scan in an iteration and still go on with local rounds.
const LOCAL_EDGES_PER_ITEM: u64 = 4;

/// What `kernels/sssp_near_far.cl` takes from the host for the near-far search, built with
/// work-groups of `wg`.
pub(super) fn kernel_constants(wg: usize) -> [ClConst; 22] {
    let int = |name, v: usize| ClConst::int(name, v as u64);
    [
        int("NF_NLEN", NLEN),
        int("NF_VISITED", VISITED),
        int("NF_RELAXED", RELAXED),
        int("NF_ERROR", ERROR),
        int("NF_SPLITS", SPLITS),
        int("NF_ROUNDS", ROUNDS),
        int("NF_YIELD_LEN", YIELD_LEN),
        int("NF_YIELD_ITER", YIELD_ITER),
        int("NF_STATE", STATE),
        int("NF_LIMIT", LIMIT),
        int("NF_PHASE", PHASE),
        int("NF_DONE", DONE),
        int("NF_FRESH", FRESH),
        int("NF_FAR", FAR),
        int("NF_SLOT", SLOT),
        int("NF_BAR_COUNT", BAR_COUNT),
        int("NF_ABORT", ABORT),
        int("NF_RAN", RAN),
        int("NA_POOL", POOL),
        int("NA_PENDING", PENDING),
        ClConst::uint("NF_NONE", NO_VERTEX as u64),
        ClConst::uint("NF_LOCAL_EDGES", LOCAL_EDGES_PER_ITEM * wg as u64),
    ]
}

/// Iterations per `nf_run` launch (it stops early when the search is done).
const RESIDENT_ITERATIONS: u32 = 4096;

/// The near-far search's buffers and kernels, kept with the graph between searches.
pub(crate) struct NearFar {
    fstamp: SvmBuffer<u32>,
    /// The distance each vertex was last expanded with (`u32::MAX`: never).
    expanded: SvmBuffer<u32>,
    /// Local rounds per iteration (`kernels/sssp_near_far.cl`'s nf_body).
    local_rounds: u32,
    near: [SvmBuffer<u32>; 2],
    far: [SvmBuffer<u32>; 2],
    ctl: SvmBuffer<u32>,
    clear: Kernel,
    step: Kernel,
    run: Kernel,
    /// Work-groups of `nf_step` (it strides over longer lists).
    groups: usize,
    /// Work-groups of `nf_run`: one per compute unit, all resident at once.
    resident_groups: usize,
    /// Iterations per `nf_run` launch.
    launch_iterations: u32,
    /// Whether searches run as `nf_run` launches: on GPUs until a launch finds its groups
    /// not all resident (then never again on this graph's copy).
    resident: bool,
    /// `nf_async`: buckets without iterations inside them.
    bucket_run: Kernel,
    /// Whether searches run as `nf_async` launches (where chosen, until a launch finds its
    /// groups not all resident), and its pool once made.
    asynchronous: bool,
    pool: Option<AsyncPool>,
}

/// `nf_async`'s pool: its slots (`NO_VERTEX` where empty) and each vertex's flag (1 while
/// it is in the pool).
struct AsyncPool {
    slots: SvmBuffer<u32>,
    queued: SvmBuffer<u32>,
}

impl NearFar {
    fn new(sssp: &DeviceSssp<'_>) -> Result<Self> {
        let rt = &sssp.rt;
        let n = sssp.graph.vertices().max(1);
        let program = program(rt)?;
        let units = rt.profile().compute_units.max(1) as usize;
        Ok(NearFar {
            fstamp: rt.alloc::<u32>(n)?,
            expanded: rt.alloc::<u32>(n)?,
            // On PoCL a local round saved iterations but no time: a CPU device's iteration
            // costs little more than its expansions, so it keeps none.
            local_rounds: if rt.profile().kind == DeviceKind::Gpu {
                LOCAL_ROUNDS
            } else {
                0
            },
            near: [rt.alloc::<u32>(n)?, rt.alloc::<u32>(n)?],
            far: [rt.alloc::<u32>(n)?, rt.alloc::<u32>(n)?],
            ctl: rt.alloc::<u32>(CTL_WORDS)?,
            clear: Kernel::from_program(rt, &program, "nf_clear")?,
            step: Kernel::from_program(rt, &program, "nf_step")?,
            run: Kernel::from_program(rt, &program, "nf_run")?,
            // Enough groups to fill the device a few times over, no more: most iterations of
            // a road-like graph expand a few thousand vertices, and idle groups still cost.
            groups: (units * 4).min(groups(n)),
            resident_groups: units,
            launch_iterations: RESIDENT_ITERATIONS,
            resident: rt.profile().kind == DeviceKind::Gpu,
            bucket_run: Kernel::from_program(rt, &program, "nf_async")?,
            asynchronous: false,
            pool: None,
        })
    }
}

/// How a near-far search ended.
enum Ended {
    /// The control words, the launches, and the first iteration not run.
    Done(Box<[u32; CTL_WORDS]>, u64, u32),
    /// `nf_run`'s groups were not all resident: the search must run again another way.
    NotResident,
}

impl DeviceSssp<'_> {
    /// Shortest distances from `source` (0-based) by delta-stepping with buckets `delta`
    /// wide (the near-far search, see [`near_far`](super::near_far)). `stats.iterations`
    /// counts the iterations that expanded vertices, `buckets` the buckets opened, `visited`
    /// the vertices expanded, `relaxed` the edges scanned and `launches` the kernel launches
    /// the iterations took.
    pub fn delta_stepping(&mut self, source: usize, delta: u32) -> Result<SsspRun> {
        self.graph.check_source(source)?;
        if delta == 0 {
            return Err(Error::InvalidArgument(
                "delta 0: buckets must be at least 1 wide".into(),
            ));
        }
        let started = Instant::now();
        let mut nf = self.take_near_far()?;
        let answer = AnswerMemory::start(self.graph.vertices());
        let result = self.run_near_far(&mut nf, source as u32, delta);
        self.near_far = Some(nf);
        let (mut stats, search_time) = result?;
        let distances = self.read_distances(Some(answer))?;
        stats.compute_time = started.elapsed();
        stats.transfer_time = stats.compute_time.saturating_sub(search_time);
        Ok(SsspRun { distances, stats })
    }

    /// Chooses how the iterations run: `Some(true)` one launch for many iterations (with
    /// grid barriers; the default on GPUs), `Some(false)` one launch per iteration (the
    /// default elsewhere), `None` the default; `groups` sets the resident launch's groups
    /// (default: one per compute unit). For tests of both paths on any device.
    #[doc(hidden)]
    pub fn set_resident_iterations(
        &mut self,
        resident: Option<bool>,
        groups: Option<usize>,
    ) -> Result<()> {
        let mut nf = self.take_near_far()?;
        let profile = self.rt.profile();
        nf.resident = resident.unwrap_or(profile.kind == DeviceKind::Gpu);
        nf.resident_groups = groups.unwrap_or(profile.compute_units as usize).max(1);
        self.near_far = Some(nf);
        Ok(())
    }

    /// Iterations per launch of the resident path, buckets per launch of the asynchronous
    /// buckets (default 4096; at least 1). For tests of searches that span several launches.
    #[doc(hidden)]
    pub fn set_iterations_per_launch(&mut self, iterations: u32) -> Result<()> {
        let mut nf = self.take_near_far()?;
        nf.launch_iterations = iterations.max(1);
        self.near_far = Some(nf);
        Ok(())
    }

    /// The near-far buffers and kernels, made on first use, taken out while a search uses
    /// them beside `self` (the caller puts them back).
    fn take_near_far(&mut self) -> Result<NearFar> {
        match self.near_far.take() {
            Some(nf) => Ok(nf),
            None => NearFar::new(self),
        }
    }

    /// How many hops a work-group goes on with the near vertices it lowered itself before
    /// an iteration ends (0: none, every hop an iteration; default 1 on GPUs, 0 elsewhere).
    /// For measurements and tests.
    #[doc(hidden)]
    pub fn set_local_rounds(&mut self, rounds: u32) -> Result<()> {
        let mut nf = self.take_near_far()?;
        nf.local_rounds = rounds;
        self.near_far = Some(nf);
        Ok(())
    }

    /// Runs the buckets without iterations inside them (`nf_async`: each work-group goes on
    /// with the near vertices it lowered, a shared pool takes the rest, grid barriers only
    /// between buckets) where `true` and the resident launch's groups are all resident (else
    /// as before); `stats.iterations` then counts the groups' rounds. Off by default. For
    /// measurements and tests.
    #[doc(hidden)]
    pub fn set_async_buckets(&mut self, on: bool) -> Result<()> {
        let mut nf = self.take_near_far()?;
        nf.asynchronous = on;
        self.near_far = Some(nf);
        Ok(())
    }

    /// The search's counters and the time its iterations took (the stint: launches and
    /// control reads, not the resets before it).
    fn run_near_far(
        &mut self,
        nf: &mut NearFar,
        source: u32,
        delta: u32,
    ) -> Result<(SsspStats, std::time::Duration)> {
        let mut searched = std::time::Duration::ZERO;
        let (words, launches) = loop {
            self.reset_near_far(nf, source)?;
            let t = Instant::now();
            let ended = if nf.asynchronous {
                self.async_buckets(nf, source, delta)?
            } else {
                let start = StintStart {
                    iteration: 1,
                    phase: 1,
                    limit: 0,
                    far: &[source],
                    lowest: 0,
                    fresh: 0,
                };
                self.near_far_stint(nf, &start, delta, 0)?
            };
            searched += t.elapsed();
            match ended {
                Ended::Done(words, launches, _) => break (words, launches),
                Ended::NotResident if nf.asynchronous => nf.asynchronous = false,
                Ended::NotResident => nf.resident = false,
            }
        };
        Ok((stint_stats(&words, launches), searched))
    }

    /// Every distance unknown but the source's, no vertex filed far in any phase.
    fn reset_near_far(&mut self, nf: &mut NearFar, source: u32) -> Result<()> {
        self.reset(source as usize)?;
        let n = self.graph.vertices() as u32;
        for (words, value) in [(&nf.fstamp, 0u32), (&nf.expanded, u32::MAX)] {
            fill(&mut nf.clear, words, n, value)?;
        }
        Ok(())
    }

    /// Runs iterations from `start` (its far pile is split first) until the lists are empty
    /// or, with `yield_below` > 0, until a split after the first leaves a near list shorter
    /// than that. Sets the arguments that stay the same for the stint.
    fn near_far_stint(
        &mut self,
        nf: &mut NearFar,
        start: &StintStart<'_>,
        delta: u32,
        yield_below: u32,
    ) -> Result<Ended> {
        let n = self.graph.vertices() as u32;
        let cap = n.max(1);
        if start.far.len() > cap as usize {
            return Err(Error::InvalidArgument(format!(
                "{} vertices waiting for a graph of {n}",
                start.far.len()
            )));
        }
        let mut ctl = [0u32; CTL_WORDS];
        let state = STATE + (start.iteration & 1) as usize * SLOT;
        ctl[state + LIMIT] = start.limit;
        ctl[state + PHASE] = start.phase;
        ctl[state + FRESH] = start.fresh;
        for p in 0..3 {
            ctl[FAR + p * SLOT + 1] = u32::MAX;
        }
        let far = FAR + (start.phase % 3) as usize * SLOT;
        ctl[far] = start.far.len() as u32;
        ctl[far + 1] = start.lowest;
        nf.ctl.copy_from_host(0, &ctl)?;
        nf.far[(start.phase & 1) as usize].copy_from_host(0, start.far)?;
        for kernel in [&mut nf.step, &mut nf.run] {
            kernel
                .arg_svm("offsets", &self.offsets)?
                .arg_svm("targets", &self.targets)?
                .arg_svm("weights", &self.weights)?
                .arg_svm("dist", &self.dist)?
                .arg_svm("stamp", &self.stamp)?
                .arg_svm("fstamp", &nf.fstamp)?
                .arg_svm("near0", &nf.near[0])?
                .arg_svm("near1", &nf.near[1])?
                .arg_svm("far0", &nf.far[0])?
                .arg_svm("far1", &nf.far[1])?
                .arg_svm("ctl", &nf.ctl)?
                .arg_svm("expd", &nf.expanded)?
                .arg_scalar("delta", delta)?
                .arg_scalar("cap", cap)?
                .arg_scalar("yield_below", yield_below)?
                .arg_scalar("local_rounds", nf.local_rounds)?;
        }
        if nf.resident {
            self.iterate_resident(nf, start.iteration)
        } else {
            self.iterate_launches(nf, start.iteration)
        }
    }

    /// The control words after a batch, or the error they report.
    fn read_control(&self, nf: &mut NearFar) -> Result<[u32; CTL_WORDS]> {
        let words: [u32; CTL_WORDS] = nf
            .ctl
            .read_range(0, CTL_WORDS)?
            .try_into()
            .expect("CTL_WORDS words read");
        if words[ERROR] != 0 {
            return Err(Error::corrupted(
                "the near-far SSSP lists",
                format!(
                    "the near-far SSSP kernel overran a list of {} vertices",
                    self.graph.vertices()
                ),
            ));
        }
        Ok(words)
    }

    /// One `nf_step` launch per iteration, enqueued in batches, from iteration `iter`.
    fn iterate_launches(&mut self, nf: &mut NearFar, mut iter: u32) -> Result<Ended> {
        let global = nf.groups * WG;
        let mut batches = Batches::new(&self.rt);
        let mut launches = 0u64;
        loop {
            let batch = batches.next_len();
            let mut pending: Vec<Launch> = Vec::with_capacity(batch as usize);
            for _ in 0..batch {
                nf.step.arg_scalar("iter", iter)?;
                pending.push(nf.step.launch(global, Some(WG))?);
                iter = next_iteration(iter)?;
            }
            launches += pending.len() as u64;
            for launch in pending {
                launch.wait()?;
            }
            let words = self.read_control(nf)?;
            if words[STATE + (iter & 1) as usize * SLOT + DONE] != 0 {
                return Ok(Ended::Done(Box::new(words), launches, iter));
            }
            batches.check(WAITING_FOR, || progress(iter, &words))?;
        }
    }

    /// `nf_run` launches of many iterations each, from iteration `iter`.
    fn iterate_resident(&mut self, nf: &mut NearFar, mut iter: u32) -> Result<Ended> {
        let global = nf.resident_groups * WG;
        // One launch runs many iterations: of the batches, only the search's bound is used.
        let batches = Batches::new(&self.rt);
        let mut launches = 0u64;
        // The stint's copy of the control words zeroed the barrier counter; every completed
        // iteration adds one arrival per group.
        let mut bar_base = 0u32;
        loop {
            let count = nf.launch_iterations;
            if iter.checked_add(count).is_none() {
                return Err(Error::InvalidArgument(
                    "the search ran 2^32 - 1 iterations".into(),
                ));
            }
            nf.run
                .arg_scalar("iter", iter)?
                .arg_scalar("count", count)?
                .arg_scalar("bar_base", bar_base)?
                .launch(global, Some(WG))?
                .wait()?;
            launches += 1;
            let words = self.read_control(nf)?;
            if words[ABORT] != 0 {
                return Ok(Ended::NotResident);
            }
            // A launch that goes on passed a barrier after each of its RAN iterations.
            bar_base = bar_base.wrapping_add(words[RAN].wrapping_mul(nf.resident_groups as u32));
            let next = iter + words[RAN];
            if words[STATE + (next & 1) as usize * SLOT + DONE] != 0 {
                return Ok(Ended::Done(Box::new(words), launches, next));
            }
            iter += count;
            batches.check(WAITING_FOR, || progress(iter, &words))?;
        }
    }
}

impl DeviceSssp<'_> {
    /// A search from `source` by `nf_async` launches of up to `launch_iterations` buckets
    /// each (after [`reset_near_far`](Self::reset_near_far)); `Ended::Done`'s iteration is
    /// 0 (the buckets keep no iteration count).
    fn async_buckets(&mut self, nf: &mut NearFar, source: u32, delta: u32) -> Result<Ended> {
        let n = self.graph.vertices().max(1);
        let resident = nf.resident_groups;
        // More slots than vertices plus every group's claims (kernels/sssp_async.cl).
        let pool_cap = u32::try_from(n + (resident + 1) * WG)
            .map_err(|_| Error::InvalidArgument(format!("a pool for {n} vertices")))?;
        let pool = match nf.pool.take() {
            Some(p) if p.slots.len() >= pool_cap as usize => p,
            _ => AsyncPool {
                slots: self.rt.alloc::<u32>(pool_cap as usize)?,
                queued: self.rt.alloc::<u32>(n)?,
            },
        };
        for (words, len, value) in [
            (&pool.slots, pool_cap, NO_VERTEX),
            (&pool.queued, n as u32, 0),
        ] {
            fill(&mut nf.clear, words, len, value)?;
        }
        // Phase 1 at limit 0, its far pile the source alone: the first bucket is empty and
        // the split after it opens the source's.
        let mut ctl = [0u32; CTL_WORDS];
        ctl[STATE + PHASE] = 1;
        for p in 0..3 {
            ctl[FAR + p * SLOT + 1] = u32::MAX;
        }
        ctl[FAR + SLOT] = 1;
        ctl[FAR + SLOT + 1] = 0;
        nf.ctl.copy_from_host(0, &ctl)?;
        nf.far[1].copy_from_host(0, &[source])?;
        nf.bucket_run
            .arg_svm("offsets", &self.offsets)?
            .arg_svm("targets", &self.targets)?
            .arg_svm("weights", &self.weights)?
            .arg_svm("dist", &self.dist)?
            .arg_svm("fstamp", &nf.fstamp)?
            .arg_svm("far0", &nf.far[0])?
            .arg_svm("far1", &nf.far[1])?
            .arg_svm("ctl", &nf.ctl)?
            .arg_svm("expd", &nf.expanded)?
            .arg_svm("pool", &pool.slots)?
            .arg_svm("inq", &pool.queued)?
            .arg_scalar("delta", delta)?
            .arg_scalar("cap", n as u32)?
            .arg_scalar("pool_cap", pool_cap)?
            .arg_scalar("count", nf.launch_iterations)?;
        nf.pool = Some(pool);
        let batches = Batches::new(&self.rt);
        let (mut launches, mut bar_base) = (0u64, 0u32);
        loop {
            nf.bucket_run
                .arg_scalar("bar_base", bar_base)?
                .launch(resident * WG, Some(WG))?
                .wait()?;
            launches += 1;
            let words = self.read_control(nf)?;
            if words[ABORT] != 0 {
                return Ok(Ended::NotResident);
            }
            if words[STATE + DONE] != 0 {
                return Ok(Ended::Done(Box::new(words), launches, 0));
            }
            bar_base = bar_base.wrapping_add(words[RAN].wrapping_mul(resident as u32));
            batches.check(WAITING_FOR, || format!("{} buckets opened", words[SPLITS]))?;
        }
    }
}

/// Sets the first `n` of `words` to `value` with `nf_clear`, waited for.
fn fill(clear: &mut Kernel, words: &SvmBuffer<u32>, n: u32, value: u32) -> Result<()> {
    clear
        .arg_svm("words", words)?
        .arg_scalar("n", n)?
        .arg_scalar("value", value)?
        .launch(groups(n as usize) * WG, Some(WG))?
        .wait()
}

/// A stint's starting state: the near list is empty, so its first iteration splits `far`.
struct StintStart<'a> {
    /// Beyond every iteration an earlier stint of the search ran (the stamps hold those).
    iteration: u32,
    /// Beyond every earlier phase (the far stamps hold those).
    phase: u32,
    /// The current bucket's lower end: every vertex below it is settled.
    limit: u32,
    /// The vertices waiting (any at or above `limit`; duplicates allowed).
    far: &'a [u32],
    /// At most the smallest distance in `far`.
    lowest: u32,
    /// `fresh` of the starting state ([`FIRST_SPLIT`] for a handed-over search).
    fresh: u32,
}

/// The counters of a stint's control words.
fn stint_stats(words: &[u32; CTL_WORDS], launches: u64) -> SsspStats {
    let wide = |at: usize| words[at] as u64 | (words[at + 1] as u64) << 32;
    SsspStats {
        iterations: words[ROUNDS] as u64,
        // Every stint's first iteration opens its first bucket by a split.
        buckets: words[SPLITS] as u64,
        visited: wide(VISITED),
        relaxed: wide(RELAXED),
        launches,
        ..Default::default()
    }
}

/// What a search that outlasts the runtime's wait bound was waiting for.
const WAITING_FOR: &str = "the near-far SSSP search to empty its lists";

/// How far a search came, for [`Batches::check`]'s error.
fn progress(iter: u32, words: &[u32]) -> String {
    format!("{} iterations, {} buckets opened", iter - 1, words[SPLITS])
}

/// Where the next device stint of a cooperative search starts: beyond every iteration and
/// phase an earlier stint ran, so the stamps those left never match.
#[derive(Clone, Copy, Debug)]
pub(super) struct StintClock {
    pub iteration: u32,
    pub phase: u32,
}

impl StintClock {
    pub fn new() -> Self {
        StintClock {
            iteration: 1,
            phase: 1,
        }
    }
}

/// How a device stint of a cooperative search ended.
pub(super) enum DeviceStintEnd {
    /// The lists emptied: every distance is final.
    Finished(SsspStats),
    /// A light bucket opened: the vertices waiting (its near list and the far pile).
    Yielded(SsspStats, Vec<u32>),
    /// The resident launch's groups were not all resident: the search must start again
    /// (the device now runs one launch per iteration).
    NotResident,
}

impl DeviceSssp<'_> {
    /// Resets the distances for a cooperative search from `source` (made the near-far
    /// buffers on first use).
    pub(super) fn begin_stints(&mut self, source: usize) -> Result<()> {
        let mut nf = self.take_near_far()?;
        let result = self.reset_near_far(&mut nf, source as u32);
        self.near_far = Some(nf);
        result
    }

    /// Delta-stepping on the device from the distances in its buffer and the vertices
    /// `waiting` (the nearest at distance `lowest`; every vertex below its bucket settled),
    /// until the lists empty or a bucket opens with fewer than `yield_below` near vertices.
    pub(super) fn device_stint(
        &mut self,
        clock: &mut StintClock,
        waiting: &[u32],
        lowest: u32,
        delta: u32,
        yield_below: u32,
    ) -> Result<DeviceStintEnd> {
        let mut nf = self
            .near_far
            .take()
            .ok_or_else(|| Error::InvalidArgument("a device stint before begin_stints".into()))?;
        let start = StintStart {
            iteration: clock.iteration,
            phase: clock.phase,
            limit: lowest / delta * delta,
            far: waiting,
            lowest,
            fresh: FIRST_SPLIT,
        };
        let result = self
            .near_far_stint(&mut nf, &start, delta, yield_below)
            .and_then(|ended| self.stint_end(&mut nf, clock, ended));
        self.near_far = Some(nf);
        result
    }

    fn stint_end(
        &mut self,
        nf: &mut NearFar,
        clock: &mut StintClock,
        ended: Ended,
    ) -> Result<DeviceStintEnd> {
        let Ended::Done(words, launches, next) = ended else {
            nf.resident = false;
            return Ok(DeviceStintEnd::NotResident);
        };
        let stats = stint_stats(&words, launches);
        let state = STATE + (next & 1) as usize * SLOT;
        let phase = words[state + PHASE];
        *clock = StintClock {
            iteration: next,
            phase: phase
                .checked_add(1)
                .ok_or_else(|| Error::InvalidArgument("the search ran 2^32 - 1 phases".into()))?,
        };
        if words[state + DONE] != YIELDED {
            return Ok(DeviceStintEnd::Finished(stats));
        }
        let near = (words[YIELD_ITER] & 1) as usize;
        let mut waiting = nf.near[near].read_range(0, words[YIELD_LEN] as usize)?;
        let far_len = words[FAR + (phase % 3) as usize * SLOT] as usize;
        waiting.extend(nf.far[(phase & 1) as usize].read_range(0, far_len)?);
        Ok(DeviceStintEnd::Yielded(stats, waiting))
    }
}
