/* The generalized heap's batch operations on the throughput device (concurrent-heap seed,
 * section 4): a work-group sorts one batch of K keys by bitonic sort in local memory, and
 * carries out MergeAndSort of two sorted batches by merge path. These are the building blocks
 * of the device heap's INS and DEL; this file holds them as kernels of their own, one batch
 * (or pair of batches) per work-group, so they can be tested and measured alone.
 *
 * Build options: -DK=<keys per batch: power of two, 2..2048>, -DWG=<work-group size: power
 * of two, at most K>, -DKEY_T=int|long -DKEY_MAX=INT_MAX|LONG_MAX (default int), -DKEY_MAP
 * (common.cl: how the device heap's inserted keys, uploaded as raw bits, become ordered).
 * Keys are in the "ordered" form (signed comparison is the keys' order: u32 and f32 map as
 * in the k-selection, and a key with a 32-bit payload packs into a long).
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
 *
 * The device heap built on these follows in the program's other parts, in this order:
 * gheap_locks.cl (its design: layout, states, locks, memory ordering; the data-parallel
 * actions), gheap_steps.cl (work-item 0's control helpers), gheap_run.cl (the control state
 * machine and gheap_run, the INS/DEL kernel), gheap_delete.cl (gheap_delete, DEL-only
 * launches), gheap_bulk.cl (bulk calls: the heap rebuilt by one device sort).
 */
#ifndef KEY_T
#define KEY_T int
#define KEY_MAX INT_MAX
#endif
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

/* One compare-exchange stage (k, j) of bitonic sort over s[0..K); no barrier inside. */
inline void gheap_bitonic_stage(__local KEY_T *s, uint k, uint j, uint lid) {
    for (uint p = lid; p < K / 2; p += WG) {
        /* Pair p of this stage: i has bit j clear, partner i + j. */
        const uint i = ((p / j) * 2 * j) + (p % j);
        const KEY_T a = s[i], b = s[i + j];
        const bool ascending = (i & k) == 0;
        const KEY_T lo = min(a, b), hi = max(a, b);
        s[i] = ascending ? lo : hi;
        s[i + j] = ascending ? hi : lo;
    }
}

/* Sorts s[0..K) ascending; all WG work-items must call it (barriers inside). */
inline void gheap_bitonic_sort(__local KEY_T *s, uint lid) {
    for (uint k = 2; k <= K; k <<= 1) {
        for (uint j = k >> 1; j > 0; j >>= 1) {
            gheap_bitonic_stage(s, k, j, lid);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
}

/* Merge path: the stable merge of sorted a[0..K) and b[0..K) (ties: a first), its first K
 * outputs to lo[0..K), the rest to hi[0..K) (lo and hi may be the two halves of one array),
 * and, where g_lo (g_hi) is not null, the first (last) K to global memory as well.
 * All WG work-items must call it; the output is ready for reading after the caller's
 * barrier. Each output slot is written exactly once, by one unconditional store. */
inline void gheap_merge_path_to(__local const KEY_T *a, __local const KEY_T *b,
                                __local KEY_T *lo, __local KEY_T *hi,
                                volatile __global KEY_T *g_lo, volatile __global KEY_T *g_hi,
                                uint lid) {
    const uint per = (2 * K) / WG;
    const uint d = lid * per;
    /* x = how many of the first d outputs come from a. */
    uint l = d > K ? d - K : 0, h = min(d, (uint)K);
    while (l < h) {
        const uint mid = (l + h) / 2;
        if (a[mid] <= b[d - mid - 1]) l = mid + 1;
        else h = mid;
    }
    uint i = l, j = d - l;
    for (uint t = 0; t < per; ++t) {
        const KEY_T av = a[min(i, (uint)K - 1)];
        const KEY_T bv = b[min(j, (uint)K - 1)];
        const bool take_a = j >= K || (i < K && av <= bv);
        const uint p = d + t;
        __local KEY_T *dst = p < K ? lo + p : hi + (p - K);
        const KEY_T v = take_a ? av : bv;
        *dst = v;
        /* A global copy of the K smallest (a node's keys straight to the heap, so its lock
         * can go after this step): the local store above stays unconditional. */
        if (p < K && g_lo != 0) g_lo[p] = v;
        if (p >= K && g_hi != 0) g_hi[p - K] = v;
        i += take_a ? 1u : 0u;
        j += take_a ? 0u : 1u;
    }
}

inline void gheap_merge_path(__local const KEY_T *a, __local const KEY_T *b, __local KEY_T *lo,
                             __local KEY_T *hi, uint lid) {
    gheap_merge_path_to(a, b, lo, hi, 0, 0, lid);
}

/* Sorts keys[at ..] in place as batches of K, one work-group per batch: the `len` keys there
 * (as uploaded: KEY_MAP maps them; 0 for keys in the ordered form already), the last batch
 * padded with KEY_MAX up to K (the buffer must hold it). Each group reads its batch whole
 * into local memory before writing it back, and no other group touches it. The device
 * heap's bulk calls sort the call's keys into runs with it (below), and its INS/DEL launches
 * the inserted batches before gheap_run takes them. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_sort_batches(__global KEY_T *keys, ulong at, ulong len) {
    __local KEY_T s[K];
    const uint lid = get_local_id(0);
    const ulong first = (ulong)get_group_id(0) * K;
    __global KEY_T *batch = keys + at + first;
    for (uint i = lid; i < K; i += WG) s[i] = first + i < len ? ASYM_ORDERED(batch[i]) : KEY_MAX;
    barrier(CLK_LOCAL_MEM_FENCE);
    gheap_bitonic_sort(s, lid);
    for (uint i = lid; i < K; i += WG) batch[i] = s[i];
}

/* MergeAndSort of pairs: for each pair g, a[g] (K sorted keys) keeps the K smallest of
 * a[g] and b[g], b[g] the K largest, both sorted. One work-group per pair. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_merge_batches(__global KEY_T *a, __global KEY_T *b, uint pairs) {
    __local KEY_T la[K];
    __local KEY_T lb[K];
    __local KEY_T out[2 * K];
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    if (g >= pairs) return; /* whole group */
    __global KEY_T *ga = a + (ulong)g * K;
    __global KEY_T *gb = b + (ulong)g * K;
    for (uint i = lid; i < K; i += WG) {
        la[i] = ga[i];
        lb[i] = gb[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    gheap_merge_path(la, lb, out, out + K, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < K; i += WG) {
        ga[i] = out[i];
        gb[i] = out[K + i];
    }
}

/* Copies src[src_at .. src_at + n) to dst[dst_at ..) (growing the heap's arrays between
 * launches, reading the root for peek, a call's keys to or from a caller's device buffer).
 * The ranges must not overlap: work-items copy in no particular order. */
kernel void gheap_copy_keys(__global const KEY_T *src, ulong src_at, __global KEY_T *dst,
                            ulong dst_at, ulong n) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) dst[dst_at + i] = src[src_at + i];
}
