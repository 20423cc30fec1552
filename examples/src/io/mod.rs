//! Files people give and get: `.npy` arrays (k-selection), graphs (DIMACS `.gr`, Matrix
//! Market `.mtx`), knapsack instances, the list seed's workloads and red-black tree workloads in their text
//! formats,
//! and output written whole or not at all. Every reader names the file and line of an error
//! and checks sizes against the file and the machine before allocating.

pub mod graph_files;
pub mod input;
mod knapsack_text;
mod list_files;
pub mod npy;
mod npy_header;
pub mod output;
pub mod tree_files;
