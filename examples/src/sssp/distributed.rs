//! Delta-stepping across the ranks of an MPI job (a build with `--features mpi`): each vertex
//! belongs to one rank (a 1-D partition, as in Graph500's reference SSSP: one range of
//! vertices per rank, or blocks dealt in turn, [`VertexPartition`]), each rank expands
//! only the vertices it owns, and the relaxations of edges into another rank's vertices
//! travel in one batched `MPI_Alltoallv` per bucket phase.
//!
//! A phase is bulk-synchronous:
//! 1. every rank takes its live entries of the open bucket (the lowest bucket any rank holds)
//!    and expands them on its own engine: its latency threads ([`PartEngine::Threads`]) or
//!    its device ([`PartEngine::Device`], the frontier kernels of `kernels/sssp.cl`), both
//!    over [`Graph::rows_of`], the part of the graph its vertices own; own vertices that drop
//!    back into the open bucket are expanded in further local rounds until none does (a
//!    road-like graph's bucket is mostly one rank's: 370 phases became 17 on 200,000
//!    vertices over 3 ranks, dev machine);
//! 2. the vertices whose distance dropped come back as `(distance, vertex)`: those the rank
//!    owns go into its buckets, the others into one message per owner, and one
//!    `MPI_Alltoallv` delivers them;
//! 3. each rank lowers its own vertices to what arrived (the same atomic minimum as a local
//!    relaxation: on the device `sssp_merge`), files those that dropped, and one
//!    `MPI_Allreduce` finds the next open bucket (the same one while any rank refilled it)
//!    and whether any rank failed.
//!
//! Each rank's engine keeps a distance word for every vertex of the graph, not only its own:
//! for another rank's vertex it holds the shortest distance this rank has sent there, so a
//! relaxation that would not lower it is never sent, and within a phase each remote vertex
//! is sent at most once (the stamp that queues a vertex once per iteration). The host keeps,
//! for its own vertices, the distance each was last filed with: an entry whose distance is no
//! longer the vertex's is stale and skipped, so each vertex enters a frontier once per
//! distance it reaches.
//!
//! Failures: a rank whose engine fails keeps taking part in the phase's exchange (sending
//! nothing) and says so in the closing `Allreduce`; every rank then ends with the failed
//! rank's error ([`Cluster::agree`]). Every collective has the cluster's bound.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use asym_mpi::Cluster;
use asym_runtime::{Error, LatencyPool, Result, Runtime};
use rayon::prelude::*;

use super::cpu::expand_claimed;
use super::device::DeviceSssp;
pub use super::partition::VertexPartition;
use super::{answer_distance, atomic_words, lowered, next_iteration, overflow_error, Pair};
use crate::graph::Graph;

/// Frontiers with fewer edges than this are expanded on the calling thread: waking the
/// latency threads costs more than the edges (a road-like graph's phases are mostly small).
const INLINE_EDGES: usize = 4096;
/// Host work on fewer items than this (filtering a bucket, merging what arrived, splitting a
/// device's dropped vertices by owner) stays on the calling thread.
const PARALLEL_MIN: usize = 1 << 14;

/// What each rank expands its part on.
#[derive(Clone, Copy, Debug)]
pub enum PartEngine<'a> {
    /// The rank's pinned latency threads (small frontiers on the calling thread).
    Threads(&'a LatencyPool),
    /// The rank's device: its part of the graph, the distances and the frontiers in SVM.
    Device(&'a Runtime),
}

/// What one rank did in a search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankSsspStats {
    /// Vertices this rank owns.
    pub vertices: u64,
    /// Edges leaving this rank's vertices.
    pub edges: u64,
    /// Bucket phases (the same on every rank).
    pub phases: u64,
    /// Buckets opened (the same on every rank).
    pub buckets: u64,
    /// Local rounds (expansions of a frontier) on this rank.
    pub rounds: u64,
    /// Vertices expanded here.
    pub visited: u64,
    /// Frontier entries the engine skipped as stale.
    pub stale: u64,
    /// Relaxations sent to other ranks.
    pub sent: u64,
    /// Relaxations received.
    pub received: u64,
    /// Time expanding, filing and merging (this rank's own work).
    pub busy: Duration,
    /// Time in the exchanges and the closing reductions (waiting for the others included).
    pub waited: Duration,
}

