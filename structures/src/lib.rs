//! asym's concurrent data structures.
//!
//! Structures, each in a private module whose types this crate's root re-exports:
//! - `dheap`: the cache-aligned d-heap ([`DHeap`], d = 2..64), a fast CPU heap on its own;
//! - `adheap`: the ad-heap ([`AdHeapLayout`]), a d-heap with a bridge in its head through
//!   which a device and CPU threads split update-key (device walks, CPU applies);
//! - `kselect`: heap-based and radix batch k-selection ([`KSelector`]) in CpuOnly, GpuOnly
//!   and Cooperative modes (by amount, or by kind on ad-heaps);
//! - `gheap`: the generalized heap (batches of K keys per node, partial buffer, top-down or
//!   bottom-up insertion): [`GeneralizedHeap`] (one thread), [`ConcurrentGeneralizedHeap`]
//!   (many host threads), [`DeviceGeneralizedHeap`], [`CooperativeHeap`] and [`SpreadHeap`],
//!   every one keeping the [`BatchHeap`] contract;
//! - `arena`: the SVM allocator ([`SvmArena`]: superblocks, size classes, tagged lock-free free
//!   lists), `malloc`/`free` for work-items and CPU threads on the same memory;
//! - `list`: Harris's lock-free list on arena nodes ([`LockFreeList`]: ordered set; the list
//!   seed's positional operations), run by kernels and pinned threads, with reclamation at
//!   quiescent points;
//! - [`Key`]: the 32-bit key types they share.
//!
//! The applications (SSSP, knapsack), the file formats and the programs live in the
//! `asym-apps` crate (`examples/`): nothing here parses a file or a flag.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

mod adheap;
mod arena;
mod dheap;
mod gheap;
mod key;
mod kselect;
mod list;
mod rbtree;

// The face: every structure's types at the root, one path each.
pub use adheap::{AdHeapLayout, AtomicSlot, BadBridge, SlotWords, COUNTER as BRIDGE_COUNTER};
pub use arena::{ArenaLayout, ArenaMap, ArenaStats, ArenaView, ChurnReport, SvmArena};
pub use asym_runtime as runtime;
pub use dheap::{DHeap, SUPPORTED_D};
pub use gheap::{
    heap_for, merge_and_sort, BatchHeap, BulkPolicy, ConcurrentGeneralizedHeap, CooperativeConfig,
    CooperativeHeap, CooperativeStats, DeviceBatchOps, DeviceGeneralizedHeap, DeviceHeapConfig,
    DeviceHeapKey, DeviceHeapProfile, DeviceHeapStats, GeneralizedHeap, HeapOp, HeapOptions,
    HeapPlacement, HeapStats, InsertDirection, LaunchTrace, MergeKind, SpreadHeap, ThreadedHeap,
    GHEAP_PROFILE_ENV, LANE_MIN_GROUPS, MAX_BATCH, MAX_DEVICE_BATCH, MAX_LANES,
};
pub use key::Key;
pub use kselect::{
    select_one, Cooperation, DeviceStaging, DeviceTimes, DeviceUpdate, KSelector, PartCount,
    PartKept, SelectStats, SpreadKeys, Strategy, Sublists,
};
pub use list::{
    unique_values, BatchReport, ListCheck, ListKind, ListMap, ListOp, ListOptions, ListView,
    LockFreeList, OpStatus, LIST_CPU_WORK_GROUP, LIST_WALK_WINDOW, LIST_WALK_WINDOW_MAX,
    LIST_WORK_GROUP,
};
pub use rbtree::{Deleted, Found, Inserted, RbTree, SearchOrder, TreeReport, UpdateStats};
