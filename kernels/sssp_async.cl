/* Buckets without iterations (DeviceSssp's asynchronous buckets, nf_async): a part of the
 * SSSP program after sssp_near_far.cl, whose batches, filing and grid barrier it shares.
 *
 * nf_run ends every iteration at a grid barrier, and a road-like graph's shortest paths are
 * thousands of hops deep: near-far pays an iteration per hop or two. nf_async keeps the
 * buckets (one open, the far pile split when it empties: two grid barriers a bucket, tens to
 * hundreds a search) and drops the iterations inside one: each group expands the near
 * vertices it lowered itself in its next round (the local queue, WG of them) without waiting
 * for the others, and puts what does not fit into the pool, which every group takes from
 * when its own queue is empty. The bucket is over when NA_PENDING, the near vertices held
 * anywhere (in the pool, the local queues and the rounds running), reaches 0: a vertex is
 * counted before another group can take it (a spill counts it before its slot write, a
 * round adds what it kept in its queue less what it took after the round), so the count
 * cannot reach 0 while a vertex is held (examples/tests/loom_sssp_pool.rs checks the
 * protocol). Within a bucket this is Bellman–Ford with work lists, as near-far's iterations
 * are: exact for any order.
 *
 * The pool: `pool_cap` slots, NF_NONE where empty, more than n vertices plus every group's
 * claims. A writer reserves index `tail` (fetch-add) and moves its vertex into slot
 * index % pool_cap by compare-and-swap from NF_NONE; a group claims up to WG indices below
 * `tail` (compare-and-swap on `head`) and each work-item waits for its slot to fill and
 * takes it back to NF_NONE. Writes and claims pair up per slot, in any order (vertices are
 * anonymous), and a writer finding its slot full waits only for the claim already made on
 * it: a full slot's index was claimed, since fewer than pool_cap indices are unclaimed. A
 * vertex is in the pool at most once: `inq`, exchanged to 1 by its writer and to 0 by its
 * taker before the taker loads its distance, both acq_rel, so a lowering whose work-item
 * found the vertex still queued is seen by the taker. The pool's counters come in two pairs
 * by phase parity: the split into phase p + 1 fills pair (p + 1) & 1, which group 0 reset
 * while phase p's bucket ran on the other.
 *
 * Within a group, queued vertices are read after a work-group barrier and their distances
 * with volatile loads (the atomic minimum that lowered them was performed at the device's
 * L2, as nf_local_rounds relies on). Every wait is bounded (ASYM_GRID_SPIN_LIMIT polls, then
 * NF_ABORT, and every group leaves at its next wait); the host then runs the search by
 * nf_run. */

/* From the host: NA_POOL (head, tail of pair 0, then of pair 1), NA_PENDING. */
#define NA_OVER 0xffffffffu
#define NA_ABORTED 0xfffffffeu

/* Whether a wait of `*polls` polls so far must end: the search was abandoned, or this wait
 * gave up (and abandons it). */
inline bool na_give_up(uint *polls, __global uint *ctl) {
    if (asym_load_relaxed(&ctl[NF_ABORT]) != 0u) {
        return true;
    }
    if (++*polls == ASYM_GRID_SPIN_LIMIT) {
        asym_store_relaxed(&ctl[NF_ABORT], 1u);
        return true;
    }
    return false;
}

/* Puts v into the pool unless it is there already; whether it did. Within a bucket
 * (`count`) it counts v into NA_PENDING first: another group may take it as soon as it is in
 * its slot, and a count added after the round would let the taker's decrement reach 0 while
 * this group still spills (examples/tests/loom_sssp_pool.rs). A split's vertices are taken
 * only after the grid barrier that ends it, so the split counts them once a group. */
inline bool na_spill(uint v, __global uint *pool, uint pool_cap, __global uint *tail,
                     __global uint *inq, __global uint *ctl, bool count) {
    if (asym_exchange(&inq[v], 1u) != 0u) {
        return false;
    }
    if (count) {
        asym_fetch_add(&ctl[NA_PENDING], 1u);
    }
    __global uint *slot = &pool[asym_fetch_add(tail, 1u) % pool_cap];
    uint polls = 0u;
    while (!asym_cas(slot, NF_NONE, v)) {
        if (na_give_up(&polls, ctl)) {
            break;
        }
    }
    return true;
}

