//! loom models of the two lock-free cores behind the SVM allocator and the list, restated in
//! Rust with the orderings of `structures/src/arena/view.rs` and `structures/src/list/view.rs`
//! (which mirror `kernels/alloc.cl` and `kernels/list.cl`):
//!
//! - the tagged Treiber stack of a free list: concurrent pops and pushes never hand one block
//!   to two owners (a block's payload is a loom `UnsafeCell`, so loom also reports a race on
//!   it), and every block ends either on the stack or with its owner;
//! - Harris's positional operations: removing adjacent nodes and inserting next to a node
//!   being removed, at the same time, leave a list that some order of the operations explains,
//!   with every marked node unlinked by a final cleanup.

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

// ---- the tagged free list -------------------------------------------------------------

/// Blocks 1..=3 (0 is null); `next[b]` is block b's first word, `payload[b]` its owner's data.
struct Stack {
    head: AtomicU64,
    next: [AtomicU32; 4],
    payload: [UnsafeCell<u32>; 4],
}

fn tagged(old: u64, handle: u32) -> u64 {
    (((old >> 32) + 1) << 32) | u64::from(handle)
}

impl Stack {
    fn push(&self, block: u32) {
        let mut h = self.head.load(Ordering::Acquire);
        loop {
            self.next[block as usize].store(h as u32, Ordering::Relaxed);
            match self.head.compare_exchange_weak(
                h,
                tagged(h, block),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(now) => h = now,
            }
            thread::yield_now();
        }
    }

    fn pop(&self) -> Option<u32> {
        let mut h = self.head.load(Ordering::Acquire);
        loop {
            let block = h as u32;
            if block == 0 {
                return None;
            }
            let next = self.next[block as usize].load(Ordering::Relaxed);
            match self.head.compare_exchange_weak(
                h,
                tagged(h, next),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(block),
                Err(now) => h = now,
            }
            thread::yield_now();
        }
    }
}

#[test]
fn tagged_stack_hands_each_block_to_one_owner() {
    loom::model(|| {
        // Stack: 1 -> 2 -> 3.
        let s = Arc::new(Stack {
            head: AtomicU64::new(1),
            next: [
                AtomicU32::new(0),
                AtomicU32::new(2),
                AtomicU32::new(3),
                AtomicU32::new(0),
            ],
            payload: Default::default(),
        });
        // Two threads each pop a block, write their id into it, pop another, push the first
        // back: the ABA pattern (a block leaves and returns while the other thread holds a
        // stale head) that the tag defeats.
        let workers: Vec<_> = (1..=2u32)
            .map(|id| {
                let s = s.clone();
                thread::spawn(move || {
                    let mut owned = Vec::new();
                    if let Some(a) = s.pop() {
                        s.payload[a as usize].with_mut(|p| unsafe { *p = id });
                        if let Some(b) = s.pop() {
                            s.payload[b as usize].with_mut(|p| unsafe { *p = id });
                            owned.push(b);
                        }
                        s.payload[a as usize].with(|p| assert_eq!(unsafe { *p }, id));
                        s.push(a);
                    }
                    owned
                })
            })
            .collect();
        let mut owned: Vec<u32> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        let mut on_stack = Vec::new();
        let mut b = s.head.load(Ordering::Acquire) as u32;
        while b != 0 {
            on_stack.push(b);
            assert!(on_stack.len() <= 3, "the stack has a cycle");
            b = s.next[b as usize].load(Ordering::Relaxed);
        }
        owned.extend(&on_stack);
        owned.sort_unstable();
        assert_eq!(
            owned,
            vec![1, 2, 3],
            "every block once: on the stack or owned"
        );
    });
}

// ---- Harris's positional operations ----------------------------------------------------

const MARK: u32 = 1;

/// Nodes are even handles 2, 4, 6, 8 (node 0 is the head sentinel); `next[h/2]`, `value[h/2]`.
struct List {
    next: [AtomicU32; 5],
    value: [AtomicU32; 5],
}

