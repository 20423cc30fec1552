//! The red-black tree seed's experiment: build a tree of random keys in SVM, then apply a
//! batch of inserts, deletes and searches, every phase checked against std `BTreeMap` and
//! the tree's invariants; std `BTreeMap` is also the peer, timed beside it.
//!
//! ```text
//! cargo run --release --bin rbtree                                   # 200,000 keys, 100,000 ops
//! cargo run --release --bin rbtree -- --initial-count 1000000 --ops-count 1000000 --json
//! cargo run --release --bin rbtree -- --initial keys.txt --ops ops.txt --output final.txt --search-output found.txt
//! ```
//!
//! Modes name where the work runs: `cpu` on the pinned latency threads, `gpu` on the device
//! (one work-item per operation), `coop` on both (updates shared by measured rates on the
//! fine transport, the faster side's on the coarse one; searches on the device). Inserts and
//! deletes run as rounds of locate and transactional apply with node locks taken in handle
//! order (structures/src/rbtree/update.rs); the build is the mode's insert of the initial
//! keys, or one device launch (`gpu`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use asym_apps::io::output;
use asym_apps::io::tree_files::{self, TreeOps};
use asym_runtime::{host_memory, Error, LatencyPool, Mode, Named, Result, Runtime};
use asym_structures::{Deleted, Found, RbTree, SearchOrder};
use clap::Parser;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde_json::json;

use asym_apps::cli;
use asym_apps::io::input::name_of;
use asym_apps::progress;
use progress::Progress;

#[derive(Parser, Debug)]
#[command(
    about = "A red-black tree in SVM: build it, then one batch of inserts, deletes and \
             searches, searched on CPU latency threads or the device, checked against BTreeMap"
)]
struct Args {
    /// Initial keys, one integer per line (default: --initial-count random keys).
    #[arg(long)]
    initial: Option<PathBuf>,
    /// One batch of operations, one per line: `insert K`, `insert K V`, `delete K` or
    /// `search K` (the batch may run in any order; here inserts, then deletes, then searches).
    #[arg(long)]
    ops: Option<PathBuf>,
    /// Generated: random initial keys.
    #[arg(long, default_value_t = 200_000)]
    initial_count: usize,
    /// Generated: operations in the batch.
    #[arg(long, default_value_t = 100_000)]
    ops_count: usize,
    /// Generated: the share of searches among the operations (the rest half inserts, half
    /// deletes of initial keys).
    #[arg(long, default_value_t = 0.5)]
    search_share: f64,
    /// Generated: random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Where the work runs: cpu (pinned latency threads), gpu (the device), coop (both),
    /// comma-separated, or all.
    #[arg(long, default_value = "all")]
    mode: String,
    /// How the device orders a batch of searches: auto (grouped by subtree for large
    /// batches into large trees), routed (always grouped) or arrival (as they come).
    #[arg(long, default_value = "auto", value_parser = cli::parse_word::<SearchOrder>)]
    search_order: SearchOrder,
    /// OpenCL device: part of its platform or device name.
    #[arg(long)]
    device: Option<String>,
    /// Latency threads (default: every CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// Write the final keys in order, one per line (from the last mode run).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Write, for each search in order, `K 1` if found and `K 0` if not.
    #[arg(long)]
    search_output: Option<PathBuf>,
    /// Check every phase against BTreeMap and the tree's invariants (default).
    #[arg(long, overrides_with = "no_check")]
    check: bool,
    /// Skip the checks.
    #[arg(long)]
    no_check: bool,
    /// One JSON object per phase and mode instead of a table.
    #[arg(long)]
    json: bool,
}

/// One timed phase of one mode (or of the peer).
struct Row {
    mode: &'static str,
    phase: &'static str,
    ops: usize,
    ms: f64,
    verified: Option<bool>,
    detail: String,
}

fn read(path: &Path) -> Result<String> {
    asym_apps::io::input::read_text(path)
}

/// The initial keys and the batch, from files or generated.
fn workload(args: &Args) -> Result<(Vec<i32>, TreeOps)> {
    let initial = match &args.initial {
        Some(p) => tree_files::parse_keys(&read(p)?, &name_of(p))?,
        None => {
            // Keys, the tree's nodes, BTreeMap's and the checks' copies: about 128 bytes a key.
            host_memory::ensure_available(
                (args.initial_count as u64).saturating_mul(128),
                "the initial keys, the tree and BTreeMap",
            )?;
            let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed);
            (0..args.initial_count).map(|_| rng.gen()).collect()
        }
    };
    let ops = match &args.ops {
        Some(p) => tree_files::parse_ops(&read(p)?, &name_of(p))?,
        None => {
            if !(0.0..=1.0).contains(&args.search_share) {
                return Err(Error::flag(
                    "search-share",
                    args.search_share.to_string(),
                    "a share between 0 and 1",
                ));
            }
            host_memory::ensure_available(
                (args.ops_count as u64).saturating_mul(128),
                "the operations and their answers",
            )?;
            let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed ^ 0x5eed);
            let searches = (args.ops_count as f64 * args.search_share).round() as usize;
            let updates = args.ops_count - searches;
            let mut ops = TreeOps::default();
            for i in 0..updates {
                if i % 2 == 0 || initial.is_empty() {
                    let k = rng.gen();
                    ops.inserts.push((k, u64::from(k as u32)));
                } else {
                    ops.deletes.push(initial[rng.gen_range(0..initial.len())]);
                }
            }
            for i in 0..searches {
                ops.searches.push(if i % 2 == 0 && !initial.is_empty() {
                    initial[rng.gen_range(0..initial.len())]
                } else {
                    rng.gen()
                });
            }
            ops
        }
    };
    Ok((initial, ops))
}

