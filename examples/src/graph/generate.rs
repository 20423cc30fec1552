//! Generated graphs: Graph500 Kronecker (R-MAT) and random geometric, reproducible from a
//! seed.

use asym_runtime::{host_memory, Error, Result};

use super::{Edge, Graph};
use rand::seq::SliceRandom;
use rand::Rng;

use crate::rng::seeded;

/// Weights of geometric graphs: Euclidean length in units of 10^-6 of the unit square's side.
const GEOMETRIC_UNIT: f64 = 1e6;

impl Graph {
    /// A Graph500 Kronecker graph: `2^scale` vertices, `edge_factor · 2^scale` undirected
    /// edges drawn by the R-MAT recursion with (A, B, C) = (0.57, 0.19, 0.19), vertex numbers
    /// permuted at random, weights uniform in `1..=max_weight`. Self-loops the recursion draws
    /// are dropped; duplicates are kept.
    pub fn kronecker(scale: u32, edge_factor: usize, max_weight: u32, seed: u64) -> Result<Self> {
        if !(1..=27).contains(&scale) {
            return Err(Error::InvalidArgument(format!(
                "Kronecker scale {scale}: between 1 and 27"
            )));
        }
        if !(1..=64).contains(&edge_factor) || max_weight == 0 {
            return Err(Error::InvalidArgument(format!(
                "edge factor {edge_factor} (1..=64) and max weight {max_weight} (≥ 1)"
            )));
        }
        let n = 1usize << scale;
        let m = edge_factor * n;
        // Edge list, permutation and the CSR of both directions, checked before any is made.
        let peak = (m as u64) * 12 + (n as u64) * 20 + (m as u64) * 16;
        host_memory::ensure_available(
            peak,
            &format!("a Kronecker graph of scale {scale} and edge factor {edge_factor}"),
        )?;
        let mut rng = seeded(seed);
        let mut perm: Vec<u32> = (0..n as u32).collect();
        perm.shuffle(&mut rng);
        let (a, b, c) = (0.57, 0.19, 0.19);
        let edges: Vec<Edge> = (0..m)
            .map(|_| {
                let (mut u, mut v) = (0usize, 0usize);
                for bit in (0..scale).rev() {
                    let r: f64 = rng.gen();
                    let (du, dv) = if r < a {
                        (0, 0)
                    } else if r < a + b {
                        (0, 1)
                    } else if r < a + b + c {
                        (1, 0)
                    } else {
                        (1, 1)
                    };
                    u |= du << bit;
                    v |= dv << bit;
                }
                let w = rng.gen_range(1..=max_weight);
                (perm[u], perm[v], w)
            })
            .collect();
        Graph::from_edges(n, &edges, true)
    }

    /// A random geometric graph: `n` points uniform in the unit square, an undirected edge
    /// between every two points closer than the radius that gives `degree` neighbours on
    /// average, weighted by its length (in millionths of the side, at least 1).
    pub fn geometric(n: usize, degree: f64, seed: u64) -> Result<Self> {
        if !((2..=1 << 28).contains(&n) && degree > 0.0 && degree <= 1000.0) {
            return Err(Error::InvalidArgument(format!(
                "geometric graph of {n} vertices (2..=2^28) and degree {degree} (0..=1000]"
            )));
        }
        // Points, cell buckets, about n·degree/2 edges and their CSR in both directions.
        let edges_est = (n as f64 * degree / 2.0) as u64;
        let peak = (n as u64) * (16 + 4 + 4 + 16) + edges_est * (12 + 16);
        host_memory::ensure_available(
            peak,
            &format!("a geometric graph of {n} vertices and degree {degree}"),
        )?;
        let mut rng = seeded(seed);
        let pts: Vec<(f64, f64)> = (0..n).map(|_| (rng.gen(), rng.gen())).collect();
        let r = (degree / (std::f64::consts::PI * n as f64)).sqrt().min(1.0);
        let side = ((1.0 / r).floor() as usize).clamp(1, 1 << 14);
        let cell = |p: (f64, f64)| {
            let cx = ((p.0 * side as f64) as usize).min(side - 1);
            let cy = ((p.1 * side as f64) as usize).min(side - 1);
            cy * side + cx
        };
        // Points bucketed by cell (counting sort), so each point looks at 3×3 cells.
        let mut start = vec![0u32; side * side + 1];
        for &p in &pts {
            start[cell(p) + 1] += 1;
        }
        for i in 0..side * side {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut bucket = vec![0u32; n];
        for (i, &p) in pts.iter().enumerate() {
            let c = cell(p);
            bucket[fill[c] as usize] = i as u32;
            fill[c] += 1;
        }
        let mut edges: Vec<Edge> = Vec::new();
        for (i, &p) in pts.iter().enumerate() {
            let c = cell(p);
            let (cx, cy) = ((c % side) as isize, (c / side) as isize);
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let (x, y) = (cx + dx, cy + dy);
                    if x < 0 || y < 0 || x >= side as isize || y >= side as isize {
                        continue;
                    }
                    let c2 = y as usize * side + x as usize;
                    for &j in &bucket[start[c2] as usize..start[c2 + 1] as usize] {
                        if (j as usize) <= i {
                            continue;
                        }
                        let q = pts[j as usize];
                        let d = ((p.0 - q.0).powi(2) + (p.1 - q.1).powi(2)).sqrt();
                        if d < r {
                            let w = ((d * GEOMETRIC_UNIT).round() as u32).max(1);
                            edges.push((i as u32, j, w));
                        }
                    }
                }
            }
        }
        Graph::from_edges(n, &edges, true)
    }
}
