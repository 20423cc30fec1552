//! Checks every distributed path of asym against one host's answers, on the MPI installation
//! at hand: `mpirun -np 4 mpi_selfcheck` (every case), `--case spread-dups` (one), `--list`.
//!
//! Every rank builds the whole input of a case from its seed (small inputs), takes its part
//! as the layout says, runs the distributed call, and compares with the answer of one host
//! (`select_nth_unstable` on whole rows). Rank 0 prints one line per case; the exit status is
//! 0 when all agree, 1 when one differs, 2 on bad flags.
//!
//! The failure drills end the job on purpose, so that the tests can check how: `--fail-rank R`
//! (rank R passes a bad cut: every rank exits 2 naming it), `--stall-rank R` (rank R stops
//! answering: the others end the job after `ASYM_MPI_TIMEOUT_S`), `--die-rank R` (rank R
//! dies: the launcher ends the others).

use std::process::ExitCode;
use std::time::Duration;

use asym_mpi::{select_owned, select_spread, select_spread_part, Answers, Cluster, SpreadPart};
use asym_runtime::{Error, Mode, Result, Runtime};
use asym_structures::{heap_for, HeapOptions, KSelector, Key, Sublists};
use mpi::datatype::Equivalence;
use rand::{Rng, SeedableRng};

const HELP: &str = "mpi_selfcheck: every distributed path against one host's answers

usage: mpirun -np N mpi_selfcheck [--case NAME] [--list] [--device NAME]
       [--fail-rank R | --stall-rank R | --die-rank R]

  --case NAME     run one case (default: every case)
  --list          print the cases and exit
  --device NAME   the OpenCL device of the gpu and coop cases (default: ASYM_DEVICE, else
                  the first GPU, else the first CPU device)
  --fail-rank R   drill: rank R passes a bad cut; every rank exits 2 naming it
  --stall-rank R  drill: rank R stops answering; the others end the job after
                  ASYM_MPI_TIMEOUT_S seconds
  --die-rank R    drill: rank R dies at once; the launcher ends the others";

/// The keys of a case's rows.
#[derive(Clone, Copy)]
enum Keys {
    Random,
    Duplicates,
    AllEqual,
    Sorted,
    Reverse,
}

/// How a case cuts its input over the ranks.
#[derive(Clone, Copy)]
enum Cut {
    /// As even as the numbers allow.
    Even,
    /// Everything on the last rank.
    LastRank,
    /// Seeded random cut points (some parts empty).
    Ragged,
    /// Nothing on rank 1, the rest even over the others.
    NoneOnRankOne,
}

struct Case {
    name: &'static str,
    spread: bool,
    rows: usize,
    len: usize,
    k: usize,
    keys: Keys,
    cut: Cut,
    mode: Mode,
    dtype: &'static str,
    /// Rank 1 has no device for a device case: every rank must leave with an error naming
    /// it.
    fault: bool,
}

