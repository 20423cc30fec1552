//! The generalized heap against std's sort and `BinaryHeap`: heap sort on every key pattern,
//! sizes that are not multiples of the batch, every batch size the issue names, both insertion
//! directions, the properties after every operation, key–payload pairs, the capacity bound,
//! and random operation sequences (proptest).

mod common;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use asym_runtime::Error;
use asym_structures::{GeneralizedHeap, InsertDirection};
use common::{op, Op};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const DIRECTIONS: [InsertDirection; 2] = [InsertDirection::TopDown, InsertDirection::BottomUp];

#[test]
fn heap_sort_equals_std_sort_for_every_pattern_batch_and_direction() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for batch in [1usize, 2, 32, 64, 256, 1024] {
        for n in [
            0,
            1,
            batch - 1 + usize::from(batch == 1),
            3 * batch + 5,
            5000,
        ] {
            for (name, keys) in common::key_patterns(n, &mut rng) {
                for direction in DIRECTIONS {
                    let what = format!("K {batch} n {n} {name} {direction:?}");
                    let mut heap = GeneralizedHeap::new(batch)
                        .unwrap()
                        .with_insert_direction(direction);
                    // Inserts of uneven sizes, checked after each.
                    let mut at = 0;
                    while at < keys.len() {
                        let take = rng.gen_range(1..=2 * batch + 3).min(keys.len() - at);
                        heap.insert(&keys[at..at + take]).unwrap();
                        at += take;
                        heap.check().unwrap_or_else(|e| panic!("{what}: {e}"));
                    }
                    assert_eq!(heap.len(), n, "{what}");
                    let mut want = keys.clone();
                    want.sort();
                    assert_eq!(heap.peek(), want.first().copied(), "{what}");
                    // Deletes of uneven sizes, checked after each.
                    let mut got = Vec::with_capacity(n);
                    while !heap.is_empty() {
                        let take = rng.gen_range(1..=2 * batch + 3);
                        got.extend(heap.delete_min(take));
                        heap.check().unwrap_or_else(|e| panic!("{what}: {e}"));
                    }
                    assert_eq!(got, want, "{what}");
                    assert!(heap.delete_min(3).is_empty());
                }
            }
        }
    }
}

#[test]
fn key_payload_pairs_come_out_in_key_order_with_their_payloads() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let pairs: Vec<(u32, u32)> = (0..3000u32).map(|i| (rng.gen_range(0..500), i)).collect();
    for direction in DIRECTIONS {
        let mut heap = GeneralizedHeap::new(64)
            .unwrap()
            .with_insert_direction(direction);
        heap.insert(&pairs).unwrap();
        let out = heap.delete_min(pairs.len());
        let mut want = pairs.clone();
        want.sort();
        assert_eq!(out, want, "{direction:?}");
    }
    // f32 keys by total order, through a wrapper with `total_cmp`.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Total(f32);
    impl Eq for Total {}
    impl PartialOrd for Total {
        fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Total {
        fn cmp(&self, o: &Self) -> std::cmp::Ordering {
            self.0.total_cmp(&o.0)
        }
    }
    let floats: Vec<Total> = [
        3.5,
        -0.0,
        0.0,
        f32::NAN,
        -1.0,
        f32::INFINITY,
        -f32::INFINITY,
    ]
    .into_iter()
    .cycle()
    .take(100)
    .map(Total)
    .collect();
    let mut heap = GeneralizedHeap::new(4).unwrap();
    heap.insert(&floats).unwrap();
    let out = heap.delete_min(100);
    let mut want = floats.clone();
    want.sort();
    assert!(out
        .iter()
        .zip(&want)
        .all(|(a, b)| a.0.to_bits() == b.0.to_bits()));
}

#[test]
fn bad_batch_sizes_and_a_full_heap_are_errors() {
    for batch in [0usize, 3, 48, 1 << 17] {
        assert!(matches!(
            GeneralizedHeap::<i32>::new(batch),
            Err(e) if e.is_argument_error()
        ));
    }
    let mut heap = GeneralizedHeap::new(4).unwrap().with_max_nodes(3);
    heap.insert(&(0..15).collect::<Vec<i32>>()).unwrap(); // 3 nodes + 3 in the buffer
    let before = heap.keys();
    assert!(matches!(
        heap.insert(&[1]),
        Err(Error::CapacityExceeded { capacity: 15, .. })
    ));
    assert_eq!(heap.keys(), before, "a refused insert changes nothing");
    assert_eq!(heap.delete_min(2), vec![0, 1]);
    heap.insert(&[100, -1]).unwrap();
    assert_eq!(heap.delete_min(1), vec![-1]);
    heap.clear();
    assert!(heap.is_empty() && heap.peek().is_none());
}

#[test]
fn the_seeds_short_cuts_happen() {
    // Ascending keys never overlap: bottom-up inserts stop at once and merge nothing.
    let keys: Vec<i32> = (0..64 * 100).collect();
    let mut heap = GeneralizedHeap::new(64).unwrap();
    for chunk in keys.chunks(64) {
        heap.insert(chunk).unwrap();
    }
    let s = heap.stats();
    assert_eq!(s.merges, 0, "{s:?}");
    assert!(s.skipped >= 99, "{s:?}");
    // Descending full batches: each new node is smaller than everything above it, so the
    // bottom-up walk swaps whole batches instead of merging.
    let mut heap = GeneralizedHeap::new(64).unwrap();
    for chunk in keys.chunks(64).rev() {
        heap.insert(chunk).unwrap();
    }
    let s = heap.stats();
    assert!(s.swaps > 0 && s.merges == 0, "{s:?}");
    heap.check().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_operation_sequences_match_binary_heap(
        ops in prop::collection::vec(op(), 1..60),
        batch_log2 in 0u32..5,
        top_down in any::<bool>(),
    ) {
        let direction = if top_down { InsertDirection::TopDown } else { InsertDirection::BottomUp };
        let mut heap = GeneralizedHeap::new(1 << batch_log2).unwrap().with_insert_direction(direction);
        let mut reference = BinaryHeap::new();
        for op in ops {
            match op {
                Op::Insert(keys) => {
                    heap.insert(&keys).unwrap();
                    reference.extend(keys.into_iter().map(Reverse));
                }
                Op::Delete(n) => {
                    let want: Vec<i16> = (0..n).map_while(|_| reference.pop().map(|r| r.0)).collect();
                    prop_assert_eq!(heap.delete_min(n), want);
                }
            }
            prop_assert!(heap.check().is_ok(), "{:?}", heap.check());
            prop_assert_eq!(heap.len(), reference.len());
            prop_assert_eq!(heap.peek(), reference.peek().map(|r| r.0));
        }
    }
}
