//! `asym.knapsack`: the 0/1 knapsack's optimum and items.

use std::time::Duration;

use asym_apps::knapsack::front::{Knapsack, Method, SolveOptions};
use asym_apps::knapsack::solution::items_worth;
use asym_apps::knapsack::{Instance, Item};
use asym_runtime::Mode;
use numpy::PyArray1;
use pyo3::prelude::*;

use crate::arrays;
use crate::call::work;
use crate::engine::{engine_for, Choice};
use crate::errors;

/// Nodes the depth-first search for a proved optimum's items may take.
const ITEM_NODES: u64 = 1 << 26;

/// The most valuable set of items that fits in ``capacity`` (0/1 knapsack), exactly.
///
/// Parameters
/// ----------
/// weights, profits : array_like of int
///     One weight and one profit per item, non-negative integers (weights and profits up to
///     2^62 each).
/// capacity : int
///     The knapsack's capacity (0 or more).
/// mode : {"auto", "cpu", "gpu", "coop"}, optional
///     ``auto``: the fastest exact method that fits: dynamic programming where its table
///     fits a quarter of the memory available, else branch-and-bound on one core.
///     ``cpu``: best-first branch-and-bound on the concurrent heap of the latency threads;
///     ``gpu``: its heap on the device; ``coop``: a host top in front of the device heap.
/// device : str or asym.Runtime, optional
///     The device or runtime to run on.
/// time_limit : float, optional
///     Seconds a branch-and-bound search may take; past it, the best solution found so
///     far is returned and ``proved`` is False.
///
/// Returns
/// -------
/// optimum : int
///     The largest total profit of items whose weights fit.
/// items : numpy.ndarray
///     Indices of a set of items worth ``optimum`` (ascending, int64); None only where the
///     search for them ran out of its node budget.
/// proved : bool
///     Whether ``optimum`` is proved optimal (False only after ``time_limit``).
///
/// Examples
/// --------
/// >>> asym.knapsack([3, 4, 5], [30, 50, 60], 8)
/// (90, array([0, 2]), True)
#[pyfunction]
#[pyo3(signature = (weights, profits, capacity, mode = "auto", device = None, time_limit = None))]
pub fn knapsack<'py>(
    py: Python<'py>,
    weights: &Bound<'py, PyAny>,
    profits: &Bound<'py, PyAny>,
    capacity: i64,
    mode: &str,
    device: Option<&Bound<'py, PyAny>>,
    time_limit: Option<f64>,
) -> PyResult<(u64, Option<Bound<'py, PyAny>>, bool)> {
    let choice = Choice::parse(mode)?;
    const MAX: u64 = 1 << 62;
    let weights = arrays::counts(weights, "weights", MAX)?;
    let profits = arrays::counts(profits, "profits", MAX)?;
    if weights.len() != profits.len() {
        return Err(errors::value(format!(
            "{} weights but {} profits: one of each per item",
            weights.len(),
            profits.len()
        )));
    }
    if capacity < 0 {
        return Err(errors::value(format!(
            "capacity = {capacity}: it must be 0 or more"
        )));
    }
    let time_limit = match time_limit {
        Some(t) if !(t > 0.0 && t.is_finite()) => {
            return Err(errors::value(format!(
                "time_limit = {t}: seconds, more than 0"
            )))
        }
        t => t.map(Duration::from_secs_f64),
    };
    let method = match choice {
        Choice::Auto => Method::Auto,
        Choice::Fixed(m) => Method::BranchAndBound(m),
    };
    let engine = engine_for(py, device)?;
    if let Choice::Fixed(m) = choice {
        if m.uses_device() {
            engine.runtime().map_err(errors::to_py)?;
        }
    }
    let (optimum, items, proved) = work(py, move || {
        // Items weighing nothing are in every optimum: the search takes the others.
        let free: Vec<usize> = (0..weights.len()).filter(|&i| weights[i] == 0).collect();
        let kept: Vec<usize> = (0..weights.len()).filter(|&i| weights[i] != 0).collect();
        let inst = Instance {
            items: kept
                .iter()
                .map(|&i| Item {
                    weight: weights[i],
                    profit: profits[i],
                })
                .collect(),
            capacity: capacity as u64,
        };
        let too_much =
            || asym_runtime::Error::InvalidArgument("the items' total profit exceeds 2^64".into());
        let free_profit = free
            .iter()
            .try_fold(0u64, |sum, &i| sum.checked_add(profits[i]))
            .ok_or_else(too_much)?;
        let mut front = Knapsack::new(SolveOptions {
            time_limit,
            ..Default::default()
        })
        .with_latency_threads(engine.pool());
        if matches!(method, Method::BranchAndBound(m) if m != Mode::CpuOnly) {
            front = front.with_device(engine.runtime()?);
        }
        let solution = if inst.items.is_empty() {
            None
        } else {
            Some(front.solve(&inst, method)?)
        };
        let (optimum, taken, proved) = match solution {
            None => (0, Some(Vec::new()), true),
            Some(s) => {
                let taken = s
                    .taken
                    .or_else(|| items_worth(&inst, s.stats.optimum, ITEM_NODES));
                (s.stats.optimum, taken, s.stats.proved)
            }
        };
        let items = taken.map(|t| {
            let mut all: Vec<i64> = t.iter().map(|&j| kept[j] as i64).collect();
            all.extend(free.iter().map(|&i| i as i64));
            all.sort_unstable();
            all
        });
        let optimum = optimum.checked_add(free_profit).ok_or_else(too_much)?;
        Ok((optimum, items, proved))
    })?;
    let items = items.map(|v| PyArray1::from_vec(py, v).into_any());
    Ok((optimum, items, proved))
}
