//! Batch k-selection in every mode against `select_nth_unstable`, on fresh random data and
//! the edge cases, for every d and both transports (`ASYM_SVM=coarse` runs coarse alone).

mod common;

use asym_runtime::{Error, Mode, Named};
use asym_structures::Key;
use asym_structures::{Cooperation, DeviceStaging, DeviceUpdate, Strategy, Sublists};
use rand::{Rng, SeedableRng};

fn patterns(n: usize, rng: &mut impl Rng) -> Vec<(&'static str, Vec<i32>)> {
    vec![
        ("random", (0..n).map(|_| rng.gen()).collect()),
        ("sorted", (0..n as i32).collect()),
        ("reverse", (0..n as i32).rev().collect()),
        ("all equal", vec![-3; n]),
        (
            "many duplicates",
            (0..n).map(|_| rng.gen_range(-2..3)).collect(),
        ),
    ]
}

#[test]
fn every_mode_matches_select_nth_on_every_pattern() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let sel = common::selector(t, 8);
        for len in [1usize, 7, 64, 1000] {
            let n = len * 13;
            for (name, data) in patterns(n, &mut rng) {
                for k in [1, (len / 10).max(1), len] {
                    let offs: Vec<usize> = (0..=13).map(|i| i * len).collect();
                    let want = common::reference(&data, &offs, k);
                    for mode in Mode::ALL {
                        let got = sel.select(&data, &Sublists::Equal(len), k, mode).unwrap();
                        assert_eq!(got, want, "{t} {mode} {name} len {len} k {k}");
                    }
                }
            }
        }
    }
}

#[test]
fn every_d_and_lengths_that_are_not_powers_of_two() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    let t = common::transports()[0];
    for d in asym_structures::SUPPORTED_D {
        let sel = common::selector(t, d);
        let len = 3 * d + 5;
        let data: Vec<i32> = (0..len * 9).map(|_| rng.gen_range(-1000..1000)).collect();
        let offs: Vec<usize> = (0..=9).map(|i| i * len).collect();
        for k in [1, 2, d, d + 1, len / 2, len] {
            let want = common::reference(&data, &offs, k);
            for mode in Mode::ALL {
                assert_eq!(
                    sel.select(&data, &Sublists::Equal(len), k, mode).unwrap(),
                    want,
                    "d {d} {mode} k {k}"
                );
            }
        }
    }
}

#[test]
fn both_device_kernels_on_every_d_with_local_split_and_global_heaps() {
    // GpuOnly alone: the baseline (work-group reduction) and the single-work-item update-key,
    // heaps in local memory, split (root and its children in local memory, the rest in
    // global; single-item only) and forced to global memory, on every pattern; k = 1,
    // k = d + 1 (a partial last child block: the INT_MIN padding), 0.1 · length and the
    // whole length.
    let mut rng = rand::rngs::StdRng::from_entropy();
    let t = common::transports()[0];
    for d in asym_structures::SUPPORTED_D {
        let split_limit = (d - 1 + 1 + d) * 4;
        for update in [DeviceUpdate::GroupReduce, DeviceUpdate::SingleItem] {
            for limit in [None, Some(split_limit), Some(0)] {
                let mut sel = common::selector(t, d).with_device_update(update);
                if let Some(bytes) = limit {
                    sel = sel.with_device_local_heap_limit(bytes);
                }
                let len = 150 + 3 * d;
                let n = len * 3;
                for (name, data) in patterns(n, &mut rng) {
                    let offs: Vec<usize> = (0..=3).map(|i| i * len).collect();
                    for k in [1, d + 1, len / 10, len] {
                        let (got, stats) = sel
                            .select_with_stats(&data, &Sublists::Equal(len), k, Mode::GpuOnly)
                            .unwrap();
                        let what = format!("d {d} {update:?} limit {limit:?} {name} k {k}");
                        assert_eq!(got, common::reference(&data, &offs, k), "{what}");
                        // Where the heap went: whole (it fits), split, or global.
                        let words = (k + 2 * d).next_multiple_of(16) * 4;
                        let want = match limit {
                            None => k,
                            Some(bytes) if words <= bytes => k,
                            Some(0) => 0,
                            Some(_) if update == DeviceUpdate::SingleItem => 1 + d,
                            Some(_) => 0,
                        };
                        assert_eq!(stats.local_heap_nodes, want, "{what}");
                    }
                }
            }
        }
    }
}

