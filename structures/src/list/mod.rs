//! Harris's lock-free linked list on nodes from the SVM allocator ([`crate::arena`]), run by
//! kernels (one work-item per operation, a positional list's work-groups sharing one walk of
//! it: `kernels/list.cl`) and by CPU threads
//! ([`ListView`]) on the same list: at the same time on the fine transport, between launches
//! on the coarse one.
//!
//! A list is either an **ordered set** (insert, remove, contains of `i32` keys) or a
//! **positional list** (the seed's workload: insert a value right after the node holding a
//! target value, remove the node holding a value). Removal is logical (a marked next word),
//! then physical (a CAS on the predecessor); unlinked nodes are retired and freed back to the
//! arena only at quiescent points.
//!
//! **Safe reclamation.** Every operation runs either inside a launch that [`LockFreeList`]
//! waits for before returning, or through a [`ListView`], which borrows the list. Freeing
//! retired nodes ([`LockFreeList::reclaim`], also run at the end of every batch method) takes
//! `&mut self`, so the borrow checker guarantees that no view exists and no launch is in
//! flight then: nobody can still hold a reference to a retired node. A node is retired only
//! after it was unlinked, so no operation that starts later can reach it.

mod view;

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use asym_kernels::{cl_defines, ClConst};
use asym_runtime::faults::retry_once;
use asym_runtime::{
    DeviceKind, Error, Kernel, LatencyPool, Mode, Result, Runtime, SvmBuffer, Transport,
};

use crate::arena::{ArenaMap, ArenaStats, SvmArena};
pub use view::ListView;

pub(crate) const LF_VALUE: usize = 0;
pub(crate) const LF_NEXT: usize = 1;
pub(crate) const LF_RETIRE: usize = 2;
pub(crate) const LF_FIRST: usize = 1;
pub(crate) const LF_RETIRED: usize = 2;
pub(crate) const LF_RETIRED_N: usize = 3;
pub(crate) const LF_RETRIES: usize = 4;
pub(crate) const LF_NODE_BYTES: usize = 16;
const ROOT_BYTES: usize = 32;
/// The mark bit of a next word (Harris's logical deletion).
pub(crate) const LF_MARK: u32 = 1;
/// Lost compare-and-swaps after which an operation gives up (a bound on every retry loop).
pub(crate) const LF_MAX_RETRIES: u32 = 1 << 24;
// Operation kinds in a launch's words.
const OP_REMOVE_VALUE: u32 = 0;
const OP_INSERT_AFTER: u32 = 1;
const OP_SET_INSERT: u32 = 2;
const OP_SET_REMOVE: u32 = 3;
const OP_SET_CONTAINS: u32 = 4;
// Result codes beyond the three `OpStatus` values: errors that stop a launch.
const LF_ERR_BOUND: u32 = 3;
const LF_ERR_KIND: u32 = 4;

/// The constants `list.cl` takes from the host (one source for both sides).
const KERNEL_CONSTANTS: &[ClConst] = &[
    ClConst::int("LF_RETIRED", LF_RETIRED as u64),
    ClConst::int("LF_RETIRED_N", LF_RETIRED_N as u64),
    ClConst::int("LF_VALUE", LF_VALUE as u64),
    ClConst::int("LF_NEXT", LF_NEXT as u64),
    ClConst::int("LF_RETIRE", LF_RETIRE as u64),
    ClConst::uint("LF_NODE_BYTES", LF_NODE_BYTES as u64),
    ClConst::uint("LF_MARK", LF_MARK as u64),
    ClConst::uint("LF_MAX_RETRIES", LF_MAX_RETRIES as u64),
    ClConst::uint("LF_OP_REMOVE_VALUE", OP_REMOVE_VALUE as u64),
    ClConst::uint("LF_OP_INSERT_AFTER", OP_INSERT_AFTER as u64),
    ClConst::uint("LF_OP_SET_INSERT", OP_SET_INSERT as u64),
    ClConst::uint("LF_OP_SET_REMOVE", OP_SET_REMOVE as u64),
    ClConst::uint("LF_OP_SET_CONTAINS", OP_SET_CONTAINS as u64),
    ClConst::uint("LF_FAILED", OpStatus::Failed as u64),
    ClConst::uint("LF_DONE", OpStatus::Done as u64),
    ClConst::uint("LF_NO_MEMORY", OpStatus::OutOfMemory as u64),
    ClConst::uint("LF_ERR_BOUND", LF_ERR_BOUND as u64),
    ClConst::uint("LF_ERR_KIND", LF_ERR_KIND as u64),
    ClConst::uint("LF_WINDOW_MAX", LIST_WALK_WINDOW_MAX as u64),
];

