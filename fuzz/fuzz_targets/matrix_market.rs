#![no_main]
// The Matrix Market `.mtx` reader, with and without unit weights.
mod common;
use asym_apps::graph::{Graph, MtxOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    common::budget();
    let (flag, data) = data.split_first().unwrap_or((&0, &[]));
    let options = MtxOptions {
        unit_weights: flag & 1 == 1,
        real_scale: if flag & 2 == 2 { 1000.0 } else { 1.0 },
    };
    if let Ok(g) = Graph::parse_mtx(data, "fuzz.mtx", &options) {
        for u in 0..g.vertices() as u32 {
            assert!(g.neighbors(u).all(|(v, _)| (v as usize) < g.vertices()));
        }
    }
});
