//! The environment variables asym reads, parsed as strictly as flags: a value that does not
//! parse is an error naming the variable and what it accepts, never silently ignored. An empty
//! value counts as unset.

use std::str::FromStr;

use crate::error::{Error, Result};

/// The value of `name` parsed as `T`, `None` when unset or empty; `accepts` says what a valid
/// value looks like, for the error.
pub fn parsed<T: FromStr>(name: &str, accepts: &str) -> Result<Option<T>> {
    match std::env::var(name) {
        Ok(s) if !s.trim().is_empty() => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| Error::flag(name, &s, format!("expected {accepts}"))),
        Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(s)) => Err(Error::flag(
            name,
            s.to_string_lossy(),
            format!("not valid UTF-8 (expected {accepts})"),
        )),
    }
}

/// The value of `name` read as one of `T`'s names, `None` when unset or empty.
pub fn named<T: crate::Named>(name: &str) -> Result<Option<T>> {
    match parsed::<String>(name, "a name")? {
        None => Ok(None),
        Some(s) => T::from_name(&s)
            .map(Some)
            .ok_or_else(|| Error::flag(name, &s, format!("expected {}", T::names()))),
    }
}

/// An on/off switch: unset, empty or `0` is off, `1` is on, anything else is an error.
pub fn switch(name: &str) -> Result<bool> {
    match parsed::<String>(name, "0 or 1")?.as_deref() {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(Error::flag(name, other, "expected 0 or 1")),
    }
}

/// The launchers' variables that give an MPI job's rank count: OpenMPI's, then PMI's (MPICH,
/// Slurm).
const RANKS_VARS: [&str; 2] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"];

/// The rank count an MPI launcher (mpirun, srun) gave this process, read from its
/// environment without starting MPI; `None` when no launcher started it. Programs built
/// without MPI use it to refuse a launch they cannot join.
pub fn launched_ranks() -> Option<usize> {
    RANKS_VARS
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Variables a launcher sets to this process's rank, in the order they are read.
const RANK_VARS: [&str; 2] = ["OMPI_COMM_WORLD_RANK", "PMI_RANK"];

/// This process's rank in the job an MPI launcher started, read from its environment
/// without starting MPI; `None` when no launcher started it. A program whose arguments are
/// wrong tells it once, from rank 0, before MPI starts.
pub fn launched_rank() -> Option<usize> {
    RANK_VARS
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_are_errors_naming_the_variable() {
        // Variables of this test only: no other test reads them.
        std::env::set_var("ASYM_TEST_ENV_NUMBER", "12x");
        let e = parsed::<u64>("ASYM_TEST_ENV_NUMBER", "a number").unwrap_err();
        assert!(e.to_string().contains("ASYM_TEST_ENV_NUMBER"), "{e}");
        std::env::set_var("ASYM_TEST_ENV_NUMBER", " 12 ");
        assert_eq!(
            parsed::<u64>("ASYM_TEST_ENV_NUMBER", "a number").unwrap(),
            Some(12)
        );
        std::env::set_var("ASYM_TEST_ENV_SWITCH", "yes");
        assert!(switch("ASYM_TEST_ENV_SWITCH").is_err());
        std::env::set_var("ASYM_TEST_ENV_SWITCH", "1");
        assert!(switch("ASYM_TEST_ENV_SWITCH").unwrap());
        std::env::set_var("ASYM_TEST_ENV_SWITCH", "");
        assert!(!switch("ASYM_TEST_ENV_SWITCH").unwrap());
        assert_eq!(
            parsed::<u64>("ASYM_TEST_ENV_UNSET", "a number").unwrap(),
            None
        );
    }
}
