//! sssp as one rank of an MPI job (a build with `--features mpi`, launched by `mpirun -np N`
//! with N > 1): delta-stepping across the ranks
//! ([`asym_apps::sssp::distributed`]), every rank expanding the vertices it owns on its
//! latency threads (`--mode cpu`) or its device (`--mode gpu`, one device per rank on a host).
//!
//! Every rank reads or generates the same graph and renumbers it the same way, gives each
//! rank a range of vertices (or blocks dealt in turn, `--rank-block`), and keeps only the
//! edges its own vertices own; rank 0 keeps
//! the whole graph for Dijkstra's reference, prints the table and writes `--output` (the
//! distances the ranks found, in the graph's own numbering). A row is a mode and a bucket
//! width: `--repeat` searches after one untimed search, each gathered and checked against
//! Dijkstra on rank 0; the time is rank 0's, from a barrier to the search's last agreement.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use asym_apps::graph::Relabeling;
use asym_apps::io::output;
use asym_apps::progress::Progress;
use asym_apps::sssp::distributed::{
    gather_distances, PartEngine, RankSssp, RankSsspStats, VertexPartition,
};
use asym_apps::sssp::{check_distances, delta};
use asym_apps::{cli, ranks};
use asym_mpi::Cluster;
use asym_runtime::{Error, LatencyPool, Mode, Result};
use serde_json::json;

use super::{load, parse_widths, write_output, Args};

/// Runs sssp as this rank of the job.
pub(crate) fn main(args: &Args) -> ExitCode {
    let cluster = match ranks::init("sssp") {
        Ok(c) => c,
        Err(code) => return code,
    };
    let outcome = run(&cluster, args);
    ranks::finish(
        &cluster,
        "sssp",
        "distances differ from Dijkstra's",
        outcome,
    )
}

/// The modes a distributed run takes: cpu (threads) and gpu (devices).
fn check_flags(args: &Args) -> Result<Vec<Mode>> {
    let modes = cli::words::<Mode>("--mode", &args.mode)?;
    if modes.contains(&Mode::Cooperative) && args.mode.trim() != "all" {
        return Err(Error::flag(
            "--mode",
            &args.mode,
            "cpu or gpu under MPI (each rank expands its vertices on its latency threads or \
             its device; cooperative delta-stepping runs on one host)",
        ));
    }
    if args.source == Some(0) {
        return Err(Error::flag("--source", 0, "vertices are numbered from 1"));
    }
    if args.save_graph.is_some() && args.save_graph_order.trim() != "given" {
        return Err(Error::flag(
            "--save-graph-order",
            &args.save_graph_order,
            "given under MPI",
        ));
    }
    cli::one_of("--vertex-order", &args.vertex_order, &["bfs", "given"])?;
    Ok(modes
        .into_iter()
        .filter(|&m| m != Mode::Cooperative)
        .collect())
}

/// The graph as every rank searches it: this rank's part and, on rank 0, the whole graph's
/// reference distances.
struct Prepared {
    name: String,
    vertices: usize,
    edges: usize,
    max_weight: u32,
    given_source: usize,
    source: usize,
    relabeling: Option<Relabeling>,
    partition: VertexPartition,
    part: asym_apps::graph::Graph,
    widths: Vec<u32>,
    /// Rank 0: Dijkstra's distances (searched numbering), its time, the vertices reached.
    reference: Option<(Vec<u64>, f64, usize)>,
}

/// Every rank does the same (a bad file or source fails alike everywhere); rank 0 also saves
/// the graph and runs Dijkstra. The caller agrees on the outcome.
fn prepare(cluster: &Cluster, args: &Args) -> Result<Prepared> {
    let (name, given) = load(args, !cluster.is_root() || args.json)?;
    let given_source = args.source.map_or_else(|| given.hub(), |s| s - 1);
    given.check_source(given_source)?;
    if let (Some(path), true) = (&args.save_graph, cluster.is_root()) {
        output::write_whole_with(path, |out| given.write_dimacs(out))?;
    }
    let (graph, relabeling) = if args.vertex_order.trim() == "bfs" {
        let relabeling = Relabeling::breadth_first(&given, given_source)?;
        (relabeling.apply(&given)?, Some(relabeling))
    } else {
        (given, None)
    };
    let source = relabeling
        .as_ref()
        .map_or(given_source, |r| r.new_of(given_source));
    let mut widths = Vec::new();
    for w in parse_widths(&args.delta)? {
        let w = w.unwrap_or_else(|| delta::auto_delta(&graph));
        if !widths.contains(&w) {
            widths.push(w);
        }
    }
    let partition = match args.rank_block {
        Some(block) => VertexPartition::block_cyclic(graph.vertices(), cluster.size(), block)?,
        None => VertexPartition::ranges(graph.vertices(), cluster.size())?,
    };
    let me = cluster.rank();
    let part = graph.rows_of(|v| partition.owner(v as u32) == me)?;
    let reference = if cluster.is_root() {
        let t = Instant::now();
        let reference = graph.dijkstra(source)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let reached = reference.iter().filter(|&&d| d != u64::MAX).count();
        Some((reference, ms, reached))
    } else {
        None
    };
    Ok(Prepared {
        name,
        vertices: graph.vertices(),
        edges: graph.edges(),
        max_weight: graph.max_weight(),
        given_source,
        source,
        relabeling,
        partition,
        part,
        widths,
        reference,
    })
}

