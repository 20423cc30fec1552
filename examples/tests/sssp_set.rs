//! SSSP over a device set (PoCL made to list two devices, so the set has at least two members
//! on any machine with PoCL): every plan and order against Dijkstra on each transport, the
//! frontier shared where it is large, the choice settling after the trials, a member failing
//! mid-search (another member, the primary, all of them), bad input.

mod common;

use asym_apps::graph::{Edge, Graph};
use asym_apps::sssp::spread::{SetPlan, SpreadRun, SpreadSssp};
use asym_apps::sssp::{check_distances, Order};
use asym_runtime::{Error, LatencyPool, PoolOptions, Transport};
use asym_structures::{DeviceHeapConfig, HeapPlacement};
use rand::{Rng, SeedableRng};

fn rng() -> rand::rngs::StdRng {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// Edge cases and generated graphs, small enough for PoCL's launches.
fn graphs() -> Vec<(&'static str, Graph)> {
    let mut rng = rng();
    let chain: Vec<Edge> = (0..59).map(|i| (i, i + 1, 1 + i % 7)).collect();
    let star: Vec<Edge> = (1..5_000).map(|i| (0, i, i % 13)).collect();
    let dup = vec![
        (0, 1, 9),
        (0, 1, 3),
        (1, 1, 0),
        (1, 2, 0),
        (2, 0, 1),
        (0, 2, 5),
        (4, 5, 1),
    ];
    vec![
        ("one vertex", Graph::from_edges(1, &[], false).unwrap()),
        ("no edges", Graph::from_edges(17, &[], false).unwrap()),
        ("chain", Graph::from_edges(60, &chain, false).unwrap()),
        ("star", Graph::from_edges(5_000, &star, true).unwrap()),
        (
            "duplicates, self-loops, unreachable",
            Graph::from_edges(7, &dup, false).unwrap(),
        ),
        (
            "zero weights",
            common::random_graph(&mut rng, 300, 2_000, 0),
        ),
        (
            "random sparse",
            common::random_graph(&mut rng, 4_000, 10_000, 1_000),
        ),
        ("kron 12", Graph::kronecker(12, 16, 255, rng.gen()).unwrap()),
        (
            "geometric",
            Graph::geometric(5_000, 8.0, rng.gen()).unwrap(),
        ),
    ]
}

fn heap() -> HeapPlacement {
    HeapPlacement::Device(DeviceHeapConfig {
        work_groups: Some(3),
        ..DeviceHeapConfig::new(4)
    })
}

/// The orders tried: the frontier whole, and the heap with a small threshold.
fn orders() -> [Order; 2] {
    [
        Order::Frontier,
        Order::Heap {
            threshold: 64,
            pop: 64,
            batch: 4,
        },
    ]
}

/// Checks the distances and that the members' shares add up to the entries expanded.
fn check(run: &SpreadRun, g: &Graph, source: usize, what: &str) {
    let want = g.dijkstra(source).unwrap();
    check_distances(&run.run.distances, &want).unwrap_or_else(|e| panic!("{what}: {e}"));
    let entries: u64 = run
        .set
        .members
        .iter()
        .filter(|m| m.error.is_none())
        .map(|m| m.items)
        .sum();
    let stats = &run.run.stats;
    assert_eq!(
        entries,
        stats.visited + stats.stale,
        "{what}: {:?}",
        run.set.members
    );
}

#[test]
fn every_plan_and_order_matches_dijkstra_on_each_transport() {
    for transport in common::set_transports() {
        let set = common::device_set(transport);
        for (name, g) in graphs() {
            let mut sssp = SpreadSssp::new(&set, &g).unwrap();
            let source = g.vertices() / 3;
            let plans: Vec<SetPlan> = std::iter::once(SetPlan::Together)
                .chain((0..set.len()).map(SetPlan::Alone))
                .collect();
            for order in orders() {
                for &plan in &plans {
                    let what = format!("{transport} {name} {order:?} {plan:?}");
                    let run = sssp
                        .shortest_paths_as(plan, source, order, &heap())
                        .unwrap();
                    assert_eq!(run.set.plan, plan);
                    check(&run, &g, source, &what);
                }
            }
        }
    }
}

#[test]
fn large_frontiers_are_shared_and_the_choice_settles_after_the_trials() {
    let set = common::device_set(Transport::Coarse);
    if set.len() < 2 {
        eprintln!("one device: nothing to share");
        return;
    }
    let g = Graph::kronecker(14, 16, 255, rng().gen()).unwrap();
    let source = g.hub();
    let mut sssp = SpreadSssp::new(&set, &g).unwrap();
    // Two calls of each plan: together first, then each member alone.
    let trials = 2 * (set.len() + 1);
    let mut seen = Vec::new();
    for call in 0..trials + 2 {
        let run = sssp
            .shortest_paths(source, Order::Frontier, &heap())
            .unwrap();
        check(&run, &g, source, &format!("call {call}"));
        assert_eq!(
            run.set.exploring,
            call < trials,
            "call {call}: {:?}",
            run.set.plan
        );
        if call == 0 {
            // No speeds known: frontiers of thousands of vertices are split evenly.
            assert_eq!(run.set.plan, SetPlan::Together);
            assert!(
                run.set.members.iter().all(|m| m.items > 0),
                "{:?}",
                run.set.members
            );
        }
        seen.push(run.set.plan);
    }
    for p in std::iter::once(SetPlan::Together).chain((0..set.len()).map(SetPlan::Alone)) {
        assert_eq!(
            seen[..trials].iter().filter(|s| **s == p).count(),
            2,
            "{seen:?}"
        );
    }
    assert_eq!(
        seen[trials],
        seen[trials + 1],
        "the choice settles: {seen:?}"
    );
    // The heap order has trials of its own.
    let order = orders()[1];
    let run = sssp.shortest_paths(source, order, &heap()).unwrap();
    assert!(run.set.exploring);
    check(&run, &g, source, "heap order");
}

#[test]
fn the_latency_threads_join_as_one_more_worker() {
    let set = common::device_set(Transport::Coarse);
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(2),
        ..Default::default()
    })
    .expect("pool");
    let g = Graph::kronecker(14, 16, 255, rng().gen()).unwrap();
    let source = g.hub();
    let mut sssp = SpreadSssp::new(&set, &g)
        .unwrap()
        .with_latency_threads(&pool);
    let workers = set.len() + 1;
    // No speed known: frontiers of thousands of vertices are split evenly over every worker.
    let run = sssp
        .shortest_paths(source, Order::Frontier, &heap())
        .unwrap();
    check(&run, &g, source, "together with the latency threads");
    assert_eq!(run.set.plan, SetPlan::Together);
    assert_eq!(run.set.members.len(), workers);
    assert!(
        run.set.members.iter().all(|m| m.items > 0),
        "{:?}",
        run.set.members
    );
    assert!(run.set.members[set.len()]
        .worker
        .contains("latency threads"));
    // Their trials: together, each member alone and the latency threads alone, twice each.
    let mut seen = vec![run.set.plan];
    for call in 1..2 * (workers + 1) + 1 {
        let run = sssp
            .shortest_paths(source, Order::Frontier, &heap())
            .unwrap();
        check(&run, &g, source, &format!("call {call}"));
        seen.push(run.set.plan);
    }
    let trials = 2 * (workers + 1);
    assert_eq!(
        seen[..trials]
            .iter()
            .filter(|p| **p == SetPlan::LatencyThreads)
            .count(),
        2,
        "{seen:?}"
    );
    for order in orders() {
        let run = sssp
            .shortest_paths_as(SetPlan::LatencyThreads, source, order, &heap())
            .unwrap();
        check(
            &run,
            &g,
            source,
            &format!("{order:?} on the latency threads"),
        );
        let run = sssp
            .shortest_paths_as(SetPlan::Together, source, order, &heap())
            .unwrap();
        check(&run, &g, source, &format!("{order:?} together"));
        // Every iteration to the next worker in turn: each catches up after sitting out.
        sssp.round_robin(true);
        let run = sssp
            .shortest_paths_as(SetPlan::Together, source, order, &heap())
            .unwrap();
        check(&run, &g, source, &format!("{order:?} in turn"));
        assert!(run.set.members.iter().all(|m| m.pieces > 0), "{run:?}");
        sssp.round_robin(false);
    }
}

