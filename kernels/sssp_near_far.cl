/* Near-far delta-stepping on the device (DeviceSssp::delta_stepping): a part of the SSSP
 * program after sssp.cl, whose scan and owner search it shares.
 *
 * Algorithm (Davidson et al.'s near-far, a delta-stepping with one bucket open at a time).
 * Vertices whose tentative distance is below `limit` are "near": an iteration expands the
 * near list (each vertex once: the stamp exchange as in sssp_expand) and a lowered vertex
 * joins the next near list if its new distance is below `limit`, else the far pile (once per
 * phase: `fstamp` holds the phase that last filed it). An iteration that finds the near list
 * empty opens the next bucket instead: `limit` moves up by at least delta, to past the
 * smallest distance in the far pile, and the far pile is split into the vertices now near
 * (the next near list), the vertices still far (compacted into the other far buffer, filed
 * under the next phase) and the vertices whose distance dropped below the old limit since
 * they were filed (they were near since then: dropped). The search is done when an iteration
 * finds both empty. Any limit gives exact distances (within the near list it is Bellman–Ford
 * with work lists); delta only trades iterations for re-expansions.
 *
 * Control without the host: one launch of nf_step per iteration, whatever it does, so the
 * host enqueues iterations in batches and reads `ctl` once per batch (iterations past the end
 * find `done` set and return at once). `ctl` holds the near lengths by iteration mod 3, the
 * iteration state (limit, phase, done) by iteration mod 2 — nf_step(i) reads slot i % 2 and
 * writes slot (i + 1) % 2 — and the far pile's length and minimum by phase mod 3 (a split
 * from phase p reads slot p % 3, fills slot (p + 1) % 3 and clears slot (p + 2) % 3 for the
 * split after it). A word a launch decides on is never written by that launch, only by
 * earlier ones: work-groups start at different times, and one that read a word after another
 * group changed it would decide differently (and skip its share).
 *
 * Yielding (cooperative delta-stepping, apps::sssp::coop_delta): a search can start from
 * any state the host writes (distances, a far pile, a limit; iteration numbers and phases
 * beyond every earlier one, so old stamps never match) and, with `yield_below` > 0, stops
 * at the first iteration after a split whose near list is shorter than that: it sets `done`
 * to 2 and leaves its near list and the phase's far pile for the host's latency threads,
 * which settle light buckets faster than a device iteration can. A stint's first split
 * (FRESH 2 in the starting state) does not count: the host hands over heavy buckets.
 *
 * Memory ordering as for sssp_expand: relaxed atomics within a launch, the launch boundary
 * between launches. The far minimum is the exact minimum of the far vertices' distances
 * (every lowering into the far range takes part), but the limit it gives is only a choice of
 * bucket: a wrong one would cost iterations, never a distance. */

/* Control words, from the host (examples/src/sssp/near_far.rs, kernel_constants):
 * NF_NLEN       3 words: near length of iteration i at NF_NLEN + i % 3
 * NF_VISITED    2 words: vertices expanded (low, high)
 * NF_RELAXED    2 words: edges scanned (low, high)
 * NF_ERROR      non-zero: an append overran its buffer
 * NF_SPLITS     buckets opened after the first
 * NF_ROUNDS     iterations that expanded vertices
 * NF_YIELD_LEN  the near length of the iteration that yielded
 * NF_YIELD_ITER the iteration that yielded
 * NF_STATE      2 slots (iteration mod 2) of NF_SLOT words: NF_LIMIT, NF_PHASE, NF_DONE
 *               (0: go on; 1: both lists empty, done; 2: yielded), NF_FRESH (1: the
 *               previous iteration opened a bucket; 2: the next split is a stint's first,
 *               which does not count as fresh)
 * NF_FAR        3 slots (phase mod 3) of NF_SLOT words: far length, far minimum */

/* Adds x to the 64-bit counter at p[0] (low), p[1] (high). */
inline void nf_add64(__global uint *p, ulong x) {
    uint lo = (uint)x, hi = (uint)(x >> 32);
    if (lo != 0u) {
        uint old = asym_fetch_add(&p[0], lo);
        if (old + lo < old) {
            hi += 1u;
        }
    }
    if (hi != 0u) {
        asym_fetch_add(&p[1], hi);
    }
}

