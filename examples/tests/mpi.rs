//! The programs as ranks of an MPI job (`--features mpi`, launched by mpirun): the same
//! answers as one host in every layout and mode, on both SVM transports, from generated keys
//! and from a file; rank 0 alone prints and writes; a bad flag or a failed rank ends every
//! rank with one message and one exit code.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Duration;

use asym_apps::io::npy;
use asym_mpi::launcher::{mpirun, run_bounded};

const KSELECT: &str = env!("CARGO_BIN_EXE_batch_kselect");
const SSSP: &str = env!("CARGO_BIN_EXE_sssp");
const BOUND: Duration = Duration::from_secs(300);

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("asym-mpi-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Waits for `cmd`, killing it past [`BOUND`].
fn bounded(cmd: &mut Command) -> Output {
    let shown = format!("{cmd:?}");
    run_bounded(cmd, BOUND)
        .expect("starts")
        .unwrap_or_else(|| panic!("{shown} hung past {BOUND:?}"))
}

fn ranks(n: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    ranks_of(KSELECT, n, args, env)
}

fn ranks_of(program: &str, n: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = mpirun(n, program);
    cmd.args(args).envs(env.iter().copied());
    bounded(&mut cmd)
}

fn one_host(args: &[&str], env: &[(&str, &str)]) -> Output {
    one_host_of(KSELECT, args, env)
}

fn one_host_of(program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args).envs(env.iter().copied());
    bounded(&mut cmd)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Runs `args` on one host and on `n` ranks in `layout`, each writing `--output`, and
/// compares the files byte for byte.
fn same_as_one_host(n: usize, layout: &str, args: &[&str], env: &[(&str, &str)]) {
    let tag = format!("{n}-{layout}-{}", args.join("_").replace(['/', '.'], ""));
    let (single, multi) = (
        tmp(&format!("one-{tag}.npy")),
        tmp(&format!("ranks-{tag}.npy")),
    );
    let mut one_args = args.to_vec();
    one_args.extend(["--no-peers", "--output", single.to_str().unwrap()]);
    assert_ok(&one_host(&one_args, env), "one host");
    let mut rank_args = args.to_vec();
    rank_args.extend(["--layout", layout, "--output", multi.to_str().unwrap()]);
    let out = ranks(n, &rank_args, env);
    assert_ok(&out, &format!("{n} ranks, {layout}"));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("over {n} MPI ranks")), "{stdout}");
    assert!(!stdout.contains(" NO "), "{stdout}");
    let (a, b) = (
        std::fs::read(&single).unwrap(),
        std::fs::read(&multi).unwrap(),
    );
    assert!(
        a == b,
        "{n} ranks, {layout}, {args:?}: answers differ from one host's"
    );
}

#[test]
fn owned_rows_answer_as_one_host_in_every_mode() {
    for n in [2, 4] {
        for mode in ["cpu", "gpu", "coop"] {
            let args = [
                "--total-log2",
                "15",
                "--sublist",
                "1024",
                "--k",
                "100",
                "--mode",
                mode,
            ];
            same_as_one_host(n, "owned", &args, &[]);
        }
    }
    // Keys resident in each rank's device memory.
    let args = [
        "--total-log2",
        "15",
        "--sublist",
        "2048",
        "--mode",
        "gpu",
        "--strategy",
        "radix",
        "--resident",
    ];
    same_as_one_host(3, "owned", &args, &[]);
}

#[test]
fn owned_rows_answer_as_one_host_on_the_coarse_transport() {
    for mode in ["gpu", "coop"] {
        let args = ["--total-log2", "14", "--sublist", "2048", "--mode", mode];
        same_as_one_host(4, "owned", &args, &[("ASYM_SVM", "coarse")]);
    }
}

#[test]
fn spread_rows_answer_as_one_host() {
    for n in [2, 3, 4] {
        for k in ["1", "77", "4096"] {
            let args = [
                "--total-log2",
                "15",
                "--sublist",
                "4096",
                "--k",
                k,
                "--mode",
                "cpu",
                "--strategy",
                "radix",
            ];
            same_as_one_host(n, "spread", &args, &[]);
        }
    }
}

