//! asym runtime: the base every structure stands on.
//!
//! - [`DeviceProfile`], [`list_devices`], [`select_device`]: OpenCL platforms and devices,
//!   selection by name (`ASYM_DEVICE`).
//! - [`SvmBuffer`] and friends (module `sys`, the one home of FFI and raw pointers): owned
//!   SVM, map guards, SVM kernel arguments.
//! - [`Transport`]: fine (SVM atomics, live) or coarse (kernel boundaries), `ASYM_SVM`.
//! - [`Runtime`]: context, queue, program cache (kernels from `kernels/`, built once per
//!   device with per-device options), [`Kernel`] and [`Launch`].
//! - [`LatencyPool`]: the pool of pinned threads ([`CpuTopology`] from hwloc).
//! - [`signal`]: host queues, the SVM ring, device services.
//! - [`spread`]: device sets and the one engine every structure spreads work with (workers,
//!   speed model, share split, plan exploration, failure policy, per-member reports).
//! - [`Mode`]: CPU-only, GPU-only or cooperative: the three ways every structure can run a
//!   batch (batch k-selection takes a `Mode`; the others name the same three with their own
//!   types, see [`Mode`]).
//! - [`host_memory`]: sizes from files and flags checked against the machine, fallible
//!   allocation.
//! - [`env`](mod@env): the `ASYM_*` variables, parsed as strictly as flags.
//! - [`faults`]: a runtime made to fail its n-th launch, map, allocation or wait (tests, soak).
//! - [`Named`]: the stable names of modes, transports and strategies, read back in one place.
//! - [`Error`]: the one error type.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![deny(unsafe_code)]

pub mod backoff;
mod device;
pub mod diag;
pub mod env;
mod error;
pub mod faults;
pub mod host_memory;
mod kernel;
mod latency;
mod mode;
mod named;
mod runtime;
pub mod signal;
pub mod spread;
#[allow(unsafe_code)]
mod sys;
mod transport;

pub use asym_kernels::{KernelParams, KernelSource};
pub use device::{list_devices, select_device, DeviceKind, DeviceProfile, SvmLevel, DEVICE_ENV};
pub use error::{panic_message, status_name, Error, Result, Side};
pub use faults::{FaultPoint, Faults};
pub use kernel::{ArgIndex, Kernel, Launch, Queue};
pub use latency::{
    BarrierGuard, CacheInfo, CpuTopology, LatencyPool, PoolOptions, PoolRef, SpinBarrier,
    WorkerInfo, THREADS_ENV,
};
pub use mode::Mode;
pub use named::Named;
pub use runtime::{
    Program, Runtime, RuntimeOptions, SvmStats, SVM_CACHE_ENV, SVM_CACHE_MOST, TIMEOUT_ENV,
};
pub use spread::DeviceSet;
pub use sys::{
    copy_bits_streaming, copy_bits_streaming_par, exit_quietly_on_broken_pipe,
    pin_current_thread_to, DeviceBuffer, RemoveOnInterrupt, SvmAtomicElement, SvmBuffer,
    SvmElement, SvmKind, SvmMap, SvmReadMap,
};
pub use transport::{Transport, SVM_ENV};
