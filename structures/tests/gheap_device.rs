//! The generalized heap's device batch kernels (bitonic sort, merge-path MergeAndSort)
//! against std's sort and the CPU MergeAndSort, for batch sizes from 2 to 2048, on key
//! patterns with duplicates, on both transports.

mod common;

use asym_runtime::Error;
use asym_structures::merge_and_sort;
use asym_structures::DeviceBatchOps;
use rand::SeedableRng;

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
