//! A part of every sub-list counted and kept on the device while the rest is counted
//! elsewhere (here: on the host, as another rank would): the answers finished from both
//! sides' kept keys against `select_nth_unstable` on the whole sub-lists.

mod common;

use asym_structures::{KSelector, Key};
use rand::{Rng, SeedableRng};

/// The bucket of a histogram holding the `rank`-th (1-based), and the count below it.
fn locate(h: &[u32; 256], rank: usize) -> (u32, usize) {
    let mut below = 0usize;
    for (b, &c) in h.iter().enumerate() {
        if below + c as usize >= rank {
            return (b as u32, below);
        }
        below += c as usize;
    }
    panic!("a histogram of {below} keys has no {rank}-th");
}

/// The k-th of every sub-list whose first part (`dev_offs` into `dev_keys`, on the device)
/// and second part (`host[i]`) are counted apart and merged, as ranks do: once (the device
/// hands back every kept key) or, with `twice`, a second time for the second digit (the
/// device hands back only the keys of both digits).
fn select_in_two_parts<K: Key>(
    sel: &KSelector,
    dev_keys: &[K],
    dev_offs: &[usize],
    host: &[Vec<K>],
    k: usize,
    twice: bool,
) -> Vec<K> {
    let rt = sel.runtime().unwrap().clone();
    let mut buf = rt.alloc::<K>(dev_keys.len().max(1)).unwrap();
    buf.write_range(0, dev_keys).unwrap();
    let count = sel.count_part_svm(&buf, dev_offs).unwrap();
    let mut merged = count.histograms().to_vec();
    for (m, part) in merged.iter_mut().zip(host) {
        for &x in part {
            m[(x.to_image() >> 24) as usize] += 1;
        }
    }
    let kept = count.keep(&merged, k).unwrap();
    let top: Vec<(u32, usize)> = merged.iter().map(|m| locate(m, k)).collect();
    // The host part's keys of the top bucket, and (twice) the second digit.
    let mut host_kept: Vec<Vec<u32>> = host
        .iter()
        .zip(&top)
        .map(|(part, &(b, _))| {
            part.iter()
                .map(|&x| x.to_image())
                .filter(|i| i >> 24 == b)
                .collect()
        })
        .collect();
    let (dev_kept, fixed) = if twice {
        let mut second = kept.histograms().to_vec();
        for (h, part) in second.iter_mut().zip(&host_kept) {
            for &i in part {
                h[((i >> 16) & 0xff) as usize] += 1;
            }
        }
        let picked: Vec<(u32, usize)> = second
            .iter()
            .zip(&top)
            .map(|(h, &(_, below))| {
                let (d, more) = locate(h, k - below);
                (d, below + more)
            })
            .collect();
        let digits: Vec<u32> = picked.iter().map(|p| p.0).collect();
        let taken = kept.take(&digits).unwrap();
        for (part, (&(b, _), &(d, _))) in host_kept.iter_mut().zip(top.iter().zip(&picked)) {
            part.retain(|i| i >> 16 == (b << 8 | d));
        }
        let fixed = top
            .iter()
            .zip(&picked)
            .map(|(&(b, _), &(d, below))| (b << 8 | d, 16, below))
            .collect::<Vec<_>>();
        (taken, fixed)
    } else {
        let fixed = top.iter().map(|&(b, below)| (b, 24, below)).collect();
        (kept.all().unwrap(), fixed)
    };
    dev_kept
        .into_iter()
        .zip(host_kept)
        .zip(fixed)
        .map(|((mut keys, part), (prefix, shift, below))| {
            keys.extend(part);
            assert!(
                keys.iter().all(|i| i >> shift == prefix),
                "only keys of the bucket"
            );
            keys.sort_unstable();
            assert!(keys.len() >= k - below, "every key of the bucket kept");
            K::from_image(keys[k - 1 - below])
        })
        .collect()
}

