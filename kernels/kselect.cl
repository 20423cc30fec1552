/* Heap-based batch k-selection on the throughput device: the d-heap baseline of the ad-heap
 * seed (GpuOnly, and the device half of Cooperative).
 *
 * One work-group per sub-list. Build options: -DD=<arity: 2..64, power of two>,
 * -DWG=<work-group size: power of two, >= D>, -DHEAP_LOCAL=<1: heap in local memory; 0: in the
 * group's slice of global scratch>, -DSERIAL=<0: update-key by the work-group (the seed's
 * baseline, below); 1: update-key by one work-item>, -DPER=<keys each work-item filters per
 * round, SERIAL only>, -DKEY_MAP=<how raw key bits become the "ordered" int32 form, in which
 * signed comparison gives the keys' order: 0 they already are (int32 keys, or keys the host
 * mapped while staging), 1 uint32, 2 float32; structures/src/kselect/mod.rs>.
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
 * SERIAL=1 keeps steps 1, 2 and 4 and the parallel rejection of step 3, but work-item 0 runs
 * every candidate's update-key alone: per level it reads the child block (D consecutive words,
 * padded with INT_MIN past the last node so no bound check is needed per child), takes the
 * max in registers and moves it up. No barrier inside an update-key (the baseline pays
 * 2 + log2(D) per level), one pair per round of WG * PER keys; the other work-items wait at
 * the round's barrier. Which wins depends on the device (docs/decisions.md).
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

#ifndef SERIAL
#define SERIAL 0
#endif
/* Keys uploaded as raw bits are mapped to the ordered form on load: ASYM_ORDERED (common.cl,
 * -DKEY_MAP). */
#ifndef PER
#define PER 1
#endif

#define PAD (D - 1)
#define FENCE (CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* Where the heap lives. HEAP_LOCAL=1: all of it in local memory; 0: in the work-group's slice
 * of global scratch; 2 (split, SERIAL only): nodes below SPLIT in local memory, the rest in
 * global scratch (same positions, the lower part unused). SPLIT is 1 modulo D, so every child
 * block lies wholly on one side, and the hot top levels, which every update-key walks, are in
 * local memory. HGET/HSET address node i wherever it lives. */
#if HEAP_LOCAL == 2
#if !SERIAL
#error "a split heap needs SERIAL=1"
#endif
#if SPLIT % D != 1 % D
#error "SPLIT must be 1 modulo D"
#endif
#define HEAP_PARAMS __local int *lh, __global int *gh
#define HEAP_ARGS lh, gh
#define HGET(i) ((i) < SPLIT ? lh[PAD + (i)] : gh[PAD + (i)])
#define HSET(i, v) { const uint i_ = (i); const int v_ = (v); \
                     if (i_ < SPLIT) lh[PAD + i_] = v_; else gh[PAD + i_] = v_; }
#else
#if HEAP_LOCAL
#define HEAP_AS __local
#else
#define HEAP_AS __global
#endif
#define HEAP_PARAMS HEAP_AS int *h
#define HEAP_ARGS h
#define HGET(i) (h[PAD + (i)])
#define HSET(i, v) { h[PAD + (i)] = (v); }
#endif

/* Sequential sift-down of `key` from node i (heapify, one work-item per node). */
inline void kselect_sift_down_seq(HEAP_PARAMS, uint i, int key, uint len) {
    for (;;) {
        uint first = D * i + 1;
        if (first >= len) break;
        uint last = min(first + D, len);
        uint best = first;
        int bv = HGET(first);
        for (uint c = first + 1; c < last; ++c) {
            int v = HGET(c);
            if (v > bv) { bv = v; best = c; }
        }
        if (bv <= key) break;
        HSET(i, bv);
        i = best;
    }
    HSET(i, key);
}

/* The max of the aligned child block at `block` (D words) and its offset in the block. */
#define BLOCK_MAX(block, best, bi)                  \
    {                                               \
        best = (block)[0];                          \
        bi = 0;                                     \
        for (uint c = 1; c < D; ++c) {              \
            const int v = (block)[c];               \
            const bool take = v > best;             \
            best = take ? v : best;                 \
            bi = take ? c : bi;                     \
        }                                           \
    }

/* Update-key by one work-item: replace the root by `x` and sift it down. Needs the heap's
 * last child block padded with INT_MIN (step 1), so a block is read whole. */
inline void kselect_update_root_serial(HEAP_PARAMS, int x, uint k) {
    uint i = 0;
    for (;;) {
        const uint first = D * i + 1; /* its block starts at word D * (i + 1): aligned */
        if (first >= k) break;
        int best;
        uint bi;
#if HEAP_LOCAL == 2
        if (first < SPLIT) BLOCK_MAX(lh + PAD + first, best, bi)
        else BLOCK_MAX(gh + PAD + first, best, bi)
#else
        BLOCK_MAX(h + PAD + first, best, bi)
#endif
        if (best <= x) break;
        HSET(i, best);
        i = first + bi;
    }
    HSET(i, x);
}

