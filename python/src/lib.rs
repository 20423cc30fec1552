//! The extension module behind the Python package `asym` (`python/asym/`): asym's structures
//! with numpy arrays in and out.
//!
//! Every call follows one path (`call`): arguments are checked and read while the GIL is
//! held, the work runs with the GIL released (`call::work`) and inside `catch_unwind`, so
//! no Rust panic reaches Python, and every `asym_runtime::Error` becomes the Python
//! exception its kind calls for (`errors`). Long calls split into batches and look for a
//! pending Ctrl-C between them (`call::batches`).
//!
//! Modules: `engine` (the runtime, latency threads and selector a call runs on, and the
//! `mode=`/`device=` words), `arrays` (numpy keys in, by dtype), `kselect`, `resident`
//! (keys that live in SVM), `heap` (the generalized heap and `sort`), `sssp`,
//! `knapsack`, `rbtree`.
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

mod arrays;
mod call;
mod engine;
mod errors;
mod heap;
mod knapsack;
mod kselect;
mod rbtree;
mod resident;
mod sssp;

use pyo3::prelude::*;

/// The package's native half: `asym/__init__.py` re-exports it with the documentation.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("AsymError", py.get_type::<errors::AsymError>())?;
    m.add("DeviceError", py.get_type::<errors::DeviceError>())?;
    m.add_function(wrap_pyfunction!(engine::devices, m)?)?;
    m.add_class::<engine::PyRuntime>()?;
    m.add_class::<resident::DeviceArray>()?;
    m.add_function(wrap_pyfunction!(kselect::kselect, m)?)?;
    m.add_class::<heap::Heap>()?;
    m.add_function(wrap_pyfunction!(heap::sort, m)?)?;
    m.add_function(wrap_pyfunction!(sssp::sssp, m)?)?;
    m.add_function(wrap_pyfunction!(knapsack::knapsack, m)?)?;
    m.add_class::<rbtree::RBTree>()?;
    m.add_function(wrap_pyfunction!(call::set_batch_keys, m)?)?;
    Ok(())
}
