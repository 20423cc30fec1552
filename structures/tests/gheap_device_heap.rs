//! The device generalized heap (GpuOnly): INS and DEL as concurrent work-groups with node
//! locks, on both transports, against std's sort and `BinaryHeap`.

mod common;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use asym_runtime::Error;
use asym_structures::{
    BulkPolicy, DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey, HeapOp, InsertDirection,
};
use common::{op, Op};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// The seed's operations only (no bulk rebuild): these tests are about INS and DEL.
fn config(batch: usize, groups: usize) -> DeviceHeapConfig {
    DeviceHeapConfig {
        work_groups: Some(groups),
        initial_nodes: 1,
        bulk: BulkPolicy::Never,
        ..DeviceHeapConfig::new(batch)
    }
}

/// Both of the seed's heaps: TD-INS/TD-DEL and BU-INS/TD-DEL.
const DIRECTIONS: [InsertDirection; 2] = [InsertDirection::TopDown, InsertDirection::BottomUp];

fn directed(batch: usize, groups: usize, direction: InsertDirection) -> DeviceHeapConfig {
    config(batch, groups).with_direction(direction)
}

#[test]
fn heap_sort_on_the_device_equals_std_sort() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for (batch, dir) in [2usize, 32, 64, 256, 1024, 2048]
            .into_iter()
            .flat_map(|b| DIRECTIONS.map(|d| (b, d)))
        {
            // Sizes that are not multiples of K, and enough nodes for several levels.
            for n in [1, batch - 1, 7 * batch + 3, 40 * batch + batch / 2 + 1] {
                for (name, keys) in common::key_patterns(n, &mut rng) {
                    let heap =
                        DeviceGeneralizedHeap::<i32>::new(&rt, &directed(batch, 8, dir)).unwrap();
                    heap.insert(&keys).unwrap();
                    assert_eq!(heap.len(), n, "{t} {dir:?} K {batch} n {n} {name}");
                    heap.check_invariants()
                        .unwrap_or_else(|e| panic!("{t} {dir:?} K {batch} n {n} {name}: {e}"));
                    let mut want = keys.clone();
                    want.sort();
                    assert_eq!(
                        heap.peek().unwrap(),
                        Some(want[0]),
                        "{t} {dir:?} K {batch} {name}"
                    );
                    let got = heap.delete_min(n + 5).unwrap();
                    assert_eq!(got, want, "{t} {dir:?} K {batch} n {n} {name}");
                    if name == "ascending" && n > 7 * batch {
                        // A DEL refills the root from the last node, whose keys all lie
                        // above the root's children: the sift swaps instead of merging.
                        let stats = heap.stats();
                        assert!(stats.swaps > 0, "{t} {dir:?} K {batch}: {stats:?}");
                    }
                    assert!(heap.is_empty());
                    assert_eq!(heap.delete_min(3).unwrap(), Vec::<i32>::new());
                }
            }
        }
    }
}

#[test]
fn calls_of_every_size_match_a_binary_heap() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for (batch, dir) in [
            (4usize, DIRECTIONS[0]),
            (32, DIRECTIONS[1]),
            (8, DIRECTIONS[1]),
        ] {
            let heap = DeviceGeneralizedHeap::<i32>::new(&rt, &directed(batch, 6, dir)).unwrap();
            let mut reference = BinaryHeap::new();
            for step in 0..60 {
                if rng.gen_bool(0.55) {
                    let n = rng.gen_range(0..5 * batch);
                    let keys: Vec<i32> = (0..n).map(|_| rng.gen_range(-50..50)).collect();
                    heap.insert(&keys).unwrap();
                    reference.extend(keys.iter().map(|&k| Reverse(k)));
                } else {
                    let n = rng.gen_range(0..3 * batch);
                    let got = heap.delete_min(n).unwrap();
                    let want: Vec<i32> =
                        (0..n).map_while(|_| reference.pop()).map(|r| r.0).collect();
                    assert_eq!(got, want, "{t} {dir:?} K {batch} step {step}");
                }
                assert_eq!(
                    heap.len(),
                    reference.len(),
                    "{t} {dir:?} K {batch} step {step}"
                );
                assert_eq!(heap.peek().unwrap(), reference.peek().map(|r| r.0));
            }
        }
    }
}

