//! heap_bench as one rank of an MPI job (a build with `--features mpi`, launched by
//! `mpirun -np N` with N > 1): insert N keys, then delete them all, on the heap's key ranges
//! across ranks (`DistributedHeap`: each rank's range in the heap of `--mode` on its
//! latency threads or device), and the bulk sort across ranks (`sample_sort`).
//!
//! Rank r makes its share of the keys (keys r·N/P up to (r+1)·N/P of the pattern; random keys
//! from the counter-based key stream). The deletes are calls of `--delete` keys (default: all
//! of them in one call, as the one-host device rows do); each call takes the ranks in range
//! order, so calls smaller than a rank's range run on one rank at a time. Every run is checked: each rank's deletions ascend,
//! each batch's parts ascend from rank to rank and lie above the batch before, and every key
//! comes back once (counts and sums over all ranks).

use std::process::ExitCode;
use std::time::Instant;

use asym_apps::{cli, ranks, rng};
use asym_mpi::{sample_sort, Cluster, DistributedHeap};
use asym_runtime::{Error, Mode, Named, Result};
use asym_structures::{heap_for, HeapOptions};
use serde_json::json;

use super::Args;

/// Runs heap_bench as this rank of the job.
pub(crate) fn main(args: &Args) -> ExitCode {
    let cluster = match ranks::init("heap_bench") {
        Ok(c) => c,
        Err(code) => return code,
    };
    let outcome = run(&cluster, args);
    ranks::finish(
        &cluster,
        "heap_bench",
        "a run lost, duplicated or misordered keys",
        outcome,
    )
}

/// One row: a mode's heap (or the sort) at one batch size.
struct Row {
    what: String,
    pattern: &'static str,
    batch: usize,
    insert_ms: f64,
    delete_ms: f64,
    verified: bool,
    counts: Vec<u64>,
    rebalances: usize,
}

/// The flags, checked alike on every rank.
struct Asked {
    modes: Vec<Mode>,
    batches: Vec<usize>,
    patterns: Vec<&'static str>,
    n: usize,
}

fn check_flags(args: &Args) -> Result<Asked> {
    if args.mixed || args.preload > 0 || args.lanes.is_some() {
        return Err(Error::flag(
            "--mixed/--preload/--lanes",
            "",
            "not under MPI (ranks run insert-all, delete-all and the sort)",
        ));
    }
    if args.key != "u32" {
        return Err(Error::flag("--key", &args.key, "u32 under MPI"));
    }
    if args.keys_log2 > 32 {
        return Err(Error::flag(
            "--keys-log2",
            args.keys_log2,
            "at most 32 under MPI",
        ));
    }
    if args.delete == Some(0) {
        return Err(Error::flag("--delete", 0, "at least 1 key per call"));
    }
    let batches = cli::numbers("--batch", &args.batch)?;
    if let Some(&b) = batches.iter().find(|b| !b.is_power_of_two()) {
        return Err(Error::flag("--batch", b, "K must be a power of two"));
    }
    Ok(Asked {
        modes: cli::words::<Mode>("--mode", &args.mode)?,
        batches,
        patterns: cli::choose(
            "--pattern",
            &args.pattern,
            &["random", "ascending", "descending"],
        )?,
        n: 1usize << args.keys_log2,
    })
}

/// This rank's share of `n` keys of `pattern`.
fn share(cluster: &Cluster, pattern: &str, n: usize, seed: u64) -> Vec<u32> {
    let (me, p) = (cluster.rank(), cluster.size());
    let (a, b) = (me * n / p, (me + 1) * n / p);
    match pattern {
        "ascending" => (a..b).map(|i| i as u32).collect(),
        "descending" => (a..b).map(|i| (n - 1 - i) as u32).collect(),
        _ => {
            let mut v = vec![0i32; b - a];
            rng::key_stream(seed, a as u64, &mut v);
            v.into_iter().map(|x| x as u32).collect()
        }
    }
}

fn run(cluster: &Cluster, args: &Args) -> Result<bool> {
    let asked = cluster.agree("checking the flags", check_flags(args))?;
    let needs_device = asked.modes.iter().any(|m| m.uses_device());
    let rt = if needs_device {
        let opened = cluster.device(args.device.as_deref()).map(|(rt, ..)| rt);
        Some(cluster.agree("opening this rank's device", opened)?)
    } else {
        None
    };
    let pool = cluster.agree(
        "starting the latency threads",
        cluster.latency_pool(args.threads),
    )?;
    let mut rows = Vec::new();
    for &pattern in &asked.patterns {
        let mine = share(cluster, pattern, asked.n, args.seed);
        for &batch in &asked.batches {
            for &mode in &asked.modes {
                let made = heap_for::<u32>(
                    mode,
                    &HeapOptions::new(batch),
                    Some((&pool).into()),
                    rt.as_ref(),
                );
                let local = cluster.agree("making this rank's heap", made)?;
                let heap = DistributedHeap::new(cluster, local)?;
                let what = format!("{}:ranges", mode.name());
                let delete = args.delete;
                rows.push(insert_delete(
                    cluster, heap, &mine, batch, delete, what, pattern,
                )?);
            }
        }
        rows.push(sort_row(cluster, &mine, pattern)?);
    }
    if cluster.is_root() {
        print(cluster, args, &rows, asked.n);
    }
    Ok(rows.iter().all(|r| r.verified))
}

/// Order and content checks of what a rank deleted, batch by batch.
#[derive(Default)]
struct Tally {
    ascending: bool,
    /// Per delete call: this rank's least and greatest key (none: `u32::MAX`, 0).
    spans: Vec<[u32; 2]>,
    count: u64,
    sum: u64,
}

