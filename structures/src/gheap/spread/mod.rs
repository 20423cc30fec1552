//! The generalized heap over a device set, or over lanes of one device ([`SpreadHeap`]): one
//! device heap per member, each holding a range of the key values. A member is a device of
//! the set ([`SpreadHeap::new`]) or a lane of one device ([`SpreadHeap::lanes`]): a heap
//! with its own command queue, so that the lanes' launches run on the device at once, and a
//! call spanning several ranges runs several of the seed's INS/DEL pipelines instead of one
//! (docs/benchmarks/heap.md, range lanes). Every key a member holds is at most every key the
//! members after it hold, so a delete of the `n` smallest takes them from the members in
//! order (the first member's keys, then the next's), every member's part at once, and the
//! result is their runs one after the other, each member copying its run into its own part
//! of the answer: no merge, nothing put back. Deleting everything (the bulk sort: insert
//! all, then delete all) costs each member's sort of its range and the host's first touch
//! of the answer's memory.
//!
//! The ranges are cut when an insert meets an empty heap, from a sample of its keys, each
//! member a range holding a share of the sample by its speed measured on earlier calls
//! (equal shares until then, or the weights [`SpreadHeap::set_shares`] fixes); they stay
//! until the heap is empty again. An insert routes each key to the member whose range holds
//! it (keys equal to a cut value may go to either side: they are spread by position, so a
//! heap of equal keys still splits): one parallel pass counts each member's keys per chunk
//! of the call, then a second reads each key once more and writes it straight into its
//! member's mapped staging, every member's at once
//! ([`DeviceGeneralizedHeap::insert_each_with`]), after which each member sorts them (a bulk
//! call) or runs its INS operations. Keys that arrive later outside the first insert's
//! spread go to the first or last member: balance follows the first insert.
//!
//! Which members take part follows what was measured: the members' speeds over their
//! inserts and deletes, and the host's routing (see `shares`): a member whose share would
//! save less than the routing costs sits out, and a set whose fastest member alone is
//! predicted faster keeps every key there (no routing at all).
//!
//! A member that fails (an OpenCL error, a lost device, a launch past the timeout) holds
//! keys the others do not have: the call returns its error (a device fault as
//! [`Error::DeviceLost`] naming it), and the heap refuses later calls as
//! [`Error::Corrupted`] (its contents are no longer whole). [`SpreadHeap::members`] reports
//! each member's share and times.

use std::sync::Mutex;
use std::time::Instant;

use asym_runtime::faults::retry_once;
use asym_runtime::host_memory::huge_page_vec;
use asym_runtime::spread::{Failures, MemberReport, SpeedModel, Worker};
use asym_runtime::{DeviceKind, DeviceSet, Error, Result, Runtime};
use rayon::prelude::*;

use super::device_heap::{DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey, DeviceHeapStats};

mod members;
mod routing;

use members::{begin_call, run_members};

use routing::{count_routes, cut_ranges, fill_routed, routed_to, shares, Ranges};

/// Most lanes [`SpreadHeap::lanes`] puts on one device.
pub const MAX_LANES: usize = 64;

/// Fewest work-groups a lane of [`SpreadHeap::lanes`] gets by default: an INS pipeline needs
/// about 16 to stay full (fewer groups left the inserts slower on the GPU machine).
pub const LANE_MIN_GROUPS: usize = 16;

struct Member<T: DeviceHeapKey> {
    heap: DeviceGeneralizedHeap<T>,
    /// Its label and what the last call did (`held` filled in when reported).
    report: MemberReport,
    /// Its speed over the keys its inserts and deletes moved (the next split's).
    model: SpeedModel,
}

/// The generalized heap over the devices of a [`DeviceSet`].
pub struct SpreadHeap<T: DeviceHeapKey> {
    state: Mutex<State<T>>,
}

