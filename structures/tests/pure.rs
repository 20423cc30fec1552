//! The structures that need no device, at sizes Miri and ThreadSanitizer can run
//! (`scripts/miri.sh`, `scripts/sanitize.sh`): the d-heap against `BinaryHeap`, k-selection's
//! host select against `select_nth_unstable`, and the generalized heap alone and shared by
//! threads (nothing lost, nothing duplicated, deletes in order). No OpenCL call is made here,
//! so Miri interprets every line, and ThreadSanitizer sees every access of the threads.

use std::collections::BinaryHeap;

use asym_structures::{
    select_one, ConcurrentGeneralizedHeap, DHeap, GeneralizedHeap, InsertDirection, Key,
    SUPPORTED_D,
};

/// A small deterministic generator (Miri runs without entropy).
fn keys(n: usize, seed: u64) -> Vec<i32> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 1000) as i32 - 500
        })
        .collect()
}

#[test]
fn the_d_heap_pops_what_binary_heap_pops() {
    // A max-heap, as k-selection's (its root is the largest of the k smallest).
    for d in SUPPORTED_D {
        let input = keys(60, d as u64);
        let mut heap = DHeap::with_capacity(d, 64).unwrap();
        let mut reference = BinaryHeap::new();
        for (i, &k) in input.iter().enumerate() {
            heap.push(k).unwrap();
            reference.push(k);
            if i % 3 == 2 {
                assert_eq!(heap.pop(), reference.pop(), "d {d}");
            }
            assert!(heap.is_valid(), "d {d}");
        }
        while let Some(k) = reference.pop() {
            assert_eq!(heap.pop(), Some(k), "d {d}");
        }
        assert_eq!(heap.pop(), None);
    }
}

#[test]
fn host_select_finds_the_kth_of_every_pattern() {
    let mut heap = DHeap::with_capacity(4, 64).unwrap();
    let mut scratch = Vec::new();
    let patterns = [
        keys(40, 3),
        (0..40).collect(),
        (0..40).rev().collect(),
        vec![7; 40],
        vec![i32::MIN, i32::MAX, 0, -1, 1, i32::MIN, i32::MAX],
    ];
    for list in patterns {
        for k in [1, list.len() / 2, list.len()] {
            let mut sorted = list.clone();
            let want = *sorted.select_nth_unstable(k - 1).1;
            let got = select_one(&list, k, &mut heap, &mut scratch);
            assert_eq!(got, want.to_ordered(), "k {k} of {list:?}");
        }
    }
}

#[test]
fn the_generalized_heap_sorts_alone() {
    for batch in [1, 4, 8] {
        let input = keys(70, batch as u64);
        let mut heap = GeneralizedHeap::new(batch).unwrap();
        heap.insert(&input[..30]).unwrap();
        let first = heap.delete_min(10);
        heap.insert(&input[30..]).unwrap();
        let mut got = first.clone();
        got.extend(heap.delete_min(100));
        let mut want = input[..30].to_vec();
        want.sort();
        assert_eq!(first, want[..10], "K {batch}");
        let mut all = input.clone();
        all.sort();
        got.sort();
        assert_eq!(got, all, "K {batch}");
    }
}

#[test]
fn the_shared_generalized_heap_loses_and_duplicates_nothing_under_threads() {
    for direction in [InsertDirection::TopDown, InsertDirection::BottomUp] {
        let heap = ConcurrentGeneralizedHeap::<i32>::new(4, 256)
            .unwrap()
            .with_insert_direction(direction);
        let taken: Vec<Vec<i32>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..3u64)
                .map(|t| {
                    let heap = &heap;
                    s.spawn(move || {
                        let mut out = Vec::new();
                        for round in 0..4 {
                            // Distinct keys per thread and round: a duplicate would show.
                            let mine: Vec<i32> =
                                (0..8).map(|i| (t * 1000 + round * 10 + i) as i32).collect();
                            heap.insert(&mine).unwrap();
                            let got = heap.delete_min(5).unwrap();
                            assert!(got.windows(2).all(|w| w[0] <= w[1]), "in order");
                            out.extend(got);
                        }
                        out
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut all: Vec<i32> = taken.into_iter().flatten().collect();
        all.extend(heap.delete_min(1000).unwrap());
        all.sort();
        let mut want: Vec<i32> = (0..3)
            .flat_map(|t| (0..4).flat_map(move |r| (0..8).map(move |i| t * 1000 + r * 10 + i)))
            .collect();
        want.sort();
        assert_eq!(all, want, "{direction:?}");
    }
}
