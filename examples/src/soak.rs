//! The soak: mixed batches on every structure for a bounded time, with device failures
//! injected at random (`asym_runtime::faults`), each structure checked against a host model
//! after every batch.
//!
//! A [`Subject`] is one structure and its model. Each batch draws a fault or none (a random
//! point, armed at a random step of the batch's call: steps past the call's end do not fire),
//! runs one mixed batch, disarms, and checks: the structure's own validator, then its contents
//! against the model, which took the batch's effect where the call returned `Ok` and nothing
//! where it returned an error. A fault *survived* is one that fired in a batch after which the
//! structure checks out; *keys lost* counts every key the model holds and the structure does
//! not (and every one it holds that the model does not), after which the model is set to what
//! the structure holds so that one loss is counted once.

use std::collections::{BTreeMap, BTreeSet};

use asym_runtime::{DeviceSet, FaultPoint, LatencyPool, Mode, Named, Result, Runtime};
use asym_structures::{
    heap_for, BatchHeap, DeviceHeapConfig, HeapOptions, KSelector, ListKind, ListOp, ListOptions,
    LockFreeList, OpStatus, RbTree, SpreadHeap, Strategy, Sublists, SvmArena,
};
use rand::rngs::StdRng;
use rand::Rng;

/// What one structure went through.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SoakTally {
    /// The structure.
    pub name: String,
    /// Batches run.
    pub batches: u64,
    /// Operations in them (keys inserted or deleted, list operations, mallocs and frees,
    /// tree operations, sub-lists selected).
    pub operations: u64,
    /// Batches that returned an error.
    pub errors: u64,
    /// Faults that fired.
    pub injected: u64,
    /// Faults that fired in a batch after which the structure checked out.
    pub survived: u64,
    /// Keys the model and the structure disagree on.
    pub keys_lost: u64,
    /// Checks that failed (a validator's error, a wrong answer), with the first reason.
    pub broken: u64,
    /// The first broken check, for the report.
    pub first_break: Option<String>,
}

/// One structure under soak: a batch, and a check against its model.
pub trait Subject {
    /// The structure's name in the report.
    fn name(&self) -> String;
    /// The runtimes whose faults this structure's batches meet (a set's members).
    fn runtimes(&self) -> Vec<Runtime>;
    /// One mixed batch: its call's result (`Ok`: how many operations it did) and the model
    /// updated where the call returned `Ok`.
    fn batch(&mut self, rng: &mut StdRng) -> Result<u64>;
    /// Checks the structure (validator, contents against the model): the keys they disagree
    /// on, or the reason a check failed.
    fn check(&mut self) -> std::result::Result<u64, String>;
}

/// Runs one batch of `subject` with a fault drawn at random (armed half the time), and
/// records it in `tally`.
pub fn soak_batch(subject: &mut dyn Subject, rng: &mut StdRng, tally: &mut SoakTally) {
    let runtimes = subject.runtimes();
    let faults = runtimes[rng.gen_range(0..runtimes.len())].faults().clone();
    let fired_before = faults.fired();
    if rng.gen_bool(0.5) {
        let point = FaultPoint::ALL[rng.gen_range(0..FaultPoint::ALL.len())];
        faults.arm(point, rng.gen_range(1..=8));
    }
    let result = subject.batch(rng);
    faults.disarm();
    let fired = faults.fired() - fired_before;
    tally.batches += 1;
    tally.injected += fired;
    match &result {
        Ok(ops) => tally.operations += ops,
        Err(_) => tally.errors += 1,
    }
    match subject.check() {
        Ok(0) => tally.survived += fired,
        Ok(lost) => tally.keys_lost += lost,
        Err(why) => {
            tally.broken += 1;
            tally.first_break.get_or_insert(why);
        }
    }
}

/// The keys `a` and `b` (sorted multisets) disagree on.
fn disagreement(a: &[u32], b: &[u32]) -> u64 {
    let (mut i, mut j, mut differ) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Equal => (i, j) = (i + 1, j + 1),
            std::cmp::Ordering::Less => (i, differ) = (i + 1, differ + 1),
            std::cmp::Ordering::Greater => (j, differ) = (j + 1, differ + 1),
        }
    }
    differ + (a.len() - i + b.len() - j) as u64
}

