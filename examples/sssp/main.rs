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
//! Every search goes through the one front, [`Sssp`]: a mode and an order per row.
//! `--device all` (or a comma-separated list) runs gpu mode on a device set: the set as it
//! settles after its untimed trials (`gpu-set`, with the plan it chose), the set forced
//! together (`gpu-set:together`, every iteration's frontier split by measured speed, merged
//! on the fastest member), and each member alone (rows `gpu@i`), each member's share shown;
//! each of these rows is the second of two runs. Coop mode on a set runs the same rows with
//! the latency threads as one more worker (`coop-set`, `coop-set:together`), and its
//! delta-stepping on the set's first device.

#[cfg(feature = "mpi")]
mod distributed;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use asym_apps::graph::{Graph, MtxOptions, Relabeling, UNREACHABLE};
use asym_apps::io::output;
use asym_apps::sssp::coop_delta::{CoopSplit, CoopStats};
use asym_apps::sssp::front::{Sssp, SsspOptions};
use asym_apps::sssp::spread::{SetPlan, SetReport};
use asym_apps::sssp::{check_distances, delta, Order, SsspRun, SsspStats};
use asym_runtime::{host_memory, DeviceSet, Error, LatencyPool, Mode, Result};
use asym_structures::{BulkPolicy, DeviceHeapConfig};
use clap::Parser;

use asym_apps::cli;
use asym_apps::io::input::name_of;
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
    /// Frontier and delta-stepping rows: searches per row, all checked; a row shows the
    /// median time (--json also the fastest and the slowest).
    #[arg(long, default_value_t = 1, value_parser = cli::count(1, 1000))]
    repeat: usize,
    /// Coop delta-stepping: rounds with this many edges or more to scan go to the device,
    /// buckets opening with a quarter of that go back to the latency threads; auto learns it
    /// from the searches' measured times (untimed searches first, until it settles: at most 10).
    /// The table and --json name the split and each side's share.
    #[arg(long, default_value = "auto")]
    coop_split: String,
    /// Keys per heap node (K) of the heap-ordered rows: a power of two, up to 65536 on the
    /// latency threads (cpu) and from 2 to 2048 on the device (gpu, coop).
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
    /// Device delta-stepping on GPUs: buckets without iterations inside them (each
    /// work-group goes on with the vertices it lowered; for measurements).
    #[arg(long, hide = true)]
    async_buckets: bool,
    /// Under MPI: vertices per block dealt to the ranks in turn (default: one range of
    /// vertices per rank).
    #[arg(long, value_parser = cli::count(1, u32::MAX as u64))]
    rank_block: Option<usize>,
    /// Under MPI: local rounds a rank runs in one bucket phase before the exchange (default:
    /// until its part of the bucket settles as far as it can see).
    #[arg(long, value_parser = cli::count(1, u32::MAX as u64))]
    rank_rounds: Option<usize>,
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

/// A set's plan as a row shows it.
fn plan_name(plan: SetPlan) -> String {
    match plan {
        SetPlan::Together => "together".into(),
        SetPlan::Alone(i) => format!("gpu@{i} alone"),
        SetPlan::LatencyThreads => "latency threads alone".into(),
    }
}

