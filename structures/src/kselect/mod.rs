//! Batch k-selection: the k-th smallest key of every sub-list of a list set, by one of two
//! methods ([`Strategy`]): the ad-heap seed's heap (a max-heap of the first k keys; every
//! later key smaller than the root replaces it by update-key; the root is the answer), or MSD
//! radix select (a histogram of one 8-bit digit per pass, keeping only the k-th's bucket).
//!
//! Keys are `i32`, `u32` or `f32`. Internally every key is mapped to an "ordered" `i32` whose
//! signed order is the key's order ([`Key`]), so one heap and one kernel serve all three.
//! `f32` follows [`f32::total_cmp`]: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN.
//!
//! Modes ([`Mode`]):
//! - **CpuOnly**: the pinned latency threads claim sub-lists from one counter and run the
//!   cache-aligned d-heap ([`DHeap`]) or radix select on them (few long sub-lists: every
//!   thread takes a share of each, histograms merged).
//! - **GpuOnly**: the device runs `kernels/kselect.cl` (heap) or `kernels/kselect_radix.cl`,
//!   one work-group per sub-list, in chunks staged through two sets of SVM buffers so the
//!   host copies chunk i+1 while the device computes chunk i (double buffering; on the coarse
//!   transport each hand-off is an unmap and a kernel launch). Keys already in SVM skip the
//!   staging: [`KSelector::select_svm`].
//! - **Cooperative**, in one of two ways ([`Cooperation`]):
//!   - *by amount* (the default): latency threads and the device claim sub-lists from the same
//!     counter, each with the strategy's method for its side. The device first claims a small
//!     probe (1/256 of the sub-lists), then claims its measured share of the throughput
//!     applied to what remains (at most a full chunk), and stops claiming once that share
//!     rounds to nothing, so a slow device cannot leave the CPU waiting at the end and a fast
//!     one is not starved ([`KSelector::with_device_share`] fixes the split instead);
//!   - *by kind*, the ad-heap bridge ([`crate::adheap`], heap strategy only): every update-key
//!     is split, the CPU filtering keys, writing roots and applying bridges, the device
//!     walking the max-child path; live through the signal rings on the fine transport, in
//!     double-buffered batches on any transport (`bridge.rs`).

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::time::Instant;

use asym_runtime::{Error, LatencyPool, Mode, Named, Result, Runtime};

use crate::dheap::{check_d, DHeap};
use crate::key::Key;
use device::{min_known, ClaimPolicy, Copier, DeviceOutcome, DevicePlan, DeviceShape, StageCache};

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

/// How [`Mode::Cooperative`] divides the work between the latency threads and the device.
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
    /// reading keys already in SVM with [`KSelector::select_svm`]); Cooperative by amount
    /// runs it on both sides. Cooperation by kind shares ad-heaps and refuses it.
    Radix,
    /// The method measured fastest on each side: on the latency threads the heap for small
    /// k (few keys reach the heap: [`Strategy::on_cpu`]) and radix elsewhere, radix on the
    /// device (see docs/BENCHMARKS.md); the bridge cooperations keep the heap.
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
    /// every key twice and does more per key. Measured on the dev machine (2 threads, 2^22
    /// keys): per thread the heap costs about 0.2 ns per key plus 30 ns per update, radix
    /// about 0.6 ns per key, so the heap wins where k·(1 + ln(len/k)) < len/75 (k = 1 at
    /// any length: 3-4x; k = 16 at 2^17: 3x; k = 16 at 2^11 and k = 0.1·len everywhere:
    /// radix).
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
    fn on_device(self) -> Strategy {
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
    pub workers: Vec<asym_runtime::spread::MemberReport>,
    /// Sub-lists a failed member of a device set had claimed but not answered, selected
    /// again by the workers left.
    pub redone_sublists: usize,
    /// Whether a device set ran this call with a group of workers it had not measured yet
    /// for this shape (it tries each group that could win once, then keeps the fastest).
    pub exploring: bool,
}