/// A heap in any device placement, its model a sorted multiset.
pub struct HeapSubject<'a> {
    name: String,
    rt: Vec<Runtime>,
    heap: Box<dyn BatchHeap<u32> + 'a>,
    model: Vec<u32>,
}

impl<'a> HeapSubject<'a> {
    /// The generalized heap of `mode` (GpuOnly or Cooperative) on `rt`.
    pub fn on_device(mode: Mode, rt: &Runtime, pool: &'a LatencyPool) -> Result<Self> {
        let mut options = HeapOptions::new(16);
        options.refill = 256;
        let heap = heap_for::<u32>(mode, &options, Some(pool.into()), Some(rt))?;
        Ok(HeapSubject {
            name: format!("heap ({})", mode.name()),
            rt: vec![rt.clone()],
            heap,
            model: Vec::new(),
        })
    }

    /// The generalized heap spread over `set` (faults meet any member).
    pub fn on_set(set: &DeviceSet) -> Result<Self> {
        let heap = SpreadHeap::<u32>::new(set, &DeviceHeapConfig::new(16))?;
        Ok(HeapSubject {
            name: format!("heap (set of {})", set.len()),
            rt: set.members().to_vec(),
            heap: Box::new(heap),
            model: Vec::new(),
        })
    }
}

impl Subject for HeapSubject<'_> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn runtimes(&self) -> Vec<Runtime> {
        self.rt.clone()
    }
    fn batch(&mut self, rng: &mut StdRng) -> Result<u64> {
        // Grow while small, shrink while large: the heap stays between a few and 4,000 keys.
        if self.model.len() < 2000 || rng.gen_bool(0.4) && self.model.len() < 4000 {
            let keys: Vec<u32> = (0..rng.gen_range(1..600)).map(|_| rng.gen()).collect();
            self.heap.insert(&keys)?;
            self.model.extend(&keys);
            self.model.sort_unstable();
            Ok(keys.len() as u64)
        } else {
            let n = rng.gen_range(1..=self.model.len().min(700));
            let taken = self.heap.delete_min(n)?;
            if taken[..] != self.model[..n] {
                self.model.drain(..n);
                return Err(asym_runtime::Error::corrupted(
                    "the soaked heap",
                    "a delete returned keys other than the smallest",
                ));
            }
            self.model.drain(..n);
            Ok(n as u64)
        }
    }
    fn check(&mut self) -> std::result::Result<u64, String> {
        let all = self
            .heap
            .delete_min(self.heap.len())
            .map_err(|e| e.to_string())?;
        if all.windows(2).any(|w| w[0] > w[1]) {
            return Err("the heap's deletes came out of order".into());
        }
        let lost = disagreement(&all, &self.model);
        self.heap.insert(&all).map_err(|e| e.to_string())?;
        self.model = all;
        Ok(lost)
    }
}

/// The lock-free list as an ordered set, GpuOnly and Cooperative batches in turn.
pub struct ListSubject<'a> {
    rt: Vec<Runtime>,
    list: LockFreeList,
    pool: &'a LatencyPool,
    model: BTreeSet<i32>,
}

impl<'a> ListSubject<'a> {
    /// An empty ordered-set list on `rt`.
    pub fn new(rt: &Runtime, pool: &'a LatencyPool) -> Result<Self> {
        Ok(ListSubject {
            rt: vec![rt.clone()],
            list: LockFreeList::new(rt, ListKind::OrderedSet, 1 << 16)?,
            pool,
            model: BTreeSet::new(),
        })
    }
}

