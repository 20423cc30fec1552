//! What the programs share when they run as ranks of an MPI job (`mpirun -np N`, a build
//! with `--features mpi`): refusing a launch a build without MPI cannot join, and ending a
//! run so that one rank tells what happened and every rank exits with the same code.

use std::process::ExitCode;

use asym_runtime::Error;

/// Whether `program` runs as one of several ranks: `Ok(true)` when an MPI launcher started it
/// with more than one rank and it was built with MPI; `Ok(false)` for a run on one host;
/// the exit code of a build without MPI launched as a rank, which refuses (it would run the
/// whole job once per rank).
pub fn as_ranks(program: &str) -> Result<bool, ExitCode> {
    match asym_runtime::env::launched_ranks().filter(|&n| n > 1) {
        None => Ok(false),
        Some(_) if cfg!(feature = "mpi") => Ok(true),
        Some(n) => Err(crate::cli::finish(program, "", Err(unsupported(n)))),
    }
}

/// The error of a program built without MPI and launched as one of `ranks` ranks: each
/// rank would otherwise run the whole job on its own.
pub fn unsupported(ranks: usize) -> Error {
    Error::Unsupported {
        device: "this build".into(),
        what: format!("run as one of {ranks} MPI ranks"),
        lacks: "MPI: build with `cargo build --release --features mpi` (scripts/setup.sh \
                installs OpenMPI)"
            .into(),
    }
}

#[cfg(feature = "mpi")]
pub use with_mpi::*;

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::process::ExitCode;

    use asym_mpi::Cluster;
    use asym_runtime::Result;

    use crate::cli::{EXIT_MISMATCH, EXIT_USAGE};

    /// [`crate::cli::finish`] for a rank: `outcome` is the same on every rank where the run
    /// agreed on it. Rank 0 prints the mismatch and every error that ended the run (another
    /// rank's names it); a rank prints its own error only where it never reached the others.
    pub fn finish(
        cluster: &Cluster,
        example: &str,
        mismatch: &str,
        outcome: Result<bool>,
    ) -> ExitCode {
        match outcome {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => {
                if cluster.is_root() {
                    eprintln!("{example}: {mismatch}");
                }
                ExitCode::from(EXIT_MISMATCH)
            }
            Err(e) => {
                if let Some(line) = cluster.error_line(example, &e) {
                    eprintln!("{line}");
                }
                if e.is_usage_error() {
                    ExitCode::from(EXIT_USAGE)
                } else {
                    ExitCode::FAILURE
                }
            }
        }
    }

    /// Starts MPI for `example`, or prints why not and gives the exit code.
    pub fn init(example: &str) -> std::result::Result<Cluster, ExitCode> {
        Cluster::init().map_err(|e| {
            eprintln!("{example}: {e}");
            ExitCode::from(EXIT_USAGE)
        })
    }
}
