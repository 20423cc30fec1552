//! The Cooperative heap (host top + device bulk): heap sort equals std sort for every key
//! pattern, random calls match `BinaryHeap` (proptest), host threads share one heap, the
//! fence moves the way the design says (stats), on both transports.

mod common;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use asym_structures::{CooperativeConfig, CooperativeHeap, DeviceHeapConfig};
use common::{linearizable, op, record_history, Op};
use proptest::prelude::*;
use rand::SeedableRng;

/// Small refills, flushes and top so every path (refill, flush, spill, fence at +∞) runs.
fn config(batch: usize, groups: usize, refill: usize) -> CooperativeConfig {
    CooperativeConfig {
        device: DeviceHeapConfig {
            work_groups: Some(groups),
            ..DeviceHeapConfig::new(batch)
        },
        refill,
        flush: 3 * batch + 1,
        top_capacity: 2 * refill.next_multiple_of(batch),
    }
}

#[test]
fn cooperative_heap_sort_equals_std_sort() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(rand::random());
    for t in common::transports() {
        let rt = common::runtime(t);
        for (k, refill) in [(4, 5), (32, 64), (256, 512)] {
            for n in [0, 1, k - 1, 3 * k + 5, 1000] {
                for (name, keys) in common::key_patterns(n, &mut rng) {
                    let heap = CooperativeHeap::<i32>::new(&rt, &config(k, 3, refill)).unwrap();
                    for part in keys.chunks(k / 2 + 3) {
                        heap.insert(part).unwrap();
                    }
                    assert_eq!(heap.len(), n);
                    let mut got = Vec::new();
                    while got.len() < n {
                        let d = heap.delete_min(k + 3).unwrap();
                        assert!(!d.is_empty(), "{t} K={k} {name}: ran dry early");
                        got.extend(d);
                    }
                    let mut want = keys.clone();
                    want.sort();
                    assert_eq!(got, want, "{t} K={k} n={n} {name}");
                    assert!(heap.is_empty() && heap.delete_min(1).unwrap().is_empty());
                }
            }
        }
    }
}

#[test]
fn the_fence_splits_work_between_host_and_device() {
    let rt = common::runtime(common::transports()[0]);
    let heap = CooperativeHeap::<u32>::new(&rt, &config(32, 2, 64)).unwrap();
    // A new heap sends inserts to the device side; the first delete refills the host top.
    heap.insert(&(0..1000).rev().collect::<Vec<u32>>()).unwrap();
    assert_eq!(heap.stats().inserted_on_host, 0);
    assert_eq!(heap.delete_min(10).unwrap(), (0..10).collect::<Vec<_>>());
    let s = heap.stats();
    assert_eq!((s.refills, s.keys_from_device), (1, 64));
    // Keys below the fence (63) now stay on the host; larger ones wait for the device.
    heap.insert(&[5, 6, 500]).unwrap();
    assert_eq!(heap.stats().inserted_on_host, 2);
    assert_eq!(heap.peek().unwrap(), Some(5));
    assert_eq!(heap.delete_min(4).unwrap(), vec![5, 6, 10, 11]);
    // Taking everything empties the device: the fence goes to +∞ and inserts stay on the
    // host until the top outgrows its capacity (128) and spills its larger half.
    let all = heap.delete_min(usize::MAX).unwrap();
    assert_eq!(all.len(), 1000 - 12 + 1);
    heap.insert(&(0..200).collect::<Vec<u32>>()).unwrap();
    let s = heap.stats();
    assert!(s.spills >= 1, "{s:?}");
    assert_eq!(heap.len(), 200);
    assert_eq!(heap.delete_min(200).unwrap(), (0..200).collect::<Vec<_>>());
    assert!(heap.stats().served_by_host >= 200);
    heap.insert(&[3, 1, 2]).unwrap();
    heap.clear().unwrap();
    // "Everything" from a heap whose keys are all on the device side (a refill of usize::MAX).
    heap.insert(&(0..100).rev().collect::<Vec<u32>>()).unwrap();
    assert_eq!(
        heap.delete_min(usize::MAX).unwrap(),
        (0..100).collect::<Vec<_>>()
    );
    heap.clear().unwrap();
    assert!(heap.is_empty() && heap.peek().unwrap().is_none());
    assert_eq!(
        heap.stats(),
        Default::default(),
        "clear resets the counters"
    );
}

