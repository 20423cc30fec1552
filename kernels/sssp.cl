/* asym SSSP: one frontier expansion of the label-correcting search (examples/src/sssp).
 *
 * Algorithm. Every vertex of the frontier that is not stale has every edge relaxed
 * (load-balanced over the work-group, see sssp_expand_batch): new = min(dist[u] + w, LIMIT),
 * atomic minimum into dist[v]; when that lowered dist[v], an exchange of stamp[v] with this
 * iteration's number decides which work-item appends v to `next` (each vertex at most once
 * per iteration), its group taking one block of slots for all it appends at a time
 * (sssp_append). Distances saturate at LIMIT (2^32 - 2): a saturated path never beats a real
 * distance, and the host reports a vertex left at LIMIT as an overflow.
 *
 * The frontier comes in two forms. The whole-frontier search on one device runs
 * `sssp_expand_list` over `next` as it is, iterations enqueued back to back, the lengths in
 * a ring of counter sets that the host reads only every few iterations. The heap-ordered
 * search and device sets need the distance each vertex was queued with: `sssp_pairs` turns
 * `next` into (distance << 32 | vertex) entries, the host reads the counters after each
 * iteration, and `sssp_expand` skips an entry whose key is above the vertex's distance.
 *
 * Over a device set (examples/src/sssp/spread) every member keeps its own dist and expands
 * its slice [first, flen) of one frontier. The primary member's dist is the merged one:
 * `sssp_merge` lowers it to the distances the others found and queues those vertices with
 * the same stamp as `sssp_expand` (so each vertex is queued once per iteration), and
 * `sssp_apply` brings another member's dist down to the merged one before it expands again.
 *
 * Memory ordering. dist, stamp and the counters are only touched by work-items of one launch
 * while it runs (the host reads them between launches), so relaxed atomics suffice: the
 * atomic minimum's result alone says whether this work-item lowered the distance, the
 * exchange's result alone says whether v was already queued this iteration, and the counter's
 * fetch-add gives each group's appended vertices their own block of slots (the group's
 * barriers order its local list before the copy out). The plain pre-check of dist[v] (a
 * volatile load) may read an old value: it only skips work when the value read is already
 * ≤ new, and distances only decrease, so it never skips a needed update; a stale check reads
 * an old stamp or distance at worst, and then expands a vertex the next iteration expands
 * again (never skips one). Launch boundaries order one iteration's launches before the next
 * and before `sssp_pairs` reads dist; a counter word a launch reads is written only by
 * earlier launches (work-groups start at different times).
 */

/* From the host (examples/src/sssp/device.rs, KERNEL_CONSTANTS): SSSP_LIMIT (the largest
 * distance, saturating), the counters' words SSSP_NEXT_LEN, SSSP_VISITED, SSSP_STALE and
 * SSSP_CHUNKS, and SSSP_CHUNK (edges of a hub one group expands). */

/* Inclusive scan (Hillis–Steele) of the first `width` values in lscan (a power of two, at
 * most WG; the work-items past it hold zeros or nothing the caller reads); returns their
 * total. Starts with a barrier, so the caller's stores to local memory are visible; every
 * work-item of the group must call it with the same width. */
