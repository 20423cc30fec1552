//! The concurrent generalized heap driven by the latency threads behind the batch contract
//! ([`ThreadedHeap`]): a call's inserts and deletes shared by every thread of a pool, and
//! [`heap_for`], the heap of a [`Mode`].

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use asym_runtime::{Error, Mode, Named, PoolRef, Result, Runtime};

use super::{
    BatchHeap, ConcurrentGeneralizedHeap, CooperativeConfig, CooperativeHeap,
    DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey,
};

/// Heap nodes a [`ThreadedHeap`] starts with (it grows as inserts need).
const FIRST_NODES: usize = 1024;

/// A [`ConcurrentGeneralizedHeap`] whose calls every latency thread of a pool shares: an
/// insert's batches split over the threads, a delete's DELs taken by ticket.
pub struct ThreadedHeap<'a, T> {
    heap: ConcurrentGeneralizedHeap<T>,
    pool: PoolRef<'a>,
}

impl<'a, T: Ord + Copy + Default + Send + Sync> ThreadedHeap<'a, T> {
    /// An empty heap of batches of `batch` keys on `pool`'s threads (borrowed, or shared
    /// through an `Arc`).
    pub fn new(pool: impl Into<PoolRef<'a>>, batch: usize) -> Result<Self> {
        Self::with_nodes(pool, batch, FIRST_NODES)
    }

    /// An empty heap with room for `nodes` nodes from the start (it grows past them).
    pub fn with_nodes(pool: impl Into<PoolRef<'a>>, batch: usize, nodes: usize) -> Result<Self> {
        Ok(ThreadedHeap {
            heap: ConcurrentGeneralizedHeap::new(batch, nodes.max(FIRST_NODES))?,
            pool: pool.into(),
        })
    }
}

impl<T: Ord + Copy + Default + Send + Sync> BatchHeap<T> for ThreadedHeap<'_, T> {
    fn insert(&mut self, keys: &[T]) -> Result<()> {
        let k = self.heap.batch();
        let needed = (self.heap.len() + keys.len()) / k + 1;
        if needed > self.heap.max_nodes() {
            self.heap.grow(needed.max(2 * self.heap.max_nodes()))?;
        }
        if keys.len() <= k {
            // One batch: one thread's work, done here rather than waking the pool.
            return self.heap.insert(keys);
        }
        let (heap, threads) = (&self.heap, self.pool.len());
        let share = keys.len().div_ceil(threads).next_multiple_of(k);
        let results = self.pool.broadcast_scoped(|w| {
            let start = (w.index * share).min(keys.len());
            heap.insert(&keys[start..(start + share).min(keys.len())])
        })?;
        results.into_iter().collect()
    }

    fn delete_min(&mut self, n: usize) -> Result<Vec<T>> {
        let heap = &self.heap;
        let k = heap.batch();
        // Nothing else runs on the heap during a call: asking for more than it holds is
        // asking for everything (and must not size the tickets or the output by the request).
        let n = n.min(heap.len());
        // One DEL of at most K keys per ticket; the last ticket takes the remainder.
        let dels = n.div_ceil(k);
        if dels <= 1 {
            // One DEL: done here rather than waking the pool.
            return heap.delete_min(n);
        }
        let ticket = AtomicUsize::new(0);
        let parts = self.pool.broadcast_scoped(|_| -> Result<Vec<T>> {
            let mut mine = Vec::new();
            loop {
                let d = ticket.fetch_add(1, Relaxed);
                if d >= dels {
                    return Ok(mine);
                }
                let want = if d == dels - 1 && n % k != 0 {
                    n % k
                } else {
                    k
                };
                let got = heap.delete_min(want)?;
                let short = got.len() < want;
                mine.extend(got);
                if short {
                    return Ok(mine);
                }
            }
        })?;
        let mut out = Vec::with_capacity(n);
        for p in parts {
            out.extend(p?);
        }
        // Each thread's DELs came out in order; the contract wants the call's keys in order.
        out.sort_unstable();
        Ok(out)
    }

    fn len(&self) -> usize {
        self.heap.len()
    }
}

/// What a heap chosen by [`Mode`] ([`heap_for`]) takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapOptions {
    /// Keys per node (K).
    pub batch: usize,
    /// GpuOnly and Cooperative: the device heap's configuration (its batch is replaced by
    /// `batch`).
    pub device: DeviceHeapConfig,
    /// Cooperative: keys one refill brings from the device heap to the host top.
    pub refill: usize,
}

impl HeapOptions {
    /// Batches of `batch` keys, the device heap's defaults.
    pub fn new(batch: usize) -> Self {
        HeapOptions {
            batch,
            device: DeviceHeapConfig::new(batch),
            refill: 4096,
        }
    }
}

/// The generalized heap of `mode` behind the batch contract: CpuOnly the concurrent heap on
/// `pool`'s latency threads ([`ThreadedHeap`]), GpuOnly the device heap on `rt`
/// ([`DeviceGeneralizedHeap`]), Cooperative a host top in front of it ([`CooperativeHeap`]).
/// A mode whose workers are missing is an [`Error::InvalidArgument`].
pub fn heap_for<'a, T: DeviceHeapKey + Ord + Default + Send + Sync>(
    mode: Mode,
    options: &HeapOptions,
    pool: Option<PoolRef<'a>>,
    rt: Option<&Runtime>,
) -> Result<Box<dyn BatchHeap<T> + Send + 'a>> {
    let device = DeviceHeapConfig {
        batch: options.batch,
        ..options.device.clone()
    };
    let missing = |what: &str| {
        Error::InvalidArgument(format!(
            "a {} heap runs on {what}: none was given",
            mode.name()
        ))
    };
    Ok(match mode {
        Mode::CpuOnly => {
            let pool = pool.ok_or_else(|| missing("the latency threads"))?;
            Box::new(ThreadedHeap::with_nodes(
                pool,
                options.batch,
                options.device.initial_nodes,
            )?)
        }
        Mode::GpuOnly => {
            let rt = rt.ok_or_else(|| missing("a device"))?;
            Box::new(DeviceGeneralizedHeap::<T>::new(rt, &device)?)
        }
        Mode::Cooperative => {
            let rt = rt.ok_or_else(|| missing("a device"))?;
            let config = CooperativeConfig::on(device).with_refill(options.refill);
            Box::new(CooperativeHeap::<T>::new(rt, &config)?)
        }
    })
}
