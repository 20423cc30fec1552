//! The programs of examples/ as a user runs them: bad input gets a clear message and a non-zero
//! exit, and `.npy` files round-trip through `batch_kselect`. Cargo builds them for this test
//! and names them in `CARGO_BIN_EXE_*`.

use std::path::PathBuf;
use std::process::Command;

use asym_apps::io::npy;
use asym_apps::peers;

/// The program `name` of examples/, as Cargo built it for this test.
fn example(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "batch_kselect" => env!("CARGO_BIN_EXE_batch_kselect"),
        "heap_bench" => env!("CARGO_BIN_EXE_heap_bench"),
        "sssp" => env!("CARGO_BIN_EXE_sssp"),
        "knapsack" => env!("CARGO_BIN_EXE_knapsack"),
        "list_ops" => env!("CARGO_BIN_EXE_list_ops"),
        "devices" => env!("CARGO_BIN_EXE_devices"),
        "rbtree" => env!("CARGO_BIN_EXE_rbtree"),
        other => panic!("no program {other} in examples/"),
    })
}

/// Runs example `name` with `args`: (success, stdout, stderr).
fn run_example(name: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(example(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {name}: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn run(args: &[&str]) -> (bool, String, String) {
    run_example("batch_kselect", args)
}

/// One JSON object per line of an example's `--json` output.
fn json_rows(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON row ({e}): {l}")))
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("asym-cli-{}-{name}", std::process::id()))
}

#[test]
fn bad_inputs_fail_with_a_message() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "--total-log2",
                "12",
                "--sublist",
                "1000",
                "--no-peers",
                "--mode",
                "cpu",
            ],
            "not a multiple",
        ),
        (
            &[
                "--total-log2",
                "12",
                "--sublist",
                "1024",
                "--k",
                "0",
                "--mode",
                "cpu",
            ],
            "k = 0",
        ),
        (
            &[
                "--total-log2",
                "12",
                "--sublist",
                "1024",
                "--k",
                "2000",
                "--mode",
                "cpu",
            ],
            "k = 2000",
        ),
        (&["--total-log2", "12", "--mode", "fast"], "unknown mode"),
        (
            &["--total-log2", "12", "--d", "3", "--mode", "cpu"],
            "d = 3",
        ),
        (
            &[
                "--total-log2",
                "12",
                "--device",
                "no-such-device-xyz",
                "--mode",
                "gpu",
            ],
            "no OpenCL device matches",
        ),
        (
            &["--input", "/nonexistent/keys.npy", "--sublist", "4"],
            "keys.npy",
        ),
        (
            &["--input", "keys.csv", "--sublist", "4"],
            "not a .npy file",
        ),
        (
            &["--total-log2", "12", "--device-update", "sideways"],
            "device update-key",
        ),
        (
            &["--total-log2", "12", "--staging", "sideways"],
            "device staging",
        ),
        (
            &[
                "--total-log2",
                "12",
                "--threads",
                "2",
                "--staging-threads",
                "2",
            ],
            "staging threads",
        ),
        (
            &["--total-log2", "12", "--work-group", "48"],
            "work-group size 48",
        ),
    ];
    for (args, want) in cases {
        let (ok, _, err) = run(args);
        assert!(!ok, "{args:?} should fail");
        assert!(
            err.contains(want),
            "{args:?}: stderr should mention {want:?}, got {err:?}"
        );
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    }
    // A file with the wrong dtype.
    let bad = tmp("f64.npy");
    std::fs::write(&bad, b"\x93NUMPY\x01\x00\x44\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }          \n\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
    let (ok, _, err) = run(&["--input", bad.to_str().unwrap(), "--sublist", "2"]);
    assert!(!ok && err.contains("<f8"), "{err}");
    std::fs::remove_file(bad).ok();
}

#[test]
fn npy_round_trip_in_every_mode() {
    let keys: Vec<f32> = (0..4000)
        .map(|i| ((i * 7919) % 1013) as f32 - 500.5)
        .collect();
    let input = tmp("keys.npy");
    npy::write(&input, &keys).unwrap();
    for mode in ["cpu", "gpu", "coop"] {
        let output = tmp(&format!("kth-{mode}.npy"));
        let (ok, stdout, err) = run(&[
            "--input",
            input.to_str().unwrap(),
            "--sublist",
            "400",
            "--k",
            "17",
            "--mode",
            mode,
            "--output",
            output.to_str().unwrap(),
            "--json",
            "--no-peers",
        ]);
        assert!(ok, "{mode}: {err}");
        let line: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
        assert_eq!(line["verified"], true, "{mode}: {line}");
        assert_eq!(line["sublist"], 400);
        let got = npy::read(&output).unwrap();
        assert_eq!(got.shape, vec![10]);
        let offs: Vec<usize> = (0..=10).map(|i| i * 400).collect();
        assert_eq!(
            got.to_vec::<f32>().unwrap(),
            peers::select_nth(&keys, &offs, 17),
            "{mode}"
        );
        std::fs::remove_file(output).ok();
    }
    std::fs::remove_file(input).ok();
}

#[test]
fn every_cooperation_runs_and_verifies() {
    let (ok, stdout, err) = run(&[
        "--total-log2",
        "13",
        "--sublist",
        "512",
        "--mode",
        "coop",
        "--coop",
        "all",
        "--json",
        "--no-peers",
    ]);
    assert!(ok, "{err}");
    let modes: Vec<String> = stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["verified"], true, "{v}");
            v["mode"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(modes.contains(&"coop:heap".to_string()), "{modes:?}");
    assert!(modes.contains(&"coop:auto".to_string()), "{modes:?}");
    assert!(
        modes.contains(&"coop:bridge-pipelined".to_string()),
        "{modes:?}"
    );
    // Every strategy by default, each in every mode; auto runs radix on both sides at
    // k = 0.1 · length, and the JSON says which method each side ran.
    let (ok, stdout, err) = run(&["--total-log2", "14", "--json", "--no-peers"]);
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    let names: Vec<&str> = rows.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    for strategy in ["heap", "radix", "auto"] {
        for mode in ["cpu", "gpu", "coop"] {
            let want = format!("{mode}:{strategy}");
            assert!(names.contains(&want.as_str()), "{want} missing: {names:?}");
        }
    }
    assert!(rows.iter().all(|r| r["verified"] == true), "{stdout}");
    assert!(rows
        .iter()
        .filter(|r| r["mode"] == "cpu:auto")
        .all(|r| r["cpu_strategy"] == "radix"));
    assert!(rows
        .iter()
        .filter(|r| r["mode"] == "gpu:radix" || r["mode"] == "gpu:auto")
        .all(|r| r["device_strategy"] == "radix"));
    assert!(rows
        .iter()
        .filter(|r| r["mode"] == "gpu:heap")
        .all(|r| r["device_strategy"] == "heap"));
    // Keys resident in SVM: the device radix reads them where they are.
    let (ok, stdout, err) = run(&[
        "--total-log2",
        "14",
        "--resident",
        "--mode",
        "cpu",
        "--json",
        "--no-peers",
    ]);
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert!(
        rows.iter()
            .any(|r| r["mode"] == "gpu:radix-resident" && r["device_strategy"] == "radix"),
        "{stdout}"
    );
    assert!(rows.iter().all(|r| r["verified"] == true), "{stdout}");
    let (code, _, err) = run_with_env("batch_kselect", &["--strategy", "quick"], &[]);
    assert!(code == Some(2) && err.contains("unknown strategy"), "{err}");
    let (ok, _, err) = run(&["--total-log2", "12", "--coop", "sideways"]);
    assert!(!ok && err.contains("unknown cooperation"), "{err}");
}