/// Everything a call reads and changes, under the heap's one lock.
struct State<T: DeviceHeapKey> {
    members: Vec<Member<T>>,
    /// The set's failure record and injected faults (a step is a call).
    failures: Failures,
    /// The error of a member that failed: the heap is no longer whole.
    failed: Option<String>,
    /// The ranges of key values the members hold (cut when an insert meets an empty heap).
    ranges: Option<Ranges<T::Repr>>,
    /// The host's routing (an insert's counting pass over its keys, a delete's first touch
    /// of the answer) over every call that routed keys to several members: keys and
    /// seconds.
    routed_keys: usize,
    routed_s: f64,
    /// Seconds the last call spent routing keys on the host.
    last_routing_s: f64,
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
            .map(|rt| (rt.clone(), rt.profile().label()))
            .collect();
        Self::with_members(members, config)
    }

    /// An empty heap of `lanes` device heaps of `config` on `rt`'s one device, each holding a
    /// range of the key values and, on a GPU, running on its own queue
    /// ([`Runtime::with_new_queue`]): a call whose keys span several ranges runs every lane's
    /// part on the device at once. On a CPU device the lanes share `rt`'s queue: one kernel
    /// there already runs on every core, and PoCL 3.1 (Debian 12's) aborts the process when
    /// one kernel runs from two queues at once with different grid sizes (its compiled-kernel
    /// cache releases the wrong entry, `pocl_release_dlhandle_cache`).
    /// The seed's operations pass a heap's root lock from work-group to work-group, one INS
    /// or DEL after another, so one heap's pipeline leaves most of a large GPU idle; `lanes`
    /// heaps are `lanes` pipelines, each shallower. A call whose keys all fall in one range
    /// (a delete of the few smallest) runs one lane alone, as one heap would.
    ///
    /// `config` describes the whole heap: each lane starts with room for its share of
    /// `initial_nodes` and a quarter more (the ranges are cut from a sample, and a lane that
    /// grows in a call pays its allocations there: docs/decisions.md); `max_nodes` bounds
    /// each lane,
    /// since one range may end up holding every key. Where `config` names no work-group
    /// count, each lane takes the device's default count divided among the lanes, at least
    /// [`LANE_MIN_GROUPS`] (the groups that keep an INS pipeline full).
    pub fn lanes(rt: &Runtime, lanes: usize, config: &DeviceHeapConfig) -> Result<Self> {
        if !(1..=MAX_LANES).contains(&lanes) {
            return Err(Error::out_of_range(
                "lanes",
                lanes,
                format!("a heap on one device takes 1 to {MAX_LANES}"),
            ));
        }
        let mut config = config.clone();
        config.initial_nodes = (config.initial_nodes.div_ceil(lanes) * 5 / 4).max(1);
        if config.work_groups.is_none() {
            let (groups, _) = DeviceHeapConfig::default_shape(rt, config.batch);
            config.work_groups = Some((groups / lanes).max(LANE_MIN_GROUPS).min(groups));
        }
        let label = rt.profile().label();
        let own_queues = rt.profile().kind != DeviceKind::Cpu;
        let members = (0..lanes)
            .map(|i| {
                let lane = if own_queues {
                    rt.with_new_queue()?
                } else {
                    rt.clone()
                };
                Ok((lane, format!("{label} lane {i}")))
            })
            .collect::<Result<Vec<_>>>()?;
        Self::with_members(members, &config)
    }

    /// An empty heap with one device heap of `config` on each runtime, labelled as given.
    fn with_members(members: Vec<(Runtime, String)>, config: &DeviceHeapConfig) -> Result<Self> {
        // The routing passes name a member in a byte.
        if members.len() > MAX_LANES {
            return Err(Error::too_large(
                "a heap's devices or lanes",
                members.len(),
                MAX_LANES,
            ));
        }
        let failures = Failures::new(members.iter().map(|(_, l)| l.clone()).collect());
        let members = members
            .into_iter()
            .enumerate()
            .map(|(i, (rt, label))| {
                Ok(Member {
                    heap: DeviceGeneralizedHeap::new(&rt, config)?,
                    report: MemberReport::of(Worker::Device(i), label),
                    model: SpeedModel::default(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SpreadHeap {
            state: Mutex::new(State {
                members,
                failures,
                failed: None,
                ranges: None,
                routed_keys: 0,
                routed_s: 0.0,
                last_routing_s: 0.0,
                fixed_shares: None,
            }),
        })
    }

    /// Each member's heap counters (launches, merges, bulk calls) so far.
    pub fn member_stats(&self) -> Vec<DeviceHeapStats> {
        self.lock().members.iter().map(|m| m.heap.stats()).collect()
    }

    /// Each member's launch shape: `(work-groups, work-items per group)`.
    pub fn launch_shapes(&self) -> Vec<(usize, usize)> {
        self.lock()
            .members
            .iter()
            .map(|m| m.heap.launch_shape())
            .collect()
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
                held: m.heap.len() as u64,
                ..m.report.clone()
            })
            .collect()
    }

    /// Seconds the last call spent routing keys on the host (an insert's counting pass over
    /// its keys, a delete's first touch of the answer; 0 where one member took everything).
    pub fn last_routing_s(&self) -> f64 {
        self.lock().last_routing_s
    }

    /// Fixes each member's share of the ranges cut from now on (at the next insert into an
    /// empty heap) to `weights` (one per member, in proportion; a member weighted 0 takes
    /// none) instead of the split measured speeds choose; `None` returns to measuring. For
    /// measuring a split the set would not choose (the benchmark's even split over two
    /// GPUs) or keeping keys off a member.
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

    /// Makes member `member` fail with [`Error::DeviceLost`] in the next call: a fault
    /// injection for tests.
    #[doc(hidden)]
    pub fn inject_member_failure(&self, member: usize) -> Result<()> {
        self.lock().failures.inject(member, 0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The heap's state for a call: refused once a member has failed.
    fn usable(&self) -> Result<std::sync::MutexGuard<'_, State<T>>> {
        let state = self.lock();
        match &state.failed {
            Some(e) => Err(Error::corrupted(
                "this device-set heap",
                format!("a member failed earlier ({e}); the keys it held are lost"),
            )),
            None => Ok(state),
        }
    }

    /// Inserts `keys`, each into the member whose range holds it (the ranges cut from these
    /// keys when the heap is empty).
    pub fn insert(&self, keys: &[T]) -> Result<()> {
        let mut state = self.usable()?;
        if keys.is_empty() {
            return Ok(());
        }
        let held: usize = state.members.iter().map(|m| m.heap.len()).sum();
        if held == 0 || state.ranges.is_none() {
            let weights = match &state.fixed_shares {
                Some(w) => w.clone(),
                None => {
                    let models: Vec<SpeedModel> = state.members.iter().map(|m| m.model).collect();
                    shares(keys.len(), &models, state.routing_keys_per_s())
                }
            };
            state.ranges = Some(cut_ranges(keys, &weights));
        }
        let state = &mut *state;
        let ranges = state.ranges.as_ref().expect("cut above");
        let members = state.members.len();
        // Per member: how many keys it takes, and how to write them.
        let mut lens = vec![0; members];
        let started = Instant::now();
        let counts = if let [only] = ranges.active[..] {
            lens[only] = keys.len();
            None
        } else {
            let counts = count_routes(keys, ranges);
            for (j, &m) in ranges.active.iter().enumerate() {
                lens[m] = counts.iter().map(|c| c[j]).sum();
            }
            Some(counts)
        };
        let routing_s = counts
            .as_ref()
            .map_or(0.0, |_| started.elapsed().as_secs_f64());
        let counts = counts.as_deref();
        begin_call(&mut state.members);
        let Some(counts) = counts else {
            // One member takes every key, as it lies.
            let results = run_members(&state.members, &mut state.failures, |m, i| {
                if lens[i] == 0 {
                    return Ok((0, ()));
                }
                // A member's failed call leaves its heap as it was: its part is tried again
                // once (`retry_once`); a failure that persists loses the member.
                retry_once(|| m.heap.insert(keys)).map(|_| (keys.len(), ()))
            });
            let outcome = state.settle(results).map(|_| ());
            state.book_routing(keys.len(), 0.0);
            return outcome;
        };
        let fill = |dsts: &mut [&mut [T::Upload]]| fill_routed(dsts, keys, counts, ranges);
        // One pass writes every active member's staging at once, each key read once; then
        // each member sorts (a large insert) or runs its INS operations, all at once.
        let mut results: Vec<(Result<(usize, ())>, f64)> =
            (0..members).map(|_| (Ok((0, ())), 0.0)).collect();
        // An injected fault fires in this call whether or not the member takes keys in it.
        let fault = (0..members).find_map(|m| state.failures.due(m, 0).map(|e| (m, e)));
        if let Some((m, e)) = fault {
            results[m].0 = Err(e);
        } else {
            let heaps: Vec<&DeviceGeneralizedHeap<T>> = ranges
                .active
                .iter()
                .map(|&m| &state.members[m].heap)
                .collect();
            let active_lens: Vec<usize> = ranges.active.iter().map(|&m| lens[m]).collect();
            // An error of the whole (before any member's part ran) inserted nothing: the
            // call is tried again once.
            let each =
                retry_once(|| DeviceGeneralizedHeap::insert_each_with(&heaps, &active_lens, &fill));
            match each {
                Ok(each) => {
                    for (j, (&m, (mut r, secs))) in ranges.active.iter().zip(each).enumerate() {
                        // A member whose part failed holds what it held (its heap's promise):
                        // its keys, routed again, are inserted once more.
                        if r.as_ref().is_err_and(Error::is_device_fault) {
                            r = state.members[m].heap.insert(&routed_to(keys, ranges, j));
                        }
                        results[m] = (r.map(|_| (lens[m], ())), secs);
                    }
                }
                // Nothing was inserted; the call fails as a member's failure would.
                Err(e) => results[ranges.active[0]].0 = Err(e),
            }
        }
        let outcome = state.settle(results).map(|_| ());
        state.book_routing(keys.len(), routing_s);
        outcome
    }

    /// Removes the `n` smallest keys and returns them sorted (fewer if the heap holds
    /// fewer): the first member's keys, then the next's, every member's part at once.
    pub fn delete_min(&self, n: usize) -> Result<Vec<T>> {
        let mut guard = self.usable()?;
        let state = &mut *guard;
        let held: usize = state.members.iter().map(|m| m.heap.len()).sum();
        let n = n.min(held);
        if n == 0 {
            return Ok(Vec::new());
        }
        // The members' ranges are in order: take from the first until n are taken.
        let mut left = n;
        let takes: Vec<usize> = state
            .members
            .iter()
            .map(|m| {
                let take = left.min(m.heap.len());
                left -= take;
                take
            })
            .collect();
        begin_call(&mut state.members);
        let parts = takes.iter().filter(|&&t| t > 0).count();
        if parts == 1 {
            // One member holds them all: its own vector is the answer.
            let results = run_members(&state.members, &mut state.failures, |m, i| {
                if takes[i] == 0 {
                    return Ok((0, Vec::new()));
                }
                retry_once(|| m.heap.delete_min(takes[i])).map(|run| (run.len(), run))
            });
            let runs = state.settle(results)?;
            state.book_routing(n, 0.0);
            return Ok(runs.into_iter().find(|r| !r.is_empty()).unwrap_or_default());
        }
        // Several: each member copies its run straight into its part of the answer.
        let started = Instant::now();
        // Huge pages: one fault per 2 MiB (on the two-H100 machine, first touching 2 GiB took
        // 1.15 s in 4 KiB pages on one thread, 0.26 s in huge pages).
        let mut out: Vec<T> = huge_page_vec(n);
        out.par_extend(rayon::iter::repeat_n(T::from_repr(Default::default()), n));
        let routing_s = started.elapsed().as_secs_f64();
        let mut slots: Vec<Mutex<Option<&mut [T]>>> = Vec::with_capacity(takes.len());
        let mut rest = &mut out[..];
        for &take in &takes {
            let (part, tail) = rest.split_at_mut(take);
            slots.push(Mutex::new(Some(part)));
            rest = tail;
        }
        let results = run_members(&state.members, &mut state.failures, |m, i| {
            let part = slots[i].lock().unwrap_or_else(|p| p.into_inner()).take();
            match part {
                Some(part) if !part.is_empty() => {
                    retry_once(|| m.heap.delete_min_into(part)).map(|_| (part.len(), ()))
                }
                _ => Ok((0, ())),
            }
        });
        let outcome = state.settle(results);
        drop(slots);
        outcome?;
        state.book_routing(n, routing_s);
        Ok(out)
    }
}

impl<T: DeviceHeapKey> State<T> {
    /// The host's measured routing speed, keys per second (0: not measured yet).
    fn routing_keys_per_s(&self) -> f64 {
        if self.routed_s > 0.0 {
            self.routed_keys as f64 / self.routed_s
        } else {
            0.0
        }
    }

    /// Books the host's routing of `keys` keys in `s` seconds as the call's (0 s: nothing
    /// was routed, one member took every key).
    fn book_routing(&mut self, keys: usize, s: f64) {
        self.last_routing_s = s;
        if s > 0.0 {
            self.routed_keys += keys;
            self.routed_s += s;
        }
    }
}
