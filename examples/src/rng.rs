//! The generators behind every generated input, each fixed for a seed across releases and
//! platforms, so an instance named by its seed stays the same instance: `rand`'s PCG
//! (Pcg64Mcg from `rand_pcg`) for graphs, knapsack instances and list workloads, and a
//! counter-based stream ([`key_stream`]) for batch k-selection's keys, whose any range is
//! made alone (each rank of a distributed run makes its own part).

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// The generator for `seed`.
pub fn seeded(seed: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed)
}

/// Fills `out` with keys `start..start + out.len()` of the random key stream of `seed`: key
/// `i` is a hash of `(seed, i)` (SplitMix64's finalizer), so any range of the stream is made
/// without the keys before it, and every rank of a distributed run makes exactly its part of
/// the keys one host would make.
pub fn key_stream(seed: u64, start: u64, out: &mut [i32]) {
    let base = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for (i, x) in out.iter_mut().enumerate() {
        let mut z = base ^ (start + i as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        *x = (z ^ (z >> 31)) as i32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_of_the_stream_is_the_stream_s_range() {
        let mut whole = vec![0; 1000];
        key_stream(7, 0, &mut whole);
        let mut part = vec![0; 300];
        key_stream(7, 450, &mut part);
        assert_eq!(part, whole[450..750]);
        let mut other = vec![0; 1000];
        key_stream(8, 0, &mut other);
        assert_ne!(other, whole);
        // Spread over the whole range: the top bit set about half the time.
        let negative = whole.iter().filter(|&&x| x < 0).count();
        assert!((400..600).contains(&negative), "{negative}");
    }
}
