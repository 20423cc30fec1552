//! The generalized heap over a device set (`SpreadHeap`): every member holds a range of the
//! key values, inserts and deletes run on all at once and the members' runs join in order. Against a sort and
//! `BinaryHeap` on fresh random keys and the edge cases, on each transport; a member
//! failing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use asym_runtime::{Error, Transport};
use asym_structures::{BulkPolicy, DeviceHeapConfig, InsertDirection, SpreadHeap, MAX_LANES};
use rand::{Rng, SeedableRng};

mod common;

fn rng() -> rand::rngs::StdRng {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    rand::rngs::StdRng::seed_from_u64(seed)
}

fn heap(transport: Transport, batch: usize) -> SpreadHeap<i32> {
    let set = common::device_set(transport);
    SpreadHeap::new(&set, &DeviceHeapConfig::new(batch)).expect("heap")
}

#[test]
fn insert_all_then_delete_all_sorts_on_each_transport() {
    let mut rng = rng();
    for transport in common::set_transports() {
        let h = heap(transport, 64);
        let members = h.members().len();
        let patterns: Vec<(&str, Vec<i32>)> = vec![
            ("random", (0..100_003).map(|_| rng.gen()).collect()),
            (
                "duplicates",
                (0..77_777).map(|_| rng.gen_range(-3..4)).collect(),
            ),
            ("all equal", vec![9; 4096]),
            ("sorted", (0..50_000).collect()),
            ("reversed", (0..50_000).rev().collect()),
            ("one", vec![-1]),
            ("extremes", vec![i32::MAX, i32::MIN, 0, i32::MAX, i32::MIN]),
        ];
        for (p, (what, keys)) in patterns.into_iter().enumerate() {
            // Twice: the heap's first call splits evenly, later ones by the speeds measured.
            for round in 0..2 {
                h.insert(&keys).unwrap();
                assert_eq!(h.len(), keys.len(), "{transport} {what}");
                if p == 0 && round == 0 {
                    let reports = h.members();
                    // Ranges cut at a sample's quantiles: even within a few percent.
                    assert!(
                        reports
                            .iter()
                            .all(|m| m.held as f64 >= 0.9 * (keys.len() / members) as f64),
                        "{transport} {what}: the first insert split evenly: {reports:?}"
                    );
                }
                let out = h.delete_min(keys.len() + 10).unwrap();
                let mut want = keys.clone();
                want.sort_unstable();
                assert_eq!(out, want, "{transport} {what} round {round}");
                assert!(h.is_empty());
            }
        }
    }
}

#[test]
fn interleaved_calls_match_binary_heap() {
    let mut rng = rng();
    let h = heap(Transport::Coarse, 32);
    let mut reference = BinaryHeap::new();
    for step in 0..40 {
        if rng.gen_bool(0.55) {
            let n = rng.gen_range(0..3000);
            let keys: Vec<i32> = (0..n).map(|_| rng.gen_range(-500..500)).collect();
            h.insert(&keys).unwrap();
            reference.extend(keys.into_iter().map(Reverse));
        } else {
            let n = rng.gen_range(0..2500);
            let got = h.delete_min(n).unwrap();
            let want: Vec<i32> = (0..n).map_while(|_| reference.pop().map(|r| r.0)).collect();
            assert_eq!(got, want, "step {step}: delete_min({n})");
        }
        assert_eq!(h.len(), reference.len(), "step {step}");
    }
    let rest = h.delete_min(usize::MAX).unwrap();
    let want: Vec<i32> = std::iter::from_fn(|| reference.pop().map(|r| r.0)).collect();
    assert_eq!(rest, want);
    assert!(
        h.delete_min(5).unwrap().is_empty(),
        "an empty heap deletes nothing"
    );
    h.insert(&[]).unwrap();
}

/// The ranges are cut from the first insert; later keys below and above all of them, and
/// equal to its values, keep the heap's order through interleaved calls.
#[test]
fn keys_outside_the_first_inserts_ranges_keep_the_order() {
    let mut rng = rng();
    for transport in common::set_transports() {
        let h = heap(transport, 16);
        let mut reference = BinaryHeap::new();
        let first: Vec<i32> = (0..5000).map(|_| rng.gen_range(0..100)).collect();
        h.insert(&first).unwrap();
        reference.extend(first.into_iter().map(Reverse));
        for step in 0..30 {
            let keys: Vec<i32> = match step % 3 {
                0 => (0..rng.gen_range(1..4000))
                    .map(|_| rng.gen_range(-10_000..0))
                    .collect(),
                1 => (0..rng.gen_range(1..4000))
                    .map(|_| rng.gen_range(100..10_000))
                    .collect(),
                _ => (0..rng.gen_range(1..4000))
                    .map(|_| rng.gen_range(0..100))
                    .collect(),
            };
            h.insert(&keys).unwrap();
            reference.extend(keys.into_iter().map(Reverse));
            let n = rng.gen_range(0..5000);
            let want: Vec<i32> = (0..n).map_while(|_| reference.pop().map(|r| r.0)).collect();
            assert_eq!(h.delete_min(n).unwrap(), want, "{transport} step {step}");
            assert_eq!(h.len(), reference.len());
        }
        let want: Vec<i32> = std::iter::from_fn(|| reference.pop().map(|r| r.0)).collect();
        assert_eq!(h.delete_min(usize::MAX).unwrap(), want, "{transport}");
    }
}

