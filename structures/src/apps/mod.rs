//! Applications of the structures, as in the concurrent-heap seed: single-source shortest
//! paths on graphs ([`graph`], [`sssp`]) and 0/1 knapsack by branch-and-bound ([`knapsack`]).

pub mod graph;
pub mod knapsack;
pub mod sssp;