fn insert_delete(
    cluster: &Cluster,
    mut heap: DistributedHeap<'_, u32>,
    mine: &[u32],
    batch: usize,
    delete: Option<usize>,
    what: String,
    pattern: &'static str,
) -> Result<Row> {
    cluster.barrier("starting a timed run");
    let t = Instant::now();
    heap.insert(mine)?;
    let insert_ms = t.elapsed().as_secs_f64() * 1e3;
    let counts = heap.counts().to_vec();
    let mut tally = Tally {
        ascending: true,
        ..Default::default()
    };
    let mut last = 0u32;
    cluster.barrier("starting a timed run");
    let t = Instant::now();
    let per_call = delete.unwrap_or(usize::MAX);
    while !heap.is_empty() {
        let part = heap.delete_min(per_call)?;
        tally.ascending &=
            part.first().is_none_or(|&f| f >= last) && part.windows(2).all(|w| w[0] <= w[1]);
        last = part.last().copied().unwrap_or(last);
        tally.spans.push(match (part.first(), part.last()) {
            (Some(&a), Some(&b)) => [a, b],
            _ => [u32::MAX, 0],
        });
        tally.count += part.len() as u64;
        tally.sum += part.iter().map(|&x| x as u64).sum::<u64>();
    }
    let delete_ms = t.elapsed().as_secs_f64() * 1e3;
    let verified = check(cluster, mine, &tally)?;
    Ok(Row {
        what,
        pattern,
        batch,
        insert_ms,
        delete_ms,
        verified,
        counts,
        rebalances: heap.rebalances(),
    })
}

/// Whether every rank deleted in order, the ranks' parts of each batch ascend from rank to
/// rank and batch to batch, and every key came back once.
fn check(cluster: &Cluster, mine: &[u32], tally: &Tally) -> Result<bool> {
    let inserted = [
        mine.len() as u64,
        mine.iter().map(|&x| x as u64).sum::<u64>(),
    ];
    let sums = cluster.all_reduce_sum(
        "summing the keys",
        &[inserted[0], inserted[1], tally.count, tally.sum],
    );
    let flat: Vec<u32> = tally.spans.iter().flatten().copied().collect();
    let all = cluster.all_gather_varcount("gathering the batches' spans", &flat)?;
    let calls = tally.spans.len();
    let ranks = cluster.size();
    let mut ordered = all.len() == 2 * calls * ranks;
    let mut high = 0u32;
    for call in 0..calls {
        for r in 0..ranks {
            let at = 2 * (r * calls + call);
            let Some(&[lo, hi]) = all.get(at..at + 2) else {
                ordered = false;
                continue;
            };
            if lo > hi {
                continue; // this rank gave nothing to this batch
            }
            ordered &= lo >= high;
            high = hi;
        }
    }
    let ascending = cluster.all_reduce_min("checking the order", &[tally.ascending as u8])[0] == 1;
    Ok(ordered && ascending && sums[0] == sums[2] && sums[1] == sums[3])
}

/// The bulk sort across ranks of the same keys: its time, and the same checks.
fn sort_row(cluster: &Cluster, mine: &[u32], pattern: &'static str) -> Result<Row> {
    cluster.barrier("starting a timed run");
    let t = Instant::now();
    let sorted = sample_sort(cluster, mine)?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let tally = Tally {
        ascending: sorted.windows(2).all(|w| w[0] <= w[1]),
        spans: vec![match (sorted.first(), sorted.last()) {
            (Some(&a), Some(&b)) => [a, b],
            _ => [u32::MAX, 0],
        }],
        count: sorted.len() as u64,
        sum: sorted.iter().map(|&x| x as u64).sum(),
    };
    let verified = check(cluster, mine, &tally)?;
    let counts = cluster.all_gather("counting the sorted ranges", sorted.len() as u64);
    Ok(Row {
        what: "sample-sort".into(),
        pattern,
        batch: 0,
        insert_ms: ms,
        delete_ms: 0.0,
        verified,
        counts,
        rebalances: 0,
    })
}

fn print(cluster: &Cluster, args: &Args, rows: &[Row], n: usize) {
    let ranks = cluster.size();
    if args.json {
        for r in rows {
            let total = r.insert_ms + r.delete_ms;
            let line = json!({
                "mode": r.what, "ranks": ranks, "n": n, "pattern": r.pattern, "batch": r.batch,
                "insert_ms": r.insert_ms, "delete_ms": r.delete_ms, "total_ms": total,
                "mkeys_per_s": n as f64 / total / 1e3, "verified": r.verified,
                "rebalances": r.rebalances,
                "per_rank": r.counts.iter().enumerate().map(|(rank, &c)| json!({
                    "rank": rank, "keys": c, "share": c as f64 / n as f64,
                })).collect::<Vec<_>>(),
            });
            asym_apps::report!("{line}");
        }
        return;
    }
    asym_apps::report!("heap over {ranks} MPI ranks (key ranges in rank order): {n} u32 keys");
    let mut table = cli::Table::new(&[
        "pattern",
        ">K",
        "heap",
        ">insert ms",
        ">delete ms",
        ">Mkeys/s",
        "verified",
        "keys per rank",
    ]);
    for r in rows {
        let total = r.insert_ms + r.delete_ms;
        table.row(vec![
            r.pattern.to_string(),
            if r.batch == 0 {
                "-".into()
            } else {
                r.batch.to_string()
            },
            r.what.clone(),
            format!("{:.2}", r.insert_ms),
            format!("{:.2}", r.delete_ms),
            format!("{:.1}", n as f64 / total / 1e3),
            if r.verified { "yes" } else { "NO" }.into(),
            r.counts
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
        ]);
    }
    table.print();
}
