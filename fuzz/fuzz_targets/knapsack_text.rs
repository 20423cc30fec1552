#![no_main]
// The knapsack instance reader (the concurrent-heap seed's text format).
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    common::budget();
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(inst) = asym_apps::knapsack::Instance::parse(text, "fuzz.data") {
            assert!(inst.items.iter().all(|i| i.weight >= 1));
        }
    }
});