inline uint sssp_scan_n(__local uint *lscan, uint lid, uint width) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1u; off < width; off <<= 1) {
        uint add = (lid >= off && lid < width) ? lscan[lid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        lscan[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return lscan[width - 1u];
}

/* The scan of all WG values. */
inline uint sssp_scan(__local uint *lscan, uint lid) {
    return sssp_scan_n(lscan, lid, WG);
}

/* The entry owning edge e of the concatenated edge lists of the first `width` entries: the
 * first j with lscan[j] > e. */
inline uint sssp_owner(__local const uint *lscan, uint e, uint width) {
    uint lo = 0u, hi = width - 1u;
    while (lo < hi) {
        uint mid = (lo + hi) >> 1;
        if (lscan[mid] > e) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

/* sssp_owner searching from entry `from` on (one that owns an earlier edge, or 0): it
 * gallops first, so an edge a few entries past `from` costs a few steps. A work-item's
 * successive edges of a batch lie WG apart, usually a few entries on in a Kronecker
 * frontier's short lists, and on one entry along a hub's. */
inline uint sssp_owner_from(__local const uint *lscan, uint e, uint from, uint width) {
    uint lo = from, hi = from, step = 1u;
    while (hi < width - 1u && lscan[hi] <= e) {
        lo = hi + 1u;
        hi = min(hi + step, width - 1u);
        step <<= 1;
    }
    while (lo < hi) {
        uint mid = (lo + hi) >> 1;
        if (lscan[mid] > e) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

/* Edge e of the batch's concatenated edge lists (lscan: their inclusive scan, lstart: each
 * entry's first edge): its index in the graph, and in *owner the entry it leaves. */
inline uint sssp_edge_at(__local const uint *lscan, __local const uint *lstart, uint e,
                         uint lo, uint *owner) {
    uint before = (lo == 0u) ? 0u : lscan[lo - 1u];
    *owner = lo;
    return lstart[lo] + (e - before);
}

/* sssp_edge_at with the owner searched for over the whole scan of `width` entries. */
inline uint sssp_edge(__local const uint *lscan, __local const uint *lstart, uint e,
                      uint width, uint *owner) {
    return sssp_edge_at(lscan, lstart, e, sssp_owner(lscan, e, width), owner);
}

__kernel void sssp_init(__global uint *dist, __global uint *stamp, uint n, uint source) {
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        dist[i] = (i == source) ? 0u : 0xffffffffu;
        stamp[i] = 0u;
    }
}

/* Relaxes edge `edge` from a vertex at distance du: the atomic minimum into dist[v]; returns
 * whether v is to be queued (this lowered dist[v] and won the stamp exchange, so v is queued
 * once per iteration), with v in *queued. */
inline bool sssp_relax(__global const uint *targets, __global const uint *weights,
                       __global uint *dist, __global uint *stamp, uint iteration, uint edge,
                       uint du, uint *queued) {
    uint v = targets[edge];
    uint nd = (uint)min((ulong)du + (ulong)weights[edge], (ulong)SSSP_LIMIT);
    *queued = v;
    return nd < asym_load_relaxed(&dist[v]) && nd < asym_fetch_min_relaxed(&dist[v], nd) &&
           asym_exchange_relaxed(&stamp[v], iteration) != iteration;
}

/* Appends the vertices the group's work-items queued (v where `push`) to `next` with one
 * fetch-add on the list's length word `len` for the whole group: a fetch-add per vertex made
 * every vertex queued in an iteration take its turn at that one word. Every work-item of the
 * group calls it with the group's other work-items, `round` counting the group's calls.
 * lappend: two lists of WG words and two (count, offset) pairs, one of each per round parity,
 * so two barriers a round suffice: a round's list and count are written after the barrier
 * that ended the copy out of the round before that used them, and work-item 0 clears the
 * other parity's count once every work-item has passed this round's first barrier (so the
 * previous round's copy is done). SSSP_APPEND_INIT clears both counts at a launch's start. */
#define SSSP_APPEND_WORDS (2u * WG + 4u)
#define SSSP_APPEND_INIT(lappend) ((lappend)[2u * WG] = (lappend)[2u * WG + 1u] = 0u)
inline void sssp_append(__global uint *next, __global uint *len, bool push, uint v,
                        __local uint *lappend, uint lid, uint round) {
    const uint p = round & 1u;
    __local uint *list = lappend + p * WG, *count = lappend + 2u * WG, *at = count + 2u;
    if (push) list[atomic_inc(&count[p])] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0u) {
        const uint c = count[p];
        at[p] = c != 0u ? asym_fetch_add(len, c) : 0u;
        count[p ^ 1u] = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < count[p]) next[at[p] + lid] = list[lid];
}

/* A frontier vertex u at distance du with edges [start, start + deg): returns how many of
 * them its group expands. A hub's edges past its first SSSP_CHUNK go to `chunks` instead,
 * SSSP_CHUNK at a time as (vertex, distance, first edge, count), counted in *chunk_count, for
 * sssp_expand_chunks to spread over every group (with chunk_cap 0 nothing is split): one
 * group no longer holds the iteration up while it walks a hub's 10^5 edges. */
inline uint sssp_split_hub(uint u, uint du, uint start, uint deg, __global uint *chunks,
                           uint chunk_cap, __global uint *chunk_count) {
    if (deg <= SSSP_CHUNK || chunk_cap == 0u) return deg;
    const uint rest = deg - SSSP_CHUNK;
    const uint n = (rest + SSSP_CHUNK - 1u) / SSSP_CHUNK;
    const uint at = asym_fetch_add(chunk_count, n);
    const bool fits = at <= chunk_cap && n <= chunk_cap - at;
    for (uint c = 0; c < n && at + c < chunk_cap; ++c) {
        /* A reservation past the list's end (cannot happen: each vertex is queued once per
         * iteration and the list holds edges / SSSP_CHUNK) leaves empty chunks and the batch
         * keeps the whole hub. */
        __global uint *ch = chunks + 4u * (at + c);
        ch[0] = u;
        ch[1] = du;
        ch[2] = start + SSSP_CHUNK * (c + 1u);
        ch[3] = fits ? min(SSSP_CHUNK, rest - SSSP_CHUNK * c) : 0u;
    }
    return fits ? SSSP_CHUNK : deg;
}

/* The scratch of one group's expansion: each entry's first edge, distance and the scan of
 * the edge counts, and sssp_append's lists. */
typedef struct {
    uint start[WG], dist[WG], scan[WG], append[SSSP_APPEND_WORDS];
} SsspBatch;

/* Load balance: a work-group takes WG frontier vertices at a time (work-item lid holds one
 * at distance du whose `deg` edges to expand start at `start`; deg 0 where none), stores each
 * one's edge range in local memory, scans the counts, and then its work-items stride over the
 * concatenated edge lists (each finds its vertex in the scan), so a hub's edges are shared by
 * the whole group instead of serialising one work-item. Every work-item of the group calls
 * it, as many times (sssp_append's barriers); *round counts the group's appends. */
inline void sssp_expand_batch(__global const uint *targets, __global const uint *weights,
                              __global uint *dist, __global uint *stamp, __global uint *next,
                              __global uint *next_len, uint iteration, uint start, uint deg,
                              uint du, __local SsspBatch *b, uint lid, uint *round) {
    b->start[lid] = start;
    b->dist[lid] = du;
    b->scan[lid] = deg;
    const uint total = sssp_scan(b->scan, lid);
    uint lo = 0u; /* the owner of this work-item's last edge (the next one's is not before) */
    for (uint e0 = 0u; e0 < total; e0 += WG) {
        const uint e = e0 + lid;
        uint v = 0u;
        bool push = false;
        if (e < total) {
            lo = sssp_owner_from(b->scan, e, lo, WG);
            const uint edge = sssp_edge_at(b->scan, b->start, e, lo, &lo);
            push = sssp_relax(targets, weights, dist, stamp, iteration, edge, b->dist[lo], &v);
        }
        sssp_append(next, next_len, push, v, b->append, lid, (*round)++);
    }
    /* The next batch overwrites the local arrays. */
    barrier(CLK_LOCAL_MEM_FENCE);
}

/* The frontier as (distance when queued, vertex) entries [first, flen): an entry is stale
 * when its vertex's distance dropped below its key since it was queued. Appends to `next`
 * under counters[SSSP_NEXT_LEN], hub chunks under counters[SSSP_CHUNKS]. The outer loop's
 * trip count is the same for the whole group. */
__kernel void sssp_expand(__global const uint *offsets, __global const uint *targets,
                          __global const uint *weights, __global uint *dist,
                          __global uint *stamp, __global const ulong *frontier, uint first,
                          uint flen, __global uint *next, __global uint *counters,
                          uint iteration, __global uint *chunks, uint chunk_cap) {
    __local SsspBatch b;
    __local uint visited, stale;
    const uint lid = get_local_id(0);
    uint round = 0u;
    if (lid == 0) {
        visited = 0u;
        stale = 0u;
        SSSP_APPEND_INIT(b.append);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint stride = get_num_groups(0) * WG;
    for (uint base = first + get_group_id(0) * WG; base < flen; base += stride) {
        const uint i = base + lid;
        uint deg = 0u, start = 0u, du = 0u;
        if (i < flen) {
            const ulong entry = frontier[i];
            const uint key = (uint)(entry >> 32), u = (uint)entry;
            /* Loaded beside dist[u], not after it: one memory round trip less per batch. */
            const uint s0 = offsets[u], s1 = offsets[u + 1u];
            du = asym_load_relaxed(&dist[u]);
            if (key > du) {
                atomic_inc(&stale);
            } else {
                atomic_inc(&visited);
                start = s0;
                deg = sssp_split_hub(u, du, s0, s1 - s0, chunks, chunk_cap,
                                     &counters[SSSP_CHUNKS]);
            }
        }
        sssp_expand_batch(targets, weights, dist, stamp, next, &counters[SSSP_NEXT_LEN],
                          iteration, start, deg, du, &b, lid, &round);
    }
    if (lid == 0) {
        asym_fetch_add(&counters[SSSP_VISITED], visited);
        asym_fetch_add(&counters[SSSP_STALE], stale);
    }
}

/* The frontier as a list of vertices, for iterations the host enqueues back to back without
 * reading anything between them. The counters' ring holds SSSP_RING_SETS sets of
 * (list length, hub chunks), one per iteration mod 3: this iteration's list length is in
 * counters[in_at] (the set the iteration before appended to) and its chunk count beside it,
 * it appends to counters[out_at] and clears the third set, counters[clear_at] (the previous
 * iteration's, unused from here on: the next iteration appends to it). A word a launch
 * reads is never written by it. A vertex is stale when this iteration already lowered its
 * distance and queued it again (its stamp is this iteration's): the next iteration expands
 * it with the lower distance. Otherwise it is expanded with its current distance, the lowest
 * known. counters[SSSP_ROUNDS] counts the iterations that had vertices. */
__kernel void sssp_expand_list(__global const uint *offsets, __global const uint *targets,
                               __global const uint *weights, __global uint *dist,
                               __global uint *stamp, __global const uint *list,
                               __global uint *next, __global uint *counters, uint iteration,
                               __global uint *chunks, uint chunk_cap, uint in_at, uint out_at,
                               uint clear_at) {
    __local SsspBatch b;
    __local uint visited, stale;
    const uint lid = get_local_id(0);
    const uint flen = counters[in_at];
    uint round = 0u;
    if (lid == 0) {
        visited = 0u;
        stale = 0u;
        SSSP_APPEND_INIT(b.append);
        if (get_group_id(0) == 0u) {
            counters[clear_at] = 0u;
            counters[clear_at + 1u] = 0u;
            if (flen != 0u) counters[SSSP_ROUNDS] += 1u;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint stride = get_num_groups(0) * WG;
    for (uint base = get_group_id(0) * WG; base < flen; base += stride) {
        const uint i = base + lid;
        uint deg = 0u, start = 0u, du = 0u;
        if (i < flen) {
            const uint u = list[i];
            const uint s0 = offsets[u], s1 = offsets[u + 1u];
            du = asym_load_relaxed(&dist[u]);
            if (asym_load_relaxed(&stamp[u]) == iteration) {
                atomic_inc(&stale);
            } else {
                atomic_inc(&visited);
                start = s0;
                deg = sssp_split_hub(u, du, s0, s1 - s0, chunks, chunk_cap,
                                     &counters[in_at + 1u]);
            }
        }
        sssp_expand_batch(targets, weights, dist, stamp, next, &counters[out_at], iteration,
                          start, deg, du, &b, lid, &round);
    }
    if (lid == 0 && flen != 0u) {
        asym_fetch_add(&counters[SSSP_VISITED], visited);
        asym_fetch_add(&counters[SSSP_STALE], stale);
    }
}

/* The hubs' chunks sssp_expand or sssp_expand_list set aside (the launch after it on the
 * in-order queue), counters[count_at] of them: one group per chunk at a time, its
 * work-items striding over the chunk's edges, appending to `next` under counters[len_at]. */
__kernel void sssp_expand_chunks(__global const uint *targets, __global const uint *weights,
                                 __global uint *dist, __global uint *stamp,
                                 __global uint *next, __global uint *counters,
                                 uint iteration, __global const uint *chunks, uint chunk_cap,
                                 uint count_at, uint len_at) {
    __local uint lappend[SSSP_APPEND_WORDS];
    const uint lid = get_local_id(0);
    uint round = 0u;
    if (lid == 0u) SSSP_APPEND_INIT(lappend);
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint count = min(counters[count_at], chunk_cap);
    for (uint c = get_group_id(0); c < count; c += get_num_groups(0)) {
        __global const uint *ch = chunks + 4u * c;
        const uint du = ch[1], from = ch[2], len = ch[3];
        for (uint e0 = 0u; e0 < len; e0 += WG) {
            uint v = 0u;
            const bool push = e0 + lid < len &&
                              sssp_relax(targets, weights, dist, stamp, iteration, from + e0 + lid,
                                         du, &v);
            sssp_append(next, &counters[len_at], push, v, lappend, lid, round++);
        }
    }
}

__kernel void sssp_pairs(__global const uint *next, uint len, __global const uint *dist,
                         __global ulong *frontier) {
    for (uint i = get_global_id(0); i < len; i += get_global_size(0)) {
        uint v = next[i];
        frontier[i] = ((ulong)dist[v] << 32) | (ulong)v;
    }
}

/* The distances other members of a device set lowered, as (distance << 32 | vertex) entries
 * the host merged: each vertex appears at most once, so a plain minimum needs no atomic, and
 * the launch boundary orders it before the next expansion reads dist. */
__kernel void sssp_apply(__global const ulong *updates, uint len, __global uint *dist) {
    for (uint i = get_global_id(0); i < len; i += get_global_size(0)) {
        ulong entry = updates[i];
        uint v = (uint)entry;
        uint d = (uint)(entry >> 32);
        if (d < dist[v]) {
            dist[v] = d;
        }
    }
}

/* The distances other members of a device set lowered in this iteration, (distance << 32 |
 * vertex) entries, merged into the primary's dist after its own sssp_expand: the same atomic
 * minimum and stamp exchange, so a vertex either side lowered is queued once, and the launch
 * boundary orders it before sssp_pairs reads dist. */
__kernel void sssp_merge(__global const ulong *incoming, uint len, __global uint *dist,
                         __global uint *stamp, __global uint *next, __global uint *counters,
                         uint iteration) {
    for (uint i = get_global_id(0); i < len; i += get_global_size(0)) {
        ulong entry = incoming[i];
        uint v = (uint)entry;
        uint d = (uint)(entry >> 32);
        if (d < asym_load_relaxed(&dist[v]) && d < asym_fetch_min_relaxed(&dist[v], d) &&
            asym_exchange_relaxed(&stamp[v], iteration) != iteration) {
            next[asym_fetch_add(&counters[SSSP_NEXT_LEN], 1u)] = v;
        }
    }
}