#[test]
fn uneven_offsets_and_other_key_types() {
    for staging in [DeviceStaging::Mapped, DeviceStaging::CopyEngine] {
        uneven_offsets_and_other_key_types_with(staging);
    }
}

fn uneven_offsets_and_other_key_types_with(staging: DeviceStaging) {
    let mut rng = rand::rngs::StdRng::from_entropy();
    let t = common::transports()[0];
    let sel = common::selector(t, 16).with_device_staging(staging);
    let mut offs = vec![0usize];
    for _ in 0..40 {
        offs.push(offs.last().unwrap() + rng.gen_range(20..300));
    }
    let total = *offs.last().unwrap();
    let k = 17;
    let u: Vec<u32> = (0..total).map(|_| rng.gen()).collect();
    let f: Vec<f32> = (0..total)
        .map(|i| match i % 50 {
            0 => f32::NAN,
            1 => -f32::NAN,
            2 => f32::INFINITY,
            3 => -0.0,
            _ => rng.gen_range(-1e6..1e6),
        })
        .collect();
    let cut = Sublists::Offsets(offs.clone());
    for mode in Mode::ALL {
        assert_eq!(
            sel.select(&u, &cut, k, mode).unwrap(),
            common::reference(&u, &offs, k),
            "u32 {mode} {staging:?}"
        );
        let got = sel.select(&f, &cut, k, mode).unwrap();
        let want = common::reference(&f, &offs, k);
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "f32 {mode} {staging:?}: {got:?} vs {want:?}"
        );
        let i: Vec<i32> = u.iter().map(|&x| x as i32).collect();
        assert_eq!(
            sel.select(&i, &cut, k, mode).unwrap(),
            common::reference(&i, &offs, k),
            "i32 {mode} {staging:?}"
        );
    }
    // The key mappings are order-preserving bijections.
    for x in [i32::MIN, -1, 0, 1, i32::MAX] {
        assert_eq!(u32::from_ordered((x as u32).to_ordered()), x as u32);
        assert_eq!(i32::from_ordered(x), x);
    }
    for x in [f32::NEG_INFINITY, -1.5, -0.0, 0.0, 2.5, f32::INFINITY] {
        assert_eq!(f32::from_ordered(x.to_ordered()).to_bits(), x.to_bits());
    }
    assert!((-0.0f32).to_ordered() < 0.0f32.to_ordered());
}

#[test]
fn larger_sublists_use_global_heaps_when_local_memory_is_short() {
    // k = 0.1 · 2^17 needs ~52 KB of heap: over NVIDIA's 48 KB of local memory, inside PoCL's.
    let mut rng = rand::rngs::StdRng::from_entropy();
    let t = common::transports()[0];
    let sel = common::selector(t, 32);
    let len = 1 << 17;
    let data: Vec<i32> = (0..len * 3).map(|_| rng.gen()).collect();
    let offs: Vec<usize> = (0..=3).map(|i| i * len).collect();
    let k = len / 10;
    let want = common::reference(&data, &offs, k);
    for mode in Mode::ALL {
        let (got, stats) = sel
            .select_with_stats(&data, &Sublists::Equal(len), k, mode)
            .unwrap();
        assert_eq!(got, want, "{mode} (local heap: {})", stats.local_heap);
        assert_eq!(stats.cpu_sublists + stats.device_sublists, 3);
    }
}

#[test]
fn cooperative_splits_the_work_and_gets_it_right() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        // Staging by the driver thread alone (the default on 2 cores), and by a staging pool
        // on the core the one remaining latency thread leaves free.
        for staging_threads in [0, 1] {
            let sel = common::selector(t, 8)
                .with_staging_threads(staging_threads)
                .unwrap();
            assert_eq!(sel.staging_threads(), staging_threads);
            let len = 2048;
            let data: Vec<i32> = (0..len * 512).map(|_| rng.gen()).collect();
            let offs: Vec<usize> = (0..=512).map(|i| i * len).collect();
            // Twice: the second call splits by the speeds the first measured.
            for _ in 0..2 {
                let (got, stats) = sel
                    .select_with_stats(&data, &Sublists::Equal(len), len / 10, Mode::Cooperative)
                    .unwrap();
                assert_eq!(got, common::reference(&data, &offs, len / 10), "{t}");
                assert_eq!(
                    stats.cpu_sublists + stats.device_sublists,
                    512,
                    "{t}: {stats:?}"
                );
            }
        }
        // Staging threads must leave a latency thread to select.
        assert!(common::selector(t, 8).with_staging_threads(2).is_err());
    }
}

