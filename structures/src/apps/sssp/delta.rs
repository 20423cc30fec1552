//! Delta-stepping (Meyer & Sanders) on the pinned latency threads: the work-efficient
//! label-correcting search the frontier search is not.
//!
//! Vertices wait in buckets of width `delta` by tentative distance. The lowest non-empty
//! bucket is settled in rounds: its vertices' light edges (weight ≤ `delta`) are relaxed in
//! parallel, and vertices whose distance dropped into the same bucket make the next round;
//! once the bucket stays empty, the heavy edges of every vertex it settled are relaxed once,
//! and the next non-empty bucket follows. A vertex is expanded again only when its distance
//! dropped while it waited in its bucket, so on road-like graphs it expands each vertex about
//! once, where the frontier search re-expands vertices as their labels improve.
//!
//! Entries are vertex numbers; an entry is stale (skipped) when the vertex's distance has
//! dropped below its bucket since it was queued (it is queued again in the lower bucket).
//! Memory ordering as in [`cpu`](super::cpu): distances and stamps are single atomic words
//! with `Relaxed` read-modify-writes, and the pool's join orders every round before the reads
//! that fill the buckets.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

use asym_runtime::{Error, LatencyPool, Result};

use super::{distances_from, lower, next_iteration, SsspRun, SsspStats};
use crate::apps::graph::Graph;

/// Bucket entries a thread takes at a time.
const CHUNK: usize = 64;

/// A bucket width from the graph alone: the mean edge weight times 4, at least 1 (wide enough
/// that a bucket holds a few hops' worth of vertices, narrow enough that few of them are
/// expanded before their distance is final).
pub fn auto_delta(graph: &Graph) -> u32 {
    let (_, _, weights) = graph.csr();
    if weights.is_empty() {
        return 1;
    }
    let mean = weights.iter().map(|&w| w as u64).sum::<u64>() / weights.len() as u64;
    u32::try_from(mean.saturating_mul(4))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// Shortest distances from `source` (0-based) by delta-stepping with buckets `delta` wide on
/// `pool`'s threads. `stats.iterations` counts the parallel rounds (light and heavy),
/// `visited` the vertices expanded, `stale` the bucket entries skipped.
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
    let n = graph.vertices();
    let dist: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(u32::MAX)).collect();
    let stamp: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
    dist[source].store(0, Relaxed);
    let mut buckets: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    buckets.insert(0, vec![source as u32]);
    // The bucket (plus 1) each vertex waits in, so that it waits there once; cleared when its
    // bucket's round takes it, since its distance can drop within the bucket again.
    let mut waits_in = vec![0u32; n];
    waits_in[source] = 1;
    let enqueue = |buckets: &mut BTreeMap<u32, Vec<u32>>, waits_in: &mut [u32], v: u32, b: u32| {
        if waits_in[v as usize] != b + 1 {
            waits_in[v as usize] = b + 1;
            buckets.entry(b).or_default().push(v);
        }
    };
    let mut stats = SsspStats::default();
    let mut round = 0u32;
    let started = std::time::Instant::now();
    let bucket_of = |v: u32| dist[v as usize].load(Relaxed) / delta;
    while let Some((current, mut entries)) = buckets.pop_first() {
        stats.buckets += 1;
        let mut settled: Vec<u32> = Vec::new();
        // Light rounds until the bucket stays empty.
        loop {
            for &v in &entries {
                waits_in[v as usize] = 0;
            }
            round = next_iteration(round)?;
            let share = relax(
                graph,
                pool,
                &dist,
                &stamp,
                &entries,
                round,
                Edges::Light {
                    delta,
                    bucket: current,
                },
            )?;
            stats.iterations += 1;
            stats.visited += share.visited;
            stats.stale += share.stale;
            stats.relaxed += share.relaxed;
            settled.extend(share.expanded);
            for v in share.queued {
                enqueue(&mut buckets, &mut waits_in, v, bucket_of(v));
            }
            // Vertices that dropped into this bucket make the next round.
            match buckets.first_key_value() {
                Some((&b, _)) if b == current => {
                    entries = buckets.pop_first().map(|(_, e)| e).unwrap_or_default();
                }
                _ => break,
            }
        }
        // Heavy edges of every vertex the bucket settled, once.
        round = next_iteration(round)?;
        let share = relax(
            graph,
            pool,
            &dist,
            &stamp,
            &settled,
            round,
            Edges::Heavy { delta },
        )?;
        stats.iterations += 1;
        stats.relaxed += share.relaxed;
        for v in share.queued {
            enqueue(&mut buckets, &mut waits_in, v, bucket_of(v));
        }
    }
    stats.compute_time = started.elapsed();
    let distances = distances_from(graph, dist.iter().map(|d| d.load(Relaxed)))?;
    Ok(SsspRun { distances, stats })
}

