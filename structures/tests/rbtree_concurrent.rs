//! The red-black tree's concurrent modes against `BTreeMap`: batched insert and delete on the
//! device's work-items (GpuOnly), on the latency threads (CpuOnly) and on both at once
//! (Cooperative), with the validator after every batch, on both transports: random batches
//! (proptest), adversarial orders (ascending and descending runs into one gap, every key in
//! one subtree, delete everything), repeated keys within a batch, and a stress run with more
//! threads than cores.

mod common;

use std::collections::BTreeMap;

use asym_runtime::{LatencyPool, Mode, PoolOptions};
use asym_structures::{Deleted, Inserted, RbTree, UpdateStats};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn pool(threads: usize) -> LatencyPool {
    LatencyPool::new(PoolOptions {
        threads: Some(threads),
        ..Default::default()
    })
    .unwrap()
}

fn shared_pool() -> &'static LatencyPool {
    static POOL: std::sync::OnceLock<LatencyPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| pool(4))
}

/// One batch of inserts, then one of deletes, in `mode`; every answer, the contents and the
/// invariants checked. Returns what the insert batch did.
fn apply(
    mode: Mode,
    tree: &mut RbTree<i32>,
    reference: &mut BTreeMap<i32, u64>,
    inserts: &[(i32, u64)],
    deletes: &[i32],
    pool: &LatencyPool,
) -> UpdateStats {
    let got = tree.insert_in(mode, inserts, pool).unwrap();
    let inserted = tree.last_update();
    assert_eq!(got.len(), inserts.len());
    for (&(k, v), g) in inserts.iter().zip(&got) {
        let want = if reference.insert(k, v).is_some() {
            Inserted::Updated
        } else {
            Inserted::New
        };
        assert_eq!(*g, want, "{mode}: insert {k}");
    }
    tree.validate()
        .unwrap_or_else(|e| panic!("{mode}: after inserts: {e}"));
    let got = tree.delete_in(mode, deletes, pool).unwrap();
    for (k, g) in deletes.iter().zip(&got) {
        let want = if reference.remove(k).is_some() {
            Deleted::Removed
        } else {
            Deleted::Missing
        };
        assert_eq!(*g, want, "{mode}: delete {k}");
    }
    let report = tree
        .validate()
        .unwrap_or_else(|e| panic!("{mode}: after deletes: {e}"));
    assert_eq!(report.nodes, reference.len(), "{mode}");
    let entries = tree.entries().unwrap();
    let want: Vec<(i32, u64)> = reference.iter().map(|(&k, &v)| (k, v)).collect();
    assert_eq!(entries, want, "{mode}");
    inserted
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn random_batches_match_btreemap_in_every_mode(
        batches in prop::collection::vec(
            (
                prop::collection::vec((-80i32..80, any::<u64>()), 0..60),
                prop::collection::vec(-80i32..80, 0..60),
            ),
            1..6,
        )
    ) {
        for rt in common::shared_runtimes() {
            for mode in Mode::ALL {
                let mut tree = RbTree::<i32>::new(rt, 64).unwrap();
                let mut reference = BTreeMap::new();
                for (ins, del) in &batches {
                    apply(mode, &mut tree, &mut reference, ins, del, shared_pool());
                }
            }
        }
    }
}

#[test]
fn adversarial_orders_in_every_mode() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    let n = 4000i32;
    for rt in common::shared_runtimes() {
        for mode in Mode::ALL {
            let orders = common::tree_insert_orders(n, &mut rng);
            for (name, keys) in orders {
                let mut tree = RbTree::<i32>::new(rt, 256).unwrap();
                let mut reference = BTreeMap::new();
                for chunk in keys.chunks(1500) {
                    let items: Vec<(i32, u64)> =
                        chunk.iter().map(|&k| (k, k as u64 ^ 0xabc)).collect();
                    let stats = apply(mode, &mut tree, &mut reference, &items, &[], shared_pool());
                    assert!(
                        stats.rounds >= 1 || stats.built_whole,
                        "{mode} {name}: {stats:?}"
                    );
                }
                let all =
                    common::tree_delete_order(name, reference.keys().copied().collect(), &mut rng);
                for chunk in all.chunks(1300) {
                    apply(mode, &mut tree, &mut reference, &[], chunk, shared_pool());
                }
                assert!(tree.is_empty(), "{mode} {name}");
                assert_eq!(tree.validate().unwrap().nodes, 0);
            }
        }
    }
}

