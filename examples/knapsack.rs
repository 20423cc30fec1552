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

use asym_apps::knapsack::device::{prepare_offloaded, solve_offloaded, Expansion, OffloadConfig};
use asym_apps::knapsack::dp::{dp_bytes, solve_dp};
use asym_apps::knapsack::{
    node_limit_for_memory, search_first, solve_concurrent, solve_sequential_within, BnbStats,
    Class, Instance, NodeBudget, SearchFirst, SEARCH_FIRST_BATCH,
};
use asym_runtime::{host_memory, Error, LatencyPool, Named, Result, Runtime, RuntimeOptions};
use asym_structures::{
    BulkPolicy, CooperativeConfig, DeviceHeapConfig, HeapPlacement, InsertDirection,
    GHEAP_PROFILE_ENV,
};
use clap::Parser;
use serde_json::json;

use asym_apps::cli;

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

/// The default method's first try where the dynamic program would take long
/// (`knapsack::search_first`): the row of its answer, or `Err` with the milliseconds it
/// spent (the dynamic program answers, its row counting them).
fn search_first_row(
    name: &str,
    inst: &Instance,
    max_nodes: usize,
    dp_max_cells: u64,
) -> Result<std::result::Result<Row, f64>> {
    let t = Instant::now();
    let (stats, taken) = match search_first(inst, max_nodes)? {
        SearchFirst::Answered { stats, taken } => (*stats, taken),
        SearchFirst::Declined(spent) => return Ok(Err(spent.as_secs_f64() * 1e3)),
    };
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let consistent = items_add_up(inst, &taken, stats.optimum);
    let reference = one_row_program(inst, dp_max_cells);
    Ok(Ok(Row {
        method: "bnb",
        instance: name.to_string(),
        n: inst.items.len(),
        capacity: inst.capacity,
        mode: format!("seq, then items ({} items)", taken.len()),
        batch: Some(SEARCH_FIRST_BATCH),
        stats,
        ms,
        dp: reference,
        check: match reference {
            _ if !consistent => Some(false),
            Some((v, _)) => Some(v == stats.optimum),
            None => None,
        },
        items: Some(taken.len()),
    }))
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

/// K of the heaps of a mode: `--batch`, else 1024 for gpu and 16 for the others.
fn batch_of(args: &Args, mode: &str) -> usize {
    args.batch
        .unwrap_or(if mode == "gpu" { GPU_BATCH } else { BATCH })
}

/// Default K of the gpu mode and of the others.
const GPU_BATCH: usize = 1024;
const BATCH: usize = 16;

fn run(args: &Args) -> Result<bool> {
    if let Some(k) = args.batch.filter(|k| !k.is_power_of_two()) {
        return Err(Error::flag("--batch", k, "K must be a power of two"));
    }
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
    let dp_budget = match args.dp_memory {
        Some(mib) => mib.saturating_mul(1 << 20),
        None => host_memory::available().unwrap_or(4 << 30) / 4,
    };
    let direction = match args.insert.trim() {
        "td" => InsertDirection::TopDown,
        "bu" => InsertDirection::BottomUp,
        other => return Err(Error::flag("--insert", other, "expected td or bu")),
    };
    let instances: Vec<(String, Instance)> = match &args.input {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
                path: path.display().to_string(),
                source: e,
            })?;
            vec![(
                path.display().to_string(),
                Instance::parse(&text, &path.display().to_string())?,
            )]
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
            std::fs::write(&path, inst.to_text()).map_err(|e| io(&path, e))?;
        }
    }
    // Which instances the dynamic program answers; branch-and-bound takes the rest.
    let by_dp: Vec<bool> = instances
        .iter()
        .map(|(_, inst)| match method {
            "dp" => true,
            "bnb" => false,
            _ => dp_bytes(inst).is_some_and(|b| b <= dp_budget),
        })
        .collect();
    let bnb_needed = by_dp.iter().any(|d| !d);
    let [seq, cpu, gpu, coop] =
        ["seq", "cpu", "gpu", "coop"].map(|m| bnb_needed && modes.contains(&m));
    let rt = if gpu || coop {
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
    let device = |mode: &str| DeviceHeapConfig {
        bulk: args.bulk,
        ..DeviceHeapConfig::new(batch_of(args, mode))
    };
    let mut placements = Vec::new();
    if gpu {
        placements.push(("gpu", HeapPlacement::Device(device("gpu"))));
    }
    if coop {
        let c = CooperativeConfig::on(device("coop")).with_refill(args.refill);
        placements.push(("coop", HeapPlacement::Cooperative(c)));
    }
    let pool = if cpu || gpu || coop {
        Some(LatencyPool::with_threads(args.threads)?)
    } else {
        None
    };
    let max_nodes = |mode: &str| {
        args.max_nodes
            .unwrap_or_else(|| node_limit_for_memory(batch_of(args, mode)))
    };
    if !(args.time_limit >= 0.0 && args.time_limit.is_finite()) {
        return Err(Error::flag(
            "--time-limit",
            args.time_limit,
            "seconds: 0 (no limit) or more",
        ));
    }
    let time_limit = (args.time_limit > 0.0).then(|| Duration::from_secs_f64(args.time_limit));
    let offload = |name: &str, placement: &HeapPlacement| OffloadConfig {
        placement: placement.clone(),
        batch: batch_of(args, name),
        pop: args.pop,
        max_live: max_nodes(name).saturating_mul(batch_of(args, name)),
        gc_threshold: if args.gc == 0 { usize::MAX } else { args.gc },
        time_limit,
        dive: !args.no_dive,
        resident_groups: args.resident_groups,
        // The cooperative heap's top lives on the host: its rounds expand there.
        expansion: match placement {
            HeapPlacement::Device(_) => args.expand,
            HeapPlacement::Cooperative(_) => Expansion::Threads,
        },
    };
    if let Some(rt) = &rt {
        // Build the device programs before the clock starts.
        for (name, placement) in &placements {
            prepare_offloaded(rt, &offload(name, placement))?;
        }
    }
    let mut rows = Vec::new();
    for ((name, inst), &dp_answers) in instances.iter().zip(&by_dp) {
        // Time the default's search first took before the program answered.
        let mut tried_ms = 0.0;
        if dp_answers && method == "auto" {
            match search_first_row(name, inst, max_nodes("seq"), args.dp_max_cells)? {
                Ok(row) => {
                    rows.push(row);
                    continue;
                }
                Err(ms) => tried_ms = ms,
            }
        }
        if dp_answers {
            let t = Instant::now();
            let s = solve_dp(inst, dp_budget).map_err(|e| match e {
                Error::CapacityExceeded { what, capacity } => Error::CapacityExceeded {
                    what: format!("{what} (raise --dp-memory, or --method bnb)"),
                    capacity,
                },
                e => e,
            })?;
            let ms = tried_ms + t.elapsed().as_secs_f64() * 1e3;
            // The items read back from the table must fit and add up to the optimum.
            let consistent = items_add_up(inst, &s.taken, s.optimum);
            let reference = one_row_program(inst, args.dp_max_cells);
            rows.push(Row {
                method: "dp",
                instance: name.clone(),
                n: inst.items.len(),
                capacity: inst.capacity,
                mode: if tried_ms > 0.0 {
                    format!("search {tried_ms:.1} ms, then dp ({} items)", s.taken.len())
                } else {
                    format!("dp ({} items)", s.taken.len())
                },
                batch: None,
                stats: BnbStats {
                    optimum: s.optimum,
                    proved: true,
                    ..Default::default()
                },
                ms,
                dp: reference,
                check: Some(consistent && reference.is_none_or(|(v, _)| v == s.optimum)),
                items: Some(s.taken.len()),
            });
            continue;
        }
        let dp = one_row_program(inst, args.dp_max_cells);
        let mut push = |mode: String, stats: BnbStats, ms: f64| {
            let batch = Some(batch_of(args, mode.split(':').next().unwrap_or("")));
            rows.push(Row {
                method: "bnb",
                instance: name.clone(),
                n: inst.items.len(),
                capacity: inst.capacity,
                mode,
                batch,
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
            })
        };
        if seq {
            let t = Instant::now();
            let s =
                solve_sequential_within(inst, batch_of(args, "seq"), max_nodes("seq"), time_limit)
                    .map_err(more_nodes)?;
            push("seq".into(), s, t.elapsed().as_secs_f64() * 1e3);
        }
        if let (Some(pool), Some(rt)) = (&pool, &rt) {
            for (name, placement) in &placements {
                let t = Instant::now();
                let s = solve_offloaded(inst, pool, rt, &offload(name, placement))
                    .map_err(more_nodes)?;
                let by = if s.device_expansion {
                    "device"
                } else {
                    "threads"
                };
                push(
                    format!("{name}:p{}:{by}", args.pop),
                    s,
                    t.elapsed().as_secs_f64() * 1e3,
                );
            }
        }
        if let (true, Some(pool)) = (cpu, &pool) {
            let t = Instant::now();
            let s = solve_concurrent(
                inst,
                pool,
                batch_of(args, "cpu"),
                direction,
                NodeBudget::up_to(max_nodes("cpu")),
                Duration::from_secs(args.timeout_s),
                time_limit,
            )
            .map_err(more_nodes)?;
            push(
                format!("cpu:{}x{}", args.insert.trim(), pool.len()),
                s,
                t.elapsed().as_secs_f64() * 1e3,
            );
        }
    }
    let all_ok = rows.iter().all(|r| r.check != Some(false));
    if args.json {
        for r in &rows {
            println!(
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
    } else {
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
        for r in &rows {
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
    Ok(all_ok)
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args = Args::parse();
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
