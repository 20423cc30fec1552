//! The searches' one front ([`Sssp`]): a graph, then for each search a source, a [`Mode`]
//! and an [`Order`]. The front picks the engine and keeps what each engine built (the graph
//! on the devices, the near-far lists, the cooperative split's measurements) for the next
//! search.
//!
//! | mode | [`Order::Frontier`], [`Order::Heap`] | [`Order::Delta`] |
//! |---|---|---|
//! | CpuOnly | the latency threads ([`cpu`]; the heap: the concurrent generalized heap) | the latency threads ([`delta`]) |
//! | GpuOnly | one device ([`device`]; the heap: the device heap); a set of several, spread over it ([`spread`]) | the device ([`near_far`]; a set: its first member) |
//! | Cooperative | one device: the heap order with the Cooperative heap (a host top in front of the device heap), the frontier order spread over the device and the latency threads; a set of several: spread over the set and the latency threads | the latency threads and the device ([`coop_delta`]; a set: its first member) |
//!
//! [`cpu`]: super::cpu
//! [`delta`]: super::delta
//! [`device`]: super::device
//! [`spread`]: super::spread
//! [`near_far`]: super::near_far
//! [`coop_delta`]: super::coop_delta

use asym_runtime::{DeviceSet, Error, LatencyPool, Mode, Named, Result};
use asym_structures::{CooperativeConfig, DeviceHeapConfig, HeapPlacement};

use super::coop_delta::{CoopSplit, CoopStats};
use super::device::DeviceSssp;
use super::spread::{SetPlan, SetReport, SpreadSssp};
use super::{cpu, Order, SsspRun};
use crate::graph::Graph;

/// What the engines take besides the mode and the order.
#[derive(Clone, Debug)]
pub struct SsspOptions {
    /// The device heap of the heap order on a device, alone or under the Cooperative heap
    /// (its batch is replaced by the order's).
    pub device_heap: DeviceHeapConfig,
    /// The Cooperative heap: keys one refill brings from the device heap to the host top.
    pub refill: usize,
    /// Cooperative delta-stepping: where rounds move between the sides (an adaptive split
    /// learns over the searches, per front).
    pub coop_split: CoopSplit,
    /// Device delta-stepping: hops a work-group goes on with its own near vertices before an
    /// iteration ends (`None`: 1 on GPUs, 0 elsewhere).
    pub local_rounds: Option<u32>,
    /// Device delta-stepping on GPUs: work-groups of the one-launch path (`None`: one per
    /// compute unit).
    pub resident_groups: Option<usize>,
    /// Device delta-stepping on GPUs: buckets without iterations inside them
    /// ([`DeviceSssp::set_async_buckets`]).
    pub async_buckets: bool,
}

impl Default for SsspOptions {
    fn default() -> Self {
        SsspOptions {
            device_heap: DeviceHeapConfig::new(256),
            refill: 65_536,
            coop_split: CoopSplit::adaptive(),
            local_rounds: None,
            resident_groups: None,
            async_buckets: false,
        }
    }
}

/// A search's distances and counters, with what a set or a cooperative split adds.
#[derive(Clone, Debug)]
pub struct SsspReport {
    /// Distances and counters.
    pub run: SsspRun,
    /// A search spread over a set of workers: its plan and each worker's share.
    pub set: Option<SetReport>,
    /// Cooperative delta-stepping: the split and each side's share.
    pub coop: Option<CoopStats>,
}

impl From<SsspRun> for SsspReport {
    fn from(run: SsspRun) -> Self {
        SsspReport {
            run,
            set: None,
            coop: None,
        }
    }
}

/// A graph ready for searches from any source, in any mode and order.
pub struct Sssp<'g> {
    graph: &'g Graph,
    pool: Option<&'g LatencyPool>,
    set: Option<&'g DeviceSet>,
    options: SsspOptions,
    /// The cooperative split as it stands (learning across searches).
    split: CoopSplit,
    /// The graph on the set's first device (built at its first search).
    device: Option<DeviceSssp<'g>>,
    /// The graph on the set's members, with the latency threads (`true`) or without.
    spread: Option<(bool, SpreadSssp<'g>)>,
}

impl std::fmt::Debug for Sssp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sssp")
            .field("vertices", &self.graph.vertices())
            .field("latency_threads", &self.pool.map(LatencyPool::len))
            .field("devices", &self.set.map(DeviceSet::len))
            .finish()
    }
}

impl<'g> Sssp<'g> {
    /// A front over `graph` with no workers yet: add the latency threads, devices or both.
    pub fn new(graph: &'g Graph, options: SsspOptions) -> Self {
        Sssp {
            graph,
            pool: None,
            set: None,
            split: options.coop_split,
            options,
            device: None,
            spread: None,
        }
    }

