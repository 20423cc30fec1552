//! The words of a selection: how the list set is cut ([`Sublists`]), which method finds each
//! k-th ([`Strategy`]), how the two kinds of cores share a Cooperative call ([`Cooperation`]),
//! and how the device updates and stages ([`DeviceUpdate`], [`DeviceStaging`]).

use asym_runtime::{Error, Named, Result};

/// How the list set is cut into sub-lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sublists {
    /// Consecutive sub-lists of this length (the total must be a multiple of it).
    Equal(usize),
    /// Boundaries: sub-list i is `offsets[i]..offsets[i + 1]`; starts at 0, ends at the total,
    /// strictly increasing.
    Offsets(Vec<usize>),
}

impl Sublists {
    /// Checks the cut against `total` keys and `k`, returning the boundaries.
    pub fn boundaries(&self, total: usize, k: usize) -> Result<Vec<usize>> {
        self.count(total, k)?;
        Ok(match self {
            Sublists::Equal(len) => (0..=total / len).map(|i| i * len).collect(),
            Sublists::Offsets(o) => o.clone(),
        })
    }

    /// Checks the cut against `total` keys and `k`, returning how many sub-lists it makes
    /// (equal sub-lists in constant time, without building their boundaries).
    pub fn count(&self, total: usize, k: usize) -> Result<usize> {
        if total == 0 {
            return Err(Error::InvalidArgument("the input is empty".into()));
        }
        let (n, shortest) = match self {
            Sublists::Equal(0) => {
                return Err(Error::out_of_range("sub-list length", 0, "at least 1"))
            }
            Sublists::Equal(len) => {
                if total % len != 0 {
                    return Err(Error::InvalidArgument(format!(
                        "{total} keys cannot be cut into sub-lists of {len} ({total} is not a multiple of {len})"
                    )));
                }
                (total / len, *len)
            }
            Sublists::Offsets(o) => {
                if o.len() < 2 || o[0] != 0 || *o.last().unwrap_or(&0) != total {
                    return Err(Error::InvalidArgument(format!(
                        "sub-list offsets must start at 0 and end at {total} (the number of keys)"
                    )));
                }
                if let Some(w) = o.windows(2).position(|w| w[1] <= w[0]) {
                    return Err(Error::InvalidArgument(format!(
                        "sub-list {w} is empty or offsets decrease"
                    )));
                }
                let shortest = o.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(0);
                (o.len() - 1, shortest)
            }
        };
        if k == 0 || k > shortest {
            return Err(Error::out_of_range(
                "k =",
                k,
                format!("out of range: it must be between 1 and the shortest sub-list's length, {shortest}"),
            ));
        }
        Ok(n)
    }
}

/// How [`Mode::Cooperative`](asym_runtime::Mode::Cooperative) divides the work between the latency threads and the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cooperation {
    /// Split by amount: both sides claim whole sub-lists from one counter, the device's share
    /// learned from measured throughput.
    #[default]
    ByAmount,
    /// Split by kind with the ad-heap bridge, on the schedule the transport allows: live on
    /// fine SVM, pipelined on coarse.
    Bridge,
    /// The ad-heap bridge, live: a persistent kernel and the latency threads share the heaps
    /// through signal rings (fine transport only; an error elsewhere).
    BridgeLive,
    /// The ad-heap bridge in double-buffered batches (any transport).
    BridgePipelined,
}

impl Cooperation {
    /// Every cooperation.
    pub const ALL: [Cooperation; 4] = [
        Cooperation::ByAmount,
        Cooperation::Bridge,
        Cooperation::BridgeLive,
        Cooperation::BridgePipelined,
    ];
}

impl Named for Cooperation {
    const KIND: &'static str = "cooperation";
    const ALL: &'static [Cooperation] = &Cooperation::ALL;
    fn name(self) -> &'static str {
        match self {
            Cooperation::ByAmount => "amount",
            Cooperation::Bridge => "bridge",
            Cooperation::BridgeLive => "bridge-live",
            Cooperation::BridgePipelined => "bridge-pipelined",
        }
    }
}

