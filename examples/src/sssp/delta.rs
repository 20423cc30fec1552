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
//! buckets (no shared queue to contend on), and a round's frontier is what each thread had in
//! the bucket being opened, copied into one shared frontier at an offset a shared counter
//! hands out, then claimed in chunks. Unlike GAP, a thread claims its own part first and
//! only then helps with the others' (see `Parts`): it goes on with the vertices it lowered
//! itself, whose neighbourhoods its cache holds, and so each thread keeps to a region of the
//! graph from round to round. Every vertex whose distance a thread
//! lowered goes into that thread's bucket for the new distance, duplicates and all: an entry
//! is stale (skipped) when its vertex's distance dropped below the open bucket since, or when
//! the vertex was already expanded with its current distance.
//!
//! A round on a road-like graph is short (about 1,700 vertices over all threads on a 4 M
//! vertex geometric graph), so what a round costs besides expanding decides how far the
//! search scales: a thread expands its own entries of the open bucket without meeting the
//! others while it holds fewer than `LOCAL_LIMIT` (GAP's bin fusion: one round per bucket
//! there instead of ~16), nothing is allocated per round (a bucket's vector goes back to its
//! ring slot, capacity kept, once copied), no lock is taken, and a thread reads only the
//! shared words it needs (one counter per round to publish, one to claim). Entries that
//! carry the distance they were filed with (stale exactly when it dropped since) would spare
//! the expanded-distance words, but they change the order labels improve in: 14 % more
//! expansions on that graph and no faster on 16 threads.
//!
//! A vertex with `HEAVY` (4,096) edges or more (a Kronecker graph's hubs) is not one thread's work:
//! the thread that publishes it marks it expanded (a swap, so one thread does) and publishes
//! its edges as pieces that every thread claims before the ordinary entries.
//!
//! The search runs as a stint (`Stint`) from any set of waiting vertices and can stop before a
//! round with a given number of edges to scan, handing back what waits: cooperative
//! delta-stepping ([`coop_delta`](super::coop_delta)) moves searches between these threads
//! and the device that way; [`shortest_paths`] is one stint from the source to the end.
//!
//! Memory ordering: distances are single atomic words, lowered with `Relaxed` `fetch_min`
//! (its result alone says who lowered), and the barrier orders each round: everything a
//! thread wrote before arriving (its frontier entries, its distances, the counters) is visible
//! to every thread after the wait (see [`SpinBarrier`]). Between the two meetings of a round
//! threads only publish (the frontier and its length) and between the second meeting and the
//! next round's first they only read them, so one frontier and one of each counter serve
//! every round; each counter is reset by the leader of the meeting after its last reader.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

use crossbeam::utils::CachePadded;

use asym_runtime::{host_memory, Error, LatencyPool, Result, SpinBarrier};

use super::{distances_in_place, filled_huge, lowered, relaxed_distance, SsspRun, SsspStats};
use crate::graph::Graph;

/// Frontier entries a thread claims at a time (divides [`SEGMENT`]: a chunk of the heavy
/// vertices' pieces never straddles two segments).
const CHUNK: usize = 64;
/// Entries per frontier segment.
const SEGMENT: usize = 1 << 16;
/// A vertex with this many edges or more is expanded by every thread together: its edges
/// are published in pieces of [`PIECE`] that the threads claim like frontier chunks (a
/// Kronecker graph's hub source has 320,000 edges: one thread alone held every other at the
/// round's barrier).
const HEAVY: usize = 4096;
/// Edges per piece of a heavy vertex.
const PIECE: usize = 1024;
/// Buckets each thread keeps in its ring; further ones wait in an ordered map.
const WINDOW: u32 = 1024;
/// A thread goes on expanding its own entries of the open bucket, without meeting the
/// others, while it holds fewer than this many (GAP's `kBinSizeThreshold`): on a road-like
/// graph most of a bucket's re-openings are a few vertices one thread lowered, and a round
/// for them would cost two meetings of every thread.
const LOCAL_LIMIT: usize = 1000;

