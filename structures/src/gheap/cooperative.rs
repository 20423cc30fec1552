//! The generalized heap in Cooperative mode: the device holds the bulk of the keys in a
//! [`DeviceGeneralizedHeap`] and merges them in full batches, while the calling host threads
//! (the latency threads) serve the top of the queue — the smallest keys and the small
//! inserts — from a heap in host memory, without a launch.
//!
//! Layout and invariant. Keys live in three places: `top` (a binary heap in host memory),
//! `pending` (inserts on their way to the device, flushed in bulk) and the device heap. A
//! *fence* separates them: every key in `top` is ≤ the fence ≤ every key in `pending` and on
//! the device. So the smallest key of `top` is the smallest of all, and a delete served from
//! `top` needs no device work.
//! - insert: keys below the fence go to `top`, the others to `pending`, which goes to the device
//!   as one launch once it holds `flush` keys;
//! - delete: from `top`; when `top` runs dry, `pending` is flushed and one launch deletes the
//!   `refill` smallest keys from the device (its DELs run concurrently) into `top`, and the
//!   fence becomes the largest of them (or +∞ when the device ran empty: then every key is in
//!   `top`);
//! - when `top` outgrows `top_capacity` (only after the fence went to +∞, or with many small
//!   keys), its larger half goes to the device and the fence becomes the smallest key moved.
//!
//! The fence starts at −∞: a new heap sends every insert to the device, and the first delete
//! refills `top`. All host-side state is under one mutex (the device heap serializes its own
//! calls): usable from several host threads at once, each call linearizing under the lock.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use asym_runtime::{Error, Result, Runtime};

use super::device_heap::{DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey};

/// How the Cooperative heap splits work between host and device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CooperativeConfig {
    /// The device heap (its batch is the K of every device operation).
    pub device: DeviceHeapConfig,
    /// Keys one refill moves from the device to the host top (rounded up to whole batches).
    pub refill: usize,
    /// Inserts gathered on the host before one device insert.
    pub flush: usize,
    /// Keys the host top may hold before its larger half goes to the device.
    pub top_capacity: usize,
}

impl CooperativeConfig {
    /// Defaults for batches of `batch` keys: refills and flushes of 64 batches, a top of four
    /// refills.
    pub fn new(batch: usize) -> Self {
        Self::on(DeviceHeapConfig::new(batch))
    }

    /// The defaults in front of the device heap `device` (its batch is the K of every device
    /// operation).
    pub fn on(device: DeviceHeapConfig) -> Self {
        let batch = device.batch;
        CooperativeConfig {
            device,
            refill: 64 * batch,
            flush: 64 * batch,
            top_capacity: 256 * batch,
        }
    }

    /// Refills and flushes of `keys` keys, the top grown to hold at least four refills.
    pub fn with_refill(mut self, keys: usize) -> Self {
        self.refill = keys;
        self.flush = keys;
        self.top_capacity = self.top_capacity.max(keys.saturating_mul(4));
        self
    }
}

/// What the Cooperative heap did, for measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CooperativeStats {
    /// Keys served by the host top (deleted without a launch of their own).
    pub served_by_host: u64,
    /// Keys inserted straight into the host top.
    pub inserted_on_host: u64,
    /// Device insert calls (flushes and spills) and the keys they moved.
    pub device_inserts: u64,
    /// Keys moved to the device.
    pub keys_to_device: u64,
    /// Device delete calls (refills) and the keys they brought back.
    pub refills: u64,
    /// Keys brought back from the device.
    pub keys_from_device: u64,
    /// Spills of the top's larger half.
    pub spills: u64,
}

/// Where the fence stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fence<R> {
    /// Below every key: all inserts go to the device side.
    Low,
    /// Keys < the value go to the host top.
    At(R),
    /// Above every key: the device side is empty, all inserts go to the host top.
    High,
}

/// Host inserts and take size from which the top merges its heap into the run.
const MERGE_EXTRA: usize = 256;
/// ... provided the run and the heap together hold at most this many times the take.
const MERGE_SPAN: usize = 32;

/// The host top: the sorted run a refill brought (taken from the front by bulk copies) and a
/// binary heap of the keys inserted on the host since (usually few).
struct Top<R> {
    run: VecDeque<R>,
    extra: BinaryHeap<Reverse<R>>,
}

impl<R: Ord + Copy> Top<R> {
    fn len(&self) -> usize {
        self.run.len() + self.extra.len()
    }

    fn peek(&self) -> Option<R> {
        match (self.run.front(), self.extra.peek()) {
            (Some(&a), Some(&Reverse(b))) => Some(a.min(b)),
            (a, b) => a.copied().or(b.map(|r| r.0)),
        }
    }

