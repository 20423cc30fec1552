//! What a call runs on ([`Engine`]: a device's runtime, the latency threads, the k-selector),
//! `asym.Runtime`, `asym.devices()`, and the words of `mode=` and `device=`.
//!
//! A call without `device=` runs on the default engine, made at its first use: the device
//! `ASYM_DEVICE` names, else the first GPU, else the first CPU device, with one latency
//! thread per core (`ASYM_LATENCY_THREADS`). Where no device can be opened, the default
//! engine still runs the CPU modes, and a device mode raises `asym.DeviceError` with the
//! reason. `device="name"` makes (once per name) an engine on the device whose platform or
//! device name contains it; `device=rt` runs on an `asym.Runtime` the caller made.

use std::sync::{Arc, Mutex};

use asym_runtime::{
    list_devices, DeviceKind, DeviceSet, Error, FaultPoint, LatencyPool, Mode, Named, Result,
    Runtime,
};
use asym_structures::KSelector;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::call::{self, work};
use crate::errors;
use crate::resident::DeviceArray;

/// Heap arity of the k-selector's d-heaps (the programs' default).
const SELECTOR_D: usize = 8;

/// A device (where one could be opened), the latency threads and what is built on them.
pub struct Engine {
    rt: Option<Runtime>,
    /// Why there is no device, when there is none.
    no_device: Option<String>,
    pool: Arc<LatencyPool>,
    selector: KSelector,
    set: Option<DeviceSet>,
    /// The heap `asym.sort` keeps for the next sort (making and freeing one of 2^26 keys on
    /// the GPU machine's coarse SVM costs 5-10 times the sort).
    pub(crate) sort_heap: Mutex<Option<crate::heap::KeptHeap>>,
}

impl Engine {
    /// An engine on `device` (`None`: the default device, or none where none opens) with
    /// `threads` latency threads (`None`: one per core).
    fn open(device: Option<&str>, threads: Option<usize>) -> Result<Engine> {
        let (rt, no_device) = match Runtime::on_device(device) {
            Ok(rt) => (Some(rt), None),
            Err(e) if device.is_none() => (None, Some(e.to_string())),
            Err(e) => return Err(e),
        };
        let pool = Arc::new(LatencyPool::with_threads(threads)?);
        let selector = KSelector::new(rt.clone(), pool.clone(), SELECTOR_D)?;
        let set = match &rt {
            Some(rt) => Some(DeviceSet::from_runtimes(vec![rt.clone()])?),
            None => None,
        };
        Ok(Engine {
            rt,
            no_device,
            pool,
            selector,
            set,
            sort_heap: Mutex::new(None),
        })
    }

    /// The device's runtime, or `asym.DeviceError`'s reason why there is none.
    pub fn runtime(&self) -> Result<&Runtime> {
        self.rt.as_ref().ok_or_else(|| Error::Unsupported {
            device: "(none)".into(),
            what: "run this in a device mode (gpu or coop) or keep data in SVM".into(),
            lacks: format!(
                "an OpenCL device: {}",
                self.no_device.as_deref().unwrap_or("none was opened")
            ),
        })
    }

    /// The device as a set of one (SSSP's front takes a set).
    pub fn device_set(&self) -> Result<&DeviceSet> {
        self.runtime()?;
        self.set
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("no device set".into()))
    }

    /// The latency threads.
    pub fn pool(&self) -> &Arc<LatencyPool> {
        &self.pool
    }

    /// The k-selector on this engine's device and threads.
    pub fn selector(&self) -> &KSelector {
        &self.selector
    }

    /// Whether the engine's device is a GPU.
    fn has_gpu(&self) -> bool {
        self.rt
            .as_ref()
            .is_some_and(|rt| rt.profile().kind == DeviceKind::Gpu)
    }

    /// The mode `choice` runs `work` in: `auto` picks by the work and the device (see
    /// [`Work`]); a device mode without a device is an error naming why there is none.
    pub fn mode(&self, choice: Choice, work: Work) -> Result<Mode> {
        let mode = match choice {
            Choice::Fixed(m) => m,
            Choice::Auto => match work {
                Work::ResidentKeys => Mode::GpuOnly,
                Work::HostKeys | Work::Sssp => Mode::CpuOnly,
                Work::Heap | Work::Tree if self.has_gpu() => Mode::GpuOnly,
                Work::Heap | Work::Tree => Mode::CpuOnly,
            },
        };
        if mode.uses_device() {
            self.runtime()?;
        }
        Ok(mode)
    }
}

