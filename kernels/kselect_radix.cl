/* Radix select on the throughput device: the k-th smallest key of every sub-list, for keys
 * already in SVM (KSelector::select_svm) or staged there in chunks (GpuOnly, Cooperative).
 *
 * Two forms. kselect_radix: one work-group per sub-list, everything in local memory. The
 * tiled form (radix_clear, radix_count, radix_keep, radix_finish, four launches on one
 * in-order queue) spreads a long sub-list over several work-groups, one per tile of at most
 * a few ten thousand keys, so a few long sub-lists still fill every compute unit; it is
 * described after the one-group kernel, and also serves a sub-list split by range between
 * the device and the host (the host merges the histograms between radix_count and
 * radix_keep). Build options: -DWG=<work-group size>, -DKEY_MAP=<0 int32, 1 uint32,
 * 2 float32: how raw bits become the ordered int32 form, common.cl's ASYM_ORDERED>.
 *
 * Algorithm (per sub-list of n keys, 1 <= k <= n): one pass per 8-bit digit of the key's
 * unsigned image (the ordered int32 form with its sign bit flipped, so unsigned order is the
 * keys' order), most significant first. A pass zeroes a 256-counter histogram in local
 * memory, every work-item counts the digit of its keys (int4 vectors strided by WG, so a warp's
 * loads are coalesced and eight keys per work-item are in flight: RADIX_EACH) among those
 * that match the digits fixed so far, and the work-group picks the bucket holding the k-th
 * from 32 pickers' sums (radix_fix), fixing one more digit and the rank within it. Once the k-th's bucket holds at most RANK_CAP keys they are
 * gathered into local memory and ranked directly (radix_rank): for spread-out keys in short
 * sub-lists that is right after the first digit, so the sub-list is read twice and the
 * bucket picked once. Otherwise the second pass keeps the bucket (about 1/256 of the keys)
 * in the group's slice of a scratch buffer as long as the keys, counting the second digit on
 * the way, and the later digits read only the kept keys; after four digits the image is the
 * answer. A sub-list of at most KEEP keys per work-item (2048 keys on the 64 work-items the
 * host gives sub-lists that short) is read once into registers, its loads in flight
 * together, and its second pass reads them there.
 *
 * Memory ordering: the histogram and the kept count live in local memory and are shared
 * within the work-group only; local atomics count and hand out scratch slots, and local
 * barriers separate zeroing, counting, the bucket walk and the next pass. The group's scratch
 * slice is written and read by the group alone, but a kept key is read by another work-item
 * than wrote it: one barrier with CLK_GLOBAL_MEM_FENCE between pass 2 and the later passes
 * orders them. The keys are read-only; the answer is one plain store per work-group, visible
 * to the host after the launch completes (kernel boundary).
 */

#define RADIX_BUCKETS 256

/* Candidates at most this many are ranked directly in local memory instead of by more digit
 * passes: each work-item takes some of them and counts the candidates below and equal to
 * each (RANK_CAP^2 / WG comparisons per work-item at most). */
#define RANK_CAP 256

/* Work-items that take part in the bucket pick: 32 (one warp on NVIDIA) with 8 buckets each,
 * or all of a smaller work-group with more. */
#define PICKERS (WG < 32 ? WG : 32)
#define PER_PICKER (RADIX_BUCKETS / PICKERS)

/* The state a work-group shares in local memory while it fixes digits. */
typedef struct {
    uint hist[RADIX_BUCKETS];
    uint scan[PICKERS];
    uint chosen[4]; /* prefix, mask, rank within the bucket, keys in the bucket */
    uint kept;
    uint answer;
    uint cand[RANK_CAP];
} radix_local;

/* After a counting pass (every work-item calls it): finds the bucket holding `*rank` and
 * fixes the digit at `shift`; every work-item then takes the new prefix, mask and rank
 * within the bucket, and returns how many keys the bucket holds. Each picker sums its
 * PER_PICKER buckets; then each adds up the sums below its own (at most 31 reads of words
 * every picker reads alike) and the one whose range holds the rank walks its buckets. Three
 * barriers in all (a log-step scan took nineteen, which cost short sub-lists more than
 * their loads): the first ends the counting, the second publishes the sums, the last the
 * choice; `chosen` is written again only after later barriers. */
