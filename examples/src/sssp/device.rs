//! SSSP on the throughput device (GpuOnly): the graph, distances and frontier stay in SVM.
//! The whole-frontier search ([`Order::Frontier`]) enqueues its iterations back to back, one
//! launch of `sssp_expand_list` each (and, on a graph with vertices of more than CHUNK edges,
//! one of `sssp_expand_chunks`, which spreads the rest of those hubs' edges over every group:
//! see `CHUNK`), and reads the counters only after a batch of them (`Batches`;
//! `kernels/sssp.cl`). The heap-ordered search and device sets expand
//! `(distance, vertex)` entries instead: one `sssp_expand` launch, the counters read, and one
//! `sssp_pairs` launch an iteration. With the heap
//! ([`Order::Heap`]) the frontier goes through the host into a [`DeviceGeneralizedHeap`](asym_structures::DeviceGeneralizedHeap) of
//! `(distance, vertex)` pairs and the nearest vertices come back as the next frontier; with
//! [`HeapPlacement::Cooperative`] it goes into a
//! [`CooperativeHeap`](asym_structures::CooperativeHeap) instead, whose host top serves most
//! pops without a launch.

use std::time::Instant;

use asym_kernels::{cl_defines, ClConst};
use asym_runtime::backoff::Deadline;
use asym_runtime::{DeviceKind, Error, Kernel, Result, Runtime, Side, SvmBuffer};

use super::near_far::NearFar;
use super::{
    distances_into, distances_par, next_iteration, search, AnswerMemory, Order, Pair, Relaxer,
    SsspRun, SsspStats,
};
use crate::graph::Graph;
use asym_structures::HeapPlacement;

// The frontier kernels' counters (`SSSP_*` in kernels/sssp.cl, from the table below).
const NEXT_LEN: usize = 0;
const VISITED: usize = 1;
const STALE: usize = 2;
/// Chunks of hub edges queued for `sssp_expand_chunks`.
const CHUNKS: usize = 3;
/// Iterations of `sssp_expand_list` that had vertices.
const ROUNDS: usize = 4;
/// The ring of `sssp_expand_list`'s counter sets: iteration i's is [`ring_set`]`(i)`.
const RING: usize = 5;
/// Sets in the ring: an iteration reads its own, appends to the next one's and clears the
/// one after that (the previous iteration's).
const RING_SETS: usize = 3;
/// Words of a set: the iteration's list length, then its hub chunks.
const SET_WORDS: usize = 2;
const COUNTERS: usize = RING + RING_SETS * SET_WORDS;
/// Iterations a device search enqueues before it first reads its counters; each later batch
/// is twice the one before, up to `MAX_BATCH` ([`Batches`]).
const FIRST_BATCH: u32 = 4;
const MAX_BATCH: u32 = 64;
/// Groups per compute unit of an `sssp_expand_list` launch, whose list length the host does
/// not know when it enqueues it (the kernel strides over the list): on a GPU four times the
/// groups of WG that fill an NVIDIA SM (more groups than fit balance the load: the
/// iteration's ragged tail is shorter), on a CPU device a few per core (a choice, not
/// measured).
const GROUPS_PER_GPU_UNIT: usize = 32;
const GROUPS_PER_CPU_UNIT: usize = 8;
/// Edges of a hub that one group expands in `sssp_expand`; the rest go to `sssp_expand_chunks`
/// in pieces of this many, spread over every group (`kernels/sssp.cl`; the sweep:
/// docs/decisions.md).
const CHUNK: usize = 1024;
/// Groups of an `sssp_expand_chunks` launch (it strides over the chunks the counters name).
const CHUNK_GROUPS: usize = 1024;
/// Work-items per group of the SSSP kernels.
pub(super) const WG: usize = 256;
/// Most work-groups of one launch (the kernels stride over larger frontiers).
const MAX_GROUPS: usize = 4096;

