//! What every branch-and-bound search shares: the items in ratio order with prefix sums, the
//! Martello–Toth upper bound U2 in `O(log n)` per node, the reduction that fixes items before
//! the search, and the expansion of a node.
//!
//! **Bounds.** Items are sorted by profit/weight, descending. A node fixes items `0..level`
//! and has profit `P` and weight `W`; with room `r = capacity - W`, the critical item `s` is
//! the first of `level..` that no longer fits when the items from `level` are taken in order
//! (found by binary search on the weight prefix sums). With `P' = P + p[level..s]` and the
//! room `r'` left after them, Dantzig's bound is `P' + r'·p_s/w_s`; Martello and Toth's U2 is
//! the larger of the bounds for `x_s = 0` (`U0 = P' + r'·p_{s+1}/w_{s+1}`) and for `x_s = 1`
//! (`U1 = P' + p_s - (w_s - r')·p_{s-1}/w_{s-1}`, rounded up, when `s` fits the node's room at
//! all), never above Dantzig's. `P'` itself is a feasible solution: every node offers one to
//! the incumbent.
//!
//! **Reduction** (Martello and Toth's, with Dantzig bounds): with the greedy solution `z` as
//! incumbent, an item of the LP solution (`j < s`) whose removal bounds the problem at `z` or
//! below belongs to every better solution, and an item outside it (`j ≥ s`) whose inclusion
//! does is in none. Fixed items leave the problem; the search runs on the rest and looks only
//! for solutions better than `z` (the answer is `z` if it finds none).
//!
//! **Expansion** (Horowitz and Sahni's forward move): a node's "take" child keeps the parent's
//! LP solution, so instead of going through the heap it is expanded at once; an expansion walks
//! forward through the items that fit, pushing each "skip" child whose bound beats the
//! incumbent, and stops at the first item that does not fit or when the bound falls to the
//! incumbent.

use asym_runtime::{Error, Result};

use super::{node, Instance, Item, NodeKey};

/// A search problem after sorting and reduction.
#[derive(Clone, Debug)]
pub(crate) struct Problem {
    /// The items not fixed by the reduction, in ratio order.
    items: Vec<Item>,
    /// `weights[i]`: total weight of `items[..i]`.
    weights: Vec<u64>,
    /// `profits[i]`: total profit of `items[..i]`.
    profits: Vec<u64>,
    /// Capacity left for the free items.
    capacity: u64,
    /// Profit of the items fixed in.
    offset: u64,
    /// The best solution of the whole instance known before the search.
    start: u64,
    /// Items the reduction fixed (in or out).
    fixed: usize,
    /// A bound on every solution of the free items (the cardinality bound), which caps every
    /// node's bound.
    cap: u64,
    /// The surrogate multiplier `λ` of the cardinality bound, where the ratio order is also
    /// ordered by `p / (w + λ)` (so nodes can take the surrogate bound too); 0: none.
    lambda: u64,
    /// `lightest[i]`: the smallest weight among `items[i..]`.
    lightest: Vec<u64>,
}

impl Problem {
    /// Sorts the items that fit, and fixes what the reduction can.
    pub(crate) fn new(inst: &Instance) -> Result<Self> {
        if inst.totals().is_none() {
            return Err(Error::InvalidArgument(
                "the items' total profit or weight exceeds 2^64".into(),
            ));
        }
        let items = sorted_items(inst);
        // No solution weighs more than the largest multiple of the weights' gcd that fits.
        let g = items.iter().fold(0, |g, it| gcd(g, it.weight)).max(1);
        let all = Problem::sorted(items, inst.capacity / g * g, 0);
        let start = exchange_greedy(&all.items, all.capacity, EXCHANGES);
        // Items fixed in (1) or out (0) by the reduction; `None`: free.
        let s = all.critical(0, 0, all.capacity).0;
        let fixes: Vec<Option<bool>> = (0..all.items.len())
            .map(|j| {
                let it = all.items[j];
                if j < s {
                    (all.dantzig_without(j, all.capacity) <= start).then_some(true)
                } else {
                    let b = it.profit + all.dantzig_without(j, all.capacity - it.weight);
                    (b <= start).then_some(false)
                }
            })
            .collect();
        let fixed_in = all
            .items
            .iter()
            .zip(&fixes)
            .filter(|(_, f)| **f == Some(true));
        let (offset, used) =
            fixed_in.fold((0, 0), |(p, w), (it, _)| (p + it.profit, w + it.weight));
        let fixed = fixes.iter().filter(|f| f.is_some()).count();
        if used > all.capacity {
            // No solution better than the greedy one exists.
            return Ok(Problem {
                fixed: all.items.len(),
                ..Problem::sorted(Vec::new(), 0, start)
            });
        }
        let free: Vec<Item> = all
            .items
            .iter()
            .zip(&fixes)
            .filter(|(_, f)| f.is_none())
            .map(|(it, _)| *it)
            .collect();
        let mut problem = Problem {
            offset,
            start,
            fixed,
            ..Problem::sorted(free, all.capacity - used, start)
        };
        let (cap, lambda) = problem.cardinality_bound();
        problem.cap = cap;
        let ordered = problem.items.windows(2).all(|p| {
            p[0].profit as u128 * (p[1].weight + lambda) as u128
                >= p[1].profit as u128 * (p[0].weight + lambda) as u128
        });
        if lambda > 0 && ordered {
            problem.lambda = lambda;
            problem.lightest = problem
                .items
                .iter()
                .rev()
                .scan(u64::MAX, |m, it| {
                    *m = (*m).min(it.weight);
                    Some(*m)
                })
                .collect();
            problem.lightest.reverse();
        }
        Ok(problem)
    }