impl RankSsspStats {
    /// The record [`Cluster::agree_gathering`] carries: counts, then times in nanoseconds.
    pub fn record(&self) -> Vec<u64> {
        vec![
            self.vertices,
            self.edges,
            self.visited,
            self.sent,
            self.received,
            self.busy.as_nanos() as u64,
            self.waited.as_nanos() as u64,
        ]
    }

    /// The stats a [`RankSsspStats::record`] came from (phases, buckets and stale not carried).
    pub fn from_record(record: &[u64]) -> Self {
        let at = |i: usize| record.get(i).copied().unwrap_or(0);
        RankSsspStats {
            vertices: at(0),
            edges: at(1),
            visited: at(2),
            sent: at(3),
            received: at(4),
            busy: Duration::from_nanos(at(5)),
            waited: Duration::from_nanos(at(6)),
            ..Default::default()
        }
    }
}

/// One rank's result: the distance words of the vertices it owns (`u32::MAX` unreached) and
/// what it did.
#[derive(Clone, Debug)]
pub struct RankSearch {
    /// Distance words of the vertices this rank owns ([`VertexPartition::owned`]).
    pub words: Vec<u32>,
    /// Counters and times.
    pub stats: RankSsspStats,
}

/// One rank's part of a distributed search, set up once for searches from any source: its
/// [`Graph::rows_of`] on its engine (for a device, uploaded).
pub struct RankSssp<'a> {
    cluster: &'a Cluster,
    part: &'a Graph,
    partition: &'a VertexPartition,
    state: PartState<'a>,
    /// Local rounds a rank runs in one phase before it meets the others (`None`: until its
    /// part of the bucket is settled as far as it can see).
    rounds_per_phase: Option<usize>,
}

impl std::fmt::Debug for RankSssp<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankSssp")
            .field("rank", &self.cluster.rank())
            .field("edges", &self.part.edges())
            .finish_non_exhaustive()
    }
}

impl<'a> RankSssp<'a> {
    /// Sets up this rank's `part` (its vertices' edges in `partition`) on `engine`; every rank
    /// calls it together and every rank fails where one does.
    pub fn new(
        cluster: &'a Cluster,
        part: &'a Graph,
        partition: &'a VertexPartition,
        engine: PartEngine<'a>,
    ) -> Result<Self> {
        let made = check(cluster, part, partition).and_then(|()| PartState::new(engine, part));
        let state = cluster.agree("sssp: set up each rank's part", made)?;
        Ok(RankSssp {
            cluster,
            part,
            partition,
            state,
            rounds_per_phase: None,
        })
    }

    /// Bounds the local rounds a rank runs in one phase (at least 1): fewer rounds expand
    /// fewer vertices with distances the other ranks are about to lower, at the price of
    /// more phases. `None` (the default): a rank runs until no own vertex drops back into
    /// the open bucket.
    pub fn with_rounds_per_phase(mut self, rounds: Option<usize>) -> Result<Self> {
        if rounds == Some(0) {
            return Err(Error::InvalidArgument(
                "0 local rounds per phase: at least 1 (or no bound)".into(),
            ));
        }
        self.rounds_per_phase = rounds;
        Ok(self)
    }

