//! The concurrent modes' transaction on the host: the same protocol as `kernels/rbtree_update.cl`'s
//! `rb_tx` (read the section comment there for the whole argument), so CPU threads and
//! work-items can change one tree under one locking discipline.
//!
//! A transaction reads nodes into private slots (each node's version first, with `Acquire`,
//! then its colour and links, `Relaxed`), runs the textbook insert or delete with its fix-up
//! on the slots, then commits: it locks every node it changes in increasing handle order by
//! a compare-and-swap from the version it read to `version | 1` (`AcqRel`), then checks that
//! every node it only read is unlocked at the version it read (`Acquire`; TL2's read-set
//! validation; a `SeqCst` fence between the locks and that check, see `finish`), so a node
//! another party changed or holds fails the commit, which then drops
//! what it took and leaves the operation for the next round. Past that, what it read is
//! current; it writes the changed slots (`Relaxed`) and releases each lock with a `Release`
//! store of the version plus 2. Locks are only ever tried, never waited for.

use std::sync::atomic::{AtomicU32, Ordering};

use super::N_LOCK;
use super::{H_ROOT, NIL, NODE_WORDS, N_COLOUR, N_LEFT, N_PARENT, N_RIGHT, RED};
use crate::arena::ArenaView;

/// Nodes one transaction may read. A delete of a node far above its successor reads the path
/// down to it, then a fix-up may climb back, reading four nodes a level: at 40 slots 1.5 % of
/// the deletes of a random 200,000-key tree needed more, at 64 0.04 % of those of a
/// 4-million-key tree (H100). More is left to the host path.
pub(super) const TX_SLOTS: usize = 128;
/// Longest walk or fix-up climb (the device search's bound).
const MAX_STEPS: u32 = super::MAX_DEPTH;

const CONFLICT: u8 = 1;
const OVERFLOW: u8 = 2;
const IMPOSSIBLE: u8 = 4;

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Written to the tree.
    Committed,
    /// Another party changed or held a node it read: retry after a fresh locate.
    Conflict,
    /// It needs more than [`TX_SLOTS`] nodes: the host path finishes it.
    Overflow,
    /// It read a link no red-black tree has, and no version moved: the tree is damaged.
    Damaged,
}

pub(super) struct Tx<'a> {
    view: ArenaView<'a>,
    header: u32,
    n: usize,
    dirty: [bool; TX_SLOTS],
    bad: u8,
    node: [u32; TX_SLOTS],
    /// Each slot's node's words in the arena.
    refs: [&'a [AtomicU32]; TX_SLOTS],
    ver: [u32; TX_SLOTS],
    /// Words N_COLOUR..=N_PARENT of each node.
    word: [[u32; 4]; TX_SLOTS],
}

fn node_words<'a>(view: &ArenaView<'a>, node: u32) -> Option<&'a [AtomicU32]> {
    if node == NIL {
        return None;
    }
    view.words(node, NODE_WORDS)
}

impl<'a> Tx<'a> {
    pub(super) fn new(view: ArenaView<'a>, header: u32) -> Self {
        Tx {
            view,
            header,
            n: 0,
            dirty: [false; TX_SLOTS],
            bad: 0,
            node: [NIL; TX_SLOTS],
            refs: [&[]; TX_SLOTS],
            ver: [0; TX_SLOTS],
            word: [[0; 4]; TX_SLOTS],
        }
    }

    /// Empties the transaction for the next operation (the slots are overwritten as they
    /// fill, so one `Tx` serves a thread's whole share without clearing 5 KiB each time).
    pub(super) fn reset(&mut self) {
        self.n = 0;
        self.bad = 0;
    }

    fn slot(&mut self, node: u32) -> Option<usize> {
        if let Some(s) = self.node[..self.n].iter().position(|&x| x == node) {
            return Some(s);
        }
        let Some(words) = node_words(&self.view, node) else {
            self.bad |= IMPOSSIBLE;
            return None;
        };
        if self.n == TX_SLOTS {
            self.bad |= OVERFLOW;
            return None;
        }
        let v = words[N_LOCK].load(Ordering::Acquire);
        if v & 1 != 0 {
            self.bad |= CONFLICT;
            return None;
        }
        let s = self.n;
        self.n += 1;
        self.node[s] = node;
        self.dirty[s] = false;
        self.refs[s] = words;
        self.ver[s] = v;
        for (w, slot) in self.word[s].iter_mut().enumerate() {
            *slot = words[N_COLOUR + w].load(Ordering::Relaxed);
        }
        Some(s)
    }

