//! A call that fails at any step leaves the structure whole: for every fault point (launch,
//! map, allocation, wait; `asym_runtime::faults`) and every step of a small call, a failure
//! injected there leaves the structure valid (its validator passes) holding exactly its
//! contents before the call plus what the call reports as done (all of it on `Ok`, none on
//! an error). Both transports.

mod common;

use asym_runtime::{FaultPoint, Named, Result, Runtime};
use asym_structures::{BulkPolicy, DeviceGeneralizedHeap, DeviceHeapConfig};
use rand::{Rng, SeedableRng};

/// For `n = 1, 2, ...`: makes a structure (`setup`, no fault armed), arms `point` at step `n`
/// of `call`, disarms, and hands the structure and the call's result to `check`; until a call
/// ends without the fault firing (it takes fewer steps than `n`). Returns the steps tried.
fn at_every_step<S, R>(
    rt: &Runtime,
    point: FaultPoint,
    mut setup: impl FnMut() -> S,
    mut call: impl FnMut(&S) -> R,
    mut check: impl FnMut(S, R, u64),
) -> u64 {
    for n in 1..10_000 {
        let structure = setup();
        rt.faults().arm(point, n);
        let result = call(&structure);
        let fired = !rt.faults().is_armed();
        rt.faults().disarm();
        check(structure, result, n);
        if !fired {
            return n - 1;
        }
    }
    panic!("a call of more than 10,000 {} steps", point.name());
}

fn sorted(mut v: Vec<u32>) -> Vec<u32> {
    v.sort_unstable();
    v
}

/// What a device heap holds, taken out in order (the heap is emptied).
fn drain(heap: &DeviceGeneralizedHeap<u32>) -> Result<Vec<u32>> {
    let got = heap.delete_min(heap.len())?;
    assert!(
        got.windows(2).all(|w| w[0] <= w[1]),
        "deletes come in order"
    );
    Ok(got)
}

/// The device heap, under both its paths (the seed's INS/DEL, and the bulk rebuild).
#[test]
fn the_device_heap_is_whole_after_a_failure_at_any_step() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for bulk in [BulkPolicy::Never, BulkPolicy::Always] {
            let config = DeviceHeapConfig {
                work_groups: Some(4),
                initial_nodes: 1,
                bulk,
                ..DeviceHeapConfig::new(8)
            };
            let before: Vec<u32> = (0..60).map(|_| rng.gen_range(0..1000)).collect();
            let batch: Vec<u32> = (0..45).map(|_| rng.gen_range(0..1000)).collect();
            for point in FaultPoint::ALL.iter().copied() {
                let what = format!("{t} {bulk:?} {}", point.name());
                let setup = || {
                    let heap = DeviceGeneralizedHeap::<u32>::new(&rt, &config).unwrap();
                    heap.insert(&before).unwrap();
                    heap
                };
                let steps = at_every_step(
                    &rt,
                    point,
                    setup,
                    |heap| heap.insert(&batch),
                    |heap, result, n| {
                        heap.check_invariants()
                            .unwrap_or_else(|e| panic!("{what} step {n}: insert left {e}"));
                        let mut want = before.clone();
                        if result.is_ok() {
                            want.extend(&batch);
                        }
                        let got = drain(&heap).unwrap_or_else(|e| panic!("{what} {n}: {e}"));
                        assert_eq!(got, sorted(want), "{what} step {n}: insert ({result:?})");
                    },
                );
                eprintln!("{what}: insert, {steps} steps failed in turn");
                let setup = || {
                    let heap = DeviceGeneralizedHeap::<u32>::new(&rt, &config).unwrap();
                    heap.insert(&before).unwrap();
                    heap.insert(&batch).unwrap();
                    heap
                };
                let all = sorted([before.clone(), batch.clone()].concat());
                let steps = at_every_step(
                    &rt,
                    point,
                    setup,
                    |heap| heap.delete_min(37),
                    |heap, result, n| {
                        heap.check_invariants()
                            .unwrap_or_else(|e| panic!("{what} step {n}: delete left {e}"));
                        let got = drain(&heap).unwrap_or_else(|e| panic!("{what} {n}: {e}"));
                        match result {
                            Ok(taken) => {
                                assert_eq!(taken, all[..37], "{what} step {n}: the smallest");
                                assert_eq!(got, all[37..], "{what} step {n}: the rest");
                            }
                            Err(e) => assert_eq!(got, all, "{what} step {n}: nothing taken ({e})"),
                        }
                    },
                );
                eprintln!("{what}: delete, {steps} steps failed in turn");
            }
        }
    }
}

