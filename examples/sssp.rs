//! Single-source shortest paths, the concurrent-heap seed's first application: the parallel
//! label-correcting search with its frontier expanded whole (the baseline, as Gunrock) or
//! ordered by distance in the generalized heap once it exceeds a threshold (the seed's
//! heap-based SSSP, N = 10K), and delta-stepping (buckets `--delta` wide; on a GPU all its
//! iterations in one launch), on the latency threads (CpuOnly) and on the device (GpuOnly),
//! every result checked against a sequential Dijkstra. `--json` rows carry the work done
//! (vertices expanded, edges scanned, buckets, launches); `--save-graph` writes the graph
//! for other tools (scripts/sssp-vs-gap.sh runs GAP's delta-stepping on it).
//!
//! ```text
//! cargo run --release --bin sssp                              # Kronecker scale 16
//! cargo run --release --bin sssp -- --gen geo --n 1000000 --degree 8 --json
//! cargo run --release --bin sssp -- --input USA-road-d.NY.gr --output dist.txt
//! cargo run --release --bin sssp -- --input graph.mtx --unit-weights
//! ```
//!
//! Input rules: weights are integers ≥ 0 (zero allowed, negative refused with the line);
//! Matrix Market `real` values are multiplied by `--real-scale` and rounded; `pattern` and
//! `--unit-weights` give weight 1; self-loops are dropped; duplicate edges are kept (the
//! shortest wins); each vertex's edges are stored sorted by target, whatever order the file
//! lists them in (`--save-graph` writes them so); unreachable vertices are reported as
//! `inf`. Vertices are numbered from 1, as in the files. `--mode coop` expands on the device and orders with the Cooperative heap
//! (a host top served by the calling thread in front of the device heap).
//!
//! `--device all` (or a comma-separated list) runs gpu mode on a device set: the set as it
//! settles after its untimed trials (`gpu-set`, with the plan it chose), the set forced
//! together (`gpu-set:together`, every iteration's frontier split by measured speed, merged
//! on the fastest member), and each member alone (rows `gpu@i`), each member's share shown;
//! each of these rows is the second of two runs. With cpu mode too, the latency threads join
//! the set as one more worker (`coop-set`, `coop-set:together`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use asym_apps::graph::{Graph, MtxOptions, Relabeling, UNREACHABLE};
use asym_apps::io::output;
use asym_apps::sssp::coop_delta::{CoopSplit, CoopStats};
use asym_apps::sssp::device::DeviceSssp;
use asym_apps::sssp::spread::{SetPlan, SpreadRun, SpreadSssp};
use asym_apps::sssp::{check_distances, cpu, delta, Order, SsspRun, SsspStats};
use asym_runtime::{host_memory, DeviceSet, Error, LatencyPool, Mode, Result};
use asym_structures::HeapPlacement;
use asym_structures::{BulkPolicy, CooperativeConfig, DeviceHeapConfig};
use clap::Parser;

use asym_apps::cli;
use asym_apps::progress;
use progress::Progress;
use serde_json::json;

