//! The generalized heap under load: insert N keys then delete them all, or the seed's mixed
//! insert/delete pairs on a preloaded heap; the concurrent heap on the pinned latency threads
//! (CpuOnly) and on the OpenCL device (GpuOnly: many work-groups per launch) against std
//! `BinaryHeap` on one core and the sequential generalized heap. Every run is checked: the
//! deletions come out sorted and all keys come back exactly once.
//!
//! ```text
//! cargo run --release --bin heap_bench                      # 2^20 keys, K = 1024
//! cargo run --release --bin heap_bench -- --keys-log2 22 --batch 256 --pattern random
//! cargo run --release --bin heap_bench -- --mode gpu --batch 256,1024 --work-groups 64,256
//! cargo run --release --bin heap_bench -- --mixed --preload 1000000 --json
//! ```
//!
//! `--bulk never,auto` runs the device heap twice: as the seed's INS/DEL operations (rows gpu:td,
//! gpu:bu) and with bulk calls (gpu:auto: an insert or delete of a large share of the heap
//! rebuilds it by one device sort). `--preload N --mode gpu` calls on a heap holding N keys.
//!
//! `--lanes 8,16` adds rows gpu-lanes8:td, gpu-lanes16:td to the operations' rows: the heap
//! split by ranges of key values into that many heaps of one device, each on its own queue, so
//! a call's parts run their INS/DEL pipelines at once (`SpreadHeap::lanes`).
//!
//! `--device all` (or a list such as `nvidia,portable`) adds, for insert-all/delete-all with
//! bulk calls, each device alone (rows gpu@0:auto, gpu@1:auto, …) and the heap spread over
//! them all (gpu-set:auto: each device sorts the range of key values the set gives it from
//! measured speeds, and the delete puts their runs one after the other; gpu-set:even: an
//! equal share each, what spreading costs where the set would not spread); the other gpu
//! rows run on the first device.
//!
//! Under `mpirun -np N` (N > 1, a build with `--features mpi`) it runs on the heap's key
//! ranges across the ranks and the sample sort across them (`distributed.rs`).
//!
//! `--mode coop` runs the Cooperative heap: the device holds the bulk and merges full batches
//! (flushes of inserts, refills of `--refill` keys), the latency threads serve the smallest
//! keys and the small inserts from a host-side top without a launch.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use asym_runtime::spread::MemberReport;
use asym_runtime::{host_memory, DeviceSet, Error, LatencyPool, Mode, Result, Runtime};
use asym_structures::{
    BulkPolicy, ConcurrentGeneralizedHeap, CooperativeConfig, CooperativeHeap,
    DeviceGeneralizedHeap, DeviceHeapConfig, DeviceHeapKey, GeneralizedHeap, InsertDirection,
    SpreadHeap, MAX_LANES,
};
use clap::Parser;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde_json::json;

use asym_apps::cli;

#[cfg(feature = "mpi")]
mod distributed;
mod runs;
use runs::*;

