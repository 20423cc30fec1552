//! The SVM allocator: malloc/free from the host and from kernels, on both transports, against
//! a model of which blocks are live; exhaustion, growth, bad frees and churn.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use asym_runtime::{Error, Runtime, Transport};
use asym_structures::{ArenaLayout, ArenaView, SvmArena};
use rand::{Rng, SeedableRng};

/// Runs `f` on a host view of the arena: shared atomics on the fine transport, a map on the
/// coarse one.
fn with_view<R>(arena: &mut SvmArena, f: impl FnOnce(ArenaView<'_>) -> R) -> R {
    if arena.runtime().transport() == Transport::Fine {
        f(arena.view().expect("view"))
    } else {
        let mut m = arena.map().expect("map");
        f(m.view())
    }
}

/// Asserts that the blocks (handle, bytes) do not overlap and lie in the arena.
fn assert_disjoint(blocks: &[(u32, usize)], capacity_words: usize) {
    let mut sorted: Vec<(u32, usize)> = blocks.to_vec();
    sorted.sort_unstable();
    for w in sorted.windows(2) {
        let (a, la) = w[0];
        let (b, _) = w[1];
        assert!(
            a as usize + la.div_ceil(4) <= b as usize,
            "blocks {a} ({la} bytes) and {b} overlap"
        );
    }
    for &(h, l) in &sorted {
        assert!(h != 0 && h as usize + l.div_ceil(4) <= capacity_words);
    }
}

fn capacity_words(arena: &SvmArena) -> usize {
    (arena.capacity_bytes() + arena.layout().superblock_bytes()) / 4
}

#[test]
fn class_of_picks_the_smallest_class_that_fits() {
    let l = ArenaLayout::default();
    assert_eq!(l.class_of(0), None);
    assert_eq!(l.class_of(1), Some(0));
    assert_eq!(l.class_of(8), Some(0));
    assert_eq!(l.class_of(9), Some(1));
    assert_eq!(l.class_of(16), Some(1));
    assert_eq!(l.class_of(17), Some(2));
    assert_eq!(l.class_of(16 * 1024), Some(11));
    assert_eq!(l.class_of(16 * 1024 + 1), None);
    for bytes in 1..5000 {
        let c = l.class_of(bytes).unwrap();
        assert!(l.class_bytes(c) >= bytes);
        assert!(c == 0 || l.class_bytes(c - 1) < bytes);
    }
}

#[test]
fn host_malloc_free_against_a_model() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut arena = SvmArena::new(&rt, 32 << 20).unwrap();
        let cap = capacity_words(&arena);
        let mut live: BTreeMap<u32, (usize, u32)> = BTreeMap::new();
        with_view(&mut arena, |v| {
            for step in 0..20_000u32 {
                if live.is_empty() || rng.gen_bool(0.6) {
                    let bytes = *[1usize, 7, 8, 12, 40, 100, 1000, 5000]
                        .get(rng.gen_range(0..8))
                        .unwrap();
                    let h = v.malloc(bytes, step as usize).expect("room");
                    for w in v.words(h, bytes.div_ceil(4)).unwrap() {
                        w.store(step, Ordering::Relaxed);
                    }
                    assert!(live.insert(h, (bytes, step)).is_none(), "handle {h} twice");
                } else {
                    let k = *live.keys().nth(rng.gen_range(0..live.len())).unwrap();
                    let (bytes, stamp) = live.remove(&k).unwrap();
                    for w in v.words(k, bytes.div_ceil(4)).unwrap() {
                        assert_eq!(w.load(Ordering::Relaxed), stamp, "block {k} overwritten");
                    }
                    v.free(k, step as usize).unwrap();
                }
            }
        });
        let blocks: Vec<(u32, usize)> = live.iter().map(|(&h, &(b, _))| (h, b)).collect();
        assert_disjoint(&blocks, cap);
        let s = arena.stats().unwrap();
        let l = arena.layout();
        let expect: u64 = blocks
            .iter()
            .map(|&(_, b)| l.class_bytes(l.class_of(b).unwrap()) as u64)
            .sum();
        assert_eq!(s.bytes_in_use, expect, "{t}");
        assert!(s.high_water_bytes >= expect);
        assert!(s.consistent(&l), "{t}: {s:?}");
        assert_eq!((s.failed_mallocs, s.bad_frees), (0, 0));
    }
}

