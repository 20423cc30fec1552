//! Batched insert and delete in the concurrent modes: rounds of *locate* (every pending
//! operation walks the quiescent tree to its key's node or gap) and *apply* (every eligible
//! operation runs a transaction, [`super::tx`] on CPU threads, `rb_tx` in
//! `kernels/rbtree_update.cl` on the device), until every operation is done.
//!
//! The batch is sorted by key with each key once (a key given twice: the last insert's value,
//! the first delete removes), so the keys falling in one gap of the tree are consecutive and
//! only their middle one is eligible in a round: a run of m keys into one gap takes about
//! log2(m) rounds. Transactions take their locks in one global order (node handle) and only
//! try them, so a launch or a thread never waits for another; the loser of a conflict retries
//! in the next round.
//!
//! **Progress.** The host loop reads the round's counts after each round (the device's
//! rounds over a pending list after each few: [`Rounds::locate_apply_rounds`]). A round that
//! committed nothing is followed by a round in which a single operation (the first eligible)
//! runs alone: it has no one to conflict with, so it commits unless the tree is damaged or a
//! lock was left held, and then the loop ends with [`Error::Stalled`] naming the side. The
//! loop is therefore bounded by the batch's length plus one round per committing round.
//! Operations a transaction cannot hold (more than `TX_SLOTS` nodes: a deep fix-up cascade)
//! and the keys waiting behind them in their gap are finished by the host path.

use std::sync::atomic::{AtomicU32, Ordering};

use asym_runtime::{Error, LatencyPool, Mode, Result, Side, SvmBuffer};
use rayon::prelude::*;

use super::device_update::DeviceRounds;
use super::{Deleted, Inserted, RbTree};
use crate::key::Key;

/// An operation's state word.
pub(super) const OP_PENDING: u32 = 0;
/// Done: an insert added its node, a delete removed its key's.
pub(super) const OP_NEW: u32 = 1;
/// Done: an insert found its key (value replaced), a delete did not.
pub(super) const OP_OLD: u32 = 2;
/// Left to the host path (the transaction needs more nodes than a transaction holds).
pub(super) const OP_OVERFLOW: u32 = 3;

/// Round counters (words of the round buffer).
pub(super) const R_PENDING: usize = 0;
pub(super) const R_ELIGIBLE: usize = 1;
/// The first eligible operation's index ([`R_NO_FIRST`] if none).
pub(super) const R_FIRST: usize = 2;
/// `R_FIRST` of a round with no eligible operation (fresh round words).
pub(super) const R_NO_FIRST: u32 = u32::MAX;
pub(super) const R_COMMITTED: usize = 3;
pub(super) const R_CONFLICTS: usize = 4;
pub(super) const R_OVERFLOW: usize = 5;
pub(super) const R_DAMAGED: usize = 6;
pub(super) const R_OOM: usize = 7;
/// Keys of the batch not above the one before (a resident batch must be strictly increasing).
pub(super) const R_UNSORTED: usize = 8;
/// Operations `rb_pending` listed as still pending after the round (0: no list made).
pub(super) const R_LISTED: usize = 9;
pub(super) const R_WORDS: usize = 10;
/// Sets of round words on the device, a ring (`rb_round_words`): one more than the most
/// rounds enqueued before a read of their counts.
pub(super) const R_SETS: usize = 4;

/// A round's counts.
pub(super) type Counts = [u32; R_WORDS];

/// Fresh counts: zeros, and no first eligible operation.
pub(super) fn fresh_counts() -> Counts {
    let mut c = [0; R_WORDS];
    c[R_FIRST] = R_NO_FIRST;
    c
}

/// Adds `b` into `a` (the first eligible index is the smaller).
pub(super) fn merge(a: &mut Counts, b: &Counts) {
    for (i, (x, y)) in a.iter_mut().zip(b).enumerate() {
        *x = if i == R_FIRST {
            (*x).min(*y)
        } else {
            x.wrapping_add(*y)
        };
    }
}