#[test]
fn concurrent_insert_delete_pairs_lose_and_invent_nothing() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for ((batch, preload_nodes, pairs), dir) in
            [(32usize, 0usize, 64usize), (64, 40, 96), (256, 8, 24)]
                .into_iter()
                .flat_map(|c| DIRECTIONS.map(|d| (c, d)))
        {
            let heap = DeviceGeneralizedHeap::<i32>::new(&rt, &directed(batch, 12, dir)).unwrap();
            let preload: Vec<i32> = (0..preload_nodes * batch).map(|_| rng.gen()).collect();
            heap.insert(&preload).unwrap();
            let keys: Vec<i32> = (0..pairs * batch).map(|_| rng.gen()).collect();
            let dels = heap.insert_delete_pairs(&keys).unwrap();
            assert_eq!(dels.len(), pairs);
            let mut all: Vec<i32> = preload.iter().chain(&keys).copied().collect();
            all.sort();
            let mut seen: Vec<i32> = Vec::new();
            for (i, d) in dels.iter().enumerate() {
                assert!(
                    d.windows(2).all(|w| w[0] <= w[1]),
                    "{t} {dir:?} DEL {i} unsorted"
                );
                // Every DEL runs after at least its own INS took effect... not necessarily:
                // a DEL may be linearized before any INS of the launch; it returns what was
                // there (possibly nothing), never more than K.
                assert!(d.len() <= batch);
                seen.extend(d);
            }
            let rest = heap.delete_min(usize::MAX).unwrap();
            assert!(rest.windows(2).all(|w| w[0] <= w[1]));
            seen.extend(&rest);
            seen.sort();
            assert_eq!(seen, all, "{t} {dir:?} K {batch}: keys lost or duplicated");
            heap.check_invariants().unwrap();
        }
    }
}

/// Many small concurrent launches of random INS and DEL: the order the device reports is a
/// linearization (replaying it on `BinaryHeap` gives every DEL's result), and the heap holds
/// what the replay holds. Every third launch is DELs alone, which run on `gheap_delete`, and
/// every third INS alone.
#[test]
fn concurrent_launches_replay_on_a_binary_heap_in_their_linearization_order() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for (batch, dir) in [2usize, 4, 16]
            .into_iter()
            .flat_map(|b| DIRECTIONS.map(|d| (b, d)))
        {
            let heap = DeviceGeneralizedHeap::<i32>::new(&rt, &directed(batch, 8, dir)).unwrap();
            let mut reference = BinaryHeap::new();
            for launch in 0..40 {
                let deletes_only = launch % 3 == 2;
                let n_keys = if deletes_only {
                    0
                } else {
                    rng.gen_range(0..8 * batch)
                };
                let keys: Vec<i32> = (0..n_keys).map(|_| rng.gen_range(-40..40)).collect();
                let batches = n_keys.div_ceil(batch);
                let mut ops: Vec<HeapOp> = (0..batches).map(HeapOp::Insert).collect();
                let inserts_only = launch % 3 == 1;
                let deletes = if inserts_only {
                    0
                } else {
                    rng.gen_range(usize::from(deletes_only)..8)
                };
                for _ in 0..deletes {
                    ops.push(HeapOp::Delete(rng.gen_range(1..=batch)));
                }
                // Shuffle so INS and DEL of one launch overlap in every way.
                for i in (1..ops.len()).rev() {
                    ops.swap(i, rng.gen_range(0..=i));
                }
                let trace = heap.run_concurrent(&keys, &ops).unwrap();
                let mut sorted_order = trace.order.clone();
                sorted_order.sort();
                assert_eq!(sorted_order, (0..ops.len()).collect::<Vec<_>>());
                for &i in &trace.order {
                    match ops[i] {
                        HeapOp::Insert(b) => {
                            let end = (b * batch + batch).min(keys.len());
                            reference.extend(keys[b * batch..end].iter().map(|&k| Reverse(k)));
                            assert!(trace.deleted[i].is_empty());
                        }
                        HeapOp::Delete(n) => {
                            let want: Vec<i32> =
                                (0..n).map_while(|_| reference.pop()).map(|r| r.0).collect();
                            assert_eq!(
                                trace.deleted[i], want,
                                "{t} {dir:?} K {batch} launch {launch}: op {i} in order {:?} of \
                                 {ops:?}",
                                trace.order
                            );
                        }
                    }
                }
                assert_eq!(
                    heap.len(),
                    reference.len(),
                    "{t} {dir:?} K {batch} launch {launch}"
                );
                // The properties hold again after every concurrent launch.
                heap.check_invariants()
                    .unwrap_or_else(|e| panic!("{t} {dir:?} K {batch} launch {launch}: {e}"));
            }
            let stats = heap.stats();
            eprintln!("{t} {dir:?} K {batch}: {stats:?}");
            if dir == InsertDirection::TopDown {
                assert_eq!(
                    (stats.climb_merges, stats.del_climbs, stats.waits),
                    (0, 0, 0)
                );
            } else {
                // Random keys inserted over a populated heap: some batches must climb.
                assert!(stats.climb_merges > 0, "{t} K {batch}: {stats:?}");
            }
            let rest = heap.delete_min(usize::MAX).unwrap();
            let want: Vec<i32> = std::iter::from_fn(|| reference.pop())
                .map(|r| r.0)
                .collect();
            assert_eq!(rest, want);
        }
    }
}