impl SelectStats {
    /// Books what the device side did.
    fn record_device(&mut self, dev: &DeviceOutcome) {
        self.device_sublists = dev.sublists;
        self.launches = dev.launches;
        self.local_heap = dev.local_heap;
        self.local_heap_nodes = dev.local_heap_nodes;
        self.device_times = dev.times;
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
    /// itself (H200: 6.5 GB/s against 46 GB/s for mapped writes on 16 threads).
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

/// Batch k-selection on a runtime (optional: CpuOnly needs none) and a latency pool.
pub struct KSelector {
    rt: Option<Runtime>,
    pool: LatencyPool,
    d: usize,
    work_group: Option<usize>,
    device_update: DeviceUpdate,
    local_heap_limit: Option<usize>,
    device_staging: DeviceStaging,
    staging_threads: Option<usize>,
    /// The staging copier pool of Cooperative mode, kept between calls: (threads, pool).
    staging_pool: std::sync::Mutex<Option<(usize, std::sync::Arc<rayon::ThreadPool>)>>,
    cooperation: Cooperation,
    bridge_checks: bool,
    strategy: Strategy,
    /// Keys per work-group of the device radix's tiled form (0: one work-group per
    /// sub-list always).
    radix_tile: usize,
    /// A fixed device share for Cooperative by amount (`None`: learned).
    device_share: Option<f64>,
    /// Measured speeds per sub-list length (bucketed by log2) and CPU method, for
    /// Cooperative's split.
    learned: std::sync::Mutex<std::collections::HashMap<u32, Learned>>,
    /// Device staging buffers kept between calls.
    stages: StageCache,
    /// The resident path's offsets and answers, kept while the cut stays the same.
    resident: resident::ResidentCache,
    /// The range split's device buffers, kept while later calls fit in them.
    range: range_split::RangeCache,
    /// The devices of a set beyond one (empty on one device): see `spread.rs`.
    members: Vec<spread::Member>,
    /// Whole-call speeds over the set, together and alone.
    set_plans: spread::SetPlans,
    /// The set's failure record and injected faults (a step is a launch).
    failures: std::sync::Mutex<asym_runtime::spread::Failures>,
}

/// What earlier selections measured for one sub-list length bucket.
#[derive(Clone, Copy, Debug, Default)]
struct Learned {
    /// All latency threads together, keys per second (0: unknown).
    cpu_keys_per_s: f64,
    /// The device, keys per second over whole chunks (0: unknown).
    dev_keys_per_s: f64,
    /// Shortest time from claim to answers of one device launch, seconds (0: unknown).
    dev_launch_s: f64,
    /// Whole selections, keys per second, by who did the work (0: unknown): see
    /// [`CoopPlan`].
    whole_keys_per_s: [f64; 3],
}

impl Learned {
    /// Whether both sides' speeds and the device's launch time are known, so that a device's
    /// first claim can be its share instead of a probe.
    fn sizes_a_share(&self) -> bool {
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
enum CoopPlan {
    CpuAlone = 0,
    DeviceAlone = 1,
    Split = 2,
}

impl Learned {
    fn coop_plan(&self) -> CoopPlan {
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

fn bucket(avg_len: usize) -> u32 {
    usize::BITS - avg_len.max(1).leading_zeros()
}

impl std::fmt::Debug for KSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KSelector")
            .field("rt", &self.rt)
            .field("d", &self.d)
            .finish()
    }
}

/// Sub-lists handed out from one counter to every worker, CPU or device: those in
/// `next..end` of the selection's `n`.
struct Claims {
    next: AtomicUsize,
    start: usize,
    end: usize,
    /// Sub-lists of the whole selection (for sizes and shares).
    n: usize,
}

impl Claims {
    /// Sub-lists `range` of a selection of `n`.
    fn new(range: std::ops::Range<usize>, n: usize) -> Self {
        Claims {
            next: AtomicUsize::new(range.start),
            start: range.start,
            end: range.end,
            n,
        }
    }
    fn claim(&self, count: usize) -> Option<std::ops::Range<usize>> {
        let start = self.next.fetch_add(count.max(1), Ordering::Relaxed);
        (start < self.end).then(|| start..(start + count.max(1)).min(self.end))
    }
    /// The sub-lists these claims hand out.
    fn range(&self) -> std::ops::Range<usize> {
        self.start..self.end
    }
    fn remaining(&self) -> usize {
        self.end.saturating_sub(self.next.load(Ordering::Relaxed))
    }
}

/// Progress shared by the workers of one selection (keys done per side, for the split).
struct Progress {
    cpu_keys: AtomicUsize,
    started: Instant,
    /// One entry per device of a device set (empty on one device).
    members: Vec<MemberProgress>,
}

impl Progress {
    fn new(members: usize) -> Self {
        Progress {
            cpu_keys: AtomicUsize::new(0),
            started: Instant::now(),
            members: (0..members).map(|_| MemberProgress::default()).collect(),
        }
    }
}

/// One device's keys answered so far in a selection over a device set, and when it began
/// (for the others' claims).
#[derive(Default)]
struct MemberProgress {
    keys: AtomicUsize,
    /// The member's first claim of the selection (a redo round keeps it: `keys` counts on).
    started: std::sync::OnceLock<Instant>,
}

impl MemberProgress {
    fn start(&self) {
        let _ = self.started.set(Instant::now());
    }

    /// Keys per second since the member started (0 before it started).
    fn rate(&self) -> f64 {
        self.started.get().map_or(0.0, |t| {
            self.keys.load(Ordering::Relaxed) as f64 / t.elapsed().as_secs_f64().max(1e-9)
        })
    }
}

impl KSelector {
    /// A selector with heaps of arity `d` (2, 4, 8, 16, 32 or 64).
    pub fn new(rt: Option<Runtime>, pool: LatencyPool, d: usize) -> Result<Self> {
        check_d(d)?;
        Ok(KSelector {
            rt,
            pool,
            d,
            work_group: None,
            device_update: DeviceUpdate::default(),
            local_heap_limit: None,
            device_staging: DeviceStaging::default(),
            staging_threads: None,
            staging_pool: Default::default(),
            cooperation: Cooperation::default(),
            bridge_checks: false,
            strategy: Strategy::default(),
            device_share: None,
            radix_tile: device_radix::DEFAULT_TILE,
            learned: Default::default(),
            stages: Default::default(),
            resident: Default::default(),
            range: Default::default(),
            members: Vec::new(),
            set_plans: Default::default(),
            failures: std::sync::Mutex::new(asym_runtime::spread::Failures::new(Vec::new())),
        })
    }

    /// Sets how each sub-list's k-th is found (default [`Strategy::Auto`]).
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// How each sub-list's k-th is found.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Overrides the device work-group size (a power of two ≥ d) of both device methods
    /// (default: see `batch_kselect --help`; 256 for radix).
    pub fn with_work_group(mut self, wg: usize) -> Result<Self> {
        if !wg.is_power_of_two() || wg < self.d {
            return Err(Error::out_of_range(
                "work-group size",
                wg,
                format!("must be a power of two ≥ d = {}", self.d),
            ));
        }
        self.work_group = Some(wg);
        Ok(self)
    }

    /// Sets how the device kernel runs an update-key.
    pub fn with_device_update(mut self, update: DeviceUpdate) -> Self {
        self.device_update = update;
        self
    }

    /// Caps the local memory a device heap may use, in bytes (by default what the device
    /// has, less the kernel's own). A heap that does not fit is split (its top levels in local
    /// memory, the rest in global) with the single-item kernel, else kept in global memory;
    /// 0 keeps every heap in global memory. For tests and measurements.
    pub fn with_device_local_heap_limit(mut self, bytes: usize) -> Self {
        self.local_heap_limit = Some(bytes);
        self
    }

    /// Sets how keys reach the device.
    pub fn with_device_staging(mut self, staging: DeviceStaging) -> Self {
        self.device_staging = staging;
        self
    }

    /// Sets how many of the latency pool's cores Cooperative mode leaves to the device's
    /// staging copies (default: half of them with 4 or more latency threads, else none;
    /// GpuOnly always copies on every core). 0 means the driver thread copies alone.
    ///
    /// Staging is bound by host memory bandwidth more than by cores (H200 host, 2^28 keys in
    /// 2^11 sub-lists: 8 of 16 threads fed the device nearly as fast as 16, 4 did not), and
    /// the device outruns the CPU by 3-4x there, so half the cores stage by default.
    pub fn with_staging_threads(mut self, threads: usize) -> Result<Self> {
        if threads >= self.pool.len() {
            return Err(Error::InvalidArgument(format!(
                "{threads} staging threads would leave none of the {} latency threads to select",
                self.pool.len()
            )));
        }
        self.staging_threads = Some(threads);
        Ok(self)
    }

    /// Staging threads for Cooperative mode (see [`KSelector::with_staging_threads`]).
    pub fn staging_threads(&self) -> usize {
        self.staging_threads.unwrap_or(if self.pool.len() >= 4 {
            self.pool.len() / 2
        } else {
            0
        })
    }

    fn staging_copier(&self, threads: usize) -> Result<Copier> {
        if threads == 0 {
            return Ok(Copier::Serial);
        }
        let mut slot = self.staging_pool.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((n, pool)) = slot.as_ref() {
            if *n == threads {
                return Ok(Copier::Pool(pool.clone()));
            }
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("asym-staging-{i}"))
            .build()
            .map_err(|e| {
                Error::thread_lost(
                    format!("{threads} staging threads"),
                    format!("could not start {threads} staging threads: {e}"),
                )
            })?;
        let pool = std::sync::Arc::new(pool);
        *slot = Some((threads, pool.clone()));
        Ok(Copier::Pool(pool))
    }

    /// Fixes the share of the sub-lists Cooperative by amount gives the device: the first
    /// `share` of them (rounded to whole sub-lists; 0.0 all on the latency threads, 1.0 all on
    /// the device), the rest to the latency threads, both running at once. `None` (the
    /// default) lets the selector split by the speeds it measured. For measurements, and for
    /// a split known to suit a machine.
    pub fn with_device_share(mut self, share: Option<f64>) -> Result<Self> {
        if let Some(s) = share {
            if !(0.0..=1.0).contains(&s) {
                return Err(Error::out_of_range(
                    "device share",
                    s,
                    "must be between 0 and 1",
                ));
            }
        }
        self.device_share = share;
        Ok(self)
    }

    /// Sets how many keys one work-group of the device radix takes: sub-lists longer than
    /// `keys` are cut into tiles of at most that many, a work-group each, with histograms
    /// merged through global memory (four launches instead of one); 0 keeps one work-group
    /// per sub-list at any length. The default was measured on the H200 (docs/BENCHMARKS.md).
    pub fn with_radix_tile(mut self, keys: usize) -> Result<Self> {
        if keys != 0 && keys < 256 {
            return Err(Error::out_of_range(
                "radix tile keys",
                keys,
                "use at least 256, or 0 for one work-group per sub-list",
            ));
        }
        self.radix_tile = keys;
        Ok(self)
    }

    /// Sets how Cooperative mode divides the work.
    pub fn with_cooperation(mut self, cooperation: Cooperation) -> Self {
        self.cooperation = cooperation;
        self
    }

    /// With `true`, Cooperative-by-kind checks every bridge against the ad-heap's rules before
    /// applying it and the whole heap after (slow: for tests and debugging).
    pub fn with_bridge_checks(mut self, on: bool) -> Self {
        self.bridge_checks = on;
        self
    }

    /// How Cooperative mode divides the work.
    pub fn cooperation(&self) -> Cooperation {
        self.cooperation
    }

    /// The bridge schedule `cooperation` runs here (`BridgeLive` or `BridgePipelined`; `Bridge`
    /// resolves by transport), or `None` for by-amount or without a device.
    pub fn bridge_schedule(&self, cooperation: Cooperation) -> Option<Cooperation> {
        match cooperation {
            Cooperation::ByAmount => None,
            Cooperation::BridgeLive | Cooperation::BridgePipelined => Some(cooperation),
            Cooperation::Bridge => Some(
                if self.rt.as_ref()?.transport() == asym_runtime::Transport::Fine {
                    Cooperation::BridgeLive
                } else {
                    Cooperation::BridgePipelined
                },
            ),
        }
    }

    /// The heap arity.
    pub fn d(&self) -> usize {
        self.d
    }

    /// The runtime, if any.
    pub fn runtime(&self) -> Option<&Runtime> {
        self.rt.as_ref()
    }

    /// The latency pool.
    pub fn pool(&self) -> &LatencyPool {
        &self.pool
    }

    /// The k-th smallest key of every sub-list of `data`, in sub-list order.
    pub fn select<K: Key>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
    ) -> Result<Vec<K>> {
        self.select_with_stats(data, sublists, k, mode)
            .map(|(v, _)| v)
    }

    /// [`KSelector::select`], also reporting who did what.
    pub fn select_with_stats<K: Key>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
    ) -> Result<(Vec<K>, SelectStats)> {
        self.select_cooperating(data, sublists, k, mode, self.cooperation)
    }

    /// [`KSelector::select_with_stats`] with Cooperative mode dividing the work as
    /// `cooperation` says (the other modes ignore it).
    pub fn select_cooperating<K: Key>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
        cooperation: Cooperation,
    ) -> Result<(Vec<K>, SelectStats)> {
        self.select_using(data, sublists, k, mode, cooperation, self.strategy)
    }

    /// [`KSelector::select_cooperating`] with `strategy` for this call instead of the
    /// selector's own.
    pub fn select_using<K: Key>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
        mode: Mode,
        cooperation: Cooperation,
        strategy: Strategy,
    ) -> Result<(Vec<K>, SelectStats)> {
        let offs = sublists.boundaries(data.len(), k)?;
        let n = offs.len() - 1;
        let results: Vec<AtomicI32> = (0..n).map(|_| AtomicI32::new(0)).collect();
        let claims = Claims::new(0..n, n);
        let spread = self.spreads(mode, cooperation);
        let progress = Progress::new(if spread { self.members.len() } else { 0 });
        let done: Vec<std::sync::atomic::AtomicBool> = if spread {
            (0..n).map(|_| Default::default()).collect()
        } else {
            Vec::new()
        };
        let job = Job {
            done: &done,
            data,
            offs: &offs,
            k,
            results: &results,
            claims: &claims,
            progress: &progress,
            cpu_threads: self.pool.len(),
            cpu_strategy: strategy.on_cpu(data.len() / n, k),
            device_strategy: strategy.on_device(),
        };
        if strategy == Strategy::Radix
            && mode == Mode::Cooperative
            && cooperation != Cooperation::ByAmount
        {
            return Err(Error::Unsupported {
                device: self
                    .rt
                    .as_ref()
                    .map_or_else(|| "none".into(), |rt| rt.profile().label()),
                what: format!("run radix select cooperating by {cooperation}"),
                lacks: "a radix form of the ad-heap bridge (cooperation by kind shares heaps: \
                        use the heap strategy, or cooperation by amount for radix)"
                    .into(),
            });
        }
        let mut stats = SelectStats::default();
        // Speeds are learned per length and per method on each side (they differ several-fold).
        let key = bucket(data.len() / n)
            | ((job.cpu_strategy == Strategy::Radix) as u32) << 16
            | ((job.device_strategy == Strategy::Radix) as u32) << 17;
        let hint = self
            .learned
            .lock()
            .map(|l| l.get(&key).copied().unwrap_or_default())
            .unwrap_or_default();
        let plan = match mode {
            Mode::CpuOnly => CoopPlan::CpuAlone,
            Mode::GpuOnly => CoopPlan::DeviceAlone,
            Mode::Cooperative => hint.coop_plan(),
        };
        if self.members.len() > 1
            && mode == Mode::Cooperative
            && (cooperation != Cooperation::ByAmount || self.device_share.is_some())
        {
            return Err(Error::Unsupported {
                device: self
                    .devices()
                    .iter()
                    .map(|rt| rt.profile().label())
                    .collect::<Vec<_>>()
                    .join(" + "),
                what: if self.device_share.is_some() {
                    "give a fixed device share".into()
                } else {
                    format!("cooperate by {cooperation}")
                },
                lacks: "one device: a set of several splits by amount, from measured speeds \
                        (open one device for the bridge or a fixed share)"
                    .into(),
            });
        }
        match mode {
            _ if spread => self.run_spread(&job, mode, key, &mut stats)?,
            Mode::CpuOnly | Mode::GpuOnly => self.run_alone(&job, plan, key, &mut stats)?,
            Mode::Cooperative if cooperation != Cooperation::ByAmount => {
                let b = self.bridge_worker(&job, cooperation)?;
                stats.bridge_sublists = b.sublists;
                stats.bridge_updates = b.updates;
                stats.launches = b.launches;
            }
            Mode::Cooperative if self.range_splits(&job) => {
                self.run_by_range(&job, hint, plan, key, &mut stats)?
            }
            Mode::Cooperative if self.device_share.is_some() => {
                let share = self.device_share.unwrap_or_default();
                self.run_fixed_split(&job, share, &mut stats)?
            }
            Mode::Cooperative if plan != CoopPlan::Split => {
                self.run_alone(&job, plan, key, &mut stats)?
            }
            Mode::Cooperative => self.run_split(&job, hint, key, &mut stats)?,
        }
        stats.cpu_strategy =
            (stats.cpu_sublists + stats.split_sublists > 0).then_some(job.cpu_strategy);
        stats.device_strategy = if stats.bridge_sublists > 0 {
            Some(Strategy::Heap)
        } else {
            (stats.device_sublists + stats.split_sublists > 0).then_some(job.device_strategy)
        };
        let handled = stats.cpu_sublists
            + stats.device_sublists
            + stats.bridge_sublists
            + stats.split_sublists;
        if handled != n {
            return Err(Error::corrupted(
                "a k-selection",
                format!(
                "{handled} of {n} sub-lists were handled (cpu {}, device {}, bridge {}, split {})",
                stats.cpu_sublists,
                stats.device_sublists,
                stats.bridge_sublists,
                stats.split_sublists
            ),
            ));
        }
        Ok((
            results
                .into_iter()
                .map(|r| K::from_ordered(r.into_inner()))
                .collect(),
            stats,
        ))
    }

