//! numpy arrays in: keys by dtype ([`KeyType`], [`with_keys`]) and integer or float vectors
//! ([`counts`], [`u32s`], [`weights_u32`]).
//!
//! Keys are read in C order whatever the array's layout: a C-contiguous array is read in
//! place, any other (a Fortran-ordered matrix, a strided view) is copied first, so nothing
//! is ever read in the wrong order. Other dtypes are refused with a `TypeError`, never
//! converted silently.

use numpy::{Element, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::errors;

/// The key dtypes of the k-selection, the heap and the tree (asym's `Key` types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    /// `int32`.
    I32,
    /// `uint32`.
    U32,
    /// `float32`, ordered as `f32::total_cmp` (-NaN < -inf < ... < -0.0 < +0.0 < ... < +NaN).
    F32,
}

impl KeyType {
    /// The numpy name.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::I32 => "int32",
            KeyType::U32 => "uint32",
            KeyType::F32 => "float32",
        }
    }

    /// The key type of numpy dtype `dtype` (anything `numpy.dtype()` takes), or a
    /// `TypeError` naming the ones asym takes.
    pub fn of_dtype(dtype: &Bound<'_, PyAny>, what: &str) -> PyResult<KeyType> {
        let np = dtype.py().import("numpy")?;
        let d = np.call_method1("dtype", (dtype,))?;
        let name: String = d.getattr("name")?.extract()?;
        KeyType::named(&name, what)
    }

    fn named(name: &str, what: &str) -> PyResult<KeyType> {
        match name {
            "int32" => Ok(KeyType::I32),
            "uint32" => Ok(KeyType::U32),
            "float32" => Ok(KeyType::F32),
            other => Err(errors::type_error(format!(
                "{what} must be int32, uint32 or float32, not {other} (convert with \
                 .astype(numpy.int32), numpy.uint32 or numpy.float32 where the values fit)"
            ))),
        }
    }
}

/// Runs `$body` with `$T` the Rust type of the key type `$kt`.
macro_rules! by_key_type {
    ($kt:expr, $T:ident => $body:expr) => {
        match $kt {
            $crate::arrays::KeyType::I32 => {
                type $T = i32;
                $body
            }
            $crate::arrays::KeyType::U32 => {
                type $T = u32;
                $body
            }
            $crate::arrays::KeyType::F32 => {
                type $T = f32;
                $body
            }
        }
    };
}
pub(crate) use by_key_type;

/// `obj` as a numpy array (`numpy.asarray`: lists and other array-likes are converted; an
/// array is taken as it is).
pub fn ndarray<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let np = obj.py().import("numpy")?;
    Ok(np
        .call_method1("asarray", (obj,))?
        .cast_into::<PyUntypedArray>()?)
}

/// The key type of array `a`.
pub fn key_type(a: &Bound<'_, PyUntypedArray>, what: &str) -> PyResult<KeyType> {
    let name: String = a.dtype().getattr("name")?.extract()?;
    KeyType::named(&name, what)
}

/// `obj` as a 1-D array of keys: of the key type a structure holds where `holds` names one
/// (`(its key type, the structure)`), else of any key type.
pub fn keys_1d<'py>(
    obj: &Bound<'py, PyAny>,
    holds: Option<(KeyType, &str)>,
) -> PyResult<(Bound<'py, PyUntypedArray>, KeyType)> {
    let a = ndarray(obj)?;
    let kt = key_type(&a, "keys")?;
    if let Some((held, holder)) = holds.filter(|(held, _)| *held != kt) {
        return Err(errors::type_error(format!(
            "{holder} holds {} keys, not {}",
            held.name(),
            kt.name()
        )));
    }
    if a.ndim() != 1 {
        return Err(errors::value(format!(
            "keys must be a 1-D array, not one of shape {:?}",
            a.shape()
        )));
    }
    Ok((a, kt))
}

/// Runs `f` on the elements of `a` (dtype `T`, already checked) in C order: in place where
/// `a` is C-contiguous, else on a copy.
pub fn with_keys<T: Element + Copy, R>(
    a: &Bound<'_, PyUntypedArray>,
    f: impl FnOnce(&[T]) -> PyResult<R>,
) -> PyResult<R> {
    let typed = a.cast::<PyArrayDyn<T>>()?;
    let read = typed
        .try_readonly()
        .map_err(|e| errors::value(e.to_string()))?;
    if a.is_c_contiguous() {
        let slice = read.as_slice().map_err(|e| errors::value(e.to_string()))?;
        f(slice)
    } else {
        let copy: Vec<T> = read.as_array().iter().copied().collect();
        f(&copy)
    }
}

/// The elements of `a` (dtype `T`) in C order, copied.
pub fn keys_vec<T: Element + Copy>(a: &Bound<'_, PyUntypedArray>) -> PyResult<Vec<T>> {
    with_keys(a, |s: &[T]| Ok(s.to_vec()))
}