/// A graph uploaded to the device, ready for searches from any source.
pub struct DeviceSssp<'g> {
    pub(super) rt: Runtime,
    pub(super) graph: &'g Graph,
    pub(super) offsets: SvmBuffer<u32>,
    pub(super) targets: SvmBuffer<u32>,
    pub(super) weights: SvmBuffer<u32>,
    pub(super) dist: SvmBuffer<u32>,
    pub(super) stamp: SvmBuffer<u32>,
    /// The current frontier as `distance << 32 | vertex`.
    frontier: SvmBuffer<u64>,
    next: SvmBuffer<u32>,
    /// The whole-frontier search's other vertex list (`next` is the first): odd iterations
    /// expand this one into `next`, even ones `next` into this.
    list: SvmBuffer<u32>,
    counters: SvmBuffer<u32>,
    /// Hubs' edges past their first CHUNK, as (vertex, distance, first edge, count); sized
    /// for every vertex queued once per iteration (edges / CHUNK), one unused entry when no
    /// vertex has more than CHUNK edges.
    chunks: SvmBuffer<u32>,
    chunk_cap: u32,
    init: Kernel,
    expand: Kernel,
    expand_list: Kernel,
    expand_chunks: Kernel,
    pairs: Kernel,
    /// `sssp_apply` and `sssp_merge` (searches over a device set).
    apply: Kernel,
    merge: Kernel,
    /// Distances other members lowered, for `sssp_merge` (grown on demand).
    incoming: Option<SvmBuffer<u64>>,
    /// The near-far search's buffers and kernels (made on its first use).
    pub(super) near_far: Option<NearFar>,
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
        let program = program(rt)?;
        let n = graph.vertices().max(1);
        let hubs = offsets.windows(2).any(|w| (w[1] - w[0]) as usize > CHUNK);
        let chunk_cap = if hubs { graph.edges() / CHUNK + 1 } else { 0 };
        Ok(DeviceSssp {
            offsets: upload(offsets)?,
            targets: upload(targets)?,
            weights: upload(weights)?,
            dist: rt.alloc::<u32>(n)?,
            stamp: rt.alloc::<u32>(n)?,
            frontier: rt.alloc::<u64>(n)?,
            next: rt.alloc::<u32>(n)?,
            list: rt.alloc::<u32>(n)?,
            counters: rt.alloc::<u32>(COUNTERS)?,
            chunks: rt.alloc::<u32>(4 * chunk_cap.max(1))?,
            chunk_cap: u32::try_from(chunk_cap).map_err(|_| {
                Error::InvalidArgument(format!("{} edges: too many for the device", graph.edges()))
            })?,
            init: Kernel::from_program(rt, &program, "sssp_init")?,
            expand: Kernel::from_program(rt, &program, "sssp_expand")?,
            expand_list: Kernel::from_program(rt, &program, "sssp_expand_list")?,
            expand_chunks: Kernel::from_program(rt, &program, "sssp_expand_chunks")?,
            pairs: Kernel::from_program(rt, &program, "sssp_pairs")?,
            apply: Kernel::from_program(rt, &program, "sssp_apply")?,
            merge: Kernel::from_program(rt, &program, "sssp_merge")?,
            incoming: None,
            near_far: None,
            rt: rt.clone(),
            graph,
        })
    }

    /// Shortest distances from `source` (0-based), the frontier expanded whole
    /// ([`Order::Frontier`]), ordered by the heap `heap` ([`Order::Heap`]; its batch is
    /// the order's), or by delta-stepping ([`Order::Delta`]:
    /// [`DeviceSssp::delta_stepping`]).
    pub fn shortest_paths(
        &mut self,
        source: usize,
        order: Order,
        heap: &HeapPlacement,
    ) -> Result<SsspRun> {
        self.graph.check_source(source)?;
        match order {
            Order::Delta { width } => self.delta_stepping(source, width),
            Order::Frontier => self.frontier_search(source),
            Order::Heap { batch, .. } => {
                self.reset(source)?;
                let answer = AnswerMemory::start(self.graph.vertices());
                let mut heap = heap.build(&self.rt, batch)?;
                let mut relax = DeviceRelaxer {
                    answer: Some(answer),
                    sssp: self,
                    len: 0,
                    iteration: 0,
                };
                search(&mut relax, Some(heap.as_mut()), order, source as u32)
            }
        }
    }

    /// The whole-frontier search: batches of iterations enqueued back to back
    /// (`sssp_expand_list`), the counters read after each batch until an iteration leaves
    /// nothing queued. `transfer_time` is the reading out of the distances.
    fn frontier_search(&mut self, source: usize) -> Result<SsspRun> {
        self.reset(source)?;
        let n = self.graph.vertices();
        self.list.copy_from_host(0, &[source as u32])?;
        let mut start = [0u32; COUNTERS];
        start[ring_set(1)] = 1;
        self.counters.write(&start)?;
        let answer = AnswerMemory::start(n);
        let started = Instant::now();
        let mut batches = Batches::new(&self.rt);
        let mut iteration = 0u32;
        let counters = loop {
            let batch = batches.next_len();
            let mut launches = Vec::with_capacity(2 * batch as usize);
            for k in 0..batch {
                iteration = next_iteration(iteration)?;
                self.list_launch(iteration, k + 1 == batch, &mut launches)?;
            }
            for launch in launches {
                launch.wait()?;
            }
            let c = self.counters.read()?;
            let queued = c[ring_set(u64::from(iteration) + 1)] as usize;
            if queued > n {
                return Err(Error::corrupted(
                    "the SSSP frontier",
                    format!("the SSSP kernels queued {queued} vertices in a graph of {n}"),
                ));
            }
            if queued == 0 {
                break c;
            }
            batches.check("the SSSP frontier to empty", || {
                format!("{} iterations, {queued} vertices queued", c[ROUNDS])
            })?;
        };
        let search_time = started.elapsed();
        let distances = self.read_distances(Some(answer))?;
        let compute_time = started.elapsed();
        let stats = SsspStats {
            iterations: u64::from(counters[ROUNDS]),
            visited: u64::from(counters[VISITED]),
            stale: u64::from(counters[STALE]),
            compute_time,
            transfer_time: compute_time - search_time,
            ..SsspStats::default()
        };
        Ok(SsspRun { distances, stats })
    }

    /// Enqueues iteration `iteration` of the whole-frontier search (submitted to the device
    /// only where `flush`), its launches pushed onto `launches`.
    fn list_launch(
        &mut self,
        iteration: u32,
        flush: bool,
        launches: &mut Vec<asym_runtime::Launch>,
    ) -> Result<()> {
        let (list, next) = if iteration % 2 == 1 {
            (&self.list, &self.next)
        } else {
            (&self.next, &self.list)
        };
        let i = u64::from(iteration);
        let (this, after) = (ring_set(i), ring_set(i + 1));
        self.expand_list
            .arg_svm("offsets", &self.offsets)?
            .arg_svm("targets", &self.targets)?
            .arg_svm("weights", &self.weights)?
            .arg_svm("dist", &self.dist)?
            .arg_svm("stamp", &self.stamp)?
            .arg_svm("list", list)?
            .arg_svm("next", next)?
            .arg_svm("counters", &self.counters)?
            .arg_scalar("iteration", iteration)?
            .arg_svm("chunks", &self.chunks)?
            .arg_scalar("chunk_cap", self.chunk_cap)?
            .arg_scalar("in_at", this as u32)?
            .arg_scalar("out_at", after as u32)?
            .arg_scalar("clear_at", ring_set(i + 2) as u32)?;
        let global = fill_groups(&self.rt) * WG;
        let hubs = self.chunk_cap > 0;
        launches.push(if flush && !hubs {
            self.expand_list.launch(global, Some(WG))?
        } else {
            self.expand_list.launch_unflushed(global, Some(WG))?
        });
        if hubs {
            let chunks =
                self.chunks_launch(iteration % 2 == 0, iteration, this + 1, after, flush)?;
            launches.push(chunks);
        }
        Ok(())
    }

    /// An `sssp_expand_chunks` launch over the hub chunks counted in `counters[count_at]`,
    /// appending to `list` (`into_list`) or `next` under `counters[len_at]`.
    fn chunks_launch(
        &mut self,
        into_list: bool,
        iteration: u32,
        count_at: usize,
        len_at: usize,
        flush: bool,
    ) -> Result<asym_runtime::Launch> {
        let next = if into_list { &self.list } else { &self.next };
        self.expand_chunks
            .arg_svm("targets", &self.targets)?
            .arg_svm("weights", &self.weights)?
            .arg_svm("dist", &self.dist)?
            .arg_svm("stamp", &self.stamp)?
            .arg_svm("next", next)?
            .arg_svm("counters", &self.counters)?
            .arg_scalar("iteration", iteration)?
            .arg_svm("chunks", &self.chunks)?
            .arg_scalar("chunk_cap", self.chunk_cap)?
            .arg_scalar("count_at", count_at as u32)?
            .arg_scalar("len_at", len_at as u32)?;
        if flush {
            self.expand_chunks.launch(CHUNK_GROUPS * WG, Some(WG))
        } else {
            self.expand_chunks
                .launch_unflushed(CHUNK_GROUPS * WG, Some(WG))
        }
    }
}