#[test]
fn a_run_into_one_gap_takes_logarithmic_rounds() {
    for rt in common::shared_runtimes() {
        for mode in [Mode::GpuOnly, Mode::CpuOnly] {
            let mut tree = RbTree::<i32>::new(rt, 256).unwrap();
            let mut reference = BTreeMap::new();
            let first: Vec<(i32, u64)> = (0..10).map(|k| (k, 1)).collect();
            apply(mode, &mut tree, &mut reference, &first, &[], shared_pool());
            // 2^12 - 1 keys past the largest: one gap, split in two by every round (12 rounds
            // without conflicts; the fix-ups of neighbouring inserts meet on shared ancestors,
            // so some retry), far from one round per key.
            let run: Vec<(i32, u64)> = (100..100 + 4095).map(|k| (k, 2)).collect();
            let stats = apply(mode, &mut tree, &mut reference, &run, &[], shared_pool());
            eprintln!("{mode} on {:?}: {stats:?}", rt.transport());
            assert!(
                stats.rounds <= 4095 / 16,
                "{mode}: {} rounds for a run of 4095 keys ({stats:?})",
                stats.rounds
            );
        }
    }
}

#[test]
fn repeated_keys_in_one_batch() {
    for rt in common::shared_runtimes() {
        for mode in Mode::ALL {
            let mut tree = RbTree::<i32>::new(rt, 64).unwrap();
            let mut reference = BTreeMap::new();
            let items = [(5, 1), (7, 2), (5, 3), (9, 4), (5, 5), (7, 6)];
            apply(
                mode,
                &mut tree,
                &mut reference,
                &items,
                &[7, 7, 11, 5],
                shared_pool(),
            );
            assert_eq!(tree.entries().unwrap(), vec![(9, 4)]);
            let stats = apply(
                mode,
                &mut tree,
                &mut reference,
                &[(9, 8), (1, 0)],
                &[],
                shared_pool(),
            );
            assert_eq!(stats.resolved_in_locate, 1, "{mode}: 9 was there");
        }
    }
}

#[test]
fn stress_more_threads_than_cores() {
    let many = pool(8);
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        for mode in [Mode::CpuOnly, Mode::Cooperative] {
            let mut tree = RbTree::<i32>::new(rt, 1024).unwrap();
            let mut reference = BTreeMap::new();
            let mut stats = UpdateStats::default();
            for _ in 0..10 {
                let items: Vec<(i32, u64)> = (0..6000)
                    .map(|_| (rng.gen_range(-20_000..20_000), rng.gen()))
                    .collect();
                let deletes: Vec<i32> = (0..3000).map(|_| rng.gen_range(-20_000..20_000)).collect();
                stats = apply(mode, &mut tree, &mut reference, &items, &deletes, &many);
            }
            if mode == Mode::Cooperative && rt.transport() == asym_runtime::Transport::Fine {
                assert!(
                    stats.device_commits > 0 && stats.thread_commits > 0,
                    "both sides committed: {stats:?}"
                );
            }
        }
    }
}

/// Batches long enough that the device's later rounds run over a list of the operations
/// still pending (`rb_pending`), with runs of keys into one gap so that there are several
/// such rounds: staged and resident, inserts and deletes, against `BTreeMap`.
#[test]
fn later_device_rounds_run_over_the_pending_list() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        let mut tree = RbTree::<i32>::new(rt, 256).unwrap();
        let mut reference = BTreeMap::new();
        let base: Vec<(i32, u64)> = (0..1 << 14).map(|k| (k * 64, 7)).collect();
        apply(
            Mode::GpuOnly,
            &mut tree,
            &mut reference,
            &base,
            &[],
            shared_pool(),
        );
        // Random keys and runs of 200 consecutive keys in a few gaps; 70,000 operations.
        let mut keys: Vec<i32> = (0..50_000).map(|_| rng.gen_range(-1000..1 << 20)).collect();
        for g in 0..100 {
            let at = rng.gen_range(0..1 << 14) * 64 + 1;
            keys.extend(at..at + 63.min(200 - g));
        }
        let items: Vec<(i32, u64)> = keys.iter().map(|&k| (k, k as u64 ^ 5)).collect();
        let dels: Vec<i32> = keys.iter().step_by(3).map(|&k| k ^ 1).collect();
        let stats = apply(
            Mode::GpuOnly,
            &mut tree,
            &mut reference,
            &items,
            &dels,
            shared_pool(),
        );
        // (An operation missing from a list would be left to the host path.)
        assert!(
            stats.listed_rounds >= 2 && stats.finished_on_host == 0,
            "{:?}: {stats:?}",
            rt.transport()
        );
        // Resident: a sorted batch of new keys, then all of them deleted again.
        let mut fresh: Vec<i32> = (0..40_000).map(|_| rng.gen_range(-(1 << 21)..0)).collect();
        fresh.extend((1 << 21)..(1 << 21) + 2000);
        fresh.sort_unstable();
        fresh.dedup();
        let n = fresh.len();
        let mut kb = rt.alloc::<i32>(n).unwrap();
        kb.write(&fresh).unwrap();
        let mut vb = rt.alloc::<u64>(n).unwrap();
        vb.write(&vec![3; n]).unwrap();
        let mut out = rt.alloc::<u32>(n).unwrap();
        tree.insert_svm(&mut kb, &mut vb, &mut out).unwrap();
        let stats = tree.last_update();
        // (An operation missing from a list would be left to the host path.)
        assert!(
            stats.listed_rounds >= 2 && stats.finished_on_host == 0,
            "{:?}: {stats:?}",
            rt.transport()
        );
        let got = out.read().unwrap();
        for (i, &k) in fresh.iter().enumerate() {
            let want = if reference.insert(k, 3).is_some() {
                2
            } else {
                1
            };
            assert_eq!(got[i], want, "insert {k}");
        }
        tree.validate().unwrap();
        let want: Vec<(i32, u64)> = reference.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(tree.entries().unwrap(), want);
        tree.delete_svm(&mut kb, &mut out).unwrap();
        assert!(out.read().unwrap().iter().all(|&o| o == 1));
        for k in &fresh {
            reference.remove(k);
        }
        tree.validate().unwrap();
        let want: Vec<(i32, u64)> = reference.iter().map(|(&k, &v)| (k, v)).collect();
        assert_eq!(tree.entries().unwrap(), want);
    }
}

