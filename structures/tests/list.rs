//! The lock-free list: ordered-set operations against `BTreeSet`, the seed's positional
//! workload against its invariants, the seed's hazards, exhaustion, reclamation, and small
//! concurrent histories checked for a linearization; CpuOnly, GpuOnly and Cooperative on both
//! transports.

mod common;

use std::collections::{BTreeSet, HashMap, HashSet};

use asym_runtime::{Error, LatencyPool, Mode, PoolOptions, Runtime, Transport};
use asym_structures::{
    ListKind, ListOp, ListOptions, LockFreeList, OpStatus, LIST_WALK_WINDOW_MAX,
};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

fn pool(threads: usize) -> LatencyPool {
    LatencyPool::new(PoolOptions {
        threads: Some(threads),
        ..Default::default()
    })
    .expect("pool")
}

const MODES: [Mode; 3] = Mode::ALL;

/// Half of a Cooperative batch on each side.
const HALF: ListOptions = ListOptions {
    device_share: 0.5,
    work_group: None,
    walk_window: None,
};

/// The sequential reference of one ordered-set operation.
fn set_apply(set: &mut BTreeSet<i32>, op: ListOp) -> OpStatus {
    let done = match op {
        ListOp::Insert(k) => set.insert(k),
        ListOp::Remove(k) => set.remove(&k),
        ListOp::Contains(k) => set.contains(&k),
        _ => unreachable!("set operations only"),
    };
    if done {
        OpStatus::Done
    } else {
        OpStatus::Failed
    }
}

/// After a batch: the list is well formed, and a cleanup leaves no marked node and every
/// block of the arena accounted for (root + live nodes in use, the rest free).
fn assert_clean(list: &mut LockFreeList, what: &str) {
    let before = list.check().unwrap_or_else(|e| panic!("{what}: {e}"));
    list.cleanup().unwrap();
    let after = list.check().unwrap();
    assert_eq!(
        after.marked, 0,
        "{what}: marked nodes reachable after cleanup"
    );
    assert_eq!(after.live, before.live, "{what}");
    assert_eq!(after.retired, 0, "{what}");
    let s = list.arena_stats().unwrap();
    assert_eq!(
        s.bytes_in_use,
        32 + 16 * after.live as u64,
        "{what}: blocks in use are the root and the live nodes ({s:?})"
    );
    assert!(s.consistent(&list.arena_mut().layout()), "{what}: {s:?}");
}

#[test]
fn set_batches_of_distinct_keys_match_btreeset() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    let p = pool(3);
    for t in common::transports() {
        let rt = common::runtime(t);
        for mode in MODES {
            let mut list = LockFreeList::new(&rt, ListKind::OrderedSet, 1 << 20).unwrap();
            let mut reference = BTreeSet::new();
            for round in 0..6 {
                // Each key appears in at most one operation of a batch, so every operation's
                // result is the sequential one whatever the interleaving.
                let mut keys: Vec<i32> = (-500..500).collect();
                keys.shuffle(&mut rng);
                let ops: Vec<ListOp> = keys[..700]
                    .iter()
                    .map(|&k| match rng.gen_range(0..3) {
                        0 => ListOp::Insert(k),
                        1 => ListOp::Remove(k),
                        _ => ListOp::Contains(k),
                    })
                    .collect();
                let expect: Vec<OpStatus> = ops
                    .iter()
                    .map(|&op| set_apply(&mut reference, op))
                    .collect();
                let r = list.apply(&ops, mode, HALF, Some(&p)).unwrap();
                assert_eq!(r.statuses, expect, "{t} {mode:?} round {round}");
                let got = list.values().unwrap();
                assert_eq!(got, reference.iter().copied().collect::<Vec<_>>());
            }
            assert_clean(&mut list, &format!("{t} {mode:?}"));
        }
    }
}

