//! The soak program, briefly: every structure under injected failures for a few seconds
//! loses no key and survives every fault that fired; bad flags are usage errors.

use std::process::Command;

#[test]
fn a_short_soak_survives_every_fault_and_loses_nothing() {
    let out = Command::new(env!("CARGO_BIN_EXE_soak"))
        .args(["--minutes", "0.1", "--json", "--seed", "7"])
        .env("POCL_DEVICES", "pthread pthread")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 7, "a row per structure: {stdout}");
    let injected: u64 = rows.iter().map(|r| r["injected"].as_u64().unwrap()).sum();
    assert!(injected > 20, "faults fired: {stdout}");
    for r in &rows {
        assert_eq!(r["keys_lost"], 0, "{r}");
        assert_eq!(r["broken_checks"], 0, "{r}");
        assert_eq!(r["survived"], r["injected"], "{r}");
        assert!(r["batches"].as_u64().unwrap() > 0, "{r}");
    }
}

#[test]
fn bad_flags_are_usage_errors() {
    for args in [
        &["--minutes", "0"][..],
        &["--minutes", "nan"],
        &["--structures", "heap,queue"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_soak"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}