    /// Moves up to `n` of the smallest keys to `out` (ascending); returns how many.
    fn take(&mut self, n: usize, out: &mut Vec<R>) -> usize {
        if n >= MERGE_EXTRA
            && self.extra.len() >= MERGE_EXTRA
            && self.run.len() + self.extra.len() <= MERGE_SPAN.saturating_mul(n)
        {
            // Many host inserts and a large take: one merge into the run (linear in the run)
            // beats `n` binary-heap pops (each a cache-missing sift-down) unless the run is
            // much longer than the take (then the merge would copy it again for every take:
            // on the H200, heap_bench --mixed with K = 1024 took 2,059 / 3,345 ms at 0 / 8 M
            // keys preloaded merging on every take, 1,513 / 1,451 ms with this limit).
            let mut extra: Vec<R> = std::mem::take(&mut self.extra)
                .into_vec()
                .into_iter()
                .map(|r| r.0)
                .collect();
            extra.sort_unstable();
            let run = std::mem::take(&mut self.run);
            let mut merged = VecDeque::with_capacity(run.len() + extra.len());
            let (mut a, mut b) = (run.into_iter().peekable(), extra.into_iter().peekable());
            while let (Some(&x), Some(&y)) = (a.peek(), b.peek()) {
                let smaller = if x <= y { a.next() } else { b.next() };
                merged.extend(smaller);
            }
            merged.extend(a);
            merged.extend(b);
            self.run = merged;
        }
        let mut taken = 0;
        while taken < n {
            if self.extra.is_empty() {
                // The common case: a bulk copy from the sorted run.
                let m = (n - taken).min(self.run.len());
                out.extend(self.run.drain(..m));
                return taken + m;
            }
            let Some(r) = self.peek() else {
                break;
            };
            if self.run.front() == Some(&r) {
                self.run.pop_front();
            } else {
                self.extra.pop();
            }
            out.push(r);
            taken += 1;
        }
        taken
    }

    /// Every key, ascending; the top is left empty.
    fn drain_sorted(&mut self) -> Vec<R> {
        let mut all: Vec<R> = self.run.drain(..).collect();
        all.extend(std::mem::take(&mut self.extra).into_iter().map(|r| r.0));
        all.sort_unstable();
        all
    }

    fn clear(&mut self) {
        self.run.clear();
        self.extra.clear();
    }
}

struct State<R> {
    top: Top<R>,
    pending: Vec<R>,
    fence: Fence<R>,
    stats: CooperativeStats,
}

/// A generalized heap split between the device (bulk) and the host (top).
pub struct CooperativeHeap<T: DeviceHeapKey> {
    device: DeviceGeneralizedHeap<T>,
    state: Mutex<State<T::Repr>>,
    refill: usize,
    flush: usize,
    top_capacity: usize,
}

impl<T: DeviceHeapKey> std::fmt::Debug for CooperativeHeap<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CooperativeHeap")
            .field("device", &self.device)
            .field("refill", &self.refill)
            .field("flush", &self.flush)
            .finish()
    }
}

impl<T: DeviceHeapKey> CooperativeHeap<T> {
    /// An empty heap on `rt`'s device.
    pub fn new(rt: &Runtime, config: &CooperativeConfig) -> Result<Self> {
        let k = config.device.batch;
        if config.refill == 0 || config.flush == 0 {
            return Err(Error::InvalidArgument(format!(
                "refill {} and flush {}: both must be at least 1",
                config.refill, config.flush
            )));
        }
        let refill = config
            .refill
            .checked_next_multiple_of(k.max(1))
            .filter(|r| r.checked_mul(2).is_some())
            .ok_or_else(|| Error::too_large("a refill", config.refill, u32::MAX))?;
        if config.top_capacity < 2 * refill {
            return Err(Error::out_of_range(
                "top capacity",
                config.top_capacity,
                format!("must hold at least two refills ({})", 2 * refill),
            ));
        }
        Ok(CooperativeHeap {
            device: DeviceGeneralizedHeap::new(rt, &config.device)?,
            state: Mutex::new(State {
                top: Top {
                    run: VecDeque::new(),
                    extra: BinaryHeap::new(),
                },
                pending: Vec::new(),
                fence: Fence::Low,
                stats: CooperativeStats::default(),
            }),
            refill,
            flush: config.flush,
            top_capacity: config.top_capacity,
        })
    }

    /// Keys per device node.
    pub fn batch(&self) -> usize {
        self.device.batch()
    }

    /// Keys held (host top, pending inserts and device).
    pub fn len(&self) -> usize {
        let s = self.lock();
        s.top.len() + s.pending.len() + self.device.len()
    }

    /// Whether the heap holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the heap did so far.
    pub fn stats(&self) -> CooperativeStats {
        self.lock().stats
    }

