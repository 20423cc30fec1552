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
use asym_runtime::{Error, Kernel, Launch, Result, Side, SvmBuffer};

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
const CTL_WORDS: usize = FAR + 3 * SLOT;
/// `nf_step`'s argument that changes from launch to launch (the others are set once).
const ITER_ARG: u32 = 13;

/// Iterations enqueued before the first look at the control words; each later batch is
/// twice as long, up to [`MAX_BATCH`]. Iterations past the end cost an empty launch each.
const FIRST_BATCH: u32 = 4;
const MAX_BATCH: u32 = 64;

/// The near-far search's buffers and kernels, kept with the graph between searches.
pub(crate) struct NearFar {
    fstamp: SvmBuffer<u32>,
    near: [SvmBuffer<u32>; 2],
    far: [SvmBuffer<u32>; 2],
    ctl: SvmBuffer<u32>,
    clear: Kernel,
    step: Kernel,
    /// Work-groups of `nf_step` (it strides over longer lists).
    groups: usize,
}

impl NearFar {
    fn new(sssp: &DeviceSssp<'_>) -> Result<Self> {
        let rt = &sssp.rt;
        let n = sssp.graph.vertices().max(1);
        let program = program(rt)?;
        // Enough groups to fill the device several times over, no more: most iterations of a
        // road-like graph expand a few thousand vertices, and idle groups still cost a launch.
        let resident = rt.profile().compute_units.max(1) as usize * 4;
        Ok(NearFar {
            fstamp: rt.alloc::<u32>(n)?,
            near: [rt.alloc::<u32>(n)?, rt.alloc::<u32>(n)?],
            far: [rt.alloc::<u32>(n)?, rt.alloc::<u32>(n)?],
            ctl: rt.alloc::<u32>(CTL_WORDS)?,
            clear: Kernel::from_program(rt, &program, "nf_clear")?,
            step: Kernel::from_program(rt, &program, "nf_step")?,
            groups: resident.min(groups(n)),
        })
    }
}

impl DeviceSssp<'_> {
    /// Shortest distances from `source` (0-based) by delta-stepping with buckets `delta`
    /// wide (the near-far search, see [`near_far`](super::near_far)). `stats.iterations`
    /// counts the iterations that expanded vertices, `buckets` the buckets opened, `visited`
    /// the vertices expanded and `relaxed` the edges scanned.
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
        self.reset(source)?;
        let n = self.graph.vertices() as u32;
        let cap = n.max(1);
        let mut nf = self.near_far.take().expect("made above");
        let result = self.run_near_far(&mut nf, source as u32, delta, n, cap);
        self.near_far = Some(nf);
        let mut run = result?;
        run.stats.compute_time = started.elapsed();
        Ok(run)
    }

    fn run_near_far(
        &mut self,
        nf: &mut NearFar,
        source: u32,
        delta: u32,
        n: u32,
        cap: u32,
    ) -> Result<SsspRun> {
        nf.clear
            .arg_svm(0, &nf.fstamp)?
            .arg_scalar(1, n)?
            .launch(groups(n as usize) * WG, Some(WG))?
            .wait()?;
        // Iteration 1 expands near list 1 (the source) in phase 1.
        let mut ctl = [0u32; CTL_WORDS];
        ctl[NLEN + 1] = 1;
        ctl[STATE + SLOT + LIMIT] = delta;
        ctl[STATE + SLOT + PHASE] = 1;
        for phase in [1, 2] {
            ctl[FAR + phase * SLOT + 1] = u32::MAX;
        }
        nf.ctl.copy_from_host(0, &ctl)?;
        nf.near[1].copy_from_host(0, &[source])?;
        nf.step
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
        let global = nf.groups * WG;
        // Liveness: every launch ends on its own, but the iterations only end when the
        // kernel's lists do; a search that outlasts the runtime's wait bound is reported.
        let deadline = Deadline::after(self.rt.timeout());
        let mut iter = 1u32;
        let mut batch = FIRST_BATCH;
        let words = loop {
            let mut launches: Vec<Launch> = Vec::with_capacity(batch as usize);
            for _ in 0..batch {
                nf.step.arg_scalar(ITER_ARG, iter)?;
                launches.push(nf.step.launch(global, Some(WG))?);
                iter = next_iteration(iter)?;
            }
            for launch in launches {
                launch.wait()?;
            }
            let words = nf.ctl.read_range(0, CTL_WORDS)?;
            if words[ERROR] != 0 {
                return Err(Error::Lost(format!(
                    "the near-far SSSP kernel overran a list of {cap} vertices"
                )));
            }
            if words[STATE + (iter & 1) as usize * SLOT + DONE] != 0 {
                break words;
            }
            if deadline.expired() {
                return Err(Error::Stalled {
                    side: Side::Device,
                    waiting_for: "the near-far SSSP search to empty its lists".into(),
                    waited_ms: deadline.waited_ms(),
                    detail: format!(
                        "{} iterations, {} buckets opened",
                        iter - 1,
                        words[SPLITS] + 1
                    ),
                });
            }
            batch = (batch * 2).min(MAX_BATCH);
        };
        let wide = |at: usize| words[at] as u64 | (words[at + 1] as u64) << 32;
        let stats = SsspStats {
            iterations: words[ROUNDS] as u64,
            buckets: words[SPLITS] as u64 + 1,
            visited: wide(VISITED),
            relaxed: wide(RELAXED),
            ..Default::default()
        };
        let distances = distances_from(self.graph, self.read_raw_distances()?)?;
        Ok(SsspRun { distances, stats })
    }
}