    /// One side does everything (CpuOnly, GpuOnly, or Cooperative when that measured faster).
    fn run_alone<K: Key>(
        &self,
        job: &Job<'_, K>,
        plan: CoopPlan,
        key: u32,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let started = Instant::now();
        if plan == CoopPlan::DeviceAlone {
            let dev = self.device_worker(job, None, &Copier::Global)?;
            stats.record_device(&dev);
            let rate = job.data.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
            self.learn(key, |l| {
                l.dev_keys_per_s = rate;
                l.dev_launch_s = min_known(l.dev_launch_s, dev.fastest_launch_s);
                l.whole_keys_per_s[plan as usize] = rate;
            });
        } else {
            stats.cpu_sublists = if self.split_sublists(job) {
                self.radix_split(job)?
            } else {
                self.cpu_workers(job)?
            };
            let rate = job.data.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
            self.learn(key, |l| {
                l.cpu_keys_per_s = rate;
                l.whole_keys_per_s[plan as usize] = rate;
            });
        }
        Ok(())
    }

    /// Cooperative by amount: the latency threads and the device claim sub-lists from one
    /// counter; the device's claims follow the measured speeds.
    fn run_split<K: Key>(
        &self,
        job: &Job<'_, K>,
        hint: Learned,
        key: u32,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let started = Instant::now();
        let rt = self.device_runtime()?;
        let plan = DevicePlan::new(rt, self.device_shape(job.device_strategy), job)?;
        if plan
            .first_cooperative_claim(job, hint, job.cpu_threads)
            .is_none()
        {
            // The device would sit out: every latency thread selects.
            return self.run_alone(job, CoopPlan::CpuAlone, key, stats);
        }
        let (dev, cpu) = self.device_beside_cpu(&plan, job, job, Some(hint))?;
        stats.cpu_sublists = cpu;
        stats.record_device(&dev);
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        let cpu_rate = job.progress.cpu_keys.load(Ordering::Relaxed) as f64 / elapsed;
        self.learn(key, |l| {
            if stats.cpu_sublists > 0 {
                l.cpu_keys_per_s = cpu_rate;
            }
            l.dev_launch_s = min_known(l.dev_launch_s, dev.fastest_launch_s);
            if dev.device_s > 0.0 && dev.keys > 0 {
                l.dev_keys_per_s = dev.keys as f64 / dev.device_s;
            }
            l.whole_keys_per_s[CoopPlan::Split as usize] = job.data.len() as f64 / elapsed;
        });
        Ok(())
    }

