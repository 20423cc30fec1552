//! The generalized heap on the throughput device (GpuOnly): the seed's TD-INS/TD-DEL heap (the
//! default) or BU-INS/TD-DEL heap ([`DeviceHeapConfig::with_direction`]) run by many
//! work-groups at once, with per-node lock words taken by atomic compare-and-swap. With
//! BU-INS a DEL waits for the climbs in flight (the seed's BU heap is not linearizable with a
//! partial buffer: `concurrent.rs` has the argument). On the H200 BU-INS was not faster
//! (docs/BENCHMARKS.md), hence the default.
//!
//! The heap lives in device-visible SVM between launches (nodes, lock words, the header with
//! the node count and the partial buffer); each call of the host API is one launch of
//! `gheap_run` (`kernels/gheap_run.cl`; the protocol and its memory-ordering argument are
//! written down in `kernels/gheap_locks.cl`) whose work-groups take the call's INS and DEL operations by ticket, run them
//! concurrently, and leave. The call's inserted batches are sorted before it by one
//! `gheap_sort_batches` launch (a work-group per batch, all at once), so an INS only merges;
//! a TD-INS loads a node only when the node's largest key says the batch changes it. A call
//! of DELs alone (a delete) runs on `gheap_delete` instead, the same TD-DEL with the control
//! computed by every work-item rather than built by one for the group to interpret: 64M
//! random keys' deletes took 804 ms against 1,049-1,051 on the H200 at K = 1024
//! (docs/BENCHMARKS.md).
//! Between launches the host only reads the small header, so the coarse transport (NVIDIA)
//! and the fine one (PoCL) behave the same.
//!
//! A call that moves a large share of the heap (an insert of many batches, a delete of many
//! keys) can instead rebuild it: one device sort of every key, the result laid out again as
//! a generalized heap ([`BulkPolicy`], module `bulk`). The seed's operations serialize on the
//! root lock; the rebuild has no serial section (64M keys inserted and deleted in 65–80 ms on
//! the H200 against 0.8–1.4 s, docs/BENCHMARKS.md).
//!
//! Host threads may share one heap: calls are serialized on a mutex (one launch at a time);
//! the concurrency is among the work-groups of a launch.
//!
//! Capacity grows between launches: before an insert the host computes how many nodes the
//! heap can reach and, if the arrays are too small, allocates larger ones and copies the
//! heap on the device (doubling, up to an optional limit that gives
//! [`Error::CapacityExceeded`]). A failed launch (a lock wait past its bound, a node in a
//! state the protocol does not allow) poisons the heap: later calls return the error.

use std::borrow::Cow;
use std::sync::{Mutex, MutexGuard};

use asym_kernels::{cl_defines, ClConst};
use asym_runtime::{Error, Kernel, Launch, Result, Runtime, Side, SvmBuffer, SvmElement};

use super::batch::{position, tree_slots};
use super::device_batch_ops::{
    check_local_memory, default_work_group, max_work_group, MAX_DEVICE_BATCH,
};
use super::InsertDirection;
use crate::key::Key;

mod bulk;
pub use bulk::BulkPolicy;
use bulk::{BulkKernels, BulkPlan, Out, Source};

// The largest batch is the batch kernels' [`MAX_DEVICE_BATCH`] (five batches of keys live in
// local memory: K = 2048 needs 40 KiB of int keys; pairs of 8 bytes fit up to K = 1024 in
// 48 KiB, which `check_local_memory` enforces per device).

/// The environment variable (`1`) that builds a profiling device heap ([`DeviceHeapProfile`]).
pub const GHEAP_PROFILE_ENV: &str = "ASYM_GHEAP_PROFILE";

/// The environment variable (`1`) that runs delete calls' DELs on the general kernel
/// (`gheap_run`, which also runs INS) instead of `gheap_delete`, the TD-DEL for launches of
/// DELs alone whose control every work-item computes: for comparing the two. A profiling
/// heap always uses the general one (the profile's counters are its).
pub const GHEAP_GENERAL_DELETE_ENV: &str = "ASYM_GHEAP_GENERAL_DELETE";

const HDR_COUNT: usize = 0;
const HDR_PLEN: usize = 1;
const HDR_SEQ: usize = 2;
const HDR_TICKET: usize = 3;
const HDR_ERROR: usize = 4;
const HDR_MAX_NODES: usize = 5;
const HDR_LIN: usize = 6;
const HDR_CLIMBS: usize = 7;
const HDR_STAT_CLIMB_MERGES: usize = 8;
const HDR_STAT_DEL_CLIMBS: usize = 9;
const HDR_STAT_WAITS: usize = 10;
const HDR_STAT_MERGES: usize = 11;
const HDR_STAT_SWAPS: usize = 12;
const HDR_PROF: usize = 16;
const HDR_WORDS: usize = 32;

const ERR_STALL: u32 = 1;
const ERR_CAPACITY: u32 = 2;
const ERR_STATE: u32 = 3;

const OP_INSERT: u32 = 0;
const OP_DELETE: u32 = 1;

/// The constants `gheap.cl` takes from the host (one source for both sides): the header's
/// words, the profile's words, the error codes the host decodes, the operation kinds.
const KERNEL_CONSTANTS: &[ClConst] = &[
    ClConst::uint("GH_MAX_K", MAX_DEVICE_BATCH as u64),
    ClConst::int("GH_COUNT", HDR_COUNT as u64),
    ClConst::int("GH_PLEN", HDR_PLEN as u64),
    ClConst::int("GH_SEQ", HDR_SEQ as u64),
    ClConst::int("GH_TICKET", HDR_TICKET as u64),
    ClConst::int("GH_ERROR", HDR_ERROR as u64),
    ClConst::int("GH_MAX_NODES", HDR_MAX_NODES as u64),
    ClConst::int("GH_LIN", HDR_LIN as u64),
    ClConst::int("GH_CLIMBS", HDR_CLIMBS as u64),
    ClConst::int("GH_STAT_CLIMB_MERGES", HDR_STAT_CLIMB_MERGES as u64),
    ClConst::int("GH_STAT_DEL_CLIMBS", HDR_STAT_DEL_CLIMBS as u64),
    ClConst::int("GH_STAT_WAITS", HDR_STAT_WAITS as u64),
    ClConst::int("GH_STAT_MERGES", HDR_STAT_MERGES as u64),
    ClConst::int("GH_STAT_SWAPS", HDR_STAT_SWAPS as u64),
    ClConst::int("GH_PROF_ROOT_WAIT", HDR_PROF as u64),
    ClConst::int("GH_PROF_ROOT_HOLD", HDR_PROF as u64 + 1),
    ClConst::int("GH_PROF_ROOT_STEPS", HDR_PROF as u64 + 2),
    ClConst::int("GH_PROF_CHILD_WAIT", HDR_PROF as u64 + 3),
    ClConst::int("GH_PROF_DEL_TOTAL", HDR_PROF as u64 + 4),
    ClConst::int("GH_PROF_DELS", HDR_PROF as u64 + 5),
    ClConst::int("GH_PROF_ROOT_CONTROL", HDR_PROF as u64 + 6),
    ClConst::int("GH_PROF_INS_WAIT", HDR_PROF as u64 + 7),
    ClConst::int("GH_PROF_INS_HOLD", HDR_PROF as u64 + 8),
    ClConst::int("GH_PROF_INSERTS", HDR_PROF as u64 + 9),
    ClConst::uint("GH_ERR_STALL", ERR_STALL as u64),
    ClConst::uint("GH_ERR_CAPACITY", ERR_CAPACITY as u64),
    ClConst::uint("GH_ERR_STATE", ERR_STATE as u64),
    ClConst::uint("GH_OP_INSERT", OP_INSERT as u64),
];

