//! Batch k-selection, the main job: the k-th smallest key of every sub-list of a list set, in
//! every scheduling mode (CpuOnly, GpuOnly, Cooperative) and with the peers a user would pick
//! instead (`select_nth_unstable` and std `BinaryHeap`, both over rayon), each answer checked
//! against `select_nth_unstable`.
//!
//! ```text
//! cargo run --release --bin batch_kselect                 # 2^22 random int32 keys
//! cargo run --release --bin batch_kselect -- --total-log2 25 --sublist 8192 --json
//! cargo run --release --bin batch_kselect -- --input keys.npy --sublist 1000 --output kth.npy
//! cargo run --release --bin batch_kselect -- --device all --mode gpu,coop   # every device
//! ```
//!
//! With several devices (`--device all` or a comma-separated list) the gpu and coop rows
//! spread the sub-lists over every device (coop: and the latency threads), and each device
//! also runs gpu alone (rows `gpu@0:…`, `gpu@1:…`), so the set stands beside its members.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use asym_apps::io::npy::{self, Dtype, NpyElement};
use asym_apps::io::output;
use asym_apps::peers;
use asym_runtime::{DeviceSet, Error, LatencyPool, Mode, Named, Result, Runtime, Transport};
use asym_structures::Key;
use asym_structures::{Cooperation, KSelector, SelectStats, Strategy, Sublists};
use clap::Parser;

use asym_apps::cli;

#[cfg(feature = "mpi")]
mod distributed;
use asym_apps::progress;
use asym_apps::rng;
use progress::Progress;
use rayon::prelude::*;
use serde_json::json;

#[derive(Parser, Debug)]
#[command(
    about = "Batch k-selection (heap or radix) on CPU latency cores, the OpenCL device, or both"
)]
struct Args {
    /// Generate 2^N random int32 keys (ignored with --input).
    #[arg(long, default_value_t = 22)]
    total_log2: u32,
    /// Sub-list length (default: 2^11, 2^13, ..., 2^21, those that fit; with a 2-D --input, the row length).
    #[arg(long)]
    sublist: Option<usize>,
    /// k (default: 0.1 · sub-list length, at least 1).
    #[arg(long)]
    k: Option<usize>,
    /// Modes: cpu, gpu, coop (comma-separated) or all.
    #[arg(long, default_value = "all")]
    mode: String,
    /// How coop divides the work: amount (whole sub-lists from one counter), bridge (the ad-heap:
    /// every update-key split by kind; live on fine SVM, pipelined on coarse), bridge-live,
    /// bridge-pipelined; comma-separated, or all. Each is its own row.
    #[arg(long, default_value = "amount")]
    coop: String,
    /// Selection strategies, each its own rows: heap (the ad-heap seed's d-heaps, every mode),
    /// radix (MSD radix select, on both kinds of cores), auto (the method measured fastest on
    /// each side: on the CPU the heap for small k, radix elsewhere; radix on the device);
    /// comma-separated, or all.
    #[arg(long, default_value = "all")]
    strategy: String,
    /// Also select from keys resident in SVM (uploaded once, untimed): the device radix
    /// kernel reads them where they are (row gpu:radix-resident).
    #[arg(long)]
    resident: bool,
    /// Heap arity: 2, 4, 8, 16, 32 or 64.
    #[arg(long, default_value_t = 8)]
    d: usize,
    /// OpenCL device: part of its platform or device name (default: ASYM_DEVICE, else the
    /// first GPU, else the first CPU device); `all` for every device, or a comma-separated
    /// list of name fragments (each takes the next matching device) for several.
    #[arg(long)]
    device: Option<String>,
    /// Random seed for generated keys.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Read keys from a .npy file (1-D int32/uint32/float32 cut by --sublist, or 2-D rows).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Write the k-th values (one per sub-list, same dtype) to a .npy file (from the last mode run).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Verify every answer against select_nth_unstable (default).
    #[arg(long, overrides_with = "no_check")]
    check: bool,
    /// Skip verification.
    #[arg(long)]
    no_check: bool,
    /// Also time the peers: select_nth_unstable and BinaryHeap k-selection over rayon (default).
    #[arg(long, overrides_with = "no_peers")]
    peers: bool,
    /// Skip the peers.
    #[arg(long)]
    no_peers: bool,
    /// Timed runs per measurement (the median is reported), after one untimed warm-up run of
    /// each mode on the same data.
    #[arg(long, default_value_t = 1, value_parser = cli::count(1, 1000))]
    repeat: usize,
    /// Latency threads (default: every CPU).
    #[arg(long)]
    threads: Option<usize>,
    /// Device work-group size: a power of two ≥ d (default for the heap on a GPU: max(d, 32)
    /// for the single-item kernel, max(d, 64) for the reduction; max(d, 16) on a CPU device;
    /// 256 for radix).
    #[arg(long)]
    work_group: Option<usize>,
    /// How the device kernel runs an update-key: single (one work-item, no barriers inside)
    /// or reduce (the seed's baseline: the work-group finds the max child by reduction).
    #[arg(long, default_value = "single")]
    device_update: String,
    /// How keys reach the device: mapped (the host writes them into a mapped staging buffer)
    /// or copy (the driver's copy engine reads them where they are).
    #[arg(long, default_value = "mapped")]
    staging: String,
    /// Cores Cooperative mode leaves to the device's staging copies (default: half of the
    /// latency threads when there are 4 or more, else 0).
    #[arg(long)]
    staging_threads: Option<usize>,
    /// Fix the share of the sub-lists coop (by amount) gives the device, 0 to 1 (default: split
    /// by the speeds measured on earlier runs).
    #[arg(long)]
    device_share: Option<f64>,
    /// Keys per work-group of the device radix: longer sub-lists are cut into tiles of at most
    /// this many, a work-group each (0: one work-group per sub-list; default: the selector's,
    /// measured on the H200).
    #[arg(long)]
    radix_tile: Option<usize>,
    /// Print one JSON object per mode and length instead of a table.
    #[arg(long)]
    json: bool,
    /// Under `mpirun -np N` (N > 1, a build with `--features mpi`): owned (each rank selects
    /// whole rows, rank 0's first) or spread (every row's keys cut over the ranks: radix
    /// select with one allreduce of histograms per digit; cpu: a rank counts its part on its
    /// latency threads, gpu: on its device).
    #[arg(long, default_value = "owned")]
    layout: String,
}