/* A group's counts (lcounts, kept by its work-item 0: vertices expanded, edges scanned, and
 * in group 0 the iterations that expanded and the buckets opened), added to the search's as
 * the launch ends. */
inline void nf_flush_counts(__global uint *ctl, __local const ulong *lcounts) {
    /* Every work-item of the group calls it. PoCL 3.1 ran the `first` work-item's blocks
     * of nf_body's early returns once per work-item when code without a barrier followed
     * them; with this barrier it keeps them to the one work-item. */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        nf_add64(&ctl[NF_VISITED], lcounts[0]);
        nf_add64(&ctl[NF_RELAXED], lcounts[1]);
        if (get_group_id(0) == 0) {
            ctl[NF_ROUNDS] += (uint)lcounts[2];
            ctl[NF_SPLITS] += (uint)lcounts[3];
        }
    }
}

/* Appends v at the slot *len hands out, or flags the overrun. */
inline void nf_append(__global uint *list, __global uint *len, uint cap, uint v,
                      __global uint *ctl) {
    uint at = asym_fetch_add(len, 1u);
    if (at < cap) {
        list[at] = v;
    } else {
        asym_store_relaxed(&ctl[NF_ERROR], 1u);
    }
}

/* Files v at distance d (at or above the bucket's limit) into this phase's far pile, once per
 * phase (fstamp), taking part in the group's far minimum. */
inline void nf_file_far(uint v, uint d, uint phase, __global uint *fstamp, __global uint *far,
                        __global uint *far_len, uint cap, __global uint *ctl,
                        __local uint *lfar_min) {
    atomic_min(lfar_min, d);
    if (asym_exchange_relaxed(&fstamp[v], phase) != phase) {
        nf_append(far, far_len, cap, v, ctl);
    }
}

/* Files v at distance d: into the next near list if below `limit` (once per iteration: the
 * stamp), and then also into the group's local queue while it has room (`keep`: expansions,
 * not splits), else into this phase's far pile (once per phase: fstamp), taking part in the
 * group's far minimum. */
inline void nf_file(uint v, uint d, uint limit, uint iter, uint phase, __global uint *stamp,
                    __global uint *fstamp, __global uint *near_out, __global uint *near_len,
                    __global uint *far, __global uint *far_len, uint cap, __global uint *ctl,
                    __local uint *lfar_min, bool keep, __local uint *lq, __local uint *lcount) {
    if (d < limit) {
        if (asym_exchange_relaxed(&stamp[v], iter) != iter) {
            nf_append(near_out, near_len, cap, v, ctl);
            if (keep) {
                uint slot = atomic_inc(lcount);
                if (slot < (uint)WG) {
                    lq[slot] = v;
                }
            }
        }
    } else {
        nf_file_far(v, d, phase, fstamp, far, far_len, cap, ctl, lfar_min);
    }
}

__kernel void nf_clear(__global uint *words, uint n, uint value) {
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        words[i] = value;
    }
}

/* One iteration (see above); every work-item of the launch calls it with the same `iter`.
 * The local arrays are the caller's (OpenCL C 1.2 declares local memory in kernels only).
 * Returns whether the search is over (done or yielded: the state it wrote for the next
 * iteration says which), the same for every work-item. */
/* NF_NONE (from the host): a work-item holding no vertex. A group goes on with local rounds
 * only while it has scanned at most NF_LOCAL_EDGES edges in the iteration (from the host: a
 * multiple of WG). */

/* The scan width of a batch of n vertices: the smallest power of two ≥ n (n ≤ WG), at least
 * 1. A near list spread over every group gives each a few vertices, and a scan over all WG
 * slots would spend most of its barriers on zeros. */
inline uint nf_width(uint n) {
    uint w = 1u;
    while (w < n) {
        w <<= 1;
    }
    return w;
}

/* The edges of a batch: each work-item's vertex `u` (NF_NONE: none) unless it was expanded
 * with its current distance already (`expd`), its first edge in lstart, its distance in
 * ldist, the scan of the degrees in lscan; counts the vertices in lsums[1] and the edges in
 * lsums[2]; returns the edges. Every work-item of the group calls it. */