const fn case(name: &'static str, spread: bool, rows: usize, len: usize, k: usize) -> Case {
    Case {
        name,
        spread,
        rows,
        len,
        k,
        keys: Keys::Random,
        cut: Cut::Even,
        mode: Mode::CpuOnly,
        dtype: "i32",
        fault: false,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case("owned-random", false, 37, 1000, 100),
        Case {
            mode: Mode::GpuOnly,
            ..case("owned-gpu", false, 23, 3000, 2999)
        },
        Case {
            mode: Mode::Cooperative,
            ..case("owned-coop", false, 41, 2048, 1)
        },
        Case {
            cut: Cut::LastRank,
            ..case("owned-one-rank", false, 9, 500, 250)
        },
        Case {
            cut: Cut::NoneOnRankOne,
            ..case("owned-rank-without-keys", false, 9, 500, 7)
        },
        case("owned-fewer-rows-than-ranks", false, 1, 777, 300),
        Case {
            keys: Keys::Duplicates,
            ..case("owned-dups", false, 12, 999, 500)
        },
        Case {
            dtype: "f32",
            ..case("owned-f32", false, 10, 1001, 10)
        },
        case("spread-random", true, 5, 10_007, 5_000),
        case("spread-k-1", true, 3, 4_096, 1),
        case("spread-k-len", true, 3, 4_095, 4_095),
        Case {
            keys: Keys::Duplicates,
            ..case("spread-dups", true, 7, 3_001, 1_500)
        },
        Case {
            keys: Keys::AllEqual,
            ..case("spread-all-equal", true, 4, 1_000, 999)
        },
        Case {
            keys: Keys::Sorted,
            ..case("spread-sorted", true, 4, 2_000, 700)
        },
        Case {
            keys: Keys::Reverse,
            ..case("spread-reverse", true, 4, 2_000, 1_300)
        },
        Case {
            cut: Cut::LastRank,
            ..case("spread-one-rank", true, 6, 1_500, 400)
        },
        Case {
            cut: Cut::Ragged,
            ..case("spread-ragged", true, 17, 1_234, 600)
        },
        case("spread-rows-shorter-than-ranks", true, 50, 3, 2),
        Case {
            cut: Cut::NoneOnRankOne,
            ..case("spread-rank-without-keys", true, 5, 900, 450)
        },
        Case {
            dtype: "f32",
            ..case("spread-f32", true, 4, 5_000, 2_500)
        },
        Case {
            dtype: "u32",
            ..case("spread-u32", true, 4, 5_000, 4_000)
        },
        case(
            "spread-many-rows",
            true,
            asym_mpi::kselect::ROWS_PER_ROUND + 5,
            8,
            3,
        ),
        // Each rank's part counted on its device (coop: even ranks on the host, odd ones on
        // the device, in one call).
        Case {
            mode: Mode::GpuOnly,
            cut: Cut::Ragged,
            ..case("spread-gpu", true, 9, 70_001, 35_000)
        },
        Case {
            mode: Mode::GpuOnly,
            keys: Keys::Duplicates,
            ..case("spread-gpu-dups", true, 5, 3_001, 1)
        },
        Case {
            mode: Mode::GpuOnly,
            cut: Cut::NoneOnRankOne,
            ..case("spread-gpu-rank-without-keys", true, 5, 900, 900)
        },
        Case {
            mode: Mode::GpuOnly,
            dtype: "f32",
            ..case("spread-gpu-f32", true, 4, 5_000, 2_500)
        },
        Case {
            mode: Mode::GpuOnly,
            ..case(
                "spread-gpu-many-rows",
                true,
                asym_mpi::kselect::ROWS_PER_ROUND + 5,
                8,
                3,
            )
        },
        Case {
            mode: Mode::Cooperative,
            cut: Cut::Ragged,
            ..case("spread-mixed", true, 6, 20_000, 19_999)
        },
        Case {
            mode: Mode::GpuOnly,
            fault: true,
            ..case("spread-gpu-rank-1-without-device", true, 3, 1_000, 10)
        },
    ]
}

/// Key `i` of row `row` of a case, as raw 32 bits.
fn raw_key(c: &Case, seed: u64, row: usize, i: usize) -> u32 {
    let mix = |x: u64| {
        let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as u32
    };
    match c.keys {
        Keys::Random => mix(seed ^ ((row as u64) << 32 | i as u64)),
        Keys::Duplicates => mix(seed ^ ((row as u64) << 32 | i as u64)) % 4,
        Keys::AllEqual => 7,
        Keys::Sorted => i as u32,
        Keys::Reverse => (c.len - i) as u32,
    }
}

/// Cut points of `n` items over `ranks`: `ranks + 1` offsets.
fn cut(c: &Case, n: usize, ranks: usize, salt: u64) -> Vec<usize> {
    let mut points: Vec<usize> = match c.cut {
        Cut::Even => (0..=ranks).map(|r| r * n / ranks).collect(),
        Cut::LastRank => (0..=ranks)
            .map(|r| if r == ranks { n } else { 0 })
            .collect(),
        Cut::Ragged => {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(salt);
            let mut p: Vec<usize> = (0..ranks - 1).map(|_| rng.gen_range(0..=n)).collect();
            p.sort_unstable();
            std::iter::once(0)
                .chain(p)
                .chain(std::iter::once(n))
                .collect()
        }
        Cut::NoneOnRankOne if ranks > 1 => {
            let others = ranks - 1;
            let mut p = vec![0];
            for r in 0..ranks {
                let i = if r < 1 { r } else { r - 1 };
                let end = if r == 1 { p[r] } else { (i + 1) * n / others };
                p.push(end);
            }
            p
        }
        Cut::NoneOnRankOne => vec![0, n],
    };
    points[ranks] = n;
    points
}

