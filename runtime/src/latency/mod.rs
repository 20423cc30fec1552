//! Latency units: a pool of Rust threads pinned to chosen CPU cores.
//!
//! - [`topology`]: what the machine has (hwloc2 for packages, cores, PUs and caches; falls
//!   back to core_affinity's list if hwloc fails).
//! - [`pool`]: the pinned threads, jobs sent over crossbeam channels, panics returned as
//!   errors.

mod pool;
mod topology;

pub use pool::{LatencyPool, PoolOptions, WorkerInfo, THREADS_ENV};
pub use topology::{CacheInfo, CpuTopology};
