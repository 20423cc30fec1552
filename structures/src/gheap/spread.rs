//! The generalized heap over a device set ([`SpreadHeap`]): one device heap per member, each
//! holding a share of the keys. An insert gives each member a share by the speeds measured
//! on earlier calls (equal shares until then) and runs the members' inserts at once, each
//! on its own driver thread (a large insert is a bulk call there: one device sort). A delete
//! of the `n` smallest takes up to `n` from every member at once (each a sorted run), merges
//! the runs on the host and puts back what it took beyond the `n` smallest into the members
//! it came from. Deleting everything (the bulk sort: insert all, then delete all) puts back
//! nothing, so it costs each member's sort of its share plus one merge.
//!
//! Which members take part follows what was measured: the members' speeds over their
//! inserts and deletes, and the host merge's (see `split`): a member whose share would save
//! less than the merge costs sits out, and a set whose fastest member alone is predicted
//! faster keeps every key there.
//!
//! A member that fails (an OpenCL error, a lost device, a launch past the timeout) holds
//! keys the others do not have: the call returns [`Error::Lost`] naming it, and the heap
//! refuses later calls (its contents are no longer whole). [`SpreadHeap::members`] reports
//! each member's share and times.

use std::sync::Mutex;
use std::time::Instant;

use asym_runtime::{DeviceSet, Error, Result};
use rayon::prelude::*;

use super::device_heap::{DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey};

/// What one member of a [`SpreadHeap`] holds and did on the last call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemberReport {
    /// The device's label.
    pub device: String,
    /// Keys the member's heap holds.
    pub len: usize,
    /// Keys the last call moved into or out of this member (a delete's put-back included).
    pub keys: usize,
    /// Seconds the member's parts of the last call took.
    pub busy_s: f64,
    /// The member's measured speed, keys per second over its inserts and deletes (0: not
    /// measured yet).
    pub keys_per_s: f64,
}

struct Member<T: DeviceHeapKey> {
    heap: DeviceGeneralizedHeap<T>,
    /// Its label and what the last call did (`len` filled in when reported).
    report: MemberReport,
    /// Seconds and keys over every call so far (the speed for the next split).
    total_s: f64,
    total_keys: usize,
    /// A failure to inject into the member's next call (tests).
    fail_next: bool,
}

/// The generalized heap over the devices of a [`DeviceSet`].
pub struct SpreadHeap<T: DeviceHeapKey> {
    state: Mutex<State<T>>,
}

/// Everything a call reads and changes, under the heap's one lock.
struct State<T: DeviceHeapKey> {
    members: Vec<Member<T>>,
    /// The error of a member that failed: the heap is no longer whole.
    failed: Option<String>,
    /// The host merge's measured speed, keys per second (0: not measured yet).
    merge_keys_per_s: f64,
    /// Weights that fix each member's share of an insert instead of the measured split.
    fixed_shares: Option<Vec<f64>>,
}

impl<T: DeviceHeapKey + Sync> std::fmt::Debug for SpreadHeap<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpreadHeap")
            .field("members", &self.members())
            .finish()
    }
}

