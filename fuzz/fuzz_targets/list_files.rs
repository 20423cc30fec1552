#![no_main]
// The list seed's two workload files: the input is cut in two at its first NUL byte.
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    common::budget();
    let cut = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (nodes, ops) = (&data[..cut], data.get(cut + 1..).unwrap_or(&[]));
    if let (Ok(nodes), Ok(ops)) = (std::str::from_utf8(nodes), std::str::from_utf8(ops)) {
        let _ = asym_apps::workload::Workload::parse(nodes, "nodes", ops, "ops");
    }
});
