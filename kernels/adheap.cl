/* The ad-heap's throughput half (seed: ad-heap.txt): the bridge walk of update-key on the root.
 *
 * Build options: -DD=<arity> -DWG=<work-group size, power of two, >= D and >= AD_PAIRS>
 * -DAD_PAD=<word of node 0 in a slot> -DAD_PAIRS=<most pairs a bridge holds>, from
 * AdHeapLayout::cl_defines (structures/src/adheap.rs, which documents the slot layout):
 *   slot[0]                   node counter (pairs in the bridge)
 *   slot[1 + 2p], slot[2 + 2p] pair p: (node, value)
 *   slot[AD_PAD + i]          heap node i; children of i at AD_PAD + D*i + 1 .. + D
 *
 * Algorithm (one work-group per heap): a latency thread has written the new root key x into
 * node 0. Starting at the root, the group loads the node's aligned child block (one coalesced
 * load), finds the max child by the shared tree reduction (kernels/heap.cl), and if it beats x
 * records (node, child value) and descends to that child; otherwise, or at a leaf, it records
 * (node, x) and stops. Pair p is kept by work-item p in registers and written to the bridge in
 * local memory (the scratchpad) at the end, then dumped to the slot's head in one burst with
 * the node counter. The walk only reads the heap: a latency thread applies the bridge. (The
 * batch kernel keeps a device copy of each heap and replays the bridge on it as well; see
 * there.)
 *
 * Memory ordering: the slot belongs to this work-group from the hand-off until the bridge is
 * published. Batch kernel (any transport): the launch is the hand-off and its completion the
 * publication. Service kernel (fine transport): work-item 0 takes the slot index from the
 * to-device ring with an acquire load and a barrier with a global fence orders the group's
 * reads after it; the dump is followed by a barrier with a global fence and work-item 0
 * publishes the slot index on the from-device ring with a release store (kernels/ring.cl).
 * All loop conditions are computed identically by every work-item from local memory, so
 * barriers are reached uniformly.
 */
#ifndef D
#error "build adheap.cl with -DD=<arity>"
#endif
#if WG < D || WG < AD_PAIRS
#error "the work-group must have at least D and AD_PAIRS work-items"
#endif

/* The bridge walk for the heap of `len` keys in `slot`, when `active`; every work-item of the
 * group calls it with the same arguments. It runs all AD_PAIRS - 1 levels with every barrier
 * reached unconditionally (an `active` mask instead of `break`), the shape PoCL 3.1 compiles
 * correctly inside the service's polling loop; an inactive call touches no global memory. */