/// What a list holds and which operations it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind {
    /// Ascending distinct keys: [`ListOp::Insert`], [`ListOp::Remove`], [`ListOp::Contains`].
    OrderedSet,
    /// Values in list order: [`ListOp::InsertAfter`], [`ListOp::RemoveValue`].
    Positional,
}

/// One list operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOp {
    /// Positional: remove the first node holding the value.
    RemoveValue(i32),
    /// Positional: insert `value` right after the first node holding `target`.
    InsertAfter {
        /// The value of the node to insert after.
        target: i32,
        /// The new node's value.
        value: i32,
    },
    /// Ordered set: insert the key unless present.
    Insert(i32),
    /// Ordered set: remove the key if present.
    Remove(i32),
    /// Ordered set: whether the key is present.
    Contains(i32),
}

impl ListOp {
    fn kind(&self) -> ListKind {
        match self {
            ListOp::RemoveValue(_) | ListOp::InsertAfter { .. } => ListKind::Positional,
            _ => ListKind::OrderedSet,
        }
    }

    fn encode(&self) -> [u32; 3] {
        match *self {
            ListOp::RemoveValue(v) => [OP_REMOVE_VALUE, v as u32, 0],
            ListOp::InsertAfter { target, value } => [OP_INSERT_AFTER, target as u32, value as u32],
            ListOp::Insert(k) => [OP_SET_INSERT, k as u32, 0],
            ListOp::Remove(k) => [OP_SET_REMOVE, k as u32, 0],
            ListOp::Contains(k) => [OP_SET_CONTAINS, k as u32, 0],
        }
    }
}

/// How one operation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpStatus {
    /// It found nothing to act on: the target or value is absent, the key already present
    /// (insert) or absent (remove, contains).
    Failed = 0,
    /// It took effect (contains: the key is present).
    Done = 1,
    /// The arena had no block for the new node; the list is unchanged by this operation.
    OutOfMemory = 2,
}

impl OpStatus {
    /// The status a result code stands for (the kernel's LF_FAILED, LF_DONE, LF_NO_MEMORY).
    fn from_code(code: u32) -> Option<Self> {
        [OpStatus::Failed, OpStatus::Done, OpStatus::OutOfMemory]
            .into_iter()
            .find(|s| *s as u32 == code)
    }
}

/// What a batch takes besides its [`Mode`]: in Cooperative mode a launch takes the first
/// `device_share` of the operations and the latency threads the rest (at the same time on the
/// fine transport, after the launch on the coarse one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ListOptions {
    /// The device's share of a Cooperative batch's operations, 0 to 1.
    pub device_share: f64,
    /// Work-items per work-group of a launch; on a positional list they share one walk
    /// (`list.cl`'s `lf_positional_group`). `None`: [`LIST_WORK_GROUP`] on a GPU,
    /// [`LIST_CPU_WORK_GROUP`] on a CPU device, capped at the device's largest.
    pub work_group: Option<usize>,
    /// Nodes a positional list's shared walk reads between two barriers of its work-group,
    /// 1 to [`LIST_WALK_WINDOW_MAX`] (`list.cl`'s `lf_positional_group`). `None`:
    /// [`LIST_WALK_WINDOW`].
    pub walk_window: Option<usize>,
}

