//! The knapsack's one front ([`Knapsack::solve`]): an instance and a [`Method`], on the
//! workers the front was given, with one [`SolveOptions`].
//!
//! | method | runs |
//! |---|---|
//! | [`Method::Auto`] | the fastest exact answer that fits: dynamic programming where its table fits [`SolveOptions::dp_memory`] (where the program would take 50 ms or more, the sequential search first, given an eighth of that time: [`search_first`]); else the sequential branch-and-bound |
//! | [`Method::DynamicProgram`] | dynamic programming over capacities ([`dp`]) |
//! | [`Method::Sequential`] | best-first branch-and-bound with the sequential generalized heap on one core |
//! | [`Method::BranchAndBound`]`(CpuOnly)` | the concurrent generalized heap shared by the latency threads |
//! | [`Method::BranchAndBound`]`(GpuOnly)` | the heap on the device ([`device`]); the nodes expanded by the latency threads or, per [`SolveOptions::expansion`], by the device |
//! | [`Method::BranchAndBound`]`(Cooperative)` | the Cooperative heap: a host top in front of the device heap, the latency threads expanding |
//!
//! [`dp`]: super::dp
//! [`device`]: super::device

use std::time::Duration;

use asym_runtime::{host_memory, Error, LatencyPool, Mode, Named, Result, Runtime};
use asym_structures::InsertDirection;
use asym_structures::{BulkPolicy, CooperativeConfig, DeviceHeapConfig, HeapPlacement};

use super::device::{prepare_offloaded, solve_offloaded, Expansion, OffloadConfig};
use super::dp::{dp_bytes, solve_dp};
use super::{
    node_limit_for_memory, search_first, solve_concurrent, solve_sequential_within, BnbStats,
    Instance, NodeBudget, SearchFirst, SEARCH_FIRST_BATCH,
};

/// How an instance is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The fastest exact method that fits (module documentation).
    Auto,
    /// Dynamic programming over capacities, its items read back from the table.
    DynamicProgram,
    /// Best-first branch-and-bound on one core with the sequential generalized heap.
    Sequential,
    /// Best-first branch-and-bound with the heap of a mode (module documentation).
    BranchAndBound(Mode),
}

/// K of the heaps of GpuOnly searches by default: the device heap rebuilds fastest with large
/// nodes.
pub const GPU_BATCH: usize = 1024;

/// K of the other searches' heaps by default.
pub const BATCH: usize = 16;

/// What the methods take besides the instance.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveOptions {
    /// Keys per heap node (K), a power of two (`None`: [`GPU_BATCH`] for GpuOnly, [`BATCH`]
    /// for the others).
    pub batch: Option<usize>,
    /// Heap nodes a search may grow to before it fails with [`Error::CapacityExceeded`]
    /// (`None`: as many as half the host memory available holds).
    pub max_nodes: Option<usize>,
    /// Stop each search after this long with the best solution found
    /// ([`BnbStats::proved`] false).
    pub time_limit: Option<Duration>,
    /// CpuOnly: give up when every thread has waited this long for work.
    pub timeout: Duration,
    /// CpuOnly: how the concurrent heap inserts.
    pub direction: InsertDirection,
    /// Host bytes the dynamic program may use (`None`: a quarter of what is available).
    pub dp_memory: Option<u64>,
    /// GpuOnly and Cooperative: device heap calls that move a large share of the heap.
    pub bulk: BulkPolicy,
    /// Cooperative: keys one refill brings from the device heap to the host top.
    pub refill: usize,
    /// GpuOnly and Cooperative: search nodes taken from the heap per round.
    pub pop: usize,
    /// GpuOnly and Cooperative: garbage-collect the heap once it holds more than this many
    /// search nodes (`None`: never).
    pub gc_threshold: Option<usize>,
    /// GpuOnly and Cooperative: run the sequential search beside the rounds, sharing the
    /// incumbent.
    pub dive: bool,
    /// GpuOnly: who expands a round's nodes (Cooperative: always the latency threads).
    pub expansion: Expansion,
    /// GpuOnly, nodes expanded on the device: work-groups of the rounds that run many to a
    /// launch (`None`: the device's default).
    pub resident_groups: Option<usize>,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            batch: None,
            max_nodes: None,
            time_limit: None,
            timeout: Duration::from_secs(60),
            direction: InsertDirection::BottomUp,
            dp_memory: None,
            bulk: BulkPolicy::Auto,
            refill: 4096,
            pop: 65_536,
            gc_threshold: Some(1 << 20),
            dive: true,
            expansion: Expansion::Auto,
            resident_groups: None,
        }
    }
}