#[test]
fn resident_batches_match_btreemap_and_refuse_unsorted_keys() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        let mut tree = RbTree::<i32>::new(rt, 256).unwrap();
        let mut reference = BTreeMap::new();
        for round in 0..6 {
            let mut keys: Vec<i32> = (0..3000).map(|_| rng.gen_range(-9000..9000)).collect();
            keys.sort_unstable();
            keys.dedup();
            let n = keys.len();
            let values: Vec<u64> = keys.iter().map(|&k| (k as u64) << 8 | round).collect();
            let mut kb = rt.alloc::<i32>(n).unwrap();
            kb.write(&keys).unwrap();
            let mut vb = rt.alloc::<u64>(n).unwrap();
            vb.write(&values).unwrap();
            let mut out = rt.alloc::<u32>(n).unwrap();
            tree.insert_svm(&mut kb, &mut vb, &mut out).unwrap();
            let got = out.read().unwrap();
            for (i, &k) in keys.iter().enumerate() {
                let want = if reference.insert(k, values[i]).is_some() {
                    2
                } else {
                    1
                };
                assert_eq!(got[i], want, "insert {k}");
            }
            assert_eq!(tree.validate().unwrap().nodes, reference.len());
            // Delete every other key given, half of them absent.
            let dels: Vec<i32> = keys.iter().step_by(2).map(|&k| k + (k & 1)).collect();
            let mut dels = dels;
            dels.sort_unstable();
            dels.dedup();
            let mut db = rt.alloc::<i32>(dels.len()).unwrap();
            db.write(&dels).unwrap();
            let mut dout = rt.alloc::<u32>(dels.len()).unwrap();
            tree.delete_svm(&mut db, &mut dout).unwrap();
            let got = dout.read().unwrap();
            for (i, k) in dels.iter().enumerate() {
                let want = if reference.remove(k).is_some() { 1 } else { 2 };
                assert_eq!(got[i], want, "delete {k}");
            }
            tree.validate().unwrap();
            let want: Vec<(i32, u64)> = reference.iter().map(|(&k, &v)| (k, v)).collect();
            let got = tree.entries().unwrap();
            let first_bad = got.iter().zip(&want).position(|(a, b)| a != b);
            assert!(
                got.len() == want.len() && first_bad.is_none(),
                "round {round}: {} entries, {} wanted; first difference at {first_bad:?}: {:?}",
                got.len(),
                want.len(),
                first_bad.map(|i| (got[i], want[i]))
            );
        }
        // Keys out of order, one of them in the tree (an insert would replace its value):
        // refused before any change, inserts and deletes alike.
        let before = tree.entries().unwrap();
        let present = before[before.len() / 2].0;
        let absent = (i32::MIN..).find(|k| before.binary_search_by_key(k, |e| e.0).is_err());
        let absent = absent.unwrap();
        let mut kb = rt.alloc::<i32>(3).unwrap();
        kb.write(&[present, absent, 9]).unwrap();
        let mut vb = rt.alloc::<u64>(3).unwrap();
        vb.write(&[1, 2, 3]).unwrap();
        let mut out = rt.alloc::<u32>(3).unwrap();
        let e = tree.insert_svm(&mut kb, &mut vb, &mut out).unwrap_err();
        assert!(e.to_string().contains("strictly increasing"), "{e}");
        assert_eq!(tree.entries().unwrap(), before);
        let e = tree.delete_svm(&mut kb, &mut out).unwrap_err();
        assert!(e.to_string().contains("strictly increasing"), "{e}");
        assert_eq!(tree.entries().unwrap(), before);
        tree.validate().unwrap();
        // The next batches run as usual.
        let mut kb = rt.alloc::<i32>(2).unwrap();
        kb.write(&[absent, present]).unwrap();
        let mut vb = rt.alloc::<u64>(2).unwrap();
        vb.write(&[11, 12]).unwrap();
        let mut out = rt.alloc::<u32>(2).unwrap();
        tree.insert_svm(&mut kb, &mut vb, &mut out).unwrap();
        assert_eq!(out.read().unwrap(), [1, 2]);
        let mut want = before.clone();
        want.iter_mut().find(|e| e.0 == present).unwrap().1 = 12;
        want.insert(0, (absent, 11));
        want.sort_unstable();
        assert_eq!(tree.entries().unwrap(), want);
        tree.delete_svm(&mut kb, &mut out).unwrap();
        assert_eq!(out.read().unwrap(), [1, 1]);
        want.retain(|e| e.0 != absent && e.0 != present);
        assert_eq!(tree.entries().unwrap(), want);
        tree.validate().unwrap();
        // Mismatched lengths.
        let mut short = rt.alloc::<u32>(1).unwrap();
        assert!(tree.insert_svm(&mut kb, &mut vb, &mut short).is_err());
    }
}

