//! Vertex orders that put neighbours near each other in memory.
//!
//! A search touches the distance of every neighbour of every vertex it expands. When the
//! vertices are numbered at random (a generated geometric graph, a Kronecker graph after
//! Graph500's permutation), each of those touches is a cache miss into an array of millions
//! of words; numbered in breadth-first order, the neighbours of a vertex lie in the same few
//! breadth-first levels, so most touches hit lines a thread used a moment ago. The order is
//! a property of how the graph is stored, not of the answer: [`Relabeling`] renumbers a graph
//! once (a breadth-first search and a parallel rebuild of the CSR) and maps sources and
//! distances between the two numberings, so every search of the renumbered graph answers in
//! the caller's numbering.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use rayon::prelude::*;

use asym_runtime::{host_memory, Error, Result};

use super::Graph;

/// A vertex no search has reached (a number) or no position has claimed (an owner).
const UNSEEN: u32 = u32::MAX;
/// An owner word once its vertex is collected.
const CLAIMED: u32 = u32::MAX - 1;
/// Levels at least this long are scanned in parallel; shorter ones cost less than rayon's
/// hand-offs would.
const PARALLEL_LEVEL: usize = 256;
/// Frontier positions per piece of the collecting pass.
const PIECE: usize = 256;

/// A renumbering of a graph's vertices: `new_of_old[v]` is vertex `v`'s new number and
/// `old_of_new` its inverse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relabeling {
    new_of_old: Vec<u32>,
    old_of_new: Vec<u32>,
}

impl Relabeling {
    /// Breadth-first order over out-edges from `start`, then from the lowest-numbered vertex
    /// not yet reached, until every vertex has a number (each component stays contiguous).
    /// Neighbours keep the order of the adjacency lists: the numbering is exactly the one a
    /// queue-based search gives, though large levels are scanned in parallel (rayon): a first
    /// pass records, for each vertex the level reaches, the first frontier position that
    /// reaches it (a `fetch_min`); a second pass, over contiguous pieces of the frontier in
    /// order, collects each position's vertices in adjacency order; the pieces are numbered
    /// one after another. Rayon's calls order the passes (each starts after the last ended),
    /// so relaxed atomics suffice within them.
    pub fn breadth_first(graph: &Graph, start: usize) -> Result<Self> {
        graph.check_source(start)?;
        let n = graph.vertices();
        let what = format!("a breadth-first order of {n} vertices");
        host_memory::ensure_available(n as u64 * 12, &what)?;
        let number: Vec<AtomicU32> = (0..n)
            .into_par_iter()
            .map(|_| AtomicU32::new(UNSEEN))
            .collect();
        // The first frontier position of the level being scanned that reaches each vertex;
        // CLAIMED once collected (never a position again).
        let owner: Vec<AtomicU32> = (0..n)
            .into_par_iter()
            .map(|_| AtomicU32::new(UNSEEN))
            .collect();
        let mut old_of_new: Vec<u32> = host_memory::try_with_capacity(n, &what)?;
        let mut next_root = 0usize;
        let mut root = start;
        let add = |v: u32, old_of_new: &mut Vec<u32>| {
            number[v as usize].store(old_of_new.len() as u32, Relaxed);
            old_of_new.push(v);
        };
        loop {
            add(root as u32, &mut old_of_new);
            let mut level = old_of_new.len() - 1..old_of_new.len();
            while !level.is_empty() {
                let next = old_of_new.len();
                if level.len() < PARALLEL_LEVEL {
                    for head in level {
                        for (v, _) in graph.neighbors(old_of_new[head]) {
                            if number[v as usize].load(Relaxed) == UNSEEN {
                                add(v, &mut old_of_new);
                            }
                        }
                    }
                } else {
                    let frontier = &old_of_new[level];
                    frontier.par_iter().enumerate().for_each(|(i, &u)| {
                        for (v, _) in graph.neighbors(u) {
                            if number[v as usize].load(Relaxed) == UNSEEN {
                                owner[v as usize].fetch_min(i as u32, Relaxed);
                            }
                        }
                    });
                    let pieces: Vec<Vec<u32>> = frontier
                        .par_chunks(PIECE)
                        .enumerate()
                        .map(|(p, piece)| {
                            let mut found = Vec::new();
                            for (j, &u) in piece.iter().enumerate() {
                                let i = (p * PIECE + j) as u32;
                                for (v, _) in graph.neighbors(u) {
                                    if owner[v as usize].load(Relaxed) == i {
                                        owner[v as usize].store(CLAIMED, Relaxed);
                                        found.push(v);
                                    }
                                }
                            }
                            found
                        })
                        .collect();
                    for v in pieces.into_iter().flatten() {
                        add(v, &mut old_of_new);
                    }
                }
                level = next..old_of_new.len();
            }
            while next_root < n && number[next_root].load(Relaxed) != UNSEEN {
                next_root += 1;
            }
            if next_root == n {
                break;
            }
            root = next_root;
        }
        let new_of_old = number.into_par_iter().map(AtomicU32::into_inner).collect();
        Ok(Relabeling {
            new_of_old,
            old_of_new,
        })
    }

