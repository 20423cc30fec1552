//! Freed SVM allocations kept for reuse (a caching allocator, as CUDA frameworks keep one).
//!
//! On NVIDIA's OpenCL (coarse SVM) `clSVMAlloc` and `clSVMFree` cost a driver round trip and
//! more by size, far more than the device fill that zeroes a reused buffer
//! (docs/benchmarks/runtime.md; `cargo bench --bench runtime`, group `svm_alloc_parts`). Structures
//! that grow (a heap's node storage, staging buffers sized by the call) and searches that set
//! up a few buffers each paid those driver calls every time. A buffer whose last owner drops
//! comes here instead of going back to the driver, and the next allocation of the same kind
//! and a size it covers (at most twice as large) takes it, zeroed again on the device.
//!
//! The cache is bounded ([`SvmCache::limit`]): a block larger than an eighth of the limit is
//! freed at once (a few large buffers would otherwise push out the many small ones a search
//! sets up, whose driver calls are most of what the cache saves; a large buffer's own
//! transfers outweigh its allocation), and older blocks are freed first to make room. What it
//! holds goes back to the driver when the runtime and every buffer allocated through it are
//! gone.
//!
//! Soundness: a block enters the cache only from `SvmAlloc`'s drop, that is after the last
//! launch that used it completed and no host map exists (the ownership protocol of
//! `svm.rs`); from then on only this cache knows its address, until `take` hands it to
//! exactly one new `SvmAlloc`.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ocl::core::Context;
use ocl::ffi;

use super::svm::{SvmKind, SVM_ALLOC_LOCK};

/// A freed allocation waiting for reuse.
struct Block {
    ptr: NonNull<u8>,
    bytes: usize,
    kind: SvmKind,
}

/// The free blocks, oldest first, and their bytes together.
struct Blocks {
    free: Vec<Block>,
    bytes: usize,
}

/// Freed SVM allocations of one context, kept for reuse.
pub(crate) struct SvmCache {
    context: Context,
    limit: usize,
    blocks: Mutex<Blocks>,
    reused: AtomicU64,
}

// SAFETY: the blocks are plain memory that no one else references (module docs); the context
// is a thread-safe reference-counted OpenCL handle.
unsafe impl Send for SvmCache {}
// SAFETY: as above; every access to the blocks goes through the mutex.
unsafe impl Sync for SvmCache {}

impl std::fmt::Debug for SvmCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SvmCache")
            .field("limit", &self.limit)
            .field("reused", &self.reused())
            .finish_non_exhaustive()
    }
}

impl SvmCache {
    /// A cache for allocations of `context` holding at most `limit` bytes.
    pub(crate) fn new(context: Context, limit: usize) -> Self {
        SvmCache {
            context,
            limit,
            blocks: Mutex::new(Blocks {
                free: Vec::new(),
                bytes: 0,
            }),
            reused: AtomicU64::new(0),
        }
    }

    /// The most bytes the cache holds.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Allocations served from the cache so far.
    pub(crate) fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Blocks> {
        self.blocks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A cached block of `kind` holding at least `bytes` and at most twice as many (the
    /// smallest such), with its size; the caller owns it from here.
    pub(crate) fn take(&self, bytes: usize, kind: SvmKind) -> Option<(NonNull<u8>, usize)> {
        let mut blocks = self.lock();
        let most = bytes.saturating_mul(2);
        let (i, _) = blocks
            .free
            .iter()
            .enumerate()
            .filter(|(_, b)| b.kind == kind && b.bytes >= bytes && b.bytes <= most)
            .min_by_key(|(_, b)| b.bytes)?;
        let block = blocks.free.remove(i);
        blocks.bytes -= block.bytes;
        self.reused.fetch_add(1, Ordering::Relaxed);
        Some((block.ptr, block.bytes))
    }

    /// Keeps a freed allocation of this cache's context for reuse; false when it is larger
    /// than an eighth of the limit (the caller frees it). Older blocks are freed to make room.
    ///
    /// # Safety
    /// `ptr` must be an allocation of `bytes` bytes of `kind` made by `clSVMAlloc` in this
    /// cache's context, which nothing uses any more and nothing else will free.
    pub(crate) unsafe fn put(&self, ptr: NonNull<u8>, bytes: usize, kind: SvmKind) -> bool {
        if bytes > self.limit / 8 {
            return false;
        }
        let evicted = {
            let mut blocks = self.lock();
            let mut evicted = Vec::new();
            while blocks.bytes + bytes > self.limit && !blocks.free.is_empty() {
                let old = blocks.free.remove(0);
                blocks.bytes -= old.bytes;
                evicted.push(old);
            }
            blocks.free.push(Block { ptr, bytes, kind });
            blocks.bytes += bytes;
            evicted
        };
        for block in evicted {
            // SAFETY: an evicted block came in through `put`, whose contract makes it an
            // unused allocation of this context that only the cache may free; it has just
            // left the list, so nothing else can take or free it.
            unsafe { self.free(block) };
        }
        true
    }

    /// # Safety
    /// `block` must be an allocation of this cache's context that nothing uses or frees.
    unsafe fn free(&self, block: Block) {
        let _serial = SVM_ALLOC_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the caller's contract: a live allocation of `self.context`, unused, freed
        // once here.
        unsafe { ffi::clSVMFree(self.context.as_ptr(), block.ptr.as_ptr() as *mut c_void) };
    }
}

impl Drop for SvmCache {
    fn drop(&mut self) {
        let blocks = std::mem::take(&mut self.lock().free);
        for block in blocks {
            // SAFETY: every block in the list came in through `put` (an unused allocation of
            // this context) and was never taken back out.
            unsafe { self.free(block) };
        }
    }
}
