//! A call that fails at any step leaves the structure whole: for every fault point (launch,
//! map, allocation, wait; `asym_runtime::faults`) and every step of a small call, a failure
//! injected there leaves the structure valid (its validator passes) holding exactly its
//! contents before the call plus what the call reports as done (all of it on `Ok`, none on
//! an error). Both transports.

mod common;

use std::sync::{Mutex, MutexGuard};

use asym_runtime::{DeviceSet, FaultPoint, Named, Result, Runtime, Transport};
use asym_structures::{BulkPolicy, DeviceGeneralizedHeap, DeviceHeapConfig};
use rand::{Rng, SeedableRng};

/// Every test here arms faults on runtimes the others may use: one runs at a time. The
/// runtimes live as long as the process (PoCL aborts when two contexts are released at once).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The runtimes of this file's tests on the default device, one per transport, and the turn
/// to use them.
fn runtime(t: Transport) -> (MutexGuard<'static, ()>, Runtime) {
    static RUNTIMES: Mutex<Vec<(Transport, Runtime)>> = Mutex::new(Vec::new());
    // Before OpenCL starts in this process: the set test wants two PoCL devices.
    common::two_pocl_devices();
    let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut all = RUNTIMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, rt)) = all.iter().find(|(x, _)| *x == t) {
        return (turn, rt.clone());
    }
    let rt = common::runtime(t);
    all.push((t, rt.clone()));
    (turn, rt)
}