#[test]
fn many_latency_threads_and_work_groups_share_one_claim_counter() {
    // Eight pinned threads on however few cores, two staging threads and the device's
    // work-groups all claim from one counter, over thousands of short uneven sub-lists; every
    // sub-list must be answered exactly once, correctly, call after call (the later calls run
    // whatever plan the earlier ones measured best).
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let sel = common::selector_with_threads(t, 4, 8)
            .with_staging_threads(2)
            .unwrap();
        let mut offs = vec![0usize];
        for _ in 0..3000 {
            offs.push(offs.last().unwrap() + rng.gen_range(17..90));
        }
        let data: Vec<i32> = (0..*offs.last().unwrap()).map(|_| rng.gen()).collect();
        let cut = Sublists::Offsets(offs.clone());
        let want = common::reference(&data, &offs, 16);
        for round in 0..4 {
            let (got, stats) = sel
                .select_with_stats(&data, &cut, 16, Mode::Cooperative)
                .unwrap();
            assert_eq!(got, want, "{t} round {round}");
            assert_eq!(
                stats.cpu_sublists + stats.device_sublists,
                3000,
                "{stats:?}"
            );
        }
    }
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let sel = common::selector(common::transports()[0], 4);
    let data: Vec<i32> = (0..100).collect();
    let bad = |r: asym_runtime::Result<Vec<i32>>| matches!(r, Err(e) if e.is_argument_error());
    for mode in Mode::ALL {
        assert!(
            bad(sel.select(&data, &Sublists::Equal(10), 0, mode)),
            "k = 0"
        );
        assert!(
            bad(sel.select(&data, &Sublists::Equal(10), 11, mode)),
            "k > length"
        );
        assert!(bad(sel.select(&[], &Sublists::Equal(10), 1, mode)), "empty");
        assert!(
            bad(sel.select(&data, &Sublists::Equal(7), 1, mode)),
            "not divisible"
        );
        assert!(
            bad(sel.select(&data, &Sublists::Equal(0), 1, mode)),
            "length 0"
        );
        assert!(
            bad(sel.select(&data, &Sublists::Offsets(vec![0, 50, 40, 100]), 1, mode)),
            "decreasing"
        );
        assert!(
            bad(sel.select(&data, &Sublists::Offsets(vec![0, 50]), 1, mode)),
            "short of the end"
        );
    }
    let msg = sel
        .select(&data, &Sublists::Equal(10), 11, Mode::CpuOnly)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("k = 11") && msg.contains("10"), "{msg}");
    // A selector without a device refuses the device modes clearly.
    let cpu_only = asym_structures::KSelector::new(
        None,
        asym_runtime::LatencyPool::new(Default::default()).unwrap(),
        4,
    )
    .unwrap();
    assert_eq!(
        cpu_only
            .select(&data, &Sublists::Equal(10), 3, Mode::CpuOnly)
            .unwrap(),
        (0..10).map(|i| i * 10 + 2).collect::<Vec<_>>()
    );
    assert!(bad(cpu_only.select(
        &data,
        &Sublists::Equal(10),
        3,
        Mode::GpuOnly
    )));
    assert!(asym_structures::KSelector::new(
        None,
        asym_runtime::LatencyPool::new(Default::default()).unwrap(),
        3
    )
    .is_err());
}

/// Radix select in every mode (the latency threads, the device's staged chunks, both sharing
/// one counter) against `select_nth_unstable`: every key type (floats with -0.0, NaNs and
/// infinities in `total_cmp` order), every pattern, keys that share every digit but the
/// last, k = 1 and k = length, lengths that are not powers of two and shorter than a
/// work-group, sub-lists given by offsets, both transports; `Auto` runs radix on the device
/// and the method its rule picks on the latency threads, and says so.
#[test]
fn radix_select_matches_select_nth_and_reports_what_ran() {
    for t in common::transports() {
        radix_select_on(t);
    }
}

