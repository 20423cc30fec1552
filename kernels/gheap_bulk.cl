#if K <= GH_MAX_K

/* ======================================================================================
 * Bulk calls: a host call that moves a large share of the heap at once (an insert of many
 * batches, a delete of many keys) rebuilds the heap instead of running one INS or DEL per
 * batch, as std's BinaryHeap::extend rebuilds rather than sifting each key when the input is
 * large. Every key of the heap (nodes, partial buffer) and of the call is sorted on the
 * device, the smallest `n_out` leave as the call's result, and the rest is laid out again:
 * the i-th K keys of what remains become the i-th node added (position gh_position(i)), the
 * last fewer-than-K keys the partial buffer. A parent was added before its children, so it
 * gets smaller keys, and the partial buffer gets the largest: the generalized heap
 * properties hold. The call is one operation: the host holds the heap's lock across it.
 *
 * The sort: runs of K keys (nodes are sorted already, the partial buffer and each batch of
 * the call are padded with KEY_MAX and the batches sorted by gheap_sort_batches),
 * then passes of merge path over global memory, each merging pairs of runs into runs twice as
 * long: gheap_bulk_split finds where each output tile of K keys starts in its pair's two
 * runs (a binary search on the tile's diagonal), gheap_bulk_merge loads the tile's inputs
 * into local memory and merges them there; on GPUs gheap_bulk_merge_pass does both in one
 * launch for short passes, each group searching its own tile's bounds. Padding sorts last,
 * and the sort keeps exactly the real keys in front (a real key equal to KEY_MAX is the
 * same value as a pad).
 *
 * A rebuilt heap gathers as one sorted run (its nodes in the order added hold consecutive
 * keys, the partial buffer the largest), until an INS or DEL changes it. The host keeps
 * track, and a bulk call on such a heap sorts only its own keys (passes over their region,
 * `at`), then merges the two runs in one pass (`first`); a delete alone sorts nothing.
 *
 * Memory ordering: no atomics; each kernel reads what earlier kernels of the in-order queue
 * wrote (the kernel boundary orders them) and every element is written by one work-item.
 * ====================================================================================== */

/* Copies the heap's `count` nodes (in the order they were added) and its partial buffer
 * (padded to K) into runs[0 .. (count + has_partial)·K). */
kernel void gheap_bulk_gather(__global const KEY_T *keys, __global const KEY_T *partial,
                              __global KEY_T *runs, uint count, uint plen) {
    const ulong n = ((ulong)count + (plen > 0 ? 1u : 0u)) * K;
    for (ulong j = get_global_id(0); j < n; j += get_global_size(0)) {
        const uint r = (uint)(j / K), i = (uint)(j % K);
        runs[j] = r < count ? keys[(ulong)gh_position(r) * K + i]
                            : (i < plen ? partial[i] : KEY_MAX);
    }
}

/* The pair of runs of length `run` that output index o of a merge pass falls in: its start,
 * and the lengths of its two runs (the last pair may be short, or have no second run). With
 * `first` > 0 the pass merges just two runs, the first `first` keys and the rest (a heap
 * whose layout is one sorted run, and a call's keys sorted into another). */
inline void gheap_bulk_pair(ulong o, ulong total, ulong run, ulong first, ulong *base,
                            ulong *la, ulong *lb) {
    *base = first > 0 ? 0 : o / (2 * run) * (2 * run);
    *la = min(first > 0 ? first : run, total - *base);
    *lb = first > 0 ? total - *la : min(run, total - *base - *la);
}

/* For each output tile t of K keys of a merge pass over src[at ..] (runs of `run` keys,
 * `total` keys; `first`: gheap_bulk_pair): how many of the tile's predecessors within its
 * pair come from the pair's first run (ties: the first run first, so the merge is stable).
 * One work-item per tile. */
kernel void gheap_bulk_split(__global const KEY_T *src, __global uint *splits, ulong total,
                             ulong run, uint tiles, ulong at, ulong first) {
    const uint t = get_global_id(0);
    if (t >= tiles) return;
    src += at;
    ulong base, la, lb;
    const ulong o = (ulong)t * K;
    gheap_bulk_pair(o, total, run, first, &base, &la, &lb);
    __global const KEY_T *a = src + base;
    __global const KEY_T *b = a + la;
    const ulong d = o - base;
    ulong l = d > lb ? d - lb : 0, h = min(d, la);
    while (l < h) {
        const ulong mid = (l + h) / 2;
        if (a[mid] <= b[d - mid - 1]) l = mid + 1;
        else h = mid;
    }
    splits[t] = (uint)l;
}

