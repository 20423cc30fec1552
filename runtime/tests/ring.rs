//! The signal ring and device services on the real device: a persistent kernel (fine) or a
//! pumped kernel (coarse) and pinned CPU threads exchange messages with none lost or
//! duplicated and each producer's order kept.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use asym_runtime::signal::{pack, unpack, DeviceRing, DeviceService};
use asym_runtime::{Error, LatencyPool, PoolOptions, Runtime, Transport};

const MESSAGES: u32 = 100_000;

fn echo(rt: &Runtime, capacity: u32) -> DeviceService {
    let k = rt.kernel(&asym_kernels::RUNTIME, "asym_echo").unwrap();
    DeviceService::start(rt, k, capacity, 1, Some(1)).unwrap()
}

fn pool(threads: usize) -> LatencyPool {
    LatencyPool::new(PoolOptions {
        threads: Some(threads),
        ..Default::default()
    })
    .unwrap()
}

/// Two pinned producers send 50,000 messages each; the test thread receives all replies and
/// checks that each producer's sequence arrives complete, once, in order.
#[test]
fn two_pinned_threads_and_a_kernel_exchange_100k_messages() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let svc = Arc::new(echo(&rt, 256));
        let pool = pool(2);
        let per = MESSAGES / 2;
        let senders = {
            let svc = svc.clone();
            std::thread::spawn(move || {
                pool.broadcast(move |w| {
                    for seq in 0..per {
                        svc.send(pack(seq, w.index as u32)).unwrap();
                    }
                })
            })
        };
        let mut next = [0u32; 2];
        for _ in 0..MESSAGES {
            let (lo, producer) = unpack(svc.recv().unwrap());
            let p = producer as usize;
            assert!(p < 2, "unknown producer {producer}");
            assert_eq!(
                lo,
                next[p] + 1,
                "producer {p}: reply out of order or duplicated ({t})"
            );
            next[p] += 1;
        }
        senders.join().unwrap().unwrap();
        assert_eq!(next, [per, per]);
        assert_eq!(svc.try_recv().unwrap(), None, "no extra replies");
        let stats = Arc::into_inner(svc).unwrap().stop().unwrap();
        assert_eq!(stats.handled, MESSAGES as u64, "{t}");
        if t == Transport::Fine {
            assert_eq!(stats.launches, 1, "one persistent launch");
        }
    }
}

/// Two pinned consumers share the replies of two producers: every reply arrives exactly once.
#[test]
fn two_consumers_receive_each_reply_once() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let svc = Arc::new(echo(&rt, 64));
        let total = 20_000u32;
        let producer = {
            let svc = svc.clone();
            std::thread::spawn(move || {
                for i in 0..total {
                    svc.send(pack(i, 7)).unwrap();
                }
            })
        };
        let consumers = pool(2);
        let svc2 = svc.clone();
        let counts = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let c2 = counts.clone();
        let got = consumers
            .broadcast(move |_| {
                let mut mine = Vec::new();
                while c2.load(std::sync::atomic::Ordering::Relaxed) < total {
                    if let Some(m) = svc2.try_recv().unwrap() {
                        c2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        mine.push(unpack(m).0);
                    } else {
                        std::thread::yield_now();
                    }
                }
                mine
            })
            .unwrap();
        producer.join().unwrap();
        let all: Vec<u32> = got.into_iter().flatten().collect();
        assert_eq!(all.len(), total as usize, "{t}");
        let set: HashSet<u32> = all.iter().copied().collect();
        assert_eq!(set.len(), total as usize, "no duplicates ({t})");
        assert!(set.iter().all(|&v| (1..=total).contains(&v)));
    }
}

/// A full ring is back-pressure: with nobody receiving, sends stop succeeding after the
/// rings fill, then everything sent is delivered once the host receives.
#[test]
fn full_ring_pushes_back_and_loses_nothing() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let svc = echo(&rt, 8);
        let mut sent = 0u32;
        let mut refused = 0;
        for _ in 0..1000u32 {
            if svc.try_send(pack(sent, 0)).unwrap() {
                sent += 1;
            } else {
                refused += 1;
                std::thread::sleep(Duration::from_millis(1));
                if refused > 50 {
                    break;
                }
            }
        }
        // Two SVM rings, plus the host staging queues on the coarse transport.
        let most = if t == Transport::Fine { 2 * 8 } else { 4 * 8 };
        assert!(
            sent >= 8 && sent <= most,
            "at most {most} messages fit: sent {sent} ({t})"
        );
        match svc.send_timeout(pack(9999, 0), Duration::from_millis(50)) {
            Err(Error::Stalled { side, .. }) => assert_eq!(side, asym_runtime::Side::Device),
            other => panic!("a full ring must time out naming the device, got {other:?} ({t})"),
        }
        for i in 0..sent {
            assert_eq!(unpack(svc.recv().unwrap()).0, i + 1, "{t}");
        }
        assert!(matches!(
            svc.recv_timeout(Duration::from_millis(20)),
            Err(Error::Stalled { .. })
        ));
        svc.stop().unwrap();
    }
}

#[test]
fn ring_capacity_is_validated() {
    let rt = common::runtime(common::transports()[0]);
    for bad in [0u32, 1, 3, 100, 1 << 31] {
        assert!(
            matches!(DeviceRing::new(&rt, bad), Err(e) if e.is_argument_error()),
            "capacity {bad}"
        );
    }
    let mut ring = DeviceRing::new(&rt, 4).unwrap();
    let n = ring
        .with_mapped(|r| {
            for i in 0..4 {
                r.try_push(i).unwrap();
            }
            assert_eq!(r.try_push(9), Err(9));
            r.len()
        })
        .unwrap();
    assert_eq!(n, 4);
}

/// A stopped service reports it; its stats count what it handled.
#[test]
fn stop_returns_stats_and_sends_after_stop_fail() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let svc = echo(&rt, 16);
        for i in 0..10 {
            svc.send(pack(i, 1)).unwrap();
        }
        for _ in 0..10 {
            svc.recv().unwrap();
        }
        let stats = svc.stop().unwrap();
        assert_eq!(stats.handled, 10, "{t}");
    }
}