#[derive(Parser, Debug)]
#[command(about = "The generalized concurrent heap: insert then delete everything, or mixed pairs")]
struct Args {
    /// Keys inserted (2^N).
    #[arg(long, default_value_t = 20)]
    keys_log2: u32,
    /// Keys per node (K): powers of two, comma-separated for a sweep.
    #[arg(long, default_value = "1024")]
    batch: String,
    /// Key patterns: random, ascending, descending (comma-separated) or all.
    #[arg(long, default_value = "all")]
    pattern: String,
    /// Modes: cpu (the concurrent heap on the latency threads), gpu (the device heap), coop
    /// (device bulk + host top served by the latency threads), comma-separated, or all.
    #[arg(long, default_value = "cpu")]
    mode: String,
    /// OpenCL device for gpu mode: part of its platform or device name (default: ASYM_DEVICE,
    /// else the first GPU, else the first CPU device); `all` or a comma-separated list for
    /// several (rows gpu@i:auto and gpu-set:auto).
    #[arg(long)]
    device: Option<String>,
    /// Work-groups per launch in gpu mode, comma-separated for a sweep (default:
    /// DeviceHeapConfig::default_shape: on a GPU twice the compute units, at most 64; on a
    /// CPU device twice the compute units).
    #[arg(long)]
    work_groups: Option<String>,
    /// Work-items per group in gpu mode, comma-separated for a sweep (default:
    /// DeviceHeapConfig::default_shape: on a GPU 256, 512 for K = 2048; on a CPU device
    /// min(K, 256)).
    #[arg(long)]
    work_group: Option<String>,
    /// Latency threads (default: every CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// How inserted batches travel, in the cpu and gpu modes: td (top-down, TD-INS/TD-DEL),
    /// bu (bottom-up, BU-INS/TD-DEL), or both (one row each).
    #[arg(long, default_value = "both")]
    insert: String,
    /// Key type of the gpu insert/delete rows: u32 or i32 (random bits either way; the other
    /// rows and the peers use u32).
    #[arg(long, default_value = "u32")]
    key: String,
    /// Device rows, comma-separated: never (the seed's INS and DEL operations, one per batch:
    /// rows gpu:td and gpu:bu), auto (an insert or delete of a large share of the heap
    /// rebuilds it by one device sort, BulkPolicy::Auto: row gpu:auto), always (every call
    /// rebuilds: row gpu:bulk); both = never,auto. The mixed pairs always run as operations.
    #[arg(long, default_value = "both")]
    bulk: String,
    /// Lanes of the seed's operations on one device, comma-separated: each count above 1 adds
    /// rows gpu-lanesL:td (bu) to --bulk never's, the heap split into L heaps by ranges of
    /// key values, each on its own queue, so a call's parts run their INS/DEL pipelines at
    /// once (SpreadHeap::lanes; equal shares, cut from the insert's keys). Insert-all +
    /// delete-all only.
    #[arg(long)]
    lanes: Option<String>,
    /// Run the seed's mixed workload instead: each thread inserts K keys then deletes K keys,
    /// 2^keys-log2 / K pairs in all, on a heap preloaded with --preload keys.
    #[arg(long)]
    mixed: bool,
    /// Coop mode: keys one refill brings from the device to the host top (default 64 K).
    #[arg(long)]
    refill: Option<usize>,
    /// Coop mode: inserts gathered on the host before one device insert (default: the refill).
    #[arg(long)]
    flush: Option<usize>,
    /// Keys in the heap before the mixed pairs start (not timed). Without --mixed, gpu rows
    /// only: the insert and the delete of 2^keys-log2 keys then run on a heap holding this
    /// many (the calls' share of the heap is what BulkPolicy::Auto decides on).
    #[arg(long, default_value_t = 0)]
    preload: usize,
    /// Skip the peers (std BinaryHeap and the sequential generalized heap, one core each).
    #[arg(long)]
    no_peers: bool,
    /// Say on stderr when each step of a device row starts (making the heap, the warm-up,
    /// the insert, the delete, the check), with the seconds since the start: where a long
    /// run spends its time.
    #[arg(long)]
    trace: bool,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// One JSON object per row instead of a table.
    #[arg(long)]
    json: bool,
    /// Under mpirun (a build with `--features mpi`): keys per delete call (default: every key
    /// in one call).
    #[arg(long)]
    delete: Option<usize>,
}

struct Row {
    mode: String,
    pattern: &'static str,
    batch: usize,
    /// Latency threads, or work-groups × work-items for the device.
    threads: usize,
    work_group: Option<usize>,
    insert_ms: f64,
    delete_ms: f64,
    verified: bool,
    /// The device heap's counters (and profile, in a profiling build), for --json.
    device_stats: Option<serde_json::Value>,
}

/// A key type of the gpu rows (`--key`): random u32 keys map to it bit for bit.
trait BenchKey: DeviceHeapKey + Ord + Sync {
    fn from_u32(k: u32) -> Self;
}

impl BenchKey for u32 {
    fn from_u32(k: u32) -> Self {
        k
    }
}

impl BenchKey for i32 {
    fn from_u32(k: u32) -> Self {
        // Random bits stay random; the ascending and descending patterns (below 2^31) keep
        // their order.
        k as i32
    }
}

/// What one device heap's insert/delete run gave.
struct GpuRun {
    insert_ms: f64,
    delete_ms: f64,
    verified: bool,
    /// Work-groups × work-items.
    shape: (usize, usize),
    stats: serde_json::Value,
}

/// `--trace`: when the run started, if steps are to be reported.
static TRACE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Reports a step on stderr under `--trace`.
fn trace(step: impl std::fmt::Display) {
    if let Some(start) = TRACE.get() {
        eprintln!("heap_bench {:9.3} s: {step}", start.elapsed().as_secs_f64());
    }
}

