//! asym past one host: MPI ranks (rsmpi over OpenMPI) as members of the same engine.
//!
//! A rank is one more member with everything behind it: its own devices and latency threads
//! run its share, and collectives join the shares where one host's device set uses shared
//! memory. This crate is the only one that needs MPI; the programs take it with their `mpi`
//! cargo feature.
//!
//! | module | what |
//! | --- | --- |
//! | [`cluster`] | the job's ranks, bounded collectives, agreement on failures |
//! | [`heap`] | the heap's key ranges across ranks, and a sample sort across ranks |
//! | [`kselect`] | distributed batch k-selection, rows owned by ranks or spread across them |
//! | [`launcher`] | the `mpirun` command line of the tests and scripts |
//!
//! Run under a launcher: `mpirun -np 4 prog` (add `--oversubscribe` for more ranks than
//! cores, `--allow-run-as-root` as root). `mpi_selfcheck` checks every distributed path
//! against one host's answers on the MPI installation at hand.

#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

pub mod cluster;
pub mod heap;
pub mod kselect;
pub mod launcher;

pub use cluster::{Cluster, TIMEOUT_ENV};
pub use heap::{sample_sort, DistributedHeap, RankKey};
pub use kselect::{
    select_owned, select_owned_with, select_spread, select_spread_part, Answers, Layout,
    RankReport, Selection, SpreadPart,
};
