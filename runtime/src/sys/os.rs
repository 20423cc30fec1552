//! Operating-system calls that the standard library does not wrap.

/// The CPU the calling thread is running on right now, or `None` where the OS cannot say.
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads the calling thread's state; it
    // returns -1 (with errno set) on failure, which we map to None.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Lets the calling thread's short sleeps end on time: Linux rounds a sleep up by the
/// thread's timer slack, 50 µs by default, so the 16 µs naps of a bounded wait
/// (`backoff.rs`) last far longer than asked (on the dev VM a 16 µs sleep took 101 µs,
/// 42 µs with the slack at 1 µs). Sets the slack to 1 µs, once per thread; elsewhere a no-op.
pub(crate) fn fine_timer_slack() {
    #[cfg(target_os = "linux")]
    {
        thread_local!(static SET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
        if !SET.get() {
            // SAFETY: PR_SET_TIMERSLACK takes one integer argument (nanoseconds) and only
            // changes the calling thread's scheduling state; failure leaves the default.
            unsafe {
                libc::prctl(
                    libc::PR_SET_TIMERSLACK,
                    1000 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                    0 as libc::c_ulong,
                )
            };
            SET.set(true);
        }
    }
}

/// Keeps the calling thread, and the threads it starts from now on, to `cpus` (OS ids);
/// `false` where the OS refuses (an id past the machine, none usable) or cannot pin.
pub fn pin_current_thread_to(cpus: &[usize]) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is plain data (a bit array) for which all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let room = 8 * std::mem::size_of::<libc::cpu_set_t>();
        for &c in cpus.iter().filter(|&&c| c < room) {
            // SAFETY: CPU_SET writes bit `c` of `set`, which holds `room` bits, c < room.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size passed,
        // which the kernel only reads.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        false
    }
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

/// Files removed if the process is interrupted (SIGINT, SIGTERM, SIGHUP) while they exist:
/// half-written temporaries. A slot holds a leaked, NUL-terminated copy of a path, so that a
/// handler running on any thread never reads freed memory (a few dozen bytes per file the
/// process ever registers).
const CLEANUP_SLOTS: usize = 32;
static CLEANUP: [std::sync::atomic::AtomicPtr<libc::c_char>; CLEANUP_SLOTS] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; CLEANUP_SLOTS];
static CLEANUP_HANDLER: std::sync::Once = std::sync::Once::new();
/// The handshake between a thread creating a registered file and a handler running on
/// another thread (Dekker's, all SeqCst): a creator counts itself in `CREATING`, then reads
/// `DYING`; the handler sets `DYING`, then waits for `CREATING` to drain before it unlinks.
/// Either the creator sees `DYING` and creates nothing, or the handler sees the creator and
/// unlinks after its file exists; without it a file created while another thread's handler
/// unlinks would outlive the process.
static CREATING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static DYING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// How long a handler waits for creations in flight: bounded, since the handler may be
/// running on the creating thread itself (whose creation then cannot finish).
const CREATING_WAIT_MS: u32 = 200;
const CLEANUP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Removes every registered file, then dies of `signal` as it would have without the handler
/// (the shell sees the usual status, 130 for Ctrl-C).
extern "C" fn remove_files_and_die(signal: libc::c_int) {
    use std::sync::atomic::Ordering::SeqCst;
    DYING.store(true, SeqCst);
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    for _ in 0..CREATING_WAIT_MS {
        if CREATING.load(SeqCst) == 0 {
            break;
        }
        // SAFETY: nanosleep is async-signal-safe; `pause` is a valid timespec and the
        // remainder pointer may be null.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }
    for slot in &CLEANUP {
        // Lock-free atomics are async-signal-safe; `swap` makes each path removed once.
        let path = slot.swap(std::ptr::null_mut(), SeqCst);
        if !path.is_null() {
            // SAFETY: a non-null slot holds a pointer from `CString::into_raw` that is never
            // freed (see `CLEANUP`), so it is a valid NUL-terminated string; `unlink` is
            // async-signal-safe.
            unsafe { libc::unlink(path) };
        }
    }
    // SAFETY: `signal` and `raise` are async-signal-safe; restoring the default disposition
    // and raising the same signal ends the process as the signal would have.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Installs [`remove_files_and_die`] for the signals whose disposition is still the default
/// (a handler the application set, or an ignored signal, is left alone).
fn install_cleanup_handler() {
    CLEANUP_HANDLER.call_once(|| {
        for signal in CLEANUP_SIGNALS {
            // SAFETY: both sigaction structs are zero-initialized plain C data that
            // `sigaction` reads or fills; the handler only does async-signal-safe work (see
            // `remove_files_and_die`).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = remove_files_and_die as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(signal, &new, std::ptr::null_mut());
            }
        }
    });
}

/// A file removed if the process is interrupted (SIGINT, SIGTERM, SIGHUP) while this guard
/// lives: the temporary of an output being written. Dropping the guard forgets the file (the
/// caller renames or removes it itself). Where every slot is taken (more than 32 files at
/// once) or the path holds a NUL byte, the file is not registered, and an interrupt may leave
/// it behind as it would without the guard. A SIGKILL leaves it behind whatever is done.
#[derive(Debug)]
pub struct RemoveOnInterrupt {
    /// The slot taken and the address of the string put there (only ever compared).
    slot: Option<(usize, usize)>,
}

impl RemoveOnInterrupt {
    /// Registers `path` (see the type's docs).
    pub fn new(path: &std::path::Path) -> Self {
        use std::os::unix::ffi::OsStrExt;
        use std::sync::atomic::Ordering::SeqCst;
        install_cleanup_handler();
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
            return RemoveOnInterrupt { slot: None };
        };
        let raw = c.into_raw();
        let slot = CLEANUP.iter().position(|s| {
            s.compare_exchange(std::ptr::null_mut(), raw, SeqCst, SeqCst)
                .is_ok()
        });
        RemoveOnInterrupt {
            slot: slot.map(|i| (i, raw as usize)),
        }
    }
}