/// Who answered an instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnsweredBy {
    /// Dynamic programming, after the sequential search tried for `searched` first
    /// ([`Method::Auto`]; zero where nothing was tried).
    DynamicProgram {
        /// The time the search first took before it declined.
        searched: Duration,
    },
    /// The sequential search proved the optimum and a depth-first search found its items
    /// ([`Method::Auto`]).
    SearchFirst,
    /// A branch-and-bound search ([`Method::Sequential`], [`Method::BranchAndBound`], or
    /// [`Method::Auto`] where the program's table does not fit).
    Search,
}

/// An answer: the optimum (or the best solution a time limit left), the items where the
/// method finds them, and what the search did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solution {
    /// The optimum and the search's counters (a dynamic program's: the optimum, proved).
    pub stats: BnbStats,
    /// The items of a solution worth the optimum (indices into the instance's items,
    /// ascending), where the method finds them (the program, the search first).
    pub taken: Option<Vec<usize>>,
    /// Who answered.
    pub by: AnsweredBy,
    /// K of the search's heap (`None`: the dynamic program).
    pub batch: Option<usize>,
}

/// Instances answered by any method, on the workers the front was given.
#[derive(Clone, Debug, Default)]
pub struct Knapsack<'a> {
    options: SolveOptions,
    pool: Option<&'a LatencyPool>,
    device: Option<&'a Runtime>,
}

impl<'a> Knapsack<'a> {
    /// A front with `options` and no workers yet (the methods on one core need none).
    pub fn new(options: SolveOptions) -> Self {
        Knapsack {
            options,
            pool: None,
            device: None,
        }
    }

