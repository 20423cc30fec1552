//! Distributed batch k-selection: the k-th smallest key of every row of a list set whose
//! keys sit on several ranks, in either of the two layouts a user has ([`Layout`]).
//!
//! - **Rows owned by ranks** ([`select_owned`]): each rank holds whole rows and selects them
//!   with everything it has (its [`KSelector`]: its devices and latency threads, in any
//!   [`Mode`]); the answers are gathered on rank 0 in row order, or left where they are.
//!   Messages: one small gather of per-rank figures, and the answers (4 bytes a row).
//! - **Rows spread across ranks** ([`select_spread`]): every row's keys are cut over the
//!   ranks. MSD radix select where each 8-bit digit pass is local histograms of every row at
//!   once, one `MPI_Allreduce` of all of them, and every rank keeping the bucket that holds
//!   each row's k-th (the same bucket everywhere: every rank sees the same sums). After four
//!   passes the digits are the answer, on every rank, identical to one host's. The first pass
//!   reads the keys; it keeps each row's bucket (about 1/256 of the keys on spread-out data),
//!   and the later passes read only that. A rank's part may be in host memory or on its
//!   device ([`SpreadPart`]): there the first digit is counted and kept by the device radix
//!   and the second counted on the way, and only the keys of both digits come back.
//!   Messages: 4 passes × rows × 256 counts of 4 bytes, whatever the keys' number (rows are
//!   taken [`ROWS_PER_ROUND`] at a time).
//!
//! Both check their arguments on every rank and agree on failures ([`Cluster::agree`]), so a
//! bad row on one rank ends the call on every rank with an error naming it.

use std::time::Instant;

use asym_runtime::{Error, Mode, Named, Result, SvmBuffer};
use asym_structures::{KSelector, Key, SelectStats, Sublists};
use mpi::datatype::Equivalence;
use rayon::prelude::*;

use crate::cluster::Cluster;

/// How the rows of a distributed selection sit on the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Whole rows on each rank, rank 0's first.
    Owned,
    /// Every row's keys cut over the ranks.
    Spread,
}

impl Named for Layout {
    const KIND: &'static str = "layout";
    const ALL: &'static [Layout] = &[Layout::Owned, Layout::Spread];
    fn name(self) -> &'static str {
        match self {
            Layout::Owned => "owned",
            Layout::Spread => "spread",
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the answers of an owned-rows selection end up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answers {
    /// Every row's answer on rank 0, in row order (the others keep theirs).
    OnRoot,
    /// Each rank keeps the answers of its own rows.
    InPlace,
}

/// What one rank did in a distributed call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankReport {
    /// The rank.
    pub rank: usize,
    /// Rows it selected (owned) or held a part of (spread).
    pub rows: u64,
    /// Keys it held.
    pub keys: u64,
    /// Seconds of its own work (selecting, or counting and keeping).
    pub busy_s: f64,
    /// Seconds it waited for the others: in the spread layout, its time in collectives; in
    /// the owned layout (one closing round), the slowest rank's busy time less its own.
    pub waited_s: f64,
}

/// The answers of a distributed selection on this rank, and what every rank did.
#[derive(Clone, Debug, Default)]
pub struct Selection<K> {
    /// The answers this rank holds: owned, every row's on rank 0 with [`Answers::OnRoot`]
    /// (none elsewhere), or this rank's rows' with [`Answers::InPlace`]; spread, every row's
    /// on every rank.
    pub answers: Vec<K>,
    /// The index of `answers[0]` among all rows.
    pub first_row: usize,
    /// Rows over all ranks.
    pub rows: usize,
    /// Every rank's report, in rank order (on every rank).
    pub ranks: Vec<RankReport>,
    /// This rank's own selection statistics (owned layout; default for spread).
    pub local: SelectStats,
}

/// Seconds spent so far in collectives, for a rank's report.
#[derive(Default)]
struct Clock {
    collective_s: f64,
}

impl Clock {
    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.collective_s += t.elapsed().as_secs_f64();
        out
    }
}

