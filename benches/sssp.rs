//! SSSP benchmarks on a generated graph: the frontier search and the heap-ordered search on
//! the latency threads and on the default OpenCL device (GpuOnly heap and Cooperative heap),
//! side by side with Dijkstra on one core (the peer a user would pick).
//!
//!     cargo bench --bench sssp                                   # Kronecker scale 14 + geometric 2^16
//!     ASYM_BENCH_SCALE=20 ASYM_BENCH_GEO=1048576 cargo bench --bench sssp

use asym::runtime::{LatencyPool, Runtime};
use asym::structures::apps::graph::Graph;
use asym::structures::apps::sssp::{cpu, device::DeviceSssp, Order};
use asym::structures::{CooperativeConfig, DeviceHeapConfig, HeapPlacement};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

#[path = "support/config.rs"]
mod config;
#[path = "support/env.rs"]
mod env;

fn sssp(c: &mut Criterion) {
    let scale = env::number("ASYM_BENCH_SCALE", 14) as u32;
    let geo = env::number("ASYM_BENCH_GEO", 1 << 16);
    let graphs = [
        (
            format!("kron_{scale}"),
            Graph::kronecker(scale, 16, 255, 1).expect("graph"),
        ),
        (
            format!("geo_{geo}"),
            Graph::geometric(geo, 8.0, 1).expect("graph"),
        ),
    ];
    let pool = LatencyPool::new(Default::default()).expect("pool");
    let rt = Runtime::new().expect("an OpenCL device");
    let order = Order::heap(256);
    let device = HeapPlacement::Device(DeviceHeapConfig::new(256));
    let coop = HeapPlacement::Cooperative(CooperativeConfig::new(256));
    for (name, graph) in &graphs {
        let source = graph.hub();
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
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = config::short();
    targets = sssp
}
criterion_main!(benches);
