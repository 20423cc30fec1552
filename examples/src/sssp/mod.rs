//! Parallel single-source shortest paths, the concurrent-heap seed's first application.
//!
//! One front runs every search: [`front::Sssp::shortest_paths`] with a source, a
//! [`Mode`](asym_runtime::Mode) and an [`Order`] (frontier, heap or delta-stepping). The
//! modules below are its engines, public for tests and benchmarks that drive one directly.
//!
//! Both searches are label-correcting (Bellman–Ford with work lists, as Gunrock's SSSP): each
//! iteration expands a frontier of vertices in parallel, relaxing their edges with an atomic
//! minimum on the distance array, and the vertices whose distance dropped form the next
//! frontier (each once: a per-vertex stamp of the iteration that queued it). Distances are
//! exact when no frontier is left, whatever order the vertices were expanded in.
//!
//! - [`Order::Frontier`], the baseline: the whole next frontier is expanded.
//! - [`Order::Heap`], the seed's heap-ordered search: once the frontier holds more than
//!   `threshold` vertices, it goes into a generalized heap keyed by distance and only the
//!   `pop` nearest vertices are expanded next; the heap stays in use until it is empty. Far
//!   vertices wait, so fewer of them are expanded with a distance that later drops again.
//!
//! Frontier entries are `(distance when queued, vertex)` pairs. An entry whose distance is
//! above the vertex's current one is stale: the vertex was queued again when its distance
//! dropped, so the stale entry is skipped (not expanded, not counted as visited). The
//! device's whole-frontier search keeps plain vertex lists instead (its iterations run
//! without the host between them): there a vertex is stale when the running iteration
//! already lowered and queued it again.
//!
//! The two engines run the same loop (`search`): [`cpu`] on pinned latency threads with
//! the [`ConcurrentGeneralizedHeap`](asym_structures::ConcurrentGeneralizedHeap), [`device`] with
//! the relaxation in a kernel (`kernels/sssp.cl`) and the
//! [`DeviceGeneralizedHeap`](asym_structures::DeviceGeneralizedHeap) or the
//! [`CooperativeHeap`](asym_structures::CooperativeHeap).

pub mod coop_delta;
pub mod cpu;
pub mod delta;
pub mod device;
#[cfg(feature = "mpi")]
pub mod distributed;
pub mod front;
pub mod near_far;
pub mod partition;
pub mod spread;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::time::{Duration, Instant};

use asym_runtime::{host_memory, Error, Result};

use crate::graph::{Graph, UNREACHABLE};
use asym_structures::BatchHeap;

/// A frontier entry: `(distance when queued, vertex)`; the heap orders by distance first.
pub type Pair = (u32, u32);

/// A distance the 32-bit searches cannot hold: the searches stop with an error rather than
/// wrap around.
pub const DISTANCE_LIMIT: u64 = u32::MAX as u64 - 1;

/// How the next vertices to expand are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Expand the whole frontier every iteration (the baseline).
    Frontier,
    /// Order the frontier by distance in a generalized heap once it exceeds `threshold`
    /// vertices, expanding the `pop` nearest each iteration.
    Heap {
        /// Frontier size above which the heap is used (the seed's N = 10K).
        threshold: usize,
        /// Vertices taken from the heap per iteration.
        pop: usize,
        /// Keys per heap node (K).
        batch: usize,
    },
    /// Delta-stepping: buckets `width` wide, their vertices settled bucket by bucket
    /// ([`delta`] on the latency threads, [`near_far`] on a device, [`coop_delta`] on both).
    Delta {
        /// Bucket width (at least 1; [`delta::auto_delta`] picks one from the graph).
        width: u32,
    },
}

impl Order {
    /// The seed's setting: threshold and pop 10,000, with batches of `batch` keys.
    pub fn heap(batch: usize) -> Self {
        Order::Heap {
            threshold: 10_000,
            pop: 10_000,
            batch,
        }
    }

