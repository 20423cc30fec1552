//! The red-black tree's host path against `BTreeMap`: random batches (proptest), adversarial
//! orders (ascending, descending, every key in one subtree, delete everything), every key
//! type, lower bounds and range counts, arena growth, and the validator after every batch,
//! on both transports.

mod common;

use std::collections::BTreeMap;

use asym_structures::{Deleted, Inserted, Key, RbTree};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// Applies one batch to the tree and the reference, checks the per-operation answers, the
/// contents and every invariant.
fn apply(
    tree: &mut RbTree<i32>,
    reference: &mut BTreeMap<i32, u64>,
    inserts: &[(i32, u64)],
    deletes: &[i32],
    searches: &[i32],
) {
    let got = tree.insert_batch(inserts).unwrap();
    for (&(k, v), g) in inserts.iter().zip(&got) {
        let want = if reference.insert(k, v).is_some() {
            Inserted::Updated
        } else {
            Inserted::New
        };
        assert_eq!(*g, want, "insert {k}");
    }
    let got = tree.delete_batch(deletes).unwrap();
    for (k, g) in deletes.iter().zip(&got) {
        let want = if reference.remove(k).is_some() {
            Deleted::Removed
        } else {
            Deleted::Missing
        };
        assert_eq!(*g, want, "delete {k}");
    }
    let got = tree.search_batch(searches).unwrap();
    for (k, g) in searches.iter().zip(&got) {
        assert_eq!(*g, reference.get(k).copied(), "search {k}");
    }
    let report = tree.validate().unwrap();
    assert_eq!(report.nodes, reference.len());
    assert!(
        report.height <= 2 * (usize::BITS - (reference.len() + 1).leading_zeros()) as usize,
        "height {} for {} nodes",
        report.height,
        reference.len()
    );
    let entries = tree.entries().unwrap();
    let want: Vec<(i32, u64)> = reference.iter().map(|(&k, &v)| (k, v)).collect();
    assert_eq!(entries, want);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn random_batches_match_btreemap(
        batches in prop::collection::vec(
            (
                prop::collection::vec((-60i32..60, any::<u64>()), 0..40),
                prop::collection::vec(-60i32..60, 0..40),
                prop::collection::vec(-70i32..70, 0..20),
            ),
            1..8,
        )
    ) {
        for rt in common::shared_runtimes() {
            let mut tree = RbTree::<i32>::new(rt, 64).unwrap();
            let mut reference = BTreeMap::new();
            for (ins, del, search) in &batches {
                apply(&mut tree, &mut reference, ins, del, search);
            }
        }
    }
}

#[test]
fn adversarial_orders_keep_every_invariant() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        let n = 3000i32;
        let orders = common::tree_insert_orders(n, &mut rng);
        for (name, keys) in orders {
            let mut tree = RbTree::<i32>::new(rt, 256).unwrap();
            let mut reference = BTreeMap::new();
            for chunk in keys.chunks(700) {
                let items: Vec<(i32, u64)> = chunk
                    .iter()
                    .map(|&k| (k, (k as u64).wrapping_mul(3)))
                    .collect();
                apply(&mut tree, &mut reference, &items, &[], chunk);
            }
            // Delete everything: in key order, in reverse, or shuffled.
            let all =
                common::tree_delete_order(name, reference.keys().copied().collect(), &mut rng);
            for chunk in all.chunks(500) {
                apply(&mut tree, &mut reference, &[], chunk, chunk);
            }
            assert!(tree.is_empty(), "{name}");
            let report = tree.validate().unwrap();
            assert_eq!(report.nodes, 0, "{name}");
        }
    }
}

#[test]
fn updates_missing_deletes_duplicates_and_growth() {
    for rt in common::shared_runtimes() {
        // Room for 1024 nodes at first: 20,000 make the arena grow between batches.
        let mut tree = RbTree::<i32>::new(rt, 1024).unwrap();
        let mut reference = BTreeMap::new();
        let items: Vec<(i32, u64)> = (0..20_000).map(|i| (i * 7 % 20_011, i as u64)).collect();
        apply(&mut tree, &mut reference, &items, &[], &[]);
        // Existing keys get new values; the same key twice in one batch keeps the last.
        apply(
            &mut tree,
            &mut reference,
            &[(7, 1), (7, 2), (14, 3)],
            &[],
            &[7, 14],
        );
        assert_eq!(tree.search_batch(&[7]).unwrap(), vec![Some(2)]);
        // Missing keys are reported per operation; deleting twice in a batch: once each way.
        let got = tree.delete_batch(&[-1, 7, 7]).unwrap();
        assert_eq!(
            got,
            vec![Deleted::Missing, Deleted::Removed, Deleted::Missing]
        );
        reference.remove(&7);
        apply(&mut tree, &mut reference, &[], &[], &[7, -1, 14]);
        // Values use all 64 bits.
        apply(
            &mut tree,
            &mut reference,
            &[(3, u64::MAX), (4, 1 << 40)],
            &[],
            &[3, 4],
        );
    }
}

