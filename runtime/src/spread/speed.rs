//! The speed model of a worker, and the share split built on it.

use std::ops::Range;

use super::Worker;

/// One worker's model of a share's time: `fixed_s + items / items_per_s`, learned from the
/// shares it ran.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SpeedModel {
    /// Shortest share measured, seconds (0: unknown): launches, copies, waits.
    pub fixed_s: f64,
    /// Items per second on shares of at least the set's sample size (0: unknown); a moving
    /// average (0.7 of the old, 0.3 of the new), so that it follows a worker slowing down.
    pub items_per_s: f64,
}

impl SpeedModel {
    /// Books a share of `items` that took `secs`; shares smaller than `sample_min` items
    /// (dominated by the fixed part) teach only the fixed part.
    pub fn record(&mut self, items: usize, secs: f64, sample_min: usize) {
        if secs <= 0.0 || !secs.is_finite() {
            return;
        }
        self.fixed_s = if self.fixed_s > 0.0 {
            self.fixed_s.min(secs)
        } else {
            secs
        };
        if items >= sample_min.max(1) {
            let sample = items as f64 / secs;
            self.items_per_s = if self.items_per_s > 0.0 {
                0.7 * self.items_per_s + 0.3 * sample
            } else {
                sample
            };
        }
    }

    /// Whether the worker's speed is known.
    pub fn is_measured(&self) -> bool {
        self.items_per_s > 0.0
    }
}

/// How a set splits a call's items among its workers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitRule {
    /// Shares smaller than this teach a worker nothing of its speed: while any worker is
    /// unmeasured, a call of fewer than this many items per worker goes whole to one.
    pub sample_min: usize,
    /// Host seconds each item costs once the call is split at all (routing keys, merging
    /// results): a worker joins only where its speed saves more than that.
    pub split_s_per_item: f64,
    /// The share of the call's time each more worker must save to join (0.05: where the model
    /// leaves out the host's work for every more worker, as an SSSP merge; 0: where every
    /// worker's part runs at once and costs the host nothing more, as a heap's ranges).
    pub min_gain: f64,
}

/// Splits `items` among workers with `models`: the ranges each takes, in the order of
/// `models`, empty ranges left out.
///
/// While any worker is unmeasured, equal shares (so that every worker is measured), or, for
/// a call too small to measure anyone, everything to the worker known fastest (else the
/// first). Once all are measured, the k fastest finish together at
/// `T = (items + Σ fixed·rate) / Σ rate` (plus the split's host cost where k > 1) where every
/// one of them has `T` above its fixed part; k grows while another worker saves
/// [`SplitRule::min_gain`] of the time. Rounding settles on the fastest.
pub fn split(
    models: &[(Worker, SpeedModel)],
    items: usize,
    rule: SplitRule,
) -> Vec<(Worker, Range<usize>)> {
    if models.is_empty() || items == 0 {
        return Vec::new();
    }
    let shares = if models.iter().any(|(_, m)| !m.is_measured()) {
        unmeasured_shares(models, items, rule.sample_min)
    } else {
        measured_shares(models, items, rule)
    };
    let mut start = 0;
    let mut ranges = Vec::new();
    for (w, _) in models {
        let n: usize = shares.iter().filter(|s| s.0 == *w).map(|s| s.1).sum();
        if n > 0 {
            ranges.push((*w, start..start + n));
            start += n;
        }
    }
    ranges
}

fn unmeasured_shares(
    models: &[(Worker, SpeedModel)],
    items: usize,
    sample_min: usize,
) -> Vec<(Worker, usize)> {
    if items >= sample_min * models.len() {
        let each = items / models.len();
        return models
            .iter()
            .enumerate()
            .map(|(j, (w, _))| (*w, each + usize::from(j < items % models.len())))
            .collect();
    }
    let best = models.iter().fold(models[0], |best, m| {
        if m.1.items_per_s > best.1.items_per_s {
            *m
        } else {
            best
        }
    });
    vec![(best.0, items)]
}