inline uint radix_fix(__local radix_local *l, uint *prefix, uint *mask, uint *rank, int shift) {
    const uint lid = get_local_id(0);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < PICKERS) {
        uint own = 0u;
        for (uint j = 0; j < PER_PICKER; ++j) own += l->hist[lid * PER_PICKER + j];
        l->scan[lid] = own;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < PICKERS) {
        uint below = 0u;
        for (uint j = 0; j < lid; ++j) below += l->scan[j];
        if (below <= *rank && *rank < below + l->scan[lid]) {
            uint b = lid * PER_PICKER;
            for (; b < lid * PER_PICKER + PER_PICKER - 1; ++b) {
                if (below + l->hist[b] > *rank) break;
                below += l->hist[b];
            }
            l->chosen[0] = *prefix | (b << shift);
            l->chosen[1] = *mask | (0xffu << shift);
            l->chosen[2] = *rank - below;
            l->chosen[3] = l->hist[b];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    *prefix = l->chosen[0];
    *mask = l->chosen[1];
    *rank = l->chosen[2];
    return l->chosen[3];
}

/* Ranks the candidates gathered in l->cand (l->kept of them, at most RANK_CAP, every one
 * matching the digits fixed so far): the one with `rank` candidates below it (ties broken
 * by count) is the answer, in its unsigned image. Every work-item calls it after a barrier
 * that ended the gathering. */
inline uint radix_rank(__local radix_local *l, uint rank) {
    const uint c = l->kept;
    for (uint j = get_local_id(0); j < c; j += WG) {
        const uint v = l->cand[j];
        uint below = 0u, equal = 0u;
        for (uint i = 0; i < c; ++i) {
            below += l->cand[i] < v;
            equal += l->cand[i] == v;
        }
        if (below <= rank && rank < below + equal) l->answer = v; /* equal values: same v */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return l->answer;
}

inline void radix_zero(__local radix_local *l) {
    for (uint b = get_local_id(0); b < RADIX_BUCKETS; b += WG) l->hist[b] = 0u;
    if (get_local_id(0) == 0) l->kept = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Gathers the keys of `from[start..end)` (in unsigned image if `image`, else raw keys mapped
 * on the way) that match prefix under mask into l->cand: the caller knows there are at most
 * RANK_CAP. */
#define RADIX_GATHER(LOAD, start, end)                                                   \
    do {                                                                                 \
        for (uint i = (start) + get_local_id(0); i < (end); i += WG) {                   \
            uint v = LOAD(i);                                                            \
            if ((v & mask) == prefix) l->cand[atomic_inc(&l->kept)] = v;                 \
        }                                                                                \
    } while (0)

#define RAW_IMAGE(x) ((uint)ASYM_ORDERED(x) ^ 0x80000000u)
#define KEY_IMAGE(i) RAW_IMAGE(keys[i])

/* Runs BODY once for every key of keys[start, end) with `v` its unsigned image, the keys
 * shared among the work-group's work-items. The 16-byte aligned middle is read as int4, two
 * per work-item per step, so eight keys per work-item are in flight at once: a loop of single
 * loads that each feed a local atomic keeps about one load in flight per work-item and reads
 * at half the memory's bandwidth. The head and tail (fewer than four keys each) take one
 * load per work-item. Needs `keys` 16-byte aligned (SVM allocations are 128-byte aligned). */
#define RADIX_EACH(start, end, BODY)                                                     \
    do {                                                                                 \
        const uint s_ = (start), e_ = (end), lid_ = get_local_id(0);                     \
        const uint a0_ = min(e_, (s_ + 3u) & ~3u);                                       \
        const uint a1_ = max(a0_, e_ & ~3u);                                             \
        if (lid_ < a0_ - s_) { const uint v = KEY_IMAGE(s_ + lid_); BODY; }              \
        if (lid_ < e_ - a1_) { const uint v = KEY_IMAGE(a1_ + lid_); BODY; }             \
        __global const int4 *vec_ = (__global const int4 *)(keys + a0_);                 \
        const uint nv_ = (a1_ - a0_) >> 2;                                               \
        for (uint q_ = lid_; q_ < nv_; q_ += 2u * WG) {                                  \
            const bool two_ = q_ + WG < nv_;                                             \
            const int4 x_ = vec_[q_];                                                    \
            const int4 y_ = two_ ? vec_[q_ + WG] : (int4)(0);                            \
            { const uint v = RAW_IMAGE(x_.s0); BODY; }                                   \
            { const uint v = RAW_IMAGE(x_.s1); BODY; }                                   \
            { const uint v = RAW_IMAGE(x_.s2); BODY; }                                   \
            { const uint v = RAW_IMAGE(x_.s3); BODY; }                                   \
            if (two_) {                                                                  \
                { const uint v = RAW_IMAGE(y_.s0); BODY; }                               \
                { const uint v = RAW_IMAGE(y_.s1); BODY; }                               \
                { const uint v = RAW_IMAGE(y_.s2); BODY; }                               \
                { const uint v = RAW_IMAGE(y_.s3); BODY; }                               \
            }                                                                            \
        }                                                                                \
    } while (0)

/* Keys per work-item a sub-list may have to be held in registers (kselect_radix): 2048
 * keys per work-group up to 256 work-items (the host runs sub-lists of at most 2048 keys on
 * 64), 8 each above; at most 32 (one bit each in `valid`), a multiple of 4 (int4 loads). */
#if WG >= 256
#define KEEP 8
#elif WG >= 64
#define KEEP (2048 / WG)
#else
#define KEEP 32
#endif

/* Pass 2's work for one key `v` (the unsigned image) of a range whose scratch slice starts at
 * `base`: a key in the k-th's bucket is kept and its second digit counted. */
#define RADIX_KEEP_BODY(base)                                                            \
    if ((v & mask) == prefix) {                                                          \
        scratch[(base) + atomic_inc(&l->kept)] = v;                                      \
        atomic_inc(&l->hist[(v >> 16) & 0xffu]);                                         \
    }
#define SCRATCH_IMAGE(i) (scratch[i])

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void kselect_radix(__global const int *keys, __global const uint *offsets, uint k,
                   __global int *answers, __global uint *scratch) {
    __local radix_local l_;
    __local radix_local *l = &l_;
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint start = offsets[g];
    const uint end = offsets[g + 1];
    const uint len = end - start;
    uint prefix = 0u, mask = 0u, rank = k - 1u;
    /* A sub-list of at most KEEP keys per work-item is read once, into registers (its
     * KEEP loads in flight together); a longer one is read in strided loops. */
    const bool in_regs = len <= KEEP * WG;
    uint mine[KEEP];
    /* Pass 1: the top digit over every key. */
    radix_zero(l);
    /* Bit j: mine[j] holds a key. */
    uint valid = 0u;
    if (in_regs) {
        /* A sub-list that starts and ends on 16-byte bounds is read as int4 (KEEP / 4 loads
         * per work-item). */
        if (((start | len) & 3u) == 0u) {
            __global const int4 *vec = (__global const int4 *)(keys + start);
#pragma unroll
            for (uint h = 0; h < KEEP / 4; ++h) {
                const uint q = lid + h * WG;
                const bool in = 4u * q < len;
                const int4 x = in ? vec[q] : (int4)(0);
                mine[4 * h] = RAW_IMAGE(x.s0);
                mine[4 * h + 1] = RAW_IMAGE(x.s1);
                mine[4 * h + 2] = RAW_IMAGE(x.s2);
                mine[4 * h + 3] = RAW_IMAGE(x.s3);
                valid |= (in ? 0xfu : 0u) << (4 * h);
            }
        } else {
#pragma unroll
            for (uint j = 0; j < KEEP; ++j) {
                const uint i = lid + j * WG;
                mine[j] = i < len ? KEY_IMAGE(start + i) : 0u;
                valid |= (uint)(i < len) << j;
            }
        }
#pragma unroll
        for (uint j = 0; j < KEEP; ++j)
            if ((valid >> j) & 1u) atomic_inc(&l->hist[mine[j] >> 24]);
    } else {
        RADIX_EACH(start, end, atomic_inc(&l->hist[v >> 24]));
    }
    uint c = radix_fix(l, &prefix, &mask, &rank, 24);
    radix_zero(l);
    if (c <= RANK_CAP) {
        /* Few candidates (spread-out keys in short sub-lists): rank them directly. */
        if (in_regs) {
#pragma unroll
            for (uint j = 0; j < KEEP; ++j)
                if (((valid >> j) & 1u) && (mine[j] & mask) == prefix)
                    l->cand[atomic_inc(&l->kept)] = mine[j];
        } else {
            RADIX_EACH(start, end, if ((v & mask) == prefix) l->cand[atomic_inc(&l->kept)] = v);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        uint v = radix_rank(l, rank);
        if (lid == 0) answers[g] = (int)(v ^ 0x80000000u);
        return;
    }
    /* Pass 2: keep the k-th's bucket in the group's slice of scratch, counting its second
     * digit on the way; the later digits read only the kept keys. */
    if (in_regs) {
#pragma unroll
        for (uint j = 0; j < KEEP; ++j) {
            const uint v = mine[j];
            if (((valid >> j) & 1u) && (v & mask) == prefix) {
                scratch[start + atomic_inc(&l->kept)] = v;
                atomic_inc(&l->hist[(v >> 16) & 0xffu]);
            }
        }
    } else {
        RADIX_EACH(start, end, RADIX_KEEP_BODY(start));
    }
    c = radix_fix(l, &prefix, &mask, &rank, 16);
    const uint stop = start + l->kept;
    /* The kept keys are read by other work-items than wrote them. */
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    for (int shift = 8; shift >= 0 && c > RANK_CAP; shift -= 8) {
        radix_zero(l);
        for (uint i = start + lid; i < stop; i += WG) {
            uint v = scratch[i];
            if ((v & mask) == prefix) atomic_inc(&l->hist[(v >> shift) & 0xffu]);
        }
        c = radix_fix(l, &prefix, &mask, &rank, shift);
    }
    if (c > RANK_CAP) {
        /* Every digit fixed: the prefix is the answer. */
        if (lid == 0) answers[g] = (int)(prefix ^ 0x80000000u);
        return;
    }
    radix_zero(l);
    RADIX_GATHER(SCRATCH_IMAGE, start, stop);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint v = radix_rank(l, rank);
    if (lid == 0) answers[g] = (int)(v ^ 0x80000000u);
}

/* The tiled form. The host cuts every sub-list into tiles; tiles[3t..3t+2] = (sub-list,
 * first key, end) of tile t, first_tile[s] the first tile of sub-list s. hist holds two
 * 256-counter global histograms per sub-list (top digit, second digit), zeroed by
 * radix_clear; kept[t] how many keys tile t kept in its own range of scratch.
 *
 *   radix_count  (a work-group per tile)  counts the tile's top digits in local memory and
 *                adds the counts to the sub-list's first global histogram.
 *   radix_keep   (a work-group per tile)  reads that histogram (every tile of a sub-list
 *                fixes the same top digit), keeps the tile's keys in the k-th's bucket in the
 *                tile's own range of scratch (tiles never share scratch: no global atomic per
 *                key), and adds their second digits to the second global histogram.
 *   radix_finish (a work-group per sub-list) fixes the first two digits from the two
 *                histograms, then the last two over the kept keys of the sub-list's tiles
 *                (about 1/256 of its keys for spread-out keys; all of them in the worst case,
 *                still correct), and writes the answer.
 *
 * Memory ordering: the global histograms are only added to (atomic_add, relaxed) within one
 * launch and read in a later one; scratch and kept are written in radix_keep and read in
 * radix_finish. Kernel boundaries on the in-order queue order all of it; within a launch
 * only local memory is shared, under local barriers as in kselect_radix.
 */

__kernel void radix_clear(__global uint *hist, uint words) {
    uint i = get_global_id(0);
    if (i < words) hist[i] = 0u;
}

/* Loads a global histogram into local memory (radix_fix's first barrier publishes it). */
inline void radix_load(__local radix_local *l, __global const uint *from) {
    for (uint b = get_local_id(0); b < RADIX_BUCKETS; b += WG) l->hist[b] = from[b];
}

/* Adds a local histogram to a global one (after a barrier ending the counting). */
inline void radix_publish(__local radix_local *l, __global uint *to) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = get_local_id(0); b < RADIX_BUCKETS; b += WG) {
        if (l->hist[b] != 0u) atomic_add(&to[b], l->hist[b]);
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void radix_count(__global const int *keys, __global const uint *tiles, __global uint *hist) {
    __local radix_local l_;
    __local radix_local *l = &l_;
    const uint t = get_group_id(0);
    const uint sub = tiles[3 * t], start = tiles[3 * t + 1], end = tiles[3 * t + 2];
    radix_zero(l);
    RADIX_EACH(start, end, atomic_inc(&l->hist[v >> 24]));
    radix_publish(l, hist + 2 * RADIX_BUCKETS * sub);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void radix_keep(__global const int *keys, __global const uint *tiles, uint k,
                __global uint *hist, __global uint *scratch, __global uint *kept) {
    __local radix_local l_;
    __local radix_local *l = &l_;
    const uint t = get_group_id(0);
    const uint sub = tiles[3 * t], start = tiles[3 * t + 1], end = tiles[3 * t + 2];
    __global uint *h = hist + 2 * RADIX_BUCKETS * sub;
    uint prefix = 0u, mask = 0u, rank = k - 1u;
    radix_load(l, h);
    radix_fix(l, &prefix, &mask, &rank, 24);
    radix_zero(l);
    RADIX_EACH(start, end, RADIX_KEEP_BODY(start));
    radix_publish(l, h + RADIX_BUCKETS);
    if (get_local_id(0) == 0) kept[t] = l->kept;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void radix_finish(__global const uint *scratch, __global const uint *tiles,
                  __global const uint *first_tile, uint k, __global const uint *hist,
                  __global const uint *kept, __global int *answers) {
    __local radix_local l_;
    __local radix_local *l = &l_;
    const uint sub = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint t0 = first_tile[sub], t1 = first_tile[sub + 1];
    __global const uint *h = hist + 2 * RADIX_BUCKETS * sub;
    uint prefix = 0u, mask = 0u, rank = k - 1u;
    radix_load(l, h);
    radix_fix(l, &prefix, &mask, &rank, 24);
    radix_load(l, h + RADIX_BUCKETS);
    uint c = radix_fix(l, &prefix, &mask, &rank, 16);
    for (int shift = 8; shift >= 0 && c > RANK_CAP; shift -= 8) {
        radix_zero(l);
        for (uint t = t0; t < t1; ++t) {
            const uint start = tiles[3 * t + 1], stop = start + kept[t];
            for (uint i = start + lid; i < stop; i += WG) {
                uint v = scratch[i];
                if ((v & mask) == prefix) atomic_inc(&l->hist[(v >> shift) & 0xffu]);
            }
        }
        c = radix_fix(l, &prefix, &mask, &rank, shift);
    }
    if (c > RANK_CAP) {
        if (lid == 0) answers[sub] = (int)(prefix ^ 0x80000000u);
        return;
    }
    radix_zero(l);
    for (uint t = t0; t < t1; ++t) {
        const uint start = tiles[3 * t + 1], stop = start + kept[t];
        RADIX_GATHER(SCRATCH_IMAGE, start, stop);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint v = radix_rank(l, rank);
    if (lid == 0) answers[sub] = (int)(v ^ 0x80000000u);
}

/* After radix_keep, for a host that takes the kept keys (a range split with the latency
 * threads, a part of sub-lists counted across ranks): packs every tile's kept keys,
 * scratch[start .. start + kept[t]], to packed[at ..] where at is the sum of kept[0 .. t), so
 * the kept keys of all tiles lie together in tile order (each sub-list's in one run) and
 * the host reads them in one piece instead of one read per tile. One work-group per tile
 * sums its own `at` (a strided sum over the work-items, then lane 0 adds those up).
 *
 * Memory ordering: kept and scratch were written by radix_keep, an earlier launch on the
 * same in-order queue; packed is written here only and read by the host after the launch
 * completes. Tiles write disjoint ranges of packed.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void radix_compact(__global const uint *scratch, __global const uint *tiles,
                   __global const uint *kept, __global uint *packed) {
    __local uint sums[WG];
    __local uint at_;
    const uint t = get_group_id(0), lid = get_local_id(0);
    uint s = 0u;
    for (uint i = lid; i < t; i += WG) s += kept[i];
    sums[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        uint at = 0u;
        for (uint i = 0; i < WG; ++i) at += sums[i];
        at_ = at;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint at = at_, start = tiles[3 * t + 1], n = kept[t];
    for (uint i = lid; i < n; i += WG) packed[at + i] = scratch[start + i];
}

/* After radix_keep, for a part of sub-lists counted across ranks once the second digit is
 * fixed too: takes from every tile's kept keys those whose top 16 bits are want[sub] (the
 * two digits fixed for its sub-list) into packed[base[sub] ..], in any order (selection does
 * not care): about 1/65,536 of the keys come back instead of 1/256. table holds want[subs],
 * base[subs] (from this part's own second-digit counts, so each sub-list's range is exact)
 * and fill[subs] (zeroed by the host; each taken key claims a slot with one atomic).
 *
 * Memory ordering: kept and scratch come from radix_keep (an earlier launch, same in-order
 * queue); fill is only incremented here (relaxed atomics: the slot index is all they order)
 * and packed is read by the host after the launch completes.
 */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void radix_take(__global const uint *scratch, __global const uint *tiles,
                __global const uint *kept, __global uint *table, uint subs,
                __global uint *packed) {
    const uint t = get_group_id(0), lid = get_local_id(0);
    const uint sub = tiles[3 * t], start = tiles[3 * t + 1], n = kept[t];
    const uint want = table[sub], base = table[subs + sub];
    __global uint *fill = table + 2 * subs + sub;
    for (uint i = lid; i < n; i += WG) {
        const uint v = scratch[start + i];
        if ((v >> 16) == want) packed[base + atomic_inc(fill)] = v;
    }
}
