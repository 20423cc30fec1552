/* asym shared helpers: atomics and back-off for both SVM transports.
 *
 * The runtime builds every program with exactly one of
 *   -DASYM_FINE=1    fine transport: host threads and this kernel run at the same time on
 *                    fine-grained SVM with SVM atomics; shared words are accessed with OpenCL C
 *                    2.0/3.0 atomics, acquire/release, memory_scope_device (PoCL declares no
 *                    memory_scope_all_svm_devices; on a CPU device memory is coherent, so device
 *                    scope orders host accesses as well).
 *   -DASYM_COARSE=1  coarse transport: the host touches shared memory only between kernels
 *                    (map/unmap), so kernels need atomics only among their own work-items. These
 *                    use OpenCL C 1.2 atomics (atomic_cmpxchg, atomic_add) plus global fences, the
 *                    subset NVIDIA's OpenCL C 1.2 compiler accepts.
 *
 * Memory-ordering argument: a word written by one side and read by the other is published by
 * a release store (asym_store_release) after the data it guards and read by an acquire load
 * (asym_load_acquire) before the data. On the coarse transport the kernel boundary (event
 * completion, unmap) is the synchronisation point and the fences only order work-items.
 */
#if defined(ASYM_FINE) && !defined(__opencl_c_atomic_order_acq_rel) && (__OPENCL_C_VERSION__ < 200)
#error "asym: the fine transport needs OpenCL C acquire/release atomics (OpenCL C 2.0, or 3.0 with __opencl_c_atomic_order_acq_rel)"
#endif

/* A fence ordering this work-item's global memory accesses for every work-item of the
 * device (acquire and release). OpenCL C 1.2's mem_fence promises order within the work-group
 * only, and NVIDIA compiles it so (membar.cta); there the runtime defines ASYM_NVIDIA and the
 * fence is PTX membar.gl (= fence.sc.gpu; the lighter fence.acq_rel.gpu measured the same on
 * the H200, docs/decisions.md, so the stronger one stays). */
inline void asym_fence(void) {
#if defined(ASYM_FINE)
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acq_rel, memory_scope_device);
#elif defined(ASYM_NVIDIA)
    asm volatile("membar.gl;" ::: "memory");
#else
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
}

/* A sequentially consistent fence over the device's global memory: orders this work-item's
 * earlier read-modify-writes before its later loads for every observer (acquire/release
 * alone allows the store-buffering outcome: two work-items each take one lock, then each
 * reads the other's lock as free). On NVIDIA asym_fence is already fence.sc.gpu. */
inline void asym_fence_seq_cst(void) {
#if defined(ASYM_FINE)
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_seq_cst, memory_scope_device);
#else
    asym_fence();
#endif
}

#ifdef ASYM_FINE
typedef volatile __global atomic_uint asym_atomic_uint;

inline uint asym_load_acquire(__global uint *p) {
    return atomic_load_explicit((asym_atomic_uint *)p, memory_order_acquire, memory_scope_device);
}
inline uint asym_load_relaxed(__global uint *p) {
    return atomic_load_explicit((asym_atomic_uint *)p, memory_order_relaxed, memory_scope_device);
}
inline void asym_store_release(__global uint *p, uint v) {
    atomic_store_explicit((asym_atomic_uint *)p, v, memory_order_release, memory_scope_device);
}
inline void asym_store_relaxed(__global uint *p, uint v) {
    atomic_store_explicit((asym_atomic_uint *)p, v, memory_order_relaxed, memory_scope_device);
}
/* Strong compare-and-swap, acq_rel on success. Returns true when *p was `expected`. */
inline bool asym_cas(__global uint *p, uint expected, uint desired) {
    return atomic_compare_exchange_strong_explicit((asym_atomic_uint *)p, &expected, desired,
        memory_order_acq_rel, memory_order_acquire, memory_scope_device);
}
inline uint asym_fetch_add(__global uint *p, uint v) {
    return atomic_fetch_add_explicit((asym_atomic_uint *)p, v, memory_order_acq_rel, memory_scope_device);
}
/* Relaxed read-modify-writes for words only work-items of one launch touch concurrently
 * (the host reads them after the launch): each word's modification order is all they need. */