#[test]
fn bad_operations_are_refused_before_the_launch() {
    let rt = common::runtime(common::transports()[0]);
    let heap = DeviceGeneralizedHeap::<i32>::new(&rt, &config(4, 2)).unwrap();
    let e = heap
        .run_concurrent(&[1, 2, 3, 4, 5], &[HeapOp::Insert(2)])
        .unwrap_err();
    assert!(
        e.to_string().contains("makes 2 batches") || e.to_string().contains("make 2 batches"),
        "{e}"
    );
    for n in [0, 5] {
        let e = heap.run_concurrent(&[], &[HeapOp::Delete(n)]).unwrap_err();
        assert!(e.to_string().contains("1 to K = 4"), "{e}");
    }
    assert!(heap.is_empty());
    assert_eq!(heap.launches(), 0);
}

#[test]
fn the_heap_grows_between_launches_and_stops_at_its_limit() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let heap =
            DeviceGeneralizedHeap::<i32>::new(&rt, &directed(16, 4, InsertDirection::BottomUp))
                .unwrap();
        assert_eq!(heap.capacity_nodes(), 1);
        let keys: Vec<i32> = (0..16 * 50 + 3).rev().collect();
        for part in keys.chunks(100) {
            heap.insert(part).unwrap();
        }
        assert!(heap.capacity_nodes() >= 50);
        assert_eq!(
            heap.delete_min(keys.len()).unwrap(),
            (0..keys.len() as i32).collect::<Vec<_>>()
        );

        let limited = DeviceGeneralizedHeap::<i32>::new(
            &rt,
            &DeviceHeapConfig {
                max_nodes: Some(3),
                ..config(8, 4)
            },
        )
        .unwrap();
        limited.insert(&(0..30).collect::<Vec<i32>>()).unwrap(); // 3 nodes + 6 in the buffer
        assert!(matches!(
            limited.insert(&[1, 2]),
            Err(Error::CapacityExceeded { capacity: 31, .. })
        ));
        // Refused before the launch: the heap is as it was.
        assert_eq!(limited.len(), 30);
        assert_eq!(
            limited.delete_min(30).unwrap(),
            (0..30).collect::<Vec<i32>>()
        );
        limited.insert(&[5]).unwrap();
        limited.clear().unwrap();
        assert!(limited.is_empty());
        assert_eq!(limited.peek().unwrap(), None);
    }
}

#[test]
fn other_key_types_and_payloads_keep_their_order() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        let floats: Vec<f32> = (0..700)
            .map(|i| match i % 50 {
                0 => f32::NEG_INFINITY,
                1 => -0.0,
                2 => 0.0,
                _ => rng.gen_range(-1e6f32..1e6),
            })
            .collect();
        let heap = DeviceGeneralizedHeap::<f32>::new(&rt, &config(32, 4)).unwrap();
        heap.insert(&floats).unwrap();
        let mut want = floats.clone();
        want.sort_by(f32::total_cmp);
        let got = heap.delete_min(floats.len()).unwrap();
        assert_eq!(
            got.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
        );

        let words: Vec<u32> = (0..500).map(|_| rng.gen()).chain([0, u32::MAX]).collect();
        let heap = DeviceGeneralizedHeap::<u32>::new(&rt, &config(64, 4)).unwrap();
        heap.insert(&words).unwrap();
        let mut want = words.clone();
        want.sort();
        assert_eq!(heap.delete_min(words.len()).unwrap(), want);

        // Key–payload pairs: ordered by key, then payload; payloads come back intact.
        let pairs: Vec<(i32, u32)> = (0..900u32)
            .map(|i| (rng.gen_range(-20..20), i * 7919))
            .collect();
        let heap = DeviceGeneralizedHeap::<(i32, u32)>::new(
            &rt,
            &directed(64, 6, InsertDirection::BottomUp),
        )
        .unwrap();
        heap.insert(&pairs).unwrap();
        let mut want = pairs.clone();
        want.sort();
        assert_eq!(heap.delete_min(pairs.len()).unwrap(), want);
        let fp: Vec<(f32, u32)> = vec![(1.5, 3), (-2.0, 9), (1.5, 1), (f32::INFINITY, 0)];
        let heap = DeviceGeneralizedHeap::<(f32, u32)>::new(&rt, &config(2, 2)).unwrap();
        heap.insert(&fp).unwrap();
        assert_eq!(
            heap.delete_min(4).unwrap(),
            vec![(-2.0, 9), (1.5, 1), (1.5, 3), (f32::INFINITY, 0)]
        );
    }
}