impl List {
    fn next(&self, n: u32) -> &AtomicU32 {
        &self.next[(n / 2) as usize]
    }

    /// The first unmarked node holding `v`: (predecessor, node, successor).
    fn find(&self, v: u32) -> Option<(u32, u32, u32)> {
        let mut p = 0;
        let mut cur = self.next(0).load(Ordering::Acquire) & !MARK;
        while cur != 0 {
            let cn = self.next(cur).load(Ordering::Acquire);
            if cn & MARK == 0 && self.value[(cur / 2) as usize].load(Ordering::Relaxed) == v {
                return Some((p, cur, cn));
            }
            p = cur;
            cur = cn & !MARK;
        }
        None
    }

    fn cas(&self, n: u32, from: u32, to: u32) -> bool {
        self.next(n)
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    fn remove(&self, v: u32) -> bool {
        loop {
            let Some((prev, cur, succ)) = self.find(v) else {
                return false;
            };
            if self.cas(cur, succ, succ | MARK) {
                self.cas(prev, cur, succ); // may fail: cleanup unlinks it
                return true;
            }
            thread::yield_now();
        }
    }

    fn insert_after(&self, target: u32, node: u32) -> bool {
        loop {
            let Some((_, cur, succ)) = self.find(target) else {
                return false;
            };
            self.next(node).store(succ, Ordering::Relaxed);
            if self.cas(cur, succ, node) {
                return true;
            }
            thread::yield_now();
        }
    }

    /// The values from the head after unlinking every marked node (quiescent).
    fn cleanup_values(&self) -> Vec<u32> {
        let (mut prev, mut cur) = (0, self.next(0).load(Ordering::Acquire) & !MARK);
        let mut out = Vec::new();
        while cur != 0 {
            let cn = self.next(cur).load(Ordering::Acquire);
            if cn & MARK != 0 {
                self.next(prev).store(cn & !MARK, Ordering::Relaxed);
            } else {
                out.push(self.value[(cur / 2) as usize].load(Ordering::Relaxed));
                prev = cur;
            }
            cur = cn & !MARK;
            assert!(out.len() <= 4, "the list has a cycle");
        }
        out
    }
}

/// head -> A(10) -> B(20) -> C(30); node 8 is free for an insert of 25.
fn abc() -> Arc<List> {
    Arc::new(List {
        next: [
            AtomicU32::new(2),
            AtomicU32::new(4),
            AtomicU32::new(6),
            AtomicU32::new(0),
            AtomicU32::new(0),
        ],
        value: [
            AtomicU32::new(0),
            AtomicU32::new(10),
            AtomicU32::new(20),
            AtomicU32::new(30),
            AtomicU32::new(25),
        ],
    })
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

#[test]
fn harris_removes_adjacent_nodes() {
    model(|| {
        let l = abc();
        let l1 = l.clone();
        let t = thread::spawn(move || l1.remove(20));
        assert!(l.remove(10));
        assert!(t.join().unwrap());
        assert_eq!(l.cleanup_values(), vec![30]);
    });
}

#[test]
fn harris_inserts_next_to_a_node_being_removed() {
    model(|| {
        let l = abc();
        let l1 = l.clone();
        let t = thread::spawn(move || l1.remove(20));
        let ins = l.insert_after(20, 8);
        assert!(t.join().unwrap());
        // The insert took effect before B's removal (25 stands before 30) or failed.
        let want: Vec<u32> = if ins { vec![10, 25, 30] } else { vec![10, 30] };
        assert_eq!(l.cleanup_values(), want);
    });
}

#[test]
fn harris_removes_the_node_an_insert_lands_after() {
    model(|| {
        let l = abc();
        let l1 = l.clone();
        let t = thread::spawn(move || l1.remove(10));
        let ins = l.insert_after(10, 8);
        assert!(t.join().unwrap());
        let want: Vec<u32> = if ins { vec![25, 20, 30] } else { vec![20, 30] };
        assert_eq!(l.cleanup_values(), want);
    });
}