#[test]
fn a_member_failing_mid_search_leaves_its_slice_to_the_primary() {
    let set = common::device_set(Transport::Coarse);
    if set.len() < 2 {
        eprintln!("one device: nothing to fail over to");
        return;
    }
    let g = Graph::kronecker(14, 16, 255, rng().gen()).unwrap();
    let source = g.hub();
    let mut sssp = SpreadSssp::new(&set, &g).unwrap();
    // No speed known: member 0 is the primary, and frontiers of thousands of vertices are
    // split evenly, so member 1 fails in the first iteration that gives it a slice.
    sssp.inject_member_failure(1, 0).unwrap();
    let run = sssp
        .shortest_paths_as(SetPlan::Together, source, Order::Frontier, &heap())
        .unwrap();
    check(&run, &g, source, "member 1 failing");
    let failed = run
        .set
        .members
        .iter()
        .find(|m| m.member == Some(1))
        .unwrap();
    assert!(
        failed.error.as_deref().unwrap_or("").contains("injected"),
        "{failed:?}"
    );
    assert!(run.set.redone_entries > 0, "{run:?}");
    assert_eq!(sssp.failed_devices().len(), 1);
    // Later searches leave it out; a plan naming it is refused.
    for order in orders() {
        let again = sssp.shortest_paths(source, order, &heap()).unwrap();
        check(&again, &g, source, &format!("{order:?} after the failure"));
        assert!(again.set.members.iter().all(|m| m.member != Some(1)));
    }
    assert!(matches!(
        sssp.shortest_paths_as(SetPlan::Alone(1), source, Order::Frontier, &heap()),
        Err(e) if e.is_argument_error()
    ));
}