    /// The order's name in tables and JSON rows: frontier, heap or delta.
    pub fn name(self) -> &'static str {
        match self {
            Order::Frontier => "frontier",
            Order::Heap { .. } => "heap",
            Order::Delta { .. } => "delta",
        }
    }

    /// Checks the order's numbers; `search`'s work-list loop runs the frontier and heap
    /// orders only (delta-stepping has its own engines).
    fn check(self) -> Result<()> {
        match self {
            Order::Heap { threshold, pop, .. } if pop == 0 || threshold == 0 => {
                Err(Error::InvalidArgument(format!(
                    "heap threshold {threshold} and pop {pop}: both must be at least 1"
                )))
            }
            Order::Delta { width } => Err(Error::InvalidArgument(format!(
                "delta-stepping (width {width}) does not run on the work-list loop"
            ))),
            _ => Ok(()),
        }
    }
}

/// What a search did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SsspStats {
    /// Iterations (frontier expansions).
    pub iterations: u64,
    /// Vertices expanded (entries not skipped as stale), summed over iterations.
    pub visited: u64,
    /// Stale entries skipped.
    pub stale: u64,
    /// Edges scanned from expanded vertices (delta-stepping; 0 where not counted).
    pub relaxed: u64,
    /// Buckets opened (delta-stepping; 0 for the other searches).
    pub buckets: u64,
    /// Kernel launches of the device's delta-stepping iterations (0 elsewhere).
    pub launches: u64,
    /// Entries inserted into the heap.
    pub heap_inserted: u64,
    /// Time in heap operations (inserting the frontier, taking the nearest vertices).
    pub heap_time: Duration,
    /// Time expanding frontiers (relaxation, building the next frontier).
    pub compute_time: Duration,
    /// Delta-stepping on the latency threads: the time a thread spent waiting at the round
    /// barriers, averaged over the threads (the rest of `compute_time` is expansion).
    pub wait_time: Duration,
    /// Delta-stepping: the time outside the search itself, setting up its arrays and
    /// reading the distances out into the answer (part of `compute_time`).
    pub transfer_time: Duration,
}

/// Distances (as [`Graph::dijkstra`] gives them: [`UNREACHABLE`] where no path leads) and
/// what the search did.
#[derive(Clone, Debug)]
pub struct SsspRun {
    /// Distance of every vertex from the source.
    pub distances: Vec<u64>,
    /// Counters and times.
    pub stats: SsspStats,
}

/// An engine's relaxation: it holds the distances and the current frontier.
pub(crate) trait Relaxer {
    /// Entries in the current frontier.
    fn frontier_len(&self) -> usize;
    /// The current frontier, moved to the host.
    fn take_frontier(&mut self) -> Result<Vec<Pair>>;
    /// Replaces the current frontier.
    fn set_frontier(&mut self, pairs: &[Pair]) -> Result<()>;
    /// Expands the current frontier; the next one replaces it. Returns (visited, stale).
    fn expand(&mut self) -> Result<(u64, u64)>;
    /// The final distances.
    fn distances(&mut self) -> Result<Vec<u64>>;
}

/// The search loop both engines share.
pub(crate) fn search(
    relax: &mut dyn Relaxer,
    mut heap: Option<&mut dyn BatchHeap<Pair>>,
    order: Order,
    source: u32,
) -> Result<SsspRun> {
    order.check()?;
    let mut stats = SsspStats::default();
    relax.set_frontier(&[(0, source)])?;
    loop {
        if let (Order::Heap { threshold, pop, .. }, Some(heap)) = (order, heap.as_deref_mut()) {
            if !heap.is_empty() || relax.frontier_len() > threshold {
                let t = Instant::now();
                let frontier = relax.take_frontier()?;
                heap.insert(&frontier)?;
                stats.heap_inserted += frontier.len() as u64;
                let next = heap.delete_min(pop)?;
                relax.set_frontier(&next)?;
                stats.heap_time += t.elapsed();
            }
        }
        if relax.frontier_len() == 0 {
            break;
        }
        let t = Instant::now();
        let (visited, stale) = relax.expand()?;
        stats.compute_time += t.elapsed();
        stats.iterations += 1;
        stats.visited += visited;
        stats.stale += stale;
    }
    let t = Instant::now();
    let distances = relax.distances()?;
    stats.compute_time += t.elapsed();
    Ok(SsspRun { distances, stats })
}