/// The peer: the same phases on std `BTreeMap` (searches over rayon's threads). Returns its
/// rows, the map after the batch, and its search answers.
fn peer(initial: &[i32], ops: &TreeOps) -> (Vec<Row>, BTreeMap<i32, u64>, Vec<bool>, usize) {
    let row = |phase, ops, started: Instant| Row {
        mode: "peer:btreemap",
        phase,
        ops,
        ms: started.elapsed().as_secs_f64() * 1e3,
        verified: None,
        detail: String::new(),
    };
    let mut rows = Vec::new();
    let t = Instant::now();
    let mut map: BTreeMap<i32, u64> = initial.iter().map(|&k| (k, u64::from(k as u32))).collect();
    rows.push(row("build", initial.len(), t));
    let t = Instant::now();
    for &(k, v) in &ops.inserts {
        map.insert(k, v);
    }
    rows.push(row("insert", ops.inserts.len(), t));
    let t = Instant::now();
    let missing = ops
        .deletes
        .iter()
        .filter(|k| map.remove(k).is_none())
        .count();
    rows.push(row("delete", ops.deletes.len(), t));
    let t = Instant::now();
    let found: Vec<bool> = ops
        .searches
        .par_iter()
        .map(|k| map.contains_key(k))
        .collect();
    rows.push(row("search", ops.searches.len(), t));
    (rows, map, found, missing)
}

fn run(args: &Args) -> Result<bool> {
    for path in [&args.output, &args.search_output].into_iter().flatten() {
        output::check_writable(path)?;
    }
    let modes = cli::words::<Mode>("--mode", &args.mode)?;
    let (initial, ops) = workload(args)?;
    let check = !args.no_check;
    let rt = Runtime::on_device(args.device.as_deref())?;
    let pool = LatencyPool::with_threads(args.threads)?;
    let (mut rows, map, peer_found, peer_missing) = peer(&initial, &ops);
    let mut progress = Progress::new(modes.len() as u64 * 4, args.json);
    let mut all_ok = true;
    let mut last: Option<(Vec<i32>, Vec<bool>)> = None;
    for &mode in &modes {
        let mut tree = RbTree::<i32>::new(&rt, initial.len() + ops.inserts.len())?;
        tree.set_search_order(args.search_order);
        let mut reference: BTreeMap<i32, u64> = BTreeMap::new();
        let mut phase = |name: &'static str, n: usize, ms: f64, ok: Option<bool>, detail| {
            all_ok &= ok.unwrap_or(true);
            rows.push(Row {
                mode: mode.name(),
                phase: name,
                ops: n,
                ms,
                verified: ok,
                detail,
            });
        };
        let side = mode;
        if side.uses_device() {
            // Untimed: the first launches build the tree's programs.
            let mut warm = RbTree::<i32>::new(&rt, 16)?;
            warm.insert_in(side, &[(1, 1)], &pool)?;
            warm.delete_in(side, &[1], &pool)?;
        }
        let rounds = |t: &RbTree<i32>| {
            let s = t.last_update();
            format!(
                "{} rounds ({} over the pending list), {} conflicts, {} on host; ms: sort {:.1}, \
                 setup {:.1}, rounds {:.1}, finish {:.1}",
                s.rounds,
                s.listed_rounds,
                s.conflicts,
                s.finished_on_host,
                s.sort_ms,
                s.setup_ms,
                s.rounds_ms,
                s.finish_ms
            )
        };
        // Build: the initial keys (one device launch in gpu mode, else the mode's insert).
        progress.step(format!("{mode}: build"));
        let items: Vec<(i32, u64)> = initial.iter().map(|&k| (k, u64::from(k as u32))).collect();
        let t = Instant::now();
        if side == Mode::GpuOnly {
            tree.build_on_device(&items)?;
        } else {
            tree.insert_in(side, &items, &pool)?;
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let detail = if side == Mode::GpuOnly {
            "one launch".into()
        } else {
            rounds(&tree)
        };
        let ok = check.then(|| {
            reference.extend(items.iter().copied());
            agrees(&mut tree, &reference)
        });
        phase("build", items.len(), ms, ok.transpose()?, detail);
        // Inserts.
        progress.step(format!("{mode}: insert"));
        let t = Instant::now();
        tree.insert_in(side, &ops.inserts, &pool)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let detail = rounds(&tree);
        let ok = check.then(|| {
            reference.extend(ops.inserts.iter().copied());
            agrees(&mut tree, &reference)
        });
        phase("insert", ops.inserts.len(), ms, ok.transpose()?, detail);
        // Deletes, missing keys reported.
        progress.step(format!("{mode}: delete"));
        let t = Instant::now();
        let deleted = tree.delete_in(side, &ops.deletes, &pool)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let missing = deleted.iter().filter(|d| **d == Deleted::Missing).count();
        let detail = format!("{missing} missing, {}", rounds(&tree));
        let ok = check.then(|| {
            ops.deletes.iter().for_each(|k| {
                reference.remove(k);
            });
            Ok::<_, Error>(missing == peer_missing && agrees(&mut tree, &reference)?)
        });
        phase("delete", ops.deletes.len(), ms, ok.transpose()?, detail);
        // Searches, where the mode says.
        progress.step(format!("{mode}: search"));
        if side.uses_device() && !ops.searches.is_empty() {
            // Untimed: the first launch builds the search program.
            tree.search_on_device(&ops.searches[..1])?;
        }
        let t = Instant::now();
        let found: Vec<bool> = if side.uses_device() {
            tree.search_on_device(&ops.searches)?
                .into_iter()
                .map(|f| matches!(f, Found::Value(_)))
                .collect()
        } else {
            tree.search_on_threads(&ops.searches, &pool)?
                .into_iter()
                .map(|f| f.is_some())
                .collect()
        };
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let hits = found.iter().filter(|f| **f).count();
        let ok = check.then(|| found == peer_found && reference == map);
        let detail = if side.uses_device() {
            let order = tree.search_order_for(ops.searches.len());
            format!("{hits} found, {} order", order.name())
        } else {
            format!("{hits} found")
        };
        phase("search", ops.searches.len(), ms, ok, detail);
        last = Some((tree.entries()?.into_iter().map(|(k, _)| k).collect(), found));
    }
    progress.bar.finish_and_clear();
    if let Some((keys, found)) = &last {
        if let Some(p) = &args.output {
            output::write_whole(p, tree_files::keys_text(keys.iter().copied()).as_bytes())?;
        }
        if let Some(p) = &args.search_output {
            output::write_whole(p, tree_files::search_text(&ops.searches, found).as_bytes())?;
        }
    }
    report(args, &rt, &pool, &rows);
    Ok(all_ok)
}