#[test]
fn freed_blocks_are_reused_not_leaked() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut arena = SvmArena::new(&rt, 64 * 1024).unwrap();
        // Far more mallocs than the arena holds at once: only reuse makes this fit.
        with_view(&mut arena, |v| {
            for round in 0..200 {
                let hs: Vec<u32> = (0..1000).map(|i| v.malloc(16, i).unwrap()).collect();
                for (i, h) in hs.into_iter().enumerate() {
                    v.free(h, i + round).unwrap();
                }
            }
        });
        let s = arena.stats().unwrap();
        assert_eq!(s.bytes_in_use, 0);
        assert!(s.high_water_bytes >= 16_000);
        assert!(s.superblocks_carved <= 2, "{s:?}");
        assert!(s.consistent(&arena.layout()));
    }
}

#[test]
fn exhaustion_is_an_error_and_growth_keeps_handles() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut arena = SvmArena::new(&rt, 16 * 1024).unwrap();
        let mut held = Vec::new();
        let err = with_view(&mut arena, |v| loop {
            match v.malloc(8, 0) {
                Ok(h) => {
                    v.word(h, 0).unwrap().store(h ^ 0xABCD, Ordering::Relaxed);
                    held.push(h);
                }
                Err(e) => break e,
            }
        });
        assert!(matches!(err, Error::OutOfMemory(_)), "{err}");
        assert_eq!(held.len(), 16 * 1024 / 8, "one superblock of 8-byte blocks");
        let s = arena.stats().unwrap();
        assert_eq!(s.failed_mallocs, 1);
        // The device sees the same arena as full.
        assert_eq!(arena.malloc_on_device(&[8, 8]).unwrap(), vec![0, 0]);
        arena.grow(32 * 1024).unwrap();
        assert!(arena.capacity_bytes() >= 48 * 1024);
        with_view(&mut arena, |v| {
            for &h in &held {
                assert_eq!(v.word(h, 0).unwrap().load(Ordering::Relaxed), h ^ 0xABCD);
            }
            let more = v.malloc(8, 0).expect("room after growing");
            assert!(!held.contains(&more));
        });
        let hs = arena.malloc_on_device(&[64; 100]).unwrap();
        assert!(
            hs.iter().all(|&h| h != 0),
            "the device mallocs after growth"
        );
        assert!(arena.stats().unwrap().consistent(&arena.layout()));
    }
}

#[test]
fn bad_sizes_and_bad_frees_are_refused() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut arena = SvmArena::new(&rt, 64 * 1024).unwrap();
        with_view(&mut arena, |v| {
            assert!(matches!(v.malloc(0, 0), Err(Error::OutOfMemory(_))));
            assert!(matches!(v.malloc(1 << 20, 0), Err(Error::OutOfMemory(_))));
            let h = v.malloc(32, 0).unwrap();
            for bad in [0, 1, h + 1, h + 4, u32::MAX, 3 * 4096 * 100] {
                assert!(
                    matches!(v.free(bad, 0), Err(e) if e.is_argument_error()),
                    "free({bad})"
                );
            }
            v.free(h, 0).unwrap();
        });
        let ok = arena.free_on_device(&[1, 4096 + 3, u32::MAX]).unwrap();
        assert_eq!(ok, vec![false; 3]);
        assert_eq!(arena.malloc_on_device(&[0]).unwrap(), vec![0]);
        let s = arena.stats().unwrap();
        assert_eq!(s.bad_frees, 6 + 3);
        assert_eq!(s.bytes_in_use, 0);
        assert!(s.consistent(&arena.layout()));
    }
}

#[test]
fn device_mallocs_are_disjoint_and_freed_by_the_host_or_device() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut arena = SvmArena::new(&rt, 8 << 20).unwrap();
        let sizes: Vec<u32> = (0..10_000).map(|_| rng.gen_range(1..=600)).collect();
        let hs = arena.malloc_on_device(&sizes).unwrap();
        assert!(hs.iter().all(|&h| h != 0));
        let blocks: Vec<(u32, usize)> = hs
            .iter()
            .zip(&sizes)
            .map(|(&h, &b)| (h, b as usize))
            .collect();
        assert_disjoint(&blocks, capacity_words(&arena));
        // Every block holds its work-item's stamp; the host frees the even ones.
        with_view(&mut arena, |v| {
            for (i, (&h, &b)) in hs.iter().zip(&sizes).enumerate() {
                for w in v.words(h, (b as usize).div_ceil(4)).unwrap() {
                    assert_eq!(w.load(Ordering::Relaxed), i as u32);
                }
                if i % 2 == 0 {
                    v.free(h, i).unwrap();
                }
            }
        });
        let odd: Vec<u32> = hs.iter().skip(1).step_by(2).copied().collect();
        assert!(arena.free_on_device(&odd).unwrap().iter().all(|&ok| ok));
        let s = arena.stats().unwrap();
        assert_eq!(s.bytes_in_use, 0, "{t}");
        assert!(s.consistent(&arena.layout()), "{t}: {s:?}");
        let again = arena.malloc_on_device(&sizes).unwrap();
        assert!(again.iter().all(|&h| h != 0));
        assert_eq!(
            arena.stats().unwrap().superblocks_carved,
            s.superblocks_carved,
            "the second round reuses the freed blocks"
        );
    }
}