#[test]
fn lower_bounds_range_counts_and_key_types() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        let mut tree = RbTree::<i32>::new(rt, 4096).unwrap();
        let mut reference = BTreeMap::new();
        let items: Vec<(i32, u64)> = (0..3000)
            .map(|_| (rng.gen_range(-100_000..100_000), rng.gen()))
            .collect();
        apply(&mut tree, &mut reference, &items, &[], &[]);
        let probes: Vec<i32> = (0..500)
            .map(|_| rng.gen_range(-110_000..110_000))
            .chain([i32::MIN, i32::MAX])
            .collect();
        let got = tree.lower_bound_batch(&probes).unwrap();
        for (p, g) in probes.iter().zip(&got) {
            let want = reference.range(p..).next().map(|(&k, &v)| (k, v));
            assert_eq!(*g, want, "lower bound of {p}");
        }
        for _ in 0..200 {
            let a = rng.gen_range(-110_000..110_000);
            let b = rng.gen_range(-110_000..110_000);
            let want = if a <= b {
                reference.range(a..=b).count()
            } else {
                0
            };
            assert_eq!(tree.range_count(a, b).unwrap(), want, "{a}..={b}");
        }
        assert_eq!(
            tree.range_count(i32::MIN, i32::MAX).unwrap(),
            reference.len()
        );

        // Floats in total order (-NaN < -inf < -0.0 < +0.0 < +inf < NaN), and words.
        let mut floats = RbTree::<f32>::new(rt, 64).unwrap();
        let keys = [
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            1.5,
            -2.5,
        ];
        let items: Vec<(f32, u64)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u64))
            .collect();
        assert!(floats
            .insert_batch(&items)
            .unwrap()
            .iter()
            .all(|r| *r == Inserted::New));
        let mut want: Vec<f32> = keys.to_vec();
        want.sort_by(f32::total_cmp);
        let got: Vec<u32> = floats
            .entries()
            .unwrap()
            .iter()
            .map(|(k, _)| k.to_bits())
            .collect();
        assert_eq!(got, want.iter().map(|k| k.to_bits()).collect::<Vec<_>>());
        assert_eq!(
            floats.search_batch(&[-0.0, 0.0]).unwrap(),
            vec![Some(4), Some(5)]
        );
        floats.validate().unwrap();

        let mut words = RbTree::<u32>::new(rt, 64).unwrap();
        let items: Vec<(u32, u64)> = [0, u32::MAX, 1 << 31, 5].iter().map(|&k| (k, 1)).collect();
        words.insert_batch(&items).unwrap();
        let got: Vec<u32> = words.entries().unwrap().iter().map(|(k, _)| *k).collect();
        assert_eq!(got, vec![0, 5, 1 << 31, u32::MAX]);
        assert_eq!(words.range_count(4, 1 << 31).unwrap(), 2);
        words.validate().unwrap();
        let _ = <u32 as Key>::DTYPE;
    }
}

/// Searches `probes` from resident SVM buffers and checks every answer, in its query's own
/// slot, against `reference`; returns the query buffer.
fn check_resident_search(
    rt: &asym_runtime::Runtime,
    tree: &mut RbTree<i32>,
    reference: &BTreeMap<i32, u64>,
    probes: &[i32],
) -> asym_runtime::SvmBuffer<i32> {
    let mut keys = rt.alloc::<i32>(probes.len()).unwrap();
    keys.write(probes).unwrap();
    let mut values = rt.alloc::<u64>(probes.len()).unwrap();
    let mut status = rt.alloc::<u32>(probes.len()).unwrap();
    tree.search_svm(&keys, &mut values, &mut status).unwrap();
    let (values, status) = (values.read().unwrap(), status.read().unwrap());
    for (i, p) in probes.iter().enumerate() {
        match reference.get(p) {
            Some(&v) => assert_eq!((status[i], values[i]), (1, v), "resident {p}"),
            None => assert_eq!(status[i], 0, "resident {p}"),
        }
    }
    keys
}

