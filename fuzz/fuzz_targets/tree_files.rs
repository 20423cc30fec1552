#![no_main]
// The red-black tree's key and operation files.
mod common;
use asym_apps::io::tree_files;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    common::budget();
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = tree_files::parse_keys(text, "keys");
        if let Ok(ops) = tree_files::parse_ops(text, "ops") {
            assert!(ops.len() <= text.lines().count());
        }
    }
});
