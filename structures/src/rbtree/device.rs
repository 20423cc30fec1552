//! The tree's device side: batched search, one work-item per query (`kernels/rbtree.cl`), on
//! the nodes where they are. Queries come from the caller's SVM buffer (resident: the
//! answers stay in the caller's buffers too) or from a host slice (staged, answers read
//! back).

use asym_kernels::cl_defines;
use asym_runtime::{Error, Kernel, Result, SvmBuffer};

use super::update::Batch;
use super::{RbTree, ABSENT, FOUND, KERNEL_CONSTANTS, NIL, NODE_BYTES};
use crate::key::Key;

/// Work-items per work-group of the search.
pub(super) const SEARCH_WG: usize = 256;

/// Deepest level a routed search groups its queries by (2^12 subtrees: the top array and a
/// count per subtree fill 32 KiB of local memory).
pub(super) const ROUTE_MAX_LEVELS: u32 = 12;
/// Keys below a routed search's subtrees, about: the level is chosen so a subtree holds this
/// many. Finer subtrees share fewer levels a warp, coarser ones cost the listing more
/// scattered writes; 2^14 was the fastest at 2^22 and 2^26 keys (H200, levels 8 to 12).
const ROUTE_SUBTREE_KEYS_LOG2: u32 = 14;
/// Queries per subtree a routed search wants at least, on average (fewer, and counting the
/// subtrees costs more than grouping saves).
const ROUTE_QUERIES_PER_SUBTREE_LOG2: u32 = 4;
/// Most queries a work-group of the routing kernels takes (each adds its counts to the
/// global ones with one atomic per subtree: the larger the tile, the fewer).
const ROUTE_TILE_MAX: usize = 1 << 14;

/// How a device search orders a batch's queries before walking the tree
/// ([`RbTree::set_search_order`]; the answers land in each query's own slot either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SearchOrder {
    /// [`SearchOrder::Routed`] for batches of at least [`SearchOrder::AUTO_MIN_QUERIES`]
    /// queries into trees of at least [`SearchOrder::AUTO_MIN_KEYS`] keys,
    /// [`SearchOrder::Arrival`] otherwise.
    #[default]
    Auto,
    /// Work-item `i` walks query `i`: the least work, and the right choice for queries
    /// sorted already, but in a tree larger than the device's cache neighbouring
    /// work-items read scattered nodes at nearly every level.
    Arrival,
    /// The queries are grouped first by the subtree they enter a few levels down (a
    /// counting sort on the device: five more launches and 20 bytes of scratch a query, 24
    /// for lower bounds), so a warp walks one subtree and its nodes are read from memory
    /// about once a batch.
    Routed,
}

impl asym_runtime::Named for SearchOrder {
    const KIND: &'static str = "search order";
    const ALL: &'static [SearchOrder] =
        &[SearchOrder::Auto, SearchOrder::Routed, SearchOrder::Arrival];
    fn name(self) -> &'static str {
        match self {
            SearchOrder::Auto => "auto",
            SearchOrder::Routed => "routed",
            SearchOrder::Arrival => "arrival",
        }
    }
}

impl SearchOrder {
    /// [`SearchOrder::Auto`] routes batches of at least this many queries (routing costs
    /// five launches more, about 0.1 ms on the H200: smaller batches lost there) ...
    pub const AUTO_MIN_QUERIES: usize = 1 << 20;
    /// ... into trees of at least this many keys (smaller trees stay in the device's cache,
    /// where arrival order costs little: on the H200 routing tied at 2^20 keys and 2^20
    /// queries and won beyond).
    pub const AUTO_MIN_KEYS: usize = 1 << 20;
}

/// Staging and answer buffers of the host-slice search, kept between calls.
pub(super) struct SearchBuffers {
    keys: SvmBuffer<i32>,
    values: SvmBuffer<u64>,
    status: SvmBuffer<u32>,
    /// The keys lower-bound queries found (ordered form).
    found: SvmBuffer<i32>,
}

