#![no_main]
// The DIMACS `.gr` reader: any bytes give a graph or an error naming the line.
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    common::budget();
    if let Ok(g) = asym_apps::graph::Graph::parse_dimacs(data, "fuzz.gr") {
        for u in 0..g.vertices() as u32 {
            assert!(g.neighbors(u).all(|(v, _)| (v as usize) < g.vertices()));
        }
    }
});
