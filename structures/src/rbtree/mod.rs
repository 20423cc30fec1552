//! A red-black tree whose nodes live in SVM, taken from the arena ([`crate::arena`]): keys
//! `i32`, `u32` or `f32` (stored in their ordered `i32` form, [`Key`]) with `u64` values.
//!
//! **Layout.** A node is one 32-byte arena block of eight words: the key, the value (two
//! words), a colour word, the left, right and parent links (arena handles) and a lock word
//! for the concurrent modes. There is no shared sentinel: an absent child or parent is
//! [`NIL`] (handle 0, which lies in the arena's reserved first superblock and is never a
//! block), so no two operations meet on a node that belongs to neither. A header block holds
//! the root (where a node keeps its left link, so it locks like a node) and the node count.
//!
//! **Concurrent modes** ([`RbTree::insert_in`], [`RbTree::delete_in`] with a [`Mode`];
//! [`RbTree::insert_svm`], [`RbTree::delete_svm`] for batches resident on the device): rounds
//! of locate and transactional apply on the device's work-items, the latency threads or both,
//! node locks taken in handle order and only tried, so nothing waits and nothing livelocks;
//! [`update`] has the protocol, [`tx`] its memory-ordering argument. A batch into an empty
//! tree is built whole ([`RbTree::build_on_device`]). Queries: [`RbTree::search_svm`],
//! [`RbTree::search_on_device`], [`RbTree::search_on_threads`],
//! [`RbTree::lower_bound_on_device`], [`RbTree::range_count_on_device`]; a large batch is
//! grouped by subtree on the device before the walks ([`SearchOrder`]).
//!
//! **Host path**: [`RbTree::insert_batch`] (an existing key gets the new value),
//! [`RbTree::delete_batch`] (a missing key is reported per operation, not an error),
//! [`RbTree::search_batch`], [`RbTree::lower_bound_batch`] and [`RbTree::range_count`]. A
//! batch may be applied in any order of its operations; this path applies them in order, one
//! at a time, with the textbook fix-ups (CLRS, adapted to links without a sentinel: deletion
//! carries the parent of the moved-up child, which may be absent). It is the reference the
//! concurrent modes are checked against.
//!
//! **Validation.** [`RbTree::validate`] checks the five red-black properties, strict key
//! order, parent links, the node count, that no node is reached twice, and that the arena's
//! bytes in use are exactly the tree's blocks (no node leaked or freed twice).

mod device;
mod device_update;
mod ops;
mod threads;
mod tx;
mod update;
mod validate;

use std::marker::PhantomData;

use asym_kernels::ClConst;
#[cfg(doc)]
use asym_runtime::Mode;
use asym_runtime::{Error, Result, Runtime};

use crate::arena::{ArenaStats, SvmArena};
use crate::key::Key;
pub use device::{Found, SearchOrder};
pub use update::UpdateStats;
pub use validate::TreeReport;

/// An absent link.
pub(crate) const NIL: u32 = 0;
/// Words of a node: key, value (low, high), colour, left, right, parent, lock.
pub(crate) const NODE_WORDS: usize = 8;
pub(crate) const NODE_BYTES: usize = 4 * NODE_WORDS;
pub(crate) const N_KEY: usize = 0;
pub(crate) const N_VALUE_LO: usize = 1;
pub(crate) const N_VALUE_HI: usize = 2;
pub(crate) const N_COLOUR: usize = 3;
pub(crate) const N_LEFT: usize = 4;
pub(crate) const N_RIGHT: usize = 5;
pub(crate) const N_PARENT: usize = 6;
/// The lock word of the concurrent modes (0: free).
pub(crate) const N_LOCK: usize = 7;
/// The colour word of a red node (black is 0).
pub(crate) const RED: u32 = 1;
/// Header words: the root and the node count. The root sits where a node keeps its left
/// link, so the concurrent modes treat the header as a node whose left child is the root
/// (its lock word guards the root link like any other).
pub(crate) const H_ROOT: usize = N_LEFT;
pub(crate) const H_COUNT: usize = 1;

/// Searches below which [`RbTree::search_on_threads`] runs on the calling thread.
const INLINE_SEARCHES: usize = 256;