/// A routed search's device words, kept by the tree between calls (grown for a longer
/// batch).
pub(super) struct RouteScratch {
    /// The tree's top levels as an implicit array (`rb_route_top`).
    top: SvmBuffer<i32>,
    /// Each query's subtree; then, once placed, the routed search's status answers.
    route: SvmBuffer<u32>,
    /// The queries' keys, subtree by subtree, and each query's slot there.
    order_keys: SvmBuffer<i32>,
    at: SvmBuffer<u32>,
    /// The routed search's value answers, and its keys found for lower bounds (allocated by
    /// the first lower bound).
    values: SvmBuffer<u64>,
    found: Option<SvmBuffer<i32>>,
    /// Queries per subtree (zero between searches: the offsets kernel clears it).
    counts: SvmBuffer<u32>,
    /// Each subtree's next free slot in `order_keys`.
    cursor: SvmBuffer<u32>,
    /// The routing kernels, made once per scratch (their arguments keep the last search's
    /// buffers alive until the next one or the tree's drop).
    top_kernel: Kernel,
    walk_kernel: Kernel,
    offsets_kernel: Kernel,
    place_kernel: Kernel,
    answer_kernel: Kernel,
}

impl RouteScratch {
    fn new<K: Key>(tree: &RbTree<K>, n: usize) -> Result<Self> {
        let rt = tree.arena.runtime();
        let buckets = 1usize << ROUTE_MAX_LEVELS;
        let mut counts = rt.alloc::<u32>(buckets)?;
        counts.write(&vec![0; buckets])?;
        Ok(RouteScratch {
            top_kernel: tree.kernel("rb_route_top")?,
            walk_kernel: tree.kernel("rb_route")?,
            offsets_kernel: tree.kernel("rb_route_offsets")?,
            place_kernel: tree.kernel("rb_route_place")?,
            answer_kernel: tree.kernel("rb_route_answer")?,
            top: rt.alloc::<i32>(buckets)?,
            route: rt.alloc::<u32>(n)?,
            order_keys: rt.alloc::<i32>(n)?,
            at: rt.alloc::<u32>(n)?,
            values: rt.alloc::<u64>(n)?,
            found: None,
            counts,
            cursor: rt.alloc::<u32>(buckets)?,
        })
    }
}

/// Levels a routed search of `queries` into a tree of `keys` groups by: subtrees of about
/// 2^ROUTE_SUBTREE_KEYS_LOG2 keys, at least 2^ROUTE_QUERIES_PER_SUBTREE_LOG2 queries each on
/// average, two local words a subtree within `local_bytes`, 1 to [`ROUTE_MAX_LEVELS`].
fn route_levels(keys: usize, queries: usize, local_bytes: u64) -> u32 {
    let log2 = |x: u64| u64::BITS - 1 - x.max(1).leading_zeros();
    let by_keys = log2(keys as u64).saturating_sub(ROUTE_SUBTREE_KEYS_LOG2);
    let by_queries = log2(queries as u64).saturating_sub(ROUTE_QUERIES_PER_SUBTREE_LOG2);
    let by_local = log2(local_bytes / 8);
    by_keys
        .min(by_queries)
        .min(by_local)
        .clamp(1, ROUTE_MAX_LEVELS)
}

/// What a device search found for one query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// The key is in the tree, with this value.
    Value(u64),
    /// The key is not in the tree.
    Absent,
}

impl<K: Key> RbTree<K> {
    /// Searches every key of `keys` on the device, writing each one's value to `values` and
    /// whether it was found (1) or not (0) to `status`, all three buffers in the tree's
    /// runtime and as long as each other. The answers stay on the device (one word comes back:
    /// how many walks found the tree damaged, an error if any).
    pub fn search_svm(
        &mut self,
        keys: &SvmBuffer<K>,
        values: &mut SvmBuffer<u64>,
        status: &mut SvmBuffer<u32>,
    ) -> Result<()> {
        let n = keys.len();
        if values.len() != n || status.len() != n {
            return Err(Error::InvalidArgument(format!(
                "{n} queries with {} value and {} status slots",
                values.len(),
                status.len()
            )));
        }
        self.launch("rb_search", keys, n, values, status, None)
    }

    /// Fills an empty tree with `items` on the device in one launch: sorted by key on the
    /// host (a key given twice keeps its last value), nodes taken from the arena by one
    /// device launch, then `rb_build` writes every node of the balanced shape at once.
    pub fn build_on_device(&mut self, items: &[(K, u64)]) -> Result<()> {
        if !self.is_empty() {
            return Err(Error::InvalidArgument(
                "build_on_device fills an empty tree; this one has keys".into(),
            ));
        }
        // The batch's sort keeps each key once, with its last value.
        let batch = Batch::inserts(items)?;
        self.build_sorted_on_device(&batch.keys, &batch.values)
    }