#[test]
fn bad_configurations_are_refused_clearly() {
    let rt = common::runtime(common::transports()[0]);
    for batch in [0usize, 3, 4096] {
        let e = DeviceGeneralizedHeap::<i32>::new(&rt, &DeviceHeapConfig::new(batch)).unwrap_err();
        assert!(e.is_argument_error(), "K {batch}: {e}");
    }
    let e = DeviceGeneralizedHeap::<i32>::new(
        &rt,
        &DeviceHeapConfig {
            work_group_size: Some(64),
            ..DeviceHeapConfig::new(32)
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("work-group size 64"), "{e}");
    let e = DeviceGeneralizedHeap::<i32>::new(&rt, &config(32, 0)).unwrap_err();
    assert!(e.to_string().contains("at least one work-group"), "{e}");
    let e = DeviceGeneralizedHeap::<i32>::new(
        &rt,
        &DeviceHeapConfig {
            max_nodes: Some(0),
            ..DeviceHeapConfig::new(32)
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("at least one node"), "{e}");
}

/// Host threads share one device heap (its calls are serialized, each a concurrent launch):
/// every key comes back exactly once and each call's deletions are sorted.
#[test]
fn host_threads_share_one_device_heap() {
    for t in common::transports() {
        let rt = common::runtime(t);
        // The seed's operations in both directions, and bulk calls (each a rebuild, one at a
        // time under the heap's lock).
        let cases = DIRECTIONS
            .map(|d| (d, BulkPolicy::Never))
            .into_iter()
            .chain([(InsertDirection::TopDown, BulkPolicy::Always)]);
        for (dir, bulk) in cases {
            let config = DeviceHeapConfig {
                bulk,
                ..directed(32, 4, dir)
            };
            let heap = DeviceGeneralizedHeap::<u32>::new(&rt, &config).unwrap();
            common::threads_share_one_heap(
                &format!("{t} {dir:?} {bulk:?}"),
                5 * 32 + 7,
                41,
                20,
                |keys| heap.insert(keys).unwrap(),
                |n| heap.delete_min(n).unwrap(),
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Random calls against `BinaryHeap`, shrunk to a minimal failing sequence on failure.
    #[test]
    fn device_heap_matches_binary_heap(
        ops in prop::collection::vec(op(), 1..30),
        batch_log2 in 1u32..6,
        groups in 1usize..6,
        bottom_up in any::<bool>(),
    ) {
        let dir = DIRECTIONS[usize::from(bottom_up)];
        for rt in common::shared_runtimes() {
            let heap =
                DeviceGeneralizedHeap::<i32>::new(rt, &directed(1 << batch_log2, groups, dir)).unwrap();
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
                if let Err(e) = heap.check_invariants() {
                    prop_assert!(false, "{}", e);
                }
            }
        }
    }
}

/// Bulk calls (every key sorted on the device, the heap laid out again) give std's sort, keep
/// the heap properties, and mix with the seed's operations on the same heap.
#[test]
fn bulk_calls_equal_std_sort_and_mix_with_operations() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        // Merge passes as one launch each (each group searching its tile's bounds: GPUs'
        // default) and as two (a launch finding every tile's first): both on every device.
        for (batch, one_launch) in [2usize, 32, 256, 1024]
            .into_iter()
            .flat_map(|b| [(b, false), (b, true)])
        {
            let bulk = DeviceHeapConfig {
                bulk: BulkPolicy::Always,
                one_launch_merges: Some(one_launch),
                ..config(batch, 4)
            };
            for n in [1, batch - 1, 5 * batch + 3, 33 * batch + batch / 2 + 1] {
                for (name, keys) in common::key_patterns(n, &mut rng) {
                    let what = format!("{t} K {batch} one-launch merges {one_launch} n {n} {name}");
                    let heap = DeviceGeneralizedHeap::<i32>::new(&rt, &bulk).unwrap();
                    heap.insert(&keys).unwrap();
                    assert_eq!(heap.len(), n, "{what}");
                    heap.check_invariants()
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let mut want = keys.clone();
                    want.sort();
                    assert_eq!(heap.peek().unwrap(), Some(want[0]), "{what}");
                    // A part, then the rest (the rebuild keeps what a delete leaves).
                    let first = n / 3;
                    assert_eq!(heap.delete_min(first).unwrap(), want[..first], "{what}");
                    heap.check_invariants()
                        .unwrap_or_else(|e| panic!("{what} after a delete: {e}"));
                    assert_eq!(heap.delete_min(n).unwrap(), want[first..], "{what}");
                    assert!(heap.is_empty(), "{what}");
                    let calls = 2 + u64::from(first > 0);
                    assert_eq!(heap.stats().bulk_calls, calls, "{what}");
                }
            }
        }
        // Bulk calls and INS/DEL launches on one heap, against a binary heap.
        for batch in [4usize, 64] {
            let heap = DeviceGeneralizedHeap::<i32>::new(&rt, &config(batch, 4)).unwrap();
            let mut reference = BinaryHeap::new();
            for step in 0..40 {
                let policy = [BulkPolicy::Never, BulkPolicy::Always][step % 2];
                heap.set_bulk_policy(policy);
                if rng.gen_bool(0.55) {
                    let n = rng.gen_range(0..6 * batch);
                    let keys: Vec<i32> = (0..n).map(|_| rng.gen_range(-90..90)).collect();
                    if step % 4 < 2 {
                        heap.insert(&keys).unwrap();
                    } else {
                        // Written by the caller where they travel from, as a device set
                        // routes them (a bulk call's mapped staging, else a vector).
                        heap.insert_with(n, &|dst: &mut [i32]| {
                            dst.copy_from_slice(&keys);
                            Ok(())
                        })
                        .unwrap();
                    }
                    reference.extend(keys.iter().map(|&k| Reverse(k)));
                } else if step % 4 == 3 && !reference.is_empty() {
                    // Into the caller's memory.
                    let n = rng.gen_range(1..=reference.len().min(4 * batch));
                    let mut got = vec![i32::MIN; n];
                    heap.delete_min_into(&mut got).unwrap();
                    let want: Vec<i32> = (0..n)
                        .filter_map(|_| reference.pop())
                        .map(|r| r.0)
                        .collect();
                    assert_eq!(got, want, "{t} K {batch} step {step} {policy:?} into");
                } else {
                    let n = rng.gen_range(0..4 * batch);
                    let got = heap.delete_min(n).unwrap();
                    let want: Vec<i32> =
                        (0..n).map_while(|_| reference.pop()).map(|r| r.0).collect();
                    assert_eq!(got, want, "{t} K {batch} step {step} {policy:?}");
                }
                heap.check_invariants()
                    .unwrap_or_else(|e| panic!("{t} K {batch} step {step} {policy:?}: {e}"));
                assert_eq!(heap.len(), reference.len(), "{t} K {batch} step {step}");
                assert_eq!(heap.peek().unwrap(), reference.peek().map(|r| r.0));
            }
            assert!(heap.stats().bulk_calls > 0 && heap.stats().launches > heap.stats().bulk_calls);
            // More than it holds; a fill that fails: errors, and the heap is unchanged.
            let held = heap.len();
            let mut too_many = vec![0; held + 1];
            assert!(matches!(
                heap.delete_min_into(&mut too_many),
                Err(e) if e.is_argument_error()
            ));
            for policy in [BulkPolicy::Never, BulkPolicy::Always] {
                heap.set_bulk_policy(policy);
                let r = heap.insert_with(3 * batch, &|_: &mut [i32]| {
                    Err(Error::InvalidArgument("no keys today".into()))
                });
                assert!(r.is_err(), "{policy:?}");
                assert_eq!(heap.len(), held, "{t} K {batch} {policy:?}");
            }
            heap.set_bulk_policy(BulkPolicy::Auto);
            let mut rest = vec![0; held];
            heap.delete_min_into(&mut rest).unwrap();
            let want: Vec<i32> = std::iter::from_fn(|| reference.pop().map(|r| r.0)).collect();
            assert_eq!(rest, want);
        }
    }
}

/// The automatic policy rebuilds only for calls that move a large share of the heap; other
/// key types and a capacity limit behave as with INS and DEL.
#[test]
fn bulk_calls_keep_key_types_and_the_capacity_limit() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        let auto = DeviceHeapConfig {
            bulk: BulkPolicy::Auto,
            ..config(16, 4)
        };
        let heap = DeviceGeneralizedHeap::<u32>::new(&rt, &auto).unwrap();
        let words: Vec<u32> = (0..16 * 40)
            .map(|_| rng.gen())
            .chain([0, u32::MAX])
            .collect();
        heap.insert(&words).unwrap();
        assert_eq!(
            heap.stats().bulk_calls,
            1,
            "{t}: 40 batches into an empty heap"
        );
        heap.insert(&words[..16 * 3]).unwrap();
        assert_eq!(
            heap.stats().bulk_calls,
            1,
            "{t}: 3 batches are INS operations"
        );
        let mut want: Vec<u32> = words.iter().chain(&words[..16 * 3]).copied().collect();
        want.sort();
        assert_eq!(heap.delete_min(5).unwrap(), want[..5], "{t}");
        assert_eq!(heap.delete_min(want.len()).unwrap(), want[5..], "{t}");
        assert_eq!(heap.stats().bulk_calls, 2, "{t}");

        let always = DeviceHeapConfig {
            bulk: BulkPolicy::Always,
            ..config(32, 4)
        };
        let floats: Vec<f32> = (0..700)
            .map(|i| match i % 50 {
                0 => f32::NEG_INFINITY,
                1 => -0.0,
                2 => 0.0,
                3 => f32::INFINITY,
                _ => rng.gen_range(-1e6f32..1e6),
            })
            .collect();
        let heap = DeviceGeneralizedHeap::<f32>::new(&rt, &always).unwrap();
        heap.insert(&floats).unwrap();
        let mut want = floats.clone();
        want.sort_by(f32::total_cmp);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&heap.delete_min(floats.len()).unwrap()),
            bits(&want),
            "{t}"
        );

        let pairs: Vec<(i32, u32)> = (0..900u32)
            .map(|i| (rng.gen_range(-20..20), i * 7919))
            .chain([(i32::MAX, u32::MAX), (i32::MIN, 0)])
            .collect();
        let heap = DeviceGeneralizedHeap::<(i32, u32)>::new(&rt, &always).unwrap();
        heap.insert(&pairs).unwrap();
        heap.check_invariants().unwrap();
        let mut want = pairs.clone();
        want.sort();
        assert_eq!(heap.delete_min(pairs.len()).unwrap(), want, "{t}");

        let limited = DeviceGeneralizedHeap::<i32>::new(
            &rt,
            &DeviceHeapConfig {
                max_nodes: Some(3),
                bulk: BulkPolicy::Always,
                ..config(8, 4)
            },
        )
        .unwrap();
        limited
            .insert(&(0..60).rev().collect::<Vec<i32>>()[30..])
            .unwrap();
        assert!(matches!(
            limited.insert(&(0..64).collect::<Vec<i32>>()),
            Err(Error::CapacityExceeded { .. })
        ));
        assert_eq!(limited.len(), 30, "{t}: refused before any change");
        assert_eq!(
            limited.delete_min(30).unwrap(),
            (0..30).collect::<Vec<i32>>()
        );
    }
}

