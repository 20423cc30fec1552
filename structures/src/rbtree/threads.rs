//! The latency threads' side of a batch's rounds (see [`super::update`]): the same locate
//! and the same transactions ([`super::tx`]) as the device's kernels, each thread taking a
//! contiguous share of the batch (neighbouring keys, so threads mostly meet in different
//! subtrees). Phases are separated by the pool's join, which orders one phase's writes
//! before the next phase's reads; within the apply phase the node locks do.
//!
//! Cooperative mode on the fine transport runs both sides at once on one tree: the device's
//! kernels over the first share of the batch, the threads over the rest, the locks and
//! versions in SVM shared by both (SVM atomics). On the coarse transport the host cannot
//! touch the arena while a kernel uses it, so a batch runs on one side.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use asym_runtime::{Error, LatencyPool, Result, Side, Transport};

use super::device_update::DeviceRounds;
use super::tx::{Outcome, Tx};
use super::update::{atomic_words, fresh_counts, merge, plain, run_rounds, Batch, Counts, Rounds};
use super::update::{UpdateStats, OP_NEW, OP_OLD, OP_OVERFLOW, OP_PENDING};
use super::update::{R_COMMITTED, R_CONFLICTS, R_DAMAGED, R_ELIGIBLE, R_FIRST, R_OOM};
use super::update::{R_OVERFLOW, R_PENDING};
use super::{RbTree, H_COUNT, H_ROOT, MAX_DEPTH, NIL, NODE_BYTES, NODE_WORDS, RED};
use super::{N_COLOUR, N_KEY, N_LEFT, N_LOCK, N_PARENT, N_RIGHT, N_VALUE_HI, N_VALUE_LO};
use crate::arena::ArenaView;
use crate::key::Key;

/// The threads' side: per-operation words for the whole batch (the threads touch only
/// their range's).
pub(super) struct ThreadRounds<'a> {
    view: ArenaView<'a>,
    header: u32,
    pool: &'a LatencyPool,
    batch: &'a Batch,
    ops: Range<usize>,
    state: Vec<AtomicU32>,
    /// Per operation: the gap's or key's node, its version, side | eligible << 1.
    place: Vec<AtomicU32>,
    handles: Vec<AtomicU32>,
    /// Spare nodes, one stack per thread: a thread's deletes push onto its own and its
    /// inserts pop from it before the arena (whose malloc and free update shared counters
    /// that sixteen threads would pass from core to core on every node).
    spare: Vec<Mutex<Vec<u32>>>,
    pub(super) commits: u64,
}

/// The first index of `keys` whose key is above `bound` (`above`) or not below it.
fn first_index(keys: &[i32], bound: i32, above: bool) -> usize {
    keys.partition_point(|&k| if above { k <= bound } else { k < bound })
}

impl<'a> ThreadRounds<'a> {
    pub(super) fn new(
        view: ArenaView<'a>,
        header: u32,
        pool: &'a LatencyPool,
        batch: &'a Batch,
        ops: Range<usize>,
        mut spare: Vec<u32>,
    ) -> Self {
        let n = batch.len();
        let threads = pool.len().max(1);
        let per = spare.len().div_ceil(threads);
        let stacks = (0..threads)
            .map(|t| {
                let from = spare.len().min((threads - 1 - t) * per);
                Mutex::new(spare.split_off(from))
            })
            .collect();
        ThreadRounds {
            view,
            header,
            pool,
            batch,
            ops,
            state: atomic_words(n),
            place: atomic_words(3 * n),
            handles: atomic_words(n),
            spare: stacks,
            commits: 0,
        }
    }

    fn stack(&self, thread: usize) -> std::sync::MutexGuard<'_, Vec<u32>> {
        let m = &self.spare[thread % self.spare.len()];
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every thread's spare nodes, for the tree to keep.
    pub(super) fn take_spare(&mut self) -> Vec<u32> {
        let mut all = Vec::new();
        for m in &mut self.spare {
            all.append(m.get_mut().unwrap_or_else(|e| e.into_inner()));
        }
        all
    }