/// A device heap of batches of `batch` keys, with room for `nodes` nodes from the start.
fn device_heap<T: DeviceHeapKey>(
    rt: &Runtime,
    batch: usize,
    (groups, wg): (Option<usize>, Option<usize>),
    nodes: usize,
    direction: InsertDirection,
    bulk: BulkPolicy,
) -> Result<DeviceGeneralizedHeap<T>> {
    DeviceGeneralizedHeap::new(
        rt,
        &DeviceHeapConfig {
            work_groups: groups,
            work_group_size: wg,
            initial_nodes: nodes,
            direction,
            bulk,
            ..DeviceHeapConfig::new(batch)
        },
    )
}

/// The gpu row of one device heap: made, run, and read.
fn gpu_row<T: BenchKey>(
    rt: &Runtime,
    batch: usize,
    shape: (Option<usize>, Option<usize>),
    direction: InsertDirection,
    policy: BulkPolicy,
    keys: &[u32],
    preload: &[u32],
) -> Result<GpuRun> {
    let nodes = (keys.len() + preload.len()) / batch + 2;
    trace(format_args!(
        "{}: making a heap of {nodes} nodes",
        rt.profile().label()
    ));
    let heap = device_heap::<T>(rt, batch, shape, nodes, direction, policy)?;
    let keys: Vec<T> = keys.iter().map(|&k| T::from_u32(k)).collect();
    let preload: Vec<T> = preload.iter().map(|&k| T::from_u32(k)).collect();
    let (insert_ms, delete_ms, verified) = device_run(&heap, &keys, &preload, policy)?;
    Ok(GpuRun {
        insert_ms,
        delete_ms,
        verified,
        shape: heap.launch_shape(),
        stats: device_stats(&heap),
    })
}

/// The device heap's counters for a row: merges, swaps, BU climbs, and where a profiling
/// build (`ASYM_GHEAP_PROFILE=1`) says the DELs' time went.
fn device_stats<T: BenchKey>(heap: &DeviceGeneralizedHeap<T>) -> serde_json::Value {
    let s = heap.stats();
    let mut v = json!({
        "launches": s.launches, "merges": s.merges, "swaps": s.swaps,
        "climb_merges": s.climb_merges, "del_climbs": s.del_climbs, "waits": s.waits,
        "bulk_calls": s.bulk_calls,
    });
    if let Some(p) = heap.profile() {
        // Each total over the operations it was summed over (0 when there were none).
        let mean = |x: f64, n: u64| if n > 0 { x / n as f64 } else { 0.0 };
        let per = |x: f64| mean(x, p.dels);
        v["profile_per_del"] = json!({
            "dels": p.dels, "del_us": per(p.del_us), "root_wait_us": per(p.root_wait_us),
            "root_hold_us": per(p.root_hold_us), "root_steps": per(p.root_steps as f64),
            "child_wait_us": per(p.child_wait_us), "root_control_us": per(p.root_control_us),
        });
        v["profile_per_ins"] = json!({
            "inserts": p.inserts, "root_wait_us": mean(p.ins_root_wait_us, p.inserts),
            "root_hold_us": mean(p.ins_root_hold_us, p.inserts),
        });
        v["profile_calls_ms"] = json!({
            "host_prepare": p.host_prepare_us / 1e3, "host_alloc": p.host_alloc_us / 1e3,
            "host_copy": p.host_copy_us / 1e3, "kernel": p.kernel_us / 1e3,
            "host_read": p.host_read_us / 1e3,
        });
    }
    v
}

/// What the flags ask for, checked.
struct Plan {
    batches: Vec<usize>,
    group_counts: Vec<Option<usize>>,
    group_sizes: Vec<Option<usize>>,
    use_cpu: bool,
    use_gpu: bool,
    use_coop: bool,
    patterns: Vec<&'static str>,
    directions: Vec<InsertDirection>,
    bulk_policies: Vec<BulkPolicy>,
    /// Lane counts above 1 (--lanes).
    lanes: Vec<usize>,
    /// Keys inserted per run (2^keys-log2).
    n: usize,
}

