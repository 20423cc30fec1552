//! Lock-free list and SVM allocator benchmarks: the list seed's experiment (a positional list
//! of N1 unique values, N2 random operations run at once) by the pinned CPU threads, the
//! device and both, against the single-threaded list; and malloc/free throughput of the
//! allocator from a kernel (malloc and free operations per second).
//!
//!     cargo bench --bench list                                   # 2,000 nodes, 20,000 ops
//!     ASYM_BENCH_LIST=10000,100000 cargo bench --bench list      # the seed's experiment
//!     ASYM_BENCH_SHARDS=16,64,256 cargo bench --bench list arena # free-list shards

use std::time::Duration;

use asym::runtime::{LatencyPool, Mode, Runtime};
use asym::structures::{ArenaLayout, SvmArena};
use asym::structures::{ListOptions, LockFreeList};
use asym_apps::workload::{SequentialList, Workload};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

#[path = "support/env.rs"]
mod env;

fn list(c: &mut Criterion) {
    let sizes: Vec<usize> = env::numbers("ASYM_BENCH_LIST", "2000,20000");
    let (initial, ops) = (sizes[0], sizes.get(1).copied().unwrap_or(10 * sizes[0]));
    let w = Workload::generate(initial, ops, 42).expect("workload");
    let pool = LatencyPool::new(Default::default()).expect("pool");
    let rt = Runtime::new().expect("an OpenCL device");
    let mut g = c.benchmark_group(format!("list_{initial}_nodes_{ops}_ops"));
    g.throughput(Throughput::Elements(ops as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("seq", |b| {
        b.iter(|| {
            let mut l = SequentialList::new(&w.initial);
            w.ops.iter().map(|&op| l.apply(op) as usize).sum::<usize>()
        })
    });
    for (name, mode) in [
        ("cpu", Mode::CpuOnly),
        ("gpu", Mode::GpuOnly),
        ("coop", Mode::Cooperative),
    ] {
        g.bench_function(BenchmarkId::new(name, pool.len()), |b| {
            b.iter_batched(
                || LockFreeList::positional_from(&rt, &w.initial, ops + 1024).expect("list"),
                |mut l| {
                    let half = ListOptions::default();
                    l.apply(&w.ops, mode, half, Some(&pool))
                        .expect("batch")
                        .done
                },
                criterion::BatchSize::PerIteration,
            )
        });
    }
    g.finish();

    // The allocator from a kernel, for each shard count in ASYM_BENCH_SHARDS (default: the
    // default layout's).
    let n = 1 << 16;
    let shard_counts: Vec<u32> = env::numbers(
        "ASYM_BENCH_SHARDS",
        &ArenaLayout::default().shards.to_string(),
    );
    for shards in shard_counts {
        let layout = ArenaLayout {
            shards,
            ..Default::default()
        };
        let mut arena = SvmArena::with_layout(&rt, 16 << 20, layout).expect("arena");
        let sizes = vec![16u32; n];
        let mut g = c.benchmark_group(format!("arena_{shards}_shards"));
        g.throughput(Throughput::Elements(2 * n as u64));
        g.sample_size(10);
        g.bench_function("device_malloc_each_then_free_each_65536x16B", |b| {
            b.iter(|| {
                let hs = arena.malloc_on_device(&sizes).expect("malloc");
                arena.free_on_device(&hs).expect("free").len()
            })
        });
        // Each work-item: 8 rounds of 4 mallocs and 4 frees.
        g.throughput(Throughput::Elements(n as u64 * 8 * 4 * 2));
        g.bench_function(BenchmarkId::new("device_churn_8_rounds_of_4", n), |b| {
            b.iter(|| {
                arena
                    .churn_on_device(n, 16, 4, 8, |_| ())
                    .expect("churn")
                    .0
                    .failed
            })
        });
        g.finish();
    }
}
criterion_group!(benches, list);
criterion_main!(benches);