    fn get(&mut self, node: u32, field: usize) -> u32 {
        match self.slot(node) {
            Some(s) => self.word[s][field - N_COLOUR],
            None => NIL,
        }
    }

    fn set(&mut self, node: u32, field: usize, v: u32) {
        if let Some(s) = self.slot(node) {
            self.word[s][field - N_COLOUR] = v;
            self.dirty[s] = true;
        }
    }

    fn red(&mut self, node: u32) -> bool {
        node != NIL && self.get(node, N_COLOUR) == RED
    }

    fn paint(&mut self, node: u32, red: bool) {
        self.set(node, N_COLOUR, if red { RED } else { 0 });
    }

    fn transplant(&mut self, u: u32, v: u32) {
        let p = self.get(u, N_PARENT);
        if p == NIL {
            self.set(self.header, H_ROOT, v);
        } else if u == self.get(p, N_LEFT) {
            self.set(p, N_LEFT, v);
        } else {
            self.set(p, N_RIGHT, v);
        }
        if v != NIL {
            self.set(v, N_PARENT, p);
        }
    }

    fn rotate(&mut self, x: u32, left: bool) {
        let (near, far) = if left {
            (N_LEFT, N_RIGHT)
        } else {
            (N_RIGHT, N_LEFT)
        };
        let y = self.get(x, far);
        let inner = self.get(y, near);
        self.set(x, far, inner);
        if inner != NIL {
            self.set(inner, N_PARENT, x);
        }
        self.transplant(x, y);
        self.set(y, near, x);
        self.set(x, N_PARENT, y);
    }

    /// Links the fresh node `z` (written whole, red, its parent set) under `node`'s `link`
    /// (the header's left for an empty tree), which the locate saw NIL, and rebalances. The
    /// gap is still the locate's while the link is NIL, even if the node changed since:
    /// rotations keep the key order and no other key of this gap runs in this round.
    pub(super) fn insert(&mut self, node: u32, link: usize, z: u32) {
        if let Some(s) = self.slot(node) {
            if self.word[s][link - N_COLOUR] != NIL {
                self.bad |= CONFLICT;
            }
        }
        self.set(node, link, z);
        self.slot(z);
        self.insert_fixup(z);
    }

    fn insert_fixup(&mut self, mut z: u32) {
        let mut guard = 0;
        while guard < MAX_STEPS && self.bad == 0 {
            guard += 1;
            let mut p = self.get(z, N_PARENT);
            if !self.red(p) {
                break;
            }
            let g = self.get(p, N_PARENT);
            let p_left = p == self.get(g, N_LEFT);
            let uncle = self.get(g, if p_left { N_RIGHT } else { N_LEFT });
            if self.red(uncle) {
                self.paint(p, false);
                self.paint(uncle, false);
                self.paint(g, true);
                z = g;
                continue;
            }
            if z == self.get(p, if p_left { N_RIGHT } else { N_LEFT }) {
                self.rotate(p, p_left);
                std::mem::swap(&mut z, &mut p);
            }
            self.paint(p, false);
            self.paint(g, true);
            self.rotate(g, !p_left);
            break;
        }
        if self.get(z, N_PARENT) == NIL {
            self.paint(z, false);
        }
    }

    /// Removes `z` (the locate found the key there) and rebalances. Nodes never trade keys
    /// and only this operation deletes the key, so `z` holds it whatever changed since.
    pub(super) fn delete(&mut self, z: u32) {
        let Some(zs) = self.slot(z) else { return };
        // z leaves the tree: its version moves, so no transaction that read it commits.
        self.dirty[zs] = true;
        let (zl, zr) = (self.get(z, N_LEFT), self.get(z, N_RIGHT));
        let mut removed_red = self.red(z);
        let (x, x_parent);
        if zl == NIL {
            x = zr;
            x_parent = self.get(z, N_PARENT);
            self.transplant(z, zr);
        } else if zr == NIL {
            x = zl;
            x_parent = self.get(z, N_PARENT);
            self.transplant(z, zl);
        } else {
            let mut y = zr;
            for _ in 0..MAX_STEPS {
                let l = self.get(y, N_LEFT);
                if l == NIL || self.bad != 0 {
                    break;
                }
                y = l;
            }
            removed_red = self.red(y);
            x = self.get(y, N_RIGHT);
            if self.get(y, N_PARENT) == z {
                x_parent = y;
            } else {
                x_parent = self.get(y, N_PARENT);
                self.transplant(y, x);
                self.set(y, N_RIGHT, zr);
                self.set(zr, N_PARENT, y);
            }
            self.transplant(z, y);
            self.set(y, N_LEFT, zl);
            self.set(zl, N_PARENT, y);
            let colour = self.get(z, N_COLOUR);
            self.set(y, N_COLOUR, colour);
        }
        if !removed_red {
            self.delete_fixup(x, x_parent);
        }
    }

