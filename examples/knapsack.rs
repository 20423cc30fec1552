//! 0/1 knapsack, answered by the fastest exact method that fits: dynamic programming over
//! capacities where its table fits the memory budget (`--dp-memory`), else best-first
//! branch-and-bound on the generalized heap (the concurrent-heap seed's second application).
//! Where the program would take long (50 ms or more by its cells), the sequential
//! branch-and-bound tries first with an eighth of that time: easy instances with large
//! capacities are proved in microseconds, and their items found by a depth-first search for
//! the proved optimum. Each row says which method answered.
//!
//! ```text
//! cargo run --release --bin knapsack                          # every Pisinger class, n = 40
//! cargo run --release --bin knapsack -- --input 1000.data     # `n capacity`, then `profit weight`
//! cargo run --release --bin knapsack -- --method bnb --gen strongly --n 60 --range 10000 --json
//! ```
//!
//! `--method bnb` (or any `--mode`) runs the branch-and-bound: `seq` the sequential heap on one
//! core, `cpu` the concurrent heap on the pinned latency threads, `gpu` the heap on the device
//! (the latency threads expand the nodes between launches), `coop` the Cooperative heap's host
//! top in front of it; every optimum is checked against dynamic programming where
//! n·capacity fits `--dp-max-cells`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use asym_apps::knapsack::device::Expansion;
use asym_apps::knapsack::front::{AnsweredBy, Knapsack, Method, Solution, SolveOptions};
use asym_apps::knapsack::{BnbStats, Class, Instance};
use asym_runtime::{Error, LatencyPool, Mode, Named, Result, Runtime, RuntimeOptions};
use asym_structures::{BulkPolicy, InsertDirection, GHEAP_PROFILE_ENV};
use clap::Parser;
use serde_json::json;

use asym_apps::cli;
use asym_apps::io::input::name_of;

#[derive(Parser, Debug)]
#[command(about = "0/1 knapsack by best-first branch-and-bound on the generalized heap")]
struct Args {
    /// Read an instance: `n capacity` on the first line, then n lines `profit weight`.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Generate Pisinger's classes: uncorrelated, weakly, strongly, almost-strongly, even-odd,
    /// subset-sum (comma-separated), or all.
    #[arg(long, default_value = "all")]
    gen: String,
    /// Items per generated instance.
    #[arg(long, default_value_t = 40)]
    n: usize,
    /// Data range R of generated instances (weights in 1..=R).
    #[arg(long, default_value_t = 1000)]
    range: u64,
    /// Random seed of generated instances.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// How to answer: auto (dynamic programming where its table fits --dp-memory, else
    /// branch-and-bound; where the program would take 50 ms or more, the sequential
    /// branch-and-bound first, given an eighth of that time, its optimum's items found by a
    /// depth-first search), dp, or bnb (default: auto, or bnb when --mode is given).
    #[arg(long)]
    method: Option<String>,
    /// Host memory the dynamic program may use, MiB (default: a quarter of what is available).
    #[arg(long)]
    dp_memory: Option<u64>,
    /// Branch-and-bound modes: seq (the sequential heap, one core), cpu (the concurrent heap on
    /// the latency threads), gpu (the heap on the device), coop (host top + device heap),
    /// comma-separated, or all (default: all with --method bnb; seq where auto falls back).
    #[arg(long)]
    mode: Option<String>,
    /// Nodes per heap batch (K): a power of two (default: 1024 for gpu, whose device heap
    /// rebuilds fastest with large nodes: 1.2-1.4x over 16 on BGPQ's files on the H200;
    /// 16 for the other modes).
    #[arg(long)]
    batch: Option<usize>,
    /// Device heap calls that move a large share of the heap: auto (rebuild it by one device
    /// sort, BulkPolicy::Auto), never (one INS or DEL per batch, the seed's operations), always.
    #[arg(long, default_value = "auto", value_parser = cli::parse_word::<BulkPolicy>)]
    bulk: BulkPolicy,
    /// Latency threads (default: every CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// Insertion of the concurrent heap: td or bu.
    #[arg(long, default_value = "bu")]
    insert: String,
    /// Heap nodes (each holds K search nodes) before a search gives up (default: as many as
    /// half the host memory available holds; the heaps grow on demand up to it).
    #[arg(long)]
    max_nodes: Option<usize>,
    /// gpu/coop: search nodes taken from the heap per round (large rounds amortize the launches:
    /// on the H200, 65,536 per round beat 256 per round 2-14x on the seed's hardest files).
    #[arg(long, default_value_t = 65536)]
    pop: usize,
    /// gpu/coop: garbage-collect the heap (drop nodes that cannot beat the incumbent) once it
    /// holds more than this many search nodes (0: never).
    #[arg(long, default_value_t = 1 << 20)]
    gc: usize,
    /// gpu: who expands a round's nodes: threads (the latency threads, nodes in host
    /// memory), device (a kernel; the nodes and their children stay on the device), or auto
    /// (device on a GPU, where the instance's numbers fit its 64-bit bounds; the mode column
    /// says which ran).
    #[arg(long, default_value = "auto", value_parser = cli::parse_word::<Expansion>)]
    expand: Expansion,
    /// coop: keys one refill brings from the device to the host top.
    #[arg(long, default_value_t = 4096)]
    refill: usize,
    /// OpenCL device for gpu/coop: part of its platform or device name.
    #[arg(long)]
    device: Option<String>,
    /// Largest DP table (n · (capacity + 1) cells) used to check the optimum.
    #[arg(long, default_value_t = 1 << 31)]
    dp_max_cells: u64,
    /// Give up on a search whose threads all wait longer than this (seconds).
    #[arg(long, default_value_t = 60)]
    timeout_s: u64,
    /// Stop each branch-and-bound after this many seconds with the best solution found, marked
    /// "not proved" (0: no limit).
    #[arg(long, default_value_t = 60.0)]
    time_limit: f64,
    /// gpu and coop: run only the rounds, without the sequential search beside them that
    /// shares their incumbent (the dive: it finds the exact fills large rounds miss).
    #[arg(long)]
    no_dive: bool,
    /// gpu, nodes expanded on the device: work-groups of the rounds run many to a launch
    /// while the heap is empty (for measurements; default one per compute unit on GPUs, 0 =
    /// a launch per round, the default elsewhere).
    #[arg(long, hide = true)]
    resident_groups: Option<usize>,
    /// Write each instance in the seed's format into this directory (generated ones as
    /// `CLASS-nN-rR-sSEED.data`), for other solvers.
    #[arg(long)]
    save_instances: Option<PathBuf>,
    /// One JSON object per row instead of a table.
    #[arg(long)]
    json: bool,
}