/// What was run: one of the modes, or a peer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Runner {
    Mode(Mode, Strategy),
    /// GpuOnly on one member of a device set alone.
    Member(usize, Strategy),
    /// Cooperative by kind on ad-heaps, on this schedule (bridge-live or bridge-pipelined).
    Bridge(Cooperation),
    /// The device radix kernel on keys resident in SVM.
    Resident,
    /// The device radix on keys resident on one member of a device set alone.
    MemberResident(usize),
    PeerSelectNth,
    PeerBinaryHeap,
}

impl Runner {
    /// The mode and cooperation an asym runner selects with; `None` for a peer.
    fn selection(self) -> Option<(Mode, Cooperation)> {
        match self {
            Runner::Mode(m, _) => Some((m, Cooperation::ByAmount)),
            Runner::Member(..) => Some((Mode::GpuOnly, Cooperation::ByAmount)),
            Runner::Bridge(c) => Some((Mode::Cooperative, c)),
            _ => None,
        }
    }

    /// The strategy an asym runner selects with (the bridge is the heap's).
    fn strategy(self) -> Option<Strategy> {
        match self {
            Runner::Mode(_, s) | Runner::Member(_, s) => Some(s),
            Runner::Bridge(_) => Some(Strategy::Heap),
            Runner::Resident | Runner::MemberResident(_) => Some(Strategy::Radix),
            _ => None,
        }
    }

    fn name(self) -> String {
        match self {
            Runner::Mode(m, s) => format!("{}:{}", m.name(), s.name()),
            Runner::Member(i, s) => format!("gpu@{i}:{}", s.name()),
            Runner::Bridge(Cooperation::BridgeLive) => "coop:bridge-live".into(),
            Runner::Bridge(_) => "coop:bridge-pipelined".into(),
            Runner::Resident => "gpu:radix-resident".into(),
            Runner::MemberResident(i) => format!("gpu@{i}:radix-resident"),
            Runner::PeerSelectNth => "peer:select_nth".into(),
            Runner::PeerBinaryHeap => "peer:binaryheap".into(),
        }
    }
}

struct Row {
    runner: Runner,
    sublist: usize,
    k: usize,
    ms: f64,
    verified: Option<bool>,
    /// Who did what (asym's runners; `None` for a peer).
    stats: Option<SelectStats>,
}