    /// Cooperative by amount with a fixed split: the device takes the first `share` of the
    /// sub-lists (rounded), the latency threads the rest, both at once.
    fn run_fixed_split<K: Key>(
        &self,
        job: &Job<'_, K>,
        share: f64,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let n = job.claims.n;
        let m = ((n as f64 * share).round() as usize).min(n);
        let rt = self.device_runtime()?;
        let dev_claims = Claims::new(0..m, n);
        let cpu_claims = Claims::new(m..n, n);
        let dev_job = Job {
            claims: &dev_claims,
            ..*job
        };
        let cpu_job = Job {
            claims: &cpu_claims,
            ..*job
        };
        let plan = DevicePlan::new(rt, self.device_shape(job.device_strategy), job)?;
        let (dev, cpu) = self.device_beside_cpu(&plan, &dev_job, &cpu_job, None)?;
        stats.cpu_sublists = cpu;
        stats.record_device(&dev);
        Ok(())
    }

    /// The device's claims of `dev_job` (guided by `hint` when given, else all it can take)
    /// on a driver thread while the latency threads claim from `cpu_job`, leaving the
    /// staging threads' cores free, and with 4 or more one core for the driver thread.
    /// Returns the device's outcome and the sub-lists the latency threads did.
    fn device_beside_cpu<K: Key>(
        &self,
        plan: &DevicePlan,
        dev_job: &Job<'_, K>,
        cpu_job: &Job<'_, K>,
        hint: Option<Learned>,
    ) -> Result<(DeviceOutcome, usize)> {
        let staging = self.staging_threads();
        let copier = self.staging_copier(staging)?;
        let leave = staging.max(usize::from(self.pool.len() >= 4));
        let (dev, cpu) = beside(
            || {
                let policy = ClaimPolicy::one_device(hint, dev_job.cpu_threads);
                plan.run(dev_job, policy, &self.stages, &copier)
            },
            || self.cpu_workers_leaving(cpu_job, leave),
        );
        Ok((dev?, cpu?))
    }