/// The launch's work-group size on a GPU when [`ListOptions::work_group`] is `None`
/// (docs/benchmarks/list.md has the sweep it comes from).
pub const LIST_WORK_GROUP: usize = 512;

/// The default on a CPU device: a barrier there switches between all the group's
/// work-items, so large groups cost more than the walks they share (PoCL, 2 cores: the seed's
/// experiment 2.0 s with groups of 64, 19 s with 256).
pub const LIST_CPU_WORK_GROUP: usize = 64;

/// The shared walk's window when [`ListOptions::walk_window`] is `None`
/// (docs/benchmarks/list.md has the sweep it comes from).
pub const LIST_WALK_WINDOW: usize = 32;

/// The largest window a walk takes (the kernel's local buffer holds two of them).
pub const LIST_WALK_WINDOW_MAX: usize = 64;

/// The window a launch's walks read: `requested` checked against 1..=[`LIST_WALK_WINDOW_MAX`],
/// or [`LIST_WALK_WINDOW`].
fn walk_window(requested: Option<usize>) -> Result<u32> {
    let w = requested.unwrap_or(LIST_WALK_WINDOW);
    if !(1..=LIST_WALK_WINDOW_MAX).contains(&w) {
        return Err(Error::out_of_range(
            "list walk window",
            w,
            format!("1 to {LIST_WALK_WINDOW_MAX}"),
        ));
    }
    Ok(w as u32)
}

impl Default for ListOptions {
    /// Half the operations on each side, default work-groups.
    fn default() -> Self {
        ListOptions {
            device_share: 0.5,
            work_group: None,
            walk_window: None,
        }
    }
}

/// What a batch did.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchReport {
    /// Each operation's status, in the order given.
    pub statuses: Vec<OpStatus>,
    /// Operations that took effect.
    pub done: usize,
    /// Operations that found nothing to act on.
    pub failed: usize,
    /// Operations refused for want of memory.
    pub out_of_memory: usize,
    /// Operations the device ran (the rest ran on CPU threads).
    pub device_ops: usize,
    /// Compare-and-swaps that lost a race during the batch.
    pub cas_retries: u64,
    /// Wall time of the operations (launch and threads; reclamation not included).
    pub elapsed: Duration,
    /// Of which the launch, start to finish (None without a launch).
    pub device_time: Option<Duration>,
    /// The launch's work-group size (None without a launch).
    pub work_group: Option<usize>,
    /// The nodes its walks read between two barriers (None without a launch).
    pub walk_window: Option<usize>,
    /// Nodes freed back to the arena after the batch.
    pub reclaimed: usize,
}

/// What a walk of the list found (see [`LockFreeList::check`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListCheck {
    /// Reachable nodes that are not marked: the list's contents.
    pub live: usize,
    /// Reachable nodes that are marked (logically deleted, not yet unlinked).
    pub marked: usize,
    /// Retired nodes waiting for reclamation.
    pub retired: usize,
}

/// Exclusive host access to a list (any transport); see [`ListMap::view`].
pub struct ListMap<'a> {
    arena: ArenaMap<'a>,
    root: u32,
    max_steps: u32,
}

impl ListMap<'_> {
    /// The mapped list for CPU threads to share.
    pub fn view(&mut self) -> ListView<'_> {
        ListView {
            arena: self.arena.view(),
            root: self.root,
            max_steps: self.max_steps,
        }
    }
}

/// A lock-free list in an SVM arena of its own.
pub struct LockFreeList {
    arena: SvmArena,
    root: u32,
    kind: ListKind,
    kernel: Option<Kernel>,
    /// A launch's operations, results and counters, kept between batches and grown on
    /// demand (an SVM allocation costs by its size on NVIDIA).
    staging: Option<Staging>,
}

struct Staging {
    ops: SvmBuffer<u32>,
    results: SvmBuffer<u32>,
    stats: SvmBuffer<u32>,
    /// The results' host copy, kept with the buffers (its pages touched once).
    codes: Vec<u32>,
}

