//! Owned SVM allocations and host access to them.
//!
//! # Ownership protocol
//!
//! An allocation has exactly one host owner, [`SvmBuffer`], and any number of in-flight kernel
//! launches that hold an `Arc<SvmAlloc>` to it. The allocation is freed when the last `Arc`
//! drops, so memory a kernel may still use is never freed: a launch drops its `Arc`s only after
//! its event completed (or leaks them if the kernel never finishes).
//!
//! `SvmAlloc::state` arbitrates between the host and the device:
//! - bit 0 (`MAPPED`) is set while a [`SvmMap`] guard gives the host plain (non-atomic) access;
//! - the remaining bits count launches that use the allocation and have not completed.
//!
//! A map is refused while launches are in flight, and a launch is refused while the buffer is
//! mapped: plain host accesses never race with a kernel.
//!
//! On coarse SVM the unmap is not waited for: its event is kept (`pending_unmap`) and every
//! later launch that uses the allocation waits for it on the device (an event wait list), a
//! later map is ordered after it by the in-order queue, and the allocation waits for it before
//! it is freed. That saves one host/driver synchronisation per hand-off. Concurrent host/kernel access is only
//! offered through [`SvmBuffer::atomics`], on fine-grained allocations with SVM atomics.

use std::alloc::Layout;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ocl::core::{CommandQueue, Context, Event};
use ocl::ffi;

use super::stream::copy_bits_streaming_par;
use super::svm_cache::SvmCache;
use super::svm_map::{SvmMap, SvmReadMap};
use crate::backoff::poll_within;
use crate::error::{Error, Result, Side};
use crate::faults::{FaultPoint, Faults};

const MAPPED: usize = 1;
const IN_FLIGHT_ONE: usize = 2;

/// How an SVM allocation is shared between host and device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmKind {
    /// Coarse-grained buffer SVM: the same pointer on both sides, ownership passes by map/unmap.
    Coarse,
    /// Fine-grained buffer SVM: host and device see each other's writes at synchronisation
    /// points, without map/unmap.
    Fine,
    /// Fine-grained buffer SVM with SVM atomics: host and a running kernel may use atomics on
    /// the same words at the same time.
    FineAtomics,
}

impl SvmKind {
    fn flags(self) -> ffi::cl_bitfield {
        let rw = ffi::CL_MEM_READ_WRITE;
        match self {
            SvmKind::Coarse => rw,
            SvmKind::Fine => rw | ffi::CL_MEM_SVM_FINE_GRAIN_BUFFER,
            SvmKind::FineAtomics => {
                rw | ffi::CL_MEM_SVM_FINE_GRAIN_BUFFER | ffi::CL_MEM_SVM_ATOMICS
            }
        }
    }

    /// Whether host access needs map/unmap.
    pub fn needs_map(self) -> bool {
        self == SvmKind::Coarse
    }
}

/// Plain-old-data element types that may live in SVM.
///
/// # Safety
/// Implementors must be `Copy`, have no padding and no invalid bit patterns (all-zero bytes
/// and any bytes a kernel writes are valid values), and have the same layout as the matching
/// OpenCL C type.
pub unsafe trait SvmElement: Copy + Send + Sync + 'static + ocl::core::OclPrm {}

// SAFETY: primitive integers and floats: no padding, every bit pattern valid, same layout as
// OpenCL C's char/uchar/int/uint/long/ulong/float/double.
unsafe impl SvmElement for u8 {}
// SAFETY: as above.
unsafe impl SvmElement for i8 {}
// SAFETY: as above.
unsafe impl SvmElement for i32 {}
// SAFETY: as above.
unsafe impl SvmElement for u32 {}
// SAFETY: as above.
unsafe impl SvmElement for i64 {}
// SAFETY: as above.
unsafe impl SvmElement for u64 {}
// SAFETY: as above.
unsafe impl SvmElement for f32 {}
// SAFETY: as above.
unsafe impl SvmElement for f64 {}

/// Element types with a matching host atomic type of the same size and alignment.
///
/// # Safety
/// `Atomic` must have the same size and alignment as `Self` and be an atomic integer type.
pub unsafe trait SvmAtomicElement: SvmElement {
    /// The host atomic with the same in-memory representation.
    type Atomic: Send + Sync;
}
// SAFETY: AtomicU32 has the size and alignment of u32.
unsafe impl SvmAtomicElement for u32 {
    type Atomic = AtomicU32;
}
// SAFETY: AtomicI32 has the size and alignment of i32.
unsafe impl SvmAtomicElement for i32 {
    type Atomic = AtomicI32;
}
// SAFETY: AtomicU64 has the size and alignment of u64 (on every target with 64-bit atomics,
// which `AtomicU64` existing implies).
unsafe impl SvmAtomicElement for u64 {
    type Atomic = AtomicU64;
}