/// What the last concurrent insert or delete batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UpdateStats {
    /// Operations after merging repeated keys.
    pub distinct: usize,
    /// Rounds of locate and apply.
    pub rounds: u32,
    /// Rounds in which one operation ran alone (after a round without progress).
    pub solo_rounds: u32,
    /// Device rounds that ran over the list of pending operations the round before left,
    /// not over the whole batch.
    pub listed_rounds: u32,
    /// Transactions committed by the device's work-items.
    pub device_commits: u64,
    /// Transactions committed by CPU threads.
    pub thread_commits: u64,
    /// Transactions that lost a conflict and retried.
    pub conflicts: u64,
    /// Operations the host path finished (too large a transaction, or waiting behind one).
    pub finished_on_host: usize,
    /// Operations resolved in locate (inserts of keys present, deletes of keys absent).
    pub resolved_in_locate: usize,
    /// The batch filled an empty tree in one build (no rounds).
    pub built_whole: bool,
    /// Milliseconds sorting the batch and merging repeated keys (host).
    pub sort_ms: f64,
    /// Milliseconds setting up the side: the batch uploaded (device), the arena mapped
    /// (threads on the coarse transport).
    pub setup_ms: f64,
    /// Milliseconds in the rounds.
    pub rounds_ms: f64,
    /// Milliseconds reading the outcomes back and finishing on the host path.
    pub finish_ms: f64,
}