impl Plan {
    fn new(args: &Args) -> Result<Self> {
        if let Some(d) = args.delete {
            return Err(Error::flag(
                "--delete",
                d,
                "under mpirun only (one host deletes as each row says)",
            ));
        }
        let batches = cli::numbers("--batch", &args.batch)?;
        if let Some(&b) = batches.iter().find(|b| !b.is_power_of_two()) {
            return Err(Error::flag("--batch", b, "K must be a power of two"));
        }
        let optional = |flag: &str, value: &Option<String>| -> Result<Vec<Option<usize>>> {
            Ok(match value {
                Some(s) => cli::numbers(flag, s)?.into_iter().map(Some).collect(),
                None => vec![None],
            })
        };
        let group_counts = optional("--work-groups", &args.work_groups)?;
        let group_sizes = optional("--work-group", &args.work_group)?;
        if args.keys_log2 > 30 {
            return Err(Error::flag(
                "--keys-log2",
                args.keys_log2,
                "at most 30 here",
            ));
        }
        let modes = cli::words::<Mode>("--mode", &args.mode)?;
        let [use_cpu, use_gpu, use_coop] = Mode::ALL.map(|m| modes.contains(&m));
        let patterns = cli::choose(
            "--pattern",
            &args.pattern,
            &["random", "ascending", "descending"],
        )?;
        let directions = match args.insert.trim() {
            "td" => vec![InsertDirection::TopDown],
            "bu" => vec![InsertDirection::BottomUp],
            "both" => vec![InsertDirection::TopDown, InsertDirection::BottomUp],
            other => return Err(Error::flag("--insert", other, "expected td, bu or both")),
        };
        if args.key != "u32" && args.key != "i32" {
            return Err(Error::flag("--key", &args.key, "expected u32 or i32"));
        }
        let mut bulk_policies = Vec::new();
        for p in args.bulk.split(',').map(str::trim) {
            match p {
                "both" => bulk_policies.extend([BulkPolicy::Never, BulkPolicy::Auto]),
                other => bulk_policies.push(cli::word::<BulkPolicy>("--bulk", other)?),
            }
        }
        let lanes = match &args.lanes {
            Some(l) => cli::numbers("--lanes", l)?,
            None => Vec::new(),
        };
        if let Some(&l) = lanes.iter().find(|&&l| l == 0 || l > MAX_LANES) {
            return Err(Error::flag(
                "--lanes",
                l,
                format!("a heap on one device takes 1 to {MAX_LANES} lanes"),
            ));
        }
        if !lanes.is_empty()
            && (!use_gpu || !bulk_policies.contains(&BulkPolicy::Never) || args.mixed)
        {
            return Err(Error::InvalidArgument(
                "--lanes adds rows to the seed's operations on the device: it needs --mode gpu \
                 with --bulk never (or both), without --mixed"
                    .into(),
            ));
        }
        let lanes = lanes.into_iter().filter(|&l| l > 1).collect();
        if args.preload > 0 && !args.mixed && (use_cpu || use_coop) {
            return Err(Error::InvalidArgument(
                "--preload without --mixed applies to the gpu rows only: add --mode gpu".into(),
            ));
        }
        if use_gpu {
            // A work-group works on one node of K keys: a size above every K runs nothing.
            if let Some(&w) = group_sizes
                .iter()
                .flatten()
                .find(|&&w| batches.iter().all(|&b| w > b))
            {
                return Err(Error::flag(
                    "--work-group",
                    w,
                    format!(
                        "larger than every --batch ({}); a work-group works on one node of K \
                         keys, so it takes at most K work-items",
                        args.batch
                    ),
                ));
            }
        }
        let n = 1usize << args.keys_log2;
        // The keys, the preload, their reference order, the heap's own copy, and the peers'
        // or the device's staging: about six 4-byte words per key at the peak, checked
        // before any is made.
        let keys_held = (n as u64).saturating_add(args.preload as u64);
        host_memory::ensure_available(
            keys_held.saturating_mul(24),
            &format!(
                "heap_bench with 2^{} keys and a preload of {} (about 24 bytes per key)",
                args.keys_log2, args.preload
            ),
        )?;
        Ok(Plan {
            batches,
            group_counts,
            group_sizes,
            use_cpu,
            use_gpu,
            use_coop,
            patterns,
            directions,
            bulk_policies,
            lanes,
            n,
        })
    }