/// A bucket width from the graph alone: the mean edge weight times 32, at least 1. Wide
/// buckets mean fewer rounds (each a barrier on the latency threads, a grid-wide step on the
/// device) at the price of a few re-expansions; 32x the mean was the best or within the
/// spread of the best on both engines and both generated graph kinds
/// (docs/benchmarks/sssp.md). The degree does not enter: the Kronecker graph (mean degree 32)
/// searches alike from 1x to 64x the mean weight, and on the road-like graph (mean degree 8)
/// the best width follows the thread count and the numbering instead (4x wider wins with 16
/// threads in breadth-first order, loses with 8 threads or a random numbering).
pub fn auto_delta(graph: &Graph) -> u32 {
    let (_, _, weights) = graph.csr();
    if weights.is_empty() {
        return 1;
    }
    let mean = weights.iter().map(|&w| w as u64).sum::<u64>() / weights.len() as u64;
    u32::try_from(mean.saturating_mul(32))
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
    check_delta(delta)?;
    let started = std::time::Instant::now();
    let n = graph.vertices();
    // The answer's memory holds the search's two arrays of 32-bit words (distances, then
    // expanded distances) and is converted in place after it: half the fresh memory the
    // arrays and the answer took apart (the time moved within the H200 machine's spread).
    // The two words of a vertex side by side instead took a Kronecker search from 111 to
    // 120 ms on 16 threads (medians of five, one run): a cache line then covers half as
    // many neighbours' distances.
    let mut distances = filled_huge(n, || u64::MAX);
    let searching = std::time::Instant::now();
    let mut stats = {
        let words = host_memory::u64s_as_atomic_u32_pairs(&mut distances);
        let (dist, expanded) = words.split_at(n);
        dist[source].store(0, Relaxed);
        let stint = Stint {
            graph,
            dist,
            expanded,
            delta,
            stop_at: usize::MAX,
            measure_rounds: false,
        };
        stint.run(pool, &[source as u32])?.stats
    };
    let search_time = searching.elapsed();
    distances_in_place(graph, &mut distances)?;
    stats.compute_time = started.elapsed();
    stats.transfer_time = stats.compute_time.saturating_sub(search_time);
    Ok(SsspRun { distances, stats })
}

/// The error for a bucket width of 0.
pub(crate) fn check_delta(delta: u32) -> Result<()> {
    if delta == 0 {
        return Err(Error::InvalidArgument(
            "delta 0: buckets must be at least 1 wide".into(),
        ));
    }
    Ok(())
}

/// Delta-stepping on the latency threads from any state: distances in `dist` (host memory or
/// a mapped SVM buffer), the vertices waiting to be expanded given to [`Stint::run`]. With a
/// finite `stop_at` it stops before the first round whose frontier's vertices have that many
/// edges between them (the waiting vertices themselves count as a round) and returns what
/// still waits (cooperative delta-stepping hands such heavy rounds to the device).
pub(crate) struct Stint<'a> {
    pub graph: &'a Graph,
    pub dist: &'a [AtomicU32],
    /// The lowest distance each vertex was expanded with (`u32::MAX`: never), kept between
    /// stints of one search.
    pub expanded: &'a [AtomicU32],
    pub delta: u32,
    pub stop_at: usize,
    /// Whether rounds are measured in edges ([`StintEnd::peak_round`]; always where
    /// `stop_at` is finite).
    pub measure_rounds: bool,
}

/// How a [`Stint`] ended.
pub(crate) struct StintEnd {
    /// Rounds, buckets, vertices expanded, stale entries, edges scanned, barrier waits.
    pub stats: SsspStats,
    /// The vertices still waiting when the stint stopped at a heavy round (each at least
    /// once; duplicates and stale entries possible); `None` when the search is done.
    pub waiting: Option<Vec<u32>>,
    /// The most edges a round's frontier had to scan (the round it stopped at included).
    pub peak_round: usize,
}