fn ms_since(t: std::time::Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Inserts into an empty tree from this many keys on are a build.
const BUILD_FROM: usize = 64;

/// A batch sorted by key, each key once.
pub(super) struct Batch {
    pub(super) deleting: bool,
    /// Keys (ordered form), strictly increasing.
    pub(super) keys: Vec<i32>,
    /// Values (inserts; empty for deletes).
    pub(super) values: Vec<u64>,
    /// `(key, original index)` sorted; key `u` covers `entries[starts[u]..starts[u + 1]]`.
    entries: Vec<(i32, u32)>,
    starts: Vec<u32>,
}

impl Batch {
    fn new(ordered: Vec<(i32, u32)>, deleting: bool, value: impl Fn(usize) -> u64 + Sync) -> Self {
        let mut entries = ordered;
        entries.par_sort_unstable();
        // The first entry of each key's run, in order (a parallel filter keeps the order).
        let mut starts: Vec<u32> = (0..entries.len())
            .into_par_iter()
            .filter(|&i| i == 0 || entries[i - 1].0 != entries[i].0)
            .map(|i| i as u32)
            .collect();
        let keys: Vec<i32> = starts.par_iter().map(|&s| entries[s as usize].0).collect();
        starts.push(entries.len() as u32);
        let values = if deleting {
            Vec::new()
        } else {
            // The last insert of a key gives its value.
            (0..keys.len())
                .into_par_iter()
                .map(|u| value(entries[starts[u + 1] as usize - 1].1 as usize))
                .collect()
        };
        Batch {
            deleting,
            keys,
            values,
            entries,
            starts,
        }
    }

    pub(super) fn inserts<K: Key>(items: &[(K, u64)]) -> Result<Self> {
        check_len(items.len())?;
        let ordered = items
            .par_iter()
            .enumerate()
            .map(|(i, (k, _))| (k.to_ordered(), i as u32))
            .collect();
        Ok(Batch::new(ordered, false, |i| items[i].1))
    }

    pub(super) fn deletes<K: Key>(keys: &[K]) -> Result<Self> {
        check_len(keys.len())?;
        let ordered = keys
            .par_iter()
            .enumerate()
            .map(|(i, k)| (k.to_ordered(), i as u32))
            .collect();
        Ok(Batch::new(ordered, true, |_| 0))
    }

    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// Per original operation, from each distinct key's outcome (`true`: new node /
    /// removed): the key's first operation gets it, the others see the key present (an
    /// insert updates, a delete finds it gone).
    fn spread(&self, new: &[bool]) -> Vec<bool> {
        let mut out = vec![false; self.entries.len()];
        for (u, &n) in new.iter().enumerate() {
            out[self.entries[self.starts[u] as usize].1 as usize] = n;
        }
        out
    }
}

fn check_len(n: usize) -> Result<()> {
    if n >= (u32::MAX / 4) as usize {
        return Err(Error::too_large("a batch's operations", n, 1u64 << 30));
    }
    Ok(())
}

/// One side's rounds: locate, apply, and the states at the end.
pub(super) trait Rounds {
    /// Which side this is (for errors and statistics).
    fn side(&self) -> Side;
    /// A locate pass over every pending operation.
    fn locate(&mut self) -> Result<Counts>;
    /// An apply pass (only operation `only` when given).
    fn apply(&mut self, only: Option<u32>) -> Result<Counts>;
    /// A locate pass then an apply pass, counts merged.
    fn locate_apply(&mut self) -> Result<Counts> {
        let mut c = self.locate()?;
        let a = self.apply(None)?;
        merge(&mut c, &a);
        Ok(c)
    }
    /// One or more rounds of locate and apply run back to back (a side that can run rounds
    /// without reading their counts in between), each round's counts in order.
    fn locate_apply_rounds(&mut self) -> Result<Vec<Counts>> {
        Ok(vec![self.locate_apply()?])
    }
}

/// Runs rounds until every operation is done or left to the host (see the module comment).
pub(super) fn run_rounds(r: &mut dyn Rounds, stats: &mut UpdateStats, n: usize) -> Result<()> {
    let t = std::time::Instant::now();
    let done = rounds_until_done(r, stats, n);
    stats.rounds_ms = ms_since(t);
    done
}

fn rounds_until_done(r: &mut dyn Rounds, stats: &mut UpdateStats, n: usize) -> Result<()> {
    let mut solo = false;
    let limit = n as u64 * 2 + 64;
    let mut rounds = 0u64;
    loop {
        if rounds > limit {
            return Err(Error::Stalled {
                side: r.side(),
                waiting_for: format!("finish a batch of {n} tree operations"),
                waited_ms: 0,
                detail: format!("{limit} rounds of locate and apply"),
            });
        }
        let ran_solo = solo;
        let group = if solo {
            let mut l = r.locate()?;
            check_round(&l)?;
            if l[R_PENDING] == 0 || l[R_ELIGIBLE] == 0 {
                return Ok(());
            }
            let a = r.apply(Some(l[R_FIRST]))?;
            merge(&mut l, &a);
            stats.solo_rounds += 1;
            vec![l]
        } else {
            r.locate_apply_rounds()?
        };
        // The rounds in order: the first that leaves nothing to do ends the batch (any
        // after it found nothing to do).
        for c in group {
            rounds += 1;
            check_round(&c)?;
            stats.rounds += 1;
            stats.conflicts += u64::from(c[R_CONFLICTS]);
            let progress = c[R_COMMITTED] + c[R_OVERFLOW];
            if c[R_PENDING] == progress || c[R_ELIGIBLE] == 0 {
                return Ok(());
            }
            if progress == 0 && ran_solo {
                return Err(Error::Stalled {
                    side: r.side(),
                    waiting_for: "commit a tree operation that ran alone".into(),
                    waited_ms: 0,
                    detail: format!(
                        "operation {} of {n} conflicted with no other running: a node lock \
                         was left held",
                        c[R_FIRST]
                    ),
                });
            }
            solo = progress == 0;
        }
    }
}

fn check_round(c: &Counts) -> Result<()> {
    if c[R_DAMAGED] != 0 {
        return Err(Error::corrupted(
            "the red-black tree",
            format!(
                "{} tree operations found links no red-black tree has: the tree is damaged",
                c[R_DAMAGED]
            ),
        ));
    }
    if c[R_OOM] != 0 {
        return Err(Error::OutOfMemory(format!(
            "the arena ran out for {} new tree nodes",
            c[R_OOM]
        )));
    }
    Ok(())
}

impl<K: Key> RbTree<K> {
    /// Inserts every `(key, value)` in `mode`: `GpuOnly` on the device, `CpuOnly` on the
    /// latency threads of `pool`, `Cooperative` on both at once (fine transport; on the
    /// coarse one the two sides cannot hold the tree together, and the batch runs on the
    /// side that was faster on the last batch). Results as [`RbTree::insert_batch`]: a key
    /// already there gets the value, a key given twice its last value. A batch of 64 keys or
    /// more into an empty tree is built whole in the balanced shape instead of in rounds.
    pub fn insert_in(
        &mut self,
        mode: Mode,
        items: &[(K, u64)],
        pool: &LatencyPool,
    ) -> Result<Vec<Inserted>> {
        let t = std::time::Instant::now();
        let batch = Batch::inserts(items)?;
        let new = self.run_batch(mode, &batch, pool, ms_since(t))?;
        Ok(new
            .into_iter()
            .map(|n| if n { Inserted::New } else { Inserted::Updated })
            .collect())
    }

    /// Deletes every key in `mode` (see [`RbTree::insert_in`]), reporting for each whether it
    /// was there (a key given twice: the first delete removes it).
    pub fn delete_in(
        &mut self,
        mode: Mode,
        keys: &[K],
        pool: &LatencyPool,
    ) -> Result<Vec<Deleted>> {
        let t = std::time::Instant::now();
        let batch = Batch::deletes(keys)?;
        let new = self.run_batch(mode, &batch, pool, ms_since(t))?;
        Ok(new
            .into_iter()
            .map(|n| {
                if n {
                    Deleted::Removed
                } else {
                    Deleted::Missing
                }
            })
            .collect())
    }

    /// Inserts a resident batch on the device: `keys` strictly increasing (an
    /// `InvalidArgument` error otherwise, the tree unchanged), `values` beside them, and
    /// for each key 1 written to `outcome` if it was new or 2 if its value was replaced. The
    /// batch stays on the device: nothing but a few words per round comes back, unless some
    /// operation needs the host path (then the batch is read back for it, hence `&mut`).
    pub fn insert_svm(
        &mut self,
        keys: &mut SvmBuffer<K>,
        values: &mut SvmBuffer<u64>,
        outcome: &mut SvmBuffer<u32>,
    ) -> Result<()> {
        if values.len() != keys.len() {
            return Err(Error::out_of_range(
                "values",
                values.len(),
                format!("one for each of the {} keys", keys.len()),
            ));
        }
        self.resident(false, keys, Some(values), outcome)
    }

    /// Deletes a resident batch on the device (`keys` strictly increasing), writing for each
    /// key 1 to `outcome` if it was removed or 2 if it was not in the tree.
    pub fn delete_svm(
        &mut self,
        keys: &mut SvmBuffer<K>,
        outcome: &mut SvmBuffer<u32>,
    ) -> Result<()> {
        self.resident(true, keys, None, outcome)
    }

    fn resident(
        &mut self,
        deleting: bool,
        keys: &mut SvmBuffer<K>,
        values: Option<&mut SvmBuffer<u64>>,
        outcome: &mut SvmBuffer<u32>,
    ) -> Result<()> {
        let n = keys.len();
        if outcome.len() != n {
            return Err(Error::out_of_range(
                "outcome slots",
                outcome.len(),
                format!("one for each of the {n} keys"),
            ));
        }
        check_len(n)?;
        let mut stats = UpdateStats {
            distinct: n,
            ..UpdateStats::default()
        };
        if n == 0 {
            self.last_update = stats;
            return Ok(());
        }
        if !deleting {
            self.reserve(n)?;
        }
        let t = std::time::Instant::now();
        let mut none;
        let values = match values {
            Some(v) => v,
            None => {
                none = self.runtime().alloc::<u64>(1)?;
                &mut none
            }
        };
        let mut rounds = DeviceRounds::new(self, n, deleting, keys, values, outcome, 0..n)?;
        stats.setup_ms = ms_since(t);
        let ran = run_rounds(&mut rounds, &mut stats, n);
        stats.device_commits = rounds.commits;
        stats.listed_rounds = stats.rounds.saturating_sub(rounds.slice_rounds);
        let t = std::time::Instant::now();
        let handles = if ran.is_ok() && rounds.overflows > 0 && !deleting {
            Some(rounds.handles(n))
        } else {
            None
        };
        let (commits, overflows) = (rounds.commits as usize, rounds.overflows);
        let settled = rounds.settle(self, deleting);
        ran?;
        settled?;
        if overflows > 0 {
            // Some operations need the host path: bring the batch back for them
            // (finish_on_host also counts the rounds' commits from the states).
            let states = outcome.read_range(0, n)?;
            let raw = keys.read_range(0, n)?;
            let ordered: Vec<(i32, u32)> = raw
                .iter()
                .enumerate()
                .map(|(i, k)| (k.to_ordered(), i as u32))
                .collect();
            let vals = match values.len() == n {
                true => values.read_range(0, n)?,
                false => Vec::new(),
            };
            let batch = Batch::new(ordered, deleting, |i| vals.get(i).copied().unwrap_or(0));
            let handles = handles.transpose()?.unwrap_or_else(|| vec![super::NIL; n]);
            let new = self.finish_on_host(&batch, &states, &handles, &mut stats)?;
            let words: Vec<u32> = new
                .iter()
                .map(|&n| if n { OP_NEW } else { OP_OLD })
                .collect();
            outcome.write_range(0, &words)?;
        } else if deleting {
            self.len -= commits;
        } else {
            self.len += commits;
        }
        stats.finish_ms = ms_since(t);
        self.last_update = stats;
        Ok(())
    }

    /// What the last [`RbTree::insert_in`] or [`RbTree::delete_in`] did.
    pub fn last_update(&self) -> UpdateStats {
        self.last_update
    }

    fn run_batch(
        &mut self,
        mode: Mode,
        batch: &Batch,
        pool: &LatencyPool,
        sort_ms: f64,
    ) -> Result<Vec<bool>> {
        let mut stats = UpdateStats {
            distinct: batch.len(),
            sort_ms,
            ..UpdateStats::default()
        };
        if batch.len() == 0 {
            self.last_update = stats;
            return Ok(Vec::new());
        }
        if !batch.deleting && self.is_empty() && batch.len() >= BUILD_FROM {
            // An empty tree is built whole in the balanced shape: rounds would insert the
            // whole batch into one gap, whose fix-ups all meet near the new root.
            match mode {
                Mode::CpuOnly => self.build_sorted_on_threads(&batch.keys, &batch.values, pool)?,
                _ => self.build_sorted_on_device(&batch.keys, &batch.values)?,
            }
            stats.built_whole = true;
            self.last_update = stats;
            return Ok(batch.spread(&vec![true; batch.len()]));
        }
        if !batch.deleting {
            self.reserve(batch.len())?;
        }
        let (states, handles) = match mode {
            Mode::GpuOnly => self.device_rounds(batch, &mut stats)?,
            Mode::CpuOnly => self.thread_rounds(batch, pool, &mut stats)?,
            Mode::Cooperative => self.cooperative_rounds(batch, pool, &mut stats)?,
        };
        let t = std::time::Instant::now();
        let new = self.finish_on_host(batch, &states, &handles, &mut stats)?;
        stats.finish_ms += ms_since(t);
        self.last_update = stats;
        Ok(batch.spread(&new))
    }

    /// Turns the final states into outcomes, finishing on the host path what the rounds
    /// left (and giving back the nodes such inserts had taken).
    fn finish_on_host(
        &mut self,
        batch: &Batch,
        states: &[u32],
        handles: &[u32],
        stats: &mut UpdateStats,
    ) -> Result<Vec<bool>> {
        let mut new: Vec<bool> = states.iter().map(|&s| s == OP_NEW).collect();
        let committed = new.iter().filter(|&&n| n).count();
        let left: Vec<usize> = (0..states.len())
            .filter(|&i| states[i] == OP_PENDING || states[i] == OP_OVERFLOW)
            .collect();
        stats.resolved_in_locate = states.iter().filter(|&&s| s == OP_OLD).count();
        stats.finished_on_host = left.len();
        // The count the rounds kept in the header is the tree's; the host's follows it.
        if batch.deleting {
            self.len -= committed;
        } else {
            self.len += committed;
        }
        if left.is_empty() {
            return Ok(new);
        }
        let header = self.header;
        let mut map = self.arena.map()?;
        let view = map.view();
        let nodes = super::ops::Nodes::new(view, header)?;
        for &i in &left {
            if !batch.deleting && handles[i] != super::NIL {
                view.free(handles[i], i)?;
            }
        }
        let mut added = 0usize;
        let mut removed = 0usize;
        for &i in &left {
            let key = batch.keys[i];
            new[i] = if batch.deleting {
                nodes.delete(key)? == Deleted::Removed
            } else {
                nodes.insert(key, batch.values[i])? == Inserted::New
            };
            if new[i] {
                if batch.deleting {
                    removed += 1;
                } else {
                    added += 1;
                }
            }
        }
        drop(map);
        self.len = self.len + added - removed;
        Ok(new)
    }
}

/// Atomic words for the thread side's per-operation arrays.
pub(super) fn atomic_words(n: usize) -> Vec<AtomicU32> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

/// Plain copies of atomic words (after the threads have joined).
pub(super) fn plain(words: &[AtomicU32]) -> Vec<u32> {
    words.iter().map(|w| w.load(Ordering::Relaxed)).collect()
}
