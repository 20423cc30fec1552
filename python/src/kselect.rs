//! `asym.kselect`: the k-th smallest key of every row.

use std::sync::Arc;

use asym_runtime::{Mode, Result};
use asym_structures::{Key, Sublists};
use numpy::{PyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::arrays::{self, by_key_type};
use crate::call::{self, work};
use crate::engine::{engine_for, Choice, Engine, Work};
use crate::errors;
use crate::resident::{DeviceArray, ResidentKey};

/// The k-th smallest key of every row of ``keys``.
///
/// Parameters
/// ----------
/// keys : numpy.ndarray or asym.DeviceArray
///     int32, uint32 or float32 keys: a 2-D array (one row per row), or a 1-D array cut
///     into rows by ``sublist``. Any layout is read correctly (non-C-contiguous arrays are
///     copied first). float32 keys are ordered totally: -NaN < -inf < ... < -0.0 < +0.0 <
///     ... < +inf < +NaN. A DeviceArray (``rt.array(a)``) is selected where it lives.
/// k : int
///     Which key, counted from 1: ``k=1`` is each row's smallest, ``k=len(row)`` its
///     largest. The same as ``numpy.partition(rows, k - 1, axis=1)[:, k - 1]`` and
///     ``torch.kthvalue(rows, k).values``.
/// sublist : int or sequence of int, optional
///     For 1-D keys: the length of every row (the length of ``keys`` must be a multiple of
///     it), or the row boundaries (starting at 0, ending at ``len(keys)``, increasing).
///     Default: one row of all the keys. 2-D keys take None or their row length.
/// mode : {"auto", "cpu", "gpu", "coop"}, optional
///     Who does the work: the latency threads (``cpu``), the device (``gpu``), or both
///     claiming rows from one counter (``coop``). ``auto``: the device radix for a
///     DeviceArray, the latency threads for keys in host memory.
/// device : str or asym.Runtime, optional
///     The device (a name fragment) or runtime to run on; default: the default runtime.
///
/// Returns
/// -------
/// numpy.ndarray
///     One key per row, of the keys' dtype.
///
/// Raises
/// ------
/// TypeError
///     Keys of another dtype.
/// ValueError
///     ``k`` outside 1..shortest row, rows that do not divide the keys, bad boundaries.
/// asym.DeviceError
///     A device mode without a usable device, or a device failure.
///
/// Examples
/// --------
/// >>> import numpy as np, asym
/// >>> rows = np.array([[5, 1, 4, 2], [9, 7, 8, 6]], dtype=np.int32)
/// >>> asym.kselect(rows, 2)
/// array([2, 7], dtype=int32)
/// >>> asym.kselect(rows.ravel(), 1, sublist=[0, 3, 8])
/// array([1, 2], dtype=int32)
#[pyfunction]
#[pyo3(signature = (keys, k, sublist = None, mode = "auto", device = None))]
pub fn kselect<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
    k: i64,
    sublist: Option<&Bound<'py, PyAny>>,
    mode: &str,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let choice = Choice::parse(mode)?;
    if k < 1 {
        return Err(errors::value(format!(
            "k = {k}: k counts from 1 (the smallest) to the row length"
        )));
    }
    let k = k as usize;
    if let Ok(resident) = keys.cast::<DeviceArray>() {
        if device.is_some_and(|d| !d.is_none()) {
            return Err(errors::value(
                "a DeviceArray is selected on the runtime it lives on: leave device= out",
            ));
        }
        let resident = resident.get();
        let cut = Cut::of(&resident.shape, sublist)?;
        return by_key_type!(resident.key_type, T => {
            select_resident::<T>(py, resident, cut, k, choice)
        });
    }
    let a = arrays::ndarray(keys)?;
    let key_type = arrays::key_type(&a, "keys")?;
    let cut = Cut::of(a.shape(), sublist)?;
    let engine = engine_for(py, device)?;
    let mode = engine.mode(choice, Work::HostKeys).map_err(errors::to_py)?;
    by_key_type!(key_type, T => select_host::<T>(py, &engine, &a, cut, k, mode))
}

/// How the keys are cut into rows.
enum Cut {
    /// No rows at all (a 2-D array with none, or no keys cut by a length): the answer is
    /// empty once `k` fits the row length given.
    NoRows(usize),
    /// Rows as the selector takes them.
    Rows(Sublists),
}

