//! The sequential generalized heap: the version one CPU thread runs, and the reference the
//! concurrent ones are tested against (see the module docs of [`super`] for the operations).

use asym_runtime::{Error, Result};

use super::batch::{is_sorted, merge_and_sort, merge_into, position};
use super::{HeapStats, InsertDirection};

/// The largest batch size (keys per node) the heap accepts.
pub const MAX_BATCH: usize = 1 << 16;

/// A generalized min-heap of batches of `K` keys (see the module docs).
#[derive(Clone, Debug)]
pub struct GeneralizedHeap<T> {
    batch: usize,
    direction: InsertDirection,
    /// Node `i` is `keys[i * batch .. (i + 1) * batch]`; only the slots of present nodes are
    /// meaningful.
    keys: Vec<T>,
    /// Full nodes present (`count` of the seed).
    nodes: usize,
    partial: Vec<T>,
    /// Nodes allowed at most (`None`: grow as needed).
    max_nodes: Option<usize>,
    scratch: Vec<T>,
    stats: HeapStats,
}

impl<T: Ord + Copy> GeneralizedHeap<T> {
    /// An empty heap of batches of `batch` keys (a power of two, at most [`MAX_BATCH`]).
    pub fn new(batch: usize) -> Result<Self> {
        if !batch.is_power_of_two() || batch > MAX_BATCH {
            return Err(Error::out_of_range(
                "batch size",
                batch,
                format!("the generalized heap needs a power of two up to {MAX_BATCH}"),
            ));
        }
        Ok(GeneralizedHeap {
            batch,
            direction: InsertDirection::default(),
            keys: Vec::new(),
            nodes: 0,
            partial: Vec::with_capacity(batch),
            max_nodes: None,
            scratch: Vec::new(),
            stats: HeapStats::default(),
        })
    }

    /// Sets how inserted nodes travel.
    pub fn with_insert_direction(mut self, direction: InsertDirection) -> Self {
        self.direction = direction;
        self
    }

    /// Bounds the heap to `nodes` full nodes: an insert that would need more fails with
    /// [`Error::CapacityExceeded`] and changes nothing.
    pub fn with_max_nodes(mut self, nodes: usize) -> Self {
        self.max_nodes = Some(nodes);
        self
    }

    /// Keys per node.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Keys in the heap.
    pub fn len(&self) -> usize {
        self.nodes * self.batch + self.partial.len()
    }

    /// Whether the heap holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Full nodes in the heap.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The work counters so far.
    pub fn stats(&self) -> HeapStats {
        self.stats
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.nodes = 0;
        self.partial.clear();
    }

    /// The smallest key.
    pub fn peek(&self) -> Option<T> {
        if self.nodes > 0 {
            Some(self.keys[0])
        } else {
            self.partial.first().copied()
        }
    }

    /// Inserts any number of keys (as INS operations of at most `K` keys each).
    pub fn insert(&mut self, keys: &[T]) -> Result<()> {
        let full_nodes_after = (self.len() + keys.len()) / self.batch;
        if let Some(max) = self.max_nodes {
            if full_nodes_after > max {
                return Err(Error::CapacityExceeded {
                    what: format!("a generalized heap of batches of {} keys", self.batch),
                    capacity: max * self.batch + self.batch - 1,
                });
            }
        }
        let mut chunk = Vec::with_capacity(self.batch);
        for part in keys.chunks(self.batch) {
            chunk.clear();
            chunk.extend_from_slice(part);
            chunk.sort_unstable();
            self.insert_sorted(&chunk);
        }
        Ok(())
    }

    /// Removes and returns the `n` smallest keys, sorted (fewer if the heap holds fewer).
    pub fn delete_min(&mut self, n: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(n.min(self.len()));
        while out.len() < n && !self.is_empty() {
            self.delete_batch_into(&mut out);
        }
        if out.len() > n {
            // The extra keys of the last batch are the smallest left: they go back (into the
            // partial buffer and the root, never deeper).
            let back = out.split_off(n);
            self.insert_back(&back);
        }
        out
    }

