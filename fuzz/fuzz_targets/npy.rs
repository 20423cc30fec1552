#![no_main]
// The `.npy` reader: any bytes give an array or an error, never a panic or an abort; an
// array read back holds as many elements as its shape says.
mod common;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    common::budget();
    if let Ok(a) = asym_apps::io::npy::parse(data, "fuzz.npy") {
        assert_eq!(a.shape.iter().product::<usize>(), a.bits.len());
        assert!(!a.shape.is_empty() && a.shape.len() <= 2);
    }
});
