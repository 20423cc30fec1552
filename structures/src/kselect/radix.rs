//! MSD radix select on the CPU: the k-th smallest key of a sub-list by digits of its ordered
//! image, most significant first.
//!
//! Every key maps to a `u32` whose unsigned order is the key's order (the ordered `i32` image
//! of [`Key::to_ordered`] with its sign bit flipped). A pass counts the keys per value of one
//! 8-bit digit (among the keys that agree with the k-th on every digit above it), finds the
//! digit value whose bucket holds the k-th, and the next pass looks only at that bucket. The
//! first pass reads the sub-list as it is; it is then compacted once into the worker's scratch
//! buffer (the k-th's bucket only, about 1/256 of the keys on random data), and the later
//! passes run on that. A pass stops early when the bucket is the k-th alone (every key in it
//! is equal to the answer on the remaining digits: one count fills the bucket), and a bucket
//! of at most [`SMALL`] keys is finished by selection in place.
//!
//! The counting loops keep four histograms, one per lane of four keys, so consecutive keys
//! that fall in one bucket do not wait on each other's increments; the compiler unrolls them
//! without branches. Nothing is allocated per sub-list: [`RadixScratch`] is one per worker.

use super::Key;

/// Bits per digit: 256 buckets, four histograms of 1 KiB each stay in L1.
const DIGIT_BITS: u32 = 8;
const BUCKETS: usize = 1 << DIGIT_BITS;
/// Candidates at most this many are finished by `select_nth_unstable` on the scratch buffer.
const SMALL: usize = 64;

/// A worker's reusable buffers (no allocation per sub-list once grown).
#[derive(Default)]
pub(crate) struct RadixScratch {
    candidates: Vec<u32>,
    hist: Vec<[u32; BUCKETS]>,
}

/// The four histograms, zeroed.
fn zeroed(hist: &mut Vec<[u32; BUCKETS]>) -> &mut [[u32; BUCKETS]] {
    if hist.len() != 4 {
        *hist = vec![[0; BUCKETS]; 4];
    }
    for h in hist.iter_mut() {
        h.fill(0);
    }
    hist
}

/// Counts `digit(image)` over `keys` into four histograms, then sums them into `hist[0]`.
#[inline(always)]
fn count<T: Copy>(keys: &[T], hist: &mut [[u32; BUCKETS]], digit: impl Fn(T) -> usize) {
    let (h, rest) = hist.split_at_mut(1);
    let (h1, rest) = rest.split_at_mut(1);
    let (h2, h3) = rest.split_at_mut(1);
    let (h0, h1, h2, h3) = (&mut h[0], &mut h1[0], &mut h2[0], &mut h3[0]);
    let mut chunks = keys.chunks_exact(4);
    for c in &mut chunks {
        h0[digit(c[0])] += 1;
        h1[digit(c[1])] += 1;
        h2[digit(c[2])] += 1;
        h3[digit(c[3])] += 1;
    }
    for &x in chunks.remainder() {
        h0[digit(x)] += 1;
    }
    for b in 0..BUCKETS {
        h0[b] += h1[b] + h2[b] + h3[b];
    }
}

/// The bucket holding the `k`-th (0-based) of the counted keys, and how many keys lie in
/// the buckets below it.
#[inline]
fn find(hist: &[u32; BUCKETS], k: usize) -> (usize, usize) {
    let mut below = 0usize;
    for (b, &c) in hist.iter().enumerate() {
        if below + c as usize > k {
            return (b, below);
        }
        below += c as usize;
    }
    unreachable!("k is below the number of keys counted")
}

/// The `k`-th smallest (1-based, as [`super::KSelector::select`] takes it) key of `list`, as
/// its ordered `i32` image. `list` is not empty and `1 <= k <= list.len()`.
pub(crate) fn select_one<K: Key>(list: &[K], k: usize, scratch: &mut RadixScratch) -> i32 {
    debug_assert!(k >= 1 && k <= list.len());
    let mut k = k - 1;
    if list.len() <= SMALL {
        scratch.candidates.clear();
        scratch
            .candidates
            .extend(list.iter().map(|&x| x.to_image()));
        return finish(&mut scratch.candidates, k);
    }
    if list.len() >= ONE_READ_FROM {
        if let Some(answer) = select_one_read(list, k, scratch) {
            return answer;
        }
    }
    // First digit over the sub-list as it is.
    let top = 32 - DIGIT_BITS;
    let hist = zeroed(&mut scratch.hist);
    count(list, hist, |x: K| (x.to_image() >> top) as usize);
    let (bucket, below) = find(&hist[0], k);
    let size = hist[0][bucket] as usize;
    k -= below;
    let prefix = (bucket as u32) << top;
    let shift = top;
    if size == 1 {
        // The k-th is the only key with this digit: find it.
        return list
            .iter()
            .map(|&x| x.to_image())
            .find(|v| v >> top == bucket as u32)
            .map_or(0, to_i32);
    }
    // Compact the bucket once; every later pass reads only the candidates.
    let candidates = &mut scratch.candidates;
    candidates.clear();
    candidates.reserve(size);
    gather(list, bucket as u32, top, candidates);
    finish_digits(scratch, k, prefix, shift)
}

