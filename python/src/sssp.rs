//! `asym.sssp`: shortest distances from one source over a scipy CSR matrix.

use asym_apps::graph::{Graph, UNREACHABLE};
use asym_apps::sssp::delta::auto_delta;
use asym_apps::sssp::front::{Sssp, SsspOptions};
use asym_apps::sssp::Order;
use std::time::Instant;

use asym_runtime::{Mode, Named};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rayon::prelude::*;

use crate::arrays;
use crate::call::work;
use crate::engine::{engine_for, Choice, Work};
use crate::errors;

/// Shortest path lengths from ``source`` to every vertex of a directed graph, by
/// delta-stepping.
///
/// Parameters
/// ----------
/// graph : scipy.sparse matrix or tuple
///     The graph as scipy's ``csgraph`` takes it: a square sparse matrix whose entry
///     ``[u, v]`` is the weight of edge u → v (CSR is read directly; other formats go
///     through ``.tocsr()``), or a tuple ``(indptr, indices, weights)`` of its CSR arrays.
///     Weights must be whole numbers from 0 to 2^32 - 1 (any integer dtype, or floats
///     holding whole numbers); every stored entry is an edge, explicit zeros included.
/// source : int
///     The vertex the distances are measured from.
/// mode : {"auto", "cpu", "gpu", "coop"}, optional
///     ``cpu``: delta-stepping on the latency threads; ``gpu``: on the device (near-far
///     work lists); ``coop``: rounds moved between both by their measured speed.
///     ``auto``: ``cpu`` (each call uploads the graph, which costs a GPU more than its
///     faster search saves: ``stats=True`` shows the parts).
/// device : str or asym.Runtime, optional
///     The device or runtime to run on.
/// stats : bool, optional
///     Also return where the time went: a dict of milliseconds (``read`` the arrays,
///     ``build`` the graph, ``search`` in all, of which ``compute`` the search proper and
///     ``setup`` its arrays on the device or threads, ``release`` the graph and the
///     device's copy) and counters (``vertices``, ``edges``, ``iterations``, ``relaxed``).
///
/// Returns
/// -------
/// numpy.ndarray
///     float64 distances, ``inf`` where no path leads, as
///     ``scipy.sparse.csgraph.dijkstra(graph, indices=source)`` gives them; with
///     ``stats=True``, the tuple ``(distances, stats)``.
///
/// Raises
/// ------
/// ValueError
///     A matrix that is not square, malformed CSR arrays, weights that are not whole
///     numbers, a source outside the graph, a distance beyond 2^32 - 2.
///
/// Examples
/// --------
/// >>> from scipy.sparse import csr_matrix
/// >>> g = csr_matrix(np.array([[0, 4, 1], [0, 0, 0], [0, 2, 0]]))
/// >>> asym.sssp(g, 0)
/// array([0., 3., 1.])
#[pyfunction]
#[pyo3(signature = (graph, source, mode = "auto", device = None, stats = false))]
pub fn sssp<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyAny>,
    source: i64,
    mode: &str,
    device: Option<&Bound<'py, PyAny>>,
    stats: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let choice = Choice::parse(mode)?;
    let started = Instant::now();
    let (indptr, indices, weights) = csr_parts(graph)?;
    let offsets = arrays::u32s(&indptr, "indptr", u32::MAX - 1)?;
    let targets = arrays::u32s(&indices, "indices", u32::MAX - 1)?;
    let weights = arrays::weights_u32(&weights)?;
    if source < 0 {
        return Err(errors::value(format!(
            "source = {source}: vertices are numbered from 0"
        )));
    }
    let engine = engine_for(py, device)?;
    let mode = engine.mode(choice, Work::Sssp).map_err(errors::to_py)?;
    let read_ms = ms(started);
    let (distances, times) = work(py, move || {
        let t = Instant::now();
        let graph = Graph::from_csr(offsets, targets, weights)?;
        let build_ms = ms(t);
        let t = Instant::now();
        let mut front =
            Sssp::new(&graph, SsspOptions::default()).with_latency_threads(engine.pool());
        if mode != Mode::CpuOnly {
            front = front.with_devices(engine.device_set()?);
        }
        let order = Order::Delta {
            width: auto_delta(&graph),
        };
        let run = front.shortest_paths(source as usize, mode, order)?.run;
        let search_ms = ms(t);
        let distances: Vec<f64> = run
            .distances
            .par_iter()
            .map(|&d| {
                if d == UNREACHABLE {
                    f64::INFINITY
                } else {
                    d as f64
                }
            })
            .collect();
        let counts = (graph.vertices(), graph.edges());
        let t = Instant::now();
        drop(front);
        drop(graph);
        let times = Times {
            build_ms,
            search_ms,
            compute_ms: run.stats.compute_time.as_secs_f64() * 1e3,
            setup_ms: run.stats.transfer_time.as_secs_f64() * 1e3,
            release_ms: ms(t),
            vertices: counts.0,
            edges: counts.1,
            iterations: run.stats.iterations,
            relaxed: run.stats.relaxed,
        };
        Ok((distances, times))
    })?;
    let distances = PyArray1::from_vec(py, distances).into_any();
    if !stats {
        return Ok(distances);
    }
    let d = PyDict::new(py);
    d.set_item("mode", mode.name())?;
    d.set_item("read", read_ms)?;
    d.set_item("build", times.build_ms)?;
    d.set_item("search", times.search_ms)?;
    d.set_item("compute", times.compute_ms)?;
    d.set_item("setup", times.setup_ms)?;
    d.set_item("release", times.release_ms)?;
    d.set_item("vertices", times.vertices)?;
    d.set_item("edges", times.edges)?;
    d.set_item("iterations", times.iterations)?;
    d.set_item("relaxed", times.relaxed)?;
    Ok(PyTuple::new(py, [distances, d.into_any()])?.into_any())
}

/// Where a search's time went, ms, and its counters.
struct Times {
    build_ms: f64,
    search_ms: f64,
    compute_ms: f64,
    setup_ms: f64,
    release_ms: f64,
    vertices: usize,
    edges: usize,
    iterations: u64,
    relaxed: u64,
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// `indptr`, `indices` and the weights of a scipy sparse matrix (checked square) or of a
/// tuple of the three.
fn csr_parts<'py>(
    graph: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    if let Ok(t) = graph.cast::<PyTuple>() {
        if t.len() != 3 {
            return Err(errors::value(format!(
                "a graph tuple is (indptr, indices, weights), not {} arrays",
                t.len()
            )));
        }
        return Ok((t.get_item(0)?, t.get_item(1)?, t.get_item(2)?));
    }
    if !graph.hasattr("tocsr")? {
        return Err(errors::type_error(format!(
            "graph must be a scipy.sparse matrix or a tuple (indptr, indices, weights), not {}",
            graph.get_type().name()?
        )));
    }
    let shape: (usize, usize) = graph.getattr("shape")?.extract()?;
    if shape.0 != shape.1 {
        return Err(errors::value(format!(
            "a graph's matrix is square: this one is {} x {}",
            shape.0, shape.1
        )));
    }
    let csr = graph.call_method0("tocsr")?;
    Ok((
        csr.getattr("indptr")?,
        csr.getattr("indices")?,
        csr.getattr("data")?,
    ))
}