impl Stint<'_> {
    /// Runs from `waiting` (the vertices whose distance was lowered but not yet expanded
    /// with it; every vertex closer than the nearest of them is settled).
    pub fn run(&self, pool: &LatencyPool, waiting: &[u32]) -> Result<StintEnd> {
        let bucket = |v: u32| -> Option<u32> {
            let d = self.dist.get(v as usize)?.load(Relaxed);
            (d != u32::MAX).then_some(d / self.delta)
        };
        let Some(open) = waiting.iter().filter_map(|&v| bucket(v)).min() else {
            return Ok(StintEnd {
                stats: SsspStats::default(),
                waiting: None,
                peak_round: 0,
            });
        };
        let edges: usize = waiting.iter().map(|&v| self.graph.out_degree(v)).sum();
        if edges >= self.stop_at {
            // Heavy already (a hub of a source): the device's from the start.
            return Ok(StintEnd {
                stats: SsspStats::default(),
                waiting: Some(self.distinct_waiting(waiting.to_vec())),
                peak_round: edges,
            });
        }
        let shared = Shared {
            graph: self.graph,
            dist: self.dist,
            expanded: self.expanded,
            delta: self.delta,
            frontier: Frontier::new(self.graph.edges()),
            // Two entries per piece; a heavy vertex (at least 4 pieces' worth of edges) is
            // published at most once per round, in at most 1.25 pieces per PIECE edges.
            pieces: Frontier::new(3 * (self.graph.edges() / PIECE) + 2),
            piece_claims: CachePadded::new(AtomicUsize::new(0)),
            split_heavy: pool.len() > 1,
            round_edges: CachePadded::new(AtomicUsize::new(0)),
            parts: Parts::new(pool.len()),
            next_bucket: CachePadded::new(AtomicU32::new(u32::MAX)),
            barrier: SpinBarrier::new(pool.len(), pool.timeout()),
            waiting,
            first_bucket: open,
            stop_at: self.stop_at,
            measure_rounds: self.measure_rounds || self.stop_at != usize::MAX,
        };
        let counts = pool.broadcast_scoped(|w| shared.run(w.index, w.threads))?;
        let mut stats = SsspStats::default();
        let threads = counts.len().max(1) as u32;
        let mut left = Vec::new();
        let mut stopped = false;
        let mut peak_round = if self.measure_rounds { edges } else { 0 };
        for c in counts {
            let c = c?;
            stats.wait_time += c.waited / threads;
            stats.visited += c.visited;
            stats.stale += c.stale;
            stats.relaxed += c.relaxed;
            // Every thread counts the same rounds and buckets.
            stats.iterations = c.rounds;
            stats.buckets = c.buckets;
            peak_round = peak_round.max(c.peak_round);
            if let Some(mut mine) = c.left {
                stopped = true;
                left.append(&mut mine);
            }
        }
        if !stopped {
            return Ok(StintEnd {
                stats,
                waiting: None,
                peak_round,
            });
        }
        // The heavy round's frontier, published but not expanded.
        let total = shared.frontier.len.load(Relaxed);
        let mut at = 0;
        while at < total {
            let run = shared.frontier.run(at, total)?;
            left.extend(run.iter().map(|v| v.load(Relaxed)));
            at += run.len();
        }
        // Its heavy vertices, marked expanded when their pieces were published: unmarked,
        // they wait with the rest.
        let total = shared.pieces.len.load(Relaxed);
        for start in (0..total).step_by(CHUNK) {
            let chunk = shared.pieces.run(start, (start + CHUNK).min(total))?;
            for pair in chunk.chunks(2) {
                if pair[1].load(Relaxed) == 0 {
                    let u = pair[0].load(Relaxed);
                    self.expanded[u as usize].store(u32::MAX, Relaxed);
                    left.push(u);
                }
            }
        }
        Ok(StintEnd {
            stats,
            waiting: Some(self.distinct_waiting(left)),
            peak_round,
        })
    }

    /// Each vertex of `entries` once, without those already expanded with their current
    /// distance (stale entries): at most one per vertex, as the device's lists hold.
    fn distinct_waiting(&self, mut entries: Vec<u32>) -> Vec<u32> {
        let mut seen = vec![0u64; self.dist.len().div_ceil(64)];
        entries.retain(|&v| {
            let (word, bit) = (v as usize / 64, 1u64 << (v % 64));
            if seen[word] & bit != 0 {
                return false;
            }
            seen[word] |= bit;
            self.expanded[v as usize].load(Relaxed) > self.dist[v as usize].load(Relaxed)
        });
        entries
    }
}