/// Sub-lists at least this long are selected in one read where a sample allows. Shorter ones
/// are re-read from cache, and there the sample and the wider pass cost more than the second
/// read saves (docs/decisions.md).
const ONE_READ_FROM: usize = 1 << 21;
/// Keys of a piece of the one-read pass: 16 KiB of `u32`, in L1 when they are read again.
const ONE_READ_PIECE: usize = 4096;
/// Sample blocks, each 1/1024 of the sub-list, spread evenly over it: 1/32 of the keys.
const SAMPLE_BLOCKS: usize = 32;

/// One read of the keys instead of two, where a sample narrows the k-th's top digit: the
/// top digits of an evenly spread sample (32 blocks, 1/32 of the keys) give the k-th's
/// rank within a window of buckets (four standard deviations of the sample's rank estimate
/// either side), and one pass counts every key's top digit while keeping the keys in that
/// window. If the counted histogram puts the k-th in the window, its bucket's keys are among
/// the kept ones; if not (a sample fooled by the keys' order), the bucket is gathered by a
/// second pass. `None` when the window would keep more than 1/16 of the keys (few distinct
/// top digits): the caller's two passes are cheaper then. `k` is 0-based.
fn select_one_read<K: Key>(list: &[K], k: usize, scratch: &mut RadixScratch) -> Option<i32> {
    let top = 32 - DIGIT_BITS;
    let len = list.len();
    let block = len / 1024;
    let mut sample = [0u32; BUCKETS];
    for b in 0..SAMPLE_BLOCKS {
        let start = b * (len - block) / (SAMPLE_BLOCKS - 1);
        for &x in &list[start..start + block] {
            sample[(x.to_image() >> top) as usize] += 1;
        }
    }
    let m = (SAMPLE_BLOCKS * block) as f64;
    let p = (k as f64 + 0.5) / len as f64;
    let spread = 4.0 * (p * (1.0 - p) / m).sqrt() + 2.0 / m;
    let lo_rank = ((p - spread).max(0.0) * m) as usize;
    let hi_rank = (((p + spread).min(1.0) * m) as usize).min(m as usize - 1);
    let (lo, _) = find(&sample, lo_rank);
    let (hi, _) = find(&sample, hi_rank);
    let window: u32 = sample[lo..=hi].iter().sum();
    if window as f64 > m / 16.0 {
        return None;
    }
    // One pass: count every key's top digit, keep the keys whose top digit is in lo..=hi.
    let (lo, width) = (lo as u32, (hi - lo) as u32);
    let candidates = &mut scratch.candidates;
    candidates.clear();
    let hist = zeroed(&mut scratch.hist);
    let (h0, rest) = hist.split_at_mut(1);
    let (h1, rest) = rest.split_at_mut(1);
    let (h2, h3) = rest.split_at_mut(1);
    let (h0, h1, h2, h3) = (&mut h0[0], &mut h1[0], &mut h2[0], &mut h3[0]);
    // Pieces small enough to stay in L1: each is counted, then its window's keys gathered
    // from cache, so memory is read once. (Counting and marking in one loop over the same
    // 16 keys made the compiler extract vector lanes one by one: 5x slower than two passes.)
    for piece in list.chunks(ONE_READ_PIECE) {
        let mut quads = piece.chunks_exact(4);
        for q in &mut quads {
            h0[(q[0].to_image() >> top) as usize] += 1;
            h1[(q[1].to_image() >> top) as usize] += 1;
            h2[(q[2].to_image() >> top) as usize] += 1;
            h3[(q[3].to_image() >> top) as usize] += 1;
        }
        for &x in quads.remainder() {
            h0[(x.to_image() >> top) as usize] += 1;
        }
        gather_where(piece, candidates, |v| (v >> top).wrapping_sub(lo) <= width);
    }
    for b in 0..BUCKETS {
        h0[b] += h1[b] + h2[b] + h3[b];
    }
    let (bucket, below) = find(h0, k);
    let size = h0[bucket] as usize;
    if (bucket as u32).wrapping_sub(lo) <= width {
        candidates.retain(|&v| v >> top == bucket as u32);
    } else {
        candidates.clear();
        candidates.reserve(size);
        gather(list, bucket as u32, top, candidates);
    }
    Some(finish_digits(
        scratch,
        k - below,
        (bucket as u32) << top,
        top,
    ))
}