    /// Checks the generalized heap properties; the error names the first violation.
    pub fn check(&self) -> std::result::Result<(), String> {
        for i in 0..self.nodes {
            let node = self.node(position(i));
            if !is_sorted(node) {
                return Err(format!("node {} is not sorted", position(i)));
            }
        }
        for i in 1..self.nodes {
            let pos = position(i);
            let parent = (pos - 1) / 2;
            if !self.present(parent) {
                return Err(format!("node {pos} has no parent node {parent}"));
            }
            if self.node(parent)[self.batch - 1] > self.node(pos)[0] {
                return Err(format!(
                    "node {pos} holds a key smaller than its parent {parent}'s largest"
                ));
            }
        }
        if self.partial.len() >= self.batch || !is_sorted(&self.partial) {
            return Err("the partial buffer is too full or not sorted".into());
        }
        if let (true, Some(first)) = (self.nodes > 0, self.partial.first()) {
            if *first < self.node(0)[self.batch - 1] {
                return Err(
                    "the partial buffer holds a key smaller than the root's largest".into(),
                );
            }
        }
        Ok(())
    }

    /// Every key, in heap order (nodes in insertion order, then the partial buffer).
    pub fn keys(&self) -> Vec<T> {
        let mut all = Vec::with_capacity(self.len());
        for i in 0..self.nodes {
            all.extend_from_slice(self.node(position(i)));
        }
        all.extend_from_slice(&self.partial);
        all
    }

    /// A heap of `batch`-key nodes given at their array positions (those of the first
    /// `nodes.len()` nodes added, in that order) and a partial buffer. The properties are not
    /// checked here: call [`GeneralizedHeap::check`].
    pub(crate) fn from_parts(
        batch: usize,
        nodes: Vec<(usize, Vec<T>)>,
        partial: Vec<T>,
    ) -> Result<Self> {
        let mut heap = Self::new(batch)?;
        for (i, (pos, keys)) in nodes.iter().enumerate() {
            if *pos != position(i) || keys.len() != batch {
                return Err(Error::InvalidArgument(format!(
                    "node {i} given at position {pos} with {} keys",
                    keys.len()
                )));
            }
            let need = (pos + 1) * batch;
            if heap.keys.len() < need {
                heap.keys.resize(need, keys[0]);
            }
            heap.keys[pos * batch..need].copy_from_slice(keys);
        }
        heap.nodes = nodes.len();
        heap.partial = partial;
        Ok(heap)
    }

    fn node(&self, pos: usize) -> &[T] {
        &self.keys[pos * self.batch..(pos + 1) * self.batch]
    }

    /// Whether the node at array position `pos` is present.
    fn present(&self, pos: usize) -> bool {
        position(pos) < self.nodes
    }

    /// Two distinct nodes (`a != b`) as mutable slices.
    fn two_nodes(keys: &mut [T], batch: usize, a: usize, b: usize) -> (&mut [T], &mut [T]) {
        debug_assert_ne!(a, b);
        if a < b {
            let (lo, hi) = keys.split_at_mut(b * batch);
            (&mut lo[a * batch..(a + 1) * batch], &mut hi[..batch])
        } else {
            let (lo, hi) = keys.split_at_mut(a * batch);
            (&mut hi[..batch], &mut lo[b * batch..(b + 1) * batch])
        }
    }

    /// MergeAndSort of nodes `a` (keeps the smaller half) and `b`.
    fn merge_nodes(&mut self, a: usize, b: usize) {
        let (x, y) = Self::two_nodes(&mut self.keys, self.batch, a, b);
        let kind = merge_and_sort(x, y, &mut self.scratch);
        self.stats.count(kind);
    }

    /// MergeAndSort of the root (keeps the smaller half) and the partial buffer.
    fn merge_root_partial(&mut self) {
        let (root, partial) = (&mut self.keys[..self.batch], &mut self.partial);
        let kind = merge_and_sort(root, partial, &mut self.scratch);
        self.stats.count(kind);
    }