struct Row {
    /// dp or bnb.
    method: &'static str,
    instance: String,
    n: usize,
    capacity: u64,
    mode: String,
    /// K of the mode's heaps (bnb rows).
    batch: Option<usize>,
    stats: BnbStats,
    ms: f64,
    dp: Option<(u64, f64)>,
    /// bnb: the optimum equals the one-row dynamic program's (None: too large for it); dp:
    /// also the items read back fit and add up to the optimum; a search with its items
    /// (`search_first`): they fit and add up, and the optimum equals the program's where it
    /// ran (None: it was too large).
    check: Option<bool>,
    /// Items of the answer, where the row found them (dp, and the default's search first).
    items: Option<usize>,
}

/// Whether `taken` (indices into the items) fits the capacity and adds up to `optimum`.
fn items_add_up(inst: &Instance, taken: &[usize], optimum: u64) -> bool {
    let weight: u64 = taken.iter().map(|&i| inst.items[i].weight).sum();
    let profit: u64 = taken.iter().map(|&i| inst.items[i].profit).sum();
    weight <= inst.capacity && profit == optimum
}

/// The one-row program's optimum (no items) and its time in ms, where `n · (capacity + 1)`
/// is at most `max_cells`: an independent check of every answer and the peer's time in the
/// same run.
fn one_row_program(inst: &Instance, max_cells: u64) -> Option<(u64, f64)> {
    let t = Instant::now();
    inst.dp_optimum(max_cells)
        .map(|v| (v, t.elapsed().as_secs_f64() * 1e3))
}

/// A full heap says which flag raises its bound.
fn more_nodes(e: Error) -> Error {
    match e {
        Error::CapacityExceeded { what, capacity } => Error::CapacityExceeded {
            what: format!("{what} (the search needs more nodes: raise --max-nodes)"),
            capacity,
        },
        e => e,
    }
}

/// A table too large for the program says which flags answer otherwise.
fn more_memory(e: Error) -> Error {
    match e {
        Error::CapacityExceeded { what, capacity } => Error::CapacityExceeded {
            what: format!("{what} (raise --dp-memory, or --method bnb)"),
            capacity,
        },
        e => e,
    }
}

