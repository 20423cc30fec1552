#![doc = include_str!("../README.md")]
//!
//! This facade re-exports the member crates: [`runtime`] (devices, SVM, transports, program
//! cache, latency pool, signal queues, modes, errors), [`kernels`] (the OpenCL C sources) and
//! [`structures`].
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub use asym_kernels as kernels;
pub use asym_runtime as runtime;
pub use asym_structures as structures;

pub use asym_runtime::{Error, Mode, Named, Result, Runtime, Transport};
