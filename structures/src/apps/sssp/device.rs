//! SSSP on the throughput device (GpuOnly): the graph, distances and frontier stay in SVM;
//! each iteration is one launch of `sssp_expand` and one of `sssp_pairs`
//! (`kernels/sssp.cl`), the host reading only a few counters between them. With the heap
//! ([`Order::Heap`]) the frontier goes through the host into a [`DeviceGeneralizedHeap`](crate::gheap::DeviceGeneralizedHeap) of
//! `(distance, vertex)` pairs and the nearest vertices come back as the next frontier; with
//! [`HeapPlacement::Cooperative`] it goes into a
//! [`CooperativeHeap`](crate::gheap::CooperativeHeap) instead, whose host top serves most
//! pops without a launch.

use asym_runtime::{Error, Kernel, Result, Runtime, SvmBuffer};

use super::{overflow_error, search, Order, Pair, Relaxer, SsspRun, DISTANCE_LIMIT};
use crate::apps::graph::{Graph, UNREACHABLE};
use crate::gheap::HeapPlacement;

const NEXT_LEN: usize = 0;
const VISITED: usize = 1;
const STALE: usize = 2;
const COUNTERS: usize = 4;
/// Work-items per group of the SSSP kernels.
const WG: usize = 256;
/// Most work-groups of one launch (the kernels stride over larger frontiers).
const MAX_GROUPS: usize = 4096;

/// A graph uploaded to the device, ready for searches from any source.
pub struct DeviceSssp<'g> {
    rt: Runtime,
    graph: &'g Graph,
    offsets: SvmBuffer<u32>,
    targets: SvmBuffer<u32>,
    weights: SvmBuffer<u32>,
    dist: SvmBuffer<u32>,
    stamp: SvmBuffer<u32>,
    /// The current frontier as `distance << 32 | vertex`.
    frontier: SvmBuffer<u64>,
    next: SvmBuffer<u32>,
    counters: SvmBuffer<u32>,
    init: Kernel,
    expand: Kernel,
    pairs: Kernel,
}

impl std::fmt::Debug for DeviceSssp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSssp")
            .field("vertices", &self.graph.vertices())
            .field("edges", &self.graph.edges())
            .finish()
    }
}

impl<'g> DeviceSssp<'g> {
    /// Uploads `graph` to `rt`'s device and builds the kernels.
    pub fn new(rt: &Runtime, graph: &'g Graph) -> Result<Self> {
        rt.check_work_group(WG, "run the SSSP kernels")?;
        let (offsets, targets, weights) = graph.csr();
        let upload = |data: &[u32]| -> Result<SvmBuffer<u32>> {
            let mut b = rt.alloc::<u32>(data.len().max(1))?;
            b.copy_from_host(0, data)?;
            Ok(b)
        };
        let program = rt.program_with(&asym_kernels::SSSP, &format!("-DWG={WG}"))?;
        let n = graph.vertices().max(1);
        Ok(DeviceSssp {
            offsets: upload(offsets)?,
            targets: upload(targets)?,
            weights: upload(weights)?,
            dist: rt.alloc::<u32>(n)?,
            stamp: rt.alloc::<u32>(n)?,
            frontier: rt.alloc::<u64>(n)?,
            next: rt.alloc::<u32>(n)?,
            counters: rt.alloc::<u32>(COUNTERS)?,
            init: Kernel::from_program(rt, &program, "sssp_init")?,
            expand: Kernel::from_program(rt, &program, "sssp_expand")?,
            pairs: Kernel::from_program(rt, &program, "sssp_pairs")?,
            rt: rt.clone(),
            graph,
        })
    }

    /// Shortest distances from `source` (0-based), the frontier expanded whole
    /// ([`Order::Frontier`]) or ordered by the heap `heap` ([`Order::Heap`]; its batch is
    /// the order's).
    pub fn shortest_paths(
        &mut self,
        source: usize,
        order: Order,
        heap: &HeapPlacement,
    ) -> Result<SsspRun> {
        self.graph.check_source(source)?;
        let n = self.graph.vertices() as u32;
        self.init
            .arg_svm(0, &self.dist)?
            .arg_svm(1, &self.stamp)?
            .arg_scalar(2, n)?
            .arg_scalar(3, source as u32)?;
        self.init
            .launch(groups(n as usize) * WG, Some(WG))?
            .wait()?;
        let mut relax = DeviceRelaxer {
            sssp: self,
            len: 0,
            iteration: 0,
        };
        match order {
            Order::Frontier => search(&mut relax, None, order, source as u32),
            Order::Heap { batch, .. } => {
                let mut heap = heap.build(&relax.sssp.rt, batch)?;
                search(&mut relax, Some(heap.as_mut()), order, source as u32)
            }
        }
    }
}

