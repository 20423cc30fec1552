//! Operating-system calls that the standard library does not wrap.

/// The CPU the calling thread is running on right now, or `None` where the OS cannot say.
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads the calling thread's state; it
    // returns -1 (with errno set) on failure, which we map to None.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Makes a write to a closed pipe end the process quietly, as it does for other Unix tools
/// (`example | head`), instead of Rust's default (SIGPIPE ignored, so `println!` panics on
/// the broken pipe). For command-line programs' `main`; a library leaves the signal alone.
pub fn exit_quietly_on_broken_pipe() {
    #[cfg(unix)]
    // SAFETY: resetting SIGPIPE's disposition to the default has no memory-safety effect; it
    // is done before the program starts threads that write, and only changes what happens
    // when a write hits a closed pipe.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Asks the kernel to back the pages of `bytes` bytes at `addr` with transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`), rounded inwards to whole pages. Only advice: where the kernel
/// has no huge pages, or refuses, nothing changes (the result is ignored).
pub(crate) fn advise_huge_pages(addr: usize, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = addr.next_multiple_of(PAGE);
        let end = (addr + bytes) / PAGE * PAGE;
        if end <= start {
            return;
        }
        // SAFETY: madvise with MADV_HUGEPAGE changes only how the kernel backs the pages of
        // the range (their contents and the mapping's permissions stay as they are); the
        // range lies inside an allocation the caller owns (`addr..addr + bytes`, rounded
        // inwards to page boundaries), so no other mapping is affected.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// `words` seen as twice as many 32-bit atomic words: element `2i` and `2i + 1` are the two
/// halves of `words[i]` in memory order (on a little-endian machine `2i` is the low half).
/// While the view lives `words` is borrowed exclusively, so nothing reads it as `u64`
/// meanwhile; afterwards each `u64` holds the bytes its halves were last given.
pub fn u64s_as_atomic_u32_pairs(words: &mut [u64]) -> &[std::sync::atomic::AtomicU32] {
    use std::sync::atomic::AtomicU32;
    const _: () = assert!(std::mem::size_of::<AtomicU32>() * 2 == std::mem::size_of::<u64>());
    const _: () = assert!(std::mem::align_of::<u64>() >= std::mem::align_of::<AtomicU32>());
    let len = words.len() * 2;
    let ptr = words.as_mut_ptr().cast::<AtomicU32>();
    // SAFETY: `ptr` points to `len * 4` bytes of initialized memory (the `u64`s), aligned for
    // `AtomicU32` (a `u64`'s alignment is at least 4, asserted above) and with the size of
    // `len` `AtomicU32`s, which have the layout of `u32` and accept any bit pattern. The
    // exclusive borrow of `words` lasts as long as the returned shared slice, so every access
    // meanwhile goes through the atomics; interior mutability through a shared reference is
    // what `AtomicU32` allows.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}