/// One row: a mode at one bucket width.
struct Row {
    mode: Mode,
    width: u32,
    /// Rank 0's median, fastest and slowest search (ms), and the searches.
    ms: f64,
    ms_min: f64,
    ms_max: f64,
    runs: usize,
    /// The median search's phases and buckets, and every rank's figures.
    phases: u64,
    buckets: u64,
    per_rank: Vec<RankSsspStats>,
    /// Rank 0: the first difference from Dijkstra found.
    check: std::result::Result<(), String>,
}

fn run(cluster: &Cluster, args: &Args) -> Result<bool> {
    let modes = cluster.agree("checking the flags", check_flags(args))?;
    let writable = match cluster.is_root() {
        true => args
            .output
            .iter()
            .chain(&args.save_graph)
            .try_for_each(|p| output::check_writable(p)),
        false => Ok(()),
    };
    cluster.agree("checking --output", writable)?;
    let pool = if modes.contains(&Mode::CpuOnly) {
        Some(cluster.agree(
            "starting the latency threads",
            cluster.latency_pool(args.threads),
        )?)
    } else {
        None
    };
    let (rt, device) = if modes.contains(&Mode::GpuOnly) {
        let opened = cluster.device(args.device.as_deref());
        let (rt, at, of) = cluster.agree("opening this rank's device", opened)?;
        let label = format!("{} (device {at} of {of})", rt.profile().label());
        (Some(rt), label)
    } else {
        (None, "no device".to_string())
    };
    let line = format!(
        "{device}, {} latency threads, on {}\n",
        pool.as_ref().map_or(0, LatencyPool::len),
        cluster.host()
    );
    let all = cluster.all_gather_varcount("gathering the ranks' devices", line.as_bytes())?;
    let devices: Vec<String> = String::from_utf8_lossy(&all)
        .lines()
        .map(str::to_string)
        .collect();
    let prep = cluster.agree("preparing the graph", prepare(cluster, args))?;
    let steps = (modes.len() * prep.widths.len()) as u64;
    let mut progress = Progress::new(steps, args.json || !cluster.is_root());
    let mut rows = Vec::new();
    let mut first_answer = None;
    for &mode in &modes {
        let engine = match (mode, &pool, &rt) {
            (Mode::CpuOnly, Some(pool), _) => PartEngine::Threads(pool),
            (_, _, Some(rt)) => PartEngine::Device(rt),
            _ => unreachable!("the pool and the device follow the modes"),
        };
        // Untimed: the part's upload (the device's program built), once per mode.
        let mut rank = RankSssp::new(cluster, &prep.part, &prep.partition, engine)?
            .with_rounds_per_phase(args.rank_rounds)?;
        for &width in &prep.widths {
            progress.bar.set_message(format!("{mode} delta {width}"));
            let (row, answer) = measure(cluster, args, &prep, mode, &mut rank, width)?;
            first_answer = first_answer.or(answer);
            rows.push(row);
            progress.step(format!("{mode} delta {width}"));
        }
    }
    progress.bar.finish_and_clear();
    if let (Some(path), Some(answer)) = (&args.output, &first_answer) {
        let written = match &prep.relabeling {
            Some(r) => r
                .distances_back(answer)
                .and_then(|d| write_output(path, &d)),
            None => write_output(path, answer),
        };
        cluster.agree("writing --output", written)?;
    } else if args.output.is_some() {
        cluster.agree("writing --output", Ok(()))?;
    }
    if cluster.is_root() {
        print(args, cluster, &prep, &devices, &rows);
    }
    let ok = rows.iter().all(|r| r.check.is_ok()) as u64;
    Ok(cluster.all_reduce_min("sharing the verdict", &[ok])[0] == 1)
}

