//! What every program shares on its command line: reading the library's named values
//! ([`word`], [`words`]: `--mode cpu,gpu`, `all`), choosing from a program's own words
//! ([`choose`], [`one_of`]), lists of numbers, tables, and how a run ends (exit codes and the
//! last line on stderr).
//!
//! Exit codes: 0 done (every checked answer equal to the reference); 1 the run failed (the
//! device, a timeout, memory running out mid-run); 2 a usage error, what the user gave (a bad
//! flag, a malformed or missing file, an unknown device or one without a capability asked
//! for, a size the machine or a structure's capacity cannot hold: nothing was run, or the run
//! stopped before writing anything); 3 an answer differs from the reference. Every program
//! ends through [`finish`], which applies this rule ([`is_usage_error`]).

#![allow(dead_code)]

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use asym_runtime::{Error, Named, Result};

/// The exit code of a usage error.
pub const EXIT_USAGE: u8 = 2;
/// The exit code of a run whose answers differ from the reference.
pub const EXIT_MISMATCH: u8 = 3;

/// The entries of `value` (comma-separated; `all` means every one of `accepted`), in the
/// order of `accepted`, each at most once. An unknown entry is an error naming `flag`.
pub fn choose(flag: &str, value: &str, accepted: &[&'static str]) -> Result<Vec<&'static str>> {
    let chosen = chosen(flag, value, accepted, flag.trim_start_matches('-'))?;
    Ok(accepted
        .iter()
        .zip(chosen)
        .filter_map(|(a, c)| c.then_some(*a))
        .collect())
}

/// The values of `T` that `value` names (comma-separated; `all` means every one), in the
/// order of [`Named::ALL`], each at most once: how every program reads a list of modes,
/// strategies or policies. An unknown name is an error naming `flag` and the names.
pub fn words<T: Named>(flag: &str, value: &str) -> Result<Vec<T>> {
    let names: Vec<&str> = T::ALL.iter().map(|v| v.name()).collect();
    let chosen = chosen(flag, value, &names, T::KIND)?;
    Ok(T::ALL
        .iter()
        .zip(chosen)
        .filter_map(|(&v, c)| c.then_some(v))
        .collect())
}

/// Which of `accepted` the comma-separated `value` names (`all`: every one); an unknown entry
/// is an error naming `flag`, what an entry is (`kind`) and the accepted ones.
fn chosen(flag: &str, value: &str, accepted: &[&str], kind: &str) -> Result<Vec<bool>> {
    let mut chosen = vec![false; accepted.len()];
    for entry in value.split(',').map(str::trim) {
        if entry == "all" {
            chosen.iter_mut().for_each(|c| *c = true);
            continue;
        }
        let Some(i) = accepted.iter().position(|a| *a == entry) else {
            let expected = format!(
                "unknown {kind}; expected {} or all (comma-separated)",
                accepted.join(", ")
            );
            return Err(Error::flag(flag, entry, expected));
        };
        chosen[i] = true;
    }
    Ok(chosen)
}

/// The value of `T` that `value` names; anything else is an error naming `flag` and the
/// names `T` has.
pub fn word<T: Named>(flag: &str, value: &str) -> Result<T> {
    T::from_name(value).ok_or_else(|| {
        Error::flag(
            flag,
            value.trim(),
            format!("unknown {}; expected {}", T::KIND, T::names()),
        )
    })
}

/// [`word`] as a clap value parser (`#[arg(value_parser = cli::parse_word::<Expansion>)]`):
/// clap names the flag in its error and exits with the usage code.
pub fn parse_word<T: Named>(value: &str) -> std::result::Result<T, String> {
    T::from_name(value).ok_or_else(|| format!("unknown {}; expected {}", T::KIND, T::names()))
}

/// The one of `accepted` that `value` names; anything else is an error naming `flag` and
/// the accepted values.
pub fn one_of(flag: &str, value: &str, accepted: &[&'static str]) -> Result<&'static str> {
    let value = value.trim();
    accepted
        .iter()
        .copied()
        .find(|a| *a == value)
        .ok_or_else(|| {
            let (last, rest) = accepted.split_last().unwrap_or((&"", &[]));
            let names = if rest.is_empty() {
                last.to_string()
            } else {
                format!("{} or {last}", rest.join(", "))
            };
            Error::flag(flag, value, format!("expected {names}"))
        })
}

/// A comma-separated list of numbers given to `flag`.
pub fn numbers(flag: &str, value: &str) -> Result<Vec<usize>> {
    value
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| Error::flag(flag, v, "expected a number (or a comma list)"))
        })
        .collect()
}

/// A clap parser for a count flag that accepts `min..=max` (clap names the flag and the
/// range in its error, exit code 2).
pub fn count(min: u64, max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(min..=max)
}

/// Whether the report (tables, JSON rows) goes to standard error: set once an output file is
/// standard output, so that the output stays clean.
static REPORT_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// The program's arguments, or the end of the program: `--help` and `--version` print, a bad
/// argument prints its error and exits 2 (clap's own handling), except that on ranks other
/// than 0 of an MPI job nothing is printed, so the job tells a bad argument once.
pub fn parse_args<T: clap::Parser>() -> T {
    match T::try_parse() {
        Ok(args) => args,
        Err(e) if asym_runtime::env::launched_rank().is_some_and(|r| r > 0) => {
            std::process::exit(e.exit_code())
        }
        Err(e) => e.exit(),
    }
}

/// Sends the program's report to standard error from now on (see [`report`]).
pub fn report_to_stderr() {
    REPORT_TO_STDERR.store(true, Relaxed);
}

/// Prints one line of the program's report: on standard output, or on standard error once
/// [`report_to_stderr`] was called. Use through [`report!`](crate::report).
pub fn report(line: std::fmt::Arguments) {
    if REPORT_TO_STDERR.load(Relaxed) {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

/// `println!` for a program's report (see [`cli::report`](crate::cli::report)).
#[macro_export]
macro_rules! report {
    ($($arg:tt)*) => {
        $crate::cli::report(format_args!($($arg)*))
    };
}

/// A table for people: columns sized to their widest cell, numbers right-aligned (a header
/// given as `">name"`), text left-aligned; the last column is left free.
pub struct Table {
    headers: Vec<&'static str>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers (`">ms"` right-aligns the column).
    pub fn new(headers: &[&'static str]) -> Self {
        Table {
            headers: headers.iter().map(|h| h.trim_start_matches('>')).collect(),
            right: headers.iter().map(|h| h.starts_with('>')).collect(),
            rows: Vec::new(),
        }
    }

    /// One row, a cell per column.
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len(), "a cell per column");
        self.rows.push(cells);
    }

    /// Prints the header and the rows on stdout.
    pub fn print(&self) {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain([self.headers[c].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| {
            let last = cells.len() - 1;
            let text: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(c, cell)| match (c == last, self.right[c]) {
                    (true, _) => cell.to_string(),
                    (false, true) => format!("{cell:>w$}", w = widths[c]),
                    (false, false) => format!("{cell:<w$}", w = widths[c]),
                })
                .collect();
            report(format_args!("{}", text.join("  ").trim_end()));
        };
        line(self.headers.clone());
        for r in &self.rows {
            line(r.iter().map(String::as_str).collect());
        }
    }
}

/// Whether `e` comes from what the user gave (flags, files, names, sizes) rather than from
/// the run itself: [`Error::is_usage_error`].
pub fn is_usage_error(e: &Error) -> bool {
    e.is_usage_error()
}

/// Ends an example: `Ok(true)` is success, `Ok(false)` prints `mismatch` (what differed
/// from the reference), an error prints itself; each with the exit code of the module docs.
pub fn finish(example: &str, mismatch: &str, outcome: Result<bool>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("{example}: {mismatch}");
            ExitCode::from(EXIT_MISMATCH)
        }
        Err(e) => {
            eprintln!("{example}: {e}");
            if is_usage_error(&e) {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