    /// The device heap's launch shapes for nodes of `batch` keys, each with each insert
    /// direction (a sweep over K and work-group sizes skips groups larger than K).
    fn device_shapes(
        &self,
        batch: usize,
    ) -> impl Iterator<Item = ((Option<usize>, Option<usize>), InsertDirection)> + '_ {
        self.group_counts
            .iter()
            .flat_map(|&g| self.group_sizes.iter().map(move |&w| (g, w)))
            .filter(move |&(_, w)| w.is_none_or(|w| w <= batch))
            .flat_map(|shape| self.directions.iter().map(move |&d| (shape, d)))
    }
}

/// A row's name: the mode and the insert direction.
fn named(mode: &str, d: InsertDirection) -> String {
    match d {
        InsertDirection::TopDown => format!("{mode}:td"),
        InsertDirection::BottomUp => format!("{mode}:bu"),
    }
}

/// The runs of one invocation: the plan, the latency pool and the device.
struct Runner<'a> {
    args: &'a Args,
    plan: Plan,
    pool: LatencyPool,
    rt: Option<Runtime>,
    /// The devices `--device` named, when it named several.
    set: Option<DeviceSet>,
}

impl Runner<'_> {
    fn rt(&self) -> &Runtime {
        self.rt.as_ref().expect("gpu and coop modes open a runtime")
    }

    /// A Cooperative heap with room for `nodes` nodes, its device program built.
    fn coop_heap(&self, batch: usize, nodes: usize) -> Result<CooperativeHeap<u32>> {
        let mut config = CooperativeConfig::on(DeviceHeapConfig {
            work_groups: self.plan.group_counts[0],
            work_group_size: self.plan.group_sizes[0],
            initial_nodes: nodes,
            ..DeviceHeapConfig::new(batch)
        });
        if let Some(keys) = self.args.refill {
            config = config.with_refill(keys);
        }
        config.flush = self.args.flush.unwrap_or(config.flush);
        let heap = CooperativeHeap::new(self.rt(), &config)?;
        // A first round trip builds the device program (as the gpu rows' warm-up).
        heap.insert(&(0..batch as u32).collect::<Vec<_>>())?;
        if heap.delete_min(batch)?.len() != batch || !heap.is_empty() {
            return Err(Error::corrupted(
                "the cooperative heap",
                "its warm-up lost keys",
            ));
        }
        heap.clear()?;
        Ok(heap)
    }

    /// A row of the host side (cpu or coop): threads are the latency pool's.
    fn host_row(
        &self,
        mode: String,
        pattern: &'static str,
        batch: usize,
        ms: (f64, f64),
        ok: bool,
    ) -> Row {
        Row {
            mode,
            pattern,
            batch,
            threads: self.pool.len(),
            work_group: None,
            insert_ms: ms.0,
            delete_ms: ms.1,
            verified: ok,
            device_stats: None,
        }
    }

    /// The seed's mixed workload in every mode asked for, for nodes of `batch` keys.
    fn mixed_rows(&self, batch: usize) -> Result<Vec<Row>> {
        let (args, plan) = (self.args, &self.plan);
        let mut rows = Vec::new();
        let preload = keys_for("random", args.preload, args.seed ^ 0x9e37)?;
        let pairs = (plan.n / batch).max(1);
        if plan.use_coop {
            let heap = self.coop_heap(batch, (preload.len() + plan.n) / batch + 2)?;
            let (ms, ok) = mixed_run(&self.pool, &heap, batch, &preload, pairs, args.seed)?;
            rows.push(self.host_row(coop_row(&heap), "mixed", batch, (ms, 0.0), ok));
        }
        if plan.use_cpu {
            for &direction in &plan.directions {
                let nodes = (preload.len() + pairs * batch) / batch + 2;
                let heap =
                    ConcurrentGeneralizedHeap::new(batch, nodes)?.with_insert_direction(direction);
                let (ms, ok) = mixed_run(&self.pool, &heap, batch, &preload, pairs, args.seed)?;
                rows.push(self.host_row(named("cpu", direction), "mixed", batch, (ms, 0.0), ok));
            }
        }
        if plan.use_gpu {
            for (shape, direction) in plan.device_shapes(batch) {
                let nodes = (preload.len() + plan.n) / batch + 2;
                let heap = device_heap::<u32>(
                    self.rt(),
                    batch,
                    shape,
                    nodes,
                    direction,
                    BulkPolicy::Auto,
                )?;
                let (ms, ok) = device_mixed_run(&heap, &preload, pairs, args.seed)?;
                let (groups, wg) = heap.launch_shape();
                rows.push(Row {
                    mode: named("gpu", direction),
                    pattern: "mixed",
                    batch,
                    threads: groups,
                    work_group: Some(wg),
                    insert_ms: ms,
                    delete_ms: 0.0,
                    verified: ok,
                    device_stats: Some(device_stats(&heap)),
                });
            }
        }
        Ok(rows)
    }

    /// Insert all, then delete all, of `keys` in every mode asked for (gpu rows on a heap
    /// holding `preload` first), and the peers.
    fn insert_delete_rows(
        &self,
        batch: usize,
        pattern: &'static str,
        keys: &[u32],
        preload: &[u32],
        emit: &mut dyn FnMut(Row),
    ) -> Result<()> {
        let plan = &self.plan;
        if plan.use_coop {
            let heap = self.coop_heap(batch, plan.n / batch + 2)?;
            let (ins, del, ok) = concurrent_run(&self.pool, &heap, batch, keys)?;
            emit(self.host_row(coop_row(&heap), pattern, batch, (ins, del), ok));
        }
        if plan.use_cpu {
            for &direction in &plan.directions {
                let heap = ConcurrentGeneralizedHeap::new(batch, keys.len() / batch + 2)?
                    .with_insert_direction(direction);
                let (ins, del, ok) = concurrent_run(&self.pool, &heap, batch, keys)?;
                emit(self.host_row(named("cpu", direction), pattern, batch, (ins, del), ok));
            }
        }
        if plan.use_gpu {
            // The seed's operations in each direction, then (with --bulk auto) the bulk calls,
            // where the direction plays no part.
            let first = plan.directions[0];
            let runs = plan.device_shapes(batch).flat_map(|(shape, direction)| {
                plan.bulk_policies
                    .iter()
                    .filter(move |&&p| p == BulkPolicy::Never || direction == first)
                    .map(move |&p| (shape, direction, p))
            });
            for (shape, direction, policy) in runs {
                let rt = self.rt();
                let run = if self.args.key == "i32" {
                    gpu_row::<i32>(rt, batch, shape, direction, policy, keys, preload)?
                } else {
                    gpu_row::<u32>(rt, batch, shape, direction, policy, keys, preload)?
                };
                let (groups, wg) = run.shape;
                emit(Row {
                    mode: match policy {
                        BulkPolicy::Never => named("gpu", direction),
                        BulkPolicy::Auto => "gpu:auto".to_string(),
                        BulkPolicy::Always => "gpu:bulk".to_string(),
                    },
                    pattern,
                    batch,
                    threads: groups,
                    work_group: Some(wg),
                    insert_ms: run.insert_ms,
                    delete_ms: run.delete_ms,
                    verified: run.verified,
                    device_stats: Some(run.stats),
                });
            }
        }
        if plan.use_gpu {
            for (&lanes, (shape, direction)) in plan
                .lanes
                .iter()
                .flat_map(|l| plan.device_shapes(batch).map(move |s| (l, s)))
            {
                let rt = self.rt();
                let lanes_row = if self.args.key == "i32" {
                    lanes_row::<i32>
                } else {
                    lanes_row::<u32>
                };
                emit(lanes_row(
                    rt, lanes, batch, shape, direction, pattern, keys, preload,
                )?);
            }
        }
        if let Some(set) = self.set.as_ref().filter(|_| {
            plan.use_gpu && preload.is_empty() && plan.bulk_policies.contains(&BulkPolicy::Auto)
        }) {
            if self.args.key == "i32" {
                set_rows::<i32>(set, batch, pattern, keys, emit)?
            } else {
                set_rows::<u32>(set, batch, pattern, keys, emit)?
            }
        }
        if !self.args.no_peers {
            for row in peer_rows(keys, pattern, batch)? {
                emit(row);
            }
        }
        Ok(())
    }

    fn print(&self, rows: &[Row]) {
        let (args, n) = (self.args, self.plan.n);
        if args.json {
            for r in rows {
                let total = r.insert_ms + r.delete_ms;
                let device = self.rt.as_ref().filter(|_| r.work_group.is_some());
                let key = if r.mode.starts_with("gpu") && !args.mixed {
                    args.key.as_str()
                } else {
                    "u32"
                };
                asym_apps::report!(
                    "{}",
                    json!({
                        "mode": r.mode, "pattern": r.pattern, "keys": n, "batch": r.batch,
                        "threads": r.threads, "work_group": r.work_group,
                        "device": device.map(|rt| rt.profile().label()),
                        "preload": args.preload,
                        "insert_ms": r.insert_ms, "delete_ms": r.delete_ms, "ms": total,
                        "key": key, "mkeys_per_s": n as f64 / total / 1e3,
                        "verified": r.verified, "device_stats": r.device_stats,
                    })
                );
            }
            return;
        }
        asym_apps::report!(
            "generalized heap: {n} u32 keys{}, {} latency threads{}{}",
            if args.key == "i32" {
                " (i32 in the gpu rows)"
            } else {
                ""
            },
            self.pool.len(),
            match &self.rt {
                Some(rt) => format!(", device {} ({} SVM)", rt.profile().label(), rt.transport()),
                None => String::new(),
            },
            if args.mixed {
                format!(", mixed pairs on {} preloaded keys", args.preload)
            } else {
                String::new()
            }
        );
        let mut table = cli::Table::new(&[
            "pattern",
            "mode",
            ">K",
            ">threads",
            ">insert ms",
            ">delete ms",
            ">total ms",
            ">Mkeys/s",
            "verified",
        ]);
        for r in rows {
            let total = r.insert_ms + r.delete_ms;
            let threads = match r.work_group {
                Some(wg) => format!("{}x{wg}", r.threads),
                None => r.threads.to_string(),
            };
            table.row(vec![
                r.pattern.to_string(),
                r.mode.clone(),
                r.batch.to_string(),
                threads,
                format!("{:.2}", r.insert_ms),
                format!("{:.2}", r.delete_ms),
                format!("{total:.2}"),
                format!("{:.1}", n as f64 / total / 1e3),
                (if r.verified { "yes" } else { "NO" }).to_string(),
            ]);
        }
        table.print();
    }
}