    /// Shortest distances from `source` (0-based) by delta-stepping with buckets `delta`
    /// wide, across every rank: call on every rank with the same `source` and `delta`.
    pub fn shortest_paths(&mut self, source: usize, delta: u32) -> Result<RankSearch> {
        let checked = if delta == 0 {
            Err(Error::InvalidArgument(
                "a bucket width of 0: at least 1".into(),
            ))
        } else {
            self.part.check_source(source)
        };
        let reset = checked.and_then(|()| self.state.reset(source));
        self.cluster.agree("sssp: start a search", reset)?;
        let how = SearchSetup {
            partition: self.partition,
            part: self.part,
            delta,
            rounds_per_phase: self.rounds_per_phase.unwrap_or(usize::MAX),
        };
        search(self.cluster, &how, &mut self.state, source)
    }
}

/// What a search runs on and how.
struct SearchSetup<'a> {
    partition: &'a VertexPartition,
    part: &'a Graph,
    delta: u32,
    rounds_per_phase: usize,
}

/// The search loop of [`RankSssp::shortest_paths`], the engine reset for `source`.
fn search(
    cluster: &Cluster,
    how: &SearchSetup<'_>,
    state: &mut PartState<'_>,
    source: usize,
) -> Result<RankSearch> {
    let SearchSetup {
        partition,
        part,
        delta,
        ..
    } = *how;
    let me = cluster.rank();
    let mut front = Front::new(partition, me, delta);
    if partition.owner(source as u32) == me {
        front.file(0, source as u32);
    }
    let mut stats = RankSsspStats {
        vertices: partition.owned_count(me) as u64,
        edges: part.edges() as u64,
        ..Default::default()
    };
    let mut failure: Option<Error> = None;
    let mut open = next_bucket(cluster, &mut front, &mut failure, &mut stats)?;
    let mut last_bucket = None;
    while let Some(bucket) = open {
        stats.phases += 1;
        if last_bucket != Some(bucket) {
            stats.buckets += 1;
            last_bucket = Some(bucket);
        }
        let started = Instant::now();
        let mut outbox = Outbox::new(cluster.size());
        // The rank settles its part of the bucket as far as it can alone before it meets the
        // others: own vertices that drop back into the open bucket are expanded in further
        // local rounds (GAP's bin fusion, across ranks), their remote relaxations gathered
        // for the one exchange; at most `rounds_per_phase` of them, the rest of the bucket
        // left for the next phase.
        let mut frontier = front.take(bucket);
        let mut rounds = 0;
        while failure.is_none() && !frontier.is_empty() {
            if rounds == how.rounds_per_phase {
                front.put_back(bucket, frontier);
                break;
            }
            rounds += 1;
            match state.expand(&frontier, partition, me) {
                Ok(dropped) => {
                    stats.visited += dropped.visited;
                    stats.stale += dropped.stale;
                    stats.rounds += 1;
                    dropped.own.iter().for_each(|part| front.file_all(part));
                    outbox.take_from(dropped.remote);
                }
                Err(e) => failure = Some(e),
            }
            frontier = front.take(bucket);
        }
        let (words, offsets) = outbox.seal();
        stats.sent += words.len() as u64;
        stats.busy += started.elapsed();
        let exchanging = Instant::now();
        let (arrived, _) = cluster.all_to_all_varcount("sssp: relaxations", &words, &offsets)?;
        stats.waited += exchanging.elapsed();
        let merging = Instant::now();
        stats.received += arrived.len() as u64;
        if failure.is_none() && !arrived.is_empty() {
            let pairs: Vec<Pair> = arrived.par_iter().map(|&w| unpack(w)).collect();
            match state.merge(&pairs) {
                Ok(dropped) => front.file_all(&dropped),
                Err(e) => failure = Some(e),
            }
        }
        stats.busy += merging.elapsed();
        open = next_bucket(cluster, &mut front, &mut failure, &mut stats)?;
    }
    let words = state.words(partition.owned(me));
    let words = cluster.agree("sssp: read the distances", words)?;
    Ok(RankSearch { words, stats })
}