/// Every rank's report, gathered on every rank.
fn gather_reports(cluster: &Cluster, mine: &RankReport) -> Result<Vec<RankReport>> {
    let figures = [
        mine.rows as f64,
        mine.keys as f64,
        mine.busy_s,
        mine.waited_s,
    ];
    let all = cluster.all_gather_varcount("gathering the ranks' reports", &figures)?;
    Ok(all
        .chunks_exact(4)
        .enumerate()
        .map(|(rank, f)| RankReport {
            rank,
            rows: f[0] as u64,
            keys: f[1] as u64,
            busy_s: f[2],
            waited_s: f[3],
        })
        .collect())
}

/// Selects the k-th smallest key of every row when each rank holds whole rows: this rank's
/// rows are `local` cut by `sublists` (no keys: no rows), rank 0's rows first. Each rank
/// selects its own with `selector` in `mode`; `answers` says where the results go.
///
/// A collective: every rank calls it with the same `k`, `mode` and `answers`.
pub fn select_owned<K: Key + Equivalence>(
    cluster: &Cluster,
    selector: &KSelector,
    local: &[K],
    sublists: &Sublists,
    k: usize,
    mode: Mode,
    answers: Answers,
) -> Result<Selection<K>> {
    let mode_code = Mode::ALL.iter().position(|&m| m == mode).unwrap_or(0) as u64;
    owned(
        cluster,
        local,
        sublists,
        k,
        ("the mode", mode_code),
        answers,
        |keys, cut| selector.select_with_stats(keys, cut, k, mode),
    )
}

/// [`select_owned`] where `select` selects this rank's rows (its keys and cut, when it has
/// any): any method, mode or strategy of the caller's.
pub fn select_owned_with<K: Key + Equivalence>(
    cluster: &Cluster,
    local: &[K],
    sublists: &Sublists,
    k: usize,
    answers: Answers,
    select: impl FnOnce(&[K], &Sublists) -> Result<(Vec<K>, SelectStats)>,
) -> Result<Selection<K>> {
    owned(cluster, local, sublists, k, ("", 0), answers, select)
}

/// The owned layout: select here, then one round that agrees on failures, checks that the
/// ranks passed the same `k` and `same` value, and gathers every rank's rows and times;
/// then the answers to rank 0 where asked.
fn owned<K: Key + Equivalence>(
    cluster: &Cluster,
    local: &[K],
    sublists: &Sublists,
    k: usize,
    same: (&str, u64),
    answers: Answers,
    select: impl FnOnce(&[K], &Sublists) -> Result<(Vec<K>, SelectStats)>,
) -> Result<Selection<K>> {
    let started = Instant::now();
    let selected = if local.is_empty() {
        empty_rows(sublists).map(|()| (Vec::new(), SelectStats::default()))
    } else {
        select(local, sublists)
    };
    let busy = started.elapsed();
    let rows_here = selected.as_ref().map_or(0, |(v, _)| v.len() as u64);
    let record = [
        k as u64,
        same.1,
        rows_here,
        local.len() as u64,
        busy.as_nanos() as u64,
    ];
    let ((mine, stats), records) =
        cluster.agree_gathering("selecting the rows", selected, &record)?;
    if records.iter().any(|r| r[0] != k as u64) {
        return Err(differ("k"));
    }
    if records.iter().any(|r| r[1] != same.1) {
        return Err(differ(same.0));
    }
    let first_row = records[..cluster.rank()].iter().map(|r| r[2]).sum::<u64>() as usize;
    let rows = records.iter().map(|r| r[2]).sum::<u64>() as usize;
    let slowest = records.iter().map(|r| r[4]).max().unwrap_or(0);
    let ranks = records
        .iter()
        .enumerate()
        .map(|(rank, r)| RankReport {
            rank,
            rows: r[2],
            keys: r[3],
            busy_s: r[4] as f64 * 1e-9,
            waited_s: (slowest - r[4]) as f64 * 1e-9,
        })
        .collect();
    let answers = match answers {
        Answers::InPlace => mine,
        Answers::OnRoot => cluster
            .gather_to_root("gathering the answers", &mine)?
            .unwrap_or_default(),
    };
    Ok(Selection {
        first_row: if cluster.is_root() { 0 } else { first_row },
        rows,
        ranks,
        local: stats,
        answers,
    })
}