/// `total` random int32 keys: the first of the key stream of `seed`.
fn generate(total: usize, seed: u64) -> Vec<i32> {
    let mut v = vec![0i32; total];
    v.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(i, chunk)| rng::key_stream(seed, (i << 16) as u64, chunk));
    v
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

struct Bench<'a> {
    args: &'a Args,
    selector: &'a KSelector,
    /// One selector per member of a device set (empty on one device).
    member_selectors: &'a [KSelector],
    device_label: String,
    transport: String,
    progress: Progress,
    /// The key type, for the JSON rows.
    dtype: Dtype,
}

impl Bench<'_> {
    /// The selector a runner selects with: a member's own, or the set's.
    fn selector_for(&self, runner: Runner) -> &KSelector {
        match runner {
            Runner::Member(i, _) => &self.member_selectors[i],
            _ => self.selector,
        }
    }

    fn run<K: Key + NpyElement>(
        &mut self,
        data: &[K],
        lengths: &[usize],
        runners: &[Runner],
    ) -> Result<(Vec<Row>, Option<Vec<K>>)> {
        let mut rows = Vec::new();
        let mut printed = 0;
        let mut last = None;
        // Resident keys: uploaded once, before any clock (on a device set: to each member for
        // its row alone; the set's own upload follows each cut, below).
        let on_set = !self.member_selectors.is_empty();
        let upload = |rt: &Runtime| -> Result<_> {
            let mut buf = rt.alloc::<K>(data.len())?;
            buf.write(data)?;
            Ok(buf)
        };
        let resident = match (runners.contains(&Runner::Resident), self.selector.runtime()) {
            (true, Some(rt)) if !on_set => Some(upload(rt)?),
            _ => None,
        };
        let member_resident = if on_set && runners.contains(&Runner::Resident) {
            self.member_selectors
                .iter()
                .filter_map(KSelector::runtime)
                .map(upload)
                .collect::<Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        for &len in lengths {
            let k = match self.args.k {
                Some(k) => k,
                None => (len / 10).max(1),
            };
            let cut = Sublists::Equal(len);
            let offs = cut.boundaries(data.len(), k)?;
            // Warm up outside the timings: kernels are built for this k (heap size, bridge
            // length), and device staging buffers are sized by the first full-size call
            // (allocating them cost ~10 ms on the H200). cpu, gpu and coop run once on the
            // real data (coop also measures its split there); the bridge, seconds per run,
            // on one sub-list of k keys, which builds its programs.
            let warm: Vec<i32> = (0..k as i32).rev().collect();
            for (i, buf) in member_resident.iter().enumerate() {
                self.member_selectors[i].select_svm(buf, &cut, k)?;
            }
            // The set's upload: an even split measures each member (its first call sets up
            // buffers, the second is measured), the second upload follows those speeds.
            let spread = if on_set && runners.contains(&Runner::Resident) {
                let first = self.selector.upload_spread(data, &cut, k)?;
                for _ in 0..2 {
                    self.selector.select_spread_svm(&first, k)?;
                }
                drop(first);
                Some(self.selector.upload_spread(data, &cut, k)?)
            } else {
                None
            };
            if let Some(spread) = &spread {
                self.selector.select_spread_svm(spread, k)?;
            }
            if let Some(buf) = &resident {
                self.selector.select_svm(buf, &cut, k)?;
            }
            for r in runners {
                let (Some((m, c)), Some(s)) = (r.selection(), r.strategy()) else {
                    continue;
                };
                if c == Cooperation::ByAmount {
                    // A device set tries each group of workers that could win (two calls
                    // each: with w workers at most 2·(2w + 1)) before it settles: those
                    // trials stay out of the timings too.
                    for _ in 0..64 {
                        let (_, stats) =
                            self.selector_for(*r).select_using(data, &cut, k, m, c, s)?;
                        if !stats.exploring {
                            break;
                        }
                    }
                } else {
                    self.selector
                        .select_using(&warm, &Sublists::Equal(k), k, m, c, s)?;
                }
            }
            let want = if self.args.no_check {
                None
            } else {
                Some(peers::select_nth(data, &offs, k))
            };
            for &runner in runners {
                self.progress
                    .step(format!("{} sub-list {len}", runner.name()));
                let mut times = Vec::new();
                let mut result = Vec::new();
                let mut stats = None;
                for _ in 0..self.args.repeat.max(1) {
                    let t = Instant::now();
                    // asym's runners give stats beside the answers; the peers only answers.
                    let asym = |r: Result<(Vec<K>, SelectStats)>| r.map(|(v, s)| (v, Some(s)));
                    let (v, s) = match (runner, runner.selection(), runner.strategy()) {
                        (Runner::Resident, ..) if on_set => {
                            let keys = spread.as_ref().expect("uploaded above");
                            asym(self.selector.select_spread_svm(keys, k))?
                        }
                        (Runner::Resident, ..) => {
                            let buf = resident.as_ref().expect("uploaded above");
                            asym(self.selector.select_svm(buf, &cut, k))?
                        }
                        (Runner::MemberResident(i), ..) => {
                            asym(self.member_selectors[i].select_svm(&member_resident[i], &cut, k))?
                        }
                        (_, Some((m, c)), Some(strategy)) => asym(
                            self.selector_for(runner)
                                .select_using(data, &cut, k, m, c, strategy),
                        )?,
                        (Runner::PeerSelectNth, ..) => (peers::select_nth(data, &offs, k), None),
                        _ => (peers::binary_heap(data, &offs, k), None),
                    };
                    result = v;
                    stats = s;
                    times.push(t.elapsed());
                }
                let verified = want.as_ref().map(|w| {
                    w.iter()
                        .zip(&result)
                        .all(|(a, b)| a.to_ordered() == b.to_ordered())
                });
                rows.push(Row {
                    runner,
                    sublist: len,
                    k,
                    ms: median(times).as_secs_f64() * 1e3,
                    verified,
                    stats,
                });
                if runner.strategy().is_some() {
                    last = Some(result);
                }
            }
            // JSON rows go out as each length finishes: a long sweep cut short keeps them.
            if self.args.json {
                self.print(&rows[printed..], data.len(), self.dtype);
                printed = rows.len();
            }
        }
        Ok((rows, last))
    }

    fn print(&self, rows: &[Row], n: usize, dtype: Dtype) {
        let cpu_ms = |len: usize| {
            rows.iter()
                .find(|r| r.sublist == len && matches!(r.runner, Runner::Mode(Mode::CpuOnly, _)))
                .map(|r| r.ms)
        };
        if self.args.json {
            for r in rows {
                let line = json!({
                    "mode": r.runner.name(), "strategy": r.runner.strategy().map(Strategy::name),
                    "cpu_strategy": r.stats.as_ref().and_then(|s| s.cpu_strategy).map(Strategy::name),
                    "device_strategy": r.stats.as_ref().and_then(|s| s.device_strategy).map(Strategy::name),
                    "device": match r.runner {
                        Runner::Member(i, _) | Runner::MemberResident(i) => self.member_selectors[i]
                            .runtime()
                            .map(|rt| rt.profile().label())
                            .unwrap_or_default(),
                        _ => self.device_label.clone(),
                    },
                    "member": match r.runner { Runner::Member(i, _) | Runner::MemberResident(i) => Some(i), _ => None },
                    "transport": self.transport,
                    "n": n, "sublist": r.sublist, "k": r.k, "d": self.selector.d(), "dtype": dtype.descr(),
                    "ms": r.ms, "mkeys_per_s": n as f64 / r.ms / 1e3,
                    "speedup_vs_cpu": cpu_ms(r.sublist).map(|c| c / r.ms),
                    "verified": r.verified,
                    "cpu_sublists": r.stats.as_ref().map(|s| s.cpu_sublists),
                    "device_sublists": r.stats.as_ref().map(|s| s.device_sublists),
                    "bridge_sublists": r.stats.as_ref().map(|s| s.bridge_sublists),
                    "split_sublists": r.stats.as_ref().map(|s| s.split_sublists),
                    "bridge_updates": r.stats.as_ref().map(|s| s.bridge_updates),
                    "launches": r.stats.as_ref().map(|s| s.launches),
                    "device_stages_ms": r.stats.as_ref().filter(|s| s.device_sublists > 0).map(|s| {
                        let t = s.device_times;
                        json!({"stage": t.stage_s * 1e3, "transfer": t.transfer_s * 1e3,
                               "kernel": t.kernel_s * 1e3, "wait": t.wait_s * 1e3,
                               "readback": t.readback_s * 1e3})
                    }),
                    "threads": self.selector.pool().len(),
                    "staging_threads": self.selector.staging_threads(),
                    "workers": r.stats.as_ref().filter(|s| !s.workers.is_empty()).map(|s| {
                        s.workers.iter().map(|w| json!({
                            "worker": w.worker, "member": w.member, "sublists": w.pieces,
                            "keys": w.items, "share": w.items as f64 / n as f64,
                            "launches": w.launches, "busy_ms": w.busy_s * 1e3, "error": w.error,
                        })).collect::<Vec<_>>()
                    }),
                    "redone_sublists": r.stats.as_ref().map(|s| s.redone_sublists),
                    "exploring": r.stats.as_ref().map(|s| s.exploring),
                });
                asym_apps::report!("{line}");
            }
            return;
        }
        for (i, m) in self.member_selectors.iter().enumerate() {
            if let Some(rt) = m.runtime() {
                asym_apps::report!(
                    "device @{i}: {} ({} SVM)",
                    rt.profile().label(),
                    rt.transport()
                );
            }
        }
        asym_apps::report!(
            "batch k-selection: {n} {} keys, d = {}, {} latency threads, device: {} ({} SVM)",
            dtype.descr(),
            self.selector.d(),
            self.selector.pool().len(),
            self.device_label,
            self.transport
        );
        let mut table = cli::Table::new(&[
            ">sublist",
            ">k",
            "mode",
            ">ms",
            ">Mkeys/s",
            ">vs cpu",
            "verified",
            "sub-lists cpu/dev",
        ]);
        for r in rows {
            let speed = cpu_ms(r.sublist)
                .map(|c| format!("{:.2}x", c / r.ms))
                .unwrap_or_else(|| "-".into());
            let verified = match r.verified {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            };
            let split = match (&r.stats, r.runner) {
                (Some(s), Runner::Bridge(_)) => format!("{} shared", s.bridge_sublists),
                (Some(s), _) if s.split_sublists > 0 => format!("{} split", s.split_sublists),
                (Some(s), _) if !s.workers.is_empty() => s
                    .workers
                    .iter()
                    .map(|w| match (w.member, &w.error) {
                        (_, Some(_)) => format!("@{} FAILED", w.member.unwrap_or(0)),
                        (Some(m), None) => format!("@{m} {}", w.pieces),
                        (None, None) => format!("cpu {}", w.pieces),
                    })
                    .collect::<Vec<_>>()
                    .join(" / "),
                (Some(s), _) => format!("{}/{}", s.cpu_sublists, s.device_sublists),
                _ => "rayon".into(),
            };
            table.row(vec![
                r.sublist.to_string(),
                r.k.to_string(),
                r.runner.name(),
                format!("{:.2}", r.ms),
                format!("{:.1}", n as f64 / r.ms / 1e3),
                speed,
                verified.to_string(),
                split,
            ]);
        }
        table.print();
    }
}