/// What the threads of one search share.
struct Shared<'a> {
    graph: &'a Graph,
    dist: &'a [AtomicU32],
    /// The lowest distance each vertex was expanded with: a second entry of a vertex whose
    /// distance has not dropped since has nothing new to relax.
    expanded: &'a [AtomicU32],
    delta: u32,
    /// The round's frontier (published between a round's two meetings, read after them).
    frontier: Frontier,
    /// The round's heavy vertices as pieces, `vertex, piece` pairs (published and read as
    /// the frontier is); they are expanded first.
    pieces: Frontier,
    /// Entries of `pieces` claimed so far this round (two per piece).
    piece_claims: CachePadded<AtomicUsize>,
    /// Whether heavy vertices are split (more than one thread).
    split_heavy: bool,
    /// Edges leaving the round's frontier entries, summed as they are published (reset
    /// with the frontier's length); only counted when the stint can stop.
    round_edges: CachePadded<AtomicUsize>,
    /// Where each thread's entries lie in `frontier`, and how far they are claimed.
    parts: Parts,
    /// The lowest non-empty bucket of any thread, a minimum over threads (filled before the
    /// first meeting, read after it, reset by the second meeting's leader).
    next_bucket: CachePadded<AtomicU32>,
    barrier: SpinBarrier,
    /// The vertices waiting when the stint starts, shared out between the threads.
    waiting: &'a [u32],
    /// The lowest bucket of `waiting`: the first one opened.
    first_bucket: u32,
    /// Rounds whose frontier has this many edges to scan end the stint before expanding.
    stop_at: usize,
    /// Whether `round_edges` is counted.
    measure_rounds: bool,
}

/// A round's frontier: every thread's entries of the bucket being opened, one after another.
/// Segments of [`SEGMENT`] entries are allocated the first time a round reaches them (the
/// longest round decides the memory, not the graph), up to the graph's edge count plus one:
/// an entry is the source or a lowering by one edge, so no round holds more.
struct Frontier {
    segments: Vec<OnceLock<Box<[AtomicU32]>>>,
    /// Entries published this round (a thread's fetch-and-add is where its entries go).
    len: CachePadded<AtomicUsize>,
}

