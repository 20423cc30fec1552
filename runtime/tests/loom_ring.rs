//! loom model of the signal ring's index protocol (`signal::ring_protocol`): two host
//! producers and the device (modelled as a thread) consuming, and a host consumer beside a
//! device producer. loom explores the interleavings and memory orderings the protocol allows;
//! every message must arrive exactly once, in each producer's order, and a full ring must
//! refuse rather than overwrite.

use asym_runtime::signal::ring_protocol::{self as proto, RingWord};
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;

struct LoomWord(AtomicU32);

impl RingWord for LoomWord {
    fn load(&self, order: Ordering) -> u32 {
        self.0.load(order)
    }
    fn store(&self, value: u32, order: Ordering) {
        self.0.store(value, order)
    }
    fn compare_exchange(
        &self,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u32, u32> {
        self.0.compare_exchange(current, new, success, failure)
    }
}

fn ring(capacity: u32) -> Arc<Vec<LoomWord>> {
    let words: Vec<LoomWord> = (0..proto::words_for(capacity))
        .map(|_| LoomWord(AtomicU32::new(0)))
        .collect();
    proto::init(&words, capacity);
    Arc::new(words)
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

#[test]
fn two_producers_one_device_consumer() {
    model(|| {
        let r = ring(4);
        // Producer 0 sends two messages, producer 1 one (the ring has room for all).
        let producers: Vec<_> = [(0u64, 2u64), (1, 1)]
            .into_iter()
            .map(|(p, n)| {
                let r = r.clone();
                thread::spawn(move || {
                    for seq in 0..n {
                        proto::try_push(&r, p << 32 | seq).expect("room for every message");
                    }
                })
            })
            .collect();
        // The device: pops what has been published so far.
        let device = {
            let r = r.clone();
            thread::spawn(move || {
                let mut got = Vec::new();
                for _ in 0..2 {
                    if let Some(m) = proto::try_pop(&r) {
                        got.push(m);
                    }
                }
                got
            })
        };
        for p in producers {
            p.join().unwrap();
        }
        let mut got = device.join().unwrap();
        while let Some(m) = proto::try_pop(&r) {
            got.push(m);
        }
        let mine: Vec<u64> = got.iter().filter(|m| *m >> 32 == 0).copied().collect();
        assert_eq!(mine, vec![0, 1], "producer 0: each message once, in order");
        assert_eq!(got.iter().filter(|m| *m >> 32 == 1).count(), 1);
        assert_eq!(got.len(), 3);
    });
}

#[test]
fn device_producer_two_host_consumers() {
    model(|| {
        let r = ring(2);
        let device = {
            let r = r.clone();
            thread::spawn(move || {
                for m in 0..2u64 {
                    proto::try_push(&r, m).expect("room for both");
                }
            })
        };
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || proto::try_pop(&r))
            })
            .collect();
        device.join().unwrap();
        let mut all: Vec<u64> = consumers
            .into_iter()
            .filter_map(|c| c.join().unwrap())
            .collect();
        while let Some(m) = proto::try_pop(&r) {
            all.push(m);
        }
        all.sort_unstable();
        assert_eq!(all, vec![0, 1], "every message exactly once");
    });
}

#[test]
fn full_ring_refuses_without_overwriting() {
    model(|| {
        let r = ring(2);
        proto::try_push(&r, 10).unwrap();
        proto::try_push(&r, 11).unwrap();
        let r2 = r.clone();
        let pusher = thread::spawn(move || proto::try_push(&r2, 12));
        let popped = proto::try_pop(&r);
        let pushed = pusher.join().unwrap();
        assert_eq!(popped, Some(10));
        let mut rest = Vec::new();
        while let Some(m) = proto::try_pop(&r) {
            rest.push(m);
        }
        match pushed {
            Ok(()) => assert_eq!(rest, vec![11, 12]),
            Err(m) => {
                assert_eq!(m, 12);
                assert_eq!(rest, vec![11]);
            }
        }
    });
}