impl std::fmt::Display for Cooperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a sub-list's k-th smallest key is found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// A d-heap of the k smallest keys seen (the ad-heap seed's method), in every mode and
    /// cooperation, on both kinds of cores.
    Heap,
    /// MSD radix select on the keys' ordered image: a histogram of one 8-bit digit per pass
    /// over the keys still in the k-th's bucket. On the latency threads (`kselect/radix.rs`)
    /// and on the device (`kernels/kselect_radix.cl`, fed through the staging chunks, or
    /// reading keys already in SVM with [`KSelector::select_svm`](super::KSelector::select_svm)); Cooperative by amount
    /// runs it on both sides. Cooperation by kind shares ad-heaps and refuses it.
    Radix,
    /// The method measured fastest on each side: on the latency threads the heap for small
    /// k (few keys reach the heap: [`Strategy::on_cpu`]) and radix elsewhere, radix on the
    /// device (docs/benchmarks/kselect.md); the bridge cooperations keep the heap.
    #[default]
    Auto,
}

impl Strategy {
    /// Every strategy that names one method (not `Auto`).
    pub const METHODS: [Strategy; 2] = [Strategy::Heap, Strategy::Radix];

    /// The method the latency threads run on sub-lists of `len` keys (on average) for `k`:
    /// `Auto` takes the heap where few keys reach it, radix elsewhere.
    ///
    /// The heap reads every key once and updates for about k·(1 + ln(len/k)) of them (the
    /// expected number of keys smaller than the k-th smallest seen so far); radix reads
    /// every key twice and does more per key. Per thread the heap costs about a third of
    /// radix's time per key plus 150 times that per update, so the heap wins where
    /// k·(1 + ln(len/k)) < len/75 (the fit: docs/benchmarks/kselect.md).
    pub fn on_cpu(self, len: usize, k: usize) -> Strategy {
        match self {
            Strategy::Heap => Strategy::Heap,
            Strategy::Radix => Strategy::Radix,
            Strategy::Auto => {
                let (len, k) = (len.max(1) as f64, k.max(1) as f64);
                if k * (1.0 + (len / k).max(1.0).ln()) < len / 75.0 {
                    Strategy::Heap
                } else {
                    Strategy::Radix
                }
            }
        }
    }

    /// The method the device runs.
    pub(super) fn on_device(self) -> Strategy {
        match self {
            Strategy::Heap => Strategy::Heap,
            Strategy::Radix | Strategy::Auto => Strategy::Radix,
        }
    }
}

impl Named for Strategy {
    const KIND: &'static str = "strategy";
    const ALL: &'static [Strategy] = &[Strategy::Heap, Strategy::Radix, Strategy::Auto];
    fn name(self) -> &'static str {
        match self {
            Strategy::Heap => "heap",
            Strategy::Radix => "radix",
            Strategy::Auto => "auto",
        }
    }
}

/// How the device kernel runs an update-key (GpuOnly and the device half of Cooperative by
/// amount). Both reject keys ≥ the root in parallel over the work-group first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceUpdate {
    /// The seed's d-heap baseline: per level, the work-group loads the child block and finds
    /// the max child by a parallel reduction; one work-item moves it up. 2 + log2(d) barriers
    /// per level.
    GroupReduce,
    /// One work-item runs every candidate's whole update-key, reading each child block in one
    /// go and taking the max in registers; no barrier inside an update-key.
    #[default]
    SingleItem,
}

impl Named for DeviceUpdate {
    const KIND: &'static str = "device update-key";
    const ALL: &'static [DeviceUpdate] = &[DeviceUpdate::GroupReduce, DeviceUpdate::SingleItem];
    fn name(self) -> &'static str {
        match self {
            DeviceUpdate::GroupReduce => "reduce",
            DeviceUpdate::SingleItem => "single",
        }
    }
}

/// How keys reach the device (GpuOnly and the device half of Cooperative by amount).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DeviceStaging {
    /// Map a staging buffer, copy the keys into it from the host (streaming stores; in
    /// parallel in GpuOnly, on the staging threads in Cooperative), unmap: on coarse SVM the
    /// driver then copies the buffer to the device.
    #[default]
    Mapped,
    /// Let the driver's copy engine read the caller's keys directly (`clEnqueueSVMMemcpy`):
    /// no host pass over the keys, but from ordinary (pageable) memory the driver stages them
    /// itself, several times slower than mapped writes from the latency threads.
    ///
    /// Either way the keys travel as raw bits and the kernel maps them to the ordered form.
    CopyEngine,
}

impl Named for DeviceStaging {
    const KIND: &'static str = "device staging";
    const ALL: &'static [DeviceStaging] = &[DeviceStaging::Mapped, DeviceStaging::CopyEngine];
    fn name(self) -> &'static str {
        match self {
            DeviceStaging::Mapped => "mapped",
            DeviceStaging::CopyEngine => "copy",
        }
    }
}