    /// [`RbTree::build_on_device`] of keys (ordered form) already strictly increasing.
    pub(super) fn build_sorted_on_device(&mut self, keys: &[i32], values: &[u64]) -> Result<()> {
        let m = keys.len();
        if m == 0 {
            return Ok(());
        }
        let m32 = u32::try_from(m)
            .ok()
            .filter(|&m| m < u32::MAX / 2)
            .ok_or_else(|| Error::too_large("keys of a device build", m, 1u64 << 31))?;
        self.reserve(m)?;
        let handles = self.arena.malloc_on_device(&vec![NODE_BYTES as u32; m])?;
        if let Some(i) = handles.iter().position(|&h| h == NIL) {
            // Give back what was taken before failing.
            let taken: Vec<u32> = handles.iter().copied().filter(|&h| h != NIL).collect();
            self.arena.free_on_device(&taken)?;
            return Err(Error::OutOfMemory(format!(
                "the arena ran out at node {i} of {m} for the tree"
            )));
        }
        let rt = self.arena.runtime().clone();
        let upload = |words: &[u32]| -> Result<SvmBuffer<u32>> {
            let mut b = rt.alloc::<u32>(words.len())?;
            b.write(words)?;
            Ok(b)
        };
        let handle_buf = upload(&handles)?;
        let mut key_buf = rt.alloc::<i32>(m)?;
        key_buf.write(keys)?;
        let mut value_buf = rt.alloc::<u64>(m)?;
        value_buf.write(values)?;
        let mut kernel = self.kernel("rb_build")?;
        self.arena.set_args(&mut kernel)?;
        kernel
            .arg_scalar("header", self.header)?
            .arg_svm("handles", &handle_buf)?
            .arg_svm("keys", &key_buf)?
            .arg_svm("values", &value_buf)?
            .arg_scalar("m", m32)?
            .arg_scalar("h", usize::BITS - 1 - m.leading_zeros())?;
        let wg = SEARCH_WG.min(rt.profile().max_work_group_size).max(1);
        kernel.launch(m.div_ceil(wg) * wg, Some(wg))?.wait()?;
        self.len = m;
        Ok(())
    }

    /// Searches every key of `keys` on the device (the keys uploaded, the answers read
    /// back): `Found::Value` or `Found::Absent` per key.
    pub fn search_on_device(&mut self, keys: &[K]) -> Result<Vec<Found>> {
        self.staged(keys, "rb_search", |_, value, status| match status {
            FOUND => Ok(Found::Value(value)),
            ABSENT => Ok(Found::Absent),
            _ => Err(damaged()),
        })
    }

    /// For every key of `keys`, on the device: the smallest key in the tree not below it,
    /// with its value; `None` past the largest.
    pub fn lower_bound_on_device(&mut self, keys: &[K]) -> Result<Vec<Option<(K, u64)>>> {
        self.staged(
            keys,
            "rb_lower_bound",
            |found, value, status| match status {
                FOUND => Ok(Some((K::from_ordered(found), value))),
                ABSENT => Ok(None),
                _ => Err(damaged()),
            },
        )
    }

    /// Kernel `name` of `kernels/rbtree.cl`, built (once per runtime) with the tree's
    /// constants, the key map and the arena's layout (the update kernels allocate nodes).
    pub(super) fn kernel(&self, name: &str) -> Result<Kernel> {
        let options = format!(
            "{} -DARENA_NO_KERNELS=1 {} -DKEY_MAP={}",
            self.arena.layout().cl_defines(),
            cl_defines(KERNEL_CONSTANTS),
            K::KEY_MAP
        );
        let rt = self.arena.runtime();
        let program = rt.program_with(&asym_kernels::RBTREE, &options)?;
        Kernel::from_program(rt, &program, name)
    }