    /// Whether Cooperative by amount splits each sub-list by range instead of handing out
    /// whole ones: radix on both sides and too few long sub-lists to keep the latency
    /// threads busy (where [`KSelector::split_sublists`] shares them on the CPU alone).
    fn range_splits<K: Key>(&self, job: &Job<'_, K>) -> bool {
        job.device_strategy == Strategy::Radix && self.split_sublists(job)
    }

    /// Cooperative by amount on few long sub-lists: the device's share of each from
    /// [`KSelector::with_device_share`], else from the learned plan (both sides' measured
    /// speeds; 20 % before any are known: the best share measured on the H200 machine, see
    /// docs/BENCHMARKS.md).
    fn run_by_range<K: Key>(
        &self,
        job: &Job<'_, K>,
        hint: Learned,
        plan: CoopPlan,
        key: u32,
        stats: &mut SelectStats,
    ) -> Result<()> {
        let share = match self.device_share {
            Some(share) => share,
            None if plan != CoopPlan::Split => return self.run_alone(job, plan, key, stats),
            None if hint.dev_keys_per_s > 0.0 && hint.cpu_keys_per_s > 0.0 => {
                (hint.dev_keys_per_s / (hint.dev_keys_per_s + hint.cpu_keys_per_s)).clamp(0.05, 0.5)
            }
            None => 0.2,
        };
        if share <= 0.0 {
            return self.run_alone(job, CoopPlan::CpuAlone, key, stats);
        }
        if share >= 1.0 {
            return self.run_alone(job, CoopPlan::DeviceAlone, key, stats);
        }
        let started = Instant::now();
        let dev = self.run_range_split(job, share, stats)?;
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        self.learn(key, |l| {
            if dev.device_s > 0.0 && dev.device_keys > 0 {
                l.dev_keys_per_s = dev.device_keys as f64 / dev.device_s;
            }
            l.whole_keys_per_s[CoopPlan::Split as usize] = job.data.len() as f64 / elapsed;
        });
        Ok(())
    }