impl std::fmt::Debug for LockFreeList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockFreeList")
            .field("kind", &self.kind)
            .field("arena", &self.arena)
            .finish_non_exhaustive()
    }
}

/// `InvalidArgument` naming the first value of `values` that appears twice and its two
/// positions (`what` names the list in the message): positional operations name nodes by
/// value, so a positional list (and a workload file for one) must hold each value once.
pub fn unique_values(values: &[i32], what: &str) -> Result<()> {
    let mut seen = std::collections::HashMap::with_capacity(values.len());
    for (i, &v) in values.iter().enumerate() {
        if let Some(first) = seen.insert(v, i) {
            return Err(Error::InvalidArgument(format!(
                "value {v} appears twice in {what} (positions {first} and {i}); the list's \
                 operations name nodes by value, so values must be unique"
            )));
        }
    }
    Ok(())
}

/// The most nodes a walk may pass: more than the arena can hold.
fn max_steps(arena: &SvmArena) -> u32 {
    u32::try_from(arena.capacity_bytes() / LF_NODE_BYTES + 2).unwrap_or(u32::MAX)
}

impl LockFreeList {
    /// An empty list of `kind` in a new arena with `node_bytes` bytes for nodes (16 per node,
    /// rounded up to whole superblocks) and a superblock for the list's root.
    pub fn new(rt: &Runtime, kind: ListKind, node_bytes: usize) -> Result<Self> {
        let sb = crate::arena::ArenaLayout::default().superblock_bytes();
        let mut arena = SvmArena::new(rt, node_bytes.max(1).saturating_add(sb))?;
        let root = {
            let mut m = arena.map()?;
            let v = m.view();
            let root = v.malloc(ROOT_BYTES, 0)?;
            for w in v.words(root, ROOT_BYTES / 4).expect("a fresh block") {
                w.store(0, Ordering::Relaxed);
            }
            root
        };
        Ok(LockFreeList {
            arena,
            root,
            kind,
            kernel: None,
            staging: None,
        })
    }

    /// A positional list holding `values` in order, in an arena with room for them and
    /// `spare_nodes` more. Duplicate values are refused (`InvalidArgument` naming the value
    /// and its two positions): the seed's operations name nodes by value.
    pub fn positional_from(rt: &Runtime, values: &[i32], spare_nodes: usize) -> Result<Self> {
        unique_values(values, "the initial list")?;
        let nodes = values.len().saturating_add(spare_nodes);
        let bytes = nodes.saturating_mul(LF_NODE_BYTES);
        let mut list = Self::new(rt, ListKind::Positional, bytes)?;
        let root = list.root;
        let mut m = list.arena.map()?;
        let v = m.view();
        let mut prev = root;
        for &x in values {
            let n = v.malloc(LF_NODE_BYTES, 0)?;
            let w = v.words(n, 4).expect("a fresh block");
            w[LF_VALUE].store(x as u32, Ordering::Relaxed);
            w[LF_NEXT].store(0, Ordering::Relaxed);
            w[LF_RETIRE].store(0, Ordering::Relaxed);
            v.word(prev, LF_NEXT)
                .expect("a fresh block")
                .store(n, Ordering::Relaxed);
            prev = n;
        }
        drop(m);
        Ok(list)
    }

    /// The list's kind.
    pub fn kind(&self) -> ListKind {
        self.kind
    }

    /// The arena (for its statistics, or to grow it).
    pub fn arena_mut(&mut self) -> &mut SvmArena {
        &mut self.arena
    }

    /// The arena's statistics (`&mut`: nothing may be running on the list).
    pub fn arena_stats(&mut self) -> Result<ArenaStats> {
        self.arena.stats()
    }