    /// The latency threads the CpuOnly search runs on and the device searches expand on.
    pub fn with_latency_threads(mut self, pool: &'a LatencyPool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The device of the GpuOnly and Cooperative searches' heaps.
    pub fn with_device(mut self, rt: &'a Runtime) -> Self {
        self.device = Some(rt);
        self
    }

    /// The options.
    pub fn options(&self) -> &SolveOptions {
        &self.options
    }

    /// K of a search's heap by `method`.
    pub fn batch(&self, method: Method) -> usize {
        self.options.batch.unwrap_or(match method {
            Method::BranchAndBound(Mode::GpuOnly) => GPU_BATCH,
            _ => BATCH,
        })
    }

    /// Host bytes the dynamic program may use.
    pub fn dp_budget(&self) -> u64 {
        self.options
            .dp_memory
            .unwrap_or_else(|| host_memory::available().unwrap_or(4 << 30) / 4)
    }

    /// Whether [`Method::Auto`] answers `inst` by the dynamic program (its table fits).
    pub fn dp_fits(&self, inst: &Instance) -> bool {
        dp_bytes(inst).is_some_and(|b| b <= self.dp_budget())
    }

    /// Builds the device programs a search by `method` uses, so that the first search does
    /// not pay for compiling them (nothing for the methods that use no device).
    pub fn prepare(&self, method: Method) -> Result<()> {
        match method {
            Method::BranchAndBound(mode @ (Mode::GpuOnly | Mode::Cooperative)) => {
                prepare_offloaded(self.device(mode)?, &self.offload(mode)?)
            }
            _ => Ok(()),
        }
    }

    /// Answers `inst` by `method` (module documentation).
    pub fn solve(&self, inst: &Instance, method: Method) -> Result<Solution> {
        if let Some(k) = self.options.batch.filter(|k| !k.is_power_of_two()) {
            return Err(Error::out_of_range(
                "K (keys per heap node)",
                k,
                "a power of two",
            ));
        }
        let batch = self.batch(method);
        let max_nodes = self
            .options
            .max_nodes
            .unwrap_or_else(|| node_limit_for_memory(batch));
        let o = &self.options;
        let stats = match method {
            Method::Auto if self.dp_fits(inst) => return self.search_first_or_dp(inst),
            Method::Auto | Method::Sequential => {
                solve_sequential_within(inst, batch, max_nodes, o.time_limit)?
            }
            Method::DynamicProgram => return self.dynamic_program(inst, Duration::ZERO),
            Method::BranchAndBound(Mode::CpuOnly) => solve_concurrent(
                inst,
                self.pool(Mode::CpuOnly)?,
                batch,
                o.direction,
                NodeBudget::up_to(max_nodes),
                o.timeout,
                o.time_limit,
            )?,
            Method::BranchAndBound(mode) => solve_offloaded(
                inst,
                self.pool(mode)?,
                self.device(mode)?,
                &self.offload(mode)?,
            )?,
        };
        Ok(Solution {
            stats,
            taken: None,
            by: AnsweredBy::Search,
            batch: Some(batch),
        })
    }

    /// [`Method::Auto`] where the program's table fits: the search first, else the program.
    fn search_first_or_dp(&self, inst: &Instance) -> Result<Solution> {
        let max_nodes = self
            .options
            .max_nodes
            .unwrap_or_else(|| node_limit_for_memory(SEARCH_FIRST_BATCH));
        match search_first(inst, max_nodes)? {
            SearchFirst::Answered { stats, taken } => Ok(Solution {
                stats: *stats,
                taken: Some(taken),
                by: AnsweredBy::SearchFirst,
                batch: Some(SEARCH_FIRST_BATCH),
            }),
            SearchFirst::Declined(searched) => self.dynamic_program(inst, searched),
        }
    }

    /// The dynamic program's answer, after a search first that took `searched`.
    fn dynamic_program(&self, inst: &Instance, searched: Duration) -> Result<Solution> {
        let s = solve_dp(inst, self.dp_budget())?;
        Ok(Solution {
            stats: BnbStats {
                optimum: s.optimum,
                proved: true,
                ..Default::default()
            },
            taken: Some(s.taken),
            by: AnsweredBy::DynamicProgram { searched },
            batch: None,
        })
    }

    /// The offloaded search's configuration in `mode` (GpuOnly or Cooperative).
    fn offload(&self, mode: Mode) -> Result<OffloadConfig> {
        let o = &self.options;
        let batch = self.batch(Method::BranchAndBound(mode));
        let device = DeviceHeapConfig {
            bulk: o.bulk,
            ..DeviceHeapConfig::new(batch)
        };
        let (placement, expansion) = match mode {
            Mode::GpuOnly => (HeapPlacement::Device(device), o.expansion),
            // The cooperative heap's top lives on the host: its rounds expand there.
            Mode::Cooperative => (
                HeapPlacement::Cooperative(CooperativeConfig::on(device).with_refill(o.refill)),
                Expansion::Threads,
            ),
            Mode::CpuOnly => {
                return Err(Error::InvalidArgument(
                    "CpuOnly keeps its heap on the host: nothing to offload".into(),
                ))
            }
        };
        let max_nodes = o.max_nodes.unwrap_or_else(|| node_limit_for_memory(batch));
        Ok(OffloadConfig {
            placement,
            batch,
            pop: o.pop,
            max_live: max_nodes.saturating_mul(batch),
            gc_threshold: o.gc_threshold.unwrap_or(usize::MAX),
            time_limit: o.time_limit,
            dive: o.dive,
            expansion,
            resident_groups: o.resident_groups,
        })
    }

    /// The latency threads, or an error naming what `mode` lacks.
    fn pool(&self, mode: Mode) -> Result<&'a LatencyPool> {
        self.pool.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a {} search runs on the latency threads: build the front with_latency_threads",
                mode.name()
            ))
        })
    }

    /// The device, or an error naming what `mode` lacks.
    fn device(&self, mode: Mode) -> Result<&'a Runtime> {
        self.device.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a {} search keeps its heap on a device: build the front with_device",
                mode.name()
            ))
        })
    }
}
