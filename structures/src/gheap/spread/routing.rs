//! How a set heap's keys find their members: the ranges of key values cut from a sample of
//! an insert (by the members' weights), and the routing passes, one counting each member's
//! keys per chunk, one writing each key straight into its member's mapped staging.

use asym_runtime::spread::{split, SpeedModel, SplitRule, Worker};
use asym_runtime::{copy_bits_streaming, Error, Result};
use rayon::prelude::*;

use super::super::device_heap::DeviceHeapKey;

/// The members taking keys, in order, and the values cutting their ranges: member
/// `active[j]` holds keys `x` with `bounds[j - 1] <= x <= bounds[j]` (where those exist).
/// Every key of an earlier member is at most every key of a later one.
pub(super) struct Ranges<R> {
    pub(super) active: Vec<usize>,
    pub(super) bounds: Vec<R>,
    /// The active members' weights: how keys equal to a cut value are spread.
    pub(super) weights: Vec<f64>,
}

impl<R: Ord + Copy> Ranges<R> {
    /// Writes into `lanes[i]` the index (into `active`) of the member taking `xs[i]`, the
    /// `first + i`-th key of its call (`xs` at most [`LANE_BLOCK`] keys): one comparison per
    /// cut and key with no branch on the keys (the loop over a block runs in vector
    /// registers), unless a key equals a cut value, whose member depends on its position:
    /// [`Ranges::route`] then places that block's keys one by one.
    #[inline]
    pub(super) fn route_block(&self, xs: &[R], first: usize, lanes: &mut [u8]) {
        let lanes = &mut lanes[..xs.len()];
        lanes.fill(0);
        let mut equal = false;
        for b in &self.bounds {
            for (l, x) in lanes.iter_mut().zip(xs) {
                *l += u8::from(*b < *x);
                equal |= *b == *x;
            }
        }
        if equal {
            for (i, (l, x)) in lanes.iter_mut().zip(xs).enumerate() {
                // At most MAX_LANES members (`with_members`): the index fits a byte.
                *l = self.route(x, first + i) as u8;
            }
        }
    }