/// Runs one case on this rank; `Ok(true)` when the answers agree with one host's.
fn run_case<K: Key + Equivalence>(
    cluster: &Cluster,
    c: &Case,
    from_raw: fn(u32) -> K,
    selector: &dyn Fn(Mode) -> Result<KSelector>,
) -> Result<bool> {
    let (me, ranks) = (cluster.rank(), cluster.size());
    let seed = 0x5eed ^ c.name.len() as u64;
    let row_keys = |row: usize| -> Vec<K> {
        (0..c.len)
            .map(|i| from_raw(raw_key(c, seed, row, i)))
            .collect()
    };
    let reference: Vec<K> = (0..c.rows)
        .map(|row| {
            let mut keys = row_keys(row);
            *keys.select_nth_unstable_by(c.k - 1, K::cmp_keys).1
        })
        .collect();
    if c.spread {
        let mut local = Vec::new();
        let mut offsets = vec![0];
        for row in 0..c.rows {
            let points = cut(c, c.len, ranks, seed ^ row as u64);
            local.extend_from_slice(&row_keys(row)[points[me]..points[me + 1]]);
            offsets.push(local.len());
        }
        if !c.mode.uses_device() {
            let got = select_spread(cluster, &local, &offsets, c.k)?;
            return Ok(same(&got.answers, &reference));
        }
        return spread_on_devices(cluster, c, &local, &offsets, &reference, selector);
    }
    let points = cut(c, c.rows, ranks, seed);
    let local: Vec<K> = (points[me]..points[me + 1]).flat_map(row_keys).collect();
    let sel = cluster.agree("making the selector", selector(c.mode))?;
    let got = select_owned(
        cluster,
        &sel,
        &local,
        &Sublists::Equal(c.len),
        c.k,
        c.mode,
        Answers::OnRoot,
    )?;
    Ok(!cluster.is_root() || same(&got.answers, &reference))
}

/// A spread case whose parts are counted on the ranks' devices (coop: the odd ranks'; a
/// fault case: rank 1 counts its device keys through a selector without a device).
fn spread_on_devices<K: Key + Equivalence>(
    cluster: &Cluster,
    c: &Case,
    local: &[K],
    offsets: &[usize],
    reference: &[K],
    selector: &dyn Fn(Mode) -> Result<KSelector>,
) -> Result<bool> {
    let me = cluster.rank();
    let on_host = c.mode == Mode::Cooperative && me % 2 == 0;
    let made = selector(Mode::GpuOnly).and_then(|sel| {
        let rt = sel
            .runtime()
            .cloned()
            .ok_or_else(|| Error::InvalidArgument("a device case without a device".into()))?;
        let mut keys = rt.alloc::<K>(local.len().max(1))?;
        keys.write_range(0, local)?;
        if c.fault && me == 1 {
            return Ok((KSelector::new(None, cluster.latency_pool(None)?, 8)?, keys));
        }
        Ok((sel, keys))
    });
    let (sel, keys) = cluster.agree("uploading this rank's keys", made)?;
    let part = if on_host {
        SpreadPart::Host(local)
    } else {
        SpreadPart::Device {
            selector: &sel,
            keys: &keys,
        }
    };
    let got = select_spread_part(cluster, part, offsets, c.k);
    if !c.fault {
        return Ok(same(&got?.answers, reference));
    }
    // Rank 1 leaves with its own error, every other rank with rank 1's.
    Ok(match got {
        Err(Error::RankFailed { rank, .. }) => rank == 1 && me != 1,
        Err(_) => me == 1,
        Ok(_) => cluster.size() == 1,
    })
}

/// The heap, sort and exchange cases.
const HEAP_CASES: [&str; 9] = [
    "heap-random",
    "heap-device",
    "heap-dups",
    "heap-skew",
    "heap-one-rank",
    "sort-random",
    "sort-dups",
    "sort-one-rank",
    "exchange-sparse",
];

