//! Host memory for sizes that come from outside: a file's header, a flag, a count.
//!
//! Rust aborts the process when an allocation fails, and Linux grants large allocations it
//! cannot back (they fail later, when touched, by the OOM killer). So a size a user gives is
//! checked here against the memory the machine has *available* before anything is allocated,
//! and allocations go through `try_reserve`: a header claiming four billion vertices becomes
//! [`Error::HostOutOfMemory`] naming what it would need, never an abort.
//!
//! What the process "may use" is the smallest of five bounds ([`headroom`]): the machine's
//! `MemAvailable`, the address-space limit (`ulimit -v`, `RLIMIT_AS`) less the address space
//! already mapped, the data limit (`ulimit -d`, `RLIMIT_DATA`) less the data already mapped,
//! the cgroup's memory limit (v2 `memory.max`, v1 `memory.limit_in_bytes`, the tightest of the
//! process's cgroup and its ancestors) less what the cgroup uses, and [`MEMORY_LIMIT_ENV`]
//! less the process's resident memory. A container or a
//! `ulimit` that the machine's free memory knows nothing about is then refused at once too.
//!
//! The check is an estimate made before the work starts, not a reservation: two allocations
//! that each fit may not fit together. Callers that know their peak add their buffers up and
//! check the sum once ([`ensure_available`]); the `try_*` helpers check each buffer as it is made.

use crate::error::{Error, Result};

/// The machine's available memory, the bound where nothing tighter applies.
const MACHINE: &str = "the machine's available memory";

/// The environment variable that sets a memory limit of asym's own, in MiB, for what the
/// process may use (resident memory included): for a container whose limit the process
/// cannot see, and for fuzzing under a fixed budget.
pub const MEMORY_LIMIT_ENV: &str = "ASYM_MEMORY_LIMIT_MB";

/// Bytes of memory this process may still use (see the module docs), or `None` where no
/// bound can be read.
pub fn available() -> Option<u64> {
    headroom().map(|(bytes, _)| bytes)
}

/// [`available`] and what bounds it: the machine's available memory, `ulimit -v`,
/// `ulimit -d`, the cgroup's memory limit or [`MEMORY_LIMIT_ENV`].
pub fn headroom() -> Option<(u64, &'static str)> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let (address_space, data) = crate::sys::memory_rlimits();
    [
        mem_available().map(|b| (b, MACHINE)),
        address_space.map(|limit| {
            let used = status_kib(&status, "VmSize:").unwrap_or(0);
            (
                limit.saturating_sub(used),
                "the address-space limit, ulimit -v",
            )
        }),
        data.map(|limit| {
            let used = status_kib(&status, "VmData:").unwrap_or(0);
            (
                limit.saturating_sub(used),
                "the data-segment limit, ulimit -d",
            )
        }),
        cgroup_headroom().map(|b| (b, "the cgroup's memory limit")),
        own_limit().map(|limit| {
            let used = status_kib(&status, "VmRSS:").unwrap_or(0);
            (limit.saturating_sub(used), "ASYM_MEMORY_LIMIT_MB")
        }),
    ]
    .into_iter()
    .flatten()
    .min_by_key(|&(bytes, _)| bytes)
}

/// [`MEMORY_LIMIT_ENV`] in bytes where it is set; a value that is not a whole number of MiB
/// is a limit of 0 (every checked allocation then fails naming the variable).
fn own_limit() -> Option<u64> {
    match crate::env::parsed::<u64>(MEMORY_LIMIT_ENV, "MiB (a whole number)") {
        Ok(mib) => mib.map(|m| m.saturating_mul(1 << 20)),
        Err(_) => Some(0),
    }
}

/// Linux `MemAvailable`: what the machine can give without swapping.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    status_kib(&text, "MemAvailable:")
}

/// The value in bytes of a `Key:   N kB` line of a `/proc` file.
fn status_kib(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        kib.checked_mul(1024)
    })
}

/// The tightest `limit - usage` over the process's memory cgroup and its ancestors (cgroup v2,
/// else v1), or `None` where no limit is set or none can be read.
fn cgroup_headroom() -> Option<u64> {
    let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let number = |path: std::path::PathBuf| -> Option<u64> {
        // "max" (v2) and v1's page-rounded i64::MAX both mean no limit.
        let v: u64 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
        (v < 1 << 62).then_some(v)
    };
    let tightest = |root: &str, group: &str, limit: &str, usage: &str| {
        let mut dir = std::path::PathBuf::from(root).join(group.trim_start_matches('/'));
        let mut best: Option<u64> = None;
        loop {
            if let (Some(max), Some(used)) = (number(dir.join(limit)), number(dir.join(usage))) {
                let room = max.saturating_sub(used);
                best = Some(best.map_or(room, |b| b.min(room)));
            }
            if dir.as_os_str().len() <= root.len() || !dir.pop() {
                return best;
            }
        }
    };
    // cgroup v1's memory controller where it is mounted, else the v2 group (a hybrid
    // machine lists both).
    let group_of = |wanted: &dyn Fn(&str, &str) -> bool| {
        membership.lines().find_map(|line| {
            let mut fields = line.splitn(3, ':');
            let (_, controllers, group) = (fields.next()?, fields.next()?, fields.next()?);
            wanted(line, controllers).then_some(group)
        })
    };
    if let Some(group) = group_of(&|_, c| c.split(',').any(|c| c == "memory")) {
        return tightest(
            "/sys/fs/cgroup/memory",
            group,
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
        );
    }
    let group = group_of(&|line, c| line.starts_with("0:") && c.is_empty())?;
    tightest("/sys/fs/cgroup", group, "memory.max", "memory.current")
}

