//! The ad-heap: bridge rules on the host, the device's bridges against the host reference, and
//! k-selection cooperating by kind (live and pipelined) against `select_nth_unstable`, with
//! every bridge and heap checked, on both transports.

mod common;

use std::collections::BinaryHeap;

use asym_runtime::{Error, Kernel, Mode, Transport};
use asym_structures::DHeap;
use asym_structures::SUPPORTED_D;
use asym_structures::{AdHeapLayout, BRIDGE_COUNTER as COUNTER};
use asym_structures::{Cooperation, Sublists};
use rand::{Rng, SeedableRng};

fn slot_for(layout: &AdHeapLayout, keys: &[i32]) -> Vec<i32> {
    let mut slot = vec![0; layout.stride()];
    layout
        .build(
            slot.as_mut_slice(),
            &DHeap::from_slice(layout.d(), keys).unwrap(),
        )
        .unwrap();
    slot
}

#[test]
fn update_key_through_the_bridge_matches_the_d_heap_and_binary_heap() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for d in SUPPORTED_D {
        for len in [1usize, 2, d, d + 1, 3 * d + 2, 500] {
            let keys: Vec<i32> = (0..len).map(|_| rng.gen_range(-100..100)).collect();
            let layout = AdHeapLayout::new(d, len).unwrap();
            let mut slot = slot_for(&layout, &keys);
            let mut dheap = DHeap::from_slice(d, &keys).unwrap();
            let mut reference: BinaryHeap<i32> = keys.iter().copied().collect();
            assert!(layout.is_valid(slot.as_slice(), len));
            for _ in 0..200 {
                let x = rng.gen_range(-120..120);
                layout.write_root(slot.as_mut_slice(), x);
                layout.compute_bridge(slot.as_mut_slice(), len);
                layout.check_bridge(slot.as_slice(), len).unwrap();
                let root = layout.apply_bridge(slot.as_mut_slice(), len).unwrap();
                assert_eq!(slot[COUNTER], 0, "the bridge is cleared");
                assert!(layout.is_valid(slot.as_slice(), len), "d {d} len {len}");
                dheap.replace_top(x);
                *reference.peek_mut().unwrap() = x;
                assert_eq!(root, *reference.peek().unwrap());
                assert_eq!(Some(root), dheap.peek());
            }
            let mut got = layout.keys(slot.as_slice(), len);
            got.sort_unstable();
            assert_eq!(got, reference.into_sorted_vec(), "d {d} len {len}");
        }
    }
}

#[test]
fn broken_bridges_are_rejected_before_they_touch_the_heap() {
    let d = 4;
    let keys: Vec<i32> = (0..40).collect();
    let layout = AdHeapLayout::new(d, keys.len()).unwrap();
    let mut good = slot_for(&layout, &keys);
    layout.write_root(good.as_mut_slice(), -1);
    layout.compute_bridge(good.as_mut_slice(), keys.len());
    let pairs = good[COUNTER] as usize;
    assert!(pairs >= 3, "a small key sinks several levels");
    layout.check_bridge(good.as_slice(), keys.len()).unwrap();
    type Corrupt = Box<dyn Fn(&mut Vec<i32>)>;
    let corruptions: Vec<(&str, Corrupt)> = vec![
        ("no pairs", Box::new(|s| s[COUNTER] = 0)),
        ("too many pairs", Box::new(|s| s[COUNTER] = 99)),
        ("not from the root", Box::new(|s| s[1] = 1)),
        ("skips a level", Box::new(|s| s[3] = 30)),
        ("node outside the heap", Box::new(|s| s[5] = 1000)),
        ("not the max child", Box::new(|s| s[4] -= 1)),
        ("wrong final key", Box::new(move |s| s[2 * pairs] = 7)),
    ];
    for (what, corrupt) in corruptions {
        let mut s = good.clone();
        corrupt(&mut s);
        assert!(
            layout.check_bridge(s.as_slice(), keys.len()).is_err(),
            "{what} passed the check"
        );
    }
    // A heap of another arity or size does not fit the slot.
    let mut s = good.clone();
    let other = DHeap::from_slice(8, &keys).unwrap();
    assert!(layout.build(s.as_mut_slice(), &other).is_err());
    let mut s = good.clone();
    s[5] = -3;
    let before = s.clone();
    assert!(layout.apply_bridge(s.as_mut_slice(), keys.len()).is_err());
    assert_eq!(
        &s[layout.pad()..],
        &before[layout.pad()..],
        "no stray write"
    );
}