impl DeviceSssp<'_> {
    /// The device the graph is on.
    pub(super) fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// Every distance unknown but the source's (0), no vertex queued.
    pub(super) fn reset(&mut self, source: usize) -> Result<()> {
        let n = self.graph.vertices() as u32;
        self.init
            .arg_svm("dist", &self.dist)?
            .arg_svm("stamp", &self.stamp)?
            .arg_scalar("n", n)?
            .arg_scalar("source", source as u32)?;
        self.init
            .launch(groups(n as usize) * WG, Some(WG))?
            .wait()?;
        Ok(())
    }

    /// Writes `pairs` (at most one per vertex) into the frontier buffer.
    pub(super) fn write_frontier(&mut self, pairs: &[Pair]) -> Result<()> {
        // Never more than the vertices: a frontier queues each vertex once, and a pop returns
        // at most min(pop, heap) entries, where the heap exceeds the vertex count only when
        // pops are smaller than it (tests: `pops_larger_than_the_graph`).
        if pairs.len() > self.frontier.len() {
            return Err(Error::CapacityExceeded {
                what: "the device SSSP frontier".into(),
                capacity: self.frontier.len(),
            });
        }
        let raw: Vec<u64> = pairs
            .iter()
            .map(|&(d, v)| ((d as u64) << 32) | v as u64)
            .collect();
        self.frontier.copy_from_host(0, &raw)
    }

    /// Reads entries `0..len` of the frontier buffer.
    pub(super) fn read_frontier(&mut self, len: usize) -> Result<Vec<Pair>> {
        let raw = self.frontier.read_range(0, len)?;
        Ok(raw
            .into_iter()
            .map(|e| ((e >> 32) as u32, e as u32))
            .collect())
    }

    /// Replaces the distances with `dist` (one per vertex).
    pub(super) fn write_distances(&mut self, dist: &[u32]) -> Result<()> {
        self.dist.write_range(0, dist)
    }

    /// Lowers the distances to the first `len` entries of the frontier buffer where those are
    /// smaller (`sssp_apply`: what other members of a set found).
    pub(super) fn apply_frontier(&mut self, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.apply
            .arg_svm("updates", &self.frontier)?
            .arg_scalar("len", len as u32)?
            .arg_svm("dist", &self.dist)?;
        self.apply.launch(groups(len) * WG, Some(WG))?.wait()?;
        Ok(())
    }

    /// Expands frontier entries `first..end` with stamp `iteration`; the vertices whose
    /// distance dropped replace the frontier buffer's first entries as `(distance, vertex)`.
    /// Returns (vertices queued, visited, stale).
    pub(super) fn expand_range(
        &mut self,
        first: usize,
        end: usize,
        iteration: u32,
    ) -> Result<(usize, u64, u64)> {
        self.begin_iteration()?;
        self.expand_launch(first, end, iteration)?;
        self.finish_iteration()
    }

    /// Zeroes the counters an iteration's launches add to.
    pub(super) fn begin_iteration(&mut self) -> Result<()> {
        self.counters.write(&[0; COUNTERS])
    }

    /// One `sssp_expand` launch over frontier entries `first..end` with stamp `iteration`
    /// (several launches of one iteration queue each vertex once between them).
    pub(super) fn expand_launch(&mut self, first: usize, end: usize, iteration: u32) -> Result<()> {
        if end <= first {
            return Ok(());
        }
        self.expand
            .arg_svm("offsets", &self.offsets)?
            .arg_svm("targets", &self.targets)?
            .arg_svm("weights", &self.weights)?
            .arg_svm("dist", &self.dist)?
            .arg_svm("stamp", &self.stamp)?
            .arg_svm("frontier", &self.frontier)?
            .arg_scalar("first", first as u32)?
            .arg_scalar("flen", end as u32)?
            .arg_svm("next", &self.next)?
            .arg_svm("counters", &self.counters)?
            .arg_scalar("iteration", iteration)?
            .arg_svm("chunks", &self.chunks)?
            .arg_scalar("chunk_cap", self.chunk_cap)?;
        let expanded = self.expand.launch(groups(end - first) * WG, Some(WG))?;
        if self.chunk_cap > 0 {
            self.chunks_launch(false, iteration, CHUNKS, NEXT_LEN, true)?
                .wait()?;
        }
        expanded.wait()
    }

    /// Merges distances other devices lowered (`sssp_merge`, stamp `iteration`): a vertex
    /// they lowered below this device's distance is queued as if this device had lowered it.
    pub(super) fn merge_launch(&mut self, pairs: &[Pair], iteration: u32) -> Result<()> {
        if pairs.is_empty() {
            return Ok(());
        }
        if self.incoming.as_ref().is_none_or(|b| b.len() < pairs.len()) {
            self.incoming = None;
            self.incoming = Some(self.rt.alloc::<u64>(pairs.len().next_power_of_two())?);
        }
        let incoming = self.incoming.as_mut().expect("allocated above");
        let raw: Vec<u64> = pairs
            .iter()
            .map(|&(d, v)| ((d as u64) << 32) | v as u64)
            .collect();
        incoming.copy_from_host(0, &raw)?;
        self.merge
            .arg_svm("incoming", incoming)?
            .arg_scalar("len", pairs.len() as u32)?
            .arg_svm("dist", &self.dist)?
            .arg_svm("stamp", &self.stamp)?
            .arg_svm("next", &self.next)?
            .arg_svm("counters", &self.counters)?
            .arg_scalar("iteration", iteration)?;
        self.merge
            .launch(groups(pairs.len()) * WG, Some(WG))?
            .wait()?;
        Ok(())
    }

    /// Ends an iteration: the queued vertices become the frontier as `(distance, vertex)`.
    /// Returns (vertices queued, visited, stale).
    pub(super) fn finish_iteration(&mut self) -> Result<(usize, u64, u64)> {
        let c = self.counters.read()?;
        let next = c[NEXT_LEN] as usize;
        if next > self.next.len() {
            return Err(Error::corrupted(
                "the SSSP frontier",
                format!(
                    "the SSSP kernels queued {next} vertices in a graph of {}",
                    self.next.len()
                ),
            ));
        }
        if next > 0 {
            self.pairs
                .arg_svm("next", &self.next)?
                .arg_scalar("len", next as u32)?
                .arg_svm("dist", &self.dist)?
                .arg_svm("frontier", &self.frontier)?;
            self.pairs.launch(groups(next) * WG, Some(WG))?.wait()?;
        }
        Ok((next, c[VISITED] as u64, c[STALE] as u64))
    }

    /// The raw distance words (`u32::MAX` unknown), one per vertex.
    pub(super) fn read_raw_distances(&mut self) -> Result<Vec<u32>> {
        self.dist.read_range(0, self.graph.vertices())
    }

    /// The distances as [`Graph::dijkstra`] gives them, converted straight from the mapped
    /// buffer (on NVIDIA a map moves the words faster than a copy into host memory, and the
    /// conversion runs on every core), into `answer`'s memory where the
    /// caller started preparing it beside the search, else into fresh memory.
    pub(super) fn read_distances(&mut self, answer: Option<AnswerMemory>) -> Result<Vec<u64>> {
        let n = self.graph.vertices();
        let map = self.dist.map_read()?;
        let words = &map[..n];
        let out = match answer {
            Some(answer) => {
                let mut out = answer.take();
                debug_assert_eq!(out.len(), n);
                distances_into(self.graph, &mut out, words).map(|()| out)
            }
            None => distances_par(self.graph, n, |v| words[v]),
        };
        map.unmap()?;
        out
    }
}

