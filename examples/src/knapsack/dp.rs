//! 0/1 knapsack by dynamic programming over capacities: the fastest exact answer wherever its
//! table fits, and the knapsack example's default.
//!
//! Row `i` of the table holds, for every capacity `c`, the best profit of items `0..=i` within
//! `c`; it is computed from row `i - 1` alone (`best[c] = max(prev[c], prev[c - w] + p)`),
//! along with the row's choice bits (whether item `i` is taken at `c`, a word per 64
//! capacities). A short row is updated in place from the top capacity down, as the one-row
//! program does, each block of 64 capacities in one pass that also yields its word of bits;
//! a long row (2^16 capacities or more) is computed from a second one, every capacity
//! independent of the others, and rayon splits it into runs of 4,096 capacities. Rows hold
//! `i32` profits where the items' total profit fits, else `u64`. The items are read back from
//! the bits, last item first: `n · (capacity + 1)` bits in all, which is what bounds the
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
    let total: u64 = fitting.iter().map(|&i| inst.items[i].profit).sum();
    let (optimum, bits, words) = if total <= i32::MAX as u64 {
        table::<i32>(inst, cap, &fitting)?
    } else {
        table::<u64>(inst, cap, &fitting)?
    };
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

/// A row's profits: `i32` where the items' total profit fits (half the memory of `u64` and
/// twice the lanes per vector), else `u64`.
trait Profit: Copy + Ord + Default + Send + Sync + std::ops::Add<Output = Self> {
    /// `p`, which the caller checked fits.
    fn of(p: u64) -> Self;
    fn get(self) -> u64;
    /// Bit `b` set where `now[b] > before[b]`, for a block of 64 capacities where
    /// `now[b] >= before[b]` throughout (a row only rises).
    fn rose(now: &[Self], before: &[Self]) -> u64;
    /// One block of 64 capacities in place: `cells[b] = max(cells[b], from[b] + p)`, and
    /// the block's choice bits (where it rose).
    fn step(cells: &mut [Self], from: &[Self; 64], p: Self) -> u64 {
        let mut old = [Self::default(); 64];
        old.copy_from_slice(&cells[..64]);
        for ((c, &f), &o) in cells[..64].iter_mut().zip(from).zip(&old) {
            *c = o.max(f + p);
        }
        Self::rose(cells, &old)
    }
}

impl Profit for i32 {
    fn of(p: u64) -> Self {
        p as i32
    }
    fn get(self) -> u64 {
        self as u64
    }
    fn rose(now: &[i32], before: &[i32]) -> u64 {
        // `before - now` is negative exactly where the row rose (both lie in 0..=i32::MAX,
        // so the difference does not wrap): its sign bit is the choice bit. In halves of 32,
        // which the compiler packs with vector shifts.
        let (now, before) = (&now[..64], &before[..64]);
        let (mut lo, mut hi) = (0u32, 0u32);
        for b in 0..32 {
            lo |= (before[b].wrapping_sub(now[b]) as u32 >> 31) << b;
        }
        for b in 0..32 {
            hi |= (before[32 + b].wrapping_sub(now[32 + b]) as u32 >> 31) << b;
        }
        u64::from(lo) | u64::from(hi) << 32
    }
    fn step(cells: &mut [i32], from: &[i32; 64], p: i32) -> u64 {
        // The maximum and the sign of `old - new` in one pass, in halves of 32.
        let cells = &mut cells[..64];
        let mut half = [0u32; 2];
        for (h, bits) in half.iter_mut().enumerate() {
            for b in 0..32 {
                let i = 32 * h + b;
                let old = cells[i];
                let new = old.max(from[i] + p);
                cells[i] = new;
                *bits |= (old.wrapping_sub(new) as u32 >> 31) << b;
            }
        }
        u64::from(half[0]) | u64::from(half[1]) << 32
    }
}

impl Profit for u64 {
    fn of(p: u64) -> Self {
        p
    }
    fn get(self) -> u64 {
        self
    }
    fn rose(now: &[u64], before: &[u64]) -> u64 {
        now.iter()
            .zip(before)
            .enumerate()
            .fold(0u64, |acc, (b, (n, o))| acc | u64::from(n != o) << b)
    }
}