    fn learn(&self, key: u32, f: impl FnOnce(&mut Learned)) {
        if let Ok(mut l) = self.learned.lock() {
            f(l.entry(key).or_default());
        }
    }

    /// Whether the latency threads should share each sub-list instead of taking whole ones:
    /// radix select on long sub-lists that whole would keep fewer than 60 % of the threads
    /// busy on average (n sub-lists on T threads take ceil(n/T) rounds: 4 of 2^26 keys on 16
    /// threads, 0.25). Sharing costs two hand-offs per sub-list and one thread finishing
    /// its candidates: on the H200 host 16 sub-lists of 2^24 keys took 61 ms shared against
    /// 27-34 ms per 2^28 keys for sub-lists each thread takes whole.
    fn split_sublists<K: Key>(&self, job: &Job<'_, K>) -> bool {
        let threads = self.pool.len();
        let n = job.claims.n;
        let busy = n as f64 / (threads * n.div_ceil(threads)) as f64;
        job.cpu_strategy == Strategy::Radix
            && threads > 1
            && busy < 0.6
            && job.data.len() / n >= SPLIT_FROM
    }

    /// Radix select with every latency thread on each sub-list in turn: each counts the top
    /// digit of its share, the histograms are merged, each gathers its share's keys of the
    /// k-th's bucket, and the later digits run on the gathered candidates.
    fn radix_split<K: Key>(&self, job: &Job<'_, K>) -> Result<usize> {
        let mut scratch = radix::RadixScratch::default();
        let mut done = 0;
        while let Some(range) = job.claims.claim(1) {
            for i in range {
                let list = &job.data[job.offs[i]..job.offs[i + 1]];
                let share = list.len().div_ceil(self.pool.len());
                let part = |index: usize| {
                    let start = (index * share).min(list.len());
                    &list[start..(start + share).min(list.len())]
                };
                let hists = self.pool.broadcast_scoped(|w| {
                    radix::top_histogram(part(w.index), &mut radix::RadixScratch::default())
                })?;
                let mut merged = [0u32; radix::DIGIT_BUCKETS];
                for h in &hists {
                    for (m, c) in merged.iter_mut().zip(h) {
                        *m += c;
                    }
                }
                let (bucket, rank, prefix, shift) = radix::locate_top(&merged, job.k);
                let parts = self
                    .pool
                    .broadcast_scoped(|w| radix::gather_bucket(part(w.index), bucket))?;
                scratch.set_candidates(parts.concat());
                job.results[i].store(
                    radix::finish_digits(&mut scratch, rank, prefix, shift),
                    Ordering::Relaxed,
                );
                job.progress
                    .cpu_keys
                    .fetch_add(list.len(), Ordering::Relaxed);
                done += 1;
            }
        }
        Ok(done)
    }

