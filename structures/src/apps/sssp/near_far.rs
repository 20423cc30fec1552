//! Delta-stepping on the throughput device: the near-far search of `kernels/sssp.cl`
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

use asym_runtime::backoff::Deadline;
use asym_runtime::{DeviceKind, Error, Kernel, Launch, Result, Side, SvmBuffer};

use super::device::{groups, program, DeviceSssp, WG};
use super::{distances_from, next_iteration, SsspRun, SsspStats};

// Control words, as `NF_*` in kernels/sssp.cl.
const NLEN: usize = 0;
const VISITED: usize = 3;
const RELAXED: usize = 5;
const ERROR: usize = 7;
const SPLITS: usize = 8;
const ROUNDS: usize = 9;
/// Iteration state, two slots by iteration parity: limit, phase, done.
const STATE: usize = 16;
const LIMIT: usize = 0;
const PHASE: usize = 1;
const DONE: usize = 2;
/// Far pile, three slots by phase mod 3: length, minimum.
const FAR: usize = 24;
const SLOT: usize = 4;
/// `nf_run`'s grid barrier, its give-up flag and the iterations it completed.
const ABORT: usize = 38;
const RAN: usize = 39;
const CTL_WORDS: usize = 40;
/// The arguments that change from launch to launch (the others are set once per search).
const ITER_ARG: u32 = 13;
const COUNT_ARG: u32 = 14;

/// Iterations enqueued before the first look at the control words; each later batch is
/// twice as long, up to [`MAX_BATCH`]. Iterations past the end cost an empty launch each.
const FIRST_BATCH: u32 = 4;
const MAX_BATCH: u32 = 64;
/// Iterations per `nf_run` launch (it stops early when the search is done).
const RESIDENT_ITERATIONS: u32 = 4096;

/// The near-far search's buffers and kernels, kept with the graph between searches.
pub(crate) struct NearFar {
    fstamp: SvmBuffer<u32>,
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
    /// Whether searches run as `nf_run` launches: on GPUs until a launch finds its groups
    /// not all resident (then never again on this graph's copy).
    resident: bool,
}

impl NearFar {
    fn new(sssp: &DeviceSssp<'_>) -> Result<Self> {
        let rt = &sssp.rt;
        let n = sssp.graph.vertices().max(1);
        let program = program(rt)?;
        let units = rt.profile().compute_units.max(1) as usize;
        Ok(NearFar {
            fstamp: rt.alloc::<u32>(n)?,
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
            resident: rt.profile().kind == DeviceKind::Gpu,
        })
    }
}