/// What `kernels/sssp.cl` takes from the host for its frontier kernels (the near-far
/// search's control words are `near_far::KERNEL_CONSTANTS`).
const KERNEL_CONSTANTS: &[ClConst] = &[
    ClConst::uint("SSSP_LIMIT", super::DISTANCE_LIMIT),
    ClConst::int("SSSP_NEXT_LEN", NEXT_LEN as u64),
    ClConst::int("SSSP_VISITED", VISITED as u64),
    ClConst::int("SSSP_STALE", STALE as u64),
    ClConst::int("SSSP_CHUNKS", CHUNKS as u64),
    ClConst::int("SSSP_ROUNDS", ROUNDS as u64),
    ClConst::uint("SSSP_CHUNK", CHUNK as u64),
];

/// The SSSP kernels' program (built once per runtime: the runtime caches it).
pub(super) fn program(rt: &Runtime) -> Result<asym_runtime::Program> {
    rt.program_with(
        &asym_kernels::SSSP,
        &format!(
            "-DWG={WG} {} {}",
            cl_defines(KERNEL_CONSTANTS),
            cl_defines(&super::near_far::kernel_constants(WG))
        ),
    )
}

pub(super) fn groups(items: usize) -> usize {
    items.div_ceil(WG).clamp(1, MAX_GROUPS)
}

