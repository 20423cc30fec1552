//! The lock-free list seed's experiment: a positional list of unique values and a batch of
//! operations (insert a value right after the node holding a target, remove the node holding
//! a value) run all at once, by pinned CPU threads, by the device (one work-item per
//! operation) or by both, against a single-threaded list; every run checked.
//!
//! ```text
//! cargo run --release --bin list_ops                                # 10,000 nodes, 100,000 ops
//! cargo run --release --bin list_ops -- --initial 40000 --ops-count 100000 --json
//! cargo run --release --bin list_ops -- --nodes listnodes.txt --ops operations.txt --output final.txt
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use asym_apps::io::output;
use asym_apps::workload::{SequentialList, Workload};
use asym_runtime::{host_memory, Error, LatencyPool, Mode, Result, Runtime};
use asym_structures::ArenaStats;
use asym_structures::{BatchReport, ListOptions, LockFreeList, OpStatus, LIST_WALK_WINDOW_MAX};
use clap::Parser;
use serde_json::json;

use asym_apps::cli;
use asym_apps::io::input::name_of;
use asym_apps::progress;
use progress::Progress;

#[derive(Parser, Debug)]
#[command(
    about = "The lock-free list seed's experiment: concurrent positional operations on a \
                   list in SVM, by CPU threads, the device, or both"
)]
struct Args {
    /// The initial list in the seed's format: a count, then the values from the head.
    #[arg(long, requires = "ops")]
    nodes: Option<PathBuf>,
    /// The operations in the seed's format: a count, then `1 <target> <new>` (insert after)
    /// or `0 <value>` (remove) per line.
    #[arg(long, requires = "nodes")]
    ops: Option<PathBuf>,
    /// Generated workload: nodes in the initial list.
    #[arg(long, default_value_t = 10_000)]
    initial: usize,
    /// Generated workload: operations (half removes of initial values, half inserts).
    #[arg(long, default_value_t = 100_000)]
    ops_count: usize,
    /// Generated workload: random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Modes: seq (the single-threaded list), cpu (pinned threads), gpu (one launch), coop
    /// (a launch and the threads at once on fine SVM, one after the other on coarse),
    /// comma-separated, or all.
    #[arg(long, default_value = "all")]
    mode: String,
    /// coop: the device's share of the operations (0 to 1).
    #[arg(long, default_value_t = 0.5)]
    device_share: f64,
    /// gpu and coop: work-items per work-group of the launch, which share one walk of the
    /// list (default: 512 on a GPU, 64 on a CPU device, or the device's largest if smaller).
    #[arg(long, value_parser = cli::count(1, 1 << 16))]
    work_group: Option<usize>,
    /// gpu and coop: nodes the shared walk reads between two barriers of its work-group
    /// (default 32).
    #[arg(long, value_parser = cli::count(1, LIST_WALK_WINDOW_MAX as u64))]
    walk_window: Option<usize>,
    /// Latency threads (default: every CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// OpenCL device: part of its platform or device name.
    #[arg(long)]
    device: Option<String>,
    /// Extra nodes the arena holds beyond the initial list and the inserts.
    #[arg(long, default_value_t = 1024)]
    spare_nodes: usize,
    /// Runs of each mode (the table shows the fastest; --json prints each).
    #[arg(long, default_value_t = 1, value_parser = cli::count(1, 1000))]
    repeat: usize,
    /// Write the final list (one value per line from the head): the first mode's (concurrent
    /// modes may reach another, as right, which stderr names). `-` writes to stdout.
    #[arg(long)]
    output: Option<PathBuf>,
    /// One JSON object per run instead of a table.
    #[arg(long)]
    json: bool,
}

struct Run {
    mode: String,
    ms: f64,
    device_ms: Option<f64>,
    cleanup_ms: f64,
    report: Option<BatchReport>,
    done: usize,
    failed: usize,
    arena: Option<ArenaStats>,
    final_len: usize,
    verified: std::result::Result<(), String>,
}