inline uint asym_fetch_min_relaxed(__global uint *p, uint v) {
    return atomic_fetch_min_explicit((asym_atomic_uint *)p, v, memory_order_relaxed, memory_scope_device);
}
inline uint asym_fetch_max_relaxed(__global uint *p, uint v) {
    return atomic_fetch_max_explicit((asym_atomic_uint *)p, v, memory_order_relaxed, memory_scope_device);
}
inline uint asym_exchange_relaxed(__global uint *p, uint v) {
    return atomic_exchange_explicit((asym_atomic_uint *)p, v, memory_order_relaxed, memory_scope_device);
}
/* An exchange that publishes this work-item's earlier writes and sees those of the
 * work-item whose write it replaces (acq_rel). */
inline uint asym_exchange(__global uint *p, uint v) {
    return atomic_exchange_explicit((asym_atomic_uint *)p, v, memory_order_acq_rel, memory_scope_device);
}
#else
inline uint asym_load_acquire(__global uint *p) {
    uint v = *(volatile __global uint *)p;
    asym_fence();
    return v;
}
inline uint asym_load_relaxed(__global uint *p) {
    return *(volatile __global uint *)p;
}
inline void asym_store_release(__global uint *p, uint v) {
    asym_fence();
    *(volatile __global uint *)p = v;
}
inline void asym_store_relaxed(__global uint *p, uint v) {
    *(volatile __global uint *)p = v;
}
inline bool asym_cas(__global uint *p, uint expected, uint desired) {
    return atomic_cmpxchg((volatile __global uint *)p, expected, desired) == expected;
}
inline uint asym_fetch_add(__global uint *p, uint v) {
    return atomic_add((volatile __global uint *)p, v);
}
inline uint asym_fetch_min_relaxed(__global uint *p, uint v) {
    return atomic_min((volatile __global uint *)p, v);
}
inline uint asym_fetch_max_relaxed(__global uint *p, uint v) {
    return atomic_max((volatile __global uint *)p, v);
}
inline uint asym_exchange_relaxed(__global uint *p, uint v) {
    return atomic_xchg((volatile __global uint *)p, v);
}
inline uint asym_exchange(__global uint *p, uint v) {
    asym_fence();
    uint old = atomic_xchg((volatile __global uint *)p, v);
    asym_fence();
    return old;
}
#endif

/* 64-bit atomics, for programs built with -DASYM_INT64_ATOMICS=1 (the SVM allocator's tagged
 * free-list heads): the same orderings as the 32-bit wrappers above. Only such programs enable
 * the int64 atomics extensions, so devices without them still build everything else. */
#ifdef ASYM_INT64_ATOMICS
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#ifdef ASYM_FINE
typedef volatile __global atomic_ulong asym_atomic_ulong;
inline ulong asym_load64_acquire(__global ulong *p) {
    return atomic_load_explicit((asym_atomic_ulong *)p, memory_order_acquire, memory_scope_device);
}
inline ulong asym_load64_relaxed(__global ulong *p) {
    return atomic_load_explicit((asym_atomic_ulong *)p, memory_order_relaxed, memory_scope_device);
}
inline void asym_store64_release(__global ulong *p, ulong v) {
    atomic_store_explicit((asym_atomic_ulong *)p, v, memory_order_release, memory_scope_device);
}
inline bool asym_cas64(__global ulong *p, ulong expected, ulong desired) {
    return atomic_compare_exchange_strong_explicit((asym_atomic_ulong *)p, &expected, desired,
        memory_order_acq_rel, memory_order_acquire, memory_scope_device);
}
inline ulong asym_fetch_add64(__global ulong *p, ulong v) {
    return atomic_fetch_add_explicit((asym_atomic_ulong *)p, v, memory_order_acq_rel, memory_scope_device);
}
#else
inline ulong asym_load64_acquire(__global ulong *p) {
    ulong v = *(volatile __global ulong *)p;
    asym_fence();
    return v;
}
inline ulong asym_load64_relaxed(__global ulong *p) {
    return *(volatile __global ulong *)p;
}
inline void asym_store64_release(__global ulong *p, ulong v) {
    asym_fence();
    (void)atom_xchg((volatile __global ulong *)p, v);
}
inline bool asym_cas64(__global ulong *p, ulong expected, ulong desired) {
    asym_fence();
    bool ok = atom_cmpxchg((volatile __global ulong *)p, expected, desired) == expected;
    asym_fence();
    return ok;
}
inline ulong asym_fetch_add64(__global ulong *p, ulong v) {
    return atom_add((volatile __global ulong *)p, v);
}
#endif
#endif

