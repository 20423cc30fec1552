//! Lists every OpenCL device with its profile and SVM level, then, on the selected device,
//! checks SVM round trips host → device → host on every transport it supports and measures
//! round-trip latency per transport, launch + finish latency, map + unmap cost, upload paths
//! and the latency of one dependent global-memory access (a load, an atomic minimum).
//!
//! ```text
//! cargo run --release --bin devices [-- --device NAME --json --samples N]
//! ```

use std::process::ExitCode;

use asym_runtime::diag::{self, ChaseAccess, Summary};
use asym_runtime::signal::pack;
use asym_runtime::{list_devices, select_device, DeviceProfile, Error, Result, Runtime, Transport};
use clap::Parser;
use serde_json::{json, Value};

use asym_apps::cli;

#[derive(Parser, Debug)]
#[command(about = "List OpenCL devices and measure asym's SVM transports on the selected one")]
struct Args {
    /// Device to measure: a case-insensitive part of its platform or device name
    /// (default: ASYM_DEVICE, else the first GPU, else the first CPU device).
    #[arg(long)]
    device: Option<String>,
    /// Transports to measure: fine, coarse or all (those the device supports).
    #[arg(long, default_value = "all")]
    transport: String,
    /// Timed samples per measurement.
    #[arg(long, default_value_t = 500, value_parser = cli::count(1, 1_000_000))]
    samples: usize,
    /// Words in the SVM round-trip check (up to 2^30).
    #[arg(long, default_value_t = 1 << 20, value_parser = cli::count(1, 1 << 30))]
    words: usize,
    /// MiB uploaded by the upload probe (mapped writes vs the driver's copy engine; up to
    /// 65536).
    #[arg(long, default_value_t = 64, value_parser = cli::count(1, 1 << 16))]
    upload_mib: usize,
    /// MiB of the dependent-access chases (a random cycle followed link by link with loads
    /// and with atomic minimums: the latency of one dependent access), a comma list, each
    /// 1 to 4096; 0 skips them. 16 MiB stays in a large GPU's L2, 256 MiB does not.
    #[arg(long, default_value = "16,256")]
    chase_mib: String,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

struct TransportReport {
    transport: Transport,
    round_trip_ms: f64,
    words: usize,
    launch: Summary,
    map_unmap: Summary,
    echo: Summary,
    pingpong: Option<Summary>,
    upload: diag::UploadTimes,
    chases: Vec<Chase>,
    /// Microseconds per grid barrier, and its work-groups (`Err`: why none could run).
    grid_barrier: std::result::Result<(f64, usize), String>,
}

/// Nanoseconds per dependent access through a cycle of `mib` MiB.
struct Chase {
    mib: usize,
    load_ns: f64,
    atomic_ns: f64,
}

/// Grid barriers per timed launch beyond the 100 the difference cancels, and the work-group
/// size (near-far's).
const BARRIERS: u32 = 2_000;
const BARRIER_WG: usize = 256;

/// Microseconds per grid barrier and the groups it spans; `Err` with the reason where the
/// device could not keep every group resident.
fn grid_barrier(rt: &Runtime) -> Result<std::result::Result<(f64, usize), String>> {
    let mut probe = diag::GridBarrierProbe::new(rt, None, BARRIER_WG)?;
    match probe.us_per_barrier(BARRIERS, CHASE_SAMPLES) {
        Ok(us) => Ok(Ok((us, probe.groups()))),
        Err(e @ Error::Unsupported { .. }) => Ok(Err(e.to_string())),
        Err(e) => Err(e),
    }
}

/// Links per timed chase beyond the 1,000 the difference cancels, and launches per median.
const CHASE_LINKS: u32 = 16_384;
const CHASE_SAMPLES: usize = 5;

/// The sizes `--chase-mib` names (none for 0).
fn chase_sizes(value: &str) -> Result<Vec<usize>> {
    let sizes = cli::numbers("--chase-mib", value)?;
    if sizes == [0] {
        return Ok(Vec::new());
    }
    match sizes.iter().find(|&&m| !(1..=4096).contains(&m)) {
        Some(m) => Err(Error::flag(
            "--chase-mib",
            m.to_string(),
            "each size is 1 to 4096 MiB (0 alone skips the chases)",
        )),
        None => Ok(sizes),
    }
}

fn chase(rt: &Runtime, mib: usize) -> Result<Chase> {
    let mut probe = diag::ChaseProbe::new(rt, (mib << 20) / 4, 0x5eed_c4a5e)?;
    let mut per_link = |a| probe.ns_per_link(a, CHASE_LINKS, CHASE_SAMPLES);
    Ok(Chase {
        mib,
        load_ns: per_link(ChaseAccess::Load)?,
        atomic_ns: per_link(ChaseAccess::AtomicMin)?,
    })
}

fn summary_json(s: &Summary) -> Value {
    json!({"median_us": s.median_us, "p10_us": s.p10_us, "p90_us": s.p90_us, "samples": s.n})
}

fn profile_json(d: &DeviceProfile) -> Value {
    json!({
        "platform": d.platform, "name": d.name, "vendor": d.vendor, "driver": d.driver,
        "type": d.kind.to_string(), "compute_units": d.compute_units,
        "max_work_group_size": d.max_work_group_size, "local_mem_bytes": d.local_mem_bytes,
        "global_mem_bytes": d.global_mem_bytes,
        "opencl_c": format!("{}.{}", d.opencl_c.0, d.opencl_c.1), "cl_std": d.cl_std(),
        "c11_atomics": d.c11_atomics, "svm": d.svm.to_string(), "int64_atomics": d.int64_atomics,
        "transports": Transport::supported_by(d).iter().map(|t| t.to_string()).collect::<Vec<_>>(),
    })
}

fn measure(
    device: &DeviceProfile,
    t: Transport,
    args: &Args,
    chase_mib: &[usize],
) -> Result<TransportReport> {
    let rt = Runtime::open(device.clone(), Some(t), None)?;
    let n = args.samples.max(1);
    let round_trip = diag::svm_round_trip(&rt, args.words, 0x5eed)?;
    let mut probe = diag::LaunchProbe::new(&rt)?;
    let launch = diag::sample(20, n, || probe.launch_finish())?;
    let mut map = diag::MapProbe::new(&rt, 1024)?;
    let map_unmap = diag::sample(20, n, || map.map_unmap())?;
    let svc = diag::echo_service(&rt, 64)?;
    let mut i = 0u32;
    let echo = diag::sample(20, n, || {
        i += 1;
        svc.send(pack(i, 0))?;
        svc.recv().map(drop)
    })?;
    svc.stop()?;
    let pingpong = if t == Transport::Fine {
        let rounds = (n * 10 + 100) as u32;
        let mut pp = diag::PingPong::start(&rt, rounds)?;
        let s = diag::sample(100, n * 10, || pp.round())?;
        pp.finish()?;
        Some(s)
    } else {
        None
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let upload = diag::upload_probe(&rt, args.upload_mib << 20, threads, 3)?;
    let chases = chase_mib
        .iter()
        .map(|&mib| chase(&rt, mib))
        .collect::<Result<Vec<_>>>()?;
    let grid_barrier = grid_barrier(&rt)?;
    Ok(TransportReport {
        grid_barrier,
        upload,
        chases,
        transport: t,
        round_trip_ms: round_trip.as_secs_f64() * 1e3,
        words: args.words,
        launch,
        map_unmap,
        echo,
        pingpong,
    })
}

fn run(args: &Args) -> Result<()> {
    let chase_mib = chase_sizes(&args.chase_mib)?;
    let devices = list_devices()?;
    let selected = select_device(args.device.as_deref())?;
    let transports: Vec<Transport> = match args.transport.as_str() {
        "all" => Transport::candidates(&selected)?,
        one => {
            let t: Transport = cli::word("--transport", one)?;
            t.check(&selected)?;
            vec![t]
        }
    };
    if !args.json {
        println!("asym: {} OpenCL device(s)\n", devices.len());
        for (i, d) in devices.iter().enumerate() {
            let mark = if d.label() == selected.label() {
                "   <- selected"
            } else {
                ""
            };
            let text = d.to_string();
            let (head, body) = text.split_once('\n').unwrap_or((&text, ""));
            println!("[{i}] {head}{mark}\n{body}");
            let ts: Vec<String> = Transport::supported_by(d)
                .iter()
                .map(|t| t.to_string())
                .collect();
            println!(
                "  transports        {}\n",
                if ts.is_empty() {
                    "none (no SVM)".into()
                } else {
                    ts.join(", ")
                }
            );
        }
        if transports.is_empty() {
            println!(
                "{} has no SVM transport: asym cannot run its structures there.",
                selected.label()
            );
            return Ok(());
        }
        println!(
            "Measuring {} ({} samples each; times in µs: median [p10, p90])",
            selected.label(),
            args.samples
        );
    }
    let mut reports = Vec::new();
    for &t in &transports {
        let r = measure(&selected, t, args, &chase_mib)?;
        if !args.json {
            let f = |s: &Summary| format!("{:9.2} [{:.2}, {:.2}]", s.median_us, s.p10_us, s.p90_us);
            println!("\n  {} transport", r.transport);
            println!(
                "    SVM round trip host→device→host   ok: {} words verified in {:.2} ms",
                r.words, r.round_trip_ms
            );
            println!("    launch + finish (empty kernel)    {}", f(&r.launch));
            println!("    map + unmap (4 KiB buffer)        {}", f(&r.map_unmap));
            println!("    ring round trip (echo service)    {}", f(&r.echo));
            match &r.pingpong {
                Some(p) => println!("    ping-pong with a running kernel   {}", f(p)),
                None => println!("    ping-pong with a running kernel   n/a (coarse SVM: hand-offs at kernel boundaries only)"),
            }
            let u = &r.upload;
            let gbs = |d: std::time::Duration| u.bytes as f64 / d.as_secs_f64() / 1e9;
            println!(
                "    upload {} MiB, mapped: map {:.2} ms, write {:.2} ms ({:.1} GB/s; again {:.1} GB/s), unmap + transfer {:.2} ms ({:.1} GB/s)",
                u.bytes >> 20,
                u.map.as_secs_f64() * 1e3,
                u.first_write.as_secs_f64() * 1e3,
                gbs(u.first_write),
                gbs(u.second_write),
                u.unmap_transfer.as_secs_f64() * 1e3,
                gbs(u.unmap_transfer)
            );
            println!(
                "    upload {} MiB, copy engine from a Vec: {:.2} ms ({:.1} GB/s)",
                u.bytes >> 20,
                u.copy_engine.as_secs_f64() * 1e3,
                gbs(u.copy_engine)
            );
            match &r.grid_barrier {
                Ok((us, groups)) => {
                    println!("    grid barrier ({groups} groups of {BARRIER_WG})     {us:9.2}")
                }
                Err(why) => println!("    grid barrier                      n/a ({why})"),
            }
            for c in &r.chases {
                println!(
                    "    dependent access, {:4} MiB cycle    load {:.0} ns, atomic minimum {:.0} ns",
                    c.mib, c.load_ns, c.atomic_ns
                );
            }
        }
        reports.push(r);
    }
    if args.json {
        let out = json!({
            "devices": devices.iter().map(profile_json).collect::<Vec<_>>(),
            "selected": selected.label(),
            "transports": reports.iter().map(|r| json!({
                "transport": r.transport.to_string(),
                "svm_round_trip": {"verified": true, "words": r.words, "ms": r.round_trip_ms},
                "launch_finish": summary_json(&r.launch),
                "map_unmap": summary_json(&r.map_unmap),
                "ring_round_trip": summary_json(&r.echo),
                "pingpong": r.pingpong.as_ref().map(summary_json),
                "upload": {
                    "bytes": r.upload.bytes,
                    "map_ms": r.upload.map.as_secs_f64() * 1e3,
                    "first_write_ms": r.upload.first_write.as_secs_f64() * 1e3,
                    "second_write_ms": r.upload.second_write.as_secs_f64() * 1e3,
                    "unmap_transfer_ms": r.upload.unmap_transfer.as_secs_f64() * 1e3,
                    "copy_engine_ms": r.upload.copy_engine.as_secs_f64() * 1e3,
                },
                "grid_barrier": match &r.grid_barrier {
                    Ok((us, groups)) => json!({"us": us, "groups": groups, "wg": BARRIER_WG}),
                    Err(why) => json!({"error": why}),
                },
                "dependent_access": r.chases.iter().map(|c| json!({
                    "mib": c.mib, "load_ns": c.load_ns, "atomic_min_ns": c.atomic_ns,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        println!(
            "{}",
            serde_json::to_string(&out).expect("JSON of plain values")
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args: Args = cli::parse_args();
    cli::finish("devices", "", run(&args).map(|()| true))
}
