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