fn radix_select_on(t: asym_runtime::Transport) {
    let mut rng = rand::rngs::StdRng::from_entropy();
    let radix = common::selector(t, 8).with_strategy(Strategy::Radix);
    // Tiles of 256 keys: the device radix's tiled form on sub-lists from 257 keys up.
    let auto = common::selector(t, 8)
        .with_strategy(Strategy::Auto)
        .with_radix_tile(256)
        .unwrap();
    for len in [1usize, 5, 64, 65, 300, 4099] {
        let n = len * 7;
        let mut cases = patterns(n, &mut rng);
        // Every candidate in one bucket at every digit but the last.
        cases.push((
            "one bucket",
            (0..n).map(|i| 0x1234_5600 | (i as i32 & 0xff)).collect(),
        ));
        cases.push((
            "two values",
            (0..n).map(|i| [i32::MIN, i32::MAX][i % 2]).collect(),
        ));
        for (name, data) in cases {
            for k in [1, (len / 10).max(1), len / 2 + 1, len] {
                let k = k.min(len);
                let offs: Vec<usize> = (0..=7).map(|i| i * len).collect();
                let want = common::reference(&data, &offs, k);
                for (sel, what) in [(&radix, "radix"), (&auto, "auto")] {
                    for mode in Mode::ALL {
                        let (got, stats) = sel
                            .select_with_stats(&data, &Sublists::Equal(len), k, mode)
                            .unwrap();
                        assert_eq!(got, want, "{t} {what} {mode} {name} len {len} k {k}");
                        assert_eq!(stats.cpu_sublists + stats.device_sublists, 7);
                        if stats.cpu_sublists > 0 {
                            let method = sel.strategy().on_cpu(len, k);
                            assert_eq!(stats.cpu_strategy, Some(method), "{what} {mode}");
                        }
                        if stats.device_sublists > 0 {
                            assert_eq!(stats.device_strategy, Some(Strategy::Radix), "{mode}");
                        }
                        if mode == Mode::GpuOnly {
                            assert_eq!(stats.device_sublists, 7, "{mode}");
                        }
                    }
                }
            }
        }
    }
    // Long sub-lists (2^21: the one-read path), and keys whose every 16th is far above the
    // rest.
    for len in [1usize << 14, 50_000, 1 << 21] {
        let n = len * 3;
        let mut cases = patterns(n, &mut rng);
        cases.push((
            "sample-fooling",
            (0..n)
                .map(|i| {
                    if i % 16 == 0 {
                        i32::MAX - i as i32
                    } else {
                        (i % 977) as i32
                    }
                })
                .collect(),
        ));
        for (name, data) in cases {
            for k in [1, len / 10, len / 2, len] {
                let offs: Vec<usize> = (0..=3).map(|i| i * len).collect();
                let want = common::reference(&data, &offs, k);
                for mode in [Mode::CpuOnly, Mode::GpuOnly] {
                    let got = radix.select(&data, &Sublists::Equal(len), k, mode).unwrap();
                    assert_eq!(got, want, "{t} radix {mode} {name} len {len} k {k}");
                }
            }
        }
    }
    // Too few long sub-lists to keep 4 threads busy: every thread counts and gathers a share
    // of each.
    let shared = common::selector_with_threads(t, 8, 4).with_strategy(Strategy::Radix);
    for (lists, len) in [(1usize, 1 << 17), (2, 70_001)] {
        let n = lists * len;
        let mut cases = patterns(n, &mut rng);
        cases.push((
            "one bucket",
            (0..n).map(|i| 0x0f00_0000 | (i as i32 & 0xffff)).collect(),
        ));
        for (name, data) in cases {
            for k in [1, len / 10, len] {
                let offs: Vec<usize> = (0..=lists).map(|i| i * len).collect();
                let want = common::reference(&data, &offs, k);
                let (got, stats) = shared
                    .select_with_stats(&data, &Sublists::Equal(len), k, Mode::CpuOnly)
                    .unwrap();
                assert_eq!(got, want, "shared {name} {lists} x {len} k {k}");
                assert_eq!(stats.cpu_sublists, lists);
            }
        }
    }
    // Other key types, and sub-lists given by offsets.
    let floats: Vec<f32> = (0..3000)
        .map(|i| match i % 9 {
            0 => -0.0,
            1 => 0.0,
            2 => f32::NAN,
            3 => f32::INFINITY,
            4 => f32::NEG_INFINITY,
            _ => rng.gen_range(-1e6f32..1e6),
        })
        .collect();
    let offs = vec![0, 2, 17, 1000, 1002, 2998, 3000];
    for k in [1, 2] {
        let want = common::reference(&floats, &offs, k);
        for mode in Mode::ALL {
            let got = radix
                .select(&floats, &Sublists::Offsets(offs.clone()), k, mode)
                .unwrap();
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{t} f32 {mode} k {k}: {got:?} vs {want:?}"
            );
        }
    }
    let words: Vec<u32> = (0..5000).map(|_| rng.gen()).collect();
    let want = common::reference(&words, &[0, 2500, 5000], 250);
    for mode in Mode::ALL {
        assert_eq!(
            radix
                .select(&words, &Sublists::Equal(2500), 250, mode)
                .unwrap(),
            want,
            "{t} u32 {mode}"
        );
    }
    // The bridge shares ad-heaps: radix cooperating by kind says so instead of running.
    for c in [Cooperation::Bridge, Cooperation::BridgePipelined] {
        let e = radix
            .select_using(
                &words,
                &Sublists::Equal(2500),
                250,
                Mode::Cooperative,
                c,
                Strategy::Radix,
            )
            .unwrap_err();
        assert!(matches!(e, Error::Unsupported { .. }), "{c}: {e}");
    }
    assert_eq!(Strategy::from_name("radix"), Some(Strategy::Radix));
    // Auto's rule on the latency threads: the heap where few keys reach it.
    assert_eq!(Strategy::Auto.on_cpu(1 << 17, 1), Strategy::Heap);
    assert_eq!(Strategy::Auto.on_cpu(1 << 17, 16), Strategy::Heap);
    assert_eq!(Strategy::Auto.on_cpu(2048, 16), Strategy::Radix);
    assert_eq!(Strategy::Auto.on_cpu(1 << 21, 1 << 17), Strategy::Radix);
    assert_eq!(Strategy::Radix.on_cpu(1 << 17, 1), Strategy::Radix);
    assert_eq!(Strategy::from_name("quick"), None);
}