    /// Host access while kernels may run on the list: fine transport only.
    pub fn view(&self) -> Result<ListView<'_>> {
        Ok(ListView {
            arena: self.arena.view()?,
            root: self.root,
            max_steps: max_steps(&self.arena),
        })
    }

    /// Exclusive host access on any transport (maps the arena).
    pub fn map(&mut self) -> Result<ListMap<'_>> {
        let max_steps = max_steps(&self.arena);
        Ok(ListMap {
            arena: self.arena.map()?,
            root: self.root,
            max_steps,
        })
    }

    fn check_ops(&self, ops: &[ListOp]) -> Result<()> {
        if let Some((i, op)) = ops.iter().enumerate().find(|(_, o)| o.kind() != self.kind) {
            return Err(Error::InvalidArgument(format!(
                "operation {i} ({op:?}) is not an operation of a {:?} list",
                self.kind
            )));
        }
        Ok(())
    }

    /// Runs `ops` concurrently in `mode` (CpuOnly: the latency threads of `pool`; GpuOnly: one
    /// launch, a work-item per operation in work-groups of `options.work_group`; Cooperative:
    /// split by `options.device_share`), then reclaims the nodes the batch retired.
    pub fn apply(
        &mut self,
        ops: &[ListOp],
        mode: Mode,
        options: ListOptions,
        pool: Option<&LatencyPool>,
    ) -> Result<BatchReport> {
        self.check_ops(ops)?;
        let split = match mode {
            Mode::CpuOnly => 0,
            Mode::GpuOnly => ops.len(),
            Mode::Cooperative => {
                let share = options.device_share;
                if !(0.0..=1.0).contains(&share) {
                    return Err(Error::out_of_range("device share", share, "0 to 1"));
                }
                (ops.len() as f64 * share).round() as usize
            }
        };
        let (dev_ops, host_ops) = ops.split_at(split);
        let pool = match (pool, host_ops.is_empty()) {
            (Some(p), _) => Some(p),
            (None, true) => None,
            (None, false) => {
                return Err(Error::InvalidArgument(
                    "CPU threads run part of this batch: pass a latency pool".into(),
                ))
            }
        };
        let window = walk_window(options.walk_window)?;
        let mut statuses = vec![OpStatus::Failed; ops.len()];
        let work_group = if dev_ops.is_empty() {
            None
        } else {
            Some(self.work_group(options.work_group)?)
        };
        let started = Instant::now();
        let (device_time, cas_retries) = match work_group {
            None => {
                let retries = match pool {
                    Some(pool) => self.run_host(pool, host_ops, &mut statuses[split..])?,
                    None => 0,
                };
                (None, retries)
            }
            Some(wg) => {
                let launch = (wg, window);
                self.run_device_and_host(dev_ops, launch, pool, host_ops, &mut statuses)?
            }
        };
        let elapsed = started.elapsed();
        // The batch has taken effect: its report is not given up for a failed map.
        let reclaimed = retry_once(|| self.reclaim())?;
        let count = |s: OpStatus| statuses.iter().filter(|&&x| x == s).count();
        Ok(BatchReport {
            done: count(OpStatus::Done),
            failed: count(OpStatus::Failed),
            out_of_memory: count(OpStatus::OutOfMemory),
            statuses,
            device_ops: split,
            cas_retries,
            elapsed,
            device_time,
            work_group,
            walk_window: work_group.map(|_| window as usize),
            reclaimed,
        })
    }

    /// The work-group size of a launch: `requested`, or the default capped at the device's
    /// largest; a request the device cannot run is an error.
    fn work_group(&self, requested: Option<usize>) -> Result<usize> {
        let rt = self.arena.runtime();
        match requested {
            Some(0) => Err(Error::out_of_range("list work-group size", 0, "at least 1")),
            Some(wg) => {
                rt.check_work_group(wg, "run a list batch")?;
                Ok(wg)
            }
            None => {
                let wg = match rt.profile().kind {
                    DeviceKind::Cpu => LIST_CPU_WORK_GROUP,
                    _ => LIST_WORK_GROUP,
                };
                Ok(wg.min(rt.profile().max_work_group_size.max(1)))
            }
        }
    }

    /// The launch of `dev_ops` (work-groups of `wg`, walks reading `window` nodes a barrier)
    /// and, on the fine transport at the same time, the CPU threads' `host_ops` (on the coarse
    /// one, after the launch). Returns the launch's time and the lost CASes of both.
    fn run_device_and_host(
        &mut self,
        dev_ops: &[ListOp],
        (wg, window): (usize, u32),
        pool: Option<&LatencyPool>,
        host_ops: &[ListOp],
        statuses: &mut [OpStatus],
    ) -> Result<(Option<Duration>, u64)> {
        let n = u32::try_from(dev_ops.len())
            .map_err(|_| Error::too_large("operations on the device", dev_ops.len(), u32::MAX))?;
        let rt = self.arena.runtime().clone();
        self.reserve_batch(dev_ops.len())?;
        // Taken out for the call (the coarse path below needs `&mut self` for the host's
        // share) and put back at the end; an error drops it.
        let mut staging = self.staging.take().expect("allocated above");
        let Staging {
            ops: op_buf,
            results,
            stats: launch_stats,
            codes,
        } = &mut staging;
        // Encoded straight into the mapped buffer: no host copy of the words to allocate
        // (fresh pages) and hand to the driver's staging.
        {
            let mut map = op_buf.map_range_for_overwrite(0, 3 * dev_ops.len())?;
            for (words, op) in map.chunks_exact_mut(3).zip(dev_ops) {
                words.copy_from_slice(&op.encode());
            }
            map.unmap()?;
        }
        launch_stats.write(&[0, 0])?;
        let (root, steps) = (self.root, max_steps(&self.arena));
        let positional = u32::from(self.kind == ListKind::Positional);
        self.build_kernel()?;
        let kernel = self.kernel.as_mut().expect("built above");
        // Every launch: a grown arena has new buffers.
        self.arena.set_args(kernel)?;
        kernel
            .arg_scalar("root", root)?
            .arg_scalar("max_steps", steps)?
            .arg_scalar("positional", positional)?
            .arg_scalar("window", window)?
            .arg_svm("ops", op_buf)?
            .arg_svm("results", results)?
            .arg_scalar("n", n)?
            .arg_svm("launch_stats", launch_stats)?;
        let t0 = Instant::now();
        let mut launch = kernel.launch(dev_ops.len().div_ceil(wg) * wg, Some(wg))?;
        let (dev_status, host_status) = statuses.split_at_mut(dev_ops.len());
        let pool = pool.filter(|_| !host_ops.is_empty());
        // Fine transport: the threads run while the launch is in flight; coarse: after it.
        let host_during = pool
            .filter(|_| rt.transport() == Transport::Fine)
            .map(|pool| self.run_host(pool, host_ops, host_status));
        // From the launch on the batch has taken effect: a failed wait or read is tried again
        // once (`retry_once`) rather than return with the list changed and nothing reported.
        retry_once(|| launch.wait_in_place())?;
        drop(launch);
        let device_time = Some(t0.elapsed());
        let host_retries = match (host_during, pool) {
            (Some(r), _) => r?,
            (None, Some(pool)) => self.run_host(pool, host_ops, host_status)?,
            (None, None) => 0,
        };
        let codes = &mut codes[..dev_ops.len()];
        retry_once(|| results.read_range_into(0, codes))?;
        for (s, &r) in dev_status.iter_mut().zip(codes.iter()) {
            *s = match (OpStatus::from_code(r), r) {
                (Some(status), _) => status,
                (None, LF_ERR_KIND) => {
                    return Err(Error::InvalidArgument(
                        "the device was given an operation of the other list kind".into(),
                    ))
                }
                (None, _) => {
                    return Err(Error::corrupted(
                        "the lock-free list",
                        format!(
                            "a list operation on the device passed its bound (code {r}: a cycle \
                         in the list or a livelock)"
                        ),
                    ))
                }
            };
        }
        let [retries, error] = retry_once(|| launch_stats.read())?[..] else {
            unreachable!("two words")
        };
        if error == LF_ERR_BOUND {
            return Err(Error::corrupted(
                "the lock-free list",
                "a list operation on the device passed its bound",
            ));
        }
        self.staging = Some(staging);
        Ok((device_time, u64::from(retries) + host_retries))
    }

    /// Builds the launch's kernel and allocates the buffers a launch of `ops` operations uses
    /// (they are kept and grown on demand; a batch that finds them large enough allocates no
    /// SVM).
    pub fn reserve_batch(&mut self, ops: usize) -> Result<()> {
        self.build_kernel()?;
        if self.staging.as_ref().is_none_or(|s| s.results.len() < ops) {
            self.staging = None;
            let rt = self.arena.runtime();
            let n = ops.max(1).next_power_of_two();
            self.staging = Some(Staging {
                ops: rt.alloc::<u32>(3 * n)?,
                results: rt.alloc::<u32>(n)?,
                stats: rt.alloc::<u32>(2)?,
                codes: vec![0; n],
            });
        }
        Ok(())
    }

    /// The launch's kernel, built on first use.
    fn build_kernel(&mut self) -> Result<()> {
        if self.kernel.is_none() {
            let rt = self.arena.runtime();
            let opts = format!(
                "{} -DARENA_NO_KERNELS=1 {}",
                self.arena.layout().cl_defines(),
                cl_defines(KERNEL_CONSTANTS)
            );
            let program = rt.program_with(&asym_kernels::LIST, &opts)?;
            self.kernel = Some(Kernel::from_program(rt, &program, "list_apply")?);
        }
        Ok(())
    }

    /// The CPU threads' share: on a view of the list (fine transport, `&self`, so a launch
    /// may be in flight) or a map (coarse). Returns their lost CASes.
    fn run_host(
        &mut self,
        pool: &LatencyPool,
        ops: &[ListOp],
        statuses: &mut [OpStatus],
    ) -> Result<u64> {
        if self.arena.runtime().transport() == Transport::Fine {
            let view = self.view()?;
            run_threads(pool, view, ops, statuses)
        } else {
            // After a device share the batch has taken effect: a failed map is tried again
            // once (as `retry_once` does; the guard borrows `self`, so by hand).
            let mut retried = false;
            let mut m = loop {
                match self.map() {
                    Ok(m) => break m,
                    Err(e) if e.is_device_fault() && !retried => retried = true,
                    Err(e) => return Err(e),
                }
            };
            let view = m.view();
            run_threads(pool, view, ops, statuses)
        }
    }

    /// Frees the retired nodes back to the arena; returns how many. `&mut self`: no view and
    /// no launch can be using the list (the reclamation argument in the module docs).
    pub fn reclaim(&mut self) -> Result<usize> {
        let root = self.root;
        let limit = max_steps(&self.arena);
        let mut m = self.map()?;
        let v = m.view();
        let a = v.arena();
        let top = v.word(root, LF_RETIRED)?;
        let mut n = top.swap(0, Ordering::AcqRel);
        let mut freed = 0usize;
        while n != 0 {
            let next = v.word(n, LF_RETIRE)?.load(Ordering::Relaxed);
            a.free(n, freed)?;
            freed += 1;
            if freed > limit as usize {
                return Err(Error::corrupted(
                    "the lock-free list",
                    "the list's retire stack has a cycle",
                ));
            }
            n = next;
        }
        v.word(root, LF_RETIRED_N)?.store(0, Ordering::Relaxed);
        Ok(freed)
    }

    /// Unlinks every marked node still reachable (the seed's final traversal) and reclaims
    /// them; returns how many nodes it unlinked.
    pub fn cleanup(&mut self) -> Result<usize> {
        let root = self.root;
        let unlinked = {
            let mut m = self.map()?;
            let v = m.view();
            let mut unlinked = 0;
            let mut prev = root;
            let mut cur = v.first()? & !1;
            let mut steps = 0u64;
            while cur != 0 {
                let cn = v.next(cur)?;
                if cn & 1 != 0 {
                    // Quiescent: nothing else changes the list, plain stores suffice, but
                    // the nodes are retired as a concurrent unlink would.
                    v.word(prev, LF_NEXT)?.store(cn & !1, Ordering::Relaxed);
                    let top = v.word(root, LF_RETIRED)?;
                    v.word(cur, LF_RETIRE)?
                        .store(top.load(Ordering::Relaxed), Ordering::Relaxed);
                    top.store(cur, Ordering::Relaxed);
                    unlinked += 1;
                } else {
                    prev = cur;
                }
                cur = cn & !1;
                steps += 1;
                if steps > u64::from(v.max_steps) {
                    return Err(Error::corrupted(
                        "the lock-free list",
                        "the list has a cycle",
                    ));
                }
            }
            unlinked
        };
        self.reclaim()?;
        Ok(unlinked)
    }

    /// The list's contents from the head (unmarked nodes only).
    pub fn values(&mut self) -> Result<Vec<i32>> {
        Ok(self.walk()?.0)
    }

    /// Walks the list and checks its structure: no cycle, every node a distinct block of the
    /// arena, and for an ordered set strictly ascending keys.
    pub fn check(&mut self) -> Result<ListCheck> {
        let (values, marked, retired) = self.walk()?;
        if self.kind == ListKind::OrderedSet {
            if let Some(w) = values.windows(2).find(|w| w[0] >= w[1]) {
                return Err(Error::corrupted(
                    "the lock-free list",
                    format!("the ordered set holds {} before {}", w[0], w[1]),
                ));
            }
        }
        Ok(ListCheck {
            live: values.len(),
            marked,
            retired,
        })
    }

    fn walk(&mut self) -> Result<(Vec<i32>, usize, usize)> {
        let mut m = self.map()?;
        let v = m.view();
        let mut seen = std::collections::HashSet::new();
        let mut values = Vec::new();
        let mut marked = 0;
        let mut cur = v.first()? & !1;
        while cur != 0 {
            if !seen.insert(cur) {
                return Err(Error::corrupted(
                    "the lock-free list",
                    format!("the list reaches node {cur} twice"),
                ));
            }
            let cn = v.next(cur)?;
            if cn & 1 != 0 {
                marked += 1;
            } else {
                values.push(v.value(cur)?);
            }
            cur = cn & !1;
        }
        let retired = v.retired_count()? as usize;
        Ok((values, marked, retired))
    }
}