/// The device kernel's settings the flags give (a set's selector and its members' alike).
fn configure(selector: KSelector, args: &Args) -> Result<KSelector> {
    let mut selector = selector
        .with_device_update(cli::word("--device-update", &args.device_update)?)
        .with_device_staging(cli::word("--staging", &args.staging)?);
    if let Some(wg) = args.work_group {
        selector = selector.with_work_group(wg)?;
    }
    if let Some(tile) = args.radix_tile {
        selector = selector.with_radix_tile(tile)?;
    }
    Ok(selector)
}

/// The cooperations `--coop` names (by-amount first).
fn parse_coops(s: &str) -> Result<Vec<Cooperation>> {
    if s.trim() == "all" {
        return Ok(vec![
            Cooperation::ByAmount,
            Cooperation::BridgeLive,
            Cooperation::BridgePipelined,
        ]);
    }
    let mut out: Vec<Cooperation> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let c: Cooperation = cli::word("--coop", part)?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(Error::flag("--coop", s, "names no cooperation"));
    }
    Ok(out)
}

/// The rows a run makes, one per (strategy, mode) and cooperation, then the resident row
/// and the peers.
fn plan_runners(args: &Args, modes: &[Mode]) -> Result<Vec<Runner>> {
    let coops = parse_coops(&args.coop)?;
    let strategies = cli::words::<Strategy>("--strategy", &args.strategy)?;
    let mut runners: Vec<Runner> = Vec::new();
    for &s in &strategies {
        for &m in modes {
            if m != Mode::Cooperative {
                runners.push(Runner::Mode(m, s));
                continue;
            }
            for &c in &coops {
                match c {
                    Cooperation::ByAmount => runners.push(Runner::Mode(m, s)),
                    // Cooperation by kind shares ad-heaps: the heap strategy's rows only.
                    c if s == Strategy::Heap => runners.push(Runner::Bridge(c)),
                    _ => {}
                }
            }
        }
    }
    if args.resident {
        runners.push(Runner::Resident);
    }
    if !args.no_peers {
        runners.extend([Runner::PeerSelectNth, Runner::PeerBinaryHeap]);
    }
    Ok(runners)
}

