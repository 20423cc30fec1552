//! The distributed paths under a real launcher: `mpi_selfcheck` (every case against one
//! host's answers) on 1, 2 and 4 ranks, both SVM transports, and the failure drills (a rank
//! with bad input, a rank that stops answering, a rank that dies): every job ends, in
//! bounded time, with an error that names the rank.

use std::process::Output;
use std::time::{Duration, Instant};

use asym_mpi::launcher::{mpirun, run_bounded};

const SELFCHECK: &str = env!("CARGO_BIN_EXE_mpi_selfcheck");
/// No job here takes more than a few seconds; past this one is hung.
const BOUND: Duration = Duration::from_secs(120);

/// Runs `mpi_selfcheck args` on `ranks` ranks with `env`, killing it past [`BOUND`].
fn job(ranks: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = mpirun(ranks, SELFCHECK);
    cmd.args(args).envs(env.iter().copied());
    run_bounded(&mut cmd, BOUND)
        .expect("mpirun runs (scripts/setup.sh installs OpenMPI)")
        .unwrap_or_else(|| panic!("mpirun -np {ranks} mpi_selfcheck {args:?} hung past {BOUND:?}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn every_case_agrees(ranks: usize, env: &[(&str, &str)]) {
    let out = job(ranks, &[], env);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{ranks} ranks: {}\n{stdout}\n{}",
        out.status,
        text(&out.stderr)
    );
    let cases = stdout.lines().filter(|l| l.ends_with(" ok")).count();
    assert!(cases >= 38, "{ranks} ranks ran {cases} cases:\n{stdout}");
    assert!(!stdout.contains("DIFFERS"), "{stdout}");
}

#[test]
fn every_case_agrees_with_one_host_on_one_rank() {
    every_case_agrees(1, &[]);
}

#[test]
fn every_case_agrees_with_one_host_on_two_ranks() {
    every_case_agrees(2, &[]);
}

#[test]
fn every_case_agrees_with_one_host_on_four_ranks() {
    every_case_agrees(4, &[]);
}

#[test]
fn devices_on_the_coarse_transport_agree_on_four_ranks() {
    for case in [
        "owned-gpu",
        "owned-coop",
        "spread-gpu",
        "spread-mixed",
        "heap-device",
    ] {
        let out = job(4, &["--case", case], &[("ASYM_SVM", "coarse")]);
        assert!(out.status.success(), "{case}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains(" ok"), "{}", text(&out.stdout));
    }
}

#[test]
fn a_rank_with_bad_input_ends_every_rank_naming_it() {
    let out = job(4, &["--fail-rank", "2", "--case", "spread-k-1"], &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("mpi_selfcheck: rank 2: invalid argument"),
        "{stderr}"
    );
    // Rank 0 tells it once; the failed rank leaves the telling to it.
    assert_eq!(stderr.matches("cannot be cut").count(), 1, "{stderr}");
}

#[test]
fn a_rank_that_stops_answering_ends_the_job_after_the_bound() {
    let start = Instant::now();
    let out = job(
        4,
        &["--stall-rank", "3", "--case", "spread-k-1"],
        &[("ASYM_MPI_TIMEOUT_S", "2")],
    );
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("timed out after") && stderr.contains("ASYM_MPI_TIMEOUT_S"),
        "{stderr}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_rank_that_dies_ends_the_job() {
    let out = job(2, &["--die-rank", "1", "--case", "spread-k-1"], &[]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("rank 1: dying on purpose"), "{stderr}");
}

#[test]
fn bad_flags_exit_2_before_mpi_starts() {
    let out = std::process::Command::new(SELFCHECK)
        .arg("--case")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--case"),
        "{}",
        text(&out.stderr)
    );
}