/// The device's bridge walk against the host's, for every d, on every heap of a batch: a first
/// round with half the heaps sent fresh (copied in from staging) and half already on the device,
/// then a second round in which the device replays its first bridges before walking again.
#[test]
fn device_bridges_equal_the_host_reference() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        let sel = common::selector(t, 2);
        let rt = sel.runtime().unwrap();
        for d in SUPPORTED_D {
            for len in [1usize, d + 3, 700] {
                let layout = AdHeapLayout::new(d, len).unwrap();
                let wg = d.max(layout.max_pairs().next_power_of_two()).max(8);
                let heaps = 37;
                let stride = layout.stride();
                let bw = 1 + 2 * layout.max_pairs();
                let mut host = vec![0i32; heaps * stride];
                for s in host.chunks_mut(stride) {
                    let keys: Vec<i32> = (0..len).map(|_| rng.gen_range(-50..50)).collect();
                    layout
                        .build(s, &DHeap::from_slice(d, &keys).unwrap())
                        .unwrap();
                }
                // Every other slot is in the work list, in reverse order; every other entry is
                // fresh, and its heap is zeroed on the device so only the staging copy is right.
                let work: Vec<u32> = (0..heaps as u32).rev().step_by(2).collect();
                let fresh: Vec<bool> = (0..work.len()).map(|g| g % 2 == 0).collect();
                let mut device = host.clone();
                let mut staged = Vec::new();
                for (&s, &f) in work.iter().zip(&fresh) {
                    let r = s as usize * stride + layout.pad();
                    if f {
                        staged.extend_from_slice(&host[r..r + len]);
                        device[r..r + len].fill(0);
                    }
                }
                let untouched = device.clone();
                let program = rt
                    .program_with(
                        &asym_kernels::ADHEAP,
                        &format!("{} -DWG={wg}", layout.cl_defines()),
                    )
                    .unwrap();
                let mut slots = rt.alloc::<i32>(host.len()).unwrap();
                slots.write(&device).unwrap();
                let mut staging = rt.alloc::<i32>(staged.len().max(1)).unwrap();
                staging.write(&staged).unwrap();
                let mut list = rt.alloc::<u32>(3 * work.len()).unwrap();
                let mut out = rt.alloc::<i32>(work.len() * bw).unwrap();
                let mut k = Kernel::from_program(rt, &program, "adheap_bridges").unwrap();
                k.arg_svm("slots", &slots)
                    .unwrap()
                    .arg_svm("work", &list)
                    .unwrap()
                    .arg_scalar("count", work.len() as u32)
                    .unwrap()
                    .arg_scalar("stride", stride as u32)
                    .unwrap()
                    .arg_scalar("len", len as u32)
                    .unwrap()
                    .arg_svm("fresh", &staging)
                    .unwrap()
                    .arg_svm("out", &out)
                    .unwrap();
                for round in 0..2 {
                    // New roots on the host copy; the work list carries them.
                    let mut entries = Vec::new();
                    let mut next_fresh = 0u32;
                    for (g, &s) in work.iter().enumerate() {
                        let slot = &mut host[s as usize * stride..(s as usize + 1) * stride];
                        let x = rng.gen_range(-60..60);
                        layout.write_root(slot, x);
                        let f = if round == 0 && fresh[g] {
                            next_fresh += 1;
                            next_fresh - 1
                        } else {
                            u32::MAX
                        };
                        entries.extend([s, x as u32, f]);
                    }
                    list.write(&entries).unwrap();
                    k.launch(work.len() * wg, Some(wg)).unwrap().wait().unwrap();
                    let bridges = out.read().unwrap();
                    let dev = slots.read().unwrap();
                    for (i, h) in host.chunks_mut(stride).enumerate() {
                        let Some(g) = work.iter().position(|&s| s as usize == i) else {
                            let u = &untouched[i * stride..(i + 1) * stride];
                            assert_eq!(dev[i * stride], 0, "{t} d {d}: slot {i} not in the list");
                            assert_eq!(
                                &dev[i * stride..(i + 1) * stride],
                                u,
                                "{t} d {d}: slot {i} untouched"
                            );
                            continue;
                        };
                        let b = &bridges[g * bw..(g + 1) * bw];
                        let words = (1 + 2 * b[0].max(0) as usize).min(bw);
                        assert_eq!(
                            b[..words],
                            dev[i * stride..i * stride + words],
                            "out = head"
                        );
                        // The device's bridge on the host copy, checked, against the host walk.
                        let mut a = h.to_vec();
                        a[..bw].copy_from_slice(b);
                        layout.check_bridge(a.as_slice(), len).unwrap_or_else(|e| {
                            panic!("{t} d {d} len {len} slot {i} round {round}: {e:?}")
                        });
                        layout.compute_bridge(&mut *h, len);
                        let pairs = h[COUNTER] as usize;
                        // Equal max children may be chosen differently; both are valid, so
                        // compare what applying them does.
                        layout.apply_bridge(a.as_mut_slice(), len).unwrap();
                        layout.apply_bridge(&mut *h, len).unwrap();
                        assert!(layout.is_valid(a.as_slice(), len));
                        let (mut ka, mut kh) =
                            (layout.keys(a.as_slice(), len), layout.keys(&*h, len));
                        ka.sort_unstable();
                        kh.sort_unstable();
                        assert_eq!(ka, kh, "{t} d {d} len {len} slot {i} ({pairs} pairs)");
                        // Keep the host copy equal to the device's, which replays its own bridge.
                        h.copy_from_slice(&a);
                    }
                }
            }
        }
    }
}