#[test]
fn parts_counted_apart_select_as_whole_sub_lists() {
    let mut rng = rand::rngs::StdRng::from_entropy();
    for t in common::transports() {
        for tile in [256usize, 1 << 16] {
            let sel = common::selector(t, 8).with_radix_tile(tile).unwrap();
            // Sub-list lengths and the device's share of each (0: all on the host, 1: all
            // on the device), not powers of two.
            for (len, share) in [
                (1usize, 1.0),
                (7, 0.5),
                (1000, 0.3),
                (1000, 0.0),
                (5001, 0.9),
            ] {
                let subs = 6;
                let cases: Vec<(&str, Vec<i32>)> = vec![
                    ("random", (0..len * subs).map(|_| rng.gen()).collect()),
                    ("sorted", (0..(len * subs) as i32).collect()),
                    ("reverse", (0..(len * subs) as i32).rev().collect()),
                    ("all equal", vec![-3; len * subs]),
                    (
                        "duplicates",
                        (0..len * subs).map(|_| rng.gen_range(-2..3)).collect(),
                    ),
                ];
                for (name, data) in cases {
                    let cut = ((len as f64 * share).round() as usize).min(len);
                    // The device buffer starts with keys of no sub-list: offsets from 3.
                    let mut dev_keys = vec![i32::MIN; 3];
                    let mut dev_offs = vec![3usize];
                    let mut host = Vec::new();
                    for row in data.chunks(len) {
                        dev_keys.extend_from_slice(&row[..cut]);
                        dev_offs.push(dev_keys.len());
                        host.push(row[cut..].to_vec());
                    }
                    let offs: Vec<usize> = (0..=subs).map(|i| i * len).collect();
                    for k in [1, (len / 10).max(1), len] {
                        let want = common::reference(&data, &offs, k);
                        for twice in [false, true] {
                            let got =
                                select_in_two_parts(&sel, &dev_keys, &dev_offs, &host, k, twice);
                            assert_eq!(
                                got, want,
                                "{t} tile {tile} {name} len {len} share {share} k {k} {twice}"
                            );
                        }
                    }
                }
            }
            // Floats in total order (NaN last, -0.0 before 0.0).
            let floats: Vec<f32> = (0..3000)
                .map(|i| match i % 5 {
                    0 => -0.0,
                    1 => f32::NAN,
                    2 => 0.0,
                    _ => rng.gen_range(-1e3f32..1e3),
                })
                .collect();
            let host: Vec<Vec<f32>> = floats.chunks(1000).map(|r| r[400..].to_vec()).collect();
            let dev: Vec<f32> = floats
                .chunks(1000)
                .flat_map(|r| r[..400].to_vec())
                .collect();
            for k in [1, 500, 1000] {
                let want = common::reference(&floats, &[0, 1000, 2000, 3000], k);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                for twice in [false, true] {
                    let offs = [0, 400, 800, 1200];
                    let got = select_in_two_parts(&sel, &dev, &offs, &host, k, twice);
                    assert_eq!(bits(&got), bits(&want), "{t} floats k {k} {twice}");
                }
            }
        }
    }
}

#[test]
fn bad_offsets_and_merged_counts_are_refused() {
    let sel = common::selector(asym_runtime::Transport::Fine, 8);
    let rt = sel.runtime().unwrap().clone();
    let mut buf = rt.alloc::<i32>(100).unwrap();
    buf.write(&(0..100).collect::<Vec<i32>>()).unwrap();
    for offs in [vec![0usize], vec![0, 101], vec![0, 50, 40, 100]] {
        let got = sel.count_part_svm(&buf, &offs);
        assert!(
            matches!(&got, Err(e) if e.is_argument_error()),
            "{offs:?}: {got:?}"
        );
    }
    let count = sel.count_part_svm(&buf, &[0, 50, 100]).unwrap();
    assert_eq!(count.histograms().len(), 2);
    let own = count.histograms().to_vec();
    // A second count while this one is open is refused, not a deadlock.
    let got = sel.count_part_svm(&buf, &[0, 1]);
    assert!(matches!(&got, Err(e) if e.is_argument_error()), "{got:?}");
    // One histogram for two sub-lists, fewer keys than this part holds, k past the keys.
    let got = count.keep(&own[..1], 1);
    assert!(matches!(&got, Err(e) if e.is_argument_error()), "{got:?}");
    let count = sel.count_part_svm(&buf, &[0, 50, 100]).unwrap();
    let mut fewer = own.clone();
    fewer[1][128] -= 1;
    let got = count.keep(&fewer, 1);
    assert!(matches!(&got, Err(e) if e.is_argument_error()), "{got:?}");
    let count = sel.count_part_svm(&buf, &[0, 50, 100]).unwrap();
    let got = count.keep(&own, 51);
    assert!(matches!(&got, Err(e) if e.is_argument_error()), "{got:?}");
    // The site still serves a good call after the refusals.
    let count = sel.count_part_svm(&buf, &[0, 50, 100]).unwrap();
    let kept = count.keep(&own, 50).unwrap().all().unwrap();
    let kept: usize = kept.iter().map(Vec::len).sum();
    assert_eq!(kept, 100, "0..100 share one top digit");
    // Second digits: one per sub-list, each 0 to 255.
    for digits in [vec![0u32], vec![0, 256]] {
        let count = sel.count_part_svm(&buf, &[0, 50, 100]).unwrap();
        let got = count.keep(&own, 50).unwrap().take(&digits);
        assert!(matches!(&got, Err(e) if e.is_argument_error()), "{got:?}");
    }
}