/* One output tile of a merge pass: a[0 .. na) and b[0 .. K - na), each sorted, loaded into
 * s and merged by merge path into out (each work-item finds its K/WG outputs' start on its
 * diagonal and merges them alone), then stored to `to`. All WG work-items must call it
 * (barriers inside); every local slot is written by one unconditional store. */
inline void gheap_merge_tile(__global const KEY_T *a, __global const KEY_T *b, uint na,
                             __global KEY_T *to, __local KEY_T *s, __local KEY_T *out,
                             uint lid) {
    for (uint i = lid; i < K; i += WG) s[i] = i < na ? a[i] : b[i - na];
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint nb = K - na;
    const uint per = K / WG;
    const uint d = lid * per;
    uint l = d > nb ? d - nb : 0, h = min(d, na);
    while (l < h) {
        const uint mid = (l + h) / 2;
        if (s[mid] <= s[na + d - mid - 1]) l = mid + 1;
        else h = mid;
    }
    uint i = l, j = d - l;
    for (uint q = 0; q < per; ++q) {
        const KEY_T av = s[min(i, K - 1u)];
        const KEY_T bv = s[min(na + j, K - 1u)];
        const bool take_a = j >= nb || (i < na && av <= bv);
        out[d + q] = take_a ? av : bv;
        i += take_a ? 1u : 0u;
        j += take_a ? 0u : 1u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint q = lid; q < K; q += WG) to[q] = out[q];
}

/* One merge pass (src and dst from `at` on): tile t (one work-group) writes
 * dst[t·K .. t·K + K), the merge of
 * a[x0 .. x1) and b[y0 .. y1) of its pair (x0 from its split, x1 from the next tile's, or
 * the whole first run at the pair's end), merged in local memory by merge path: each
 * work-item finds its K/WG outputs' start on its diagonal and merges them alone. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_bulk_merge(__global const KEY_T *src, __global KEY_T *dst,
                             __global const uint *splits, ulong total, ulong run, ulong at,
                             ulong first) {
    __local KEY_T s[K];
    __local KEY_T out[K];
    const uint t = get_group_id(0), lid = get_local_id(0);
    src += at;
    dst += at;
    ulong base, la, lb;
    const ulong o = (ulong)t * K;
    gheap_bulk_pair(o, total, run, first, &base, &la, &lb);
    const ulong d0 = o - base, d1 = d0 + K;
    const ulong x0 = splits[t];
    const ulong x1 = d1 == la + lb ? la : splits[t + 1];
    const ulong y0 = d0 - x0;
    gheap_merge_tile(src + base + x0, src + base + la + y0, (uint)(x1 - x0), dst + o, s, out,
                     lid);
}

/* The number of probes each of a merge pass's two tile-bound searches makes per round, and
 * the flags they leave (at least one per work-item, so every work-item stores one). */
#define GH_PROBES (WG >= 64 ? 32 : (WG / 2 > 0 ? WG / 2 : 1))
#define GH_FLAGS (WG > 2 * GH_PROBES ? WG : 2 * GH_PROBES)

