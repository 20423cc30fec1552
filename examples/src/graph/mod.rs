//! Weighted directed graphs in compressed sparse row form, the input of the SSSP application:
//! read from DIMACS `.gr` and Matrix Market `.mtx` files or generated (Graph500 Kronecker /
//! R-MAT, random geometric), with a sequential Dijkstra as the reference.
//!
//! Rules every loader and generator follows (the `sssp` example documents them to users):
//! - weights are non-negative 32-bit integers; zero is allowed (Dijkstra and the parallel
//!   label-correcting searches are correct with zero weights), negative weights are an error
//!   naming the line;
//! - self-loops are dropped (they never shorten a path) and counted in [`Graph::self_loops`];
//! - duplicate edges are kept (the shortest one wins in every search, as in the file);
//! - each vertex's edges are stored sorted by target (then weight), whatever order the file
//!   or generator gave them in: a search relaxing them touches its neighbours' distance
//!   words in ascending addresses (GAP's builder does the same);
//! - vertices no edge reaches keep an infinite distance ([`UNREACHABLE`]).

mod generate;
mod order;

pub use order::Relabeling;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use asym_runtime::{host_memory, Error, Result};

pub use crate::io::graph_files::MtxOptions;

/// The distance of a vertex no path reaches.
pub const UNREACHABLE: u64 = u64::MAX;

/// A directed graph with `u32` weights in compressed sparse row form (edges of vertex `v` are
/// `offsets[v]..offsets[v + 1]` of `targets`/`weights`, sorted by target, then weight).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    offsets: Vec<u32>,
    targets: Vec<u32>,
    weights: Vec<u32>,
    self_loops: u64,
}

/// One edge `(from, to, weight)`, vertices numbered from 0.
pub type Edge = (u32, u32, u32);

/// Runs `f(v, targets, weights, scratch)` for every vertex `v` of a CSR on rayon's threads,
/// with `v`'s own slices of the edge arrays: pieces cut at vertex boundaries hold about equal
/// numbers of edges (so one hub does not make a piece of its own wait for the rest), and each
/// piece keeps one scratch vector for [`sort_edges`].
fn par_each_vertex<F>(offsets: &[u32], targets: &mut [u32], weights: &mut [u32], f: F)
where
    F: Fn(usize, &mut [u32], &mut [u32], &mut Vec<(u32, u32)>) + Sync,
{
    use rayon::prelude::*;
    let n = offsets.len().saturating_sub(1);
    let edges = targets.len();
    let pieces = (rayon::current_num_threads() * 8).max(1);
    let mut jobs = Vec::with_capacity(pieces);
    let (mut rest_t, mut rest_w) = (targets, weights);
    let mut first = 0usize;
    for p in 1..=pieces {
        // The first vertex whose edges start at or past this piece's share.
        let want = (edges as u64 * p as u64 / pieces as u64) as u32;
        let last = if p == pieces {
            n
        } else {
            offsets[..n].partition_point(|&o| o < want).max(first)
        };
        if last == first {
            continue;
        }
        let len = (offsets[last] - offsets[first]) as usize;
        let (t, tr) = std::mem::take(&mut rest_t).split_at_mut(len);
        let (w, wr) = std::mem::take(&mut rest_w).split_at_mut(len);
        jobs.push((first..last, t, w));
        rest_t = tr;
        rest_w = wr;
        first = last;
    }
    jobs.into_par_iter().for_each(|(vertices, t, w)| {
        let mut scratch = Vec::new();
        let base = offsets[vertices.start];
        for v in vertices {
            let (a, b) = (
                (offsets[v] - base) as usize,
                (offsets[v + 1] - base) as usize,
            );
            f(v, &mut t[a..b], &mut w[a..b], &mut scratch);
        }
    });
}

/// Sorts one vertex's edges by target, then weight (`pairs` is scratch space).
fn sort_edges(targets: &mut [u32], weights: &mut [u32], pairs: &mut Vec<(u32, u32)>) {
    let sorted =
        (1..targets.len()).all(|i| (targets[i - 1], weights[i - 1]) <= (targets[i], weights[i]));
    if sorted {
        return;
    }
    pairs.clear();
    pairs.extend(targets.iter().copied().zip(weights.iter().copied()));
    pairs.sort_unstable();
    for ((t, w), &(pt, pw)) in targets.iter_mut().zip(weights.iter_mut()).zip(pairs.iter()) {
        *t = pt;
        *w = pw;
    }
}