inline uint nf_batch_edges(uint u, uint width, __global const uint *offsets,
                           __global uint *dist, __global uint *expd, __local uint *lstart,
                           __local uint *ldist, __local uint *lscan, __local uint *lsums) {
    uint lid = get_local_id(0);
    uint deg = 0u, start = 0u, du = 0u;
    if (u != NF_NONE) {
        uint first = offsets[u], end = offsets[u + 1u];
        du = asym_load_relaxed(&dist[u]);
        if (asym_load_relaxed(&expd[u]) != du) {
            asym_store_relaxed(&expd[u], du);
            start = first;
            deg = end - first;
            atomic_inc(&lsums[1]);
        }
    }
    lstart[lid] = start;
    ldist[lid] = du;
    lscan[lid] = deg;
    uint total = sssp_scan_n(lscan, lid, width);
    if (lid == 0) {
        lsums[2] += total;
    }
    return total;
}

/* Relaxes edge e of a batch (nf_batch_edges): the target in *v, its distance through the
 * edge in *nd; whether that lowered the target. */
inline bool nf_relax_edge(uint e, uint width, __local const uint *lscan,
                          __local const uint *lstart, __local const uint *ldist,
                          __global const uint *targets, __global const uint *weights,
                          __global uint *dist, uint *v, uint *nd) {
    uint lo;
    uint edge = sssp_edge(lscan, lstart, e, width, &lo);
    *v = targets[edge];
    *nd = (uint)min((ulong)ldist[lo] + (ulong)weights[edge], (ulong)SSSP_LIMIT);
    return *nd < asym_fetch_min_relaxed(&dist[*v], *nd);
}

/* Expands the vertices this group's work-items hold (`u`; NF_NONE: none; only the first
 * `width` work-items hold any), WG edges at a time, skipping a vertex already expanded with
 * its current distance (`expd` holds the distance each vertex was last expanded with: a plain
 * store, so two work-items racing may both expand it, which only repeats work). Lowered near
 * vertices go to the next near list and, while it has room, the group's local queue. Every
 * work-item of the group calls it; it ends with a barrier.
 *
 * Each step of the chain from a near-list entry to an appended vertex is a global-memory
 * round trip, and an iteration lasts as long as its slowest group's chain, so the chain is
 * kept short: the vertex's edge range is loaded beside its distance (not after the `expd`
 * test), and an edge's atomic minimum is not preceded by a plain load of the target's
 * distance (that pre-check saves atomics where most relaxations fail, as on Kronecker
 * frontiers, but costs a round trip on every edge of a road-like graph's short iterations). */
