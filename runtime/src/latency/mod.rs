//! Latency units: a pool of Rust threads pinned to chosen CPU cores.
//!
//! - [`topology`]: what the machine has (hwloc2 for packages, cores, PUs and caches; falls
//!   back to core_affinity's list if hwloc fails).
//! - [`pool`]: the pinned threads, jobs sent over crossbeam channels, panics returned as
//!   errors.
//! - [`barrier`](SpinBarrier): where the threads of one job meet between rounds (spinning, bounded,
//!   poisoned by a party that fails).

mod barrier;
mod pool;
mod topology;

pub use barrier::{BarrierGuard, SpinBarrier};
pub use pool::{LatencyPool, PoolOptions, PoolRef, WorkerInfo, THREADS_ENV};
pub use topology::{CacheInfo, CpuTopology};
