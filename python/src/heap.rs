//! `asym.Heap` (the generalized heap of a mode) and `asym.sort` (through the heap's bulk
//! path).
//!
//! Every heap holds keys in their ordered `i32` form ([`Key::to_ordered`]): an int32 key is
//! itself, a uint32 or float32 key is mapped on the way in and back on the way out. The map
//! is an order-preserving bijection, so one heap of `i32` serves the three dtypes in every
//! mode (the latency threads' heap needs a totally ordered key, which `f32` is not).

use std::sync::Mutex;

use asym_runtime::{Mode, Named, PoolRef, Result};
use asym_structures::{heap_for, BatchHeap, HeapOptions, Key};
use numpy::PyArray1;
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::arrays::{self, by_key_type, KeyType};
use crate::call::{self, work};
use crate::engine::{engine_for, Choice, Engine, Work};
use crate::errors;

/// Keys per heap node by default (the programs' default).
const BATCH: usize = 1024;

type AnyHeap = Box<dyn BatchHeap<i32> + Send>;

/// A new empty heap of `mode` on `engine` with room for `capacity` keys from the start (it
/// grows past them; growing a large heap copies it).
fn new_heap(engine: &Engine, mode: Mode, batch: usize, capacity: usize) -> Result<AnyHeap> {
    let pool: Option<PoolRef<'static>> = Some(engine.pool().clone().into());
    let rt = match mode {
        Mode::CpuOnly => None,
        _ => Some(engine.runtime()?),
    };
    let mut options = HeapOptions::new(batch);
    options.device.initial_nodes = options.device.initial_nodes.max(capacity / batch + 2);
    heap_for::<i32>(mode, &options, pool, rt)
}

/// An empty heap kept between sorts on one engine: its mode and the keys it has room for.
pub struct KeptHeap {
    mode: Mode,
    capacity: usize,
    heap: AnyHeap,
}

/// A heap of `mode` with room for `n` keys: the engine's kept one where it fits, else new.
fn sort_heap(engine: &Engine, mode: Mode, n: usize) -> Result<(AnyHeap, usize)> {
    let kept = call::locked(&engine.sort_heap, "the sort heap")?.take();
    match kept {
        Some(k) if k.mode == mode && k.capacity >= n && k.heap.is_empty() => {
            Ok((k.heap, k.capacity))
        }
        _ => Ok((new_heap(engine, mode, BATCH, n)?, n)),
    }
}

/// Keeps `heap` (empty after a whole sort) for the engine's next sort.
fn keep_sort_heap(engine: &Engine, mode: Mode, capacity: usize, heap: AnyHeap) -> Result<()> {
    if heap.is_empty() {
        *call::locked(&engine.sort_heap, "the sort heap")? = Some(KeptHeap {
            mode,
            capacity,
            heap,
        });
    }
    Ok(())
}

/// `keys` in their ordered `i32` form, by rayon's threads.
fn to_ordered<T: Key + Sync>(keys: &[T]) -> Vec<i32> {
    keys.par_iter().map(|&k| k.to_ordered()).collect()
}

/// Inserts `keys` (dtype `T`) into `heap`, mapping them where `T` is not `i32`.
fn insert_keys<T: Key + Sync>(heap: &mut AnyHeap, keys: &[T]) -> Result<()> {
    match T::as_ordered(keys) {
        Some(same) => heap.insert(same),
        None => heap.insert(&to_ordered(keys)),
    }
}

/// A priority queue of int32, uint32 or float32 keys (the generalized heap of the
/// concurrent-heap seed), taking and giving keys in batches.
///
/// Parameters
/// ----------
/// dtype : numpy dtype
///     int32, uint32 or float32 (floats ordered totally: -NaN < -inf < ... < +inf < +NaN).
/// mode : {"auto", "cpu", "gpu", "coop"}, optional
///     ``cpu``: the concurrent heap shared by the latency threads; ``gpu``: the device heap,
///     its nodes in SVM between calls; ``coop``: a host top in front of the device heap.
///     ``auto``: ``gpu`` on a GPU, else ``cpu``.
/// device : str or asym.Runtime, optional
///     The device or runtime to run on.
/// batch : int, optional
///     Keys per heap node, a power of two (default 1024).
/// capacity : int, optional
///     Keys to make room for from the start (the heap grows past them, but growing a large
///     heap copies it).
///
/// Examples
/// --------
/// >>> h = asym.Heap(np.int32)
/// >>> h.insert(np.array([5, 3, 9, 1], dtype=np.int32))
/// >>> h.delete_min(2)
/// array([1, 3], dtype=int32)
/// >>> len(h)
/// 2
#[pyclass(module = "asym", frozen)]
pub struct Heap {
    key_type: KeyType,
    mode: Mode,
    heap: Mutex<AnyHeap>,
}

