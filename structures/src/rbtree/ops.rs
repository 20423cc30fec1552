//! The host path of the tree's operations: one operation at a time, on the arena's words
//! through an [`ArenaView`] (the tree is mapped to the host for the whole batch, so plain
//! `Relaxed` loads and stores suffice: nothing else touches the nodes meanwhile).
//!
//! The algorithms are the textbook ones (Cormen et al., chapter 13) with [`NIL`] links in
//! place of the sentinel node: a NIL child counts as black, and deletion carries the parent
//! of the child it moves up, since that child may be NIL and so have no parent word. Every
//! link is bounds-checked against the arena, so a damaged tree is an error, not a panic.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use asym_runtime::{Error, Result};

use super::{Deleted, Inserted, H_COUNT, H_ROOT, NIL, NODE_BYTES, NODE_WORDS, RED};
use super::{N_COLOUR, N_KEY, N_LEFT, N_PARENT, N_RIGHT, N_VALUE_HI, N_VALUE_LO};
use crate::arena::ArenaView;

/// The tree's nodes as the host sees them during a batch.
pub(crate) struct Nodes<'a> {
    view: ArenaView<'a>,
    header: u32,
}

impl<'a> Nodes<'a> {
    pub(crate) fn new(view: ArenaView<'a>, header: u32) -> Result<Self> {
        let nodes = Nodes { view, header };
        nodes.word(header, H_COUNT)?;
        Ok(nodes)
    }

