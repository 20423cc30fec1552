//! Starting a job from a program or a test: the `mpirun` command line asym uses.

use std::process::Command;

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