/// Whether the tree holds exactly `reference` and keeps every invariant (an error if not
/// valid: that is a bug, not a mismatch of answers).
fn agrees(tree: &mut RbTree<i32>, reference: &BTreeMap<i32, u64>) -> Result<bool> {
    tree.validate()?;
    let entries = tree.entries()?;
    Ok(entries.len() == reference.len()
        && entries
            .iter()
            .zip(reference)
            .all(|(&(k, v), (&rk, &rv))| k == rk && v == rv))
}

fn report(args: &Args, rt: &Runtime, pool: &LatencyPool, rows: &[Row]) {
    let peer_ms = |phase: &str| {
        rows.iter()
            .find(|r| r.mode == "peer:btreemap" && r.phase == phase)
            .map(|r| r.ms)
    };
    if args.json {
        for r in rows {
            asym_apps::report!(
                "{}",
                json!({
                    "mode": r.mode, "phase": r.phase, "ops": r.ops, "ms": r.ms,
                    "mkeys_per_s": r.ops as f64 / r.ms.max(1e-9) / 1e3,
                    "vs_peer": peer_ms(r.phase).map(|p| p / r.ms.max(1e-9)),
                    "verified": r.verified, "detail": r.detail,
                    "device": rt.profile().label(), "transport": rt.transport().to_string(),
                    "threads": pool.len(),
                })
            );
        }
        return;
    }
    asym_apps::report!(
        "red-black tree: device {} ({} SVM), {} latency threads; peer: BTreeMap on one \
         thread (searches on rayon's threads)",
        rt.profile().label(),
        rt.transport(),
        pool.len()
    );
    let mut table = cli::Table::new(&[
        "phase", "mode", "ops", "ms", "Mkeys/s", "vs peer", "verified", "",
    ]);
    for phase in ["build", "insert", "delete", "search"] {
        for r in rows.iter().filter(|r| r.phase == phase) {
            table.row(vec![
                r.phase.into(),
                r.mode.into(),
                r.ops.to_string(),
                format!("{:.2}", r.ms),
                format!("{:.1}", r.ops as f64 / r.ms.max(1e-9) / 1e3),
                peer_ms(phase).map_or("-".into(), |p| format!("{:.2}x", p / r.ms.max(1e-9))),
                match r.verified {
                    Some(true) => "yes".into(),
                    Some(false) => "NO".into(),
                    None => "-".into(),
                },
                r.detail.clone(),
            ]);
        }
    }
    table.print();
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args: Args = cli::parse_args();
    cli::finish("rbtree", "an answer differs from BTreeMap's", run(&args))
}