    /// For every `(lo, hi)` range, on the device: how many keys of the tree lie within
    /// `lo..=hi` (0 when `hi < lo`), one work-item per range walking from the range's lower
    /// bound by successor links (a range costs its length plus the tree's height).
    pub fn range_count_on_device(&mut self, ranges: &[(K, K)]) -> Result<Vec<usize>> {
        let n = ranges.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let n32 =
            u32::try_from(n).map_err(|_| Error::too_large("ranges in one call", n, u32::MAX))?;
        let rt = self.arena.runtime().clone();
        let mut los = rt.alloc::<K>(n)?;
        los.write_range(0, &ranges.iter().map(|r| r.0).collect::<Vec<K>>())?;
        let mut his = rt.alloc::<K>(n)?;
        his.write_range(0, &ranges.iter().map(|r| r.1).collect::<Vec<K>>())?;
        let mut counts = rt.alloc::<u32>(n)?;
        let mut damage = rt.alloc::<u32>(1)?;
        damage.write(&[0])?;
        let heap_words = u32::try_from(self.arena.heap_words())
            .map_err(|_| Error::InvalidArgument("an arena past 2^32 words".into()))?;
        // Three steps per node bound any real walk (each edge is crossed at most twice).
        let steps = u32::try_from(3 * self.len + 2 * super::MAX_DEPTH as usize).unwrap_or(u32::MAX);
        let mut kernel = self.kernel("rb_range_count")?;
        self.arena.set_args(&mut kernel)?;
        kernel
            .arg_scalar("header", self.header)?
            .arg_scalar("heap_words", heap_words)?
            .arg_svm("los", &los)?
            .arg_svm("his", &his)?
            .arg_scalar("n", n32)?
            .arg_svm("counts", &counts)?
            .arg_svm("damaged", &damage)?
            .arg_scalar("steps", steps)?;
        let wg = SEARCH_WG.min(rt.profile().max_work_group_size).max(1);
        kernel.launch(n.div_ceil(wg) * wg, Some(wg))?.wait()?;
        drop(kernel);
        if damage.read()?[0] != 0 {
            return Err(damaged());
        }
        Ok(counts
            .read_range(0, n)?
            .into_iter()
            .map(|c| c as usize)
            .collect())
    }

    /// Uploads `keys`, runs `kernel` over them and maps each (found key, value, status).
    fn staged<R>(
        &mut self,
        keys: &[K],
        kernel: &str,
        answer: impl Fn(i32, u64, u32) -> Result<R>,
    ) -> Result<Vec<R>> {
        let n = keys.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut bufs = match self.search.take() {
            Some(b) if b.keys.len() >= n => b,
            _ => {
                let rt = self.arena.runtime();
                SearchBuffers {
                    keys: rt.alloc::<i32>(n)?,
                    values: rt.alloc::<u64>(n)?,
                    status: rt.alloc::<u32>(n)?,
                    found: rt.alloc::<i32>(n)?,
                }
            }
        };
        let result = (|| {
            bufs.keys.write_range(0, keys)?;
            let lower_bound = kernel == "rb_lower_bound";
            let found = lower_bound.then_some(&bufs.found);
            self.launch(kernel, &bufs.keys, n, &bufs.values, &bufs.status, found)?;
            let status = bufs.status.read_range(0, n)?;
            let values = bufs.values.read_range(0, n)?;
            let found = if lower_bound {
                bufs.found.read_range(0, n)?
            } else {
                vec![0; n]
            };
            status
                .iter()
                .zip(values)
                .zip(found)
                .map(|((&s, v), f)| answer(f, v, s))
                .collect()
        })();
        self.search = Some(bufs);
        result
    }

    /// How device searches order their queries from now on (default [`SearchOrder::Auto`]).
    pub fn set_search_order(&mut self, order: SearchOrder) {
        self.search_order = order;
    }

    /// How device searches order their queries.
    pub fn search_order(&self) -> SearchOrder {
        self.search_order
    }

    /// The order a device search of `queries` queries takes now: [`SearchOrder::Routed`] or
    /// [`SearchOrder::Arrival`] ([`SearchOrder::Auto`] resolved by the batch and the tree).
    pub fn search_order_for(&self, queries: usize) -> SearchOrder {
        let routed = match self.search_order {
            SearchOrder::Arrival => false,
            SearchOrder::Routed => true,
            SearchOrder::Auto => {
                queries >= SearchOrder::AUTO_MIN_QUERIES && self.len >= SearchOrder::AUTO_MIN_KEYS
            }
        };
        if routed {
            SearchOrder::Routed
        } else {
            SearchOrder::Arrival
        }
    }

