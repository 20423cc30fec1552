//! batch_kselect as one rank of an MPI job (a build with `--features mpi`, launched by
//! `mpirun -np N` with N > 1): the same flags and files as on one host, the same answers.
//!
//! `--layout owned`: the rows are dealt to the ranks in order (rank 0's first, as even as the
//! count allows) and each rank selects its own with its latency threads and its device (on a
//! host with several GPUs, one each) in every `--mode`, strategy and cooperation.
//! `--layout spread`: every row's keys are cut over the ranks and radix select joins them
//! with one allreduce of histograms per digit (cpu mode: a rank's part is counted on its
//! latency threads; gpu mode: the first digit on its device, staged in every call or, with
//! `--resident`, uploaded once). Generated keys come from the counter-based key stream, each
//! rank making only its part; each rank reads only its part of an `--input` file (positional
//! reads of a regular file in row order; standard input and column-major files are read
//! whole).
//!
//! Every rank checks its own part (owned: `select_nth_unstable` on its rows; spread: how
//! many of its keys lie below and at each answer, summed over the ranks), rank 0 prints the
//! table or the JSON rows and writes `--output`.

use std::process::ExitCode;
use std::time::Instant;

use asym_apps::io::npy::{self, Dtype, NpyElement};
use asym_apps::io::output;
use asym_apps::progress::Progress;
use asym_apps::{cli, peers, ranks, rng};
use asym_mpi::{
    select_owned_with, select_spread, select_spread_part, Answers, Cluster, Layout, RankReport,
    SpreadPart,
};
use asym_runtime::{Error, Mode, Named, Result};
use asym_structures::{KSelector, Key, SelectStats, Sublists};
use mpi::datatype::Equivalence;
use serde_json::json;

use super::{
    configure, generated_lengths, generated_total, input_row_length, median, Args, Runner,
};

/// Runs batch_kselect as this rank of the job.
pub(crate) fn main(args: &Args) -> ExitCode {
    let cluster = match ranks::init("batch_kselect") {
        Ok(c) => c,
        Err(code) => return code,
    };
    let outcome = run(&cluster, args);
    ranks::finish(
        &cluster,
        "batch_kselect",
        "some answers differ from select_nth_unstable",
        outcome,
    )
}

/// What a distributed row ran: a mode of the owned layout, or the spread radix.
#[derive(Clone, Copy, PartialEq)]
enum Job {
    Owned(Runner),
    /// Owned rows already in each rank's device memory (uploaded once, untimed).
    OwnedResident,
    /// Spread rows counted on each rank's latency threads.
    Spread,
    /// Spread rows counted on each rank's device: its part staged there in every call, or
    /// already resident (uploaded once, untimed).
    SpreadDevice {
        resident: bool,
    },
}

impl Job {
    fn name(self) -> String {
        match self {
            Job::Owned(r) => r.name(),
            Job::OwnedResident => Runner::Resident.name(),
            Job::Spread => "cpu:radix".into(),
            Job::SpreadDevice { resident: false } => "gpu:radix".into(),
            Job::SpreadDevice { resident: true } => Runner::Resident.name(),
        }
    }
}

/// One row of the table: a job at one row length.
struct Row {
    job: Job,
    sublist: usize,
    k: usize,
    /// The slowest rank's median.
    ms: f64,
    verified: Option<bool>,
    ranks: Vec<RankReport>,
    /// Rank 0's own statistics (owned).
    stats: SelectStats,
}

/// The flags' plan on this rank: what runs, on what.
struct Plan<'a> {
    args: &'a Args,
    cluster: &'a Cluster,
    layout: Layout,
    jobs: Vec<Job>,
    selector: KSelector,
    /// Every rank's device (label and OpenCL device id place), in rank order.
    devices: Vec<String>,
}

/// What the flags ask for, checked without a word between the ranks (every rank sees the
/// same flags): the layout, the jobs, and the generated keys' count and row lengths.
struct Asked {
    layout: Layout,
    jobs: Vec<Job>,
    generated: Option<(usize, Vec<usize>)>,
}