/// The answer as [`Graph::dijkstra`] gives it, gathered on rank 0 (`None` on the others)
/// from every rank's [`RankSearch::words`]; `max_weight` (the graph's largest weight) goes
/// into an overflow's error.
pub fn gather_distances(
    cluster: &Cluster,
    partition: &VertexPartition,
    words: &[u32],
    max_weight: u32,
) -> Result<Option<Vec<u64>>> {
    let all = cluster.gather_to_root("sssp: gather the distances", words)?;
    let converted = all.map_or(Ok(None), |by_rank| {
        let words = partition.assemble(&by_rank)?;
        let overflow = std::sync::atomic::AtomicBool::new(false);
        let out: Vec<u64> = words
            .iter()
            .map(|&d| answer_distance(d, &overflow))
            .collect();
        if overflow.into_inner() {
            Err(overflow_error(max_weight))
        } else {
            Ok(Some(out))
        }
    });
    cluster.agree("sssp: distances in range", converted)
}

/// The same arguments everywhere are the caller's promise; these are what a rank can check.
fn check(cluster: &Cluster, part: &Graph, partition: &VertexPartition) -> Result<()> {
    if partition.parts() != cluster.size() || part.vertices() != partition.vertices() {
        return Err(Error::InvalidArgument(format!(
            "a partition into {} parts of {} vertices for {} ranks and a part of {} vertices",
            partition.parts(),
            partition.vertices(),
            cluster.size(),
            part.vertices()
        )));
    }
    Ok(())
}

/// Agrees on the next bucket to open (`None`: the search is over) and on whether any rank
/// failed, in one `Allreduce`; a failure ends the search on every rank with its error.
fn next_bucket(
    cluster: &Cluster,
    front: &mut Front<'_>,
    failure: &mut Option<Error>,
    stats: &mut RankSsspStats,
) -> Result<Option<u32>> {
    let t = Instant::now();
    let local = [
        front.first_live().unwrap_or(u32::MAX),
        failure.is_none() as u32,
    ];
    let global = cluster.all_reduce_min("sssp: next bucket", &local);
    stats.waited += t.elapsed();
    if global[1] == 0 {
        let mine = failure.take().map_or(Ok(()), Err);
        cluster.agree("sssp: a rank failed", mine)?;
        return Err(Error::InvalidArgument(
            "a rank reported a failure that agreement did not find".into(),
        ));
    }
    Ok((global[0] != u32::MAX).then_some(global[0]))
}

/// A rank's buckets of its own vertices, with the distance each vertex was last filed with.
struct Front<'p> {
    partition: &'p VertexPartition,
    delta: u32,
    /// Last filed distance of each own vertex, by [`VertexPartition::local`] (`u32::MAX`:
    /// never).
    best: Vec<u32>,
    buckets: BTreeMap<u32, Vec<Pair>>,
    /// The lowest bucket and its length when it was last found to hold a live entry, so
    /// that a bucket waiting while others work is not scanned every phase.
    checked: Option<(u32, usize)>,
}

impl<'p> Front<'p> {
    fn new(partition: &'p VertexPartition, part: usize, delta: u32) -> Self {
        Front {
            partition,
            delta,
            best: vec![u32::MAX; partition.owned_count(part)],
            buckets: BTreeMap::new(),
            checked: None,
        }
    }

    /// Files own vertex `v` at distance `d` unless it was filed at `d` or below already.
    fn file(&mut self, d: u32, v: u32) {
        self.file_all(&[(d, v)]);
    }

    /// [`Front::file`] for each pair; consecutive pairs of one bucket (most of a round's, on
    /// a graph whose bucket holds most of the search) look the bucket up once.
    fn file_all(&mut self, pairs: &[Pair]) {
        let mut hot: Option<(u32, Vec<Pair>)> = None;
        for &(d, v) in pairs {
            let best = &mut self.best[self.partition.local(v)];
            if d >= *best {
                continue;
            }
            *best = d;
            let key = d / self.delta;
            match &mut hot {
                Some((k, entries)) if *k == key => entries.push((d, v)),
                _ => {
                    if let Some((k, entries)) = hot.take() {
                        self.buckets.insert(k, entries);
                    }
                    let mut entries = self.buckets.remove(&key).unwrap_or_default();
                    entries.push((d, v));
                    hot = Some((key, entries));
                }
            }
        }
        if let Some((k, entries)) = hot {
            self.buckets.insert(k, entries);
        }
    }