impl RemoveOnInterrupt {
    /// Runs `create`, which makes the registered file, so that an interrupt handled on another
    /// thread meanwhile cannot miss it: the handler waits for it to return before removing
    /// the file, and once the process is dying `create` is not run (an `Interrupted` error).
    pub fn creating<T>(&self, create: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
        use std::sync::atomic::Ordering::SeqCst;
        CREATING.fetch_add(1, SeqCst);
        let out = if DYING.load(SeqCst) {
            Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the process is ending on a signal",
            ))
        } else {
            create()
        };
        CREATING.fetch_sub(1, SeqCst);
        out
    }
}

impl Drop for RemoveOnInterrupt {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering::SeqCst;
        if let Some((i, raw)) = self.slot {
            // Only our own pointer is cleared: if a handler already took it, nothing changes.
            // The string itself stays allocated (see `CLEANUP`).
            let ours = raw as *mut libc::c_char;
            let _ = CLEANUP[i].compare_exchange(ours, std::ptr::null_mut(), SeqCst, SeqCst);
        }
    }
}

/// The soft limits on the process's address space (`RLIMIT_AS`, `ulimit -v`) and data
/// segment (`RLIMIT_DATA`, `ulimit -d`) in bytes, each `None` where unlimited or unreadable.
pub(crate) fn memory_rlimits() -> (Option<u64>, Option<u64>) {
    let soft = |resource| {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct it is given, which lives on this stack
        // frame for the call; failure (-1) is mapped to None.
        let ok = unsafe { libc::getrlimit(resource, &mut limit) } == 0;
        (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
    };
    (soft(libc::RLIMIT_AS), soft(libc::RLIMIT_DATA))
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn a_waiting_thread_gets_a_fine_timer_slack() {
        // SAFETY: PR_GET_TIMERSLACK takes no arguments and returns the calling thread's slack.
        let slack = || unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
        std::thread::spawn(move || {
            super::fine_timer_slack();
            assert_eq!(slack(), 1000);
            super::fine_timer_slack();
            assert_eq!(slack(), 1000);
        })
        .join()
        .unwrap();
    }
}