fn check_flags(args: &Args) -> Result<Asked> {
    let layout: Layout = cli::word("--layout", &args.layout)?;
    let modes = cli::words::<Mode>("--mode", &args.mode)?;
    let jobs: Vec<Job> = match layout {
        Layout::Owned => super::plan_runners(args, &modes)?
            .into_iter()
            .filter_map(|r| match r {
                Runner::Resident => Some(Job::OwnedResident),
                r if r.selection().is_some() => Some(Job::Owned(r)),
                _ => None,
            })
            .collect(),
        Layout::Spread => spread_jobs(args, &modes)?,
    };
    let generated = match args.input {
        Some(_) => None,
        None => {
            let total = generated_total(args)?;
            Some((total, generated_lengths(args, total)?))
        }
    };
    Ok(Asked {
        layout,
        jobs,
        generated,
    })
}

/// The spread layout's jobs: a rank's part counted on its latency threads (cpu) or on its
/// device (gpu: staged in every call; with `--resident`, also uploaded once).
fn spread_jobs(args: &Args, modes: &[Mode]) -> Result<Vec<Job>> {
    let mut jobs = Vec::new();
    for &mode in modes {
        match mode {
            Mode::CpuOnly => jobs.push(Job::Spread),
            Mode::GpuOnly => {
                jobs.push(Job::SpreadDevice { resident: false });
                if args.resident {
                    jobs.push(Job::SpreadDevice { resident: true });
                }
            }
            _ => {
                return Err(Error::flag(
                    "--mode",
                    &args.mode,
                    "cpu or gpu with --layout spread (a rank's part of the rows is counted on \
                     its latency threads or on its device)",
                ))
            }
        }
    }
    if args.resident && !modes.contains(&Mode::GpuOnly) {
        return Err(Error::flag(
            "--resident",
            "",
            "with --mode gpu when --layout is spread (the device counts resident keys)",
        ));
    }
    Ok(jobs)
}

fn run(cluster: &Cluster, args: &Args) -> Result<bool> {
    // Agreed, so that rank 0 alone tells of a bad flag.
    let Asked {
        layout,
        jobs,
        generated,
    } = cluster.agree("checking the flags", check_flags(args))?;
    let writable = match (&args.output, cluster.is_root()) {
        (Some(path), true) => output::check_writable(path),
        _ => Ok(()),
    };
    cluster.agree("checking --output", writable)?;
    let needs_device = jobs.iter().any(|j| match j {
        Job::Owned(r) => r.selection().is_some_and(|(m, _)| m.uses_device()),
        Job::OwnedResident | Job::SpreadDevice { .. } => true,
        Job::Spread => false,
    });
    let (rt, device) = if needs_device {
        let opened = cluster.device(args.device.as_deref());
        let (rt, at, of) = cluster.agree("opening this rank's device", opened)?;
        let label = format!(
            "{} (device {at} of {of}) on {}",
            rt.profile().label(),
            cluster.host()
        );
        (Some(rt), label)
    } else {
        (None, format!("no device, on {}", cluster.host()))
    };
    let made = cluster.latency_pool(args.threads).and_then(|pool| {
        let mut s = configure(KSelector::new(rt, pool, args.d)?, args)?;
        if let Some(n) = args.staging_threads {
            s = s.with_staging_threads(n)?;
        }
        Ok(s)
    });
    let selector = cluster.agree("starting the selector", made)?;
    let jobs = match layout {
        Layout::Owned => {
            let runners = jobs
                .iter()
                .filter_map(|j| match j {
                    Job::Owned(r) => Some(*r),
                    _ => None,
                })
                .collect();
            let mut resolved: Vec<Job> = super::resolve_bridges(args, runners, &selector)
                .into_iter()
                .map(Job::Owned)
                .collect();
            if jobs.contains(&Job::OwnedResident) {
                resolved.push(Job::OwnedResident);
            }
            resolved
        }
        Layout::Spread => jobs,
    };
    let line = format!("{device}\n");
    let all = cluster.all_gather_varcount("gathering the ranks' devices", line.as_bytes())?;
    let devices = String::from_utf8_lossy(&all)
        .lines()
        .map(str::to_string)
        .collect();
    let plan = Plan {
        args,
        cluster,
        layout,
        jobs,
        selector,
        devices,
    };
    match generated {
        Some((total, lengths)) => {
            let seed = args.seed;
            plan.run::<i32>(total, &lengths, Dtype::I32, &|start, out| {
                rng::key_stream(seed, start as u64, out);
                Ok(())
            })
        }
        None => {
            // Each rank reads only its own keys of the file (positional reads).
            let (file, len) = cluster.agree("reading --input", open_input(args))?;
            let len = [len];
            macro_rules! go {
                ($t:ty) => {
                    plan.run::<$t>(file.len(), &len, file.dtype, &|start, out| {
                        file.read_into(start, out)
                    })
                };
            }
            match file.dtype {
                Dtype::I32 => go!(i32),
                Dtype::U32 => go!(u32),
                Dtype::F32 => go!(f32),
            }
        }
    }
}