    /// The textbook fix-up without reading the root (it stays black through every case, so
    /// case 4 just ends the loop).
    fn delete_fixup(&mut self, mut x: u32, mut parent: u32) {
        for _ in 0..MAX_STEPS {
            if self.bad != 0 || parent == NIL || self.red(x) {
                break;
            }
            let x_left = x == self.get(parent, N_LEFT);
            let (near, far) = if x_left {
                (N_LEFT, N_RIGHT)
            } else {
                (N_RIGHT, N_LEFT)
            };
            let mut w = self.get(parent, far);
            if self.red(w) {
                self.paint(w, false);
                self.paint(parent, true);
                self.rotate(parent, x_left);
                w = self.get(parent, far);
            }
            let (w_near, w_far) = (self.get(w, near), self.get(w, far));
            if !self.red(w_near) && !self.red(w_far) {
                self.paint(w, true);
                x = parent;
                parent = self.get(x, N_PARENT);
                continue;
            }
            if !self.red(w_far) {
                self.paint(w_near, false);
                self.paint(w, true);
                self.rotate(w, !x_left);
                w = self.get(parent, far);
            }
            let colour = self.get(parent, N_COLOUR);
            self.set(w, N_COLOUR, colour);
            self.paint(parent, false);
            let wf = self.get(w, far);
            if wf != NIL {
                self.paint(wf, false);
            }
            self.rotate(parent, x_left);
            return;
        }
        if x != NIL {
            self.paint(x, false);
        }
    }

    fn lock_word(&self, s: usize) -> &'a AtomicU32 {
        &self.refs[s][N_LOCK]
    }

    fn current(&self) -> bool {
        (0..self.n).all(|s| self.lock_word(s).load(Ordering::Acquire) == self.ver[s])
    }

    /// Commits (see the module comment) and says how the transaction ended.
    pub(super) fn finish(&mut self) -> Outcome {
        // A read that met a held lock returned NIL, so impossible links may follow it; so
        // may reads of a snapshot that moved on (some version changed since).
        if self.bad & CONFLICT != 0 || (self.bad != 0 && !self.current()) {
            return Outcome::Conflict;
        }
        // After an overflow every further read was NIL, so impossible links may follow.
        if self.bad & OVERFLOW != 0 {
            return Outcome::Overflow;
        }
        if self.bad & IMPOSSIBLE != 0 {
            return Outcome::Damaged;
        }
        let changed = |s: usize| self.dirty[s];
        // The changed slots in increasing handle order (insertion sort: a handful of slots).
        let mut order = [0u8; TX_SLOTS];
        let mut w = 0;
        for s in (0..self.n).filter(|&s| changed(s)) {
            let mut j = w;
            while j > 0 && self.node[order[j - 1] as usize] > self.node[s] {
                order[j] = order[j - 1];
                j -= 1;
            }
            order[j] = s as u8;
            w += 1;
        }
        let order = &order[..w];
        let release = |taken: &[u8]| {
            for &j in taken {
                let j = j as usize;
                self.lock_word(j).store(self.ver[j], Ordering::Release);
            }
        };
        for k in 0..order.len() {
            let s = order[k] as usize;
            let taken = self.lock_word(s).compare_exchange(
                self.ver[s],
                self.ver[s] | 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
            if taken.is_err() {
                release(&order[..k]);
                return Outcome::Conflict;
            }
        }
        // Between taking the locks and checking the nodes only read, a sequentially
        // consistent fence: with acquire/release alone, two transactions that each lock one
        // node and read the other's may both read the other's node as it was before the
        // other's lock (store buffering), and both commit a write skew (loom_rbtree.rs
        // finds it without the fence).
        std::sync::atomic::fence(Ordering::SeqCst);
        // Nodes only read: unlocked at the version read (TL2's read-set validation).
        let read_current = (0..self.n)
            .all(|s| changed(s) || self.lock_word(s).load(Ordering::Acquire) == self.ver[s]);
        if !read_current {
            release(order);
            return Outcome::Conflict;
        }
        for &s in order {
            let s = s as usize;
            for (w, &v) in self.word[s].iter().enumerate() {
                self.refs[s][N_COLOUR + w].store(v, Ordering::Relaxed);
            }
        }
        for &s in order {
            let s = s as usize;
            self.lock_word(s)
                .store(self.ver[s].wrapping_add(2), Ordering::Release);
        }
        Outcome::Committed
    }
}