    fn sorted(items: Vec<Item>, capacity: u64, start: u64) -> Self {
        let mut weights = Vec::with_capacity(items.len() + 1);
        let mut profits = Vec::with_capacity(items.len() + 1);
        let (mut w, mut p) = (0u64, 0u64);
        weights.push(0);
        profits.push(0);
        for it in &items {
            w += it.weight;
            p += it.profit;
            weights.push(w);
            profits.push(p);
        }
        Problem {
            items,
            weights,
            profits,
            capacity,
            offset: 0,
            start,
            fixed: 0,
            cap: u64::MAX,
            lambda: 0,
            lightest: Vec::new(),
        }
    }

    /// The surrogate cardinality bound: no solution has more than `k` items, the count of the
    /// lightest items that fit, so for every `λ ≥ 0` Dantzig's bound of the items with weights
    /// `w + λ` and capacity `capacity + λ·k` bounds the problem. On strongly correlated
    /// classes (`p = w + K`) `λ = K` makes every ratio 1 and the bound `capacity + K·k`, where
    /// Dantzig's own bound exceeds the optimum by up to `K`. `λ` is searched on a coarse grid,
    /// then refined around the best point. Returns the bound and its `λ`.
    fn cardinality_bound(&self) -> (u64, u64) {
        let n = self.items.len();
        if n == 0 {
            return (0, 0);
        }
        let mut light: Vec<u64> = self.items.iter().map(|i| i.weight).collect();
        light.sort_unstable();
        let mut room = self.capacity;
        let k = light
            .iter()
            .take_while(|&&w| {
                let fits = w <= room;
                room -= if fits { w } else { 0 };
                fits
            })
            .count() as u64;
        if k as usize == n {
            return (self.profits[n], 0);
        }
        let top = self.items.iter().map(|i| i.profit).max().unwrap_or(0);
        let mut order: Vec<Item> = self.items.clone();
        let mut at = |lambda: u64| -> u64 {
            order.sort_unstable_by(|a, b| {
                (b.profit as u128 * (a.weight + lambda) as u128)
                    .cmp(&(a.profit as u128 * (b.weight + lambda) as u128))
            });
            let mut room = self.capacity as u128 + lambda as u128 * k as u128;
            let mut bound = 0u128;
            for it in &order {
                let w = (it.weight + lambda) as u128;
                if w <= room {
                    room -= w;
                    bound += it.profit as u128;
                } else {
                    bound += room * it.profit as u128 / w;
                    break;
                }
            }
            bound.min(u64::MAX as u128) as u64
        };
        const GRID: u64 = 16;
        let step = (top / GRID).max(1);
        let (mut best_lambda, mut best) = (0, at(0));
        for i in 1..=GRID {
            let b = at(i * step);
            if b < best {
                (best_lambda, best) = (i * step, b);
            }
        }
        // Ternary search on the grid cell around the best point.
        let (mut lo, mut hi) = (best_lambda.saturating_sub(step), best_lambda + step);
        while hi - lo > 2 {
            let (m1, m2) = (lo + (hi - lo) / 3, hi - (hi - lo) / 3);
            let (b1, b2) = (at(m1), at(m2));
            for (l, b) in [(m1, b1), (m2, b2)] {
                if b < best {
                    (best_lambda, best) = (l, b);
                }
            }
            if b1 <= b2 {
                hi = m2;
            } else {
                lo = m1;
            }
        }
        (best, best_lambda)
    }