    fn word(&self, node: u32, field: usize) -> Option<&'a AtomicU32> {
        if node == NIL {
            return None;
        }
        self.view.words(node, NODE_WORDS).map(|w| &w[field])
    }

    /// Starts operation `i`'s walk at the root.
    fn walk(&self, i: usize) -> Option<Walk> {
        let root = self.word(self.header, H_ROOT)?.load(Relaxed);
        Some(Walk {
            i,
            key: self.batch.keys[i],
            x: root,
            parent: NIL,
            side: 0,
            lo: None,
            hi: None,
            depth: 0,
        })
    }

    /// One level of operation `w.i`'s walk (rb_locate's, line for line): true when the walk
    /// ended (its outcome recorded).
    fn step(&self, w: &mut Walk, c: &mut Counts) -> bool {
        let b = self.batch;
        let i = w.i;
        w.depth += 1;
        if w.depth > MAX_DEPTH {
            c[R_DAMAGED] += 1;
            return true;
        }
        if w.x == NIL {
            if b.deleting {
                self.state[i].store(OP_OLD, Relaxed);
                return true;
            }
            let node = if w.parent == NIL {
                self.header
            } else {
                w.parent
            };
            let Some(lock) = self.word(node, N_LOCK) else {
                c[R_DAMAGED] += 1;
                return true;
            };
            let first = w.lo.map_or(0, |l| first_index(&b.keys, l, true));
            let end = w.hi.map_or(b.len(), |h| first_index(&b.keys, h, false));
            let mut pick = first + end.saturating_sub(first + 1) / 2;
            while pick < i && self.state[pick].load(Relaxed) == OP_OVERFLOW {
                pick += 1;
            }
            let eligible = end > first && i == pick;
            self.place(
                i,
                node,
                lock.load(Relaxed),
                w.side | (u32::from(eligible) << 1),
            );
            count_pending(c, i, eligible);
            return true;
        }
        let Some(words) = self.view.words(w.x, NODE_WORDS) else {
            c[R_DAMAGED] += 1;
            return true;
        };
        let k = words[N_KEY].load(Relaxed) as i32;
        if k == w.key {
            if b.deleting {
                self.place(i, w.x, words[N_LOCK].load(Relaxed), 2);
                count_pending(c, i, true);
            } else {
                let v = b.values[i];
                words[N_VALUE_LO].store(v as u32, Relaxed);
                words[N_VALUE_HI].store((v >> 32) as u32, Relaxed);
                self.state[i].store(OP_OLD, Relaxed);
            }
            return true;
        }
        w.parent = w.x;
        if w.key < k {
            w.hi = Some(k);
            w.side = 0;
            w.x = words[N_LEFT].load(Relaxed);
        } else {
            w.lo = Some(k);
            w.side = 1;
            w.x = words[N_RIGHT].load(Relaxed);
        }
        false
    }

    /// Walks the pending operations of `range`, [`WALKS`] at a time interleaved level by
    /// level: the walks' loads do not depend on each other, so their cache misses overlap
    /// instead of queueing one behind the other.
    fn locate_range(&self, range: Range<usize>, c: &mut Counts) {
        let mut next = range.start;
        let mut live: [Option<Walk>; WALKS] = [None; WALKS];
        loop {
            let mut any = false;
            for slot in live.iter_mut() {
                if slot.is_none() {
                    while next < range.end {
                        let i = next;
                        next += 1;
                        if self.state[i].load(Relaxed) == OP_PENDING {
                            *slot = self.walk(i);
                            if slot.is_none() {
                                c[R_DAMAGED] += 1;
                            }
                            break;
                        }
                    }
                }
                if let Some(w) = slot.as_mut() {
                    any = true;
                    if self.step(w, c) {
                        *slot = None;
                    }
                }
            }
            if !any && next >= range.end {
                return;
            }
        }
    }

    fn place(&self, i: usize, node: u32, ver: u32, flags: u32) {
        self.place[3 * i].store(node, Relaxed);
        self.place[3 * i + 1].store(ver, Relaxed);
        self.place[3 * i + 2].store(flags, Relaxed);
    }

    /// Moves the header's count by one thread's commits of an apply phase, once a phase (a
    /// fetch-and-add per commit from every thread took turns on one line; nothing reads the
    /// count during the phase).
    fn add_to_count(&self, commits: u32) -> Result<()> {
        if commits == 0 {
            return Ok(());
        }
        let count = self.word(self.header, H_COUNT).ok_or_else(|| {
            Error::corrupted(
                "the red-black tree",
                "the tree header lies outside the arena",
            )
        })?;
        if self.batch.deleting {
            count.fetch_sub(commits, Relaxed);
        } else {
            count.fetch_add(commits, Relaxed);
        }
        Ok(())
    }

    /// Operation `i`'s transaction (rb_apply's, line for line, but for the header's count:
    /// [`ThreadRounds::add_to_count`], once a phase as rb_apply moves it once a work-group).
    fn apply_one(&self, i: usize, hint: usize, c: &mut Counts, tx: &mut Tx<'a>) -> Result<()> {
        let flags = self.place[3 * i + 2].load(Relaxed);
        let node = self.place[3 * i].load(Relaxed);
        tx.reset();
        let mut z = node;
        if self.batch.deleting {
            tx.delete(z);
        } else {
            z = self.handles[i].load(Relaxed);
            if z == NIL {
                let spare = self.stack(hint).pop();
                z = match spare.map_or_else(|| self.view.malloc(NODE_BYTES, hint), Ok) {
                    Ok(z) => z,
                    Err(Error::OutOfMemory(_)) => {
                        c[R_OOM] += 1;
                        return Ok(());
                    }
                    Err(e) => return Err(e),
                };
                self.handles[i].store(z, Relaxed);
            }
            let Some(words) = self.view.words(z, NODE_WORDS) else {
                c[R_DAMAGED] += 1;
                return Ok(());
            };
            let v = self.batch.values[i];
            let parent = if node == self.header { NIL } else { node };
            let fresh = [
                (N_KEY, self.batch.keys[i] as u32),
                (N_VALUE_LO, v as u32),
                (N_VALUE_HI, (v >> 32) as u32),
                (N_COLOUR, RED),
                (N_LEFT, NIL),
                (N_RIGHT, NIL),
                (N_PARENT, parent),
                (N_LOCK, 0),
            ];
            for (field, x) in fresh {
                words[field].store(x, Relaxed);
            }
            let link = if flags & 1 != 0 { N_RIGHT } else { N_LEFT };
            tx.insert(node, link, z);
        }
        match tx.finish() {
            Outcome::Committed => {
                self.state[i].store(OP_NEW, Relaxed);
                c[R_COMMITTED] += 1;
                if self.batch.deleting {
                    self.stack(hint).push(z);
                }
            }
            Outcome::Conflict => c[R_CONFLICTS] += 1,
            Outcome::Overflow => {
                self.state[i].store(OP_OVERFLOW, Relaxed);
                c[R_OVERFLOW] += 1;
            }
            Outcome::Damaged => c[R_DAMAGED] += 1,
        }
        Ok(())
    }
}