/// `--input` opened for reading parts, and its row length.
fn open_input(args: &Args) -> Result<(npy::NpyFile, usize)> {
    let path = args
        .input
        .as_deref()
        .ok_or_else(|| Error::InvalidArgument("no --input".into()))?;
    let file = npy::open(path)?;
    let len = input_row_length(&file.shape, args.sublist)?;
    if file.is_empty() {
        return Err(Error::InvalidArgument("the input is empty".into()));
    }
    Ok((file, len))
}

/// Keys `start..start + out.len()` of the whole input, into `out`.
type Source<'a, K> = &'a dyn Fn(usize, &mut [K]) -> Result<()>;

/// This rank's part of `n` keys cut into rows of `len`: the keys, and where each of its rows
/// (owned) or row parts (spread) starts.
fn part<K: Key>(
    layout: Layout,
    cluster: &Cluster,
    n: usize,
    len: usize,
    source: Source<K>,
) -> Result<(Vec<K>, Vec<usize>)> {
    let (me, ranks) = (cluster.rank(), cluster.size());
    let rows = n / len;
    let pieces: Vec<(usize, usize)> = match layout {
        Layout::Owned => {
            let (a, b) = (me * rows / ranks, (me + 1) * rows / ranks);
            (a..b).map(|r| (r * len, (r + 1) * len)).collect()
        }
        Layout::Spread => (0..rows)
            .map(|r| (r * len + me * len / ranks, r * len + (me + 1) * len / ranks))
            .collect(),
    };
    let total: usize = pieces.iter().map(|(a, b)| b - a).sum();
    let mut keys = vec![K::default(); total];
    let mut offsets = Vec::with_capacity(pieces.len() + 1);
    let mut at = 0;
    offsets.push(0);
    for (a, b) in &pieces {
        at += b - a;
        offsets.push(at);
    }
    // Pieces that follow each other in the input (an owned rank's rows) are read as one.
    let (mut at, mut run) = (0, None::<(usize, usize)>);
    for (a, b) in pieces.into_iter().chain([(usize::MAX, usize::MAX)]) {
        match run {
            Some((s, e)) if e == a => run = Some((s, b)),
            _ => {
                if let Some((s, e)) = run {
                    source(s, &mut keys[at..at + (e - s)])?;
                    at += e - s;
                }
                run = Some((a, b));
            }
        }
    }
    Ok((keys, offsets))
}