    fn cpu_workers<K: Key>(&self, job: &Job<'_, K>) -> Result<usize> {
        self.cpu_workers_leaving(job, 0)
    }

    /// The latency threads' side; the last `leave` threads sit out, so the device's driver
    /// thread and staging copies have cores of their own.
    fn cpu_workers_leaving<K: Key>(&self, job: &Job<'_, K>, leave: usize) -> Result<usize> {
        let d = self.d;
        let radix = job.cpu_strategy == Strategy::Radix;
        let counts = self.pool.broadcast_scoped(|w| -> Result<usize> {
            if w.index + leave >= w.threads {
                return Ok(0);
            }
            if radix {
                let mut scratch = radix::RadixScratch::default();
                return Ok(claim_sublists(job, |list| {
                    radix::select_one(list, job.k, &mut scratch)
                }));
            }
            let mut heap = DHeap::<i32>::with_capacity(d, job.k)?;
            let mut first = Vec::with_capacity(job.k);
            Ok(claim_sublists(job, |list| {
                select_one(list, job.k, &mut heap, &mut first)
            }))
        })?;
        counts.into_iter().sum()
    }

    /// Cooperative by kind: every sub-list on an ad-heap shared by both kinds of cores.
    fn bridge_worker<K: Key>(
        &self,
        job: &Job<'_, K>,
        cooperation: Cooperation,
    ) -> Result<bridge::BridgeOutcome> {
        let rt = self.device_runtime()?;
        let opts = bridge::BridgeOptions {
            d: self.d,
            work_group: self.work_group,
            checks: self.bridge_checks,
        };
        if self.bridge_schedule(cooperation) == Some(Cooperation::BridgeLive) {
            bridge::live(rt, &self.pool, opts, job)
        } else {
            bridge::pipelined(rt, &self.pool, opts, job)
        }
    }

    fn device_runtime(&self) -> Result<&Runtime> {
        self.rt.as_ref().ok_or_else(|| {
            Error::InvalidArgument(
                "the gpu and coop modes need an OpenCL device; none was opened".into(),
            )
        })
    }

    /// Runs the device side; `cooperative` carries what earlier runs learned (Cooperative mode),
    /// `None` means the device does everything (GpuOnly).
    fn device_worker<K: Key>(
        &self,
        job: &Job<'_, K>,
        cooperative: Option<Learned>,
        copier: &Copier,
    ) -> Result<DeviceOutcome> {
        let rt = self.device_runtime()?;
        let policy = ClaimPolicy::one_device(cooperative, job.cpu_threads);
        DevicePlan::new(rt, self.device_shape(job.device_strategy), job)?.run(
            job,
            policy,
            &self.stages,
            copier,
        )
    }

