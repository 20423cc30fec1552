//! The one home of FFI and raw pointers in asym.
//!
//! Everything that calls OpenCL's C API directly (SVM allocation, mapping, SVM kernel
//! arguments, device buffers' copies, kernel enqueue) or the C library (`sched_getcpu`) lives under this module, with a
//! `// SAFETY:` comment on every `unsafe` block. The rest of the crate is
//! `#![deny(unsafe_code)]` and builds on the safe types exported here: [`SvmBuffer`],
//! [`SvmMap`], [`DeviceBuffer`] and the crate-private launch helpers.

mod cl;
mod device_buffer;
mod os;
mod scope;
mod stream;
mod svm;
mod svm_cache;
mod svm_map;

pub(crate) use cl::{
    enqueue_kernel, event_device_interval, event_device_time, flush_queue, set_kernel_arg_svm,
    set_kernel_exec_info_svm_ptrs,
};
pub(crate) use device_buffer::set_kernel_arg_buffer;
pub use device_buffer::DeviceBuffer;
pub(crate) use os::{advise_huge_pages, current_cpu, fine_timer_slack, memory_rlimits};
pub use os::{
    exit_quietly_on_broken_pipe, pin_current_thread_to, u64s_as_atomic_u32_pairs, RemoveOnInterrupt,
};
pub(crate) use scope::{run_scoped, Job};
pub use stream::{copy_bits_streaming, copy_bits_streaming_par};
pub(crate) use svm::SvmAlloc;
pub use svm::{SvmAtomicElement, SvmBuffer, SvmElement, SvmKind};
pub(crate) use svm_cache::SvmCache;
pub use svm_map::{SvmMap, SvmReadMap};
