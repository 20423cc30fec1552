//! Helpers shared by the structures' integration tests (and the applications', which
//! include this file).
#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use std::sync::{Mutex, Once};

use asym_runtime::{select_device, DeviceSet, LatencyPool, PoolOptions, Runtime, Transport};
use asym_structures::KSelector;
use asym_structures::Key;

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
    // The heap strategy in every mode: the radix strategy has tests of its own.
    KSelector::new(Some(rt), pool, d)
        .expect("selector")
        .with_strategy(asym_structures::Strategy::Heap)
}

/// The reference: the k-th smallest of each sub-list by `select_nth_unstable_by`.
pub fn reference<K: Key>(data: &[K], offs: &[usize], k: usize) -> Vec<K> {
    offs.windows(2)
        .map(|w| {
            let mut v = data[w[0]..w[1]].to_vec();
            *v.select_nth_unstable_by(k - 1, K::cmp_keys).1
        })
        .collect()
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

/// One operation of a recorded history: its real-time interval and what it did.
#[derive(Clone, Debug)]
pub struct Event {
    pub start: u64,
    pub end: u64,
    pub op: Op,
    /// What a delete returned.
    pub got: Vec<i16>,
}

/// Whether some order of `events` that respects real time (an operation that ended before
/// another started comes first) replays on a sequential priority queue with the same results.
pub fn linearizable(events: &[Event]) -> bool {
    fn search(events: &[Event], done: &mut Vec<bool>, queue: &BinaryHeap<Reverse<i16>>) -> bool {
        if done.iter().all(|&d| d) {
            return true;
        }
        for i in 0..events.len() {
            if done[i] {
                continue;
            }
            // `i` may go next only if no pending operation ended before `i` started.
            let blocked =
                (0..events.len()).any(|j| !done[j] && j != i && events[j].end < events[i].start);
            if blocked {
                continue;
            }
            let mut q = queue.clone();
            let ok = match &events[i].op {
                Op::Insert(keys) => {
                    q.extend(keys.iter().map(|&k| Reverse(k)));
                    true
                }
                Op::Delete(n) => {
                    let want: Vec<i16> = (0..*n).map_while(|_| q.pop().map(|r| r.0)).collect();
                    want == events[i].got
                }
            };
            if ok {
                done[i] = true;
                if search(events, done, &q) {
                    return true;
                }
                done[i] = false;
            }
        }
        false
    }
    search(events, &mut vec![false; events.len()], &BinaryHeap::new())
}

/// A small concurrent history on a heap of `i16` keys: `insert {5, 1, 9}` first, then three
/// threads running three random operations each (inserts of 1–2 keys in 0..8, deletes of
/// 1–2), every operation stamped with a shared clock before and after.
pub fn record_history(
    history: u64,
    insert: impl Fn(&[i16]) + Sync,
    delete: impl Fn(usize) -> Vec<i16> + Sync,
) -> Vec<Event> {
    use rand::{Rng, SeedableRng};
    use std::sync::atomic::{AtomicU64, Ordering};
    let clock = AtomicU64::new(0);
    insert(&[5, 1, 9]);
    let pre = Event {
        start: 0,
        end: 0,
        op: Op::Insert(vec![5, 1, 9]),
        got: vec![],
    };
    let start = std::sync::Barrier::new(3);
    let mut events: Vec<Event> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3u64)
            .map(|t| {
                let (clock, start, insert, delete) = (&clock, &start, &insert, &delete);
                s.spawn(move || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(history * 31 + t);
                    let mut mine = Vec::new();
                    start.wait();
                    for _ in 0..3 {
                        let op = if rng.gen_bool(0.5) {
                            Op::Insert(
                                (0..rng.gen_range(1..=2))
                                    .map(|_| rng.gen_range(0..8))
                                    .collect(),
                            )
                        } else {
                            Op::Delete(rng.gen_range(1..=2))
                        };
                        let begin = clock.fetch_add(1, Ordering::SeqCst) + 1;
                        let got = match &op {
                            Op::Insert(keys) => {
                                insert(keys);
                                vec![]
                            }
                            Op::Delete(n) => delete(*n),
                        };
                        let end = clock.fetch_add(1, Ordering::SeqCst) + 1;
                        mine.push(Event {
                            start: begin,
                            end,
                            op,
                            got,
                        });
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    events.insert(0, pre);
    events
}

/// Four host threads share one heap of `u32` keys: each inserts its own `per` keys in chunks of
/// `chunk` and deletes `take` after every chunk. Every delete must come back sorted, and after
/// a final drain every key must have come back exactly once (`what` names the case).
pub fn threads_share_one_heap(
    what: &str,
    per: u32,
    chunk: usize,
    take: usize,
    insert: impl Fn(&[u32]) + Sync,
    delete: impl Fn(usize) -> Vec<u32> + Sync,
) {
    let threads = 4u32;
    let outs: Vec<Vec<u32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (insert, delete) = (&insert, &delete);
                s.spawn(move || {
                    let keys: Vec<u32> = (0..per).map(|j| j * threads + i).collect();
                    let mut got = Vec::new();
                    for part in keys.chunks(chunk) {
                        insert(part);
                        let d = delete(take);
                        assert!(d.windows(2).all(|w| w[0] <= w[1]), "{what}: unsorted");
                        got.extend(d);
                    }
                    got
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u32> = outs.into_iter().flatten().collect();
    all.extend(delete(usize::MAX));
    all.sort();
    assert_eq!(all, (0..threads * per).collect::<Vec<_>>(), "{what}");
}

/// Insert orders that stress a balanced search tree, `n` keys each: ascending and descending
/// runs (every insert at one end), every key in one subtree (a wide first half, then a dense
/// run inside one gap), and random keys with repeats.
pub fn tree_insert_orders(n: i32, rng: &mut impl rand::Rng) -> Vec<(&'static str, Vec<i32>)> {
    vec![
        ("ascending", (0..n).collect()),
        ("descending", (0..n).rev().collect()),
        (
            "one subtree",
            (0..n / 2)
                .map(|i| i * 1000)
                .chain((0..n / 2).map(|i| 500_000 + i))
                .collect(),
        ),
        (
            "random",
            (0..n)
                .map(|_| rng.gen_range(-(3 * n / 2)..3 * n / 2))
                .collect(),
        ),
    ]
}

/// The order a delete-everything phase takes `keys` (ascending) in after the insert order
/// `name`: key order, reverse, or shuffled.
pub fn tree_delete_order(name: &str, mut keys: Vec<i32>, rng: &mut impl rand::Rng) -> Vec<i32> {
    match name {
        "ascending" => {}
        "descending" => keys.reverse(),
        _ => {
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.gen_range(0..=i));
            }
        }
    }
    keys
}

/// PoCL lists as many devices as `POCL_DEVICES` names; two make a set on a one-device
/// machine. Set once, before this process's first OpenCL call, unless already set: PoCL 5.0
/// (the GPU machine's) aborts in `pocl_release_dlhandle_cache` when two of its devices in
/// one process release programs of the same source, so there the tests run with
/// `POCL_DEVICES=pthread` and the set is PoCL + NVIDIA.
pub fn two_pocl_devices() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("POCL_DEVICES").is_none() {
            std::env::set_var("POCL_DEVICES", "pthread pthread");
        }
    });
}

/// Every device that has `transport`, each opened with it; one set per transport for the
/// whole process, never released (PoCL 5.0 aborts in `pocl_release_dlhandle_cache` when
/// two of its contexts are released at once, as tests ending together would).
pub fn device_set(transport: Transport) -> DeviceSet {
    static SETS: Mutex<Vec<(Transport, DeviceSet)>> = Mutex::new(Vec::new());
    two_pocl_devices();
    let mut sets = SETS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, set)) = sets.iter().find(|(t, _)| *t == transport) {
        return set.clone();
    }
    let members: Vec<Runtime> = DeviceSet::choose(Some("all"))
        .expect("devices")
        .into_iter()
        .filter(|p| Transport::candidates(p).is_ok_and(|c| c.contains(&transport)))
        .map(|p| Runtime::open(p, Some(transport), Some(Duration::from_secs(120))).expect("open"))
        .collect();
    let set = DeviceSet::from_runtimes(members).expect("a device with the transport");
    sets.push((transport, set.clone()));
    set
}

/// The transports to test a device set on (see [`transports`]), after asking PoCL for two
/// devices.
pub fn set_transports() -> Vec<Transport> {
    two_pocl_devices();
    transports()
}