    /// One INS of at most `K` sorted keys.
    fn insert_sorted(&mut self, sorted: &[T]) {
        let mut combined = Vec::with_capacity(self.partial.len() + sorted.len());
        merge_into(&self.partial, sorted, &mut combined);
        if combined.len() < self.batch {
            self.partial = combined;
            if self.nodes > 0 {
                self.merge_root_partial();
            }
            return;
        }
        // The K smallest become a node; the rest, all ≥ them, stay in the buffer. The root
        // that results holds the K smallest of itself and the new node, so its largest key is
        // ≤ the new node's largest ≤ every key left in the buffer (property 3).
        self.partial = combined.split_off(self.batch);
        let target = position(self.nodes);
        let need = (target + 1) * self.batch;
        if self.keys.len() < need {
            self.keys.resize(need, combined[0]);
        }
        if self.nodes == 0 {
            self.keys[..self.batch].copy_from_slice(&combined);
            self.nodes = 1;
            return;
        }
        match self.direction {
            InsertDirection::TopDown => self.insert_top_down(combined, target),
            InsertDirection::BottomUp => self.insert_bottom_up(&combined, target),
        }
    }

    fn insert_top_down(&mut self, mut carried: Vec<T>, target: usize) {
        // The path from the root to the target, top first.
        let depth = usize::BITS - 1 - (target + 1).leading_zeros();
        for level in 0..depth {
            let pos = ((target + 1) >> (depth - level)) - 1;
            let node = &mut self.keys[pos * self.batch..(pos + 1) * self.batch];
            let kind = merge_and_sort(node, &mut carried, &mut self.scratch);
            self.stats.count(kind);
        }
        self.keys[target * self.batch..(target + 1) * self.batch].copy_from_slice(&carried);
        self.nodes += 1;
    }

    fn insert_bottom_up(&mut self, batch: &[T], target: usize) {
        self.keys[target * self.batch..(target + 1) * self.batch].copy_from_slice(batch);
        self.nodes += 1;
        let mut pos = target;
        while pos > 0 {
            let parent = (pos - 1) / 2;
            // Early stop: the property already holds here, hence above.
            if self.node(parent)[self.batch - 1] <= self.node(pos)[0] {
                self.stats.skipped += 1;
                break;
            }
            self.merge_nodes(parent, pos);
            pos = parent;
        }
    }

    /// One DEL: appends the root's batch (or the partial buffer when no node is full) to
    /// `out`.
    fn delete_batch_into(&mut self, out: &mut Vec<T>) {
        if self.nodes == 0 {
            out.append(&mut self.partial);
            return;
        }
        out.extend_from_slice(&self.keys[..self.batch]);
        let last = position(self.nodes - 1);
        self.nodes -= 1;
        if self.nodes == 0 {
            return;
        }
        let b = self.batch;
        self.keys.copy_within(last * b..(last + 1) * b, 0);
        if !self.partial.is_empty() {
            self.merge_root_partial();
        }
        self.sift_down(0);
    }

    fn sift_down(&mut self, mut pos: usize) {
        let b = self.batch;
        loop {
            let (l, r) = (2 * pos + 1, 2 * pos + 2);
            let child = match (self.present(l), self.present(r)) {
                (false, _) => return,
                (true, false) => l,
                (true, true) => {
                    // The larger half goes back to the child whose largest key was larger
                    // (its subtree stays valid); the smaller half to the other, which then
                    // meets the parent.
                    let (small, large) = if self.node(l)[b - 1] > self.node(r)[b - 1] {
                        (r, l)
                    } else {
                        (l, r)
                    };
                    self.merge_nodes(small, large);
                    small
                }
            };
            if self.node(pos)[b - 1] <= self.node(child)[0] {
                self.stats.skipped += 1;
                return;
            }
            self.merge_nodes(pos, child);
            pos = child;
        }
    }

    /// Puts back keys that are ≤ every key in the heap (the surplus of a DEL).
    fn insert_back(&mut self, keys: &[T]) {
        for part in keys.chunks(self.batch) {
            self.insert_sorted(part);
        }
    }
}
