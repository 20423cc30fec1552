//! Red-black tree benchmarks: searching a tree of random keys, on the device from resident
//! query buffers, on the latency threads and on the host path, beside std `BTreeMap` searched
//! from rayon's threads (the peer a user would pick) and from one thread; and building the
//! tree on the host path and on the device beside `BTreeMap` inserts.
//!
//!     cargo bench --bench rbtree                                         # 2^16 keys, 2^18 queries
//!     ASYM_BENCH_LOG2=22 ASYM_BENCH_QUERIES_LOG2=24 cargo bench --bench rbtree
//!
//! `ASYM_BENCH_BUILD_LOG2` sets the keys of the build group (default 16, at most the tree's).
//! `ASYM_DEVICE` picks the device. Half the queries are keys of the tree, half random; the
//! device searches them in its default order, grouped by subtree (routed), as they come, and
//! sorted on the host beforehand.
//!
//! The range-count group counts the keys of 2^16 ranges (about 64 keys each) on the device
//! beside `BTreeMap::range` over rayon's threads.
//!
//! The update group inserts a batch of new random keys into the tree and deletes them again,
//! timing each half, in every mode (device, latency threads, both; and on the device from a
//! resident sorted batch) beside `BTreeMap` on one thread, for each batch size of `ASYM_BENCH_BATCH_LOG2` (comma-separated, default
//! "10,14"; the throughput plot in docs/benchmarks/rbtree.md uses 10 to 20).

use std::collections::BTreeMap;

use std::time::{Duration, Instant};

use asym::runtime::{LatencyPool, Mode, Named, Runtime};
use asym::structures::{RbTree, SearchOrder};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

#[path = "support/config.rs"]
mod config;
#[path = "support/env.rs"]
mod env;

fn rbtree(c: &mut Criterion) {
    let keys_log2 = env::number("ASYM_BENCH_LOG2", 16).min(30);
    let queries_log2 = env::number("ASYM_BENCH_QUERIES_LOG2", 18).min(30);
    let (n, q) = (1usize << keys_log2, 1usize << queries_log2);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let items: Vec<(i32, u64)> = (0..n).map(|i| (rng.gen(), i as u64)).collect();
    let queries: Vec<i32> = (0..q)
        .map(|i| {
            if i % 2 == 0 {
                items[rng.gen_range(0..n)].0
            } else {
                rng.gen()
            }
        })
        .collect();
    let rt = Runtime::new().expect("an OpenCL device");
    let mut tree = RbTree::<i32>::new(&rt, n).expect("tree");
    tree.build_on_device(&items).expect("build");
    // The peer's map, built only when a peer bench runs (64 M inserts take most of a minute,
    // time a filtered run of the device rows need not spend).
    let mut map = PeerMap::new(&items);

    let mut g = c.benchmark_group(format!("rbtree_search_2^{keys_log2}_keys"));
    g.throughput(Throughput::Elements(q as u64));
    let mut dev_keys = rt.alloc::<i32>(q).expect("query buffer");
    dev_keys.write(&queries).expect("upload queries");
    let mut values = rt.alloc::<u64>(q).expect("value buffer");
    let mut status = rt.alloc::<u32>(q).expect("status buffer");
    // The default (`SearchOrder::Auto`), then each order forced.
    for (name, order) in [
        ("gpu_resident", SearchOrder::Auto),
        ("gpu_resident_routed", SearchOrder::Routed),
        ("gpu_resident_arrival", SearchOrder::Arrival),
    ] {
        tree.set_search_order(order);
        g.bench_function(BenchmarkId::new(name, q), |b| {
            b.iter(|| {
                tree.search_svm(&dev_keys, &mut values, &mut status)
                    .expect("search")
            })
        });
    }
    // The same queries sorted on the host beforehand (not timed), the form the resident
    // updates take, searched as they come: neighbouring work-items walk shared paths, so a
    // warp's loads coalesce and the tree's lines are read from memory about once per batch.
    // The bound a routed search approaches.
    let mut ascending = queries.clone();
    ascending.sort_unstable();
    let mut dev_sorted = rt.alloc::<i32>(q).expect("query buffer");
    dev_sorted.write(&ascending).expect("upload queries");
    g.bench_function(BenchmarkId::new("gpu_resident_sorted", q), |b| {
        b.iter(|| {
            tree.search_svm(&dev_sorted, &mut values, &mut status)
                .expect("search")
        })
    });
    tree.set_search_order(SearchOrder::Auto);
    g.bench_function(BenchmarkId::new("gpu_from_host", q), |b| {
        b.iter(|| tree.search_on_device(&queries).expect("search"))
    });
    let pool = LatencyPool::new(Default::default()).expect("pool");
    g.bench_function(BenchmarkId::new("cpu_latency_threads", q), |b| {
        b.iter(|| tree.search_on_threads(&queries, &pool).expect("search"))
    });
    g.bench_function(BenchmarkId::new("host_path", q), |b| {
        b.iter(|| tree.search_batch(&queries).expect("search"))
    });
    g.bench_function(BenchmarkId::new("peer_btreemap_rayon", q), |b| {
        let map = map.get();
        b.iter(|| {
            queries
                .par_iter()
                .map(|k| map.get(k).copied())
                .collect::<Vec<_>>()
        })
    });
    g.bench_function(BenchmarkId::new("peer_btreemap_one_thread", q), |b| {
        let map = map.get();
        b.iter(|| {
            queries
                .iter()
                .map(|k| map.get(k).copied())
                .collect::<Vec<_>>()
        })
    });
    g.finish();

    // Range counts: ranges spanning about 64 keys of the tree each.
    let span = (u32::MAX / n as u32).saturating_mul(64) as i64;
    let ranges: Vec<(i32, i32)> = queries
        .iter()
        .take(1 << 16)
        .map(|&lo| (lo, (lo as i64 + span).min(i32::MAX as i64) as i32))
        .collect();
    let mut g = c.benchmark_group(format!("rbtree_range_count_2^{keys_log2}_keys"));
    g.throughput(Throughput::Elements(ranges.len() as u64));
    g.bench_function(BenchmarkId::new("gpu_from_host", ranges.len()), |b| {
        b.iter(|| tree.range_count_on_device(&ranges).expect("range count"))
    });
    g.bench_function(BenchmarkId::new("peer_btreemap_rayon", ranges.len()), |b| {
        let map = map.get();
        b.iter(|| {
            ranges
                .par_iter()
                .map(|&(lo, hi)| map.range(lo..=hi).count())
                .collect::<Vec<_>>()
        })
    });
    g.finish();

    updates(c, &mut tree, &mut map, keys_log2, &pool);

    let build = (1usize << env::number("ASYM_BENCH_BUILD_LOG2", 16).min(30)).min(n);
    let mut g = c.benchmark_group("rbtree_build");
    g.throughput(Throughput::Elements(build as u64));
    g.bench_function(BenchmarkId::new("host_path", build), |b| {
        b.iter(|| {
            let mut t = RbTree::<i32>::new(&rt, build).expect("tree");
            t.insert_batch(&items[..build]).expect("insert")
        })
    });
    g.bench_function(BenchmarkId::new("gpu_build_on_device", build), |b| {
        b.iter(|| {
            let mut t = RbTree::<i32>::new(&rt, build).expect("tree");
            t.build_on_device(&items[..build]).expect("build")
        })
    });
    g.bench_function(BenchmarkId::new("peer_btreemap_one_thread", build), |b| {
        b.iter(|| {
            items[..build]
                .iter()
                .copied()
                .collect::<BTreeMap<i32, u64>>()
        })
    });
    g.finish();
}