/// Finishes a selection whose digits above `shift` are fixed (`prefix`): the candidates in
/// `scratch.candidates` all carry them, and the answer is their `k`-th (0-based).
pub(crate) fn finish_digits(
    scratch: &mut RadixScratch,
    mut k: usize,
    mut prefix: u32,
    mut shift: u32,
) -> i32 {
    let candidates = &mut scratch.candidates;
    while shift > 0 {
        if candidates.len() <= SMALL {
            return finish(candidates, k);
        }
        shift -= DIGIT_BITS;
        let mask = (BUCKETS - 1) as u32;
        let hist = zeroed(&mut scratch.hist);
        count(candidates, hist, |v: u32| ((v >> shift) & mask) as usize);
        let (bucket, below) = find(&hist[0], k);
        k -= below;
        prefix |= (bucket as u32) << shift;
        if hist[0][bucket] as usize == candidates.len() {
            // Every candidate has this digit: nothing to drop.
            continue;
        }
        candidates.retain(|&v| (v >> shift) & mask == bucket as u32);
    }
    // Every digit is fixed: the k-th equals the prefix.
    to_i32(prefix)
}

/// The top digit's histogram of `chunk` (one thread's share of a sub-list split across
/// threads).
pub(crate) fn top_histogram<K: Key>(chunk: &[K], scratch: &mut RadixScratch) -> [u32; BUCKETS] {
    let top = 32 - DIGIT_BITS;
    let hist = zeroed(&mut scratch.hist);
    count(chunk, hist, |x: K| (x.to_image() >> top) as usize);
    hist[0]
}

/// The images of `chunk`'s keys whose top digit is `bucket`.
pub(crate) fn gather_bucket<K: Key>(chunk: &[K], bucket: usize) -> Vec<u32> {
    let mut out = Vec::new();
    gather(chunk, bucket as u32, 32 - DIGIT_BITS, &mut out);
    out
}

/// Appends to `out` the images of `keys` whose digits from `shift` up equal `digit`.
///
/// Blocks of 16 keys: one branch-free pass (the compiler vectorises it) marks the matching
/// keys in a bit mask, and only blocks with a mark are looked at again. About 1/256 of random
/// keys match, so this replaces a branch per key by one per block.
#[inline(always)]
fn gather<K: Key>(keys: &[K], digit: u32, shift: u32, out: &mut Vec<u32>) {
    gather_where(keys, out, |v| v >> shift == digit)
}

/// Appends to `out` the images of `keys` that `keep` accepts, in blocks of 16 as
/// [`gather`] describes (`keep` must be cheap and branch-free).
#[inline(always)]
fn gather_where<K: Key>(keys: &[K], out: &mut Vec<u32>, keep: impl Fn(u32) -> bool) {
    let mut blocks = keys.chunks_exact(16);
    for block in &mut blocks {
        let mut vals = [0u32; 16];
        let mut mask = 0u32;
        for (j, &x) in block.iter().enumerate() {
            vals[j] = x.to_image();
            mask |= u32::from(keep(vals[j])) << j;
        }
        while mask != 0 {
            out.push(vals[mask.trailing_zeros() as usize]);
            mask &= mask - 1;
        }
    }
    out.extend(
        blocks
            .remainder()
            .iter()
            .map(|&x| x.to_image())
            .filter(|&v| keep(v)),
    );
}

/// Where a merged top-digit histogram puts the `k`-th (1-based): its bucket, the rank
/// (0-based) within the bucket, the digits fixed so far and the shift of the next digit.
pub(crate) fn locate_top(hist: &[u32; BUCKETS], k: usize) -> (usize, usize, u32, u32) {
    let top = 32 - DIGIT_BITS;
    let (bucket, below) = find(hist, k - 1);
    (bucket, k - 1 - below, (bucket as u32) << top, top)
}

/// Buckets per digit (the histogram's length).
pub(crate) const DIGIT_BUCKETS: usize = BUCKETS;