/// One fill writing several heaps' staging at once: each heap gets its slice's keys; bad
/// arguments and a failing fill leave every heap as it was.
#[test]
fn one_fill_inserts_into_several_heaps() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        let cfg = DeviceHeapConfig {
            bulk: BulkPolicy::Auto,
            ..config(32, 4)
        };
        let a = DeviceGeneralizedHeap::<i32>::new(&rt, &cfg).unwrap();
        let b = DeviceGeneralizedHeap::<i32>::new(&rt, &cfg).unwrap();
        a.insert(&[5, -7, 9]).unwrap();
        let ka: Vec<i32> = (0..10_007).map(|_| rng.gen_range(-1000..1000)).collect();
        let kb: Vec<i32> = (0..333).map(|_| rng.gen()).collect();
        let each = DeviceGeneralizedHeap::insert_each_with(
            &[&a, &b],
            &[ka.len(), kb.len()],
            &|dsts: &mut [&mut [i32]]| {
                dsts[0].copy_from_slice(&ka);
                dsts[1].copy_from_slice(&kb);
                Ok(())
            },
        )
        .unwrap();
        assert!(each.iter().all(|(r, s)| r.is_ok() && *s >= 0.0), "{t}");
        let mut want_a = ka.clone();
        want_a.extend([5, -7, 9]);
        want_a.sort_unstable();
        let mut want_b = kb.clone();
        want_b.sort_unstable();
        // Refused before anything moves: lengths, the same heap twice, a failing fill.
        assert!(DeviceGeneralizedHeap::insert_each_with(&[&a], &[1, 2], &|_| Ok(())).is_err());
        assert!(DeviceGeneralizedHeap::insert_each_with(&[&a, &a], &[1, 1], &|_| Ok(())).is_err());
        let failed = DeviceGeneralizedHeap::insert_each_with(&[&a, &b], &[10, 10], &|_| {
            Err(Error::InvalidArgument("no keys".into()))
        });
        assert!(failed.is_err());
        assert_eq!(a.len(), want_a.len(), "{t}");
        assert_eq!(a.delete_min(usize::MAX).unwrap(), want_a, "{t}");
        assert_eq!(b.delete_min(usize::MAX).unwrap(), want_b, "{t}");
    }
}

