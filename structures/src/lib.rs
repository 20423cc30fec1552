//! asym's concurrent data structures.
//!
//! Landed:
//! - [`dheap`]: the cache-aligned d-heap (d = 2..64), a fast CPU heap on its own;
//! - [`kselect`]: heap-based batch k-selection in CpuOnly, GpuOnly and Cooperative modes.
//!
//! Still to come (see the project's issues): the ad-heap bridge (device finds, CPU applies),
//! the generalized concurrent heap, the SVM allocator, the lock-free list and the red-black
//! tree.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

pub mod dheap;
pub mod kselect;
pub mod npy;

pub use asym_runtime as runtime;
pub use dheap::DHeap;
pub use kselect::{KSelector, SelectKey, SelectStats, Sublists};