    /// The surrogate bound of a node (see [`Problem::cardinality_bound`]): at most
    /// `room / lightest` more items fit, so Dantzig's bound of the items from `level` with
    /// weights `w + λ` within `room + λ·that` bounds the node. Valid only where the items'
    /// order is also ordered by `p / (w + λ)`, which `new` checks.
    fn surrogate(&self, level: usize, profit: u64, room: u64) -> u64 {
        let n = self.items.len();
        if level == n || self.lambda == 0 {
            return u64::MAX;
        }
        let lambda = self.lambda as u128;
        let more = (room / self.lightest[level]).min((n - level) as u64) as u128;
        let limit = room as u128 + lambda * more;
        let used = |t: usize| {
            (self.weights[t] - self.weights[level]) as u128 + lambda * (t - level) as u128
        };
        let t = last_within(level, n, |t| used(t) <= limit);
        let mut b = (profit + self.profits[t] - self.profits[level]) as u128;
        if t < n {
            let it = self.items[t];
            b += (limit - used(t)) * it.profit as u128 / (it.weight as u128 + lambda);
        }
        b.min(u64::MAX as u128) as u64
    }

    /// What an expansion elsewhere (the device's, `kernels/knapsack.cl`) needs to compute
    /// the same bounds.
    pub(crate) fn tables(&self) -> Tables<'_> {
        Tables {
            items: &self.items,
            weights: &self.weights,
            profits: &self.profits,
            capacity: self.capacity,
            cap: self.cap,
            lambda: self.lambda,
            lightest: &self.lightest,
        }
    }

    /// Items left to the search (the levels of its tree).
    pub(crate) fn items(&self) -> usize {
        self.items.len()
    }

    /// Items the reduction fixed.
    pub(crate) fn fixed(&self) -> usize {
        self.fixed
    }

    /// The search's first incumbent, in the reduced problem's terms: the greedy solution of
    /// the free items, or the whole instance's greedy solution less the fixed profit.
    pub(crate) fn incumbent(&self) -> u64 {
        exchange_greedy(&self.items, self.capacity, 0).max(self.start.saturating_sub(self.offset))
    }

    /// The whole instance's optimum from the reduced problem's best value.
    pub(crate) fn optimum(&self, best: u64) -> u64 {
        self.start.max(self.offset + best)
    }

    /// The root search node.
    pub(crate) fn root(&self) -> NodeKey {
        node(self.bound(0, 0, 0).0, 0, 0, 0)
    }

    /// The critical item of a node at `level` with `room` left: `(s, profit of level..s, room
    /// left after them)`.
    fn critical(&self, level: usize, profit: u64, room: u64) -> (usize, u64, u64) {
        let limit = self.weights[level].saturating_add(room);
        let s = level + self.weights[level..].partition_point(|&w| w <= limit) - 1;
        let taken = self.profits[s] - self.profits[level];
        (
            s,
            profit + taken,
            room - (self.weights[s] - self.weights[level]),
        )
    }

    /// U2 and a feasible profit (the items that fit in order) of a node at `level` with
    /// `profit` and `weight`.
    pub(crate) fn bound(&self, level: usize, profit: u64, weight: u64) -> (u64, u64) {
        let room = self.capacity - weight;
        let (s, prefix, left) = self.critical(level, profit, room);
        let n = self.items.len();
        if s == n {
            return (prefix.min(self.cap), prefix);
        }
        let it = self.items[s];
        let u0 = prefix + self.items.get(s + 1).map_or(0, |&next| frac(left, next));
        let u1 = if s > level && it.weight <= room {
            let prev = self.items[s - 1];
            let loss =
                ((it.weight - left) as u128 * prev.profit as u128).div_ceil(prev.weight as u128);
            (prefix + it.profit).saturating_sub(loss.min(u64::MAX as u128) as u64)
        } else {
            0
        };
        let surrogate = self.surrogate(level, profit, room);
        (u0.max(u1).min(self.cap).min(surrogate), prefix)
    }

    /// Dantzig's bound of the whole problem without item `j`, within `capacity`.
    fn dantzig_without(&self, j: usize, capacity: u64) -> u64 {
        let wj = self.items[j].weight;
        let pj = self.items[j].profit;
        // Prefix sums over the items without j; monotone, and equal at t = j and t = j + 1,
        // so the largest t that fits is never j.
        let w = |t: usize| self.weights[t] - if t > j { wj } else { 0 };
        let n = self.items.len();
        let t = last_within(0, n, |t| w(t) <= capacity);
        let p = self.profits[t] - if t > j { pj } else { 0 };
        if t == n {
            return p;
        }
        p + frac(capacity - w(t), self.items[t])
    }

    /// Expands `n`: pushes onto `out` the children whose bound beats `best` (walking forward
    /// through the items that fit) and returns the best feasible profit seen (at least `best`).
    pub(crate) fn expand(&self, n: NodeKey, best: u64, out: &mut Vec<NodeKey>) -> u64 {
        let (mut profit, mut weight, mut level) = (n.2, n.3, super::level_of(&n));
        let mut best = best.max(profit);
        while level < self.items.len() {
            // Skip item `level`.
            let (b, feasible) = self.bound(level + 1, profit, weight);
            best = best.max(feasible);
            if b > best {
                out.push(node(b, level + 1, profit, weight));
            }
            // Take it, and expand the child at once.
            let it = self.items[level];
            if weight + it.weight > self.capacity {
                break;
            }
            profit += it.profit;
            weight += it.weight;
            level += 1;
            let (b, feasible) = self.bound(level, profit, weight);
            best = best.max(feasible);
            if b <= best {
                break;
            }
        }
        best
    }
}