/// The lock-free list on the device and with the latency threads beside it: a batch that
/// fails leaves the list it had, a batch that returns leaves its report's effect.
#[test]
fn the_list_is_whole_after_a_failure_at_any_step() {
    use asym_structures::{ListOp, ListOptions, LockFreeList, OpStatus};
    use std::collections::BTreeSet;
    let mut rng = rand::rngs::StdRng::from_entropy();
    let pool = asym_runtime::LatencyPool::new(asym_runtime::PoolOptions {
        threads: Some(2),
        ..Default::default()
    })
    .unwrap();
    for t in common::transports() {
        let rt = common::runtime(t);
        let before: BTreeSet<i32> = (0..40).map(|_| rng.gen_range(0..100)).collect();
        let ops: Vec<ListOp> = (0..60)
            .map(|_| match rng.gen_range(0..3) {
                0 => ListOp::Insert(rng.gen_range(0..100)),
                1 => ListOp::Remove(rng.gen_range(0..100)),
                _ => ListOp::Contains(rng.gen_range(0..100)),
            })
            .collect();
        for mode in [asym_runtime::Mode::GpuOnly, asym_runtime::Mode::Cooperative] {
            for point in FaultPoint::ALL.iter().copied() {
                let what = format!("{t} {mode:?} {}", point.name());
                let setup = || {
                    let mut list =
                        LockFreeList::new(&rt, asym_structures::ListKind::OrderedSet, 1 << 14)
                            .unwrap();
                    let inserts: Vec<ListOp> = before.iter().map(|&v| ListOp::Insert(v)).collect();
                    list.apply(
                        &inserts,
                        asym_runtime::Mode::CpuOnly,
                        ListOptions::default(),
                        Some(&pool),
                    )
                    .unwrap();
                    std::cell::RefCell::new(list)
                };
                let options = ListOptions { device_share: 0.5 };
                let steps = at_every_step(
                    &rt,
                    point,
                    setup,
                    |list| list.borrow_mut().apply(&ops, mode, options, Some(&pool)),
                    |list, result, n| {
                        let mut list = list.into_inner();
                        list.check()
                            .unwrap_or_else(|e| panic!("{what} step {n}: the list is {e}"));
                        // Concurrent operations on one key take effect in some order; each
                        // key's net count of inserts and removals done decides where it ends.
                        let mut net: std::collections::BTreeMap<i32, i32> =
                            before.iter().map(|&k| (k, 1)).collect();
                        if let Ok(report) = &result {
                            for (op, s) in ops.iter().zip(&report.statuses) {
                                match (op, s) {
                                    (ListOp::Insert(k), OpStatus::Done) => {
                                        *net.entry(*k).or_default() += 1
                                    }
                                    (ListOp::Remove(k), OpStatus::Done) => {
                                        *net.entry(*k).or_default() -= 1
                                    }
                                    _ => {}
                                }
                            }
                        }
                        assert!(
                            net.values().all(|&c| c == 0 || c == 1),
                            "{what} step {n}: {net:?}"
                        );
                        let want: BTreeSet<i32> = net
                            .into_iter()
                            .filter(|&(_, c)| c == 1)
                            .map(|(k, _)| k)
                            .collect();
                        let got: BTreeSet<i32> = list.values().unwrap().into_iter().collect();
                        assert_eq!(got, want, "{what} step {n} ({:?})", result.err());
                    },
                );
                eprintln!("{what}: {steps} steps failed in turn");
            }
        }
    }
}
