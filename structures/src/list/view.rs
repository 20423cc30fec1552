//! The host half of the lock-free list: Harris's algorithm on host atomics over the arena,
//! step for step the kernel's (`kernels/list.cl`, whose header comment has the correctness
//! and reclamation argument).
//!
//! Memory-ordering rules: a node's value and next word are stored `Relaxed` before the
//! linking compare-and-swap, which is `AcqRel` (release publishes them); next words are loaded
//! with `Acquire` before the node they name is read. Marking a next word is a CAS on it, so a
//! marked word is never overwritten (every CAS on a next word expects an unmarked value).

use std::sync::atomic::{AtomicU32, Ordering};

use asym_runtime::{Error, Result};

use super::{ListOp, LF_NODE_BYTES, LF_RETRIES, LF_VALUE};
use super::{OpStatus, LF_FIRST, LF_NEXT, LF_RETIRE, LF_RETIRED, LF_RETIRED_N};
use crate::arena::ArenaView;

use super::{LF_MARK as MARK, LF_MAX_RETRIES as MAX_RETRIES};

fn marked(p: u32) -> bool {
    p & MARK != 0
}

fn unmarked(p: u32) -> u32 {
    p & !MARK
}

/// Host access to a list for CPU threads: the list's operations on host atomics. Cheap to
/// copy; every thread may hold one (see [`super::LockFreeList::view`] and
/// [`super::ListMap::view`]). Keep to the operations of the list's kind
/// ([`super::LockFreeList::apply`] checks them; here an ordered-set insert into a positional
/// list would just put the key where the order says, which means nothing there).
#[derive(Clone, Copy, Debug)]
pub struct ListView<'a> {
    pub(super) arena: ArenaView<'a>,
    pub(super) root: u32,
    pub(super) max_steps: u32,
}

/// One operation's bookkeeping: lost CASes, counted into the root once at the end.
struct Op<'v, 'a> {
    l: &'v ListView<'a>,
    retries: u32,
}

impl Drop for Op<'_, '_> {
    fn drop(&mut self) {
        if self.retries != 0 {
            if let Ok(w) = self.l.word(self.l.root, LF_RETRIES) {
                w.fetch_add(self.retries, Ordering::Relaxed);
            }
        }
    }
}

fn bound(what: &str) -> Error {
    Error::corrupted(
        "the lock-free list",
        format!(
            "the lock-free list's {what} passed its bound (a cycle in the list, or a livelock)"
        ),
    )
}

impl<'a> ListView<'a> {
    /// The arena the list's nodes come from.
    pub fn arena(&self) -> ArenaView<'a> {
        self.arena
    }

    pub(super) fn word(&self, node: u32, i: usize) -> Result<&'a AtomicU32> {
        self.arena.word(node, i).ok_or_else(|| {
            Error::corrupted(
                "the lock-free list",
                format!("the lock-free list links to handle {node}, outside its arena"),
            )
        })
    }

    pub(super) fn next(&self, node: u32) -> Result<u32> {
        Ok(self.word(node, LF_NEXT)?.load(Ordering::Acquire))
    }

    pub(super) fn value(&self, node: u32) -> Result<i32> {
        Ok(self.word(node, LF_VALUE)?.load(Ordering::Relaxed) as i32)
    }

    /// Applies one operation of either kind (the caller checked it fits the list's kind).
    /// `hint` (a thread number) spreads the allocator's shards.
    pub fn apply(&self, op: ListOp, hint: usize) -> Result<OpStatus> {
        match op {
            ListOp::RemoveValue(v) => self.remove_value(v),
            ListOp::InsertAfter { target, value } => self.insert_after(target, value, hint),
            ListOp::Insert(k) => self.insert(k, hint),
            ListOp::Remove(k) => self.remove(k),
            ListOp::Contains(k) => self.contains(k),
        }
    }

    /// Ordered set: inserts `key` unless present.
    pub fn insert(&self, key: i32, hint: usize) -> Result<OpStatus> {
        self.link(key, hint, "insert", |op| {
            let (left, right) = op.search(key)?;
            Ok((right == 0 || op.l.value(right)? != key).then_some((left, right)))
        })
    }

    /// Links a new node holding `value` between the (predecessor, successor) that `place`
    /// finds (`None`: the operation fails), by a CAS on the predecessor's next word, retrying
    /// with a fresh `place` when the CAS loses. The node is allocated once a place is found
    /// (as in the kernel: most of the seed's inserts name a removed target), kept across
    /// retries, and freed unpublished if the place disappears.
    fn link(
        &self,
        value: i32,
        hint: usize,
        what: &str,
        mut place: impl FnMut(&mut Op<'_, 'a>) -> Result<Option<(u32, u32)>>,
    ) -> Result<OpStatus> {
        let mut op = self.op();
        let mut node = 0;
        for _ in 0..MAX_RETRIES {
            let Some((pred, succ)) = place(&mut op)? else {
                if node != 0 {
                    self.arena.free(node, hint)?; // never published
                }
                return Ok(OpStatus::Failed);
            };
            if node == 0 {
                let Some(n) = op.new_node(value, hint)? else {
                    return Ok(OpStatus::OutOfMemory);
                };
                node = n;
            }
            self.word(node, LF_NEXT)?.store(succ, Ordering::Relaxed);
            if op.cas_next(pred, succ, node)? {
                return Ok(OpStatus::Done);
            }
        }
        Err(bound(what))
    }

    /// Ordered set: removes `key` if present.
    pub fn remove(&self, key: i32) -> Result<OpStatus> {
        let mut op = self.op();
        for _ in 0..MAX_RETRIES {
            let (left, right) = op.search(key)?;
            if right == 0 || self.value(right)? != key {
                return Ok(OpStatus::Failed);
            }
            let rn = self.next(right)?;
            if marked(rn) {
                continue;
            }
            if op.cas_next(right, rn, rn | MARK)? {
                if op.cas_next(left, right, rn)? {
                    op.retire(right)?;
                } else {
                    op.search(key)?; // unlinks it
                }
                return Ok(OpStatus::Done);
            }
        }
        Err(bound("remove"))
    }

    /// Ordered set: whether `key` is present (no CAS: a walk that steps over marked nodes).
    pub fn contains(&self, key: i32) -> Result<OpStatus> {
        let mut t = unmarked(self.next(self.root)?);
        let mut steps = 0;
        while t != 0 && self.value(t)? < key {
            t = unmarked(self.next(t)?);
            steps += 1;
            if steps > self.max_steps {
                return Err(bound("walk"));
            }
        }
        let present = t != 0 && self.value(t)? == key && !marked(self.next(t)?);
        Ok(if present {
            OpStatus::Done
        } else {
            OpStatus::Failed
        })
    }

    /// Positional list: inserts `value` right after the first node holding `target`
    /// (`Failed` when no node holds it).
    pub fn insert_after(&self, target: i32, value: i32, hint: usize) -> Result<OpStatus> {
        self.link(value, hint, "insert-after", |op| {
            Ok(op.l.find_value(target)?.map(|(_, cur, succ)| (cur, succ)))
        })
    }

    /// Positional list: removes the first node holding `value` (`Failed` when none does).
    pub fn remove_value(&self, value: i32) -> Result<OpStatus> {
        let mut op = self.op();
        for _ in 0..MAX_RETRIES {
            let Some((prev, cur, succ)) = self.find_value(value)? else {
                return Ok(OpStatus::Failed);
            };
            if op.cas_next(cur, succ, succ | MARK)? {
                if op.cas_next(prev, cur, succ)? {
                    op.retire(cur)?;
                }
                return Ok(OpStatus::Done);
            }
        }
        Err(bound("remove-by-value"))
    }

    /// The first unmarked node holding `value`: (predecessor, node, successor as read).
    fn find_value(&self, value: i32) -> Result<Option<(u32, u32, u32)>> {
        let mut p = self.root;
        let mut cur = unmarked(self.next(p)?);
        let mut steps = 0;
        while cur != 0 {
            let cn = self.next(cur)?;
            if !marked(cn) && self.value(cur)? == value {
                return Ok(Some((p, cur, cn)));
            }
            p = cur;
            cur = unmarked(cn);
            steps += 1;
            if steps > self.max_steps {
                return Err(bound("walk"));
            }
        }
        Ok(None)
    }

    fn op(&self) -> Op<'_, 'a> {
        Op {
            l: self,
            retries: 0,
        }
    }

    pub(super) fn retired_count(&self) -> Result<u32> {
        Ok(self.word(self.root, LF_RETIRED_N)?.load(Ordering::Relaxed))
    }

    pub(super) fn first(&self) -> Result<u32> {
        Ok(self.word(self.root, LF_FIRST)?.load(Ordering::Acquire))
    }
}