impl RadixScratch {
    /// The candidates the next digits work on (replaced by the caller's).
    pub(crate) fn set_candidates(&mut self, candidates: Vec<u32>) {
        self.candidates = candidates;
    }
}

/// The `k`-th (0-based) of a few candidates.
fn finish(candidates: &mut [u32], k: usize) -> i32 {
    let (_, kth, _) = candidates.select_nth_unstable(k);
    to_i32(*kth)
}

#[inline(always)]
fn to_i32(image: u32) -> i32 {
    (image ^ 0x8000_0000) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference<K: Key>(list: &[K], k: usize) -> i32 {
        let mut v: Vec<i32> = list.iter().map(|x| x.to_ordered()).collect();
        *v.select_nth_unstable(k - 1).1
    }

    /// The one-read path against `select_nth_unstable`: the k-th inside the sampled window,
    /// outside it (keys whose order fools the sample: a second pass), and declined (few
    /// distinct top digits).
    #[test]
    fn one_read_selection_is_right_in_and_out_of_its_window() {
        let mut scratch = RadixScratch::default();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let len = 1 << 18;
        let random: Vec<i32> = (0..len).map(|_| next() as i32).collect();
        let sorted: Vec<i32> = (0..len as i32).map(|i| i.wrapping_mul(1 << 13)).collect();
        // The sampled blocks (each 1/1024 of the list, at 32 evenly spread places) hold
        // negative keys, everything between them positive ones: the sample puts the k-th far
        // too low, and the pass must gather its bucket again.
        let block = len / 1024;
        let fooling: Vec<i32> = (0..len)
            .map(|i| {
                let in_sample = (0..SAMPLE_BLOCKS).any(|b| {
                    let start = b * (len - block) / (SAMPLE_BLOCKS - 1);
                    (start..start + block).contains(&i)
                });
                let r = (next() >> 33) as i32;
                if in_sample {
                    -1 - r
                } else {
                    r
                }
            })
            .collect();
        let few: Vec<i32> = (0..len).map(|i| (i % 3) as i32).collect();
        let mut answered = 0;
        for (name, list) in [
            ("random", &random),
            ("sorted", &sorted),
            ("fooling", &fooling),
        ] {
            for k in [1, 2, len / 10, len / 2, len - 1, len] {
                let got = select_one_read(list, k - 1, &mut scratch);
                if let Some(v) = got {
                    assert_eq!(v, reference(list, k), "{name} k {k}");
                    answered += 1;
                }
            }
        }
        assert!(
            answered >= 15,
            "the one-read path answered {answered} of 18"
        );
        assert_eq!(select_one_read(&few, len / 2, &mut scratch), None);
    }

    #[test]
    fn matches_select_nth_on_adversarial_lists() {
        let mut scratch = RadixScratch::default();
        let mut rng = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut lists: Vec<Vec<i32>> = vec![
            vec![7; 1000],                                          // all equal
            (0..1000).map(|i| i % 2).collect(),                     // two values
            (0..5000).map(|i| i << 8).collect(),                    // one bucket at the low digit
            (0..5000).map(|i| (i & 0xff) | (0x5a << 24)).collect(), // same top digits
            (0..3000).rev().collect(),                              // descending
            vec![i32::MIN, i32::MAX, 0, -1, 1],
            (0..65).collect(),
        ];
        for len in [1, 2, 63, 64, 65, 255, 256, 257, 1000, 4099] {
            lists.push((0..len).map(|_| next() as i32).collect());
            lists.push((0..len).map(|_| (next() % 17) as i32 - 8).collect());
        }
        for list in &lists {
            for k in [1, 2, list.len() / 10 + 1, list.len() / 2 + 1, list.len()] {
                let k = k.clamp(1, list.len());
                assert_eq!(
                    select_one(list, k, &mut scratch),
                    reference(list, k),
                    "len {} k {k}",
                    list.len()
                );
            }
        }
        let floats: Vec<f32> = vec![
            -0.0,
            0.0,
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1.5,
            -2.5,
        ]
        .into_iter()
        .cycle()
        .take(200)
        .collect();
        for k in 1..=floats.len() {
            assert_eq!(select_one(&floats, k, &mut scratch), reference(&floats, k));
        }
        let words: Vec<u32> = (0..3000).map(|_| next() as u32).collect();
        for k in [1, 300, 3000] {
            assert_eq!(select_one(&words, k, &mut scratch), reference(&words, k));
        }
    }
}