/// The peer's `BTreeMap` of the tree's items, built on first use.
struct PeerMap<'a> {
    items: &'a [(i32, u64)],
    map: Option<BTreeMap<i32, u64>>,
}

impl<'a> PeerMap<'a> {
    fn new(items: &'a [(i32, u64)]) -> Self {
        PeerMap { items, map: None }
    }

    fn get(&mut self) -> &mut BTreeMap<i32, u64> {
        let items = self.items;
        self.map
            .get_or_insert_with(|| items.iter().copied().collect())
    }
}

/// One mode's insert and delete of `batch` on `tree` (which gets back its keys each time):
/// `delete` false times the insert, true the delete.
fn update_round(
    tree: &mut RbTree<i32>,
    mode: Mode,
    batch: &[(i32, u64)],
    keys: &[i32],
    pool: &LatencyPool,
    delete: bool,
) -> Duration {
    let t = Instant::now();
    tree.insert_in(mode, batch, pool).expect("insert");
    let inserted = t.elapsed();
    let t = Instant::now();
    tree.delete_in(mode, keys, pool).expect("delete");
    if delete {
        t.elapsed()
    } else {
        inserted
    }
}

fn updates(
    c: &mut Criterion,
    tree: &mut RbTree<i32>,
    map: &mut PeerMap,
    keys_log2: usize,
    pool: &LatencyPool,
) {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    for batch_log2 in env::numbers::<usize>("ASYM_BENCH_BATCH_LOG2", "10,14") {
        let b = 1usize << batch_log2.min(26);
        let batch: Vec<(i32, u64)> = (0..b).map(|i| (rng.gen(), i as u64)).collect();
        let keys: Vec<i32> = batch.iter().map(|e| e.0).collect();
        // The resident form: the batch sorted, each key once, in SVM.
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let rt = tree.runtime().clone();
        let mut svm_keys = rt.alloc::<i32>(sorted.len()).expect("keys");
        svm_keys.write(&sorted).expect("upload keys");
        let mut svm_values = rt.alloc::<u64>(sorted.len()).expect("values");
        svm_values
            .write(&vec![7u64; sorted.len()])
            .expect("upload values");
        let mut outcome = rt.alloc::<u32>(sorted.len()).expect("outcomes");
        for (what, delete) in [("insert", false), ("delete", true)] {
            let mut g = c.benchmark_group(format!("rbtree_{what}_2^{keys_log2}_keys"));
            g.throughput(Throughput::Elements(b as u64));
            g.bench_function(BenchmarkId::new("gpu_resident", b), |bench| {
                bench.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let t = Instant::now();
                        tree.insert_svm(&mut svm_keys, &mut svm_values, &mut outcome)
                            .expect("insert");
                        let inserted = t.elapsed();
                        let t = Instant::now();
                        tree.delete_svm(&mut svm_keys, &mut outcome)
                            .expect("delete");
                        total += if delete { t.elapsed() } else { inserted };
                    }
                    total
                })
            });
            for mode in Mode::ALL {
                g.bench_function(BenchmarkId::new(mode.name(), b), |bench| {
                    bench.iter_custom(|iters| {
                        (0..iters)
                            .map(|_| update_round(tree, mode, &batch, &keys, pool, delete))
                            .sum()
                    })
                });
            }
            g.bench_function(BenchmarkId::new("peer_btreemap_one_thread", b), |bench| {
                let map = map.get();
                bench.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let t = Instant::now();
                        for &(k, v) in &batch {
                            map.insert(k, v);
                        }
                        let inserted = t.elapsed();
                        let t = Instant::now();
                        for k in &keys {
                            map.remove(k);
                        }
                        total += if delete { t.elapsed() } else { inserted };
                    }
                    total
                })
            });
            g.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = config::short();
    targets = rbtree
}
criterion_main!(benches);