/* A group's work-item 0's claim: indices from `head` below `tail` (up to WG), the first in
 * *first; NA_OVER once the bucket is over, NA_ABORTED once the search is abandoned. */
inline uint na_claim(__global uint *pair, __global uint *pending, __global uint *ctl,
                     uint *first) {
    uint polls = 0u;
    for (;;) {
        uint h = asym_load_relaxed(&pair[0]);
        uint t = asym_load_relaxed(&pair[1]);
        if ((int)(t - h) > 0) {
            /* A share of what waits, not WG at a time: a bucket's first vertices spread
             * over every group, as near-far spreads a short near list. */
            uint groups = (uint)get_num_groups(0);
            uint n = min((uint)WG, max(1u, (t - h + groups - 1u) / groups));
            if (asym_cas(&pair[0], h, h + n)) {
                *first = h;
                return n;
            }
        } else if (asym_load_acquire(pending) == 0u) {
            return NA_OVER;
        }
        if (na_give_up(&polls, ctl)) {
            return NA_ABORTED;
        }
    }
}

/* Takes the vertex written for claimed index `index` (NF_NONE if the search was abandoned). */
inline uint na_take(__global uint *pool, uint pool_cap, uint index, __global uint *inq,
                    __global uint *ctl) {
    __global uint *slot = &pool[index % pool_cap];
    uint polls = 0u;
    for (;;) {
        uint v = asym_load_relaxed(slot);
        if (v != NF_NONE && asym_cas(slot, v, NF_NONE)) {
            asym_exchange(&inq[v], 0u);
            return v;
        }
        if (na_give_up(&polls, ctl)) {
            return NF_NONE;
        }
    }
}

/* Expands a batch (nf_expand_batch's edges) filing lowered near vertices into the local queue
 * (lq, count lsums[3]) while it has room, else into the pool (counted as they go); far ones
 * into this phase's far pile. Ends with a barrier. */
