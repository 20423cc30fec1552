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
    let mut blocks = keys.chunks_exact(16);
    for block in &mut blocks {
        let mut vals = [0u32; 16];
        let mut mask = 0u32;
        for (j, &x) in block.iter().enumerate() {
            vals[j] = x.to_image();
            mask |= u32::from(vals[j] >> shift == digit) << j;
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
            .filter(|v| v >> shift == digit),
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