    /// The index (into `active`) of the member taking key `x`, the `pos`-th key of its call.
    #[inline]
    pub(super) fn route(&self, x: &R, pos: usize) -> usize {
        // Two members: a comparison, no branch on the key (random keys would mispredict
        // one half the time) but for the rare key equal to the cut.
        if let [b] = self.bounds[..] {
            if *x != b {
                return usize::from(*x > b);
            }
        }
        let lo = self.bounds.partition_point(|b| b < x);
        if self.bounds.get(lo) != Some(x) {
            return lo;
        }
        // Equal to a cut value: any member from lo to the last whose cut equals x keeps the
        // order; a position hash picks one by weight.
        let hi = lo + self.bounds[lo..].partition_point(|b| b <= x);
        let w = &self.weights[lo..=hi];
        let u = ((pos as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64
            / (1u64 << 53) as f64
            * w.iter().sum::<f64>();
        let mut acc = 0.0;
        for (j, wj) in w.iter().enumerate() {
            acc += wj;
            if u < acc {
                return lo + j;
            }
        }
        hi
    }
}

/// Keys sampled from an insert to cut the ranges, per member taking part.
pub(super) const SAMPLE_PER_MEMBER: usize = 4096;

/// The ranges for members weighted `weights` (not all 0; a member weighted 0 takes none),
/// cut from a sample of `keys` (not empty) at the weights' cumulative shares.
pub(super) fn cut_ranges<T: DeviceHeapKey>(keys: &[T], weights: &[f64]) -> Ranges<T::Repr> {
    let active: Vec<usize> = (0..weights.len()).filter(|&i| weights[i] > 0.0).collect();
    let active_w: Vec<f64> = active.iter().map(|&i| weights[i]).collect();
    let samples = (SAMPLE_PER_MEMBER * active.len()).min(keys.len());
    let mut sample: Vec<T::Repr> = (0..samples)
        .map(|i| keys[i * keys.len() / samples].to_repr())
        .collect();
    sample.sort_unstable();
    let sum: f64 = active_w.iter().sum();
    let mut acc = 0.0;
    let bounds = active_w[..active_w.len().saturating_sub(1)]
        .iter()
        .map(|w| {
            acc += w;
            let at = ((acc / sum) * samples as f64) as usize;
            sample[at.min(samples - 1)]
        })
        .collect();
    Ranges {
        active,
        bounds,
        weights: active_w,
    }
}

/// Keys routed per chunk of this many: enough per chunk for a pass to run at memory speed,
/// chunks enough to spread over the latency threads.
pub(super) const ROUTE_CHUNK: usize = 1 << 20;

/// Per chunk of `keys` ([`ROUTE_CHUNK`] keys), how many each active member of `ranges` takes:
/// one parallel pass reading the keys.
pub(super) fn count_routes<T: DeviceHeapKey + Sync>(
    keys: &[T],
    ranges: &Ranges<T::Repr>,
) -> Vec<Vec<usize>> {
    keys.par_chunks(ROUTE_CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut counts = vec![0; ranges.active.len()];
            let mut lanes = [0u8; LANE_BLOCK];
            for (b, block) in chunk.chunks(LANE_BLOCK).enumerate() {
                route_keys(ranges, block, c * ROUTE_CHUNK + b * LANE_BLOCK, &mut lanes);
                for &l in &lanes[..block.len()] {
                    counts[usize::from(l)] += 1;
                }
            }
            counts
        })
        .collect()
}

/// Keys whose members [`Ranges::route_block`] finds at once: a few KiB of keys and bytes,
/// in L1.
pub(super) const LANE_BLOCK: usize = 512;

/// [`Ranges::route_block`] of `block` (at most [`LANE_BLOCK`] keys, the `first`-th key of
/// its call first), in the keys' ordered form.
#[inline]
pub(super) fn route_keys<T: DeviceHeapKey>(
    ranges: &Ranges<T::Repr>,
    block: &[T],
    first: usize,
    lanes: &mut [u8; LANE_BLOCK],
) {
    let mut xs = [T::Repr::default(); LANE_BLOCK];
    let xs = &mut xs[..block.len()];
    for (x, k) in xs.iter_mut().zip(block) {
        *x = k.to_repr();
    }
    ranges.route_block(xs, first, lanes);
}

/// Writes the keys of `keys` into the active members of `ranges` (`dsts[j]` the slice of
/// active member `j`, as long as [`count_routes`] counted), in the upload form and in order:
/// each chunk of the call into its own part of every slice, the chunks in parallel, each
/// key read once. Keys are collected per member in cached blocks first, then streamed to
/// the slices (mapped staging memory takes whole lines best).
pub(super) fn fill_routed<T: DeviceHeapKey + Sync>(
    dsts: &mut [&mut [T::Upload]],
    keys: &[T],
    counts: &[Vec<usize>],
    ranges: &Ranges<T::Repr>,
) -> Result<()> {
    let torn = || {
        Error::InvalidArgument(
            "routing an insert: the keys changed between counting and copying".into(),
        )
    };
    let members = ranges.active.len();
    if dsts.len() != members {
        return Err(torn());
    }
    // Per chunk, each member's part of its slice.
    let mut per_chunk: Vec<Vec<&mut [T::Upload]>> = (0..counts.len())
        .map(|_| Vec::with_capacity(members))
        .collect();
    for (j, dst) in dsts.iter_mut().enumerate() {
        let mut rest: &mut [T::Upload] = dst;
        for (c, part) in per_chunk.iter_mut().enumerate() {
            let (mine, tail) = rest.split_at_mut(counts[c][j]);
            part.push(mine);
            rest = tail;
        }
        if !rest.is_empty() {
            return Err(torn());
        }
    }
    per_chunk
        .into_par_iter()
        .zip(keys.par_chunks(ROUTE_CHUNK))
        .enumerate()
        .try_for_each(|(c, (mut parts, chunk))| {
            if let [lower, upper] = &mut parts[..] {
                return fill_two(lower, upper, chunk, c * ROUTE_CHUNK, ranges).ok_or_else(torn);
            }
            let mut blocks = vec![T::Upload::default(); members * ROUTE_BLOCK];
            let mut filled = vec![0usize; members];
            let mut at = vec![0usize; members];
            let mut lanes = [0u8; LANE_BLOCK];
            for (b, block) in chunk.chunks(LANE_BLOCK).enumerate() {
                route_keys(ranges, block, c * ROUTE_CHUNK + b * LANE_BLOCK, &mut lanes);
                for (&l, &x) in lanes.iter().zip(block) {
                    let j = usize::from(l);
                    blocks[j * ROUTE_BLOCK + filled[j]] = x.to_upload();
                    filled[j] += 1;
                    if filled[j] == ROUTE_BLOCK {
                        let to = parts[j]
                            .get_mut(at[j]..at[j] + ROUTE_BLOCK)
                            .ok_or_else(torn)?;
                        copy_bits_streaming(to, &blocks[j * ROUTE_BLOCK..(j + 1) * ROUTE_BLOCK])?;
                        at[j] += ROUTE_BLOCK;
                        filled[j] = 0;
                    }
                }
            }
            for j in 0..members {
                let n = filled[j];
                let to = parts[j].get_mut(at[j]..at[j] + n).ok_or_else(torn)?;
                copy_bits_streaming(to, &blocks[j * ROUTE_BLOCK..j * ROUTE_BLOCK + n])?;
                if at[j] + n != parts[j].len() {
                    return Err(torn());
                }
            }
            Ok(())
        })
}

/// [`fill_routed`]'s chunk (its first key the `first`-th of the call) for two members,
/// counters in registers: every key is written to both members' next block slot, and only
/// the slot of the member taking it moves on. `None` if the parts do not match the keys.
pub(super) fn fill_two<T: DeviceHeapKey>(
    lower: &mut [T::Upload],
    upper: &mut [T::Upload],
    chunk: &[T],
    first: usize,
    ranges: &Ranges<T::Repr>,
) -> Option<()> {
    let mut lo = [T::Upload::default(); ROUTE_BLOCK];
    let mut hi = [T::Upload::default(); ROUTE_BLOCK];
    let (mut nl, mut nh, mut at_l, mut at_h) = (0, 0, 0, 0);
    for (b, keys) in chunk.chunks(ROUTE_BLOCK).enumerate() {
        for (i, &x) in keys.iter().enumerate() {
            let up = ranges.route(&x.to_repr(), first + b * ROUTE_BLOCK + i) == 1;
            let u = x.to_upload();
            lo[nl] = u;
            hi[nh] = u;
            nl += usize::from(!up);
            nh += usize::from(up);
        }
        // A block of keys fills at most one block per member: stream out whatever is there.
        copy_bits_streaming(lower.get_mut(at_l..at_l + nl)?, &lo[..nl]).ok()?;
        copy_bits_streaming(upper.get_mut(at_h..at_h + nh)?, &hi[..nh]).ok()?;
        at_l += nl;
        at_h += nh;
        (nl, nh) = (0, 0);
    }
    (at_l == lower.len() && at_h == upper.len()).then_some(())
}

/// Keys a routing pass collects in cached memory before it streams them to their member's
/// staging: 64 KiB of int32 keys.
pub(super) const ROUTE_BLOCK: usize = 1 << 14;

/// Weights of the members' shares of `total` keys: the engine's split of the keys' lives.
/// A member's speed counts every key an insert or a delete moved, and each key inserted is
/// deleted later: its life on a member costs two keys' time, and two keys' routing on the
/// host (the insert's counting pass, the delete's first touch of the answer), which a
/// member must save to join (`routing_keys_per_s`, measured; 0 while unknown). Equal shares
/// while any member is unmeasured.
pub(super) fn shares(total: usize, members: &[SpeedModel], routing_keys_per_s: f64) -> Vec<f64> {
    let models: Vec<(Worker, SpeedModel)> = members
        .iter()
        .enumerate()
        .map(|(i, &m)| (Worker::Device(i), m))
        .collect();
    // Every member's part of a call runs at once and the routing is counted per key: a
    // member that speeds the call up at all joins (as every lane of one device does).
    let rule = SplitRule {
        min_gain: 0.0,
        sample_min: 0,
        split_s_per_item: if routing_keys_per_s > 0.0 {
            1.0 / routing_keys_per_s
        } else {
            0.0
        },
    };
    let mut weights = vec![0.0; members.len()];
    for (w, range) in split(&models, 2 * total.max(1), rule) {
        if let Worker::Device(i) = w {
            weights[i] = range.len() as f64;
        }
    }
    weights
}

/// The keys of `keys` that `ranges` routes to its `j`-th active member, in order: what that
/// member took in a routed insert, gathered again to retry its part.
pub(super) fn routed_to<T: DeviceHeapKey>(
    keys: &[T],
    ranges: &Ranges<T::Repr>,
    j: usize,
) -> Vec<T> {
    let mut out = Vec::new();
    let mut lanes = [0u8; LANE_BLOCK];
    for (b, block) in keys.chunks(LANE_BLOCK).enumerate() {
        route_keys(ranges, block, b * LANE_BLOCK, &mut lanes);
        out.extend(
            block
                .iter()
                .zip(&lanes)
                .filter(|(_, &l)| usize::from(l) == j)
                .map(|(k, _)| *k),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{count_routes, cut_ranges, fill_routed, shares, Ranges, SpeedModel};

    /// Every key goes to a member whose range holds it: each member's keys are at most the
    /// next member's.
    fn assert_ordered(keys: &[i32], ranges: &Ranges<i32>) -> Vec<Vec<i32>> {
        let counts = count_routes(keys, ranges);
        // The plain reference: each member's keys picked one by one, in order.
        let parts: Vec<Vec<i32>> = (0..ranges.active.len())
            .map(|j| {
                let mine = |(i, x): &(usize, &i32)| ranges.route(x, *i) == j;
                keys.iter()
                    .enumerate()
                    .filter(mine)
                    .map(|(_, &x)| x)
                    .collect()
            })
            .collect();
        for (j, p) in parts.iter().enumerate() {
            assert_eq!(
                p.len(),
                counts.iter().map(|c| c[j]).sum::<usize>(),
                "counts of {j}"
            );
        }
        // Every member at once: the same parts.
        let mut each: Vec<Vec<i32>> = parts.iter().map(|p| vec![-1; p.len()]).collect();
        let mut slices: Vec<&mut [i32]> = each.iter_mut().map(|v| &mut v[..]).collect();
        fill_routed(&mut slices, keys, &counts, ranges).unwrap();
        assert!(each == parts, "routing every member at once differs");
        assert_eq!(parts.iter().map(Vec::len).sum::<usize>(), keys.len());
        let mut all = parts.concat();
        all.sort_unstable();
        let mut want = keys.to_vec();
        want.sort_unstable();
        assert!(all == want, "the members' parts are not the keys");
        for w in parts.windows(2) {
            if let (Some(a), Some(b)) = (w[0].iter().max(), w[1].iter().min()) {
                assert!(a <= b, "a member holds {a} above the next member's {b}");
            }
        }
        parts
    }

    #[test]
    fn ranges_keep_the_members_in_order_and_split_by_weight() {
        // 3M keys: several routing chunks.
        let keys: Vec<i32> = (0..3_000_000)
            .map(|i: i32| i.wrapping_mul(-1_640_531_535))
            .collect();
        let r = cut_ranges(&keys, &[1.0, 3.0]);
        assert_eq!(r.active, vec![0, 1]);
        let parts = assert_ordered(&keys, &r);
        let share = parts[0].len() as f64 / keys.len() as f64;
        assert!((share - 0.25).abs() < 0.02, "share {share}");
        // A member weighted 0 takes no range.
        let r = cut_ranges(&keys, &[0.0, 1.0, 0.0, 1.0]);
        assert_eq!(r.active, vec![1, 3]);
        assert_eq!(r.bounds.len(), 1);
        assert_ordered(&keys, &r);
        let r = cut_ranges(&keys, &[0.0, 2.0]);
        assert_eq!(r.active, vec![1]);
        assert_eq!(
            assert_ordered(&keys, &r)[0],
            keys,
            "one member: every key, in order"
        );
        // Counts that do not match the keys are an error, not a short or torn part.
        let r = cut_ranges(&keys, &[1.0, 1.0]);
        let counts = count_routes(&keys[1..], &r);
        let mut part = vec![0; counts.iter().map(|c| c[0]).sum()];
        let mut other = vec![0; counts.iter().map(|c| c[1]).sum()];
        let mut slices: Vec<&mut [i32]> = vec![&mut part, &mut other];
        assert!(fill_routed(&mut slices, &keys[..keys.len() - 1], &counts, &r).is_err());
        assert!(fill_routed(&mut slices[..1], &keys[1..], &counts, &r).is_err());
        // Equal keys spread over the members whose ranges meet at their value, by weight.
        let equal = vec![7; 200_000];
        let parts = assert_ordered(&equal, &cut_ranges(&equal, &[1.0, 1.0, 2.0]));
        for (p, want) in parts.iter().zip([0.25, 0.25, 0.5]) {
            let share = p.len() as f64 / equal.len() as f64;
            assert!((share - want).abs() < 0.02, "equal keys: share {share}");
        }
        // Few distinct values; a sample of one key; later keys outside the cut range.
        let few: Vec<i32> = (0..100_000).map(|i| i % 3).collect();
        let r = cut_ranges(&few, &[1.0, 1.0]);
        assert_ordered(&few, &r);
        assert_ordered(&[i32::MIN, i32::MAX, 1, 2, 1, 0], &r);
        let r = cut_ranges(&[5], &[1.0, 1.0]);
        assert_ordered(&[5, 5, 4, 6, i32::MIN], &r);
    }

    /// Members of speeds `rates` (items per second, 0: unmeasured), and which take part in a
    /// split of 1000 keys with routing at `routing` keys per second: their weights, scaled
    /// so that the largest is 1.
    fn taking(rates: &[f64], routing: f64) -> Vec<f64> {
        let models: Vec<SpeedModel> = rates
            .iter()
            .map(|&r| SpeedModel {
                fixed_s: 0.0,
                items_per_s: r,
            })
            .collect();
        let w = shares(1000, &models, routing);
        let top = w.iter().copied().fold(0.0, f64::max);
        w.iter()
            .map(|x| (x / top * 100.0).round() / 100.0)
            .collect()
    }

    #[test]
    fn a_member_joins_only_where_it_saves_more_than_the_routing_costs() {
        assert_eq!(taking(&[0.0, 5.0], 0.0), [1.0, 1.0], "unmeasured: equal");
        // Two equal members and fast routing: both, by speed.
        assert_eq!(taking(&[1e9, 1e9], 1e10), [1.0, 1.0]);
        // A member at 1/40 of the other saves 2.4 % of the time; the routing costs more.
        assert_eq!(taking(&[1.7e9, 4.4e7], 3e9), [1.0, 0.0]);
        // Routing speed unknown: everyone by speed (the routing gets measured).
        assert_eq!(taking(&[3.0, 1.0], 0.0), [1.0, 0.33]);
        assert_eq!(taking(&[1.0], 1.0), [1.0]);
        // Two equal members, routing at 3x a member's speed: a key's life (insert and
        // delete) on one member costs 2 / 1e9 s, on two 1 / 1e9 s plus 0.67 / 1e9 routing.
        assert_eq!(taking(&[1e9, 1e9], 3e9), [1.0, 1.0]);
        // Routing slower than twice a member's speed: the second member saves less than
        // it costs; the first of equals keeps everything.
        assert_eq!(taking(&[1e9, 1e9], 1.9e9), [1.0, 0.0]);
    }
}