/// One SVM allocation, shared by its host owner and the launches that use it.
#[derive(Debug)]
pub(crate) struct SvmAlloc {
    ptr: NonNull<u8>,
    bytes: usize,
    kind: SvmKind,
    context: Context,
    queue: CommandQueue,
    state: AtomicUsize,
    pending_unmap: Mutex<Option<Event>>,
    /// Where the allocation goes when its last owner drops (else back to the driver).
    cache: Option<Arc<SvmCache>>,
    /// The runtime's injected faults, checked at every map (`None`: outside a runtime).
    faults: Option<Arc<Faults>>,
}

// SAFETY: the allocation is plain memory owned by this object; every host access goes through
// `SvmMap` (exclusive, checked by `state`) or through atomics. The OpenCL handles are
// thread-safe reference-counted objects (`ocl` marks them Send + Sync).
unsafe impl Send for SvmAlloc {}
// SAFETY: as above; `&SvmAlloc` only exposes atomic state updates and the raw pointer value.
unsafe impl Sync for SvmAlloc {}

/// Serialises `clSVMAlloc`/`clSVMFree` across the process: NVIDIA's driver (580.x, H200)
/// returned null for 128-byte coarse allocations when several threads allocated at once (seen
/// in parallel tests); allocations are rare, so a lock costs nothing that matters.
pub(crate) static SVM_ALLOC_LOCK: Mutex<()> = Mutex::new(());

/// Alignment of every SVM allocation: a cache line on both sides (and a d-heap block of 16
/// int32 keys), so structures can lay out aligned blocks and keep hot words apart.
pub(crate) const SVM_ALIGN: u32 = 128;

/// The largest piece one device-side fill or one blocking copy moves. A device heap of 2^30
/// keys (its first buffers over 4 GiB) made no visible progress for minutes on NVIDIA's
/// OpenCL, while every buffer of up to 4 GiB worked there, filled and copied whole; which
/// call stalled is not known yet. Pieces keep each fill and copy within
/// the sizes known to work, for one enqueue per GiB.
const TRANSFER_PIECE: usize = 1 << 30;
/// Copies of at most this many bytes between host memory and SVM go through a map of the
/// range (on fine SVM, where a map enqueues nothing, a plain copy) instead of the driver's
/// blocking `clEnqueueSVMMemcpy`. The copies that pay per call are small ones (a round's
/// counters, a control word): a map costs NVIDIA's driver less than its blocking copy, and
/// PoCL's memcpy costs tens of microseconds where a host copy of fine SVM costs nanoseconds.
/// Larger transfers keep the driver's copy engine (docs/benchmarks/runtime.md).
const MAPPED_COPY_LIMIT: usize = 64 << 10;

/// How long zeroing a new buffer may take before the allocation reports a stall (far more
/// than any device has needed): with it, a fill that never finishes is an error, not a hang.
const FILL_BOUND: Duration = Duration::from_secs(120);

/// `bytes` (a multiple of [`SVM_ALIGN`]) of `kind` SVM from the driver.
fn driver_alloc(context: &Context, bytes: usize, kind: SvmKind) -> Result<NonNull<u8>> {
    let raw = {
        let _serial = SVM_ALLOC_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: `context` is a live context; flags and alignment are valid values. A null
        // return means failure and is checked below.
        unsafe { ffi::clSVMAlloc(context.as_ptr(), kind.flags(), bytes, SVM_ALIGN) }
    };
    NonNull::new(raw as *mut u8).ok_or_else(|| {
        Error::OutOfMemory(format!(
            "clSVMAlloc returned null for {bytes} bytes of {kind:?} SVM \
             (device memory exhausted, or the device does not support {kind:?} SVM)"
        ))
    })
}

impl SvmAlloc {
    fn new(
        context: &Context,
        queue: &CommandQueue,
        bytes: usize,
        kind: SvmKind,
        cache: Option<&Arc<SvmCache>>,
    ) -> Result<Self> {
        let request = bytes.max(1).next_multiple_of(SVM_ALIGN as usize);
        if request > u32::MAX as usize * 16 || Layout::from_size_align(request, 1).is_err() {
            return Err(Error::OutOfMemory(format!(
                "SVM allocation of {bytes} bytes is too large"
            )));
        }
        let (ptr, bytes) = match cache.and_then(|c| c.take(request, kind)) {
            Some(block) => block,
            None => (driver_alloc(context, request, kind)?, request),
        };
        SvmAlloc::holding(ptr, bytes, kind, context, queue, cache.cloned()).zeroed()
    }

    /// The owner of `bytes` of `kind` SVM at `ptr` (from the driver or the cache), not yet
    /// zeroed.
    fn holding(
        ptr: NonNull<u8>,
        bytes: usize,
        kind: SvmKind,
        context: &Context,
        queue: &CommandQueue,
        cache: Option<Arc<SvmCache>>,
    ) -> Self {
        SvmAlloc {
            ptr,
            bytes,
            kind,
            context: context.clone(),
            queue: queue.clone(),
            state: AtomicUsize::new(0),
            pending_unmap: Mutex::new(None),
            cache,
            faults: None,
        }
    }

