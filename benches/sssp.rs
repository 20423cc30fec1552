//! SSSP benchmarks on generated graphs, each as generated (`_given`) and renumbered in
//! breadth-first order from the source (`_bfs`, what the sssp example searches by default;
//! the renumbering itself is measured too): the frontier search, the heap-ordered search and
//! delta-stepping on the latency threads and on the default OpenCL device (GpuOnly heap and
//! Cooperative heap), cooperative delta-stepping on both, side by side with Dijkstra on one
//! core (the peer a user would pick).
//!
//!     cargo bench --bench sssp                                   # Kronecker scale 14 + geometric 2^16
//!     ASYM_BENCH_SCALE=20 ASYM_BENCH_GEO=1048576 cargo bench --bench sssp

use asym::runtime::{LatencyPool, Runtime};
use asym::structures::{CooperativeConfig, DeviceHeapConfig, HeapPlacement};
use asym_apps::graph::{Graph, Relabeling};
use asym_apps::sssp::coop_delta::CoopSplit;
use asym_apps::sssp::{cpu, delta, device::DeviceSssp, Order};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

#[path = "support/config.rs"]
mod config;
#[path = "support/env.rs"]
mod env;

fn sssp(c: &mut Criterion) {
    let scale = env::number("ASYM_BENCH_SCALE", 14) as u32;
    let geo = env::number("ASYM_BENCH_GEO", 1 << 16);
    let generated = [
        (
            format!("kron_{scale}"),
            Graph::kronecker(scale, 16, 255, 1).expect("graph"),
        ),
        (
            format!("geo_{geo}"),
            Graph::geometric(geo, 8.0, 1).expect("graph"),
        ),
    ];
    let mut graphs = Vec::new();
    for (name, graph) in generated {
        let source = graph.hub();
        let mut g = c.benchmark_group(format!("sssp_renumber_{name}"));
        g.throughput(Throughput::Elements(graph.edges() as u64));
        g.bench_function(BenchmarkId::new("bfs", 1), |b| {
            b.iter(|| {
                let r = Relabeling::breadth_first(&graph, source).expect("order");
                r.apply(&graph).expect("renumbered")
            })
        });
        g.finish();
        let r = Relabeling::breadth_first(&graph, source).expect("order");
        let renumbered = r.apply(&graph).expect("renumbered");
        graphs.push((format!("{name}_bfs"), renumbered, r.new_of(source)));
        graphs.push((format!("{name}_given"), graph, source));
    }
    let pool = LatencyPool::new(Default::default()).expect("pool");
    let rt = Runtime::new().expect("an OpenCL device");
    let order = Order::heap(256);
    let device = HeapPlacement::Device(DeviceHeapConfig::new(256));
    let coop = HeapPlacement::Cooperative(CooperativeConfig::new(256));
    for (name, graph, source) in &graphs {
        let (graph, source) = (graph, *source);
        let want = graph.dijkstra(source).expect("dijkstra");
        let mut g = c.benchmark_group(format!("sssp_{name}"));
        g.throughput(Throughput::Elements(graph.edges() as u64));
        g.bench_function(BenchmarkId::new("peer_dijkstra", 1), |b| {
            b.iter(|| graph.dijkstra(source).expect("dijkstra"))
        });
        for (label, o) in [("cpu_frontier", Order::Frontier), ("cpu_heap", order)] {
            g.bench_function(BenchmarkId::new(label, pool.len()), |b| {
                b.iter(|| {
                    let run = cpu::shortest_paths(graph, source, &pool, o).expect("sssp");
                    assert_eq!(run.distances, want);
                })
            });
        }
        let width = delta::auto_delta(graph);
        g.bench_function(BenchmarkId::new("cpu_delta", pool.len()), |b| {
            b.iter(|| {
                let run = delta::shortest_paths(graph, source, &pool, width).expect("sssp");
                assert_eq!(run.distances, want);
            })
        });
        let mut dev = DeviceSssp::new(&rt, graph).expect("device graph");
        for (label, o, heap) in [
            ("gpu_frontier", Order::Frontier, &device),
            ("gpu_heap", order, &device),
            ("coop_heap", order, &coop),
        ] {
            g.bench_function(BenchmarkId::new(label, 1), |b| {
                b.iter(|| {
                    let run = dev.shortest_paths(source, o, heap).expect("sssp");
                    assert_eq!(run.distances, want);
                })
            });
        }
        g.bench_function(BenchmarkId::new("gpu_delta", 1), |b| {
            b.iter(|| {
                let run = dev.delta_stepping(source, width).expect("sssp");
                assert_eq!(run.distances, want);
            })
        });
        // Cooperative delta-stepping with the split it learns (the searches of the warm-up
        // settle it; every timed search runs with the settled split).
        let mut split = CoopSplit::adaptive();
        g.bench_function(BenchmarkId::new("coop_delta", pool.len()), |b| {
            b.iter(|| {
                let run = dev
                    .cooperative_delta_stepping(&pool, source, width, &mut split)
                    .expect("sssp");
                assert_eq!(run.run.distances, want);
            })
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = config::short();
    targets = sssp
}
criterion_main!(benches);
