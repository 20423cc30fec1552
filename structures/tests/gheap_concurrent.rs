//! The concurrent generalized heap on host threads, TD-INS/TD-DEL and BU-INS/TD-DEL: alone
//! against `BinaryHeap`, under many threads (nothing lost or duplicated, properties intact),
//! and a linearizability check of small concurrent histories against a sequential priority
//! queue.

mod common;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Barrier;

use asym_runtime::Error;
use asym_structures::{ConcurrentGeneralizedHeap, InsertDirection};

const DIRECTIONS: [InsertDirection; 2] = [InsertDirection::TopDown, InsertDirection::BottomUp];

fn heap<T: Ord + Copy + Default + Send>(
    batch: usize,
    nodes: usize,
    direction: InsertDirection,
) -> ConcurrentGeneralizedHeap<T> {
    ConcurrentGeneralizedHeap::new(batch, nodes)
        .unwrap()
        .with_insert_direction(direction)
}
use common::{linearizable, op, record_history, Event, Op};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    #[test]
    fn one_thread_matches_binary_heap(
        ops in prop::collection::vec(op(), 1..50),
        batch_log2 in 0u32..5,
        bottom_up in any::<bool>(),
    ) {
        let direction = if bottom_up { InsertDirection::BottomUp } else { InsertDirection::TopDown };
        let heap = heap(1 << batch_log2, 4096, direction);
        let mut reference = BinaryHeap::new();
        for op in ops {
            match op {
                Op::Insert(keys) => {
                    heap.insert(&keys).unwrap();
                    reference.extend(keys.into_iter().map(Reverse));
                }
                Op::Delete(n) => {
                    let want: Vec<i16> = (0..n).map_while(|_| reference.pop().map(|r| r.0)).collect();
                    prop_assert_eq!(heap.delete_min(n).unwrap(), want);
                }
            }
            prop_assert_eq!(heap.len(), reference.len());
            prop_assert_eq!(heap.peek(), reference.peek().map(|r| r.0));
        }
        let seq = heap.into_sequential().unwrap();
        prop_assert!(seq.check().is_ok(), "{:?}", seq.check());
    }
}

#[test]
fn many_threads_lose_and_duplicate_nothing() {
    for (batch, direction) in [1usize, 4, 32, 256]
        .into_iter()
        .flat_map(|b| DIRECTIONS.map(|d| (b, d)))
    {
        let threads = 8;
        let heap = heap(batch, 1 << 14, direction);
        let start = Barrier::new(threads);
        let (inserted, deleted): (Vec<Vec<u64>>, Vec<Vec<u64>>) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (heap, start) = (&heap, &start);
                    s.spawn(move || {
                        let mut rng = rand::rngs::StdRng::seed_from_u64(t as u64 * 7919);
                        let (mut ins, mut del) = (Vec::new(), Vec::new());
                        start.wait();
                        for round in 0..300u64 {
                            // Distinct keys (thread, round, index) with random high bits.
                            let n = rng.gen_range(1..=2 * batch + 1);
                            let keys: Vec<u64> = (0..n as u64)
                                .map(|i| {
                                    (rng.gen_range(0..1000u64) << 40)
                                        | ((t as u64) << 32)
                                        | (round << 16)
                                        | i
                                })
                                .collect();
                            heap.insert(&keys).unwrap();
                            ins.extend(keys);
                            let out = heap.delete_min(rng.gen_range(1..=2 * batch)).unwrap();
                            assert!(out.windows(2).all(|w| w[0] <= w[1]), "unsorted: {out:?}");
                            del.extend(out);
                        }
                        (ins, del)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).unzip()
        });
        let mut all_in: Vec<u64> = inserted.into_iter().flatten().collect();
        let mut all_out: Vec<u64> = deleted.into_iter().flatten().collect();
        let left = heap.len();
        all_out.extend(heap.delete_min(left).unwrap());
        assert!(heap.is_empty());
        all_in.sort_unstable();
        all_out.sort_unstable();
        assert_eq!(
            all_in.len(),
            all_out.len(),
            "K {batch} {direction:?}: keys lost or duplicated"
        );
        assert_eq!(all_in, all_out, "K {batch} {direction:?}");
        let seq = heap.into_sequential().unwrap();
        seq.check().unwrap();
    }
}