inline void nf_expand_batch(uint u, uint width, __global const uint *offsets,
                            __global const uint *targets, __global const uint *weights,
                            __global uint *dist, __global uint *stamp, __global uint *fstamp,
                            __global uint *expd, __global uint *near_out, __global uint *out_len,
                            __global uint *far, __global uint *far_len, uint cap,
                            __global uint *ctl, uint limit, uint iter, uint phase, bool keep,
                            __local uint *lstart, __local uint *ldist, __local uint *lscan,
                            __local uint *lsums, __local uint *lq) {
    uint lid = get_local_id(0);
    uint total = nf_batch_edges(u, width, offsets, dist, expd, lstart, ldist, lscan, lsums);
    for (uint e = lid; e < total; e += WG) {
        uint v, nd;
        if (nf_relax_edge(e, width, lscan, lstart, ldist, targets, weights, dist, &v, &nd)) {
            nf_file(v, nd, limit, iter, phase, stamp, fstamp, near_out, out_len, far, far_len, cap,
                    ctl, &lsums[0], keep, lq, &lsums[3]);
        }
    }
    /* The next batch overwrites the local arrays. */
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Local rounds: the group goes on with the near vertices it lowered itself (kept in lq), up
 * to `local_rounds` hops deeper before the iteration ends. They are in the next near list
 * too, where `expd` skips them: a road-like graph's iterations are its hop depth, and a hop
 * here costs the group a few barriers, not a grid-wide step. Only while the group has
 * scanned few edges this iteration (NF_LOCAL_EDGES): a group with heavy vertices going on
 * alone would hold every other at the barrier (a Kronecker graph's hub source), and more
 * hops per iteration re-expand more vertices (docs/decisions.md). */
inline void nf_local_rounds(uint local_rounds, __global const uint *offsets,
                            __global const uint *targets, __global const uint *weights,
                            __global uint *dist, __global uint *stamp, __global uint *fstamp,
                            __global uint *expd, __global uint *near_out, __global uint *out_len,
                            __global uint *far, __global uint *far_slot, uint cap,
                            __global uint *ctl, uint limit, uint iter, uint phase,
                            __local uint *lstart, __local uint *ldist, __local uint *lscan,
                            __local uint *lsums, __local uint *lq) {
    __local uint *lrelaxed = &lsums[2], *lcount = &lsums[3];
    uint lid = get_local_id(0);
    for (uint r = 0u; r < local_rounds; r++) {
        barrier(CLK_LOCAL_MEM_FENCE);
        /* Uniform: read after the barrier. */
        uint n = (*lrelaxed <= NF_LOCAL_EDGES) ? min(*lcount, (uint)WG) : 0u;
        if (n == 0u) {
            break;
        }
        uint u = (lid < n) ? lq[lid] : NF_NONE;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            *lcount = 0u; /* seen by every work-item at the batch's first barrier */
        }
        nf_expand_batch(u, nf_width(n), offsets, targets, weights, dist, stamp, fstamp, expd,
                        near_out, out_len, far, far_slot, cap, ctl, limit, iter, phase, true,
                        lstart, ldist, lscan, lsums, lq);
    }
}

inline bool nf_body(__global const uint *offsets, __global const uint *targets,
                    __global const uint *weights, __global uint *dist, __global uint *stamp,
                    __global uint *fstamp, __global uint *near0, __global uint *near1,
                    __global uint *far0, __global uint *far1, __global uint *ctl,
                    __global uint *expd, uint delta, uint cap, uint yield_below,
                    uint local_rounds, uint iter, __local uint *lstart, __local uint *ldist,
                    __local uint *lscan, __local uint *lsums, __local uint *lq,
                    __local ulong *lcounts) {
    __local uint *lfar_min = &lsums[0], *lvisited = &lsums[1], *lrelaxed = &lsums[2];
    __local uint *lcount = &lsums[3];
    uint lid = get_local_id(0);
    bool first = get_global_id(0) == 0;
    __global uint *st = ctl + NF_STATE + (iter & 1u) * NF_SLOT;
    __global uint *nt = ctl + NF_STATE + ((iter + 1u) & 1u) * NF_SLOT;
    /* Volatile loads for every word another work-group wrote: in nf_run that was during this
     * launch (before a grid barrier), and a plain load could hit a stale line of this compute
     * unit's non-coherent cache. */
    uint len = asym_load_relaxed(&ctl[NF_NLEN + iter % 3u]);
    uint limit = asym_load_relaxed(&st[NF_LIMIT]);
    uint phase = asym_load_relaxed(&st[NF_PHASE]);
    uint done = asym_load_relaxed(&st[NF_DONE]);
    uint fresh = asym_load_relaxed(&st[NF_FRESH]);
    /* All three far lengths, in the same round trip as the words above (the phase picks
     * one). */
    uint far0_len = asym_load_relaxed(&ctl[NF_FAR]);
    uint far1_len = asym_load_relaxed(&ctl[NF_FAR + NF_SLOT]);
    uint far2_len = asym_load_relaxed(&ctl[NF_FAR + 2u * NF_SLOT]);
    __global uint *fs = ctl + NF_FAR + (phase % 3u) * NF_SLOT;
    __global uint *near_out = (iter & 1u) ? near0 : near1;
    __global uint *out_len = &ctl[NF_NLEN + (iter + 1u) % 3u];
    if (first) {
        /* Read by nobody in this launch: the near length of iteration i - 1 (now i + 2's). */
        ctl[NF_NLEN + (iter + 2u) % 3u] = 0u;
    }
    uint far_len = (phase % 3u == 0u) ? far0_len : (phase % 3u == 1u) ? far1_len : far2_len;
    if (done != 0u || (len == 0u && far_len == 0u)) {
        if (first) {
            nt[NF_LIMIT] = limit;
            nt[NF_PHASE] = phase;
            nt[NF_DONE] = (done != 0u) ? done : 1u;
        }
        return true; /* uniform: every work-item read the same words */
    }
    if (len != 0u && fresh == 1u && len < yield_below) {
        /* A light bucket just opened: hand the search back to the host (cooperative
         * delta-stepping), the near list of this iteration and this phase's far pile intact. */
        if (first) {
            nt[NF_LIMIT] = limit;
            nt[NF_PHASE] = phase;
            nt[NF_DONE] = 2u;
            ctl[NF_YIELD_LEN] = len;
            ctl[NF_YIELD_ITER] = iter;
        }
        return true;
    }
    if (lid == 0) {
        *lfar_min = 0xffffffffu;
        *lvisited = 0u;
        *lrelaxed = 0u;
        *lcount = 0u;
    }
    if (len == 0u) {
        /* Open the next bucket: split the far pile of this phase. */
        uint old = limit;
        ulong lowest = asym_load_relaxed(&fs[1]);
        ulong next = max((ulong)old + delta, (lowest / delta + 1ul) * delta);
        uint new_limit = (uint)min(next, (ulong)0xffffffffu);
        uint new_phase = phase + 1u;
        __global uint *from = (phase & 1u) ? far1 : far0;
        __global uint *to = (phase & 1u) ? far0 : far1;
        __global uint *ns = ctl + NF_FAR + (new_phase % 3u) * NF_SLOT;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint i = get_global_id(0); i < far_len; i += get_global_size(0)) {
            uint v = asym_load_relaxed(&from[i]);
            uint d = asym_load_relaxed(&dist[v]);
            if (d < old) {
                continue; /* dropped below the old limit since it was filed: was near */
            }
            nf_file(v, d, new_limit, iter, new_phase, stamp, fstamp, near_out, out_len, to, &ns[0],
                    cap, ctl, lfar_min, false, lq, lcount);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0 && *lfar_min != 0xffffffffu) {
            asym_fetch_min_relaxed(&ns[1], *lfar_min);
        }
        if (first) {
            nt[NF_LIMIT] = new_limit;
            nt[NF_PHASE] = new_phase;
            nt[NF_DONE] = 0u;
            nt[NF_FRESH] = (fresh == 2u) ? 0u : 1u;
            lcounts[3] += 1ul;
            /* The slot the split after this one fills (last read by the split before). */
            __global uint *later = ctl + NF_FAR + ((phase + 2u) % 3u) * NF_SLOT;
            later[0] = 0u;
            later[1] = 0xffffffffu;
        }
        return false;
    }
    if (first) {
        nt[NF_LIMIT] = limit;
        nt[NF_PHASE] = phase;
        nt[NF_DONE] = 0u;
        nt[NF_FRESH] = 0u;
        lcounts[2] += 1ul;
    }
    __global uint *near_in = (iter & 1u) ? near1 : near0;
    __global uint *far = (phase & 1u) ? far1 : far0;
    /* Short lists are spread over every group (a few vertices each) rather than packed into
     * the first groups WG at a time: an iteration's time is its slowest group's chain of
     * dependent memory accesses, one chain per round of WG edges. */
    uint groups = (uint)get_num_groups(0);
    uint per = min((uint)WG, (len + groups - 1u) / groups);
    uint stride = groups * per;
    uint width = nf_width(per);
    for (uint base = get_group_id(0) * per; base < len; base += stride) {
        uint i = base + lid;
        uint u = (lid < per && i < len) ? asym_load_relaxed(&near_in[i]) : NF_NONE;
        nf_expand_batch(u, width, offsets, targets, weights, dist, stamp, fstamp, expd, near_out, out_len,
                        far, &fs[0], cap, ctl, limit, iter, phase, local_rounds > 0u, lstart,
                        ldist, lscan, lsums, lq);
    }
    nf_local_rounds(local_rounds, offsets, targets, weights, dist, stamp, fstamp, expd, near_out,
                    out_len, far, &fs[0], cap, ctl, limit, iter, phase, lstart, ldist, lscan,
                    lsums, lq);
    if (lid == 0) {
        /* The counters stay in the group until the launch ends (nf_flush_counts): two
         * dependent atomics per iteration would sit on every iteration's critical path. */
        lcounts[0] += *lvisited;
        lcounts[1] += *lrelaxed;
        if (*lfar_min != 0xffffffffu) {
            asym_fetch_min_relaxed(&fs[1], *lfar_min);
        }
    }
    return false;
}

