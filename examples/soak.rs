//! The soak: every structure under mixed batches for a bounded time, with device failures
//! injected at random (a launch, a map, an allocation or a wait made to fail at a random step
//! of half the batches), each structure checked against a host model after every batch. The
//! report counts operations done, faults injected, faults survived (the structure checked out
//! after the batch in which one fired) and keys lost (must be 0). `scripts/soak.sh` runs it.
//!
//! ```text
//! cargo run --release --bin soak                       # 10 minutes
//! cargo run --release --bin soak -- --minutes 1 --json
//! cargo run --release --bin soak -- --structures heap-gpu,list --device nvidia
//! ```
//!
//! Exit codes: 0 every check passed and no key was lost; 3 a key was lost or a check failed;
//! 2 a bad flag; 1 a failure outside the soaked calls (a device that cannot open).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use asym_apps::cli::{self, Table};
use asym_apps::progress::Progress;
use asym_apps::soak::{
    soak_batch, ArenaSubject, HeapSubject, ListSubject, SelectSubject, SoakTally, Subject,
    TreeSubject,
};
use asym_runtime::{DeviceSet, Error, LatencyPool, Mode, PoolOptions, Result, Runtime};
use clap::Parser;
use rand::SeedableRng;
use serde_json::json;

/// The structures, by the names `--structures` takes.
const STRUCTURES: [&str; 7] = [
    "heap-gpu",
    "heap-coop",
    "heap-set",
    "list",
    "arena",
    "tree",
    "kselect-set",
];

#[derive(Parser, Debug)]
#[command(
    about = "Every structure under mixed batches and injected device failures, \
                   checked after every batch; reports keys lost (must be 0)"
)]
struct Args {
    /// How long to soak, in minutes (fractions allowed).
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Which structures, comma-separated, or all: heap-gpu, heap-coop, heap-set, list,
    /// arena, tree, kselect-set.
    #[arg(long, default_value = "all")]
    structures: String,
    /// OpenCL device of the single-device structures (default: ASYM_DEVICE, else the first
    /// GPU, else the first CPU device).
    #[arg(long)]
    device: Option<String>,
    /// Devices of the set the set structures spread over: all, or a comma-separated list of
    /// names; faults are injected into any member.
    #[arg(long, default_value = "all")]
    set: String,
    /// Seed of the batches and the faults (default: random, printed).
    #[arg(long)]
    seed: Option<u64>,
    /// One JSON object per structure instead of a table.
    #[arg(long)]
    json: bool,
}

/// The chosen structures, made on `rt`, `set` and `pool`.
fn subjects<'a>(
    chosen: &[&str],
    rt: &Runtime,
    set: Option<&DeviceSet>,
    pool: &'a LatencyPool,
) -> Result<Vec<Box<dyn Subject + 'a>>> {
    let need_set = || set.ok_or_else(|| Error::InvalidArgument("no device set".into()));
    chosen
        .iter()
        .map(|&name| -> Result<Box<dyn Subject + 'a>> {
            Ok(match name {
                "heap-gpu" => Box::new(HeapSubject::on_device(Mode::GpuOnly, rt, pool)?),
                "heap-coop" => Box::new(HeapSubject::on_device(Mode::Cooperative, rt, pool)?),
                "heap-set" => Box::new(HeapSubject::on_set(need_set()?)?),
                "list" => Box::new(ListSubject::new(rt, pool)?),
                "arena" => Box::new(ArenaSubject::new(rt)?),
                "tree" => Box::new(TreeSubject::new(rt)?),
                _ => Box::new(SelectSubject::new(need_set()?)?),
            })
        })
        .collect()
}

