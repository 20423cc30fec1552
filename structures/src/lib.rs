//! asym's concurrent data structures, and the applications and files built on them.
//!
//! Structures, each in a private module whose types this crate's root re-exports:
//! - `dheap`: the cache-aligned d-heap ([`DHeap`], d = 2..64), a fast CPU heap on its own;
//! - `adheap`: the ad-heap ([`AdHeapLayout`]), a d-heap with a bridge in its head through
//!   which a device and CPU threads split update-key (device walks, CPU applies);
//! - `kselect`: heap-based batch k-selection ([`KSelector`]) in CpuOnly, GpuOnly and
//!   Cooperative modes (by amount, or by kind on ad-heaps), and the [`peers`] it is measured
//!   against;
//! - `gheap`: the generalized heap (batches of K keys per node, partial buffer, top-down or
//!   bottom-up insertion): [`GeneralizedHeap`] (one thread), [`ConcurrentGeneralizedHeap`]
//!   (many host threads), [`DeviceGeneralizedHeap`] and [`CooperativeHeap`];
//! - `arena`: the SVM allocator ([`SvmArena`]: superblocks, size classes, tagged lock-free free
//!   lists), `malloc`/`free` for work-items and CPU threads on the same memory;
//! - `list`: Harris's lock-free list on arena nodes ([`LockFreeList`]: ordered set; the list
//!   seed's positional operations and its [`workload`]), run by kernels and pinned threads,
//!   with reclamation at quiescent points;
//! - [`Key`]: the 32-bit key types they share.
//!
//! [`apps`]: SSSP on graphs and 0/1 knapsack on the generalized heap. [`io`]: the files people
//! give and get (`.npy`, DIMACS, Matrix Market, knapsack text, the list seed's workloads) and
//! outputs written whole.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

mod adheap;
pub mod apps;
mod arena;
mod dheap;
mod gheap;
pub mod io;
mod key;
mod kselect;
mod list;
mod rbtree;
mod rng;

// The face: every structure's types at the root, one path each. Applications and files keep
// their namespaces (`apps::sssp`, `io::npy`).
pub use adheap::{AdHeapLayout, AtomicSlot, BadBridge, SlotWords, COUNTER as BRIDGE_COUNTER};
pub use arena::{ArenaLayout, ArenaMap, ArenaStats, ArenaView, ChurnReport, SvmArena};
pub use asym_runtime as runtime;
pub use dheap::{DHeap, SUPPORTED_D};
pub use gheap::{
    merge_and_sort, BulkPolicy, ConcurrentGeneralizedHeap, CooperativeConfig, CooperativeHeap,
    CooperativeStats, DeviceBatchOps, DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey,
    DeviceHeapProfile, DeviceHeapStats, GeneralizedHeap, HeapOp, HeapPlacement, HeapStats,
    InsertDirection, LaunchTrace, MemberReport, MergeKind, SpreadHeap, GHEAP_PROFILE_ENV,
    LANE_MIN_GROUPS, MAX_BATCH, MAX_DEVICE_BATCH, MAX_LANES,
};
pub use key::Key;
pub use kselect::{
    peers, select_one, Cooperation, DeviceStaging, DeviceTimes, DeviceUpdate, KSelector,
    SelectStats, SpreadKeys, Strategy, Sublists, WorkerShare,
};
pub use list::{
    workload, BatchReport, ListCheck, ListKind, ListMap, ListMode, ListOp, ListView, LockFreeList,
    OpStatus,
};
pub use rbtree::{Deleted, Found, Inserted, RbTree, TreeReport, UpdateStats};