impl Subject for ListSubject<'_> {
    fn name(&self) -> String {
        "lock-free list".into()
    }
    fn runtimes(&self) -> Vec<Runtime> {
        self.rt.clone()
    }
    fn batch(&mut self, rng: &mut StdRng) -> Result<u64> {
        let ops: Vec<ListOp> = (0..rng.gen_range(1..200))
            .map(|_| {
                let k = rng.gen_range(0..1000);
                match rng.gen_range(0..3) {
                    0 => ListOp::Insert(k),
                    1 => ListOp::Remove(k),
                    _ => ListOp::Contains(k),
                }
            })
            .collect();
        let mode = if rng.gen_bool(0.5) {
            Mode::GpuOnly
        } else {
            Mode::Cooperative
        };
        let options = ListOptions::default();
        let report = self.list.apply(&ops, mode, options, Some(self.pool))?;
        // Operations on one key within a batch take effect in some order: its net count of
        // inserts and removals done decides where it ends.
        let mut net: BTreeMap<i32, i32> = BTreeMap::new();
        for (op, s) in ops.iter().zip(&report.statuses) {
            match (op, s) {
                (ListOp::Insert(k), OpStatus::Done) => *net.entry(*k).or_default() += 1,
                (ListOp::Remove(k), OpStatus::Done) => *net.entry(*k).or_default() -= 1,
                _ => {}
            }
        }
        for (k, c) in net {
            if c == 1 {
                self.model.insert(k);
            } else if c == -1 {
                self.model.remove(&k);
            }
        }
        Ok(ops.len() as u64)
    }
    fn check(&mut self) -> std::result::Result<u64, String> {
        self.list.check().map_err(|e| e.to_string())?;
        let got: BTreeSet<i32> = self
            .list
            .values()
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect();
        let lost = got.symmetric_difference(&self.model).count() as u64;
        self.model = got;
        Ok(lost)
    }
}

/// The SVM arena: batches of device mallocs and frees, the model the blocks handed out.
pub struct ArenaSubject {
    rt: Vec<Runtime>,
    arena: SvmArena,
    /// Handles held and each block's bytes.
    held: Vec<(u32, u64)>,
}

impl ArenaSubject {
    /// An arena of 4 MiB on `rt`.
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(ArenaSubject {
            rt: vec![rt.clone()],
            arena: SvmArena::new(rt, 4 << 20)?,
            held: Vec::new(),
        })
    }
}

impl Subject for ArenaSubject {
    fn name(&self) -> String {
        "SVM arena".into()
    }
    fn runtimes(&self) -> Vec<Runtime> {
        self.rt.clone()
    }
    fn batch(&mut self, rng: &mut StdRng) -> Result<u64> {
        if self.held.len() < 500 || rng.gen_bool(0.5) && self.held.len() < 4000 {
            let sizes: Vec<u32> = (0..rng.gen_range(1..300))
                .map(|_| rng.gen_range(1..200))
                .collect();
            let handles = self.arena.malloc_on_device(&sizes)?;
            let layout = self.arena.layout();
            for (&h, &b) in handles.iter().zip(&sizes) {
                if h != 0 {
                    let class = layout.class_of(b as usize).unwrap_or(0);
                    self.held.push((h, layout.class_bytes(class) as u64));
                }
            }
            Ok(sizes.len() as u64)
        } else {
            let n = rng.gen_range(1..=self.held.len().min(300));
            let start = self.held.len() - n;
            let handles: Vec<u32> = self.held[start..].iter().map(|&(h, _)| h).collect();
            let ok = self.arena.free_on_device(&handles)?;
            if ok.iter().any(|&f| !f) {
                return Err(asym_runtime::Error::corrupted(
                    "the soaked arena",
                    "a free of a held block was refused",
                ));
            }
            self.held.truncate(start);
            Ok(n as u64)
        }
    }
    fn check(&mut self) -> std::result::Result<u64, String> {
        let stats = self.arena.stats().map_err(|e| e.to_string())?;
        let want: u64 = self.held.iter().map(|&(_, b)| b).sum();
        // Blocks nobody holds a handle to, or blocks held twice: counted as bytes of 8.
        Ok(stats.bytes_in_use.abs_diff(want) / 8)
    }
}

/// The red-black tree: batches of inserts and deletes, the model a `BTreeMap`.
pub struct TreeSubject {
    rt: Vec<Runtime>,
    tree: RbTree<i32>,
    model: BTreeMap<i32, u64>,
    next: u64,
}

impl TreeSubject {
    /// An empty tree on `rt`.
    pub fn new(rt: &Runtime) -> Result<Self> {
        Ok(TreeSubject {
            rt: vec![rt.clone()],
            tree: RbTree::new(rt, 1024)?,
            model: BTreeMap::new(),
            next: 0,
        })
    }
}

