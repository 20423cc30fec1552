//! The batch contract every generalized heap keeps, whoever runs it: what an application
//! (SSSP's frontier, knapsack's open nodes) programs against so that it can take any
//! placement (the latency threads, the device, the two together, a device set) without
//! knowing which.

use asym_runtime::Result;

use super::{
    ConcurrentGeneralizedHeap, CooperativeHeap, DeviceGeneralizedHeap, DeviceHeapKey,
    GeneralizedHeap, SpreadHeap,
};

/// A min-heap filled and drained in batches.
///
/// Every call is one batch: `insert` adds all of `keys` or fails having added none that a
/// later `delete_min` can see twice; `delete_min(n)` returns the `n` smallest keys held, in
/// ascending order (all of them, fewer than `n`, when the heap holds fewer).
pub trait BatchHeap<T> {
    /// Adds every key of `keys`.
    fn insert(&mut self, keys: &[T]) -> Result<()>;
    /// Removes and returns the `n` smallest keys, ascending (fewer when the heap holds fewer).
    fn delete_min(&mut self, n: usize) -> Result<Vec<T>>;
    /// How many keys the heap holds.
    fn len(&self) -> usize;
    /// Whether the heap holds no key.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Ord + Copy> BatchHeap<T> for GeneralizedHeap<T> {
    fn insert(&mut self, keys: &[T]) -> Result<()> {
        GeneralizedHeap::insert(self, keys)
    }
    fn delete_min(&mut self, n: usize) -> Result<Vec<T>> {
        Ok(GeneralizedHeap::delete_min(self, n))
    }
    fn len(&self) -> usize {
        GeneralizedHeap::len(self)
    }
}

impl<T: Ord + Copy + Default + Send> BatchHeap<T> for ConcurrentGeneralizedHeap<T> {
    fn insert(&mut self, keys: &[T]) -> Result<()> {
        ConcurrentGeneralizedHeap::insert(self, keys)
    }
    fn delete_min(&mut self, n: usize) -> Result<Vec<T>> {
        ConcurrentGeneralizedHeap::delete_min(self, n)
    }
    fn len(&self) -> usize {
        ConcurrentGeneralizedHeap::len(self)
    }
}

impl<T: DeviceHeapKey> BatchHeap<T> for DeviceGeneralizedHeap<T> {
    fn insert(&mut self, keys: &[T]) -> Result<()> {
        DeviceGeneralizedHeap::insert(self, keys)
    }
    fn delete_min(&mut self, n: usize) -> Result<Vec<T>> {
        DeviceGeneralizedHeap::delete_min(self, n)
    }
    fn len(&self) -> usize {
        DeviceGeneralizedHeap::len(self)
    }
}

impl<T: DeviceHeapKey> BatchHeap<T> for CooperativeHeap<T> {
    fn insert(&mut self, keys: &[T]) -> Result<()> {
        CooperativeHeap::insert(self, keys)
    }
    fn delete_min(&mut self, n: usize) -> Result<Vec<T>> {
        CooperativeHeap::delete_min(self, n)
    }
    fn len(&self) -> usize {
        CooperativeHeap::len(self)
    }
}

impl<T: DeviceHeapKey + Sync> BatchHeap<T> for SpreadHeap<T> {
    fn insert(&mut self, keys: &[T]) -> Result<()> {
        SpreadHeap::insert(self, keys)
    }
    fn delete_min(&mut self, n: usize) -> Result<Vec<T>> {
        SpreadHeap::delete_min(self, n)
    }
    fn len(&self) -> usize {
        SpreadHeap::len(self)
    }
}