/// The build options of every program made from `gheap.cl`: K, the work-group size and the
/// host's constants.
pub(crate) fn gheap_cl_defines(k: usize, wg: usize) -> String {
    format!("-DK={k} -DWG={wg} {}", cl_defines(KERNEL_CONSTANTS))
}

/// Writes keys in their upload form into memory bound for the device
/// ([`DeviceGeneralizedHeap::insert_with`]).
pub type FillKeys<'a, T> = dyn Fn(&mut [<T as DeviceHeapKey>::Upload]) -> Result<()> + Sync + 'a;

/// Writes the keys of one insert into several heaps, each heap's part into its own slice
/// ([`DeviceGeneralizedHeap::insert_each_with`]).
pub type FillEach<'a, T> =
    dyn Fn(&mut [&mut [<T as DeviceHeapKey>::Upload]]) -> Result<()> + Sync + 'a;

/// A key type the device heap stores: its device form is a signed integer whose order is the
/// key's order.
pub trait DeviceHeapKey: Copy + Send + 'static {
    /// The device form (`int` or `long`).
    type Repr: SvmElement + Ord + Default + std::fmt::Debug;
    /// Build options naming the device form and its largest value.
    const CL_DEFINES: &'static str;
    /// Maps the key to its device form.
    fn to_repr(self) -> Self::Repr;
    /// Inverse of [`DeviceHeapKey::to_repr`].
    fn from_repr(r: Self::Repr) -> Self;
    /// How inserted keys travel to the device: scalar keys as they are (the kernel maps them
    /// to the device form as it loads a batch: `KEY_MAP`), pairs in the device form.
    type Upload: SvmElement + Default;
    /// The kernel's `-DKEY_MAP` for [`DeviceHeapKey::Upload`] (0: already the device form).
    const KEY_MAP: u32;
    /// The keys as uploaded: borrowed for scalar keys, so an insert converts nothing on the
    /// host (host time before the launches of a 2^24-key insert and delete on the H200: 105
    /// -> 72 ms with it, docs/BENCHMARKS.md).
    fn upload(keys: &[Self]) -> Cow<'_, [Self::Upload]>;
    /// Keys a DEL returned, as the device stored them (scalar keys: already in the caller's
    /// form, the map being its own inverse), into keys.
    fn download(stored: Vec<Self::Upload>) -> Vec<Self>;
    /// One key as uploaded.
    fn to_upload(self) -> Self::Upload;
    /// `keys` as the upload form where that is the keys' own form (scalar keys), so a
    /// download can land in them directly.
    fn as_upload_mut(keys: &mut [Self]) -> Option<&mut [Self::Upload]>;
}

macro_rules! scalar_key {
    ($($t:ty),*) => {$(
        impl DeviceHeapKey for $t {
            type Repr = i32;
            const CL_DEFINES: &'static str = "-DKEY_T=int -DKEY_MAX=INT_MAX";
            #[inline]
            fn to_repr(self) -> i32 {
                Key::to_ordered(self)
            }
            #[inline]
            fn from_repr(r: i32) -> Self {
                <$t as Key>::from_ordered(r)
            }
            type Upload = $t;
            const KEY_MAP: u32 = <$t as Key>::KEY_MAP;
            fn upload(keys: &[Self]) -> Cow<'_, [$t]> {
                Cow::Borrowed(keys)
            }
            fn download(stored: Vec<$t>) -> Vec<$t> {
                stored
            }
            #[inline]
            fn to_upload(self) -> $t {
                self
            }
            fn as_upload_mut(keys: &mut [$t]) -> Option<&mut [$t]> {
                Some(keys)
            }
        }
        /// A key with a 32-bit payload (a vertex, an item index), ordered by key, then payload.
        impl DeviceHeapKey for ($t, u32) {
            type Repr = i64;
            const CL_DEFINES: &'static str = "-DKEY_T=long -DKEY_MAX=LONG_MAX";
            #[inline]
            fn to_repr(self) -> i64 {
                ((Key::to_ordered(self.0) as i64) << 32) | self.1 as i64
            }
            #[inline]
            fn from_repr(r: i64) -> Self {
                (<$t as Key>::from_ordered((r >> 32) as i32), r as u32)
            }
            type Upload = i64;
            const KEY_MAP: u32 = 0;
            fn upload(keys: &[Self]) -> Cow<'_, [i64]> {
                Cow::Owned(keys.iter().map(|&k| k.to_repr()).collect())
            }
            fn download(stored: Vec<i64>) -> Vec<Self> {
                stored.into_iter().map(Self::from_repr).collect()
            }
            #[inline]
            fn to_upload(self) -> i64 {
                self.to_repr()
            }
            fn as_upload_mut(_: &mut [Self]) -> Option<&mut [i64]> {
                None
            }
        }
    )*};
}
scalar_key!(i32, u32, f32);

/// How the device heap is launched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceHeapConfig {
    /// Keys per node: a power of two, 2 to [`MAX_DEVICE_BATCH`].
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
    /// polls slow the holder. On the H100 machine (132 compute units), 64M keys inserted and
    /// deleted: 264 groups of 256 (twice the compute units) took 1,467 ms at K = 1024 and
    /// 966 at K = 2048, 66 groups 1,110 (of 256) and 687 (of 512), 33 groups alike
    /// (docs/BENCHMARKS.md). On a CPU device, twice the compute units of min(K, 256).
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

/// One operation of a concurrent launch ([`DeviceGeneralizedHeap::run_concurrent`]).
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

/// A generalized min-heap (batches of `K` keys) whose INS and DEL run as device work-groups.
pub struct DeviceGeneralizedHeap<T: DeviceHeapKey> {
    inner: Mutex<Inner<T>>,
    batch: usize,
}

struct Inner<T: DeviceHeapKey> {
    rt: Runtime,
    run: Kernel,
    /// `gheap_delete`, for launches of DELs alone (`None`: `run` takes those too).
    delete: Option<Kernel>,
    copy: Kernel,
    bulk: BulkKernels,
    bulk_policy: BulkPolicy,
    wg: usize,
    groups: usize,
    keys: SvmBuffer<T::Repr>,
    words: SvmBuffer<u32>,
    hdr: SvmBuffer<u32>,
    partial: SvmBuffer<T::Repr>,
    /// Full nodes the arrays have room for, and the array length in nodes.
    max_nodes: usize,
    slots: usize,
    limit: Option<usize>,
    /// 1 for BU-INS (the kernel's `bottom_up` argument).
    bottom_up: u32,
    /// The header as the last launch left it.
    count: usize,
    plen: usize,
    /// Whether the nodes in the order added and then the partial buffer hold the keys in
    /// sorted order, as a bulk call leaves them (until an INS or DEL launch): a bulk call
    /// then sorts only its own keys.
    sorted_layout: bool,
    poisoned: Option<String>,
    stats: DeviceHeapStats,
    /// `Some` in a profiling build (`ASYM_GHEAP_PROFILE`).
    profile: Option<DeviceHeapProfile>,
    /// Per-call buffers, kept between calls and grown when a call needs more: with five SVM
    /// buffers allocated per call, SSSP's device-heap calls on the H200 took 9.7 ms each,
    /// with these 0.94 ms (docs/BENCHMARKS.md, SSSP section).
    staging: Staging<T::Repr>,
    /// The launches of the last call that returned before they completed (a bulk call whose
    /// keys stay on the device: the caller's next launch follows them on the in-order queue
    /// and its wait covers theirs), waited for when the heap is next locked.
    pending: Vec<Launch>,
}