/// Radix select on keys resident in SVM against `select_nth_unstable`: every key type, the
/// adversarial patterns, k = 1 and k = length, sub-lists shorter than a work-group and longer
/// than one, a buffer written by a kernel, both transports, the cached buffers reused and
/// replaced when the cut changes, and the tiled form (tiles of 256 and 1000 keys) against the
/// one-group form, on work-groups of 256 and 64.
#[test]
fn select_svm_matches_select_nth_on_resident_keys() {
    for t in common::transports() {
        for tile in [0, 256, 1000] {
            select_svm_on(t, tile);
        }
    }
}

fn select_svm_on(t: asym_runtime::Transport, tile: usize) {
    let mut rng = rand::rngs::StdRng::from_entropy();
    {
        // Tiles of 1000 keys on work-groups of 64 (4 buckets per picker), the rest on 256.
        let mut sel = common::selector(t, 8).with_radix_tile(tile).unwrap();
        if tile == 1000 {
            sel = sel.with_work_group(64).unwrap();
        }
        let rt = sel.runtime().unwrap().clone();
        for len in [1usize, 7, 255, 256, 1000, 1001, 5000] {
            let n = len * 5;
            let mut cases = patterns(n, &mut rng);
            cases.push((
                "one bucket",
                (0..n).map(|i| 0x1234_5600 | (i as i32 & 0xff)).collect(),
            ));
            for (name, data) in cases {
                let mut buf = rt.alloc::<i32>(n).unwrap();
                buf.write(&data).unwrap();
                for k in [1, (len / 10).max(1), len] {
                    let offs: Vec<usize> = (0..=5).map(|i| i * len).collect();
                    let want = common::reference(&data, &offs, k);
                    let (got, stats) = sel.select_svm(&buf, &Sublists::Equal(len), k).unwrap();
                    assert_eq!(got, want, "{t} tile {tile} {name} len {len} k {k}");
                    assert_eq!(stats.device_strategy, Some(Strategy::Radix));
                    assert_eq!(stats.device_sublists, 5);
                    let tiled = tile > 0 && len > tile;
                    assert_eq!(stats.launches, if tiled { 4 } else { 1 }, "tile {tile}");
                }
            }
        }
        // Cuts that change between calls on one selector: equal sub-lists are matched to the
        // cached cut without building offsets, so offsets with the same first sub-list and
        // total, another length, another buffer length and k out of range must all be seen.
        let data: Vec<i32> = (0..4000).map(|_| rng.gen_range(-50..50)).collect();
        let mut buf = rt.alloc::<i32>(data.len()).unwrap();
        buf.write(&data).unwrap();
        let mut short = rt.alloc::<i32>(2000).unwrap();
        short.write(&data[..2000]).unwrap();
        let equal = |len: usize| (0..=4000 / len).map(|i| i * len).collect::<Vec<_>>();
        let uneven = vec![0, 1000, 2500, 3000, 4000];
        for (cut, offs, k) in [
            (Sublists::Equal(1000), equal(1000), 5),
            (Sublists::Offsets(uneven.clone()), uneven.clone(), 5),
            (Sublists::Equal(1000), equal(1000), 1000),
            (Sublists::Equal(2000), equal(2000), 7),
            (Sublists::Equal(1000), equal(1000), 1),
        ] {
            let want = common::reference(&data, &offs, k);
            let (got, stats) = sel.select_svm(&buf, &cut, k).unwrap();
            assert_eq!(got, want, "{t} tile {tile} {cut:?} k {k}");
            assert_eq!(stats.device_sublists, offs.len() - 1);
        }
        let want = common::reference(&data[..2000], &[0, 1000, 2000], 9);
        let (got, _) = sel.select_svm(&short, &Sublists::Equal(1000), 9).unwrap();
        assert_eq!(
            got, want,
            "{t} tile {tile}: a shorter buffer, same sub-list length"
        );
        for k in [0, 1001] {
            assert!(
                matches!(
                    sel.select_svm(&short, &Sublists::Equal(1000), k),
                    Err(e) if e.is_argument_error()
                ),
                "{t}: k = {k} on the cached cut"
            );
        }
        // Floats in total order, and offsets.
        let floats: Vec<f32> = (0..4000)
            .map(|i| match i % 7 {
                0 => -0.0,
                1 => f32::NAN,
                2 => f32::NEG_INFINITY,
                _ => rng.gen_range(-1e3f32..1e3),
            })
            .collect();
        let mut fbuf = rt.alloc::<f32>(floats.len()).unwrap();
        fbuf.write(&floats).unwrap();
        let offs = vec![0, 3, 900, 901 + 2, 4000];
        let want = common::reference(&floats, &offs, 3);
        let (got, _) = sel
            .select_svm(&fbuf, &Sublists::Offsets(offs.clone()), 3)
            .unwrap();
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{t} f32: {got:?} vs {want:?}"
        );
        // Keys produced by a kernel: asym_add_one turns 41s into 42s, then some are lowered.
        let mut words = rt.alloc::<u32>(4096).unwrap();
        let host: Vec<u32> = (0..4096).map(|_| rng.gen_range(0..1000)).collect();
        words.write(&host).unwrap();
        let mut k1 = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one").unwrap();
        k1.arg_svm("data", &words)
            .unwrap()
            .arg_scalar("n", 4096u32)
            .unwrap();
        k1.launch(4096, None).unwrap().wait().unwrap();
        let plus: Vec<u32> = host.iter().map(|x| x + 1).collect();
        let want = common::reference(&plus, &[0, 1024, 2048, 3072, 4096], 100);
        let (got, _) = sel.select_svm(&words, &Sublists::Equal(1024), 100).unwrap();
        assert_eq!(got, want, "{t} kernel-written keys");
        // A selector without a device refuses clearly.
        let none = asym_structures::KSelector::new(
            None,
            asym_runtime::LatencyPool::new(Default::default()).unwrap(),
            8,
        )
        .unwrap();
        assert!(none
            .select_svm(&words, &Sublists::Equal(1024), 100)
            .is_err());
    }
}