/// The instances to answer: the file's, or the generated classes'.
fn instances(args: &Args) -> Result<Vec<(String, Instance)>> {
    let instances: Vec<(String, Instance)> = match &args.input {
        Some(path) => {
            let text = asym_apps::io::input::read_text(path)?;
            vec![(name_of(path), Instance::parse(&text, &name_of(path))?)]
        }
        None => {
            let classes = cli::words::<Class>("--gen", &args.gen)?;
            classes
                .into_iter()
                .map(|c| {
                    Ok((
                        c.name().to_string(),
                        Instance::generate(c, args.n, args.range, args.seed)?,
                    ))
                })
                .collect::<Result<_>>()?
        }
    };
    if let Some(dir) = &args.save_instances {
        let io = |path: &std::path::Path, e| Error::Io {
            path: path.display().to_string(),
            source: e,
        };
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        for (name, inst) in &instances {
            let file = match &args.input {
                Some(p) => p
                    .file_name()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| "instance.data".into()),
                None => format!("{name}-n{}-r{}-s{}.data", args.n, args.range, args.seed).into(),
            };
            let path = dir.join(file);
            asym_apps::io::output::write_whole(&path, inst.to_text().as_bytes())?;
        }
    }
    Ok(instances)
}

/// The solver's options from the flags.
fn options(args: &Args) -> Result<SolveOptions> {
    if let Some(k) = args.batch.filter(|k| !k.is_power_of_two()) {
        return Err(Error::flag("--batch", k, "K must be a power of two"));
    }
    // 10^9 s (31 years) keeps every deadline a representable instant.
    if !(0.0..=1e9).contains(&args.time_limit) {
        return Err(Error::flag(
            "--time-limit",
            args.time_limit,
            "seconds: 0 (no limit) up to 1e9",
        ));
    }
    Ok(SolveOptions {
        batch: args.batch,
        max_nodes: args.max_nodes,
        time_limit: (args.time_limit > 0.0).then(|| Duration::from_secs_f64(args.time_limit)),
        timeout: Duration::from_secs(args.timeout_s),
        direction: match args.insert.trim() {
            "td" => InsertDirection::TopDown,
            "bu" => InsertDirection::BottomUp,
            other => return Err(Error::flag("--insert", other, "expected td or bu")),
        },
        dp_memory: args.dp_memory.map(|mib| mib.saturating_mul(1 << 20)),
        bulk: args.bulk,
        refill: args.refill,
        pop: args.pop,
        gc_threshold: (args.gc > 0).then_some(args.gc),
        dive: !args.no_dive,
        expansion: args.expand,
        resident_groups: args.resident_groups,
    })
}

/// The branch-and-bound modes and their methods, in the order their rows run.
const SEARCHES: [(&str, Method); 4] = [
    ("seq", Method::Sequential),
    ("gpu", Method::BranchAndBound(Mode::GpuOnly)),
    ("coop", Method::BranchAndBound(Mode::Cooperative)),
    ("cpu", Method::BranchAndBound(Mode::CpuOnly)),
];

/// The row of an answer the dynamic program gave or the search first found with its items.
fn itemized_row(name: &str, inst: &Instance, s: Solution, ms: f64, max_cells: u64) -> Row {
    let taken = s.taken.unwrap_or_default();
    // The items must fit and add up to the optimum, which must equal the one-row program's.
    let consistent = items_add_up(inst, &taken, s.stats.optimum);
    let reference = one_row_program(inst, max_cells);
    let (method, mode) = match s.by {
        AnsweredBy::DynamicProgram { searched } if !searched.is_zero() => (
            "dp",
            format!(
                "search {:.1} ms, then dp ({} items)",
                searched.as_secs_f64() * 1e3,
                taken.len()
            ),
        ),
        AnsweredBy::DynamicProgram { .. } => ("dp", format!("dp ({} items)", taken.len())),
        _ => ("bnb", format!("seq, then items ({} items)", taken.len())),
    };
    Row {
        method,
        instance: name.to_string(),
        n: inst.items.len(),
        capacity: inst.capacity,
        mode,
        batch: s.batch,
        check: match reference {
            _ if !consistent => Some(false),
            Some((v, _)) => Some(v == s.stats.optimum),
            None if method == "dp" => Some(true),
            None => None,
        },
        stats: s.stats,
        ms,
        dp: reference,
        items: Some(taken.len()),
    }
}