/// The keys rank `rank` inserts in `round` of heap case `name` (the same on every rank).
fn heap_keys(name: &str, round: usize, rank: usize, ranks: usize) -> Vec<u32> {
    let n = match name {
        _ if name.ends_with("one-rank") && rank + 1 != ranks => 0,
        "heap-random" | "heap-device" if round == 1 && rank == 0 => 0,
        _ => 3000 + 997 * round + 37 * rank,
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64((round * 1000 + rank) as u64);
    (0..n)
        .map(|_| {
            let x: u32 = rng.gen();
            match name {
                "heap-dups" | "sort-dups" => x % 5,
                "heap-skew" if round > 0 => (1 << 31) | (x >> 12),
                "heap-skew" => x >> 12,
                _ => x,
            }
        })
        .collect()
}

/// A heap or sort case; `Ok(true)` when rank 0's gathered answers are the reference's.
fn run_heap_case(cluster: &Cluster, name: &str, rt: Option<&Runtime>) -> Result<bool> {
    let (me, ranks) = (cluster.rank(), cluster.size());
    if name == "exchange-sparse" {
        return sparse_exchanges(cluster);
    }
    if name.starts_with("sort") {
        let mine = heap_keys(name, 0, me, ranks);
        let sorted = asym_mpi::sample_sort(cluster, &mine)?;
        let ordered = sorted.windows(2).all(|w| w[0] <= w[1]);
        let all = cluster.gather_to_root("gathering the sorted ranges", &sorted)?;
        let mut want: Vec<u32> = (0..ranks)
            .flat_map(|r| heap_keys(name, 0, r, ranks))
            .collect();
        want.sort_unstable();
        return Ok(ordered && all.is_none_or(|a| a == want));
    }
    // Each rank's range in a heap on its latency threads, or on its device.
    let mode = if name == "heap-device" {
        Mode::GpuOnly
    } else {
        Mode::CpuOnly
    };
    let pool = cluster.agree("starting the latency threads", cluster.latency_pool(None))?;
    let local = heap_for::<u32>(mode, &HeapOptions::new(64), Some((&pool).into()), rt);
    let local = cluster.agree("making the local heap", local)?;
    let mut heap = asym_mpi::DistributedHeap::new(cluster, local)?;
    let mut reference = std::collections::BinaryHeap::new();
    let mut ok = true;
    for (round, n) in [500usize, 0, 7777, 3].into_iter().enumerate() {
        heap.insert(&heap_keys(name, round, me, ranks))?;
        for r in 0..ranks {
            reference.extend(
                heap_keys(name, round, r, ranks)
                    .into_iter()
                    .map(std::cmp::Reverse),
            );
        }
        ok &= heap.len() == reference.len();
        let got = heap.delete_min_to_root(n)?;
        let want: Vec<u32> = (0..n).map_while(|_| reference.pop().map(|r| r.0)).collect();
        ok &= got.is_none_or(|g| g == want);
    }
    if name == "heap-skew" && ranks > 1 {
        ok &= heap.rebalances() >= 1;
    }
    let rest = heap.delete_min_to_root(usize::MAX)?;
    let want: Vec<u32> = std::iter::from_fn(|| reference.pop().map(|r| r.0)).collect();
    ok &= rest.is_none_or(|g| g == want) && heap.is_empty();
    Ok(ok)
}

/// Rounds of `all_to_all_varcount` where most ranks send and receive nothing (a distributed
/// search's exchanges far from its frontier): each rank gets exactly what was sent to it.
/// Empty buffers at one address once made such an exchange hang on every rank.
fn sparse_exchanges(cluster: &Cluster) -> Result<bool> {
    let (me, ranks) = (cluster.rank(), cluster.size());
    // Round `round`: rank r sends `count(round, r, d)` words to rank d.
    let count = |round: usize, r: usize, d: usize| match round % 5 {
        0 | 1 => 0,
        2 if r == 0 && d == 1 % ranks => 3 + round % 4,
        3 if (r + 1) % ranks == d => round % 3,
        4 if d == r => 1,
        _ => 0,
    };
    let word = |round: usize, r: usize, i: usize| (round * 1000 + r * 10 + i) as u64;
    let mut ok = true;
    for round in 0..200 {
        let mut send = Vec::new();
        let mut offsets = vec![0];
        for d in 0..ranks {
            send.extend((0..count(round, me, d)).map(|i| word(round, me, i)));
            offsets.push(send.len());
        }
        let (got, _) = cluster.all_to_all_varcount("a sparse exchange", &send, &offsets)?;
        let want: Vec<u64> = (0..ranks)
            .flat_map(|r| (0..count(round, r, me)).map(move |i| word(round, r, i)))
            .collect();
        ok &= got == want;
    }
    Ok(ok)
}

fn same<K: Key>(a: &[K], b: &[K]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_ordered() == y.to_ordered())
}

struct Flags {
    case: Option<String>,
    list: bool,
    device: Option<String>,
    fail_rank: Option<usize>,
    stall_rank: Option<usize>,
    die_rank: Option<usize>,
}