#[test]
fn device_oom_returns_null_for_the_excess_only() {
    for t in common::transports() {
        let rt = common::runtime(t);
        let mut arena = SvmArena::new(&rt, 16 * 1024).unwrap();
        let hs = arena.malloc_on_device(&[8; 3000]).unwrap();
        let got: Vec<u32> = hs.iter().copied().filter(|&h| h != 0).collect();
        assert_eq!(got.len(), 2048, "{t}");
        assert_disjoint(
            &got.iter().map(|&h| (h, 8)).collect::<Vec<_>>(),
            capacity_words(&arena),
        );
        let s = arena.stats().unwrap();
        assert_eq!(s.failed_mallocs, 3000 - 2048);
        assert!(s.consistent(&arena.layout()));
    }
}

/// CPU threads churn on the host view while a kernel churns on the device: at the same time on
/// the fine transport, one after the other on the coarse one.
#[test]
fn kernel_and_cpu_threads_churn_together() {
    for t in common::transports() {
        let rt: Runtime = common::runtime(t);
        let mut arena = SvmArena::new(&rt, 16 << 20).unwrap();
        let (report, host_overlaps) = arena
            .churn_on_device(4096, 24, 4, 20, |v| {
                std::thread::scope(|s| {
                    let threads: Vec<_> = (0..4)
                        .map(|id| s.spawn(move || host_churn(v, id, 2000)))
                        .collect();
                    threads.into_iter().map(|h| h.join().unwrap()).sum::<u32>()
                })
            })
            .unwrap();
        assert_eq!(report.overlaps, 0, "{t}");
        assert_eq!(report.failed, 0, "{t}");
        assert_eq!(host_overlaps, 0, "{t}");
        let s = arena.stats().unwrap();
        assert_eq!(s.bytes_in_use, 0, "{t}: {s:?}");
        assert!(s.consistent(&arena.layout()), "{t}: {s:?}");
    }
}

/// A host thread's churn: malloc a few blocks, stamp, check, free; returns stamps found wrong.
fn host_churn(v: ArenaView<'_>, id: u32, rounds: u32) -> u32 {
    let mut wrong = 0;
    for r in 0..rounds {
        let stamp = 0x8000_0000 | (id << 24) | r;
        let hs: Vec<u32> = (0..4)
            .map(|k| v.malloc(24, (id + k) as usize).unwrap())
            .collect();
        for (k, &h) in hs.iter().enumerate() {
            for w in v.words(h, 6).unwrap() {
                w.store(stamp + k as u32, Ordering::Relaxed);
            }
        }
        for (k, &h) in hs.iter().enumerate() {
            if v.words(h, 6)
                .unwrap()
                .iter()
                .any(|w| w.load(Ordering::Relaxed) != stamp + k as u32)
            {
                wrong += 1;
            }
            v.free(h, id as usize).unwrap();
        }
    }
    wrong
}

#[test]
fn layouts_are_checked() {
    let rt = common::runtime(common::transports()[0]);
    for bad in [
        ArenaLayout {
            superblock_words: 1000,
            ..Default::default()
        },
        ArenaLayout {
            classes: 0,
            ..Default::default()
        },
        ArenaLayout {
            classes: 13,
            ..Default::default()
        },
        ArenaLayout {
            shards: 0,
            ..Default::default()
        },
    ] {
        assert!(matches!(
            SvmArena::with_layout(&rt, 1024, bad),
            Err(e) if e.is_argument_error()
        ));
    }
    let small = ArenaLayout {
        superblock_words: 64,
        classes: 3,
        shards: 2,
    };
    let mut arena = SvmArena::with_layout(&rt, 1024, small).unwrap();
    let hs = arena.malloc_on_device(&[4; 200]).unwrap();
    assert_eq!(hs.iter().filter(|&&h| h != 0).count(), 1024 / 8);
}
