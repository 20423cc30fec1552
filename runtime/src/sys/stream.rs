//! Bulk copies into staging memory with non-temporal (streaming) stores.
//!
//! Staging buffers are written once by the host and then read by the device's DMA engine, so
//! there is no point in pulling their cache lines into the CPU's caches first. An ordinary
//! store of a line not in cache reads it from memory ("read for ownership"), then writes it
//! back later: three memory transfers per line copied. Streaming stores go straight to memory
//! through write-combining buffers: two.

use crate::error::{Error, Result};
use crate::sys::SvmElement;

/// Copies `src` into `dst` bit for bit, with streaming stores where the CPU has them (x86-64;
/// elsewhere an ordinary copy). `T` and `U` must have the same size and the slices the same
/// length. The stores are fenced before returning, so they are ordered before whatever the
/// caller does next (an unmap handing the memory to the device).
pub fn copy_bits_streaming<T: SvmElement, U: SvmElement>(dst: &mut [T], src: &[U]) -> Result<()> {
    if size_of::<T>() != size_of::<U>() || dst.len() != src.len() {
        return Err(Error::InvalidArgument(format!(
            "streaming copy of {} elements of {} bytes into {} elements of {} bytes",
            src.len(),
            size_of::<U>(),
            dst.len(),
            size_of::<T>()
        )));
    }
    let bytes = std::mem::size_of_val(src);
    // SAFETY: both slices are live for the call, hold `bytes` bytes each (same length and
    // element size, checked above), and cannot overlap (`dst` is borrowed mutably). Any bit
    // pattern is a valid `T` (SvmElement's contract).
    unsafe {
        copy_bytes(
            dst.as_mut_ptr() as *mut u8,
            src.as_ptr() as *const u8,
            bytes,
        )
    };
    Ok(())
}

/// [`copy_bits_streaming`] in chunks of 64 Ki elements on the current rayon pool (rayon's
/// global pool, or the one the caller is `install`ed in): staging uploads of many MiB are
/// bound by one core's copy bandwidth otherwise.
pub fn copy_bits_streaming_par<T: SvmElement, U: SvmElement>(
    dst: &mut [T],
    src: &[U],
) -> Result<()> {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    if dst.len() != src.len() || dst.len() <= CHUNK {
        // A single chunk, or the sizes' error.
        return copy_bits_streaming(dst, src);
    }
    dst.par_chunks_mut(CHUNK)
        .zip(src.par_chunks(CHUNK))
        .try_for_each(|(d, s)| copy_bits_streaming(d, s))
}

/// # Safety
/// `dst` valid for writes and `src` for reads of `bytes` bytes; the ranges do not overlap.
#[cfg(target_arch = "x86_64")]
unsafe fn copy_bytes(dst: *mut u8, src: *const u8, bytes: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    // Ordinary copy up to the first 16-byte-aligned destination address (streaming stores
    // need aligned destinations), and for short copies.
    let head = (dst.align_offset(16)).min(bytes);
    if bytes < 256 {
        // SAFETY: caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
        return;
    }
    // SAFETY: caller's contract; `head <= bytes`.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, head) };
    let body = (bytes - head) / 64 * 64;
    let mut i = head;
    while i < head + body {
        // SAFETY: `i + 64 <= bytes`, so every load and store stays inside the caller's ranges;
        // `dst + i` is 16-byte aligned (head aligned it, steps are multiples of 16); SSE2 is
        // part of the x86-64 baseline. Unaligned loads are allowed for the source.
        unsafe {
            let s = src.add(i) as *const __m128i;
            let d = dst.add(i) as *mut __m128i;
            let a = _mm_loadu_si128(s);
            let b = _mm_loadu_si128(s.add(1));
            let c = _mm_loadu_si128(s.add(2));
            let e = _mm_loadu_si128(s.add(3));
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
        }
        i += 64;
    }
    // SAFETY: the rest of the caller's ranges; then order the streaming stores before any
    // later store or unmap (they are weakly ordered).
    unsafe {
        std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), bytes - i);
        _mm_sfence();
    }
}

/// # Safety
/// `dst` valid for writes and `src` for reads of `bytes` bytes; the ranges do not overlap.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn copy_bytes(dst: *mut u8, src: *const u8, bytes: usize) {
    // SAFETY: caller's contract.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
}

#[cfg(test)]
mod tests {
    use super::copy_bits_streaming;

    #[test]
    fn copies_every_length_and_alignment() {
        let src: Vec<u32> = (0..3000u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        for len in [0usize, 1, 3, 63, 64, 65, 100, 1000, 2999] {
            for off in 0..5 {
                let mut dst = vec![0i32; len + off];
                copy_bits_streaming(&mut dst[off..], &src[..len]).unwrap();
                assert!(dst[..off].iter().all(|&x| x == 0));
                assert!(dst[off..].iter().zip(&src).all(|(&d, &s)| d as u32 == s));
            }
        }
        let f = [1.5f32, -0.0, f32::NAN];
        let mut d = [0u32; 3];
        copy_bits_streaming(&mut d, &f).unwrap();
        assert_eq!(
            d,
            [1.5f32.to_bits(), (-0.0f32).to_bits(), f32::NAN.to_bits()]
        );
    }

    #[test]
    fn the_parallel_copy_copies_every_chunk() {
        let src: Vec<u32> = (0..(1u32 << 18) + 77).map(|i| i ^ 0x9e37_79b9).collect();
        let mut dst = vec![0i32; src.len()];
        super::copy_bits_streaming_par(&mut dst, &src).unwrap();
        assert!(dst.iter().zip(&src).all(|(&d, &s)| d as u32 == s));
        assert!(super::copy_bits_streaming_par(&mut dst[1..], &src).is_err());
    }

    #[test]
    fn mismatched_sizes_are_errors() {
        assert!(copy_bits_streaming(&mut [0u32; 2], &[0u32; 3]).is_err());
        assert!(copy_bits_streaming(&mut [0u32; 2], &[0u64; 2]).is_err());
    }
}