    /// The allocation zeroed, so every element starts initialised: a device-side fill (a
    /// memset on the device for coarse SVM on a GPU, instead of a host loop over mapped
    /// memory), waited for before anyone can touch the buffer.
    fn zeroed(self) -> Result<Self> {
        if let Err(e) = self.zero() {
            // A fill that did not finish may still write: the memory must outlive it.
            std::mem::forget(self);
            return Err(e);
        }
        Ok(self)
    }

    /// Allocates, zeroes and frees `bytes` of `kind` SVM, timing each part: what
    /// `SvmBuffer::allocate` and the buffer's drop cost, split (runtime benchmarks).
    pub(crate) fn time_phases(
        context: &Context,
        queue: &CommandQueue,
        bytes: usize,
        kind: SvmKind,
    ) -> Result<[std::time::Duration; 3]> {
        use std::time::Instant;
        let t = Instant::now();
        let request = bytes.max(1).next_multiple_of(SVM_ALIGN as usize);
        let ptr = driver_alloc(context, request, kind)?;
        let alloc = SvmAlloc::holding(ptr, request, kind, context, queue, None);
        let allocated = t.elapsed();
        let t = Instant::now();
        let alloc = alloc.zeroed()?;
        let zeroed = t.elapsed();
        let t = Instant::now();
        drop(alloc);
        Ok([allocated, zeroed, t.elapsed()])
    }

    /// Fills the allocation with zeros on the device, in pieces of at most [`TRANSFER_PIECE`]
    /// bytes, and waits at most [`FILL_BOUND`] for them.
    fn zero(&self) -> Result<()> {
        let pattern = 0u32;
        let mut events = Vec::with_capacity(self.bytes.div_ceil(TRANSFER_PIECE));
        for at in (0..self.bytes).step_by(TRANSFER_PIECE) {
            let len = TRANSFER_PIECE.min(self.bytes - at);
            let mut raw_event: ffi::cl_event = std::ptr::null_mut();
            // SAFETY: `at..at + len` lies inside this allocation and is a multiple of the
            // 4-byte pattern (the allocation's size and TRANSFER_PIECE are multiples of
            // SVM_ALIGN); the pattern lives across the call (the runtime copies it);
            // `raw_event` is a valid out-pointer.
            let code = unsafe {
                ffi::clEnqueueSVMMemFill(
                    self.queue.as_ptr(),
                    self.ptr.as_ptr().add(at) as *mut c_void,
                    &pattern as *const u32 as *const c_void,
                    std::mem::size_of::<u32>(),
                    len,
                    0,
                    std::ptr::null(),
                    &mut raw_event,
                )
            };
            if code != 0 {
                return Err(Error::status(
                    "clEnqueueSVMMemFill",
                    "zeroing a new SVM buffer",
                    code,
                ));
            }
            // SAFETY: a successful enqueue returned a new event with one reference, owned
            // here.
            events.push(unsafe { Event::from_raw_create_ptr(raw_event) });
        }
        // The pieces finish in order on the in-order queue: wait for each in turn.
        let mut next = 0;
        poll_within(
            FILL_BOUND,
            || {
                while let Some(event) = events.get(next) {
                    let status = ocl::core::event_status(event)
                        .map_err(|e| Error::ocl("clGetEventInfo", "SVM fill", e))?;
                    if status != ocl::core::CommandExecutionStatus::Complete {
                        return Ok(None);
                    }
                    next += 1;
                }
                Ok(Some(()))
            },
            |waited_ms| Error::Stalled {
                side: Side::Device,
                waiting_for: format!("zeroing a new SVM buffer of {} bytes", self.bytes),
                waited_ms,
                detail: format!("{} fill pieces of {TRANSFER_PIECE} bytes", events.len()),
            },
        )
    }