    /// Launches `kernel` (`rb_search` or `rb_lower_bound`) over the first `n` keys of
    /// `keys` (routed first where [`RbTree::search_order`] says) and waits for it.
    fn launch<T: asym_runtime::SvmElement>(
        &mut self,
        kernel_name: &str,
        keys: &SvmBuffer<T>,
        n: usize,
        values: &SvmBuffer<u64>,
        status: &SvmBuffer<u32>,
        found: Option<&SvmBuffer<i32>>,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        let n32 =
            u32::try_from(n).map_err(|_| Error::too_large("queries in one call", n, u32::MAX))?;
        let rt = self.arena.runtime().clone();
        let mut kernel = self.kernel(kernel_name)?;
        // One word counts damaged walks, so the answers need not come back to find out.
        let mut damage = match self.damage.take() {
            Some(d) => d,
            None => rt.alloc::<u32>(1)?,
        };
        damage.write(&[0])?;
        // The routing launches run before the search on the in-order queue and the answers'
        // gather after it; all are waited for together (dropping one would wait for it alone).
        let (mut scratch, mut launches) = if self.search_order_for(n) == SearchOrder::Routed {
            self.route(keys, n, found.is_some())?
        } else {
            (None, Vec::new())
        };
        self.arena.set_args(&mut kernel)?;
        kernel
            .arg_scalar("header", self.header)?
            .arg_scalar("n", n32)?
            .arg_svm("damaged", &damage)?;
        // Routed, the search reads the keys in routed order and answers in that order into
        // the scratch; otherwise straight from and into the caller's buffers.
        match &scratch {
            Some(r) => {
                kernel
                    .arg_svm("keys", &r.order_keys)?
                    .arg_svm("values", &r.values)?
                    .arg_svm("status", &r.route)?;
                if let (Some(_), Some(routed)) = (found, &r.found) {
                    kernel.arg_svm("found_keys", routed)?;
                }
            }
            None => {
                kernel
                    .arg_svm("keys", keys)?
                    .arg_svm("values", values)?
                    .arg_svm("status", status)?;
                if let Some(found) = found {
                    kernel.arg_svm("found_keys", found)?;
                }
            }
        }
        let wg = SEARCH_WG.min(rt.profile().max_work_group_size).max(1);
        let mut done = kernel
            .launch_unflushed(n.div_ceil(wg) * wg, Some(wg))
            .map(|l| launches.push(l));
        if let (Some(r), true) = (scratch.as_mut(), done.is_ok()) {
            done = self
                .route_answers(r, n, values, status, found)
                .map(|l| launches.push(l));
        }
        for l in launches {
            let waited = l.wait();
            done = done.and(waited);
        }
        drop(kernel);
        // A failed routing launch may leave the counts dirty: the scratch is dropped then.
        if done.is_ok() {
            self.route_scratch = scratch;
        }
        let damaged_walks = damage.read();
        self.damage = Some(damage);
        done?;
        if damaged_walks?[0] != 0 {
            return Err(damaged());
        }
        Ok(())
    }