/// The device search and lower bound and the latency threads' search against `BTreeMap`:
/// present and absent
/// keys, every key type, queries from a host slice and resident in SVM (answers left there),
/// an empty tree and an empty batch, after inserts and deletes changed the tree between
/// launches, on both transports.
#[test]
fn device_search_matches_btreemap() {
    use asym_structures::Found;
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        let mut tree = RbTree::<i32>::new(rt, 1024).unwrap();
        let mut reference = BTreeMap::new();
        let probes: Vec<i32> = (0..5000).map(|_| rng.gen_range(-20_000..20_000)).collect();
        // More latency threads than cores: every share of the probes is searched.
        let pool = asym_runtime::LatencyPool::new(asym_runtime::PoolOptions {
            threads: Some(3),
            ..Default::default()
        })
        .unwrap();
        let check = |tree: &mut RbTree<i32>, reference: &BTreeMap<i32, u64>| {
            let got = tree.search_on_device(&probes).unwrap();
            for (p, g) in probes.iter().zip(&got) {
                let want = reference.get(p).map_or(Found::Absent, |&v| Found::Value(v));
                assert_eq!(*g, want, "device search of {p}");
            }
            let got = tree.lower_bound_on_device(&probes).unwrap();
            for (p, g) in probes.iter().zip(&got) {
                let want = reference.range(p..).next().map(|(&k, &v)| (k, v));
                assert_eq!(*g, want, "device lower bound of {p}");
            }
            let got = tree.search_on_threads(&probes, &pool).unwrap();
            let want: Vec<Option<u64>> = probes.iter().map(|p| reference.get(p).copied()).collect();
            assert_eq!(got, want, "search on the latency threads");
            assert!(tree.search_on_threads(&[], &pool).unwrap().is_empty());
        };
        check(&mut tree, &reference);
        for round in 0..3 {
            let items: Vec<(i32, u64)> = (0..4000)
                .map(|_| (rng.gen_range(-20_000..20_000), rng.gen()))
                .collect();
            let deletes: Vec<i32> = (0..1500).map(|_| rng.gen_range(-20_000..20_000)).collect();
            apply(&mut tree, &mut reference, &items, &deletes, &[]);
            check(&mut tree, &reference);
            assert!(
                tree.search_on_device(&[]).unwrap().is_empty(),
                "round {round}"
            );
        }
        // Resident queries: keys, values and flags in SVM.
        let keys = check_resident_search(rt, &mut tree, &reference, &probes);
        let mut short = rt.alloc::<u32>(3).unwrap();
        let mut values = rt.alloc::<u64>(probes.len()).unwrap();
        assert!(tree.search_svm(&keys, &mut values, &mut short).is_err());

        // Floats in total order and words, through the device.
        let mut floats = RbTree::<f32>::new(rt, 64).unwrap();
        let keys = [f32::NAN, -0.0, 0.0, f32::NEG_INFINITY, 2.5];
        let items: Vec<(f32, u64)> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, i as u64))
            .collect();
        floats.insert_batch(&items).unwrap();
        let got = floats
            .search_on_device(&[f32::NAN, -0.0, 0.0, f32::INFINITY, 2.5, -f32::NAN])
            .unwrap();
        assert_eq!(
            got,
            vec![
                Found::Value(0),
                Found::Value(1),
                Found::Value(2),
                Found::Absent,
                Found::Value(4),
                Found::Absent
            ]
        );
        let mut words = RbTree::<u32>::new(rt, 64).unwrap();
        words.insert_batch(&[(u32::MAX, 9), (0, 8)]).unwrap();
        assert_eq!(
            words.search_on_device(&[u32::MAX, 0, 1 << 31]).unwrap(),
            vec![Found::Value(9), Found::Value(8), Found::Absent]
        );
        assert_eq!(
            words.lower_bound_on_device(&[1, u32::MAX, 0]).unwrap(),
            vec![Some((u32::MAX, 9)), Some((u32::MAX, 9)), Some((0, 8))]
        );
        // Floats by bits (NaN is not equal to itself): -1.0 finds -0.0, 3.0 and NaN find NaN.
        let got: Vec<Option<(u32, u64)>> = floats
            .lower_bound_on_device(&[-1.0, 3.0, f32::NAN])
            .unwrap()
            .into_iter()
            .map(|x| x.map(|(k, v)| (k.to_bits(), v)))
            .collect();
        let nan = f32::NAN.to_bits();
        assert_eq!(
            got,
            vec![
                Some(((-0.0f32).to_bits(), 1)),
                Some((nan, 0)),
                Some((nan, 0))
            ]
        );
    }
}