impl Frontier {
    fn new(edges: usize) -> Self {
        Frontier {
            segments: (0..edges / SEGMENT + 1).map(|_| OnceLock::new()).collect(),
            len: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    fn segment(&self, s: usize) -> Result<&[AtomicU32]> {
        let slot = self
            .segments
            .get(s)
            .ok_or_else(|| Error::CapacityExceeded {
                what: "a delta-stepping round's frontier".into(),
                capacity: self.segments.len() * SEGMENT,
            })?;
        Ok(slot.get_or_init(|| (0..SEGMENT).map(|_| AtomicU32::new(0)).collect()))
    }

    /// Appends `entries` (between a round's two meetings); where they start.
    fn publish(&self, entries: &[u32]) -> Result<usize> {
        if entries.is_empty() {
            return Ok(0);
        }
        let mut at = self.len.fetch_add(entries.len(), Relaxed);
        let start = at;
        let mut rest = entries;
        while !rest.is_empty() {
            let seg = self.segment(at / SEGMENT)?;
            let from = at % SEGMENT;
            let n = rest.len().min(SEGMENT - from);
            for (slot, &v) in seg[from..from + n].iter().zip(&rest[..n]) {
                slot.store(v, Relaxed);
            }
            rest = &rest[n..];
            at += n;
        }
        Ok(start)
    }

    /// The entries from `from` on, up to `to` or the end of `from`'s segment, whichever
    /// comes first (after the second meeting). A chunk of pieces (`from` a multiple of
    /// [`CHUNK`], at most [`CHUNK`] long) lies in one segment and comes whole.
    fn run(&self, from: usize, to: usize) -> Result<&[AtomicU32]> {
        let seg = self.segment(from / SEGMENT)?;
        let at = from % SEGMENT;
        Ok(&seg[at..at + (to - from).min(SEGMENT - at)])
    }
}

/// Each thread's part of a round's frontier: where its entries start, how many there are,
/// and how many have been claimed. A thread expands its own part first, then claims chunks of
/// the others' in turn from its neighbour on. Claiming one shared frontier in order instead
/// (GAP's way) hands each thread chunks of every other thread's region, and on a road-like
/// graph, where most of a search is the threads expanding what they lowered themselves (bin
/// fusion), a thread then works all over the graph, its distance words' cache lines moving
/// between cores: on 16 cores an edge cost about twice what it costs one thread alone. Parts
/// keep each thread in its region; where neighbours lie anywhere (Kronecker, a random
/// numbering) they change nothing.
///
/// Memory ordering: a part's words are written by its owner between a round's two meetings
/// (nobody else reads them then), and read and claimed by every thread after the second
/// meeting; the barrier orders the two.
struct Parts {
    parts: Vec<CachePadded<Part>>,
}

#[derive(Default)]
struct Part {
    start: AtomicUsize,
    len: AtomicUsize,
    claimed: AtomicUsize,
}

impl Parts {
    fn new(threads: usize) -> Self {
        Parts {
            parts: (0..threads.max(1))
                .map(|_| CachePadded::default())
                .collect(),
        }
    }

    /// Thread `owner` published `len` entries at `start` (between the meetings).
    fn set(&self, owner: usize, start: usize, len: usize) {
        let part = &self.parts[owner];
        part.start.store(start, Relaxed);
        part.len.store(len, Relaxed);
        part.claimed.store(0, Relaxed);
    }

    /// The next chunk of part `owner` (up to [`CHUNK`] entries: `start..end`), if any.
    fn claim(&self, owner: usize) -> Option<(usize, usize)> {
        let part = &self.parts[owner];
        let len = part.len.load(Relaxed);
        // A load first: a finished part costs its thieves no read-modify-write.
        if part.claimed.load(Relaxed) >= len {
            return None;
        }
        let at = part.claimed.fetch_add(CHUNK, Relaxed);
        (at < len).then(|| {
            let start = part.start.load(Relaxed);
            (start + at, start + (at + CHUNK).min(len))
        })
    }
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
    /// Entries of this thread's buckets when the stint stopped at a heavy round.
    left: Option<Vec<u32>>,
    /// The most edges a round's frontier had to scan (counted when the stint can stop).
    peak_round: usize,
}

impl Shared<'_> {
    /// One thread's part of the search: rounds until no thread has a bucket left.
    fn run(&self, index: usize, threads: usize) -> Result<Counts> {
        // A thread that fails stops the others at the barrier instead of leaving them waiting.
        let guard = self.barrier.guard();
        let mut open = self.first_bucket;
        let mut buckets = Buckets::starting_at(open);
        let share = self.waiting.len().div_ceil(threads.max(1));
        for &v in self.waiting.iter().skip(index * share).take(share) {
            if let Some(d) = self.dist.get(v as usize).map(|d| d.load(Relaxed)) {
                if d != u32::MAX {
                    buckets.push(d / self.delta, v);
                }
            }
        }
        let mut counts = Counts {
            buckets: 1,
            ..Counts::default()
        };
        loop {
            let round = self.round_edges.load(Relaxed);
            counts.peak_round = counts.peak_round.max(round);
            if round >= self.stop_at {
                // Every thread read the same length after the meeting: all stop here.
                counts.left = Some(buckets.drain());
                break;
            }
            self.expand_pieces(&mut buckets, &mut counts)?;
            self.expand(index, open, &mut buckets, &mut counts)?;
            let mut heavy = Vec::new();
            while let Some(local) = buckets.take_small(open, LOCAL_LIMIT) {
                for &u in &local {
                    if self.is_heavy(u) {
                        // Left for a round, where every thread takes a share of its edges.
                        heavy.push(u);
                    } else {
                        self.expand_vertex(u, open, &mut buckets, &mut counts);
                    }
                }
                buckets.recycle(local);
            }
            for u in heavy {
                buckets.push(open, u);
            }
            counts.rounds += 1;
            if let Some(b) = buckets.lowest() {
                self.next_bucket.fetch_min(b, Relaxed);
            }
            // Every thread has read this round's length and claimed its last chunk.
            let t = std::time::Instant::now();
            self.barrier.wait_with(|| {
                self.frontier.len.store(0, Relaxed);
                self.piece_claims.store(0, Relaxed);
                self.pieces.len.store(0, Relaxed);
                self.round_edges.store(0, Relaxed);
            })?;
            counts.waited += t.elapsed();
            let next = self.next_bucket.load(Relaxed);
            if next == u32::MAX {
                break;
            }
            let part = buckets.take(next);
            self.publish(index, &part, next, &mut counts)?;
            if self.measure_rounds && !part.is_empty() {
                let edges = part.iter().map(|&v| self.graph.out_degree(v)).sum();
                self.round_edges.fetch_add(edges, Relaxed);
            }
            buckets.give_back(next, part);
            // Every thread has read the minimum.
            let t = std::time::Instant::now();
            self.barrier
                .wait_with(|| self.next_bucket.store(u32::MAX, Relaxed))?;
            counts.waited += t.elapsed();
            if next != open {
                counts.buckets += 1;
            }
            open = next;
        }
        guard.finish();
        Ok(counts)
    }

    fn is_heavy(&self, u: u32) -> bool {
        self.split_heavy && self.graph.out_degree(u) >= HEAVY
    }

    /// Publishes this thread's entries of bucket `next`, the round's frontier: heavy vertices
    /// as pieces of their edges, marked expanded here (their pieces skip the marks; a stale
    /// one is counted and left out).
    fn publish(&self, index: usize, part: &[u32], next: u32, counts: &mut Counts) -> Result<()> {
        if !part.iter().any(|&u| self.is_heavy(u)) {
            let start = self.frontier.publish(part)?;
            self.parts.set(index, start, part.len());
            return Ok(());
        }
        let mut light = Vec::with_capacity(part.len());
        let mut pieces = Vec::new();
        for &u in part {
            if !self.is_heavy(u) {
                light.push(u);
                continue;
            }
            let du = self.dist[u as usize].load(Relaxed);
            // A swap, not expand_vertex's plain store: two threads holding entries of one
            // heavy vertex must not both publish its pieces (the pieces' room is counted).
            if du / self.delta != next || self.expanded[u as usize].swap(du, Relaxed) <= du {
                counts.stale += 1;
                continue;
            }
            counts.visited += 1;
            for k in 0..self.graph.out_degree(u).div_ceil(PIECE) {
                pieces.extend([u, k as u32]);
            }
        }
        let start = self.frontier.publish(&light)?;
        self.parts.set(index, start, light.len());
        self.pieces.publish(&pieces).map(drop)
    }

    /// Relaxes the edges of this round's heavy vertices, claimed a piece at a time. A
    /// piece relaxes from its vertex's current distance (lower than when it was published
    /// only if another thread lowered it this round: a real path, and the vertex is filed
    /// again for it).
    fn expand_pieces(&self, buckets: &mut Buckets, counts: &mut Counts) -> Result<()> {
        let total = self.pieces.len.load(Relaxed);
        loop {
            let at = self.piece_claims.fetch_add(2, Relaxed);
            if at >= total {
                return Ok(());
            }
            // Pairs start at even offsets and CHUNK is even: a pair lies in one chunk.
            let from = at / CHUNK * CHUNK;
            let chunk = self.pieces.run(from, (from + CHUNK).min(total))?;
            let u = chunk[at - from].load(Relaxed);
            let k = chunk[at - from + 1].load(Relaxed) as usize;
            let du = self.dist[u as usize].load(Relaxed);
            let (offsets, targets, weights) = self.graph.csr();
            let start = offsets[u as usize] as usize + k * PIECE;
            let end = (start + PIECE).min(offsets[u as usize + 1] as usize);
            for (&v, &w) in targets[start..end].iter().zip(&weights[start..end]) {
                counts.relaxed += 1;
                let nd = relaxed_distance(du, w);
                if lowered(self.dist, v, nd) {
                    buckets.push(nd / self.delta, v);
                }
            }
        }
    }

    /// Expands this round's frontier, claimed in chunks (this thread's own part first, see
    /// [`Parts`]), filing each vertex whose distance it lowered into `buckets`. The claim
    /// counters are what the threads contend on (chunks of 64 entries: fewer claims than
    /// chunks of 4 or 16, which cost a road-like search on 16 cores much more).
    fn expand(
        &self,
        index: usize,
        open: u32,
        buckets: &mut Buckets,
        counts: &mut Counts,
    ) -> Result<()> {
        let threads = self.parts.parts.len();
        for owner in (0..threads).map(|k| (index + k) % threads) {
            while let Some((mut from, to)) = self.parts.claim(owner) {
                while from < to {
                    let run = self.frontier.run(from, to)?;
                    for u in run {
                        self.expand_vertex(u.load(Relaxed), open, buckets, counts);
                    }
                    from += run.len();
                }
            }
        }
        Ok(())
    }

    fn expand_vertex(&self, u: u32, open: u32, buckets: &mut Buckets, counts: &mut Counts) {
        let du = self.dist[u as usize].load(Relaxed);
        // Stale: its distance dropped below the open bucket since it was filed, or another
        // entry of it was expanded with this distance already.
        let expanded = &self.expanded[u as usize];
        if du / self.delta != open || expanded.load(Relaxed) <= du {
            counts.stale += 1;
            return;
        }
        // A plain store, not a read-modify-write: in breadth-first order the threads expand
        // neighbouring vertices, whose words share cache lines. Two threads racing here both
        // expand u (correct, a little work twice); a later, larger store only lets a later
        // entry of u expand again. Every value stored is a distance u is being expanded with,
        // so a word at or below `du` still means nothing new to relax.
        expanded.store(du, Relaxed);
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
    /// An emptied vector kept for [`Buckets::take_small`]'s next swap.
    spare: Vec<u32>,
    beyond: BTreeMap<u32, Vec<u32>>,
    /// The open bucket: no bucket below it holds anything.
    base: u32,
}

impl Buckets {
    /// Empty buckets, `base` the lowest that will be opened.
    fn starting_at(base: u32) -> Self {
        Buckets {
            ring: (0..WINDOW).map(|_| Vec::new()).collect(),
            spare: Vec::new(),
            beyond: BTreeMap::new(),
            base,
        }
    }

    /// Every entry still filed, the buckets left empty.
    fn drain(&mut self) -> Vec<u32> {
        let mut all: Vec<u32> = self.ring.iter_mut().flat_map(std::mem::take).collect();
        for (_, mut entries) in std::mem::take(&mut self.beyond) {
            all.append(&mut entries);
        }
        all
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

    /// The entries of the open bucket `bucket` when there are some and fewer than `limit`
    /// (the bucket keeps the spare vector's capacity for what their expansion files there).
    fn take_small(&mut self, bucket: u32, limit: usize) -> Option<Vec<u32>> {
        let slot = &mut self.ring[(bucket % WINDOW) as usize];
        if slot.is_empty() || slot.len() >= limit {
            return None;
        }
        Some(std::mem::replace(slot, std::mem::take(&mut self.spare)))
    }

    /// Keeps `entries`' vector, emptied, as the spare.
    fn recycle(&mut self, mut entries: Vec<u32>) {
        entries.clear();
        self.spare = entries;
    }

    /// Returns the vector [`Buckets::take`] gave for `bucket`, emptied, to its slot: its
    /// capacity serves the bucket's later entries instead of a new allocation every round.
    fn give_back(&mut self, bucket: u32, mut entries: Vec<u32>) {
        entries.clear();
        let slot = &mut self.ring[(bucket % WINDOW) as usize];
        if slot.is_empty() && slot.capacity() < entries.capacity() {
            *slot = entries;
        }
    }
}
