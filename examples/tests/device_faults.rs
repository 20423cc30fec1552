//! The same injected device fault through every structure that spreads work over a device set
//! (`asym_runtime::spread`: one failure record, one policy): member 0 of a set of two PoCL
//! devices fails in its first step of the next call. k-selection selects the sub-lists it left
//! again and answers; SSSP searches again without it and answers; the heap, whose keys lived
//! there too, returns the fault and calls itself damaged from then on. All three report the
//! member as failed with the injected error, and leave it out afterwards.

mod common;

use asym_apps::graph::Graph;
use asym_apps::sssp::spread::SpreadSssp;
use asym_apps::sssp::{check_distances, Order};
use asym_runtime::{Error, LatencyPool, Mode, PoolOptions, Transport};
use asym_structures::{DeviceHeapConfig, HeapPlacement, KSelector, SpreadHeap, Strategy, Sublists};
use rand::{Rng, SeedableRng};

fn rng() -> rand::rngs::StdRng {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// The failed members a structure reports: each names member 0's device and the injection.
fn assert_member_0_failed(failed: &[(String, String)], device: &str, what: &str) {
    assert_eq!(failed.len(), 1, "{what}: {failed:?}");
    assert_eq!(failed[0].0, device, "{what}");
    assert!(failed[0].1.contains("injected"), "{what}: {failed:?}");
}

#[test]
fn one_injected_device_fault_through_every_spreading_structure() {
    let set = common::device_set(Transport::Coarse);
    if set.len() < 2 {
        eprintln!("one device: nothing to fail over to");
        return;
    }
    let device = set.members()[0].profile().label();
    let mut rng = rng();

    // k-selection: the sub-lists member 0 claimed are selected again by member 1.
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(2),
        ..Default::default()
    })
    .expect("pool");
    let sel = KSelector::on_devices(&set, pool, 4)
        .expect("selector")
        .with_strategy(Strategy::Radix);
    let keys: Vec<i32> = (0..256 * 512).map(|_| rng.gen()).collect();
    let cut = Sublists::Equal(512);
    sel.select(&keys, &cut, 50, Mode::GpuOnly).unwrap();
    sel.forget_speeds();
    sel.inject_member_failure(0, 0).unwrap();
    let got = sel.select(&keys, &cut, 50, Mode::GpuOnly).unwrap();
    let want: Vec<i32> = keys
        .chunks(512)
        .map(|c| *c.to_vec().select_nth_unstable(49).1)
        .collect();
    assert_eq!(got, want, "k-selection after the fault");
    assert_member_0_failed(&sel.failed_devices(), &device, "k-selection");

    // SSSP: the search runs again on member 1 alone and answers as Dijkstra does.
    let g = Graph::kronecker(12, 16, 255, rng.gen()).unwrap();
    let source = g.hub();
    let heap = HeapPlacement::Device(DeviceHeapConfig::new(4));
    let mut sssp = SpreadSssp::new(&set, &g).unwrap();
    sssp.inject_member_failure(0, 0).unwrap();
    let run = sssp.shortest_paths(source, Order::Frontier, &heap).unwrap();
    check_distances(&run.run.distances, &g.dijkstra(source).unwrap()).unwrap();
    assert!(
        run.set.members.iter().all(|m| m.member != Some(0)),
        "{run:?}"
    );
    assert_member_0_failed(&sssp.failed_devices(), &device, "SSSP");

    // The heap: member 0's keys are lost with it, so the call fails naming the device, and
    // the heap is damaged from then on (never retried elsewhere).
    let h = SpreadHeap::<i32>::new(&set, &DeviceHeapConfig::new(32)).unwrap();
    let pairs: Vec<i32> = (0..20_000).map(|_| rng.gen()).collect();
    h.inject_member_failure(0).unwrap();
    match h.insert(&pairs) {
        Err(e @ Error::DeviceLost { .. }) => {
            assert!(e.is_device_fault());
            assert!(e.to_string().contains(&device), "{e}");
        }
        other => panic!("expected member 0 lost, got {other:?}"),
    }
    let report = &h.members()[0];
    assert!(
        report.error.as_deref().unwrap_or("").contains("injected"),
        "{report:?}"
    );
    match h.delete_min(1) {
        Err(e @ Error::Corrupted { .. }) => assert!(!e.is_device_fault(), "{e}"),
        other => panic!("expected a damaged heap, got {other:?}"),
    }
}