/// A tree built on the device in one launch from unsorted items with repeated keys (the
/// last value of a key kept): equal to `BTreeMap`, every invariant (black heights included)
/// at sizes that fill the last level and sizes that do not, and a valid start for the host
/// path's inserts and deletes; a tree with keys refuses it; both transports.
#[test]
fn device_build_matches_btreemap_and_keeps_every_invariant() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        for m in [0usize, 1, 2, 3, 7, 8, 1000, 65_535, 100_003] {
            let items: Vec<(i32, u64)> = (0..m)
                .map(|i| (rng.gen_range(-(m as i32) - 5..m as i32 + 5), i as u64))
                .collect();
            let mut reference = BTreeMap::new();
            for &(k, v) in &items {
                reference.insert(k, v);
            }
            let mut tree = RbTree::<i32>::new(rt, 16).unwrap();
            tree.build_on_device(&items).unwrap();
            let report = tree.validate().unwrap();
            assert_eq!(report.nodes, reference.len(), "m {m}");
            let want: Vec<(i32, u64)> = reference.iter().map(|(&k, &v)| (k, v)).collect();
            assert_eq!(tree.entries().unwrap(), want, "m {m}");
            // The host path goes on from the built tree.
            let more: Vec<(i32, u64)> = (0..500).map(|_| (rng.gen(), 1)).collect();
            let gone: Vec<i32> = reference.keys().step_by(3).copied().collect();
            apply(&mut tree, &mut reference, &more, &gone, &gone);
            if m > 0 {
                assert!(tree.build_on_device(&items).is_err(), "a full tree refuses");
            }
        }
    }
}

/// Device searches in every query order (grouped by subtree on the device, as they come, and
/// the automatic choice) against `BTreeMap`: trees empty, of one key, small and past the
/// automatic threshold; queries random, sorted, reversed, all equal, with duplicates, one and
/// none; batches growing and shrinking (the routing scratch is reused and regrown, and its
/// counts must be clear again after every search); lower bounds and resident queries too;
/// the automatic choice routing a batch past its threshold; both transports.
#[test]
fn routed_searches_match_btreemap_in_every_order() {
    use asym_structures::{Found, SearchOrder};
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        for m in [0usize, 1, 1000, SearchOrder::AUTO_MIN_KEYS + 3] {
            let span = (m as i32).max(8) * 4;
            // Distinct keys, one in each step of four, so the tree holds all m.
            let items: Vec<(i32, u64)> = (0..m)
                .map(|i| (4 * i as i32 - span + rng.gen_range(0..4), i as u64))
                .collect();
            let reference: BTreeMap<i32, u64> = items.iter().copied().collect();
            let mut tree = RbTree::<i32>::new(rt, m).unwrap();
            tree.build_on_device(&items).unwrap();
            assert_eq!(tree.len(), m);
            let random = |n: usize, rng: &mut rand::rngs::StdRng| -> Vec<i32> {
                (0..n).map(|_| rng.gen_range(-span - 9..span + 9)).collect()
            };
            let mut sorted = random(70_017, &mut rng);
            sorted.sort_unstable();
            let reversed: Vec<i32> = sorted.iter().rev().copied().collect();
            let large = random(SearchOrder::AUTO_MIN_QUERIES + 5, &mut rng);
            let batches = [
                random(70_003, &mut rng),
                random(3001, &mut rng),
                sorted,
                reversed,
                vec![items.first().map_or(5, |x| x.0); 70_000],
                random(40, &mut rng).repeat(2000),
                vec![rng.gen()],
                Vec::new(),
            ];
            let check = |tree: &mut RbTree<i32>, probes: &[i32], what: &str| {
                let got = tree.search_on_device(probes).unwrap();
                assert_eq!(got.len(), probes.len(), "{what}");
                for (p, g) in probes.iter().zip(&got) {
                    let want = reference.get(p).map_or(Found::Absent, |&v| Found::Value(v));
                    assert_eq!(*g, want, "{what}: search of {p}");
                }
                let got = tree.lower_bound_on_device(probes).unwrap();
                for (p, g) in probes.iter().zip(&got) {
                    let want = reference.range(p..).next().map(|(&k, &v)| (k, v));
                    assert_eq!(*g, want, "{what}: lower bound of {p}");
                }
            };
            for order in [SearchOrder::Routed, SearchOrder::Arrival] {
                tree.set_search_order(order);
                assert_eq!(tree.search_order(), order);
                for (b, probes) in batches.iter().enumerate() {
                    check(
                        &mut tree,
                        probes,
                        &format!("tree of {m}, {order:?}, batch {b}"),
                    );
                    assert_eq!(tree.search_order_for(probes.len()), order);
                }
                // Resident: the answers land in each query's own slot.
                check_resident_search(rt, &mut tree, &reference, &batches[0]);
            }
            // The automatic choice: routed past both thresholds, in arrival order below.
            tree.set_search_order(SearchOrder::Auto);
            let big = m >= SearchOrder::AUTO_MIN_KEYS;
            let want = |routed: bool| match routed {
                true => SearchOrder::Routed,
                false => SearchOrder::Arrival,
            };
            assert_eq!(tree.search_order_for(large.len()), want(big));
            assert_eq!(tree.search_order_for(batches[0].len()), want(false));
            if big {
                check(
                    &mut tree,
                    &large,
                    &format!("tree of {m}, Auto, large batch"),
                );
            }
            tree.validate().unwrap();
        }
    }
}