#[test]
fn set_contention_on_few_keys_keeps_one_winner_per_key() {
    let p = pool(4);
    for t in common::transports() {
        let rt = common::runtime(t);
        for mode in MODES {
            let mut list = LockFreeList::new(&rt, ListKind::OrderedSet, 1 << 20).unwrap();
            // 4000 inserts of 16 keys: exactly one insert per key succeeds.
            let ops: Vec<ListOp> = (0..4000).map(|i| ListOp::Insert(i % 16)).collect();
            let r = list.apply(&ops, mode, HALF, Some(&p)).unwrap();
            assert_eq!(r.done, 16, "{t} {mode:?}");
            assert_eq!(list.values().unwrap(), (0..16).collect::<Vec<_>>());
            // Then 4000 removes of the same keys: exactly one each.
            let ops: Vec<ListOp> = (0..4000).map(|i| ListOp::Remove(i % 16)).collect();
            let r = list.apply(&ops, mode, HALF, Some(&p)).unwrap();
            assert_eq!(r.done, 16, "{t} {mode:?}");
            assert!(list.values().unwrap().is_empty());
            assert_clean(&mut list, &format!("{t} {mode:?}"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// One operation at a time from the host (any transport) against `BTreeSet`.
    #[test]
    fn host_set_ops_match_btreeset(ops in prop::collection::vec((0u8..3, -20i32..20), 1..120)) {
        for rt in common::shared_runtimes() {
            let mut list = LockFreeList::new(rt, ListKind::OrderedSet, 64 * 1024).unwrap();
            let mut reference = BTreeSet::new();
            let mut m = list.map().unwrap();
            let v = m.view();
            for &(kind, k) in &ops {
                let op = match kind { 0 => ListOp::Insert(k), 1 => ListOp::Remove(k), _ => ListOp::Contains(k) };
                prop_assert_eq!(v.apply(op, 0).unwrap(), set_apply(&mut reference, op));
            }
            drop(m);
            prop_assert_eq!(list.values().unwrap(), reference.iter().copied().collect::<Vec<_>>());
        }
    }
}

/// A workload in the seed's form: unique values, removes drawn from the initial list, inserts
/// after initial values of new unique values.
fn seed_workload(rng: &mut impl Rng, initial: usize, ops: usize) -> (Vec<i32>, Vec<ListOp>) {
    let mut values: Vec<i32> = (0..initial as i32).map(|i| i * 2).collect();
    values.shuffle(rng);
    let mut next_new = 1;
    let ops = (0..ops)
        .map(|_| {
            let v = values[rng.gen_range(0..values.len())];
            if rng.gen_bool(0.5) {
                ListOp::RemoveValue(v)
            } else {
                next_new += 2;
                ListOp::InsertAfter {
                    target: v,
                    value: next_new,
                }
            }
        })
        .collect();
    (values, ops)
}

/// The seed's invariants after a batch of positional operations on `initial`:
/// final = initial − removed + inserted (per the statuses), surviving initial values keep their
/// order, and between an inserted value and its target only inserted values stand.
fn check_positional(initial: &[i32], ops: &[ListOp], statuses: &[OpStatus], fin: &[i32]) {
    let initial_set: HashSet<i32> = initial.iter().copied().collect();
    let mut expect: HashSet<i32> = initial_set.clone();
    for (op, s) in ops.iter().zip(statuses) {
        match (*op, *s) {
            (ListOp::RemoveValue(v), OpStatus::Done) => {
                assert!(expect.remove(&v), "{v} removed twice")
            }
            (ListOp::InsertAfter { value, .. }, OpStatus::Done) => assert!(expect.insert(value)),
            (ListOp::InsertAfter { target, .. }, OpStatus::Failed) => {
                // Its target must have been removed by an operation of this batch.
                assert!(
                    ops.contains(&ListOp::RemoveValue(target)),
                    "insert after {target} failed with no remove of it"
                );
            }
            (ListOp::RemoveValue(v), OpStatus::Failed) => {
                assert!(
                    !initial_set.contains(&v)
                        || ops.iter().filter(|o| **o == ListOp::RemoveValue(v)).count() > 1
                );
            }
            (op, s) => panic!("{op:?} ended {s:?}"),
        }
    }
    let got: HashSet<i32> = fin.iter().copied().collect();
    assert_eq!(
        got.len(),
        fin.len(),
        "a value appears twice in the final list"
    );
    assert_eq!(got, expect, "final values = initial - removed + inserted");
    let survivors: Vec<i32> = fin
        .iter()
        .copied()
        .filter(|v| initial_set.contains(v))
        .collect();
    let kept: Vec<i32> = initial
        .iter()
        .copied()
        .filter(|v| got.contains(v))
        .collect();
    assert_eq!(survivors, kept, "surviving initial values keep their order");
    let pos: HashMap<i32, usize> = fin.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    for (op, s) in ops.iter().zip(statuses) {
        if let (ListOp::InsertAfter { target, value }, OpStatus::Done) = (*op, *s) {
            if let Some(&pt) = pos.get(&target) {
                let pv = pos[&value];
                assert!(pt < pv, "{value} inserted after {target} stands before it");
                assert!(
                    fin[pt + 1..pv].iter().all(|v| !initial_set.contains(v)),
                    "an initial value between {target} and {value}"
                );
            }
        }
    }
}

#[test]
fn seed_workload_keeps_the_seeds_invariants_in_every_mode() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    let p = pool(3);
    for t in common::transports() {
        let rt = common::runtime(t);
        for mode in MODES {
            for (initial, n_ops) in [(1, 50), (100, 1000), (1000, 3000)] {
                let (values, ops) = seed_workload(&mut rng, initial, n_ops);
                let mut list = LockFreeList::positional_from(&rt, &values, n_ops).unwrap();
                assert_eq!(list.values().unwrap(), values);
                let r = list.apply(&ops, mode, HALF, Some(&p)).unwrap();
                assert_eq!(r.out_of_memory, 0);
                let fin = list.values().unwrap();
                check_positional(&values, &ops, &r.statuses, &fin);
                assert_clean(&mut list, &format!("{t} {mode:?} {initial}/{n_ops}"));
                assert_eq!(list.values().unwrap(), fin, "cleanup keeps the contents");
            }
        }
    }
}

#[test]
fn positional_walks_agree_for_every_work_group_size() {
    // A launch's work-group shares one walk of a positional list: groups of one, of a size
    // that does not divide the batch, and larger than the batch, with windows of one node, of
    // a size that does not divide the list, and the largest, give the same invariants.
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for (wg, window) in [
            (1, 1),
            (7, 3),
            (64, 1),
            (64, LIST_WALK_WINDOW_MAX),
            (256, 16),
        ] {
            let (values, ops) = seed_workload(&mut rng, 500, 200);
            let mut list = LockFreeList::positional_from(&rt, &values, ops.len()).unwrap();
            let options = ListOptions {
                work_group: Some(wg),
                walk_window: Some(window),
                ..HALF
            };
            let r = list.apply(&ops, Mode::GpuOnly, options, None).unwrap();
            assert_eq!((r.work_group, r.walk_window), (Some(wg), Some(window)));
            let fin = list.values().unwrap();
            check_positional(&values, &ops, &r.statuses, &fin);
            assert_clean(
                &mut list,
                &format!("{t} work-groups of {wg}, window {window}"),
            );
        }
        let mut list = LockFreeList::positional_from(&rt, &[1, 2], 4).unwrap();
        for (wg, window, word) in [
            (Some(0), None, "work-group"),
            (Some(1 << 20), None, "work-group"),
            (None, Some(0), "window"),
            (None, Some(LIST_WALK_WINDOW_MAX + 1), "window"),
        ] {
            let options = ListOptions {
                work_group: wg,
                walk_window: window,
                ..HALF
            };
            let e = list
                .apply(&[ListOp::RemoveValue(1)], Mode::GpuOnly, options, None)
                .unwrap_err();
            assert!(e.to_string().contains(word), "{e}");
        }
        assert_eq!(
            list.values().unwrap(),
            [1, 2],
            "a refused batch changes nothing"
        );
    }
}

#[test]
fn seed_hazards() {
    let p = pool(3);
    for t in common::transports() {
        let rt = common::runtime(t);
        for mode in MODES {
            let what = format!("{t} {mode:?}");
            // Concurrent removal of adjacent nodes: every other run of 10 values.
            let values: Vec<i32> = (0..2000).collect();
            let mut list = LockFreeList::positional_from(&rt, &values, 0).unwrap();
            let gone: Vec<i32> = values
                .iter()
                .copied()
                .filter(|v| (v / 10) % 2 == 0)
                .collect();
            let ops: Vec<ListOp> = gone.iter().map(|&v| ListOp::RemoveValue(v)).collect();
            let r = list.apply(&ops, mode, HALF, Some(&p)).unwrap();
            assert_eq!(r.done, gone.len(), "{what}");
            let rest: Vec<i32> = values
                .iter()
                .copied()
                .filter(|v| (v / 10) % 2 == 1)
                .collect();
            assert_eq!(list.values().unwrap(), rest, "{what}");
            assert_clean(&mut list, &what);

            // Insertion next to a node being removed: insert after v, remove v and its
            // neighbours, all at once.
            let values: Vec<i32> = (0..300).map(|i| i * 10).collect();
            let mut list = LockFreeList::positional_from(&rt, &values, 1000).unwrap();
            let mut ops = Vec::new();
            for i in (1..299).step_by(3) {
                let v = i * 10;
                ops.push(ListOp::InsertAfter {
                    target: v,
                    value: v + 1,
                });
                ops.push(ListOp::RemoveValue(v));
                ops.push(ListOp::RemoveValue(v + 10));
                ops.push(ListOp::InsertAfter {
                    target: v - 10,
                    value: v - 9,
                });
            }
            let r = list.apply(&ops, mode, HALF, Some(&p)).unwrap();
            let fin = list.values().unwrap();
            check_positional(&values, &ops, &r.statuses, &fin);
            assert_clean(&mut list, &what);

            // Many inserts after one node.
            let mut list = LockFreeList::positional_from(&rt, &[0, -1], 3000).unwrap();
            let ops: Vec<ListOp> = (1..=3000)
                .map(|v| ListOp::InsertAfter {
                    target: 0,
                    value: v,
                })
                .collect();
            let r = list.apply(&ops, mode, HALF, Some(&p)).unwrap();
            assert_eq!(r.done, 3000, "{what}");
            let fin = list.values().unwrap();
            assert_eq!(
                (fin[0], *fin.last().unwrap(), fin.len()),
                (0, -1, 3002),
                "{what}"
            );
            check_positional(&[0, -1], &ops, &r.statuses, &fin);
            assert_clean(&mut list, &what);
        }
    }
}

#[test]
fn exhaustion_refuses_operations_and_keeps_the_list_whole() {
    let p = pool(2);
    for t in common::transports() {
        let rt = common::runtime(t);
        for mode in MODES {
            // One superblock (16 KiB) of nodes: 1024 of them.
            let mut list = LockFreeList::new(&rt, ListKind::OrderedSet, 16 * 1024).unwrap();
            let ops: Vec<ListOp> = (0..1500).map(ListOp::Insert).collect();
            let r = list.apply(&ops, mode, HALF, Some(&p)).unwrap();
            assert_eq!(r.done, 1024, "{t} {mode:?}");
            assert_eq!(r.out_of_memory, 1500 - 1024);
            let got = list.values().unwrap();
            let want: Vec<i32> = ops
                .iter()
                .zip(&r.statuses)
                .filter(|(_, s)| **s == OpStatus::Done)
                .map(|(o, _)| match o {
                    ListOp::Insert(k) => *k,
                    _ => unreachable!(),
                })
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            assert_eq!(got, want);
            let s = list.arena_stats().unwrap();
            assert!(s.failed_mallocs >= 476);
            // Removing frees nodes (after the batch), so inserts fit again.
            let rm: Vec<ListOp> = got.iter().take(500).map(|&k| ListOp::Remove(k)).collect();
            let r = list.apply(&rm, mode, HALF, Some(&p)).unwrap();
            assert_eq!(r.done, 500);
            list.cleanup().unwrap();
            let again: Vec<ListOp> = (10_000..10_400).map(ListOp::Insert).collect();
            let r = list.apply(&again, mode, HALF, Some(&p)).unwrap();
            assert_eq!(r.done, 400, "{t} {mode:?}: freed nodes are reused");
            // The host grows the arena between batches: the list keeps its nodes and takes
            // the inserts that did not fit before.
            let before = list.values().unwrap();
            list.arena_mut().grow(64 * 1024).unwrap();
            assert_eq!(list.values().unwrap(), before);
            let more: Vec<ListOp> = (20_000..22_000).map(ListOp::Insert).collect();
            let r = list.apply(&more, mode, HALF, Some(&p)).unwrap();
            assert_eq!(
                (r.done, r.out_of_memory),
                (2000, 0),
                "{t} {mode:?} after growth"
            );
            assert_clean(&mut list, &format!("{t} {mode:?}"));
        }
    }
}

#[test]
fn bad_input_is_refused() {
    let rt = common::runtime(common::transports()[0]);
    let e = LockFreeList::positional_from(&rt, &[1, 2, 3, 2], 0).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(ref m) if m.contains("value 2") && m.contains("positions 1 and 3")),
        "{e}"
    );
    let mut set = LockFreeList::new(&rt, ListKind::OrderedSet, 4096).unwrap();
    let e = set
        .apply(&[ListOp::RemoveValue(1)], Mode::GpuOnly, HALF, None)
        .unwrap_err();
    assert!(e.is_argument_error(), "{e}");
    let e = set
        .apply(&[ListOp::Insert(1)], Mode::CpuOnly, HALF, None)
        .unwrap_err();
    assert!(e.is_argument_error(), "{e}");
    let e = set
        .apply(
            &[ListOp::Insert(1)],
            Mode::Cooperative,
            ListOptions {
                device_share: 1.5,
                ..HALF
            },
            None,
        )
        .unwrap_err();
    assert!(e.is_argument_error(), "{e}");
}