#[test]
fn device_range_counts_match_btreemap() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for rt in common::shared_runtimes() {
        let mut tree = RbTree::<i32>::new(rt, 256).unwrap();
        assert_eq!(tree.range_count_on_device(&[(0, 10)]).unwrap(), vec![0]);
        let mut reference = BTreeMap::new();
        let items: Vec<(i32, u64)> = (0..5000)
            .map(|_| (rng.gen_range(-20_000..20_000), 1))
            .collect();
        apply(
            Mode::GpuOnly,
            &mut tree,
            &mut reference,
            &items,
            &[],
            shared_pool(),
        );
        let mut ranges: Vec<(i32, i32)> = (0..500)
            .map(|_| {
                let lo = rng.gen_range(-21_000..21_000);
                (lo, lo + rng.gen_range(-50..3000))
            })
            .collect();
        ranges.extend([(i32::MIN, i32::MAX), (5, 5), (7, 3), (20_000, i32::MAX)]);
        ranges.extend(reference.keys().take(3).map(|&k| (k, k)));
        let got = tree.range_count_on_device(&ranges).unwrap();
        for (&(lo, hi), &g) in ranges.iter().zip(&got) {
            let want = if hi < lo {
                0
            } else {
                reference.range(lo..=hi).count()
            };
            assert_eq!(g, want, "[{lo}, {hi}]");
            assert_eq!(
                tree.range_count(lo, hi).unwrap(),
                want,
                "host path [{lo}, {hi}]"
            );
        }
    }
}

#[test]
fn cooperative_on_coarse_svm_tries_each_side_then_keeps_the_faster() {
    let Some(rt) = common::shared_runtimes()
        .iter()
        .find(|r| r.transport() == asym_runtime::Transport::Coarse)
    else {
        eprintln!("no coarse runtime here (ASYM_SVM forces another transport): nothing to test");
        return;
    };
    let mut tree = RbTree::<i32>::new(rt, 256).unwrap();
    let mut reference = BTreeMap::new();
    let first: Vec<(i32, u64)> = (0..100).map(|k| (k * 10, 0)).collect();
    apply(
        Mode::GpuOnly,
        &mut tree,
        &mut reference,
        &first,
        &[],
        shared_pool(),
    );
    let mut sides = Vec::new();
    for round in 0..3 {
        let items: Vec<(i32, u64)> = (0..50).map(|k| (k * 10 + 1 + round, 1)).collect();
        let s = apply(
            Mode::Cooperative,
            &mut tree,
            &mut reference,
            &items,
            &[],
            shared_pool(),
        );
        assert!(
            (s.device_commits == 0) != (s.thread_commits == 0),
            "one side per batch on coarse SVM: {s:?}"
        );
        sides.push(s.device_commits > 0);
    }
    assert_eq!(
        &sides[..2],
        &[true, false],
        "the device first, then the threads once"
    );
}