    /// Enqueues the routing of the first `n` keys (`rb_route_top`, `rb_route`,
    /// `rb_route_offsets`, `rb_route_place`) without waiting: the scratch whose `order_keys`
    /// lists the queries' keys subtree by subtree (and `at` each one's slot there) once the
    /// launches have run, and the launches. No scratch (an arrival-order search) where the
    /// device has no memory for it.
    fn route<T: asym_runtime::SvmElement>(
        &mut self,
        keys: &SvmBuffer<T>,
        n: usize,
        lower_bound: bool,
    ) -> Result<(Option<RouteScratch>, Vec<asym_runtime::Launch>)> {
        let rt = self.arena.runtime().clone();
        let scratch = match self.route_scratch.take() {
            Some(r) if r.route.len() >= n => Ok(r),
            old => {
                drop(old);
                RouteScratch::new(self, n)
            }
        };
        let scratch = scratch.and_then(|mut r| {
            if lower_bound && r.found.is_none() {
                r.found = Some(rt.alloc::<i32>(r.route.len())?);
            }
            Ok(r)
        });
        let mut scratch = match scratch {
            Ok(r) => r,
            Err(Error::OutOfMemory(_)) => return Ok((None, Vec::new())),
            Err(e) => return Err(e),
        };
        let n32 = n as u32; // checked by the caller
        let levels = route_levels(self.len, n, rt.profile().local_mem_bytes);
        let buckets = 1usize << levels;
        let wg = SEARCH_WG.min(rt.profile().max_work_group_size).max(1);
        // Tiles of at most ROUTE_TILE_MAX queries, at least 256 of them where the batch allows.
        let tile = (n.div_ceil(256).div_ceil(wg) * wg).clamp(wg, ROUTE_TILE_MAX);
        let groups = n.div_ceil(tile);
        let tile32 = tile as u32;
        let r = &mut scratch;
        let top = &mut r.top_kernel;
        self.arena.set_args(top)?;
        top.arg_scalar("header", self.header)?
            .arg_scalar("levels", levels)?
            .arg_svm("top", &r.top)?;
        let walk = &mut r.walk_kernel;
        walk.arg_svm("keys", keys)?
            .arg_scalar("n", n32)?
            .arg_scalar("levels", levels)?
            .arg_scalar("tile", tile32)?
            .arg_svm("top", &r.top)?
            .arg_svm("route", &r.route)?
            .arg_svm("counts", &r.counts)?
            .arg_local::<i32>("ltop", buckets)?
            .arg_local::<u32>("hist", buckets)?;
        r.offsets_kernel
            .arg_svm("counts", &r.counts)?
            .arg_svm("cursor", &r.cursor)?
            .arg_scalar("buckets", buckets as u32)?
            .arg_local::<u32>("scan", wg)?;
        r.place_kernel
            .arg_svm("keys", keys)?
            .arg_svm("route", &r.route)?
            .arg_scalar("n", n32)?
            .arg_scalar("levels", levels)?
            .arg_scalar("tile", tile32)?
            .arg_svm("cursor", &r.cursor)?
            .arg_svm("order_keys", &r.order_keys)?
            .arg_svm("at", &r.at)?
            .arg_local::<u32>("base", buckets)?
            .arg_local::<u32>("rank", buckets)?;
        let mut launches = Vec::with_capacity(5);
        launches.push(
            r.top_kernel
                .launch_unflushed(buckets.div_ceil(wg) * wg, Some(wg))?,
        );
        launches.push(r.walk_kernel.launch_unflushed(groups * wg, Some(wg))?);
        launches.push(r.offsets_kernel.launch_unflushed(wg, Some(wg))?);
        launches.push(r.place_kernel.launch_unflushed(groups * wg, Some(wg))?);
        Ok((Some(scratch), launches))
    }

    /// Enqueues `rb_route_answer`: each query's answer gathered from the routed search's.
    fn route_answers(
        &self,
        r: &mut RouteScratch,
        n: usize,
        values: &SvmBuffer<u64>,
        status: &SvmBuffer<u32>,
        found: Option<&SvmBuffer<i32>>,
    ) -> Result<asym_runtime::Launch> {
        let answer = &mut r.answer_kernel;
        answer
            .arg_svm("at", &r.at)?
            .arg_scalar("n", n as u32)?
            .arg_svm("routed_values", &r.values)?
            .arg_svm("routed_status", &r.route)?
            .arg_svm("values", values)?
            .arg_svm("status", status)?;
        match (found, &r.found) {
            (Some(found), Some(routed)) => answer
                .arg_svm("routed_found", routed)?
                .arg_svm("found_keys", found)?
                .arg_scalar("lower_bound", 1u32)?,
            // Not read without lower bounds; any buffers of the runtime will do.
            _ => answer
                .arg_svm("routed_found", &r.at)?
                .arg_svm("found_keys", &r.at)?
                .arg_scalar("lower_bound", 0u32)?,
        };
        let rt = self.arena.runtime();
        let wg = SEARCH_WG.min(rt.profile().max_work_group_size).max(1);
        answer.launch(n.div_ceil(wg) * wg, Some(wg))
    }
}

fn damaged() -> Error {
    Error::corrupted(
        "the red-black tree",
        "a device search walked further than any red-black tree is deep",
    )
}