#[test]
fn properties_hold_after_a_concurrent_phase() {
    // Several rounds with small batches, where crossings of operations are frequent.
    for round in 0..6u64 {
        for direction in DIRECTIONS {
            properties_hold_with(direction, [4, 16][round as usize % 2], round);
        }
    }
}

fn properties_hold_with(direction: InsertDirection, batch: usize, round: u64) {
    let heap = heap(batch, 1 << 14, direction);
    std::thread::scope(|s| {
        for t in 0..6u64 {
            let heap = &heap;
            s.spawn(move || {
                let mut rng = rand::rngs::StdRng::seed_from_u64(t + 100 * round);
                for _ in 0..400 {
                    if rng.gen_bool(0.6) {
                        let keys: Vec<i32> = (0..rng.gen_range(1..40)).map(|_| rng.gen()).collect();
                        heap.insert(&keys).unwrap();
                    } else {
                        heap.delete_min(rng.gen_range(1..40)).unwrap();
                    }
                }
            });
        }
    });
    let len = heap.len();
    let seq = heap.into_sequential().unwrap();
    seq.check()
        .unwrap_or_else(|e| panic!("{direction:?} K {batch} round {round}: {e}"));
    assert_eq!(seq.len(), len);
}

#[test]
fn a_full_heap_refuses_inserts_and_can_grow() {
    let mut heap = ConcurrentGeneralizedHeap::new(4, 2).unwrap();
    heap.insert(&[5, 6, 7, 8, 1, 2, 3, 4, 9, 10]).unwrap(); // 2 nodes + 2 in the buffer
    assert!(matches!(
        heap.insert(&[11, 12]),
        Err(Error::CapacityExceeded { capacity: 11, .. })
    ));
    assert_eq!(heap.len(), 10);
    heap.grow(3).unwrap();
    heap.insert(&[11, 12]).unwrap();
    assert_eq!(heap.delete_min(12).unwrap(), (1..=12).collect::<Vec<i32>>());
    assert!(matches!(
        ConcurrentGeneralizedHeap::<i32>::new(6, 4),
        Err(e) if e.is_argument_error()
    ));
}

#[test]
fn a_capacity_between_whole_levels_is_usable_to_the_last_node() {
    // 5 nodes: the 5th goes to position 5 (bit-reversal order), past a 5-slot array.
    for direction in [InsertDirection::TopDown, InsertDirection::BottomUp] {
        let heap = ConcurrentGeneralizedHeap::new(2, 5)
            .unwrap()
            .with_insert_direction(direction);
        let keys: Vec<i32> = (0..11).rev().collect(); // 5 nodes + 1 in the buffer
        heap.insert(&keys).unwrap();
        assert!(matches!(
            heap.insert(&[20]),
            Err(Error::CapacityExceeded { .. })
        ));
        assert_eq!(heap.delete_min(11).unwrap(), (0..11).collect::<Vec<i32>>());
    }
}

#[test]
fn small_concurrent_histories_are_linearizable() {
    // Three threads, three operations each, batches of 2 keys (so deletes of 1..=2 keys are
    // single DELs and inserts of up to 2 keys single INSs), small key range for ties.
    for history in 0..400u64 {
        let direction = DIRECTIONS[(history % 2) as usize];
        let heap = heap(2, 64, direction);
        let events = record_history(
            history,
            |keys| heap.insert(keys).unwrap(),
            |n| heap.delete_min(n).unwrap(),
        );
        assert!(
            linearizable(&events),
            "history {history} is not linearizable: {events:#?}"
        );
    }
}

#[test]
fn the_checker_rejects_a_history_that_is_not_linearizable() {
    // A delete that returns a key no insert had finished or started putting in.
    let bad = vec![
        Event {
            start: 1,
            end: 2,
            op: Op::Insert(vec![3]),
            got: vec![],
        },
        Event {
            start: 3,
            end: 4,
            op: Op::Delete(1),
            got: vec![1],
        },
    ];
    assert!(!linearizable(&bad));
    let good = vec![
        Event {
            start: 1,
            end: 4,
            op: Op::Insert(vec![3]),
            got: vec![],
        },
        Event {
            start: 2,
            end: 3,
            op: Op::Delete(1),
            got: vec![3],
        },
    ];
    assert!(linearizable(&good));
}