/// Cooperative by amount with the split forced to its extremes and between them, for both
/// strategies and both transports: every sub-list answered once, by the side the share
/// says (or by both, split by range), and right; a share outside 0..=1 is refused.
#[test]
fn cooperative_splits_forced_to_every_extreme() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        for strategy in Strategy::METHODS {
            for (lists, len) in [(40usize, 1000usize), (3, 70_001), (1, 70_001), (1, 5000)] {
                let data: Vec<i32> = (0..lists * len).map(|_| rng.gen()).collect();
                let offs: Vec<usize> = (0..=lists).map(|i| i * len).collect();
                let k = len / 3;
                let want = common::reference(&data, &offs, k);
                for share in [0.0, 1.0 / lists as f64, 0.5, 1.0] {
                    let sel = common::selector_with_threads(t, 8, 3)
                        .with_strategy(strategy)
                        .with_device_share(Some(share))
                        .unwrap();
                    let (got, stats) = sel
                        .select_with_stats(&data, &Sublists::Equal(len), k, Mode::Cooperative)
                        .unwrap();
                    let what = format!("{t} {} {lists} x {len} share {share}", strategy.name());
                    assert_eq!(got, want, "{what}");
                    // Radix on fewer long sub-lists than twice the threads: each is split
                    // by range between the sides (unless the share gives one side all).
                    // (3 threads: one sub-list keeps a third of them busy, three all.)
                    let by_range = strategy == Strategy::Radix && lists == 1 && len >= 1 << 16;
                    if by_range && share > 0.0 && share < 1.0 {
                        assert_eq!(stats.split_sublists, lists, "{what}");
                        assert_eq!(stats.cpu_sublists + stats.device_sublists, 0, "{what}");
                        assert_eq!(stats.device_strategy, Some(strategy), "{what}");
                        assert_eq!(stats.cpu_strategy, Some(strategy), "{what}");
                        continue;
                    }
                    let on_device = (lists as f64 * share).round() as usize;
                    assert_eq!(stats.device_sublists, on_device, "{what}");
                    assert_eq!(stats.cpu_sublists, lists - on_device, "{what}");
                    if on_device > 0 {
                        assert_eq!(stats.device_strategy, Some(strategy), "{what}");
                    }
                }
            }
        }
    }
    for bad in [-0.1, 1.5, f64::NAN] {
        let pool = asym_runtime::LatencyPool::new(Default::default()).unwrap();
        let sel = asym_structures::KSelector::new(None, pool, 8).unwrap();
        assert!(sel.with_device_share(Some(bad)).is_err(), "{bad}");
    }
}

