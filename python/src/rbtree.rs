//! `asym.RBTree`: the red-black tree in SVM, updated and searched in batches.

use std::sync::{Arc, Mutex};

use asym_runtime::{Mode, Named, Result};
use asym_structures::{Deleted, Found, Inserted, RbTree};
use numpy::{PyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::arrays::{self, by_key_type, KeyType};
use crate::call::{self, work};
use crate::engine::{engine_for, Choice, Engine, Work};
use crate::errors;
use crate::resident::ResidentKey;

/// Nodes a new tree makes room for (its arena grows as batches need).
const FIRST_NODES: usize = 1 << 16;

/// The tree, by key type.
enum Tree {
    I32(RbTree<i32>),
    U32(RbTree<u32>),
    F32(RbTree<f32>),
}

/// A key type's tree inside a [`Tree`].
trait TreeKey: ResidentKey + for<'a> FromPyObject<'a, 'a> {
    fn new_tree(rt: &asym_runtime::Runtime) -> Result<Tree>;
    fn tree(t: &mut Tree) -> Option<&mut RbTree<Self>>;
}

macro_rules! tree_key {
    ($t:ty, $v:ident) => {
        impl TreeKey for $t {
            fn new_tree(rt: &asym_runtime::Runtime) -> Result<Tree> {
                Ok(Tree::$v(RbTree::new(rt, FIRST_NODES)?))
            }
            fn tree(t: &mut Tree) -> Option<&mut RbTree<Self>> {
                match t {
                    Tree::$v(tree) => Some(tree),
                    _ => None,
                }
            }
        }
    };
}
tree_key!(i32, I32);
tree_key!(u32, U32);
tree_key!(f32, F32);

/// A sorted map from int32, uint32 or float32 keys to uint64 values: a red-black tree whose
/// nodes live in SVM between calls, updated and searched in batches.
///
/// Parameters
/// ----------
/// dtype : numpy dtype
///     The keys' dtype: int32, uint32 or float32 (floats ordered totally, -NaN first).
/// mode : {"auto", "cpu", "gpu", "coop"}, optional
///     Who applies batches: the latency threads (``cpu``), the device's work-items
///     (``gpu``), or both (``coop``), in rounds of locate and transactional apply.
///     ``auto``: ``gpu`` on a GPU, else ``cpu``.
/// device : str or asym.Runtime, optional
///     The device or runtime whose SVM holds the tree (every mode needs one).
///
/// Examples
/// --------
/// >>> t = asym.RBTree(np.int32)
/// >>> t.insert(np.array([5, 1, 3], dtype=np.int32), np.array([50, 10, 30], dtype=np.uint64))
/// 3
/// >>> t.search(np.array([3, 4], dtype=np.int32))
/// (array([ True, False]), array([30,  0], dtype=uint64))
/// >>> t.range_count(1, 4), list(t)
/// (2, [1, 3, 5])
#[pyclass(name = "RBTree", module = "asym", frozen)]
pub struct RBTree {
    key_type: KeyType,
    mode: Mode,
    engine: Arc<Engine>,
    tree: Mutex<Tree>,
}

impl RBTree {
    /// Runs `f` on the tree as `RbTree<T>` (`T` the tree's key type).
    fn with<T: TreeKey, R>(&self, f: impl FnOnce(&mut RbTree<T>) -> Result<R>) -> Result<R> {
        let mut guard = call::locked(&self.tree, "the red-black tree")?;
        let tree = T::tree(&mut guard).ok_or_else(|| {
            asym_runtime::Error::InvalidArgument("the tree's key type changed".into())
        })?;
        f(tree)
    }

    /// `keys` checked to be a 1-D array of the tree's dtype.
    fn keys<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
        Ok(arrays::keys_1d(keys, Some((self.key_type, "this tree")))?.0)
    }

    fn insert_as<T: TreeKey>(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyUntypedArray>,
        values: Option<Vec<u64>>,
    ) -> PyResult<usize> {
        arrays::with_keys(a, |keys: &[T]| {
            let items: Vec<(T, u64)> = match &values {
                Some(v) => keys.iter().copied().zip(v.iter().copied()).collect(),
                None => keys.iter().map(|&k| (k, 0)).collect(),
            };
            let mut new = 0usize;
            let (mode, pool) = (self.mode, self.engine.pool());
            call::in_ranges(py, items.len(), |range| {
                let part = &items[range];
                let done = self.with(|t: &mut RbTree<T>| t.insert_in(mode, part, pool))?;
                new += done.iter().filter(|d| **d == Inserted::New).count();
                Ok(())
            })?;
            Ok(new)
        })
    }

    fn delete_as<T: TreeKey>(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyUntypedArray>,
    ) -> PyResult<usize> {
        arrays::with_keys(a, |keys: &[T]| {
            let mut removed = 0usize;
            let (mode, pool) = (self.mode, self.engine.pool());
            call::in_ranges(py, keys.len(), |range| {
                let part = &keys[range];
                let done = self.with(|t: &mut RbTree<T>| t.delete_in(mode, part, pool))?;
                removed += done.iter().filter(|d| **d == Deleted::Removed).count();
                Ok(())
            })?;
            Ok(removed)
        })
    }

    fn search_as<T: TreeKey>(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyUntypedArray>,
    ) -> PyResult<(Vec<bool>, Vec<u64>)> {
        arrays::with_keys(a, |keys: &[T]| {
            let (mut found, mut values) = (Vec::with_capacity(keys.len()), Vec::new());
            let (mode, pool) = (self.mode, self.engine.pool());
            call::in_ranges(py, keys.len(), |range| {
                let part = &keys[range];
                let answers: Vec<Option<u64>> = self.with(|t: &mut RbTree<T>| match mode {
                    Mode::CpuOnly => t.search_on_threads(part, pool),
                    _ => Ok(t
                        .search_on_device(part)?
                        .into_iter()
                        .map(|f| match f {
                            Found::Value(v) => Some(v),
                            Found::Absent => None,
                        })
                        .collect()),
                })?;
                found.extend(answers.iter().map(Option::is_some));
                values.extend(answers.iter().map(|v| v.unwrap_or(0)));
                Ok(())
            })?;
            Ok((found, values))
        })
    }

    fn entries_as<T: TreeKey>(&self, py: Python<'_>) -> PyResult<(Vec<T>, Vec<u64>)> {
        work(py, || {
            let entries = self.with(|t: &mut RbTree<T>| t.entries())?;
            Ok(entries.into_iter().unzip())
        })
    }
}

