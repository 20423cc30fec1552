//! Starting a job from a program or a test: the `mpirun` command line asym uses.

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// An `mpirun` command line that owns the folder its job keeps its scratch files in.
///
/// OpenMPI 4 creates one `ompi.<host>.<uid>` directory under its temporary base for every
/// job of a user, and two jobs started at the same moment race on that `mkdir`: the loser
/// ends in `orte_init` with "File exists" before any rank starts. Each `Mpirun` therefore
/// gives its job a base of its own (`orte_tmpdir_base`) and removes it when dropped. It
/// dereferences to the [`Command`], so arguments and variables are added as to any command.
pub struct Mpirun {
    command: Command,
    job_dir: PathBuf,
}

impl Deref for Mpirun {
    type Target = Command;

    fn deref(&self) -> &Command {
        &self.command
    }
}

impl DerefMut for Mpirun {
    fn deref_mut(&mut self) -> &mut Command {
        &mut self.command
    }
}

impl Drop for Mpirun {
    fn drop(&mut self) {
        // OpenMPI removes its own files when the job ends; what is left is at most an empty
        // directory, or the files of a job that was killed.
        let _ = std::fs::remove_dir_all(&self.job_dir);
    }
}

/// `mpirun -np ranks program`, with what a small or shared machine needs: more ranks than
/// cores allowed (`--oversubscribe`), no binding by the launcher (each rank pins its latency
/// threads to its own share, [`crate::Cluster::cpus`]), shared memory between the ranks of a
/// host, a scratch folder of the job's own (see [`Mpirun`]), and as root the two
/// variables OpenMPI asks for before it runs there.
pub fn mpirun(ranks: usize, program: impl AsRef<std::ffi::OsStr>) -> Mpirun {
    static LAUNCHES: AtomicUsize = AtomicUsize::new(0);
    let job_dir = std::env::temp_dir().join(format!(
        "asym-mpirun-{}-{}",
        std::process::id(),
        LAUNCHES.fetch_add(1, Ordering::Relaxed)
    ));
    // A base that cannot be created leaves OpenMPI to report it by name when the job starts.
    let _ = std::fs::create_dir_all(&job_dir);
    let mut command = Command::new("mpirun");
    command
        .args(["--oversubscribe", "--bind-to", "none", "-np"])
        .arg(ranks.to_string())
        .arg(program);
    // OpenMPI refuses root unless both are set (the same as --allow-run-as-root).
    command
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Shared memory and self only: no probing of network interfaces on one host.
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_orte_tmpdir_base", &job_dir);
    Mpirun { command, job_dir }
}

/// Runs `cmd` with its output captured, killing it past `bound`: `None` when it had to be
/// killed (a hung job), else its output.
pub fn run_bounded(cmd: &mut Command, bound: Duration) -> std::io::Result<Option<Output>> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let start = Instant::now();
    while child.try_wait()?.is_none() {
        if start.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().map(Some)
}