fn read(path: &Path) -> Result<String> {
    asym_apps::io::input::read_text(path)
}

fn write_list(path: &Path, values: &[i32]) -> Result<()> {
    let mut text = String::with_capacity(values.len() * 8);
    for v in values {
        text.push_str(&v.to_string());
        text.push('\n');
    }
    output::write_whole(path, text.as_bytes())
}

/// The seed's files, or a generated workload checked against the machine first.
fn load_workload(args: &Args) -> Result<Workload> {
    Ok(match (&args.nodes, &args.ops) {
        (Some(n), Some(o)) => Workload::parse(&read(n)?, &name_of(n), &read(o)?, &name_of(o))?,
        _ => {
            // The workload, the sequential list, the arena's nodes and each mode's final list:
            // about 64 bytes per node and operation at the peak.
            let items = (args.initial as u64).saturating_add(args.ops_count as u64);
            host_memory::ensure_available(
                items.saturating_mul(64),
                &format!(
                    "list_ops --initial {} --ops-count {} (about 64 bytes each)",
                    args.initial, args.ops_count
                ),
            )?;
            Workload::generate(args.initial, args.ops_count, args.seed)?
        }
    })
}

/// One run of the single-threaded list, and its final values.
fn seq_run(workload: &Workload) -> (Run, Vec<i32>) {
    let mut list = SequentialList::new(&workload.initial);
    let t = Instant::now();
    let statuses: Vec<OpStatus> = workload.ops.iter().map(|&op| list.apply(op)).collect();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let fin = list.values();
    let count = |s| statuses.iter().filter(|&&x| x == s).count();
    let run = Run {
        mode: "seq".to_string(),
        ms,
        device_ms: None,
        cleanup_ms: 0.0,
        report: None,
        done: count(OpStatus::Done),
        failed: count(OpStatus::Failed),
        arena: None,
        final_len: fin.len(),
        verified: workload.verify(&statuses, &fin),
    };
    (run, fin)
}

/// One run of the lock-free list in `mode` (cpu, gpu or coop), and its final values.
fn list_run(
    args: &Args,
    rt: &Runtime,
    pool: Option<&LatencyPool>,
    workload: &Workload,
    mode: &str,
) -> Result<(Run, Vec<i32>)> {
    let spare = workload.ops.len().saturating_add(args.spare_nodes);
    let list_mode = match mode {
        "cpu" => Mode::CpuOnly,
        "gpu" => Mode::GpuOnly,
        _ => Mode::Cooperative,
    };
    let options = ListOptions {
        device_share: args.device_share,
        work_group: args.work_group,
        walk_window: args.walk_window,
    };
    // An arena the device cannot hold is what the sizes asked for (exit 2), not a failure.
    let mut list =
        LockFreeList::positional_from(rt, &workload.initial, spare).map_err(|e| match e {
            e @ (Error::OutOfMemory(_) | Error::CapacityExceeded { .. }) => Error::flag(
                "--spare-nodes",
                args.spare_nodes,
                format!("the list's arena does not fit the device ({e})"),
            ),
            e => e,
        })?;
    // Set-up, as the arena: the launch's buffers are allocated before the clock
    // starts (copying the operations in and the results out is timed).
    list.reserve_batch(workload.ops.len())?;
    let report = list.apply(&workload.ops, list_mode, options, pool)?;
    if report.out_of_memory > 0 {
        let stats = list.arena_stats()?;
        return Err(Error::OutOfMemory(format!(
            "{mode}: {} operations found no node to allocate (raise --spare-nodes); \
             arena: {} bytes, {} in use, high-water {}, {} failed mallocs",
            report.out_of_memory,
            stats.capacity_bytes,
            stats.bytes_in_use,
            stats.high_water_bytes,
            stats.failed_mallocs
        )));
    }
    let t = Instant::now();
    list.cleanup()?;
    let cleanup_ms = t.elapsed().as_secs_f64() * 1e3;
    let fin = list.values()?;
    let arena = list.arena_stats()?;
    let run = Run {
        mode: mode.to_string(),
        ms: report.elapsed.as_secs_f64() * 1e3,
        device_ms: report.device_time.map(|d| d.as_secs_f64() * 1e3),
        cleanup_ms,
        done: report.done,
        failed: report.failed,
        verified: workload.verify(&report.statuses, &fin),
        report: Some(report),
        arena: Some(arena),
        final_len: fin.len(),
    };
    Ok((run, fin))
}