/// How a near-far search ended.
enum Ended {
    Done([u32; CTL_WORDS], u64),
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
        if self.near_far.is_none() {
            self.near_far = Some(NearFar::new(self)?);
        }
        let mut nf = self.near_far.take().expect("made above");
        let result = self.run_near_far(&mut nf, source as u32, delta);
        self.near_far = Some(nf);
        let mut run = result?;
        run.stats.compute_time = started.elapsed();
        Ok(run)
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
        if self.near_far.is_none() {
            self.near_far = Some(NearFar::new(self)?);
        }
        let profile = self.rt.profile();
        let nf = self.near_far.as_mut().expect("made above");
        nf.resident = resident.unwrap_or(profile.kind == DeviceKind::Gpu);
        nf.resident_groups = groups.unwrap_or(profile.compute_units as usize).max(1);
        Ok(())
    }

    fn run_near_far(&mut self, nf: &mut NearFar, source: u32, delta: u32) -> Result<SsspRun> {
        let (words, launches) = loop {
            self.start_near_far(nf, source, delta)?;
            let ended = if nf.resident {
                self.iterate_resident(nf)?
            } else {
                self.iterate_launches(nf)?
            };
            match ended {
                Ended::Done(words, launches) => break (words, launches),
                Ended::NotResident => nf.resident = false,
            }
        };
        let wide = |at: usize| words[at] as u64 | (words[at + 1] as u64) << 32;
        let stats = SsspStats {
            iterations: words[ROUNDS] as u64,
            buckets: words[SPLITS] as u64 + 1,
            visited: wide(VISITED),
            relaxed: wide(RELAXED),
            launches,
            ..Default::default()
        };
        let distances = distances_from(self.graph, self.read_raw_distances()?)?;
        Ok(SsspRun { distances, stats })
    }

    /// Resets the distances and the lists: iteration 1 expands near list 1 (the source) in
    /// phase 1. Sets the arguments that stay the same for the whole search.
    fn start_near_far(&mut self, nf: &mut NearFar, source: u32, delta: u32) -> Result<()> {
        self.reset(source as usize)?;
        let n = self.graph.vertices() as u32;
        nf.clear
            .arg_svm(0, &nf.fstamp)?
            .arg_scalar(1, n)?
            .launch(groups(n as usize) * WG, Some(WG))?
            .wait()?;
        let mut ctl = [0u32; CTL_WORDS];
        ctl[NLEN + 1] = 1;
        ctl[STATE + SLOT + LIMIT] = delta;
        ctl[STATE + SLOT + PHASE] = 1;
        for phase in [1, 2] {
            ctl[FAR + phase * SLOT + 1] = u32::MAX;
        }
        nf.ctl.copy_from_host(0, &ctl)?;
        nf.near[1].copy_from_host(0, &[source])?;
        let cap = n.max(1);
        for kernel in [&mut nf.step, &mut nf.run] {
            kernel
                .arg_svm(0, &self.offsets)?
                .arg_svm(1, &self.targets)?
                .arg_svm(2, &self.weights)?
                .arg_svm(3, &self.dist)?
                .arg_svm(4, &self.stamp)?
                .arg_svm(5, &nf.fstamp)?
                .arg_svm(6, &nf.near[0])?
                .arg_svm(7, &nf.near[1])?
                .arg_svm(8, &nf.far[0])?
                .arg_svm(9, &nf.far[1])?
                .arg_svm(10, &nf.ctl)?
                .arg_scalar(11, delta)?
                .arg_scalar(12, cap)?;
        }
        Ok(())
    }

    /// The control words after a batch, or the error they report.
    fn read_control(&self, nf: &mut NearFar) -> Result<[u32; CTL_WORDS]> {
        let words: [u32; CTL_WORDS] = nf
            .ctl
            .read_range(0, CTL_WORDS)?
            .try_into()
            .expect("CTL_WORDS words read");
        if words[ERROR] != 0 {
            return Err(Error::Lost(format!(
                "the near-far SSSP kernel overran a list of {} vertices",
                self.graph.vertices()
            )));
        }
        Ok(words)
    }

    /// One `nf_step` launch per iteration, enqueued in batches.
    fn iterate_launches(&mut self, nf: &mut NearFar) -> Result<Ended> {
        let global = nf.groups * WG;
        // Liveness: every launch ends on its own, but the iterations only end when the
        // kernel's lists do; a search that outlasts the runtime's wait bound is reported.
        let deadline = Deadline::after(self.rt.timeout());
        let mut iter = 1u32;
        let mut batch = FIRST_BATCH;
        let mut launches = 0u64;
        loop {
            let mut pending: Vec<Launch> = Vec::with_capacity(batch as usize);
            for _ in 0..batch {
                nf.step.arg_scalar(ITER_ARG, iter)?;
                pending.push(nf.step.launch(global, Some(WG))?);
                iter = next_iteration(iter)?;
            }
            launches += pending.len() as u64;
            for launch in pending {
                launch.wait()?;
            }
            let words = self.read_control(nf)?;
            if words[STATE + (iter & 1) as usize * SLOT + DONE] != 0 {
                return Ok(Ended::Done(words, launches));
            }
            check_deadline(&deadline, iter, &words)?;
            batch = (batch * 2).min(MAX_BATCH);
        }
    }

    /// `nf_run` launches of many iterations each.
    fn iterate_resident(&mut self, nf: &mut NearFar) -> Result<Ended> {
        let global = nf.resident_groups * WG;
        let deadline = Deadline::after(self.rt.timeout());
        let mut iter = 1u32;
        let mut launches = 0u64;
        loop {
            let count = RESIDENT_ITERATIONS;
            if iter.checked_add(count).is_none() {
                return Err(Error::InvalidArgument(
                    "the search ran 2^32 - 1 iterations".into(),
                ));
            }
            nf.run
                .arg_scalar(ITER_ARG, iter)?
                .arg_scalar(COUNT_ARG, count)?
                .launch(global, Some(WG))?
                .wait()?;
            launches += 1;
            let words = self.read_control(nf)?;
            if words[ABORT] != 0 {
                return Ok(Ended::NotResident);
            }
            let next = iter + words[RAN];
            if words[STATE + (next & 1) as usize * SLOT + DONE] != 0 {
                return Ok(Ended::Done(words, launches));
            }
            iter += count;
            check_deadline(&deadline, iter, &words)?;
        }
    }
}

/// The search's liveness check: [`Error::Stalled`] once it outlasts `deadline`.
fn check_deadline(deadline: &Deadline, iter: u32, words: &[u32]) -> Result<()> {
    if !deadline.expired() {
        return Ok(());
    }
    Err(Error::Stalled {
        side: Side::Device,
        waiting_for: "the near-far SSSP search to empty its lists".into(),
        waited_ms: deadline.waited_ms(),
        detail: format!(
            "{} iterations, {} buckets opened",
            iter - 1,
            words[SPLITS] + 1
        ),
    })
}
