//! Scheduling modes: which kind of core does a batch's work.

use std::fmt;

use crate::named::Named;

/// Who does the work of a batch operation.
///
/// `KSelector::select`, `RbTree` and `LockFreeList::apply` take a `Mode` (the list with its
/// `ListOptions`: the device's share of a Cooperative batch); the applications' fronts take
/// one too (SSSP's `Sssp::shortest_paths`, knapsack's `Method::BranchAndBound`), and
/// `heap_for` gives the generalized heap of a mode (`ThreadedHeap` on the latency threads,
/// `DeviceGeneralizedHeap`, `CooperativeHeap`) behind the `BatchHeap` contract.
///
/// "GPU" means the selected throughput device, whatever it is (on CI, PoCL's CPU device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Pinned latency threads (and rayon for bulk work) do everything.
    CpuOnly,
    /// The throughput device does everything.
    GpuOnly,
    /// Work split by kind (device finds, CPU applies) and/or by amount (CPU workers and device
    /// batches claim items from one counter).
    Cooperative,
}

impl Mode {
    /// Every mode, in the order benchmarks print them.
    pub const ALL: [Mode; 3] = [Mode::CpuOnly, Mode::GpuOnly, Mode::Cooperative];

    /// Whether this mode needs an OpenCL device.
    pub fn uses_device(self) -> bool {
        self != Mode::CpuOnly
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Named for Mode {
    const KIND: &'static str = "mode";
    const ALL: &'static [Mode] = &Mode::ALL;
    fn name(self) -> &'static str {
        match self {
            Mode::CpuOnly => "cpu",
            Mode::GpuOnly => "gpu",
            Mode::Cooperative => "coop",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_through_names() {
        for &m in <Mode as Named>::ALL {
            assert_eq!(Mode::from_name(m.name()), Some(m));
        }
        assert_eq!(Mode::from_name("fast"), None);
        assert_eq!(Mode::names(), "cpu, gpu or coop");
    }
}