/// Removes every edge `v -> v` from a CSR in place (offsets moved down to match), returning
/// how many there were.
fn drop_self_loops(offsets: &mut [u32], targets: &mut Vec<u32>, weights: &mut Vec<u32>) -> u64 {
    use rayon::prelude::*;
    let any = (0..offsets.len() - 1).into_par_iter().any(|v| {
        targets[offsets[v] as usize..offsets[v + 1] as usize]
            .iter()
            .any(|&t| t as usize == v)
    });
    if !any {
        return 0;
    }
    let mut kept = 0usize;
    let mut start = 0usize;
    for v in 0..offsets.len() - 1 {
        let end = offsets[v + 1] as usize;
        offsets[v] = kept as u32;
        for e in start..end {
            if targets[e] as usize != v {
                targets[kept] = targets[e];
                weights[kept] = weights[e];
                kept += 1;
            }
        }
        start = end;
    }
    let dropped = (targets.len() - kept) as u64;
    let last = offsets.len() - 1;
    offsets[last] = kept as u32;
    targets.truncate(kept);
    weights.truncate(kept);
    dropped
}

impl Graph {
    /// The graph on `vertices` vertices with `edges` (each added in both directions when
    /// `undirected`). Self-loops are dropped and counted.
    pub fn from_edges(vertices: usize, edges: &[Edge], undirected: bool) -> Result<Self> {
        if vertices >= u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "{vertices} vertices: graphs take fewer than 2^32 - 1"
            )));
        }
        // The CSR's peak before any of it is allocated: degrees, offsets, fill cursors, and
        // targets and weights for every directed edge.
        let directed = (edges.len() as u64).saturating_mul(if undirected { 2 } else { 1 });
        let what = format!("a graph of {vertices} vertices and {directed} directed edges");
        let peak = (vertices as u64 + 1)
            .saturating_mul(8 + 4 + 4)
            .saturating_add(directed.saturating_mul(8));
        host_memory::ensure_available(peak, &what)?;
        let mut degree = host_memory::try_filled(vertices + 1, 0u64, &what)?;
        let mut self_loops = 0u64;
        for &(u, v, _) in edges {
            for x in [u, v] {
                if x as usize >= vertices {
                    return Err(Error::InvalidArgument(format!(
                        "edge ({u}, {v}) names a vertex outside 0..{vertices}"
                    )));
                }
            }
            if u == v {
                self_loops += 1;
                continue;
            }
            degree[u as usize] += 1;
            if undirected {
                degree[v as usize] += 1;
            }
        }
        let total: u64 = degree.iter().sum();
        if total >= u32::MAX as u64 {
            return Err(Error::InvalidArgument(format!(
                "{total} directed edges: graphs take fewer than 2^32 - 1"
            )));
        }
        let mut offsets = host_memory::try_with_capacity_huge(vertices + 1, &what)?;
        let mut at = 0u32;
        for d in &degree[..vertices] {
            offsets.push(at);
            at += *d as u32;
        }
        offsets.push(at);
        let mut fill: Vec<u32> = offsets[..vertices].to_vec();
        let mut targets = host_memory::try_filled_huge(at as usize, 0u32, &what)?;
        let mut weights = host_memory::try_filled_huge(at as usize, 0u32, &what)?;
        let mut put = |from: u32, to: u32, w: u32| {
            let slot = &mut fill[from as usize];
            targets[*slot as usize] = to;
            weights[*slot as usize] = w;
            *slot += 1;
        };
        for &(u, v, w) in edges {
            if u == v {
                continue;
            }
            put(u, v, w);
            if undirected {
                put(v, u, w);
            }
        }
        Ok(Graph::with_sorted_edges(
            offsets, targets, weights, self_loops,
        ))
    }

    /// The graph of a compressed sparse row form as scipy and Graph500 write it: the edges of
    /// vertex `v` are `offsets[v]..offsets[v + 1]` of `targets` and `weights` (in any order;
    /// parallel edges kept). Offsets must start at 0, never decrease and end at the number of
    /// edges; self-loops are dropped and counted.
    pub fn from_csr(offsets: Vec<u32>, targets: Vec<u32>, weights: Vec<u32>) -> Result<Self> {
        let vertices = offsets.len().checked_sub(1).ok_or_else(|| {
            Error::InvalidArgument(
                "the row offsets are empty: a CSR has one more than its rows".into(),
            )
        })?;
        if vertices >= u32::MAX as usize || targets.len() >= u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "{vertices} vertices and {} edges: graphs take fewer than 2^32 - 1 of each",
                targets.len()
            )));
        }
        if weights.len() != targets.len() {
            return Err(Error::InvalidArgument(format!(
                "{} edge targets but {} weights",
                targets.len(),
                weights.len()
            )));
        }
        if offsets[0] != 0 || offsets[vertices] as usize != targets.len() {
            return Err(Error::InvalidArgument(format!(
                "the row offsets run from {} to {}: they must run from 0 to the {} edges",
                offsets[0],
                offsets[vertices],
                targets.len()
            )));
        }
        if let Some(v) = offsets.windows(2).position(|w| w[1] < w[0]) {
            return Err(Error::InvalidArgument(format!(
                "the row offsets decrease at row {v} ({} then {})",
                offsets[v],
                offsets[v + 1]
            )));
        }
        use rayon::prelude::*;
        if let Some(e) = targets.par_iter().position_any(|&t| t as usize >= vertices) {
            return Err(Error::InvalidArgument(format!(
                "edge {e} leads to vertex {}, outside 0..{vertices}",
                targets[e]
            )));
        }
        let (mut offsets, mut targets, mut weights) = (offsets, targets, weights);
        let self_loops = drop_self_loops(&mut offsets, &mut targets, &mut weights);
        Ok(Graph::with_sorted_edges(
            offsets, targets, weights, self_loops,
        ))
    }

    /// The graph of a CSR whose rows' edges are in any order: each row sorted by target,
    /// then weight, on rayon's threads.
    fn with_sorted_edges(
        offsets: Vec<u32>,
        mut targets: Vec<u32>,
        mut weights: Vec<u32>,
        self_loops: u64,
    ) -> Graph {
        par_each_vertex(&offsets, &mut targets, &mut weights, |_, t, w, scratch| {
            sort_edges(t, w, scratch)
        });
        Graph {
            offsets,
            targets,
            weights,
            self_loops,
        }
    }

    /// Number of vertices.
    pub fn vertices(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of directed edges (an undirected edge counts twice).
    pub fn edges(&self) -> usize {
        self.targets.len()
    }

    /// Self-loops dropped while building.
    pub fn self_loops(&self) -> u64 {
        self.self_loops
    }

    /// The edges leaving `v` as `(target, weight)`.
    pub fn neighbors(&self, v: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let (a, b) = (
            self.offsets[v as usize] as usize,
            self.offsets[v as usize + 1] as usize,
        );
        self.targets[a..b]
            .iter()
            .copied()
            .zip(self.weights[a..b].iter().copied())
    }

    /// The number of edges leaving `v`.
    pub fn out_degree(&self, v: u32) -> usize {
        (self.offsets[v as usize + 1] - self.offsets[v as usize]) as usize
    }

    /// The CSR arrays `(offsets, targets, weights)`, for uploading to a device.
    pub fn csr(&self) -> (&[u32], &[u32], &[u32]) {
        (&self.offsets, &self.targets, &self.weights)
    }

    /// The part of this graph that the vertices `keep` accepts own: every vertex stays
    /// (numbers mean the same in the part), but only the edges leaving kept vertices are
    /// kept; any other vertex has none. A rank of a distributed search keeps this much.
    pub fn rows_of(&self, keep: impl Fn(usize) -> bool) -> Result<Graph> {
        let n = self.vertices();
        let kept: u64 = (0..n)
            .filter(|&v| keep(v))
            .map(|v| (self.offsets[v + 1] - self.offsets[v]) as u64)
            .sum();
        host_memory::ensure_available(
            kept * 8 + n as u64 * 4,
            &format!("a part of {kept} of the graph's {} edges", self.edges()),
        )?;
        let mut offsets = Vec::with_capacity(n + 1);
        let mut targets = Vec::with_capacity(kept as usize);
        let mut weights = Vec::with_capacity(kept as usize);
        offsets.push(0u32);
        for v in 0..n {
            if keep(v) {
                let (a, b) = (self.offsets[v] as usize, self.offsets[v + 1] as usize);
                targets.extend_from_slice(&self.targets[a..b]);
                weights.extend_from_slice(&self.weights[a..b]);
            }
            offsets.push(targets.len() as u32);
        }
        Ok(Graph {
            offsets,
            targets,
            weights,
            self_loops: 0,
        })
    }

    /// The largest edge weight (0 for a graph without edges).
    pub fn max_weight(&self) -> u32 {
        self.weights.iter().copied().max().unwrap_or(0)
    }

    /// The vertex with the most out-edges (the lowest-numbered among equals): a source whose
    /// search reaches the graph's large component (Kronecker graphs have many isolated
    /// vertices).
    pub fn hub(&self) -> usize {
        (0..self.vertices())
            .max_by_key(|&v| (self.offsets[v + 1] - self.offsets[v], std::cmp::Reverse(v)))
            .unwrap_or(0)
    }

    /// Checks that `source` names a vertex.
    pub fn check_source(&self, source: usize) -> Result<()> {
        if source >= self.vertices() {
            return Err(Error::InvalidArgument(format!(
                "source vertex {} (0-based {source}) is not in a graph of {} vertices",
                source + 1,
                self.vertices()
            )));
        }
        Ok(())
    }

    /// Shortest distances from `source` by Dijkstra's algorithm with a binary heap
    /// ([`UNREACHABLE`] where no path leads): the reference every parallel search is checked
    /// against.
    pub fn dijkstra(&self, source: usize) -> Result<Vec<u64>> {
        self.check_source(source)?;
        let mut dist = vec![UNREACHABLE; self.vertices()];
        let mut heap = BinaryHeap::new();
        dist[source] = 0;
        heap.push(Reverse((0u64, source as u32)));
        while let Some(Reverse((d, u))) = heap.pop() {
            if d > dist[u as usize] {
                continue;
            }
            for (v, w) in self.neighbors(u) {
                let nd = d + w as u64;
                if nd < dist[v as usize] {
                    dist[v as usize] = nd;
                    heap.push(Reverse((nd, v)));
                }
            }
        }
        Ok(dist)
    }

    /// The hop depth of the shortest paths `dist` gives from `source`: the most edges that
    /// the fewest-edge shortest path to any reached vertex has (a breadth-first search over
    /// the tight edges, those with `dist[u] + w == dist[v]`). No search can finish in fewer
    /// dependent relaxation steps: a vertex's final distance comes from its predecessor's
    /// along a shortest path. An error if `dist` is not one entry per vertex.
    pub fn hop_depth(&self, source: usize, dist: &[u64]) -> Result<usize> {
        self.check_source(source)?;
        if dist.len() != self.vertices() {
            return Err(Error::InvalidArgument(format!(
                "{} distances for a graph of {} vertices",
                dist.len(),
                self.vertices()
            )));
        }
        let mut hops = vec![u32::MAX; self.vertices()];
        hops[source] = 0;
        let (mut level, mut next, mut depth) = (vec![source as u32], Vec::new(), 0);
        while !level.is_empty() {
            for &u in &level {
                let du = dist[u as usize];
                for (v, w) in self.neighbors(u) {
                    if hops[v as usize] == u32::MAX
                        && du.checked_add(w as u64) == Some(dist[v as usize])
                    {
                        hops[v as usize] = depth + 1;
                        next.push(v);
                    }
                }
            }
            if !next.is_empty() {
                depth += 1;
            }
            std::mem::swap(&mut level, &mut next);
            next.clear();
        }
        Ok(depth as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CSR in any edge order, with self-loops, gives the graph its edge list gives.
    #[test]
    fn from_csr_matches_from_edges() {
        let n = 37u32;
        let mut x = 12345u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as u32
        };
        let edges: Vec<Edge> = (0..300)
            .map(|_| (next() % n, next() % n, next() % 100))
            .collect();
        let mut rows: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n as usize];
        for &(u, v, w) in edges.iter().rev() {
            rows[u as usize].push((v, w));
        }
        let mut offsets = vec![0u32];
        let (mut targets, mut weights) = (Vec::new(), Vec::new());
        for r in &rows {
            targets.extend(r.iter().map(|e| e.0));
            weights.extend(r.iter().map(|e| e.1));
            offsets.push(targets.len() as u32);
        }
        let from_csr = Graph::from_csr(offsets, targets, weights).unwrap();
        let from_edges = Graph::from_edges(n as usize, &edges, false).unwrap();
        assert!(from_edges.self_loops() > 0);
        assert_eq!(from_csr, from_edges);
    }

    #[test]
    fn from_csr_refuses_malformed_rows() {
        let bad = [
            (vec![], vec![], vec![]),
            (vec![1, 1], vec![0], vec![1]),
            (vec![0, 2, 1], vec![0, 1], vec![1, 1]),
            (vec![0, 1], vec![5], vec![1]),
            (vec![0, 1], vec![0], vec![]),
        ];
        for (o, t, w) in bad {
            let e = Graph::from_csr(o.clone(), t, w).unwrap_err();
            assert!(e.is_argument_error(), "{o:?}: {e}");
        }
    }

    /// The fewest-edge shortest paths by Dijkstra on (distance, hops) pairs: the most hops.
    fn lexicographic_depth(g: &Graph, source: usize) -> usize {
        let mut best = vec![(UNREACHABLE, usize::MAX); g.vertices()];
        let mut heap = BinaryHeap::new();
        best[source] = (0, 0);
        heap.push(Reverse((0u64, 0usize, source as u32)));
        while let Some(Reverse((d, h, u))) = heap.pop() {
            if (d, h) > best[u as usize] {
                continue;
            }
            for (v, w) in g.neighbors(u) {
                let key = (d + w as u64, h + 1);
                if key < best[v as usize] {
                    best[v as usize] = key;
                    heap.push(Reverse((key.0, key.1, v)));
                }
            }
        }
        best.iter()
            .filter(|b| b.0 != UNREACHABLE)
            .map(|b| b.1)
            .max()
            .unwrap_or(0)
    }

    /// Random graphs with zero weights, duplicate edges and unreached parts, a path, a lone
    /// vertex: the breadth-first search over tight edges agrees with the lexicographic
    /// Dijkstra; distances of the wrong length are refused.
    #[test]
    fn hop_depth_matches_a_lexicographic_dijkstra() {
        let mut x = 99u64;
        let mut next = |m: u32| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) as u32) % m
        };
        for round in 0..40 {
            let n = 1 + next(60);
            let edges: Vec<Edge> = (0..next(4 * n + 1))
                .map(|_| (next(n), next(n), next(if round % 2 == 0 { 3 } else { 50 })))
                .collect();
            let g = Graph::from_edges(n as usize, &edges, false).unwrap();
            let source = next(n) as usize;
            let dist = g.dijkstra(source).unwrap();
            assert_eq!(
                g.hop_depth(source, &dist).unwrap(),
                lexicographic_depth(&g, source),
                "round {round}: {edges:?} from {source}"
            );
        }
        let path: Vec<Edge> = (0..99u32).map(|v| (v, v + 1, 7)).collect();
        let g = Graph::from_edges(100, &path, false).unwrap();
        assert_eq!(g.hop_depth(0, &g.dijkstra(0).unwrap()).unwrap(), 99);
        assert_eq!(g.hop_depth(99, &g.dijkstra(99).unwrap()).unwrap(), 0);
        let e = g.hop_depth(0, &[0, 7]).unwrap_err();
        assert!(e.is_argument_error(), "{e}");
    }
}