impl Op<'_, '_> {
    fn cas_next(&mut self, node: u32, expected: u32, desired: u32) -> Result<bool> {
        let ok = self
            .l
            .word(node, LF_NEXT)?
            .compare_exchange(expected, desired, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if !ok {
            self.retries += 1;
        }
        Ok(ok)
    }

    fn new_node(&mut self, value: i32, hint: usize) -> Result<Option<u32>> {
        match self.l.arena.malloc(LF_NODE_BYTES, hint) {
            Ok(n) => {
                self.l
                    .word(n, LF_VALUE)?
                    .store(value as u32, Ordering::Relaxed);
                self.l.word(n, LF_RETIRE)?.store(0, Ordering::Relaxed);
                Ok(Some(n))
            }
            Err(Error::OutOfMemory(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Pushes an unlinked node on the retire stack (push-only while operations run).
    fn retire(&mut self, node: u32) -> Result<()> {
        let top = self.l.word(self.l.root, LF_RETIRED)?;
        let link = self.l.word(node, LF_RETIRE)?;
        let mut h = top.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            link.store(h, Ordering::Relaxed);
            match top.compare_exchange_weak(h, node, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.l
                        .word(self.l.root, LF_RETIRED_N)?
                        .fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(now) => h = now,
            }
        }
        Err(bound("retire push"))
    }

    /// Harris's search: (left, right) adjacent, right the first unmarked node with value ≥
    /// `key` (0 at the end), unlinking (and retiring) the marked nodes between them.
    fn search(&mut self, key: i32) -> Result<(u32, u32)> {
        let l = self.l;
        'again: for _ in 0..MAX_RETRIES {
            let mut t = l.root;
            let mut t_next = l.next(t)?;
            let mut left = t;
            let mut left_next = t_next;
            let mut steps = 0;
            loop {
                if !marked(t_next) {
                    left = t;
                    left_next = t_next;
                }
                t = unmarked(t_next);
                if t == 0 {
                    break;
                }
                t_next = l.next(t)?;
                steps += 1;
                if steps > l.max_steps {
                    return Err(bound("search"));
                }
                if !marked(t_next) && l.value(t)? >= key {
                    break;
                }
            }
            let right = t;
            if left_next == right {
                if right != 0 && marked(l.next(right)?) {
                    continue 'again;
                }
                return Ok((left, right));
            }
            if self.cas_next(left, left_next, right)? {
                let mut n = left_next;
                while n != right && n != 0 {
                    let nn = unmarked(l.next(n)?);
                    self.retire(n)?;
                    n = nn;
                }
                if right != 0 && marked(l.next(right)?) {
                    continue 'again;
                }
                return Ok((left, right));
            }
        }
        Err(bound("search"))
    }
}
