//! The device's side of the update rounds (`rb_locate`, `rb_apply` and `rb_pending` in
//! `kernels/rbtree_update.cl`): the per-operation words kept between batches, the launches of a
//! round and the host's reads of its counts.

use asym_runtime::{Error, Kernel, Launch, Result, Side, SvmBuffer};

use super::device::SEARCH_WG;
use super::update::{fresh_counts, Batch, Counts, Rounds, R_COMMITTED, R_LISTED};
use super::update::{run_rounds, UpdateStats, OP_OVERFLOW, OP_PENDING};
use super::update::{R_OVERFLOW, R_UNSORTED};
use super::update::{R_SETS, R_WORDS};
use super::{RbTree, NIL};
use crate::key::Key;

/// Rounds over fewer operations than this are not followed by a pending list: below about
/// a hundred work-groups the idle work-items should cost less than the list's launch (a
/// choice, not measured; the list pays from batches of 2^20 on, the smallest measured).
const LIST_FROM: usize = 1 << 15;

/// Rounds over a pending list enqueued before the host reads their counts (fewer than
/// [`R_SETS`]): a read costs the host a wait and a transfer, and a round past the batch's
/// end finds an empty list and does nothing (on the H200 three took 2-3 % off batches of
/// 2^24 and changed batches of 2^20 and 2^22 within the spread).
const LISTED_ROUNDS_AHEAD: usize = 3;

/// The round kernels, made once per tree (their arguments are set for each batch).
pub(super) struct RoundKernels {
    locate: Kernel,
    apply: Kernel,
    pending: Kernel,
}

/// The device's per-operation words of the update rounds, kept by the tree between batches
/// (grown when a batch is longer).
pub(super) struct UpdateScratch<K: Key> {
    /// Where each operation's gap or node is (three words an operation).
    place: SvmBuffer<u32>,
    /// The node each insert took from the arena.
    handles: SvmBuffer<u32>,
    /// [`R_SETS`] sets of round words, a ring: a round counts into one and its launches
    /// leave the next fresh (`rb_round_words`).
    rounds: SvmBuffer<u32>,
    /// The set the last batch's launches left fresh (`None`: unknown, written before use).
    fresh_set: Option<u32>,
    /// Spare nodes taken by inserts ([0]) and put back by deletes ([1]) in this batch.
    spare_ctl: SvmBuffer<u32>,
    /// Two lists of pending operations (`rb_pending`: the length, then the entries): a
    /// round reads one and lists into the other.
    lists: [SvmBuffer<u32>; 2],
    kernels: Option<RoundKernels>,
    /// The host-slice path's copies of the batch and its outcomes.
    keys: Option<SvmBuffer<K>>,
    values: Option<SvmBuffer<u64>>,
    state: Option<SvmBuffer<u32>>,
}

impl<K: Key> UpdateScratch<K> {
    fn new(rt: &asym_runtime::Runtime, n: usize) -> Result<Self> {
        Ok(UpdateScratch {
            place: rt.alloc::<u32>(3 * n.max(1))?,
            handles: rt.alloc::<u32>(n.max(1))?,
            rounds: rt.alloc::<u32>(R_SETS * R_WORDS)?,
            fresh_set: None,
            spare_ctl: rt.alloc::<u32>(2)?,
            lists: [rt.alloc::<u32>(n + 1)?, rt.alloc::<u32>(n + 1)?],
            kernels: None,
            keys: None,
            values: None,
            state: None,
        })
    }

    fn fits(&self, n: usize) -> bool {
        self.handles.len() >= n
    }
}