fn flags() -> Result<Option<Flags>> {
    let mut f = Flags {
        case: None,
        list: false,
        device: None,
        fail_rank: None,
        stall_rank: None,
        die_rank: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| Error::flag(a.clone(), "", "a value"))
        };
        let rank = |v: String| {
            v.parse::<usize>()
                .map_err(|_| Error::flag(a.clone(), &v, "a rank number"))
        };
        match a.as_str() {
            "-h" | "--help" => {
                println!("{HELP}");
                return Ok(None);
            }
            "--list" => f.list = true,
            "--case" => f.case = Some(value()?),
            "--device" => f.device = Some(value()?),
            "--fail-rank" => f.fail_rank = Some(rank(value()?)?),
            "--stall-rank" => f.stall_rank = Some(rank(value()?)?),
            "--die-rank" => f.die_rank = Some(rank(value()?)?),
            _ => return Err(Error::flag(a.clone(), "", "a flag of --help")),
        }
    }
    Ok(Some(f))
}

/// The drills: each ends the job in its own way.
fn drill(cluster: &Cluster, f: &Flags) -> Result<()> {
    let me = Some(cluster.rank());
    if f.die_rank == me {
        eprintln!("rank {}: dying on purpose (--die-rank)", cluster.rank());
        std::process::abort();
    }
    if f.stall_rank == me {
        std::thread::sleep(cluster.timeout() * 10 + Duration::from_secs(5));
    }
    if f.fail_rank.is_some() || f.stall_rank.is_some() || f.die_rank.is_some() {
        let pool = cluster.agree("starting the latency threads", cluster.latency_pool(None))?;
        let sel = KSelector::new(None, pool, 8)?;
        let len = if f.fail_rank == me { 7 } else { 8 };
        let keys: Vec<i32> = (0..64).collect();
        select_owned(
            cluster,
            &sel,
            &keys,
            &Sublists::Equal(len),
            2,
            Mode::CpuOnly,
            Answers::OnRoot,
        )?;
    }
    Ok(())
}

fn run(cluster: &Cluster, f: &Flags) -> Result<bool> {
    drill(cluster, f)?;
    let all = cases();
    if f.list {
        if cluster.is_root() {
            all.iter().for_each(|c| println!("{}", c.name));
            HEAP_CASES.iter().for_each(|c| println!("{c}"));
        }
        return Ok(true);
    }
    let heaps: Vec<&str> = HEAP_CASES
        .iter()
        .copied()
        .filter(|c| f.case.as_deref().is_none_or(|n| n == *c))
        .collect();
    let chosen: Vec<&Case> = all
        .iter()
        .filter(|c| f.case.as_deref().is_none_or(|n| n == c.name))
        .collect();
    if chosen.is_empty() && heaps.is_empty() {
        return Err(Error::flag(
            "--case",
            f.case.clone().unwrap_or_default(),
            "a name of --list",
        ));
    }
    let set = if chosen.iter().any(|c| c.mode.uses_device()) || heaps.contains(&"heap-device") {
        let opened = cluster.device(f.device.as_deref()).map(|(rt, ..)| rt);
        Some(cluster.agree("opening this rank's device", opened)?)
    } else {
        None
    };
    let selector = |mode: Mode| -> Result<KSelector> {
        let rt = if mode.uses_device() {
            set.clone()
        } else {
            None
        };
        KSelector::new(rt, cluster.latency_pool(None)?, 8)
    };
    let mut ok = true;
    for c in chosen {
        let agreed = match c.dtype {
            "f32" => run_case(cluster, c, f32::from_bits, &selector),
            "u32" => run_case(cluster, c, |x| x, &selector),
            _ => run_case(cluster, c, |x| x as i32, &selector),
        };
        let agreed = cluster.agree(c.name, agreed)?;
        let everywhere = cluster.all_reduce_min(c.name, &[agreed as u8])[0] == 1;
        if cluster.is_root() {
            println!(
                "{:<34} {} ranks  {}",
                c.name,
                cluster.size(),
                if everywhere { "ok" } else { "DIFFERS" }
            );
        }
        ok &= everywhere;
    }
    for name in heaps {
        let agreed = cluster.agree(name, run_heap_case(cluster, name, set.as_ref()))?;
        let everywhere = cluster.all_reduce_min(name, &[agreed as u8])[0] == 1;
        if cluster.is_root() {
            let verdict = if everywhere { "ok" } else { "DIFFERS" };
            println!("{name:<34} {} ranks  {verdict}", cluster.size());
        }
        ok &= everywhere;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let f = match flags() {
        Ok(Some(f)) => f,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mpi_selfcheck: {e}");
            return ExitCode::from(2);
        }
    };
    let cluster = match Cluster::init() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mpi_selfcheck: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&cluster, &f) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            if let Some(line) = cluster.error_line("mpi_selfcheck", &e) {
                eprintln!("{line}");
            }
            ExitCode::from(if e.is_usage_error() { 2 } else { 1 })
        }
    }
}