/// Which edges a round relaxes.
#[derive(Clone, Copy)]
enum Edges {
    /// Weight ≤ `delta`, from the entries still in `bucket` (the others are stale).
    Light { delta: u32, bucket: u32 },
    /// Weight > `delta`, from every entry.
    Heavy { delta: u32 },
}

/// What one thread's share of a round gives.
#[derive(Default)]
struct Share {
    /// Vertices whose distance dropped (each once per round).
    queued: Vec<u32>,
    /// Entries expanded (light rounds).
    expanded: Vec<u32>,
    visited: u64,
    stale: u64,
    /// Edges scanned in this round's class (light or heavy).
    relaxed: u64,
}

/// Rounds with fewer entries run on the calling thread: waking the pool costs more.
const INLINE: usize = 512;

/// Relaxes `edges` of `entries` with stamp `round`, on `pool`'s threads where the round is
/// large. Returns the vertices whose distance dropped (each once), the entries expanded, and
/// (visited, stale).
fn relax(
    graph: &Graph,
    pool: &LatencyPool,
    dist: &[AtomicU32],
    stamp: &[AtomicU32],
    entries: &[u32],
    round: u32,
    edges: Edges,
) -> Result<Share> {
    if entries.len() < INLINE {
        let mut share = Share::default();
        relax_slice(graph, dist, stamp, entries, round, edges, &mut share);
        return Ok(share);
    }
    let next_chunk = AtomicUsize::new(0);
    let parts = pool.broadcast_scoped(|_| {
        let mut share = Share::default();
        loop {
            let start = next_chunk.fetch_add(CHUNK, Relaxed);
            if start >= entries.len() {
                break;
            }
            let slice = &entries[start..(start + CHUNK).min(entries.len())];
            relax_slice(graph, dist, stamp, slice, round, edges, &mut share);
        }
        share
    })?;
    let mut all = Share::default();
    for part in parts {
        all.queued.extend(part.queued);
        all.expanded.extend(part.expanded);
        all.visited += part.visited;
        all.stale += part.stale;
        all.relaxed += part.relaxed;
    }
    Ok(all)
}

/// One thread's relaxation of `entries`, added to `share`.
fn relax_slice(
    graph: &Graph,
    dist: &[AtomicU32],
    stamp: &[AtomicU32],
    entries: &[u32],
    round: u32,
    edges: Edges,
    share: &mut Share,
) {
    for &u in entries {
        let du = dist[u as usize].load(Relaxed);
        let (light, delta) = match edges {
            Edges::Light { delta, bucket } => {
                if du / delta != bucket {
                    share.stale += 1;
                    continue;
                }
                share.visited += 1;
                share.expanded.push(u);
                (true, delta)
            }
            Edges::Heavy { delta } => (false, delta),
        };
        for (v, w) in graph.neighbors(u) {
            if (w <= delta) != light {
                continue;
            }
            share.relaxed += 1;
            if lower(dist, stamp, v, du, w, round) {
                share.queued.push(v);
            }
        }
    }
}
