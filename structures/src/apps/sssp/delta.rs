//! Delta-stepping (Meyer & Sanders) on the pinned latency threads: the work-efficient
//! label-correcting search the frontier search is not.
//!
//! Vertices wait in buckets of width `delta` by tentative distance; the lowest non-empty
//! bucket is expanded in rounds until it stays empty, then the next one. A vertex is expanded
//! again only when its distance dropped while its bucket was open, so on road-like graphs
//! each vertex is expanded about once, where the frontier search re-expands vertices as their
//! labels improve.
//!
//! The shape is GAP's (Beamer et al.'s reference code): the threads stay in one job for the
//! whole search and meet at a [`SpinBarrier`] twice per round, each thread keeps its own
//! buckets (no shared queue to contend on), and a round's frontier is the concatenation of
//! what each thread had in the bucket being opened, claimed in chunks by every thread — no
//! copy into a shared array. Every vertex whose distance a thread lowered goes into that
//! thread's bucket for the new distance, duplicates and all: an entry is stale (skipped) when
//! its vertex's distance dropped below the open bucket since, or when the vertex was already
//! expanded with its current distance.
//!
//! Memory ordering: distances are single atomic words, lowered with `Relaxed` `fetch_min`
//! (its result alone says who lowered), and the barrier orders each round: everything a
//! thread wrote before arriving (its frontier part, its distances) is visible to every thread
//! after the wait (see [`SpinBarrier`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::{RwLock, RwLockReadGuard};

use crossbeam::utils::CachePadded;

use asym_runtime::{Error, LatencyPool, Result, SpinBarrier};

use super::{distances_from, lowered, relaxed_distance, SsspRun, SsspStats};
use crate::apps::graph::Graph;

/// Frontier entries a thread claims at a time.
const CHUNK: usize = 64;
/// Buckets each thread keeps in its ring; further ones wait in an ordered map.
const WINDOW: u32 = 1024;

/// A bucket width from the graph alone: the mean edge weight times 16, at least 1. Wide
/// buckets mean fewer rounds (each a barrier on the latency threads, a grid-wide step on the
/// device) at the price of a few re-expansions: on the H200 machine 16x the mean beat 4x on
/// both engines and both generated graph kinds (docs/BENCHMARKS.md), as it does for GAP.
pub fn auto_delta(graph: &Graph) -> u32 {
    let (_, _, weights) = graph.csr();
    if weights.is_empty() {
        return 1;
    }
    let mean = weights.iter().map(|&w| w as u64).sum::<u64>() / weights.len() as u64;
    u32::try_from(mean.saturating_mul(16))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// Shortest distances from `source` (0-based) by delta-stepping with buckets `delta` wide on
/// `pool`'s threads. `stats.iterations` counts the rounds, `buckets` the buckets opened,
/// `visited` the vertices expanded, `stale` the entries skipped and `relaxed` the edges
/// scanned.
pub fn shortest_paths(
    graph: &Graph,
    source: usize,
    pool: &LatencyPool,
    delta: u32,
) -> Result<SsspRun> {
    graph.check_source(source)?;
    if delta == 0 {
        return Err(Error::InvalidArgument(
            "delta 0: buckets must be at least 1 wide".into(),
        ));
    }
    let started = std::time::Instant::now();
    let n = graph.vertices();
    let dist: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(u32::MAX)).collect();
    let expanded: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(u32::MAX)).collect();
    dist[source].store(0, Relaxed);
    let threads = pool.len();
    // Each thread's part of the round's frontier (its bucket being opened).
    let parts: Vec<RwLock<Vec<u32>>> = (0..threads).map(|_| RwLock::new(Vec::new())).collect();
    *parts[0].write().unwrap_or_else(|e| e.into_inner()) = vec![source as u32];
    let shared = Shared {
        graph,
        dist: &dist,
        expanded: &expanded,
        delta,
        parts: &parts,
        lens: (0..threads)
            .map(|t| CachePadded::new(AtomicUsize::new(usize::from(t == 0))))
            .collect(),
        claims: [AtomicUsize::new(0), AtomicUsize::new(0)],
        next_bucket: [AtomicU32::new(u32::MAX), AtomicU32::new(u32::MAX)],
        barrier: SpinBarrier::new(threads, pool.timeout()),
    };
    let counts = pool.broadcast_scoped(|info| shared.run(info.index))?;
    let mut stats = SsspStats::default();
    let threads = counts.len().max(1) as u32;
    for c in counts {
        let c = c?;
        stats.wait_time += c.waited / threads;
        stats.visited += c.visited;
        stats.stale += c.stale;
        stats.relaxed += c.relaxed;
        // Every thread counts the same rounds and buckets.
        stats.iterations = c.rounds;
        stats.buckets = c.buckets;
    }
    let distances = distances_from(graph, dist.iter().map(|d| d.load(Relaxed)))?;
    stats.compute_time = started.elapsed();
    Ok(SsspRun { distances, stats })
}