impl Plan<'_> {
    fn run<K: Key + NpyElement + Equivalence>(
        &self,
        n: usize,
        lengths: &[usize],
        dtype: Dtype,
        source: Source<K>,
    ) -> Result<bool> {
        let quiet = self.args.json || !self.cluster.is_root();
        let mut progress = Progress::new((lengths.len() * self.jobs.len()) as u64, quiet);
        let mut rows = Vec::new();
        let mut last: Option<(Job, Vec<K>)> = None;
        for &len in lengths {
            let k = self.args.k.unwrap_or((len / 10).max(1));
            let fits = Sublists::Equal(len).count(n, k);
            self.cluster.agree("checking the rows", fits)?;
            let parted = part(self.layout, self.cluster, n, len, source);
            let (local, offsets) = self.cluster.agree("reading this rank's keys", parted)?;
            for &job in &self.jobs {
                progress.step(format!("{} sub-list {len}", job.name()));
                let (row, answers) = self.measure(job, &local, &offsets, len, k)?;
                rows.push(row);
                last = Some((job, answers));
            }
        }
        progress.bar.finish_and_clear();
        if self.cluster.is_root() {
            self.print(&rows, n, dtype);
        }
        if let (Some(path), Some((job, answers))) = (&self.args.output, last) {
            let all = match job {
                Job::Owned(_) | Job::OwnedResident => self
                    .cluster
                    .gather_to_root("gathering the answers", &answers)?,
                Job::Spread | Job::SpreadDevice { .. } => self.cluster.is_root().then_some(answers),
            };
            let written = match all {
                Some(values) => npy::write(path, &values),
                None => Ok(()),
            };
            self.cluster.agree("writing --output", written)?;
        }
        Ok(rows.iter().all(|r| r.verified != Some(false)))
    }

    /// One row: a warm-up call, `--repeat` timed calls from a common start, and the check.
    fn measure<K: Key + Equivalence>(
        &self,
        job: Job,
        local: &[K],
        offsets: &[usize],
        len: usize,
        k: usize,
    ) -> Result<(Row, Vec<K>)> {
        let cluster = self.cluster;
        let resident = match (job, self.selector.runtime()) {
            (Job::OwnedResident, Some(rt)) if !local.is_empty() => {
                let upload = rt.alloc::<K>(local.len()).and_then(|mut buf| {
                    buf.write(local)?;
                    Ok(buf)
                });
                Some(cluster.agree("uploading the keys", upload)?)
            }
            _ => None,
        };
        let mut spread_keys = match (job, self.selector.runtime()) {
            (Job::SpreadDevice { resident }, Some(rt)) => {
                let upload = rt.alloc::<K>(local.len().max(1)).and_then(|mut buf| {
                    if resident {
                        buf.write_range(0, local)?;
                    }
                    Ok(buf)
                });
                Some(cluster.agree("uploading the keys", upload)?)
            }
            _ => None,
        };
        let mut call = || -> Result<asym_mpi::Selection<K>> {
            match job {
                Job::OwnedResident => {
                    let cut = Sublists::Equal(len);
                    select_owned_with(cluster, local, &cut, k, Answers::InPlace, |_, cut| {
                        match &resident {
                            Some(buf) => self.selector.select_svm(buf, cut, k),
                            None => Err(Error::InvalidArgument("no keys uploaded".into())),
                        }
                    })
                }
                Job::Owned(runner) => {
                    let (mode, cooperation) = runner
                        .selection()
                        .unwrap_or((Mode::CpuOnly, Default::default()));
                    let strategy = runner.strategy().unwrap_or_default();
                    let cut = Sublists::Equal(len);
                    select_owned_with(cluster, local, &cut, k, Answers::InPlace, |keys, cut| {
                        self.selector
                            .select_using(keys, cut, k, mode, cooperation, strategy)
                    })
                }
                Job::Spread => select_spread(cluster, local, offsets, k),
                Job::SpreadDevice { resident } => {
                    let Some(keys) = spread_keys.as_mut() else {
                        return Err(Error::InvalidArgument("no device keys".into()));
                    };
                    if !resident {
                        cluster.agree("staging the keys", keys.write_range(0, local))?;
                    }
                    let part = SpreadPart::Device {
                        selector: &self.selector,
                        keys,
                    };
                    select_spread_part(cluster, part, offsets, k)
                }
            }
        };
        call()?;
        let mut times = Vec::new();
        let mut result = None;
        for _ in 0..self.args.repeat.max(1) {
            cluster.barrier("starting a timed run");
            let t = Instant::now();
            let got = call()?;
            times.push(t.elapsed());
            result = Some(got);
        }
        let got = result.unwrap_or_default();
        let mine = median(times).as_secs_f64() * 1e3;
        let ms = cluster.all_reduce_max("gathering the times", &[mine])[0];
        let verified = if self.args.no_check {
            None
        } else {
            let ok = match job {
                Job::Owned(_) | Job::OwnedResident => owned_ok(local, len, k, &got.answers),
                Job::Spread | Job::SpreadDevice { .. } => {
                    spread_ok(cluster, local, offsets, k, &got.answers)
                }
            };
            Some(cluster.all_reduce_min("checking the answers", &[ok as u8])[0] == 1)
        };
        let row = Row {
            job,
            sublist: len,
            k,
            ms,
            verified,
            ranks: got.ranks,
            stats: got.local,
        };
        Ok((row, got.answers))
    }

    fn print(&self, rows: &[Row], n: usize, dtype: Dtype) {
        let ranks = self.cluster.size();
        if self.args.json {
            for r in rows {
                let line = json!({
                    "mode": r.job.name(), "layout": self.layout.name(), "ranks": ranks,
                    "devices": self.devices, "threads_per_rank": self.selector.pool().len(),
                    "n": n, "sublist": r.sublist, "k": r.k, "d": self.selector.d(),
                    "dtype": dtype.descr(), "ms": r.ms, "mkeys_per_s": n as f64 / r.ms / 1e3,
                    "verified": r.verified,
                    "cpu_sublists_rank0": r.stats.cpu_sublists,
                    "device_sublists_rank0": r.stats.device_sublists,
                    "per_rank": r.ranks.iter().map(|p| json!({
                        "rank": p.rank, "rows": p.rows, "keys": p.keys,
                        "share": p.keys as f64 / n as f64, "busy_ms": p.busy_s * 1e3,
                        "waited_ms": p.waited_s * 1e3,
                    })).collect::<Vec<_>>(),
                });
                asym_apps::report!("{line}");
            }
            return;
        }
        asym_apps::report!(
            "batch k-selection over {ranks} MPI ranks ({} layout): {n} {} keys, d = {}, {} \
             latency threads per rank",
            self.layout,
            dtype.descr(),
            self.selector.d(),
            self.selector.pool().len(),
        );
        for (rank, device) in self.devices.iter().enumerate() {
            asym_apps::report!("rank {rank}: {device}");
        }
        let mut table = cli::Table::new(&[
            ">sublist",
            ">k",
            "mode",
            ">ms",
            ">Mkeys/s",
            ">slowest busy ms",
            ">most waited ms",
            "verified",
            "rows per rank",
        ]);
        for r in rows {
            let most =
                |f: fn(&RankReport) -> f64| r.ranks.iter().map(f).fold(0.0f64, f64::max) * 1e3;
            table.row(vec![
                r.sublist.to_string(),
                r.k.to_string(),
                r.job.name(),
                format!("{:.2}", r.ms),
                format!("{:.1}", n as f64 / r.ms / 1e3),
                format!("{:.2}", most(|p| p.busy_s)),
                format!("{:.2}", most(|p| p.waited_s)),
                match r.verified {
                    Some(true) => "yes",
                    Some(false) => "NO",
                    None => "-",
                }
                .to_string(),
                r.ranks
                    .iter()
                    .map(|p| p.rows.to_string())
                    .collect::<Vec<_>>()
                    .join(" / "),
            ]);
        }
        table.print();
    }
}