    /// Whether the allocation was made in `context` (a kernel of another context must not
    /// be handed its pointer).
    pub(crate) fn in_context(&self, context: &Context) -> bool {
        self.context.as_ptr() == context.as_ptr()
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Marks the allocation as used by a launch; refused while it is mapped on the host.
    pub(crate) fn begin_use(&self) -> Result<()> {
        self.state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & MAPPED == 0).then_some(s + IN_FLIGHT_ONE)
            })
            .map(|_| ())
            .map_err(|_| {
                Error::Busy("a kernel cannot use an SVM buffer the host has mapped".into())
            })
    }

    /// The event of the last unmap, if it may not have completed: launches wait for it.
    pub(crate) fn pending_unmap(&self) -> Option<Event> {
        self.pending_unmap
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How long the last unmap ran on the device (the host-to-device transfer of a coarse
    /// buffer), once it has completed; `None` before, on fine SVM, or without profiling.
    pub(crate) fn last_transfer_time(&self) -> Option<std::time::Duration> {
        let event = self.pending_unmap()?;
        super::event_device_time(&event)
    }

    /// Ends one launch's use (its event completed).
    pub(crate) fn end_use(&self) {
        let prev = self.state.fetch_sub(IN_FLIGHT_ONE, Ordering::AcqRel);
        debug_assert!(prev >= IN_FLIGHT_ONE, "end_use without begin_use");
    }

    fn in_flight(&self) -> usize {
        self.state.load(Ordering::Acquire) / IN_FLIGHT_ONE
    }

    /// Takes exclusive host access: refused while launches are in flight or another map exists.
    /// On coarse SVM `access` says which way the contents travel (see [`MapAccess`]).
    fn map_raw(&self, access: MapAccess) -> Result<RawMap<'_>> {
        self.map_raw_range(access, 0, self.bytes)
    }

    /// [`SvmAlloc::map_raw`] of bytes `at..at + bytes` only (checked by the caller to lie
    /// inside the allocation): on coarse SVM only that range travels.
    fn map_raw_range(&self, access: MapAccess, at: usize, bytes: usize) -> Result<RawMap<'_>> {
        if let Some(faults) = &self.faults {
            faults.check(FaultPoint::Map, || "an SVM map".into())?;
        }
        let claim = self.map_claim()?;
        let raw = RawMap {
            alloc: self,
            at,
            done: false,
        };
        if self.kind.needs_map() {
            // SAFETY: queue and pointer belong to the same context; the region `at..at +
            // bytes` lies inside the allocation (caller's check); the call is blocking, so
            // the host may touch the memory on return.
            let code = unsafe {
                ffi::clEnqueueSVMMap(
                    self.queue.as_ptr(),
                    ffi::CL_TRUE,
                    match access {
                        MapAccess::ReadWrite => ffi::CL_MAP_READ | ffi::CL_MAP_WRITE,
                        MapAccess::Read => ffi::CL_MAP_READ,
                        MapAccess::Overwrite => ffi::CL_MAP_WRITE_INVALIDATE_REGION,
                    },
                    self.ptr.as_ptr().add(at) as *mut c_void,
                    bytes,
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            };
            if code != 0 {
                // Not mapped: release the claim (`claim`'s drop) without enqueueing an unmap.
                std::mem::forget(raw);
                return Err(Error::status(
                    "clEnqueueSVMMap",
                    "mapping an SVM buffer",
                    code,
                ));
            }
        }
        // From here the map guard releases the claim (after its unmap).
        std::mem::forget(claim);
        Ok(raw)
    }
}

impl SvmAlloc {
    /// Copies `bytes` bytes from host memory at `src` to offset `at` of the allocation.
    ///
    /// # Safety
    /// `src` must be valid for reads of `bytes` bytes for the duration of the call, and
    /// `at + bytes` must not exceed the allocation.
    unsafe fn copy_in(&self, at: usize, src: *const u8, bytes: usize) -> Result<()> {
        if bytes <= MAPPED_COPY_LIMIT {
            let mut map = self.map_raw_range(MapAccess::Overwrite, at, bytes)?;
            // SAFETY: the map covers `bytes` bytes from `map.ptr()` (the range lies inside the
            // allocation: caller's contract), host-writable until the unmap; `src` is readable
            // for `bytes` (caller's contract) and cannot lie in this allocation, whose host
            // access goes through the claim this map holds: the ranges do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(src, map.ptr(), bytes) };
            return map.unmap();
        }
        // SAFETY: `at + bytes` lies inside the allocation and `src` is readable for `bytes`
        // (caller's contract).
        let dst = unsafe { self.ptr.as_ptr().add(at) };
        // SAFETY: as above: both ranges are valid for `bytes`.
        unsafe {
            self.memcpy(
                dst as *mut c_void,
                src as *const c_void,
                bytes,
                "copying host memory into SVM",
            )
        }
    }

    /// Copies `bytes` bytes at byte offset `at` of the allocation to `dst`.
    ///
    /// # Safety
    /// `at + bytes` must lie inside the allocation and `dst` must be writable for `bytes`.
    unsafe fn copy_out(&self, at: usize, dst: *mut u8, bytes: usize) -> Result<()> {
        if bytes <= MAPPED_COPY_LIMIT {
            let mut map = self.map_raw_range(MapAccess::Read, at, bytes)?;
            // SAFETY: the map covers `bytes` bytes from `map.ptr()`, host-readable until the
            // unmap; `dst` is writable for `bytes` (caller's contract) and cannot lie in this
            // allocation, whose host access goes through the claim this map holds.
            unsafe { std::ptr::copy_nonoverlapping(map.ptr(), dst, bytes) };
            return map.unmap();
        }
        // SAFETY: `at + bytes` lies inside the allocation (caller's contract).
        let src = unsafe { self.ptr.as_ptr().add(at) };
        // SAFETY: as above; `dst` is writable for `bytes` (caller's contract).
        unsafe {
            self.memcpy(
                dst as *mut c_void,
                src as *const c_void,
                bytes,
                "copying SVM into host memory",
            )
        }
    }

