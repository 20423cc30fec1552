//! The heap's range design across ranks ([`DistributedHeap`]), and the bulk sort across ranks
//! it rests on ([`sample_sort`]).
//!
//! Ranks hold ranges of key values in rank order: rank r holds the keys `k` with
//! `splitters[r - 1] <= k < splitters[r]`, each in a heap of its own (any placement: the
//! latency threads, its device, both: a [`BatchHeap`]). The splitters are chosen from a
//! sample of every rank's keys (quantiles of [`SAMPLE`] keys per rank, gathered), so the
//! ranges hold about equal shares of the keys a job inserts.
//!
//! - `insert`: every rank routes its keys to the ranks whose ranges hold them (a binary search
//!   in the splitters and one `MPI_Alltoallv`), and each inserts what it received;
//! - `delete_min(n)`: the n smallest keys are the first ranks' in range order: every rank
//!   learns every rank's count (one all-gather) and deletes its share, so no key moves; the
//!   answer is every rank's part in rank order (on rank 0 with `delete_min_to_root`);
//! - where inserts drift so that one rank holds more than [`REBALANCE_AT`] times the mean,
//!   the next insert first draws the keys out, chooses new splitters from them and sends
//!   every key to its new range (a sample sort of the heap).
//!
//! Messages per call and rank: insert, its keys once (8 bytes of counts per rank beside);
//! delete, 8 bytes per rank and the agreement. Every call is a collective and agrees on
//! failures ([`Cluster::agree`]).

use asym_runtime::{Error, Result};
use asym_structures::BatchHeap;
use mpi::datatype::Equivalence;
use rayon::prelude::*;

use crate::cluster::Cluster;

/// Keys each rank gives the splitters' sample.
pub const SAMPLE: usize = 1024;
/// A rank holding more than this many times the mean share makes the next insert rebalance.
pub const REBALANCE_AT: f64 = 1.5;

/// A key of a distributed heap or sort: ordered, sent as it is.
pub trait RankKey: Equivalence + Ord + Copy + Default + Send + Sync {}
impl<T: Equivalence + Ord + Copy + Default + Send + Sync> RankKey for T {}

/// `P - 1` splitters from every rank's sample of `keys` (one all-gather): quantiles of the
/// gathered sample, so that each range holds about `1 / P` of the keys. `None` when no rank
/// has a key.
fn choose_splitters<T: RankKey>(cluster: &Cluster, keys: &[T]) -> Result<Option<Vec<T>>> {
    let step = (keys.len() / SAMPLE).max(1);
    let sample: Vec<T> = keys.iter().step_by(step).take(SAMPLE).copied().collect();
    let mut all = cluster.all_gather_varcount("sampling the keys", &sample)?;
    if all.is_empty() {
        return Ok(None);
    }
    all.par_sort_unstable();
    let p = cluster.size();
    Ok(Some((1..p).map(|r| all[r * all.len() / p]).collect()))
}

/// Keys one routing task bins at a time.
const ROUTE_CHUNK: usize = 1 << 16;

/// Sends every key of `keys` to the rank whose range holds it (one `MPI_Alltoallv`);
/// returns what this rank received. The binning runs on every thread: each chunk of keys is
/// binned by destination, then each destination's part of the send buffer is filled from
/// the chunks' bins in order.
fn route<T: RankKey>(cluster: &Cluster, keys: &[T], splitters: &[T]) -> Result<Vec<T>> {
    let p = cluster.size();
    let bins: Vec<Vec<Vec<T>>> = keys
        .par_chunks(ROUTE_CHUNK)
        .map(|chunk| {
            let mut bins = vec![Vec::new(); p];
            for k in chunk {
                bins[splitters.partition_point(|s| s <= k).min(p - 1)].push(*k);
            }
            bins
        })
        .collect();
    let mut offsets = vec![0usize; p + 1];
    for (d, at) in (0..p).zip(1..) {
        offsets[at] = offsets[d] + bins.iter().map(|b| b[d].len()).sum::<usize>();
    }
    let mut send = vec![T::default(); keys.len()];
    let mut parts = Vec::with_capacity(p);
    let mut rest = &mut send[..];
    for d in 0..p {
        let (part, tail) = rest.split_at_mut(offsets[d + 1] - offsets[d]);
        parts.push(part);
        rest = tail;
    }
    parts.into_par_iter().enumerate().for_each(|(d, part)| {
        let mut at = 0;
        for b in &bins {
            part[at..at + b[d].len()].copy_from_slice(&b[d]);
            at += b[d].len();
        }
    });
    let (received, _) =
        cluster.all_to_all_varcount("routing keys to their ranges", &send, &offsets)?;
    Ok(received)
}

/// Sorts keys spread over the ranks: every rank passes its own, and gets back its range of
/// all of them, sorted (rank 0 the smallest). Sample sort: splitters from a sample, one
/// `MPI_Alltoallv`, a local sort of what arrived. A collective.
pub fn sample_sort<T: RankKey>(cluster: &Cluster, keys: &[T]) -> Result<Vec<T>> {
    let Some(splitters) = choose_splitters(cluster, keys)? else {
        return Ok(Vec::new());
    };
    let mut mine = route(cluster, keys, &splitters)?;
    mine.par_sort_unstable();
    Ok(mine)
}

