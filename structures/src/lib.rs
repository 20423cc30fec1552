//! asym's concurrent data structures, and the applications and files built on them.
//!
//! Structures:
//! - [`dheap`]: the cache-aligned d-heap (d = 2..64), a fast CPU heap on its own;
//! - [`adheap`]: the ad-heap, a d-heap with a bridge in its head through which a device and
//!   CPU threads split update-key (device walks, CPU applies);
//! - [`kselect`]: heap-based batch k-selection in CpuOnly, GpuOnly and Cooperative modes
//!   (by amount, or by kind on ad-heaps);
//! - [`gheap`]: the generalized heap (batches of K keys per node, partial buffer, top-down or
//!   bottom-up insertion): sequential, shared by many host threads, on the device, and
//!   Cooperative;
//! - [`arena`]: the SVM allocator (superblocks, size classes, tagged lock-free free lists),
//!   `malloc`/`free` for work-items and CPU threads on the same memory;
//! - [`list`]: Harris's lock-free list on arena nodes (ordered set; the list seed's positional
//!   operations), run by kernels and pinned threads, with reclamation at quiescent points;
//! - [`Key`]: the 32-bit key types they share.
//!
//! [`apps`]: SSSP on graphs and 0/1 knapsack on the generalized heap. [`io`]: the files people
//! give and get (`.npy`, DIMACS, Matrix Market, knapsack text, the list seed's workloads) and
//! outputs written whole.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

pub mod adheap;
pub mod apps;
pub mod arena;
pub mod dheap;
pub mod gheap;
pub mod io;
mod key;
pub mod kselect;
pub mod list;
mod rng;

pub use adheap::AdHeapLayout;
pub use arena::{ArenaLayout, ArenaStats, ArenaView, SvmArena};
pub use asym_runtime as runtime;
pub use dheap::DHeap;
pub use gheap::{ConcurrentGeneralizedHeap, GeneralizedHeap, InsertDirection};
pub use key::Key;
pub use kselect::{
    Cooperation, DeviceStaging, DeviceTimes, DeviceUpdate, KSelector, SelectStats, Sublists,
};
pub use list::{ListKind, ListMode, ListOp, ListView, LockFreeList, OpStatus};
