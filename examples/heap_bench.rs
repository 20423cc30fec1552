//! The generalized heap under load: insert N keys then delete them all, or the seed's mixed
//! insert/delete pairs on a preloaded heap; the concurrent heap on the pinned latency threads
//! (CpuOnly) against std `BinaryHeap` on one core and the sequential generalized heap. Every
//! run is checked: each thread's deletions come out sorted and all keys come back exactly once.
//!
//!     cargo run --release --example heap_bench                      # 2^20 keys, K = 1024
//!     cargo run --release --example heap_bench -- --keys-log2 22 --batch 256 --pattern random
//!     cargo run --release --example heap_bench -- --mixed --preload 1000000 --json
//!
//! The device modes (GpuOnly, Cooperative) of the generalized heap are not built yet: asking
//! for them is an error that says so.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use asym::runtime::{Error, LatencyPool, PoolOptions, Result};
use asym::structures::gheap::{ConcurrentGeneralizedHeap, GeneralizedHeap, InsertDirection};
use clap::Parser;
use rand::{Rng, SeedableRng};
use serde_json::json;

#[derive(Parser, Debug)]
#[command(about = "The generalized concurrent heap: insert then delete everything, or mixed pairs")]
struct Args {
    /// Keys inserted (2^N).
    #[arg(long, default_value_t = 20)]
    keys_log2: u32,
    /// Keys per node (K): a power of two.
    #[arg(long, default_value_t = 1024)]
    batch: usize,
    /// Key patterns: random, ascending, descending (comma-separated) or all.
    #[arg(long, default_value = "all")]
    pattern: String,
    /// Modes: cpu (the concurrent heap on the latency threads); gpu and coop are not built yet.
    #[arg(long, default_value = "cpu")]
    mode: String,
    /// Latency threads (default: every CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// How inserted batches travel: td (top-down, TD-INS/TD-DEL), bu (bottom-up,
    /// BU-INS/TD-DEL), or both (one row each).
    #[arg(long, default_value = "both")]
    insert: String,
    /// Run the seed's mixed workload instead: each thread inserts K keys then deletes K keys,
    /// 2^keys-log2 / K pairs in all, on a heap preloaded with --preload keys.
    #[arg(long)]
    mixed: bool,
    /// Keys in the heap before the mixed pairs start (not timed).
    #[arg(long, default_value_t = 0)]
    preload: usize,
    /// Skip the peers (std BinaryHeap and the sequential generalized heap, one core each).
    #[arg(long)]
    no_peers: bool,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// One JSON object per row instead of a table.
    #[arg(long)]
    json: bool,
}

struct Row {
    mode: String,
    pattern: &'static str,
    threads: usize,
    insert_ms: f64,
    delete_ms: f64,
    verified: bool,
}

fn keys_for(pattern: &str, n: usize, seed: u64) -> Result<Vec<u32>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    Ok(match pattern {
        "random" => (0..n).map(|_| rng.gen()).collect(),
        "ascending" => (0..n as u32).collect(),
        "descending" => (0..n as u32).rev().collect(),
        other => {
            return Err(Error::InvalidArgument(format!(
                "unknown pattern {other:?}: expected random, ascending, descending or all"
            )))
        }
    })
}