/// Whether some order of `ops` applied one at a time to `initial` by `apply` (the sequential
/// reference) gives `statuses` and `fin`. All operations of a batch overlap in time, so any
/// order is a candidate linearization.
fn linearizable<S: Clone + PartialEq>(
    initial: &S,
    ops: &[ListOp],
    statuses: &[OpStatus],
    fin: &S,
    apply: fn(&mut S, ListOp) -> OpStatus,
) -> bool {
    fn go<S: Clone + PartialEq>(
        state: &S,
        ops: &[ListOp],
        st: &[OpStatus],
        used: &mut [bool],
        left: usize,
        fin: &S,
        apply: fn(&mut S, ListOp) -> OpStatus,
    ) -> bool {
        if left == 0 {
            return state == fin;
        }
        for i in 0..ops.len() {
            if used[i] {
                continue;
            }
            let mut next = state.clone();
            if apply(&mut next, ops[i]) != st[i] {
                continue;
            }
            used[i] = true;
            let found = go(&next, ops, st, used, left - 1, fin, apply);
            used[i] = false;
            if found {
                return true;
            }
        }
        false
    }
    go(
        initial,
        ops,
        statuses,
        &mut vec![false; ops.len()],
        ops.len(),
        fin,
        apply,
    )
}

/// Small histories of a kernel and CPU threads on one ordered set (at the same time on the
/// fine transport), each checked for a linearization.
/// The sequential reference of one positional operation on `list` (values unique).
fn positional_apply(list: &mut Vec<i32>, op: ListOp) -> OpStatus {
    let at = |list: &Vec<i32>, v: i32| list.iter().position(|&x| x == v);
    match op {
        ListOp::RemoveValue(v) => match at(list, v) {
            Some(i) => {
                list.remove(i);
                OpStatus::Done
            }
            None => OpStatus::Failed,
        },
        ListOp::InsertAfter { target, value } => match at(list, target) {
            Some(i) => {
                list.insert(i + 1, value);
                OpStatus::Done
            }
            None => OpStatus::Failed,
        },
        _ => unreachable!("positional operations only"),
    }
}