    /// Blocking `clEnqueueSVMMemcpy`s (the driver's DMA path; no host mapping) of at most
    /// [`TRANSFER_PIECE`] bytes each, under the same exclusive claim as a map; `what` names
    /// the copy in errors.
    ///
    /// # Safety
    /// `src` must be readable and `dst` writable for `bytes` bytes for the duration of the
    /// call, and the one of them inside this allocation must lie wholly inside it.
    unsafe fn memcpy(
        &self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        what: &str,
    ) -> Result<()> {
        let raw = self.map_claim()?;
        for at in (0..bytes).step_by(TRANSFER_PIECE) {
            let len = TRANSFER_PIECE.min(bytes - at);
            // SAFETY: `at + len <= bytes`, and both ranges are valid for `bytes` (caller's
            // contract), so both pieces lie inside them; the copy is blocking, so it has
            // finished with both on return. The claim keeps launches and host maps away
            // meanwhile.
            let code = unsafe {
                ffi::clEnqueueSVMMemcpy(
                    self.queue.as_ptr(),
                    ffi::CL_TRUE,
                    (dst as *mut u8).add(at) as *mut c_void,
                    (src as *const u8).add(at) as *const c_void,
                    len,
                    0,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                )
            };
            if code != 0 {
                return Err(Error::status("clEnqueueSVMMemcpy", what, code));
            }
        }
        drop(raw);
        Ok(())
    }

    /// The exclusive claim of a map without mapping: released on drop.
    fn map_claim(&self) -> Result<Claim<'_>> {
        self.state
            .compare_exchange(0, MAPPED, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|s| {
                Error::Busy(if s & MAPPED != 0 {
                    "the SVM buffer is mapped on the host".into()
                } else {
                    format!(
                        "{} kernel launch(es) using this SVM buffer have not completed",
                        s / IN_FLIGHT_ONE
                    )
                })
            })?;
        Ok(Claim(self))
    }
}

/// Exclusive access to an allocation without a host mapping (see `SvmAlloc::map_claim`).
struct Claim<'a>(&'a SvmAlloc);

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.0.state.store(0, Ordering::Release);
    }
}

impl Drop for SvmAlloc {
    fn drop(&mut self) {
        debug_assert_eq!(self.in_flight(), 0, "SVM allocation dropped while in use");
        if let Some(event) = self
            .pending_unmap
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            if let Err(e) = ocl::core::wait_for_event(&event) {
                // The unmap may still touch the memory: leak it rather than free it.
                eprintln!("asym: waiting for an SVM unmap failed ({e}); leaking the allocation");
                return;
            }
        }
        if let Some(cache) = &self.cache {
            // SAFETY: as for the free below: the last `Arc` is gone, so nothing uses the
            // memory; it is an allocation of the cache's context (the runtime hands its cache
            // only to allocations in its context), and `self` will not free it once kept.
            if unsafe { cache.put(self.ptr, self.bytes, self.kind) } {
                return;
            }
        }
        let _serial = SVM_ALLOC_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the last `Arc` is gone, so no launch can use the memory any more (launches
        // hold an `Arc` until their event completes) and no host reference exists. On the
        // coarse transport a map guard cannot outlive its buffer either.
        unsafe { ffi::clSVMFree(self.context.as_ptr(), self.ptr.as_ptr() as *mut c_void) };
    }
}

/// Which way a coarse map moves a buffer's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MapAccess {
    /// Device to host at the map, host to device at the unmap.
    ReadWrite,
    /// Device to host at the map only: the host promises not to write (`CL_MAP_READ`), so
    /// the unmap copies nothing back.
    Read,
    /// Host to device at the unmap only (`CL_MAP_WRITE_INVALIDATE_REGION`): the host
    /// promises to overwrite what it touches, so the map brings nothing back first.
    Overwrite,
}

/// Exclusive host access to an allocation (a range of it mapped); unmaps on `unmap` or drop.
pub(super) struct RawMap<'a> {
    alloc: &'a SvmAlloc,
    /// Where the mapped range starts, in bytes from the allocation's start.
    at: usize,
    done: bool,
}

