//! SSSP on pinned latency threads (CpuOnly): relaxation shared out in chunks of the frontier,
//! the ordering heap a [`ThreadedHeap`] (the concurrent heap) the threads insert into and
//! delete from at once.
//!
//! Memory ordering: distances and stamps are single atomic words updated with `Relaxed`
//! read-modify-writes (`fetch_min`, `swap`); each word's modification order alone decides who
//! improved a distance and who queued a vertex. The threads' results reach the caller through
//! the pool's join ([`LatencyPool::broadcast_scoped`] returns after every job has ended), which
//! orders every relaxation before the reads that build the next frontier.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

use asym_runtime::{LatencyPool, Result};

use super::{
    atomic_words, distances_par, lower, next_iteration, search, Order, Pair, Relaxer, SsspRun,
};
use crate::graph::Graph;
use asym_structures::ThreadedHeap;

/// Frontier entries a thread takes at a time.
const CHUNK: usize = 64;

/// Shortest distances from `source` (0-based) on `pool`'s threads, the frontier expanded
/// whole ([`Order::Frontier`]), ordered by the concurrent generalized heap
/// ([`Order::Heap`]), or by delta-stepping ([`Order::Delta`]:
/// [`delta::shortest_paths`](super::delta::shortest_paths)).
pub fn shortest_paths(
    graph: &Graph,
    source: usize,
    pool: &LatencyPool,
    order: Order,
) -> Result<SsspRun> {
    graph.check_source(source)?;
    if let Order::Delta { width } = order {
        return super::delta::shortest_paths(graph, source, pool, width);
    }
    let mut relax = CpuRelaxer {
        graph,
        pool,
        dist: atomic_words(graph.vertices(), u32::MAX),
        stamp: atomic_words(graph.vertices(), 0),
        frontier: Vec::new(),
        iteration: 0,
    };
    relax.dist[source].store(0, Relaxed);
    match order {
        Order::Frontier | Order::Delta { .. } => search(&mut relax, None, order, source as u32),
        Order::Heap { batch, .. } => {
            let mut heap = ThreadedHeap::new(pool, batch)?;
            search(&mut relax, Some(&mut heap), order, source as u32)
        }
    }
}

struct CpuRelaxer<'a> {
    graph: &'a Graph,
    pool: &'a LatencyPool,
    /// Tentative distances; `u32::MAX` = not reached, [`DISTANCE_LIMIT`] = saturated.
    dist: Vec<AtomicU32>,
    /// The iteration that last queued each vertex (iterations count from 1).
    stamp: Vec<AtomicU32>,
    frontier: Vec<Pair>,
    iteration: u32,
}

impl Relaxer for CpuRelaxer<'_> {
    fn frontier_len(&self) -> usize {
        self.frontier.len()
    }

    fn take_frontier(&mut self) -> Result<Vec<Pair>> {
        Ok(std::mem::take(&mut self.frontier))
    }

    fn set_frontier(&mut self, pairs: &[Pair]) -> Result<()> {
        self.frontier.clear();
        self.frontier.extend_from_slice(pairs);
        Ok(())
    }

    fn expand(&mut self) -> Result<(u64, u64)> {
        self.iteration = next_iteration(self.iteration)?;
        let (next, visited, stale) = expand_slice(
            self.graph,
            self.pool,
            &self.dist,
            &self.stamp,
            &self.frontier,
            self.iteration,
        )?;
        self.frontier = next;
        Ok((visited, stale))
    }

    fn distances(&mut self) -> Result<Vec<u64>> {
        distances_par(self.graph, self.dist.len(), |v| self.dist[v].load(Relaxed))
    }
}

/// Expands `frontier` on `pool`'s threads with stamp `iteration` (chunks of [`CHUNK`]
/// claimed from one counter). Returns the vertices whose distance dropped, each once, as
/// `(distance, vertex)` with the distance after every thread finished, and (visited, stale).
pub(super) fn expand_slice(
    graph: &Graph,
    pool: &LatencyPool,
    dist: &[AtomicU32],
    stamp: &[AtomicU32],
    frontier: &[Pair],
    iteration: u32,
) -> Result<(Vec<Pair>, u64, u64)> {
    let next_chunk = AtomicUsize::new(0);
    let parts = pool.broadcast_scoped(|_| {
        let mut queued = Vec::new();
        let (visited, stale) =
            expand_claimed(graph, dist, stamp, frontier, &next_chunk, iteration, |v| {
                queued.push(v)
            });
        (queued, visited, stale)
    })?;
    let total: usize = parts.iter().map(|p| p.0.len()).sum();
    let mut next = Vec::with_capacity(total);
    let (mut visited, mut stale) = (0, 0);
    for (queued, vis, st) in parts {
        next.extend(
            queued
                .into_iter()
                .map(|v| (dist[v as usize].load(Relaxed), v)),
        );
        visited += vis;
        stale += st;
    }
    Ok((next, visited, stale))
}

/// Expands chunks of [`CHUNK`] entries of `frontier`, each claimed from `next_chunk`, until
/// none is left, with stamp `iteration`; `queued(v)` for each vertex this call lowered and is
/// the first in the iteration to queue. Returns (visited, stale). One thread alone, with a
/// counter of its own, expands the whole frontier.
pub(super) fn expand_claimed(
    graph: &Graph,
    dist: &[AtomicU32],
    stamp: &[AtomicU32],
    frontier: &[Pair],
    next_chunk: &AtomicUsize,
    iteration: u32,
    mut queued: impl FnMut(u32),
) -> (u64, u64) {
    let (mut visited, mut stale) = (0u64, 0u64);
    loop {
        let start = next_chunk.fetch_add(CHUNK, Relaxed);
        if start >= frontier.len() {
            return (visited, stale);
        }
        for &(key, u) in &frontier[start..(start + CHUNK).min(frontier.len())] {
            let du = dist[u as usize].load(Relaxed);
            if key > du {
                stale += 1;
                continue;
            }
            visited += 1;
            for (v, w) in graph.neighbors(u) {
                if lower(dist, stamp, v, du, w, iteration) {
                    queued(v);
                }
            }
        }
    }
}
