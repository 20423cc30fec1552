//! proptest: the ring protocol against a `VecDeque` model, on host words and on a real SVM
//! ring mapped between kernels.

mod common;

use std::collections::VecDeque;
use std::sync::atomic::AtomicU32;

use asym_runtime::signal::ring_protocol as proto;
use asym_runtime::signal::DeviceRing;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Push(u64),
    Pop,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![any::<u64>().prop_map(Op::Push), Just(Op::Pop)],
        0..200,
    )
}

fn check(
    ops: &[Op],
    capacity: u32,
    push: impl Fn(u64) -> Result<(), u64>,
    pop: impl Fn() -> Option<u64>,
    len: impl Fn() -> u32,
) {
    let mut model = VecDeque::new();
    for op in ops {
        match *op {
            Op::Push(m) => {
                let r = push(m);
                if model.len() < capacity as usize {
                    assert_eq!(r, Ok(()));
                    model.push_back(m);
                } else {
                    assert_eq!(r, Err(m), "a full ring gives the message back");
                }
            }
            Op::Pop => assert_eq!(pop(), model.pop_front()),
        }
        assert_eq!(len() as usize, model.len());
    }
}

proptest! {
    #[test]
    fn ring_behaves_like_a_bounded_deque(ops in ops(), cap_log2 in 1u32..6) {
        let capacity = 1 << cap_log2;
        let words: Vec<AtomicU32> = (0..proto::words_for(capacity)).map(|_| AtomicU32::new(0)).collect();
        proto::init(&words, capacity);
        check(&ops, capacity, |m| proto::try_push(&words, m), || proto::try_pop(&words), || proto::len(&words));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
    #[test]
    fn svm_ring_behaves_like_a_bounded_deque(ops in ops(), cap_log2 in 1u32..5) {
        let rt = common::runtime(common::transports()[0]);
        let capacity = 1 << cap_log2;
        let mut ring = DeviceRing::new(&rt, capacity).unwrap();
        ring.with_mapped(|r| check(&ops, capacity, |m| r.try_push(m), || r.try_pop(), || r.len())).unwrap();
    }
}