fn cooperations(t: Transport) -> Vec<Cooperation> {
    match t {
        Transport::Fine => vec![Cooperation::BridgeLive, Cooperation::BridgePipelined],
        Transport::Coarse => vec![Cooperation::BridgePipelined],
    }
}

#[test]
fn selection_by_kind_matches_select_nth_with_every_bridge_checked() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        for c in cooperations(t) {
            for d in [2, 8, 32] {
                let sel = common::selector(t, d)
                    .with_cooperation(c)
                    .with_bridge_checks(true);
                for len in [1usize, 9, 300] {
                    let n = len * 23;
                    let cases: Vec<(&str, Vec<i32>)> = vec![
                        ("random", (0..n).map(|_| rng.gen()).collect()),
                        ("sorted", (0..n as i32).collect()),
                        ("reverse", (0..n as i32).rev().collect()),
                        ("all equal", vec![5; n]),
                        ("duplicates", (0..n).map(|_| rng.gen_range(0..4)).collect()),
                    ];
                    for (name, data) in cases {
                        let offs: Vec<usize> = (0..=23).map(|i| i * len).collect();
                        for k in [1, (len / 10).max(1), len] {
                            let (got, stats) = sel
                                .select_with_stats(
                                    &data,
                                    &Sublists::Equal(len),
                                    k,
                                    Mode::Cooperative,
                                )
                                .unwrap_or_else(|e| {
                                    panic!("{t} {c} d {d} {name} len {len} k {k}: {e}")
                                });
                            assert_eq!(
                                got,
                                common::reference(&data, &offs, k),
                                "{t} {c} d {d} {name} len {len} k {k}"
                            );
                            assert_eq!(stats.bridge_sublists, 23, "{stats:?}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn many_heaps_other_keys_and_uneven_sub_lists() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        for c in cooperations(t) {
            let sel = common::selector(t, 8).with_cooperation(c);
            // More sub-lists than the live schedule's slots and a pipelined half.
            let mut offs = vec![0usize];
            for _ in 0..3000 {
                offs.push(offs.last().unwrap() + rng.gen_range(10..60));
            }
            let total = *offs.last().unwrap();
            let f: Vec<f32> = (0..total).map(|_| rng.gen_range(-1e3..1e3)).collect();
            let cut = Sublists::Offsets(offs.clone());
            let (got, stats) = sel
                .select_with_stats(&f, &cut, 7, Mode::Cooperative)
                .unwrap();
            let want = common::reference(&f, &offs, 7);
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{t} {c}"
            );
            assert!(stats.bridge_updates > 0, "{stats:?}");
        }
    }
}

#[test]
fn the_live_bridge_needs_fine_svm() {
    let Some(coarse) = common::transports()
        .into_iter()
        .find(|t| *t == Transport::Coarse)
        .or_else(|| {
            let dev = asym_runtime::select_device(None).ok()?;
            Transport::Coarse
                .check(&dev)
                .ok()
                .map(|_| Transport::Coarse)
        })
    else {
        return;
    };
    let sel = common::selector(coarse, 8).with_cooperation(Cooperation::BridgeLive);
    let data: Vec<i32> = (0..1000).collect();
    let err = sel
        .select(&data, &Sublists::Equal(100), 10, Mode::Cooperative)
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("pipelined"), "{err}");
}