fn differ(what: &str) -> Error {
    Error::InvalidArgument(format!(
        "the ranks passed different values of {what} (every rank must pass the same)"
    ))
}

/// A rank with no keys has no rows: its cut must say so too.
fn empty_rows(sublists: &Sublists) -> Result<()> {
    match sublists {
        Sublists::Equal(len) if *len > 0 => Ok(()),
        Sublists::Offsets(o) if o.iter().all(|&x| x == 0) => Ok(()),
        _ => Err(Error::InvalidArgument(format!(
            "this rank holds no keys, but its cut {sublists:?} names rows"
        ))),
    }
}

/// Rows one round of the spread layout takes at most: its histograms are this many KiB.
pub const ROWS_PER_ROUND: usize = 1 << 15;
const BUCKETS: usize = 256;
/// Keys one counting task takes, so that a few long rows still use every thread.
const TASK_KEYS: usize = 1 << 16;

/// Where this rank's part of the spread rows is, and so what counts it.
#[derive(Clone, Copy, Debug)]
pub enum SpreadPart<'a, K: Key> {
    /// In host memory: counted and kept on the rank's threads (rayon's pool).
    Host(&'a [K]),
    /// In SVM on `selector`'s device: the first digit counted and kept there by the device
    /// radix's kernels, the second counted on the way ([`KSelector::count_part_svm`]), and
    /// only the keys of both digits read back.
    Device {
        /// The selector whose device holds `keys`.
        selector: &'a KSelector,
        /// This rank's keys.
        keys: &'a SvmBuffer<K>,
    },
}

impl<K: Key> SpreadPart<'_, K> {
    /// Checks the row offsets into this part: from 0, never decreasing, ending at the host
    /// part's length or within the device buffer (which may be longer than the rows).
    fn check(&self, offsets: &[usize]) -> Result<()> {
        let (keys, whole) = match self {
            SpreadPart::Host(keys) => (keys.len(), true),
            SpreadPart::Device { keys, .. } => (keys.len(), false),
        };
        let end = offsets.last().copied();
        let fits = end.is_some_and(|e| if whole { e == keys } else { e <= keys });
        if offsets.first() != Some(&0) || !fits {
            let to = if whole { "end at" } else { "end within" };
            return Err(Error::InvalidArgument(format!(
                "row offsets must start at 0 and {to} {keys} (this rank's keys)"
            )));
        }
        if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
            return Err(Error::InvalidArgument(format!(
                "row offsets decrease at row {i} ({} then {})",
                offsets[i],
                offsets[i + 1]
            )));
        }
        Ok(())
    }
}

/// Selects the k-th smallest key of every row when every row's keys are cut over the ranks:
/// this rank's part of row `i` is `local[offsets[i]..offsets[i + 1]]` (it may be empty).
/// Every rank returns every row's answer, identical to one host's selection of the rows.
///
/// A collective: every rank calls it with the same number of rows and the same `k`.
pub fn select_spread<K: Key>(
    cluster: &Cluster,
    local: &[K],
    offsets: &[usize],
    k: usize,
) -> Result<Selection<K>> {
    select_spread_part(cluster, SpreadPart::Host(local), offsets, k)
}

