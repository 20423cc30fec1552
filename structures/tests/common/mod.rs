//! Helpers shared by the structures' integration tests.
#![allow(dead_code)]

use std::time::Duration;

use asym_runtime::{select_device, LatencyPool, PoolOptions, Runtime, Transport};
use asym_structures::kselect::{KSelector, SelectKey};

/// The transports to test: the one `ASYM_SVM` forces, else every one the default device has.
pub fn transports() -> Vec<Transport> {
    let device = select_device(None).expect("an OpenCL device (install pocl-opencl-icd)");
    Transport::candidates(&device).expect("ASYM_SVM names a transport the device supports")
}

/// A selector on the default device with `transport`, heaps of arity `d` and two pinned threads.
pub fn selector(transport: Transport, d: usize) -> KSelector {
    selector_with_threads(transport, d, 2)
}

/// A selector with `threads` pinned latency threads (more than the cores, for stress tests).
pub fn selector_with_threads(transport: Transport, d: usize, threads: usize) -> KSelector {
    let device = select_device(None).expect("an OpenCL device");
    let rt = Runtime::open(device, Some(transport), Some(Duration::from_secs(120)))
        .expect("open runtime");
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(threads),
        ..Default::default()
    })
    .expect("pool");
    KSelector::new(Some(rt), pool, d).expect("selector")
}

/// The reference: the k-th smallest of each sub-list by `select_nth_unstable_by`.
pub fn reference<K: SelectKey>(data: &[K], offs: &[usize], k: usize) -> Vec<K> {
    asym_structures::kselect::peers::select_nth(data, offs, k)
}

/// A heap operation for property tests: insert these keys, or delete this many.
#[derive(Clone, Debug)]
pub enum Op {
    Insert(Vec<i16>),
    Delete(usize),
}

/// Random heap operations (small keys, for ties).
pub fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    prop_oneof![
        prop::collection::vec(any::<i16>(), 0..40).prop_map(Op::Insert),
        (0usize..40).prop_map(Op::Delete),
    ]
}

/// One runtime per transport, shared by all proptest cases of a test binary (programs are
/// built once per runtime).
pub fn shared_runtimes() -> &'static [Runtime] {
    static RUNTIMES: std::sync::OnceLock<Vec<Runtime>> = std::sync::OnceLock::new();
    RUNTIMES.get_or_init(|| transports().into_iter().map(runtime).collect())
}

/// A runtime on the default device with transport `t`.
pub fn runtime(t: Transport) -> Runtime {
    let device = select_device(None).expect("an OpenCL device");
    Runtime::open(device, Some(t), None).expect("runtime")
}

/// Keys of the edge-case patterns every heap test runs: random, sorted both ways, all equal,
/// few distinct values, and the extremes of the type (the device kernels pad with them).
pub fn key_patterns(n: usize, rng: &mut impl rand::Rng) -> Vec<(&'static str, Vec<i32>)> {
    vec![
        ("random", (0..n).map(|_| rng.gen()).collect()),
        ("ascending", (0..n as i32).collect()),
        ("descending", (0..n as i32).rev().collect()),
        ("all equal", vec![7; n]),
        ("duplicates", (0..n).map(|_| rng.gen_range(-3..4)).collect()),
        (
            "extremes",
            (0..n)
                .map(|i| if i % 2 == 0 { i32::MAX } else { i32::MIN })
                .collect(),
        ),
    ]
}