#[test]
fn device_knobs_run_verify_and_report_stages() {
    // The seed's reduction kernel with the copy engine, and the single-item kernel with
    // mapped staging and a staging thread: every answer verified, stage times reported.
    for knobs in [
        ["--device-update", "reduce", "--staging", "copy"],
        ["--device-update", "single", "--staging-threads", "1"],
    ] {
        let mut args = vec![
            "--total-log2",
            "14",
            "--sublist",
            "1024",
            "--mode",
            "gpu,coop",
            "--threads",
            "2",
            "--work-group",
            "16",
            "--json",
            "--no-peers",
            "--strategy",
            "heap",
        ];
        args.extend(knobs);
        let (ok, stdout, err) = run(&args);
        assert!(ok, "{knobs:?}: {err}");
        let rows = json_rows(&stdout);
        assert_eq!(rows.len(), 2, "{stdout}");
        for v in &rows {
            assert_eq!(v["verified"], true, "{knobs:?}: {v}");
        }
        let gpu = rows.iter().find(|v| v["mode"] == "gpu:heap").unwrap();
        assert!(gpu["device_stages_ms"]["kernel"].is_number(), "{gpu}");
    }
}

#[test]
fn the_default_table_and_devices_report_run() {
    let (ok, stdout, err) = run(&["--total-log2", "14", "--repeat", "1"]);
    assert!(ok, "{err}");
    for mode in ["cpu", "gpu", "coop", "peer:select_nth", "peer:binaryheap"] {
        assert!(stdout.contains(mode), "table lacks {mode}: {stdout}");
    }
    assert!(
        !stdout.contains(" NO "),
        "an answer failed verification: {stdout}"
    );
    let out = Command::new(example("devices"))
        .args([
            "--samples",
            "20",
            "--words",
            "1000",
            "--upload-mib",
            "2",
            "--chase-mib",
            "1,2",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let transports = report["transports"].as_array().expect("transports");
    assert!(!transports.is_empty());
    for t in transports {
        assert_eq!(t["upload"]["bytes"], 2 << 20, "{t}");
        assert!(t["upload"]["copy_engine_ms"]
            .as_f64()
            .is_some_and(|ms| ms > 0.0));
        // Each chase ended where its cycle leads (the probe checks), one row per size.
        let chases = t["dependent_access"].as_array().expect("dependent_access");
        let sizes: Vec<_> = chases.iter().map(|c| c["mib"].as_u64()).collect();
        assert_eq!(sizes, [Some(1), Some(2)], "{t}");
        assert!(chases
            .iter()
            .all(|c| c["load_ns"].is_f64() && c["atomic_min_ns"].is_f64()));
        // A time per barrier, or why the groups could not all be resident.
        let barrier = &t["grid_barrier"];
        assert!(
            barrier["us"].is_f64()
                || barrier["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("resident")),
            "{t}"
        );
    }
}

#[test]
fn heap_bench_verifies_every_pattern_and_refuses_bad_input() {
    let bench = |args: &[&str]| {
        let out = Command::new(example("heap_bench"))
            .args(args)
            .output()
            .expect("run heap_bench");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (ok, stdout, err) = bench(&["--keys-log2", "14", "--batch", "32", "--json"]);
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert_eq!(rows.len(), 15, "3 patterns x (td, bu, 3 peers): {stdout}");
    assert!(rows.iter().all(|r| r["verified"] == true), "{stdout}");
    let (ok, stdout, err) = bench(&[
        "--keys-log2",
        "12",
        "--batch",
        "16",
        "--mixed",
        "--preload",
        "5000",
    ]);
    assert!(
        ok && stdout.contains("mixed") && !stdout.contains(" NO"),
        "{stdout}{err}"
    );
    // The device heap, swept over K and work-groups (a group larger than K is skipped).
    let (ok, stdout, err) = bench(&[
        "--mode",
        "gpu",
        "--keys-log2",
        "13",
        "--batch",
        "16,64",
        "--work-groups",
        "1,6",
        "--work-group",
        "16,32",
        "--pattern",
        "descending",
        "--insert",
        "td",
        "--bulk",
        "never",
        "--no-peers",
        "--json",
    ]);
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert_eq!(
        rows.len(),
        2 + 4,
        "K 16: 2 shapes, K 64: 4 shapes: {stdout}"
    );
    assert!(
        rows.iter()
            .all(|r| r["verified"] == true && r["mode"] == "gpu:td"),
        "{stdout}"
    );
    // Both insert directions on the device, bulk and mixed: one row each, verified.
    for extra in [&[][..], &["--mixed", "--preload", "3000"][..]] {
        let mut args = vec![
            "--mode",
            "gpu",
            "--keys-log2",
            "13",
            "--batch",
            "32",
            "--pattern",
            "random",
            "--no-peers",
            "--json",
        ];
        args.extend_from_slice(extra);
        let (ok, stdout, err) = bench(&args);
        assert!(ok, "{err}");
        let rows = json_rows(&stdout);
        let modes: Vec<&str> = rows.iter().map(|r| r["mode"].as_str().unwrap()).collect();
        // The mixed pairs are operations whatever --bulk says (default: never and auto).
        let want: &[&str] = if extra.is_empty() {
            &["gpu:td", "gpu:auto", "gpu:bu"]
        } else {
            &["gpu:td", "gpu:bu"]
        };
        assert_eq!(modes, want, "{extra:?}: {stdout}");
        assert!(rows.iter().all(|r| r["verified"] == true), "{stdout}");
    }
    // Bulk calls on a preloaded heap of i32 keys.
    let args = "--mode gpu --keys-log2 12 --batch 16 --preload 3000 --bulk always --key i32 \
                --insert bu --no-peers --json";
    let (ok, stdout, err) = bench(&args.split_whitespace().collect::<Vec<_>>());
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert_eq!(rows.len(), 3, "one row per pattern: {stdout}");
    assert!(
        rows.iter().all(|r| r["verified"] == true
            && r["mode"] == "gpu:bulk"
            && r["key"] == "i32"
            && r["preload"] == 3000),
        "{stdout}"
    );
    // Range lanes of the device: a row per lane count above 1, beside the one heap's.
    let args = "--mode gpu --keys-log2 13 --batch 32 --pattern random --insert td --bulk never \
                --lanes 1,3 --key i32 --no-peers --json";
    let (ok, stdout, err) = bench(&args.split_whitespace().collect::<Vec<_>>());
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    let modes: Vec<&str> = rows.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["gpu:td", "gpu-lanes3:td"], "{stdout}");
    assert!(rows.iter().all(|r| r["verified"] == true), "{stdout}");
    assert_eq!(rows[1]["device_stats"]["lanes"], 3, "{stdout}");
    // On a preloaded heap the delete takes the smallest keys of both, from the lowest lanes.
    let args = "--mode gpu --keys-log2 11 --batch 32 --pattern random --insert td --bulk never \
                --lanes 3 --preload 5000 --no-peers --json";
    let (ok, stdout, err) = bench(&args.split_whitespace().collect::<Vec<_>>());
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows.iter()
            .all(|r| r["verified"] == true && r["preload"] == 5000),
        "{stdout}"
    );
    for (args, says) in [
        (
            &["--bulk", "sometimes"][..],
            "--bulk sometimes: unknown bulk policy",
        ),
        (&["--key", "i64"][..], "--key i64: expected u32 or i32"),
        (&["--preload", "100"][..], "gpu rows only"),
        (&["--mode", "gpu", "--lanes", "0"][..], "--lanes 0"),
        (&["--mode", "gpu", "--lanes", "65"][..], "1 to 64 lanes"),
        (&["--mode", "cpu", "--lanes", "4"][..], "--lanes adds rows"),
        (
            &["--mode", "gpu", "--bulk", "auto", "--lanes", "4"][..],
            "--bulk never",
        ),
    ] {
        let (ok, _, err) = bench(args);
        assert!(!ok && err.contains(says), "{args:?}: {err}");
    }
    // Cooperative: small refills and flushes so the host top and the device both work.
    for extra in [&[][..], &["--mixed", "--preload", "3000"][..]] {
        let mut args = vec![
            "--mode",
            "coop",
            "--keys-log2",
            "12",
            "--batch",
            "32",
            "--refill",
            "96",
            "--flush",
            "100",
            "--threads",
            "2",
            "--no-peers",
            "--json",
        ];
        args.extend_from_slice(extra);
        let (ok, stdout, err) = bench(&args);
        assert!(ok, "{args:?}: {err}");
        assert!(
            json_rows(&stdout).iter().all(|r| {
                r["verified"] == true && r["mode"].as_str().unwrap().starts_with("coop:r")
            }),
            "{stdout}"
        );
    }
    let (ok, stdout, err) = bench(&[
        "--mode",
        "gpu",
        "--keys-log2",
        "12",
        "--batch",
        "32",
        "--mixed",
        "--preload",
        "3000",
    ]);
    assert!(
        ok && stdout.contains("gpu:td") && !stdout.contains(" NO"),
        "{stdout}{err}"
    );
    for (args, want) in [
        (&["--batch", "48"][..], "power of two"),
        (&["--mode", "coop", "--refill", "0"][..], "at least 1"),
        (&["--mode", "sideways"][..], "unknown mode"),
        (
            &["--mode", "gpu", "--work-groups", "0"][..],
            "at least one work-group",
        ),
        (
            &["--mode", "gpu", "--work-group", "x"][..],
            "expected a number",
        ),
        (&["--pattern", "zigzag"][..], "unknown pattern"),
        (&["--keys-log2", "40"][..], "at most 30"),
        (&["--insert", "sideways"][..], "expected td, bu or both"),
    ] {
        let (ok, _, err) = bench(args);
        assert!(!ok && err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn knapsack_matches_dynamic_programming_and_names_bad_lines() {
    let run = |args: &[&str]| run_example("knapsack", args);
    // The default: a large capacity makes the dynamic program long, so the search goes
    // first and answers with its items; a small one leaves it to the program.
    let (ok, stdout, err) = run(&[
        "--gen",
        "uncorrelated,weakly",
        "--n",
        "60",
        "--range",
        "1000000",
        "--dp-max-cells",
        "4000000000",
        "--json",
    ]);
    assert!(ok, "{err}");
    for r in json_rows(&stdout) {
        assert_eq!(r["method"], "bnb", "{r}");
        assert!(
            r["mode"].as_str().unwrap().starts_with("seq, then items"),
            "{r}"
        );
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["optimum"], r["dp_optimum"], "{r}");
        assert!(r["items"].as_u64() > Some(0), "{r}");
    }
    let (ok, stdout, err) = run(&["--gen", "uncorrelated", "--n", "30", "--json"]);
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert!(
        rows.iter()
            .all(|r| r["method"] == "dp" && r["verified"] == true),
        "{stdout}"
    );
    let (ok, stdout, err) = run(&[
        "--method",
        "bnb",
        "--n",
        "30",
        "--range",
        "500",
        "--threads",
        "2",
        "--pop",
        "32",
        "--refill",
        "64",
        "--json",
    ]);
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert_eq!(
        rows.len(),
        24,
        "6 classes x (seq, cpu, gpu, coop): {stdout}"
    );
    assert!(
        rows.iter()
            .all(|r| r["verified"] == true && r["optimum"] == r["dp_optimum"]),
        "{stdout}"
    );
    // gpu and coop run the dive beside their rounds (it expands nodes of its own); with
    // --no-dive they do not.
    let offloaded = |rows: &[serde_json::Value]| -> Vec<serde_json::Value> {
        rows.iter()
            .filter(|r| {
                r["mode"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("gpu") || m.starts_with("coop"))
            })
            .cloned()
            .collect()
    };
    assert!(
        offloaded(&rows)
            .iter()
            .any(|r| r["dive_expanded"].as_u64() > Some(0)),
        "{stdout}"
    );
    let (ok, plain, err) = run(&[
        "--method",
        "bnb",
        "--n",
        "30",
        "--range",
        "500",
        "--threads",
        "2",
        "--mode",
        "gpu",
        "--no-dive",
        "--json",
    ]);
    assert!(ok, "{err}");
    let plain = json_rows(&plain);
    assert_eq!(plain.len(), 6, "{plain:?}");
    assert!(
        offloaded(&plain).iter().all(|r| r["dive_expanded"] == 0
            && r["proved_by_dive"] == false
            && r["verified"] == true),
        "{plain:?}"
    );
    // Expansion: auto keeps the threads on a CPU device; device runs the kernel (the mode
    // says which); a name it does not know is an error.
    assert!(
        plain.iter().all(|r| r["device_expansion"] == false
            && r["mode"].as_str().is_some_and(|m| m.ends_with(":threads"))),
        "{plain:?}"
    );
    let (ok, on_device, err) = run(&[
        "--method",
        "bnb",
        "--n",
        "30",
        "--range",
        "500",
        "--threads",
        "2",
        "--mode",
        "gpu",
        "--no-dive",
        "--expand",
        "device",
        "--json",
    ]);
    assert!(ok, "{err}");
    let on_device = json_rows(&on_device);
    assert!(
        on_device.len() == 6
            && on_device.iter().all(|r| r["device_expansion"] == true
                && r["verified"] == true
                && r["mode"].as_str().is_some_and(|m| m.ends_with(":device"))),
        "{on_device:?}"
    );
    let (ok, _, err) = run(&["--method", "bnb", "--mode", "gpu", "--expand", "kernel"]);
    assert!(
        !ok && err.contains("expected auto, threads or device"),
        "{err}"
    );
    let bnb: Vec<(String, serde_json::Value)> = rows
        .iter()
        .filter(|r| r["mode"] == "seq")
        .map(|r| {
            (
                r["instance"].as_str().unwrap().to_string(),
                r["optimum"].clone(),
            )
        })
        .collect();
    // By default the dynamic program answers (its table fits) and says so.
    let (ok, stdout, err) = run(&["--n", "30", "--range", "500", "--json"]);
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert_eq!(rows.len(), 6, "{stdout}");
    for r in &rows {
        assert_eq!(r["method"], "dp", "{r}");
        assert_eq!(r["verified"], true, "{r}");
        let want = bnb
            .iter()
            .find(|(name, _)| r["instance"] == name.as_str())
            .map(|(_, v)| v)
            .unwrap();
        assert_eq!(&r["optimum"], want, "{r}");
    }
    // A table past the budget: auto falls back to branch-and-bound, dp refuses.
    let (ok, stdout, err) = run(&["--n", "30", "--range", "500", "--dp-memory", "0", "--json"]);
    assert!(ok, "{err}");
    assert!(
        json_rows(&stdout)
            .iter()
            .all(|r| r["method"] == "bnb" && r["mode"] == "seq" && r["verified"] == true),
        "{stdout}"
    );
    let (ok, _, err) = run(&["--method", "dp", "--dp-memory", "0"]);
    assert!(!ok && err.contains("--dp-memory"), "{err}");
    let dir = std::env::temp_dir().join(format!("asym-knapsack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.txt");
    std::fs::write(&good, "3 10\n10 5\n7 4\n5 3\n").unwrap();
    let (ok, stdout, err) = run(&["--input", good.to_str().unwrap(), "--mode", "seq"]);
    assert!(
        ok && stdout.contains(" 17 ") && stdout.contains("equal"),
        "{stdout}{err}"
    );
    // Saved instances read back to the same answers.
    let saved = dir.join("saved");
    let (ok, stdout, err) = run(&[
        "--gen",
        "uncorrelated,weakly",
        "--n",
        "30",
        "--save-instances",
        saved.to_str().unwrap(),
        "--json",
    ]);
    assert!(ok, "{err}");
    for r in json_rows(&stdout) {
        let file = saved.join(format!(
            "{}-n30-r1000-s42.data",
            r["instance"].as_str().unwrap()
        ));
        let (ok, again, err) = run(&["--input", file.to_str().unwrap(), "--json"]);
        assert!(ok, "{err}");
        assert_eq!(json_rows(&again)[0]["optimum"], r["optimum"], "{again}");
    }
    // A search past its time limit answers with the best solution found, marked as such.
    let (ok, stdout, err) = run(&[
        "--gen",
        "almost-strongly",
        "--n",
        "10000",
        "--range",
        "10000000",
        "--time-limit",
        "0.3",
    ]);
    assert!(ok && stdout.contains("not proved"), "{stdout}{err}");
    let (ok, stdout, err) = run(&[
        "--gen",
        "almost-strongly",
        "--n",
        "10000",
        "--range",
        "10000000",
        "--time-limit",
        "0.3",
        "--json",
    ]);
    assert!(ok, "{err}");
    let row = &json_rows(&stdout)[0];
    assert!(
        row["proved"] == false && row["optimum"].as_u64().unwrap() > 0,
        "{row}"
    );
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "2 10\n10 5\n7 zero\n").unwrap();
    for (args, want) in [
        (vec!["--input", bad.to_str().unwrap()], "bad.txt:3"),
        (vec!["--gen", "sideways"], "unknown instance class"),
        (vec!["--mode", "gpu", "--pop", "0"], "at least 1"),
        (vec!["--mode", "warp"], "unknown mode"),
        (vec!["--batch", "12"], "power of two"),
        (vec!["--method", "greedy"], "expected auto, dp or bnb"),
        (vec!["--range", "3"], "range 3"),
        (vec!["--time-limit=-1"], "--time-limit"),
        (
            vec![
                "--method",
                "bnb",
                "--gen",
                "almost-strongly",
                "--n",
                "200",
                "--range",
                "10000",
                "--max-nodes",
                "64",
            ],
            "raise --max-nodes",
        ),
    ] {
        let (ok, _, err) = run(&args);
        assert!(!ok && err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sssp_matches_dijkstra_writes_distances_and_names_bad_lines() {
    let run = |args: &[&str]| run_example("sssp", args);
    let (ok, stdout, err) = run(&[
        "--scale",
        "10",
        "--threads",
        "2",
        "--threshold",
        "100",
        "--json",
    ]);
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    assert_eq!(
        rows.len(),
        9,
        "dijkstra + (cpu, gpu, coop) x (frontier, heap, delta) but coop frontier: {stdout}"
    );
    assert!(rows.iter().all(|r| r["verified"] == true), "{stdout}");
    let coop = rows
        .iter()
        .find(|r| r["order"] == "delta" && r["mode"] == "coop")
        .unwrap_or_else(|| panic!("a coop delta-stepping row: {stdout}"));
    let share = &coop["coop"];
    assert_eq!(
        share["host_visited"].as_u64().unwrap() + share["device_visited"].as_u64().unwrap(),
        coop["visited"].as_u64().unwrap(),
        "{coop}"
    );
    assert!(
        share["host_stints"].as_u64().unwrap() + share["device_stints"].as_u64().unwrap() >= 1,
        "{coop}"
    );
    // A fixed split: the device takes every round of 64 entries or more.
    let (ok, fixed, err) = run(&[
        "--scale",
        "10",
        "--threads",
        "2",
        "--mode",
        "coop",
        "--coop-split",
        "64",
        "--json",
    ]);
    assert!(ok, "{err}");
    let fixed_rows = json_rows(&fixed);
    let coop = fixed_rows
        .iter()
        .find(|r| r["order"] == "delta")
        .unwrap_or_else(|| panic!("a coop delta-stepping row: {fixed}"));
    assert_eq!(coop["verified"], true, "{coop}");
    assert_eq!(coop["coop"]["to_device"], 64, "{coop}");
    assert!(coop["coop"]["device_stints"].as_u64() >= Some(1), "{coop}");
    for bad in ["0", "many"] {
        let (ok, _, err) = run(&["--scale", "6", "--mode", "coop", "--coop-split", bad]);
        assert!(!ok && err.contains("split"), "--coop-split {bad}: {err}");
    }
    for mode in ["cpu", "gpu"] {
        let delta = rows
            .iter()
            .find(|r| r["order"] == "delta" && r["mode"] == mode)
            .unwrap_or_else(|| panic!("a {mode} delta-stepping row: {stdout}"));
        assert!(delta["delta"].as_u64() > Some(0), "{delta}");
        // Work counters: every reached vertex expanded, edges scanned counted.
        assert!(
            delta["visited"].as_u64() >= delta["reached"].as_u64(),
            "{delta}"
        );
        assert!(delta["relaxed"].as_u64() > Some(0), "{delta}");
        assert!(delta["buckets"].as_u64() > Some(0), "{delta}");
    }
    // A frontier search advances one hop an iteration: never fewer than the hop depth.
    for frontier in rows.iter().filter(|r| r["order"] == "frontier") {
        assert!(frontier["hop_depth"].as_u64() > Some(0), "{frontier}");
        assert!(
            frontier["iterations"].as_u64() >= frontier["hop_depth"].as_u64(),
            "{frontier}"
        );
    }
    assert!(
        rows.iter()
            .any(|r| r["order"] == "heap" && r["heap_inserted"].as_u64() > Some(0)),
        "the heap takes part with a threshold of 100: {stdout}"
    );
    // A width sweep with repeats: a delta row per width and mode, each the median of its
    // checked searches.
    let (ok, swept, err) = run(&[
        "--scale",
        "10",
        "--threads",
        "2",
        "--mode",
        "cpu,gpu",
        "--delta",
        "auto,16,300",
        "--repeat",
        "3",
        "--json",
    ]);
    assert!(ok, "{err}");
    let swept = json_rows(&swept);
    let auto = rows.iter().find(|r| r["order"] == "delta").unwrap()["delta"].clone();
    for mode in ["cpu", "gpu"] {
        let widths: Vec<_> = swept
            .iter()
            .filter(|r| r["order"] == "delta" && r["mode"] == mode)
            .map(|r| {
                assert_eq!(r["verified"], true, "{r}");
                assert_eq!(r["runs"], 3, "{r}");
                let (min, ms, max) = (r["ms_min"].as_f64(), r["ms"].as_f64(), r["ms_max"].as_f64());
                assert!(min <= ms && ms <= max, "{r}");
                r["delta"].clone()
            })
            .collect();
        assert_eq!(widths, [auto.clone(), 16.into(), 300.into()], "{mode}");
    }
    for bad in ["0", "wide", "16,"] {
        let (ok, _, err) = run(&["--scale", "6", "--mode", "cpu", "--delta", bad]);
        assert!(!ok && err.contains("--delta"), "--delta {bad}: {err}");
    }
    let (ok, _, err) = run(&["--scale", "6", "--mode", "cpu", "--repeat", "0"]);
    assert!(!ok && err.contains("--repeat"), "--repeat 0: {err}");
    let dir = std::env::temp_dir().join(format!("asym-sssp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Vertex 4 is unreachable; the self-loop is dropped; the shorter duplicate wins.
    let good = dir.join("good.gr");
    std::fs::write(
        &good,
        "c tiny\np sp 4 4\na 1 2 7\na 1 2 3\na 2 3 0\na 3 3 1\n",
    )
    .unwrap();
    let out = dir.join("dist.txt");
    let (ok, stdout, err) = run(&[
        "--input",
        good.to_str().unwrap(),
        "--mode",
        "cpu",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(ok && stdout.contains("= Dijkstra"), "{stdout}{err}");
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "1 0\n2 3\n3 3\n4 inf\n"
    );
    // The graph searched, written for other tools, reads back as the same search.
    let saved = dir.join("saved.gr");
    let (ok, stdout, err) = run(&[
        "--scale",
        "8",
        "--mode",
        "cpu",
        "--save-graph",
        saved.to_str().unwrap(),
        "--json",
    ]);
    assert!(ok, "{err}");
    let first = json_rows(&stdout);
    let (ok, again, err) = run(&[
        "--input",
        saved.to_str().unwrap(),
        "--mode",
        "cpu",
        "--json",
    ]);
    assert!(ok, "{err}");
    let second = json_rows(&again);
    for key in ["vertices", "edges", "reached", "source", "hop_depth"] {
        assert_eq!(first[0][key], second[0][key], "{key}: {stdout} / {again}");
    }
    // Searched in the given numbering or renumbered, the answers speak of the graph's own
    // numbering; the renumbered graph, saved, has the source first and the same reach.
    let given_out = dir.join("dist-given.txt");
    let (ok, _, err) = run(&[
        "--input",
        good.to_str().unwrap(),
        "--mode",
        "cpu",
        "--vertex-order",
        "given",
        "--output",
        given_out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(&given_out).unwrap(),
        std::fs::read_to_string(&out).unwrap()
    );
    let searched = dir.join("searched.gr");
    let (ok, stdout, err) = run(&[
        "--scale",
        "8",
        "--mode",
        "cpu",
        "--save-graph",
        searched.to_str().unwrap(),
        "--save-graph-order",
        "searched",
        "--json",
    ]);
    assert!(ok, "{err}");
    let renumbered = json_rows(&stdout);
    assert_eq!(renumbered[0]["vertex_order"], "bfs", "{stdout}");
    assert_eq!(renumbered[0]["source_searched"], 1, "{stdout}");
    assert_eq!(renumbered[0]["source"], first[0]["source"], "{stdout}");
    let (ok, again, err) = run(&[
        "--input",
        searched.to_str().unwrap(),
        "--source",
        "1",
        "--vertex-order",
        "given",
        "--mode",
        "cpu",
        "--json",
    ]);
    assert!(ok, "{err}");
    let second = json_rows(&again);
    for key in ["vertices", "edges", "reached"] {
        assert_eq!(first[0][key], second[0][key], "{key}: {stdout} / {again}");
    }
    let bad = dir.join("bad.gr");
    std::fs::write(&bad, "p sp 2 1\n\na 1 2 -5\n").unwrap();
    let neg = dir.join("neg.mtx");
    std::fs::write(
        &neg,
        "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 -0.5\n",
    )
    .unwrap();
    for (args, want) in [
        (
            vec!["--input", bad.to_str().unwrap()],
            "bad.gr:3: negative weight",
        ),
        (vec!["--input", neg.to_str().unwrap()], "neg.mtx:3"),
        (vec!["--input", "/nonexistent.gr"], "/nonexistent.gr"),
        (vec!["--gen", "lattice"], "expected kron or geo"),
        (vec!["--vertex-order", "random"], "expected bfs or given"),
        (
            vec!["--save-graph-order", "sorted"],
            "expected given or searched",
        ),
        (vec!["--source", "0"], "numbered from 1"),
        (vec!["--scale", "4", "--source", "17"], "source vertex 17"),
        (vec!["--mode", "sideways"], "unknown mode"),
        (
            vec!["--scale", "4", "--mode", "cpu", "--batch", "12"],
            "power of two",
        ),
        (
            vec!["--scale", "4", "--mode", "coop", "--refill", "0"],
            "at least 1",
        ),
        (vec!["--scale", "4", "--threshold", "0"], "at least 1"),
        (vec!["--scale", "40"], "scale 40"),
    ] {
        let (ok, _, err) = run(&args);
        assert!(!ok && err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn list_ops_reads_the_seeds_files_verifies_and_names_bad_lines() {
    let nodes = tmp("listnodes.txt");
    let ops = tmp("operations.txt");
    // The seed's own example files (with its comments).
    std::fs::write(
        &nodes,
        "5 // The number of nodes\n4 // The node value\n3\n2\n1\n5\n",
    )
    .unwrap();
    std::fs::write(&ops, "3  // The number of operations\n1 2 6\n0 1\n1 3 8\n").unwrap();
    let out = tmp("final.txt");
    let n = nodes.to_str().unwrap();
    let o = ops.to_str().unwrap();
    let (ok, stdout, stderr) = run_example(
        "list_ops",
        &[
            "--nodes",
            n,
            "--ops",
            o,
            "--mode",
            "seq",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("ok"), "{stdout}");
    let fin: Vec<i32> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(fin, vec![4, 3, 8, 2, 6, 5]);
    // Every mode on a generated workload, verified, as JSON.
    let (ok, stdout, stderr) = run_example(
        "list_ops",
        &[
            "--initial",
            "300",
            "--ops-count",
            "3000",
            "--json",
            "--mode",
            "all",
        ],
    );
    assert!(ok, "{stderr}");
    let rows = json_rows(&stdout);
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert_eq!(r["verified"], true, "{r}");
        assert_eq!(r["ops"], 3000);
        let done = r["succeeded"].as_u64().unwrap();
        let failed = r["failed"].as_u64().unwrap();
        assert_eq!(done + failed, 3000, "{r}");
    }
    // Bad input: each names the file and line, or the duplicate.
    let cases: Vec<(&str, &str, &str)> = vec![
        (
            "3\n1\n2\n",
            "1\n0 1\n",
            "2 values, but the first line says 3",
        ),
        ("2\n1\nx\n", "1\n0 1\n", ":3: value \"x\""),
        ("3\n1\n2\n1\n", "1\n0 1\n", "value 1 appears twice"),
        (
            "2\n1\n2\n",
            "2\n0 1\n2 1 5\n",
            ":3: expected `1 <target> <new value>`",
        ),
        (
            "2\n1\n2\n",
            "1\n0 1\n0 2\n",
            ":3: more operations than the count 1",
        ),
        ("2\n1\n2\n", "", "empty"),
    ];
    for (nodes_text, ops_text, want) in cases {
        std::fs::write(&nodes, nodes_text).unwrap();
        std::fs::write(&ops, ops_text).unwrap();
        let (ok, _, stderr) =
            run_example("list_ops", &["--nodes", n, "--ops", o, "--mode", "seq,cpu"]);
        assert!(!ok, "{nodes_text:?} / {ops_text:?} was accepted");
        assert!(stderr.contains(want), "{want:?} not in {stderr:?}");
    }
    // A valid batch whose operations depend on each other: an insert after a value another
    // insert adds, a remove of a value another insert adds. Either may legally fail when it
    // runs first; every mode must verify.
    std::fs::write(&nodes, "3\n1\n2\n3\n").unwrap();
    std::fs::write(&ops, "5\n1 2 6\n1 6 7\n1 3 8\n0 8\n0 1\n").unwrap();
    let (ok, stdout, stderr) = run_example(
        "list_ops",
        &[
            "--nodes", n, "--ops", o, "--mode", "all", "--repeat", "3", "--json",
        ],
    );
    assert!(ok, "{stderr}");
    assert!(
        json_rows(&stdout).iter().all(|r| r["verified"] == true),
        "{stdout}"
    );
    // Inserting a value already in the list is an input error naming the line.
    std::fs::write(&ops, "1\n1 1 2\n").unwrap();
    let (code, _, stderr) = run_with_env("list_ops", &["--nodes", n, "--ops", o], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(":2: inserts 2, which is in the initial list"),
        "{stderr}"
    );
    let (ok, _, stderr) = run_example("list_ops", &["--mode", "fast"]);
    assert!(!ok && stderr.contains("unknown mode"), "{stderr}");
    let (ok, _, stderr) = run_example("list_ops", &["--initial", "0", "--mode", "seq"]);
    assert!(!ok && stderr.contains("0 nodes"), "{stderr}");
    let (ok, _, stderr) = run_example("list_ops", &["--device-share", "2", "--mode", "coop"]);
    assert!(!ok && stderr.contains("--device-share"), "{stderr}");
    let (ok, _, stderr) = run_example("list_ops", &["--nodes", n]);
    assert!(!ok && stderr.contains("--ops"), "{stderr}");
    for bad in ["0", "65"] {
        let (ok, _, stderr) = run_example("list_ops", &["--walk-window", bad, "--mode", "gpu"]);
        assert!(!ok && stderr.contains("--walk-window"), "{bad}: {stderr}");
    }
    for f in [nodes, ops, out] {
        let _ = std::fs::remove_file(f);
    }
}

/// Runs example `name` with `args` and extra environment: (exit code, stdout, stderr).
fn run_with_env(name: &str, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let out = Command::new(example(name))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("run {name}: {e}"));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Sizes read from files and flags, outputs that cannot be written and bad environment values:
/// each is a usage error (exit code 2) whose message names what was wrong, never an abort, a
/// panic or a half-written file.
#[test]
fn sizes_outputs_and_environment_are_usage_errors() {
    let knapsack = tmp("huge-capacity.txt");
    std::fs::write(&knapsack, "0 1000000000000\n").unwrap();
    let dimacs = tmp("huge.gr");
    std::fs::write(&dimacs, "p sp 4000000000 0\n").unwrap();
    let mtx = tmp("huge.mtx");
    std::fs::write(
        &mtx,
        "%%MatrixMarket matrix coordinate integer general\n3000000000 3000000000 0\n",
    )
    .unwrap();
    // A header claiming 2^62 int32 elements over four bytes of data.
    let npy_lie = tmp("lie.npy");
    let mut header =
        "{'descr': '<i4', 'fortran_order': False, 'shape': (4611686018427387904,), }".to_string();
    header.push_str(&" ".repeat(117 - header.len()));
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0; 4]);
    std::fs::write(&npy_lie, bytes).unwrap();
    let unwritable = "/nonexistent-asym-dir/out.txt";
    let dir = std::env::temp_dir();
    let dir = dir.to_str().unwrap();
    let p = |p: &PathBuf| p.to_str().unwrap().to_string();
    // (example, arguments, environment, what the message must name)
    type Case<'a> = (&'a str, Vec<String>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        // Sizes from files: checked against the machine and the file before allocation.
        (
            "sssp",
            vec!["--input".into(), p(&dimacs), "--mode".into(), "cpu".into()],
            vec![],
            "4000000000 vertices",
        ),
        (
            "sssp",
            vec!["--input".into(), p(&mtx), "--mode".into(), "cpu".into()],
            vec![],
            "3000000000 vertices",
        ),
        (
            "batch_kselect",
            vec![
                "--input".into(),
                p(&npy_lie),
                "--sublist".into(),
                "1".into(),
            ],
            vec![],
            "more than 2^64 bytes",
        ),
        // Sizes from flags the flag checks allow but the machine cannot hold.
        (
            "sssp",
            vec!["--scale".into(), "27".into(), "--mode".into(), "cpu".into()],
            vec![],
            "out of host memory",
        ),
        (
            "heap_bench",
            vec![
                "--mixed".into(),
                "--preload".into(),
                "1000000000000".into(),
                "--mode".into(),
                "cpu".into(),
            ],
            vec![],
            "out of host memory",
        ),
        (
            "heap_bench",
            vec!["--keys-log2".into(), "40".into()],
            vec![],
            "--keys-log2 40",
        ),
        (
            "list_ops",
            vec![
                "--initial".into(),
                "1073741823".into(),
                "--mode".into(),
                "seq".into(),
            ],
            vec![],
            "out of host memory",
        ),
        // Counts that would run for days or allocate their size up front.
        (
            "batch_kselect",
            vec!["--repeat".into(), "1000000000000".into()],
            vec![],
            "--repeat",
        ),
        (
            "list_ops",
            vec!["--repeat".into(), "0".into()],
            vec![],
            "--repeat",
        ),
        (
            "devices",
            vec!["--samples".into(), "1000000000000".into()],
            vec![],
            "--samples",
        ),
        (
            "devices",
            vec!["--chase-mib".into(), "0,4097".into()],
            vec![],
            "--chase-mib",
        ),
        (
            "knapsack",
            vec!["--range".into(), "1000000000000".into()],
            vec![],
            "range 1000000000000",
        ),
        (
            "knapsack",
            vec!["--n".into(), "1000000000000".into()],
            vec![],
            "out of host memory",
        ),
        // A work-group above every K would run nothing.
        (
            "heap_bench",
            vec![
                "--mode".into(),
                "gpu".into(),
                "--work-group".into(),
                "2048".into(),
                "--batch".into(),
                "1024".into(),
            ],
            vec![],
            "--work-group 2048",
        ),
        // Outputs that cannot be written fail before the run.
        (
            "sssp",
            vec![
                "--scale".into(),
                "8".into(),
                "--mode".into(),
                "cpu".into(),
                "--output".into(),
                unwritable.into(),
            ],
            vec![],
            unwritable,
        ),
        (
            "list_ops",
            vec![
                "--mode".into(),
                "seq".into(),
                "--output".into(),
                unwritable.into(),
            ],
            vec![],
            unwritable,
        ),
        (
            "batch_kselect",
            vec![
                "--total-log2".into(),
                "12".into(),
                "--output".into(),
                dir.into(),
            ],
            vec![],
            "is a folder",
        ),
        // Environment values are checked as flags are.
        ("devices", vec![], vec![("ASYM_SVM", "bogus")], "ASYM_SVM"),
        (
            "devices",
            vec![],
            vec![("ASYM_TIMEOUT_MS", "soon")],
            "ASYM_TIMEOUT_MS",
        ),
        (
            "devices",
            vec![],
            vec![("ASYM_DEVICE", "no-such-device")],
            "no-such-device",
        ),
        (
            "knapsack",
            vec!["--mode".into(), "cpu".into(), "--n".into(), "8".into()],
            vec![("ASYM_LATENCY_THREADS", "many")],
            "ASYM_LATENCY_THREADS",
        ),
        (
            "heap_bench",
            vec![
                "--mode".into(),
                "gpu".into(),
                "--keys-log2".into(),
                "10".into(),
            ],
            vec![("ASYM_GHEAP_PROFILE", "yes")],
            "ASYM_GHEAP_PROFILE",
        ),
        (
            "batch_kselect",
            vec![
                "--total-log2".into(),
                "12".into(),
                "--mode".into(),
                "gpu".into(),
            ],
            vec![("ASYM_DUMP_BINARIES", unwritable)],
            "ASYM_DUMP_BINARIES",
        ),
    ];
    for (name, args, env, want) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, stderr) = run_with_env(name, &args, env);
        let what = format!("{name} {args:?} {env:?}");
        assert_eq!(code, Some(2), "{what}: exit {code:?}, stderr {stderr}");
        assert!(stderr.contains(want), "{what}: {want:?} not in {stderr:?}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    }
    // 2^30 keys need about 24 GiB: refused before any allocation where the machine has less
    // (on a larger machine this is a legitimate, long run, so it is not tried there).
    if asym_runtime::host_memory::available().is_some_and(|a| a < 24 << 30) {
        let (code, _, stderr) =
            run_with_env("heap_bench", &["--keys-log2", "30", "--mode", "cpu"], &[]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("out of host memory"), "{stderr}");
    }
    // A pop larger than any heap is a pop of everything, not an allocation of its size.
    let (code, _, stderr) = run_with_env(
        "sssp",
        &["--scale", "8", "--mode", "cpu", "--pop", "1000000000000"],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    // A knapsack capacity of 10^12 over no items: the DP table is refused, the search answers.
    let (code, stdout, stderr) = run_with_env(
        "knapsack",
        &["--input", &p(&knapsack), "--mode", "seq"],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("too large for DP"), "{stdout}");
    assert!(!std::path::Path::new(unwritable).exists());
    for f in [knapsack, dimacs, mtx, npy_lie] {
        let _ = std::fs::remove_file(f);
    }
}

/// The red-black tree example: a generated run checked in every mode; the files of a user
/// (initial keys, a batch of operations) give the final keys and the search answers in file
/// order, a missing delete is reported, not an error; a malformed line names its file and
/// line; device searches verify in every order and say which ran; an unknown mode or search
/// order or a share outside 0..1 is a usage error.
#[test]
fn rbtree_runs_checks_and_reads_files() {
    let (ok, stdout, err) = run_example(
        "rbtree",
        &["--initial-count", "3000", "--ops-count", "3000", "--json"],
    );
    assert!(ok, "{err}");
    let rows = json_rows(&stdout);
    for mode in ["cpu", "gpu", "coop"] {
        for phase in ["build", "insert", "delete", "search"] {
            let row = rows
                .iter()
                .find(|r| r["mode"] == mode && r["phase"] == phase)
                .unwrap_or_else(|| panic!("no {mode} {phase} row: {stdout}"));
            assert_eq!(row["verified"], true, "{row}");
        }
    }
    assert!(rows.iter().any(|r| r["mode"] == "peer:btreemap"));
    // Device searches in each order, verified; the row says which order ran.
    for (flag, ran) in [
        ("routed", "routed"),
        ("arrival", "arrival"),
        ("auto", "arrival"),
    ] {
        let (ok, stdout, err) = run_example(
            "rbtree",
            &[
                "--initial-count",
                "2000",
                "--ops-count",
                "2000",
                "--mode",
                "gpu",
                "--search-order",
                flag,
                "--json",
            ],
        );
        assert!(ok, "{err}");
        let rows = json_rows(&stdout);
        let row = rows
            .iter()
            .find(|r| r["mode"] == "gpu" && r["phase"] == "search")
            .unwrap_or_else(|| panic!("no gpu search row: {stdout}"));
        assert_eq!(row["verified"], true, "{row}");
        let detail = row["detail"].as_str().unwrap_or_default();
        assert!(detail.ends_with(&format!("{ran} order")), "{flag}: {row}");
    }

    let initial = tmp("rb-initial.txt");
    std::fs::write(&initial, "5\n1\n# a comment\n9\n").unwrap();
    let ops = tmp("rb-ops.txt");
    std::fs::write(
        &ops,
        "insert 4\ninsert 5 77\ndelete 9\ndelete 100\nsearch 4\nsearch 9\nsearch 1\n",
    )
    .unwrap();
    let (out, found) = (tmp("rb-final.txt"), tmp("rb-found.txt"));
    let (ok, stdout, err) = run_example(
        "rbtree",
        &[
            "--initial",
            initial.to_str().unwrap(),
            "--ops",
            ops.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
            "--search-output",
            found.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "1\n4\n5\n");
    assert_eq!(std::fs::read_to_string(&found).unwrap(), "4 1\n9 0\n1 1\n");
    let rows = json_rows(&stdout);
    assert!(rows
        .iter()
        .filter(|r| r["phase"] == "delete" && r["mode"] != "peer:btreemap")
        .all(|r| r["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("1 missing,"))
            && r["verified"] == true));

    let bad = tmp("rb-bad-ops.txt");
    std::fs::write(&bad, "insert 1\nsearch 2\nremove 3\n").unwrap();
    let (code, _, err) = run_with_env("rbtree", &["--ops", bad.to_str().unwrap()], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("rb-bad-ops.txt") && err.contains('3'), "{err}");
    for args in [
        &["--mode", "sideways"][..],
        &["--search-order", "sideways"][..],
        &["--search-share", "2"][..],
        &["--initial", "/nonexistent/keys.txt"][..],
    ] {
        let (code, _, err) = run_with_env("rbtree", args, &[]);
        assert_eq!(code, Some(2), "{args:?}: {err}");
    }
    for p in [initial, ops, out, found, bad] {
        let _ = std::fs::remove_file(p);
    }
}

/// A device set on the command line: PoCL asked for two devices, `--device all` spreads
/// batch k-selection and the heap's bulk sort over both, runs each alone beside the set, and
/// reports every worker's share; a list naming a device twice is a usage error.
#[test]
fn device_sets_spread_verify_and_report_shares() {
    // Unless the caller chose: PoCL 5.0 aborts with two of its devices (tests/common).
    let pocl = std::env::var("POCL_DEVICES").unwrap_or_else(|_| "pthread pthread".into());
    let env = [("POCL_DEVICES", pocl.as_str())];
    let (code, out, err) = run_with_env(
        "batch_kselect",
        &[
            "--device",
            "all",
            "--total-log2",
            "18",
            "--sublist",
            "1024",
            "--mode",
            "gpu,coop",
            "--strategy",
            "radix",
            "--resident",
            "--no-peers",
            "--json",
        ],
        &env,
    );
    assert_eq!(code, Some(0), "{err}");
    let rows = json_rows(&out);
    // Each member alone: one gpu@i:radix row each.
    let members = rows
        .iter()
        .filter(|r| r["member"].is_number() && r["mode"].as_str().unwrap().ends_with(":radix"))
        .count();
    assert!(members >= 1, "{out}");
    for r in &rows {
        assert_eq!(r["verified"], true, "{r}");
        let set_row = r["mode"] == "gpu:radix"
            || r["mode"] == "coop:radix"
            || (r["mode"] == "gpu:radix-resident" && members >= 2);
        if set_row {
            let workers = r["workers"]
                .as_array()
                .expect("a set row reports its workers");
            let sublists: u64 = workers
                .iter()
                .map(|w| w["sublists"].as_u64().unwrap())
                .sum();
            assert_eq!(sublists, 256, "{r}");
            assert_eq!(r["exploring"], false, "the warm-up runs the trials: {r}");
        }
    }
    if members >= 2 {
        let (code, out, err) = run_with_env(
            "heap_bench",
            &[
                "--device",
                "all",
                "--mode",
                "gpu",
                "--bulk",
                "auto",
                "--keys-log2",
                "16",
                "--batch",
                "256",
                "--pattern",
                "random",
                "--no-peers",
                "--json",
            ],
            &env,
        );
        assert_eq!(code, Some(0), "{err}");
        let rows = json_rows(&out);
        let set = rows
            .iter()
            .find(|r| r["mode"] == "gpu-set:auto")
            .unwrap_or_else(|| panic!("a gpu-set row: {out}"));
        assert_eq!(set["verified"], true, "{set}");
        assert_eq!(
            set["device_stats"]["members"].as_array().unwrap().len(),
            members
        );
        assert!(rows.iter().any(|r| r["mode"] == "gpu@1:auto"), "{out}");
        let (code, out, err) = run_with_env(
            "sssp",
            &[
                "--device",
                "all",
                "--mode",
                "gpu",
                "--scale",
                "12",
                "--threshold",
                "500",
                "--json",
            ],
            &env,
        );
        assert_eq!(code, Some(0), "{err}");
        let rows = json_rows(&out);
        for order in ["frontier", "heap"] {
            for i in 0..members {
                let mode = format!("gpu@{i}");
                let row = rows
                    .iter()
                    .find(|r| r["mode"] == mode.as_str() && r["order"] == order)
                    .unwrap_or_else(|| panic!("{mode} {order}: {out}"));
                assert_eq!(row["set"]["plan"], format!("{mode} alone"), "{row}");
            }
            for mode in ["gpu-set", "gpu-set:together"] {
                let row = rows
                    .iter()
                    .find(|r| r["mode"] == mode && r["order"] == order)
                    .unwrap_or_else(|| panic!("{mode} {order}: {out}"));
                assert_eq!(row["verified"], true, "{row}");
                assert_eq!(row["set"]["exploring"], false, "{row}");
                let entries: u64 = row["set"]["members"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["entries"].as_u64().unwrap())
                    .sum();
                let expanded = row["visited"].as_u64().unwrap() + row["stale"].as_u64().unwrap();
                assert_eq!(entries, expanded, "{row}");
            }
        }
        assert!(rows.iter().all(|r| r["verified"] == true), "{out}");
        // In coop mode the latency threads are one more worker of the set.
        let (code, out, err) = run_with_env(
            "sssp",
            &[
                "--device",
                "all",
                "--mode",
                "coop",
                "--scale",
                "12",
                "--threads",
                "2",
                "--json",
            ],
            &env,
        );
        assert_eq!(code, Some(0), "{err}");
        let rows = json_rows(&out);
        let together = rows
            .iter()
            .find(|r| r["mode"] == "coop-set:together" && r["order"] == "frontier")
            .unwrap_or_else(|| panic!("a coop-set:together row: {out}"));
        let workers = together["set"]["members"].as_array().unwrap();
        assert_eq!(workers.len(), members + 1, "{together}");
        assert!(
            workers[members]["device"]
                .as_str()
                .unwrap()
                .contains("latency threads"),
            "{together}"
        );
        assert!(rows.iter().all(|r| r["verified"] == true), "{out}");
    }
    let (code, _, err) = run_with_env(
        "batch_kselect",
        &[
            "--device",
            "pthread,pthread,pthread,pthread,pthread",
            "--mode",
            "gpu",
        ],
        &env,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("after the devices taken before it"), "{err}");
}

/// A build without MPI launched as one of several ranks would run the whole job once per
/// rank: it refuses, saying how to build one that joins.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_refuses_to_run_as_a_rank() {
    let (code, _, err) = run_with_env(
        "batch_kselect",
        &["--total-log2", "12"],
        &[("OMPI_COMM_WORLD_SIZE", "4")],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("4 MPI ranks") && err.contains("--features mpi"),
        "{err}"
    );
}