/// [`select_spread`] with this rank's part where it is: in host memory or in SVM on a
/// device ([`SpreadPart`]). Ranks may mix the two.
pub fn select_spread_part<K: Key>(
    cluster: &Cluster,
    part: SpreadPart<'_, K>,
    offsets: &[usize],
    k: usize,
) -> Result<Selection<K>> {
    let checked = part.check(offsets);
    let rows = offsets.len().saturating_sub(1);
    let ((), records) =
        cluster.agree_gathering("checking the rows", checked, &[rows as u64, k as u64])?;
    if records.iter().any(|r| r[0] != rows as u64) {
        return Err(differ("the number of rows"));
    }
    if records.iter().any(|r| r[1] != k as u64) {
        return Err(differ("k"));
    }
    let mut clock = Clock::default();
    let lens: Vec<u64> = offsets.windows(2).map(|w| (w[1] - w[0]) as u64).collect();
    let totals = clock.time(|| cluster.all_reduce_sum("summing the row lengths", &lens));
    check_totals(&totals, k)?;
    let mut busy_s = 0.0;
    let mut answers = Vec::with_capacity(rows);
    for first in (0..rows).step_by(ROWS_PER_ROUND) {
        let end = (first + ROWS_PER_ROUND).min(rows);
        let mut round = SpreadRound {
            cluster,
            clock: &mut clock,
            busy_s: &mut busy_s,
            failed: None,
        };
        answers.extend(round.run(part, &offsets[first..=end], k)?);
    }
    let report = RankReport {
        rank: cluster.rank(),
        rows: lens.iter().filter(|&&l| l > 0).count() as u64,
        keys: offsets.last().copied().unwrap_or(0) as u64,
        busy_s,
        waited_s: clock.collective_s,
    };
    Ok(Selection {
        answers,
        first_row: 0,
        rows,
        ranks: gather_reports(cluster, &report)?,
        local: SelectStats::default(),
    })
}

fn check_totals(totals: &[u64], k: usize) -> Result<()> {
    if totals.is_empty() {
        return Err(Error::InvalidArgument("there are no rows".into()));
    }
    if let Some((i, &t)) = totals.iter().enumerate().min_by_key(|(_, &t)| t) {
        if k == 0 || k as u64 > t {
            return Err(Error::out_of_range(
                "k",
                k,
                format!("must be 1 to the shortest row's length over all ranks (row {i}: {t})"),
            ));
        }
    }
    if let Some((i, &t)) = totals
        .iter()
        .enumerate()
        .find(|(_, &t)| t > u32::MAX as u64)
    {
        return Err(Error::TooLarge {
            what: format!("keys of row {i} over all ranks"),
            size: t,
            limit: u32::MAX as u64,
        });
    }
    Ok(())
}

/// One round of rows: four digit passes, each counted here, summed over the ranks, and
/// narrowed to the k-th's bucket.
///
/// A device step can fail on one rank only; that rank keeps taking part in the sums (with
/// its failure flagged in one extra word of each), so every rank learns of it at the next
/// sum and leaves with the error ([`Cluster::agree`]) instead of waiting for it.
struct SpreadRound<'c> {
    cluster: &'c Cluster,
    clock: &'c mut Clock,
    busy_s: &'c mut f64,
    /// This rank's first failure in the round.
    failed: Option<Error>,
}

