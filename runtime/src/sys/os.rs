//! Operating-system calls that the standard library does not wrap.

/// The CPU the calling thread is running on right now, or `None` where the OS cannot say.
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads the calling thread's state; it
    // returns -1 (with errno set) on failure, which we map to None.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}