/// Walks a thread keeps in flight in the locate pass.
const WALKS: usize = 8;

/// One operation's walk from the root to its key's node or gap.
#[derive(Clone, Copy)]
struct Walk {
    i: usize,
    key: i32,
    x: u32,
    parent: u32,
    side: u32,
    /// The last keys the walk turned right and left at: the gap's bounds.
    lo: Option<i32>,
    hi: Option<i32>,
    depth: u32,
}

fn count_pending(c: &mut Counts, i: usize, eligible: bool) {
    c[R_PENDING] += 1;
    if eligible {
        c[R_ELIGIBLE] += 1;
        c[R_FIRST] = c[R_FIRST].min(i as u32);
    }
}

impl Rounds for ThreadRounds<'_> {
    fn side(&self) -> Side {
        Side::Host
    }

    fn locate(&mut self) -> Result<Counts> {
        let ops = self.ops.clone();
        let share = ops.len().div_ceil(self.pool.len().max(1)).max(1);
        let parts = self.pool.broadcast_scoped(|w| {
            let mut c = fresh_counts();
            let start = (ops.start + w.index * share).min(ops.end);
            self.locate_range(start..(start + share).min(ops.end), &mut c);
            c
        })?;
        let mut total = fresh_counts();
        for p in parts {
            merge(&mut total, &p);
        }
        Ok(total)
    }

    fn apply(&mut self, only: Option<u32>) -> Result<Counts> {
        let ops = self.ops.clone();
        let share = ops.len().div_ceil(self.pool.len().max(1)).max(1);
        let this = &*self;
        let parts = self.pool.broadcast_scoped(|w| -> Result<Counts> {
            let mut c = fresh_counts();
            let mut tx = Tx::new(this.view, this.header);
            let start = (ops.start + w.index * share).min(ops.end);
            let mut applied = Ok(());
            for i in start..(start + share).min(ops.end) {
                let pending = this.state[i].load(Relaxed) == OP_PENDING;
                let eligible = this.place[3 * i + 2].load(Relaxed) & 2 != 0;
                if pending && eligible && only.is_none_or(|o| o as usize == i) {
                    applied = this.apply_one(i, w.index, &mut c, &mut tx);
                    if applied.is_err() {
                        break;
                    }
                }
            }
            this.add_to_count(c[R_COMMITTED])?;
            applied.map(|()| c)
        })?;
        let mut c = fresh_counts();
        for p in parts {
            merge(&mut c, &p?);
        }
        self.commits += u64::from(c[R_COMMITTED]);
        Ok(c)
    }
}

