//! The d-heap against std's BinaryHeap, for every supported d.

use std::collections::BinaryHeap;

use asym_structures::{DHeap, SUPPORTED_D};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

#[test]
fn heap_sort_matches_std_for_every_d_and_pattern() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for d in SUPPORTED_D {
        for n in [0usize, 1, 2, 3, d - 1, d, d + 1, 1000, 4099] {
            let patterns: Vec<Vec<i32>> = vec![
                (0..n).map(|_| rng.gen()).collect(),
                (0..n as i32).collect(),
                (0..n as i32).rev().collect(),
                vec![5; n],
                (0..n).map(|_| rng.gen_range(0..4)).collect(),
            ];
            for keys in patterns {
                let mut h = DHeap::from_slice(d, &keys).unwrap();
                assert!(h.is_valid() && h.blocks_are_aligned(), "d = {d}, n = {n}");
                let mut out = Vec::new();
                while let Some(x) = h.pop() {
                    out.push(x);
                }
                let mut want = keys.clone();
                want.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(out, want, "d = {d}, n = {n}");
            }
        }
    }
}

#[test]
fn bad_arity_is_an_error() {
    for d in [0, 1, 3, 5, 128] {
        assert!(DHeap::<i32>::with_capacity(d, 10).is_err(), "d = {d}");
    }
}

#[derive(Clone, Debug)]
enum Op {
    Push(i16),
    Pop,
    ReplaceTop(i16),
}

proptest! {
    #[test]
    fn behaves_like_binary_heap(ops in prop::collection::vec(prop_oneof![
        any::<i16>().prop_map(Op::Push), Just(Op::Pop), any::<i16>().prop_map(Op::ReplaceTop)], 0..300),
        d_index in 0usize..6) {
        let d = SUPPORTED_D[d_index];
        let mut h = DHeap::with_capacity(d, 2).unwrap();
        let mut model = BinaryHeap::new();
        for op in ops {
            match op {
                Op::Push(x) => { h.push(x).unwrap(); model.push(x); }
                Op::Pop => prop_assert_eq!(h.pop(), model.pop()),
                Op::ReplaceTop(x) => {
                    let old = h.replace_top(x);
                    let want = model.pop();
                    if want.is_some() { model.push(x); }
                    prop_assert_eq!(old, want);
                }
            }
            prop_assert_eq!(h.len(), model.len());
            prop_assert_eq!(h.peek(), model.peek().copied());
            prop_assert!(h.is_valid());
            prop_assert!(h.blocks_are_aligned());
        }
    }
}