inline void adheap_walk(__global int *slot, uint len, uint lid, const uint go,
                        __local int *redv, __local uint *redi, __local int *redv2,
                        __local uint *redi2) {
    const int x = go ? slot[AD_PAD] : 0;
    uint active = go;
    uint i = 0;
    uint pairs = 0;
    uint my_node = 0;
    int my_val = x;
    for (uint level = 0; level + 1 < AD_PAIRS; ++level) {
        const uint first = D * i + 1;
        const uint live = active && first < len;
        const uint ch = first + lid;
        int v = INT_MIN;
        if (live && lid < D && ch < len) v = slot[AD_PAD + ch];
        redv[lid] = v;
        redi[lid] = ch;
        barrier(CLK_LOCAL_MEM_FENCE);
        ASYM_MAX_CHILD(D, WG, lid, redv, redi, redv2, redi2)
        const int best = redv[0];
        const uint bi = redi[0];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (live && best > x) {
            if (lid == pairs) {
                my_node = i;
                my_val = best;
            }
            ++pairs;
            i = bi;
        } else {
            active = 0;
        }
    }
    if (lid == pairs) {
        my_node = i;
        my_val = x;
    }
    ++pairs;
    /* The scratchpad bridge: every work-item stores its own slot (see heap.cl's PoCL note). */
    redv2[lid] = my_val;
    redi2[lid] = my_node;
    barrier(CLK_LOCAL_MEM_FENCE);
    /* Dump: one burst of 2 * pairs + 1 words. */
    const int bv = redv2[lid];
    const uint bn = redi2[lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (go && lid < pairs) {
        slot[1 + 2 * lid] = (int)bn;
        slot[2 + 2 * lid] = bv;
    }
    if (go && lid == 0) slot[0] = (int)pairs;
}

/* Batch (the pipelined schedule, any transport) on mirrored heaps: on coarse SVM the host's
 * and the device's copies of a heap are separate memories, and copying whole heaps at every
 * hand-off would dominate. The device copy in `slots` is written only here; the latency threads keep
 * the host copy. Work entry g = (slot, new root x, fresh index or 0xffffffff):
 *   - fresh: the slot starts a new sub-list; its heap (built by the host) is copied in from
 *     `fresh` (len words per heap);
 *   - otherwise the device replays the bridge it left in the slot's head last round, which the
 *     host has applied to its copy in the meantime, so both copies stay equal;
 * then x becomes the root, the walk records the new bridge in the head, and the bridge is
 * copied to out[g * (1 + 2 * AD_PAIRS) ..] for the host. Per hand-off only the work list, the
 * fresh heaps and the bridges cross the bus. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void adheap_bridges(__global int *slots, __global const uint *work, uint count,
                                    uint stride, uint len, __global const int *fresh,
                                    __global int *out) {
    __local int redv[WG];
    __local uint redi[WG];
    __local int redv2[WG];
    __local uint redi2[WG];
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    if (g >= count) return; /* whole group */
    __global int *slot = slots + (ulong)work[3 * g] * stride;
    const int x = (int)work[3 * g + 1];
    const uint f = work[3 * g + 2];
    if (f != 0xffffffffu) {
        __global const int *src = fresh + (ulong)f * len;
        for (uint i = lid; i < len; i += WG) slot[AD_PAD + i] = src[i];
    } else {
        /* The nodes of one bridge lie on one root-to-leaf path: distinct, so the pairs can be
         * written in parallel. */
        const uint pairs = (uint)slot[0];
        for (uint p = lid; p < pairs && p < AD_PAIRS; p += WG) {
            const uint node = (uint)slot[1 + 2 * p];
            if (node < len) slot[AD_PAD + node] = slot[2 + 2 * p];
        }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (lid == 0) slot[AD_PAD] = x;
    barrier(CLK_GLOBAL_MEM_FENCE);
    adheap_walk(slot, len, lid, 1u, redv, redi, redv2, redi2);
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global int *dst = out + (ulong)g * (1 + 2 * AD_PAIRS);
    const uint words = 1 + 2 * (uint)slot[0];
    for (uint i = lid; i < words; i += WG) dst[i] = slot[i];
}

#ifdef ASYM_FINE
/* Service (live schedule, fine transport): every group takes slot indices (lo; hi is echoed)
 * from the to-device ring, computes their bridges and answers on the from-device ring, until
 * ctl[ASYM_CTL_STOP]. The host keeps at most as many slots in flight as the rings hold, so a
 * reply always has room; the push still retries rather than drop one. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void adheap_service(__global uint *to_dev, __global uint *from_dev, __global uint *ctl,
                           __global int *slots, uint stride, uint len) {
    __local int redv[WG];
    __local uint redi[WG];
    __local int redv2[WG];
    __local uint redi2[WG];
    /* Work-item 0's decision, broadcast through local memory. Every work-item stores its own
     * slot (only slot 0 is read): the unconditional-store rule of heap.cl's PoCL note. */
    __local uint jstate[WG];
    __local uint jlo[WG];
    __local uint jhi[WG];
    const uint lid = get_local_id(0);
    uint step = 0;
    uint running = 1;
    while (running) {
        uint lo = 0, hi = 0;
        uint state = 0; /* 0 idle, 1 a slot to walk, 2 stop */
        if (lid == 0) {
            if (asym_ring_try_pop(to_dev, &lo, &hi)) {
                state = 1;
            } else if (!ctl[ASYM_CTL_PERSISTENT] || asym_load_acquire(ctl + ASYM_CTL_STOP)) {
                state = 2;
            }
        }
        jstate[lid] = state;
        jlo[lid] = lo;
        jhi[lid] = hi;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        state = jstate[0];
        lo = jlo[0];
        hi = jhi[0];
        barrier(CLK_LOCAL_MEM_FENCE);
        /* The walk runs on every pass, masked when there is no slot, so the loop body has the
         * same barriers every time (see adheap_walk). */
        adheap_walk(slots + (ulong)lo * stride, len, lid, state == 1u, redv, redi, redv2, redi2);
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (lid == 0) {
            if (state == 1u) {
                step = 0;
                uint spins = 0;
                while (!asym_ring_try_push(from_dev, lo, hi)) {
                    if (asym_load_acquire(ctl + ASYM_CTL_STOP)) break;
                    asym_backoff(&spins, from_dev + ASYM_RING_HEAD);
                }
                asym_fetch_add(ctl + ASYM_CTL_PROGRESS, 1u);
            } else if (state == 0u) {
                asym_backoff(&step, to_dev + ASYM_RING_TAIL);
            }
        }
        running = state != 2u;
    }
}
#endif