/// Each rank's part counted on its device: staged in every call, or resident; rows long
/// enough to be tiled and short ones; both transports.
#[test]
fn spread_rows_counted_on_devices_answer_as_one_host() {
    for (n, sublist, k, resident) in [
        (2, "65536", "6553", false),
        (3, "4096", "1", true),
        (4, "2048", "2048", false),
    ] {
        let mut args = vec![
            "--total-log2",
            "17",
            "--sublist",
            sublist,
            "--k",
            k,
            "--mode",
            "gpu",
            "--strategy",
            "radix",
        ];
        if resident {
            args.push("--resident");
        }
        same_as_one_host(n, "spread", &args, &[]);
    }
    let args = [
        "--total-log2",
        "15",
        "--sublist",
        "8192",
        "--mode",
        "gpu",
        "--strategy",
        "radix",
    ];
    same_as_one_host(2, "spread", &args, &[("ASYM_SVM", "coarse")]);
}

#[test]
fn more_ranks_than_rows_and_rows_shorter_than_ranks() {
    // 2 rows on 4 ranks (owned: two ranks hold none); rows of 3 keys on 4 ranks (spread: a
    // rank holds no key of a row).
    let input = tmp("short.npy");
    let keys: Vec<u32> = (0..24u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    npy::write(&input, &keys).unwrap();
    let file = input.to_str().unwrap();
    let args = [
        "--input",
        file,
        "--sublist",
        "12",
        "--k",
        "5",
        "--mode",
        "cpu",
    ];
    same_as_one_host(4, "owned", &args, &[]);
    let args = [
        "--input",
        file,
        "--sublist",
        "3",
        "--k",
        "2",
        "--mode",
        "cpu",
    ];
    same_as_one_host(4, "spread", &args, &[]);
}

#[test]
fn a_float_file_answers_as_one_host_in_both_layouts() {
    let input = tmp("keys-f32.npy");
    let keys: Vec<f32> = (0..6000)
        .map(|i| match i % 97 {
            0 => f32::NAN,
            1 => -0.0,
            2 => f32::NEG_INFINITY,
            _ => ((i * 7919) % 1013) as f32 - 500.5,
        })
        .collect();
    npy::write(&input, &keys).unwrap();
    let file = input.to_str().unwrap();
    for (layout, mode) in [("owned", "cpu"), ("spread", "cpu"), ("spread", "gpu")] {
        let args = [
            "--input",
            file,
            "--sublist",
            "600",
            "--k",
            "61",
            "--mode",
            mode,
        ];
        same_as_one_host(3, layout, &args, &[]);
    }
}

#[test]
fn json_rows_carry_the_ranks_and_their_shares() {
    let out = ranks(
        2,
        &[
            "--total-log2",
            "14",
            "--sublist",
            "2048",
            "--mode",
            "cpu",
            "--strategy",
            "radix",
            "--json",
        ],
        &[],
    );
    assert_ok(&out, "json");
    let stdout = text(&out.stdout);
    let rows: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(rows.len(), 1, "rank 0 alone prints: {stdout}");
    let row = &rows[0];
    assert_eq!(row["ranks"], 2);
    assert_eq!(row["verified"], true);
    let per_rank = row["per_rank"].as_array().unwrap();
    assert_eq!(per_rank.len(), 2);
    let share: f64 = per_rank.iter().map(|p| p["share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    assert_eq!(per_rank[1]["rows"], 4);
}

#[test]
fn a_bad_flag_is_told_once_and_every_rank_exits_2() {
    let out = ranks(4, &["--total-log2", "15", "--sublist", "1000"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.matches("not a multiple of 1000").count(),
        1,
        "{stderr}"
    );
    // A file shorter than its header says: every rank finds out, rank 0 tells.
    let short = tmp("short-data.npy");
    let mut bytes = std::fs::read({
        npy::write(&short, &[7i32; 64]).unwrap();
        &short
    })
    .unwrap();
    bytes.truncate(bytes.len() - 8);
    std::fs::write(&short, bytes).unwrap();
    let out = ranks(
        3,
        &["--input", short.to_str().unwrap(), "--sublist", "8"],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches("needs 256 bytes").count(), 1, "{stderr}");
    // A flag the parser refuses, before MPI starts: told by rank 0 alone too.
    let out = ranks(4, &["--sublist", "12x"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches("invalid value '12x'").count(), 1, "{stderr}");
    let out = ranks_of(SSSP, 3, &["--no-such-flag"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches("unexpected argument").count(), 1, "{stderr}");
    let out = ranks(2, &["--layout", "spread", "--mode", "coop"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--layout spread"));
    let out = ranks(
        2,
        &["--layout", "spread", "--mode", "cpu", "--resident"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--resident"));
}

#[test]
fn an_output_rank_0_cannot_write_ends_every_rank_before_the_run() {
    let out = ranks(
        2,
        &[
            "--total-log2",
            "12",
            "--sublist",
            "2048",
            "--mode",
            "cpu",
            "--output",
            "/nonexistent/kth.npy",
        ],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("/nonexistent"), "{stderr}");
    assert!(
        text(&out.stdout).is_empty(),
        "nothing ran: {}",
        text(&out.stdout)
    );
}

const HEAP: &str = env!("CARGO_BIN_EXE_heap_bench");

#[test]
fn the_heap_over_ranks_returns_every_key_once_in_order() {
    for n in [2, 4] {
        let mut cmd = mpirun(n, HEAP);
        cmd.args([
            "--keys-log2",
            "14",
            "--batch",
            "256,2048",
            "--mode",
            "cpu,gpu",
            "--pattern",
            "all",
            "--json",
        ]);
        let out = bounded(&mut cmd);
        assert_ok(&out, &format!("heap_bench on {n} ranks"));
        let stdout = text(&out.stdout);
        let rows: Vec<serde_json::Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect();
        // 3 patterns × (2 batches × 2 modes + the sort).
        assert_eq!(rows.len(), 15, "{stdout}");
        for row in &rows {
            assert_eq!(row["verified"], true, "{row}");
            assert_eq!(row["ranks"], n);
            let share: f64 = row["per_rank"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["share"].as_f64().unwrap())
                .sum();
            assert!((share - 1.0).abs() < 1e-9, "{row}");
        }
    }
}

#[test]
fn the_heap_deletes_in_one_call_and_refuses_one_host_flags() {
    // And deletes of every key in one call (the default).
    let mut cmd = mpirun(3, HEAP);
    cmd.args(["--keys-log2", "13", "--mode", "cpu,coop", "--json"]);
    let out = bounded(&mut cmd);
    assert_ok(&out, "heap_bench, one delete call");
    assert!(!text(&out.stdout).contains("\"verified\":false"));
    let mut cmd = mpirun(2, HEAP);
    cmd.args(["--mixed"]);
    let out = bounded(&mut cmd);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr).matches("not under MPI").count(), 1);
}

/// Runs sssp with `args` on one host (cpu) and on `n` ranks, each writing `--output`; the
/// files must be byte-identical and every rank row checked against Dijkstra.
fn sssp_as_one_host(n: usize, args: &[&str], env: &[(&str, &str)]) {
    let tag = format!("sssp-{n}-{}", args.join("_").replace(['/', '.'], ""));
    let (single, multi) = (
        tmp(&format!("one-{tag}.txt")),
        tmp(&format!("ranks-{tag}.txt")),
    );
    // One host's cpu rows are the reference whatever modes the ranks run.
    let mut one_args: Vec<&str> = args.to_vec();
    match one_args.iter().position(|&a| a == "--mode") {
        Some(i) => one_args[i + 1] = "cpu",
        None => one_args.extend(["--mode", "cpu"]),
    }
    one_args.extend(["--output", single.to_str().unwrap()]);
    assert_ok(&one_host_of(SSSP, &one_args, env), "one host");
    let mut rank_args = args.to_vec();
    rank_args.extend(["--output", multi.to_str().unwrap()]);
    let out = ranks_of(SSSP, n, &rank_args, env);
    assert_ok(&out, &format!("sssp on {n} ranks, {args:?}"));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("over {n} MPI ranks")), "{stdout}");
    assert!(stdout.contains("= Dijkstra"), "{stdout}");
    assert!(!stdout.contains("DIFFERENT"), "{stdout}");
    let (a, b) = (
        std::fs::read(&single).unwrap(),
        std::fs::read(&multi).unwrap(),
    );
    assert!(
        a == b,
        "sssp on {n} ranks, {args:?}: distances differ from one host's"
    );
}

#[test]
fn sssp_over_ranks_answers_as_one_host() {
    for n in [2, 3, 4] {
        for mode in ["cpu", "gpu"] {
            // Small blocks: every rank owns many pieces of the graph.
            let kron = ["--scale", "11", "--mode", mode, "--rank-block", "64"];
            sssp_as_one_host(n, &kron, &[]);
        }
    }
    let geo = ["--gen", "geo", "--n", "5000", "--mode", "cpu,gpu"];
    sssp_as_one_host(4, &geo, &[]);
    // One range per rank, the graph's own numbering, several widths, repeated searches.
    let given = [
        "--scale",
        "10",
        "--vertex-order",
        "given",
        "--rank-block",
        "100000",
        "--delta",
        "1,auto",
        "--repeat",
        "3",
        "--mode",
        "cpu",
    ];
    sssp_as_one_host(3, &given, &[]);
    // One or two local rounds per phase: the rest of a bucket waits for the next phase.
    for (mode, rounds) in [("cpu", "1"), ("gpu", "2")] {
        let bounded = [
            "--gen",
            "geo",
            "--n",
            "3000",
            "--mode",
            mode,
            "--rank-rounds",
            rounds,
        ];
        sssp_as_one_host(2, &bounded, &[]);
    }
}

#[test]
fn sssp_over_ranks_on_the_coarse_transport() {
    let args = ["--scale", "10", "--mode", "gpu", "--rank-block", "32"];
    sssp_as_one_host(3, &args, &[("ASYM_SVM", "coarse")]);
}

#[test]
fn sssp_over_more_ranks_than_vertices_with_unreachable_and_zero_weights() {
    // Vertices 1..=3 in a chain with a zero-weight edge, 4 unreachable, 5 isolated: 4 ranks,
    // blocks of 1, so rank 0 owns vertices 1 and 5 and the chain crosses every rank.
    let graph = tmp("tiny.gr");
    std::fs::write(&graph, "p sp 5 4\na 1 2 0\na 2 3 7\na 3 2 1\na 4 1 2\n").unwrap();
    let path = graph.to_str().unwrap();
    for source in ["1", "4", "5"] {
        let args = [
            "--input",
            path,
            "--source",
            source,
            "--rank-block",
            "1",
            "--mode",
            "cpu,gpu",
        ];
        sssp_as_one_host(4, &args, &[]);
    }
}

#[test]
fn sssp_over_ranks_tells_a_bad_flag_or_file_once() {
    let out = ranks_of(SSSP, 3, &["--scale", "8", "--mode", "coop"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.matches("cpu or gpu under MPI").count(),
        1,
        "{stderr}"
    );
    let bad = tmp("bad.gr");
    std::fs::write(&bad, "p sp 3 1\na 1 9 4\n").unwrap();
    let out = ranks_of(SSSP, 2, &["--input", bad.to_str().unwrap()], &[]);
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("sssp:").count(), 1, "{stderr}");
}

#[test]
fn sssp_json_rows_carry_the_ranks_and_their_work() {
    let out = ranks_of(SSSP, 2, &["--scale", "10", "--mode", "cpu", "--json"], &[]);
    assert_ok(&out, "sssp --json on 2 ranks");
    let rows: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["ranks"], 2);
    assert_eq!(row["verified"], true);
    let per_rank = row["per_rank"].as_array().unwrap();
    assert_eq!(per_rank.len(), 2);
    let edges: u64 = per_rank.iter().map(|p| p["edges"].as_u64().unwrap()).sum();
    assert_eq!(Some(edges), row["edges"].as_u64());
    let visited: u64 = per_rank
        .iter()
        .map(|p| p["visited"].as_u64().unwrap())
        .sum();
    assert_eq!(Some(visited), row["visited"].as_u64());
}