/// Runs `ops` on the pool's threads, which take chunks of them in turn; returns the CASes
/// they lost (the root's host counter before and after).
fn run_threads(
    pool: &LatencyPool,
    view: ListView<'_>,
    ops: &[ListOp],
    statuses: &mut [OpStatus],
) -> Result<u64> {
    let retries = view.word(view.root, LF_RETRIES)?;
    let before = retries.load(Ordering::Relaxed);
    const CHUNK: usize = 16;
    let next = AtomicUsize::new(0);
    let out: Vec<AtomicU32> = (0..ops.len()).map(|_| AtomicU32::new(0)).collect();
    let results = pool.broadcast_scoped(|info| -> Result<()> {
        loop {
            let start = next.fetch_add(CHUNK, Ordering::Relaxed);
            if start >= ops.len() {
                return Ok(());
            }
            for i in start..(start + CHUNK).min(ops.len()) {
                let s = view.apply(ops[i], info.index)?;
                out[i].store(s as u32, Ordering::Relaxed);
            }
        }
    })?;
    results.into_iter().collect::<Result<Vec<()>>>()?;
    for (s, o) in statuses.iter_mut().zip(out) {
        *s = OpStatus::from_code(o.into_inner()).expect("stored from an OpStatus");
    }
    Ok(u64::from(
        retries.load(Ordering::Relaxed).wrapping_sub(before),
    ))
}