fn report(tallies: &[SoakTally], json: bool, at: &str, seed: u64, seconds: f64) {
    if json {
        for t in tallies {
            asym_apps::report!(
                "{}",
                json!({
                    "structure": t.name, "batches": t.batches, "operations": t.operations,
                    "errors": t.errors, "injected": t.injected, "survived": t.survived,
                    "keys_lost": t.keys_lost, "broken_checks": t.broken,
                    "first_break": t.first_break, "device": at, "seed": seed,
                    "seconds": seconds,
                })
            );
        }
        return;
    }
    asym_apps::report!("soak on {at}, {seconds:.0} s, seed {seed}");
    let mut table = Table::new(&[
        "structure",
        ">batches",
        ">operations",
        ">errors",
        ">injected",
        ">survived",
        ">keys lost",
        "checks",
    ]);
    let total = tallies.iter().fold(SoakTally::default(), |mut a, t| {
        a.batches += t.batches;
        a.operations += t.operations;
        a.errors += t.errors;
        a.injected += t.injected;
        a.survived += t.survived;
        a.keys_lost += t.keys_lost;
        a.broken += t.broken;
        a
    });
    for t in tallies.iter().chain([&SoakTally {
        name: "all".into(),
        ..total
    }]) {
        table.row(vec![
            t.name.clone(),
            t.batches.to_string(),
            t.operations.to_string(),
            t.errors.to_string(),
            t.injected.to_string(),
            t.survived.to_string(),
            t.keys_lost.to_string(),
            match (&t.first_break, t.broken) {
                (_, 0) => "ok".into(),
                (Some(why), n) => format!("{n} broken: {why}"),
                (None, n) => format!("{n} broken"),
            },
        ]);
    }
    table.print();
}

fn run(args: &Args) -> Result<bool> {
    if !(args.minutes > 0.0 && args.minutes <= 10_000.0) {
        return Err(Error::flag(
            "--minutes",
            args.minutes,
            "a time from 0 to 10000 minutes",
        ));
    }
    let chosen = cli::choose("--structures", &args.structures, &STRUCTURES)?;
    let rt = Runtime::on_device(args.device.as_deref())?;
    let set = if chosen.iter().any(|s| s.ends_with("-set")) {
        Some(DeviceSet::open(Some(&args.set))?)
    } else {
        None
    };
    let pool = LatencyPool::new(PoolOptions {
        threads: Some(2),
        ..Default::default()
    })?;
    let mut subjects = subjects(&chosen, &rt, set.as_ref(), &pool)?;
    let seed = args.seed.unwrap_or_else(rand::random);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut tallies: Vec<SoakTally> = subjects
        .iter()
        .map(|s| SoakTally {
            name: s.name(),
            ..Default::default()
        })
        .collect();
    let limit = Duration::from_secs_f64(args.minutes * 60.0);
    let started = Instant::now();
    let mut progress = Progress::new(limit.as_secs().max(1), args.json);
    let mut shown = 0;
    while started.elapsed() < limit {
        for (subject, tally) in subjects.iter_mut().zip(&mut tallies) {
            soak_batch(subject.as_mut(), &mut rng, tally);
        }
        let now = started.elapsed().as_secs();
        while shown < now.min(limit.as_secs()) {
            shown += 1;
            let lost: u64 = tallies.iter().map(|t| t.keys_lost).sum();
            progress.step(format!("{lost} keys lost"));
        }
    }
    progress.bar.finish_and_clear();
    let at = match &set {
        Some(set) => format!(
            "{} (set: {})",
            rt.profile().label(),
            set.members()
                .iter()
                .map(|m| m.profile().label())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => rt.profile().label(),
    };
    let seconds = started.elapsed().as_secs_f64();
    report(&tallies, args.json, &at, seed, seconds);
    Ok(tallies.iter().all(|t| t.keys_lost == 0 && t.broken == 0))
}

fn main() -> ExitCode {
    asym_runtime::exit_quietly_on_broken_pipe();
    let args: Args = cli::parse_args();
    cli::finish(
        "soak",
        "keys were lost or a check failed (see the table)",
        run(&args),
    )
}