impl SpreadRound<'_> {
    /// The rows' answers.
    fn run<K: Key>(
        &mut self,
        part: SpreadPart<'_, K>,
        offsets: &[usize],
        k: usize,
    ) -> Result<Vec<K>> {
        let rows = offsets.len() - 1;
        // Rank of the k-th within each row's current bucket (1-based), and the digits fixed.
        let mut rank_in_bucket = vec![k as u32; rows];
        let mut prefix = vec![0u32; rows];
        let t = Instant::now();
        let (mut hist, counted) = match part {
            SpreadPart::Host(local) => (count_first(local, offsets), None),
            SpreadPart::Device { selector, keys } => match selector.count_part_svm(keys, offsets) {
                Ok(c) => (c.histograms().concat(), Some(c)),
                Err(e) => {
                    self.failed = Some(e);
                    (vec![0; rows * BUCKETS], None)
                }
            },
        };
        *self.busy_s += t.elapsed().as_secs_f64();
        let sums = self.sum(&mut hist)?;
        narrow(&sums, &mut rank_in_bucket, &mut prefix);
        // The first digit's bucket kept: on the host as images, on the device where the
        // keys are (its second-digit counts come back, the keys once that digit is fixed).
        let t = Instant::now();
        let (mut kept, mut on_device) = (Vec::new(), None);
        let mut hist = match (part, counted) {
            (SpreadPart::Host(local), _) => {
                kept = keep_first(local, offsets, &prefix, &hist);
                count_kept(&kept, 16)
            }
            (SpreadPart::Device { .. }, Some(counted)) => {
                let merged: Vec<[u32; BUCKETS]> = sums
                    .chunks_exact(BUCKETS)
                    .map(|c| c.try_into().expect("chunks of a histogram"))
                    .collect();
                match counted.keep(&merged, k) {
                    Ok(device_kept) => {
                        let second = device_kept.histograms().concat();
                        on_device = Some(device_kept);
                        second
                    }
                    Err(e) => {
                        self.failed = Some(e);
                        vec![0; rows * BUCKETS]
                    }
                }
            }
            (SpreadPart::Device { .. }, None) => vec![0; rows * BUCKETS],
        };
        *self.busy_s += t.elapsed().as_secs_f64();
        for pass in 1..4u32 {
            let shift = 24 - 8 * pass;
            if pass > 1 {
                let t = Instant::now();
                hist = count_kept(&kept, shift);
                *self.busy_s += t.elapsed().as_secs_f64();
            }
            let sums = self.sum(&mut hist)?;
            narrow(&sums, &mut rank_in_bucket, &mut prefix);
            if pass == 3 {
                break;
            }
            let t = Instant::now();
            if let Some(device_kept) = on_device.take() {
                let digits: Vec<u32> = prefix.iter().map(|p| p & 0xff).collect();
                kept = device_kept.take(&digits).unwrap_or_else(|e| {
                    self.failed = Some(e);
                    vec![Vec::new(); rows]
                });
            } else {
                kept.par_iter_mut().zip(&prefix).for_each(|(c, &p)| {
                    c.retain(|&x| x >> shift == p);
                });
            }
            *self.busy_s += t.elapsed().as_secs_f64();
        }
        Ok(prefix.iter().map(|&p| K::from_image(p)).collect())
    }

    /// Every rank's histograms added up, with one word more that counts the ranks that
    /// failed; if any did, every rank leaves with the lowest failed rank's error.
    fn sum(&mut self, hist: &mut Vec<u32>) -> Result<Vec<u32>> {
        hist.push(self.failed.is_some() as u32);
        let cluster = self.cluster;
        let mut sums = self
            .clock
            .time(|| cluster.all_reduce_sum("summing a digit's histograms", hist));
        hist.pop();
        if sums.pop().unwrap_or(0) > 0 {
            let local = self.failed.take().map_or(Ok(()), Err);
            cluster.agree("counting a digit", local)?;
        }
        Ok(sums)
    }
}

/// Fixes the digit each row's summed histogram `sums` places its k-th in.
fn narrow(sums: &[u32], rank_in_bucket: &mut [u32], prefix: &mut [u32]) {
    for (row, h) in sums.chunks_exact(BUCKETS).enumerate() {
        let (bucket, below) = pick(h, rank_in_bucket[row]);
        rank_in_bucket[row] -= below;
        prefix[row] = prefix[row] << 8 | bucket;
    }
}

/// The bucket holding the `rank`-th (1-based) of a histogram, and how many lie below it.
fn pick(h: &[u32], rank: u32) -> (u32, u32) {
    let mut below = 0u32;
    for (b, &c) in h.iter().enumerate() {
        if below + c >= rank {
            return (b as u32, below);
        }
        below += c;
    }
    // Unreachable while every rank counted its keys (the sums hold `rank` keys at least).
    (BUCKETS as u32 - 1, below)
}