#[test]
fn the_primary_failing_runs_the_search_again_on_the_others() {
    let set = common::device_set(Transport::Coarse);
    if set.len() < 2 {
        eprintln!("one device: nothing to fail over to");
        return;
    }
    let g = Graph::kronecker(12, 16, 255, rng().gen()).unwrap();
    let source = g.hub();
    for order in orders() {
        let mut sssp = SpreadSssp::new(&set, &g).unwrap();
        // The first call runs together with member 0 as the primary; it fails, and the
        // search runs again without it.
        sssp.inject_member_failure(0, 1).unwrap();
        let run = sssp.shortest_paths(source, order, &heap()).unwrap();
        check(&run, &g, source, &format!("{order:?}, the primary failing"));
        assert!(
            run.set.members.iter().all(|m| m.member != Some(0)),
            "{run:?}"
        );
        let failed = sssp.failed_devices();
        assert_eq!(failed.len(), 1);
        assert!(failed[0].1.contains("injected"), "{failed:?}");
    }
    // Every member failing: the search is an error naming the failures.
    let mut sssp = SpreadSssp::new(&set, &g).unwrap();
    for m in 0..set.len() {
        sssp.inject_member_failure(m, 0).unwrap();
    }
    match sssp.shortest_paths(source, Order::Frontier, &heap()) {
        Err(e @ Error::DeviceLost { .. }) => assert!(e.to_string().contains("injected"), "{e}"),
        other => panic!("expected a lost set, got {:?}", other.map(|r| r.set.plan)),
    }
    assert_eq!(sssp.failed_devices().len(), set.len());
    assert!(sssp
        .shortest_paths(source, Order::Frontier, &heap())
        .is_err());
}

#[test]
fn bad_sources_and_overflow_are_errors_over_a_set() {
    let set = common::device_set(Transport::Coarse);
    let g = Graph::from_edges(3, &[(0, 1, u32::MAX), (1, 2, u32::MAX)], false).unwrap();
    let mut sssp = SpreadSssp::new(&set, &g).unwrap();
    for plan in [SetPlan::Together, SetPlan::Alone(0)] {
        assert!(sssp
            .shortest_paths_as(plan, 3, Order::Frontier, &heap())
            .is_err());
        let e = sssp
            .shortest_paths_as(plan, 0, Order::Frontier, &heap())
            .unwrap_err();
        assert!(
            e.to_string().contains("reaches 4294967294"),
            "{plan:?}: {e}"
        );
    }
    assert!(matches!(
        sssp.shortest_paths_as(SetPlan::Alone(set.len()), 0, Order::Frontier, &heap()),
        Err(e) if e.is_argument_error()
    ));
    let bad_order = Order::Heap {
        threshold: 0,
        pop: 1,
        batch: 2,
    };
    assert!(sssp.shortest_paths(0, bad_order, &heap()).is_err());
    // No member failed over bad input.
    assert!(sssp.failed_devices().is_empty());
}