/// What the threads of one search share.
struct Shared<'a> {
    graph: &'a Graph,
    dist: &'a [AtomicU32],
    /// The lowest distance each vertex was expanded with: a second entry of a vertex whose
    /// distance has not dropped since has nothing new to relax.
    expanded: &'a [AtomicU32],
    delta: u32,
    parts: &'a [RwLock<Vec<u32>>],
    /// The length of each part, readable without its lock (written before the barrier that
    /// starts the round).
    lens: Vec<CachePadded<AtomicUsize>>,
    /// Frontier entries claimed so far, by round parity (reset by the barrier's leader).
    claims: [AtomicUsize; 2],
    /// The lowest non-empty bucket of any thread, by round parity (a minimum over threads).
    next_bucket: [AtomicU32; 2],
    barrier: SpinBarrier,
}

/// One thread's counters.
#[derive(Default)]
struct Counts {
    visited: u64,
    stale: u64,
    relaxed: u64,
    rounds: u64,
    buckets: u64,
    /// Time spent waiting at the barriers.
    waited: std::time::Duration,
}

impl Shared<'_> {
    /// Thread `me`'s part of the search: rounds until no thread has a bucket left.
    fn run(&self, me: usize) -> Result<Counts> {
        // A thread that fails stops the others at the barrier instead of leaving them waiting.
        let guard = self.barrier.guard();
        let mut buckets = Buckets::new();
        let mut counts = Counts {
            buckets: 1,
            ..Counts::default()
        };
        let mut open = 0u32;
        let mut round = 0usize;
        loop {
            self.expand(round, open, &mut buckets, &mut counts);
            counts.rounds += 1;
            if let Some(b) = buckets.lowest() {
                self.next_bucket[(round + 1) & 1].fetch_min(b, Relaxed);
            }
            // The claims of the next round start over (the last round that used them ended
            // at the previous barrier).
            let t = std::time::Instant::now();
            self.barrier
                .wait_with(|| self.claims[(round + 1) & 1].store(0, Relaxed))?;
            counts.waited += t.elapsed();
            let next = self.next_bucket[(round + 1) & 1].load(Relaxed);
            if next == u32::MAX {
                break;
            }
            let part = buckets.take(next);
            self.lens[me].store(part.len(), Relaxed);
            *self.parts[me].write().unwrap_or_else(|e| e.into_inner()) = part;
            // This round's minimum was read by every thread before this barrier; it is the
            // one the round after next fills.
            let t = std::time::Instant::now();
            self.barrier
                .wait_with(|| self.next_bucket[round & 1].store(u32::MAX, Relaxed))?;
            counts.waited += t.elapsed();
            if next != open {
                counts.buckets += 1;
            }
            open = next;
            round += 1;
        }
        guard.finish();
        Ok(counts)
    }

    /// Expands this round's frontier (every thread's part, claimed in chunks), filing each
    /// vertex whose distance it lowered into `buckets`. Claims from the shared counter are
    /// what the threads contend on (on the 16-core machine chunks of 4, 16 and 64 entries
    /// took a road-like search 724, 459 and 418 ms); splitting short rounds evenly by
    /// position instead measured no better there (the threads then waited for the slowest).
    fn expand(&self, round: usize, open: u32, buckets: &mut Buckets, counts: &mut Counts) {
        let threads = self.parts.len();
        let mut ends = Vec::with_capacity(threads);
        let mut total = 0;
        for len in self.lens.iter() {
            total += len.load(Relaxed);
            ends.push(total);
        }
        // Each part is locked (shared) only when this thread first reads from it.
        let mut guards: Vec<Option<RwLockReadGuard<'_, Vec<u32>>>> =
            (0..threads).map(|_| None).collect();
        let mut range = |from: usize, to: usize| {
            let mut at = from;
            let mut k = ends.partition_point(|&e| e <= at);
            while at < to {
                let base = if k == 0 { 0 } else { ends[k - 1] };
                let stop = to.min(ends[k]);
                let part = guards[k]
                    .get_or_insert_with(|| self.parts[k].read().unwrap_or_else(|e| e.into_inner()));
                for &u in &part[at - base..stop - base] {
                    self.expand_vertex(u, open, buckets, counts);
                }
                at = stop;
                k += 1;
            }
        };
        let claims = &self.claims[round & 1];
        loop {
            let start = claims.fetch_add(CHUNK, Relaxed);
            if start >= total {
                break;
            }
            range(start, (start + CHUNK).min(total));
        }
    }

    fn expand_vertex(&self, u: u32, open: u32, buckets: &mut Buckets, counts: &mut Counts) {
        let du = self.dist[u as usize].load(Relaxed);
        // Stale: its distance dropped below the open bucket since it was filed, or another
        // entry of it was expanded with this distance already.
        let expanded = &self.expanded[u as usize];
        if du / self.delta != open
            || expanded.load(Relaxed) <= du
            || expanded.fetch_min(du, Relaxed) <= du
        {
            counts.stale += 1;
            return;
        }
        counts.visited += 1;
        for (v, w) in self.graph.neighbors(u) {
            counts.relaxed += 1;
            let nd = relaxed_distance(du, w);
            if lowered(self.dist, v, nd) {
                buckets.push(nd / self.delta, v);
            }
        }
    }
}

