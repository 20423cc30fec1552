/* The generalized heap's batch operations on the throughput device (concurrent-heap seed,
 * section 4): a work-group sorts one batch of K keys by bitonic sort in local memory, and
 * carries out MergeAndSort of two sorted batches by merge path. These are the building blocks
 * of the device heap's INS and DEL; this file holds them as kernels of their own, one batch
 * (or pair of batches) per work-group, so they can be tested and measured alone.
 *
 * Build options: -DK=<keys per batch: power of two, 2..2048>, -DWG=<work-group size: power
 * of two, at most K>. Keys are int32 in the "ordered" form (signed comparison is the keys'
 * order; the host maps u32 and f32 as the k-selection does).
 *
 * Bitonic sort: log2(K)·(log2(K)+1)/2 compare-exchange stages over the K/2 pairs of the stage,
 * each work-item taking pairs lid, lid + WG, ...; a barrier after each stage. Merge path: the
 * 2K outputs are cut into WG equal segments; work-item i finds by binary search on the
 * diagonal how many of its segment's predecessors come from a (ties: a first, so the merge is
 * stable), then merges its segment alone.
 *
 * Memory ordering: a batch belongs to one work-group; every read of what another work-item
 * wrote follows a barrier(CLK_LOCAL_MEM_FENCE); global memory is read once at the start and
 * written once at the end by the same work-item mapping. Every local store is unconditional
 * (each pair stage writes both slots, each merge output slot is written once): PoCL 3.1 lost
 * conditional local stores across barriers (kernels/heap.cl). OpenCL C 1.2 only.
 */
#ifndef K
#error "build gheap.cl with -DK=<keys per batch>"
#endif
#ifndef WG
#error "build gheap.cl with -DWG=<work-group size>"
#endif
#if (K & (K - 1)) != 0 || K < 2
#error "K must be a power of two, at least 2"
#endif
#if WG > K
#error "the work-group must not be larger than K"
#endif

/* Sorts s[0..K) ascending; all WG work-items must call it (barriers inside). */
inline void gheap_bitonic_sort(__local int *s, uint lid) {
    for (uint k = 2; k <= K; k <<= 1) {
        for (uint j = k >> 1; j > 0; j >>= 1) {
            for (uint p = lid; p < K / 2; p += WG) {
                /* Pair p of this stage: i has bit j clear, partner i + j. */
                const uint i = ((p / j) * 2 * j) + (p % j);
                const int a = s[i], b = s[i + j];
                const bool ascending = (i & k) == 0;
                const int lo = min(a, b), hi = max(a, b);
                s[i] = ascending ? lo : hi;
                s[i + j] = ascending ? hi : lo;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
}

/* Merge path: out[0..2K) = the stable merge of sorted a[0..K) and b[0..K) (ties: a first).
 * All WG work-items must call it; out must be ready for reading after the caller's barrier. */
inline void gheap_merge_path(__local const int *a, __local const int *b, __local int *out,
                             uint lid) {
    const uint per = (2 * K) / WG;
    const uint d = lid * per;
    /* x = how many of the first d outputs come from a. */
    uint lo = d > K ? d - K : 0, hi = min(d, (uint)K);
    while (lo < hi) {
        const uint mid = (lo + hi) / 2;
        if (a[mid] <= b[d - mid - 1]) lo = mid + 1;
        else hi = mid;
    }
    uint i = lo, j = d - lo;
    for (uint t = 0; t < per; ++t) {
        const int av = a[min(i, (uint)K - 1)];
        const int bv = b[min(j, (uint)K - 1)];
        const bool take_a = j >= K || (i < K && av <= bv);
        out[d + t] = take_a ? av : bv;
        i += take_a ? 1u : 0u;
        j += take_a ? 0u : 1u;
    }
}

/* Sorts each of `batches` consecutive batches of K keys in place: one work-group per batch. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_sort_batches(__global int *keys, uint batches) {
    __local int s[K];
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    if (g >= batches) return; /* whole group */
    __global int *batch = keys + (ulong)g * K;
    for (uint i = lid; i < K; i += WG) s[i] = batch[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    gheap_bitonic_sort(s, lid);
    for (uint i = lid; i < K; i += WG) batch[i] = s[i];
}

/* MergeAndSort of pairs: for each pair g, a[g] (K sorted keys) keeps the K smallest of
 * a[g] and b[g], b[g] the K largest, both sorted. One work-group per pair. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_merge_batches(__global int *a, __global int *b, uint pairs) {
    __local int la[K];
    __local int lb[K];
    __local int out[2 * K];
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    if (g >= pairs) return; /* whole group */
    __global int *ga = a + (ulong)g * K;
    __global int *gb = b + (ulong)g * K;
    for (uint i = lid; i < K; i += WG) {
        la[i] = ga[i];
        lb[i] = gb[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    gheap_merge_path(la, lb, out, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < K; i += WG) {
        ga[i] = out[i];
        gb[i] = out[K + i];
    }
}