impl ThreadRounds<'_> {
    /// Every operation's state and node handle (inserts: the node it took, if any).
    fn finish(&mut self) -> Result<(Vec<u32>, Vec<u32>)> {
        Ok((plain(&self.state), plain(&self.handles)))
    }
}

/// Both sides in one round: the device's launch in flight while the threads run theirs.
struct BothRounds<'a, K: Key> {
    device: DeviceRounds<K>,
    threads: ThreadRounds<'a>,
    /// Seconds each side spent in its phases (device: launch to completion).
    device_s: f64,
    threads_s: f64,
}

impl<K: Key> BothRounds<'_, K> {
    fn phase(
        &mut self,
        launch: impl FnOnce(&mut DeviceRounds<K>) -> Result<asym_runtime::Launch>,
        host: impl FnOnce(&mut ThreadRounds<'_>) -> Result<Counts>,
    ) -> Result<Counts> {
        self.device.reset()?;
        let t0 = Instant::now();
        let running = launch(&mut self.device)?;
        let mine = host(&mut self.threads);
        self.threads_s += t0.elapsed().as_secs_f64();
        running.wait()?;
        self.device_s += t0.elapsed().as_secs_f64();
        let mut c = mine?;
        merge(&mut c, &self.device.counts()?);
        Ok(c)
    }
}

impl<K: Key> Rounds for BothRounds<'_, K> {
    fn side(&self) -> Side {
        Side::Device
    }

    fn locate(&mut self) -> Result<Counts> {
        self.phase(|d| d.launch_locate(), |t| t.locate())
    }

    fn apply(&mut self, only: Option<u32>) -> Result<Counts> {
        // A lone operation runs on the side that holds it; the other side gets an index no
        // operation has (u32::MAX itself means "all" to rb_apply).
        let nobody = Some(u32::MAX - 1);
        let (d_only, t_only) = match only {
            None => (None, None),
            Some(o) if self.device.ops().contains(&(o as usize)) => (only, nobody),
            Some(_) => (nobody, only),
        };
        self.phase(|d| d.launch_apply(d_only), |t| t.apply(t_only))
    }
}