/// The top digit's histogram of every row of the round, rows side by side.
fn count_first<K: Key>(local: &[K], offsets: &[usize]) -> Vec<u32> {
    let rows = offsets.len() - 1;
    let mut hist = vec![0u32; rows * BUCKETS];
    // Tasks: (row, part) with at most TASK_KEYS keys each, so long rows spread over threads.
    let tasks: Vec<(usize, usize, usize)> = (0..rows)
        .flat_map(|r| {
            let (a, b) = (offsets[r], offsets[r + 1]);
            (a..b)
                .step_by(TASK_KEYS)
                .map(move |s| (r, s, (s + TASK_KEYS).min(b)))
        })
        .collect();
    let counted: Vec<(usize, [u32; BUCKETS])> = tasks
        .par_iter()
        .map(|&(r, a, b)| (r, count_top(&local[a..b])))
        .collect();
    for (r, h) in counted {
        for (into, c) in hist[r * BUCKETS..(r + 1) * BUCKETS].iter_mut().zip(h) {
            *into += c;
        }
    }
    hist
}

/// The top digit's histogram of `keys`, counted in four lanes so that neighbouring keys of
/// one bucket do not wait on each other's increments.
fn count_top<K: Key>(keys: &[K]) -> [u32; BUCKETS] {
    let mut h = [[0u32; BUCKETS]; 4];
    let mut chunks = keys.chunks_exact(4);
    for c in &mut chunks {
        for lane in 0..4 {
            h[lane][(c[lane].to_image() >> 24) as usize] += 1;
        }
    }
    for &x in chunks.remainder() {
        h[0][(x.to_image() >> 24) as usize] += 1;
    }
    let mut out = h[0];
    for b in 0..BUCKETS {
        out[b] += h[1][b] + h[2][b] + h[3][b];
    }
    out
}

/// Each row's keys in the bucket its top digit `prefix` names, as images; `hist` (this
/// rank's counts) sizes each row's part exactly.
fn keep_first<K: Key>(
    local: &[K],
    offsets: &[usize],
    prefix: &[u32],
    hist: &[u32],
) -> Vec<Vec<u32>> {
    (0..offsets.len() - 1)
        .into_par_iter()
        .map(|r| {
            let mut kept = Vec::with_capacity(hist[r * BUCKETS + prefix[r] as usize] as usize);
            for &x in &local[offsets[r]..offsets[r + 1]] {
                let i = x.to_image();
                if i >> 24 == prefix[r] {
                    kept.push(i);
                }
            }
            kept
        })
        .collect()
}

/// The histogram of the digit at `shift` over each row's kept keys.
fn count_kept(kept: &[Vec<u32>], shift: u32) -> Vec<u32> {
    let mut hist = vec![0u32; kept.len() * BUCKETS];
    hist.par_chunks_mut(BUCKETS).zip(kept).for_each(|(h, c)| {
        for &x in c {
            h[((x >> shift) & 0xff) as usize] += 1;
        }
    });
    hist
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pick_finds_the_bucket_of_a_rank() {
        let mut h = [0u32; BUCKETS];
        h[3] = 2;
        h[7] = 5;
        assert_eq!(pick(&h, 1), (3, 0));
        assert_eq!(pick(&h, 2), (3, 0));
        assert_eq!(pick(&h, 3), (7, 2));
        assert_eq!(pick(&h, 7), (7, 2));
    }

    #[test]
    fn layouts_round_trip_through_names() {
        for &l in Layout::ALL {
            assert_eq!(Layout::from_name(l.name()), Some(l));
        }
    }

    #[test]
    fn offsets_are_checked() {
        let keys = [1i32, 2, 3];
        let host = SpreadPart::Host(&keys[..]);
        assert!(host.check(&[0, 2, 1, 3]).is_err());
        assert!(host.check(&[0, 2]).is_err());
        assert!(host.check(&[1, 3]).is_err());
        assert!(SpreadPart::Host(&keys[..0]).check(&[]).is_err());
        assert!(host.check(&[0, 0, 3, 3]).is_ok());
    }
}