/// Compares `distances` with the reference (Dijkstra's): `Err` names the first vertex that
/// differs (1-based, as in the graph files).
pub fn check_distances(distances: &[u64], reference: &[u64]) -> std::result::Result<(), String> {
    if distances.len() != reference.len() {
        return Err(format!(
            "{} distances for {} vertices",
            distances.len(),
            reference.len()
        ));
    }
    let show = |d: u64| {
        if d == UNREACHABLE {
            "unreachable".to_string()
        } else {
            d.to_string()
        }
    };
    match distances.iter().zip(reference).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(v) => Err(format!(
            "vertex {}: distance {} but Dijkstra gives {} ({} vertices differ)",
            v + 1,
            show(distances[v]),
            show(reference[v]),
            distances
                .iter()
                .zip(reference)
                .filter(|(a, b)| a != b)
                .count()
        )),
    }
}

/// The stamp after `iteration` (stamps tell iterations, or rounds, apart; 0 is never one).
pub(crate) fn next_iteration(iteration: u32) -> Result<u32> {
    iteration
        .checked_add(1)
        .ok_or_else(|| Error::InvalidArgument("the search ran 2^32 - 1 iterations".into()))
}

/// Lowers `dist[v]` to `du + w` (saturating at [`DISTANCE_LIMIT`]: a path at the limit never
/// beats a real distance below it, and a vertex left there is reported as an overflow).
/// Returns whether this call lowered it and is the first in stamp `now` to queue `v`.
/// `Relaxed` suffices: each word's modification order alone decides who lowered the distance
/// and who queued the vertex (see the callers' memory-ordering notes).
pub(crate) fn lower(
    dist: &[AtomicU32],
    stamp: &[AtomicU32],
    v: u32,
    du: u32,
    w: u32,
    now: u32,
) -> bool {
    let nd = relaxed_distance(du, w);
    lowered(dist, v, nd) && stamp[v as usize].swap(now, Relaxed) != now
}

/// `du + w`, saturating at [`DISTANCE_LIMIT`].
pub(crate) fn relaxed_distance(du: u32, w: u32) -> u32 {
    (du as u64 + w as u64).min(DISTANCE_LIMIT) as u32
}

/// Lowers `dist[v]` to `nd` where that is smaller; whether this call lowered it (a plain
/// load first skips the read-modify-write where it cannot win).
pub(crate) fn lowered(dist: &[AtomicU32], v: u32, nd: u32) -> bool {
    let slot = &dist[v as usize];
    nd < slot.load(Relaxed) && nd < slot.fetch_min(nd, Relaxed)
}

/// Final distances from the 32-bit words `word(0..n)` as [`Graph::dijkstra`] gives them
/// (`u32::MAX`: unreachable), converted in one pass on rayon's threads into huge pages where
/// the machine has them (a 4 M-vertex answer is 32 MB: one thread writing it took longer
/// than some searches); a word at the limit is an overflow error.
pub(crate) fn distances_par(
    graph: &Graph,
    n: usize,
    word: impl Fn(usize) -> u32 + Sync,
) -> Result<Vec<u64>> {
    use rayon::prelude::*;
    let overflow = AtomicBool::new(false);
    let mut out = host_memory::huge_page_vec(n);
    (0..n)
        .into_par_iter()
        .with_min_len(1 << 14)
        .map(|v| answer_distance(word(v), &overflow))
        .collect_into_vec(&mut out);
    if overflow.into_inner() {
        return Err(overflow_error(graph.max_weight()));
    }
    Ok(out)
}