/// A device set of its own (not the one other test files share), kept for the process.
fn own_device_set(t: Transport) -> DeviceSet {
    static SETS: Mutex<Vec<(Transport, DeviceSet)>> = Mutex::new(Vec::new());
    common::two_pocl_devices();
    let mut sets = SETS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, set)) = sets.iter().find(|(x, _)| *x == t) {
        return set.clone();
    }
    let members: Vec<Runtime> = DeviceSet::choose(Some("all"))
        .unwrap()
        .into_iter()
        .filter(|p| Transport::candidates(p).is_ok_and(|c| c.contains(&t)))
        .map(|p| Runtime::open(p, Some(t), None).unwrap())
        .collect();
    let set = DeviceSet::from_runtimes(members).unwrap();
    sets.push((t, set.clone()));
    set
}

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
    for t in common::set_transports() {
        let (_turn, rt) = runtime(t);
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
    for t in common::set_transports() {
        let (_turn, rt) = runtime(t);
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
                let options = ListOptions::default();
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

/// The SVM arena's device batches: a batch of mallocs that fails hands out no block, one that
/// returns hands out exactly the blocks of its handles; frees likewise.
#[test]
fn the_arena_is_whole_after_a_failure_at_any_step() {
    use asym_structures::SvmArena;
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::set_transports() {
        let (_turn, rt) = runtime(t);
        let sizes: Vec<u32> = (0..50).map(|_| rng.gen_range(1..100)).collect();
        let block = |arena: &SvmArena, bytes: u32| -> u64 {
            let layout = arena.layout();
            let class = layout.class_of(bytes as usize).expect("a size class");
            layout.class_bytes(class) as u64
        };
        for point in FaultPoint::ALL.iter().copied() {
            let what = format!("{t} {}", point.name());
            let setup = || {
                let mut arena = SvmArena::new(&rt, 1 << 20).unwrap();
                let held = arena.malloc_on_device(&[8, 24, 40]).unwrap();
                let in_use = arena.stats().unwrap().bytes_in_use;
                std::cell::RefCell::new((arena, held, in_use))
            };
            let steps = at_every_step(
                &rt,
                point,
                setup,
                |s| s.borrow_mut().0.malloc_on_device(&sizes),
                |s, result, n| {
                    let (mut arena, _, in_use) = s.into_inner();
                    let stats = arena.stats().unwrap();
                    let added: u64 = match &result {
                        Ok(handles) => {
                            assert!(handles.iter().all(|&h| h != 0), "{what} {n}: room for all");
                            sizes.iter().map(|&b| block(&arena, b)).sum()
                        }
                        Err(_) => 0,
                    };
                    assert_eq!(
                        stats.bytes_in_use,
                        in_use + added,
                        "{what} step {n}: malloc ({:?})",
                        result.err()
                    );
                },
            );
            eprintln!("{what}: malloc, {steps} steps failed in turn");
            let steps = at_every_step(
                &rt,
                point,
                setup,
                |s| {
                    let mut s = s.borrow_mut();
                    let held = s.1.clone();
                    s.0.free_on_device(&held)
                },
                |s, result, n| {
                    let (mut arena, _, in_use) = s.into_inner();
                    let stats = arena.stats().unwrap();
                    let freed: u64 = match &result {
                        Ok(ok) => {
                            assert!(ok.iter().all(|&f| f), "{what} {n}: every free taken");
                            [8, 24, 40].iter().map(|&b| block(&arena, b)).sum()
                        }
                        Err(_) => 0,
                    };
                    assert_eq!(stats.bytes_in_use, in_use - freed, "{what} step {n}: free");
                },
            );
            eprintln!("{what}: free, {steps} steps failed in turn");
        }
    }
}

/// The red-black tree's batches (host transactions over its SVM nodes): a batch that fails
/// leaves the tree it had, valid.
#[test]
fn the_tree_is_whole_after_a_failure_at_any_step() {
    use asym_structures::RbTree;
    use std::collections::BTreeMap;
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::set_transports() {
        let (_turn, rt) = runtime(t);
        let before: Vec<(i32, u64)> = (0..80).map(|i| (rng.gen_range(0..500), i)).collect();
        // Enough to grow the arena (1,024 nodes and 1 MiB at first) inside the call.
        let more: Vec<(i32, u64)> = (0..40_000)
            .map(|i| (rng.gen_range(0..1 << 20), 1000 + i))
            .collect();
        let gone: Vec<i32> = (0..60).map(|_| rng.gen_range(0..500)).collect();
        for point in FaultPoint::ALL.iter().copied() {
            let what = format!("{t} {}", point.name());
            let setup = || {
                let mut tree = RbTree::<i32>::new(&rt, 16).unwrap();
                tree.insert_batch(&before).unwrap();
                std::cell::RefCell::new(tree)
            };
            let model =
                |items: &[(i32, u64)]| -> BTreeMap<i32, u64> { items.iter().copied().collect() };
            let steps = at_every_step(
                &rt,
                point,
                setup,
                |tree| tree.borrow_mut().insert_batch(&more),
                |tree, result, n| {
                    let mut tree = tree.into_inner();
                    tree.validate()
                        .unwrap_or_else(|e| panic!("{what} step {n}: {e}"));
                    let mut want = model(&before);
                    if result.is_ok() {
                        want.extend(more.iter().copied());
                    }
                    let got: BTreeMap<i32, u64> = tree.entries().unwrap().into_iter().collect();
                    assert_eq!(got, want, "{what} step {n}: insert ({:?})", result.err());
                    assert_eq!(tree.len(), want.len(), "{what} step {n}");
                },
            );
            eprintln!("{what}: insert, {steps} steps failed in turn");
            let steps = at_every_step(
                &rt,
                point,
                setup,
                |tree| tree.borrow_mut().delete_batch(&gone),
                |tree, result, n| {
                    let mut tree = tree.into_inner();
                    tree.validate()
                        .unwrap_or_else(|e| panic!("{what} step {n}: {e}"));
                    let mut want = model(&before);
                    if result.is_ok() {
                        gone.iter().for_each(|k| {
                            want.remove(k);
                        });
                    }
                    let got: BTreeMap<i32, u64> = tree.entries().unwrap().into_iter().collect();
                    assert_eq!(got, want, "{what} step {n}: delete ({:?})", result.err());
                },
            );
            eprintln!("{what}: delete, {steps} steps failed in turn");
        }
    }
}

/// k-selection over a device set: a failure in either member at any step of a selection is
/// failed over (the member left out, its sub-lists selected again by the other) or returned;
/// an answer is always the reference's, and the selector answers correctly afterwards.
#[test]
fn k_selection_over_a_device_set_survives_a_failure_at_any_step() {
    use asym_runtime::{LatencyPool, Mode, PoolOptions};
    use asym_structures::{KSelector, Strategy, Sublists};
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::set_transports() {
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let set = own_device_set(t);
        if set.len() < 2 {
            eprintln!("{t}: one device, nothing to fail over to");
            continue;
        }
        let keys: Vec<i32> = (0..64 * 300).map(|_| rng.gen()).collect();
        let cut = Sublists::Equal(300);
        let want: Vec<i32> = keys
            .chunks(300)
            .map(|c| *c.to_vec().select_nth_unstable(99).1)
            .collect();
        for strategy in [Strategy::Radix, Strategy::Heap] {
            for (member, point) in (0..2).flat_map(|m| FaultPoint::ALL.iter().map(move |&p| (m, p)))
            {
                let rt = set.members()[member].clone();
                let what = format!("{t} {strategy:?} member {member} {}", point.name());
                let setup = || {
                    let pool = LatencyPool::new(PoolOptions {
                        threads: Some(1),
                        ..Default::default()
                    })
                    .unwrap();
                    KSelector::on_devices(&set, pool, 4)
                        .unwrap()
                        .with_strategy(strategy)
                };
                let steps = at_every_step(
                    &rt,
                    point,
                    setup,
                    |sel| sel.select(&keys, &cut, 100, Mode::GpuOnly),
                    |sel, result, n| {
                        if let Ok(got) = &result {
                            assert_eq!(got, &want, "{what} step {n}");
                        }
                        let again = sel
                            .select(&keys, &cut, 100, Mode::GpuOnly)
                            .unwrap_or_else(|e| panic!("{what} step {n}: afterwards {e}"));
                        assert_eq!(again, want, "{what} step {n}: afterwards");
                    },
                );
                eprintln!("{what}: {steps} steps failed in turn");
            }
        }
    }
}

/// The heap's other device placements: Cooperative (a host top in front of the device heap)
/// and a device set (each member a range of keys): a call that fails leaves what the heap
/// held, one that returns leaves its effect.
#[test]
fn the_heap_is_whole_in_every_device_placement() {
    use asym_runtime::{LatencyPool, Mode, PoolOptions};
    use asym_structures::{heap_for, HeapOptions, SpreadHeap};
    let mut rng = rand::rngs::StdRng::from_entropy();
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(2),
        ..Default::default()
    })
    .unwrap();
    for t in common::set_transports() {
        let before: Vec<u32> = (0..300).map(|_| rng.gen_range(0..1000)).collect();
        let batch: Vec<u32> = (0..200).map(|_| rng.gen_range(0..1000)).collect();
        let all = sorted([before.clone(), batch.clone()].concat());
        let check = |what: &str, n: u64, got: Vec<u32>, inserted: bool| {
            assert!(
                got.windows(2).all(|w| w[0] <= w[1]),
                "{what} step {n}: in order"
            );
            let want = if inserted {
                all.clone()
            } else {
                sorted(before.clone())
            };
            assert_eq!(got, want, "{what} step {n}");
        };
        // Cooperative, through the one front every program uses.
        {
            let (_turn, rt) = runtime(t);
            let mut options = HeapOptions::new(8);
            options.refill = 64;
            for point in FaultPoint::ALL.iter().copied() {
                let what = format!("{t} coop {}", point.name());
                let setup = || {
                    let mut heap = heap_for::<u32>(
                        Mode::Cooperative,
                        &options,
                        Some((&pool).into()),
                        Some(&rt),
                    )
                    .unwrap();
                    heap.insert(&before).unwrap();
                    heap.delete_min(0).unwrap();
                    std::cell::RefCell::new(heap)
                };
                let steps = at_every_step(
                    &rt,
                    point,
                    setup,
                    |heap| heap.borrow_mut().insert(&batch),
                    |heap, result, n| {
                        let mut heap = heap.into_inner();
                        let len = heap.len();
                        let got = heap.delete_min(len).unwrap();
                        check(&what, n, got, result.is_ok());
                    },
                );
                eprintln!("{what}: insert, {steps} steps failed in turn");
                let steps = at_every_step(
                    &rt,
                    point,
                    || {
                        let heap = setup();
                        heap.borrow_mut().insert(&batch).unwrap();
                        heap
                    },
                    |heap| heap.borrow_mut().delete_min(120),
                    |heap, result, n| {
                        let mut heap = heap.into_inner();
                        let len = heap.len();
                        let mut got = heap.delete_min(len).unwrap();
                        if let Ok(taken) = result {
                            assert_eq!(taken, all[..120], "{what} step {n}: the smallest");
                            got.splice(0..0, taken);
                        }
                        check(&what, n, got, true);
                    },
                );
                eprintln!("{what}: delete, {steps} steps failed in turn");
            }
        }
        // A device set of two members.
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let set = own_device_set(t);
        for (member, point) in
            (0..set.len()).flat_map(|m| FaultPoint::ALL.iter().map(move |&p| (m, p)))
        {
            let rt = set.members()[member].clone();
            let what = format!("{t} set member {member} {}", point.name());
            let config = DeviceHeapConfig {
                work_groups: Some(2),
                initial_nodes: 1,
                ..DeviceHeapConfig::new(8)
            };
            let setup = || {
                let heap = SpreadHeap::<u32>::new(&set, &config).unwrap();
                heap.insert(&before).unwrap();
                heap
            };
            let steps = at_every_step(
                &rt,
                point,
                setup,
                |heap| heap.insert(&batch),
                |heap, result, n| {
                    let got = heap
                        .delete_min(heap.len())
                        .unwrap_or_else(|e| panic!("{what} step {n}: afterwards {e}"));
                    check(&what, n, got, result.is_ok());
                },
            );
            eprintln!("{what}: insert, {steps} steps failed in turn");
            let steps = at_every_step(
                &rt,
                point,
                || {
                    let heap = setup();
                    heap.insert(&batch).unwrap();
                    heap
                },
                |heap| heap.delete_min(120),
                |heap, result, n| {
                    let mut got = heap
                        .delete_min(heap.len())
                        .unwrap_or_else(|e| panic!("{what} step {n}: afterwards {e}"));
                    if let Ok(taken) = result {
                        assert_eq!(taken, all[..120], "{what} step {n}: the smallest");
                        got.splice(0..0, taken);
                    }
                    check(&what, n, got, true);
                },
            );
            eprintln!("{what}: delete, {steps} steps failed in turn");
        }
    }
}