#[derive(Parser, Debug)]
#[command(
    about = "Parallel SSSP (frontier, heap-ordered, delta-stepping), checked against Dijkstra"
)]
struct Args {
    /// Read a graph: DIMACS `.gr` or Matrix Market `.mtx`.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Generate a graph when no --input: kron (Graph500 Kronecker/R-MAT) or geo (random
    /// geometric in the unit square).
    #[arg(long, default_value = "kron")]
    gen: String,
    /// Kronecker scale: 2^scale vertices.
    #[arg(long, default_value_t = 16)]
    scale: u32,
    /// Kronecker edges per vertex (undirected, each stored both ways).
    #[arg(long, default_value_t = 16)]
    edge_factor: usize,
    /// Kronecker weights are uniform in 1..=max-weight.
    #[arg(long, default_value_t = 255)]
    max_weight: u32,
    /// Geometric graph: vertices.
    #[arg(long, default_value_t = 1 << 18)]
    n: usize,
    /// Geometric graph: average degree.
    #[arg(long, default_value_t = 8.0)]
    degree: f64,
    /// Seed of generated graphs.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Matrix Market: ignore values, every edge weighs 1.
    #[arg(long)]
    unit_weights: bool,
    /// Matrix Market: `real` values are multiplied by this and rounded.
    #[arg(long, default_value_t = 1.0)]
    real_scale: f64,
    /// Source vertex, numbered from 1 (default: the vertex with the most out-edges).
    #[arg(long)]
    source: Option<usize>,
    /// Modes: cpu (latency threads), gpu (the device), coop (both), comma-separated, or all;
    /// cpu and gpu run the frontier baseline, the heap-ordered search and delta-stepping;
    /// coop runs the heap-ordered search with the Cooperative heap and delta-stepping with
    /// light buckets on the latency threads and heavy ones on the device.
    #[arg(long, default_value = "all")]
    mode: String,
    /// Frontier size above which the heap orders the search (the seed's N).
    #[arg(long, default_value_t = 10_000)]
    threshold: usize,
    /// Vertices taken from the heap per iteration (default: the threshold).
    #[arg(long)]
    pop: Option<usize>,
    /// Delta-stepping's bucket width: auto (from the graph: `delta::auto_delta`), a width,
    /// or a comma-separated list of widths and `auto` (a row per width and mode).
    #[arg(long, default_value = "auto")]
    delta: String,
    /// Delta-stepping rows: searches per row, all checked; a row shows the median time
    /// (--json also the fastest and the slowest).
    #[arg(long, default_value_t = 1, value_parser = cli::count(1, 1000))]
    repeat: usize,
    /// Coop delta-stepping: rounds with this many edges or more to scan go to the device,
    /// buckets opening with a quarter of that go back to the latency threads; auto learns it
    /// from the searches' measured times (untimed searches first, until it settles: at most 10).
    /// The table and --json name the split and each side's share.
    #[arg(long, default_value = "auto")]
    coop_split: String,
    /// Keys per heap node (K): a power of two (up to 1024 on the device).
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Device heap calls that move a large share of the heap: auto (rebuild it by one device
    /// sort, BulkPolicy::Auto), never (one INS or DEL per batch, the seed's operations), always.
    #[arg(long, default_value = "auto", value_parser = cli::parse_word::<BulkPolicy>)]
    bulk: BulkPolicy,
    /// Latency threads (default: every CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// OpenCL device for gpu mode: part of its platform or device name (default: ASYM_DEVICE,
    /// else the first GPU, else the first CPU device); `all` or a comma-separated list runs
    /// gpu mode over a device set (coop runs on the first).
    #[arg(long)]
    device: Option<String>,
    /// Coop mode: keys one refill brings from the device heap to the host top.
    #[arg(long, default_value_t = 65_536)]
    refill: usize,
    /// Work-groups of each device heap launch (default: DeviceHeapConfig::default_shape).
    #[arg(long)]
    work_groups: Option<usize>,
    /// Write the distances here: one line `vertex distance` per vertex (`inf` if unreachable).
    #[arg(long)]
    output: Option<PathBuf>,
    /// How the searches number the vertices: bfs (renumbered once in breadth-first order
    /// from the source, so that a vertex's neighbours lie near it in memory: the `order_ms`
    /// of the rows) or given (the graph's own numbering). Either way --source, --output and
    /// the rows speak of the graph's own numbering.
    #[arg(long, default_value = "bfs")]
    vertex_order: String,
    /// Also write the graph (read or generated) here as a DIMACS `.gr` file, so that other
    /// tools (GAP's `sssp`) can search the very same graph.
    #[arg(long)]
    save_graph: Option<PathBuf>,
    /// Which numbering --save-graph writes: given (the graph's own) or searched (as
    /// --vertex-order renumbered it; its source is the rows' `source_searched`).
    #[arg(long, default_value = "given")]
    save_graph_order: String,
    /// One JSON object per row instead of a table.
    #[arg(long)]
    json: bool,
    /// Device delta-stepping: hops a work-group goes on with its own near vertices before an
    /// iteration ends (for measurements; default 1 on GPUs, 0 elsewhere).
    #[arg(long, hide = true)]
    local_rounds: Option<u32>,
    /// Device delta-stepping on GPUs: work-groups of the one-launch path (for measurements;
    /// default one per compute unit).
    #[arg(long, hide = true)]
    resident_groups: Option<usize>,
}

struct Row {
    mode: String,
    order: &'static str,
    ms: f64,
    stats: SsspStats,
    check: std::result::Result<(), String>,
    /// Over a device set: the plan, whether it was a trial, each member's share.
    set: Option<serde_json::Value>,
    /// Delta-stepping's bucket width.
    delta: Option<u32>,
    /// Searches timed for the row ([`Row::ms`] is their median), the fastest and the slowest.
    runs: usize,
    ms_min: f64,
    ms_max: f64,
    /// Cooperative delta-stepping: the split and each side's share.
    coop: Option<CoopStats>,
}

/// A row's searches: the stats of the search whose time was the median, the median, fastest
/// and slowest times (ms), and the first difference from Dijkstra's distances found.
struct Timed {
    run: SsspRun,
    coop: Option<CoopStats>,
    ms: f64,
    min: f64,
    max: f64,
    runs: usize,
    check: std::result::Result<(), String>,
}

impl Timed {
    /// One search that took `ms`.
    fn once(run: SsspRun, ms: f64, reference: &[u64]) -> Self {
        Timed {
            check: check_distances(&run.distances, reference),
            run,
            coop: None,
            ms,
            min: ms,
            max: ms,
            runs: 1,
        }
    }