/// `obj` as a 1-D vector of non-negative integers (any integer dtype; lists too), each at
/// most `max`: what item weights, profits, offsets and indices are.
pub fn counts(obj: &Bound<'_, PyAny>, what: &str, max: u64) -> PyResult<Vec<u64>> {
    let a = one_dim(obj, what)?;
    if a.len() == 0 {
        // `numpy.asarray([])` is float64: an empty list is no list of floats.
        return Ok(Vec::new());
    }
    let kind = dtype_kind(&a)?;
    let values: Vec<u64> = match kind.as_str() {
        "u" => keys_vec::<u64>(&as_type(&a, "uint64")?)?,
        "i" => {
            let signed = keys_vec::<i64>(&as_type(&a, "int64")?)?;
            if let Some(i) = signed.iter().position(|&v| v < 0) {
                return Err(errors::value(format!(
                    "{what} must not be negative: element {i} is {}",
                    signed[i]
                )));
            }
            signed.into_iter().map(|v| v as u64).collect()
        }
        _ => {
            return Err(errors::type_error(format!(
                "{what} must be integers, not {}",
                dtype_name(&a)?
            )))
        }
    };
    if let Some(i) = values.iter().position(|&v| v > max) {
        return Err(errors::value(format!(
            "{what}: element {i} is {}, more than the limit of {max}",
            values[i]
        )));
    }
    Ok(values)
}

/// `obj` as a 1-D vector of `u32` in `0..=max` (any integer dtype): what CSR offsets and
/// indices are. int32, uint32, int64 and uint64 arrays are read in place and checked by
/// rayon's threads with the GIL released; other integer dtypes go through [`counts`].
pub fn u32s(obj: &Bound<'_, PyAny>, what: &str, max: u32) -> PyResult<Vec<u32>> {
    let a = one_dim(obj, what)?;
    match dtype_name(&a)?.as_str() {
        "int32" => narrow::<i32>(&a, what, max),
        "uint32" => narrow::<u32>(&a, what, max),
        "int64" => narrow::<i64>(&a, what, max),
        "uint64" => narrow::<u64>(&a, what, max),
        _ => Ok(counts(obj, what, max as u64)?
            .into_iter()
            .map(|v| v as u32)
            .collect()),
    }
}

/// The elements of `a` (dtype `T`, an integer) as `u32`, each checked to lie in `0..=max`.
fn narrow<T>(a: &Bound<'_, PyUntypedArray>, what: &str, max: u32) -> PyResult<Vec<u32>>
where
    T: Element + Copy + Send + Sync + TryInto<u32> + std::fmt::Display,
{
    with_keys(a, |values: &[T]| {
        room_for_u32s(values.len(), what)?;
        let fits = |v: T| v.try_into().ok().filter(|&x: &u32| x <= max);
        // Checked first, then converted by an indexed collect (written in place by rayon's
        // threads): collecting `Option`s cannot know the length and copies through lists.
        let bad = a
            .py()
            .detach(|| values.par_iter().position_any(|&v| fits(v).is_none()));
        if let Some(i) = bad {
            return Err(errors::value(format!(
                "{what}: element {i} is {}, outside 0..={max}",
                values[i]
            )));
        }
        Ok(a.py().detach(|| {
            values
                .par_iter()
                .map(|&v| fits(v).unwrap_or_default())
                .collect()
        }))
    })
}

/// Edge weights as the searches take them: whole numbers in `0..=u32::MAX`, of any integer
/// dtype or a float dtype holding whole numbers (scipy's matrices are float64).
pub fn weights_u32(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    const WHAT: &str = "edge weights";
    let a = one_dim(obj, WHAT)?;
    if dtype_kind(&a)? != "f" {
        return u32s(obj, WHAT, u32::MAX);
    }
    let floats = if dtype_name(&a)? == "float64" {
        a
    } else {
        as_type(&a, "float64")?
    };
    with_keys(&floats, |w: &[f64]| {
        room_for_u32s(w.len(), WHAT)?;
        let whole = |x: f64| x >= 0.0 && x <= u32::MAX as f64 && x.fract() == 0.0;
        let py = floats.py();
        if let Some(i) = py.detach(|| w.par_iter().position_any(|&x| !whole(x))) {
            return Err(errors::value(format!(
                "{WHAT} must be whole numbers from 0 to 2^32 - 1: edge {i} weighs {} \
                 (scale and round them, e.g. numpy.rint(w * 1000))",
                w[i]
            )));
        }
        Ok(py.detach(|| w.par_iter().map(|&x| x as u32).collect()))
    })
}

/// Checks that the host can hold `len` more `u32` (a `MemoryError` rather than an abort).
fn room_for_u32s(len: usize, what: &str) -> PyResult<()> {
    asym_runtime::host_memory::ensure_available(len as u64 * 4, what).map_err(errors::to_py)
}

fn one_dim<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyUntypedArray>> {
    let a = ndarray(obj)?;
    if a.ndim() != 1 {
        return Err(errors::value(format!(
            "{what} must be one-dimensional, not of shape {:?}",
            a.shape()
        )));
    }
    Ok(a)
}

fn dtype_kind(a: &Bound<'_, PyUntypedArray>) -> PyResult<String> {
    a.dtype().getattr("kind")?.extract()
}

fn dtype_name(a: &Bound<'_, PyUntypedArray>) -> PyResult<String> {
    a.dtype().getattr("name")?.extract()
}

fn as_type<'py>(
    a: &Bound<'py, PyUntypedArray>,
    dtype: &str,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    Ok(a.call_method1("astype", (dtype,))?
        .cast_into::<PyUntypedArray>()?)
}