/// Longest walk a device search takes before it calls the tree damaged: twice the height
/// bound of a red-black tree of 2^32 nodes.
const MAX_DEPTH: u32 = 128;
/// A device search's outcome per query.
const FOUND: u32 = 1;
const ABSENT: u32 = 0;
const DAMAGED: u32 = 2;

/// The node layout and codes `kernels/rbtree.cl` takes from the host (one source for both
/// sides).
const KERNEL_CONSTANTS: &[ClConst] = &[
    ClConst::uint("RB_NIL", NIL as u64),
    ClConst::int("RB_KEY", N_KEY as u64),
    ClConst::int("RB_VALUE_LO", N_VALUE_LO as u64),
    ClConst::int("RB_VALUE_HI", N_VALUE_HI as u64),
    ClConst::int("RB_LEFT", N_LEFT as u64),
    ClConst::int("RB_RIGHT", N_RIGHT as u64),
    ClConst::int("RB_ROOT", H_ROOT as u64),
    ClConst::int("RB_COUNT", H_COUNT as u64),
    ClConst::int("RB_COLOUR", N_COLOUR as u64),
    ClConst::int("RB_PARENT", N_PARENT as u64),
    ClConst::int("RB_LOCK", N_LOCK as u64),
    ClConst::uint("RB_RED", RED as u64),
    ClConst::uint("RB_MAX_DEPTH", MAX_DEPTH as u64),
    ClConst::uint("RB_ROUTE_MAX_LEVELS", device::ROUTE_MAX_LEVELS as u64),
    ClConst::uint("RB_FOUND", FOUND as u64),
    ClConst::uint("RB_ABSENT", ABSENT as u64),
    ClConst::uint("RB_DAMAGED", DAMAGED as u64),
    ClConst::uint("RB_NODE_BYTES", NODE_BYTES as u64),
    ClConst::uint("RB_OP_PENDING", update::OP_PENDING as u64),
    ClConst::uint("RB_OP_NEW", update::OP_NEW as u64),
    ClConst::uint("RB_OP_OLD", update::OP_OLD as u64),
    ClConst::uint("RB_OP_OVERFLOW", update::OP_OVERFLOW as u64),
    ClConst::int("RB_R_PENDING", update::R_PENDING as u64),
    ClConst::int("RB_R_ELIGIBLE", update::R_ELIGIBLE as u64),
    ClConst::int("RB_R_FIRST", update::R_FIRST as u64),
    ClConst::uint("RB_R_NO_FIRST", update::R_NO_FIRST as u64),
    ClConst::int("RB_R_COMMITTED", update::R_COMMITTED as u64),
    ClConst::int("RB_R_CONFLICTS", update::R_CONFLICTS as u64),
    ClConst::int("RB_R_OVERFLOW", update::R_OVERFLOW as u64),
    ClConst::int("RB_R_DAMAGED", update::R_DAMAGED as u64),
    ClConst::int("RB_R_OOM", update::R_OOM as u64),
    ClConst::int("RB_R_UNSORTED", update::R_UNSORTED as u64),
    ClConst::int("RB_R_LISTED", update::R_LISTED as u64),
    ClConst::uint("RB_R_WORDS", update::R_WORDS as u64),
    ClConst::uint("RB_R_SETS", update::R_SETS as u64),
];

/// What an insert did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// The key was new: a node was added.
    New,
    /// The key was there: its value was replaced.
    Updated,
}

/// What a delete did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// The key's node was removed.
    Removed,
    /// The key was not in the tree.
    Missing,
}

/// A red-black tree of `K` keys and `u64` values in an SVM arena.
pub struct RbTree<K: Key> {
    arena: SvmArena,
    header: u32,
    /// Keys in the tree, as the header's count says (every change goes through `&mut self`,
    /// so the host knows it without mapping the arena).
    len: usize,
    /// The device search's staging and result buffers, kept between calls.
    search: Option<device::SearchBuffers>,
    /// How device searches order their queries, and the routed order's scratch.
    search_order: SearchOrder,
    route_scratch: Option<device::RouteScratch>,
    /// The device search's count of damaged walks (one word).
    damage: Option<asym_runtime::SvmBuffer<u32>>,
    /// What the last concurrent update did.
    last_update: UpdateStats,
    /// Nodes deletes on the device took out of the tree, kept for the next inserts
    /// (`spare[0..spare_len]`): in use by the arena's books, owned by the tree.
    spare: Option<asym_runtime::SvmBuffer<u32>>,
    spare_len: usize,
    /// The same for the latency threads' deletes and inserts (host memory).
    host_spare: Vec<u32>,
    /// The device's update buffers, kept between batches.
    update_scratch: Option<device_update::UpdateScratch<K>>,
    /// Cooperative mode's split between the device and the threads.
    coop: threads::CoopPlan,
    _keys: PhantomData<K>,
}

