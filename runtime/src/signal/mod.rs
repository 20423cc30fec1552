//! Signal queues: how the scheduler, latency threads and running kernels tell each other
//! about work.
//!
//! - [`host`]: bounded crossbeam queues between host threads, every wait bounded.
//! - [`ring_protocol`]: the index protocol of the SVM ring, generic over the word type so
//!   that the same code runs on SVM atomics, on mapped memory and under loom.
//! - [`ring`]: the SVM-resident ring itself.
//! - [`service`]: a device service, a kernel fed and answered through two rings, live on
//!   the fine transport and at kernel boundaries on the coarse one, behind one API.

pub mod host;
pub mod ring;
pub mod ring_protocol;
pub mod service;

pub use host::SignalQueue;
pub use ring::DeviceRing;
pub use service::{DeviceService, ServiceStats};

/// Packs two 32-bit words into one ring message (`lo` in the low half).
pub fn pack(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

/// Splits a ring message into `(lo, hi)`.
pub fn unpack(msg: u64) -> (u32, u32) {
    (msg as u32, (msg >> 32) as u32)
}