    /// `repeat` searches by `search`, each timed and checked against `reference`.
    fn repeat(
        repeat: usize,
        reference: &[u64],
        mut search: impl FnMut() -> Result<(SsspRun, Option<CoopStats>)>,
    ) -> Result<Self> {
        let mut done: Vec<(f64, SsspRun, Option<CoopStats>)> = Vec::new();
        let mut check = Ok(());
        for _ in 0..repeat.max(1) {
            let t = Instant::now();
            let (mut run, coop) = search()?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if check.is_ok() {
                check = check_distances(&run.distances, reference);
            }
            // Checked: the row keeps the stats, not an answer's memory per search.
            run.distances = Vec::new();
            done.push((ms, run, coop));
        }
        done.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (min, max) = (done[0].0, done[done.len() - 1].0);
        let runs = done.len();
        let (ms, run, coop) = done.swap_remove(runs / 2);
        Ok(Timed {
            run,
            coop,
            ms,
            min,
            max,
            runs,
            check,
        })
    }
}

/// `--delta`'s widths: `None` for auto (the graph decides), in the order given.
fn parse_widths(value: &str) -> Result<Vec<Option<u32>>> {
    value
        .split(',')
        .map(|v| match v.trim() {
            "auto" => Ok(None),
            t => match t.parse::<u32>() {
                Ok(0) => Err(Error::flag("--delta", t, "a bucket width is at least 1")),
                Ok(w) => Ok(Some(w)),
                Err(_) => Err(Error::flag(
                    "--delta",
                    t,
                    "expected auto, a width or a comma-separated list of them",
                )),
            },
        })
        .collect()
}

/// An order as the rows name it.
fn order_name(order: Order) -> &'static str {
    match order {
        Order::Frontier => "frontier",
        Order::Heap { .. } => "heap",
    }
}

/// A set's plan as a row shows it.
fn plan_name(plan: SetPlan) -> String {
    match plan {
        SetPlan::Together => "together".into(),
        SetPlan::Alone(i) => format!("gpu@{i} alone"),
        SetPlan::LatencyThreads => "latency threads alone".into(),
    }
}