/// Keys handed over on the device (`insert_from_device`, `delete_min_to_device`, both at once,
/// and the `enqueue_` forms that return before their launches complete) behave as the host
/// calls do, under every bulk policy, for pair keys and deletes that are not multiples of K
/// (a short DEL among full ones); bad sizes are errors that leave the heap as it was. A
/// queued rebuild's output is refused to the host (`Busy`) until the heap's next call.
#[test]
fn keys_handed_over_on_the_device_match_a_binary_heap() {
    type Pair = (u32, u32);
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for (policy, queued) in [BulkPolicy::Never, BulkPolicy::Always, BulkPolicy::Auto]
            .into_iter()
            .flat_map(|p| [(p, false), (p, true)])
        {
            let batch = 16;
            let heap = DeviceGeneralizedHeap::<Pair>::new(
                &rt,
                &DeviceHeapConfig {
                    bulk: policy,
                    ..config(batch, 4)
                },
            )
            .unwrap();
            let mut src = rt.alloc::<i64>(64 * batch).unwrap();
            let mut dst = rt.alloc::<i64>(64 * batch).unwrap();
            let mut reference = BinaryHeap::new();
            for step in 0..32 {
                // Inserts, deletes, and both at once (the keys in, then the smallest of
                // everything out).
                let (insert, delete) = match step % 4 {
                    3 => (true, true),
                    2 => (false, true),
                    _ => (true, false),
                };
                let mut len = 0;
                if insert {
                    len = rng.gen_range(0..=src.len());
                    // Few distinct keys: equal keys order by payload.
                    let keys: Vec<Pair> = (0..len)
                        .map(|_| (rng.gen_range(0..50) * 1000, rng.gen()))
                        .collect();
                    let upload: Vec<i64> = keys.iter().map(|k| k.to_upload()).collect();
                    src.write_range(0, &upload).unwrap();
                    reference.extend(keys.into_iter().map(Reverse));
                }
                let n = if delete {
                    rng.gen_range(0..=reference.len().min(dst.len()))
                } else {
                    0
                };
                match (insert, delete, queued) {
                    (true, true, false) => heap.insert_then_delete_on_device(&src, len, n, &dst),
                    (true, true, true) => {
                        heap.enqueue_insert_then_delete_on_device(&src, len, n, &dst)
                    }
                    (true, false, _) => heap.insert_from_device(&src, len),
                    (_, _, false) => heap.delete_min_to_device(n, &dst),
                    (_, _, true) => heap.enqueue_delete_min_to_device(n, &dst),
                }
                .unwrap();
                if delete {
                    let raw = match dst.read_range(0, n) {
                        Err(Error::Busy(_)) if queued => {
                            assert_ne!(policy, BulkPolicy::Never, "{t} step {step}");
                            // Waiting for the heap's launches frees its buffers.
                            heap.finish().unwrap();
                            dst.read_range(0, n).unwrap()
                        }
                        r => {
                            assert!(
                                !(queued && policy == BulkPolicy::Always && n > 0),
                                "{t} step {step}: a queued rebuild was waited for"
                            );
                            r.unwrap()
                        }
                    };
                    let got: Vec<Pair> = raw.into_iter().map(Pair::from_repr).collect();
                    let want: Vec<Pair> =
                        (0..n).map_while(|_| reference.pop()).map(|r| r.0).collect();
                    assert_eq!(got, want, "{t} {policy:?} step {step} insert {insert}");
                }
                assert_eq!(heap.len(), reference.len(), "{t} {policy:?} step {step}");
                heap.check_invariants()
                    .unwrap_or_else(|e| panic!("{t} {policy:?} step {step}: {e}"));
            }
            let held = heap.len();
            let short = rt.alloc::<i64>(3).unwrap();
            for r in [
                heap.insert_from_device(&short, 4),
                heap.delete_min_to_device(held + 1, &dst),
                heap.enqueue_delete_min_to_device(held + 1, &dst),
                heap.delete_min_to_device(4, &short),
                heap.enqueue_insert_then_delete_on_device(&short, 4, 0, &dst),
                heap.insert_then_delete_on_device(&short, 4, 0, &dst),
                heap.insert_then_delete_on_device(&src, 0, held + 1, &dst),
                heap.insert_then_delete_on_device(&src, 0, 4, &short),
            ] {
                assert!(
                    matches!(&r, Err(e) if e.is_argument_error()),
                    "{t} {policy:?}: {r:?}"
                );
            }
            assert_eq!(heap.len(), held, "{t} {policy:?}");
            let mut rest = vec![(0, 0); held];
            heap.delete_min_into(&mut rest).unwrap();
            let want: Vec<Pair> = std::iter::from_fn(|| reference.pop().map(|r| r.0)).collect();
            assert_eq!(rest, want, "{t} {policy:?}");
        }
    }
}

