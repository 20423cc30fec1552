//! asym's concurrent data structures.
//!
//! Landed:
//! - [`dheap`]: the cache-aligned d-heap (d = 2..64), a fast CPU heap on its own;
//! - [`adheap`]: the ad-heap, a d-heap with a bridge in its head through which a device and
//!   CPU threads split update-key (device walks, CPU applies);
//! - [`kselect`]: heap-based batch k-selection in CpuOnly, GpuOnly and Cooperative modes
//!   (by amount, or by kind on ad-heaps);
//! - [`gheap`]: the generalized heap (batches of K keys per node, partial buffer, top-down or
//!   bottom-up insertion), sequential and shared by many host threads (TD-INS/TD-DEL and
//!   BU-INS/TD-DEL with per-node multi-state locks).
//!
//!   The device version ([`gheap::DeviceGeneralizedHeap`]) runs TD-INS/TD-DEL from many
//!   work-groups at once;
//! - [`graph`] and [`sssp`]: graphs (DIMACS, Matrix Market, Kronecker, geometric) and parallel
//!   single-source shortest paths, frontier-expanded or heap-ordered, on latency threads or the
//!   device;
//! - [`knapsack`]: 0/1 knapsack by best-first branch-and-bound on the generalized heap;
//! - [`arena`]: the SVM allocator (superblocks, size classes, tagged lock-free free lists),
//!   `malloc`/`free` for work-items and CPU threads on the same memory;
//! - [`list`]: Harris's lock-free list on arena nodes (ordered set; the list seed's positional
//!   operations), run by kernels and pinned threads, with reclamation at quiescent points.
//!
//! Still to come (see the project's issues): the red-black tree.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

pub mod adheap;
pub mod arena;
pub mod dheap;
pub mod gheap;
pub mod graph;
pub mod knapsack;
pub mod kselect;
pub mod list;
pub mod npy;
pub mod output;
mod rng;
pub mod sssp;

pub use adheap::AdHeapLayout;
pub use arena::{ArenaLayout, ArenaStats, ArenaView, SvmArena};
pub use asym_runtime as runtime;
pub use dheap::DHeap;
pub use gheap::{ConcurrentGeneralizedHeap, GeneralizedHeap, InsertDirection};
pub use kselect::{
    Cooperation, DeviceStaging, DeviceTimes, DeviceUpdate, KSelector, SelectKey, SelectStats,
    Sublists,
};
pub use list::{ListKind, ListMode, ListOp, ListView, LockFreeList, OpStatus};