/* Heapifies the first k words, deepest internal level first (level starts: s0 = 0,
 * s(L+1) = D*s(L) + 1), the work-group sifting a level's nodes at once. */
inline void kselect_heapify(HEAP_PARAMS, uint k, uint lid) {
    if (k <= 1) return;
    const uint last_internal = (k - 2) / D;
    ulong lvl = 0;
    while (lvl * D + 1 <= last_internal) lvl = lvl * D + 1;
    for (;;) {
        uint lo = (uint)lvl;
        uint hi = (uint)min((ulong)last_internal + 1, lvl * D + 1);
        for (uint i = lo + lid; i < hi; i += WG) kselect_sift_down_seq(HEAP_ARGS, i, HGET(i), k);
        barrier(FENCE);
        if (lvl == 0) break;
        lvl = (lvl - 1) / D;
    }
}

__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void kselect_dheap(__global const int *data, __global const uint *offsets,
                          __global int *out, __global int *scratch, uint k, uint nsub,
                          uint scratch_stride, __local int *lheap) {
#if !SERIAL
    __local int cand[2 * WG];
    __local int redv[WG];
    __local uint redi[WG];
    __local int redv2[WG];
    __local uint redi2[WG];
#endif
    __local uint scan[WG];
    __local int root;

    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    if (g >= nsub) return; /* whole group */
    const uint start = offsets[g];
    const uint n = offsets[g + 1] - start;
    __global const int *list = data + start;
#if HEAP_LOCAL == 2
    __local int *lh = lheap;
    __global int *gh = scratch + (ulong)g * scratch_stride;
#elif HEAP_LOCAL
    HEAP_AS int *h = lheap;
#else
    HEAP_AS int *h = scratch + (ulong)g * scratch_stride;
#endif

    /* 1. the first k keys, then INT_MIN up to the end of the last child block (the host
     *    sizes the heap at least k + 2D words) */
    const uint pad_end = D * ((k - 1) / D + 2) - PAD;
    for (uint i = lid; i < pad_end; i += WG) HSET(i, i < k ? ASYM_ORDERED(list[i]) : INT_MIN)
    barrier(FENCE);

    /* 2. heapify */
    kselect_heapify(HEAP_ARGS, k, lid);
    if (lid == 0) root = HGET(0);
    barrier(FENCE);
    /* Levels below the root: the most compare-and-swap rounds an update-key needs. */
    uint height = 0;
    for (ulong first = 1; first < k; first = first * D + 1) ++height;

    /* 3. stream the remaining keys */
#if SERIAL
    __local int scand[2 * WG * PER];
    for (uint base = k; base < n; base += WG * PER) {
        /* Reject keys >= root in parallel, PER per work-item (coalesced: key j of work-item
         * lid is base + j * WG + lid); count the rest and place them by a prefix sum of the
         * counts. Non-candidates park in slots of their own past WG * PER (see top). */
        const int r = root;
        int xs[PER];
        uint cnt = 0;
#pragma unroll
        for (uint j = 0; j < PER; ++j) {
            const uint idx = base + j * WG + lid;
            xs[j] = idx < n ? ASYM_ORDERED(list[idx]) : INT_MAX;
            cnt += xs[j] < r ? 1u : 0u;
        }
        asym_inclusive_scan(scan, lid, WG, cnt);
        uint pos = scan[lid] - cnt;
#pragma unroll
        for (uint j = 0; j < PER; ++j) {
            const bool take = xs[j] < r;
            scand[take ? pos : WG * PER + lid * PER + j] = xs[j];
            pos += take ? 1u : 0u;
        }
        const uint nc = scan[WG - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            int rt = r;
            for (uint c = 0; c < nc; ++c) {
                const int x = scand[c];
                if (x < rt) {
                    kselect_update_root_serial(HEAP_ARGS, x, k);
                    rt = HGET(0);
                }
            }
            root = rt;
        }
        barrier(FENCE);
    }
#else
    for (uint base = k; base < n; base += WG) {
        /* Reject keys >= root in parallel; compact the rest (candidates) in arrival order by
         * an inclusive prefix sum over the work-group (Hillis-Steele, log2(WG) barriers). */
        const uint idx = base + lid;
        const int r = root;
        int x = INT_MAX;
        if (idx < n) x = ASYM_ORDERED(list[idx]);
        const uint flag = x < r ? 1u : 0u;
        asym_inclusive_scan(scan, lid, WG, flag);
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
#endif

    /* 4. the root is the k-th smallest */
    if (lid == 0) out[g] = root;
}