/* gheap_bulk_split and gheap_bulk_merge in one launch, for GPUs' short passes (a few waves
 * of groups: in a long one the searches' rounds cost more than the launch): tile t (one
 * work-group) writes dst[t·K .. t·K + K), the merge of a[x0 .. x1) and b[d0 - x0 .. d1 - x1)
 * of its pair (runs of `run` keys, or two runs, the first `first` keys long:
 * gheap_bulk_pair), where d0 and d1 = d0 + K are the tile's diagonals in its pair and x0, x1
 * how many of the outputs before them come from the pair's first run (ties: the first run
 * first, so the merge is stable).
 *
 * The group finds x0 and x1 itself, both at once: each round GH_PROBES work-items test
 * points spread over what is left of each search's range (merge path's predicate
 * a[m] <= b[d - m - 1], true below the answer, false from it on), and the first point that
 * tests false bounds the range: about log(run) / log(GH_PROBES + 1) rounds of one global load
 * each, where gheap_bulk_split's one work-item per tile makes log2(run) dependent loads in
 * a launch of its own. (On a CPU device the group's search costs more than that launch:
 * every work-item runs each round, PoCL looping over them at each barrier.) Every
 * work-item computes the same bounds from the probes' flags, so the loop is uniform; every
 * work-item writes its flag (the unused ones write false), so no local store is
 * conditional. Then the tile's inputs come into local memory and are merged there. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_bulk_merge_pass(__global const KEY_T *src, __global KEY_T *dst,
                                  ulong total, ulong run, ulong at, ulong first) {
    __local KEY_T s[K];
    __local KEY_T out[K];
    __local uchar flag[GH_FLAGS];
    const uint t = get_group_id(0), lid = get_local_id(0);
    src += at;
    dst += at;
    ulong base, la, lb;
    const ulong o = (ulong)t * K;
    gheap_bulk_pair(o, total, run, first, &base, &la, &lb);
    __global const KEY_T *pa = src + base;
    __global const KEY_T *pb = pa + la;
    /* Search 0 for diagonal d0, search 1 for d1: ranges [l, h) narrowing to the answer. */
    const ulong dg[2] = {o - base, o - base + K};
    ulong l[2], h[2];
    for (uint q = 0; q < 2; ++q) {
        l[q] = dg[q] > lb ? dg[q] - lb : 0;
        h[q] = min(dg[q], la);
    }
    while (l[0] < h[0] || l[1] < h[1]) {
        for (uint p = lid; p < GH_FLAGS; p += WG) {
            const uint search = min(p / GH_PROBES, 1u), probe = p % GH_PROBES;
            const ulong lo = l[search], span = h[search] - lo;
            const ulong m = lo + ((ulong)(probe + 1) * span) / (GH_PROBES + 1);
            /* An empty range tests nothing (its bounds stay); flags past the probes' are
             * written false and never read. */
            const bool f = p < 2 * GH_PROBES && span > 0 && pa[m] <= pb[dg[search] - m - 1];
            flag[p] = f ? 1 : 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint q = 0; q < 2; ++q) {
            if (l[q] >= h[q]) continue;
            const ulong lo = l[q], span = h[q] - lo;
            /* The first probe that tested false bounds the answer from above, the one
             * before it (true) from below. */
            uint fst = GH_PROBES;
            for (uint i = GH_PROBES; i > 0; --i) {
                if (flag[q * GH_PROBES + i - 1] == 0) fst = i - 1;
            }
            const ulong m_hi = lo + ((ulong)(fst + 1) * span) / (GH_PROBES + 1);
            const ulong m_lo = lo + ((ulong)fst * span) / (GH_PROBES + 1);
            if (fst < GH_PROBES) h[q] = m_hi;
            if (fst > 0) l[q] = m_lo + 1;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const ulong x0 = l[0], x1 = l[1];
    const ulong y0 = dg[0] - x0;
    gheap_merge_tile(pa + x0, pb + y0, (uint)(x1 - x0), dst + o, s, out, lid);
}

/* Lays the sorted keys out: sorted[0 .. n_out) leave in the caller's form at out (which may
 * be `sorted` itself: each element is read and written by the same work-item; or a caller's
 * device buffer), the next count·K become nodes 0 .. count in the order they were added, the
 * last plen the partial buffer; lock word s says whether slot s holds a node (position is
 * its own inverse); the header gets the new count and partial length (no launch runs beside
 * this one, and the next reads them after the kernel boundary). */
kernel void gheap_bulk_place(__global KEY_T *sorted, __global KEY_T *keys,
                             __global KEY_T *partial, __global KEY_T *out, __global uint *word,
                             ulong n_out, uint count, uint plen, uint slots,
                             __global uint *hdr) {
    const ulong kept = (ulong)count * K + plen;
    const ulong n = max(n_out + kept, (ulong)slots);
    if (get_global_id(0) == 0) {
        hdr[GH_COUNT] = count;
        hdr[GH_PLEN] = plen;
    }
    for (ulong j = get_global_id(0); j < n; j += get_global_size(0)) {
        if (j < slots) word[j] = gh_position((uint)j) < count ? GH_AVAIL : GH_EMPTY;
        if (j < n_out) {
            out[j] = ASYM_ORDERED(sorted[j]);
        } else if (j < n_out + kept) {
            const ulong q = j - n_out;
            const uint node = (uint)(q / K);
            if (node < count) keys[(ulong)gh_position(node) * K + q % K] = sorted[j];
            else partial[q - (ulong)count * K] = sorted[j];
        }
    }
}

#endif /* K <= GH_MAX_K */