/// The row of a branch-and-bound search by `mode`.
fn search_row(
    args: &Args,
    name: &str,
    inst: &Instance,
    mode: String,
    s: Solution,
    ms: f64,
    dp: Option<(u64, f64)>,
) -> Row {
    let stats = s.stats;
    Row {
        method: "bnb",
        instance: name.to_string(),
        n: inst.items.len(),
        capacity: inst.capacity,
        mode,
        batch: s.batch.or(args.batch),
        // A search stopped by the time limit offers a solution, not the optimum.
        check: dp.map(|(v, _)| {
            if stats.proved {
                v == stats.optimum
            } else {
                stats.optimum <= v
            }
        }),
        stats,
        ms,
        dp,
        items: None,
    }
}

fn run(args: &Args) -> Result<bool> {
    let method = match (args.method.as_deref().map(str::trim), &args.mode) {
        (Some(m @ ("auto" | "dp" | "bnb")), _) => m,
        (Some(other), _) => return Err(Error::flag("--method", other, "expected auto, dp or bnb")),
        (None, Some(_)) => "bnb",
        (None, None) => "auto",
    };
    let default_modes = if method == "bnb" { "all" } else { "seq" };
    let modes = cli::choose(
        "--mode",
        args.mode.as_deref().unwrap_or(default_modes),
        &["seq", "cpu", "gpu", "coop"],
    )?;
    let options = options(args)?;
    let instances = instances(args)?;
    let solver = Knapsack::new(options.clone());
    // Which instances the dynamic program answers; branch-and-bound takes the rest.
    let by_dp: Vec<bool> = instances
        .iter()
        .map(|(_, inst)| match method {
            "dp" => true,
            "bnb" => false,
            _ => solver.dp_fits(inst),
        })
        .collect();
    let bnb_needed = by_dp.iter().any(|d| !d);
    let searches: Vec<(&str, Method)> = SEARCHES
        .into_iter()
        .filter(|(m, _)| bnb_needed && modes.contains(m))
        .collect();
    let uses = |mode: Mode| {
        searches
            .iter()
            .any(|(_, m)| *m == Method::BranchAndBound(mode))
    };
    let on_device = uses(Mode::GpuOnly) || uses(Mode::Cooperative);
    let rt = if on_device {
        // Device times (each launch's start and end, which cost every launch host time on
        // NVIDIA) only for the heap's profiling build, whose rows report them.
        let profiled = asym_runtime::env::switch(GHEAP_PROFILE_ENV)?;
        Some(Runtime::with_options(RuntimeOptions {
            device: args.device.clone(),
            device_times: profiled.then_some(true),
            ..Default::default()
        })?)
    } else {
        None
    };
    let pool = if on_device || uses(Mode::CpuOnly) {
        Some(LatencyPool::with_threads(args.threads)?)
    } else {
        None
    };
    let mut solver = Knapsack::new(options);
    if let Some(pool) = &pool {
        solver = solver.with_latency_threads(pool);
    }
    if let Some(rt) = &rt {
        solver = solver.with_device(rt);
    }
    // Build the device programs before the clock starts.
    for (_, m) in &searches {
        solver.prepare(*m)?;
    }
    let mut rows = Vec::new();
    for ((name, inst), &dp_answers) in instances.iter().zip(&by_dp) {
        if dp_answers {
            let m = if method == "dp" {
                Method::DynamicProgram
            } else {
                Method::Auto
            };
            let t = Instant::now();
            let s = solver.solve(inst, m).map_err(more_memory)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            rows.push(itemized_row(name, inst, s, ms, args.dp_max_cells));
            continue;
        }
        let dp = one_row_program(inst, args.dp_max_cells);
        for (mode, m) in &searches {
            let t = Instant::now();
            let s = solver.solve(inst, *m).map_err(more_nodes)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let label = match m {
                Method::BranchAndBound(Mode::CpuOnly) => {
                    format!(
                        "cpu:{}x{}",
                        args.insert.trim(),
                        pool.as_ref().map_or(0, LatencyPool::len)
                    )
                }
                Method::BranchAndBound(_) => {
                    let by = if s.stats.device_expansion {
                        "device"
                    } else {
                        "threads"
                    };
                    format!("{mode}:p{}:{by}", args.pop)
                }
                _ => mode.to_string(),
            };
            rows.push(search_row(args, name, inst, label, s, ms, dp));
        }
    }
    let all_ok = rows.iter().all(|r| r.check != Some(false));
    if args.json {
        print_json(&rows);
    } else {
        print_table(&rows);
    }
    Ok(all_ok)
}

