//! Inputs as a user gives them by mistake or on purpose: a stream of zeros or random bytes
//! where a text file belongs stops at once with the line; standard input (`-`) is read; a
//! size beyond `ulimit -v` or `ASYM_MEMORY_LIMIT_MB` is refused before anything is allocated.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn program(name: &str) -> &'static str {
    match name {
        "sssp" => env!("CARGO_BIN_EXE_sssp"),
        "knapsack" => env!("CARGO_BIN_EXE_knapsack"),
        "list_ops" => env!("CARGO_BIN_EXE_list_ops"),
        "rbtree" => env!("CARGO_BIN_EXE_rbtree"),
        "batch_kselect" => env!("CARGO_BIN_EXE_batch_kselect"),
        other => panic!("no program {other}"),
    }
}

/// Runs `name` with `args` through `bash -c` (for `ulimit`), `stdin` fed in: (exit code,
/// stderr, seconds).
fn run(name: &str, args: &str, env: &[(&str, &str)], stdin: &[u8]) -> (Option<i32>, String, f64) {
    let started = Instant::now();
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("{} {args}", program(name)))
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), err, started.elapsed().as_secs_f64())
}

#[test]
fn binary_streams_where_text_belongs_stop_at_once_with_the_line() {
    let cases = [
        ("sssp", "--input /dev/zero.gr"),
        ("knapsack", "--input /dev/zero"),
        ("list_ops", "--nodes /dev/zero --ops /dev/zero"),
        ("rbtree", "--initial /dev/zero"),
        ("knapsack", "--input /dev/urandom"),
    ];
    let dir = std::env::temp_dir().join(format!("asym-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A graph file that is a link to /dev/zero: the name says .gr, the bytes say otherwise.
    let zero_gr = dir.join("zero.gr");
    let _ = std::fs::remove_file(&zero_gr);
    std::os::unix::fs::symlink("/dev/zero", &zero_gr).unwrap();
    for (name, args) in cases {
        let args = args.replace("/dev/zero.gr", zero_gr.to_str().unwrap());
        let (code, err, secs) = run(name, &args, &[], b"");
        assert_eq!(code, Some(2), "{name} {args}: {err}");
        assert!(
            err.contains("not a text file") || err.contains("longer than"),
            "{name} {args}: {err}"
        );
        assert!(secs < 30.0, "{name} {args} took {secs:.1} s");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn standard_input_is_read_where_a_file_is_named_dash() {
    let (code, err, _) = run(
        "knapsack",
        "--input - --mode seq",
        &[],
        b"3 10\n5 4\n4 3\n3 5\n",
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, err, _) = run("knapsack", "--input - --mode seq", &[], b"3 10\n5 4\n");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("standard input"), "{err}");
}

#[test]
fn sizes_beyond_the_process_limits_are_refused_at_once() {
    // `ulimit -v 3000000`: a 3 GiB address space, far below what these sizes need.
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 3] = [
        (
            "list_ops",
            "ulimit -v 3000000; PROGRAM --initial 300000000",
            &[],
            "ulimit -v",
        ),
        (
            "sssp",
            "ulimit -v 3000000; PROGRAM --scale 24 --mode cpu",
            &[],
            "ulimit -v",
        ),
        (
            "sssp",
            "PROGRAM --scale 20 --mode cpu",
            &[("ASYM_MEMORY_LIMIT_MB", "64")],
            "ASYM_MEMORY_LIMIT_MB",
        ),
    ];
    for (name, line, env, bound) in cases {
        let started = Instant::now();
        let out = Command::new("bash")
            .arg("-c")
            .arg(line.replace("PROGRAM", program(name)))
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {err}");
        assert!(
            err.contains("out of host memory") && err.contains(bound),
            "{line}: {err}"
        );
        let secs = started.elapsed();
        assert!(secs < Duration::from_secs(20), "{line}: {secs:?}");
    }
}

/// Flag values a sweep of every program's flags found handled badly (a panic, exit 1 for
/// what the user gave, a wrapping size): each is now a usage error naming the flag.
#[test]
fn swept_flag_values_are_usage_errors() {
    let cases: [(&str, &[&str], &str); 3] = [
        (
            env!("CARGO_BIN_EXE_knapsack"),
            &["--time-limit", "1e20"],
            "--time-limit",
        ),
        (
            env!("CARGO_BIN_EXE_list_ops"),
            &["--mode", "gpu", "--spare-nodes", "4294967297"],
            "--spare-nodes",
        ),
        (
            env!("CARGO_BIN_EXE_devices"),
            &["--upload-mib", "99999999999"],
            "--upload-mib",
        ),
    ];
    for (program, args, flag) in cases {
        let out = Command::new(program).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(flag) && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}