/// On a set of `members` devices: each member alone beside the set (gpu@i rows); the bridge
/// runs on one device and is left out.
fn with_members(runners: Vec<Runner>, members: usize) -> Vec<Runner> {
    if members <= 1 {
        return runners;
    }
    let mut out = Vec::new();
    for r in runners {
        match r {
            Runner::Mode(Mode::GpuOnly, s) => {
                out.extend((0..members).map(|i| Runner::Member(i, s)));
                out.push(r);
            }
            Runner::Resident => {
                out.extend((0..members).map(Runner::MemberResident));
                out.push(r);
            }
            Runner::Bridge(c) => eprintln!(
                "batch_kselect: coop by {c} shares heaps with one device: left out on a set of {members}"
            ),
            r => out.push(r),
        }
    }
    out
}

/// The selector over the set (or the latency threads alone) and, on a set of several, one
/// selector per member for the gpu@i rows.
fn selectors(args: &Args, set: Option<&DeviceSet>) -> Result<(KSelector, Vec<KSelector>)> {
    let pool = LatencyPool::with_threads(args.threads)?;
    let members: Vec<KSelector> = match set {
        Some(set) if set.len() > 1 => set
            .members()
            .iter()
            .map(|rt| {
                let one = KSelector::new(
                    Some(rt.clone()),
                    LatencyPool::with_threads(Some(1))?,
                    args.d,
                )?;
                configure(one, args)
            })
            .collect::<Result<_>>()?,
        _ => Vec::new(),
    };
    let mut selector = configure(
        match set {
            Some(set) => KSelector::on_devices(set, pool, args.d)?,
            None => KSelector::new(None, pool, args.d)?,
        },
        args,
    )?
    .with_device_share(args.device_share)
    .map_err(|_| {
        Error::flag(
            "device-share",
            format!("{}", args.device_share.unwrap_or_default()),
            "a share between 0 and 1",
        )
    })?;
    if let Some(n) = args.staging_threads {
        selector = selector.with_staging_threads(n)?;
    }
    Ok((selector, members))
}