/// One heap's part of [`DeviceGeneralizedHeap::insert_each_with`].
enum EachPart {
    /// A bulk call, planned.
    Bulk(BulkPlan),
    /// INS operations of this many keys, staged at the start of the staging buffer.
    Ops(usize),
}

/// Where a call's inserted keys come from.
#[derive(Clone, Copy)]
enum Keys<'a, T: DeviceHeapKey> {
    /// These keys, uploaded by the call.
    Host(&'a [T]),
    /// The first `len` keys of a device buffer, in the upload form, copied on the device.
    Device(&'a SvmBuffer<T::Upload>, usize),
    /// `len` keys already written to the start of the staging buffer
    /// ([`Inner::ops_staging`]).
    Staged(usize),
}

impl<T: DeviceHeapKey> Keys<'_, T> {
    fn len(&self) -> usize {
        match self {
            Keys::Host(keys) => keys.len(),
            Keys::Device(_, len) | Keys::Staged(len) => *len,
        }
    }
}

/// What one launch returned: the operations' linearization order (when asked for), and each
/// DEL's keys (`lens[seq]` keys at `out[seq·K..]`, `seq` the DEL's place among the DELs in
/// linearization order).
struct RawLaunch<T> {
    order: Vec<u32>,
    lens: Vec<u32>,
    out: Vec<T>,
}

impl<T: Copy> RawLaunch<T> {
    /// Every DEL's keys, in linearization order: the slots compacted in place (a DEL that
    /// returned fewer than K keys leaves a gap), so the read-back vector is the result.
    fn deleted_in_order(self, k: usize) -> Vec<T> {
        let mut all = self.out;
        let mut end = 0;
        for (seq, &n) in self.lens.iter().enumerate() {
            let n = (n as usize).min(k);
            if end != seq * k {
                all.copy_within(seq * k..seq * k + n, end);
            }
            end += n;
        }
        all.truncate(end);
        all
    }
}

/// A call's inputs and outputs in SVM (the keys buffer as long as the heap's key array, grown
/// with it, and longer when a call needs it); the host writes and reads only the ranges a
/// call uses (`copy_from_host`, `read_range`), so their size costs nothing on the coarse
/// transport.
/// One buffer holds the inserted keys and, after them, the DELs' keys: a call of either
/// kind reuses what the other grew (allocating SVM cost ~0.5 ms per MiB on the H200: 63 of
/// the 78 ms of host time before the launches of a 2^24-key insert and delete, measured with
/// two buffers; 37 ms with one).
struct Staging<R: SvmElement> {
    keys: Option<SvmBuffer<R>>,
    ops: Option<SvmBuffer<u32>>,
    out_len: Option<SvmBuffer<u32>>,
    order: Option<SvmBuffer<u32>>,
    /// A bulk call's sort: the merge passes' second buffer when the key array is too short,
    /// and each merge tile's split (for passes that do not find their own).
    runs: Option<SvmBuffer<R>>,
    splits: Option<SvmBuffer<u32>>,
}

impl<R: SvmElement> Staging<R> {
    fn new() -> Self {
        Staging {
            keys: None,
            ops: None,
            out_len: None,
            order: None,
            runs: None,
            splits: None,
        }
    }
}

/// `slot`'s buffer, reallocated (to the next power of two) when shorter than `len`.
fn staged<'a, E: SvmElement>(
    rt: &Runtime,
    slot: &'a mut Option<SvmBuffer<E>>,
    len: usize,
) -> Result<&'a mut SvmBuffer<E>> {
    let len = len.max(1);
    if slot.as_ref().is_none_or(|b| b.len() < len) {
        *slot = None;
        *slot = Some(rt.alloc::<E>(len.next_power_of_two())?);
    }
    Ok(slot.as_mut().expect("allocated above"))
}