__kernel void nf_step(__global const uint *offsets, __global const uint *targets,
                      __global const uint *weights, __global uint *dist, __global uint *stamp,
                      __global uint *fstamp, __global uint *near0, __global uint *near1,
                      __global uint *far0, __global uint *far1, __global uint *ctl,
                      __global uint *expd, uint delta, uint cap, uint yield_below,
                      uint local_rounds, uint iter) {
    __local uint lstart[WG], ldist[WG], lscan[WG], lsums[4], lq[WG];
    __local ulong lcounts[4];
    if (get_local_id(0) == 0) {
        for (uint c = 0u; c < 4u; c++) {
            lcounts[c] = 0ul;
        }
    }
    nf_body(offsets, targets, weights, dist, stamp, fstamp, near0, near1, far0, far1, ctl, expd,
            delta, cap, yield_below, local_rounds, iter, lstart, ldist, lscan, lsums, lq,
            lcounts);
    nf_flush_counts(ctl, lcounts);
}

/* ---- The same iterations in one launch (GPUs: DeviceSssp::delta_stepping's resident mode) ----
 *
 * A launch boundary per iteration costs tens of microseconds on a GPU, more than a road-like
 * graph's iteration, and such a graph needs thousands. nf_run runs `count` iterations in one
 * launch of one work-group per compute unit and puts a grid barrier (asym_grid_barrier,
 * common.cl, where its argument is written down) where the launch boundary was. Where the
 * groups are not all resident a waiting group gives up, sets NF_ABORT, and every group leaves
 * at its next barrier; the host then runs the search again one launch per iteration. The
 * barrier's counter is never reset within a stint: barrier k of a launch is passed once it
 * reaches bar_base + (k + 1) * G, bar_base (an argument) being its value when the launch
 * starts, which the host knows (G times the barriers passed before, mod 2^32). Against a
 * counter reset by the last to arrive, this saves that group's reset and its release of a
 * second word, two round trips on every iteration's critical path. */