/// A set search's shares: `gpu@0 61% · gpu@1 39%` of the frontier entries expanded.
fn shares_text(run: &SetReport) -> String {
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

fn load(args: &Args, quiet: bool) -> Result<(String, Graph)> {
    let t = Instant::now();
    let (name, graph) = match &args.input {
        Some(path) => {
            let mtx = MtxOptions {
                unit_weights: args.unit_weights,
                real_scale: args.real_scale,
            };
            (name_of(path), Graph::read(path, &mtx)?)
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

/// The graph as the searches see it, its source and the reference they are checked against.
struct Prepared {
    name: String,
    graph: Graph,
    /// The source in the graph's own numbering, and as the searches number it.
    given_source: usize,
    source: usize,
    relabeling: Option<Relabeling>,
    /// Milliseconds the renumbering took.
    order_ms: f64,
    /// Dijkstra's distances and time.
    reference: Vec<u64>,
    dijkstra_ms: f64,
    reached: usize,
    /// The shortest paths' hop depth ([`Graph::hop_depth`]): the fewest dependent steps any
    /// search needs.
    hop_depth: usize,
}

/// Loads or generates the graph, saves it where asked, renumbers it and runs Dijkstra.
fn prepare(args: &Args, devices: bool, progress: &mut Progress) -> Result<Prepared> {
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
    let device_copy = if devices {
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
    let reached = reference.iter().filter(|&&d| d != UNREACHABLE).count();
    let hop_depth = graph.hop_depth(source, &reference)?;
    Ok(Prepared {
        name,
        graph,
        given_source,
        source,
        relabeling,
        order_ms,
        reference,
        dijkstra_ms,
        reached,
        hop_depth,
    })
}

/// The rows of one run: what each search did, checked against the reference.
struct Rows<'a> {
    rows: Vec<Row>,
    reference: &'a [u64],
    source: usize,
    repeat: usize,
    progress: Progress,
}

impl Rows<'_> {
    fn push(&mut self, mode: &str, order: Order, timed: Timed, set: Option<serde_json::Value>) {
        self.rows.push(Row {
            mode: mode.into(),
            order: order.name(),
            ms: timed.ms,
            check: timed.check,
            stats: timed.run.stats,
            delta: match order {
                Order::Delta { width } => Some(width),
                _ => None,
            },
            runs: timed.runs,
            ms_min: timed.min,
            ms_max: timed.max,
            set,
            coop: timed.coop,
        });
        self.progress.step(format!("{mode} {}", order.name()));
    }

    /// One search in `mode` and `order`, timed (frontier and delta-stepping: `--repeat`
    /// searches).
    fn search(&mut self, front: &mut Sssp<'_>, row: &str, mode: Mode, order: Order) -> Result<()> {
        let source = self.source;
        let timed = match order {
            Order::Delta { .. } | Order::Frontier => {
                Timed::repeat(self.repeat, self.reference, || {
                    let report = front.shortest_paths(source, mode, order)?;
                    Ok((report.run, report.coop))
                })?
            }
            _ => {
                let t = Instant::now();
                let report = front.shortest_paths(source, mode, order)?;
                let ms = t.elapsed().as_secs_f64() * 1e3;
                Timed::once(report.run, ms, self.reference)
            }
        };
        self.push(row, order, timed, None);
        Ok(())
    }

    /// The rows of a device set in `mode` (GpuOnly: `gpu-set`; Cooperative, the latency
    /// threads one more worker: `coop-set`): the set as it settles after its untimed trials,
    /// the set forced together, and each of the first `alone` members alone, each row the
    /// second of two runs.
    fn set_rows(
        &mut self,
        front: &mut Sssp<'_>,
        mode: Mode,
        order: Order,
        alone: usize,
    ) -> Result<()> {
        let name = if mode == Mode::Cooperative {
            "coop-set"
        } else {
            "gpu-set"
        };
        let source = self.source;
        // Untimed: the set's trials (each plan twice), which also warm every member.
        self.progress.bar.set_message("device-set trials");
        while front
            .shortest_paths(source, mode, order)?
            .set
            .is_some_and(|s| s.exploring)
        {}
        let mut runners: Vec<(String, Option<SetPlan>)> = vec![
            (name.into(), None),
            (format!("{name}:together"), Some(SetPlan::Together)),
        ];
        runners.extend((0..alone).map(|i| (format!("gpu@{i}"), Some(SetPlan::Alone(i)))));
        for (row, plan) in runners {
            // Each row runs once untimed first: a search on the host's cores (PoCL) slows
            // the host work of the search after it (the heap's), whichever row that is.
            let mut timed = None;
            for _ in 0..2 {
                let t = Instant::now();
                let report = match plan {
                    Some(p) => front.shortest_paths_as(p, source, mode, order)?,
                    None => front.shortest_paths(source, mode, order)?,
                };
                timed = Some((report, t.elapsed().as_secs_f64() * 1e3));
            }
            let Some((report, ms)) = timed else {
                continue;
            };
            let set_info = report.set.as_ref().map(|set| {
                json!({
                    "plan": plan_name(set.plan),
                    "exploring": set.exploring,
                    "redone_entries": set.redone_entries,
                    "shares": shares_text(set),
                    "members": set.members.iter().map(|m| json!({
                        "member": m.member, "device": m.worker, "entries": m.items,
                        "iterations": m.pieces, "busy_ms": m.busy_s * 1e3,
                        "entries_per_s": m.items_per_s, "error": m.error,
                    })).collect::<Vec<_>>(),
                })
            });
            let timed = Timed::once(report.run, ms, self.reference);
            self.push(&row, order, timed, set_info);
        }
        Ok(())
    }
}

/// The searches' options from the flags.
fn options(args: &Args) -> Result<SsspOptions> {
    let coop_split =
        match args.coop_split.trim() {
            "auto" => CoopSplit::adaptive(),
            n => CoopSplit::fixed(n.parse().map_err(|_| {
                Error::flag("--coop-split", n, "expected auto or a number of edges")
            })?)?,
        };
    Ok(SsspOptions {
        device_heap: DeviceHeapConfig {
            work_groups: args.work_groups,
            bulk: args.bulk,
            ..DeviceHeapConfig::new(args.batch)
        },
        refill: args.refill,
        coop_split,
        local_rounds: args.local_rounds,
        async_buckets: args.async_buckets,
        resident_groups: args.resident_groups,
    })
}

/// Which searches a run makes: its modes, the set's size, the heap order and the widths of
/// delta-stepping.
struct Wanted {
    cpu: bool,
    gpu: bool,
    coop: bool,
    members: usize,
    heap: Order,
    widths: Vec<Order>,
}

impl Wanted {
    /// Members a set's rows in `mode` run alone: coop's are gpu's where gpu runs too.
    fn alone(&self, mode: Mode) -> usize {
        if mode == Mode::Cooperative && self.gpu {
            0
        } else {
            self.members
        }
    }

    /// Every search of the run, a row each, through the one front.
    fn search(&self, rows: &mut Rows<'_>, front: &mut Sssp<'_>, source: usize) -> Result<()> {
        if self.cpu {
            for o in [Order::Frontier, self.heap].iter().chain(&self.widths) {
                rows.search(front, "cpu", Mode::CpuOnly, *o)?;
            }
        }
        if self.members == 1 {
            // A first search of each order builds the device heap's program (cached
            // afterwards), has PoCL compile the kernels for their work-group size and warms
            // the graph's pages: not timed.
            for o in [Order::Frontier, self.heap] {
                front.shortest_paths(source, Mode::GpuOnly, o)?;
            }
            if self.gpu {
                for o in [Order::Frontier, self.heap] {
                    rows.search(front, "gpu", Mode::GpuOnly, o)?;
                }
            }
            if self.coop {
                rows.search(front, "coop", Mode::Cooperative, self.heap)?;
            }
            if self.gpu {
                for &o in &self.widths {
                    // Untimed first: it allocates the near-far lists.
                    front.shortest_paths(source, Mode::GpuOnly, o)?;
                    rows.search(front, "gpu", Mode::GpuOnly, o)?;
                }
            }
        }
        if self.coop {
            for &o in &self.widths {
                // Untimed first: the near-far lists, and an adaptive split's measurements
                // (learnt again for each width).
                rows.progress
                    .bar
                    .set_message("coop delta-stepping: learning the split");
                front.restart_coop_split();
                for _ in 0..10 {
                    front.shortest_paths(source, Mode::Cooperative, o)?;
                    if !front.coop_split().is_learning() {
                        break;
                    }
                }
                rows.search(front, "coop", Mode::Cooperative, o)?;
            }
        }
        if self.members > 1 {
            for (mode, wanted) in [(Mode::GpuOnly, self.gpu), (Mode::Cooperative, self.coop)] {
                for o in [Order::Frontier, self.heap].into_iter().filter(|_| wanted) {
                    rows.set_rows(front, mode, o, self.alone(mode))?;
                }
            }
            for (device, error) in front.failed_devices() {
                eprintln!("sssp: {device} failed during a search and was left out: {error}");
            }
        }
        Ok(())
    }
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
    let heap = Order::Heap {
        threshold: args.threshold,
        pop: args.pop.unwrap_or(args.threshold),
        batch: args.batch,
    };
    let options = options(args)?;
    let set = if use_gpu || use_coop {
        Some(DeviceSet::open(args.device.as_deref())?)
    } else {
        None
    };
    let members = set.as_ref().map_or(0, DeviceSet::len);
    // Progress steps: over a set, gpu and coop run the set as chosen and the set together,
    // and once each member alone, in both orders; a single device the frontier and heap
    // orders (coop the heap order) and a delta row per width; coop delta-stepping a row per
    // width.
    let delta_widths = parse_widths(&args.delta)?;
    let w = delta_widths.len() as u64;
    let mut want = Wanted {
        cpu: use_cpu,
        gpu: use_gpu,
        coop: use_coop,
        members,
        heap,
        widths: Vec::new(),
    };
    let set_rows = |m: Mode| 2 * (want.alone(m) as u64 + 2);
    let (gpu_rows, coop_rows) = if members > 1 {
        (set_rows(Mode::GpuOnly), set_rows(Mode::Cooperative) + w)
    } else {
        (2 + w, 1 + w)
    };
    let steps = 2
        + (2 + w) * u64::from(use_cpu)
        + gpu_rows * u64::from(use_gpu)
        + coop_rows * u64::from(use_coop);
    let mut progress = Progress::new(steps, args.json);
    let prep = prepare(args, set.is_some(), &mut progress)?;
    let Prepared { graph, source, .. } = &prep;
    progress.step("parallel searches".into());
    let mut rows = Rows {
        rows: vec![Row {
            mode: "seq".into(),
            order: "dijkstra",
            ms: prep.dijkstra_ms,
            stats: SsspStats {
                visited: prep.reached as u64,
                ..Default::default()
            },
            check: Ok(()),
            set: None,
            delta: None,
            runs: 1,
            ms_min: prep.dijkstra_ms,
            ms_max: prep.dijkstra_ms,
            coop: None,
        }],
        reference: &prep.reference,
        source: *source,
        repeat: args.repeat,
        progress,
    };
    let mut widths: Vec<Order> = Vec::new();
    for width in delta_widths
        .iter()
        .map(|w| w.unwrap_or_else(|| delta::auto_delta(graph)))
    {
        if !widths.contains(&Order::Delta { width }) {
            widths.push(Order::Delta { width });
        }
    }
    let pool = if use_cpu || use_coop {
        Some(LatencyPool::with_threads(args.threads)?)
    } else {
        None
    };
    let mut front = Sssp::new(graph, options);
    if let Some(pool) = &pool {
        front = front.with_latency_threads(pool);
    }
    if let Some(set) = &set {
        front = front.with_devices(set);
    }
    want.widths = widths;
    want.search(&mut rows, &mut front, *source)?;
    rows.progress.bar.finish_and_clear();
    if let Some(path) = &args.output {
        match &prep.relabeling {
            Some(r) => write_output(path, &r.distances_back(&prep.reference)?)?,
            None => write_output(path, &prep.reference)?,
        }
    }
    let report = report::Report {
        args,
        prep: &prep,
        labels: set.as_ref().map_or(Vec::new(), |s| {
            s.members().iter().map(|rt| rt.profile().label()).collect()
        }),
        device_label: set.as_ref().map(|s| {
            s.members()
                .iter()
                .map(|rt| format!("{} ({} SVM)", rt.profile().label(), rt.transport()))
                .collect::<Vec<_>>()
                .join(" + ")
        }),
        rows: &rows.rows,
    };
    if args.json {
        report.print_json();
    } else {
        report.print_table();
    }
    Ok(rows.rows.iter().all(|r| r.check.is_ok()))
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args: Args = cli::parse_args();
    match asym_apps::ranks::as_ranks("sssp") {
        Err(code) => return code,
        #[cfg(feature = "mpi")]
        Ok(true) => return distributed::main(&args),
        _ => {}
    }
    cli::finish("sssp", "distances differ from Dijkstra's", run(&args))
}