/// A row's searches: one untimed, then `--repeat` timed, each checked on rank 0. Returns
/// the row and, on rank 0, the last search's distances (searched numbering).
fn measure(
    cluster: &Cluster,
    args: &Args,
    prep: &Prepared,
    mode: Mode,
    rank: &mut RankSssp<'_>,
    width: u32,
) -> Result<(Row, Option<Vec<u64>>)> {
    // Untimed: a first search, which warms the part's pages.
    let mut search = || rank.shortest_paths(prep.source, width);
    search()?;
    let mut done: Vec<(f64, RankSsspStats, Vec<Vec<u64>>)> = Vec::new();
    let mut check = Ok(());
    let mut answer = None;
    for _ in 0..args.repeat.max(1) {
        cluster.barrier("starting a search");
        let t = Instant::now();
        let found = search()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let (_, records) =
            cluster.agree_gathering("gathering the figures", Ok(()), &found.stats.record())?;
        let distances = gather_distances(cluster, &prep.partition, &found.words, prep.max_weight)?;
        if let (Some(d), Some((reference, _, _))) = (&distances, &prep.reference) {
            if check.is_ok() {
                check = check_distances(d, reference);
            }
        }
        answer = distances;
        done.push((ms, found.stats, records));
    }
    done.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (ms_min, ms_max, runs) = (done[0].0, done[done.len() - 1].0, done.len());
    let (ms, stats, records) = done.swap_remove(runs / 2);
    let row = Row {
        mode,
        width,
        ms,
        ms_min,
        ms_max,
        runs,
        phases: stats.phases,
        buckets: stats.buckets,
        per_rank: records
            .iter()
            .map(|r| RankSsspStats::from_record(r))
            .collect(),
        check,
    };
    Ok((row, answer))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn print(args: &Args, cluster: &Cluster, prep: &Prepared, devices: &[String], rows: &[Row]) {
    let ranks = cluster.size();
    let (dijkstra_ms, reached) = prep
        .reference
        .as_ref()
        .map_or((0.0, 0), |(_, ms, reached)| (*ms, *reached));
    if args.json {
        for r in rows {
            let visited: u64 = r.per_rank.iter().map(|p| p.visited).sum();
            let sent: u64 = r.per_rank.iter().map(|p| p.sent).sum();
            let line = json!({
                "graph": prep.name, "vertices": prep.vertices, "edges": prep.edges,
                "source": prep.given_source + 1, "source_searched": prep.source + 1,
                "vertex_order": args.vertex_order.trim(), "reached": reached,
                "mode": r.mode.to_string(), "order": "delta", "delta": r.width,
                "ranks": ranks, "devices": devices, "rank_rounds": args.rank_rounds,
                "ms": r.ms, "runs": r.runs, "ms_min": r.ms_min, "ms_max": r.ms_max,
                "phases": r.phases, "buckets": r.buckets, "visited": visited,
                "sent": sent, "dijkstra_ms": dijkstra_ms,
                "speedup_vs_dijkstra": dijkstra_ms / r.ms,
                "mteps": prep.edges as f64 / r.ms / 1e3,
                "verified": r.check.is_ok(),
                "per_rank": r.per_rank.iter().enumerate().map(|(rank, p)| json!({
                    "rank": rank, "vertices": p.vertices, "edges": p.edges,
                    "share": p.edges as f64 / prep.edges.max(1) as f64,
                    "visited": p.visited, "sent": p.sent, "received": p.received,
                    "busy_ms": ms(p.busy), "waited_ms": ms(p.waited),
                })).collect::<Vec<_>>(),
            });
            asym_apps::report!("{line}");
        }
        return;
    }
    asym_apps::report!(
        "{}: {} vertices, {} edges, source {}, {} reached, delta-stepping over {ranks} MPI \
         ranks ({}); Dijkstra {:.2} ms",
        prep.name,
        prep.vertices,
        prep.edges,
        prep.given_source + 1,
        reached,
        match args.rank_block {
            Some(b) => format!("vertices dealt in blocks of {b}"),
            None => "one range of vertices per rank".to_string(),
        },
        dijkstra_ms
    );
    for (rank, device) in devices.iter().enumerate() {
        asym_apps::report!("rank {rank}: {device}");
    }
    let mut table = cli::Table::new(&[
        "mode",
        ">delta",
        ">ms",
        ">of runs, min-max",
        ">phases",
        ">visited",
        ">sent",
        ">slowest busy ms",
        ">most waited ms",
        ">vs dijk",
        "check",
        "edges per rank",
    ]);
    for r in rows {
        let most = |f: fn(&RankSsspStats) -> Duration| {
            r.per_rank.iter().map(|p| ms(f(p))).fold(0.0f64, f64::max)
        };
        table.row(vec![
            r.mode.to_string(),
            r.width.to_string(),
            format!("{:.2}", r.ms),
            format!("{} runs, {:.2}-{:.2}", r.runs, r.ms_min, r.ms_max),
            r.phases.to_string(),
            r.per_rank
                .iter()
                .map(|p| p.visited)
                .sum::<u64>()
                .to_string(),
            r.per_rank.iter().map(|p| p.sent).sum::<u64>().to_string(),
            format!("{:.2}", most(|p| p.busy)),
            format!("{:.2}", most(|p| p.waited)),
            format!("{:.2}x", dijkstra_ms / r.ms),
            match &r.check {
                Ok(()) => "= Dijkstra".to_string(),
                Err(e) => format!("DIFFERENT: {e}"),
            },
            r.per_rank
                .iter()
                .map(|p| p.edges.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
        ]);
    }
    table.print();
}