impl<T: DeviceHeapKey> std::fmt::Debug for DeviceGeneralizedHeap<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceGeneralizedHeap")
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl<T: DeviceHeapKey> DeviceGeneralizedHeap<T> {
    /// An empty heap on `rt`'s device.
    pub fn new(rt: &Runtime, config: &DeviceHeapConfig) -> Result<Self> {
        let k = config.batch;
        if !k.is_power_of_two() || !(2..=MAX_DEVICE_BATCH).contains(&k) {
            return Err(Error::out_of_range(
                "batch size",
                k,
                format!("the device heap takes a power of two from 2 to {MAX_DEVICE_BATCH}"),
            ));
        }
        // Five arrays of K keys, the control state and the step broadcast.
        check_local_memory(
            rt,
            5 * k * std::mem::size_of::<T::Repr>() + 2048,
            &format!("run a device heap of batches of {k} keys"),
        )?;
        let max_wg = max_work_group(rt);
        let wg = match config.work_group_size {
            Some(w) => {
                if !w.is_power_of_two() || w > k || w > max_wg {
                    return Err(Error::out_of_range(
                        "work-group size",
                        w,
                        format!(
                            "the device heap needs a power of two up to the batch size {k} \
                             and the device's limit {max_wg}"
                        ),
                    ));
                }
                w
            }
            None => DeviceHeapConfig::default_shape(rt, k).1,
        };
        rt.check_work_group(wg, "run the device generalized heap")?;
        let groups = match config.work_groups {
            Some(0) => {
                return Err(Error::out_of_range(
                    "work-groups",
                    0,
                    "the device heap needs at least one work-group",
                ))
            }
            Some(g) => g,
            None => DeviceHeapConfig::default_shape(rt, k).0,
        };
        if let Some(limit) = config.max_nodes {
            if limit == 0 {
                return Err(Error::out_of_range(
                    "nodes",
                    0,
                    "a device heap must have room for at least one node",
                ));
            }
        }
        let profiled = asym_runtime::env::switch(GHEAP_PROFILE_ENV)?;
        let program = rt.program_with(
            &asym_kernels::GHEAP,
            &format!(
                "{} -DKEY_MAP={} {}{}",
                gheap_cl_defines(k, wg),
                T::KEY_MAP,
                T::CL_DEFINES,
                if profiled { " -DGH_PROFILE" } else { "" },
            ),
        )?;
        let initial = config
            .initial_nodes
            .max(1)
            .min(config.max_nodes.unwrap_or(usize::MAX));
        let slots = tree_slots(initial);
        let mut hdr = rt.alloc::<u32>(HDR_WORDS)?;
        let mut h = vec![0u32; HDR_WORDS];
        h[HDR_MAX_NODES] = to_u32(initial, "nodes")?;
        hdr.write(&h)?;
        let partial = rt.alloc::<T::Repr>(k)?;
        let mut inner = Inner {
            run: Kernel::from_program(rt, &program, "gheap_run")?,
            delete: if profiled || asym_runtime::env::switch(GHEAP_GENERAL_DELETE_ENV)? {
                None
            } else {
                Some(Kernel::from_program(rt, &program, "gheap_delete")?)
            },
            copy: Kernel::from_program(rt, &program, "gheap_copy_keys")?,
            bulk: BulkKernels::new(
                rt,
                &program,
                config
                    .one_launch_merges
                    .unwrap_or(rt.profile().kind == asym_runtime::DeviceKind::Gpu),
            )?,
            bulk_policy: config.bulk,
            keys: alloc_zeroed::<T::Repr>(rt, slots * k)?,
            words: alloc_zeroed::<u32>(rt, slots)?,
            rt: rt.clone(),
            wg,
            groups,
            hdr,
            partial,
            max_nodes: initial,
            slots,
            limit: config.max_nodes,
            bottom_up: u32::from(config.direction == InsertDirection::BottomUp),
            count: 0,
            plen: 0,
            sorted_layout: true,
            poisoned: None,
            stats: DeviceHeapStats::default(),
            profile: profiled.then(DeviceHeapProfile::default),
            staging: Staging::new(),
            pending: Vec::new(),
        };
        inner.reserve_staging()?;
        Ok(DeviceGeneralizedHeap {
            inner: Mutex::new(inner),
            batch: k,
        })
    }

    /// Keys per node.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Work-groups and work-items per group of each launch.
    pub fn launch_shape(&self) -> (usize, usize) {
        let g = self.lock();
        (g.groups, g.wg)
    }

    /// Keys in the heap once its calls' launches complete. It does not wait for them: a call
    /// sets the host's count when it enqueues its launches (a round of the knapsack's device
    /// search asks before each launch, and waiting there had made the 600 file's rounds
    /// twice as slow to launch on the H200, docs/BENCHMARKS.md).
    pub fn len(&self) -> usize {
        let g = self.mirror();
        g.count * self.batch + g.plen
    }

    /// Whether the heap holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits (bounded) for the launches an enqueued call left; their failure, if any, is
    /// returned here (and by every later call).
    pub fn finish(&self) -> Result<()> {
        self.lock().usable()
    }

    /// Full nodes the heap has room for now (it grows on demand up to its limit).
    pub fn capacity_nodes(&self) -> usize {
        self.lock().max_nodes
    }

    /// Launches so far (one per call that had work).
    pub fn launches(&self) -> u64 {
        self.lock().stats.launches
    }

    /// Changes when calls rebuild the heap instead of running INS and DEL operations.
    pub fn set_bulk_policy(&self, policy: BulkPolicy) {
        self.lock().bulk_policy = policy;
    }

    /// What the launches did so far (for measurements and tests).
    pub fn stats(&self) -> DeviceHeapStats {
        self.lock().stats
    }

    /// Where the DELs' time went, in a profiling build ([`DeviceHeapProfile`]).
    pub fn profile(&self) -> Option<DeviceHeapProfile> {
        self.lock().profile
    }

    /// Inserts `keys` as INS operations of at most `K` keys each, run concurrently by the
    /// launch's work-groups, or, when the call moves a large share of the heap (the
    /// configuration's [`BulkPolicy`]), by one rebuild: every key sorted on the device.
    pub fn insert(&self, keys: &[T]) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        if keys.is_empty() {
            return Ok(());
        }
        let batches = keys.len().div_ceil(self.batch);
        if g.prefers_bulk(batches, keys.len()) {
            return g.bulk(Source::Keys(keys), 0, Out::Return).map(|_| ());
        }
        let ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
        g.run(Keys::Host(keys), &ops, false, false).map(|_| ())
    }

    /// Inserts `len` keys that `fill` writes, in their upload form
    /// ([`DeviceHeapKey::to_upload`]), into the memory they travel to the device from: on a
    /// bulk call a mapped range of the staging buffer, so a caller that makes or picks the
    /// keys (a device set routing an insert among its members) writes each key once, with
    /// no host vector between. `fill` must write every element; an error it returns ends the
    /// call before anything is inserted.
    pub fn insert_with(&self, len: usize, fill: &FillKeys<'_, T>) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        if len == 0 {
            return Ok(());
        }
        let batches = len.div_ceil(self.batch);
        if g.prefers_bulk(batches, len) {
            return g.bulk(Source::Fill(len, fill), 0, Out::Return).map(|_| ());
        }
        let mut stored = vec![T::Upload::default(); len];
        fill(&mut stored)?;
        let keys = T::download(stored);
        let ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
        g.run(Keys::Host(&keys), &ops, false, false).map(|_| ())
    }

    /// Whether an insert of `len` keys would be one bulk call (a rebuild by one device sort,
    /// as [`BulkPolicy`] decides), the kind [`DeviceGeneralizedHeap::insert_each_with`] makes.
    pub fn insert_rebuilds(&self, len: usize) -> bool {
        let g = self.lock();
        len > 0 && g.prefers_bulk(len.div_ceil(self.batch), len)
    }

    /// Inserts into each of `heaps` (distinct heaps, owned by one caller, which locks them
    /// in the order given) `lens[i]` keys that one call of `fill` writes straight into every
    /// heap's mapped staging at once, one slice per heap: a caller routing one set of keys
    /// among the heaps (a device set, the lanes of one device) reads each key once. Then
    /// every heap runs its part at once, a thread each: a bulk call's sort where the heap's
    /// [`BulkPolicy`] takes the insert as one, else its INS operations. Returns each heap's
    /// outcome and the seconds its part took (the shared upload included); an error before
    /// the parts run (a heap unusable, a size refused, `fill` failing) leaves every heap as
    /// it was and is returned as the whole result.
    pub fn insert_each_with(
        heaps: &[&Self],
        lens: &[usize],
        fill: &FillEach<'_, T>,
    ) -> Result<Vec<(Result<()>, f64)>> {
        if heaps.len() != lens.len() {
            return Err(Error::InvalidArgument(format!(
                "{} heaps and {} lengths",
                heaps.len(),
                lens.len()
            )));
        }
        for (i, a) in heaps.iter().enumerate() {
            if heaps[..i].iter().any(|b| std::ptr::eq(*a, *b)) {
                return Err(Error::InvalidArgument(
                    "a heap given twice to one insert".into(),
                ));
            }
        }
        let started = std::time::Instant::now();
        let mut guards: Vec<MutexGuard<'_, Inner<T>>> = heaps.iter().map(|h| h.lock()).collect();
        let mut plans = Vec::with_capacity(guards.len());
        for (g, &len) in guards.iter_mut().zip(lens) {
            g.usable()?;
            let k = g.partial.len();
            plans.push(if len > 0 && g.prefers_bulk(len.div_ceil(k), len) {
                EachPart::Bulk(g.bulk_plan(len, 0, None)?)
            } else {
                EachPart::Ops(len)
            });
        }
        let t_copy = std::time::Instant::now();
        {
            let mut maps = Vec::with_capacity(guards.len());
            for (g, plan) in guards.iter_mut().zip(&plans) {
                maps.push(match plan {
                    EachPart::Bulk(plan) => g.bulk_staging(plan)?,
                    EachPart::Ops(len) => g.ops_staging(*len)?,
                });
            }
            let filled = {
                let mut slices: Vec<&mut [T::Upload]> = maps.iter_mut().map(|m| &mut **m).collect();
                fill(&mut slices)
            };
            for map in maps {
                map.unmap()?;
            }
            filled?;
        }
        let copy = t_copy.elapsed();
        let shared_s = started.elapsed().as_secs_f64();
        let inners = guards.iter_mut().map(|g| &mut **g).zip(plans);
        let done = super::on_threads(
            inners,
            "a heap's inserting thread",
            |(inner, plan)| match plan {
                EachPart::Bulk(plan) => inner.bulk_finish(plan, copy, Out::Return).map(|_| ()),
                EachPart::Ops(0) => Ok(()),
                EachPart::Ops(len) => {
                    let batches = len.div_ceil(inner.partial.len());
                    let ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
                    inner.run(Keys::Staged(len), &ops, false, false).map(|_| ())
                }
            },
        );
        Ok(done
            .into_iter()
            .map(|(r, secs)| (r, shared_s + secs))
            .collect())
    }

    /// Removes the `out.len()` smallest keys into `out`, sorted: a bulk call copies them from
    /// the device straight into `out` (several heaps can fill the parts of one vector). An
    /// error if the heap holds fewer keys.
    pub fn delete_min_into(&self, out: &mut [T]) -> Result<()> {
        let n = out.len();
        let mut g = self.lock();
        g.usable()?;
        let held = g.count * self.batch + g.plen;
        if n > held {
            return Err(Error::too_large(
                format!("a delete into a buffer from a heap holding {held}"),
                n,
                held,
            ));
        }
        if n == 0 {
            return Ok(());
        }
        if g.prefers_bulk(n.div_ceil(self.batch), 0) {
            return g.bulk(Source::Keys(&[]), n, Out::Into(out)).map(|_| ());
        }
        out.copy_from_slice(&g.delete_by_operations(n)?);
        Ok(())
    }

    /// Removes the `n` smallest keys and returns them sorted (fewer if the heap holds fewer).
    /// `n ≤ K` is one DEL; larger `n` are ⌈n/K⌉ DELs run concurrently, whose results in
    /// linearization order are the sorted sequence, or one rebuild when `n` is a large share
    /// of the heap ([`BulkPolicy`]).
    pub fn delete_min(&self, n: usize) -> Result<Vec<T>> {
        let mut g = self.lock();
        g.usable()?;
        let n = n.min(g.count * self.batch + g.plen);
        if n == 0 {
            return Ok(Vec::new());
        }
        if g.prefers_bulk(n.div_ceil(self.batch), 0) {
            return g.bulk(Source::Keys(&[]), n, Out::Return);
        }
        g.delete_by_operations(n)
    }

    /// Inserts the first `len` keys of `src`, a buffer on this heap's device holding keys in
    /// their upload form ([`DeviceHeapKey::to_upload`]), without them crossing to the host:
    /// a kernel that makes keys (a search expanding nodes on the device) hands them over
    /// where it wrote them. The keys are copied on the device, then inserted as
    /// [`DeviceGeneralizedHeap::insert`] would (operations, or a rebuild by the
    /// [`BulkPolicy`]). An error if `src` is shorter than `len`.
    pub fn insert_from_device(&self, src: &SvmBuffer<T::Upload>, len: usize) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        if len > src.len() {
            return Err(Error::too_large(
                "an insert from a device buffer",
                len,
                src.len(),
            ));
        }
        if len == 0 {
            return Ok(());
        }
        let batches = len.div_ceil(self.batch);
        if g.prefers_bulk(batches, len) {
            return g.bulk(Source::Device(src, len), 0, Out::Return).map(|_| ());
        }
        let ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
        g.run(Keys::Device(src, len), &ops, false, false)
            .map(|_| ())
    }

    /// Removes the `n` smallest keys into `dst[..n]`, a buffer on this heap's device, sorted
    /// and in their upload form, without them crossing to the host (the other half of
    /// [`DeviceGeneralizedHeap::insert_from_device`]). An error if the heap holds fewer
    /// than `n` keys or `dst` is shorter.
    pub fn delete_min_to_device(&self, n: usize, dst: &SvmBuffer<T::Upload>) -> Result<()> {
        self.delete_to(n, dst, false)
    }

    /// [`DeviceGeneralizedHeap::delete_min_to_device`] that may return before its launches
    /// complete (where the heap rebuilds): `dst` holds the keys once a later launch on the
    /// runtime's main queue has been waited for (the queue runs in order), once the heap's
    /// next call returns (it waits first), or after [`DeviceGeneralizedHeap::finish`]
    /// ([`DeviceGeneralizedHeap::len`] does not wait). Host access to `dst` or the heap's
    /// buffers before that is refused with [`Error::Busy`]. A caller that launches its own
    /// kernel on `dst` next (a branch-and-bound round expanding the nodes taken out) spares
    /// a wait for the host between the two.
    pub fn enqueue_delete_min_to_device(&self, n: usize, dst: &SvmBuffer<T::Upload>) -> Result<()> {
        self.delete_to(n, dst, true)
    }

    fn delete_to(&self, n: usize, dst: &SvmBuffer<T::Upload>, queued: bool) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        let held = g.count * self.batch + g.plen;
        if n > held || n > dst.len() {
            return Err(Error::InvalidArgument(format!(
                "a delete of {n} keys from a heap holding {held} into a device buffer of {}",
                dst.len()
            )));
        }
        if n == 0 {
            return Ok(());
        }
        if g.prefers_bulk(n.div_ceil(self.batch), 0) {
            return g
                .bulk(Source::Keys(&[]), n, Out::Device(dst, queued))
                .map(|_| ());
        }
        g.delete_to_device(n, dst)
    }

    /// [`DeviceGeneralizedHeap::insert_from_device`] of `src[..len]`, then
    /// [`DeviceGeneralizedHeap::delete_min_to_device`] of `n_out` keys into `dst`, as one
    /// call: where the [`BulkPolicy`] rebuilds, one sort of everything serves both (a
    /// branch-and-bound round handing its children in and taking the next round's nodes out
    /// sorts once, not twice); otherwise the INS operations, then the DELs. An error if
    /// `n_out` exceeds the keys held plus `len`, or a buffer is too short; the heap is then
    /// unchanged.
    pub fn insert_then_delete_on_device(
        &self,
        src: &SvmBuffer<T::Upload>,
        len: usize,
        n_out: usize,
        dst: &SvmBuffer<T::Upload>,
    ) -> Result<()> {
        self.insert_then_delete(src, len, n_out, dst, false)
    }

    /// [`DeviceGeneralizedHeap::insert_then_delete_on_device`] that may return before its
    /// launches complete, as [`DeviceGeneralizedHeap::enqueue_delete_min_to_device`] does
    /// (`src` too is the device's until then).
    pub fn enqueue_insert_then_delete_on_device(
        &self,
        src: &SvmBuffer<T::Upload>,
        len: usize,
        n_out: usize,
        dst: &SvmBuffer<T::Upload>,
    ) -> Result<()> {
        self.insert_then_delete(src, len, n_out, dst, true)
    }

    fn insert_then_delete(
        &self,
        src: &SvmBuffer<T::Upload>,
        len: usize,
        n_out: usize,
        dst: &SvmBuffer<T::Upload>,
        queued: bool,
    ) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        let held = g.count * self.batch + g.plen;
        if len > src.len() || n_out > held + len || n_out > dst.len() {
            return Err(Error::InvalidArgument(format!(
                "an insert of {len} keys from a device buffer of {} and a delete of {n_out} \
                 into one of {}, on a heap holding {held}",
                src.len(),
                dst.len()
            )));
        }
        let batches = len.div_ceil(self.batch) + n_out.div_ceil(self.batch);
        if g.prefers_bulk(batches, len) {
            return g
                .bulk(Source::Device(src, len), n_out, Out::Device(dst, queued))
                .map(|_| ());
        }
        if len > 0 {
            let ops: Vec<HeapOp> = (0..len.div_ceil(self.batch)).map(HeapOp::Insert).collect();
            g.run(Keys::Device(src, len), &ops, false, false)?;
        }
        if n_out > 0 {
            g.delete_to_device(n_out, dst)?;
        }
        Ok(())
    }

    /// One launch running `ops` concurrently, its work-groups taking them in list order;
    /// INS operations take their batches from `keys`. Returns the order in which they took
    /// effect and what each DEL returned: replaying that order on a sequential priority queue
    /// must give the same results (the tests do).
    pub fn run_concurrent(&self, keys: &[T], ops: &[HeapOp]) -> Result<LaunchTrace<T>> {
        let mut g = self.lock();
        g.usable()?;
        let batches = keys.len().div_ceil(self.batch);
        for (i, op) in ops.iter().enumerate() {
            match *op {
                HeapOp::Insert(b) if b >= batches => {
                    return Err(Error::InvalidArgument(format!(
                        "operation {i} inserts batch {b}, but {} keys make {batches} batches",
                        keys.len()
                    )))
                }
                HeapOp::Delete(n) if n == 0 || n > self.batch => {
                    return Err(Error::out_of_range(
                        format!("operation {i} deletes"),
                        n,
                        format!("a DEL takes 1 to K = {} keys", self.batch),
                    ))
                }
                _ => {}
            }
        }
        let raw = g.run(Keys::Host(keys), ops, true, true)?;
        let order: Vec<usize> = raw.order.iter().map(|&t| t as usize).collect();
        let k = self.batch;
        let mut deleted = vec![Vec::new(); ops.len()];
        let dels_in_order = order
            .iter()
            .filter(|&&i| matches!(ops[i], HeapOp::Delete(_)));
        for (seq, &i) in dels_in_order.enumerate() {
            let n = (raw.lens[seq] as usize).min(k);
            deleted[i] = raw.out[seq * k..seq * k + n].to_vec();
        }
        Ok(LaunchTrace { order, deleted })
    }

    /// The seed's mixed workload in one launch: for each batch of `keys`, an INS of it and a
    /// DEL of K keys, all concurrent. Returns each DEL's keys in linearization order.
    pub fn insert_delete_pairs(&self, keys: &[T]) -> Result<Vec<Vec<T>>> {
        let ops: Vec<HeapOp> = (0..keys.len().div_ceil(self.batch))
            .flat_map(|b| [HeapOp::Insert(b), HeapOp::Delete(self.batch)])
            .collect();
        let trace = self.run_concurrent(keys, &ops)?;
        let mut deleted = trace.deleted;
        Ok(trace
            .order
            .iter()
            .filter(|&&i| matches!(ops[i], HeapOp::Delete(_)))
            .map(|&i| std::mem::take(&mut deleted[i]))
            .collect())
    }

    /// The smallest key, without removing it.
    pub fn peek(&self) -> Result<Option<T>> {
        let mut g = self.lock();
        g.usable()?;
        if g.count == 0 && g.plen == 0 {
            return Ok(None);
        }
        // A DEL of one key, then an INS of it back, would disturb the heap: read instead.
        let k = self.batch;
        let source = if g.count > 0 { 0 } else { 1 };
        let first = g.read_first(source, k)?;
        Ok(Some(T::from_repr(first)))
    }

    /// Reads the whole heap back (a map of every node: for tests and debugging, not for hot
    /// paths) and checks the generalized heap properties between launches: exactly the first
    /// `count` positions of the bit-reversal order hold nodes (`AVAIL`, every other slot
    /// `EMPTY` — the root's may stay `AVAIL` in an empty heap — no lock held, no BU-INS claim
    /// left), each node is sorted and no smaller than its parent's largest key, the partial
    /// buffer is sorted, shorter than K and no smaller than the root's largest key. A
    /// violation is [`Error::Corrupted`] naming it.
    pub fn check_invariants(&self) -> Result<()> {
        let mut g = self.lock();
        g.usable()?;
        let k = self.batch;
        let (count, plen) = (g.count, g.plen);
        let words = g.words.read()?;
        let keys = g.keys.read()?;
        let partial = g.partial.read()?;
        let bad = |what: String| {
            Err(Error::corrupted(
                "the device heap",
                format!("invariant broken: {what}"),
            ))
        };
        let present: std::collections::HashSet<usize> = (0..count).map(position).collect();
        for (pos, &w) in words.iter().enumerate() {
            let want = u32::from(present.contains(&pos));
            // The root's word doubles as the header's lock: an empty heap may leave it AVAIL.
            let root_of_empty = pos == 0 && count == 0 && w == 1;
            if w != want && !root_of_empty {
                return bad(format!(
                    "node slot {pos} has lock word {w:#x}, expected {want} (count {count})"
                ));
            }
        }
        let node = |pos: usize| &keys[pos * k..(pos + 1) * k];
        for &pos in &present {
            let n = node(pos);
            if n.windows(2).any(|w| w[0] > w[1]) {
                return bad(format!("node {pos} is not sorted"));
            }
            if pos > 0 && n[0] < node((pos - 1) / 2)[k - 1] {
                return bad(format!("node {pos} holds a key below its parent's largest"));
            }
        }
        let part = &partial[..plen];
        if plen >= k || part.windows(2).any(|w| w[0] > w[1]) {
            return bad(format!(
                "the partial buffer ({plen} keys) is unsorted or full"
            ));
        }
        if count > 0 && plen > 0 && part[0] < node(0)[k - 1] {
            return bad("the partial buffer holds a key below the root's largest".into());
        }
        Ok(())
    }

    /// Removes every key (keeps the arrays).
    pub fn clear(&self) -> Result<()> {
        let mut g = self.lock();
        let slots = g.slots;
        g.words.write(&vec![0; slots])?;
        let mut h = vec![0u32; HDR_WORDS];
        h[HDR_MAX_NODES] = to_u32(g.max_nodes, "nodes")?;
        g.hdr.write(&h)?;
        g.count = 0;
        g.plen = 0;
        g.sorted_layout = true;
        g.poisoned = None;
        g.stats = DeviceHeapStats::default();
        if g.profile.is_some() {
            g.profile = Some(DeviceHeapProfile::default());
        }
        Ok(())
    }

    /// The heap's state without waiting for launches a call left: for what the host
    /// mirrors (sizes), which calls set when they enqueue.
    fn mirror(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        // A panic in a call leaves the host mirror possibly stale; the next launch re-reads
        // the header, so carrying on is sound.
        let mut g = self.mirror();
        g.settle();
        g
    }
}