impl<K: Key> RbTree<K> {
    /// Runs a batch's rounds on the latency threads of `pool`, on the mapped tree.
    pub(super) fn thread_rounds(
        &mut self,
        batch: &Batch,
        pool: &LatencyPool,
        stats: &mut UpdateStats,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        let header = self.header;
        let t = Instant::now();
        let spare = std::mem::take(&mut self.host_spare);
        let mut map = match self.arena.map() {
            Ok(m) => m,
            Err(e) => {
                self.host_spare = spare;
                return Err(e);
            }
        };
        let view = map.view();
        let mut rounds = ThreadRounds::new(view, header, pool, batch, 0..batch.len(), spare);
        stats.setup_ms = t.elapsed().as_secs_f64() * 1e3;
        let ran = run_rounds(&mut rounds, stats, batch.len());
        self.host_spare = rounds.take_spare();
        ran?;
        stats.thread_commits = rounds.commits;
        let t = Instant::now();
        let out = rounds.finish();
        drop(map);
        stats.finish_ms = t.elapsed().as_secs_f64() * 1e3;
        out
    }

    /// Fills an empty tree with strictly increasing keys (ordered form) on the latency
    /// threads, in rb_build's midpoint shape: nodes taken from the arena, then each thread
    /// writes its share of them whole (every node's place follows from its index alone).
    pub(super) fn build_sorted_on_threads(
        &mut self,
        keys: &[i32],
        values: &[u64],
        pool: &LatencyPool,
    ) -> Result<()> {
        let m = keys.len();
        if m == 0 {
            return Ok(());
        }
        self.reserve(m)?;
        let header = self.header;
        let mut map = self.arena.map()?;
        let view = map.view();
        let share = m.div_ceil(pool.len().max(1));
        let parts = pool.broadcast_scoped(|w| -> Result<Vec<u32>> {
            let start = (w.index * share).min(m);
            (start..(start + share).min(m))
                .map(|_| view.malloc(NODE_BYTES, w.index))
                .collect()
        })?;
        let mut handles = Vec::with_capacity(m);
        for p in parts {
            handles.extend(p?);
        }
        let h = usize::BITS - 1 - m.leading_zeros();
        let handles = &handles;
        let written = pool.broadcast_scoped(|w| -> Result<()> {
            let start = (w.index * share).min(m);
            for i in start..(start + share).min(m) {
                let (mut lo, mut hi, mut parent, mut depth) = (0usize, m, NIL, 0u32);
                loop {
                    let mid = lo + (hi - lo) / 2;
                    if i == mid {
                        break;
                    }
                    parent = handles[mid];
                    if i < mid {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                    depth += 1;
                }
                let words = view.words(handles[i], NODE_WORDS).ok_or_else(|| {
                    Error::corrupted(
                        "the red-black tree",
                        "a node the arena gave lies outside it",
                    )
                })?;
                let v = values[i];
                let fields = [
                    (N_KEY, keys[i] as u32),
                    (N_VALUE_LO, v as u32),
                    (N_VALUE_HI, (v >> 32) as u32),
                    (N_COLOUR, if depth == h && depth > 0 { RED } else { 0 }),
                    (
                        N_LEFT,
                        if lo < i {
                            handles[lo + (i - lo) / 2]
                        } else {
                            NIL
                        },
                    ),
                    (
                        N_RIGHT,
                        if i + 1 < hi {
                            handles[i + 1 + (hi - i - 1) / 2]
                        } else {
                            NIL
                        },
                    ),
                    (N_PARENT, parent),
                    (N_LOCK, 0),
                ];
                for (f, x) in fields {
                    words[f].store(x, Relaxed);
                }
            }
            Ok(())
        })?;
        for r in written {
            r?;
        }
        let hw = |i| {
            view.word(header, i).ok_or_else(|| {
                Error::corrupted(
                    "the red-black tree",
                    "the tree header lies outside the arena",
                )
            })
        };
        hw(H_ROOT)?.store(handles[m / 2], Relaxed);
        hw(H_COUNT)?.store(m as u32, Relaxed);
        drop(map);
        self.len = m;
        Ok(())
    }

    /// Runs a batch's rounds on both sides at once (fine transport): the device takes the
    /// first share of the batch's keys, the threads the rest; the share follows the two
    /// sides' measured rates from batch to batch. On the coarse transport the whole batch
    /// runs on the side whose last run was faster per operation (the device first, then the
    /// threads once, then the faster).
    pub(super) fn cooperative_rounds(
        &mut self,
        batch: &Batch,
        pool: &LatencyPool,
        stats: &mut UpdateStats,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        let n = batch.len();
        if self.runtime().transport() != Transport::Fine {
            let t0 = Instant::now();
            // The device first; after its first batch the threads get one, then the faster.
            let threads_faster = (self.coop.device_rate > 0.0 && self.coop.threads_rate == 0.0)
                || self.coop.threads_rate > self.coop.device_rate;
            let out = if threads_faster {
                self.thread_rounds(batch, pool, stats)
            } else {
                self.device_rounds(batch, stats)
            };
            let rate = n as f64 / t0.elapsed().as_secs_f64().max(1e-9);
            if threads_faster {
                self.coop.threads_rate = rate;
            } else {
                self.coop.device_rate = rate;
            }
            return out;
        }
        let split = ((n as f64 * self.coop.device_share).round() as usize).min(n);
        let t = Instant::now();
        let (keys, values, mut state) = self.slice_buffers(batch)?;
        let mut device =
            DeviceRounds::new(self, n, batch.deleting, &keys, &values, &state, 0..split)?;
        // The threads work on the tree beside the device's launches: the first pass first.
        device.wait_first_pass()?;
        stats.setup_ms = t.elapsed().as_secs_f64() * 1e3;
        let header = self.header;
        let spare = std::mem::take(&mut self.host_spare);
        let (ran, mut device, device_s, threads_s, thread_out) = {
            let view = match self.arena.view() {
                Ok(v) => v,
                Err(e) => {
                    self.host_spare = spare;
                    return Err(e);
                }
            };
            let threads = ThreadRounds::new(view, header, pool, batch, split..n, spare);
            let mut both = BothRounds {
                device,
                threads,
                device_s: 0.0,
                threads_s: 0.0,
            };
            let ran = run_rounds(&mut both, stats, n);
            self.host_spare = both.threads.take_spare();
            stats.thread_commits = both.threads.commits;
            let thread_out = both.threads.finish();
            (ran, both.device, both.device_s, both.threads_s, thread_out)
        };
        stats.device_commits = device.commits;
        let t = Instant::now();
        let out = ran.and_then(|()| {
            let (ts, th) = thread_out?;
            let mut states = state.read_range(0, n)?;
            let mut handles = if batch.deleting {
                vec![NIL; n]
            } else {
                device.handles(n)?
            };
            states[split..n].copy_from_slice(&ts[split..n]);
            handles[split..n].copy_from_slice(&th[split..n]);
            Ok((states, handles))
        });
        stats.finish_ms = t.elapsed().as_secs_f64() * 1e3;
        self.keep_scratch(device, batch.deleting, keys, values, state)?;
        let out = out?;
        // Next batch's share: each side's operations per second of its own phases.
        let d_rate = split as f64 / device_s.max(1e-9);
        let t_rate = (n - split) as f64 / threads_s.max(1e-9);
        if split > 0 && split < n {
            self.coop.device_share = (d_rate / (d_rate + t_rate)).clamp(0.05, 0.95);
        }
        Ok(out)
    }
}

/// What Cooperative mode learned about the two sides.
#[derive(Clone, Copy, Debug)]
pub(super) struct CoopPlan {
    /// The device's share of a batch (fine transport).
    pub(super) device_share: f64,
    /// Operations per second of the last whole batch on each side (coarse transport).
    pub(super) device_rate: f64,
    pub(super) threads_rate: f64,
}

impl Default for CoopPlan {
    fn default() -> Self {
        CoopPlan {
            device_share: 0.5,
            device_rate: 0.0,
            threads_rate: 0.0,
        }
    }
}