/// The device's side of a batch's rounds: the kernels (`rb_locate`, `rb_apply`,
/// `rb_pending`) with their arguments set once, over the batch's keys, values and states in
/// SVM.
///
/// No host write happens between a batch's launches: the first pass (resetting the
/// operations' words and the spare count, checking the keys' order) is enqueued ahead of the
/// first round and read with its counts, and each round counts into the set of round words
/// the previous round's launches left fresh (`UpdateScratch::rounds`).
///
/// The first round runs over the batch's slice; a round over at least [`LIST_FROM`]
/// operations then lists those still pending (`rb_pending`: the list's length in its first
/// word, and in the round's counts for the host), and every later round runs over the list
/// the round before wrote. The host sizes those launches by the last length it read (each
/// list holds a subset of the one before) and enqueues [`LISTED_ROUNDS_AHEAD`] such rounds
/// before it reads their counts. A list holds every pending operation of the slice (the
/// kernels skip the done ones), so a round without a fresh list (one operation alone)
/// keeps the last.
pub(super) struct DeviceRounds<K: Key> {
    k: RoundKernels,
    scratch: UpdateScratch<K>,
    ops: std::ops::Range<usize>,
    wg: usize,
    /// The set of round words this round counts into.
    phase: u32,
    /// Whether a round has begun (the first counts into the first pass's set).
    begun: bool,
    /// At most this many entries in the pending list the rounds run over (0: the slice).
    listed: u32,
    /// Whether the rounds run over pending lists (from the first `rb_pending` on).
    list_mode: bool,
    /// Which of the scratch's lists that is.
    list: usize,
    /// The first pass, in flight until the first round's counts are read.
    first_pass: Option<asym_runtime::Launch>,
    pub(super) commits: u64,
    pub(super) overflows: u64,
    /// Rounds begun over the slice, not a pending list (the rounds the host counted past
    /// these ran over lists; rounds enqueued past a batch's end are not counted).
    pub(super) slice_rounds: u32,
}