/// `bridge` rows as the schedule this transport allows; `--coop all` on coarse SVM leaves
/// out the live schedule, which needs fine SVM. Duplicates go.
fn resolve_bridges(args: &Args, runners: Vec<Runner>, selector: &KSelector) -> Vec<Runner> {
    let all = args.coop.trim() == "all";
    let mut resolved = Vec::new();
    for r in runners {
        let r = match r {
            Runner::Bridge(c) => match selector.bridge_schedule(c) {
                Some(Cooperation::BridgeLive)
                    if all
                        && selector.runtime().map(Runtime::transport) != Some(Transport::Fine) =>
                {
                    continue
                }
                Some(s) => Runner::Bridge(s),
                None => r,
            },
            r => r,
        };
        if !resolved.contains(&r) {
            resolved.push(r);
        }
    }
    resolved
}

/// The keys of a run: a file's, or generated int32 keys, with the sub-list lengths to run.
struct Keys {
    array: npy::NpyArray,
    generated: Vec<i32>,
    dtype: Dtype,
    lengths: Vec<usize>,
    n: usize,
}

/// The row length of an `--input` of `shape`: a 2-D file's rows, or `--sublist` for a 1-D
/// list (which a 2-D file's `--sublist` must agree with).
fn input_row_length(shape: &[usize], sublist: Option<usize>) -> Result<usize> {
    match (shape, sublist) {
        (&[_, cols], None) => Ok(cols),
        (&[_, cols], Some(s)) if s != cols => Err(Error::flag(
            "--sublist",
            s,
            format!("disagrees with the file's rows of {cols}"),
        )),
        (_, Some(s)) => Ok(s),
        _ => Err(Error::InvalidArgument(
            "a 1-D --input needs --sublist LEN".into(),
        )),
    }
}

/// The number of keys `--total-log2` asks to generate.
fn generated_total(args: &Args) -> Result<usize> {
    if args.total_log2 > 31 {
        return Err(Error::flag("--total-log2", args.total_log2, "at most 31"));
    }
    Ok(1usize << args.total_log2)
}