    /// The renumbering that keeps every number (for comparisons).
    pub fn identity(vertices: usize) -> Self {
        let ids: Vec<u32> = (0..vertices as u32).collect();
        Relabeling {
            new_of_old: ids.clone(),
            old_of_new: ids,
        }
    }

    /// Vertex `old`'s new number. Panics if `old` is not a vertex (as indexing does).
    pub fn new_of(&self, old: usize) -> usize {
        self.new_of_old[old] as usize
    }

    /// The vertex numbered `new` in the caller's numbering. Panics if `new` is not a vertex.
    pub fn old_of(&self, new: usize) -> usize {
        self.old_of_new[new] as usize
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.new_of_old.len()
    }

    /// Whether the graph has no vertices.
    pub fn is_empty(&self) -> bool {
        self.new_of_old.is_empty()
    }

    /// `graph` with vertex `v` renumbered `new_of(v)`; each vertex's edges are the original's
    /// (duplicates and weights kept), targets renumbered and sorted again by their new
    /// numbers.
    pub fn apply(&self, graph: &Graph) -> Result<Graph> {
        let n = graph.vertices();
        if n != self.len() {
            return Err(Error::InvalidArgument(format!(
                "a renumbering of {} vertices applied to a graph of {n}",
                self.len()
            )));
        }
        let (offsets, targets, weights) = graph.csr();
        let what = format!("a renumbered graph of {n} vertices");
        host_memory::ensure_available((n as u64 + 1) * 4 + targets.len() as u64 * 8, &what)?;
        let mut new_offsets: Vec<u32> = host_memory::try_with_capacity_huge(n + 1, &what)?;
        let mut at = 0u32;
        for &old in &self.old_of_new {
            new_offsets.push(at);
            at += offsets[old as usize + 1] - offsets[old as usize];
        }
        new_offsets.push(at);
        let mut new_targets = host_memory::try_filled_huge(targets.len(), 0u32, &what)?;
        let mut new_weights = host_memory::try_filled_huge(weights.len(), 0u32, &what)?;
        // Each new vertex fills its own slice of both arrays (on rayon's threads), then sorts
        // it: the new numbers change the targets' order.
        super::par_each_vertex(
            &new_offsets,
            &mut new_targets,
            &mut new_weights,
            |new, t, w, scratch| {
                let old = self.old_of_new[new] as usize;
                let (a, b) = (offsets[old] as usize, offsets[old + 1] as usize);
                for ((slot_t, slot_w), (&v, &wt)) in t
                    .iter_mut()
                    .zip(w.iter_mut())
                    .zip(targets[a..b].iter().zip(&weights[a..b]))
                {
                    *slot_t = self.new_of_old[v as usize];
                    *slot_w = wt;
                }
                super::sort_edges(t, w, scratch);
            },
        );
        Ok(Graph {
            offsets: new_offsets,
            targets: new_targets,
            weights: new_weights,
            self_loops: graph.self_loops(),
        })
    }

    /// Distances indexed by new numbers, put back in the caller's numbering (`by_new` holds
    /// one per vertex; a shorter slice is an error).
    pub fn distances_back(&self, by_new: &[u64]) -> Result<Vec<u64>> {
        if by_new.len() != self.len() {
            return Err(Error::InvalidArgument(format!(
                "{} distances for a renumbering of {} vertices",
                by_new.len(),
                self.len()
            )));
        }
        Ok(self
            .new_of_old
            .par_iter()
            .map(|&new| by_new[new as usize])
            .collect())
    }
}
