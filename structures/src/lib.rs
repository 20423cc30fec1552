//! asym's concurrent data structures.
//!
//! This crate is where the structures of `ARCHITECTURE.md` land, each on the runtime
//! (`asym-runtime`) and its kernels (`asym-kernels`): the cache-aligned d-heap and ad-heap with
//! batch k-selection, the generalized concurrent heap, the SVM allocator, the lock-free list
//! and the red-black tree. None is implemented yet: the runtime foundation comes first (see the
//! project's issue list); nothing here pretends otherwise.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

pub use asym_runtime as runtime;