/// The sub-list lengths to run on `total` generated keys: `--sublist`, else 2^11, 2^13, ...,
/// 2^21, those that fit.
fn generated_lengths(args: &Args, total: usize) -> Result<Vec<usize>> {
    let lengths: Vec<usize> = match args.sublist {
        Some(s) => vec![s],
        None => (11..=21)
            .step_by(2)
            .map(|e| 1usize << e)
            .filter(|&l| l <= total)
            .collect(),
    };
    if lengths.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "2^{} keys hold no default sub-list (the shortest is 2^11); pass --sublist",
            args.total_log2
        )));
    }
    Ok(lengths)
}

/// Reads `--input` or generates `2^--total-log2` keys.
fn keys(args: &Args) -> Result<Keys> {
    let keys = match &args.input {
        Some(path) => {
            let array = npy::read(path)?;
            let len = input_row_length(&array.shape, args.sublist)?;
            Keys {
                dtype: array.dtype,
                lengths: vec![len],
                n: array.bits.len(),
                array,
                generated: Vec::new(),
            }
        }
        None => {
            let total = generated_total(args)?;
            let lengths = generated_lengths(args, total)?;
            Keys {
                array: npy::NpyArray {
                    dtype: Dtype::I32,
                    shape: vec![],
                    bits: vec![],
                },
                generated: generate(total, args.seed),
                dtype: Dtype::I32,
                lengths,
                n: total,
            }
        }
    };
    if keys.n == 0 {
        return Err(Error::InvalidArgument("the input is empty".into()));
    }
    Ok(keys)
}

fn run(args: &Args) -> Result<bool> {
    if let Some(path) = &args.output {
        // Fail before the run, not after it, on a path that cannot be written.
        output::check_writable(path)?;
    }
    let modes = cli::words::<Mode>("--mode", &args.mode)?;
    let runners = plan_runners(args, &modes)?;
    let needs_device = args.resident || modes.iter().any(|m| m.uses_device());
    let set = if needs_device {
        Some(DeviceSet::open(args.device.as_deref())?)
    } else {
        None
    };
    let (device_label, transport) = match &set {
        Some(set) => {
            let labels = |f: &dyn Fn(&Runtime) -> String| {
                set.members().iter().map(f).collect::<Vec<_>>().join(" + ")
            };
            (
                labels(&|rt| rt.profile().label()),
                labels(&|rt| rt.transport().to_string()),
            )
        }
        None => ("none (cpu mode only)".into(), "-".into()),
    };
    let runners = with_members(runners, set.as_ref().map_or(0, DeviceSet::len));
    let (selector, member_selectors) = selectors(args, set.as_ref())?;
    let runners = resolve_bridges(args, runners, &selector);
    let Keys {
        array,
        generated,
        dtype,
        lengths,
        n,
    } = keys(args)?;
    let steps = (lengths.len() * runners.len()) as u64;
    let mut bench = Bench {
        args,
        selector: &selector,
        member_selectors: &member_selectors,
        device_label,
        transport,
        progress: Progress::new(steps, args.json),
        dtype,
    };
    macro_rules! go {
        ($t:ty, $data:expr) => {{
            let (rows, last) = bench.run::<$t>($data, &lengths, &runners)?;
            bench.progress.bar.finish_and_clear();
            if !args.json {
                bench.print(&rows, n, dtype);
            }
            if let (Some(path), Some(values)) = (&args.output, last) {
                npy::write(path, &values)?;
            }
            rows.iter().all(|r| r.verified != Some(false))
        }};
    }
    let ok = match (args.input.is_some(), dtype) {
        (false, _) => go!(i32, &generated),
        (true, Dtype::I32) => go!(i32, &array.to_vec::<i32>()?),
        (true, Dtype::U32) => go!(u32, &array.to_vec::<u32>()?),
        (true, Dtype::F32) => go!(f32, &array.to_vec::<f32>()?),
    };
    Ok(ok)
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args: Args = cli::parse_args();
    match asym_apps::ranks::as_ranks("batch_kselect") {
        Err(code) => return code,
        #[cfg(feature = "mpi")]
        Ok(true) => return distributed::main(&args),
        _ => {}
    }
    cli::finish(
        "batch_kselect",
        "some answers differ from select_nth_unstable",
        run(&args),
    )
}
