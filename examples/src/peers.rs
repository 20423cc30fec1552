//! The peers a user would pick instead of asym's heaps, for checks and benchmarks: both run
//! one sub-list per rayon task.

use std::collections::BinaryHeap;

use rayon::prelude::*;

use asym_structures::Key;

/// The k-th smallest of each sub-list by `select_nth_unstable_by` (quickselect).
pub fn select_nth<K: Key>(data: &[K], offs: &[usize], k: usize) -> Vec<K> {
    offs.par_windows(2)
        .map(|w| {
            let mut v = data[w[0]..w[1]].to_vec();
            *v.select_nth_unstable_by(k - 1, K::cmp_keys).1
        })
        .collect()
}

/// Heap-based k-selection with std's `BinaryHeap` (max-heap of the first k; smaller keys
/// replace the root through `peek_mut`).
pub fn binary_heap<K: Key>(data: &[K], offs: &[usize], k: usize) -> Vec<K> {
    offs.par_windows(2)
        .map(|w| {
            let list = &data[w[0]..w[1]];
            let mut heap: BinaryHeap<i32> = list[..k].iter().map(|x| x.to_ordered()).collect();
            for x in &list[k..] {
                let v = x.to_ordered();
                if let Some(mut top) = heap.peek_mut() {
                    if v < *top {
                        *top = v;
                    }
                }
            }
            K::from_ordered(heap.peek().copied().unwrap_or(i32::MAX))
        })
        .collect()
}
