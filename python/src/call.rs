//! How every call runs: its work with the GIL released and panics caught ([`work`]), long work
//! in batches with Ctrl-C honoured between them ([`batches`]), and the structures' locks
//! ([`locked`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use asym_runtime::{Error, Result};
use pyo3::prelude::*;

use crate::errors;

/// Runs `f` with the GIL released (other Python threads go on meanwhile), turning its error
/// into the Python exception of its kind and a panic into `asym.AsymError`.
pub fn work<R, F>(py: Python<'_>, f: F) -> PyResult<R>
where
    R: Send,
    F: FnOnce() -> Result<R> + Send,
{
    match py.detach(move || catch_unwind(AssertUnwindSafe(f))) {
        Ok(result) => result.map_err(errors::to_py),
        Err(panic) => Err(errors::internal(&asym_runtime::panic_message(
            panic.as_ref(),
        ))),
    }
}

/// Runs `f(i)` for every `i` in `0..count` as [`work`] does, each a batch: between two
/// batches a pending Ctrl-C (or any signal whose Python handler raises) ends the call with
/// its exception, and what the finished batches did stays done.
pub fn batches<F>(py: Python<'_>, count: usize, mut f: F) -> PyResult<()>
where
    F: FnMut(usize) -> Result<()> + Send,
{
    for i in 0..count {
        if i > 0 {
            py.check_signals()?;
        }
        work(py, || f(i))?;
    }
    Ok(())
}

/// Keys a batch of a long call holds (at least one row or one update): 2^25 by default,
/// a few tens of milliseconds of work, so that Ctrl-C is honoured soon and the batches cost
/// nothing measurable.
static BATCH_KEYS: AtomicUsize = AtomicUsize::new(1 << 25);

/// Keys a batch of a long call holds.
pub fn batch_keys() -> usize {
    BATCH_KEYS.load(Relaxed)
}

/// Runs `f` on `0..len` in ranges of [`batch_keys`] as [`batches`] runs its batches.
pub fn in_ranges<F>(py: Python<'_>, len: usize, mut f: F) -> PyResult<()>
where
    F: FnMut(std::ops::Range<usize>) -> Result<()> + Send,
{
    let per = batch_keys();
    batches(py, len.div_ceil(per), |i| {
        f(i * per..((i + 1) * per).min(len))
    })
}

/// Sets the keys a batch of a long call holds (at least 1), returning the previous value:
/// for tests of the batch boundaries.
#[pyfunction]
#[pyo3(name = "_set_batch_keys")]
pub fn set_batch_keys(keys: usize) -> usize {
    BATCH_KEYS.swap(keys.max(1), Relaxed)
}

/// `m` locked; a structure whose lock a panic left poisoned is refused as damaged (the panic
/// was already reported as `asym.AsymError` by [`work`]).
pub fn locked<'a, T>(m: &'a Mutex<T>, what: &str) -> Result<MutexGuard<'a, T>> {
    m.lock().map_err(|_| {
        Error::corrupted(
            what,
            "an earlier call on it stopped with an internal error; make a new one",
        )
    })
}
