//! Operations on sorted batches of keys: the building blocks of the generalized heap.
//!
//! A batch is a sorted slice (ascending). `merge_and_sort(a, b)` is the seed's MergeAndSort:
//! afterwards `a` holds the `a.len()` smallest keys of both, `b` the rest, both sorted. It
//! first tries the seed's two short cuts: nothing to do when every key of `a` is already ≤
//! every key of `b`, and a plain swap when the ranges are the other way round and the lengths
//! match. This is the version the CPU threads run; the device's (bitonic sort and merge path in
//! local memory) is in `kernels/gheap.cl`.

/// How a [`merge_and_sort`] was carried out (the seed's optimisation, counted by the heap's
/// statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    /// The ranges did not overlap in the wanted order: nothing moved.
    AlreadyOrdered,
    /// The ranges did not overlap in the other order and the batches had equal lengths: swapped.
    Swapped,
    /// The ranges overlapped: a real merge through the scratch buffer.
    Merged,
}

/// Whether `keys` is sorted ascending.
pub fn is_sorted<T: Ord>(keys: &[T]) -> bool {
    keys.windows(2).all(|w| w[0] <= w[1])
}

/// MergeAndSort of two sorted batches: `a` gets the `a.len()` smallest keys of both, `b` the
/// others, each sorted. `scratch` is reused between calls.
pub fn merge_and_sort<T: Ord + Copy>(a: &mut [T], b: &mut [T], scratch: &mut Vec<T>) -> MergeKind {
    debug_assert!(is_sorted(a) && is_sorted(b));
    let (Some(a_max), Some(b_min)) = (a.last(), b.first()) else {
        return MergeKind::AlreadyOrdered;
    };
    if a_max <= b_min {
        return MergeKind::AlreadyOrdered;
    }
    if a.len() == b.len() && b.last() <= a.first() {
        a.swap_with_slice(b);
        return MergeKind::Swapped;
    }
    merge_into(a, b, scratch);
    let (lo, hi) = scratch.split_at(a.len());
    a.copy_from_slice(lo);
    b.copy_from_slice(hi);
    MergeKind::Merged
}

/// Merges two sorted slices into `out` (cleared first). Stable: ties take from `a` first.
pub fn merge_into<T: Ord + Copy>(a: &[T], b: &[T], out: &mut Vec<T>) {
    out.clear();
    out.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if b[j] < a[i] {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

/// The array position of the `i`-th node added to a generalized heap: level by level, in
/// bit-reversal order within a level (its own inverse: `position(position(p)) == p`, so it
/// also gives the order in which the node at position `p` was added).
pub fn position(i: usize) -> usize {
    let level = usize::BITS - 1 - (i + 1).leading_zeros();
    let first = (1usize << level) - 1;
    first + bit_reverse(i - first, level)
}

/// Array slots a heap of up to `nodes` nodes needs: one past the largest position its nodes
/// take. Bit reversal fills a level from both of its ends at once (the 5th node of a heap goes
/// to position 5, not 4), so this can exceed `nodes` by up to half a level.
pub fn tree_slots(nodes: usize) -> usize {
    if nodes == 0 {
        return 0;
    }
    // The deepest node is the (nodes - 1)-th added, on level floor(log2(nodes)), which holds
    // `used` nodes so far.
    let level = usize::BITS - 1 - nodes.leading_zeros();
    let first = (1usize << level) - 1;
    let used = nodes - first;
    first + (0..used).map(|j| bit_reverse(j, level)).max().unwrap_or(0) + 1
}

/// The bit-reversal of the low `bits` bits of `x`: consecutive positions in a level of the
/// tree map to positions whose root paths share as little as possible (Hunt et al., used by
/// the seed to spread consecutive inserts and deletes over the heap).
pub fn bit_reverse(x: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS - bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(a: &[i32], b: &[i32]) -> MergeKind {
        let (mut x, mut y) = (a.to_vec(), b.to_vec());
        let kind = merge_and_sort(&mut x, &mut y, &mut Vec::new());
        let mut all: Vec<i32> = a.iter().chain(b).copied().collect();
        all.sort();
        assert_eq!(x, all[..a.len()], "{a:?} {b:?}");
        assert_eq!(y, all[a.len()..], "{a:?} {b:?}");
        kind
    }

    #[test]
    fn merge_and_sort_takes_the_short_cuts_and_merges_the_rest() {
        assert_eq!(check(&[1, 2], &[3, 4]), MergeKind::AlreadyOrdered);
        assert_eq!(check(&[2, 2], &[2, 2]), MergeKind::AlreadyOrdered);
        assert_eq!(check(&[5, 6], &[1, 2]), MergeKind::Swapped);
        assert_eq!(check(&[5, 6, 7], &[1, 2]), MergeKind::Merged);
        assert_eq!(check(&[1, 5, 9], &[2, 3, 10]), MergeKind::Merged);
        assert_eq!(check(&[], &[1]), MergeKind::AlreadyOrdered);
        assert_eq!(check(&[4], &[]), MergeKind::AlreadyOrdered);
    }

    #[test]
    fn bit_reversal_spreads_consecutive_positions() {
        assert_eq!(
            (0..8).map(|x| bit_reverse(x, 3)).collect::<Vec<_>>(),
            [0, 4, 2, 6, 1, 5, 3, 7]
        );
        assert_eq!(bit_reverse(0, 0), 0);
    }

    #[test]
    fn tree_slots_cover_every_position_used() {
        for nodes in 0..300 {
            let used = (0..nodes).map(position).max().map_or(0, |p| p + 1);
            assert_eq!(tree_slots(nodes), used, "{nodes} nodes");
        }
        assert_eq!(tree_slots(5), 6);
        assert_eq!(tree_slots(7), 7);
        assert_eq!(tree_slots(8), 8);
        assert_eq!(tree_slots(9), 12);
    }
}