impl<K: Key> DeviceRounds<K> {
    /// Prepares the kernels for operations `ops` of a batch of `n` keys (raw bits of `K`,
    /// strictly increasing: the first round's counts report keys that are not), its values
    /// (inserts) and its outcome words, and enqueues the first pass.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        tree: &mut RbTree<K>,
        n: usize,
        deleting: bool,
        keys: &SvmBuffer<K>,
        values: &SvmBuffer<u64>,
        state: &SvmBuffer<u32>,
        ops: std::ops::Range<usize>,
    ) -> Result<Self> {
        let rt = tree.arena.runtime().clone();
        let (mut scratch, kernels) = match tree.update_scratch.take() {
            Some(mut s) if s.fits(n) => {
                let k = s.kernels.take();
                (s, k)
            }
            Some(mut s) => {
                let k = s.kernels.take();
                (UpdateScratch::new(&rt, n)?, k)
            }
            None => (UpdateScratch::new(&rt, n)?, None),
        };
        let phase = match scratch.fresh_set.take() {
            Some(set) => set,
            None => {
                let all = [fresh_counts(); R_SETS].concat();
                scratch.rounds.copy_from_host(0, &all)?;
                0
            }
        };
        tree.grow_spare(deleting, n)?;
        let spare = tree.spare.as_ref().ok_or_else(spare_missing)?;
        let (spare_len, spare_cap) = (
            u32::try_from(tree.spare_len).unwrap_or(u32::MAX),
            u32::try_from(spare.len()).unwrap_or(u32::MAX),
        );
        let heap_words = u32::try_from(tree.arena.heap_words())
            .map_err(|_| Error::InvalidArgument("an arena past 2^32 words".into()))?;
        let (lo, hi) = (ops.start as u32, ops.end as u32);
        let deleting = u32::from(deleting);
        let mut k = match kernels {
            Some(k) => k,
            None => RoundKernels {
                locate: tree.kernel("rb_locate")?,
                apply: tree.kernel("rb_apply")?,
                pending: tree.kernel("rb_pending")?,
            },
        };
        // Both kernels take the same first sixteen arguments: the arena, the tree, the batch
        // and the round's words.
        for k in [&mut k.locate, &mut k.apply] {
            tree.arena.set_args(k)?;
            k.arg_scalar("header", tree.header)?
                .arg_scalar("heap_words", heap_words)?
                .arg_scalar("deleting", deleting)?
                .arg_svm("keys", keys)?
                .arg_svm("values", values)?
                .arg_scalar("n", n as u32)?
                .arg_scalar("op_lo", lo)?
                .arg_scalar("op_hi", hi)?
                .arg_svm("state", state)?
                .arg_svm("where", &scratch.place)?
                .arg_svm("handles", &scratch.handles)?
                .arg_svm("rounds", &scratch.rounds)?
                .arg_scalar("phase", phase)?
                .arg_svm("spare_ctl", &scratch.spare_ctl)?
                .arg_scalar("check_order", 1u32)?;
        }
        k.locate.arg_scalar("find_first", 1u32)?;
        let wg = SEARCH_WG.min(rt.profile().max_work_group_size).max(1);
        k.pending
            .arg_svm("state", state)?
            .arg_scalar("op_lo", lo)?
            .arg_scalar("op_hi", hi)?
            .arg_svm("rounds", &scratch.rounds)?
            .arg_scalar("phase", phase)?
            .arg_local::<u32>("scan", wg)?;
        // rb_apply: every eligible operation, and the spare stack.
        k.apply
            .arg_scalar("only", u32::MAX)?
            .arg_svm("spare", spare)?
            .arg_scalar("spare_len", spare_len)?
            .arg_scalar("spare_cap", spare_cap)?;
        let mut rounds = DeviceRounds {
            k,
            scratch,
            ops,
            wg,
            phase,
            begun: false,
            listed: 0,
            list_mode: false,
            list: 0,
            first_pass: None,
            commits: 0,
            overflows: 0,
            slice_rounds: 0,
        };
        // No list yet: the first rounds run over the slice.
        rounds.set_list_args(0)?;
        let global = rounds.global();
        let locate = &mut rounds.k.locate;
        locate.arg_scalar("fresh", 1u32)?;
        let first_pass = locate.launch(global, Some(wg));
        // Set before returning either way: a kernel in the cache is always a round's.
        locate.arg_scalar("fresh", 0u32)?;
        rounds.first_pass = Some(first_pass?);
        Ok(rounds)
    }

    /// Waits for the first pass (the first round's counts do; a caller about to touch the
    /// tree beside the device's launches waits first).
    pub(super) fn wait_first_pass(&mut self) -> Result<()> {
        match self.first_pass.take() {
            Some(launch) => launch.wait(),
            None => Ok(()),
        }
    }

    /// Begins a round (before its launches): it counts into the set of round words the
    /// last launches left fresh, or, the first, into the first pass's.
    pub(super) fn reset(&mut self) -> Result<()> {
        let first = !self.begun;
        if self.begun {
            self.phase = (self.phase + 1) % R_SETS as u32;
        }
        self.begun = true;
        // Known fresh again only once this round's counts are read.
        self.scratch.fresh_set = None;
        for k in [&mut self.k.locate, &mut self.k.apply, &mut self.k.pending] {
            k.arg_scalar("phase", self.phase)?;
        }
        for k in [&mut self.k.locate, &mut self.k.apply] {
            k.arg_scalar("check_order", u32::from(first))?;
        }
        Ok(())
    }

    /// Operations a round runs over: the pending list's, or the slice's.
    fn domain(&self) -> usize {
        match self.listed {
            0 => self.ops.len(),
            listed => listed as usize,
        }
    }

    /// Work-items for a round's operations (at least one work-group).
    fn global(&self) -> usize {
        self.domain().max(1).div_ceil(self.wg) * self.wg
    }

    pub(super) fn launch_locate(&mut self) -> Result<asym_runtime::Launch> {
        self.slice_rounds += u32::from(self.listed == 0);
        let global = self.global();
        self.k.locate.launch(global, Some(self.wg))
    }

    pub(super) fn launch_apply(&mut self, only: Option<u32>) -> Result<asym_runtime::Launch> {
        let global = self.global();
        self.k.apply.arg_scalar("only", only.unwrap_or(u32::MAX))?;
        self.k.apply.launch(global, Some(self.wg))
    }

    /// Points the kernels at the list the next round runs over (`self.list`, at most
    /// `listed` entries; 0: the slice) and at the other for its `rb_pending`.
    fn set_list_args(&mut self, listed: u32) -> Result<()> {
        self.listed = listed;
        let (list, next) = (
            &self.scratch.lists[self.list],
            &self.scratch.lists[self.list ^ 1],
        );
        for k in [&mut self.k.locate, &mut self.k.apply, &mut self.k.pending] {
            k.arg_svm("list", list)?.arg_scalar("listed", listed)?;
        }
        for k in [&mut self.k.locate, &mut self.k.pending] {
            k.arg_svm("next", next)?;
        }
        Ok(())
    }

    /// The round's counts (its launches waited for). Keys out of order, which the first
    /// pass counted, are an error: the round's launches changed nothing then.
    pub(super) fn counts(&mut self) -> Result<Counts> {
        Ok(self.counts_of(1)?[0])
    }

    /// The counts of the last `rounds` rounds (their launches waited for), in order.
    fn counts_of(&mut self, rounds: usize) -> Result<Vec<Counts>> {
        self.wait_first_pass()?;
        let words = self.scratch.rounds.read_range(0, R_SETS * R_WORDS)?;
        // The last round's launches left the next set fresh for the next round or batch.
        self.scratch.fresh_set = Some((self.phase + 1) % R_SETS as u32);
        // The last round counted into `phase`, the ones before into the sets before it.
        let first = self.phase as usize + R_SETS - (rounds - 1);
        (first..first + rounds)
            .map(|set| {
                let at = set % R_SETS * R_WORDS;
                let mut c = fresh_counts();
                c.copy_from_slice(&words[at..at + R_WORDS]);
                self.take_counts(c)
            })
            .collect()
    }

    /// A round's counts, checked for keys out of order and added to the batch's totals.
    fn take_counts(&mut self, c: Counts) -> Result<Counts> {
        if c[R_UNSORTED] != 0 {
            return Err(Error::InvalidArgument(format!(
                "a resident batch of tree operations must hold strictly increasing keys; {} \
                 keys are not above the one before",
                c[R_UNSORTED]
            )));
        }
        self.commits += u64::from(c[R_COMMITTED]);
        self.overflows += u64::from(c[R_OVERFLOW]);
        Ok(c)
    }

    /// The operations this side ran.
    pub(super) fn ops(&self) -> std::ops::Range<usize> {
        self.ops.clone()
    }

    /// The nodes the inserts took (read back only when some operation was left to the host).
    pub(super) fn handles(&mut self, n: usize) -> Result<Vec<u32>> {
        self.scratch.handles.read_range(0, n)
    }

    /// Settles the batch's spare nodes with the tree (inserts took from the top of the
    /// stack, deletes put theirs after it) and gives the scratch words back to the tree.
    pub(super) fn settle(mut self, tree: &mut RbTree<K>, deleting: bool) -> Result<()> {
        // (A set is marked fresh only by a round whose counts were read: a launch that
        // failed may not have written it.)
        let ctl = self
            .wait_first_pass()
            .and_then(|()| self.scratch.spare_ctl.read_range(0, 2));
        self.scratch.kernels = Some(self.k);
        tree.update_scratch = Some(self.scratch);
        let ctl = ctl?;
        if deleting {
            let cap = tree.spare.as_ref().map_or(0, |s| s.len());
            tree.spare_len = (tree.spare_len + ctl[1] as usize).min(cap);
        } else {
            tree.spare_len -= (ctl[0] as usize).min(tree.spare_len);
        }
        Ok(())
    }
}