/// [`distances_par`] from one word per vertex, `words`, into memory an [`AnswerMemory`]
/// prepared (`out.len()` words, as many), a chunk per task in a loop the compiler vectorizes
/// (not a call per word with the overflow flag's atomic store in reach).
pub(crate) fn distances_into(graph: &Graph, out: &mut [u64], words: &[u32]) -> Result<()> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 15;
    if out.len() != words.len() {
        return Err(Error::InvalidArgument(format!(
            "{} distance words for an answer of {}",
            words.len(),
            out.len()
        )));
    }
    let overflow = out
        .par_chunks_mut(CHUNK)
        .zip(words.par_chunks(CHUNK))
        .map(|(out, words)| {
            let mut overflow = false;
            for (d, &w) in out.iter_mut().zip(words) {
                // answer_distance's cases without a branch on the flag.
                let w = u64::from(w);
                overflow |= w == DISTANCE_LIMIT;
                *d = if w >= DISTANCE_LIMIT { UNREACHABLE } else { w };
            }
            overflow
        })
        .reduce(|| false, |a, b| a | b);
    if overflow {
        return Err(overflow_error(graph.max_weight()));
    }
    Ok(())
}

/// [`distances_par`] in place: `words`' memory holds the `words.len()` 32-bit distance words
/// of a search in its first half (the view [`host_memory::u64s_as_atomic_u32_pairs`] gives,
/// `delta::shortest_paths`) and receives the answer, so the answer needs no memory of its own
/// (fresh memory costs its page faults, above). Distance `v` lies in word `v / 2`: answers
/// `⌈e/2⌉..e` are written first (for `e` from the end down), while what they read lies below.
pub(crate) fn distances_in_place(graph: &Graph, words: &mut [u64]) -> Result<()> {
    use rayon::prelude::*;
    fn distance_word(words: &[u64], v: usize) -> u32 {
        let b = words[v / 2].to_ne_bytes();
        let h = 4 * (v % 2);
        u32::from_ne_bytes([b[h], b[h + 1], b[h + 2], b[h + 3]])
    }
    let overflow = AtomicBool::new(false);
    let mut end = words.len();
    while end > 1 {
        let start = end.div_ceil(2);
        let (below, part) = words[..end].split_at_mut(start);
        let below = &*below;
        let convert = |(i, w): (usize, &mut u64)| {
            *w = answer_distance(distance_word(below, start + i), &overflow);
        };
        if part.len() >= 1 << 16 {
            part.par_iter_mut()
                .enumerate()
                .with_min_len(1 << 14)
                .for_each(convert);
        } else {
            part.iter_mut().enumerate().for_each(convert);
        }
        end = start;
    }
    if let Some(first) = words.first_mut() {
        let d = distance_word(std::slice::from_ref(first), 0);
        *first = answer_distance(d, &overflow);
    }
    if overflow.into_inner() {
        return Err(overflow_error(graph.max_weight()));
    }
    Ok(())
}

/// One word of the answer (see [`distances_par`]); sets `overflow` for a word at the limit.
fn answer_distance(d: u32, overflow: &AtomicBool) -> u64 {
    match d {
        u32::MAX => UNREACHABLE,
        d if d as u64 >= DISTANCE_LIMIT => {
            overflow.store(true, Relaxed);
            UNREACHABLE
        }
        d => d as u64,
    }
}

/// Answers of fewer vertices are prepared on the searching thread itself: a thread's start
/// costs more than their pages.
const ANSWER_OVERLAP_MIN: usize = 1 << 16;

/// Host memory for an answer of `n` distances, written on another thread (with rayon's)
/// from the moment a device search starts, so that the answer's page faults (32 MB for 4M
/// vertices, most of its conversion's time after a search on a virtual machine) fall while
/// the device searches and the host's cores wait, not after it. Dropped unused, the thread finishes and frees it.
pub(crate) struct AnswerMemory {
    n: usize,
    pending: Option<std::thread::JoinHandle<Vec<u64>>>,
}