/* From the host: NF_BAR_COUNT (the grid barrier's counter), NF_ABORT (its give-up flag),
 * NF_RAN (iterations the last nf_run completed). */

/* Whether every group arrived (false: a group gave up waiting; leave). */
inline bool nf_grid_barrier(__global uint *ctl, uint target, __local uint *lflag) {
    return asym_grid_barrier(&ctl[NF_BAR_COUNT], &ctl[NF_ABORT], target, lflag);
}

__kernel void nf_run(__global const uint *offsets, __global const uint *targets,
                     __global const uint *weights, __global uint *dist, __global uint *stamp,
                     __global uint *fstamp, __global uint *near0, __global uint *near1,
                     __global uint *far0, __global uint *far1, __global uint *ctl,
                     __global uint *expd, uint delta, uint cap, uint yield_below,
                     uint local_rounds, uint iter, uint count, uint bar_base) {
    __local uint lstart[WG], ldist[WG], lscan[WG], lsums[4], lq[WG], lflag;
    __local ulong lcounts[4];
    if (get_local_id(0) == 0) {
        for (uint c = 0u; c < 4u; c++) {
            lcounts[c] = 0ul;
        }
    }
    uint target = bar_base;
    uint ran = 0u;
    for (uint k = 0u; k < count; k++) {
        /* An iteration that finds the search over leaves at once, every group alike (they
         * all read the words the iteration before wrote), with no barrier after it: the
         * host reads the state it wrote for the iteration after (RAN counts it). */
        if (nf_body(offsets, targets, weights, dist, stamp, fstamp, near0, near1, far0, far1,
                    ctl, expd, delta, cap, yield_below, local_rounds, iter + k, lstart, ldist,
                    lscan, lsums, lq, lcounts)) {
            ran = k + 1u;
            break;
        }
        target += (uint)get_num_groups(0);
        if (!nf_grid_barrier(ctl, target, &lflag)) {
            break;
        }
        ran = k + 1u;
    }
    if (get_global_id(0) == 0) {
        ctl[NF_RAN] = ran;
    }
    nf_flush_counts(ctl, lcounts);
}
