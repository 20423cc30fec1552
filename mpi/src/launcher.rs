//! Starting a job from a program or a test: the `mpirun` command line asym uses.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `mpirun -np ranks program`, with what a small or shared machine needs: more ranks than
/// cores allowed (`--oversubscribe`), no binding by the launcher (each rank pins its latency
/// threads to its own share, [`crate::Cluster::cpus`]), shared memory between the ranks of a
/// host, and as root the two variables OpenMPI asks for before it runs there.
pub fn mpirun(ranks: usize, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "--bind-to", "none", "-np"])
        .arg(ranks.to_string())
        .arg(program);
    // OpenMPI refuses root unless both are set (the same as --allow-run-as-root).
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Shared memory and self only: no probing of network interfaces on one host.
        .env("OMPI_MCA_btl", "self,vader");
    cmd
}

/// Runs `cmd` with its output captured, killing it past `bound`: `None` when it had to be
/// killed (a hung job), else its output.
pub fn run_bounded(mut cmd: Command, bound: Duration) -> std::io::Result<Option<Output>> {
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
