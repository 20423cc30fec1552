/* asym SSSP: one frontier expansion of the label-correcting search (structures/src/apps/sssp).
 *
 * Algorithm. The frontier is a list of (distance when queued << 32 | vertex) entries. Each
 * entry that is not stale (its distance is above the vertex's current one: the vertex was
 * queued again since) has every edge relaxed (load-balanced over the work-group, see
 * sssp_expand): new = min(dist[u] + w, LIMIT), atomic minimum into dist[v]; when that lowered
 * dist[v], an exchange of stamp[v] with this iteration's number decides which work-item
 * appends v to `next` (each vertex at most once per iteration). `sssp_pairs` then turns
 * `next` into the following frontier with each vertex's final distance of the iteration.
 * Distances saturate at LIMIT (2^32 - 2): a saturated path never beats a real distance, and
 * the host reports a vertex left at LIMIT as an overflow.
 *
 * Over a device set (structures/src/apps/sssp/spread.rs) every member keeps its own dist and
 * expands its slice [first, flen) of one frontier. The primary member's dist is the merged
 * one: `sssp_merge` lowers it to the distances the others found and queues those vertices
 * with the same stamp as `sssp_expand` (so each vertex is queued once per iteration), and
 * `sssp_apply` brings another member's dist down to the merged one before it expands again.
 *
 * Memory ordering. dist, stamp and the counters are only touched by work-items of one launch
 * while it runs (the host reads them between launches), so relaxed atomics suffice: the
 * atomic minimum's result alone says whether this work-item lowered the distance, the
 * exchange's result alone says whether v was already queued this iteration, and the counter's
 * fetch-add gives each appended vertex its own slot. The plain pre-check of dist[v] (a
 * volatile load) may read an old value: it only skips work when the value read is already
 * ≤ new, and distances only decrease, so it never skips a needed update. The launch boundary
 * orders everything before `sssp_pairs` reads dist.
 */

#define SSSP_LIMIT 0xfffffffeu
#define SSSP_NEXT_LEN 0
#define SSSP_VISITED 1
#define SSSP_STALE 2

__kernel void sssp_init(__global uint *dist, __global uint *stamp, uint n, uint source) {
    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) {
        dist[i] = (i == source) ? 0u : 0xffffffffu;
        stamp[i] = 0u;
    }
}

/* Load balance: a work-group takes WG entries at a time, stores each vertex's edge range in
 * local memory, scans the degrees, and then its work-items stride over the concatenated edge
 * lists (each finds its vertex by binary search in the scan), so a hub's edges are shared by
 * the whole group instead of serialising one work-item. Every barrier is reached by all
 * work-items: the outer loop's trip count is the same for the whole group. */
__kernel void sssp_expand(__global const uint *offsets, __global const uint *targets,
                          __global const uint *weights, __global uint *dist,
                          __global uint *stamp, __global const ulong *frontier, uint first,
                          uint flen, __global uint *next, __global uint *counters,
                          uint iteration) {
    __local uint lstart[WG], ldist[WG], lscan[WG];
    __local uint visited, stale;
    uint lid = get_local_id(0);
    if (lid == 0) {
        visited = 0u;
        stale = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint stride = get_num_groups(0) * WG;
    for (uint base = first + get_group_id(0) * WG; base < flen; base += stride) {
        uint i = base + lid;
        uint deg = 0u, start = 0u, du = 0u;
        if (i < flen) {
            ulong entry = frontier[i];
            uint key = (uint)(entry >> 32);
            uint u = (uint)entry;
            du = asym_load_relaxed(&dist[u]);
            if (key > du) {
                atomic_inc(&stale);
            } else {
                atomic_inc(&visited);
                start = offsets[u];
                deg = offsets[u + 1] - start;
            }
        }
        lstart[lid] = start;
        ldist[lid] = du;
        lscan[lid] = deg;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* Inclusive scan of the degrees (Hillis–Steele). */
        for (uint off = 1u; off < WG; off <<= 1) {
            uint add = (lid >= off) ? lscan[lid - off] : 0u;
            barrier(CLK_LOCAL_MEM_FENCE);
            lscan[lid] += add;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        uint total = lscan[WG - 1];
        for (uint e = lid; e < total; e += WG) {
            /* The entry owning edge e: the first j with lscan[j] > e. */
            uint lo = 0u, hi = WG - 1u;
            while (lo < hi) {
                uint mid = (lo + hi) >> 1;
                if (lscan[mid] > e) {
                    hi = mid;
                } else {
                    lo = mid + 1u;
                }
            }
            uint before = (lo == 0u) ? 0u : lscan[lo - 1u];
            uint edge = lstart[lo] + (e - before);
            uint v = targets[edge];
            uint nd = (uint)min((ulong)ldist[lo] + (ulong)weights[edge], (ulong)SSSP_LIMIT);
            if (nd < asym_load_relaxed(&dist[v]) &&
                nd < asym_fetch_min_relaxed(&dist[v], nd) &&
                asym_exchange_relaxed(&stamp[v], iteration) != iteration) {
                next[asym_fetch_add(&counters[SSSP_NEXT_LEN], 1u)] = v;
            }
        }
        /* The next round overwrites the local arrays. */
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        asym_fetch_add(&counters[SSSP_VISITED], visited);
        asym_fetch_add(&counters[SSSP_STALE], stale);
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