    fn word(&self, node: u32, field: usize) -> Result<&'a AtomicU32> {
        if node == NIL {
            return Err(Error::corrupted(
                "the red-black tree",
                format!("the tree followed a NIL link to word {field}"),
            ));
        }
        self.view.word(node, field).ok_or_else(|| {
            Error::corrupted(
                "the red-black tree",
                format!("tree node {node} lies outside the arena: a damaged link"),
            )
        })
    }

    pub(crate) fn get(&self, node: u32, field: usize) -> Result<u32> {
        Ok(self.word(node, field)?.load(Relaxed))
    }

    fn set(&self, node: u32, field: usize, value: u32) -> Result<()> {
        self.word(node, field)?.store(value, Relaxed);
        Ok(())
    }

    pub(crate) fn root(&self) -> Result<u32> {
        self.get(self.header, H_ROOT)
    }

    fn set_root(&self, node: u32) -> Result<()> {
        self.set(self.header, H_ROOT, node)
    }

    pub(crate) fn count(&self) -> u32 {
        self.get(self.header, H_COUNT).unwrap_or(0)
    }

    pub(crate) fn key(&self, node: u32) -> Result<i32> {
        Ok(self.get(node, N_KEY)? as i32)
    }

    pub(crate) fn value(&self, node: u32) -> Result<u64> {
        Ok(u64::from(self.get(node, N_VALUE_LO)?) | u64::from(self.get(node, N_VALUE_HI)?) << 32)
    }

    fn set_value(&self, node: u32, value: u64) -> Result<()> {
        self.set(node, N_VALUE_LO, value as u32)?;
        self.set(node, N_VALUE_HI, (value >> 32) as u32)
    }

    pub(crate) fn left(&self, node: u32) -> Result<u32> {
        self.get(node, N_LEFT)
    }

    pub(crate) fn right(&self, node: u32) -> Result<u32> {
        self.get(node, N_RIGHT)
    }

    pub(crate) fn parent(&self, node: u32) -> Result<u32> {
        self.get(node, N_PARENT)
    }

    /// Whether `node` is red (NIL is black).
    pub(crate) fn is_red(&self, node: u32) -> Result<bool> {
        Ok(node != NIL && self.get(node, N_COLOUR)? == RED)
    }

    fn paint(&self, node: u32, red: bool) -> Result<()> {
        self.set(node, N_COLOUR, if red { RED } else { 0 })
    }

    /// The node holding `key`, or NIL.
    fn find(&self, key: i32) -> Result<u32> {
        let mut x = self.root()?;
        while x != NIL {
            let k = self.key(x)?;
            x = match key.cmp(&k) {
                std::cmp::Ordering::Less => self.left(x)?,
                std::cmp::Ordering::Greater => self.right(x)?,
                std::cmp::Ordering::Equal => return Ok(x),
            };
        }
        Ok(NIL)
    }

    pub(crate) fn search(&self, key: i32) -> Result<Option<u64>> {
        let x = self.find(key)?;
        if x == NIL {
            Ok(None)
        } else {
            self.value(x).map(Some)
        }
    }

    /// The node with the smallest key not below `key`, or NIL.
    fn lower_bound_node(&self, key: i32) -> Result<u32> {
        let (mut x, mut best) = (self.root()?, NIL);
        while x != NIL {
            if self.key(x)? >= key {
                best = x;
                x = self.left(x)?;
            } else {
                x = self.right(x)?;
            }
        }
        Ok(best)
    }

    pub(crate) fn lower_bound(&self, key: i32) -> Result<Option<(i32, u64)>> {
        let x = self.lower_bound_node(key)?;
        if x == NIL {
            return Ok(None);
        }
        Ok(Some((self.key(x)?, self.value(x)?)))
    }

    /// The next node in key order, or NIL.
    fn successor(&self, mut x: u32) -> Result<u32> {
        let r = self.right(x)?;
        if r != NIL {
            return self.minimum(r);
        }
        let mut p = self.parent(x)?;
        while p != NIL && x == self.right(p)? {
            x = p;
            p = self.parent(p)?;
        }
        Ok(p)
    }

    fn minimum(&self, mut x: u32) -> Result<u32> {
        loop {
            let l = self.left(x)?;
            if l == NIL {
                return Ok(x);
            }
            x = l;
        }
    }

    pub(crate) fn range_count(&self, lo: i32, hi: i32) -> Result<usize> {
        let mut x = self.lower_bound_node(lo)?;
        let mut n = 0usize;
        let bound = self.count() as usize;
        while x != NIL && self.key(x)? <= hi {
            n += 1;
            if n > bound {
                return Err(Error::corrupted(
                    "the red-black tree",
                    "the tree's key order has a cycle",
                ));
            }
            x = self.successor(x)?;
        }
        Ok(n)
    }

    pub(crate) fn in_order(&self) -> Result<Vec<(i32, u64)>> {
        let bound = self.count() as usize;
        let mut out = Vec::with_capacity(bound);
        let root = self.root()?;
        let mut x = if root == NIL {
            NIL
        } else {
            self.minimum(root)?
        };
        while x != NIL {
            if out.len() >= bound {
                return Err(Error::corrupted(
                    "the red-black tree",
                    "the tree holds more nodes than its count says",
                ));
            }
            out.push((self.key(x)?, self.value(x)?));
            x = self.successor(x)?;
        }
        Ok(out)
    }

    /// Puts `v` where `u` was under `u`'s parent (`v` may be NIL).
    fn transplant(&self, u: u32, v: u32) -> Result<()> {
        let p = self.parent(u)?;
        if p == NIL {
            self.set_root(v)?;
        } else if u == self.left(p)? {
            self.set(p, N_LEFT, v)?;
        } else {
            self.set(p, N_RIGHT, v)?;
        }
        if v != NIL {
            self.set(v, N_PARENT, p)?;
        }
        Ok(())
    }

    /// Rotates `x` down to the left (`left` true) or right, its child on the other side up.
    fn rotate(&self, x: u32, left: bool) -> Result<()> {
        let (near, far) = if left {
            (N_LEFT, N_RIGHT)
        } else {
            (N_RIGHT, N_LEFT)
        };
        let y = self.get(x, far)?;
        let inner = self.get(y, near)?;
        self.set(x, far, inner)?;
        if inner != NIL {
            self.set(inner, N_PARENT, x)?;
        }
        self.transplant(x, y)?;
        self.set(y, near, x)?;
        self.set(x, N_PARENT, y)
    }

    pub(crate) fn insert(&self, key: i32, value: u64) -> Result<Inserted> {
        let (mut parent, mut x) = (NIL, self.root()?);
        let mut go_left = false;
        while x != NIL {
            let k = self.key(x)?;
            if key == k {
                self.set_value(x, value)?;
                return Ok(Inserted::Updated);
            }
            parent = x;
            go_left = key < k;
            x = if go_left {
                self.left(x)?
            } else {
                self.right(x)?
            };
        }
        let z = self.view.malloc(NODE_BYTES, z_hint(key))?;
        for i in 0..NODE_WORDS {
            self.set(z, i, 0)?;
        }
        self.set(z, N_KEY, key as u32)?;
        self.set_value(z, value)?;
        self.set(z, N_PARENT, parent)?;
        self.paint(z, true)?;
        if parent == NIL {
            self.set_root(z)?;
        } else if go_left {
            self.set(parent, N_LEFT, z)?;
        } else {
            self.set(parent, N_RIGHT, z)?;
        }
        self.set(self.header, H_COUNT, self.count() + 1)?;
        self.insert_fixup(z)?;
        Ok(Inserted::New)
    }

    fn insert_fixup(&self, mut z: u32) -> Result<()> {
        loop {
            let p = self.parent(z)?;
            if !self.is_red(p)? {
                break;
            }
            // A red parent is never the root, so the grandparent exists.
            let g = self.parent(p)?;
            let p_is_left = p == self.left(g)?;
            let uncle = if p_is_left {
                self.right(g)?
            } else {
                self.left(g)?
            };
            if self.is_red(uncle)? {
                self.paint(p, false)?;
                self.paint(uncle, false)?;
                self.paint(g, true)?;
                z = g;
                continue;
            }
            let z_is_inner = if p_is_left {
                z == self.right(p)?
            } else {
                z == self.left(p)?
            };
            let mut p = p;
            if z_is_inner {
                self.rotate(p, p_is_left)?;
                std::mem::swap(&mut z, &mut p);
            }
            self.paint(p, false)?;
            self.paint(g, true)?;
            self.rotate(g, !p_is_left)?;
            break;
        }
        let root = self.root()?;
        self.paint(root, false)
    }

    pub(crate) fn delete(&self, key: i32) -> Result<Deleted> {
        let z = self.find(key)?;
        if z == NIL {
            return Ok(Deleted::Missing);
        }
        let (zl, zr) = (self.left(z)?, self.right(z)?);
        let mut removed_red = self.is_red(z)?;
        // x moves into the removed position; x_parent is its parent afterwards (x may be NIL).
        let (x, x_parent);
        if zl == NIL {
            x = zr;
            x_parent = self.parent(z)?;
            self.transplant(z, zr)?;
        } else if zr == NIL {
            x = zl;
            x_parent = self.parent(z)?;
            self.transplant(z, zl)?;
        } else {
            let y = self.minimum(zr)?;
            removed_red = self.is_red(y)?;
            x = self.right(y)?;
            if self.parent(y)? == z {
                x_parent = y;
            } else {
                x_parent = self.parent(y)?;
                self.transplant(y, x)?;
                self.set(y, N_RIGHT, zr)?;
                self.set(zr, N_PARENT, y)?;
            }
            self.transplant(z, y)?;
            self.set(y, N_LEFT, zl)?;
            self.set(zl, N_PARENT, y)?;
            self.set(y, N_COLOUR, self.get(z, N_COLOUR)?)?;
        }
        if !removed_red {
            self.delete_fixup(x, x_parent)?;
        }
        self.view.free(z, z_hint(key))?;
        self.set(self.header, H_COUNT, self.count().saturating_sub(1))?;
        Ok(Deleted::Removed)
    }

    /// Restores the black heights after a black node left the path through `x` (whose
    /// parent is `parent`; `x` may be NIL, which counts as black). A NIL `x` always has a
    /// non-NIL sibling (the removed black node's sibling subtree had black height ≥ 1), so
    /// `x == left(parent)` tells its side.
    fn delete_fixup(&self, mut x: u32, mut parent: u32) -> Result<()> {
        while parent != NIL && !self.is_red(x)? {
            let x_is_left = x == self.left(parent)?;
            let (near, far) = if x_is_left {
                (N_LEFT, N_RIGHT)
            } else {
                (N_RIGHT, N_LEFT)
            };
            let mut w = self.get(parent, far)?;
            if self.is_red(w)? {
                self.paint(w, false)?;
                self.paint(parent, true)?;
                self.rotate(parent, x_is_left)?;
                w = self.get(parent, far)?;
            }
            let (w_near, w_far) = (self.get(w, near)?, self.get(w, far)?);
            if !self.is_red(w_near)? && !self.is_red(w_far)? {
                self.paint(w, true)?;
                x = parent;
                parent = self.parent(x)?;
                continue;
            }
            if !self.is_red(w_far)? {
                self.paint(w_near, false)?;
                self.paint(w, true)?;
                self.rotate(w, !x_is_left)?;
                w = self.get(parent, far)?;
            }
            self.set(w, N_COLOUR, self.get(parent, N_COLOUR)?)?;
            self.paint(parent, false)?;
            let w_far = self.get(w, far)?;
            if w_far != NIL {
                self.paint(w_far, false)?;
            }
            self.rotate(parent, x_is_left)?;
            x = self.root()?;
            parent = NIL;
        }
        if x != NIL {
            self.paint(x, false)?;
        }
        Ok(())
    }
}

/// The free-list shard a key's node comes from and goes back to (spreads the arena's shards).
fn z_hint(key: i32) -> usize {
    (key as u32).wrapping_mul(0x9e37_79b9) as usize >> 24
}