    /// The latency threads CpuOnly and Cooperative searches run on.
    pub fn with_latency_threads(mut self, pool: &'g LatencyPool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The devices GpuOnly and Cooperative searches run on (the graph is uploaded at the
    /// first search that needs it).
    pub fn with_devices(mut self, set: &'g DeviceSet) -> Self {
        self.set = Some(set);
        self
    }

    /// Shortest distances from `source` (0-based) in `mode` and `order` (see the module
    /// documentation for the engine each runs on). A mode whose workers the front lacks is
    /// an [`Error::InvalidArgument`].
    pub fn shortest_paths(
        &mut self,
        source: usize,
        mode: Mode,
        order: Order,
    ) -> Result<SsspReport> {
        self.graph.check_source(source)?;
        let several = self.set.is_some_and(|s| s.len() > 1);
        match (mode, order) {
            (Mode::CpuOnly, _) => {
                Ok(cpu::shortest_paths(self.graph, source, self.pool()?, order)?.into())
            }
            (Mode::GpuOnly, Order::Frontier | Order::Heap { .. }) if several => {
                self.spread_search(None, source, false, order)
            }
            (Mode::GpuOnly, _) => {
                let heap = HeapPlacement::Device(self.options.device_heap.clone());
                Ok(self.device()?.shortest_paths(source, order, &heap)?.into())
            }
            (Mode::Cooperative, Order::Delta { width }) => {
                let pool = self.pool()?;
                let mut split = self.split;
                let run = self
                    .device()?
                    .cooperative_delta_stepping(pool, source, width, &mut split)?;
                self.split = split;
                Ok(SsspReport {
                    run: run.run,
                    set: None,
                    coop: Some(run.coop),
                })
            }
            (Mode::Cooperative, Order::Heap { .. }) if !several => {
                self.pool()?;
                let coop = CooperativeConfig::on(self.options.device_heap.clone())
                    .with_refill(self.options.refill);
                let heap = HeapPlacement::Cooperative(coop);
                Ok(self.device()?.shortest_paths(source, order, &heap)?.into())
            }
            (Mode::Cooperative, _) => self.spread_search(None, source, true, order),
        }
    }

    /// A search spread over the set (and the latency threads where `mode` is Cooperative)
    /// run as `plan`, bypassing what the set measured: for benchmarks that compare the plans.
    pub fn shortest_paths_as(
        &mut self,
        plan: SetPlan,
        source: usize,
        mode: Mode,
        order: Order,
    ) -> Result<SsspReport> {
        self.graph.check_source(source)?;
        match mode {
            Mode::CpuOnly => Err(Error::InvalidArgument(
                "a set plan in CpuOnly: the latency threads alone are not a set".into(),
            )),
            _ => self.spread_search(Some(plan), source, mode == Mode::Cooperative, order),
        }
    }

    /// The cooperative split as it stands (an adaptive one learns over the searches).
    pub fn coop_split(&self) -> CoopSplit {
        self.split
    }

    /// Starts the cooperative split over from the options' (an adaptive split learns again).
    pub fn restart_coop_split(&mut self) {
        self.split = self.options.coop_split;
    }

    /// The set's members that failed during a spread search and are left out since, with
    /// their errors.
    pub fn failed_devices(&self) -> Vec<(String, String)> {
        self.spread
            .as_ref()
            .map_or(Vec::new(), |(_, s)| s.failed_devices())
    }

    /// The latency threads, or an error naming what is missing.
    fn pool(&self) -> Result<&'g LatencyPool> {
        self.pool.ok_or_else(|| {
            Error::InvalidArgument(
                "this search runs on the latency threads: build the front with_latency_threads"
                    .into(),
            )
        })
    }

    /// The device set, or an error naming what is missing.
    fn set(&self, mode: Mode) -> Result<&'g DeviceSet> {
        self.set.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} searches run on a device: build the front with_devices",
                mode.name()
            ))
        })
    }

    /// The graph on the set's first device: a spread's first member where one is built,
    /// else the front's own (built now if needed).
    fn device(&mut self) -> Result<&mut DeviceSssp<'g>> {
        let set = self.set(Mode::GpuOnly);
        if let Some((_, spread)) = &mut self.spread {
            return Ok(spread.first_member());
        }
        if self.device.is_none() {
            let mut dev = DeviceSssp::new(&set?.members()[0], self.graph)?;
            configure(&mut dev, &self.options)?;
            self.device = Some(dev);
        }
        self.device
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("the graph is on no device".into()))
    }

    /// A search spread over the set, with the latency threads or without (rebuilt when that
    /// changes; the front's own device copy of the graph is dropped first).
    fn spread_search(
        &mut self,
        plan: Option<SetPlan>,
        source: usize,
        with_threads: bool,
        order: Order,
    ) -> Result<SsspReport> {
        let mode = if with_threads {
            Mode::Cooperative
        } else {
            Mode::GpuOnly
        };
        let set = self.set(mode)?;
        let pool = if with_threads {
            Some(self.pool()?)
        } else {
            None
        };
        if self.spread.as_ref().is_none_or(|(t, _)| *t != with_threads) {
            self.device = None;
            self.spread = None;
            let mut spread = SpreadSssp::new(set, self.graph)?;
            configure(spread.first_member(), &self.options)?;
            if let Some(pool) = pool {
                spread = spread.with_latency_threads(pool);
            }
            self.spread = Some((with_threads, spread));
        }
        let (_, spread) = self.spread.as_mut().expect("built above");
        let heap = HeapPlacement::Device(self.options.device_heap.clone());
        let run = match plan {
            Some(plan) => spread.shortest_paths_as(plan, source, order, &heap)?,
            None => spread.shortest_paths(source, order, &heap)?,
        };
        Ok(SsspReport {
            run: run.run,
            set: Some(run.set),
            coop: None,
        })
    }
}

/// Applies the options' device delta-stepping settings to `dev`.
fn configure(dev: &mut DeviceSssp<'_>, options: &SsspOptions) -> Result<()> {
    if let Some(rounds) = options.local_rounds {
        dev.set_local_rounds(rounds)?;
    }
    if options.resident_groups.is_some() {
        dev.set_resident_iterations(None, options.resident_groups)?;
    }
    if options.async_buckets {
        dev.set_async_buckets(true)?;
    }
    Ok(())
}