impl RawMap<'_> {
    /// The first mapped byte.
    pub(super) fn ptr(&self) -> *mut u8 {
        // SAFETY: `at` lies inside the allocation (checked when the range was mapped).
        unsafe { self.alloc.as_ptr().add(self.at) }
    }

    pub(super) fn unmap(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let alloc = self.alloc;
        if alloc.kind.needs_map() {
            let mut raw_event: ffi::cl_event = std::ptr::null_mut();
            // SAFETY: the pointer was mapped by `map_raw_range` on this queue and is unmapped
            // once (`done` guards against a second unmap); `raw_event` is a valid out-pointer.
            let code = unsafe {
                ffi::clEnqueueSVMUnmap(
                    alloc.queue.as_ptr(),
                    self.ptr() as *mut c_void,
                    0,
                    std::ptr::null(),
                    &mut raw_event,
                )
            };
            if code != 0 {
                // Leave MAPPED set: the device must not use memory whose hand-off failed.
                return Err(Error::status(
                    "clEnqueueSVMUnmap",
                    "unmapping an SVM buffer",
                    code,
                ));
            }
            // SAFETY: a successful enqueue returned a new event with one reference, which this
            // `Event` now owns and releases on drop.
            let event = unsafe { Event::from_raw_create_ptr(raw_event) };
            // Not waited for here: launches wait for it on the device (module docs).
            ocl::core::flush(&alloc.queue)
                .map_err(|e| Error::ocl("clFlush", "after SVM unmap", e))?;
            *alloc
                .pending_unmap
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(event);
        }
        alloc.state.store(0, Ordering::Release);
        Ok(())
    }
}

impl Drop for RawMap<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.unmap() {
            eprintln!("asym: {e}; the buffer stays marked as mapped");
        }
    }
}

/// A typed SVM buffer owned by the host, freed on drop (after every launch that uses it).
///
/// Host access: [`SvmBuffer::map`] (exclusive, any kind) or [`SvmBuffer::atomics`] (shared with
/// running kernels, fine-grained buffers with atomics only).
pub struct SvmBuffer<T: SvmElement> {
    alloc: Arc<SvmAlloc>,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: SvmElement> std::fmt::Debug for SvmBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SvmBuffer")
            .field("len", &self.len)
            .field("kind", &self.alloc.kind)
            .field("ptr", &self.alloc.ptr)
            .finish()
    }
}