    fn live(&self, (d, v): Pair) -> bool {
        self.best[self.partition.local(v)] == d
    }

    /// The live entries of `bucket`, which leaves the buckets.
    fn take(&mut self, bucket: u32) -> Vec<Pair> {
        let entries = self.buckets.remove(&bucket).unwrap_or_default();
        if entries.len() < PARALLEL_MIN {
            return entries.into_iter().filter(|&e| self.live(e)).collect();
        }
        entries.into_par_iter().filter(|&e| self.live(e)).collect()
    }

    /// Returns live entries [`Front::take`] took from `bucket` (and entries filed since).
    fn put_back(&mut self, bucket: u32, mut entries: Vec<Pair>) {
        if let Some(filed) = self.buckets.remove(&bucket) {
            entries.extend(filed);
        }
        self.buckets.insert(bucket, entries);
    }

    /// The lowest bucket holding a live entry (emptied buckets are dropped on the way).
    fn first_live(&mut self) -> Option<u32> {
        loop {
            let (&key, entries) = self.buckets.iter().next()?;
            if self.checked == Some((key, entries.len())) {
                return Some(key);
            }
            let mut entries = self.buckets.remove(&key).expect("the first key is there");
            entries.retain(|&e| self.live(e));
            if !entries.is_empty() {
                self.checked = Some((key, entries.len()));
                self.buckets.insert(key, entries);
                return Some(key);
            }
        }
    }
}

/// Relaxations bound for other ranks, grouped by owner.
struct Outbox {
    by_rank: Vec<Vec<u64>>,
}

impl Outbox {
    fn new(ranks: usize) -> Self {
        Outbox {
            by_rank: vec![Vec::new(); ranks],
        }
    }

    /// Appends lists of packed relaxations, `lists[i][r]` bound for rank `r`.
    fn take_from(&mut self, lists: Vec<Vec<Vec<u64>>>) {
        for list in lists {
            for (rank, words) in list.into_iter().enumerate() {
                if self.by_rank[rank].is_empty() {
                    self.by_rank[rank] = words;
                } else {
                    self.by_rank[rank].extend_from_slice(&words);
                }
            }
        }
    }

    /// The words in rank order and each rank's offsets.
    fn seal(self) -> (Vec<u64>, Vec<usize>) {
        let mut offsets = Vec::with_capacity(self.by_rank.len() + 1);
        offsets.push(0);
        let total = self.by_rank.iter().map(Vec::len).sum();
        let mut words = Vec::with_capacity(total);
        for part in self.by_rank {
            words.extend_from_slice(&part);
            offsets.push(words.len());
        }
        (words, offsets)
    }
}

fn unpack(word: u64) -> Pair {
    ((word >> 32) as u32, word as u32)
}

/// A rank's engine with its distance and stamp words for every vertex.
enum PartState<'a> {
    Threads {
        graph: &'a Graph,
        pool: &'a LatencyPool,
        dist: Vec<AtomicU32>,
        stamp: Vec<AtomicU32>,
        iteration: u32,
    },
    Device {
        sssp: Box<DeviceSssp<'a>>,
        iteration: u32,
    },
}

impl<'a> PartState<'a> {
    fn new(engine: PartEngine<'a>, part: &'a Graph) -> Result<Self> {
        Ok(match engine {
            PartEngine::Threads(pool) => PartState::Threads {
                graph: part,
                pool,
                dist: atomic_words(part.vertices(), u32::MAX),
                stamp: atomic_words(part.vertices(), 0),
                iteration: 0,
            },
            PartEngine::Device(rt) => PartState::Device {
                sssp: Box::new(DeviceSssp::new(rt, part)?),
                iteration: 0,
            },
        })
    }

