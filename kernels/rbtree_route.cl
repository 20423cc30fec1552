/* asym red-black tree, routed searches: the part of rbtree.cl's program that groups a batch
 * of queries by subtree before the search walks them (the RB_* constants and KEY_MAP as there).
 *
 * Routed searches (SearchOrder::Routed in structures/src/rbtree/device.rs): queries in arrival
 * order send each work-item down its own path, and beyond the L2 nearly every level below the
 * top twenty is a scattered read. rb_route_top copies the tree's top `levels` levels into an
 * implicit array; rb_route walks each query down it in local memory and names the subtree it
 * enters there (in-order of the subtrees); rb_route_offsets turns the per-subtree counts into
 * starts and rb_route_place lists the queries' keys subtree by subtree (a counting sort; the
 * order within a subtree is whatever the atomics give); the search walks them in that order,
 * answering in that order, and rb_route_answer gathers each answer to its query's slot.
 * A warp walks one subtree, its top levels as one broadcast load, and the subtree's nodes
 * are read from memory about once for all its queries. Any order gives the same answers.
 *
 * Memory ordering: these kernels read the tree like the searches (the host changes it only
 * between launches) and write only the routing scratch; the launches of one search run in
 * turn on the in-order queue, so each reads what the one before it wrote.
 */

/* The tree's top `levels` (1..RB_ROUTE_MAX_LEVELS) levels as an implicit array: top[t] for
 * t in 1..2^levels is the key of the node whose path from the root is t's bits below the
 * leading one (0 left, 1 right), the children of t at 2t and 2t + 1; INT_MAX where the path
 * meets a NIL link first (every query turns left there). top[0] is unused. */
__kernel void rb_route_top(__global const ulong *ctl, __global const uint *heap,
                           __global const uint *sb_class, uint header, uint levels,
                           __global int *top) {
    const uint t = get_global_id(0);
    if (t == 0u || t >= (1u << levels)) return;
    const uint depth = 31u - clz(t);
    uint x = heap[header + RB_ROOT];
    for (uint d = depth; d > 0u && x != RB_NIL; --d) {
        x = heap[x + (((t >> (d - 1u)) & 1u) ? RB_RIGHT : RB_LEFT)];
    }
    top[t] = x == RB_NIL ? INT_MAX : (int)heap[x + RB_KEY];
}

/* The subtree of the `levels`-th level each query enters, walked in local memory over the
 * top array: in-order of the subtrees, a NIL link on the way counting as a left turn from
 * there on. A work-group takes `tile` queries, counts them per subtree in local memory and
 * adds its counts to `counts` (zero on entry; rb_route_offsets zeroes it again): one global
 * atomic per subtree a tile meets rather than one per query. */
__kernel void rb_route(__global const int *keys, uint n, uint levels, uint tile,
                       __global const int *top, __global uint *route,
                       __global uint *counts, __local int *ltop, __local uint *hist) {
    const uint lid = get_local_id(0), wg = get_local_size(0);
    levels = min(levels, RB_ROUTE_MAX_LEVELS);
    const uint buckets = 1u << levels;
    for (uint t = lid; t < buckets; t += wg) {
        ltop[t] = top[t];
        hist[t] = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint first = get_group_id(0) * tile, end = min(first + tile, n);
    for (uint i = first + lid; i < end; i += wg) {
        const int key = ASYM_ORDERED(keys[i]);
        uint t = 1u;
        for (uint d = 0; d < levels; ++d) t = 2u * t + (key > ltop[t] ? 1u : 0u);
        const uint b = t - buckets;
        route[i] = b;
        atomic_inc(&hist[b]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = lid; b < buckets; b += wg) {
        if (hist[b] != 0u) atomic_add(&counts[b], hist[b]);
    }
}

/* One work-group: cursor[b] = the queries of subtrees before b (an exclusive prefix sum of
 * counts, each work-item summing a contiguous share of the subtrees, then one scan over the
 * shares), and counts back to zero for the next search. */
__kernel void rb_route_offsets(__global uint *counts, __global uint *cursor, uint buckets,
                               __local uint *scan) {
    const uint lid = get_local_id(0), wg = get_local_size(0);
    const uint share = (buckets + wg - 1u) / wg;
    const uint lo = min(lid * share, buckets), hi = min(lo + share, buckets);
    uint sum = 0u;
    for (uint b = lo; b < hi; ++b) sum += counts[b];
    asym_inclusive_scan(scan, lid, wg, sum);
    uint start = scan[lid] - sum;
    for (uint b = lo; b < hi; ++b) {
        const uint c = counts[b];
        cursor[b] = start;
        start += c;
        counts[b] = 0u;
    }
}

/* Lists every query's key in its subtree's slots of order_keys and the slot in at[i]: a
 * work-group takes the same tile as in rb_route, claims a run of slots per subtree with one
 * global atomic on cursor, and hands them out by local atomics. Only the keys land scattered;
 * the search then reads them in order and writes its answers in order, and rb_route_answer
 * gathers each query's answer back through at[]. */
__kernel void rb_route_place(__global const int *keys, __global const uint *route, uint n,
                             uint levels, uint tile, __global uint *cursor,
                             __global int *order_keys, __global uint *at,
                             __local uint *base, __local uint *rank) {
    const uint lid = get_local_id(0), wg = get_local_size(0);
    const uint buckets = 1u << min(levels, RB_ROUTE_MAX_LEVELS);
    for (uint b = lid; b < buckets; b += wg) rank[b] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint first = get_group_id(0) * tile, end = min(first + tile, n);
    for (uint i = first + lid; i < end; i += wg) atomic_inc(&rank[route[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint b = lid; b < buckets; b += wg) {
        const uint c = rank[b];
        base[b] = c != 0u ? atomic_add(&cursor[b], c) : 0u;
        rank[b] = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = first + lid; i < end; i += wg) {
        const uint b = route[i];
        const uint slot = base[b] + atomic_inc(&rank[b]);
        order_keys[slot] = keys[i];
        at[i] = slot;
    }
}

/* Each query's answer from its routed slot: values and status (and, for lower bounds,
 * `lower_bound` = 1, the key found) gathered from the search's answers in routed order. */
__kernel void rb_route_answer(__global const uint *at, uint n,
                              __global const ulong *routed_values,
                              __global const uint *routed_status,
                              __global const int *routed_found, __global ulong *values,
                              __global uint *status, __global int *found_keys,
                              uint lower_bound) {
    const uint i = get_global_id(0);
    if (i >= n) return;
    const uint slot = at[i];
    const uint st = routed_status[slot];
    status[i] = st;
    if (st == RB_FOUND) {
        values[i] = routed_values[slot];
        if (lower_bound) found_keys[i] = routed_found[slot];
    }
}
