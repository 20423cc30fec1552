//! asym's applications and the programs people run, built on the library crates
//! (`asym-runtime`, `asym-structures`) and nothing they cannot see: the shape of rayon's
//! `rayon-demo`. Nothing here is published; the library crates depend on none of it.
//!
//! - [`sssp`] (single-source shortest paths on [`graph`]s) and [`knapsack`] (0/1 knapsack by
//!   branch-and-bound and dynamic programming): the concurrent-heap seed's applications;
//! - [`io`]: the files people give and get (`.npy`, DIMACS, Matrix Market, knapsack text, the
//!   list seed's workloads, tree workloads) and outputs written whole;
//! - [`workload`]: the list seed's positional workload generator; [`peers`]: what a user would
//!   pick instead of asym for k-selection;
//! - [`soak`]: every structure under mixed batches and injected device failures;
//! - [`ranks`]: what the programs share as ranks of an MPI job (`--features mpi`);
//! - [`cli`] and [`progress`]: what the programs share on their command lines; [`rng`]: the
//!   generators behind generated inputs.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

pub mod cli;
pub mod graph;
pub mod io;
pub mod knapsack;
pub mod peers;
pub mod progress;
pub mod ranks;
pub mod rng;
pub mod soak;
pub mod sssp;
pub mod workload;