    fn device_shape(&self, method: Strategy) -> DeviceShape {
        DeviceShape {
            method,
            radix_tile: self.radix_tile,
            d: self.d,
            work_group: self.work_group,
            update: self.device_update,
            local_heap_limit: self.local_heap_limit,
            staging: self.device_staging,
        }
    }
}

/// Runs `device` on a thread of its own (the device's driver) while this thread runs `host`;
/// a panic of the driver thread comes back as [`Error::ThreadLost`].
fn beside<D: Send, H>(
    device: impl FnOnce() -> Result<D> + Send,
    host: impl FnOnce() -> H,
) -> (Result<D>, H) {
    std::thread::scope(|s| {
        let device = s.spawn(device);
        let host = host();
        let device = device.join().unwrap_or_else(|_| {
            Err(Error::thread_lost(
                "the device driver thread",
                "the device driver thread panicked",
            ))
        });
        (device, host)
    })
}

/// Sub-lists at least this long are shared by the latency threads when there are too few to
/// give each thread its own (radix select).
const SPLIT_FROM: usize = 1 << 16;

/// A latency thread's share: sub-lists claimed from the shared counter (in chunks of about
/// 2^15 keys), each answered by `select`; returns how many it did.
fn claim_sublists<K: Key>(job: &Job<'_, K>, mut select: impl FnMut(&[K]) -> i32) -> usize {
    let mut done = 0;
    let avg = job.data.len() / job.claims.n;
    let chunk = ((1 << 15) / avg.max(1)).max(1);
    while let Some(range) = job.claims.claim(chunk) {
        let mut keys = 0;
        for i in range {
            let list = &job.data[job.offs[i]..job.offs[i + 1]];
            job.results[i].store(select(list), Ordering::Relaxed);
            keys += list.len();
            job.mark_done(i..i + 1);
            done += 1;
        }
        job.progress.cpu_keys.fetch_add(keys, Ordering::Relaxed);
    }
    done
}

/// One selection's shared state.
struct Job<'a, K> {
    /// Per sub-list, whether its answer is stored (selections over a device set, to redo
    /// what a failed member claimed; empty otherwise).
    done: &'a [std::sync::atomic::AtomicBool],
    data: &'a [K],
    offs: &'a [usize],
    k: usize,
    results: &'a [AtomicI32],
    claims: &'a Claims,
    progress: &'a Progress,
    cpu_threads: usize,
    /// The method the latency threads run.
    cpu_strategy: Strategy,
    /// The method the device runs (GpuOnly and Cooperative by amount).
    device_strategy: Strategy,
}

impl<K> Job<'_, K> {
    /// Sub-lists of this job's claims whose answers are stored (device sets).
    fn answered(&self) -> usize {
        self.done.get(self.claims.range()).map_or(0, |d| {
            d.iter().filter(|f| f.load(Ordering::Relaxed)).count()
        })
    }

    /// Books the answers of sub-lists `range` as stored.
    fn mark_done(&self, range: std::ops::Range<usize>) {
        if let Some(flags) = self.done.get(range) {
            for f in flags {
                f.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// The k-th smallest of `list` with a d-heap (`heap` and `first` are reused scratch).
#[inline]
pub fn select_one<K: Key>(
    list: &[K],
    k: usize,
    heap: &mut DHeap<i32>,
    first: &mut Vec<i32>,
) -> i32 {
    first.clear();
    first.extend(list[..k].iter().map(|x| x.to_ordered()));
    heap.rebuild_from(first);
    let mut root = heap.peek().unwrap_or(i32::MAX);
    // Blocks of 16 keys: one branch-free (vectorisable) pass marks the keys below the root as
    // it was at the block's start, then only marked keys are looked at again. The root only
    // falls within a block, so the marks are a superset of the keys to insert; each is
    // checked against the current root. This replaces a data-dependent branch per key
    // (taken for ~23 % of keys at k = 0.1 · length: often mispredicted) by one per block.
    let rest = &list[k..];
    let mut blocks = rest.chunks_exact(16);
    for block in &mut blocks {
        let mut vals = [0i32; 16];
        let mut mask = 0u32;
        for (j, x) in block.iter().enumerate() {
            vals[j] = x.to_ordered();
            mask |= u32::from(vals[j] < root) << j;
        }
        while mask != 0 {
            let v = vals[mask.trailing_zeros() as usize];
            mask &= mask - 1;
            if v < root {
                heap.replace_top(v);
                root = heap.peek().unwrap_or(v);
            }
        }
    }
    for x in blocks.remainder() {
        let v = x.to_ordered();
        if v < root {
            heap.replace_top(v);
            root = heap.peek().unwrap_or(v);
        }
    }
    root
}

mod bridge;
mod device;
mod device_radix;

mod radix;
mod range_split;
mod resident;
mod spread;

pub use spread::SpreadKeys;