/// Where the runs ran, for the report.
struct Setting {
    device: Option<String>,
    transport: Option<String>,
    threads: Option<usize>,
}

fn print_json(workload: &Workload, runs: &[Run], seq_ms: f64, at: &Setting) {
    let (device_name, transport) = (&at.device, &at.transport);
    for r in runs {
        asym_apps::report!(
            "{}",
            json!({
                "mode": r.mode, "initial": workload.initial.len(), "ops": workload.ops.len(),
                "ms": r.ms, "device_ms": r.device_ms, "cleanup_ms": r.cleanup_ms,
                "ops_per_s": workload.ops.len() as f64 / (r.ms / 1e3),
                "succeeded": r.done, "failed": r.failed,
                "cas_retries": r.report.as_ref().map(|b| b.cas_retries),
                "reclaimed": r.report.as_ref().map(|b| b.reclaimed),
                "device_ops": r.report.as_ref().map(|b| b.device_ops),
                "work_group": r.report.as_ref().and_then(|b| b.work_group),
                "walk_window": r.report.as_ref().and_then(|b| b.walk_window),
                "final_len": r.final_len,
                "arena": r.arena.as_ref().map(|a| json!({
                    "capacity_bytes": a.capacity_bytes, "bytes_in_use": a.bytes_in_use,
                    "high_water_bytes": a.high_water_bytes,
                    "superblocks_carved": a.superblocks_carved,
                    "free_blocks": a.free_blocks, "failed_mallocs": a.failed_mallocs,
                    "cas_retries": a.cas_retries,
                })),
                "threads": at.threads,
                "device": device_name, "transport": transport,
                "speedup_vs_seq": if seq_ms.is_finite() { Some(seq_ms / r.ms) } else { None },
                "verified": r.verified.is_ok(),
                "error": r.verified.as_ref().err(),
            })
        );
    }
}

fn print_table(workload: &Workload, runs: &[Run], modes: &[&str], seq_ms: f64, at: &Setting) {
    let (device_name, transport) = (&at.device, &at.transport);
    asym_apps::report!(
        "{} initial nodes, {} operations; device {}, transport {}, {} latency threads",
        workload.initial.len(),
        workload.ops.len(),
        device_name.as_deref().unwrap_or("-"),
        transport.as_deref().unwrap_or("-"),
        at.threads.unwrap_or(0)
    );
    let mut table = cli::Table::new(&[
        "mode",
        ">ms",
        ">ops/s",
        ">vs seq",
        ">done",
        ">failed",
        ">CAS retries",
        ">cleanup",
        ">arena use/high KiB",
        "check",
    ]);
    for &mode in modes {
        let Some(r) = runs
            .iter()
            .filter(|r| r.mode == mode)
            .min_by(|a, b| a.ms.total_cmp(&b.ms))
        else {
            continue;
        };
        table.row(vec![
            r.mode.clone(),
            format!("{:.2}", r.ms),
            format!("{:.0}", workload.ops.len() as f64 / (r.ms / 1e3)),
            if seq_ms.is_finite() {
                format!("{:.1}x", seq_ms / r.ms)
            } else {
                "-".into()
            },
            r.done.to_string(),
            r.failed.to_string(),
            r.report
                .as_ref()
                .map_or("-".into(), |b| b.cas_retries.to_string()),
            if r.mode == "seq" {
                "-".into()
            } else {
                format!("{:.2} ms", r.cleanup_ms)
            },
            r.arena.as_ref().map_or("-".into(), |a| {
                format!("{} / {}", a.bytes_in_use / 1024, a.high_water_bytes / 1024)
            }),
            match &r.verified {
                Ok(()) => "ok".to_string(),
                Err(e) => format!("FAILED: {e}"),
            },
        ]);
    }
    table.print();
}