impl<T: SvmElement> SvmBuffer<T> {
    /// Allocates `len` zeroed elements of `kind` SVM in `context`; `queue` serves maps.
    /// With a `cache` (of `context`), a freed block of it is reused when one fits, and this
    /// allocation goes back to it when its last owner drops.
    pub(crate) fn allocate(
        context: &Context,
        queue: &CommandQueue,
        len: usize,
        kind: SvmKind,
        cache: Option<&Arc<SvmCache>>,
        faults: Option<&Arc<Faults>>,
    ) -> Result<Self> {
        if let Some(faults) = faults {
            faults.check(FaultPoint::Alloc, || "an SVM allocation".into())?;
        }
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::OutOfMemory(format!(
                "{len} elements of {} bytes overflow",
                size_of::<T>()
            ))
        })?;
        let mut alloc = SvmAlloc::new(context, queue, bytes, kind, cache)?;
        alloc.faults = faults.cloned();
        Ok(SvmBuffer {
            alloc: Arc::new(alloc),
            len,
            _element: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The sharing level of the allocation.
    pub fn kind(&self) -> SvmKind {
        self.alloc.kind
    }

    /// The buffer's address in the shared virtual address space, as stored inside SVM
    /// structures for kernels to follow (declare the target with `Kernel::use_indirect_svm`).
    pub fn svm_address(&self) -> u64 {
        self.alloc.as_ptr() as u64
    }

    /// Number of kernel launches using the buffer that have not completed.
    pub fn launches_in_flight(&self) -> usize {
        self.alloc.in_flight()
    }

    /// How long the last unmap ran on the device: on the coarse transport, the copy of what
    /// the host wrote to the device. `None` until it completed (a launch that used the buffer
    /// has finished), on the fine transport, or where the driver gives no profiling times.
    pub fn last_transfer_time(&self) -> Option<std::time::Duration> {
        self.alloc.last_transfer_time()
    }

    pub(crate) fn shared(&self) -> &Arc<SvmAlloc> {
        &self.alloc
    }

    /// Exclusive host access: a blocking map on coarse SVM, nothing to enqueue on fine SVM.
    /// Fails with [`Error::Busy`] while a kernel launch that uses the buffer has not completed.
    pub fn map(&mut self) -> Result<SvmMap<'_, T>> {
        let raw = self.alloc.map_raw(MapAccess::ReadWrite)?;
        Ok(SvmMap {
            raw,
            len: self.len,
            _element: PhantomData,
        })
    }

    /// Exclusive host access for reading only: on coarse SVM the contents come to the host
    /// at the map and nothing goes back at the unmap (a [`SvmBuffer::map`] copies the whole
    /// buffer back to the device). Fails with [`Error::Busy`] as `map` does.
    pub fn map_read(&mut self) -> Result<SvmReadMap<'_, T>> {
        let raw = self.alloc.map_raw(MapAccess::Read)?;
        Ok(SvmReadMap {
            raw,
            len: self.len,
            _element: PhantomData,
        })
    }

    /// Exclusive host access for overwriting: on coarse SVM the device's current contents are
    /// not brought back (`CL_MAP_WRITE_INVALIDATE_REGION`), so what the guard shows before the
    /// host writes is unspecified (but initialised) data. For staging uploads.
    pub fn map_for_overwrite(&mut self) -> Result<SvmMap<'_, T>> {
        let raw = self.alloc.map_raw(MapAccess::Overwrite)?;
        Ok(SvmMap {
            raw,
            len: self.len,
            _element: PhantomData,
        })
    }

    /// [`SvmBuffer::map_for_overwrite`] of elements `at..at + len` only: on coarse SVM only
    /// that range travels to the device at the unmap (a large upload into a longer staging
    /// buffer), and the guard shows those `len` elements.
    pub fn map_range_for_overwrite(&mut self, at: usize, len: usize) -> Result<SvmMap<'_, T>> {
        self.map_range_for_overwrite_as::<T>(at, len)
    }

    /// [`SvmBuffer::map_range_for_overwrite`] as elements of another type of the same size
    /// (keys written in the caller's form into a buffer typed by the device's).
    pub fn map_range_for_overwrite_as<U: SvmElement>(
        &mut self,
        at: usize,
        len: usize,
    ) -> Result<SvmMap<'_, U>> {
        self.check_copy::<U>(at, len, "mapping", "in")?;
        let size = size_of::<T>();
        // An empty range maps one byte at the start (a map needs a non-empty region).
        let (from, bytes) = if len == 0 {
            (0, 1)
        } else {
            (at * size, len * size)
        };
        let raw = self
            .alloc
            .map_raw_range(MapAccess::Overwrite, from, bytes)?;
        Ok(SvmMap {
            raw,
            len,
            _element: PhantomData,
        })
    }

    /// Copies `data` into the buffer (map, copy, unmap). `data.len()` must equal `len()`.
    pub fn write(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::too_large(
                "elements written into an SVM buffer",
                data.len(),
                self.len,
            ));
        }
        let mut map = self.map_for_overwrite()?;
        map.copy_from_slice(data);
        map.unmap()
    }

    /// Copies `src` into elements `at..at + src.len()` with the driver's copy engine
    /// (`clEnqueueSVMMemcpy`, blocking) instead of a host mapping of the buffer: no host-side
    /// staging pass; up to 64 KiB through a map of that range alone, which costs less per call.
    /// `U` must have `T`'s size; its bits are copied as they are (a `&[f32]` into an `i32`
    /// buffer gives the floats' bit patterns, valid since every bit pattern of an
    /// [`SvmElement`] is).
    pub fn copy_from_host<U: SvmElement>(&mut self, at: usize, src: &[U]) -> Result<()> {
        self.check_copy::<U>(at, src.len(), "copying", "into")?;
        if src.is_empty() {
            return Ok(());
        }
        let size = size_of::<T>();
        // SAFETY: `src` is a live slice of `src.len() * size` bytes (U has T's size, checked)
        // borrowed across the (blocking) call; the range `at..at + src.len()` was checked
        // against the buffer above; any bits are a valid T (SvmElement's contract).
        unsafe {
            self.alloc
                .copy_in(at * size, src.as_ptr() as *const u8, src.len() * size)
        }
    }

    /// Copies `src` to elements `at..at + src.len()`: up to 4 MiB with the driver's copy
    /// engine ([`SvmBuffer::copy_from_host`]); larger copies map just that range and write it
    /// with streaming stores from rayon's threads ([`copy_bits_streaming_par`]), which beat
    /// the driver's copy engine for large copies on the GPU machine
    /// (docs/benchmarks/heap.md). Like a map, it needs no launch using the buffer in
    /// flight ([`Error::Busy`] otherwise) once past 4 MiB.
    pub fn write_range<U: SvmElement>(&mut self, at: usize, src: &[U]) -> Result<()> {
        if std::mem::size_of_val(src) < (4 << 20) {
            return self.copy_from_host(at, src);
        }
        self.check_copy::<U>(at, src.len(), "copying", "into")?;
        let mut map = self.map_range_for_overwrite(at, src.len())?;
        copy_bits_streaming_par(&mut map, src)?;
        map.unmap()
    }

    /// Copies elements `at..at + len` out with the driver's copy engine
    /// (`clEnqueueSVMMemcpy`, blocking; up to 64 KiB through a map of that range, which costs
    /// less per call): on the coarse transport only that range moves, where
    /// [`SvmBuffer::read`] maps the whole buffer.
    pub fn read_range(&mut self, at: usize, len: usize) -> Result<Vec<T>> {
        self.read_range_as::<T>(at, len)
    }

    /// [`SvmBuffer::read_range`] into elements of another type of the same size (a kernel
    /// that stored keys in the caller's form, in a buffer typed by the device's).
    pub fn read_range_as<U: SvmElement>(&mut self, at: usize, len: usize) -> Result<Vec<U>> {
        self.check_copy::<U>(at, len, "reading", "from")?;
        // Huge pages where the machine allows: the prefault below touches one page per 2 MiB.
        let mut out: Vec<U> = crate::host_memory::huge_page_vec(len);
        if len == 0 {
            return Ok(out);
        }
        let size = size_of::<T>();
        prefault(&mut out, len * size);
        // SAFETY: `out` has capacity for `len` elements of U's size (T's, checked above):
        // `len * size` writable bytes, borrowed across the blocking call; the range
        // `at..at + len` was checked above.
        unsafe {
            self.alloc
                .copy_out(at * size, out.as_mut_ptr() as *mut u8, len * size)?;
        }
        // SAFETY: the copy above initialised all `len` elements, and any bits are a valid U
        // (SvmElement's contract).
        unsafe { out.set_len(len) };
        Ok(out)
    }

    /// Copies elements `at..at + out.len()` into `out` (as elements of U, of T's size) as
    /// [`SvmBuffer::read_range_as`] does, into memory the caller
    /// holds (several buffers can fill the parts of one vector).
    pub fn read_range_into<U: SvmElement>(&mut self, at: usize, out: &mut [U]) -> Result<()> {
        self.check_copy::<U>(at, out.len(), "reading", "from")?;
        if out.is_empty() {
            return Ok(());
        }
        let size = size_of::<T>();
        // SAFETY: `out` is a live, exclusively borrowed slice of `out.len() * size` bytes (U
        // has T's size, checked) held across the blocking copy; the range was checked above;
        // any bits are a valid U (SvmElement's contract).
        unsafe {
            self.alloc
                .copy_out(at * size, out.as_mut_ptr() as *mut u8, out.len() * size)
        }
    }

    /// The checks of a copy of `len` elements of U at element `at`: U has T's size, and the
    /// range lies inside the buffer. `verb` and `dir` word the error ("copying" "into").
    fn check_copy<U: SvmElement>(
        &self,
        at: usize,
        len: usize,
        verb: &str,
        dir: &str,
    ) -> Result<()> {
        if size_of::<U>() != size_of::<T>() {
            return Err(Error::InvalidArgument(format!(
                "{verb} {}-byte elements {dir} an SVM buffer of {}-byte elements",
                size_of::<U>(),
                size_of::<T>()
            )));
        }
        if at.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::out_of_range(
                format!("{verb} at offset {at}"),
                format!("{len} elements"),
                format!("{dir} an SVM buffer of {}", self.len),
            ));
        }
        Ok(())
    }

    /// Copies the buffer out (map for reading, copy, unmap).
    pub fn read(&mut self) -> Result<Vec<T>> {
        let map = self.map_read()?;
        let out = map.to_vec();
        map.unmap()?;
        Ok(out)
    }
}

