//! Batch k-selection over a device set: every device of the host (PoCL made to list two, so
//! the set has at least two members on any machine with PoCL), on each transport every
//! member has, in GpuOnly and Cooperative, every strategy; answers against
//! `select_nth_unstable`; a member failing mid-call.

use asym_runtime::{DeviceSet, Error, LatencyPool, Mode, PoolOptions, Transport};
use asym_structures::{Cooperation, KSelector, Key, SelectStats, Strategy, Sublists};
use rand::{Rng, SeedableRng};

mod common;

fn selector(set: &DeviceSet, strategy: Strategy) -> KSelector {
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(2),
        ..Default::default()
    })
    .expect("pool");
    KSelector::on_devices(set, pool, 4)
        .expect("selector")
        .with_strategy(strategy)
}

/// `n` fresh random keys in `-range..=range` (`salt` only tells calls apart in messages).
fn keys(n: usize, salt: u64, range: i32) -> Vec<i32> {
    let seed: u64 = rand::random();
    eprintln!("keys({n}, {salt}): seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.gen_range(-range..=range)).collect()
}

/// Checks the answers and that the workers' shares add up to every sub-list.
fn check<K: Key + std::fmt::Debug>(
    got: &(Vec<K>, SelectStats),
    data: &[K],
    cut: &Sublists,
    k: usize,
    what: &str,
) {
    let offs = cut.boundaries(data.len(), k).unwrap();
    let want = common::reference(data, &offs, k);
    let (answers, stats) = got;
    assert_eq!(answers.len(), want.len(), "{what}");
    for (i, (a, b)) in answers.iter().zip(&want).enumerate() {
        assert_eq!(a.to_ordered(), b.to_ordered(), "{what}: sub-list {i}");
    }
    let shared: usize = stats.workers.iter().map(|w| w.pieces as usize).sum();
    assert_eq!(shared, offs.len() - 1, "{what}: {:?}", stats.workers);
}

#[test]
fn a_set_has_two_members_where_pocl_lists_two() {
    let set = common::device_set(Transport::Coarse);
    let pocl = set
        .members()
        .iter()
        .filter(|rt| rt.profile().matches("portable"))
        .count();
    assert!(
        pocl == 0 || set.len() >= 2,
        "PoCL was asked for two devices: {:?}",
        set.members()
            .iter()
            .map(|rt| rt.profile().label())
            .collect::<Vec<_>>()
    );
}

#[test]
fn every_mode_and_strategy_matches_select_nth_on_each_transport() {
    for transport in common::set_transports() {
        let set = common::device_set(transport);
        for strategy in [Strategy::Heap, Strategy::Radix, Strategy::Auto] {
            let sel = selector(&set, strategy);
            for mode in [Mode::GpuOnly, Mode::Cooperative] {
                let what = format!("{transport} {strategy:?} {mode}");
                // Several calls of one shape: together, then the fastest alone, then the
                // faster of the two.
                for call in 0..3 {
                    let data = keys(600 * 300, call, 1 << 20);
                    let cut = Sublists::Equal(300);
                    let got = sel.select_with_stats(&data, &cut, 30, mode).unwrap();
                    check(&got, &data, &cut, 30, &format!("{what} call {call}"));
                    if mode == Mode::GpuOnly {
                        assert_eq!(got.1.cpu_sublists, 0, "{what}");
                    }
                }
                // With every program built and no speeds known, a call runs every worker
                // together and each member probes with sub-lists claimed for it before any
                // driver starts: everyone takes part, however late a driver thread starts.
                sel.forget_speeds();
                let data = keys(2048 * 300, 3, 1 << 20);
                let cut = Sublists::Equal(300);
                let got = sel.select_with_stats(&data, &cut, 30, mode).unwrap();
                check(&got, &data, &cut, 30, &format!("{what} together"));
                assert!(got.1.exploring, "{what}: {:?}", got.1);
                let expected = set.len() + usize::from(mode == Mode::Cooperative);
                let working = got.1.workers.iter().filter(|w| w.pieces > 0).count();
                assert_eq!(working, expected, "{what}: {:?}", got.1.workers);
                // Unequal sub-lists, not powers of two, with duplicates.
                let data = keys(7001, 9, 50);
                let mut offs = vec![0];
                while *offs.last().unwrap() < 7001 {
                    let next = (offs.last().unwrap() + 40 + offs.len() % 23).min(7001);
                    offs.push(next);
                }
                if 7001 - offs[offs.len() - 2] < 40 {
                    offs.remove(offs.len() - 2);
                }
                let cut = Sublists::Offsets(offs);
                for k in [1, 17, 40] {
                    let got = sel.select_with_stats(&data, &cut, k, mode).unwrap();
                    check(&got, &data, &cut, k, &format!("{what} offsets k={k}"));
                }
            }
        }
    }
}

#[test]
fn edge_cases_over_a_set() {
    let set = common::device_set(Transport::Coarse);
    let sel = selector(&set, Strategy::Auto);
    for mode in [Mode::GpuOnly, Mode::Cooperative] {
        // One sub-list; fewer sub-lists than members; all keys equal; k = 1 and k = length.
        let one = keys(1000, 1, 1 << 30);
        for k in [1, 500, 1000] {
            let got = sel
                .select_with_stats(&one, &Sublists::Equal(1000), k, mode)
                .unwrap();
            check(&got, &one, &Sublists::Equal(1000), k, "one sub-list");
        }
        let few = keys(3 * 100, 2, 1 << 30);
        let got = sel
            .select_with_stats(&few, &Sublists::Equal(100), 7, mode)
            .unwrap();
        check(&got, &few, &Sublists::Equal(100), 7, "three sub-lists");
        let equal = vec![-5i32; 64 * 64];
        let got = sel
            .select_with_stats(&equal, &Sublists::Equal(64), 64, mode)
            .unwrap();
        check(&got, &equal, &Sublists::Equal(64), 64, "all equal");
        // Sorted and reversed, u32 and f32 keys.
        let sorted: Vec<u32> = (0..128 * 77).map(|x| x as u32 * 3).collect();
        let got = sel
            .select_with_stats(&sorted, &Sublists::Equal(77), 13, mode)
            .unwrap();
        check(&got, &sorted, &Sublists::Equal(77), 13, "sorted u32");
        let reversed: Vec<f32> = (0..128 * 77).rev().map(|x| x as f32 - 4000.5).collect();
        let got = sel
            .select_with_stats(&reversed, &Sublists::Equal(77), 76, mode)
            .unwrap();
        check(&got, &reversed, &Sublists::Equal(77), 76, "reversed f32");
        // Bad input is still an error, not a panic.
        assert!(sel.select(&one, &Sublists::Equal(1000), 0, mode).is_err());
        assert!(sel.select(&one, &Sublists::Equal(999), 1, mode).is_err());
    }
}

#[test]
fn a_member_failing_mid_call_leaves_its_sub_lists_to_the_others() {
    let set = common::device_set(Transport::Coarse);
    if set.len() < 2 {
        eprintln!("one device: nothing to fail over to");
        return;
    }
    let data = keys(1024 * 256, 5, 1 << 24);
    let cut = Sublists::Equal(256);
    for mode in [Mode::GpuOnly, Mode::Cooperative] {
        let sel = selector(&set, Strategy::Radix);
        // Programs built first, then no speeds known: member 0 probes with sub-lists claimed
        // for it before the call's drivers start, so it launches (and fails) in this call
        // however late its thread starts.
        sel.select(&data, &cut, 100, mode).unwrap();
        sel.forget_speeds();
        sel.inject_member_failure(0, 0).unwrap();
        let got = sel.select_with_stats(&data, &cut, 100, mode).unwrap();
        check(&got, &data, &cut, 100, &format!("{mode}, member 0 failing"));
        let stats = got.1;
        let failed = stats
            .workers
            .iter()
            .find(|w| w.member == Some(0))
            .expect("member 0's share");
        assert!(
            failed.error.as_deref().unwrap_or("").contains("injected"),
            "{failed:?}"
        );
        assert!(
            stats.redone_sublists > 0,
            "its launch in flight was redone: {stats:?}"
        );
        assert_eq!(sel.failed_devices().len(), 1);
        // Later calls leave it out.
        let again = sel.select_with_stats(&data, &cut, 100, mode).unwrap();
        check(&again, &data, &cut, 100, "after the failure");
        assert!(again.1.workers.iter().all(|w| w.member != Some(0)));
    }
}

#[test]
fn every_member_failing_is_an_error_on_the_device_alone_and_survived_with_the_cpu() {
    let set = common::device_set(Transport::Coarse);
    let data = keys(512 * 128, 6, 1 << 24);
    let cut = Sublists::Equal(128);
    let members = set.len();
    let all_fail = |sel: &KSelector| {
        for m in 0..members.max(2) {
            // A one-device set has no member list to inject into: nothing to test there.
            let _ = sel.inject_member_failure(m, 0);
        }
    };
    let gpu = selector(&set, Strategy::Heap);
    if members < 2 {
        return;
    }
    all_fail(&gpu);
    match gpu.select_with_stats(&data, &cut, 10, Mode::GpuOnly) {
        Err(e @ Error::DeviceLost { .. }) => assert!(e.to_string().contains("injected"), "{e}"),
        other => panic!("expected a lost device, got {:?}", other.map(|r| r.1)),
    }
    assert!(gpu.select(&data, &cut, 10, Mode::GpuOnly).is_err());
    assert_eq!(
        gpu.select(&data, &cut, 10, Mode::CpuOnly).unwrap(),
        common::reference(&data, &cut.boundaries(data.len(), 10).unwrap(), 10)
    );
    let coop = selector(&set, Strategy::Heap);
    all_fail(&coop);
    let got = coop
        .select_with_stats(&data, &cut, 10, Mode::Cooperative)
        .unwrap();
    check(&got, &data, &cut, 10, "every member failed, cooperative");
    // No speeds known: every member probes (sub-lists claimed for it before the drivers
    // start), so every member launches and fails in this call.
    for w in got.1.workers.iter().filter(|w| w.member.is_some()) {
        assert!(w.error.is_some(), "{w:?}");
    }
    assert_eq!(coop.failed_devices().len(), members);
    assert!(got.1.redone_sublists > 0, "{:?}", got.1);
}

#[test]
fn one_device_ways_of_cooperating_are_refused_over_a_set() {
    let set = common::device_set(Transport::Coarse);
    if set.len() < 2 {
        return;
    }
    let data = keys(64 * 64, 7, 100);
    let cut = Sublists::Equal(64);
    let sel = selector(&set, Strategy::Heap);
    let bridge = sel.select_cooperating(&data, &cut, 5, Mode::Cooperative, Cooperation::Bridge);
    assert!(
        matches!(bridge, Err(Error::Unsupported { .. })),
        "{bridge:?}"
    );
    let fixed = selector(&set, Strategy::Heap)
        .with_device_share(Some(0.5))
        .unwrap();
    let r = fixed.select(&data, &cut, 5, Mode::Cooperative);
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    // CpuOnly needs no device and ignores the set.
    assert!(fixed.select(&data, &cut, 5, Mode::CpuOnly).is_ok());
}

#[test]
fn keys_resident_across_the_set_match_select_nth() {
    for transport in common::set_transports() {
        let set = common::device_set(transport);
        let sel = selector(&set, Strategy::Radix);
        for (call, (len, k)) in [(1000, 1), (1000, 333), (4096, 4096), (77, 10)]
            .into_iter()
            .enumerate()
        {
            let data = keys(len * 301, len as u64, 1 << 20);
            let cut = Sublists::Equal(len);
            let spread = sel.upload_spread(&data, &cut, k).unwrap();
            let shares = spread.shares();
            if call == 0 {
                // The selector's first upload splits the keys evenly: every member holds a
                // part. (Later ones go by the resident speeds measured: on the H200 machine
                // every sub-list goes to NVIDIA.)
                assert_eq!(shares.len(), set.len(), "{shares:?}");
            }
            assert!(shares.iter().all(|(_, r)| !r.is_empty()), "{shares:?}");
            let covered: usize = shares.iter().map(|(_, r)| r.len()).sum();
            assert_eq!(covered, 301);
            for _ in 0..2 {
                let got = sel.select_spread_svm(&spread, k).unwrap();
                check(
                    &got,
                    &data,
                    &cut,
                    k,
                    &format!("{transport} resident len {len} k {k}"),
                );
            }
            assert!(sel.select_spread_svm(&spread, len + 1).is_err());
            assert!(sel.select_spread_svm(&spread, 0).is_err());
        }
        // Unequal sub-lists; an upload after measurements still covers every sub-list.
        let data = keys(5000, 1, 9);
        let cut = Sublists::Offsets(vec![0, 17, 1000, 1001 + 16, 4000, 5000]);
        let spread = sel.upload_spread(&data, &cut, 17).unwrap();
        let got = sel.select_spread_svm(&spread, 17).unwrap();
        check(&got, &data, &cut, 17, "resident, unequal");
    }
    // One device: one part.
    let set = DeviceSet::from_runtimes(vec![
        common::device_set(Transport::Coarse).members()[0].clone()
    ])
    .unwrap();
    let sel = selector(&set, Strategy::Radix);
    let data = keys(64 * 100, 2, 1000);
    let spread = sel.upload_spread(&data, &Sublists::Equal(64), 5).unwrap();
    assert_eq!(spread.shares().len(), 1);
    let got = sel.select_spread_svm(&spread, 5).unwrap();
    check(&got, &data, &Sublists::Equal(64), 5, "one device");
}

/// Keys spread over a set's members, handed to a selector of one device: a clear error (the
/// parts live on devices that selector does not drive), not a wait on itself.
#[test]
fn resident_keys_of_another_selector_are_refused() {
    let set = common::device_set(Transport::Coarse);
    let sel = selector(&set, Strategy::Radix);
    let data = keys(64 * 100, 3, 1000);
    let spread = sel.upload_spread(&data, &Sublists::Equal(64), 5).unwrap();
    assert_eq!(spread.shares().len(), set.len());
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(1),
        ..Default::default()
    })
    .unwrap();
    let lone = KSelector::new(Some(set.members()[0].clone()), pool, 4)
        .unwrap()
        .with_strategy(Strategy::Radix);
    let r = lone.select_spread_svm(&spread, 5);
    assert!(
        matches!(&r, Err(Error::InvalidArgument(m)) if m.contains("uploaded")),
        "{r:?}"
    );
}
