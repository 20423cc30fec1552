//! The cache-aligned d-heap (LaMarca and Ladner; the base of the ad-heap seed).
//!
//! A max-heap with `d` children per node. The head is padded by `d - 1` slots so that the `d`
//! children of every node form one aligned block: node `i` lives at `pad + i` with
//! `pad = d - 1`, its children at `d·(i + 1) .. d·(i + 1) + d`. The storage itself starts on a
//! 64-byte boundary, so for 4-byte keys a block is one cache line for d = 16, a part of one for
//! smaller d, and whole lines for d = 32 and 64: a find-max-child touches as few lines as the
//! block's size allows. (The ad-heap keeps its bridge in those padding slots; see `adheap.rs`.)

use asym_runtime::{Error, Result};

/// The arities the heap supports: powers of two from 2 to 64.
pub const SUPPORTED_D: [usize; 6] = [2, 4, 8, 16, 32, 64];

/// Alignment of the storage in bytes (one cache line).
const ALIGN_BYTES: usize = 64;

/// A cache-aligned max-d-heap of `T`; see the module docs.
#[derive(Clone, Debug)]
pub struct DHeap<T> {
    buf: Vec<T>,
    /// Index in `buf` of node 0 (the aligned start plus the `d - 1` padding slots).
    root: usize,
    d: usize,
    len: usize,
    capacity: usize,
}

/// Checks that `d` is one of [`SUPPORTED_D`].
pub fn check_d(d: usize) -> Result<()> {
    if SUPPORTED_D.contains(&d) {
        Ok(())
    } else {
        Err(Error::out_of_range(
            "d =",
            d,
            format!("the d-heap supports d in {SUPPORTED_D:?}"),
        ))
    }
}

impl<T: Copy + Ord + Default> DHeap<T> {
    /// An empty heap of arity `d` with room for `capacity` keys (it grows past that).
    pub fn with_capacity(d: usize, capacity: usize) -> Result<Self> {
        check_d(d)?;
        let mut h = DHeap {
            buf: Vec::new(),
            root: 0,
            d,
            len: 0,
            capacity: 0,
        };
        h.reserve_exact_total(capacity.max(1))?;
        Ok(h)
    }

    /// A heap of arity `d` holding `items` (heapified bottom-up, O(n)).
    pub fn from_slice(d: usize, items: &[T]) -> Result<Self> {
        let mut h = Self::with_capacity(d, items.len())?;
        h.rebuild_from(items);
        Ok(h)
    }

    fn reserve_exact_total(&mut self, capacity: usize) -> Result<()> {
        let elem = std::mem::size_of::<T>().max(1);
        let slack = ALIGN_BYTES / elem + 1;
        let total = capacity
            .checked_add(self.d - 1 + self.d + slack)
            .ok_or_else(|| Error::OutOfMemory(format!("a d-heap of {capacity} keys")))?;
        let mut buf: Vec<T> = Vec::new();
        buf.try_reserve_exact(total)
            .map_err(|_| Error::OutOfMemory(format!("a d-heap of {capacity} keys")))?;
        buf.resize(total, T::default());
        // The first index whose address is 64-byte aligned (the Vec never reallocates: it is
        // only ever indexed, never pushed to).
        let shift = buf.as_ptr().align_offset(ALIGN_BYTES);
        let shift = if shift < slack { shift } else { 0 };
        let root = shift + self.d - 1;
        if self.len > 0 {
            buf[root..root + self.len].copy_from_slice(&self.buf[self.root..self.root + self.len]);
        }
        self.buf = buf;
        self.root = root;
        self.capacity = capacity;
        Ok(())
    }

    /// Arity.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the heap is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keys the heap holds without growing.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Removes every key (keeps the storage).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The keys in heap order (node 0 first).
    pub fn as_slice(&self) -> &[T] {
        &self.buf[self.root..self.root + self.len]
    }

    /// The maximum key.
    pub fn peek(&self) -> Option<T> {
        (self.len > 0).then(|| self.buf[self.root])
    }

    /// Inserts a key (growing the storage when full).
    pub fn push(&mut self, key: T) -> Result<()> {
        if self.len == self.capacity {
            self.reserve_exact_total(self.capacity.saturating_mul(2).max(4))?;
        }
        let mut i = self.len;
        self.len += 1;
        let (r, d) = (self.root, self.d);
        while i > 0 {
            let parent = (i - 1) / d;
            if self.buf[r + parent] >= key {
                break;
            }
            self.buf[r + i] = self.buf[r + parent];
            i = parent;
        }
        self.buf[r + i] = key;
        Ok(())
    }

    /// Removes and returns the maximum key (delete-max).
    pub fn pop(&mut self) -> Option<T> {
        let top = self.peek()?;
        self.len -= 1;
        if self.len > 0 {
            let last = self.buf[self.root + self.len];
            self.sift_down(0, last);
        }
        Some(top)
    }

    /// Update-key on the root: replaces the maximum with `key` and restores the heap (one
    /// find-max-child and compare-and-swap per level), returning the old maximum. On an empty
    /// heap it does nothing and returns `None`.
    #[inline]
    pub fn replace_top(&mut self, key: T) -> Option<T> {
        let top = self.peek()?;
        let (r, len) = (self.root, self.len);
        let heap = &mut self.buf[r..r + len];
        match self.d {
            2 => replace_root_const::<T, 2>(heap, key),
            4 => replace_root_const::<T, 4>(heap, key),
            8 => replace_root_const::<T, 8>(heap, key),
            16 => replace_root_const::<T, 16>(heap, key),
            32 => replace_root_const::<T, 32>(heap, key),
            _ => replace_root_const::<T, 64>(heap, key),
        }
        Some(top)
    }