inline void na_expand_batch(uint u, uint width, __global const uint *offsets,
                            __global const uint *targets, __global const uint *weights,
                            __global uint *dist, __global uint *fstamp, __global uint *expd,
                            __global uint *far, __global uint *far_len, uint cap,
                            __global uint *pool, uint pool_cap, __global uint *pair,
                            __global uint *inq, __global uint *ctl, uint limit, uint phase,
                            __local uint *lstart, __local uint *ldist, __local uint *lscan,
                            __local uint *lsums, __local uint *lq) {
    uint lid = get_local_id(0);
    uint total = nf_batch_edges(u, width, offsets, dist, expd, lstart, ldist, lscan, lsums);
    for (uint e = lid; e < total; e += WG) {
        uint v, nd;
        if (nf_relax_edge(e, width, lscan, lstart, ldist, targets, weights, dist, &v, &nd)) {
            if (nd >= limit) {
                nf_file_far(v, nd, phase, fstamp, far, far_len, cap, ctl, &lsums[0]);
            } else {
                uint at = atomic_inc(&lsums[3]);
                if (at < (uint)WG) {
                    lq[at] = v;
                } else {
                    na_spill(v, pool, pool_cap, &pair[1], inq, ctl, true);
                }
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* Runs the open bucket's rounds until NA_PENDING reaches 0 (true) or the search is abandoned
 * (false), each round over the group's local queue or, when it is empty, a claim on the
 * pool. Every work-item of the group calls it. lsums: [0] far minimum, [1] vertices and [2]
 * edges of the round, [3] local queue length, [5] claimed, [6] first
 * claimed index. */
inline bool na_bucket(__global const uint *offsets, __global const uint *targets,
                      __global const uint *weights, __global uint *dist, __global uint *fstamp,
                      __global uint *expd, __global uint *far, __global uint *fs, uint cap,
                      __global uint *pool, uint pool_cap, __global uint *pair,
                      __global uint *inq, __global uint *ctl, uint limit, uint phase,
                      __local uint *lstart, __local uint *ldist, __local uint *lscan,
                      __local uint *lsums, __local uint *lq, __local ulong *lcounts) {
    uint lid = get_local_id(0);
    if (lid == 0) {
        lsums[0] = 0xffffffffu;
        lsums[3] = 0u;
    }
    /* No barrier under a condition and no `break` out of this loop: PoCL 3.1 ran blocks in
     * such regions for work-items their condition excluded. The last pass expands nothing. */
    uint claim = 0u;
    while (claim != NA_OVER && claim != NA_ABORTED) {
        barrier(CLK_LOCAL_MEM_FENCE);
        uint n = min(lsums[3], (uint)WG); /* uniform: read after the barrier */
        uint u = (lid < n) ? lq[lid] : NF_NONE;
        if (lid == 0) {
            uint first = 0u;
            lsums[5] = (n == 0u) ? na_claim(pair, &ctl[NA_PENDING], ctl, &first) : 0u;
            lsums[6] = first;
            /* Before the barrier: the batch counts its vertices before its first one. */
            lsums[1] = 0u;
            lsums[2] = 0u;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        claim = lsums[5];
        uint taken = (claim == NA_OVER || claim == NA_ABORTED) ? 0u : claim;
        if (lid < taken) {
            u = na_take(pool, pool_cap, lsums[6] + lid, inq, ctl);
        }
        n += taken; /* one of the two is 0 */
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            lsums[3] = 0u; /* read above by every work-item; counted into after a barrier */
        }
        na_expand_batch(u, nf_width(n), offsets, targets, weights, dist, fstamp, expd, far,
                        &fs[0], cap, pool, pool_cap, pair, inq, ctl, limit, phase, lstart,
                        ldist, lscan, lsums, lq);
        if (lid == 0 && n != 0u) {
            /* Kept in the local queue less taken (mod 2^32: adds a negative); the spilled
             * ones were counted as they went. */
            asym_fetch_add(&ctl[NA_PENDING], min(lsums[3], (uint)WG) - n);
            lcounts[0] += lsums[1];
            lcounts[1] += lsums[2];
            lcounts[2] += 1ul;
        }
    }
    if (lid == 0 && lsums[0] != 0xffffffffu) {
        asym_fetch_min_relaxed(&fs[1], lsums[0]);
    }
    return claim == NA_OVER;
}

/* Splits phase `phase`'s far pile (`from`, `far_len` long) for the bucket below `limit`:
 * vertices now below it into the pool (`pair`, counted into NA_PENDING), those still above
 * into `to` under the next phase (slot `ns`), those below `old` dropped (they were near). */
inline void na_split(uint far_len, uint old, uint limit, uint phase, __global uint *from,
                     __global uint *to, __global uint *ns, __global uint *dist,
                     __global uint *fstamp, uint cap, __global uint *pool, uint pool_cap,
                     __global uint *pair, __global uint *inq, __global uint *ctl,
                     __local uint *lsums) {
    uint lid = get_local_id(0);
    if (lid == 0) {
        lsums[0] = 0xffffffffu;
        lsums[4] = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_global_id(0); i < far_len; i += get_global_size(0)) {
        uint v = asym_load_relaxed(&from[i]);
        uint d = asym_load_relaxed(&dist[v]);
        if (d < old) {
            continue;
        }
        if (d >= limit) {
            nf_file_far(v, d, phase + 1u, fstamp, to, &ns[0], cap, ctl, &lsums[0]);
        } else if (na_spill(v, pool, pool_cap, &pair[1], inq, ctl, false)) {
            atomic_inc(&lsums[4]);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        if (lsums[0] != 0xffffffffu) {
            asym_fetch_min_relaxed(&ns[1], lsums[0]);
        }
        if (lsums[4] != 0u) {
            asym_fetch_add(&ctl[NA_PENDING], lsums[4]);
        }
    }
}

/* Up to `count` buckets from the state in NF_STATE's first slot (limit, phase; the far pile
 * of that phase waiting to be split), one launch of one group per compute unit: a bucket's
 * rounds, a grid barrier, the split, a grid barrier. Writes the state it stopped at, NF_DONE
 * 1 when the far pile it would split is empty, and in NF_RAN the grid barriers it passed. */
__kernel void nf_async(__global const uint *offsets, __global const uint *targets,
                       __global const uint *weights, __global uint *dist, __global uint *fstamp,
                       __global uint *far0, __global uint *far1, __global uint *ctl,
                       __global uint *expd, __global uint *pool, __global uint *inq, uint delta,
                       uint cap, uint pool_cap, uint count, uint bar_base) {
    __local uint lstart[WG], ldist[WG], lscan[WG], lsums[8], lq[WG], lflag;
    __local ulong lcounts[4];
    bool first = get_global_id(0) == 0;
    if (get_local_id(0) == 0) {
        for (uint c = 0u; c < 4u; c++) {
            lcounts[c] = 0ul;
        }
    }
    __global uint *st = ctl + NF_STATE;
    uint limit = st[NF_LIMIT], phase = st[NF_PHASE];
    uint target = bar_base, passed = 0u, groups = (uint)get_num_groups(0);
    bool done = false;
    for (uint k = 0u; k < count; k++) {
        __global uint *fs = ctl + NF_FAR + (phase % 3u) * NF_SLOT;
        __global uint *next_pair = ctl + NA_POOL + ((phase + 1u) & 1u) * 2u;
        if (first) {
            /* Last used by the bucket before this one, which every group left. */
            next_pair[0] = 0u;
            next_pair[1] = 0u;
        }
        if (!na_bucket(offsets, targets, weights, dist, fstamp, expd, (phase & 1u) ? far1 : far0,
                       fs, cap, pool, pool_cap, ctl + NA_POOL + (phase & 1u) * 2u, inq, ctl,
                       limit, phase, lstart, ldist, lscan, lsums, lq, lcounts)) {
            break;
        }
        target += groups;
        if (!nf_grid_barrier(ctl, target, &lflag)) {
            break;
        }
        passed++;
        uint far_len = asym_load_relaxed(&fs[0]);
        if (far_len == 0u) {
            done = true; /* the bucket emptied and nothing waits: every group alike */
            break;
        }
        ulong lowest = asym_load_relaxed(&fs[1]);
        ulong next = max((ulong)limit + delta, (lowest / delta + 1ul) * delta);
        uint new_limit = (uint)min(next, (ulong)0xffffffffu);
        na_split(far_len, limit, new_limit, phase, (phase & 1u) ? far1 : far0,
                 (phase & 1u) ? far0 : far1, ctl + NF_FAR + ((phase + 1u) % 3u) * NF_SLOT, dist,
                 fstamp, cap, pool, pool_cap, next_pair, inq, ctl, lsums);
        if (first) {
            /* The slot the split after this one fills (last read by the split before). */
            __global uint *later = ctl + NF_FAR + ((phase + 2u) % 3u) * NF_SLOT;
            later[0] = 0u;
            later[1] = 0xffffffffu;
            lcounts[3] += 1ul;
        }
        target += groups;
        if (!nf_grid_barrier(ctl, target, &lflag)) {
            break;
        }
        passed++;
        limit = new_limit;
        phase += 1u;
    }
    if (first) {
        st[NF_LIMIT] = limit;
        st[NF_PHASE] = phase;
        st[NF_DONE] = done ? 1u : 0u;
        ctl[NF_RAN] = passed;
    }
    /* Every group's rounds count, not only group 0's as in nf_flush_counts. */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        nf_add64(&ctl[NF_VISITED], lcounts[0]);
        nf_add64(&ctl[NF_RELAXED], lcounts[1]);
        asym_fetch_add(&ctl[NF_ROUNDS], (uint)lcounts[2]);
        if (get_group_id(0) == 0) {
            ctl[NF_SPLITS] += (uint)lcounts[3];
        }
    }
}