#[test]
fn a_member_failing_loses_its_keys_and_the_heap_says_so() {
    let h = heap(Transport::Coarse, 32);
    if h.members().len() < 2 {
        return;
    }
    h.insert(&(0..10_000).collect::<Vec<i32>>()).unwrap();
    h.inject_member_failure(1).unwrap();
    match h.delete_min(100) {
        Err(e @ Error::DeviceLost { .. }) => assert!(e.to_string().contains("injected"), "{e}"),
        other => panic!("expected a lost member, got {other:?}"),
    }
    // The keys member 1 held are gone with it: every later call refuses, the heap damaged.
    assert!(matches!(h.insert(&[1, 2, 3]), Err(Error::Corrupted { .. })));
    assert!(matches!(h.delete_min(1), Err(Error::Corrupted { .. })));
    assert!(h.inject_member_failure(7).is_err(), "no member 7");
    // A failure in a large insert (every member rebuilding, one routing pass for all).
    let h = heap(Transport::Coarse, 32);
    h.insert(&(0..50_000).collect::<Vec<i32>>()).unwrap();
    h.delete_min(50_000).unwrap();
    an_insert_loses_a_failing_member(&h, 0, 50_000, "injected");
}

/// Makes `member` fail in an insert of `n` keys: the insert says it is lost (its message
/// naming `says`), and every later call refuses.
fn an_insert_loses_a_failing_member(h: &SpreadHeap<i32>, member: usize, n: i32, says: &str) {
    h.inject_member_failure(member).unwrap();
    match h.insert(&(0..n).rev().collect::<Vec<i32>>()) {
        Err(e @ Error::DeviceLost { .. }) => assert!(e.to_string().contains(says), "{e}"),
        other => panic!("expected member {member} lost, got {other:?}"),
    }
    assert!(matches!(h.delete_min(1), Err(Error::Corrupted { .. })));
}

#[test]
fn fixed_shares_place_the_keys_and_bad_weights_are_refused() {
    let mut rng = rng();
    for transport in common::set_transports() {
        let h = heap(transport, 32);
        let members = h.members().len();
        let keys: Vec<i32> = (0..20_011).map(|_| rng.gen()).collect();
        // Everything on the last member, then evenly.
        let mut only_last = vec![0.0; members];
        only_last[members - 1] = 1.0;
        h.set_shares(Some(&only_last)).unwrap();
        h.insert(&keys).unwrap();
        let lens: Vec<usize> = h.members().iter().map(|m| m.held as usize).collect();
        assert_eq!(lens[members - 1], keys.len(), "{transport}: {lens:?}");
        let mut want = keys.clone();
        want.sort_unstable();
        assert_eq!(h.delete_min(keys.len()).unwrap(), want, "{transport}");
        h.set_shares(Some(&vec![1.0; members])).unwrap();
        h.insert(&keys).unwrap();
        let lens: Vec<usize> = h.members().iter().map(|m| m.held as usize).collect();
        assert!(
            lens.iter()
                .all(|&l| (l as f64 - (keys.len() / members) as f64).abs() < 0.1 * l as f64),
            "{transport}: even shares {lens:?}"
        );
        assert_eq!(h.delete_min(keys.len()).unwrap(), want, "{transport}");
        for bad in [
            vec![1.0; members + 1],
            vec![0.0; members],
            vec![f64::NAN; members],
        ] {
            assert!(
                matches!(h.set_shares(Some(&bad)), Err(e) if e.is_argument_error()),
                "{transport}: {bad:?} accepted"
            );
        }
        h.set_shares(None).unwrap();
        h.insert(&keys).unwrap();
        assert_eq!(h.delete_min(keys.len()).unwrap(), want, "{transport}");
    }
}

/// Keys with a payload travel in the device form: routed into the members' staging and
/// copied back into the answer through a conversion, in order.
#[test]
fn keys_with_payloads_route_and_come_back_in_order() {
    let mut rng = rng();
    for transport in common::set_transports() {
        let set = common::device_set(transport);
        let h: SpreadHeap<(f32, u32)> =
            SpreadHeap::new(&set, &DeviceHeapConfig::new(64)).expect("heap");
        let keys: Vec<(f32, u32)> = (0..60_001)
            .map(|i| (rng.gen_range(-50.0f32..50.0), i))
            .collect();
        let mut want = keys.clone();
        want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for round in 0..2 {
            h.insert(&keys).unwrap();
            assert_eq!(
                h.delete_min(keys.len()).unwrap(),
                want,
                "{transport} {round}"
            );
        }
    }
}