fn groups(items: usize) -> usize {
    items.div_ceil(WG).clamp(1, MAX_GROUPS)
}

struct DeviceRelaxer<'s, 'g> {
    sssp: &'s mut DeviceSssp<'g>,
    /// Entries in the device frontier.
    len: usize,
    iteration: u32,
}

impl Relaxer for DeviceRelaxer<'_, '_> {
    fn frontier_len(&self) -> usize {
        self.len
    }

    fn take_frontier(&mut self) -> Result<Vec<Pair>> {
        let raw = self.sssp.frontier.read_range(0, self.len)?;
        self.len = 0;
        Ok(raw
            .into_iter()
            .map(|e| ((e >> 32) as u32, e as u32))
            .collect())
    }

    fn set_frontier(&mut self, pairs: &[Pair]) -> Result<()> {
        // Never more than the vertices: a frontier queues each vertex once, and a pop returns
        // at most min(pop, heap) entries, where the heap exceeds the vertex count only when
        // pops are smaller than it (tests: `pops_larger_than_the_graph`).
        if pairs.len() > self.sssp.frontier.len() {
            return Err(Error::CapacityExceeded {
                what: "the device SSSP frontier".into(),
                capacity: self.sssp.frontier.len(),
            });
        }
        let raw: Vec<u64> = pairs
            .iter()
            .map(|&(d, v)| ((d as u64) << 32) | v as u64)
            .collect();
        self.sssp.frontier.copy_from_host(0, &raw)?;
        self.len = pairs.len();
        Ok(())
    }

    fn expand(&mut self) -> Result<(u64, u64)> {
        self.iteration = self
            .iteration
            .checked_add(1)
            .ok_or_else(|| Error::InvalidArgument("the search ran 2^32 - 1 iterations".into()))?;
        let s = &mut *self.sssp;
        s.counters.write(&[0; COUNTERS])?;
        let flen = self.len as u32;
        s.expand
            .arg_svm(0, &s.offsets)?
            .arg_svm(1, &s.targets)?
            .arg_svm(2, &s.weights)?
            .arg_svm(3, &s.dist)?
            .arg_svm(4, &s.stamp)?
            .arg_svm(5, &s.frontier)?
            .arg_scalar(6, flen)?
            .arg_svm(7, &s.next)?
            .arg_svm(8, &s.counters)?
            .arg_scalar(9, self.iteration)?;
        s.expand.launch(groups(self.len) * WG, Some(WG))?.wait()?;
        let c = s.counters.read()?;
        let next = c[NEXT_LEN] as usize;
        if next > s.next.len() {
            return Err(Error::Lost(format!(
                "the SSSP kernel queued {next} vertices in a graph of {}",
                s.next.len()
            )));
        }
        if next > 0 {
            s.pairs
                .arg_svm(0, &s.next)?
                .arg_scalar(1, next as u32)?
                .arg_svm(2, &s.dist)?
                .arg_svm(3, &s.frontier)?;
            s.pairs.launch(groups(next) * WG, Some(WG))?.wait()?;
        }
        self.len = next;
        Ok((c[VISITED] as u64, c[STALE] as u64))
    }

    fn distances(&mut self) -> Result<Vec<u64>> {
        let dist = self.sssp.dist.read()?;
        let mut out = Vec::with_capacity(self.sssp.graph.vertices());
        for &d in &dist[..self.sssp.graph.vertices()] {
            match d {
                u32::MAX => out.push(UNREACHABLE),
                d if d as u64 >= DISTANCE_LIMIT => return Err(overflow_error(self.sssp.graph)),
                d => out.push(d as u64),
            }
        }
        Ok(out)
    }
}
