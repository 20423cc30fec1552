//! Keys that live in SVM on a runtime's device: `asym.DeviceArray`, made by
//! `asym.Runtime.array(a)`.

use std::sync::{Arc, Mutex};

use asym_runtime::{Result, SvmBuffer};
use numpy::{PyArray1, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::arrays::{self, by_key_type, KeyType};
use crate::call::{self, work};
use crate::engine::Engine;

/// The buffer of a [`DeviceArray`], by key type.
pub enum Resident {
    /// `int32` keys.
    I32(SvmBuffer<i32>),
    /// `uint32` keys.
    U32(SvmBuffer<u32>),
    /// `float32` keys.
    F32(SvmBuffer<f32>),
}

/// The Rust buffer of a key type inside a [`Resident`].
pub trait ResidentKey: asym_structures::Key + numpy::Element + Copy + Send + Sync {
    /// `buf` in its variant.
    fn wrap(buf: SvmBuffer<Self>) -> Resident;
    /// The buffer, where `r` holds this key type.
    fn unwrap(r: &mut Resident) -> Option<&mut SvmBuffer<Self>>;
}

macro_rules! resident_key {
    ($t:ty, $v:ident) => {
        impl ResidentKey for $t {
            fn wrap(buf: SvmBuffer<Self>) -> Resident {
                Resident::$v(buf)
            }
            fn unwrap(r: &mut Resident) -> Option<&mut SvmBuffer<Self>> {
                match r {
                    Resident::$v(b) => Some(b),
                    _ => None,
                }
            }
        }
    };
}
resident_key!(i32, I32);
resident_key!(u32, U32);
resident_key!(f32, F32);

/// An array of keys that lives in SVM on a runtime's device (``rt.array(a)``).
///
/// ``asym.kselect`` on it runs the device radix where the keys are (nothing is copied);
/// ``.numpy()`` reads it back. Its shape and dtype are those of the array it was made from.
#[pyclass(module = "asym", frozen)]
pub struct DeviceArray {
    pub(crate) engine: Arc<Engine>,
    pub(crate) shape: Vec<usize>,
    pub(crate) key_type: KeyType,
    pub(crate) buf: Mutex<Resident>,
}

impl DeviceArray {
    /// `a`'s keys copied into SVM on `engine`'s device.
    pub fn upload(py: Python<'_>, engine: Arc<Engine>, a: &Bound<'_, PyAny>) -> PyResult<Self> {
        let a = arrays::ndarray(a)?;
        let key_type = arrays::key_type(&a, "the keys of a device array")?;
        let shape = a.shape().to_vec();
        let buf = by_key_type!(key_type, T => arrays::with_keys(&a, |keys: &[T]| {
            let rt = engine.runtime().map_err(crate::errors::to_py)?.clone();
            work(py, move || {
                let mut buf = rt.alloc::<T>(keys.len().max(1))?;
                if !keys.is_empty() {
                    buf.write_range(0, keys)?;
                }
                Ok(T::wrap(buf))
            })
        }))?;
        Ok(DeviceArray {
            engine,
            shape,
            key_type,
            buf: Mutex::new(buf),
        })
    }

    /// Keys in the array.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Runs `f` on the buffer (as `T`, which must be the array's key type).
    pub fn with_buffer<T: ResidentKey, R>(
        &self,
        f: impl FnOnce(&mut SvmBuffer<T>) -> Result<R>,
    ) -> Result<R> {
        let mut guard = call::locked(&self.buf, "the device array")?;
        let buf = T::unwrap(&mut guard).ok_or_else(|| {
            asym_runtime::Error::InvalidArgument("the device array's key type changed".into())
        })?;
        f(buf)
    }

    /// The keys read back, in C order.
    pub fn read<T: ResidentKey>(&self, py: Python<'_>) -> PyResult<Vec<T>> {
        let len = self.len();
        work(py, || {
            self.with_buffer(|b: &mut SvmBuffer<T>| {
                if len == 0 {
                    Ok(Vec::new())
                } else {
                    b.read_range(0, len)
                }
            })
        })
    }
}

#[pymethods]
impl DeviceArray {
    /// The keys read back into a new numpy array of the same shape and dtype.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        by_key_type!(self.key_type, T => {
            let keys = self.read::<T>(py)?;
            Ok(PyArray1::from_vec(py, keys).reshape(self.shape.clone())?.into_any())
        })
    }

    /// The shape.
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.shape.clone()
    }

    /// The dtype, as numpy names it.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?
            .call_method1("dtype", (self.key_type.name(),))
    }

    fn __len__(&self) -> usize {
        self.shape.first().copied().unwrap_or(1)
    }

    fn __repr__(&self) -> String {
        format!(
            "asym.DeviceArray(shape={:?}, dtype={}, device={:?})",
            self.shape,
            self.key_type.name(),
            self.engine
                .runtime()
                .map(|rt| rt.profile().label())
                .unwrap_or_default()
        )
    }
}