fn run(args: &Args) -> Result<bool> {
    if let Some(path) = &args.output {
        // Fail before the run, not after it, on a path that cannot be written.
        output::check_writable(path)?;
    }
    let modes = cli::choose("--mode", &args.mode, &["seq", "cpu", "gpu", "coop"])?;
    if !(0.0..=1.0).contains(&args.device_share) {
        return Err(Error::flag("--device-share", args.device_share, "0 to 1"));
    }
    let workload = load_workload(args)?;
    let needs_device = modes.iter().any(|&m| m == "gpu" || m == "coop");
    // The cpu mode needs the runtime too: the list lives in the device's SVM (on a machine
    // without a GPU, PoCL's CPU device provides it).
    let rt = if modes.iter().any(|&m| m != "seq") {
        Some(Runtime::on_device(args.device.as_deref())?)
    } else {
        None
    };
    let pool = if modes.iter().any(|&m| m == "cpu" || m == "coop") {
        Some(LatencyPool::with_threads(args.threads)?)
    } else {
        None
    };
    if let (Some(rt), true) = (&rt, needs_device) {
        // Build the list kernel before any clock starts.
        let mut warm = LockFreeList::positional_from(rt, &[0], 4)?;
        warm.apply(
            &[asym_structures::ListOp::InsertAfter {
                target: 0,
                value: 1,
            }],
            Mode::GpuOnly,
            ListOptions::default(),
            None,
        )?;
    }
    let mut progress = Progress::new((modes.len() * args.repeat) as u64, args.json);
    let mut runs: Vec<Run> = Vec::new();
    let mut finals: Vec<(String, Vec<i32>)> = Vec::new();
    for &mode in &modes {
        for rep in 0..args.repeat.max(1) {
            progress.step(format!("{mode} run {}", rep + 1));
            let (run, fin) = if mode == "seq" {
                seq_run(&workload)
            } else {
                let rt = rt.as_ref().expect("opened above");
                list_run(args, rt, pool.as_ref(), &workload, mode)?
            };
            if rep == 0 {
                finals.push((mode.to_string(), fin));
            }
            runs.push(run);
        }
    }
    progress.bar.finish_and_clear();
    if let (Some(path), Some((first_mode, first))) = (&args.output, finals.first()) {
        // Concurrent modes may order an insert and a delete of one key either way, so their
        // final lists can differ from one another and all be right: the file holds the first
        // mode's, and says so where another's differs.
        write_list(path, first)?;
        let differ: Vec<&str> = finals
            .iter()
            .filter(|(_, fin)| fin != first)
            .map(|(m, _)| m.as_str())
            .collect();
        if !differ.is_empty() {
            eprintln!(
                "list_ops: {} holds the {first_mode} mode's final list; {} reached another \
                 (concurrent operations on one key may land in either order)",
                path.display(),
                differ.join(", ")
            );
        }
    }
    let seq_ms = runs
        .iter()
        .filter(|r| r.mode == "seq")
        .map(|r| r.ms)
        .fold(f64::INFINITY, f64::min);
    let at = Setting {
        device: rt.as_ref().map(|rt| rt.profile().label()),
        transport: rt.as_ref().map(|rt| rt.transport().to_string()),
        threads: pool.as_ref().map(|p| p.len()),
    };
    if args.json {
        print_json(&workload, &runs, seq_ms, &at);
    } else {
        print_table(&workload, &runs, &modes, seq_ms, &at);
    }
    Ok(runs.iter().all(|r| r.verified.is_ok()))
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args: Args = cli::parse_args();
    cli::finish("list_ops", "a run broke the list's invariants", run(&args))
}