    /// Replaces the contents with `items`, heapified.
    pub fn rebuild_from(&mut self, items: &[T]) {
        if items.len() > self.capacity {
            // Growth can only fail on allocation, which `Vec` would abort on anyway.
            self.reserve_exact_total(items.len())
                .expect("d-heap growth");
        }
        self.buf[self.root..self.root + items.len()].copy_from_slice(items);
        self.len = items.len();
        if self.len > 1 {
            let last_internal = (self.len - 2) / self.d;
            for i in (0..=last_internal).rev() {
                let key = self.buf[self.root + i];
                self.sift_down(i, key);
            }
        }
    }

    /// Moves the hole at node `i` down, placing `key` where the heap property holds:
    /// find-max-child over one aligned block, then compare-and-swap, level by level. The arity
    /// is dispatched to a const-generic loop so each block scan is unrolled and branch-free.
    #[inline]
    fn sift_down(&mut self, i: usize, key: T) {
        let (r, len) = (self.root, self.len);
        let heap = &mut self.buf[r..r + len];
        match self.d {
            2 => sift_down_const::<T, 2>(heap, i, key),
            4 => sift_down_const::<T, 4>(heap, i, key),
            8 => sift_down_const::<T, 8>(heap, i, key),
            16 => sift_down_const::<T, 16>(heap, i, key),
            32 => sift_down_const::<T, 32>(heap, i, key),
            _ => sift_down_const::<T, 64>(heap, i, key),
        }
    }

    /// Whether every node is at least as large as its children.
    pub fn is_valid(&self) -> bool {
        let s = self.as_slice();
        (1..s.len()).all(|i| s[(i - 1) / self.d] >= s[i])
    }

    /// Whether every node's child block starts on a `min(d · size_of::<T>(), 64)`-byte boundary.
    pub fn blocks_are_aligned(&self) -> bool {
        let block_bytes = (self.d * std::mem::size_of::<T>()).min(ALIGN_BYTES);
        let base = self.buf.as_ptr() as usize + self.root * std::mem::size_of::<T>();
        (0..self.len.div_ceil(self.d).max(1)).all(|i| {
            let child0 = base + (self.d * i + 1) * std::mem::size_of::<T>();
            child0 % block_bytes == 0
        })
    }
}

/// Sift-down in a heap of arity `D` stored from index 0 of `heap` (children of node `i` at
/// `D·i + 1 ..= D·i + D`).
#[inline(always)]
fn sift_down_const<T: Copy + Ord, const D: usize>(heap: &mut [T], mut i: usize, key: T) {
    let len = heap.len();
    loop {
        let first = D * i + 1;
        if first + D <= len {
            // A full block: scan it without bounds checks or branches on the data.
            let block: &[T; D] = heap[first..first + D].try_into().expect("block of D keys");
            let (best, bv) = max_child::<T, D>(block);
            if bv <= key {
                break;
            }
            heap[i] = bv;
            i = first + best;
        } else {
            if first >= len {
                break;
            }
            let block = &heap[first..];
            let mut best = 0;
            for (j, v) in block.iter().enumerate().skip(1) {
                if *v > block[best] {
                    best = j;
                }
            }
            let child = block[best];
            if child <= key {
                break;
            }
            heap[i] = child;
            i = first + best;
        }
    }
    heap[i] = key;
}

/// Update-key on the root, bottom-up (Floyd): move the hole from the root to a leaf along the
/// max children without comparing them to `key`, then sift `key` up from there. A replacement
/// key in k-selection is smaller than the root and usually belongs near the leaves, so this
/// trades the per-level "does the key stop here?" branch, which the CPU mispredicts, for a
/// short sift-up.
#[inline(always)]
fn replace_root_const<T: Copy + Ord, const D: usize>(heap: &mut [T], key: T) {
    let len = heap.len();
    let mut i = 0;
    loop {
        let first = D * i + 1;
        if first + D <= len {
            let block: &[T; D] = heap[first..first + D].try_into().expect("block of D keys");
            let (best, bv) = max_child::<T, D>(block);
            heap[i] = bv;
            i = first + best;
        } else {
            if first < len {
                let block = &heap[first..];
                let mut best = 0;
                for (j, v) in block.iter().enumerate().skip(1) {
                    if *v > block[best] {
                        best = j;
                    }
                }
                heap[i] = block[best];
                i = first + best;
            }
            break;
        }
    }
    while i > 0 {
        let parent = (i - 1) / D;
        if heap[parent] >= key {
            break;
        }
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = key;
}

/// Find-max-child over one full aligned block: unrolled (D is a constant) and branch-free.
#[inline(always)]
fn max_child<T: Copy + Ord, const D: usize>(block: &[T; D]) -> (usize, T) {
    let mut best = 0;
    let mut bv = block[0];
    for (j, &v) in block.iter().enumerate().skip(1) {
        let gt = v > bv;
        bv = if gt { v } else { bv };
        best = if gt { j } else { best };
    }
    (best, bv)
}
