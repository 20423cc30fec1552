//! asym's errors as Python exceptions, decided in one place by the error's kind.
//!
//! | [`Error`] | Python |
//! |---|---|
//! | bad arguments and sizes (`InvalidArgument`, `OutOfRange`, `TooLarge`, `Flag`, `Parse`) | `ValueError` |
//! | memory running out (`OutOfMemory`, `HostOutOfMemory`, `CapacityExceeded`) | `MemoryError` |
//! | a file (`Io`) | `OSError` |
//! | a device, its driver, its build or a wait on it (`OpenCl`, `NoPlatform`, `DeviceNotFound`, `Unsupported`, `Build`, `DeviceLost`, `Stalled`, `Busy`) | `asym.DeviceError` |
//! | the rest (a damaged structure, a lost host thread, an internal error) | `asym.AsymError` |
//!
//! `asym.DeviceError` is an `asym.AsymError`, which is a `RuntimeError`.

use asym_runtime::Error;
use pyo3::exceptions::{PyMemoryError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;

pyo3::create_exception!(
    asym,
    AsymError,
    PyRuntimeError,
    "An asym call failed for a reason that is not the caller's arguments: a damaged \
     structure, a lost host thread, an internal error."
);
pyo3::create_exception!(
    asym,
    DeviceError,
    AsymError,
    "An OpenCL device failed or cannot do what was asked: no device or driver, a device \
     lacking the SVM level a structure needs, a kernel that failed to build (the message \
     holds the build log), a device lost or a wait on it that ran out."
);

/// The Python exception for `e`.
pub fn to_py(e: Error) -> PyErr {
    let text = e.to_string();
    match e {
        Error::InvalidArgument(_)
        | Error::OutOfRange { .. }
        | Error::TooLarge { .. }
        | Error::Flag { .. }
        | Error::Parse { .. } => PyValueError::new_err(text),
        Error::OutOfMemory(_) | Error::HostOutOfMemory { .. } | Error::CapacityExceeded { .. } => {
            PyMemoryError::new_err(text)
        }
        Error::Io { .. } => PyOSError::new_err(text),
        Error::OpenCl { .. }
        | Error::NoPlatform
        | Error::DeviceNotFound { .. }
        | Error::Unsupported { .. }
        | Error::Build { .. }
        | Error::DeviceLost { .. }
        | Error::Stalled { .. }
        | Error::Busy(_) => DeviceError::new_err(text),
        _ => AsymError::new_err(text),
    }
}

/// A `ValueError` with `text`.
pub fn value(text: impl Into<String>) -> PyErr {
    PyValueError::new_err(text.into())
}

/// A `TypeError` with `text`.
pub fn type_error(text: impl Into<String>) -> PyErr {
    PyTypeError::new_err(text.into())
}

/// The `AsymError` for a panic caught at the boundary: a bug, said so.
pub fn internal(message: &str) -> PyErr {
    AsymError::new_err(format!(
        "internal error (a bug in asym; please report it): {message}"
    ))
}
