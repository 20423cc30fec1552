//! Helpers shared by the runtime's integration tests.
#![allow(dead_code)]

use asym_runtime::{select_device, Runtime, Transport};
use std::time::Duration;

/// The transports to test: the one `ASYM_SVM` forces, else every one the default device has.
pub fn transports() -> Vec<Transport> {
    let device = select_device(None).expect("an OpenCL device (install pocl-opencl-icd)");
    Transport::candidates(&device).expect("ASYM_SVM names a transport the device supports")
}

/// A runtime on the default device with `transport` and a test-sized timeout.
pub fn runtime(transport: Transport) -> Runtime {
    let device = select_device(None).expect("an OpenCL device");
    Runtime::open(device, Some(transport), Some(Duration::from_secs(60))).expect("open runtime")
}