/// Many host inserts below the fence, then large deletes: the top merges its heap of host
/// inserts into the sorted run; the output must still be the smallest keys in order.
#[test]
fn large_takes_after_many_host_inserts_match_a_binary_heap() {
    use rand::Rng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(rand::random());
    let rt = common::runtime(common::transports()[0]);
    let heap = CooperativeHeap::<i32>::new(&rt, &config(32, 2, 1024)).unwrap();
    let mut reference = BinaryHeap::new();
    for round in 0..30 {
        let n = rng.gen_range(200..1500);
        let keys: Vec<i32> = (0..n).map(|_| rng.gen_range(-5000..5000)).collect();
        heap.insert(&keys).unwrap();
        reference.extend(keys.into_iter().map(Reverse));
        let take = rng.gen_range(1..900);
        let want: Vec<i32> = (0..take)
            .map_while(|_| reference.pop().map(|r| r.0))
            .collect();
        assert_eq!(heap.delete_min(take).unwrap(), want, "round {round}");
        assert_eq!(heap.len(), reference.len());
    }
    let s = heap.stats();
    assert!(s.inserted_on_host > 1000 && s.refills > 0, "{s:?}");
    // Host inserts below the fence, then "everything" (a take of usize::MAX keys).
    let low: Vec<i32> = (0..400).map(|_| rng.gen_range(-6000..-5000)).collect();
    heap.insert(&low).unwrap();
    reference.extend(low.into_iter().map(Reverse));
    let want: Vec<i32> = std::iter::from_fn(|| reference.pop().map(|r| r.0)).collect();
    assert_eq!(heap.delete_min(usize::MAX).unwrap(), want);
}

/// Small concurrent histories (three threads, three operations each) replay on a sequential
/// priority queue in an order that respects real time; tiny refills and flushes so the
/// operations race over the fence and the device.
#[test]
fn small_concurrent_histories_are_linearizable() {
    let rt = common::runtime(common::transports()[0]);
    for history in 0..40u64 {
        let heap = CooperativeHeap::<i32>::new(&rt, &config(2, 2, 2)).unwrap();
        let events = record_history(
            history,
            |keys| {
                let keys: Vec<i32> = keys.iter().map(|&k| k as i32).collect();
                heap.insert(&keys).unwrap()
            },
            |n| {
                heap.delete_min(n)
                    .unwrap()
                    .into_iter()
                    .map(|k| k as i16)
                    .collect()
            },
        );
        assert!(
            linearizable(&events),
            "history {history} is not linearizable: {events:#?}"
        );
    }
}

#[test]
fn host_threads_share_one_cooperative_heap() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let heap = CooperativeHeap::<u32>::new(&rt, &config(16, 3, 40)).unwrap();
        common::threads_share_one_heap(
            &t.to_string(),
            600u32,
            37,
            19,
            |keys| heap.insert(keys).unwrap(),
            |n| heap.delete_min(n).unwrap(),
        );
    }
}

#[test]
fn pairs_and_bad_configurations() {
    let rt = common::runtime(common::transports()[0]);
    let heap = CooperativeHeap::<(f32, u32)>::new(&rt, &config(8, 2, 8)).unwrap();
    let keys: Vec<(f32, u32)> = (0..100u32)
        .map(|i| (((i * 37) % 11) as f32 - 5.5, i))
        .collect();
    heap.insert(&keys).unwrap();
    let got = heap.delete_min(100).unwrap();
    let mut want = keys.clone();
    want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    assert_eq!(got, want);
    for (c, what) in [
        (
            CooperativeConfig {
                refill: 0,
                ..CooperativeConfig::new(8)
            },
            "at least 1",
        ),
        (
            CooperativeConfig {
                top_capacity: 8,
                ..CooperativeConfig::new(8)
            },
            "two refills",
        ),
        (CooperativeConfig::new(12), "power of two"),
        (
            CooperativeConfig {
                refill: usize::MAX,
                ..CooperativeConfig::new(8)
            },
            "a refill: 18446744073709551615 is more than the limit",
        ),
    ] {
        let e = CooperativeHeap::<u32>::new(&rt, &c).unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Random calls against `BinaryHeap`, shrunk to a minimal failing sequence on failure.
    #[test]
    fn cooperative_heap_matches_binary_heap(
        ops in prop::collection::vec(op(), 1..30),
        batch_log2 in 1u32..5,
        refill in 1usize..40,
    ) {
        for rt in common::shared_runtimes() {
            let heap = CooperativeHeap::<i32>::new(rt, &config(1 << batch_log2, 2, refill)).unwrap();
            let mut reference = BinaryHeap::new();
            for op in &ops {
                match op {
                    Op::Insert(keys) => {
                        let keys: Vec<i32> = keys.iter().map(|&k| k as i32).collect();
                        heap.insert(&keys).unwrap();
                        reference.extend(keys.into_iter().map(Reverse));
                    }
                    Op::Delete(n) => {
                        let want: Vec<i32> =
                            (0..*n).map_while(|_| reference.pop().map(|r| r.0)).collect();
                        prop_assert_eq!(heap.delete_min(*n).unwrap(), want);
                    }
                }
                prop_assert_eq!(heap.len(), reference.len());
                prop_assert_eq!(heap.peek().unwrap(), reference.peek().map(|r| r.0));
            }
        }
    }
}