#[test]
fn small_positional_histories_are_linearizable() {
    // Seven operations in one work-group's shared walk (and half of them on the threads in
    // Cooperative mode): removes of initial or inserted values, inserts after either.
    let mut rng = rand::rngs::StdRng::from_entropy();
    let p = pool(2);
    for t in common::transports() {
        let rt: Runtime = common::runtime(t);
        for round in 0..120 {
            let initial: Vec<i32> = (0..4).collect();
            let mut list = LockFreeList::positional_from(&rt, &initial, 16).unwrap();
            let some_value = |rng: &mut rand::rngs::StdRng| match rng.gen_range(0..3) {
                0 => 10 + rng.gen_range(0..7),
                _ => rng.gen_range(0..4),
            };
            let ops: Vec<ListOp> = (0..7)
                .map(|i| match rng.gen_range(0..2) {
                    0 => ListOp::RemoveValue(some_value(&mut rng)),
                    _ => ListOp::InsertAfter {
                        target: some_value(&mut rng),
                        value: 10 + i,
                    },
                })
                .collect();
            let mode = if round % 2 == 0 {
                Mode::GpuOnly
            } else {
                Mode::Cooperative
            };
            // Windows of one node and of several: a work-item acts up to a window after the
            // leader read its node.
            let options = ListOptions {
                walk_window: Some([1, 2, 5][round % 3]),
                ..HALF
            };
            let r = list.apply(&ops, mode, options, Some(&p)).unwrap();
            let fin = list.values().unwrap();
            assert!(
                linearizable(&initial, &ops, &r.statuses, &fin, positional_apply),
                "{t} {mode:?}: no linearization of {ops:?} -> {:?}, final {fin:?}",
                r.statuses
            );
        }
        // The check can fail: an insert after a value no order makes present is refused.
        let ops = [ListOp::InsertAfter {
            target: 9,
            value: 10,
        }];
        assert!(!linearizable(
            &vec![1],
            &ops,
            &[OpStatus::Done],
            &vec![1, 10],
            positional_apply
        ));
    }
}