impl<T: SvmAtomicElement> SvmBuffer<T> {
    /// The buffer as host atomics, usable while a kernel works on the same memory.
    ///
    /// Only for [`SvmKind::FineAtomics`] buffers: on coarse SVM a running kernel and the host do
    /// not see each other's writes, and on fine SVM without atomics they may not race.
    pub fn atomics(&self) -> Result<&[T::Atomic]> {
        if self.alloc.kind != SvmKind::FineAtomics {
            return Err(Error::InvalidArgument(format!(
                "host atomics need a fine-grained SVM buffer with atomics, this one is {:?}",
                self.alloc.kind
            )));
        }
        // SAFETY: the allocation is at least `len * size_of::<T>()` bytes, aligned to
        // SVM_ALIGN (≥ the atomic's alignment), zero-initialised (a valid atomic value) and lives
        // as long as `&self`. `T::Atomic` has `T`'s size and alignment (SvmAtomicElement's
        // contract). Plain host access (`map`) needs `&mut self`, so it cannot coexist with this
        // shared view; device accesses are the OpenCL memory model's business (kernels use
        // atomics on words they share with the host).
        Ok(
            unsafe {
                std::slice::from_raw_parts(self.alloc.as_ptr() as *const T::Atomic, self.len)
            },
        )
    }
}

/// Touches every page of `out`'s first `bytes` bytes of capacity from rayon's threads (for
/// copies of 4 MiB and more), so the driver's copy into it does not take the page faults one
/// after the other on the driver's thread (docs/benchmarks/heap.md).
fn prefault<U>(out: &mut Vec<U>, bytes: usize) {
    use rayon::prelude::*;
    const PAGE: usize = 4096;
    if bytes < (4 << 20) {
        return;
    }
    let base = out.as_mut_ptr() as *mut u8 as usize;
    (0..bytes.div_ceil(PAGE))
        .into_par_iter()
        .with_min_len(64)
        .for_each(|p| {
            // SAFETY: `out` has capacity for at least `bytes` bytes (the caller's reservation),
            // nothing else refers to that memory while `out` is borrowed mutably here, and a
            // u8 store of 0 into allocated capacity is a valid write (the elements stay
            // uninitialised as far as the Vec is concerned: its length is unchanged).
            unsafe { ((base + p * PAGE) as *mut u8).write_volatile(0) };
        });
}