impl<K: Key> Rounds for DeviceRounds<K> {
    fn side(&self) -> Side {
        Side::Device
    }

    fn locate(&mut self) -> Result<Counts> {
        self.reset()?;
        self.launch_locate()?.wait()?;
        self.counts()
    }

    fn apply(&mut self, only: Option<u32>) -> Result<Counts> {
        self.reset()?;
        self.launch_apply(only)?.wait()?;
        self.counts()
    }

    fn locate_apply(&mut self) -> Result<Counts> {
        Ok(self.rounds_ahead(1)?[0])
    }

    fn locate_apply_rounds(&mut self) -> Result<Vec<Counts>> {
        let ahead = match self.listed {
            0 => 1,
            _ => LISTED_ROUNDS_AHEAD,
        };
        self.rounds_ahead(ahead)
    }
}

impl<K: Key> DeviceRounds<K> {
    /// Enqueues `rounds` rounds back to back (each locate, apply and, over a pending list
    /// or a long slice, `rb_pending`), waits once, and reads their counts.
    fn rounds_ahead(&mut self, rounds: usize) -> Result<Vec<Counts>> {
        let mut launches = Vec::with_capacity(3 * rounds);
        let mut enqueued = Ok(());
        for r in 0..rounds {
            if let Err(e) = self.enqueue_round(r + 1 == rounds, &mut launches) {
                enqueued = Err(e);
                break;
            }
        }
        // Each launch reads what the one before wrote: the in-order queue runs them in
        // turn, so one wait covers them all (a wait between a round's launches cost it
        // 30-40 µs on the H200). The others have ended by then; their errors still count.
        let mut waited = Ok(());
        for launch in launches.into_iter().rev() {
            let w = launch.wait();
            waited = waited.and(w);
        }
        enqueued?;
        waited?;
        let counts = self.counts_of(rounds)?;
        if self.list_mode {
            // The next rounds' launches are sized by the last list (a list holds a subset
            // of the one its round ran over).
            let listed = counts.last().map_or(0, |c| c[R_LISTED]);
            self.set_list_args(listed)?;
        }
        Ok(counts)
    }