/// A rebuilt heap is one sorted run, and the next rebuild sorts only the call's keys and
/// merges once: keys smaller, larger and among the heap's, equal keys, sizes that are not
/// multiples of K, deletes alone (nothing sorted) and after INS/DEL operations (the layout
/// is a heap's again, every run sorted), all against `BinaryHeap`.
#[test]
fn rebuilds_of_a_sorted_heap_match_a_binary_heap() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for (batch, one_launch) in [(16, false), (64, false), (16, true), (64, true)] {
            let always = DeviceGeneralizedHeap::<i32>::new(
                &rt,
                &DeviceHeapConfig {
                    bulk: BulkPolicy::Always,
                    one_launch_merges: Some(one_launch),
                    ..config(batch, 4)
                },
            )
            .unwrap();
            let mut reference = BinaryHeap::new();
            for step in 0..40 {
                let n = rng.gen_range(0..9 * batch);
                let keys: Vec<i32> = match step % 5 {
                    0 => (0..n).map(|_| rng.gen_range(-1000..1000)).collect(),
                    1 => (0..n as i32).map(|i| -5000 - i).collect(),
                    2 => (0..n as i32).map(|i| 5000 + i).collect(),
                    3 => vec![7; n],
                    _ => (0..n).map(|_| rng.gen()).collect(),
                };
                if step % 7 == 6 {
                    // Operations in between: the next rebuild sorts everything again.
                    always.set_bulk_policy(BulkPolicy::Never);
                }
                always.insert(&keys).unwrap();
                reference.extend(keys.iter().map(|&k| Reverse(k)));
                let out = rng.gen_range(0..=reference.len().min(5 * batch));
                let got = always.delete_min(out).unwrap();
                always.set_bulk_policy(BulkPolicy::Always);
                let want: Vec<i32> = (0..out)
                    .map_while(|_| reference.pop())
                    .map(|r| r.0)
                    .collect();
                assert_eq!(got, want, "{t} K {batch} step {step}");
                always
                    .check_invariants()
                    .unwrap_or_else(|e| panic!("{t} K {batch} step {step}: {e}"));
                assert_eq!(always.len(), reference.len(), "{t} K {batch} step {step}");
            }
            let rest = always.delete_min(always.len()).unwrap();
            let want: Vec<i32> = std::iter::from_fn(|| reference.pop().map(|r| r.0)).collect();
            assert_eq!(rest, want, "{t} K {batch}");
        }
    }
}
