//! loom model of the device heap's lock-word protocol (`kernels/gheap_locks.cl`, the same
//! states as `gheap/concurrent.rs`): the insert→delete hand-off. An INS reserves the heap's next node
//! as TARGET under the root lock, lets the root go and walks down; a DEL that takes the heap's
//! last node while that INS is still on its way marks it MARKED and waits, holding the root,
//! for HANDED. loom explores the interleavings and orderings the protocol allows: the DEL must
//! always get the INS's keys (never stale ones), nothing may be left locked, and the node ends
//! EMPTY (taken) or AVAIL (the INS came last).
//!
//! The model restates the kernel's steps in Rust with the kernel's orderings: lock = CAS from an
//! unlocked word (acquire), release = store of the new state (release), node keys guarded by
//! the lock (plain data in a loom `UnsafeCell`, so loom also reports data races).

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;

const EMPTY: u32 = 0;
const AVAIL: u32 = 1;
const TARGET: u32 = 2;
const MARKED: u32 = 3;
const HANDED: u32 = 4;
const LOCKED: u32 = 0x100;

/// A heap of nodes 0 (root), 1, 2 present and node 3 (a child of 1) the next to be added:
/// an insert's target two levels down, so the insert lets the root go before it reaches it.
struct Heap {
    word: [AtomicU32; 4],
    /// Full nodes (guarded by the root lock).
    count: UnsafeCell<u32>,
    /// Nodes 2's and 3's keys (guarded by their locks, or handed over).
    keys: [UnsafeCell<u32>; 2],
}

impl Heap {
    fn keys(&self, node: usize) -> &UnsafeCell<u32> {
        &self.keys[node - 2]
    }
}

/// Takes a node lock; returns the state it held (gh_lock).
fn lock(w: &AtomicU32) -> u32 {
    loop {
        let v = w.load(Ordering::Relaxed);
        if v & LOCKED == 0
            && w.compare_exchange(v, v | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return v;
        }
        thread::yield_now();
    }
}

/// Waits until the word is exactly `from` and swaps in `to` (gh_wait_swap).
fn wait_swap(w: &AtomicU32, from: u32, to: u32) {
    while w
        .compare_exchange(from, to, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        thread::yield_now();
    }
}

fn unlock(w: &AtomicU32, state: u32) {
    w.store(state, Ordering::Release);
}

/// TD-INS of a batch that becomes the next node: node 3 (path 0 → 1 → 3), or node 2 (a
/// child of the root) when a delete removed node 2 first.
fn insert(h: &Heap, key: u32) {
    lock(&h.word[0]);
    // SAFETY (model): the root lock guards the count.
    let count = h.count.with_mut(|c| unsafe {
        let v = *c;
        *c = v + 1;
        v
    });
    let target = match count {
        3 => 3,
        2 => 2,
        c => panic!("count {c}"),
    };
    wait_swap(&h.word[target], EMPTY, TARGET);
    // Hand over hand: lock the child before letting the parent go.
    let st = if target == 3 {
        assert_eq!(lock(&h.word[1]), AVAIL);
        unlock(&h.word[0], AVAIL);
        let st = lock(&h.word[3]);
        unlock(&h.word[1], AVAIL);
        st
    } else {
        let st = lock(&h.word[2]);
        unlock(&h.word[0], AVAIL);
        st
    };
    // SAFETY (model): the target's lock is held.
    h.keys(target).with_mut(|k| unsafe { *k = key });
    match st {
        MARKED => unlock(&h.word[target], HANDED),
        TARGET => unlock(&h.word[target], AVAIL),
        s => panic!("an insert's target in state {s}"),
    }
}

/// TD-DEL: takes the last node (node 3 when the insert came first, else node 2) and returns
/// its keys, then the first level of its sift-down (both children of the root locked, then
/// let go), then lets the root go.
fn delete(h: &Heap) -> u32 {
    lock(&h.word[0]);
    // SAFETY (model): the root lock guards the count.
    let count = h.count.with_mut(|c| unsafe {
        let v = *c;
        *c = v - 1;
        v
    });
    let last = if count == 4 { 3 } else { 2 };
    match lock(&h.word[last]) {
        TARGET => {
            // Its INS is on its way: mark it and wait, holding the root, for the keys.
            unlock(&h.word[last], MARKED);
            wait_swap(&h.word[last], HANDED, HANDED | LOCKED);
        }
        AVAIL => {}
        s => panic!("the last node in state {s}"),
    }
    // SAFETY (model): the node's lock is held (or was handed over).
    let got = h.keys(last).with(|k| unsafe { *k });
    unlock(&h.word[last], EMPTY);
    for child in [1, 2] {
        let st = lock(&h.word[child]);
        unlock(&h.word[child], st);
    }
    unlock(&h.word[0], AVAIL);
    got
}

#[test]
fn a_delete_gets_the_keys_of_an_insert_still_on_its_way() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let h = Arc::new(Heap {
            word: [
                AtomicU32::new(AVAIL),
                AtomicU32::new(AVAIL),
                AtomicU32::new(AVAIL),
                AtomicU32::new(EMPTY),
            ],
            count: UnsafeCell::new(3),
            // Node 2's keys, and stale keys of a node 3 deleted earlier.
            keys: [UnsafeCell::new(5), UnsafeCell::new(7)],
        });
        let ins = {
            let h = h.clone();
            thread::spawn(move || insert(&h, 42))
        };
        let got = delete(&h);
        ins.join().unwrap();
        // Either order leaves nodes 0..=2 present and unlocked and node 3 empty.
        for w in &h.word[..3] {
            assert_eq!(w.load(Ordering::Acquire), AVAIL, "a lock left held");
        }
        assert_eq!(h.word[3].load(Ordering::Acquire), EMPTY);
        // The DEL took node 3 with the inserted keys (never the stale 7), or came first and
        // took node 2's keys.
        assert!(got == 42 || got == 5, "a delete read keys {got}");
        // SAFETY (model): both threads are done.
        let count = h.count.with(|c| unsafe { *c });
        assert_eq!(count, 3);
    });
}