/// One thread's buckets: a ring of [`WINDOW`] buckets from the open one on, and an ordered
/// map for the few beyond it (wide weight ranges with a narrow delta).
struct Buckets {
    ring: Vec<Vec<u32>>,
    beyond: BTreeMap<u32, Vec<u32>>,
    /// The open bucket: no bucket below it holds anything.
    base: u32,
}

impl Buckets {
    fn new() -> Self {
        Buckets {
            ring: (0..WINDOW).map(|_| Vec::new()).collect(),
            beyond: BTreeMap::new(),
            base: 0,
        }
    }

    fn push(&mut self, bucket: u32, v: u32) {
        debug_assert!(
            bucket >= self.base,
            "distances never drop below the open bucket"
        );
        if bucket - self.base < WINDOW {
            self.ring[(bucket % WINDOW) as usize].push(v);
        } else {
            self.beyond.entry(bucket).or_default().push(v);
        }
    }

    /// The lowest non-empty bucket.
    fn lowest(&self) -> Option<u32> {
        (0..WINDOW)
            .map(|i| self.base.wrapping_add(i))
            .take_while(|&b| b >= self.base)
            .find(|&b| !self.ring[(b % WINDOW) as usize].is_empty())
            .or_else(|| self.beyond.first_key_value().map(|(&b, _)| b))
    }

    /// Opens `bucket` (no bucket below it holds anything, here or in any thread) and takes
    /// its entries.
    fn take(&mut self, bucket: u32) -> Vec<u32> {
        self.base = bucket;
        let end = bucket.saturating_add(WINDOW);
        while let Some(entry) = self.beyond.first_entry() {
            if *entry.key() >= end {
                break;
            }
            let (b, mut entries) = entry.remove_entry();
            self.ring[(b % WINDOW) as usize].append(&mut entries);
        }
        std::mem::take(&mut self.ring[(bucket % WINDOW) as usize])
    }
}