/// What a call does, for `mode="auto"`: the fastest mode measured for it
/// (docs/benchmarks/python.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// k-selection of keys in host memory: the latency threads' radix (a device would first
    /// have to be sent the keys, which costs more than the selection).
    HostKeys,
    /// k-selection of keys in SVM: the device radix where the keys are.
    ResidentKeys,
    /// The generalized heap and `sort`: the device heap on a GPU, else the latency threads.
    Heap,
    /// Shortest paths from a graph in host memory: the latency threads' delta-stepping. A
    /// call that uploads the graph pays more for it than the device's search saves (H200,
    /// 33.5 M edges: the device's search call 204-272 ms with the upload, 46-61 ms to release;
    /// 97-108 ms on 16 threads).
    Sssp,
    /// The red-black tree's batches: the device on a GPU, else the latency threads.
    Tree,
}

/// A `mode=` word: `auto` or one of asym's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Chosen by the work and the device ([`Engine::mode`]).
    Auto,
    /// This mode.
    Fixed(Mode),
}

impl Choice {
    /// `mode=` as given.
    pub fn parse(word: &str) -> PyResult<Choice> {
        if word == "auto" {
            return Ok(Choice::Auto);
        }
        Mode::from_name(word).map(Choice::Fixed).ok_or_else(|| {
            errors::value(format!(
                "mode={word:?}: expected \"auto\", {}",
                Mode::ALL
                    .iter()
                    .map(|m| format!("{:?}", m.name()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
}

/// Engines made for `device=None` and `device="name"`, each once.
static ENGINES: Mutex<Vec<(Option<String>, Arc<Engine>)>> = Mutex::new(Vec::new());

/// The engine `device=` names: `None` the default one, a string the device it names (each
/// made once), an `asym.Runtime` its own.
pub fn engine_for(py: Python<'_>, device: Option<&Bound<'_, PyAny>>) -> PyResult<Arc<Engine>> {
    let name = match device {
        None => None,
        Some(d) if d.is_none() => None,
        Some(d) => {
            if let Ok(rt) = d.cast::<PyRuntime>() {
                return Ok(rt.get().engine.clone());
            }
            match d.extract::<String>() {
                Ok(s) => Some(s),
                Err(_) => {
                    return Err(errors::type_error(format!(
                        "device= takes a device name (str), an asym.Runtime or None, not {}",
                        d.get_type().name()?
                    )))
                }
            }
        }
    };
    work(py, move || {
        let mut engines = call::locked(&ENGINES, "the engine cache")?;
        if let Some((_, e)) = engines.iter().find(|(n, _)| *n == name) {
            return Ok(e.clone());
        }
        let engine = Arc::new(Engine::open(name.as_deref(), None)?);
        engines.push((name, engine.clone()));
        Ok(engine)
    })
}

/// Devices and threads that asym's calls run on: ``asym.Runtime(device=None, threads=None)``.
///
/// Parameters
/// ----------
/// device : str, optional
///     A fragment of the platform or device name (``"nvidia"``, ``"pthread"``); by default
///     ``ASYM_DEVICE``, else the first GPU, else the first CPU device. Where no device
///     opens and none was named, the runtime runs the ``"cpu"`` mode only.
/// threads : int, optional
///     Latency threads, pinned one per core (default: one per core,
///     ``ASYM_LATENCY_THREADS``).
///
/// Pass it as ``device=rt`` to any call, or keep keys on its device with ``rt.array(a)``.
/// The SVM transport comes from ``ASYM_SVM`` (``fine`` or ``coarse``), read when the
/// runtime is made.
#[pyclass(name = "Runtime", module = "asym", frozen)]
pub struct PyRuntime {
    pub(crate) engine: Arc<Engine>,
}

#[pymethods]
impl PyRuntime {
    #[new]
    #[pyo3(signature = (device = None, threads = None))]
    fn new(py: Python<'_>, device: Option<String>, threads: Option<usize>) -> PyResult<Self> {
        let engine = work(py, move || Engine::open(device.as_deref(), threads))?;
        Ok(PyRuntime {
            engine: Arc::new(engine),
        })
    }

    /// The device as ``"platform / device"``, or None where the runtime has none.
    #[getter]
    fn device(&self) -> Option<String> {
        self.engine.rt.as_ref().map(|rt| rt.profile().label())
    }

    /// The SVM transport, ``"fine"`` or ``"coarse"`` (None without a device).
    #[getter]
    fn transport(&self) -> Option<&'static str> {
        self.engine.rt.as_ref().map(|rt| rt.transport().name())
    }

    /// Latency threads.
    #[getter]
    fn threads(&self) -> usize {
        self.engine.pool.len()
    }

    /// Copies ``a`` (int32, uint32 or float32, any shape) into SVM on this runtime's device
    /// and returns the :class:`DeviceArray` that keeps it there: ``kselect`` on it runs the
    /// device radix where the keys are.
    fn array(&self, py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<DeviceArray> {
        DeviceArray::upload(py, self.engine.clone(), a)
    }

    /// Makes the device fail its ``nth`` (from 1) next ``point`` operation (``"launch"``,
    /// ``"map"``, ``"alloc"`` or ``"wait"``) as a lost device would: for tests of what a
    /// failure leaves. ``nth=0`` disarms.
    fn _inject_fault(&self, point: &str, nth: u64) -> PyResult<()> {
        let rt = self.engine.runtime().map_err(errors::to_py)?;
        if nth == 0 {
            rt.faults().disarm();
            return Ok(());
        }
        let point = FaultPoint::from_name(point).ok_or_else(|| {
            errors::value(format!(
                "fault point {point:?}: expected {}",
                FaultPoint::names()
            ))
        })?;
        rt.faults().arm(point, nth);
        Ok(())
    }

    fn __repr__(&self) -> String {
        match &self.engine.rt {
            Some(rt) => format!(
                "asym.Runtime(device={:?}, transport={:?}, threads={})",
                rt.profile().label(),
                rt.transport().name(),
                self.engine.pool.len()
            ),
            None => format!(
                "asym.Runtime(device=None, threads={})",
                self.engine.pool.len()
            ),
        }
    }
}

/// The OpenCL devices asym can run on, as a list of dicts.
///
/// Returns
/// -------
/// list of dict
///     One per device: ``platform``, ``name``, ``kind`` (``"gpu"``, ``"cpu"`` or
///     ``"other"``), ``svm`` (``"none"``, ``"coarse"``, ``"fine"``, ``"fine+atomics"``),
///     ``compute_units``, ``global_mem_bytes`` and ``opencl_c``. Empty where no OpenCL
///     platform is installed.
#[pyfunction]
pub fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let list = work(py, || match list_devices() {
        Ok(list) => Ok(list),
        Err(Error::NoPlatform) => Ok(Vec::new()),
        Err(e) => Err(e),
    })?;
    list.into_iter()
        .map(|p| {
            let d = PyDict::new(py);
            d.set_item("platform", &p.platform)?;
            d.set_item("name", &p.name)?;
            d.set_item(
                "kind",
                match p.kind {
                    DeviceKind::Gpu => "gpu",
                    DeviceKind::Cpu => "cpu",
                    DeviceKind::Other => "other",
                },
            )?;
            d.set_item("svm", p.svm.to_string())?;
            d.set_item("compute_units", p.compute_units)?;
            d.set_item("global_mem_bytes", p.global_mem_bytes)?;
            d.set_item("opencl_c", format!("{}.{}", p.opencl_c.0, p.opencl_c.1))?;
            Ok(d)
        })
        .collect()
}
