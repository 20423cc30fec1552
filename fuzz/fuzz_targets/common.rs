// Shared by the fuzz targets: a memory budget the readers honour (`ASYM_MEMORY_LIMIT_MB`),
// under libFuzzer's own limit, so that a header announcing a large but legal size is refused
// by asym's check rather than counted as a crash of the fuzzer's.
pub fn budget() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var("ASYM_MEMORY_LIMIT_MB", "512"));
}