/// A [`Problem`]'s bounds as data: the free items in ratio order, their prefix sums
/// (`weights[i]`, `profits[i]`: of `items[..i]`), the capacity left to them, the cardinality
/// bound capping every bound, the surrogate multiplier (0: none) and, with one, the smallest
/// weight of `items[i..]`.
pub(crate) struct Tables<'a> {
    pub items: &'a [Item],
    pub weights: &'a [u64],
    pub profits: &'a [u64],
    pub capacity: u64,
    pub cap: u64,
    pub lambda: u64,
    pub lightest: &'a [u64],
}

/// The largest `t` in `lo..=hi` with `fits(t)`, for `fits` true at `lo` and monotone.
fn last_within(mut lo: usize, mut hi: usize, fits: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Exchange rounds the whole instance's first solution gets.
const EXCHANGES: usize = 64;

/// The greedy solution of `items` (in ratio order: each item while it fits) improved by up to
/// `rounds` exchanges: each round applies the best single move (add an item that fits, or
/// swap an item in for one out, within the room left) until none gains. On strongly
/// correlated classes this closes the room the greedy solution leaves, often reaching the
/// cardinality bound, which ends the search at once.
fn exchange_greedy(items: &[Item], capacity: u64, rounds: usize) -> u64 {
    let mut taken = vec![false; items.len()];
    let (mut room, mut profit) = (capacity, 0);
    for (i, it) in items.iter().enumerate() {
        if it.weight <= room {
            room -= it.weight;
            profit += it.profit;
            taken[i] = true;
        }
    }
    for _ in 0..rounds {
        // Items out, by weight, with the most profitable of each prefix.
        let mut out: Vec<usize> = (0..items.len()).filter(|&j| !taken[j]).collect();
        out.sort_unstable_by_key(|&j| items[j].weight);
        let mut richest: Vec<usize> = Vec::with_capacity(out.len());
        for (t, &j) in out.iter().enumerate() {
            let keep = t > 0 && items[richest[t - 1]].profit >= items[j].profit;
            richest.push(if keep { richest[t - 1] } else { j });
        }
        let mut best: Option<(u64, Option<usize>, usize)> = None;
        let ins = (0..items.len()).filter(|&i| taken[i]).map(Some);
        for i in ins.chain([None]) {
            let (w, p) = i.map_or((0, 0), |i| (items[i].weight, items[i].profit));
            let fit = out.partition_point(|&j| items[j].weight <= w + room);
            if fit == 0 {
                continue;
            }
            let j = richest[fit - 1];
            let gain = items[j].profit.saturating_sub(p);
            if gain > best.map_or(0, |b| b.0) {
                best = Some((gain, i, j));
            }
        }
        let Some((gain, i, j)) = best else { break };
        if let Some(i) = i {
            taken[i] = false;
            room += items[i].weight;
        }
        taken[j] = true;
        room -= items[j].weight;
        profit += gain;
    }
    profit
}

/// `room · p / w`, rounded down.
fn frac(room: u64, it: Item) -> u64 {
    (room as u128 * it.profit as u128 / it.weight as u128) as u64
}

/// Items that can fit, sorted by profit/weight descending (ties: heavier first).
fn sorted_items(inst: &Instance) -> Vec<Item> {
    let mut items: Vec<Item> = inst
        .items
        .iter()
        .copied()
        .filter(|i| i.weight <= inst.capacity)
        .collect();
    items.sort_by(|a, b| {
        (b.profit as u128 * a.weight as u128)
            .cmp(&(a.profit as u128 * b.weight as u128))
            .then(b.weight.cmp(&a.weight))
    });
    items
}