#[test]
fn small_concurrent_histories_are_linearizable() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    let p = pool(2);
    for t in common::transports() {
        let rt: Runtime = common::runtime(t);
        let mut checked = 0;
        for _ in 0..150 {
            let mut list = LockFreeList::new(&rt, ListKind::OrderedSet, 16 * 1024).unwrap();
            let initial: BTreeSet<i32> = (0..4).filter(|_| rng.gen_bool(0.5)).collect();
            let pre: Vec<ListOp> = initial.iter().map(|&k| ListOp::Insert(k)).collect();
            list.apply(&pre, Mode::CpuOnly, HALF, Some(&p)).unwrap();
            let ops: Vec<ListOp> = (0..7)
                .map(|_| {
                    let k = rng.gen_range(0..4);
                    match rng.gen_range(0..3) {
                        0 => ListOp::Insert(k),
                        1 => ListOp::Remove(k),
                        _ => ListOp::Contains(k),
                    }
                })
                .collect();
            let r = list.apply(&ops, Mode::Cooperative, HALF, Some(&p)).unwrap();
            let fin: BTreeSet<i32> = list.values().unwrap().into_iter().collect();
            assert!(
                linearizable(&initial, &ops, &r.statuses, &fin, set_apply),
                "{t}: no linearization of {ops:?} -> {:?}, final {fin:?} from {initial:?}",
                r.statuses
            );
            checked += 1;
        }
        assert_eq!(checked, 150);
        if t == Transport::Fine {
            // The check can fail: a history no order explains is refused.
            let initial: BTreeSet<i32> = BTreeSet::new();
            let ops = [ListOp::Insert(1), ListOp::Insert(1)];
            assert!(!linearizable(
                &initial,
                &ops,
                &[OpStatus::Done, OpStatus::Done],
                &[1].into(),
                set_apply
            ));
        }
    }
}
