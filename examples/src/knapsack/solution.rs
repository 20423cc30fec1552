//! The items of a solution worth a given profit: what a branch-and-bound search, which proves
//! the optimum's value but keeps no paths, leaves to find.
//!
//! A depth-first search over the items in profit/weight order, "take" before "skip", that
//! drops every branch whose Dantzig bound (the items that fit in order, then a fraction of the
//! next) falls below the target. Knowing the optimum makes the search narrow: on the instances
//! a best-first search proves quickly, the first dive mostly reaches it.

use super::Instance;

/// The items (indices into `inst.items`, ascending) of a solution whose profit is at least
/// `target`, found by a depth-first search of at most `max_nodes` nodes; `None` when none
/// exists or the search ran out of nodes. Items heavier than the capacity never enter.
pub fn items_worth(inst: &Instance, target: u64, max_nodes: u64) -> Option<Vec<usize>> {
    if target == 0 {
        return Some(Vec::new());
    }
    // The items that fit, by profit/weight descending (weights are at least 1).
    let mut order: Vec<usize> = (0..inst.items.len())
        .filter(|&i| inst.items[i].weight <= inst.capacity)
        .collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (inst.items[a], inst.items[b]);
        (b.profit as u128 * a.weight as u128).cmp(&(a.profit as u128 * b.weight as u128))
    });
    let n = order.len();
    let (mut weights, mut profits) = (Vec::with_capacity(n + 1), Vec::with_capacity(n + 1));
    let (mut w, mut p) = (0u128, 0u128);
    weights.push(0);
    profits.push(0);
    for &i in &order {
        w += inst.items[i].weight as u128;
        p += inst.items[i].profit as u128;
        weights.push(w);
        profits.push(p);
    }
    // Dantzig's bound of the items from `level` on within `room`, plus `profit`.
    let bound = |level: usize, profit: u64, room: u64| -> u128 {
        let limit = weights[level] + room as u128;
        // The last t with weights[t] <= limit: items level..t all fit.
        let t = weights.partition_point(|&x| x <= limit) - 1;
        let mut b = profit as u128 + profits[t] - profits[level];
        if t < n {
            let it = inst.items[order[t]];
            b += (limit - weights[t]) * it.profit as u128 / it.weight as u128;
        }
        b
    };
    struct Frame {
        level: usize,
        profit: u64,
        room: u64,
        /// 0: entered; 1: the take child done; 2: both done.
        tried: u8,
        /// Entered by taking item `level - 1` (on the path).
        took: bool,
    }
    let mut path: Vec<usize> = Vec::new();
    let mut frames = vec![Frame {
        level: 0,
        profit: 0,
        room: inst.capacity,
        tried: 0,
        took: false,
    }];
    let mut nodes = 0u64;
    while let Some(f) = frames.last_mut() {
        let (level, profit, room) = (f.level, f.profit, f.room);
        let child = match f.tried {
            0 => {
                if profit >= target {
                    let mut taken: Vec<usize> = path.iter().map(|&l| order[l]).collect();
                    taken.sort_unstable();
                    return Some(taken);
                }
                nodes += 1;
                if nodes > max_nodes {
                    return None;
                }
                f.tried = 1;
                if level == n || bound(level, profit, room) < target as u128 {
                    f.tried = 2;
                    None
                } else {
                    let it = inst.items[order[level]];
                    (it.weight <= room).then(|| Frame {
                        level: level + 1,
                        profit: profit + it.profit,
                        room: room - it.weight,
                        tried: 0,
                        took: true,
                    })
                }
            }
            1 => {
                f.tried = 2;
                Some(Frame {
                    level: level + 1,
                    profit,
                    room,
                    tried: 0,
                    took: false,
                })
            }
            _ => {
                if frames.pop().is_some_and(|f| f.took) {
                    path.pop();
                }
                continue;
            }
        };
        if let Some(c) = child {
            if c.took {
                path.push(level);
            }
            frames.push(c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::{Class, Item};
    use super::*;

    fn optimum(inst: &Instance) -> u64 {
        inst.dp_optimum(u64::MAX).unwrap()
    }

    #[test]
    fn finds_a_solution_worth_the_optimum_and_none_above_it() {
        for class in Class::ALL {
            for seed in 0..5 {
                for n in [1, 2, 9, 30] {
                    let inst = Instance::generate(class, n, 200, seed).unwrap();
                    let best = optimum(&inst);
                    let taken = items_worth(&inst, best, u64::MAX)
                        .unwrap_or_else(|| panic!("{class:?} {seed} {n}: none worth {best}"));
                    let p: u64 = taken.iter().map(|&i| inst.items[i].profit).sum();
                    let w: u64 = taken.iter().map(|&i| inst.items[i].weight).sum();
                    assert_eq!(p, best, "{class:?} {seed} {n}");
                    assert!(w <= inst.capacity, "{class:?} {seed} {n}");
                    assert!(taken.windows(2).all(|x| x[0] < x[1]));
                    assert_eq!(items_worth(&inst, best + 1, u64::MAX), None);
                }
            }
        }
    }

    #[test]
    fn edge_cases_and_the_node_limit() {
        let item = |profit, weight| Item { profit, weight };
        // Capacity 0: only the empty solution.
        let inst = Instance {
            items: vec![item(5, 1)],
            capacity: 0,
        };
        assert_eq!(items_worth(&inst, 0, 10), Some(vec![]));
        assert_eq!(items_worth(&inst, 1, 10), None);
        // Everything fits; equal ratios; an item heavier than the capacity.
        let inst = Instance {
            items: vec![item(2, 2), item(4, 4), item(9, 100), item(3, 3)],
            capacity: 9,
        };
        assert_eq!(items_worth(&inst, 9, 100), Some(vec![0, 1, 3]));
        // A search that needs more nodes than it is given says so.
        let inst = Instance::generate(Class::SubsetSum, 30, 1000, 3).unwrap();
        let best = optimum(&inst);
        assert!(items_worth(&inst, best, u64::MAX).is_some());
        assert_eq!(items_worth(&inst, best + 1, 5), None);
    }
}