impl<T: DeviceHeapKey + Sync> SpreadHeap<T> {
    /// An empty heap with one device heap of `config` on each member of `set`.
    pub fn new(set: &DeviceSet, config: &DeviceHeapConfig) -> Result<Self> {
        let members = set
            .members()
            .iter()
            .map(|rt| {
                Ok(Member {
                    heap: DeviceGeneralizedHeap::new(rt, config)?,
                    report: MemberReport {
                        device: rt.profile().label(),
                        ..Default::default()
                    },
                    total_s: 0.0,
                    total_keys: 0,
                    fail_next: false,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SpreadHeap {
            state: Mutex::new(State {
                members,
                failed: None,
                merge_keys_per_s: 0.0,
                fixed_shares: None,
            }),
        })
    }

    /// Keys held, over every member.
    pub fn len(&self) -> usize {
        self.lock().members.iter().map(|m| m.heap.len()).sum()
    }

    /// Whether no member holds a key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each member's keys held, share of the last call, time and measured speed.
    pub fn members(&self) -> Vec<MemberReport> {
        self.lock()
            .members
            .iter()
            .map(|m| MemberReport {
                len: m.heap.len(),
                ..m.report.clone()
            })
            .collect()
    }

    /// Fixes each member's share of later inserts to `weights` (one per member, in
    /// proportion; a member weighted 0 takes none) instead of the split measured speeds
    /// choose; `None` returns to measuring. For measuring a split the set would not choose
    /// (the benchmark's even split over two GPUs) or keeping keys off a member.
    pub fn set_shares(&self, weights: Option<&[f64]>) -> Result<()> {
        let mut state = self.lock();
        if let Some(w) = weights {
            let members = state.members.len();
            if w.len() != members || w.iter().any(|x| !x.is_finite() || *x < 0.0) {
                return Err(Error::InvalidArgument(format!(
                    "shares {w:?}: a set of {members} needs {members} finite weights, none negative"
                )));
            }
            if w.iter().all(|&x| x == 0.0) {
                return Err(Error::InvalidArgument(
                    "shares: at least one member must take keys".into(),
                ));
            }
        }
        state.fixed_shares = weights.map(<[f64]>::to_vec);
        Ok(())
    }

    /// Makes member `member` fail with [`Error::Lost`] in the next call that gives it work:
    /// a fault injection for tests.
    #[doc(hidden)]
    pub fn inject_member_failure(&self, member: usize) -> Result<()> {
        let mut state = self.lock();
        let len = state.members.len();
        let m = state
            .members
            .get_mut(member)
            .ok_or_else(|| Error::InvalidArgument(format!("member {member} of a set of {len}")))?;
        m.fail_next = true;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The heap's state for a call: refused once a member has failed.
    fn usable(&self) -> Result<std::sync::MutexGuard<'_, State<T>>> {
        let state = self.lock();
        match &state.failed {
            Some(e) => Err(Error::Lost(format!(
                "a member of this device-set heap failed earlier ({e}); the keys it held are lost"
            ))),
            None => Ok(state),
        }
    }

    /// Inserts `keys`, each member taking a share by its measured speed.
    pub fn insert(&self, keys: &[T]) -> Result<()> {
        let mut state = self.usable()?;
        if keys.is_empty() {
            return Ok(());
        }
        let shares = match &state.fixed_shares {
            Some(weights) => split_by(keys.len(), weights),
            None => {
                let rates: Vec<f64> = state.members.iter().map(|m| m.report.keys_per_s).collect();
                split(keys.len(), &rates, state.merge_keys_per_s)
            }
        };
        let mut parts = Vec::with_capacity(shares.len());
        let mut at = 0;
        for &s in &shares {
            parts.push(&keys[at..at + s]);
            at += s;
        }
        begin_call(&mut state.members);
        let results = run_members(&mut state.members, |m, i| {
            let part = parts[i];
            if part.is_empty() {
                return Ok((0, ()));
            }
            m.heap.insert(part).map(|_| (part.len(), ()))
        });
        state.settle(results).map(|_| ())
    }

    /// Removes the `n` smallest keys and returns them sorted (fewer if the heap holds
    /// fewer): up to `n` from every member at once, merged, the surplus put back.
    pub fn delete_min(&self, n: usize) -> Result<Vec<T>> {
        let mut state = self.usable()?;
        let held: usize = state.members.iter().map(|m| m.heap.len()).sum();
        let n = n.min(held);
        if n == 0 {
            return Ok(Vec::new());
        }
        begin_call(&mut state.members);
        let results = run_members(&mut state.members, |m, _| {
            let take = n.min(m.heap.len());
            if take == 0 {
                return Ok((0, Vec::new()));
            }
            m.heap.delete_min(take).map(|run| (run.len(), run))
        });
        let runs = state.settle(results)?;
        let merging = runs.iter().filter(|r| !r.is_empty()).count() > 1;
        let merge_started = Instant::now();
        let (out, surplus) = merge_runs(runs, n);
        if merging {
            state.merge_keys_per_s =
                out.len() as f64 / merge_started.elapsed().as_secs_f64().max(1e-9);
        }
        // Each member gets back its own largest keys: they were in no other member.
        let back = run_members(&mut state.members, |m, i| {
            let keys = &surplus[i];
            if keys.is_empty() {
                return Ok((0, ()));
            }
            m.heap.insert(keys).map(|_| (keys.len(), ()))
        });
        state.settle(back)?;
        Ok(out)
    }
}

impl<T: DeviceHeapKey> State<T> {
    /// Books each member's outcome; a failure poisons the heap and is returned.
    fn settle<R>(&mut self, results: Vec<(Result<(usize, R)>, f64)>) -> Result<Vec<R>> {
        let mut out = Vec::with_capacity(results.len());
        let mut first_error = None;
        for (m, (result, busy_s)) in self.members.iter_mut().zip(results) {
            match result {
                Ok((keys, r)) => {
                    if keys > 0 {
                        m.report.keys += keys;
                        m.report.busy_s += busy_s;
                        m.total_s += busy_s;
                        m.total_keys += keys;
                        m.report.keys_per_s = m.total_keys as f64 / m.total_s.max(1e-9);
                    }
                    out.push(r);
                }
                Err(e) => {
                    let e = Error::Lost(format!("{}: {e}", m.report.device));
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        Ok(out)
    }
}

/// Clears what the members' reports say of the last call.
fn begin_call<T: DeviceHeapKey>(members: &mut [Member<T>]) {
    for m in members {
        m.report.keys = 0;
        m.report.busy_s = 0.0;
    }
}

/// Runs `f` on every member at once (one driver thread each): the keys each moved, what it
/// returned and the seconds it took. A member with an injected failure fails instead.
fn run_members<T: DeviceHeapKey + Sync, R: Send>(
    members: &mut [Member<T>],
    f: impl Fn(&Member<T>, usize) -> Result<(usize, R)> + Sync,
) -> Vec<(Result<(usize, R)>, f64)> {
    let fail: Vec<bool> = members
        .iter_mut()
        .map(|m| std::mem::take(&mut m.fail_next))
        .collect();
    let members = &*members;
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let fail = fail[i];
                s.spawn(move || {
                    let t = Instant::now();
                    let r = if fail {
                        Err(Error::Lost("a failure injected into this member".into()))
                    } else {
                        f(m, i)
                    };
                    (r, t.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    (
                        Err(Error::Lost("a member's driver thread panicked".into())),
                        0.0,
                    )
                })
            })
            .collect()
    })
}

/// Shares of `total` keys for the members: equal while any member is unmeasured; then the
/// group predicted fastest, each member of it a share by its speed. A group of several costs
/// a host merge on the way out (`merge_keys_per_s`, measured; 0 while unknown), so a member
/// joins only where its speed saves more than the merge costs: on the H200 machine PoCL's
/// 3 % of 2^26 keys saved ~2 ms of NVIDIA's 73 and cost a 67M-key merge (~220 ms with copies).
/// A member's speed counts every key an insert or a delete moved, and each key inserted is
/// deleted later: its life on a member costs two keys' time, and one key's merge.
fn split(total: usize, rates: &[f64], merge_keys_per_s: f64) -> Vec<usize> {
    let weights: Vec<f64> = if rates.iter().any(|&r| r <= 0.0) {
        vec![1.0; rates.len()]
    } else {
        let all: f64 = rates.iter().sum();
        let merge_s = if merge_keys_per_s > 0.0 {
            total as f64 / merge_keys_per_s
        } else {
            0.0
        };
        let moved = 2.0 * total as f64;
        let together_s = moved / all + merge_s;
        // The first of the fastest, on a tie.
        let fastest = (0..rates.len())
            .reduce(|a, b| if rates[b] > rates[a] { b } else { a })
            .unwrap_or(0);
        let alone_s = moved / rates[fastest];
        if rates.len() > 1 && alone_s <= together_s {
            (0..rates.len())
                .map(|i| if i == fastest { 1.0 } else { 0.0 })
                .collect()
        } else {
            rates.to_vec()
        }
    };
    split_by(total, &weights)
}

/// `total` keys cut in proportion to `weights` (not all 0): cumulative cuts, so the shares
/// add up to `total` whatever the rounding.
fn split_by(total: usize, weights: &[f64]) -> Vec<usize> {
    let sum: f64 = weights.iter().sum();
    let mut shares = Vec::with_capacity(weights.len());
    let (mut acc, mut at) = (0.0, 0usize);
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        let end = if i + 1 == weights.len() {
            total
        } else {
            ((total as f64 * acc / sum).round() as usize).clamp(at, total)
        };
        shares.push(end - at);
        at = end;
    }
    shares
}

/// The `n` smallest keys of the sorted `runs`, sorted, and each run's keys beyond them.
fn merge_runs<T: DeviceHeapKey + Sync>(mut runs: Vec<Vec<T>>, n: usize) -> (Vec<T>, Vec<Vec<T>>) {
    let key = |x: &T| x.to_repr();
    let mut cuts: Vec<usize> = runs.iter().map(|r| r.len()).collect();
    if cuts.iter().sum::<usize>() > n {
        cuts = kth_cut(&runs, n);
    }
    let surplus: Vec<Vec<T>> = runs
        .iter_mut()
        .zip(&cuts)
        .map(|(r, &c)| r.split_off(c))
        .collect();
    runs.retain(|r| !r.is_empty());
    // Pairwise, from the runs themselves (one pass for two members).
    while runs.len() > 1 {
        let b = runs.pop().unwrap_or_default();
        let a = runs.pop().unwrap_or_default();
        runs.push(par_merge(&a, &b, &key));
    }
    (runs.pop().unwrap_or_default(), surplus)
}

/// How many keys of each sorted run are among the `n` smallest of all (ties broken by run
/// order, then position).
fn kth_cut<T: DeviceHeapKey>(runs: &[Vec<T>], n: usize) -> Vec<usize> {
    // v, the n-th smallest: the least key with at least n keys <= it. Keys <= x only grow
    // with x, so in each run the first such key is found by binary search, and v is the
    // least of those (no copy of the runs).
    let count_le = |v: &T::Repr| -> usize {
        runs.iter()
            .map(|r| r.partition_point(|x| x.to_repr() <= *v))
            .sum()
    };
    let Some(v) = runs
        .iter()
        .filter_map(|r| {
            let p = r.partition_point(|x| count_le(&x.to_repr()) < n);
            r.get(p).map(|x| x.to_repr())
        })
        .min()
    else {
        // Fewer than n keys in all: every key goes.
        return runs.iter().map(Vec::len).collect();
    };
    let v = &v;
    // Keys < v all go; of the keys == v, as many as complete n, run by run.
    let mut cuts: Vec<usize> = runs
        .iter()
        .map(|r| r.partition_point(|x| x.to_repr() < *v))
        .collect();
    let mut left = n - cuts.iter().sum::<usize>();
    for (r, c) in runs.iter().zip(cuts.iter_mut()) {
        let equal = r.partition_point(|x| x.to_repr() <= *v) - *c;
        let take = equal.min(left);
        *c += take;
        left -= take;
    }
    cuts
}

/// The stable merge of sorted `a` and `b` (ties: `a` first), in parallel: the output is cut
/// into equal chunks and each chunk's inputs found by merge path.
fn par_merge<T: DeviceHeapKey + Sync, K: Ord>(
    a: &[T],
    b: &[T],
    key: &(impl Fn(&T) -> K + Sync),
) -> Vec<T> {
    let total = a.len() + b.len();
    let Some(&fill) = a.first().or(b.first()) else {
        return Vec::new();
    };
    let chunk = total
        .div_ceil(rayon::current_num_threads() * 4)
        .max(1 << 16);
    let cut = |d: usize| {
        // The split (i, d - i) where a[..i] and b[..d - i] are the first d keys.
        let (mut lo, mut hi) = (d.saturating_sub(b.len()), d.min(a.len()));
        while lo < hi {
            let i = (lo + hi) / 2;
            if key(&a[i]) <= key(&b[d - i - 1]) {
                lo = i + 1;
            } else {
                hi = i;
            }
        }
        (lo, d - lo)
    };
    let mut out: Vec<T> = Vec::with_capacity(total);
    out.par_extend(rayon::iter::repeat_n(fill, total));
    out.par_chunks_mut(chunk).enumerate().for_each(|(c, dst)| {
        let (mut i, mut j) = cut(c * chunk);
        for slot in dst.iter_mut() {
            let take_b = j < b.len() && (i >= a.len() || key(&b[j]) < key(&a[i]));
            if take_b {
                *slot = b[j];
                j += 1;
            } else {
                *slot = a[i];
                i += 1;
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::{merge_runs, split, split_by};

    #[test]
    fn a_member_joins_only_where_it_saves_more_than_the_merge_costs() {
        assert_eq!(
            split(1000, &[0.0, 5.0], 0.0),
            vec![500, 500],
            "unmeasured: equal"
        );
        // Two equal members and a fast merge: half each.
        assert_eq!(split(1000, &[1e9, 1e9], 1e10), vec![500, 500]);
        // A member at 1/40 of the other saves 2.4 % of the time; the merge costs more.
        assert_eq!(split(1_000_000, &[1.7e9, 4.4e7], 3e8), vec![1_000_000, 0]);
        // Merge speed unknown: everyone by speed (the merge gets measured).
        let s = split(1000, &[3.0, 1.0], 0.0);
        assert_eq!(s, vec![750, 250]);
        assert_eq!(split(7, &[1.0], 1.0), vec![7]);
        // Two equal members, a merge at 1.5x a member's speed: each key's life (insert and
        // delete) on one member costs 2 / 1e9 s, on two 1 / 1e9 s plus 0.67 / 1e9 s merging.
        assert_eq!(split(1000, &[1e9, 1e9], 1.5e9), vec![500, 500]);
        // A merge slower than half a member's speed: the second member saves less than it costs.
        assert_eq!(split(1000, &[1e9, 1e9], 0.9e9), vec![1000, 0]);
    }

    #[test]
    fn fixed_weights_cut_every_key_once() {
        assert_eq!(split_by(10, &[1.0, 1.0]), vec![5, 5]);
        assert_eq!(split_by(7, &[0.0, 1.0, 0.0]), vec![0, 7, 0]);
        assert_eq!(split_by(1, &[1.0, 1.0]), vec![1, 0]);
        for total in [0, 1, 2, 3, 999, 1 << 30] {
            for w in [vec![1.0, 2.0, 3.0], vec![1e-300, 1.0], vec![0.1; 7]] {
                let s = split_by(total, &w);
                assert_eq!(s.iter().sum::<usize>(), total, "{total} {w:?}");
            }
        }
    }

    #[test]
    fn merging_runs_keeps_the_n_smallest_and_returns_the_rest_to_their_runs() {
        let runs = vec![vec![1, 4, 4, 9], vec![2, 4, 5], vec![], vec![0, 10]];
        let (out, surplus) = merge_runs::<i32>(runs.clone(), 5);
        assert_eq!(out, vec![0, 1, 2, 4, 4]);
        let mut rest: Vec<i32> = surplus.concat();
        rest.sort_unstable();
        assert_eq!(rest, vec![4, 5, 9, 10]);
        assert_eq!(surplus[2], Vec::<i32>::new());
        let (all, none) = merge_runs::<i32>(runs, 100);
        assert_eq!(all, vec![0, 1, 2, 4, 4, 4, 5, 9, 10]);
        assert!(none.iter().all(Vec::is_empty));
        // Large enough for several parallel chunks.
        let a: Vec<i32> = (0..300_000).map(|x| x * 2).collect();
        let b: Vec<i32> = (0..200_000).map(|x| x * 3).collect();
        let (out, _) = merge_runs(vec![a.clone(), b.clone()], usize::MAX);
        let mut want = [a, b].concat();
        want.sort_unstable();
        assert_eq!(out, want);
        // One run spent early in every chunk (disjoint ranges, either order), and runs of
        // one key throughout (ties: the first run's keys first).
        for (a, b) in [
            (
                (0..150_000).collect::<Vec<i32>>(),
                (150_000..400_000).collect::<Vec<i32>>(),
            ),
            ((150_000..400_000).collect(), (0..150_000).collect()),
            (vec![7; 200_000], vec![7; 170_001]),
        ] {
            let (out, _) = merge_runs(vec![a.clone(), b.clone()], usize::MAX);
            let mut want = [a, b].concat();
            want.sort_unstable();
            assert_eq!(out, want);
        }
    }
}