/// Insert everything, then delete everything, on the latency threads; checks every thread's
/// deletions are sorted and every key comes back once.
fn concurrent_run(
    pool: &LatencyPool,
    batch: usize,
    direction: InsertDirection,
    keys: &[u32],
) -> Result<(f64, f64, bool)> {
    let threads = pool.len();
    let heap = ConcurrentGeneralizedHeap::new(batch, keys.len() / batch + 2)?
        .with_insert_direction(direction);
    let share = keys.len().div_ceil(threads);
    let barrier = Barrier::new(threads);
    let insert_ns = AtomicU64::new(0);
    let started = Instant::now();
    pool.broadcast_scoped(|w| -> Result<()> {
        barrier.wait();
        let part = keys.chunks(share).nth(w.index).unwrap_or(&[]);
        for chunk in part.chunks(batch) {
            heap.insert(chunk)?;
        }
        barrier.wait();
        if w.index == 0 {
            insert_ns.store(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        Ok(())
    })?
    .into_iter()
    .collect::<Result<()>>()?;
    let insert_ms = insert_ns.load(Ordering::Relaxed) as f64 / 1e6;
    let started = Instant::now();
    let outs = pool
        .broadcast_scoped(|_| -> Result<Vec<u32>> {
            let mut mine = Vec::new();
            loop {
                let got = heap.delete_min(batch)?;
                if got.is_empty() {
                    return Ok(mine);
                }
                mine.extend(got);
            }
        })?
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let delete_ms = started.elapsed().as_secs_f64() * 1e3;
    // Deletes only: every thread's successive batches never go down.
    let mut ok = outs.iter().all(|o| o.windows(2).all(|w| w[0] <= w[1]));
    let mut all: Vec<u32> = outs.into_iter().flatten().collect();
    all.sort_unstable();
    let mut want = keys.to_vec();
    want.sort_unstable();
    ok &= all == want;
    Ok((insert_ms, delete_ms, ok))
}

/// The seed's mixed workload: preload, then pairs of (insert K, delete K) from every thread.
fn mixed_run(
    pool: &LatencyPool,
    batch: usize,
    direction: InsertDirection,
    preload: &[u32],
    pairs: usize,
    seed: u64,
) -> Result<(f64, bool)> {
    let threads = pool.len();
    let heap = ConcurrentGeneralizedHeap::new(batch, (preload.len() + pairs * batch) / batch + 2)?
        .with_insert_direction(direction);
    heap.insert(preload)?;
    let barrier = Barrier::new(threads);
    let started = Instant::now();
    let results = pool
        .broadcast_scoped(|w| -> Result<(Vec<u32>, Vec<u32>)> {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (w.index as u64 + 1) << 32);
            let (mut ins, mut del) = (Vec::new(), Vec::new());
            barrier.wait();
            for _ in (w.index..pairs).step_by(threads) {
                let keys: Vec<u32> = (0..batch).map(|_| rng.gen()).collect();
                heap.insert(&keys)?;
                ins.extend(keys);
                del.extend(heap.delete_min(batch)?);
            }
            Ok((ins, del))
        })?
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    // Every key inserted (preload included) is either deleted once or still in the heap.
    let mut added: Vec<u32> = preload.to_vec();
    let mut removed = Vec::new();
    for (i, d) in results {
        added.extend(i);
        removed.extend(d);
    }
    removed.extend(heap.delete_min(heap.len())?);
    added.sort_unstable();
    removed.sort_unstable();
    Ok((ms, added == removed))
}

fn run(args: &Args) -> Result<bool> {
    if !args.batch.is_power_of_two() {
        return Err(Error::InvalidArgument(format!(
            "--batch {}: K must be a power of two",
            args.batch
        )));
    }
    if args.keys_log2 > 30 {
        return Err(Error::InvalidArgument(format!(
            "--keys-log2 {}: at most 30 here",
            args.keys_log2
        )));
    }
    for mode in args.mode.split(',').map(str::trim) {
        match mode {
            "cpu" | "all" => {}
            "gpu" | "coop" => {
                return Err(Error::Unsupported {
                    device: "any".into(),
                    what: format!("run the generalized heap in {mode} mode"),
                    lacks: "the device kernels of the generalized heap (not built yet; \
                            only the cpu mode exists)"
                        .into(),
                })
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown mode {other:?}: expected cpu"
                )))
            }
        }
    }
    let patterns: Vec<&'static str> = if args.pattern.trim() == "all" {
        vec!["random", "ascending", "descending"]
    } else {
        args.pattern
            .split(',')
            .map(|p| match p.trim() {
                "random" => Ok("random"),
                "ascending" => Ok("ascending"),
                "descending" => Ok("descending"),
                other => Err(Error::InvalidArgument(format!(
                    "unknown pattern {other:?}: expected random, ascending, descending or all"
                ))),
            })
            .collect::<Result<_>>()?
    };
    let directions: Vec<(&str, InsertDirection)> = match args.insert.trim() {
        "td" => vec![("cpu:td", InsertDirection::TopDown)],
        "bu" => vec![("cpu:bu", InsertDirection::BottomUp)],
        "both" => vec![
            ("cpu:td", InsertDirection::TopDown),
            ("cpu:bu", InsertDirection::BottomUp),
        ],
        other => {
            return Err(Error::InvalidArgument(format!(
                "--insert {other:?}: expected td, bu or both"
            )))
        }
    };
    let pool = LatencyPool::new(PoolOptions {
        threads: args.threads,
        ..Default::default()
    })?;
    let n = 1usize << args.keys_log2;
    let mut rows = Vec::new();
    if args.mixed {
        let preload = keys_for("random", args.preload, args.seed ^ 0x9e37)?;
        let pairs = (n / args.batch).max(1);
        for &(name, direction) in &directions {
            let (ms, ok) = mixed_run(&pool, args.batch, direction, &preload, pairs, args.seed)?;
            rows.push(Row {
                mode: name.into(),
                pattern: "mixed",
                threads: pool.len(),
                insert_ms: ms,
                delete_ms: 0.0,
                verified: ok,
            });
        }
    } else {
        for &pattern in &patterns {
            let keys = keys_for(pattern, n, args.seed)?;
            for &(name, direction) in &directions {
                let (ins, del, ok) = concurrent_run(&pool, args.batch, direction, &keys)?;
                rows.push(Row {
                    mode: name.into(),
                    pattern,
                    threads: pool.len(),
                    insert_ms: ins,
                    delete_ms: del,
                    verified: ok,
                });
            }
            if !args.no_peers {
                let t = Instant::now();
                let mut bh = std::collections::BinaryHeap::with_capacity(n);
                for &k in &keys {
                    bh.push(std::cmp::Reverse(k));
                }
                let ins = t.elapsed().as_secs_f64() * 1e3;
                let t = Instant::now();
                let mut prev = 0u32;
                let mut ok = bh.len() == n;
                while let Some(std::cmp::Reverse(k)) = bh.pop() {
                    ok &= k >= prev;
                    prev = k;
                }
                rows.push(Row {
                    mode: "peer:binaryheap".into(),
                    pattern,
                    threads: 1,
                    insert_ms: ins,
                    delete_ms: t.elapsed().as_secs_f64() * 1e3,
                    verified: ok,
                });
                let t = Instant::now();
                let mut gh = GeneralizedHeap::new(args.batch)?;
                gh.insert(&keys)?;
                let ins = t.elapsed().as_secs_f64() * 1e3;
                let t = Instant::now();
                let out = gh.delete_min(n);
                let del = t.elapsed().as_secs_f64() * 1e3;
                let ok = out.len() == n && out.windows(2).all(|w| w[0] <= w[1]);
                rows.push(Row {
                    mode: "seq:gheap".into(),
                    pattern,
                    threads: 1,
                    insert_ms: ins,
                    delete_ms: del,
                    verified: ok,
                });
            }
        }
    }
    let all_ok = rows.iter().all(|r| r.verified);
    if args.json {
        for r in &rows {
            let total = r.insert_ms + r.delete_ms;
            println!(
                "{}",
                json!({
                    "mode": r.mode, "pattern": r.pattern, "keys": n, "batch": args.batch,
                    "threads": r.threads, "preload": if args.mixed { args.preload } else { 0 },
                    "insert_ms": r.insert_ms, "delete_ms": r.delete_ms, "ms": total,
                    "mkeys_per_s": n as f64 / total / 1e3, "verified": r.verified,
                })
            );
        }
    } else {
        println!(
            "generalized heap: {n} u32 keys, K = {}, {} latency threads{}",
            args.batch,
            pool.len(),
            if args.mixed {
                format!(", mixed pairs on {} preloaded keys", args.preload)
            } else {
                String::new()
            }
        );
        println!(
            "{:<11} {:<17} {:>7} {:>11} {:>11} {:>11} {:>9}  verified",
            "pattern", "mode", "threads", "insert ms", "delete ms", "total ms", "Mkeys/s"
        );
        for r in &rows {
            let total = r.insert_ms + r.delete_ms;
            println!(
                "{:<11} {:<17} {:>7} {:>11.2} {:>11.2} {:>11.2} {:>9.1}  {}",
                r.pattern,
                r.mode,
                r.threads,
                r.insert_ms,
                r.delete_ms,
                total,
                n as f64 / total / 1e3,
                if r.verified { "yes" } else { "NO" }
            );
        }
    }
    Ok(all_ok)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("heap_bench: a run lost, duplicated or misordered keys");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("heap_bench: {e}");
            ExitCode::FAILURE
        }
    }
}