impl<T: DeviceHeapKey> Inner<T> {
    /// The `n` smallest keys (at most the keys held), sorted, by ⌈n/K⌉ DELs in one launch.
    fn delete_by_operations(&mut self, n: usize) -> Result<Vec<T>> {
        let k = self.partial.len();
        let ops: Vec<HeapOp> = (0..n.div_ceil(k))
            .map(|i| HeapOp::Delete((n - i * k).min(k)))
            .collect();
        // The DELs' results in linearization order are the sorted sequence.
        let out: Vec<T> = self
            .run(Keys::Host(&[]), &ops, false, true)?
            .deleted_in_order(k);
        if out.len() != n {
            return Err(Error::corrupted(
                "the device heap",
                format!(
                    "the device heap returned {} keys for a delete of {n} with {n} or more held",
                    out.len()
                ),
            ));
        }
        Ok(out)
    }

    /// [`Inner::delete_by_operations`] with the keys left on the device: each DEL's keys
    /// are copied from the staging buffer to their place in `dst` (runs of DELs that
    /// returned K keys each in one copy; only the DEL of fewer than K, at most one, breaks a
    /// run).
    fn delete_to_device(&mut self, n: usize, dst: &SvmBuffer<T::Upload>) -> Result<()> {
        let k = self.partial.len();
        let ops: Vec<HeapOp> = (0..n.div_ceil(k))
            .map(|i| HeapOp::Delete((n - i * k).min(k)))
            .collect();
        let raw = self.run(Keys::Host(&[]), &ops, false, false)?;
        // (source offset, length) of each run of DEL results that lie back to back.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (seq, &len) in raw.lens.iter().enumerate() {
            let len = (len as usize).min(k);
            match runs.last_mut() {
                Some((at, run)) if *at + *run == seq * k => *run += len,
                _ => runs.push((seq * k, len)),
            }
        }
        let total: usize = runs.iter().map(|r| r.1).sum();
        if total != n {
            return Err(Error::corrupted(
                "the device heap",
                format!(
                "the device heap returned {total} keys for a delete of {n} with {n} or more held"
            ),
            ));
        }
        let io = self.staging.keys.as_ref().expect("staged by the run");
        let mut to = 0;
        let mut last = None;
        for (at, len) in runs.into_iter().filter(|r| r.1 > 0) {
            // In-order queue: the copies run one after another; the last is waited for.
            last = Some(copy_keys(&mut self.copy, io, at, dst, to, len)?);
            to += len;
        }
        last.map_or(Ok(()), Launch::wait)
    }

    /// Waits for the launches a call left in flight ([`Inner::pending`]), bounded as every
    /// wait is; a failure poisons the heap (the error reaches the caller through
    /// [`Inner::usable`]).
    fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut launches = std::mem::take(&mut self.pending);
        for launch in &mut launches {
            if let Err(e) = launch.wait_in_place() {
                self.poisoned.get_or_insert_with(|| e.to_string());
                // Dropping the rest waits for them (bounded) or leaks their buffers.
                return;
            }
        }
        self.record_bulk_launches(&launches);
    }

    fn usable(&self) -> Result<()> {
        match &self.poisoned {
            Some(why) => Err(Error::corrupted(
                "the device heap",
                format!("the device heap is unusable after an earlier failure ({why}); clear() it"),
            )),
            None => Ok(()),
        }
    }

    /// Makes room for `nodes` full nodes (between launches), copying the heap on the device.
    fn reserve(&mut self, nodes: usize) -> Result<()> {
        if nodes <= self.max_nodes {
            return Ok(());
        }
        let k = self.partial.len();
        if let Some(limit) = self.limit {
            if nodes > limit {
                return Err(Error::CapacityExceeded {
                    what: format!("a device generalized heap of batches of {k} keys"),
                    capacity: limit * k + k - 1,
                });
            }
        }
        // Four times while the heap holds under 2^24 keys, then twice: each growth is three
        // driver allocations (keys, lock words, staging), 1-4 ms on the H200, and a search
        // that grows its heap from a few nodes paid them a dozen times.
        let factor = if self.max_nodes * k < (1 << 24) { 4 } else { 2 };
        let grown = nodes
            .max(self.max_nodes.saturating_mul(factor))
            .min(self.limit.unwrap_or(usize::MAX));
        let slots = tree_slots(grown);
        let keys = alloc_zeroed::<T::Repr>(&self.rt, slots * k)?;
        let used = (self.slots * k) as u64;
        if used > 0 {
            copy_keys(&mut self.copy, &self.keys, 0, &keys, 0, used as usize)?.wait()?;
        }
        let mut words = vec![0u32; slots];
        words[..self.slots].copy_from_slice(&self.words.read()?);
        let mut new_words = self.rt.alloc::<u32>(slots)?;
        new_words.write(&words)?;
        self.keys = keys;
        self.words = new_words;
        self.slots = slots;
        self.max_nodes = grown;
        self.reserve_staging()
    }

    /// Grows the staging buffer with the key array: a call's keys in or out, and a bulk
    /// call's runs (every key of the heap), then fit without an allocation in the call
    /// (allocating SVM costs about 0.45 ms per MiB on the H200: a bulk insert of 512K keys
    /// into a heap of 16M took 61 ms with the staging buffer grown in the call, against 4 ms
    /// for the rebuild itself, docs/BENCHMARKS.md).
    fn reserve_staging(&mut self) -> Result<()> {
        let k = self.partial.len();
        staged(&self.rt, &mut self.staging.keys, self.slots * k).map(|_| ())
    }

    /// The start of the staging buffer, mapped for writing the `len` keys an operation call
    /// ([`Keys::Staged`]) then inserts: the buffer is made as long as that call's `run`
    /// asks, so it finds the keys where they were written.
    fn ops_staging(&mut self, len: usize) -> Result<asym_runtime::SvmMap<'_, T::Upload>> {
        let k = self.partial.len();
        // Grown now, as `run` would grow it: the staging buffer grows with the key array,
        // and a reallocation after the keys are written would lose them.
        self.reserve((self.count * k + self.plen + len) / k)?;
        let io = staged(&self.rt, &mut self.staging.keys, len.next_multiple_of(k))?;
        io.map_range_for_overwrite_as::<T::Upload>(0, len)
    }

    /// One launch of `ops` (checked by the caller) over the insert keys `keys`; reads back the
    /// linearization order only when `want_order`, and the DELs' keys only when `download`
    /// (else they stay in the staging buffer, `lens[seq]` keys at `seq·K`).
    fn run(
        &mut self,
        keys: Keys<'_, T>,
        ops: &[HeapOp],
        want_order: bool,
        download: bool,
    ) -> Result<RawLaunch<T>> {
        let t_start = std::time::Instant::now();
        let k = self.partial.len();
        let n_keys = keys.len();
        let n_ops = to_u32(ops.len(), "operations in one call")?;
        let in_len = to_u32(n_keys, "keys in one call")?;
        let mut words = Vec::with_capacity(2 * ops.len());
        let mut inserted = 0;
        let mut dels = 0;
        for op in ops {
            match *op {
                HeapOp::Insert(b) => {
                    inserted += (n_keys - b * k).min(k);
                    words.extend([OP_INSERT, b as u32]);
                }
                HeapOp::Delete(n) => {
                    dels += 1;
                    words.extend([OP_DELETE, n as u32]);
                }
            }
        }
        // The most nodes this launch can reach: every insert lands before any delete.
        self.reserve((self.count * k + self.plen + inserted) / k)?;
        // Operations move keys between nodes: the layout is a heap's, no longer sorted.
        self.sorted_layout = false;
        let rt = &self.rt;
        let st = &mut self.staging;
        // The DELs' keys go after the inserted ones in the one staging buffer (whose last
        // batch is padded to K when it is sorted).
        let out_base = n_keys.next_multiple_of(k);
        let t_alloc = std::time::Instant::now();
        let io = staged(rt, &mut st.keys, out_base + dels * k)?;
        let mut alloc = t_alloc.elapsed();
        let t_copy = std::time::Instant::now();
        // Keys on the device are copied there; the sort after sees them (in-order queue).
        let uploaded = match keys {
            Keys::Host([]) | Keys::Device(_, 0) | Keys::Staged(_) => None,
            Keys::Host(keys) => {
                io.write_range(0, &T::upload(keys))?;
                None
            }
            Keys::Device(src, len) => Some(copy_keys(&mut self.copy, src, 0, io, 0, len)?),
        };
        let copy = t_copy.elapsed();
        let sorted = if n_keys == 0 {
            None
        } else {
            Some(self.bulk.sort_batches(io, 0, n_keys, k, self.wg)?)
        };
        let op_buf = staged(rt, &mut st.ops, words.len())?;
        op_buf.copy_from_host(0, &words)?;
        let t_alloc = std::time::Instant::now();
        staged(rt, &mut st.out_len, dels)?;
        staged(rt, &mut st.order, ops.len())?;
        alloc += t_alloc.elapsed();
        if let Some(p) = &mut self.profile {
            p.host_alloc_us += alloc.as_secs_f64() * 1e6;
            p.host_copy_us += copy.as_secs_f64() * 1e6;
        }
        let (Some(io), Some(op_buf), Some(out_len), Some(order)) =
            (&mut st.keys, &st.ops, &mut st.out_len, &mut st.order)
        else {
            unreachable!("staged() filled every buffer");
        };
        let mut h = self.hdr.read()?;
        h[HDR_SEQ] = 0;
        h[HDR_TICKET] = 0;
        h[HDR_ERROR] = 0;
        h[HDR_LIN] = 0;
        h[HDR_STAT_CLIMB_MERGES..].fill(0);
        h[HDR_MAX_NODES] = to_u32(self.max_nodes, "nodes")?;
        self.hdr.write(&h)?;
        let groups = self.groups.min(ops.len()).max(1);
        let kernel = match &mut self.delete {
            Some(delete) if dels == ops.len() => delete,
            _ => &mut self.run,
        };
        kernel
            .arg_svm(0, &self.keys)?
            .arg_svm(1, &self.words)?
            .arg_svm(2, &self.hdr)?
            .arg_svm(3, &self.partial)?
            .arg_scalar(4, to_u32(self.slots, "node slots")?)?
            .arg_svm(5, op_buf)?
            .arg_scalar(6, n_ops)?
            .arg_svm(7, io)?
            .arg_scalar(8, in_len)?
            .arg_svm(9, io)?
            .arg_svm(10, out_len)?
            .arg_svm(11, order)?
            .arg_scalar(12, self.bottom_up)?
            .arg_scalar(13, out_base as u64)?;
        self.stats.launches += 1;
        let t_kernel_start = std::time::Instant::now();
        kernel.launch(groups * self.wg, Some(self.wg))?.wait()?;
        for before in [uploaded, sorted].into_iter().flatten() {
            before.wait()?; // done before the run: this lets its buffers go
        }
        let t_kernel = t_kernel_start.elapsed();
        let h = self.hdr.read()?;
        self.stats.climb_merges += u64::from(h[HDR_STAT_CLIMB_MERGES]);
        self.stats.del_climbs += u64::from(h[HDR_STAT_DEL_CLIMBS]);
        self.stats.waits += u64::from(h[HDR_STAT_WAITS]);
        self.stats.merges += u64::from(h[HDR_STAT_MERGES]);
        self.stats.swaps += u64::from(h[HDR_STAT_SWAPS]);
        if let Some(p) = &mut self.profile {
            let us = |i: usize| f64::from(h[HDR_PROF + i]) * 0.256;
            p.root_wait_us += us(0);
            p.root_hold_us += us(1);
            p.root_steps += u64::from(h[HDR_PROF + 2]);
            p.child_wait_us += us(3);
            p.del_us += us(4);
            p.dels += u64::from(h[HDR_PROF + 5]);
            p.root_control_us += us(6);
            p.ins_root_wait_us += us(7);
            p.ins_root_hold_us += us(8);
            p.inserts += u64::from(h[HDR_PROF + 9]);
        }
        self.count = h[HDR_COUNT] as usize;
        self.plen = h[HDR_PLEN] as usize;
        if h[HDR_ERROR] != 0 {
            let e = match h[HDR_ERROR] {
                ERR_STALL => Error::Stalled {
                    side: Side::Device,
                    waiting_for: "take a node lock of the device heap".into(),
                    waited_ms: 0,
                    detail: "a work-group spun past its bound".into(),
                },
                ERR_CAPACITY => Error::corrupted(
                    "the device heap",
                    "the device heap ran out of nodes inside a launch the host had sized",
                ),
                ERR_STATE => Error::corrupted(
                    "the device heap",
                    "the device heap found a node in a state its protocol does not allow",
                ),
                code => Error::corrupted(
                    "the device heap",
                    format!("the device heap stopped with error code {code}"),
                ),
            };
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        if h[HDR_TICKET] < n_ops
            || h[HDR_LIN] != n_ops
            || h[HDR_SEQ] != dels as u32
            || h[HDR_CLIMBS] != 0
        {
            let e = Error::corrupted(
                "the device heap",
                format!(
                    "the device heap's launch took effect for {} of {n_ops} operations ({} of \
                 {dels} DELs), {} BU-INS climbs left unfinished",
                    h[HDR_LIN], h[HDR_SEQ], h[HDR_CLIMBS]
                ),
            );
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        let (lens, out) = match dels {
            0 => (Vec::new(), Vec::new()),
            _ if !download => (out_len.read_range(0, dels)?, Vec::new()),
            _ => (
                out_len.read_range(0, dels)?,
                T::download(io.read_range_as::<T::Upload>(out_base, dels * k)?),
            ),
        };
        let order = if want_order {
            order.read_range(0, ops.len())?
        } else {
            Vec::new()
        };
        if let Some(p) = &mut self.profile {
            p.host_prepare_us += (t_kernel_start - t_start).as_secs_f64() * 1e6;
            p.kernel_us += t_kernel.as_secs_f64() * 1e6;
            p.host_read_us += t_kernel_start
                .elapsed()
                .saturating_sub(t_kernel)
                .as_secs_f64()
                * 1e6;
        }
        Ok(RawLaunch { order, lens, out })
    }

    /// The first key of the root (`source` 0) or of the partial buffer (1).
    fn read_first(&mut self, source: u32, k: usize) -> Result<T::Repr> {
        if source == 1 {
            return Ok(self.partial.read()?[0]);
        }
        // Copy the root's first batch to a small buffer on the device: a map of the whole
        // key array would move the heap to the host on the coarse transport.
        let mut small = alloc_zeroed::<T::Repr>(&self.rt, k)?;
        copy_keys(&mut self.copy, &self.keys, 0, &small, 0, k)?.wait()?;
        Ok(small.read()?[0])
    }
}

/// Work-items for a grid-stride loop over `n` elements, in groups of `wg`.
fn stride_items(n: usize, wg: usize) -> usize {
    n.div_ceil(wg).clamp(1, 65_536) * wg
}

/// Enqueues `gheap_copy_keys`: `src[src_at..][..n]` to `dst[dst_at..][..n]`, elements of the
/// device form's size (the key array, the staging buffer, a caller's buffer of upload-form
/// keys). Both ranges are checked: the kernel writes where it is told.
fn copy_keys<A: SvmElement, B: SvmElement>(
    kernel: &mut Kernel,
    src: &SvmBuffer<A>,
    src_at: usize,
    dst: &SvmBuffer<B>,
    dst_at: usize,
    n: usize,
) -> Result<Launch> {
    debug_assert_eq!(std::mem::size_of::<A>(), std::mem::size_of::<B>());
    if src_at.saturating_add(n) > src.len() || dst_at.saturating_add(n) > dst.len() {
        return Err(Error::InvalidArgument(format!(
            "a copy of {n} keys from {src_at} of {} to {dst_at} of {}",
            src.len(),
            dst.len()
        )));
    }
    kernel
        .arg_svm(0, src)?
        .arg_scalar(1, src_at as u64)?
        .arg_svm(2, dst)?
        .arg_scalar(3, dst_at as u64)?
        .arg_scalar(4, n as u64)?;
    // Submitted by the caller's next submitting launch or by waiting on (dropping) it.
    kernel.launch_unflushed(stride_items(n, 256), Some(256))
}

/// A buffer of `len` elements (at least one); the runtime zeroes new SVM.
fn alloc_zeroed<E: SvmElement>(rt: &Runtime, len: usize) -> Result<SvmBuffer<E>> {
    rt.alloc::<E>(len.max(1))
}

fn to_u32(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n)
        .map_err(|_| Error::too_large(format!("{what} in one device heap call"), n, u32::MAX))
}