/// Groups of a launch whose length is decided on the device: enough to fill it.
fn fill_groups(rt: &Runtime) -> usize {
    let profile = rt.profile();
    let per_unit = match profile.kind {
        DeviceKind::Gpu => GROUPS_PER_GPU_UNIT,
        _ => GROUPS_PER_CPU_UNIT,
    };
    (profile.compute_units as usize * per_unit).clamp(1, MAX_GROUPS)
}

/// The batches of iterations a device search enqueues back to back between two reads of
/// its counters: `FIRST_BATCH` iterations, then each batch twice the one before, up to
/// `MAX_BATCH`. A batch may run past the search's end: those iterations find nothing to do
/// (an empty launch each, where a read of the counters cost 20–40 µs in a trace on the GPU
/// machine). Every launch ends on its own, but only the kernels' lists say when the search
/// ends: the search as a whole is bounded by the runtime's wait bound.
pub(super) struct Batches {
    len: u32,
    deadline: Deadline,
}

impl Batches {
    pub(super) fn new(rt: &Runtime) -> Self {
        Batches {
            len: FIRST_BATCH,
            deadline: Deadline::after(rt.timeout()),
        }
    }

    /// The next batch's length.
    pub(super) fn next_len(&mut self) -> u32 {
        let len = self.len;
        self.len = (len * 2).min(MAX_BATCH);
        len
    }

