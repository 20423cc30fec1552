//! Batch k-selection benchmarks: one group per sub-list length, CpuOnly, GpuOnly and
//! Cooperative under the heap and radix strategies, and the device radix on keys resident in
//! SVM, side by side with the peers a user would pick instead (`select_nth_unstable` and std
//! `BinaryHeap` k-selection, both over rayon), k = 0.1 · length, random int32 keys.
//!
//!     cargo bench --bench kselect                               # 2^22 keys, lengths 2^11, 2^15, 2^19
//!     ASYM_BENCH_LOG2=28 ASYM_BENCH_LENGTHS=11,13,15,17,19,21 cargo bench --bench kselect
//!
//! `ASYM_DEVICE` picks the device; `ASYM_BENCH_D` the heap arity (default 8).
//! `ASYM_BENCH_BRIDGE=1` adds Cooperative by kind (the ad-heap bridge, on the schedule the
//! transport allows): it is one to three orders of magnitude slower than the rest on PoCL and
//! on a discrete GPU (docs/decisions.md), so it is left out by default.

use asym::runtime::{LatencyPool, Mode, Named, Runtime};
use asym::structures::{Cooperation, KSelector, Strategy, Sublists};
use asym_apps::peers;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

#[path = "support/config.rs"]
mod config;
#[path = "support/env.rs"]
mod env;

fn kselect(c: &mut Criterion) {
    let total = 1usize << env::number("ASYM_BENCH_LOG2", 22);
    let lengths: Vec<usize> = env::numbers::<u32>("ASYM_BENCH_LENGTHS", "11,15,19")
        .into_iter()
        .map(|e| 1usize << e.min(40))
        .filter(|&l| l <= total)
        .collect();
    let d = env::number("ASYM_BENCH_D", 8);
    let mut data = vec![0i32; total];
    data.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(i as u64);
            chunk.iter_mut().for_each(|x| *x = rng.gen());
        });
    let rt = Runtime::new().expect("an OpenCL device");
    let selector = KSelector::new(
        Some(rt),
        LatencyPool::new(Default::default()).expect("pool"),
        d,
    )
    .expect("selector");
    let mut resident = selector
        .runtime()
        .expect("a device")
        .alloc::<i32>(total)
        .expect("SVM for the keys");
    resident.write(&data).expect("upload the keys");
    for len in lengths {
        let k = (len / 10).max(1);
        let cut = Sublists::Equal(len);
        let offs = cut.boundaries(total, k).expect("valid cut");
        let mut g = c.benchmark_group(format!(
            "kselect_2^{}_keys/sublist_{len}",
            total.trailing_zeros()
        ));
        g.throughput(Throughput::Elements(total as u64));
        for (strategy, label) in [
            (Strategy::Heap, format!("heap_d{d}")),
            (Strategy::Radix, "radix".to_string()),
        ] {
            for mode in Mode::ALL {
                g.bench_function(BenchmarkId::new(mode.name(), &label), |b| {
                    b.iter(|| {
                        selector
                            .select_using(&data, &cut, k, mode, Cooperation::ByAmount, strategy)
                            .expect("select")
                    })
                });
            }
        }
        // The same keys resident in SVM, uploaded once: the device radix reads them in place.
        g.bench_function(BenchmarkId::new("gpu", "radix_resident"), |b| {
            b.iter(|| selector.select_svm(&resident, &cut, k).expect("select"))
        });
        if env::switch("ASYM_BENCH_BRIDGE") {
            let name = match selector.bridge_schedule(Cooperation::Bridge) {
                Some(Cooperation::BridgeLive) => "coop_bridge_live",
                _ => "coop_bridge_pipelined",
            };
            g.bench_function(BenchmarkId::new(name, format!("d{d}")), |b| {
                b.iter(|| {
                    selector
                        .select_cooperating(&data, &cut, k, Mode::Cooperative, Cooperation::Bridge)
                        .expect("select")
                })
            });
        }
        g.bench_function(BenchmarkId::new("peer_select_nth_rayon", ""), |b| {
            b.iter(|| peers::select_nth(&data, &offs, k))
        });
        g.bench_function(BenchmarkId::new("peer_binaryheap_rayon", ""), |b| {
            b.iter(|| peers::binary_heap(&data, &offs, k))
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = config::short();
    targets = kselect
}
criterion_main!(benches);