#[pymethods]
impl Heap {
    #[new]
    #[pyo3(signature = (dtype, mode = "auto", device = None, batch = BATCH, capacity = 0))]
    fn new(
        py: Python<'_>,
        dtype: &Bound<'_, PyAny>,
        mode: &str,
        device: Option<&Bound<'_, PyAny>>,
        batch: usize,
        capacity: usize,
    ) -> PyResult<Self> {
        let key_type = KeyType::of_dtype(dtype, "a heap's dtype")?;
        let choice = Choice::parse(mode)?;
        let engine = engine_for(py, device)?;
        let mode = engine.mode(choice, Work::Heap).map_err(errors::to_py)?;
        let heap = work(py, || new_heap(&engine, mode, batch, capacity))?;
        Ok(Heap {
            key_type,
            mode,
            heap: Mutex::new(heap),
        })
    }

    /// Inserts every key of ``keys`` (a 1-D array of the heap's dtype; any layout).
    fn insert(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<()> {
        let (a, kt) = arrays::keys_1d(keys, Some((self.key_type, "this heap")))?;
        by_key_type!(kt, T => arrays::with_keys(&a, |keys: &[T]| {
            work(py, || {
                let mut heap = call::locked(&self.heap, "the heap")?;
                insert_keys(&mut heap, keys)
            })
        }))
    }

    /// Removes and returns the ``n`` smallest keys in ascending order (all of them where the
    /// heap holds fewer).
    fn delete_min<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyAny>> {
        let out = work(py, || call::locked(&self.heap, "the heap")?.delete_min(n))?;
        by_key_type!(self.key_type, T => {
            let keys: Vec<T> = py.detach(|| T::from_ordered_vec(out));
            Ok(PyArray1::from_vec(py, keys).into_any())
        })
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(call::locked(&self.heap, "the heap")
            .map_err(errors::to_py)?
            .len())
    }

    /// The mode the heap runs in (``"cpu"``, ``"gpu"`` or ``"coop"``).
    #[getter]
    fn mode(&self) -> &'static str {
        self.mode.name()
    }

    /// The heap's dtype.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?
            .call_method1("dtype", (self.key_type.name(),))
    }

    fn __repr__(&self) -> PyResult<String> {
        Ok(format!(
            "asym.Heap(dtype={}, mode={:?}, len={})",
            self.key_type.name(),
            self.mode.name(),
            self.__len__()?
        ))
    }
}

/// A sorted copy of ``a``, through the generalized heap: every key inserted in one batch,
/// then all deleted in one (the device heap sorts such batches whole, its bulk path). The
/// empty heap is kept for the next sort of as many keys or fewer on the same runtime and
/// mode (making one costs more than a sort on a GPU), and its memory with it.
///
/// Parameters
/// ----------
/// a : numpy.ndarray
///     1-D int32, uint32 or float32 keys (floats ordered totally: -NaN first, +NaN last,
///     -0.0 before +0.0).
/// mode : {"auto", "cpu", "gpu", "coop"}, optional
///     As for :class:`Heap`.
/// device : str or asym.Runtime, optional
///     The device or runtime to run on.
///
/// Returns
/// -------
/// numpy.ndarray
///     The keys in ascending order, of ``a``'s dtype.
///
/// Examples
/// --------
/// >>> asym.sort(np.array([3, -1, 2], dtype=np.int32))
/// array([-1,  2,  3], dtype=int32)
#[pyfunction]
#[pyo3(signature = (a, mode = "auto", device = None))]
pub fn sort<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    mode: &str,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let choice = Choice::parse(mode)?;
    let (a, kt) = arrays::keys_1d(a, None)?;
    let engine = engine_for(py, device)?;
    let mode = engine.mode(choice, Work::Heap).map_err(errors::to_py)?;
    by_key_type!(kt, T => {
        let sorted: Vec<T> = arrays::with_keys(&a, |keys: &[T]| {
            if keys.is_empty() {
                return Ok(Vec::new());
            }
            let (mut heap, capacity) = work(py, || {
                let (mut heap, capacity) = sort_heap(&engine, mode, keys.len())?;
                insert_keys(&mut heap, keys)?;
                Ok((heap, capacity))
            })?;
            py.check_signals()?;
            let n = keys.len();
            work(py, || {
                let sorted = heap.delete_min(n)?;
                keep_sort_heap(&engine, mode, capacity, heap)?;
                Ok(T::from_ordered_vec(sorted))
            })
        })?;
        Ok(PyArray1::from_vec(py, sorted).into_any())
    })
}