/// A min-heap over every rank: ranges of key values in rank order, each rank's range in its
/// own [`BatchHeap`]. Every call is a collective.
pub struct DistributedHeap<'a, T> {
    cluster: &'a Cluster,
    local: Box<dyn BatchHeap<T> + 'a>,
    /// Rank r's range starts at `splitters[r - 1]` (rank 0's at the least key); `None`
    /// until the first insert that holds keys.
    splitters: Option<Vec<T>>,
    /// Every rank's count, as the last call left them.
    counts: Vec<u64>,
    rebalances: usize,
    /// Keys held after the last redraw: a skew redraws again only once the heap has grown
    /// past twice that (keys that no splitter can part, all equal, never redraw in a loop).
    redrawn_at: usize,
}

impl<'a, T: RankKey> DistributedHeap<'a, T> {
    /// An empty heap over the ranks of `cluster`, this rank's range kept in `local` (empty).
    pub fn new(cluster: &'a Cluster, local: Box<dyn BatchHeap<T> + 'a>) -> Result<Self> {
        let held = local.len();
        let empty = if held == 0 {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "a distributed heap starts empty; this rank's local heap holds {held} keys"
            )))
        };
        cluster.agree("starting a distributed heap", empty)?;
        Ok(DistributedHeap {
            cluster,
            local,
            splitters: None,
            counts: vec![0; cluster.size()],
            rebalances: 0,
            redrawn_at: 0,
        })
    }

    /// Keys over every rank.
    pub fn len(&self) -> usize {
        self.counts.iter().sum::<u64>() as usize
    }

    /// Whether no rank holds a key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every rank's count, in rank order.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The splitters: rank r holds keys from `splitters()[r - 1]` up to `splitters()[r]`.
    pub fn splitters(&self) -> &[T] {
        self.splitters.as_deref().unwrap_or_default()
    }

    /// How many times inserts have redrawn the ranges.
    pub fn rebalances(&self) -> usize {
        self.rebalances
    }

    /// Ends a call: agrees on `local`'s outcome and gathers every rank's count.
    fn close<R>(&mut self, step: &str, local: Result<R>) -> Result<R> {
        let held = self.local.len() as u64;
        let (out, records) = self.cluster.agree_gathering(step, local, &[held])?;
        self.counts = records.iter().map(|r| r[0]).collect();
        Ok(out)
    }

    /// Adds every rank's `keys` (each rank passes its own; any may pass none).
    pub fn insert(&mut self, keys: &[T]) -> Result<()> {
        let splitters = match &self.splitters {
            Some(s) if !self.skewed() => s,
            _ => return self.redraw(keys),
        };
        let mine = route(self.cluster, keys, splitters)?;
        let inserted = self.local.insert(&mine);
        self.close("inserting", inserted)
    }

    /// Whether a rank holds more than [`REBALANCE_AT`] times the mean share, the heap is
    /// large enough for a sample to tell, and it has doubled since the last redraw. Every
    /// rank decides alike (the counts are gathered).
    fn skewed(&self) -> bool {
        let len = self.len();
        let mean = len as f64 / self.cluster.size() as f64;
        self.counts.iter().any(|&c| c as f64 > REBALANCE_AT * mean)
            && len >= self.cluster.size() * SAMPLE
            && len >= 2 * self.redrawn_at
    }

    /// Draws every key out, chooses splitters from them and `keys`, and sends each to its
    /// new range.
    fn redraw(&mut self, keys: &[T]) -> Result<()> {
        let held = self.local.len();
        let drawn = if held == 0 {
            Ok(Vec::new())
        } else {
            self.local.delete_min(held)
        };
        let mut all = self.cluster.agree("drawing the keys out", drawn)?;
        all.extend_from_slice(keys);
        if let Some(splitters) = choose_splitters(self.cluster, &all)? {
            if self.splitters.is_some() {
                self.rebalances += 1;
            }
            all = route(self.cluster, &all, &splitters)?;
            self.splitters = Some(splitters);
        }
        let inserted = self.local.insert(&all);
        self.close("inserting", inserted)?;
        self.redrawn_at = self.len();
        Ok(())
    }

    /// Removes the `n` smallest keys over every rank (all of them where fewer are held) and
    /// returns this rank's part of them, ascending: the answer is every rank's part in rank
    /// order.
    pub fn delete_min(&mut self, n: usize) -> Result<Vec<T>> {
        let before: u64 = self.counts[..self.cluster.rank()].iter().sum();
        let mine = self.counts[self.cluster.rank()];
        let take = (n as u64).saturating_sub(before).min(mine) as usize;
        let deleted = if take == 0 {
            Ok(Vec::new())
        } else {
            self.local.delete_min(take)
        };
        self.close("deleting the smallest keys", deleted)
    }

    /// [`DistributedHeap::delete_min`] with the whole answer gathered on rank 0, ascending
    /// (`None` on the other ranks).
    pub fn delete_min_to_root(&mut self, n: usize) -> Result<Option<Vec<T>>> {
        let mine = self.delete_min(n)?;
        self.cluster
            .gather_to_root("gathering the smallest keys", &mine)
    }
}