    /// Enqueues one round's launches (`last`: submit them).
    fn enqueue_round(&mut self, last: bool, launches: &mut Vec<Launch>) -> Result<()> {
        self.reset()?;
        self.slice_rounds += u32::from(self.listed == 0);
        let (global, wg) = (self.global(), Some(self.wg));
        let listing = self.list_mode || self.domain() >= LIST_FROM;
        // The first eligible operation's index matters only to a round run alone after
        // one without progress (and to the cooperative side's rounds).
        self.k.locate.arg_scalar("find_first", 0u32)?;
        let locate = self.k.locate.launch_unflushed(global, wg);
        self.k.locate.arg_scalar("find_first", 1u32)?;
        launches.push(locate?);
        let apply = self.k.apply.arg_scalar("only", u32::MAX)?;
        launches.push(match last && !listing {
            true => apply.launch(global, wg)?,
            false => apply.launch_unflushed(global, wg)?,
        });
        if listing {
            launches.push(match last {
                true => self.k.pending.launch(global, wg)?,
                false => self.k.pending.launch_unflushed(global, wg)?,
            });
            // The next round runs over the list this one wrote (its length bounded by the
            // list this one ran over, or, after the slice, by the slice).
            self.list_mode = true;
            self.list ^= 1;
            let bound = self.domain() as u32;
            self.set_list_args(bound)?;
        }
        Ok(())
    }
}