/// A heap of `lanes` range lanes of the default device with `transport`, running the seed's
/// INS/DEL operations on every call (no rebuilds).
fn lanes(
    transport: Transport,
    lanes: usize,
    batch: usize,
    direction: InsertDirection,
) -> SpreadHeap<i32> {
    let rt = common::shared_runtimes()
        .iter()
        .find(|rt| rt.transport() == transport)
        .expect("a runtime per transport");
    let config = DeviceHeapConfig {
        bulk: BulkPolicy::Never,
        ..DeviceHeapConfig::new(batch).with_direction(direction)
    };
    SpreadHeap::lanes(rt, lanes, &config).expect("lanes")
}

/// Lanes of one device, each its own heap (and queue, on a GPU): insert-all + delete-all
/// through the seed's operations on every edge-case pattern, both insert directions, each
/// transport.
#[test]
fn lanes_of_one_device_run_the_seed_operations_and_sort() {
    let mut rng = rng();
    for transport in common::transports() {
        for (count, direction) in [
            (3, InsertDirection::TopDown),
            (4, InsertDirection::BottomUp),
        ] {
            let h = lanes(transport, count, 32, direction);
            assert_eq!(h.members().len(), count);
            h.set_shares(Some(&vec![1.0; count])).unwrap();
            let mut patterns = common::key_patterns(6_007, &mut rng);
            patterns.push(("one", vec![-4]));
            for (what, keys) in patterns {
                h.insert(&keys).unwrap();
                assert_eq!(h.len(), keys.len(), "{transport} {what}");
                if what == "random" {
                    let lens: Vec<usize> = h.members().iter().map(|m| m.held as usize).collect();
                    assert!(
                        lens.iter().all(|&l| l > keys.len() / count / 2),
                        "{transport}: random keys spread over the lanes: {lens:?}"
                    );
                }
                let mut want = keys.clone();
                want.sort_unstable();
                assert_eq!(
                    h.delete_min(keys.len() + 3).unwrap(),
                    want,
                    "{transport} {count} lanes {direction:?} {what}"
                );
                assert!(h.is_empty());
            }
            let stats = h.member_stats();
            assert!(
                stats.iter().all(|s| s.bulk_calls == 0 && s.launches > 0),
                "{transport}: every lane ran operations, none rebuilt: {stats:?}"
            );
        }
    }
}

/// Interleaved inserts and deletes of every size on lanes whose ranges the first insert cut,
/// later keys below, above and inside them, against `BinaryHeap`.
#[test]
fn lanes_match_binary_heap_through_interleaved_calls() {
    let mut rng = rng();
    for transport in common::transports() {
        let h = lanes(transport, 4, 16, InsertDirection::TopDown);
        let mut reference = BinaryHeap::new();
        for step in 0..36 {
            let range = match step % 3 {
                0 => -10_000..0,
                1 => 0..100,
                _ => 100..10_000,
            };
            let keys: Vec<i32> = (0..rng.gen_range(0..1500))
                .map(|_| rng.gen_range(range.clone()))
                .collect();
            h.insert(&keys).unwrap();
            reference.extend(keys.into_iter().map(Reverse));
            let n = rng.gen_range(0..1200);
            let want: Vec<i32> = (0..n).map_while(|_| reference.pop().map(|r| r.0)).collect();
            assert_eq!(h.delete_min(n).unwrap(), want, "{transport} step {step}");
            assert_eq!(h.len(), reference.len(), "{transport} step {step}");
        }
        let want: Vec<i32> = std::iter::from_fn(|| reference.pop().map(|r| r.0)).collect();
        assert_eq!(h.delete_min(usize::MAX).unwrap(), want, "{transport}");
        // A lane failing in an insert's operations: the heap says its keys are lost.
        h.insert(&(0..3000).collect::<Vec<i32>>()).unwrap();
        an_insert_loses_a_failing_member(&h, 2, 3000, "lane 2");
    }
}

#[test]
fn lane_counts_out_of_range_are_refused() {
    let rt = &common::shared_runtimes()[0];
    for bad in [0, MAX_LANES + 1] {
        match SpreadHeap::<i32>::lanes(rt, bad, &DeviceHeapConfig::new(32)) {
            Err(e @ Error::OutOfRange { .. }) => assert!(e.to_string().contains("lanes"), "{e}"),
            other => panic!("{bad} lanes: {other:?}"),
        }
    }
    // One lane is one heap.
    let h = SpreadHeap::<i32>::lanes(rt, 1, &DeviceHeapConfig::new(32)).unwrap();
    h.insert(&[3, 1, 2]).unwrap();
    assert_eq!(h.delete_min(5).unwrap(), vec![1, 2, 3]);
}