    /// Every distance unknown but `source`'s: every rank holds the source at 0 (true
    /// everywhere, and no rank sends it anything). Stamps stay: the iteration counts on.
    fn reset(&mut self, source: usize) -> Result<()> {
        match self {
            PartState::Threads { dist, .. } => {
                dist.par_iter()
                    .with_min_len(PARALLEL_MIN)
                    .for_each(|d| d.store(u32::MAX, Relaxed));
                dist[source].store(0, Relaxed);
                Ok(())
            }
            PartState::Device { sssp, iteration } => {
                // The device's reset clears its stamps too.
                *iteration = 0;
                sssp.reset(source)
            }
        }
    }

    /// Expands `frontier` (own vertices, each once): the vertices whose distance dropped,
    /// each once, split into this rank's and the others' (packed, by owner).
    fn expand(
        &mut self,
        frontier: &[Pair],
        partition: &VertexPartition,
        me: usize,
    ) -> Result<Dropped> {
        match self {
            PartState::Threads {
                graph,
                pool,
                dist,
                stamp,
                iteration,
            } => {
                *iteration = next_iteration(*iteration)?;
                let edges: usize = frontier.iter().map(|&(_, v)| graph.out_degree(v)).sum();
                if edges >= INLINE_EDGES && pool.len() > 1 {
                    return expand_on_threads(
                        graph, pool, dist, stamp, frontier, *iteration, partition, me,
                    );
                }
                let (next, visited, stale) = expand_here(graph, dist, stamp, frontier, *iteration);
                Ok(Dropped::split(next, visited, stale, partition, me))
            }
            PartState::Device { sssp, iteration } => {
                *iteration = next_iteration(*iteration)?;
                sssp.write_frontier(frontier)?;
                let (next, visited, stale) = sssp.expand_range(0, frontier.len(), *iteration)?;
                let next = sssp.read_frontier(next)?;
                Ok(Dropped::split(next, visited, stale, partition, me))
            }
        }
    }

    /// Lowers own vertices to the distances other ranks sent: those that dropped.
    fn merge(&mut self, arrived: &[Pair]) -> Result<Vec<Pair>> {
        match self {
            PartState::Threads { dist, .. } => Ok(arrived
                .par_iter()
                .with_min_len(PARALLEL_MIN)
                .copied()
                .filter(|&(d, v)| lowered(dist, v, d))
                .collect()),
            PartState::Device { sssp, iteration } => {
                *iteration = next_iteration(*iteration)?;
                sssp.begin_iteration()?;
                sssp.merge_launch(arrived, *iteration)?;
                let (next, _, _) = sssp.finish_iteration()?;
                sssp.read_frontier(next)
            }
        }
    }

    /// The distance words of `vertices`.
    fn words(&mut self, vertices: impl Iterator<Item = usize>) -> Result<Vec<u32>> {
        match self {
            PartState::Threads { dist, .. } => {
                Ok(vertices.map(|v| dist[v].load(Relaxed)).collect())
            }
            PartState::Device { sssp, .. } => {
                let all = sssp.read_raw_distances()?;
                Ok(vertices.map(|v| all[v]).collect())
            }
        }
    }
}

/// What a round lowered: own vertices as `(distance, vertex)` (in pieces), the others'
/// packed `distance << 32 | vertex` by owner (in pieces, `remote[i][rank]`).
struct Dropped {
    own: Vec<Vec<Pair>>,
    remote: Vec<Vec<Vec<u64>>>,
    visited: u64,
    stale: u64,
}

