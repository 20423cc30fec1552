//! The device heap's layout in SVM as the host and `kernels/gheap*.cl` share it: the header's
//! words, error and operation codes, and the constants every program of the heap is built
//! with.

use asym_kernels::{cl_defines, ClConst};

use super::super::device_batch_ops::MAX_DEVICE_BATCH;

// The largest batch is the batch kernels' [`MAX_DEVICE_BATCH`] (five batches of keys live in
// local memory: K = 2048 needs 40 KiB of int keys; pairs of 8 bytes fit up to K = 1024 in
// 48 KiB, which `check_local_memory` enforces per device).

/// The environment variable (`1`) that builds a profiling device heap ([`DeviceHeapProfile`](super::DeviceHeapProfile)).
pub const GHEAP_PROFILE_ENV: &str = "ASYM_GHEAP_PROFILE";

/// The environment variable (`1`) that runs delete calls' DELs on the general kernel
/// (`gheap_run`, which also runs INS) instead of `gheap_delete`, the TD-DEL for launches of
/// DELs alone whose control every work-item computes: for comparing the two. A profiling
/// heap always uses the general one (the profile's counters are its).
pub const GHEAP_GENERAL_DELETE_ENV: &str = "ASYM_GHEAP_GENERAL_DELETE";

pub(super) const HDR_COUNT: usize = 0;
pub(super) const HDR_PLEN: usize = 1;
pub(super) const HDR_SEQ: usize = 2;
pub(super) const HDR_TICKET: usize = 3;
pub(super) const HDR_ERROR: usize = 4;
pub(super) const HDR_MAX_NODES: usize = 5;
pub(super) const HDR_LIN: usize = 6;
pub(super) const HDR_CLIMBS: usize = 7;
pub(super) const HDR_STAT_CLIMB_MERGES: usize = 8;
pub(super) const HDR_STAT_DEL_CLIMBS: usize = 9;
pub(super) const HDR_STAT_WAITS: usize = 10;
pub(super) const HDR_STAT_MERGES: usize = 11;
pub(super) const HDR_STAT_SWAPS: usize = 12;
pub(super) const HDR_PROF: usize = 16;
pub(super) const HDR_WORDS: usize = 32;

pub(super) const ERR_STALL: u32 = 1;
pub(super) const ERR_CAPACITY: u32 = 2;
pub(super) const ERR_STATE: u32 = 3;

pub(super) const OP_INSERT: u32 = 0;
pub(super) const OP_DELETE: u32 = 1;

/// The constants `gheap.cl` takes from the host (one source for both sides): the header's
/// words, the profile's words, the error codes the host decodes, the operation kinds.
pub(super) const KERNEL_CONSTANTS: &[ClConst] = &[
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
