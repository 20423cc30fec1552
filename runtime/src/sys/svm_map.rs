//! The host's guards over a mapped SVM buffer ([`SvmMap`], [`SvmReadMap`]): plain slices of
//! the buffer's elements while the map lasts (see `svm.rs` for the ownership protocol that
//! makes them exclusive), unmapped on drop.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use super::svm::{RawMap, SvmAtomicElement, SvmElement};
use crate::error::Result;

/// Exclusive host access to an [`SvmBuffer`](super::SvmBuffer); unmaps on drop (or on
/// [`SvmMap::unmap`], which reports errors).
pub struct SvmMap<'a, T: SvmElement> {
    pub(super) raw: RawMap<'a>,
    pub(super) len: usize,
    pub(super) _element: PhantomData<&'a mut [T]>,
}

impl<T: SvmElement> SvmMap<'_, T> {
    /// Hands the memory back to the device and reports a failed unmap.
    pub fn unmap(mut self) -> Result<()> {
        self.raw.unmap()
    }
}

impl<T: SvmAtomicElement> SvmMap<'_, T> {
    /// The mapped memory as host atomics, so that several host threads can share it with
    /// compare-and-swap between launches (on the coarse transport, where a running kernel
    /// and the host may not share words, this is how host threads run a lock-free structure).
    pub fn atomics(&mut self) -> &[T::Atomic] {
        // SAFETY: the map guard holds exclusive host access to `len` initialised elements
        // (see `deref`), and `&mut self` keeps every other reference through this guard away
        // for the returned lifetime; `T::Atomic` has `T`'s size and alignment
        // (SvmAtomicElement's contract) and every bit pattern of `T` is a valid atomic value.
        unsafe { std::slice::from_raw_parts(self.raw.ptr() as *const T::Atomic, self.len) }
    }
}

impl<T: SvmElement> Deref for SvmMap<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the map guard holds exclusive host access (MAPPED, no launch in flight) to an
        // allocation of at least `len` zero-initialised or device-written elements of a type for
        // which every bit pattern is valid (SvmElement).
        unsafe { std::slice::from_raw_parts(self.raw.ptr() as *const T, self.len) }
    }
}

impl<T: SvmElement> DerefMut for SvmMap<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference into the memory.
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr() as *mut T, self.len) }
    }
}

/// Host access to an [`SvmBuffer`](super::SvmBuffer) for reading
/// ([`SvmBuffer::map_read`](super::SvmBuffer::map_read)); unmaps on drop (or
/// on [`SvmReadMap::unmap`], which reports errors).
pub struct SvmReadMap<'a, T: SvmElement> {
    pub(super) raw: RawMap<'a>,
    pub(super) len: usize,
    pub(super) _element: PhantomData<&'a [T]>,
}

impl<T: SvmElement> SvmReadMap<'_, T> {
    /// Hands the memory back to the device and reports a failed unmap.
    pub fn unmap(mut self) -> Result<()> {
        self.raw.unmap()
    }
}

impl<T: SvmElement> Deref for SvmReadMap<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: as in `SvmMap::deref`: the guard holds exclusive host access (MAPPED, no
        // launch in flight) to `len` initialised elements of a type for which every bit
        // pattern is valid. No `DerefMut`: the map promised the driver not to write.
        unsafe { std::slice::from_raw_parts(self.raw.ptr() as *const T, self.len) }
    }
}