impl AnswerMemory {
    /// Starts preparing `n` words (on this thread at [`AnswerMemory::take`] for small `n`).
    pub(crate) fn start(n: usize) -> Self {
        let pending = (n >= ANSWER_OVERLAP_MIN)
            .then(|| {
                std::thread::Builder::new()
                    .name("asym-answer".into())
                    .spawn(move || Self::prepare(n))
                    .ok()
            })
            .flatten();
        AnswerMemory { n, pending }
    }

    /// The memory, `n` words long (waits for the thread if it is still writing).
    pub(crate) fn take(self) -> Vec<u64> {
        match self.pending {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => Self::prepare(self.n),
        }
    }

    fn prepare(n: usize) -> Vec<u64> {
        use rayon::prelude::*;
        let mut out = host_memory::huge_page_vec(n);
        (0..n)
            .into_par_iter()
            .with_min_len(1 << 14)
            .map(|_| UNREACHABLE)
            .collect_into_vec(&mut out);
        out
    }
}

/// `n` atomic words, each `value`, written on rayon's threads into huge pages where the
/// machine has them (see [`host_memory::huge_page_vec`]).
pub(crate) fn atomic_words(n: usize, value: u32) -> Vec<AtomicU32> {
    filled_huge(n, || AtomicU32::new(value))
}

/// `n` values made by `make`, written on rayon's threads into huge pages where the machine
/// has them (each thread faults its own part in).
pub(crate) fn filled_huge<T: Send>(n: usize, make: impl Fn() -> T + Sync + Send) -> Vec<T> {
    use rayon::prelude::*;
    let mut out = host_memory::huge_page_vec(n);
    (0..n)
        .into_par_iter()
        .with_min_len(1 << 14)
        .map(|_| make())
        .collect_into_vec(&mut out);
    out
}

/// The error a search gives when a distance would not fit its 32-bit words.
pub(crate) fn overflow_error(max_weight: u32) -> Error {
    Error::InvalidArgument(format!(
        "a shortest distance reaches {DISTANCE_LIMIT} (2^32 - 2), the most the parallel \
         searches' 32-bit distances hold (the largest weight here is {max_weight}; scale the weights \
         down)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::seeded;
    use rand::Rng;

    /// The in-place conversion gives what the conversion into fresh memory gives, at sizes
    /// whose halving steps are odd, even, sequential and parallel.
    #[test]
    fn answers_converted_in_place_match_those_converted_apart() {
        let graph = Graph::from_edges(1, &[], false).unwrap();
        let mut rng = seeded(7);
        for n in [0usize, 1, 2, 3, 5, 8, 1000, (1 << 17) + 3] {
            let dist: Vec<u32> = (0..n)
                .map(|_| match rng.gen_range(0..4) {
                    0 => u32::MAX,
                    _ => rng.gen_range(0..DISTANCE_LIMIT) as u32,
                })
                .collect();
            let expected = distances_par(&graph, n, |v| dist[v]).unwrap();
            let mut words = vec![u64::MAX; n];
            let view = host_memory::u64s_as_atomic_u32_pairs(&mut words);
            for (w, &d) in view.iter().zip(&dist) {
                w.store(d, Relaxed);
            }
            distances_in_place(&graph, &mut words).unwrap();
            assert_eq!(words, expected, "{n} vertices");
            let mut into = vec![0; n];
            distances_into(&graph, &mut into, &dist).unwrap();
            assert_eq!(into, expected, "{n} vertices, into prepared memory");
        }
        let mut words = vec![u64::MAX; 3];
        host_memory::u64s_as_atomic_u32_pairs(&mut words)[1].store(DISTANCE_LIMIT as u32, Relaxed);
        assert!(
            distances_in_place(&graph, &mut words).is_err(),
            "an overflow"
        );
        let limit = [0, DISTANCE_LIMIT as u32, u32::MAX];
        assert!(distances_into(&graph, &mut [0; 3], &limit).is_err());
        assert!(distances_into(&graph, &mut [0; 2], &limit).is_err());
    }
}