impl<K: Key> RbTree<K> {
    /// Runs a batch's rounds on the device (see [`super::update`]): the batch uploaded into
    /// the tree's scratch buffers, located and applied by launches, the outcomes read back.
    pub(super) fn device_rounds(
        &mut self,
        batch: &Batch,
        stats: &mut UpdateStats,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        let n = batch.len();
        let t = std::time::Instant::now();
        let (keys, values, mut state) = self.slice_buffers(batch)?;
        let mut rounds = DeviceRounds::new(self, n, batch.deleting, &keys, &values, &state, 0..n)?;
        stats.setup_ms = t.elapsed().as_secs_f64() * 1e3;
        let ran = run_rounds(&mut rounds, stats, n);
        stats.device_commits = rounds.commits;
        stats.listed_rounds = stats.rounds.saturating_sub(rounds.slice_rounds);
        let t = std::time::Instant::now();
        let out = ran.and_then(|()| {
            let states = state.read_range(0, n)?;
            let left = states.iter().any(|&s| s == OP_PENDING || s == OP_OVERFLOW);
            let handles = if left && !batch.deleting {
                rounds.handles(n)?
            } else {
                vec![NIL; n]
            };
            Ok((states, handles))
        });
        stats.finish_ms = t.elapsed().as_secs_f64() * 1e3;
        self.keep_scratch(rounds, batch.deleting, keys, values, state)?;
        out
    }

    /// Grows the spare stack to hold what it holds and, for deletes, every node of a
    /// batch of `n` (deletes put their nodes there).
    fn grow_spare(&mut self, deleting: bool, n: usize) -> Result<()> {
        let want = self.spare_len + if deleting { n } else { 0 };
        let cap = self.spare.as_ref().map_or(0, |s| s.len());
        if want > cap || cap == 0 {
            let rt = self.arena.runtime().clone();
            let mut grown = rt.alloc::<u32>(want.max(cap * 2).max(1024))?;
            if self.spare_len > 0 {
                let old = self
                    .spare
                    .as_mut()
                    .ok_or_else(spare_missing)?
                    .read_range(0, self.spare_len)?;
                grown.write_range(0, &old)?;
            }
            self.spare = Some(grown);
        }
        Ok(())
    }

    /// Keeps a finished batch's buffers for the next one.
    pub(super) fn keep_scratch(
        &mut self,
        rounds: DeviceRounds<K>,
        deleting: bool,
        keys: SvmBuffer<K>,
        values: SvmBuffer<u64>,
        state: SvmBuffer<u32>,
    ) -> Result<()> {
        rounds.settle(self, deleting)?;
        let scratch = self.update_scratch.as_mut().ok_or_else(|| {
            Error::corrupted(
                "the red-black tree",
                "the tree's update buffers went missing",
            )
        })?;
        scratch.keys = Some(keys);
        scratch.values = Some(values);
        scratch.state = Some(state);
        Ok(())
    }

    /// The batch's keys (raw bits) and values in SVM and a state buffer, reusing the
    /// scratch's when they are long enough.
    pub(super) fn slice_buffers(
        &mut self,
        batch: &Batch,
    ) -> Result<(SvmBuffer<K>, SvmBuffer<u64>, SvmBuffer<u32>)> {
        use rayon::prelude::*;
        let n = batch.len();
        let rt = self.arena.runtime().clone();
        let (keys, values, state) = match self.update_scratch.as_mut() {
            Some(s) => (s.keys.take(), s.values.take(), s.state.take()),
            None => (None, None, None),
        };
        let mut keys = match keys {
            Some(k) if k.len() >= n => k,
            _ => rt.alloc::<K>(n.max(1))?,
        };
        let mut values = match values {
            Some(v) if v.len() >= n => v,
            _ => rt.alloc::<u64>(n.max(1))?,
        };
        let state = match state {
            Some(s) if s.len() >= n => s,
            _ => rt.alloc::<u32>(n.max(1))?,
        };
        let raw: Vec<K> = batch.keys.par_iter().map(|&k| K::from_ordered(k)).collect();
        keys.write_range(0, &raw)?;
        if !batch.deleting {
            values.write_range(0, &batch.values)?;
        }
        Ok((keys, values, state))
    }
}

fn spare_missing() -> Error {
    Error::corrupted("the red-black tree", "the tree's spare nodes went missing")
}
