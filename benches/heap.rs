//! Generalized heap benchmarks: insert N random keys then delete them all, one group per batch
//! size K; the concurrent heap on the pinned latency threads (top-down and bottom-up
//! insertion) and the device heap (GpuOnly, on the default OpenCL device; K up to 1024) side
//! by side with std `BinaryHeap` and the sequential generalized heap on one core. The device
//! heap runs twice: `gpu_td` as the seed's INS/DEL operations, `gpu_bulk` with bulk calls (one
//! device sort per call); `peer_par_sort` is what a user wanting the keys in order would do
//! instead (rayon's `par_sort_unstable` on every core).
//!
//!     cargo bench --bench heap                                  # 2^20 keys, K = 64, 1024
//!     ASYM_BENCH_LOG2=24 ASYM_BENCH_BATCHES=256,1024,4096 cargo bench --bench heap
//!
//! `gpu_lanes_td` runs the same operations in range lanes of the device (`SpreadHeap::lanes`,
//! `ASYM_BENCH_LANES` of them, default 8). `coop` is the Cooperative heap (device bulk, host
//! top served by the calling thread).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use asym::runtime::{LatencyPool, Runtime};
use asym::structures::{
    BulkPolicy, ConcurrentGeneralizedHeap, CooperativeConfig, CooperativeHeap,
    DeviceGeneralizedHeap, DeviceHeapConfig, GeneralizedHeap, InsertDirection, SpreadHeap,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

#[path = "support/config.rs"]
mod config;
#[path = "support/env.rs"]
mod env;

/// Insert everything from every latency thread, then delete everything; returns how many keys
/// came back (the caller checks it is all of them; the tests check their order).
fn concurrent(pool: &LatencyPool, batch: usize, dir: InsertDirection, keys: &[u32]) -> usize {
    let heap = ConcurrentGeneralizedHeap::new(batch, keys.len() / batch + 2)
        .expect("heap")
        .with_insert_direction(dir);
    let share = keys.len().div_ceil(pool.len());
    pool.broadcast_scoped(|w| {
        for chunk in keys.chunks(share).nth(w.index).unwrap_or(&[]).chunks(batch) {
            heap.insert(chunk).expect("insert");
        }
    })
    .expect("pool");
    pool.broadcast_scoped(|_| {
        let mut n = 0;
        loop {
            let got = heap.delete_min(batch).expect("delete").len();
            if got == 0 {
                return n;
            }
            n += got;
        }
    })
    .expect("pool")
    .into_iter()
    .sum()
}

fn heap(c: &mut Criterion) {
    let n = 1usize << env::number("ASYM_BENCH_LOG2", 20);
    let batches: Vec<usize> = env::numbers("ASYM_BENCH_BATCHES", "64,1024");
    if let Some(bad) = batches.iter().find(|b| !b.is_power_of_two()) {
        eprintln!("ASYM_BENCH_BATCHES: {bad} is not a power of two");
        std::process::exit(2);
    }
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let keys: Vec<u32> = (0..n).map(|_| rng.gen()).collect();
    let pool = LatencyPool::new(Default::default()).expect("pool");
    let rt = Runtime::new().expect("an OpenCL device");
    for batch in batches {
        let mut g = c.benchmark_group(format!("gheap_2^{}_keys/K_{batch}", n.trailing_zeros()));
        g.throughput(Throughput::Elements(n as u64));
        for (name, dir) in [
            ("cpu_td", InsertDirection::TopDown),
            ("cpu_bu", InsertDirection::BottomUp),
        ] {
            g.bench_function(BenchmarkId::new(name, pool.len()), |b| {
                b.iter(|| assert_eq!(concurrent(&pool, batch, dir, &keys), n))
            });
        }
        // The seed's operations (one INS or DEL per batch), then bulk calls (one device
        // sort per call: BulkPolicy::Auto takes it for an insert or delete of everything).
        for (name, bulk) in [
            ("gpu_td", BulkPolicy::Never),
            ("gpu_bulk", BulkPolicy::Auto),
        ] {
            match DeviceGeneralizedHeap::<u32>::new(
                &rt,
                &DeviceHeapConfig {
                    initial_nodes: n / batch + 1,
                    bulk,
                    ..DeviceHeapConfig::new(batch)
                },
            ) {
                Ok(dev) => {
                    let (groups, wg) = dev.launch_shape();
                    g.bench_function(BenchmarkId::new(name, format!("{groups}x{wg}")), |b| {
                        b.iter(|| {
                            dev.insert(&keys).expect("insert");
                            assert_eq!(dev.delete_min(n).expect("delete").len(), n);
                        })
                    });
                }
                // K beyond what the device takes: say so and bench the rest.
                Err(e) => eprintln!("gheap bench: no device heap for K = {batch}: {e}"),
            }
        }
        // The seed's operations in range lanes of the device (`ASYM_BENCH_LANES`, default 8):
        // each lane a heap on its own queue, a call's lanes running at once.
        let lanes = env::number("ASYM_BENCH_LANES", 8);
        let config = DeviceHeapConfig {
            initial_nodes: n / batch + 2,
            bulk: BulkPolicy::Never,
            ..DeviceHeapConfig::new(batch)
        };
        match SpreadHeap::<u32>::lanes(&rt, lanes, &config) {
            Ok(heap) => {
                heap.set_shares(Some(&vec![1.0; lanes])).expect("shares");
                g.bench_function(BenchmarkId::new("gpu_lanes_td", lanes), |b| {
                    b.iter(|| {
                        heap.insert(&keys).expect("insert");
                        assert_eq!(heap.delete_min(n).expect("delete").len(), n);
                    })
                });
            }
            Err(e) => eprintln!("gheap bench: no lanes for K = {batch}: {e}"),
        }
        let mut coop = CooperativeConfig::new(batch);
        coop.device.initial_nodes = n / batch + 1;
        match CooperativeHeap::<u32>::new(&rt, &coop) {
            Ok(heap) => {
                g.bench_function(BenchmarkId::new("coop", 1), |b| {
                    b.iter(|| {
                        heap.insert(&keys).expect("insert");
                        assert_eq!(heap.delete_min(n).expect("delete").len(), n);
                        heap.clear().expect("clear");
                    })
                });
            }
            Err(e) => eprintln!("gheap bench: no cooperative heap for K = {batch}: {e}"),
        }
        g.bench_function(BenchmarkId::new("seq_gheap", 1), |b| {
            b.iter(|| {
                let mut h = GeneralizedHeap::new(batch).expect("heap");
                h.insert(&keys).expect("insert");
                assert_eq!(h.delete_min(n).len(), n);
            })
        });
        // What a user would do instead for a batch of keys wanted in order: sort them.
        g.bench_function(
            BenchmarkId::new("peer_par_sort", rayon::current_num_threads()),
            |b| {
                b.iter(|| {
                    let mut v = keys.clone();
                    v.par_sort_unstable();
                    assert_eq!(v.len(), n);
                })
            },
        );
        g.bench_function(BenchmarkId::new("peer_binaryheap", 1), |b| {
            b.iter(|| {
                // Pushed one by one, as heap_bench does (not heapified from a Vec).
                let mut h = BinaryHeap::with_capacity(n);
                for &k in &keys {
                    h.push(Reverse(k));
                }
                let mut m = 0;
                while h.pop().is_some() {
                    m += 1;
                }
                assert_eq!(m, n);
            })
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = config::short();
    targets = heap
}
criterion_main!(benches);
