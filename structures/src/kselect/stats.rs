//! What a selection did ([`SelectStats`]) and where the device's time went ([`DeviceTimes`]).

use asym_runtime::spread::MemberReport;

use super::device::DeviceOutcome;
use super::Strategy;

/// What a selection did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SelectStats {
    /// The method the latency threads ran (`None` when they selected nothing).
    pub cpu_strategy: Option<Strategy>,
    /// The method the device ran (`None` when it selected nothing).
    pub device_strategy: Option<Strategy>,
    /// Sub-lists the latency threads handled.
    pub cpu_sublists: usize,
    /// Sub-lists the device handled.
    pub device_sublists: usize,
    /// Device launches.
    pub launches: usize,
    /// Whether the device kept its heaps in local memory.
    pub local_heap: bool,
    /// Nodes of each device heap in local memory: k when the whole heap fits, the top nodes
    /// of a heap split between local and global memory, or 0.
    pub local_heap_nodes: usize,
    /// Sub-lists done on ad-heaps, both kinds of cores together (Cooperative by kind).
    pub bridge_sublists: usize,
    /// Sub-lists split by range between the latency threads and the device (Cooperative
    /// radix on fewer long sub-lists than twice the latency threads), both sides working on
    /// each.
    pub split_sublists: usize,
    /// Update-keys done through a device bridge.
    pub bridge_updates: u64,
    /// Where the device's time went (GpuOnly and Cooperative by amount; summed over the
    /// members of a device set).
    pub device_times: DeviceTimes,
    /// Per worker, what it did, on a device set (GpuOnly: each member; Cooperative by
    /// amount: each member and the latency threads); empty on one device.
    pub workers: Vec<MemberReport>,
    /// Sub-lists a failed member of a device set had claimed but not answered, selected
    /// again by the workers left.
    pub redone_sublists: usize,
    /// Whether a device set ran this call with a group of workers it had not measured yet
    /// for this shape (it tries each group that could win once, then keeps the fastest).
    pub exploring: bool,
}

impl SelectStats {
    /// Books what the device side did.
    pub(super) fn record_device(&mut self, dev: &DeviceOutcome) {
        self.device_sublists = dev.sublists;
        self.launches = dev.launches;
        self.local_heap = dev.local_heap;
        self.local_heap_nodes = dev.local_heap_nodes;
        self.device_times = dev.times;
    }
}

/// Where the device's time went in GpuOnly and the device half of Cooperative by amount,
/// seconds summed over launches. Host-side stages are wall time on the driving thread;
/// `transfer_s` and `kernel_s` come from the queue's profiling (0 where the runtime keeps no
/// device times, `RuntimeOptions::device_times`, or the driver gives none). With double buffering, staging one chunk overlaps the kernel of the other, so the
/// parts can add up to more than the selection took.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceTimes {
    /// Host: mapping a staging buffer, copying keys into it in the device's ordered form,
    /// unmapping it.
    pub stage_s: f64,
    /// Device: host-to-device copies (the unmaps of coarse staging buffers; 0 on fine SVM).
    pub transfer_s: f64,
    /// Device: the k-selection kernels.
    pub kernel_s: f64,
    /// Host: blocked waiting for launches to finish.
    pub wait_s: f64,
    /// Host: mapping the answers and storing them.
    pub readback_s: f64,
}
