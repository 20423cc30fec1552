//! The ad-heap (asymmetric d-heap, the seed `ad-heap.txt`): a cache-aligned d-heap whose
//! empty head holds a *bridge* between the two kinds of cores.
//!
//! Update-key on the root is split by kind:
//! 1. a latency unit (CPU thread) writes the new root key `x` into node 0;
//! 2. a throughput unit (a device work-group, `kernels/adheap.cl`) walks down from the root:
//!    at each node it finds the max child by parallel reduction over the child block; while
//!    that child is larger than `x` it records the move *(node, child value)* in a bridge held
//!    in local memory and descends; at the end it records *(final node, x)*. It never writes
//!    the heap, only the bridge, which it dumps to the heap's head;
//! 3. a latency unit applies the bridge: `heap[node] = value` for every recorded pair.
//!
//! The device thus reads the heap in aligned blocks (one coalesced load per level) and writes
//! `2·pairs + 1` words in one burst, instead of scattered compare-and-swap stores: the seed's
//! `hd/w + (2h+1)/w` off-chip transactions against `h(d/w+1)`.
//!
//! # Slot layout
//! One heap lives in a *slot* of [`AdHeapLayout::stride`] `i32` words:
//!
//! ```text
//! word 0                    node counter: pairs recorded by the last bridge (0: none pending)
//! words 1 ..= 2·max_pairs   the pairs (node, value), node as i32
//! ..                        unused padding up to `pad`
//! word pad + i              heap node i (the children of i at pad + d·i + 1 .. pad + d·i + d)
//! ```
//!
//! `pad ≡ d − 1 (mod d)`, so every child block starts at a multiple of `d` words: with a
//! 64-byte aligned slot a block is one aligned load on the device and one or two cache lines on
//! the CPU, as in the plain [`crate::DHeap`]. The seed puts the bridge in the `d − 1`
//! padding slots; for small `d` (and tall heaps) those are too few for `2h + 1` words, so the
//! head here is grown by whole blocks of `d` until it holds the bridge.
//!
//! # Ownership (the memory-ordering rule)
//! At any time a slot belongs to exactly one side: the latency thread that wrote the root, then
//! the device (from the hand-off until it publishes the bridge), then a latency thread again.
//! Hand-offs are release/acquire pairs: the signal ring's sequence words on the fine transport
//! (`kernels/ring.cl`), kernel launch and completion plus map/unmap on the coarse one. Within
//! its turn a side may use plain (or relaxed) accesses.

use asym_runtime::{Error, Result};

use crate::dheap::{check_d, DHeap};

/// Word index of the node counter in a slot.
pub const COUNTER: usize = 0;

/// Where a heap and its bridge sit in a slot; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdHeapLayout {
    d: usize,
    capacity: usize,
    height: usize,
    pad: usize,
    stride: usize,
}

impl AdHeapLayout {
    /// The layout of an ad-heap of arity `d` holding up to `capacity` keys.
    pub fn new(d: usize, capacity: usize) -> Result<Self> {
        check_d(d)?;
        if capacity == 0 || capacity > 1 << 28 {
            return Err(Error::out_of_range(
                "ad-heap capacity",
                capacity,
                "between 1 and 2^28 keys",
            ));
        }
        // Levels below the root.
        let mut height = 0;
        let mut first = 1usize;
        while first < capacity {
            height += 1;
            first = first * d + 1;
        }
        let bridge_words = 1 + 2 * (height + 1);
        let mut pad = d - 1;
        while pad < bridge_words {
            pad += d;
        }
        let stride = (pad + capacity).next_multiple_of(16);
        Ok(AdHeapLayout {
            d,
            capacity,
            height,
            pad,
            stride,
        })
    }

    /// Arity.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Keys a slot holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Levels below the root of a full heap: the most moves one update-key records.
    pub fn height(&self) -> usize {
        self.height
    }

    /// The most pairs a bridge holds: one per level moved plus the final placement.
    pub fn max_pairs(&self) -> usize {
        self.height + 1
    }

    /// Word index of node 0 in a slot (the size of the head).
    pub fn pad(&self) -> usize {
        self.pad
    }

    /// Words per slot (a multiple of 16, so 64-byte aligned slots stay aligned).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Build options for `kernels/adheap.cl`.
    pub fn cl_defines(&self) -> String {
        format!(
            "-DD={} -DAD_PAD={} -DAD_PAIRS={}",
            self.d,
            self.pad,
            self.max_pairs()
        )
    }
}