/// A set search's shares: `gpu@0 61% · gpu@1 39%` of the frontier entries expanded.
fn shares_text(run: &SpreadRun) -> String {
    let total: u64 = run.members.iter().map(|m| m.items).sum::<u64>().max(1);
    run.members
        .iter()
        .map(|m| {
            format!(
                "{} {:.0}%{}",
                match m.member {
                    Some(i) => format!("gpu@{i}"),
                    None => "cpu".to_string(),
                },
                100.0 * m.items as f64 / total as f64,
                if m.error.is_some() { " (failed)" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A cooperative search's shares: `cpu 3% · gpu 97%, 2 + 1 stints, split 2048`.
fn coop_text(c: &CoopStats) -> String {
    let total = (c.host_visited + c.device_visited).max(1) as f64;
    format!(
        "cpu {:.0}% · gpu {:.0}%, {} + {} stints, split {}",
        100.0 * c.host_visited as f64 / total,
        100.0 * c.device_visited as f64 / total,
        c.host_stints,
        c.device_stints,
        if c.to_device == usize::MAX {
            "none (threads alone)".to_string()
        } else {
            c.to_device.to_string()
        }
    )
}

/// A cooperative search's split and shares for --json.
fn coop_json(c: &CoopStats) -> serde_json::Value {
    json!({
        "to_device": (c.to_device != usize::MAX).then_some(c.to_device),
        "peak_round": c.peak_round,
        "host_stints": c.host_stints, "device_stints": c.device_stints,
        "host_visited": c.host_visited, "device_visited": c.device_visited,
        "host_ms": c.host_time.as_secs_f64() * 1e3,
        "device_ms": c.device_time.as_secs_f64() * 1e3,
        "handover_ms": c.handover_time.as_secs_f64() * 1e3,
        "host_vertices_per_s": c.host_rate(),
        "device_vertices_per_s": c.device_rate(),
    })
}

fn load(args: &Args, quiet: bool) -> Result<(String, Graph)> {
    let t = Instant::now();
    let (name, graph) = match &args.input {
        Some(path) => {
            let mtx = MtxOptions {
                unit_weights: args.unit_weights,
                real_scale: args.real_scale,
            };
            (path.display().to_string(), Graph::read(path, &mtx)?)
        }
        None => match args.gen.trim() {
            "kron" => (
                format!("kron-{}-{}", args.scale, args.edge_factor),
                Graph::kronecker(args.scale, args.edge_factor, args.max_weight, args.seed)?,
            ),
            "geo" => (
                format!("geo-{}-{}", args.n, args.degree),
                Graph::geometric(args.n, args.degree, args.seed)?,
            ),
            other => {
                return Err(Error::flag(
                    "--gen",
                    other,
                    "expected kron or geo (or --input FILE)",
                ))
            }
        },
    };
    if !quiet {
        eprintln!(
            "{name}: {} vertices, {} directed edges ({} self-loops dropped), ready in {:.2} s",
            graph.vertices(),
            graph.edges(),
            graph.self_loops(),
            t.elapsed().as_secs_f64()
        );
    }
    Ok((name, graph))
}

fn write_output(path: &std::path::Path, dist: &[u64]) -> Result<()> {
    output::write_whole_with(path, |out| {
        for (v, &d) in dist.iter().enumerate() {
            if d == UNREACHABLE {
                writeln!(out, "{} inf", v + 1)?;
            } else {
                writeln!(out, "{} {d}", v + 1)?;
            }
        }
        Ok(())
    })
}

fn run(args: &Args) -> Result<bool> {
    for path in args.output.iter().chain(&args.save_graph) {
        // Fail before the run, not after it, on a path that cannot be written.
        output::check_writable(path)?;
    }
    let modes = cli::words::<Mode>("--mode", &args.mode)?;
    let [use_cpu, use_gpu, use_coop] = Mode::ALL.map(|m| modes.contains(&m));
    if args.source == Some(0) {
        return Err(Error::flag("--source", 0, "vertices are numbered from 1"));
    }
    let order = Order::Heap {
        threshold: args.threshold,
        pop: args.pop.unwrap_or(args.threshold),
        batch: args.batch,
    };
    let set = if use_gpu || use_coop {
        Some(DeviceSet::open(args.device.as_deref())?)
    } else {
        None
    };
    let members = set.as_ref().map_or(0, DeviceSet::len);
    // Progress steps: over a set, gpu mode runs each member alone, the set as chosen and the
    // set together, in both orders; a single device the frontier and heap orders and a delta
    // row per width.
    let delta_widths = parse_widths(&args.delta)?;
    let w = delta_widths.len() as u64;
    let gpu_rows = if members > 1 {
        2 * (members as u64 + 2)
    } else {
        2 + w
    };
    let steps = 2
        + (2 + w) * u64::from(use_cpu)
        + gpu_rows * u64::from(use_gpu)
        + (1 + w) * u64::from(use_coop);
    let coop_split =
        match args.coop_split.trim() {
            "auto" => CoopSplit::adaptive(),
            n => CoopSplit::fixed(n.parse().map_err(|_| {
                Error::flag("--coop-split", n, "expected auto or a number of edges")
            })?)?,
        };
    let mut progress = Progress::new(steps, args.json);
    let renumber = cli::one_of("--vertex-order", &args.vertex_order, &["bfs", "given"])? == "bfs";
    let save_searched = cli::one_of(
        "--save-graph-order",
        &args.save_graph_order,
        &["given", "searched"],
    )? == "searched";
    let (name, given) = load(args, args.json)?;
    let given_source = args.source.map_or_else(|| given.hub(), |s| s - 1);
    given.check_source(given_source)?;
    let save = |graph: &Graph| -> Result<()> {
        match &args.save_graph {
            Some(path) => output::write_whole_with(path, |out| graph.write_dimacs(out)),
            None => Ok(()),
        }
    };
    if !save_searched {
        save(&given)?;
    }
    let t = Instant::now();
    let (graph, relabeling) = if renumber {
        let relabeling = Relabeling::breadth_first(&given, given_source)?;
        let renumbered = relabeling.apply(&given)?;
        // The searches need only the renumbered copy: half the memory for the rest of the run.
        drop(given);
        (renumbered, Some(relabeling))
    } else {
        (given, None)
    };
    let order_ms = t.elapsed().as_secs_f64() * 1e3;
    if save_searched {
        save(&graph)?;
    }
    let source = relabeling
        .as_ref()
        .map_or(given_source, |r| r.new_of(given_source));
    // Beside the graph: the reference and each search's distances and frontiers (about 32
    // bytes per vertex), and for the device modes the graph's copy in SVM.
    let per_vertex = (graph.vertices() as u64).saturating_mul(32);
    let device_copy = if use_gpu || use_coop {
        (graph.edges() as u64) * 8 + (graph.vertices() as u64) * 4
    } else {
        0
    };
    host_memory::ensure_available(
        per_vertex.saturating_add(device_copy),
        &format!(
            "the searches on {name} ({} vertices, {} edges)",
            graph.vertices(),
            graph.edges()
        ),
    )?;
    progress.step("Dijkstra".into());
    let t = Instant::now();
    let reference = graph.dijkstra(source)?;
    let dijkstra_ms = t.elapsed().as_secs_f64() * 1e3;
    progress.step("parallel searches".into());
    let reached = reference.iter().filter(|&&d| d != UNREACHABLE).count();
    let mut rows = vec![Row {
        mode: "seq".into(),
        order: "dijkstra",
        ms: dijkstra_ms,
        stats: SsspStats {
            visited: reached as u64,
            ..Default::default()
        },
        check: Ok(()),
        set: None,
        delta: None,
        runs: 1,
        ms_min: dijkstra_ms,
        ms_max: dijkstra_ms,
        coop: None,
    }];
    let widths: Vec<u32> = {
        let mut w = Vec::new();
        for width in delta_widths
            .iter()
            .map(|w| w.unwrap_or_else(|| delta::auto_delta(&graph)))
        {
            if !w.contains(&width) {
                w.push(width);
            }
        }
        w
    };
    let mut push = |mode: &str,
                    order: &'static str,
                    timed: Timed,
                    set: Option<serde_json::Value>,
                    delta: Option<u32>| {
        rows.push(Row {
            mode: mode.into(),
            order,
            ms: timed.ms,
            check: timed.check,
            stats: timed.run.stats,
            delta,
            runs: timed.runs,
            ms_min: timed.min,
            ms_max: timed.max,
            set,
            coop: timed.coop,
        })
    };
    let mut device_label = None;
    let labels: Vec<String> = set.as_ref().map_or(Vec::new(), |s| {
        s.members().iter().map(|rt| rt.profile().label()).collect()
    });
    let pool = if use_cpu || use_coop {
        Some(LatencyPool::with_threads(args.threads)?)
    } else {
        None
    };
    if let (Some(pool), true) = (&pool, use_cpu) {
        for o in [Order::Frontier, order] {
            let t = Instant::now();
            let run = cpu::shortest_paths(&graph, source, pool, o)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            push(
                "cpu",
                order_name(o),
                Timed::once(run, ms, &reference),
                None,
                None,
            );
            progress.step("cpu search".into());
        }
        for &width in &widths {
            let timed = Timed::repeat(args.repeat, &reference, || {
                Ok((delta::shortest_paths(&graph, source, pool, width)?, None))
            })?;
            push("cpu", "delta", timed, None, Some(width));
            progress.step("cpu delta-stepping".into());
        }
    }
    if let Some(set) = &set {
        let rt = set.members()[0].clone();
        device_label = Some(
            set.members()
                .iter()
                .map(|rt| format!("{} ({} SVM)", rt.profile().label(), rt.transport()))
                .collect::<Vec<_>>()
                .join(" + "),
        );
        if use_coop && members > 1 {
            eprintln!(
                "sssp: coop mode runs on the first device of the set ({})",
                rt.profile().label()
            );
        }
        let device = DeviceHeapConfig {
            work_groups: args.work_groups,
            bulk: args.bulk,
            ..DeviceHeapConfig::new(args.batch)
        };
        let coop = CooperativeConfig::on(device.clone()).with_refill(args.refill);
        let (device, coop) = (
            HeapPlacement::Device(device),
            HeapPlacement::Cooperative(coop),
        );
        let mut dev = DeviceSssp::new(&rt, &graph)?;
        if let Some(rounds) = args.local_rounds {
            dev.set_local_rounds(rounds)?;
        }
        if args.resident_groups.is_some() {
            dev.set_resident_iterations(None, args.resident_groups)?;
        }
        // A first search builds the device heap's program (cached afterwards) and warms the
        // graph's pages: not timed.
        dev.shortest_paths(source, order, &device)?;
        let mut runs = Vec::new();
        if use_gpu && members <= 1 {
            runs.extend([("gpu", Order::Frontier, &device), ("gpu", order, &device)]);
        }
        if use_coop {
            runs.push(("coop", order, &coop));
        }
        for (mode, o, heap) in runs {
            let t = Instant::now();
            let run = dev.shortest_paths(source, o, heap)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            push(
                mode,
                order_name(o),
                Timed::once(run, ms, &reference),
                None,
                None,
            );
            progress.step(format!("{mode} search"));
        }
        if use_gpu && members <= 1 {
            for &width in &widths {
                // Untimed first: it allocates the near-far lists.
                dev.delta_stepping(source, width)?;
                let timed = Timed::repeat(args.repeat, &reference, || {
                    Ok((dev.delta_stepping(source, width)?, None))
                })?;
                push("gpu", "delta", timed, None, Some(width));
                progress.step("gpu delta-stepping".into());
            }
        }
        if let (true, Some(pool)) = (use_coop, &pool) {
            for &width in &widths {
                // Untimed first: the near-far lists, and an adaptive split's measurements
                // (learnt again for each width).
                progress
                    .bar
                    .set_message("coop delta-stepping: learning the split");
                let mut split = coop_split;
                dev.cooperative_delta_stepping(pool, source, width, &mut split)?;
                for _ in 1..10 {
                    if !split.is_learning() {
                        break;
                    }
                    dev.cooperative_delta_stepping(pool, source, width, &mut split)?;
                }
                let timed = Timed::repeat(args.repeat, &reference, || {
                    let run = dev.cooperative_delta_stepping(pool, source, width, &mut split)?;
                    Ok((run.run, Some(run.coop)))
                })?;
                push("coop", "delta", timed, None, Some(width));
                progress.step("coop delta-stepping".into());
            }
        }
        drop(dev);
        if use_gpu && members > 1 {
            // With cpu mode too, the latency threads are one more worker of the set (coop-set
            // rows); their search alone is the cpu rows.
            let mut spread = SpreadSssp::new(set, &graph)?;
            let name = match &pool {
                Some(pool) => {
                    spread = spread.with_latency_threads(pool);
                    "coop-set"
                }
                None => "gpu-set",
            };
            for o in [Order::Frontier, order] {
                // Untimed: the set's trials (each plan twice), which also warm every member.
                progress.bar.set_message("device-set trials");
                while spread.shortest_paths(source, o, &device)?.exploring {}
                let mut runners: Vec<(String, Option<SetPlan>)> = vec![
                    (name.into(), None),
                    (format!("{name}:together"), Some(SetPlan::Together)),
                ];
                runners.extend((0..members).map(|i| (format!("gpu@{i}"), Some(SetPlan::Alone(i)))));
                for (mode, plan) in runners {
                    // Each row runs once untimed first: a search on the host's cores (PoCL)
                    // slows the host work of the search after it (the heap's, 14-19 % on the
                    // H200 machine), whichever row that is.
                    let mut timed = None;
                    for _ in 0..2 {
                        let t = Instant::now();
                        let run = match plan {
                            Some(p) => spread.shortest_paths_as(p, source, o, &device)?,
                            None => spread.shortest_paths(source, o, &device)?,
                        };
                        timed = Some((run, t.elapsed().as_secs_f64() * 1e3));
                    }
                    let (run, ms) = timed.expect("ran");
                    let set_info = json!({
                        "plan": plan_name(run.plan),
                        "exploring": run.exploring,
                        "redone_entries": run.redone_entries,
                        "shares": shares_text(&run),
                        "members": run.members.iter().map(|m| json!({
                            "member": m.member, "device": m.worker, "entries": m.items,
                            "iterations": m.pieces, "busy_ms": m.busy_s * 1e3,
                            "entries_per_s": m.items_per_s, "error": m.error,
                        })).collect::<Vec<_>>(),
                    });
                    let timed = Timed::once(run.run, ms, &reference);
                    push(&mode, order_name(o), timed, Some(set_info), None);
                    progress.step(format!("{mode} search"));
                }
            }
            for (device, error) in spread.failed_devices() {
                eprintln!("sssp: {device} failed during a search and was left out: {error}");
            }
        }
    }
    progress.bar.finish_and_clear();
    if let Some(path) = &args.output {
        match &relabeling {
            Some(r) => write_output(path, &r.distances_back(&reference)?)?,
            None => write_output(path, &reference)?,
        }
    }
    let all_ok = rows.iter().all(|r| r.check.is_ok());
    // Each mode against the frontier search on the same engine (coop expands on the device).
    let baseline = |mode: &str| {
        let engine = if mode == "coop" { "gpu" } else { mode };
        rows.iter()
            .find(|r| r.mode == engine && r.order == "frontier")
            .map(|r| r.ms)
    };
    // The device a row ran on: a member (gpu@i; coop and gpu on the first), or the set.
    let device_of = |mode: &str| -> Option<String> {
        if let Some(i) = mode.strip_prefix("gpu@") {
            return i.parse::<usize>().ok().and_then(|i| labels.get(i).cloned());
        }
        match mode {
            m if m.starts_with("gpu-set") || m.starts_with("coop-set") => device_label.clone(),
            "gpu" | "coop" => labels.first().cloned(),
            _ => None,
        }
    };
    let on_set = rows.iter().any(|r| r.set.is_some());
    if args.json {
        for r in &rows {
            println!(
                "{}",
                json!({
                    "graph": name, "vertices": graph.vertices(), "edges": graph.edges(),
                    "source": given_source + 1, "source_searched": source + 1,
                    "vertex_order": args.vertex_order.trim(), "order_ms": order_ms,
                    "reached": reached, "mode": r.mode, "order": r.order,
                    "threshold": args.threshold, "pop": args.pop.unwrap_or(args.threshold),
                    "batch": args.batch, "ms": r.ms, "runs": r.runs,
                    "ms_min": r.ms_min, "ms_max": r.ms_max,
                    "heap_ms": r.stats.heap_time.as_secs_f64() * 1e3,
                    "compute_ms": r.stats.compute_time.as_secs_f64() * 1e3,
                    "wait_ms": r.stats.wait_time.as_secs_f64() * 1e3,
                    "transfer_ms": r.stats.transfer_time.as_secs_f64() * 1e3,
                    "iterations": r.stats.iterations, "visited": r.stats.visited,
                    "stale": r.stats.stale, "heap_inserted": r.stats.heap_inserted,
                    "relaxed": r.stats.relaxed, "buckets": r.stats.buckets,
                    "launches": r.stats.launches,
                    "speedup_vs_frontier": baseline(&r.mode).map(|b| b / r.ms),
                    "speedup_vs_dijkstra": dijkstra_ms / r.ms,
                    "device": device_of(&r.mode),
                    "set": r.set, "delta": r.delta,
                    "coop": r.coop.as_ref().map(coop_json),
                    "verified": r.check.is_ok(),
                })
            );
        }
    } else {
        println!(
            "{name}: {} vertices, {} edges, source {}, {reached} reached{}{}",
            graph.vertices(),
            graph.edges(),
            given_source + 1,
            if renumber {
                format!(", searched in breadth-first order (renumbered in {order_ms:.1} ms)")
            } else {
                String::new()
            },
            device_label
                .as_ref()
                .map_or(String::new(), |d| format!(", device {d}"))
        );
        let mut columns = vec![
            "mode",
            "order",
            ">ms",
            ">heap ms",
            ">comp ms",
            ">iters",
            ">visited",
            ">vs front",
            ">vs dijk",
            "check",
        ];
        if on_set {
            columns.push("set: plan, shares of the entries");
        }
        let on_coop = rows.iter().any(|r| r.coop.is_some());
        if on_coop {
            columns.push("coop: vertices expanded, stints, split");
        }
        let repeated = rows.iter().any(|r| r.runs > 1);
        if repeated {
            // Right after the time: the fastest and slowest of the row's searches.
            columns.insert(3, ">of runs, min-max");
        }
        let mut table = cli::Table::new(&columns);
        for r in &rows {
            let mut cells = vec![
                r.mode.to_string(),
                match r.delta {
                    Some(width) => format!("{} {width}", r.order),
                    None => r.order.to_string(),
                },
                format!("{:.2}", r.ms),
                format!("{:.2}", r.stats.heap_time.as_secs_f64() * 1e3),
                format!("{:.2}", r.stats.compute_time.as_secs_f64() * 1e3),
                r.stats.iterations.to_string(),
                r.stats.visited.to_string(),
                baseline(&r.mode).map_or("-".into(), |b| format!("{:.2}x", b / r.ms)),
                format!("{:.2}x", dijkstra_ms / r.ms),
                match &r.check {
                    Ok(()) => "= Dijkstra".to_string(),
                    Err(e) => format!("DIFFERENT: {e}"),
                },
            ];
            if repeated {
                cells.insert(
                    3,
                    if r.runs > 1 {
                        format!("{} runs, {:.2}-{:.2}", r.runs, r.ms_min, r.ms_max)
                    } else {
                        "-".into()
                    },
                );
            }
            if on_coop {
                cells.push(r.coop.as_ref().map_or(String::new(), coop_text));
            }
            if on_set {
                cells.push(r.set.as_ref().map_or(String::new(), |s| {
                    format!(
                        "{}: {}",
                        s["plan"].as_str().unwrap_or("?"),
                        s["shares"].as_str().unwrap_or("")
                    )
                }));
            }
            table.row(cells);
        }
        table.print();
    }
    Ok(all_ok)
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args = Args::parse();
    cli::finish("sssp", "distances differ from Dijkstra's", run(&args))
}
