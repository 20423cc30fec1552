//! Helpers shared by the applications' integration tests: the structures' test helpers
//! (devices, transports, device sets) and random graphs.
#![allow(dead_code)]

#[path = "../../../structures/tests/common/mod.rs"]
mod structures_common;

use asym_apps::graph::{Edge, Graph};
pub use structures_common::*;

/// A directed graph of `n` vertices and `m` random edges, weights in `0..=max_w` (self-loops
/// and duplicates included, as a file may have them).
pub fn random_graph(rng: &mut impl rand::Rng, n: usize, m: usize, max_w: u32) -> Graph {
    let edges: Vec<Edge> = (0..m)
        .map(|_| {
            (
                rng.gen_range(0..n as u32),
                rng.gen_range(0..n as u32),
                rng.gen_range(0..=max_w),
            )
        })
        .collect();
    Graph::from_edges(n, &edges, false).unwrap()
}
