//! 0/1 knapsack by dynamic programming over capacities: the fastest exact answer wherever its
//! table fits, and the knapsack example's default.
//!
//! Row `i` of the table holds, for every capacity `c`, the best profit of items `0..=i` within
//! `c`; it is computed from row `i - 1` alone (`best[c] = max(prev[c], prev[c - w] + p)`), so
//! two rows of `capacity + 1` profits are kept, and every capacity of a row is independent of
//! the others: rayon splits a long row into runs of 4,096 capacities, each of which also
//! writes whole words of the row's choice bits (whether item `i` is taken at `c`). The items are read back
//! from the bits, last item first: `n · (capacity + 1)` bits in all, which is what bounds the
//! method ([`dp_bytes`]).

use asym_runtime::{host_memory, Error, Result};
use rayon::prelude::*;

use super::Instance;

/// An optimal solution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DpSolution {
    /// The optimum profit.
    pub optimum: u64,
    /// The items taken (indices into the instance's items, ascending).
    pub taken: Vec<usize>,
    /// Table cells computed: items that fit times (capacity + 1).
    pub cells: u64,
}

/// Host bytes [`solve_dp`] needs for `inst`: the choice bits and two rows of profits (`None`
/// when that does not fit in 64 bits).
pub fn dp_bytes(inst: &Instance) -> Option<u64> {
    let row = inst.capacity.checked_add(1)?;
    let items = inst
        .items
        .iter()
        .filter(|i| i.weight <= inst.capacity)
        .count() as u64;
    let bits = items.checked_mul(row.div_ceil(64))?.checked_mul(8)?;
    bits.checked_add(row.checked_mul(16)?)
}

/// Capacities per rayon task (a multiple of 64: each task writes whole words of choice bits).
const RUN: usize = 64 * 64;

/// Rows at least this long are split over rayon's threads.
const PARALLEL_FROM: usize = 1 << 16;