/// Cooperative radix on few long sub-lists splits each by range between the device and the
/// latency threads, one merged histogram per sub-list: against `select_nth_unstable` on every
/// pattern (every candidate in one bucket, all equal, sorted both ways), k = 1, 0.1 · length
/// and length, device shares from a sliver to most, several tiles per device range, both
/// transports, and floats in total order.
#[test]
fn one_sub_list_split_by_range_across_both_sides() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        for (lists, len) in [(1usize, 1usize << 17), (2, 100_003)] {
            let n = lists * len;
            // 4 threads: two sub-lists keep half of them busy, too few.
            let mut cases = patterns(n, &mut rng);
            cases.push((
                "one bucket",
                (0..n).map(|i| 0x0f00_0000 | (i as i32 & 0xffff)).collect(),
            ));
            let offs: Vec<usize> = (0..=lists).map(|i| i * len).collect();
            for share in [0.01, 0.3, 0.7] {
                let sel = common::selector_with_threads(t, 8, 4)
                    .with_strategy(Strategy::Radix)
                    .with_radix_tile(1000)
                    .unwrap()
                    .with_device_share(Some(share))
                    .unwrap();
                for (name, data) in &cases {
                    for k in [1, len / 10, len] {
                        let want = common::reference(data, &offs, k);
                        let (got, stats) = sel
                            .select_with_stats(data, &Sublists::Equal(len), k, Mode::Cooperative)
                            .unwrap();
                        let what = format!("{t} {name} {lists} x {len} share {share} k {k}");
                        assert_eq!(got, want, "{what}");
                        assert_eq!(stats.split_sublists, lists, "{what}");
                    }
                }
            }
        }
        let floats: Vec<f32> = (0..1 << 17)
            .map(|i| match i % 11 {
                0 => -0.0,
                1 => 0.0,
                2 => f32::NAN,
                3 => f32::NEG_INFINITY,
                _ => rng.gen_range(-1e3f32..1e3),
            })
            .collect();
        let sel = common::selector_with_threads(t, 8, 3)
            .with_strategy(Strategy::Radix)
            .with_device_share(Some(0.4))
            .unwrap();
        for k in [1, 5000, 1 << 17] {
            let want = common::reference(&floats, &[0, 1 << 17], k);
            let got = sel
                .select(&floats, &Sublists::Equal(1 << 17), k, Mode::Cooperative)
                .unwrap();
            assert_eq!(got[0].to_bits(), want[0].to_bits(), "{t} f32 k {k}");
        }
    }
}