/* Keys uploaded as raw bits become the "ordered" int32 form on load (-DKEY_MAP, the maps of
 * Key::to_ordered), in which signed comparison is the keys' order: 0 as they are
 * (int32 keys, or keys the host mapped already), 1 uint32 (flip the sign bit), 2 float32
 * (total order: flip the magnitude bits of negatives). Each map is its own inverse, so the
 * same macro turns ordered keys back into raw bits. */
#if !defined(KEY_MAP) || KEY_MAP == 0
#define ASYM_ORDERED(x) (x)
#elif KEY_MAP == 1
#define ASYM_ORDERED(x) ((x) ^ INT_MIN)
#elif KEY_MAP == 2
#define ASYM_ORDERED(x) ((x) ^ (int)(((uint)((x) >> 31)) >> 1))
#else
#error "KEY_MAP must be 0, 1 or 2"
#endif

/* Inclusive prefix sum of every work-item's `v` over a work-group of `wg` into scan[0..wg)
 * (Hillis-Steele, log2(wg) steps): deterministic, in work-item order. All wg work-items must
 * call it; scan is readable by all on return. */
inline void asym_inclusive_scan(__local uint *scan, uint lid, uint wg, uint v) {
    scan[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < wg; off <<= 1) {
        const uint add = lid >= off ? scan[lid - off] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        scan[lid] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* Device-side back-off for spin loops: wait a little longer each call (capped), re-reading
 * memory through a volatile load so the loop is not optimised away. There is no sleep in
 * OpenCL C; on a CPU device (PoCL) the OS still preempts a spinning work-group, and the host
 * side of every wait yields and sleeps (see runtime/src/backoff.rs). */
inline void asym_backoff(uint *step, __global uint *watch) {
    uint n = 1u << min(*step, 10u);
    for (uint i = 0; i < n; ++i) {
        (void)asym_load_relaxed(watch);
    }
    if (*step < 10u) {
        *step += 1u;
    }
}

/* A barrier over every work-group of a launch, for kernels that run many steps in one launch
 * (the launch boundary a step would otherwise need costs tens of microseconds on a GPU). It
 * needs every group resident at once, which OpenCL does not promise: one group per compute
 * unit is resident on every GPU we know, and where it is not, a waiting group gives up after
 * ASYM_GRID_SPIN_LIMIT polls and sets `*abort`; every group then leaves at its next barrier
 * (false) and the host runs the work another way.
 *
 * `*count` is never reset within a launch: each group's first work-item makes the group's
 * writes visible device-wide (asym_fence: a device-scope fence on NVIDIA), arrives with an
 * atomic increment and polls (acquire) until the counter reaches `target`, then fences again
 * before the group goes on. A group arrives at barrier b + 1 only after the counter reached
 * b's target, so barrier b's arrivals are exactly the G increments after it: with the
 * counter's value at the launch's start `base`, barrier k's target is base + (k + 1) * G
 * (mod 2^32: the counter is compared by signed difference, so it wraps harmlessly). Words
 * that other groups wrote before a barrier are read after it with volatile loads
 * (asym_load_relaxed, asym_load64_relaxed): a plain load could hit a stale line of this
 * compute unit's non-coherent cache. */
#define ASYM_GRID_SPIN_LIMIT (1u << 22)

inline bool asym_grid_barrier(__global uint *count, __global uint *abort, uint target,
                              __local uint *lflag) {
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        uint ok = 1u;
        asym_fence();
        asym_fetch_add(count, 1u);
        uint polls = 0u;
        while ((int)(asym_load_acquire(count) - target) < 0) {
            if (asym_load_relaxed(abort) != 0u) {
                ok = 0u;
                break;
            }
            if (++polls == ASYM_GRID_SPIN_LIMIT) {
                asym_store_relaxed(abort, 1u);
                ok = 0u;
                break;
            }
        }
        asym_fence();
        *lflag = ok;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    return *lflag != 0u;
}

/* Service control block (see runtime/src/signal/service.rs). */
#define ASYM_CTL_STOP 0        /* host sets 1: persistent kernels return */
#define ASYM_CTL_PERSISTENT 1  /* 1: loop until stopped (fine); 0: one pass per launch (coarse) */
#define ASYM_CTL_PROGRESS 2    /* messages handled, a liveness counter the host reads */
#define ASYM_CTL_WORDS 16