impl Subject for TreeSubject {
    fn name(&self) -> String {
        "red-black tree".into()
    }
    fn runtimes(&self) -> Vec<Runtime> {
        self.rt.clone()
    }
    fn batch(&mut self, rng: &mut StdRng) -> Result<u64> {
        if self.model.len() < 3000 || rng.gen_bool(0.5) && self.model.len() < 20_000 {
            let items: Vec<(i32, u64)> = (0..rng.gen_range(1..2000))
                .map(|_| {
                    self.next += 1;
                    (rng.gen_range(0..100_000), self.next)
                })
                .collect();
            self.tree.insert_batch(&items)?;
            self.model.extend(items.iter().copied());
            Ok(items.len() as u64)
        } else {
            let keys: Vec<i32> = (0..rng.gen_range(1..2000))
                .map(|_| rng.gen_range(0..100_000))
                .collect();
            self.tree.delete_batch(&keys)?;
            for k in &keys {
                self.model.remove(k);
            }
            Ok(keys.len() as u64)
        }
    }
    fn check(&mut self) -> std::result::Result<u64, String> {
        self.tree.validate().map_err(|e| e.to_string())?;
        let got: BTreeMap<i32, u64> = self
            .tree
            .entries()
            .map_err(|e| e.to_string())?
            .into_iter()
            .collect();
        let lost = got
            .iter()
            .filter(|(k, v)| self.model.get(k) != Some(v))
            .count()
            + self.model.keys().filter(|k| !got.contains_key(k)).count();
        self.model = got;
        Ok(lost as u64)
    }
}

/// k-selection over a device set (or one device): random rows, every answer checked against
/// `select_nth_unstable`; a wrong answer is a broken check (no keys are kept between calls).
pub struct SelectSubject {
    rt: Vec<Runtime>,
    set: DeviceSet,
    /// The radix and the heap strategy, each with a latency thread of its own.
    selectors: [KSelector; 2],
    wrong: Option<String>,
}

/// A selector over `set` with `strategy` and a latency thread of its own.
fn selector(set: &DeviceSet, strategy: Strategy) -> Result<KSelector> {
    let pool = LatencyPool::new(asym_runtime::PoolOptions {
        threads: Some(1),
        ..Default::default()
    })?;
    Ok(KSelector::on_devices(set, pool, 4)?.with_strategy(strategy))
}

impl SelectSubject {
    /// Selectors over `set` (faults meet any member).
    pub fn new(set: &DeviceSet) -> Result<Self> {
        Ok(SelectSubject {
            rt: set.members().to_vec(),
            set: set.clone(),
            selectors: [
                selector(set, Strategy::Radix)?,
                selector(set, Strategy::Heap)?,
            ],
            wrong: None,
        })
    }
}

impl Subject for SelectSubject {
    fn name(&self) -> String {
        "k-selection (set)".into()
    }
    fn runtimes(&self) -> Vec<Runtime> {
        self.rt.clone()
    }
    fn batch(&mut self, rng: &mut StdRng) -> Result<u64> {
        let row = rng.gen_range(16..2000);
        let rows = rng.gen_range(1..64);
        let keys: Vec<i32> = (0..row * rows)
            .map(|_| rng.gen_range(-1000..1000))
            .collect();
        let k = rng.gen_range(1..=row);
        let i = rng.gen_range(0..2);
        let got = self.selectors[i].select(&keys, &Sublists::Equal(row), k, Mode::GpuOnly);
        // A set leaves a failed member out for good (`asym_runtime::spread`): the soak
        // opens the selector again, as a user would, so that later faults meet both.
        if !self.selectors[i].failed_devices().is_empty() {
            let strategy = [Strategy::Radix, Strategy::Heap][i];
            self.selectors[i] = selector(&self.set, strategy)?;
        }
        let got = got?;
        let want: Vec<i32> = keys
            .chunks(row)
            .map(|c| *c.to_vec().select_nth_unstable(k - 1).1)
            .collect();
        if got != want {
            self.wrong = Some(format!("{rows} rows of {row}, k {k}: a wrong answer"));
        }
        Ok(rows as u64)
    }
    fn check(&mut self) -> std::result::Result<u64, String> {
        match self.wrong.take() {
            Some(why) => Err(why),
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disagreement_counts_both_sides() {
        assert_eq!(disagreement(&[1, 2, 2, 5], &[1, 2, 5]), 1);
        assert_eq!(disagreement(&[], &[3, 4]), 2);
        assert_eq!(disagreement(&[1, 3], &[2, 3, 9]), 3);
        assert_eq!(disagreement(&[7, 7], &[7, 7]), 0);
    }
}