impl Cut {
    fn of(shape: &[usize], sublist: Option<&Bound<'_, PyAny>>) -> PyResult<Cut> {
        let sublist = sublist.filter(|s| !s.is_none());
        match shape {
            [len] => match sublist {
                None => Ok(Cut::Rows(Sublists::Equal(*len))),
                Some(s) => {
                    if let Ok(n) = s.extract::<i64>() {
                        if n < 1 {
                            return Err(errors::value(format!(
                                "sublist = {n}: a row holds at least one key"
                            )));
                        }
                        if *len == 0 {
                            return Ok(Cut::NoRows(n as usize));
                        }
                        return Ok(Cut::Rows(Sublists::Equal(n as usize)));
                    }
                    let offsets = arrays::counts(s, "sublist boundaries", u64::MAX)?;
                    Ok(Cut::Rows(Sublists::Offsets(
                        offsets.into_iter().map(|o| o as usize).collect(),
                    )))
                }
            },
            [rows, cols] => {
                if let Some(s) = sublist {
                    let n: i64 = s.extract().map_err(|_| {
                        errors::value("2-D keys are cut by their rows: sublist must be None")
                    })?;
                    if n != *cols as i64 {
                        return Err(errors::value(format!(
                            "2-D keys have rows of {cols}: sublist = {n} would cut them otherwise \
                             (pass keys.ravel() to cut them yourself)"
                        )));
                    }
                }
                if *rows == 0 {
                    Ok(Cut::NoRows(*cols))
                } else {
                    Ok(Cut::Rows(Sublists::Equal(*cols)))
                }
            }
            other => Err(errors::value(format!(
                "keys must be 1-D or 2-D, not of shape {other:?}"
            ))),
        }
    }

    /// The rows in batches of about [`call::batch_keys`] keys (a whole row at least): each
    /// batch's keys as a range of the input and its cut of them. Between two batches a
    /// pending Ctrl-C ends the call.
    fn batches(&self, total: usize) -> Vec<(std::ops::Range<usize>, Sublists)> {
        let batch = call::batch_keys();
        match self {
            Cut::NoRows(_) => Vec::new(),
            Cut::Rows(Sublists::Equal(len)) => {
                let per = (batch / len).max(1) * len;
                (0..total)
                    .step_by(per)
                    .map(|s| (s..(s + per).min(total), Sublists::Equal(*len)))
                    .collect()
            }
            Cut::Rows(Sublists::Offsets(o)) => {
                let mut out = Vec::new();
                let mut first = 0;
                while first + 1 < o.len() {
                    let mut last = first + 1;
                    while last + 1 < o.len() && o[last + 1] - o[first] <= batch {
                        last += 1;
                    }
                    let cut = o[first..=last].iter().map(|x| x - o[first]).collect();
                    out.push((o[first]..o[last], Sublists::Offsets(cut)));
                    first = last;
                }
                out
            }
        }
    }

    /// Checks the whole cut against `total` keys and `k` before any batch runs.
    fn check(&self, total: usize, k: usize) -> Result<()> {
        match self {
            Cut::NoRows(len) if k > *len => Err(asym_runtime::Error::out_of_range(
                "k =",
                k,
                format!("out of range: the rows hold {len} keys"),
            )),
            Cut::NoRows(_) => Ok(()),
            Cut::Rows(s) => s.count(total, k).map(|_| ()),
        }
    }
}

fn select_host<'py, T: ResidentKey>(
    py: Python<'py>,
    engine: &Arc<Engine>,
    a: &Bound<'py, PyUntypedArray>,
    cut: Cut,
    k: usize,
    mode: Mode,
) -> PyResult<Bound<'py, PyAny>> {
    let answers = arrays::with_keys(a, |keys: &[T]| {
        select_slice(py, engine, keys, &cut, k, mode)
    })?;
    Ok(PyArray1::from_vec(py, answers).into_any())
}

/// The k-th of every row of `keys` in `mode`, batch by batch.
fn select_slice<T: Key + Send + Sync>(
    py: Python<'_>,
    engine: &Engine,
    keys: &[T],
    cut: &Cut,
    k: usize,
    mode: Mode,
) -> PyResult<Vec<T>> {
    cut.check(keys.len(), k).map_err(errors::to_py)?;
    let batches = cut.batches(keys.len());
    let mut answers = Vec::new();
    let selector = engine.selector();
    call::batches(py, batches.len(), |i| {
        let (range, rows) = &batches[i];
        answers.extend(selector.select(&keys[range.clone()], rows, k, mode)?);
        Ok(())
    })?;
    Ok(answers)
}

fn select_resident<'py, T: ResidentKey>(
    py: Python<'py>,
    array: &DeviceArray,
    cut: Cut,
    k: usize,
    choice: Choice,
) -> PyResult<Bound<'py, PyAny>> {
    let engine = &array.engine;
    let mode = engine
        .mode(choice, Work::ResidentKeys)
        .map_err(errors::to_py)?;
    let answers: Vec<T> = match (&cut, mode) {
        (Cut::Rows(rows), Mode::GpuOnly) => {
            let total = array.len();
            work(py, || {
                cut.check(total, k)?;
                array.with_buffer(|buf: &mut asym_runtime::SvmBuffer<T>| {
                    engine.selector().select_svm(buf, rows, k).map(|(v, _)| v)
                })
            })?
        }
        (Cut::NoRows(_), _) => {
            cut.check(0, k).map_err(errors::to_py)?;
            Vec::new()
        }
        // The other modes read the keys back and select them on the host.
        _ => {
            let keys = array.read::<T>(py)?;
            select_slice(py, engine, &keys, &cut, k, mode)?
        }
    };
    Ok(PyArray1::from_vec(py, answers).into_any())
}