/// Whether this rank's answers of its own rows are `select_nth_unstable`'s.
fn owned_ok<K: Key>(local: &[K], len: usize, k: usize, answers: &[K]) -> bool {
    if local.is_empty() {
        return answers.is_empty();
    }
    let offs: Vec<usize> = (0..=local.len() / len).map(|i| i * len).collect();
    let want = peers::select_nth(local, &offs, k);
    want.len() == answers.len()
        && want
            .iter()
            .zip(answers)
            .all(|(a, b)| a.to_ordered() == b.to_ordered())
}

/// Whether every answer of the spread rows is a k-th smallest: fewer than k keys of its row
/// lie below it and at least k at or below it, counted on every rank and summed.
fn spread_ok<K: Key>(
    cluster: &Cluster,
    local: &[K],
    offsets: &[usize],
    k: usize,
    answers: &[K],
) -> bool {
    let rows = offsets.len() - 1;
    if answers.len() != rows {
        return false;
    }
    let mut counts = vec![0u64; 2 * rows];
    for (r, (w, a)) in offsets.windows(2).zip(answers).enumerate() {
        let a = a.to_ordered();
        for x in &local[w[0]..w[1]] {
            let x = x.to_ordered();
            counts[2 * r] += (x < a) as u64;
            counts[2 * r + 1] += (x <= a) as u64;
        }
    }
    let sums = cluster.all_reduce_sum("counting around the answers", &counts);
    sums.chunks_exact(2)
        .all(|c| c[0] < k as u64 && c[1] >= k as u64)
}