impl<K: Key> std::fmt::Debug for RbTree<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RbTree")
            .field("header", &self.header)
            .finish()
    }
}

impl<K: Key> RbTree<K> {
    /// An empty tree on `rt` with room for about `nodes` nodes (the arena grows between
    /// batches when they need more).
    pub fn new(rt: &Runtime, nodes: usize) -> Result<Self> {
        let bytes = nodes
            .max(1024)
            .checked_mul(NODE_BYTES)
            .and_then(|b| b.checked_add(1 << 20))
            .ok_or_else(|| Error::InvalidArgument(format!("a tree of {nodes} nodes")))?;
        let mut arena = SvmArena::new(rt, bytes)?;
        let header = {
            let mut map = arena.map()?;
            let view = map.view();
            let header = view.malloc(NODE_BYTES, 0)?;
            for i in 0..NODE_WORDS {
                view.word(header, i)
                    .ok_or_else(|| {
                        Error::corrupted(
                            "the red-black tree",
                            "the tree header lies outside the arena",
                        )
                    })?
                    .store(0, std::sync::atomic::Ordering::Relaxed);
            }
            header
        };
        Ok(RbTree {
            arena,
            header,
            len: 0,
            search: None,
            search_order: SearchOrder::Auto,
            route_scratch: None,
            damage: None,
            last_update: UpdateStats::default(),
            update_scratch: None,
            spare: None,
            spare_len: 0,
            host_spare: Vec::new(),
            coop: threads::CoopPlan::default(),
            _keys: PhantomData,
        })
    }

    /// The runtime the tree lives on.
    pub fn runtime(&self) -> &Runtime {
        self.arena.runtime()
    }

    /// Keys in the tree.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tree is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Inserts every `(key, value)`; a key already there gets the value (within one batch,
    /// the value of its last insert). The arena grows first if the batch could outgrow it.
    pub fn insert_batch(&mut self, items: &[(K, u64)]) -> Result<Vec<Inserted>> {
        self.reserve(items.len())?;
        let done: Vec<Inserted> = self.with_nodes(|t| {
            items
                .iter()
                .map(|&(k, v)| t.insert(k.to_ordered(), v))
                .collect()
        })?;
        self.len += done.iter().filter(|d| **d == Inserted::New).count();
        Ok(done)
    }

    /// Deletes every key, reporting for each whether it was there.
    pub fn delete_batch(&mut self, keys: &[K]) -> Result<Vec<Deleted>> {
        let done: Vec<Deleted> =
            self.with_nodes(|t| keys.iter().map(|&k| t.delete(k.to_ordered())).collect())?;
        self.len -= done.iter().filter(|d| **d == Deleted::Removed).count();
        Ok(done)
    }

    /// The value of every key, `None` where it is absent.
    pub fn search_batch(&mut self, keys: &[K]) -> Result<Vec<Option<u64>>> {
        self.with_nodes(|t| keys.iter().map(|&k| t.search(k.to_ordered())).collect())
    }

    /// [`RbTree::search_batch`] with the latency threads of `pool` sharing the keys (each a
    /// contiguous share; searches only read, so they need no locks).
    pub fn search_on_threads(
        &mut self,
        keys: &[K],
        pool: &asym_runtime::LatencyPool,
    ) -> Result<Vec<Option<u64>>> {
        let header = self.header;
        let mut map = self.arena.map()?;
        let view = map.view();
        if keys.len() < INLINE_SEARCHES {
            // A few searches: done here rather than waking the pool.
            let nodes = ops::Nodes::new(view, header)?;
            return keys.iter().map(|&k| nodes.search(k.to_ordered())).collect();
        }
        let share = keys.len().div_ceil(pool.len().max(1)).max(1);
        let parts = pool.broadcast_scoped(|w| -> Result<Vec<Option<u64>>> {
            let start = (w.index * share).min(keys.len());
            let mine = &keys[start..(start + share).min(keys.len())];
            let nodes = ops::Nodes::new(view, header)?;
            mine.iter().map(|&k| nodes.search(k.to_ordered())).collect()
        })?;
        let mut out = Vec::with_capacity(keys.len());
        for part in parts {
            out.extend(part?);
        }
        Ok(out)
    }