fn print_json(rows: &[Row]) {
    for r in rows {
        asym_apps::report!(
            "{}",
            json!({
                "method": r.method,
                "instance": r.instance, "n": r.n, "capacity": r.capacity, "mode": r.mode,
                "batch": r.batch, "optimum": r.stats.optimum, "expanded": r.stats.expanded,
                "pruned": r.stats.pruned, "fixed": r.stats.fixed, "proved": r.stats.proved, "collected": r.stats.collected,
                "collections": r.stats.collections, "dive_expanded": r.stats.dive_expanded,
                "proved_by_dive": r.stats.proved_by_dive,
                "device_expansion": r.stats.device_expansion,
                "rounds": r.stats.rounds, "direct_rounds": r.stats.direct_rounds,
                "resident_launches": r.stats.resident_launches,
                "resident_fallbacks": r.stats.resident_fallbacks,
                "device_setup_ms": r.stats.device_times_us[0] as f64 / 1e3,
                "device_expand_ms": r.stats.device_times_us[1] as f64 / 1e3,
                "device_heap_ms": r.stats.device_times_us[2] as f64 / 1e3,
                "device_allocations": r.stats.device_allocations,
                "device_profile_us": device_profile_json(&r.stats.device_profile), "ms": r.ms, "dp_optimum": r.dp.map(|d| d.0),
                "dp_ms": r.dp.map(|d| d.1), "verified": r.check, "items": r.items,
            })
        );
    }
}

fn print_table(rows: &[Row]) {
    let mut table = cli::Table::new(&[
        "instance",
        ">n",
        ">capacity",
        "mode",
        ">optimum",
        ">expanded",
        ">pruned",
        ">ms",
        ">DP ms",
        "check",
    ]);
    for r in rows {
        table.row(vec![
            r.instance.clone(),
            r.n.to_string(),
            r.capacity.to_string(),
            r.mode.clone(),
            r.stats.optimum.to_string(),
            if r.stats.dive_expanded > 0 {
                format!("{} + dive {}", r.stats.expanded, r.stats.dive_expanded)
            } else {
                r.stats.expanded.to_string()
            },
            r.stats.pruned.to_string(),
            format!("{:.2}", r.ms),
            r.dp.map_or("-".into(), |d| format!("{:.2}", d.1)),
            match (r.method, r.check) {
                ("dp", Some(true)) => "items add up, equal",
                ("dp", _) => "DIFFERENT",
                (_, Some(true)) if r.items.is_some() => "items add up, equal",
                (_, None) if r.items.is_some() => "items add up, too large for DP",
                (_, Some(false)) => "DIFFERENT",
                _ if !r.stats.proved => "best found, not proved (--time-limit)",
                (_, Some(true)) if r.stats.proved_by_dive => "equal (the dive proved it)",
                (_, Some(true)) => "equal",
                (_, None) if r.stats.proved_by_dive => "too large for DP (the dive proved it)",
                (_, None) => "too large for DP",
            }
            .to_string(),
        ]);
    }
    table.print();
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args: Args = cli::parse_args();
    cli::finish(
        "knapsack",
        "an optimum differs from dynamic programming",
        run(&args),
    )
}

/// A device search's round profile as JSON (µs; `heap_launches` a count).
fn device_profile_json(p: &asym_apps::knapsack::DeviceRoundProfile) -> serde_json::Value {
    json!({
        "setup_kernels": p.setup_kernels_us, "setup_tables": p.setup_tables_us,
        "setup_heap": p.setup_heap_us, "setup_buffers": p.setup_buffers_us,
        "setup_root": p.setup_root_us,
        "expand_grow": p.expand_grow_us, "expand_launch": p.expand_launch_us, "expand_wait": p.expand_wait_us,
        "expand_read": p.expand_read_us, "heap_launches": p.heap_launches,
        "heap_busy": p.heap_busy_us, "heap_span": p.heap_span_us,
        "heap_prepare": p.heap_prepare_us, "heap_alloc": p.heap_alloc_us, "heap_copy": p.heap_copy_us, "heap_kernel": p.heap_kernel_us,
        "heap_read": p.heap_read_us,
    })
}