/// [`Error::HostOutOfMemory`] for `what`, which needs `needed` bytes, with the current bound:
/// for an allocation that failed (`try_reserve`) after the checks let it through.
pub fn out_of_memory(what: &str, needed: u64) -> Error {
    let (available, bound) = headroom().unwrap_or((0, MACHINE));
    Error::HostOutOfMemory {
        what: what.to_string(),
        needed,
        available,
        bound,
    }
}

/// `count` elements of `T` in bytes, or an error naming `what` when the product overflows.
pub fn bytes_of<T>(count: u64, what: &str) -> Result<u64> {
    count
        .checked_mul(std::mem::size_of::<T>() as u64)
        .ok_or_else(|| out_of_memory(what, u64::MAX))
}

/// Fails with [`Error::HostOutOfMemory`] when `bytes` exceed what the process may still use.
/// Where no bound can be read, only allocation itself can fail.
pub fn ensure_available(bytes: u64, what: &str) -> Result<()> {
    match headroom() {
        Some((available, bound)) if bytes > available => Err(Error::HostOutOfMemory {
            what: what.to_string(),
            needed: bytes,
            available,
            bound,
        }),
        _ => Ok(()),
    }
}

/// An empty vector with room for `len` elements, checked against the machine first and
/// reserved fallibly.
pub fn try_with_capacity<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let bytes = bytes_of::<T>(len as u64, what)?;
    ensure_available(bytes, what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| out_of_memory(what, bytes))?;
    Ok(v)
}

/// A vector of `len` copies of `value`, checked and reserved as [`try_with_capacity`].
pub fn try_filled<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = try_with_capacity(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// [`try_with_capacity`] in pages the kernel is asked to back with transparent huge pages
/// (as [`huge_page_vec`]), for large arrays read at scattered places long after they are
/// written: a graph's edges, each vertex's slice a page of its own away from the last, so
/// that a search in a random numbering takes no TLB miss per vertex expanded.
pub fn try_with_capacity_huge<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let v = try_with_capacity(len, what)?;
    advise_huge(&v);
    Ok(v)
}

/// [`try_filled`] in huge pages (see [`try_with_capacity_huge`]).
pub fn try_filled_huge<T: Clone>(len: usize, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = try_with_capacity_huge(len, what)?;
    v.resize(len, value);
    Ok(v)
}

/// Allocations at least this large are worth huge pages.
const HUGE_PAGE_WORTHWHILE: usize = 4 << 20;

/// An empty vector with room for `len` elements whose pages the kernel is asked to back with
/// transparent huge pages before anything touches them (where the machine allows it:
/// `madvise` mode of `/sys/kernel/mm/transparent_hugepage/enabled`, or `always`).
///
/// For large arrays written once per call (a search's distances, an answer of 4 M entries):
/// on a virtual machine a first-touched 4 KiB page costs microseconds, so a fresh answer's
/// page faults can outlast the search that filled it. One fault per 2 MiB instead of per
/// 4 KiB. Small vectors are left alone.
pub fn huge_page_vec<T>(len: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(len);
    advise_huge(&v);
    v
}

/// Asks for huge pages under `v`'s whole capacity where it is worth it (nothing written yet).
fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes >= HUGE_PAGE_WORTHWHILE {
        crate::sys::advise_huge_pages(v.as_ptr() as usize, bytes);
    }
}

/// Another view of a search's answer: 32-bit atomic words in pairs, each pair one `u64` (see
/// the function's own docs in `sys`).
pub use crate::sys::u64s_as_atomic_u32_pairs;

/// Bytes in a human unit (`1.5 GiB`), for messages.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_beyond_the_machine_are_errors_not_aborts() {
        let huge = 1usize << 60;
        let e = try_with_capacity::<u64>(huge, "a test buffer").unwrap_err();
        assert!(matches!(e, Error::HostOutOfMemory { .. }), "{e}");
        assert!(e.to_string().contains("a test buffer"), "{e}");
        let e = try_filled(usize::MAX, 0u32, "an overflowing buffer").unwrap_err();
        assert!(matches!(e, Error::HostOutOfMemory { .. }), "{e}");
    }

    #[test]
    fn atomic_pairs_are_the_words_halves() {
        use std::sync::atomic::Ordering::Relaxed;
        let mut words = vec![u64::MAX; 3];
        let pairs = u64s_as_atomic_u32_pairs(&mut words);
        assert_eq!(pairs.len(), 6);
        pairs[2].store(7, Relaxed);
        pairs[3].store(9, Relaxed);
        pairs[4].fetch_min(5, Relaxed);
        let (a, b) = (7u32.to_ne_bytes(), 9u32.to_ne_bytes());
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&a);
        bytes[4..].copy_from_slice(&b);
        assert_eq!(words[0], u64::MAX);
        assert_eq!(words[1], u64::from_ne_bytes(bytes));
        assert_eq!(words[2].to_ne_bytes()[..4], 5u32.to_ne_bytes());
        assert_eq!(words[2].to_ne_bytes()[4..], u32::MAX.to_ne_bytes());
    }

    #[test]
    fn small_sizes_are_allocated() {
        let v = try_filled(1000, 7u16, "a small buffer").unwrap();
        assert_eq!(v.len(), 1000);
        assert!(v.iter().all(|&x| x == 7));
        assert!(available().is_some_and(|a| a > 0));
    }

    #[test]
    fn huge_page_vectors_hold_what_is_written() {
        // The advice must not change the memory: empty, small and large vectors (one not a
        // whole number of pages) keep every element written.
        assert!(huge_page_vec::<u64>(0).is_empty());
        for len in [1usize, 1000, (8 << 20) / 8 + 3] {
            let mut v = huge_page_vec::<u64>(len);
            assert!(v.is_empty() && v.capacity() >= len);
            v.extend((0..len as u64).map(|i| i * 3));
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
        }
    }

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