/// Word access to one slot: a plain slice (the slot is mapped, or host memory) or the SVM
/// buffer's atomics while a kernel runs (fine transport). Accesses need no ordering of their
/// own: the hand-offs order them (module docs).
pub trait SlotWords {
    /// Reads word `i`.
    fn load(&self, i: usize) -> i32;
    /// Writes word `i`.
    fn store(&mut self, i: usize, v: i32);
}

impl SlotWords for [i32] {
    #[inline]
    fn load(&self, i: usize) -> i32 {
        self[i]
    }
    #[inline]
    fn store(&mut self, i: usize, v: i32) {
        self[i] = v;
    }
}

/// A slot seen through host atomics (fine-grained SVM shared with a running kernel).
pub struct AtomicSlot<'a>(pub &'a [std::sync::atomic::AtomicI32]);

impl SlotWords for AtomicSlot<'_> {
    #[inline]
    fn load(&self, i: usize) -> i32 {
        self.0[i].load(std::sync::atomic::Ordering::Relaxed)
    }
    #[inline]
    fn store(&mut self, i: usize, v: i32) {
        self.0[i].store(v, std::sync::atomic::Ordering::Relaxed)
    }
}

/// A bridge that breaks the rules: the device (or whoever wrote it) is wrong, and applying it
/// would corrupt the heap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadBridge(pub String);

impl From<BadBridge> for Error {
    fn from(b: BadBridge) -> Self {
        Error::corrupted("the ad-heap", format!("ad-heap bridge: {}", b.0))
    }
}

impl AdHeapLayout {
    /// Copies `heap` (built by [`DHeap`], same arity, at most `capacity` keys) into the slot
    /// and clears the bridge (latency side).
    pub fn build<S: SlotWords + ?Sized>(&self, slot: &mut S, heap: &DHeap<i32>) -> Result<()> {
        if heap.d() != self.d || heap.len() > self.capacity {
            return Err(Error::InvalidArgument(format!(
                "a {}-heap of {} keys does not fit an ad-heap slot of d = {}, capacity {}",
                heap.d(),
                heap.len(),
                self.d,
                self.capacity
            )));
        }
        for (i, &v) in heap.as_slice().iter().enumerate() {
            slot.store(self.pad + i, v);
        }
        slot.store(COUNTER, 0);
        Ok(())
    }

    /// The root (the maximum) of a heap of `len ≥ 1` keys.
    #[inline]
    pub fn root<S: SlotWords + ?Sized>(&self, slot: &S) -> i32 {
        slot.load(self.pad)
    }

    /// Step 1 of update-key (latency side): writes `x` as the new root.
    #[inline]
    pub fn write_root<S: SlotWords + ?Sized>(&self, slot: &mut S, x: i32) {
        slot.store(self.pad, x);
    }

    /// Step 2 of update-key done on the host, exactly as the device does it: reads the root,
    /// walks the max-child path and writes the bridge, never touching the heap. The reference
    /// the device's bridges are checked against.
    pub fn compute_bridge<S: SlotWords + ?Sized>(&self, slot: &mut S, len: usize) {
        let (d, pad) = (self.d, self.pad);
        let x = slot.load(pad);
        let mut i = 0;
        let mut pairs = 0;
        loop {
            let first = d * i + 1;
            if first >= len {
                break;
            }
            let (mut best, mut bv) = (first, slot.load(pad + first));
            for c in first + 1..(first + d).min(len) {
                let v = slot.load(pad + c);
                if v > bv {
                    (best, bv) = (c, v);
                }
            }
            if bv <= x {
                break;
            }
            slot.store(1 + 2 * pairs, i as i32);
            slot.store(2 + 2 * pairs, bv);
            pairs += 1;
            i = best;
        }
        slot.store(1 + 2 * pairs, i as i32);
        slot.store(2 + 2 * pairs, x);
        slot.store(COUNTER, (pairs + 1) as i32);
    }