impl Dropped {
    /// Splits `next` by owner (on rayon's threads when it is long).
    fn split(
        next: Vec<Pair>,
        visited: u64,
        stale: u64,
        partition: &VertexPartition,
        me: usize,
    ) -> Self {
        let ranks = partition.parts();
        let pieces: Vec<(Vec<Pair>, Vec<Vec<u64>>)> = next
            .par_chunks(PARALLEL_MIN.max(next.len().div_ceil(64)).max(1))
            .map(|chunk| {
                let mut own = Vec::new();
                let mut remote = vec![Vec::new(); ranks];
                for &(d, v) in chunk {
                    match partition.owner(v) {
                        owner if owner == me => own.push((d, v)),
                        owner => remote[owner].push(pack(d, v)),
                    }
                }
                (own, remote)
            })
            .collect();
        let (own, remote) = pieces.into_iter().unzip();
        Dropped {
            own,
            remote,
            visited,
            stale,
        }
    }
}

/// Expands `frontier` on `pool`'s threads (chunks claimed from one counter, as
/// [`cpu`](super::cpu) does); each thread keeps the vertices it queued by owner, and after
/// every thread has finished (so that each distance read is final) turns its own lists into
/// pairs and packed words.
#[allow(clippy::too_many_arguments)]
fn expand_on_threads(
    graph: &Graph,
    pool: &LatencyPool,
    dist: &[AtomicU32],
    stamp: &[AtomicU32],
    frontier: &[Pair],
    iteration: u32,
    partition: &VertexPartition,
    me: usize,
) -> Result<Dropped> {
    let ranks = partition.parts();
    let next_chunk = AtomicUsize::new(0);
    let queued = pool.broadcast_scoped(|_| {
        let mut by_owner: Vec<Vec<u32>> = vec![Vec::new(); ranks];
        let (visited, stale) =
            expand_claimed(graph, dist, stamp, frontier, &next_chunk, iteration, |v| {
                by_owner[partition.owner(v)].push(v)
            });
        (std::sync::Mutex::new(by_owner), visited, stale)
    })?;
    // The join above orders every lowering before these reads (see `cpu`).
    let next_part = AtomicUsize::new(0);
    let parts = pool.broadcast_scoped(|_| {
        let mut done = Vec::new();
        loop {
            let i = next_part.fetch_add(1, Relaxed);
            let Some((lists, _, _)) = queued.get(i) else {
                break;
            };
            let lists = std::mem::take(&mut *lists.lock().unwrap_or_else(|p| p.into_inner()));
            let own = lists[me]
                .iter()
                .map(|&v| (dist[v as usize].load(Relaxed), v))
                .collect();
            let remote = lists
                .iter()
                .enumerate()
                .map(|(r, l)| match r == me {
                    true => Vec::new(),
                    false => l
                        .iter()
                        .map(|&v| pack(dist[v as usize].load(Relaxed), v))
                        .collect(),
                })
                .collect();
            done.push((own, remote));
        }
        done
    })?;
    let (own, remote) = parts.into_iter().flatten().unzip();
    Ok(Dropped {
        own,
        remote,
        visited: queued.iter().map(|q| q.1).sum(),
        stale: queued.iter().map(|q| q.2).sum(),
    })
}

fn pack(d: u32, v: u32) -> u64 {
    ((d as u64) << 32) | v as u64
}

/// [`expand_on_threads`]'s expansion on the calling thread alone, the dropped vertices as
/// pairs.
fn expand_here(
    graph: &Graph,
    dist: &[AtomicU32],
    stamp: &[AtomicU32],
    frontier: &[Pair],
    iteration: u32,
) -> (Vec<Pair>, u64, u64) {
    let mut queued = Vec::new();
    let (visited, stale) = expand_claimed(
        graph,
        dist,
        stamp,
        frontier,
        &AtomicUsize::new(0),
        iteration,
        |v| queued.push(v),
    );
    let next = queued
        .into_iter()
        .map(|v| (dist[v as usize].load(Relaxed), v))
        .collect();
    (next, visited, stale)
}