    /// Inserts `keys`: those below the fence into the host top, the rest towards the device.
    /// The keys are the heap's once they are in host memory; moving them on to the device
    /// (a flush of the pending keys, a spill of the top) is the heap's own business: if the
    /// device fails there, the keys stay pending, the move is tried again by the next call
    /// that needs the device, and that call returns the fault if it persists.
    pub fn insert(&self, keys: &[T]) -> Result<()> {
        let mut s = self.lock();
        for &key in keys {
            let r = key.to_repr();
            let to_top = match s.fence {
                Fence::Low => false,
                Fence::At(f) => r < f,
                Fence::High => true,
            };
            if to_top {
                s.top.extra.push(Reverse(r));
                s.stats.inserted_on_host += 1;
            } else {
                s.pending.push(r);
            }
        }
        let deferred = |moved: Result<()>| match moved {
            Err(e) if e.is_device_fault() => Ok(()),
            other => other,
        };
        if s.pending.len() >= self.flush {
            deferred(self.flush_pending(&mut s))?;
        }
        if s.top.len() > self.top_capacity {
            deferred(self.spill(&mut s))?;
        }
        Ok(())
    }

    /// Removes the `n` smallest keys and returns them sorted (fewer if the heap holds fewer).
    pub fn delete_min(&self, n: usize) -> Result<Vec<T>> {
        let mut s = self.lock();
        let mut out = Vec::with_capacity(n.min(1 << 20));
        while out.len() < n {
            let taken = s.top.take(n - out.len(), &mut out);
            s.stats.served_by_host += taken as u64;
            if out.len() < n && !self.refill_top(&mut s, n - out.len())? {
                break;
            }
        }
        Ok(out.into_iter().map(T::from_repr).collect())
    }

    /// The smallest key, without removing it.
    pub fn peek(&self) -> Result<Option<T>> {
        let s = self.lock();
        if let Some(r) = s.top.peek() {
            return Ok(Some(T::from_repr(r)));
        }
        let pending = s.pending.iter().min().copied();
        let device = self.device.peek()?.map(|k| k.to_repr());
        Ok(match (pending, device) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(T::from_repr))
    }

    /// Removes every key and resets the counters: the heap is as new (the fence back at −∞).
    pub fn clear(&self) -> Result<()> {
        let mut s = self.lock();
        self.device.clear()?;
        s.top.clear();
        s.pending.clear();
        s.fence = Fence::Low;
        s.stats = CooperativeStats::default();
        Ok(())
    }

    fn flush_pending(&self, s: &mut State<T::Repr>) -> Result<()> {
        if s.pending.is_empty() {
            return Ok(());
        }
        let keys: Vec<T> = s.pending.iter().map(|&r| T::from_repr(r)).collect();
        self.device.insert(&keys)?;
        s.stats.device_inserts += 1;
        s.stats.keys_to_device += keys.len() as u64;
        s.pending.clear();
        Ok(())
    }

    /// Moves the smallest keys of the device side into the empty top. Returns false when the
    /// device side is empty too.
    fn refill_top(&self, s: &mut State<T::Repr>, wanted: usize) -> Result<bool> {
        self.flush_pending(s)?;
        if self.device.is_empty() {
            s.fence = Fence::High;
            return Ok(false);
        }
        // At least a refill, at most what the device holds (`wanted` may be usize::MAX).
        let want = wanted
            .min(self.device.len())
            .max(self.refill)
            .next_multiple_of(self.device.batch());
        let keys = self.device.delete_min(want)?;
        s.stats.refills += 1;
        s.stats.keys_from_device += keys.len() as u64;
        // Sorted: the last is the largest; every key left on the device is ≥ it.
        s.fence = if self.device.is_empty() {
            Fence::High
        } else {
            match keys.last() {
                Some(k) => Fence::At(k.to_repr()),
                None => {
                    return Err(Error::corrupted(
                        "the cooperative heap",
                        "a refill from a non-empty device heap returned no key",
                    ))
                }
            }
        };
        s.top.run.extend(keys.into_iter().map(|k| k.to_repr()));
        Ok(true)
    }

    /// Sends the larger half of the top to the device; the fence becomes its smallest key.
    fn spill(&self, s: &mut State<T::Repr>) -> Result<()> {
        let mut sorted = s.top.drain_sorted();
        let keep = sorted.len() / 2;
        let moved = sorted.split_off(keep);
        s.top.run = sorted.into();
        // Pending keys are ≥ the old fence > every top key: they may stay where they are.
        s.pending.extend_from_slice(&moved);
        s.fence = Fence::At(moved[0]);
        s.stats.spills += 1;
        self.flush_pending(s)
    }

    fn lock(&self) -> MutexGuard<'_, State<T::Repr>> {
        // The host state is consistent between statements that can fail: a panic elsewhere
        // leaves it usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