/// The table's last row at `cap` and the choice bits (`words` per item of `fitting`), with
/// rows of `T`: every sum of the fitting items' profits fits `T` (the caller checked). Rows
/// are padded to whole words of bits; the padding's cells and bits are computed and never read.
fn table<T: Profit>(
    inst: &Instance,
    cap: usize,
    fitting: &[usize],
) -> Result<(u64, Vec<u64>, usize)> {
    let words = (cap + 1).div_ceil(64);
    let len = words * 64;
    let mut bits = host_memory::try_filled(fitting.len() * words, 0u64, "the DP choice bits")?;
    let mut prev = host_memory::try_filled(len, T::default(), "the DP rows")?;
    if cap < PARALLEL_FROM {
        // One row, updated in place from the top capacity down (as the one-row program):
        // a cell reads the cell `w` below, which this item has not changed yet. Capacities
        // below `w` are neither copied nor scanned (their bits stay 0).
        for (row, &i) in fitting.iter().enumerate() {
            let (w, p) = (inst.items[i].weight as usize, T::of(inst.items[i].profit));
            let row_bits = &mut bits[row * words..(row + 1) * words];
            for block in (w.div_ceil(64)..words).rev() {
                let base = block * 64;
                let mut from = [T::default(); 64];
                from.copy_from_slice(&prev[base - w..base - w + 64]);
                row_bits[block] = T::step(&mut prev[base..base + 64], &from, p);
            }
            // The block holding `w` (when `w` is not a multiple of 64), cell by cell from
            // the top: `c - w` lies below every cell changed before it.
            let block = w / 64;
            if w % 64 != 0 {
                for c in (w..(block + 1) * 64).rev() {
                    let new = prev[c].max(prev[c - w] + p);
                    if new != prev[c] {
                        row_bits[block] |= 1 << (c % 64);
                    }
                    prev[c] = new;
                }
            }
        }
        return Ok((prev[cap].get(), bits, words));
    }
    // Long rows: two rows, every capacity of a row independent of the others, split over
    // rayon.
    let mut next = host_memory::try_filled(len, T::default(), "the DP rows")?;
    for (row, &i) in fitting.iter().enumerate() {
        let (w, p) = (inst.items[i].weight as usize, T::of(inst.items[i].profit));
        let row_bits = &mut bits[row * words..(row + 1) * words];
        let prev_ref = &prev;
        // Capacities `first..first + out.len()` of the row (`first` and the length multiples
        // of 64). Two passes the compiler vectorizes: the profits (a plain maximum: every
        // sum fits `T`), then the choice bits, each word gathered in a register and stored
        // once.
        let fill = |first: usize, out: &mut [T], out_bits: &mut [u64]| {
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
            for (k, (cells, word)) in out.chunks_exact(64).zip(out_bits.iter_mut()).enumerate() {
                let base = first + k * 64;
                *word = T::rose(cells, &prev_ref[base..base + 64]);
            }
        };
        next.par_chunks_mut(RUN)
            .zip(row_bits.par_chunks_mut(RUN / 64))
            .enumerate()
            .for_each(|(run, (out, out_bits))| fill(run * RUN, out, out_bits));
        std::mem::swap(&mut prev, &mut next);
    }
    Ok((prev[cap].get(), bits, words))
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
    fn both_row_layouts_and_profit_widths_match_the_one_row_program() {
        // Short rows (one row in place, a block straddling each weight unless it is a
        // multiple of 64) and long ones (two rows over rayon); profits that fit i32 and
        // ones that need u64 rows.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |bound: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % bound
        };
        for capacity in [63, 64, 65, 127, 128, 1_000, 4_097, 70_000] {
            for max_weight in [5, 64, 200, 3_000] {
                for scale in [1, (1u64 << 32) + 1] {
                    let items: Vec<Item> = (0..24)
                        .map(|i| Item {
                            // Every fourth weight a multiple of 64 where the range allows.
                            weight: if i % 4 == 0 && max_weight >= 64 {
                                64 * (1 + next(max_weight / 64))
                            } else {
                                1 + next(max_weight)
                            },
                            profit: (1 + next(1_000)) * scale,
                        })
                        .collect();
                    let inst = Instance { items, capacity };
                    let s = solve_dp(&inst, u64::MAX).unwrap();
                    let want = inst.dp_optimum(u64::MAX);
                    assert_eq!(Some(s.optimum), want, "{capacity} {max_weight} {scale}");
                    consistent(&inst, &s);
                }
            }
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