/// A Cooperative row's name: the keys one refill brought on average.
fn coop_row(heap: &CooperativeHeap<u32>) -> String {
    let s = heap.stats();
    format!(
        "coop:r{}",
        s.keys_from_device.checked_div(s.refills).unwrap_or(0)
    )
}

fn run(args: &Args) -> Result<bool> {
    if args.trace {
        TRACE.get_or_init(Instant::now);
    }
    let plan = Plan::new(args)?;
    let pool = LatencyPool::with_threads(args.threads)?;
    let set = if plan.use_gpu || plan.use_coop {
        Some(DeviceSet::open(args.device.as_deref())?)
    } else {
        None
    };
    let rt = set.as_ref().and_then(|s| s.members().first().cloned());
    let runner = Runner {
        args,
        plan,
        pool,
        rt,
        set: set.filter(|s| s.len() > 1),
    };
    let plan = &runner.plan;
    let mut rows = Vec::new();
    let (mut printed, mut verified) = (0, true);
    for &batch in &plan.batches {
        if args.mixed {
            rows.extend(runner.mixed_rows(batch)?);
            continue;
        }
        let preload = keys_for("random", args.preload, args.seed ^ 0x9e37)?;
        for &pattern in &plan.patterns {
            trace(format_args!("generating {} {pattern} keys", plan.n));
            let keys = keys_for(pattern, plan.n, args.seed)?;
            // JSON rows go out as each finishes: a long sweep cut short keeps them.
            runner.insert_delete_rows(batch, pattern, &keys, &preload, &mut |row| {
                if args.json {
                    runner.print(std::slice::from_ref(&row));
                    printed += 1;
                    verified &= row.verified;
                } else {
                    rows.push(row);
                }
            })?;
        }
    }
    if rows.is_empty() && printed == 0 {
        return Err(Error::InvalidArgument(
            "these flags leave nothing to run (--no-peers with no mode that applies)".into(),
        ));
    }
    if !rows.is_empty() {
        runner.print(&rows);
    }
    Ok(verified && rows.iter().all(|r| r.verified))
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args: Args = cli::parse_args();
    match asym_apps::ranks::as_ranks("heap_bench") {
        Err(code) => return code,
        #[cfg(feature = "mpi")]
        Ok(true) => return distributed::main(&args),
        _ => {}
    }
    cli::finish(
        "heap_bench",
        "a run lost, duplicated or misordered keys",
        run(&args),
    )
}
