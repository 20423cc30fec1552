//! Scheduling modes: which kind of core does a batch's work.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Who does the work of a batch operation.
///
/// `KSelector::select` takes a `Mode`. The other structures offer the same three ways
/// through types that carry what each way needs: the list's `ListMode` (`Cooperative` holds
/// the device's share), the generalized heap's `HeapPlacement` and its three heap types
/// (`ConcurrentGeneralizedHeap` on the latency threads, `DeviceGeneralizedHeap`,
/// `CooperativeHeap`), and SSSP's and knapsack's functions per side.
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

    /// The short name used on command lines and in JSON (`cpu`, `gpu`, `coop`).
    pub fn short_name(self) -> &'static str {
        match self {
            Mode::CpuOnly => "cpu",
            Mode::GpuOnly => "gpu",
            Mode::Cooperative => "coop",
        }
    }

    /// Whether this mode needs an OpenCL device.
    pub fn uses_device(self) -> bool {
        self != Mode::CpuOnly
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" | "cpu-only" | "cpuonly" => Ok(Mode::CpuOnly),
            "gpu" | "gpu-only" | "gpuonly" | "device" => Ok(Mode::GpuOnly),
            "coop" | "cooperative" => Ok(Mode::Cooperative),
            other => Err(Error::InvalidArgument(format!(
                "unknown mode {other:?} (expected cpu, gpu or coop)"
            ))),
        }
    }
}

/// Parses `cpu|gpu|coop|all` into the list of modes to run.
pub fn parse_modes(s: &str) -> Result<Vec<Mode>> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(Mode::ALL.to_vec());
    }
    s.split(',').map(str::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_through_names() {
        for m in Mode::ALL {
            assert_eq!(m.short_name().parse::<Mode>().unwrap(), m);
        }
        assert_eq!(parse_modes("all").unwrap(), Mode::ALL.to_vec());
        assert_eq!(
            parse_modes("gpu,cpu").unwrap(),
            vec![Mode::GpuOnly, Mode::CpuOnly]
        );
        assert!(parse_modes("fast").is_err());
    }
}