    /// Checks the pending bridge of a heap of `len` keys against the rules, without applying it:
    /// 1 ≤ pairs ≤ max_pairs; the first pair is the root; each later node is a child of the one
    /// before; each moved value is a child of its node, larger than the new key and no larger
    /// than the value recorded above it; the last pair places the root key that was written.
    pub fn check_bridge<S: SlotWords + ?Sized>(
        &self,
        slot: &S,
        len: usize,
    ) -> std::result::Result<(), BadBridge> {
        let pairs = slot.load(COUNTER);
        if pairs < 1 || pairs as usize > self.max_pairs() {
            return Err(BadBridge(format!(
                "node counter {pairs} outside 1..={}",
                self.max_pairs()
            )));
        }
        let pairs = pairs as usize;
        let x = slot.load(self.pad);
        let mut prev: Option<(usize, i32)> = None;
        for p in 0..pairs {
            let node = slot.load(1 + 2 * p);
            let value = slot.load(2 + 2 * p);
            if node < 0 || node as usize >= len {
                return Err(BadBridge(format!(
                    "pair {p}: node {node} outside the heap of {len}"
                )));
            }
            let node = node as usize;
            match prev {
                None if node != 0 => {
                    return Err(BadBridge(format!("pair 0 is node {node}, not the root")))
                }
                Some((above, above_value)) => {
                    if node == 0 || (node - 1) / self.d != above {
                        return Err(BadBridge(format!(
                            "pair {p}: node {node} is not a child of node {above}"
                        )));
                    }
                    if value > above_value {
                        return Err(BadBridge(format!(
                            "pair {p}: value {value} above the {above_value} recorded over it"
                        )));
                    }
                }
                None => {}
            }
            if p + 1 < pairs {
                // A move: the value is node's max child and beats x.
                let first = self.d * node + 1;
                let block = first..(first + self.d).min(len);
                let max = block.clone().map(|c| slot.load(self.pad + c)).max();
                if max != Some(value) || value <= x {
                    return Err(BadBridge(format!(
                        "pair {p}: value {value} is not node {node}'s max child above {x}"
                    )));
                }
            } else if value != x {
                return Err(BadBridge(format!(
                    "last pair places {value}, not the written root {x}"
                )));
            }
            prev = Some((node, value));
        }
        Ok(())
    }

    /// Step 3 of update-key (latency side): applies and clears the pending bridge, returning the
    /// new root. Positions are checked (a bad one is an error, never a stray write); a slot
    /// with no bridge pending is left alone.
    pub fn apply_bridge<S: SlotWords + ?Sized>(
        &self,
        slot: &mut S,
        len: usize,
    ) -> std::result::Result<i32, BadBridge> {
        let pairs = slot.load(COUNTER);
        if pairs < 0 || pairs as usize > self.max_pairs() {
            return Err(BadBridge(format!(
                "node counter {pairs} outside 0..={}",
                self.max_pairs()
            )));
        }
        // Every position is checked before the first write, so a bad bridge changes nothing.
        for p in 0..pairs as usize {
            let node = slot.load(1 + 2 * p);
            if node < 0 || node as usize >= len {
                return Err(BadBridge(format!(
                    "pair {p}: node {node} outside the heap of {len}"
                )));
            }
        }
        for p in 0..pairs as usize {
            let node = slot.load(1 + 2 * p) as usize;
            let value = slot.load(2 + 2 * p);
            slot.store(self.pad + node, value);
        }
        slot.store(COUNTER, 0);
        Ok(slot.load(self.pad))
    }

    /// The heap's keys in node order (for checks).
    pub fn keys<S: SlotWords + ?Sized>(&self, slot: &S, len: usize) -> Vec<i32> {
        (0..len).map(|i| slot.load(self.pad + i)).collect()
    }

    /// Whether the slot's heap of `len` keys has the max-heap property.
    pub fn is_valid<S: SlotWords + ?Sized>(&self, slot: &S, len: usize) -> bool {
        (1..len).all(|i| slot.load(self.pad + (i - 1) / self.d) >= slot.load(self.pad + i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_holds_the_bridge_and_blocks_stay_aligned() {
        for d in crate::dheap::SUPPORTED_D {
            for cap in [1, 2, d, d + 1, 1000, 1 << 20] {
                let l = AdHeapLayout::new(d, cap).unwrap();
                assert!(l.pad() > 2 * l.max_pairs(), "d {d} cap {cap}");
                assert_eq!((l.pad() + 1) % d, 0, "d {d} cap {cap}");
                assert_eq!(l.stride() % 16, 0);
                assert!(l.stride() >= l.pad() + cap);
                // A full heap of `capacity` keys has exactly `height` levels below the root.
                let mut first = 1;
                for _ in 0..l.height() {
                    assert!(first < cap);
                    first = first * d + 1;
                }
                assert!(first >= cap);
            }
        }
        assert!(AdHeapLayout::new(3, 10).is_err());
        assert!(AdHeapLayout::new(8, 0).is_err());
    }
}