#[pymethods]
impl RBTree {
    #[new]
    #[pyo3(signature = (dtype, mode = "auto", device = None))]
    fn new(
        py: Python<'_>,
        dtype: &Bound<'_, PyAny>,
        mode: &str,
        device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let key_type = KeyType::of_dtype(dtype, "a tree's dtype")?;
        let choice = Choice::parse(mode)?;
        let engine = engine_for(py, device)?;
        let mode = engine.mode(choice, Work::Tree).map_err(errors::to_py)?;
        let tree = work(py, || {
            let rt = engine.runtime()?;
            by_key_type!(key_type, T => T::new_tree(rt))
        })?;
        Ok(RBTree {
            key_type,
            mode,
            engine,
            tree: Mutex::new(tree),
        })
    }

    /// Inserts ``keys`` (1-D, the tree's dtype) with ``values`` (uint64-compatible
    /// non-negative integers, one per key; default 0). A key already in the tree gets the
    /// new value; a key given twice keeps its last value. Returns how many keys were new.
    #[pyo3(signature = (keys, values = None))]
    fn insert(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        values: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let a = self.keys(keys)?;
        let values = match values.filter(|v| !v.is_none()) {
            None => None,
            Some(v) => {
                let v = arrays::counts(v, "values", u64::MAX)?;
                if v.len() != a.len() {
                    return Err(errors::value(format!(
                        "{} keys but {} values: one value per key",
                        a.len(),
                        v.len()
                    )));
                }
                Some(v)
            }
        };
        by_key_type!(self.key_type, T => self.insert_as::<T>(py, &a, values))
    }

    /// Deletes ``keys`` (those absent are skipped). Returns how many were removed.
    fn delete(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<usize> {
        let a = self.keys(keys)?;
        by_key_type!(self.key_type, T => self.delete_as::<T>(py, &a))
    }

    /// Looks up ``keys``: returns ``(found, values)``, a bool array and a uint64 array (0
    /// where the key is absent).
    fn search<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let a = self.keys(keys)?;
        let (found, values) = by_key_type!(self.key_type, T => self.search_as::<T>(py, &a))?;
        Ok((
            PyArray1::from_vec(py, found).into_any(),
            PyArray1::from_vec(py, values).into_any(),
        ))
    }

    /// Keys in the tree from ``lo`` to ``hi``, both included (0 where ``hi < lo``).
    fn range_count(
        &self,
        py: Python<'_>,
        lo: &Bound<'_, PyAny>,
        hi: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        by_key_type!(self.key_type, T => {
            let (lo, hi): (T, T) = (lo.extract()?, hi.extract()?);
            work(py, || self.with(|t: &mut RbTree<T>| t.range_count(lo, hi)))
        })
    }

    /// Every key and its value in key order: ``(keys, values)``.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        by_key_type!(self.key_type, T => {
            let (keys, values) = self.entries_as::<T>(py)?;
            Ok((
                PyArray1::from_vec(py, keys).into_any(),
                PyArray1::from_vec(py, values).into_any(),
            ))
        })
    }

    /// Every key in order, as a numpy array.
    fn keys_array<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.items(py)?.0)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let keys = self.keys_array(py)?;
        keys.call_method0("tolist")?.try_iter().map(Bound::into_any)
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        by_key_type!(self.key_type, T => {
            let key: T = key.extract()?;
            let found = work(py, || self.with(|t: &mut RbTree<T>| t.search_batch(&[key])))?;
            Ok(found.first().is_some_and(Option::is_some))
        })
    }

    fn __len__(&self) -> PyResult<usize> {
        let guard = call::locked(&self.tree, "the red-black tree").map_err(errors::to_py)?;
        Ok(match &*guard {
            Tree::I32(t) => t.len(),
            Tree::U32(t) => t.len(),
            Tree::F32(t) => t.len(),
        })
    }

    /// The mode batches run in.
    #[getter]
    fn mode(&self) -> &'static str {
        self.mode.name()
    }

    fn __repr__(&self) -> PyResult<String> {
        Ok(format!(
            "asym.RBTree(dtype={}, mode={:?}, len={})",
            self.key_type.name(),
            self.mode.name(),
            self.__len__()?
        ))
    }
}
