//! Runtime benchmarks: launch + finish latency, map + unmap cost, SVM allocation (a zeroed
//! buffer of 4 KiB, 1 MiB and 16 MiB allocated and dropped through the runtime, whose cache
//! hands the dropped buffer to the next allocation; and the driver's parts: allocation,
//! device zero-fill, free), round-trip latency per
//! transport (ring echo service; raw ping-pong on the fine transport) and ring throughput, on
//! the default device (`ASYM_DEVICE`), each transport it supports side by side, with the peer
//! a user would otherwise pick for host-to-worker signalling: a crossbeam channel pair to a
//! host thread.
//!
//!     cargo bench --bench runtime

use std::time::{Duration, Instant};

use asym::runtime::diag;
use asym::runtime::signal::pack;
use asym::runtime::{select_device, Runtime, Transport};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn runtimes() -> Vec<Runtime> {
    let device = select_device(None).expect("an OpenCL device");
    Transport::supported_by(&device)
        .into_iter()
        .map(|t| Runtime::open(device.clone(), Some(t), None).expect("open runtime"))
        .collect()
}

fn launch_and_map(c: &mut Criterion) {
    let rts = runtimes();
    let mut g = c.benchmark_group("launch_finish");
    for rt in &rts {
        let mut probe = diag::LaunchProbe::new(rt).unwrap();
        g.bench_function(BenchmarkId::from_parameter(rt.transport()), |b| {
            b.iter(|| probe.launch_finish().unwrap())
        });
    }
    g.finish();
    let mut g = c.benchmark_group("map_unmap_4KiB");
    for rt in &rts {
        let mut probe = diag::MapProbe::new(rt, 1024).unwrap();
        g.bench_function(BenchmarkId::from_parameter(rt.transport()), |b| {
            b.iter(|| probe.map_unmap().unwrap())
        });
    }
    g.finish();
}

/// The buffer sizes of the allocation benchmarks, bytes.
const ALLOC_SIZES: [(&str, usize); 3] = [("4KiB", 4 << 10), ("1MiB", 1 << 20), ("16MiB", 16 << 20)];

fn svm_alloc(c: &mut Criterion) {
    let rts = runtimes();
    let mut g = c.benchmark_group("svm_alloc_and_drop");
    for rt in &rts {
        for (label, bytes) in ALLOC_SIZES {
            g.bench_function(BenchmarkId::new(label, rt.transport()), |b| {
                b.iter(|| rt.alloc::<u8>(bytes).unwrap())
            });
        }
    }
    g.finish();
    // The same allocations in parts: the driver's allocation, the device fill that zeroes
    // it, and the free.
    let mut g = c.benchmark_group("svm_alloc_parts");
    for rt in &rts {
        for (label, bytes) in ALLOC_SIZES {
            for (i, part) in ["alloc", "zero", "free"].into_iter().enumerate() {
                let id = BenchmarkId::new(format!("{label}/{part}"), rt.transport());
                g.bench_function(id, |b| {
                    b.iter_custom(|iters| {
                        (0..iters)
                            .map(|_| rt.time_svm_allocation(bytes).unwrap()[i])
                            .sum()
                    })
                });
            }
        }
    }
    g.finish();
}

fn round_trip(c: &mut Criterion) {
    let rts = runtimes();
    let mut g = c.benchmark_group("round_trip");
    for rt in &rts {
        let svc = diag::echo_service(rt, 64).unwrap();
        let mut i = 0u32;
        g.bench_function(BenchmarkId::new("ring_echo", rt.transport()), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                svc.send(pack(i, 0)).unwrap();
                svc.recv().unwrap()
            })
        });
        svc.stop().unwrap();
        if rt.transport() == Transport::Fine {
            g.bench_function(BenchmarkId::new("pingpong", rt.transport()), |b| {
                b.iter_custom(|iters| {
                    let mut pp = diag::PingPong::start(rt, iters as u32 + 1).unwrap();
                    pp.round().unwrap(); // the kernel's start is not a round trip
                    let t = Instant::now();
                    for _ in 0..iters {
                        pp.round().unwrap();
                    }
                    let e = t.elapsed();
                    pp.finish().unwrap();
                    e
                })
            });
        }
    }
    // Peer: a host thread answering over a pair of crossbeam channels.
    let (to_tx, to_rx) = crossbeam::channel::bounded::<u64>(64);
    let (from_tx, from_rx) = crossbeam::channel::bounded::<u64>(64);
    let echo = std::thread::spawn(move || {
        for m in to_rx {
            if from_tx.send(m + 1).is_err() {
                break;
            }
        }
    });
    g.bench_function(BenchmarkId::new("crossbeam_thread_echo", "host"), |b| {
        b.iter(|| {
            to_tx.send(7).unwrap();
            from_rx.recv().unwrap()
        })
    });
    drop(to_tx);
    echo.join().unwrap();
    g.finish();
}

fn ring_throughput(c: &mut Criterion) {
    const BATCH: u32 = 4096;
    let rts = runtimes();
    let mut g = c.benchmark_group("ring_throughput");
    g.throughput(Throughput::Elements(BATCH as u64));
    for rt in &rts {
        let svc = diag::echo_service(rt, 1024).unwrap();
        g.bench_function(BenchmarkId::new("echo_4096_msgs", rt.transport()), |b| {
            b.iter(|| {
                let (mut sent, mut got) = (0u32, 0u32);
                while got < BATCH {
                    while sent < BATCH && svc.try_send(pack(sent, 1)).unwrap() {
                        sent += 1;
                    }
                    while svc.try_recv().unwrap().is_some() {
                        got += 1;
                    }
                    std::thread::yield_now();
                }
            })
        });
        svc.stop().unwrap();
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = launch_and_map, svm_alloc, round_trip, ring_throughput
}
criterion_main!(benches);