/// The optimum and the items taken, by dynamic programming, if its table ([`dp_bytes`]) fits
/// in `budget` bytes; [`Error::CapacityExceeded`] (naming the bytes needed) otherwise, and
/// [`Error::HostOutOfMemory`]-style errors when the host cannot give the memory.
pub fn solve_dp(inst: &Instance, budget: u64) -> Result<DpSolution> {
    let needed = dp_bytes(inst).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "a DP table for capacity {} and {} items does not fit in 64 bits",
            inst.capacity,
            inst.items.len()
        ))
    })?;
    if needed > budget {
        return Err(Error::CapacityExceeded {
            what: format!(
                "the dynamic program's table ({needed} bytes for {} items and capacity {})",
                inst.items.len(),
                inst.capacity
            ),
            capacity: usize::try_from(budget).unwrap_or(usize::MAX),
        });
    }
    // Every sum of profits fits in u64, so the rows need no saturating adds.
    inst.items
        .iter()
        .try_fold(0u64, |acc, it| acc.checked_add(it.profit))
        .ok_or_else(|| Error::InvalidArgument("the items' total profit exceeds 2^64".into()))?;
    let cap = usize::try_from(inst.capacity)
        .map_err(|_| Error::InvalidArgument(format!("capacity {} exceeds usize", inst.capacity)))?;
    let fitting: Vec<usize> = (0..inst.items.len())
        .filter(|&i| inst.items[i].weight <= inst.capacity)
        .collect();
    let words = (cap + 1).div_ceil(64);
    let mut prev = host_memory::try_filled(cap + 1, 0u64, "the DP rows")?;
    let mut next = host_memory::try_filled(cap + 1, 0u64, "the DP rows")?;
    let mut bits = host_memory::try_filled(fitting.len() * words, 0u64, "the DP choice bits")?;
    for (row, &i) in fitting.iter().enumerate() {
        let (w, p) = (inst.items[i].weight as usize, inst.items[i].profit);
        let row_bits = &mut bits[row * words..(row + 1) * words];
        let prev_ref = &prev;
        // Capacities `first..first + out.len()` of the row (`first` a multiple of 64). Two
        // passes the compiler can vectorize: the profits (a plain maximum: the instance's total
        // profit fits in u64, checked above), then the choice bits (taken where the profit
        // rose), each word gathered in a register and stored once.
        let fill = |first: usize, out: &mut [u64], out_bits: &mut [u64]| {
            let end = first + out.len();
            let split = w.clamp(first, end);
            out[..split - first].copy_from_slice(&prev_ref[first..split]);
            if split < end {
                for ((slot, &keep), &from) in out[split - first..]
                    .iter_mut()
                    .zip(&prev_ref[split..end])
                    .zip(&prev_ref[split - w..end - w])
                {
                    *slot = keep.max(from + p);
                }
            }
            for (k, (cells, word)) in out.chunks(64).zip(out_bits.iter_mut()).enumerate() {
                let base = first + k * 64;
                *word = cells
                    .iter()
                    .zip(&prev_ref[base..base + cells.len()])
                    .enumerate()
                    .fold(0u64, |acc, (b, (now, before))| {
                        acc | (u64::from(now != before) << b)
                    });
            }
        };
        if cap < PARALLEL_FROM {
            // A short row costs less than waking rayon's threads.
            fill(0, &mut next, row_bits);
        } else {
            next.par_chunks_mut(RUN)
                .zip(row_bits.par_chunks_mut(RUN / 64))
                .enumerate()
                .for_each(|(run, (out, out_bits))| fill(run * RUN, out, out_bits));
        }
        std::mem::swap(&mut prev, &mut next);
    }
    let optimum = prev[cap];
    let mut taken = Vec::new();
    let mut c = cap;
    for (row, &i) in fitting.iter().enumerate().rev() {
        if bits[row * words + c / 64] >> (c % 64) & 1 == 1 {
            taken.push(i);
            c -= inst.items[i].weight as usize;
        }
    }
    taken.reverse();
    Ok(DpSolution {
        optimum,
        taken,
        cells: fitting.len() as u64 * (cap as u64 + 1),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Class, Item};
    use super::*;

    /// Every subset: the reference for a handful of items.
    fn brute_force(inst: &Instance) -> u64 {
        let n = inst.items.len();
        (0u32..1 << n)
            .filter_map(|mask| {
                let (mut p, mut w) = (0, 0);
                for (i, it) in inst.items.iter().enumerate() {
                    if mask >> i & 1 == 1 {
                        p += it.profit;
                        w += it.weight;
                    }
                }
                (w <= inst.capacity).then_some(p)
            })
            .max()
            .unwrap_or(0)
    }

    /// The items taken fit and add up to the optimum.
    fn consistent(inst: &Instance, s: &DpSolution) {
        let w: u64 = s.taken.iter().map(|&i| inst.items[i].weight).sum();
        let p: u64 = s.taken.iter().map(|&i| inst.items[i].profit).sum();
        assert!(w <= inst.capacity, "{s:?}");
        assert_eq!(p, s.optimum, "{s:?}");
        assert!(s.taken.windows(2).all(|x| x[0] < x[1]), "{s:?}");
    }

    #[test]
    fn matches_every_subset_on_small_instances_of_every_class() {
        for class in Class::ALL {
            for seed in 0..6 {
                for n in [1, 2, 7, 13] {
                    let inst = Instance::generate(class, n, 60, seed).unwrap();
                    let s = solve_dp(&inst, u64::MAX).unwrap();
                    assert_eq!(s.optimum, brute_force(&inst), "{class:?} {seed} {n}");
                    consistent(&inst, &s);
                }
            }
        }
    }

    #[test]
    fn capacities_past_one_run_match_the_one_row_program() {
        // Capacity far past RUN: several rayon tasks per row, words at their edges.
        for seed in 0..3 {
            let inst = Instance::generate(Class::WeaklyCorrelated, 40, 10_000, seed).unwrap();
            assert!(inst.capacity as usize > 8 * RUN);
            let s = solve_dp(&inst, u64::MAX).unwrap();
            assert_eq!(Some(s.optimum), inst.dp_optimum(u64::MAX));
            consistent(&inst, &s);
        }
    }

    #[test]
    fn edge_cases() {
        let item = |profit, weight| Item { profit, weight };
        let cases = [
            // Capacity 0: nothing fits.
            (vec![item(5, 1)], 0, 0),
            // Every item heavier than the capacity.
            (vec![item(5, 10), item(7, 11)], 9, 0),
            // Everything fits.
            (vec![item(5, 1), item(7, 2), item(1, 3)], 100, 13),
            // Equal ratios, zero profits.
            (vec![item(2, 2), item(4, 4), item(0, 1), item(3, 3)], 6, 6),
        ];
        for (items, capacity, want) in cases {
            let inst = Instance { items, capacity };
            let s = solve_dp(&inst, u64::MAX).unwrap();
            assert_eq!(s.optimum, want, "{inst:?}");
            assert_eq!(s.optimum, brute_force(&inst));
            consistent(&inst, &s);
        }
    }

    #[test]
    fn a_table_past_the_budget_is_an_error_naming_its_size() {
        let inst = Instance::generate(Class::Uncorrelated, 50, 1000, 1).unwrap();
        let needed = dp_bytes(&inst).unwrap();
        match solve_dp(&inst, needed - 1) {
            Err(Error::CapacityExceeded { what, .. }) => {
                assert!(what.contains(&needed.to_string()), "{what}")
            }
            other => panic!("expected CapacityExceeded, got {other:?}"),
        }
        assert!(solve_dp(&inst, needed).is_ok());
    }
}
