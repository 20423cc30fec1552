//! loom model of the pool and the bucket count of the device's asynchronous buckets
//! (`kernels/sssp_async.cl`: na_spill, na_claim, na_take and the rounds' NA_PENDING),
//! restated in Rust with the orderings of `kernels/common.cl`'s wrappers (asym_fetch_add,
//! asym_cas and asym_exchange acq_rel, the distance's minimum and the pool's plain loads
//! relaxed, the count's poll acquire). Two groups' rounds lower vertices and spill them while
//! a third group, its own queue empty, claims and takes from the pool until the count says
//! the bucket is over. Checked in every interleaving loom explores:
//!
//! - the bucket ends (no wait is left waiting) with the count at 0 and the pool empty, every
//!   slot written once taken once, however the indices wrap;
//! - every lowered vertex is expanded with its final distance: a lowering whose round found
//!   the vertex still in the pool (and so did not queue it again) is seen by its taker.

use loom::sync::atomic::{AtomicU32, Ordering::*};
use loom::sync::{Arc, Mutex};
use loom::thread;

const NONE: u32 = u32::MAX;
/// Slots: more than the vertices (2) plus the writes in flight (2) and the claims (1).
const SLOTS: u32 = 5;

struct Bucket {
    slots: Vec<AtomicU32>,
    head: AtomicU32,
    tail: AtomicU32,
    queued: [AtomicU32; 2],
    dist: [AtomicU32; 2],
    pending: AtomicU32,
    /// (vertex, distance) of every expansion by the taking group.
    expanded: Mutex<Vec<(u32, u32)>>,
}

impl Bucket {
    /// Indices start at `start`: the ring wraps within the model.
    fn new(start: u32, pending: u32) -> Self {
        Bucket {
            slots: (0..SLOTS).map(|_| AtomicU32::new(NONE)).collect(),
            head: AtomicU32::new(start),
            tail: AtomicU32::new(start),
            queued: [AtomicU32::new(0), AtomicU32::new(0)],
            dist: [AtomicU32::new(NONE), AtomicU32::new(NONE)],
            pending: AtomicU32::new(pending),
            expanded: Mutex::new(Vec::new()),
        }
    }

    /// na_spill within a bucket: whether it put `v` into the pool, counted before any group
    /// can take it.
    fn spill(&self, v: u32) -> bool {
        if self.queued[v as usize].swap(1, AcqRel) != 0 {
            return false;
        }
        self.pending.fetch_add(1, AcqRel);
        let at = self.tail.fetch_add(1, AcqRel);
        let slot = &self.slots[(at % SLOTS) as usize];
        while slot.compare_exchange(NONE, v, AcqRel, Acquire).is_err() {
            thread::yield_now();
        }
        true
    }

    /// A round of a group that held one vertex: lowers each of `lowerings`, queues those it
    /// lowered into the pool (each counted as it goes in), and drops the one it took.
    fn round(&self, lowerings: &[(u32, u32)]) {
        for &(v, d) in lowerings {
            if d < self.dist[v as usize].fetch_min(d, Relaxed) {
                self.spill(v);
            }
        }
        self.pending.fetch_add(u32::MAX, AcqRel);
    }

    /// na_claim for a group of one work-item: the index claimed, or `None` once the bucket
    /// is over.
    fn claim(&self) -> Option<u32> {
        loop {
            let h = self.head.load(Relaxed);
            let t = self.tail.load(Relaxed);
            if (t.wrapping_sub(h) as i32) > 0 {
                if self
                    .head
                    .compare_exchange(h, h + 1, AcqRel, Acquire)
                    .is_ok()
                {
                    return Some(h);
                }
            } else if self.pending.load(Acquire) == 0 {
                return None;
            }
            thread::yield_now();
        }
    }

    /// na_take, then the expansion's load of the distance.
    fn take_and_expand(&self, index: u32) {
        let slot = &self.slots[(index % SLOTS) as usize];
        let v = loop {
            let v = slot.load(Relaxed);
            if v != NONE && slot.compare_exchange(v, NONE, AcqRel, Acquire).is_ok() {
                break v;
            }
            thread::yield_now();
        };
        self.queued[v as usize].swap(0, AcqRel);
        let d = self.dist[v as usize].load(Relaxed);
        self.expanded.lock().unwrap().push((v, d));
        // The taken vertex's expansion queues nothing: the count drops by one.
        self.pending.fetch_add(u32::MAX, AcqRel);
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(f);
}

/// Two rounds lower vertex 0 (the second further, and vertex 1), a third group takes.
fn lowerings_meet_a_taker(start: u32) {
    model(move || {
        let b = Arc::new(Bucket::new(start, 2));
        let rounds: Vec<_> = [vec![(0u32, 5u32)], vec![(0, 3), (1, 7)]]
            .into_iter()
            .map(|lowerings| {
                let b = b.clone();
                thread::spawn(move || b.round(&lowerings))
            })
            .collect();
        let taker = {
            let b = b.clone();
            thread::spawn(move || {
                while let Some(index) = b.claim() {
                    b.take_and_expand(index);
                }
            })
        };
        for r in rounds {
            r.join().unwrap();
        }
        taker.join().unwrap();
        assert_eq!(
            b.pending.load(Relaxed),
            0,
            "head {} tail {} slots {:?} expanded {:?} dist {:?}",
            b.head.load(Relaxed),
            b.tail.load(Relaxed),
            b.slots.iter().map(|s| s.load(Relaxed)).collect::<Vec<_>>(),
            b.expanded.lock().unwrap(),
            b.dist.iter().map(|s| s.load(Relaxed)).collect::<Vec<_>>()
        );
        assert_eq!(
            b.head.load(Relaxed),
            b.tail.load(Relaxed),
            "every index claimed"
        );
        assert!(
            b.slots.iter().all(|s| s.load(Relaxed) == NONE),
            "every slot taken"
        );
        assert!(b.queued.iter().all(|q| q.load(Relaxed) == 0));
        let expanded = b.expanded.lock().unwrap();
        for v in 0..2u32 {
            let d = b.dist[v as usize].load(Relaxed);
            assert!(
                expanded.contains(&(v, d)),
                "vertex {v} at {d} never expanded with it: {expanded:?}"
            );
        }
    });
}

#[test]
fn every_lowering_is_expanded_and_the_bucket_ends() {
    lowerings_meet_a_taker(0);
}

#[test]
fn the_same_across_the_ring_s_wrap() {
    lowerings_meet_a_taker(SLOTS - 1);
}
