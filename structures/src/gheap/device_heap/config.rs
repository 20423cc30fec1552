//! How a device heap is launched ([`DeviceHeapConfig`]) and what it reports: operations,
//! launch traces, counters and the profiling heap's figures.

use asym_runtime::Runtime;

use super::super::device_batch_ops::{default_work_group, max_work_group};
use super::super::InsertDirection;
use super::BulkPolicy;

/// How the device heap is launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceHeapConfig {
    /// Keys per node: a power of two, 2 to [`MAX_DEVICE_BATCH`](crate::MAX_DEVICE_BATCH).
    pub batch: usize,
    /// Work-groups per launch (`None`: [`DeviceHeapConfig::default_shape`]).
    pub work_groups: Option<usize>,
    /// Work-items per group (`None`: [`DeviceHeapConfig::default_shape`]).
    pub work_group_size: Option<usize>,
    /// Full nodes to make room for at the start.
    pub initial_nodes: usize,
    /// Most full nodes the heap may grow to (`None`: as far as device memory goes).
    pub max_nodes: Option<usize>,
    /// How an INS's new node travels: top-down from the root (TD-INS) or placed at its
    /// target and climbing while its parent holds larger keys (BU-INS).
    pub direction: InsertDirection,
    /// When an insert or delete of many batches rebuilds the heap by one device sort instead
    /// of running one INS or DEL per batch ([`BulkPolicy`]).
    pub bulk: BulkPolicy,
    /// Whether a rebuild's short merge passes (a few tiles per compute unit) find their
    /// tiles' bounds in the merging launch (one launch a pass, each work-group searching its
    /// own tile's) or in a launch of their own before it, as longer passes always do
    /// (`None`: one launch on GPUs, two on CPU devices, where a group's search costs more
    /// than the launch it saves).
    pub one_launch_merges: Option<bool>,
}

impl DeviceHeapConfig {
    /// The launch shape used where the configuration names none: `(work-groups,
    /// work-items per group)` for batches of `batch` keys on `rt`'s device.
    ///
    /// On a GPU, at most 64 groups (twice the compute units on smaller ones) of 256
    /// work-items, 512 for K = 2048: the seed's operations pass the root lock from group to
    /// group, so groups beyond those that keep that pipeline full only wait, and their lock
    /// polls slow the holder (the sweep: docs/benchmarks/heap.md). On a CPU device, twice
    /// the compute units of min(K, 256).
    pub fn default_shape(rt: &Runtime, batch: usize) -> (usize, usize) {
        let cus = rt.profile().compute_units.max(1) as usize;
        let wg = default_work_group(rt, batch);
        if rt.profile().kind == asym_runtime::DeviceKind::Gpu {
            let wg = if batch >= 2048 {
                512.min(max_work_group(rt)).max(wg)
            } else {
                wg
            };
            ((2 * cus).min(64), wg)
        } else {
            (2 * cus, wg)
        }
    }

    /// Defaults for batches of `batch` keys.
    pub fn new(batch: usize) -> Self {
        DeviceHeapConfig {
            batch,
            work_groups: None,
            work_group_size: None,
            initial_nodes: 64,
            max_nodes: None,
            direction: InsertDirection::TopDown,
            bulk: BulkPolicy::Auto,
            one_launch_merges: None,
        }
    }

    /// The same, with inserts travelling `direction`.
    pub fn with_direction(mut self, direction: InsertDirection) -> Self {
        self.direction = direction;
        self
    }
}

/// One operation of a concurrent launch ([`DeviceGeneralizedHeap::run_concurrent`](super::DeviceGeneralizedHeap::run_concurrent)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapOp {
    /// INS of batch `i` of the launch's keys: `keys[i·K .. min(i·K + K, len)]`.
    Insert(usize),
    /// DEL of this many keys (1 to K).
    Delete(usize),
}

/// What a concurrent launch did.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchTrace<T> {
    /// Operation indices in the order they took effect (their linearization order: each
    /// took effect under the root lock, in this order).
    pub order: Vec<usize>,
    /// Per operation: the keys a DEL returned (sorted); empty for an INS.
    pub deleted: Vec<Vec<T>>,
}

/// What the device heap's launches did, summed since it was made (or cleared).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceHeapStats {
    /// Launches (one per call that had work).
    pub launches: u64,
    /// BU-INS: climb steps whose MergeAndSort with the parent had to merge.
    pub climb_merges: u64,
    /// BU-INS: climbs a DEL owed because its sift moved keys up from a node a climb owned.
    pub del_climbs: u64,
    /// BU-INS: waits (a DEL for the climbs in flight to finish, a climb for a claimed parent).
    pub waits: u64,
    /// MergeAndSorts that merged (each a merge-path step of the work-group).
    pub merges: u64,
    /// MergeAndSorts done by exchanging two batches whose ranges did not overlap (the seed's
    /// swap instead of merge: the work-group renames two local arrays, no step).
    pub swaps: u64,
    /// Calls carried out as a bulk rebuild ([`BulkPolicy`]) rather than INS/DEL operations.
    pub bulk_calls: u64,
}

/// Where the DELs' time went, summed over work-groups (a diagnostic build: set
/// `ASYM_GHEAP_PROFILE=1` when the heap is made; NVIDIA devices only, whose OpenCL compiler
/// takes inline PTX for the `%globaltimer` clock).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceHeapProfile {
    /// DELs profiled.
    pub dels: u64,
    /// Their time from taking the operation to taking the next one, µs.
    pub del_us: f64,
    /// Host time before the launches (staging buffers, copying keys in, the header), µs.
    pub host_prepare_us: f64,
    /// Of which: growing the heap's arrays and the call's staging buffers, µs.
    pub host_alloc_us: f64,
    /// Of which: copying the inserted keys to the device, µs.
    pub host_copy_us: f64,
    /// From the launch to its completion, µs.
    pub kernel_us: f64,
    /// Host time after the launch (reading the header, the results, converting them), µs.
    pub host_read_us: f64,
    /// Bulk calls: their launches (the sorts, the merge passes: one each where
    /// [`DeviceHeapConfig::one_launch_merges`] applies, else two; copies and the placement).
    pub bulk_launches: u64,
    /// Bulk calls: the time their kernels ran on the device, added up, µs (0 unless the
    /// runtime keeps device times, `RuntimeOptions::device_times`).
    pub bulk_device_busy_us: f64,
    /// Bulk calls: from their first kernel's start to their last one's end on the device,
    /// µs (the rest of it is the device waiting for the next launch; 0 as above).
    pub bulk_device_span_us: f64,
    /// Waiting for the root lock, µs.
    pub root_wait_us: f64,
    /// Holding the root lock (the DEL's root critical section), µs.
    pub root_hold_us: f64,
    /// Work-group steps run while holding the root lock.
    pub root_steps: u64,
    /// Sifting DELs' blocking waits for children's locks, µs.
    pub child_wait_us: f64,
    /// Of the root critical sections: work-item 0's control (locks, header, deciding the
    /// next step) while the rest of the group waits, µs; the remainder is the steps.
    pub root_control_us: f64,
    /// INS operations profiled.
    pub inserts: u64,
    /// Their waits for the root lock, µs.
    pub ins_root_wait_us: f64,
    /// Their root critical sections, µs.
    pub ins_root_hold_us: f64,
}
