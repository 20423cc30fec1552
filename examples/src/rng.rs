//! The generator behind every generated input (graphs, knapsack instances, list workloads):
//! `rand`'s PCG (Pcg64Mcg from `rand_pcg`), whose stream is fixed for a seed across releases
//! and platforms, so an instance named by its seed stays the same instance.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// The generator for `seed`.
pub(crate) fn seeded(seed: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed)
}
