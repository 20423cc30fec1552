//! The generalized heap of the concurrent-heap seed (Chen et al., "Accelerating Concurrent
//! Heap on GPUs"): a min-heap whose nodes hold a sorted *batch* of `K` keys each, plus a
//! partial buffer of fewer than `K` keys.
//!
//! Properties kept after every operation (the seed's generalized heap properties):
//! 1. every key of a node is ≥ every key of its parent;
//! 2. the keys of a node are sorted ascending;
//! 3. the partial buffer is sorted, holds fewer than `K` keys, and each is ≥ every key of the
//!    root: the root holds the `K` smallest keys of the heap.
//!
//! Nodes form a binary tree in an array (node `i`'s children are `2i + 1` and `2i + 2`). New
//! nodes are added level by level, in bit-reversal order within a level (the seed's choice, so
//! consecutive inserts share as little of their root path as possible), and deletions remove
//! the node added last.
//!
//! Operations, with the seed's names:
//! - **INS** of up to `K` keys: sort them, merge them with the partial buffer; if fewer than
//!   `K` result, they stay in the buffer (after a MergeAndSort with the root, for property 3);
//!   else the `K` smallest form a new node and the rest stay in the buffer. The new node is
//!   inserted *top-down* (MergeAndSort with every node from the root down to the target node)
//!   or *bottom-up* (placed at the target, then MergeAndSort with its parent while the parent
//!   holds a larger key: it stops early once the property holds).
//! - **DEL** takes the root's `K` keys, moves the last node into the root, restores property 3
//!   against the partial buffer, then sifts down: MergeAndSort of the two children puts the
//!   larger half back into the child whose largest key was larger, then the node and the
//!   smaller-half child are merged while the property fails.
//!
//! Files: `batch` (MergeAndSort and positions, on the host), `batch_heap` (the contract every
//! heap keeps, whatever runs it), `sequential` (the heap one thread
//! runs), `concurrent` (many host threads, node locks), `device_batch_ops` (the batch kernels
//! alone: bitonic sort, merge path), `device_heap/` (the heap in SVM run by work-groups, and
//! `bulk`: calls done as one device sort), `cooperative` (a host top in front of the device
//! heap), `threaded` (the concurrent heap driven by the latency threads behind the contract,
//! and [`heap_for`]: the heap of a [`Mode`](asym_runtime::Mode)).

mod batch;
mod batch_heap;
mod concurrent;
mod cooperative;
mod device_batch_ops;
mod device_heap;
mod sequential;
mod spread;
mod threaded;

use asym_runtime::Result;

pub use batch::{merge_and_sort, MergeKind};
pub use batch_heap::BatchHeap;
pub use concurrent::ConcurrentGeneralizedHeap;
pub use cooperative::{CooperativeConfig, CooperativeHeap, CooperativeStats};
pub use device_batch_ops::{DeviceBatchOps, MAX_DEVICE_BATCH};
pub use device_heap::{
    BulkPolicy, DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey, DeviceHeapProfile,
    DeviceHeapStats, HeapOp, LaunchTrace, GHEAP_PROFILE_ENV,
};
pub use sequential::{GeneralizedHeap, MAX_BATCH};
pub use spread::{SpreadHeap, LANE_MIN_GROUPS, MAX_LANES};
pub use threaded::{heap_for, HeapOptions, ThreadedHeap};

/// Where a heap lives when the device takes part: what an application (SSSP's frontier,
/// knapsack's nodes) chooses, and [`HeapPlacement::build`] makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeapPlacement {
    /// GpuOnly: every insert and delete is a launch of the device heap.
    Device(DeviceHeapConfig),
    /// Cooperative: a host top served by the calling threads in front of the device heap.
    Cooperative(CooperativeConfig),
}

impl HeapPlacement {
    /// The heap this placement names, with batches of `batch` keys (replacing the
    /// configuration's), behind the batch contract every heap keeps.
    pub fn build<T: DeviceHeapKey>(
        &self,
        rt: &asym_runtime::Runtime,
        batch: usize,
    ) -> Result<Box<dyn BatchHeap<T>>> {
        Ok(match self {
            HeapPlacement::Device(c) => {
                let c = DeviceHeapConfig { batch, ..c.clone() };
                Box::new(DeviceGeneralizedHeap::<T>::new(rt, &c)?)
            }
            HeapPlacement::Cooperative(c) => {
                let mut c = c.clone();
                c.device.batch = batch;
                Box::new(CooperativeHeap::<T>::new(rt, &c)?)
            }
        })
    }
}

/// Runs `f` on every item at once, one scoped thread each: what each returned and the
/// seconds it took, in the items' order. A thread that panics is reported as
/// [`asym_runtime::Error::ThreadLost`] naming `what`.
pub(crate) fn on_threads<I: Send, R: Send>(
    items: impl IntoIterator<Item = I>,
    what: &str,
    f: impl Fn(I) -> Result<R> + Sync,
) -> Vec<(Result<R>, f64)> {
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| {
                s.spawn(move || {
                    let t = std::time::Instant::now();
                    let r = f(item);
                    (r, t.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    let e = asym_runtime::Error::thread_lost(what, format!("{what} panicked"));
                    (Err(e), 0.0)
                })
            })
            .collect()
    })
}

/// How new nodes travel (the seed's two heaps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum InsertDirection {
    /// From the root down to the target node (TD-INS).
    TopDown,
    /// From the target node up while the heap property fails (BU-INS): stops early.
    #[default]
    BottomUp,
}

/// Counters of the work done, for tests and measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapStats {
    /// MergeAndSorts that had to merge.
    pub merges: u64,
    /// MergeAndSorts done by swapping two batches whose ranges did not overlap.
    pub swaps: u64,
    /// MergeAndSorts that found the batches already in order.
    pub skipped: u64,
}

impl HeapStats {
    fn count(&mut self, kind: MergeKind) {
        match kind {
            MergeKind::Merged => self.merges += 1,
            MergeKind::Swapped => self.swaps += 1,
            MergeKind::AlreadyOrdered => self.skipped += 1,
        }
    }
}