fn measured_shares(
    models: &[(Worker, SpeedModel)],
    items: usize,
    rule: SplitRule,
) -> Vec<(Worker, usize)> {
    let mut by_speed: Vec<(Worker, SpeedModel)> = models.to_vec();
    by_speed.sort_by(|a, b| b.1.items_per_s.total_cmp(&a.1.items_per_s));
    let f = items as f64;
    let mut best: Option<(f64, usize)> = None;
    let (mut fixed_rate, mut rate) = (0.0, 0.0);
    for (k, (_, m)) in by_speed.iter().enumerate() {
        fixed_rate += m.fixed_s * m.items_per_s;
        rate += m.items_per_s;
        let t = (f + fixed_rate) / rate;
        let host = if k > 0 {
            f * rule.split_s_per_item
        } else {
            0.0
        };
        let valid = by_speed[..=k].iter().all(|(_, m)| t > m.fixed_s);
        if valid && best.is_none_or(|(bt, _)| t + host < (1.0 - rule.min_gain) * bt) {
            best = Some((t + host, k + 1));
        }
    }
    let (_, k) = best.unwrap_or((0.0, 1));
    if k == 1 {
        return vec![(by_speed[0].0, items)];
    }
    let t = (f + by_speed[..k]
        .iter()
        .map(|(_, m)| m.fixed_s * m.items_per_s)
        .sum::<f64>())
        / by_speed[..k]
            .iter()
            .map(|(_, m)| m.items_per_s)
            .sum::<f64>();
    let mut shares: Vec<(Worker, usize)> = by_speed[..k]
        .iter()
        .map(|(w, m)| (*w, ((t - m.fixed_s) * m.items_per_s).max(0.0) as usize))
        .collect();
    let given: usize = shares.iter().map(|s| s.1).sum();
    if given > items {
        let mut over = given - items;
        for s in shares.iter_mut().rev() {
            let cut = over.min(s.1);
            s.1 -= cut;
            over -= cut;
        }
    } else {
        shares[0].1 += items - given;
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(fixed_s: f64, items_per_s: f64) -> SpeedModel {
        SpeedModel {
            fixed_s,
            items_per_s,
        }
    }

    const RULE: SplitRule = SplitRule {
        sample_min: 2048,
        split_s_per_item: 0.0,
        min_gain: 0.05,
    };

    fn total(r: &[(Worker, Range<usize>)]) -> usize {
        r.iter().map(|(_, r)| r.len()).sum()
    }

    #[test]
    fn unmeasured_workers_share_large_calls_evenly_and_small_ones_go_to_one() {
        let m = [
            (Worker::Device(0), SpeedModel::default()),
            (Worker::Device(1), model(0.001, 1e6)),
        ];
        let big = split(&m, 10_001, RULE);
        assert_eq!(big.len(), 2);
        assert_eq!(total(&big), 10_001);
        assert_eq!(big[0].1, 0..5001);
        let small = split(&m, 100, RULE);
        assert_eq!(small, vec![(Worker::Device(1), 0..100)]);
    }

    #[test]
    fn measured_workers_finish_together_and_small_calls_stay_on_the_fastest() {
        // Member 1: 10x the speed, same fixed cost.
        let m = [
            (Worker::Device(0), model(1e-3, 1e6)),
            (Worker::Device(1), model(1e-3, 1e7)),
        ];
        assert_eq!(
            split(&m, 1000, RULE),
            vec![(Worker::Device(1), 0..1000)],
            "too small to share"
        );
        let f = 10_000_000;
        let r = split(&m, f, RULE);
        assert_eq!(total(&r), f);
        let t = |i: usize, n: usize| m[i].1.fixed_s + n as f64 / m[i].1.items_per_s;
        let (a, b) = (r[0].1.len(), r[1].1.len());
        assert!((t(0, a) - t(1, b)).abs() < 1e-3, "{a} {b}");
        // A worker with a large fixed cost is left out.
        let slow_start = [
            (Worker::Device(0), model(1.0, 1e6)),
            (Worker::Device(1), model(1e-3, 1e7)),
        ];
        assert_eq!(
            split(&slow_start, 100_000, RULE),
            vec![(Worker::Device(1), 0..100_000)]
        );
        // A split that costs the host more than the second worker saves: one worker.
        let costly = SplitRule {
            split_s_per_item: 1e-6,
            ..RULE
        };
        assert_eq!(split(&m, f, costly).len(), 1);
    }

    #[test]
    fn speed_is_sampled_only_on_large_shares() {
        let mut m = SpeedModel::default();
        m.record(100, 0.01, 2048);
        assert!(!m.is_measured());
        assert_eq!(m.fixed_s, 0.01);
        m.record(1 << 20, 0.1, 2048);
        assert!(m.is_measured());
        assert_eq!(m.fixed_s, 0.01);
    }
}
