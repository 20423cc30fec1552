/* asym runtime kernels: SVM round trips, launch latency, host/device ping-pong and the echo
 * service that exercises the signal ring. They are small on purpose: they measure and test the
 * runtime's mechanisms, not a structure. */

/* Adds 1 to each of n words: the device half of an SVM round trip host -> device -> host. */
kernel void asym_add_one(__global uint *data, uint n) {
    size_t i = get_global_id(0);
    if (i < n) {
        data[i] += 1u;
    }
}

/* Does nothing: launch + finish latency. */
kernel void asym_noop(__global uint *data) {
    (void)data;
}

#ifdef ASYM_FINE
/* Ping-pong through one SVM word while the host thread runs (fine transport only): the host
 * stores 2i-1, the kernel answers 2i, for i = 1..rounds. A round the host never starts is
 * abandoned after max_spins polls, writing ctl[ASYM_CTL_PROGRESS] = rounds done, so a dead host
 * cannot leave the kernel spinning forever. */
kernel void asym_pingpong(__global uint *flag, __global uint *ctl, uint rounds, uint max_spins) {
    if (get_global_id(0) != 0) return;
    for (uint i = 1; i <= rounds; ++i) {
        uint spins = 0;
        uint step = 0;
        while (asym_load_acquire(flag) != 2u * i - 1u) {
            if (++spins > max_spins || asym_load_relaxed(ctl + ASYM_CTL_STOP)) {
                asym_store_release(ctl + ASYM_CTL_PROGRESS, i - 1u);
                return;
            }
            if (spins > 64u) asym_backoff(&step, flag);
        }
        asym_store_release(flag, 2u * i);
    }
    asym_store_release(ctl + ASYM_CTL_PROGRESS, rounds);
}
#endif

/* Echo service: takes (lo, hi) from the to-device ring and replies (lo + 1, hi) on the
 * from-device ring. One work-item serves, in arrival order, so replies keep each producer's
 * order. A request is taken only when its reply has a slot (this work-item is the reply ring's
 * only producer), so nothing is lost when the host is slow to receive.
 * Fine transport: persistent, runs until ctl[ASYM_CTL_STOP]. Coarse: one pass per launch,
 * returning when the ring is empty or the reply ring is full. */
kernel void asym_echo(__global uint *to_dev, __global uint *from_dev, __global uint *ctl) {
    if (get_global_id(0) != 0) return;
    uint step = 0;
    for (;;) {
        uint lo, hi;
        if (asym_ring_has_room(from_dev) && asym_ring_try_pop(to_dev, &lo, &hi)) {
            asym_ring_try_push(from_dev, lo + 1u, hi);
            asym_fetch_add(ctl + ASYM_CTL_PROGRESS, 1u);
            step = 0;
            continue;
        }
        if (!ctl[ASYM_CTL_PERSISTENT] || asym_load_acquire(ctl + ASYM_CTL_STOP)) {
            return;
        }
        asym_backoff(&step, to_dev + ASYM_RING_TAIL);
    }
}

/* Follows a pointer stored in SVM: table[0] holds the address of another SVM allocation
 * (written by the host), whose first n words get 1 added. The runtime declares the target with
 * clSetKernelExecInfo(CL_KERNEL_EXEC_INFO_SVM_PTRS), as pointer-linked structures must. */
kernel void asym_follow_pointer(__global ulong *table, uint n) {
    __global uint *target = (__global uint *)(uintptr_t)table[0];
    size_t i = get_global_id(0);
    if (i < n) {
        target[i] += 1u;
    }
}

/* Dependent accesses: work-item 0 follows `steps` links of the cycle stored in `next`, each
 * link's address the previous link's value, with volatile loads (`atomic` 0) or with atomic
 * minimums by 0xffffffff that leave the word as it is and return it (`atomic` 1), and writes
 * where it ended. The time per link is the latency a chain of dependent global-memory
 * accesses pays per step, as a graph search's hop does (a distance, an edge, an atomic
 * minimum); no two links can overlap. */
kernel void asym_chase(__global uint *next, __global uint *out, uint steps, uint atomic) {
    if (get_global_id(0) != 0) return;
    uint v = 0u;
    if (atomic != 0u) {
        for (uint i = 0u; i < steps; ++i) {
            v = asym_fetch_min_relaxed(&next[v], 0xffffffffu);
        }
    } else {
        for (uint i = 0u; i < steps; ++i) {
            v = asym_load_relaxed(&next[v]);
        }
    }
    out[0] = v;
}

/* Grid barriers (asym_grid_barrier, common.cl): every group of the launch, one per compute
 * unit, passes `count` barriers, the counter at ctl[0] starting at `base`, and work-item 0
 * writes how many it passed to ctl[2] (fewer when the groups were not all resident and one
 * gave up, ctl[1]). The time per barrier is what a kernel that runs many steps in one launch
 * pays a step to synchronise. */
kernel void asym_grid_barriers(__global uint *ctl, uint count, uint base) {
    __local uint lflag;
    uint target = base;
    uint passed = 0u;
    for (uint k = 0u; k < count; ++k) {
        target += (uint)get_num_groups(0);
        if (!asym_grid_barrier(&ctl[0], &ctl[1], target, &lflag)) {
            break;
        }
        passed = k + 1u;
    }
    if (get_global_id(0) == 0) {
        ctl[2] = passed;
    }
}
