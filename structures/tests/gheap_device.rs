//! The generalized heap's device batch kernels (bitonic sort, merge-path MergeAndSort)
//! against std's sort and the CPU MergeAndSort, for batch sizes from 2 to 2048, on key
//! patterns with duplicates, on both transports.

mod common;

use asym_runtime::Error;
use asym_structures::merge_and_sort;
use asym_structures::DeviceBatchOps;
use rand::{Rng, SeedableRng};

#[test]
fn device_sort_and_merge_match_the_cpu_for_every_batch_size() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        for batch in [2usize, 4, 32, 256, 1024, 2048] {
            let mut ops = match DeviceBatchOps::new(&rt, batch) {
                Ok(ops) => ops,
                // A device with less local memory must say so, not fail later.
                Err(Error::Unsupported { .. }) if batch == 2048 => continue,
                Err(e) => panic!("K {batch}: {e}"),
            };
            let batches = 3;
            for (name, keys) in common::key_patterns(batch * batches, &mut rng) {
                let mut sorted = keys.clone();
                ops.sort_batches(&mut sorted).unwrap();
                for (got, orig) in sorted.chunks(batch).zip(keys.chunks(batch)) {
                    let mut want = orig.to_vec();
                    want.sort();
                    assert_eq!(got, want, "{t} K {batch} {name}: sort");
                }
                // Merge each sorted batch with the next one (wrapping).
                let mut a = sorted.clone();
                let mut b: Vec<i32> = sorted[batch..]
                    .iter()
                    .chain(&sorted[..batch])
                    .copied()
                    .collect();
                let (mut wa, mut wb) = (a.clone(), b.clone());
                let mut scratch = Vec::new();
                for (x, y) in wa.chunks_mut(batch).zip(wb.chunks_mut(batch)) {
                    merge_and_sort(x, y, &mut scratch);
                }
                ops.merge_batches(&mut a, &mut b).unwrap();
                assert_eq!(a, wa, "{t} K {batch} {name}: merge, smaller halves");
                assert_eq!(b, wb, "{t} K {batch} {name}: merge, larger halves");
            }
        }
    }
}

#[test]
fn bad_batch_sizes_and_lengths_are_errors() {
    let rt = common::runtime(common::transports()[0]);
    for batch in [0usize, 1, 3, 4096] {
        assert!(matches!(
            DeviceBatchOps::new(&rt, batch),
            Err(e) if e.is_argument_error()
        ));
    }
    let mut ops = DeviceBatchOps::new(&rt, 4).unwrap();
    assert!(ops.sort_batches(&mut [1, 2, 3]).is_err());
    assert!(ops.merge_batches(&mut [1, 2, 3, 4], &mut [1, 2]).is_err());
    ops.sort_batches(&mut []).unwrap();
}

/// The heap of every mode (`heap_for`) against `BinaryHeap`, both transports: random keys,
/// duplicates, a delete asking for more than the heap holds, and the errors for missing
/// workers.
#[test]
fn the_heap_of_every_mode_matches_binary_heap() {
    use asym_runtime::{LatencyPool, Mode, PoolOptions};
    use asym_structures::{heap_for, HeapOptions};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(2),
        ..Default::default()
    })
    .unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(rand::random());
    let mut options = HeapOptions::new(16);
    options.device.work_groups = Some(3);
    options.refill = 40;
    for t in common::transports() {
        let rt = common::runtime(t);
        for mode in Mode::ALL {
            let mut heap =
                heap_for::<i32>(mode, &options, Some((&pool).into()), Some(&rt)).unwrap();
            let mut want = BinaryHeap::new();
            for round in 0..6 {
                let n = rng.gen_range(0..700);
                let keys: Vec<i32> = (0..n).map(|_| rng.gen_range(-50..50)).collect();
                heap.insert(&keys).unwrap();
                want.extend(keys.iter().map(|&k| Reverse(k)));
                let take = rng.gen_range(0..500);
                let got = heap.delete_min(take).unwrap();
                let expect: Vec<i32> = (0..take.min(want.len()))
                    .map(|_| want.pop().unwrap().0)
                    .collect();
                assert_eq!(got, expect, "{mode:?} {t:?} round {round}");
                assert_eq!(heap.len(), want.len(), "{mode:?} {t:?}");
            }
            let rest = heap.delete_min(usize::MAX).unwrap();
            assert_eq!(rest.len(), want.len(), "{mode:?} {t:?}");
            assert!(rest.windows(2).all(|w| w[0] <= w[1]), "{mode:?} {t:?}");
            assert!(heap.is_empty());
        }
    }
    for mode in Mode::ALL {
        assert!(
            matches!(heap_for::<i32>(mode, &options, None, None), Err(e) if e.is_argument_error()),
            "{mode:?}"
        );
    }
}
