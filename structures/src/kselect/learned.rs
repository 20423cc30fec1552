//! What earlier selections measured, per sub-list length bucket, and the Cooperative plan
//! chosen from it.

/// What earlier selections measured for one sub-list length bucket.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Learned {
    /// All latency threads together, keys per second (0: unknown).
    pub(super) cpu_keys_per_s: f64,
    /// The device, keys per second over whole chunks (0: unknown).
    pub(super) dev_keys_per_s: f64,
    /// Shortest time from claim to answers of one device launch, seconds (0: unknown).
    pub(super) dev_launch_s: f64,
    /// Whole selections, keys per second, by who did the work (0: unknown): see
    /// [`CoopPlan`].
    pub(super) whole_keys_per_s: [f64; 3],
}

impl Learned {
    /// Whether both sides' speeds and the device's launch time are known, so that a device's
    /// first claim can be its share instead of a probe.
    pub(super) fn sizes_a_share(&self) -> bool {
        self.cpu_keys_per_s > 0.0 && self.dev_keys_per_s > 0.0 && self.dev_launch_s > 0.0
    }
}

/// Who does a selection's work. CpuOnly and GpuOnly always run one side alone; Cooperative by
/// amount picks from what earlier calls measured for the same sub-list length: the split,
/// unless a side alone was measured faster than the split (by more than 3 %; host memory
/// bandwidth and the staging copies' cores make both sides slow each other down), or the
/// device would sit out. A split that was measured before either side alone is followed by
/// one call with the latency threads alone (and one with the device alone where the device
/// outran the latency threads during the split), so Cooperative learns the better single
/// side without a CpuOnly or GpuOnly call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CoopPlan {
    CpuAlone = 0,
    DeviceAlone = 1,
    Split = 2,
}

impl Learned {
    pub(super) fn coop_plan(&self) -> CoopPlan {
        let [cpu, dev, split] = self.whole_keys_per_s;
        if split > 0.0 && cpu == 0.0 {
            return CoopPlan::CpuAlone;
        }
        if split > 0.0 && dev == 0.0 && self.dev_keys_per_s > cpu {
            return CoopPlan::DeviceAlone;
        }
        let (best, rate) = if dev > cpu {
            (CoopPlan::DeviceAlone, dev)
        } else {
            (CoopPlan::CpuAlone, cpu)
        };
        if split > 0.0 && rate > split * 1.03 {
            best
        } else {
            CoopPlan::Split
        }
    }
}

/// The bucket of sub-lists `avg_len` long on average (their length's bit count).
pub(super) fn bucket(avg_len: usize) -> u32 {
    usize::BITS - avg_len.max(1).leading_zeros()
}

#[cfg(test)]
mod plan_tests {
    use super::{CoopPlan, Learned};

    /// Cooperative splits first, then measures the latency threads alone, then the device
    /// alone only where it outran them during the split, then keeps the fastest.
    #[test]
    fn cooperative_explores_each_side_once_then_keeps_the_fastest() {
        let mut l = Learned::default();
        assert_eq!(l.coop_plan(), CoopPlan::Split);
        l.whole_keys_per_s[CoopPlan::Split as usize] = 100.0;
        l.dev_keys_per_s = 50.0;
        assert_eq!(l.coop_plan(), CoopPlan::CpuAlone);
        l.whole_keys_per_s[CoopPlan::CpuAlone as usize] = 120.0;
        assert_eq!(
            l.coop_plan(),
            CoopPlan::CpuAlone,
            "the device was slower: no try"
        );
        l.dev_keys_per_s = 200.0;
        assert_eq!(
            l.coop_plan(),
            CoopPlan::DeviceAlone,
            "the device was faster: try it"
        );
        l.whole_keys_per_s[CoopPlan::DeviceAlone as usize] = 90.0;
        assert_eq!(l.coop_plan(), CoopPlan::CpuAlone);
        l.whole_keys_per_s[CoopPlan::Split as usize] = 121.0;
        assert_eq!(l.coop_plan(), CoopPlan::Split, "within 3 %: keep splitting");
    }
}