    /// [`Error::Stalled`] once the search has outlasted the runtime's wait bound, waiting
    /// for `what` (`detail`: how far it came).
    pub(super) fn check(&self, what: &str, detail: impl FnOnce() -> String) -> Result<()> {
        if !self.deadline.expired() {
            return Ok(());
        }
        Err(Error::Stalled {
            side: Side::Device,
            waiting_for: what.into(),
            waited_ms: self.deadline.waited_ms(),
            detail: detail(),
        })
    }
}

/// The first word of `sssp_expand_list`'s counter set for iteration `iteration`.
fn ring_set(iteration: u64) -> usize {
    RING + SET_WORDS * (iteration % RING_SETS as u64) as usize
}

struct DeviceRelaxer<'s, 'g> {
    sssp: &'s mut DeviceSssp<'g>,
    /// The answer's memory, prepared while the search runs.
    answer: Option<AnswerMemory>,
    /// Entries in the device frontier.
    len: usize,
    iteration: u32,
}

impl Relaxer for DeviceRelaxer<'_, '_> {
    fn frontier_len(&self) -> usize {
        self.len
    }

    fn take_frontier(&mut self) -> Result<Vec<Pair>> {
        let pairs = self.sssp.read_frontier(self.len)?;
        self.len = 0;
        Ok(pairs)
    }

    fn set_frontier(&mut self, pairs: &[Pair]) -> Result<()> {
        self.sssp.write_frontier(pairs)?;
        self.len = pairs.len();
        Ok(())
    }

    fn expand(&mut self) -> Result<(u64, u64)> {
        self.iteration = next_iteration(self.iteration)?;
        let (next, visited, stale) = self.sssp.expand_range(0, self.len, self.iteration)?;
        self.len = next;
        Ok((visited, stale))
    }

    fn distances(&mut self) -> Result<Vec<u64>> {
        self.sssp.read_distances(self.answer.take())
    }
}