    /// For every key, the smallest key in the tree not below it (its successor or itself),
    /// with its value; `None` past the largest.
    pub fn lower_bound_batch(&mut self, keys: &[K]) -> Result<Vec<Option<(K, u64)>>> {
        self.with_nodes(|t| {
            keys.iter()
                .map(|&k| {
                    Ok(t.lower_bound(k.to_ordered())?
                        .map(|(o, v)| (K::from_ordered(o), v)))
                })
                .collect()
        })
    }

    /// Keys in the tree within `lo..=hi` (0 when `hi < lo`).
    pub fn range_count(&mut self, lo: K, hi: K) -> Result<usize> {
        let (lo, hi) = (lo.to_ordered(), hi.to_ordered());
        if hi < lo {
            return Ok(0);
        }
        self.with_nodes(|t| t.range_count(lo, hi))
    }

    /// Every key and value in key order.
    pub fn entries(&mut self) -> Result<Vec<(K, u64)>> {
        self.with_nodes(|t| {
            Ok(t.in_order()?
                .into_iter()
                .map(|(o, v)| (K::from_ordered(o), v))
                .collect())
        })
    }

    /// Checks every invariant (see the module documentation) and the arena's accounting.
    pub fn validate(&mut self) -> Result<TreeReport> {
        let report = self.with_nodes(|t| t.validate())?;
        if report.nodes != self.len {
            return Err(Error::corrupted(
                "the red-black tree",
                format!(
                    "the tree holds {} nodes, its owner counted {}",
                    report.nodes, self.len
                ),
            ));
        }
        let stats = self.arena.stats()?;
        check_arena(&stats, report.nodes, self.spare_len + self.host_spare.len())?;
        Ok(report)
    }

    /// The arena's counters.
    pub fn arena_stats(&mut self) -> Result<ArenaStats> {
        self.arena.stats()
    }

    /// Grows the arena if `more` new nodes might not fit in what is free. The tree's blocks
    /// (its nodes and the header, all of one size) are the arena's only ones, so what is in
    /// use is known without reading the arena.
    pub(crate) fn reserve(&mut self, more: usize) -> Result<()> {
        let capacity = self.arena.capacity_bytes();
        let spare = self.spare_len + self.host_spare.len();
        let free = capacity.saturating_sub((self.len + 1 + spare) * NODE_BYTES);
        let need = more.saturating_mul(NODE_BYTES);
        // A margin of two superblocks for blocks the class's current run has not handed out.
        let margin = 2 * self.arena.layout().superblock_bytes();
        if need + margin > free {
            let grow = (need + margin - free).max(capacity / 2);
            self.arena.grow(grow)?;
        }
        Ok(())
    }

    fn with_nodes<R>(&mut self, f: impl FnOnce(&ops::Nodes<'_>) -> Result<R>) -> Result<R> {
        let header = self.header;
        let mut map = self.arena.map()?;
        let view = map.view();
        let nodes = ops::Nodes::new(view, header)?;
        f(&nodes)
    }
}

/// The arena holds exactly the header, `nodes` nodes and `spare` spare nodes, and its books
/// balance.
fn check_arena(stats: &ArenaStats, nodes: usize, spare: usize) -> Result<()> {
    let want = (nodes as u64 + 1 + spare as u64) * NODE_BYTES as u64;
    if stats.bytes_in_use != want || stats.bad_frees != 0 {
        return Err(Error::corrupted(
            "the red-black tree",
            format!(
            "the arena holds {} bytes in blocks ({} bad frees), the tree {nodes} nodes, {spare} \
             spare ones and a header ({want} bytes): a node leaked or was freed twice",
            stats.bytes_in_use, stats.bad_frees
        ),
        ));
    }
    Ok(())
}
