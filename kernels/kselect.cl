/* Heap-based batch k-selection on the throughput device: the d-heap baseline of the ad-heap
 * seed (GpuOnly, and the device half of Cooperative).
 *
 * One work-group per sub-list. Build options: -DD=<arity: 2..64, power of two>,
 * -DWG=<work-group size: power of two, >= D>, -DHEAP_LOCAL=<1: heap in local memory; 0: in the
 * group's slice of global scratch>. Keys are int32 in "ordered" form: the host maps u32 and f32
 * keys so that signed comparison gives their order (structures/src/kselect.rs).
 *
 * Algorithm (per sub-list of n keys, 1 <= k <= n):
 *   1. load the first k keys into a cache-aligned max-d-heap (node i at h[D-1+i], its children
 *      in the aligned block h[D*(i+1) .. D*(i+1)+D-1]);
 *   2. heapify level by level, deepest internal level first: nodes of one level have disjoint
 *      subtrees, so each work-item sifts its nodes down alone;
 *   3. stream the rest WG keys at a time: every work-item compares its key with the root in
 *      parallel and only keys below the root (candidates) are compacted into local memory;
 *      each candidate still below the root replaces it by update-key: D work-items load the
 *      aligned child block and find the max child by parallel reduction, one work-item moves it
 *      up (compare-and-swap chain), level by level;
 *   4. the root is the k-th smallest key.
 *
 * Memory ordering: a heap belongs to one work-group; every step that reads what another
 * work-item wrote is separated by barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE), and all
 * loop conditions read local values written before the last barrier, so control flow stays
 * uniform across the group. Only OpenCL C 1.2 is used, as NVIDIA requires. Candidates are
 * compacted by a prefix sum (deterministic, in arrival order) rather than a local atomic.
 * PoCL 3.1 note: stores to local memory under a condition that differs between work-items
 * were lost after a barrier (see kernels/heap.cl), so every such store here is unconditional:
 * the reduction ping-pongs between two buffers and work-items with nothing to store write a
 * neutral value or a slot of their own.
 */
#ifndef D
#error "build kselect.cl with -DD=<arity>"
#endif
#ifndef WG
#error "build kselect.cl with -DWG=<work-group size>"
#endif
#if WG < D
#error "the work-group must have at least D work-items"
#endif

#if HEAP_LOCAL
#define HEAP_AS __local
#else
#define HEAP_AS __global
#endif

#define PAD (D - 1)
#define FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* Sequential sift-down of `key` from node i (heapify, one work-item per node). */
inline void kselect_sift_down_seq(HEAP_AS int *h, uint i, int key, uint len) {
    for (;;) {
        uint first = D * i + 1;
        if (first >= len) break;
        uint last = min(first + D, len);
        uint best = first;
        int bv = h[PAD + first];
        for (uint c = first + 1; c < last; ++c) {
            int v = h[PAD + c];
            if (v > bv) { bv = v; best = c; }
        }
        if (bv <= key) break;
        h[PAD + i] = bv;
        i = best;
    }
    h[PAD + i] = key;
}

__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void kselect_dheap(__global const int *data, __global const uint *offsets,
                          __global int *out, __global int *scratch, uint k, uint nsub,
                          uint scratch_stride, __local int *lheap) {
    __local int cand[2 * WG];
    __local int redv[WG];
    __local uint redi[WG];
    __local int redv2[WG];
    __local uint redi2[WG];
    __local uint scan[WG];
    __local int root;

    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    if (g >= nsub) return; /* whole group */
    const uint start = offsets[g];
    const uint n = offsets[g + 1] - start;
    __global const int *list = data + start;
#if HEAP_LOCAL
    HEAP_AS int *h = lheap;
#else
    HEAP_AS int *h = scratch + (ulong)g * scratch_stride;
#endif

    /* 1. the first k keys */
    for (uint i = lid; i < k; i += WG) h[PAD + i] = list[i];
    barrier(FENCE);

    /* 2. heapify, deepest internal level first (level starts: s0 = 0, s(L+1) = D*s(L) + 1) */
    if (k > 1) {
        const uint last_internal = (k - 2) / D;
        ulong lvl = 0;
        while (lvl * D + 1 <= last_internal) lvl = lvl * D + 1;
        for (;;) {
            uint lo = (uint)lvl;
            uint hi = (uint)min((ulong)last_internal + 1, lvl * D + 1);
            for (uint i = lo + lid; i < hi; i += WG) kselect_sift_down_seq(h, i, h[PAD + i], k);
            barrier(FENCE);
            if (lvl == 0) break;
            lvl = (lvl - 1) / D;
        }
    }
    if (lid == 0) root = h[PAD];
    barrier(FENCE);
    /* Levels below the root: the most compare-and-swap rounds an update-key needs. */
    uint height = 0;
    for (ulong first = 1; first < k; first = first * D + 1) ++height;

    /* 3. stream the remaining keys */
    for (uint base = k; base < n; base += WG) {
        /* Reject keys >= root in parallel; compact the rest (candidates) in arrival order by
         * an inclusive prefix sum over the work-group (Hillis-Steele, log2(WG) barriers). */
        const uint idx = base + lid;
        const int r = root;
        int x = INT_MAX;
        if (idx < n) x = list[idx];
        const uint flag = x < r ? 1u : 0u;
        scan[lid] = flag;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint off = 1; off < WG; off <<= 1) {
            const uint add = lid >= off ? scan[lid - off] : 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            scan[lid] += add;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        /* Unconditional store: non-candidates park in their own slot past WG (see top). */
        cand[flag ? scan[lid] - 1u : WG + lid] = x;
        const uint nc = scan[WG - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint c = 0; c < nc; ++c) {
            const int x = cand[c];
            /* Update-key on the root, one level per round for `height` rounds; every
             * work-item runs every round (barriers stay unconditional), `active` drops when
             * x has found its place. x >= root (raised by an earlier candidate) is no-op. */
            uint active = x < root ? 1u : 0u;
            uint i = 0;
            for (uint level = 0; level < height; ++level) {
                const uint first = D * i + 1;
                active = (active && first < k) ? 1u : 0u;
                {
                    /* Every work-item writes its slot, those past D a neutral one (see top). */
                    const uint ch = first + lid;
                    int v = INT_MIN;
                    if (lid < D && active && ch < k) v = h[PAD + ch];
                    redv[lid] = v;
                    redi[lid] = ch;
                }
                barrier(FENCE);
                /* Tree reduction over the D children (kernels/heap.cl). */
                ASYM_MAX_CHILD(D, WG, lid, redv, redi, redv2, redi2)
                const int best = redv[0];
                const uint bi = redi[0];
                barrier(CLK_LOCAL_MEM_FENCE);
                if (active && best > x) {
                    if (lid == 0) h[PAD + i] = best;
                    i = bi;
                } else {
                    active = 0u;
                }
            }
            if (lid == 0 && x < root) {
                h[PAD + i] = x;
                root = h[PAD];
            }
            barrier(FENCE);
        }
        /* Every work-item is done with cand before the next round refills it. */
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* 4. the root is the k-th smallest */
    if (lid == 0) out[g] = root;
}
