/* The generalized heap's batch operations on the throughput device (concurrent-heap seed,
 * section 4): a work-group sorts one batch of K keys by bitonic sort in local memory, and
 * carries out MergeAndSort of two sorted batches by merge path. These are the building blocks
 * of the device heap's INS and DEL; this file holds them as kernels of their own, one batch
 * (or pair of batches) per work-group, so they can be tested and measured alone.
 *
 * Build options: -DK=<keys per batch: power of two, 2..2048>, -DWG=<work-group size: power
 * of two, at most K>, -DKEY_T=int|long -DKEY_MAX=INT_MAX|LONG_MAX (default int), -DKEY_MAP
 * (common.cl: how the device heap's inserted keys, uploaded as raw bits, become ordered).
 * Keys are in the "ordered" form (signed comparison is the keys' order: u32 and f32 map as
 * in the k-selection, and a key with a 32-bit payload packs into a long).
 *
 * Bitonic sort: log2(K)·(log2(K)+1)/2 compare-exchange stages over the K/2 pairs of the stage,
 * each work-item taking pairs lid, lid + WG, ...; a barrier after each stage. Merge path: the
 * 2K outputs are cut into WG equal segments; work-item i finds by binary search on the
 * diagonal how many of its segment's predecessors come from a (ties: a first, so the merge is
 * stable), then merges its segment alone.
 *
 * Memory ordering: a batch belongs to one work-group; every read of what another work-item
 * wrote follows a barrier(CLK_LOCAL_MEM_FENCE); global memory is read once at the start and
 * written once at the end by the same work-item mapping. Every local store is unconditional
 * (each pair stage writes both slots, each merge output slot is written once): PoCL 3.1 lost
 * conditional local stores across barriers (kernels/heap.cl). OpenCL C 1.2 only.
 */
#ifndef KEY_T
#define KEY_T int
#define KEY_MAX INT_MAX
#endif
#ifndef K
#error "build gheap.cl with -DK=<keys per batch>"
#endif
#ifndef WG
#error "build gheap.cl with -DWG=<work-group size>"
#endif
#if (K & (K - 1)) != 0 || K < 2
#error "K must be a power of two, at least 2"
#endif
#if WG > K
#error "the work-group must not be larger than K"
#endif

/* One compare-exchange stage (k, j) of bitonic sort over s[0..K); no barrier inside. */
inline void gheap_bitonic_stage(__local KEY_T *s, uint k, uint j, uint lid) {
    for (uint p = lid; p < K / 2; p += WG) {
        /* Pair p of this stage: i has bit j clear, partner i + j. */
        const uint i = ((p / j) * 2 * j) + (p % j);
        const KEY_T a = s[i], b = s[i + j];
        const bool ascending = (i & k) == 0;
        const KEY_T lo = min(a, b), hi = max(a, b);
        s[i] = ascending ? lo : hi;
        s[i + j] = ascending ? hi : lo;
    }
}

/* Sorts s[0..K) ascending; all WG work-items must call it (barriers inside). */
inline void gheap_bitonic_sort(__local KEY_T *s, uint lid) {
    for (uint k = 2; k <= K; k <<= 1) {
        for (uint j = k >> 1; j > 0; j >>= 1) {
            gheap_bitonic_stage(s, k, j, lid);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
}

/* Merge path: the stable merge of sorted a[0..K) and b[0..K) (ties: a first), its first K
 * outputs to lo[0..K), the rest to hi[0..K) (lo and hi may be the two halves of one array),
 * and, where g_lo (g_hi) is not null, the first (last) K to global memory as well.
 * All WG work-items must call it; the output is ready for reading after the caller's
 * barrier. Each output slot is written exactly once, by one unconditional store. */
inline void gheap_merge_path_to(__local const KEY_T *a, __local const KEY_T *b,
                                __local KEY_T *lo, __local KEY_T *hi,
                                volatile __global KEY_T *g_lo, volatile __global KEY_T *g_hi,
                                uint lid) {
    const uint per = (2 * K) / WG;
    const uint d = lid * per;
    /* x = how many of the first d outputs come from a. */
    uint l = d > K ? d - K : 0, h = min(d, (uint)K);
    while (l < h) {
        const uint mid = (l + h) / 2;
        if (a[mid] <= b[d - mid - 1]) l = mid + 1;
        else h = mid;
    }
    uint i = l, j = d - l;
    for (uint t = 0; t < per; ++t) {
        const KEY_T av = a[min(i, (uint)K - 1)];
        const KEY_T bv = b[min(j, (uint)K - 1)];
        const bool take_a = j >= K || (i < K && av <= bv);
        const uint p = d + t;
        __local KEY_T *dst = p < K ? lo + p : hi + (p - K);
        const KEY_T v = take_a ? av : bv;
        *dst = v;
        /* A global copy of the K smallest (a node's keys straight to the heap, so its lock
         * can go after this step): the local store above stays unconditional. */
        if (p < K && g_lo != 0) g_lo[p] = v;
        if (p >= K && g_hi != 0) g_hi[p - K] = v;
        i += take_a ? 1u : 0u;
        j += take_a ? 0u : 1u;
    }
}

inline void gheap_merge_path(__local const KEY_T *a, __local const KEY_T *b, __local KEY_T *lo,
                             __local KEY_T *hi, uint lid) {
    gheap_merge_path_to(a, b, lo, hi, 0, 0, lid);
}

/* Sorts keys[at ..] in place as batches of K, one work-group per batch: the `len` keys there
 * (as uploaded: KEY_MAP maps them; 0 for keys in the ordered form already), the last batch
 * padded with KEY_MAX up to K (the buffer must hold it). Each group reads its batch whole
 * into local memory before writing it back, and no other group touches it. The device
 * heap's bulk calls sort the call's keys into runs with it (below), and its INS/DEL launches
 * the inserted batches before gheap_run takes them. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_sort_batches(__global KEY_T *keys, ulong at, ulong len) {
    __local KEY_T s[K];
    const uint lid = get_local_id(0);
    const ulong first = (ulong)get_group_id(0) * K;
    __global KEY_T *batch = keys + at + first;
    for (uint i = lid; i < K; i += WG) s[i] = first + i < len ? ASYM_ORDERED(batch[i]) : KEY_MAX;
    barrier(CLK_LOCAL_MEM_FENCE);
    gheap_bitonic_sort(s, lid);
    for (uint i = lid; i < K; i += WG) batch[i] = s[i];
}

/* MergeAndSort of pairs: for each pair g, a[g] (K sorted keys) keeps the K smallest of
 * a[g] and b[g], b[g] the K largest, both sorted. One work-group per pair. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_merge_batches(__global KEY_T *a, __global KEY_T *b, uint pairs) {
    __local KEY_T la[K];
    __local KEY_T lb[K];
    __local KEY_T out[2 * K];
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    if (g >= pairs) return; /* whole group */
    __global KEY_T *ga = a + (ulong)g * K;
    __global KEY_T *gb = b + (ulong)g * K;
    for (uint i = lid; i < K; i += WG) {
        la[i] = ga[i];
        lb[i] = gb[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    gheap_merge_path(la, lb, out, out + K, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < K; i += WG) {
        ga[i] = out[i];
        gb[i] = out[K + i];
    }
}

/* ======================================================================================
 * The device generalized heap: INS and DEL from many work-groups at once (the seed's
 * TD-INS/TD-DEL and BU-INS/TD-DEL heaps, section 3.3; `bottom_up` picks one per launch),
 * each work-group running one operation at a time and taking operations from a ticket
 * counter until the launch's list is done.
 *
 * Layout (indices are node positions):
 *   keys[pos * K ..]  the node's K sorted keys (position 0 is the root);
 *   word[pos]         the node's lock word: a state (GH_EMPTY ... GH_HANDED), plus GH_LOCKED
 *                     while a group holds it;
 *   hdr[]             GH_COUNT (full nodes, targets included), GH_PLEN (keys in the partial
 *                     buffer), GH_SEQ (DELs linearized this launch), GH_TICKET (operations
 *                     taken), GH_ERROR (first error: GH_ERR_*), GH_MAX_NODES, GH_LIN
 *                     (operations linearized this launch: order[lin] = the ticket);
 *   partial[0..K)     the partial buffer.
 * The root's lock also guards COUNT, PLEN, SEQ and the partial buffer.
 *
 * States (the protocol of structures/src/gheap/concurrent.rs): EMPTY no node; AVAIL a node
 * with valid keys; TARGET reserved by an INS on its way down (a sifting DEL treats it as
 * absent: the INS, behind it on every shared path, merges through what the DEL changed);
 * MARKED a DEL took the target as the heap's last node and waits, holding the root, for the
 * keys; HANDED the INS left them there for that DEL. BU-INS adds INSHOLD (an INS's batch
 * placed at its target and climbing: the node's keys may be smaller than its parent's) and
 * DELMOD (a DEL met a claimed node, or moved keys from one up into this node and owes a
 * climb from it); the rules are those of structures/src/gheap/concurrent.rs: a climb locks
 * the parent, then the node, merges while the property fails, goes on while it merged or
 * the node was DELMOD, and waits, holding nothing, while the parent is claimed. GH_CLIMBS
 * counts climbs owed; with BU-INS a DEL starts only when it is zero (P_DEL_LOCK says why).
 *
 * Structure: work-item 0 runs the operation's control as a state machine (gh_control):
 * it takes and releases locks (compare-and-swap from an unlocked word to the same word with
 * GH_LOCKED; release by a store of the new state), reads the header, decides, and hands the
 * group one step at a time: up to GH_ACTS independent data-parallel actions (load a node
 * into local memory, a merge path writing its two halves straight into fresh local arrays,
 * and the K smallest also to a node, a store...), plus the locks to release once the step
 * has run. Work-item 0 assigns five local arrays to roles (node, carried batch, children, merge results) instead
 * of copying keys between them. Every step is bracketed by two barriers at the top level of
 * the kernel's single loop; no barrier sits in a branch. (A first version with
 * barriers inside conditional helpers took PoCL eight minutes to compile per kernel shape:
 * its barrier tail replication grows with every conditional barrier.)
 *
 * Deadlock freedom: every operation locks top-down, a child before letting go of its parent
 * (a climb lets go of its node before locking the parent), so waits cannot form a cycle; a
 * sift tries both children at once and may wait for one holding the other, but it holds
 * their parent, so whoever holds a sibling entered before it and only locks further down; a climb's wait for a claimed parent and a DEL's wait for the
 * climb count hold no lock, and wait only for climbs owed by running groups; a lock is only
 * ever held by a group that is running (it took the lock), so groups not yet resident on
 * the device hold and owe nothing and oversubscription cannot deadlock. A DEL waiting for a
 * hand-over holds only the root, and the INS it waits for needs only nodes below the root.
 *
 * Memory ordering: keys a group reads were stored by the previous holder of the lock before
 * it released it: after a step that stores, every work-item fences its global stores
 * (gh_fence), the group meets at the barrier, and only then does work-item 0 release the
 * locks that step was waiting for (asym_store_release).
 * The next holder's work-item 0 acquires (asym_cas, then a fence), the group meets at the
 * barrier, and every work-item reads nodes through volatile pointers, which go past a
 * non-coherent L1 (NVIDIA caches global loads per multiprocessor); work-item 0's own reads
 * under a lock (the header, a TD-INS's look at a node's largest key, volatile too) follow
 * its acquire directly. On the fine transport the
 * fence and the lock word are OpenCL C 2.0 atomics at device scope.
 *
 * Linearizability: an operation's whole effect on the root, the buffer and the count happens
 * under the root lock; a DEL's result goes to out[seq], seq taken under the root lock, so the
 * host reads results in linearization order.
 *
 * Bounded waits: a lock spins at most GH_SPIN_LIMIT rounds of back-off; past that, or when
 * another group has recorded an error, the group records GH_ERR_STALL and leaves, and the
 * others follow as they notice: the heap is then unusable and the host says so.
 * ====================================================================================== */
#if K <= GH_MAX_K

#define GH_EMPTY 0u
#define GH_AVAIL 1u
#define GH_TARGET 2u
#define GH_MARKED 3u
#define GH_HANDED 4u
#define GH_INSHOLD 5u
#define GH_DELMOD 6u
#define GH_LOCKED 0x100u
#define GH_ABORT 0xffffffffu
#define GH_NONE 0xfffffffeu
#define GH_BUSY 0xfffffffdu

/* The header's words (GH_COUNT, GH_PLEN, GH_SEQ, GH_TICKET, GH_ERROR, GH_MAX_NODES, GH_LIN,
 * GH_CLIMBS), its counters for measurements (GH_STAT_*: the host zeroes them before each
 * launch; CLIMB_MERGES: BU climbs' MergeAndSorts with a parent that had to merge; DEL_CLIMBS:
 * climbs owed by DELs; WAITS: back-off rounds, DELs for climbs and climbs for claimed
 * parents; MERGES: MergeAndSorts that merged; SWAPS: MergeAndSorts done by swapping two
 * batches), and the profile's words (GH_PROF_*: built with -DGH_PROFILE, NVIDIA only,
 * %globaltimer through inline PTX, in units of 256 ns summed over work-groups: DELs' waits
 * for the root lock, their root critical sections, the steps run inside them, sifts'
 * blocking waits for children, whole DELs, DELs, work-item 0's control inside the DELs'
 * root sections; INS waits for the root lock, their root sections, INS operations) come
 * from the host
 * (`device_heap::KERNEL_CONSTANTS`), as do the error codes and operation kinds below. */

#ifdef GH_PROFILE
inline ulong gh_now(void) {
    ulong t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define GH_PROF(...) __VA_ARGS__
#else
#define GH_PROF(...)
#endif

/* Error codes (GH_ERR_STALL, GH_ERR_CAPACITY, GH_ERR_STATE) and the operation kind GH_OP_INSERT
 * (any other word is a DEL) come from the host. */

/* The measurement counters GH_STAT_CLIMB_MERGES .. GH_STAT_SWAPS are consecutive words, and
 * the words an operation reads under the root lock lie in the header's first eight. */
#define GH_STATS 5u
#if GH_STAT_SWAPS - GH_STAT_CLIMB_MERGES != GH_STATS - 1
#error "gheap.cl: the header's counters must be consecutive"
#endif
#if GH_COUNT >= 8 || GH_PLEN >= 8 || GH_SEQ >= 8 || GH_MAX_NODES >= 8 || GH_LIN >= 8
#error "gheap.cl: the root section's header words must lie in the first eight"
#endif

/* A DEL's climbs: at most one per level of its sift plus one for its last node. */
#define GH_DUTIES 34u

#ifndef GH_SPIN_LIMIT
#define GH_SPIN_LIMIT (1u << 24)
#endif

/* Device-scope: node keys written by one work-group are read by others. (OpenCL C 1.2's
 * mem_fence is not enough on the coarse transport: NVIDIA compiles it to the work-group-scope
 * membar.cta; see asym_fence.) */
inline void gh_fence(void) { asym_fence(); }

/* Whether a node in state `st` (unlocked) is present with valid keys. */
inline bool gh_holds_keys(uint st) {
    return st == GH_AVAIL || st == GH_INSHOLD || st == GH_DELMOD;
}

/* Whether a climb owns the node: its keys may be smaller than its parent's (BU-INS). */
inline bool gh_claimed(uint st) { return st == GH_INSHOLD || st == GH_DELMOD; }

inline uint gh_reverse_bits(uint x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}

/* The array position of the i-th node added (batch.rs `position`). */
inline uint gh_position(uint i) {
    const uint level = 31u - clz(i + 1u);
    const uint first = (1u << level) - 1u;
    return level == 0u ? 0u : first + (gh_reverse_bits(i - first) >> (32u - level));
}

/* Back-off between polls of a node lock: short (at most 16 re-reads), because node locks are
 * held for microseconds and a waiter that sleeps past the release sits on the critical path
 * of every operation behind it (the shared asym_backoff grows to 1024 reads). */
inline void gh_backoff(uint *step, __global uint *w) {
    const uint n = 1u << min(*step, 4u);
    for (uint i = 0; i < n; ++i) (void)asym_load_relaxed(w);
    if (*step < 4u) *step += 1u;
}

/* Whether a spin on a lock word should stop: another group recorded an error, or this one
 * has waited past its bound (it then records GH_ERR_STALL). */
inline bool gh_give_up(uint spins, __global uint *hdr) {
    if (asym_load_relaxed(&hdr[GH_ERROR]) != 0u) return true;
    if (spins >= GH_SPIN_LIMIT) {
        (void)asym_cas(&hdr[GH_ERROR], 0u, GH_ERR_STALL);
        return true;
    }
    return false;
}

/* One attempt at the lock of `w`: the state it held, or GH_BUSY. `guess` is the state the
 * caller expects (a present node: AVAIL); a compare-and-swap on it first saves the read
 * before it when the lock is free, an L2 round trip of work-item 0's serial chain (the DEL's
 * root section went 12.99 -> 12.28 µs on the H200, docs/BENCHMARKS.md). GH_NONE: no guess. */
inline uint gh_try_lock(__global uint *w, uint guess) {
    if (guess != GH_NONE && asym_cas(w, guess, guess | GH_LOCKED)) {
        gh_fence();
        return guess;
    }
    const uint v = asym_load_relaxed(w);
    if ((v & GH_LOCKED) == 0u && asym_cas(w, v, v | GH_LOCKED)) {
        gh_fence();
        return v;
    }
    return GH_BUSY;
}

/* Takes the lock of `w`, guessing `guess` on the first attempt only (spinners must not
 * hammer a held word with compare-and-swaps); returns the state it held, or GH_ABORT (wait
 * past its bound, or another group recorded an error). */
inline uint gh_lock(__global uint *w, __global uint *hdr, uint guess) {
    uint step = 0;
    for (uint spins = 0;; ++spins) {
        const uint v = gh_try_lock(w, spins == 0u ? guess : GH_NONE);
        if (v != GH_BUSY) return v;
        if (gh_give_up(spins, hdr)) return GH_ABORT;
        gh_backoff(&step, w);
    }
}

/* Takes the locks of a sift's children (n of them, in the order given; GH_NONE positions are
 * skipped and read as GH_NONE): a compare-and-swap on each guessed state, issued together,
 * one fence for those taken, then gh_lock for any not as guessed. Safe out of sibling order
 * because the caller holds their parent, so whoever holds one of them only ever locks
 * further down. */
inline void gh_lock_many(__global uint *word, __global uint *hdr, uint n, const uint *at,
                         uint guess, uint *state) {
    bool took = false;
    for (uint i = 0; i < n; ++i) {
        state[i] = at[i] == GH_NONE ? GH_NONE
                   : (asym_cas(&word[at[i]], guess, guess | GH_LOCKED) ? guess : GH_BUSY);
        took = took || state[i] == guess;
    }
    if (took) gh_fence();
    for (uint i = 0; i < n; ++i) {
        if (state[i] == GH_BUSY) state[i] = gh_lock(&word[at[i]], hdr, GH_NONE);
        if (state[i] == GH_ABORT) return;
    }
}

/* Waits until `w` holds exactly `from` (unlocked) and swaps in `to`: an INS reserving its
 * target (`from` EMPTY), a DEL taking handed keys (`from` HANDED, `to` locked). */
inline bool gh_wait_swap(__global uint *w, __global uint *hdr, uint from, uint to) {
    uint step = 0;
    for (uint spins = 0;; ++spins) {
        if ((spins == 0u || asym_load_relaxed(w) == from) && asym_cas(w, from, to)) {
            gh_fence();
            return true;
        }
        if (gh_give_up(spins, hdr)) return false;
        gh_backoff(&step, w);
    }
}

/* Releases a lock with the node's new state (after the group's stores were fenced and met
 * at a barrier). */
inline void gh_unlock(__global uint *w, uint state) { asym_store_release(w, state); }

/* ---- Data-parallel actions, run by the whole group; a step is up to GH_ACTS independent
 * actions between two barriers (no action of a step reads what another writes). ---- */

#define A_LOAD 1u   /* loc[x][i] = glob[y][off + i + from] for i + from < n, else KEY_MAX   */
#define A_STORE 2u  /* glob[y][off + i] = loc[x][from + i] for i < n                       */
#define A_GCOPY 3u  /* glob[y][off + i] = glob[z][off2 + i] for i < n (volatile reads)     */
#define A_MERGE 5u  /* merge path of loc[x], loc[y]: K smallest to loc[z], the rest to loc[w];
                     * n = 1: the K smallest also to keys[off ..]                          */
#define A_EXIT 6u   /* the group leaves                                                    */

/* Global arrays. */
#define G_KEYS 0u
#define G_PARTIAL 1u
#define G_IN 2u
#define G_OUT 3u

/* Local arrays of K keys; work-item 0 assigns them to roles. Five cover every path (most at
 * once: an INS's buffer, batch and root plus a merge's two results; a sift's node and two
 * children plus two results), so K = 2048 int keys and K = 1024 pairs fit in 48 KiB. */
#define GH_ARRAYS 5u
#define GH_ACTS 4
#define GH_UNLOCKS 3
#define GH_QUEUE 8 /* a ring: steps queued, then the one being built */

typedef struct {
    uint code, x, y, z, w, from, n;
    ulong off, off2;
} gh_act;

/* What the group runs next (broadcast through local memory). */
typedef struct {
    uint n_act;
    uint stores; /* whether an action writes global memory (then every work-item fences) */
    gh_act act[GH_ACTS];
} gh_step;

/* A step as work-item 0 builds it: its actions, the locks to release once it has run (its
 * stores fenced and the group met at the barrier), and the arrays free after it. */
typedef struct {
    gh_step s;
    uint n_unlock;
    uint unlock_at[GH_UNLOCKS], unlock_to[GH_UNLOCKS];
    uint frees;
} gh_pending;

/* A key as stored to global array `g`: DELs' keys leave in the caller's form (the KEY_MAP
 * maps are their own inverses), the heap's own arrays keep the ordered form. */
inline KEY_T gh_stored(KEY_T v, uint g) { return g == G_OUT ? ASYM_ORDERED(v) : v; }

/* Loads node keys src[from .. n) into dst[0 ..), KEY_MAX past n (volatile: past the
 * multiprocessor's non-coherent L1, see gheap_run's memory ordering). */
inline void gh_load_keys(__local KEY_T *dst, volatile __global const KEY_T *src, uint from,
                         uint n, uint lid) {
    for (uint i = lid; i < K; i += WG) dst[i] = i + from < n ? src[i + from] : KEY_MAX;
}

inline void gh_run_act(gh_act m, __local KEY_T *loc[GH_ARRAYS], __global KEY_T *keys,
                       __global KEY_T *partial, __global const KEY_T *in, __global KEY_T *out,
                       uint lid) {
    __global KEY_T *glob = m.y == G_KEYS ? keys : (m.y == G_PARTIAL ? partial : out);
    switch (m.code) {
    case A_LOAD: {
        __local KEY_T *dst = loc[m.x];
        if (m.y == G_IN) {
            /* Inserted batches: sorted and in the ordered form already (gheap_sort_batches). */
            for (uint i = lid; i < K; i += WG) {
                dst[i] = i + m.from < m.n ? in[m.off + i + m.from] : KEY_MAX;
            }
        } else {
            gh_load_keys(dst, (volatile __global const KEY_T *)(glob + m.off), m.from, m.n, lid);
        }
        break;
    }
    case A_STORE: {
        volatile __global KEY_T *dst = (volatile __global KEY_T *)(glob + m.off);
        __local const KEY_T *src = loc[m.x] + m.from;
        for (uint i = lid; i < m.n; i += WG) dst[i] = gh_stored(src[i], m.y);
        break;
    }
    case A_GCOPY: {
        volatile __global const KEY_T *src =
            (volatile __global const KEY_T *)((m.z == G_KEYS ? keys : partial) + m.off2);
        volatile __global KEY_T *dst = (volatile __global KEY_T *)(glob + m.off);
        for (uint i = lid; i < m.n; i += WG) dst[i] = gh_stored(src[i], m.y);
        break;
    }
    case A_MERGE: {
        volatile __global KEY_T *node = (volatile __global KEY_T *)(keys + m.off);
        gheap_merge_path_to(loc[m.x], loc[m.y], loc[m.z], loc[m.w], m.n == 1u ? node : 0, 0, lid);
        break;
    }
    default:
        break;
    }
}

/* ---- Work-item 0's control: the operations as a state machine ---- */

enum {
    P_NEXT, P_INS_LOCK, P_INS_MERGED, P_INS_NODE, P_INS_MERGE,
    P_DEL_LOCK, P_DEL_SPARE, P_DEL_TAKE, P_SIFT, P_SIFT_CHILDREN, P_SIFT_DECIDE,
    P_DUTY, P_CLIMB, P_CLIMB_MERGE
};

typedef struct {
    uint pc;
    /* q[head..tail) are built and not yet run, q[tail] is being built, q[ran] ran last
     * (its unlocks and frees are due); indices modulo GH_QUEUE */
    __local gh_pending *q; /* GH_QUEUE steps, in local memory: the group reads them */
    uint head, tail, ran;
    bool has_ran;
    uint free_mask;
    /* the operation */
    uint t, n, want, count, plen, max_nodes, total, target, depth, level, held, pos, st, seq, spare, last;
    uint child, large_pos, sl, sr;
    /* the states the sift releases its nodes with: the held node, the chosen child, the
     * other child (AVAIL, or DELMOD for a node a climb owns) */
    uint pos_rel, child_rel, large_rel;
    /* BU-INS: the climbs this DEL owes (ascending positions: shallowest first), and the
     * climb under way: its node, the node's parent, their states, its wait */
    uint duty[GH_DUTIES];
    uint n_duty, cur, up, seen, pstate, climb_spins, climb_step;
    bool climbing;
    uint stat[GH_STATS];
#ifdef GH_PROFILE
    ulong t_root, t_op, t_in, p_root_wait, p_root_hold, p_child_wait, p_del_total;
    ulong p_ins_wait, p_ins_hold;
    uint p_ins;
    ulong p_root_ctl;
    uint p_steps, p_dels;
    bool root_held, in_del, ins_held;
#endif
    /* roles: local arrays holding the node (c), the carried batch (d), the buffer (p),
     * merge results, children (a, b) */
    uint c, d, p, a, b;
    bool changed, child_changed, has_l, has_r, dirty, last_delmod, out_of_arrays;
} gh_ctl;

inline uint gh_alloc(gh_ctl *c) {
    if (c->free_mask == 0u) {
        /* A path needing more arrays than GH_ARRAYS: a bug. Hand out array 0 and record
         * it; gh_control fails the launch before any step built since runs. */
        c->out_of_arrays = true;
        return 0u;
    }
    const uint i = 31u - clz(c->free_mask & (0u - c->free_mask)); /* lowest free */
    c->free_mask &= ~(1u << i);
    return i;
}

/* The array is free once the step being built has run. */
inline __local gh_pending *gh_cur(gh_ctl *c) { return &c->q[c->tail % GH_QUEUE]; }

inline void gh_clear(__local gh_pending *p) {
    p->s.n_act = 0;
    p->s.stores = 0;
    p->n_unlock = 0;
    p->frees = 0;
}

inline void gh_free(gh_ctl *c, uint i) { gh_cur(c)->frees |= 1u << i; }

inline void gh_add(gh_ctl *c, uint code, uint x, uint y, uint z, uint w, ulong off, ulong off2,
                   uint from, uint n) {
    gh_act m;
    m.code = code;
    m.x = x;
    m.y = y;
    m.z = z;
    m.w = w;
    m.off = off;
    m.off2 = off2;
    m.from = from;
    m.n = n;
    __local gh_pending *cur = gh_cur(c);
    cur->s.act[cur->s.n_act++] = m;
    if (code == A_STORE || code == A_GCOPY) cur->s.stores = 1;
}

inline void gh_load(gh_ctl *c, uint dst, uint g, ulong off, uint from, uint n) {
    gh_add(c, A_LOAD, dst, g, 0, 0, off, 0, from, n);
}
inline void gh_store(gh_ctl *c, uint src, uint g, ulong off, uint from, uint n) {
    if (n > 0) gh_add(c, A_STORE, src, g, 0, 0, off, 0, from, n);
}
/* Counters for measurements, kept by work-item 0 and added to the header once, as the group
 * leaves (an atomic per merge would sit in the serial chain of every critical section). */
inline void gh_count(gh_ctl *c, uint stat) { c->stat[stat - GH_STAT_CLIMB_MERGES] += 1u; }

/* MergeAndSort of x and y into two new arrays (returned in *lo, *hi); x and y are freed. */
inline void gh_merge(gh_ctl *c, __global uint *hdr, uint x, uint y, uint *lo, uint *hi) {
    gh_count(c, GH_STAT_MERGES);
    *lo = gh_alloc(c);
    *hi = gh_alloc(c);
    gh_add(c, A_MERGE, x, y, *lo, *hi, 0, 0, 0, 0);
    gh_free(c, x);
    gh_free(c, y);
}

/* gh_merge that also stores the K smallest as node `pos`: the node's lock can go once this
 * step has run, a step earlier than a separate store. */
inline void gh_merge_store(gh_ctl *c, uint x, uint y, uint *lo, uint *hi, uint pos) {
    gh_count(c, GH_STAT_MERGES);
    *lo = gh_alloc(c);
    *hi = gh_alloc(c);
    gh_add(c, A_MERGE, x, y, *lo, *hi, (ulong)pos * K, 0, 0, 1u);
    __local gh_pending *cur = gh_cur(c);
    cur->s.stores = 1;
    gh_free(c, x);
    gh_free(c, y);
}
/* Releases the lock once the step being built has run. */
inline void gh_after(gh_ctl *c, uint at, uint state) {
    __local gh_pending *cur = gh_cur(c);
    cur->unlock_at[cur->n_unlock] = at;
    cur->unlock_to[cur->n_unlock] = state;
    cur->n_unlock++;
}

/* Ends the step being built: queued (or, with no action and nothing queued before it, its
 * unlocks and frees apply at once: everything before it has run). */
/* A step has run (or had nothing to run): release the locks it was waiting for and free its
 * arrays. One fence orders work-item 0's own writes (the header) before all the lock words
 * that publish them; the step's stores were fenced by every work-item before the barrier.
 * Releasing the root ends a profiled root critical section. */
#ifdef GH_PROFILE
/* An INS lets the root go: the end of its profiled root section. */
inline void gh_prof_ins_release(gh_ctl *c) {
    c->p_ins_hold += gh_now() - c->t_root;
    c->ins_held = false;
}
#endif

inline void gh_retire(gh_ctl *c, __global uint *word, __local gh_pending *p) {
    if (p->n_unlock > 0u) gh_fence();
    for (uint i = 0; i < p->n_unlock; ++i) {
        asym_store_relaxed(&word[p->unlock_at[i]], p->unlock_to[i]);
        GH_PROF(if (p->unlock_at[i] == 0u && c->ins_held) gh_prof_ins_release(c);)
        GH_PROF(if (p->unlock_at[i] == 0u && c->root_held) {
            const ulong now = gh_now();
            c->p_root_hold += now - c->t_root;
            c->p_root_ctl += now - max(c->t_in, c->t_root);
            c->root_held = false;
        })
    }
    c->free_mask |= p->frees;
}

inline void gh_end_step(gh_ctl *c, __global uint *word) {
    __local gh_pending *cur = gh_cur(c);
    if (cur->s.n_act == 0 && c->head == c->tail) {
        gh_retire(c, word, cur);
    } else {
        c->tail += 1u;
    }
    gh_clear(gh_cur(c));
}

/* Records `code` (the first error wins) and makes the group leave. */
inline void gh_fail(gh_ctl *c, __global uint *hdr, uint code) {
    (void)asym_cas(&hdr[GH_ERROR], 0u, code);
    c->head = c->tail;
    gh_clear(gh_cur(c));
    gh_add(c, A_EXIT, 0, 0, 0, 0, 0, 0, 0, 0);
    c->tail += 1u;
    gh_clear(gh_cur(c));
}

/* The header words an operation reads under the root lock. */
typedef struct {
    uint count, plen, seq, max_nodes;
} gh_header;

/* Under the root lock: the header words the operation reads (count, buffer length, DEL
 * sequence, node limit), and operation `t` takes effect here (the host reads the order).
 * On the coarse transport the eight words come in one vector read: each separate read was
 * an L2 round trip in work-item 0's serial chain, while the group waits. */
inline gh_header gh_take_effect(__global uint *hdr, __global uint *order, uint t) {
    gh_header h;
#ifdef ASYM_FINE
    const uint lin = asym_load_relaxed(&hdr[GH_LIN]);
    h.count = asym_load_relaxed(&hdr[GH_COUNT]);
    h.plen = asym_load_relaxed(&hdr[GH_PLEN]);
    h.seq = asym_load_relaxed(&hdr[GH_SEQ]);
    h.max_nodes = asym_load_relaxed(&hdr[GH_MAX_NODES]);
#else
    uint w[8];
    vstore8(*(volatile __global uint8 *)hdr, 0, w);
    const uint lin = w[GH_LIN];
    h.count = w[GH_COUNT];
    h.plen = w[GH_PLEN];
    h.seq = w[GH_SEQ];
    h.max_nodes = w[GH_MAX_NODES];
#endif
    asym_store_relaxed(&hdr[GH_LIN], lin + 1u);
    order[lin] = t;
    return h;
}

inline void gh_linearize(gh_ctl *c, __global uint *hdr, __global uint *order) {
    const gh_header h = gh_take_effect(hdr, order, c->t);
    c->count = h.count;
    c->plen = h.plen;
    c->seq = h.seq;
    c->max_nodes = h.max_nodes;
}

/* A climb is owed (an INS's, under the root lock; a DEL's duty, while it holds the node and
 * the claimed child it merged, so the count cannot reach zero in between). */
inline void gh_climb_owed(__global uint *hdr) { (void)asym_fetch_add(&hdr[GH_CLIMBS], 1u); }

/* Records a climb this DEL owes from `pos`, keeping the list ascending (shallowest first: a
 * deeper climb may wait for a shallower one). False when the list is full (cannot happen:
 * one per level and one more). */
inline bool gh_owe(gh_ctl *c, __global uint *hdr, uint pos) {
    for (uint i = 0; i < c->n_duty; ++i) {
        if (c->duty[i] == pos) return true;
    }
    gh_climb_owed(hdr);
    gh_count(c, GH_STAT_DEL_CLIMBS);
    if (c->n_duty >= GH_DUTIES) return false;
    uint i = c->n_duty;
    for (; i > 0 && c->duty[i - 1] > pos; --i) c->duty[i] = c->duty[i - 1];
    c->duty[i] = pos;
    c->n_duty += 1u;
    return true;
}


/* Whether MergeAndSort of x and y has anything to do (the seed's early stop). */
inline bool gh_overlap(__local KEY_T *loc[GH_ARRAYS], uint x, uint y) {
    return loc[x][K - 1] > loc[y][0];
}

/* MergeAndSort of x and y (both loaded: read here), the K smallest to *lo, the rest to *hi.
 * When every key of y is ≤ every key of x the result is the two batches exchanged: the seed's
 * swap instead of merge, done by renaming the arrays, without a step. Returns whether a merge
 * was added to the step being built (then the caller ends the step before using lo or hi). */
inline bool gh_merge_or_swap(gh_ctl *c, __local KEY_T *loc[GH_ARRAYS], __global uint *hdr,
                             uint x, uint y, uint *lo, uint *hi) {
    if (loc[y][K - 1] <= loc[x][0]) {
        gh_count(c, GH_STAT_SWAPS);
        *lo = y;
        *hi = x;
        return false;
    }
    gh_merge(c, hdr, x, y, lo, hi);
    return true;
}

/* A sift holds `pos` and has just locked its children l and r (states c->sl, c->sr): decide
 * which hold keys, let the absent ones go, and load the others into the step being built. */
inline void gh_sift_children(gh_ctl *c, __global uint *word, uint l, uint r) {
    c->has_l = gh_holds_keys(c->sl);
    c->has_r = gh_holds_keys(c->sr);
    /* Keys from a climb among the children: the climb's owner learns a DEL has been here
     * (DELMOD), and if they move up into this node, it is claimed in turn. */
    c->dirty = gh_claimed(c->sl) || gh_claimed(c->sr);
    if (gh_claimed(c->sl)) c->sl = GH_DELMOD;
    if (gh_claimed(c->sr)) c->sr = GH_DELMOD;
    /* An absent child (empty, or a target whose INS is behind us) is let go now. */
    if (c->sl != GH_NONE && !c->has_l) gh_unlock(&word[l], c->sl);
    if (c->sr != GH_NONE && !c->has_r) gh_unlock(&word[r], c->sr);
    c->a = c->has_l ? gh_alloc(c) : GH_NONE;
    c->b = c->has_r ? gh_alloc(c) : GH_NONE;
    if (c->has_l) gh_load(c, c->a, G_KEYS, (ulong)l * K, 0, K);
    if (c->has_r) gh_load(c, c->b, G_KEYS, (ulong)r * K, 0, K);
}

/* The next step for the group. `loc` is readable here: every call follows a barrier. */
inline uint gh_control(gh_ctl *c, __local KEY_T *loc[GH_ARRAYS], __global const KEY_T *keys,
                       __global uint *word, __global uint *hdr, uint slots,
                       __global const uint *ops, uint n_ops, uint in_len,
                       __global uint *out_len, __global uint *order, uint bottom_up) {
    GH_PROF(c->t_in = gh_now();)
    /* The step that just ran: its stores are fenced and the group met at the barrier. */
    if (c->has_ran) {
        gh_retire(c, word, &c->q[c->ran]);
        c->has_ran = false;
    }
    for (;;) {
        if (c->out_of_arrays) {
            c->out_of_arrays = false;
            gh_fail(c, hdr, GH_ERR_STATE); /* drops the steps queued, queues the exit */
        }
        if (c->head != c->tail) {
            c->ran = c->head % GH_QUEUE;
            c->has_ran = true;
            c->head += 1u;
            GH_PROF(if (c->root_held) {
                c->p_steps += 1u;
                c->p_root_ctl += gh_now() - max(c->t_in, c->t_root);
            })
            return c->ran;
        }
        switch (c->pc) {
        case P_NEXT: {
            GH_PROF(if (c->in_del) {
                c->p_del_total += gh_now() - c->t_op;
                c->p_dels += 1u;
                c->in_del = false;
            })
            const uint t = asym_load_relaxed(&hdr[GH_ERROR]) != 0u
                               ? n_ops
                               : asym_fetch_add(&hdr[GH_TICKET], 1u);
            GH_PROF(c->t_op = gh_now();)
            if (t >= n_ops) {
                for (uint i = 0; i < GH_STATS; ++i) {
                    if (c->stat[i] != 0u) (void)asym_fetch_add(&hdr[GH_STAT_CLIMB_MERGES + i], c->stat[i]);
                }
                GH_PROF({
                    (void)asym_fetch_add(&hdr[GH_PROF_ROOT_WAIT], (uint)(c->p_root_wait >> 8));
                    (void)asym_fetch_add(&hdr[GH_PROF_ROOT_HOLD], (uint)(c->p_root_hold >> 8));
                    (void)asym_fetch_add(&hdr[GH_PROF_INS_WAIT], (uint)(c->p_ins_wait >> 8));
                    (void)asym_fetch_add(&hdr[GH_PROF_INS_HOLD], (uint)(c->p_ins_hold >> 8));
                    (void)asym_fetch_add(&hdr[GH_PROF_INSERTS], c->p_ins);
                    (void)asym_fetch_add(&hdr[GH_PROF_ROOT_STEPS], c->p_steps);
                    (void)asym_fetch_add(&hdr[GH_PROF_CHILD_WAIT], (uint)(c->p_child_wait >> 8));
                    (void)asym_fetch_add(&hdr[GH_PROF_DEL_TOTAL], (uint)(c->p_del_total >> 8));
                    (void)asym_fetch_add(&hdr[GH_PROF_DELS], c->p_dels);
                    (void)asym_fetch_add(&hdr[GH_PROF_ROOT_CONTROL], (uint)(c->p_root_ctl >> 8));
                })
                gh_add(c, A_EXIT, 0, 0, 0, 0, 0, 0, 0, 0);
                gh_end_step(c, word);
                break;
            }
            const uint kind = ops[2u * t], arg = ops[2u * t + 1u];
            c->t = t;
            c->free_mask = (1u << GH_ARRAYS) - 1u;
            c->n_duty = 0;
            c->climbing = false;
            c->climb_spins = 0;
            c->climb_step = 0;
            if (kind == GH_OP_INSERT) {
                const ulong start = (ulong)arg * K;
                c->n = (uint)min((ulong)K, (ulong)in_len - start);
                c->d = gh_alloc(c);
                /* Sorted already (gheap_sort_batches ran over `in` before this launch). */
                gh_load(c, c->d, G_IN, start, 0, c->n);
                gh_end_step(c, word);
                c->pc = P_INS_LOCK;
            } else {
                c->want = arg;
                c->pc = P_DEL_LOCK;
                GH_PROF(c->in_del = true;)
            }
            break;
        }
        /* ---- INS (TD-INS) ---- */
        case P_INS_LOCK: {
            GH_PROF(const ulong t_wait = gh_now();)
            if (gh_lock(&word[0], hdr, GH_AVAIL) == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            GH_PROF({
                c->t_root = gh_now();
                c->p_ins_wait += c->t_root - t_wait;
                c->p_ins += 1u;
                c->ins_held = true;
            })
            gh_linearize(c, hdr, order);
            c->total = c->plen + c->n;
            if (bottom_up && c->plen == 0u && c->n == K && c->count > 0u &&
                c->count < c->max_nodes) {
                /* BU-INS of a whole batch with an empty buffer: nothing to merge under the
                 * root lock, so the group takes its target, owes the climb and lets the root
                 * go before placing the batch: its root section is work-item 0's alone. The
                 * target stays locked until the batch is there, so a climb from below waits
                 * for it, and DELs wait for the climb count. */
                c->target = gh_position(c->count);
                if (c->target >= slots) {
                    gh_fail(c, hdr, GH_ERR_CAPACITY);
                    break;
                }
                asym_store_relaxed(&hdr[GH_COUNT], c->count + 1u);
                c->st = gh_lock(&word[c->target], hdr, GH_EMPTY);
                if (c->st != GH_EMPTY) {
                    gh_fail(c, hdr, c->st == GH_ABORT ? GH_ERR_STALL : GH_ERR_STATE);
                    break;
                }
                gh_climb_owed(hdr);
                gh_unlock(&word[0], GH_AVAIL);
                GH_PROF(gh_prof_ins_release(c);)
                gh_store(c, c->d, G_KEYS, (ulong)c->target * K, 0, K);
                gh_free(c, c->d);
                gh_after(c, c->target, GH_INSHOLD);
                gh_end_step(c, word);
                c->cur = c->target;
                c->climbing = true;
                c->pc = P_CLIMB;
                break;
            }
            c->p = GH_NONE;
            if (c->plen > 0) {
                c->p = gh_alloc(c);
                gh_load(c, c->p, G_PARTIAL, 0, 0, c->plen);
            }
            c->c = GH_NONE;
            if (c->count > 0 && c->total < K) {
                /* The root, read ahead for the keys that stay in the buffer. (A batch going
                 * down reads only the root's largest key first: P_INS_NODE.) */
                c->c = gh_alloc(c);
                gh_load(c, c->c, G_KEYS, 0, 0, K);
            }
            gh_end_step(c, word);
            if (c->plen > 0) {
                uint lo, hi;
                gh_merge(c, hdr, c->p, c->d, &lo, &hi); /* not loaded yet: no swap test */
                gh_end_step(c, word);
                c->d = lo; /* the K smallest of buffer and batch */
                c->p = hi; /* the rest */
            }
            c->pc = P_INS_MERGED;
            break;
        }
        case P_INS_MERGED:
            if (c->total < K) {
                /* Everything stays in the buffer (d holds it all), after a MergeAndSort
                 * with the root. */
                if (c->p != GH_NONE) gh_free(c, c->p);
                c->p = c->d;
                if (c->count > 0 && gh_overlap(loc, c->c, c->p)) {
                    uint lo, hi;
                    if (gh_merge_or_swap(c, loc, hdr, c->c, c->p, &lo, &hi)) gh_end_step(c, word);
                    gh_store(c, lo, G_KEYS, 0, 0, K);
                    c->p = hi;
                }
                gh_store(c, c->p, G_PARTIAL, 0, 0, c->total);
                asym_store_relaxed(&hdr[GH_PLEN], c->total);
                gh_after(c, 0, GH_AVAIL);
                gh_end_step(c, word);
                c->pc = P_NEXT;
                break;
            }
            if (c->count >= c->max_nodes) {
                /* The host grows the heap before every launch: the last line of defence. */
                gh_unlock(&word[0], GH_AVAIL);
                gh_fail(c, hdr, GH_ERR_CAPACITY);
                break;
            }
            /* d (the K smallest) travels down as the new node; p's keys stay in the buffer. */
            if (c->p != GH_NONE) {
                gh_store(c, c->p, G_PARTIAL, 0, 0, c->total - K);
                gh_free(c, c->p);
            }
            asym_store_relaxed(&hdr[GH_PLEN], c->total - K);
            asym_store_relaxed(&hdr[GH_COUNT], c->count + 1u);
            if (c->count == 0) {
                gh_store(c, c->d, G_KEYS, 0, 0, K);
                gh_after(c, 0, GH_AVAIL);
                gh_end_step(c, word);
                c->pc = P_NEXT;
                break;
            }
            c->target = gh_position(c->count);
            if (c->target >= slots) {
                gh_fail(c, hdr, GH_ERR_CAPACITY);
                break;
            }
            if (bottom_up) {
                /* BU-INS: the batch goes straight into the target, claimed for the climb
                 * (a DEL sifting down may hold the empty slot's lock for a moment). */
                c->st = gh_lock(&word[c->target], hdr, GH_EMPTY);
                if (c->st != GH_EMPTY) {
                    gh_fail(c, hdr, c->st == GH_ABORT ? GH_ERR_STALL : GH_ERR_STATE);
                    break;
                }
                gh_store(c, c->d, G_KEYS, (ulong)c->target * K, 0, K);
                gh_free(c, c->d);
                gh_after(c, c->target, GH_INSHOLD);
                gh_after(c, 0, GH_AVAIL);
                gh_end_step(c, word);
                gh_climb_owed(hdr);
                c->cur = c->target;
                c->climbing = true;
                c->pc = P_CLIMB;
                break;
            }
            /* Reserve the target (a DEL sifting down may hold its lock for a moment). */
            if (!gh_wait_swap(&word[c->target], hdr, GH_EMPTY, GH_TARGET)) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            c->depth = 31u - clz(c->target + 1u);
            c->level = 1;
            c->held = 0;
            c->pc = P_INS_NODE;
            break;
        case P_INS_NODE: {
            /* The group holds node `held` (its keys not loaded: c is GH_NONE) and carries d
             * (the buffer's store, if any, is in the step being built). The next node on the
             * path is locked first (top-down, as every lock). Only the held node's largest
             * key decides whether d changes it, and most batches pass the upper nodes
             * untouched (the root holds the heap's K smallest): work-item 0 reads that key
             * alone, and the group loads the node only when it must merge. */
            c->pos = ((c->target + 1u) >> (c->depth - c->level)) - 1u;
            c->st = gh_lock(&word[c->pos], hdr, GH_AVAIL);
            if (c->st == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            const bool at_target = c->pos == c->target;
            if (at_target ? (c->st != GH_MARKED && c->st != GH_TARGET) : c->st != GH_AVAIL) {
                gh_fail(c, hdr, GH_ERR_STATE);
                break;
            }
            c->pc = P_INS_MERGE;
            const KEY_T largest = ((volatile __global const KEY_T *)keys)[(ulong)c->held * K + K - 1];
            if (largest > loc[c->d][0]) {
                c->c = gh_alloc(c);
                gh_load(c, c->c, G_KEYS, (ulong)c->held * K, 0, K);
                gh_end_step(c, word);
            }
            break;
        }
        case P_INS_MERGE: {
            /* c: the held node's keys, loaded only when they overlap d (the largest key read
             * under the lock decided it), else GH_NONE. One step merges and stores the held
             * node's new keys; it is let go once that has run. */
            const bool at_target = c->pos == c->target;
            if (c->c == GH_NONE) {
                /* untouched */
            } else if (loc[c->d][K - 1] <= loc[c->c][0]) {
                /* The seed's swap: the batch becomes the node, the node travels on. */
                gh_count(c, GH_STAT_SWAPS);
                gh_store(c, c->d, G_KEYS, (ulong)c->held * K, 0, K);
                gh_free(c, c->d);
                c->d = c->c;
            } else {
                uint lo, hi;
                gh_merge_store(c, c->c, c->d, &lo, &hi, c->held);
                gh_free(c, lo);
                c->d = hi;
            }
            gh_after(c, c->held, GH_AVAIL);
            if (at_target) {
                gh_end_step(c, word); /* d may come out of this step's merge */
                gh_store(c, c->d, G_KEYS, (ulong)c->pos * K, 0, K);
                gh_after(c, c->pos, c->st == GH_MARKED ? GH_HANDED : GH_AVAIL);
                gh_end_step(c, word);
                c->pc = P_NEXT;
                break;
            }
            c->c = GH_NONE;
            gh_end_step(c, word);
            c->held = c->pos;
            c->level += 1u;
            c->pc = P_INS_NODE;
            break;
        }

        /* ---- DEL (TD-DEL) ---- */
        case P_DEL_LOCK: {
            /* BU-INS: a DEL starts only when no climb is in flight (waiting holding nothing;
             * an INS owes its climb from inside its root section, so the count read under
             * the root lock is exact). A climbing node may carry keys that sat in the partial
             * buffer, and keys below an unsettled edge are out of the root's reach: without
             * this, a DEL could return a key larger than one the heap held (the seed's proof
             * of BU-INS/TD-DEL leaves the partial buffer out). With no climb in flight the
             * heap is settled, and the DEL is linearized at the root as in TD-DEL. */
            if (bottom_up && asym_load_relaxed(&hdr[GH_CLIMBS]) != 0u) {
                if (c->climb_spins == 0u) gh_count(c, GH_STAT_WAITS);
                if (gh_give_up(c->climb_spins++, hdr)) {
                    gh_fail(c, hdr, GH_ERR_STALL);
                    break;
                }
                gh_backoff(&c->climb_step, &hdr[GH_CLIMBS]);
                break;
            }
            GH_PROF(const ulong t_wait = gh_now();)
            const uint root_state = gh_lock(&word[0], hdr, GH_AVAIL);
            if (root_state == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            GH_PROF({
                c->t_root = gh_now();
                c->p_root_wait += c->t_root - t_wait;
            })
            if (bottom_up && asym_load_relaxed(&hdr[GH_CLIMBS]) != 0u) {
                gh_unlock(&word[0], root_state);
                break;
            }
            GH_PROF(c->root_held = true;)
            gh_linearize(c, hdr, order);
            asym_store_relaxed(&hdr[GH_SEQ], c->seq + 1u);
            const ulong dst = (ulong)c->seq * K;
            if (c->count == 0) {
                const uint take = min(c->want, c->plen);
                c->p = gh_alloc(c);
                gh_load(c, c->p, G_PARTIAL, 0, 0, c->plen);
                gh_end_step(c, word);
                gh_store(c, c->p, G_OUT, dst, 0, take);
                gh_store(c, c->p, G_PARTIAL, 0, take, c->plen - take);
                gh_after(c, 0, GH_AVAIL);
                gh_end_step(c, word);
                out_len[c->seq] = take;
                asym_store_relaxed(&hdr[GH_PLEN], c->plen - take);
                c->pc = P_NEXT;
                break;
            }
            /* The root's first keys go out; the rest (a) and the buffer (b) are the spare
             * keys, smaller than everything below. */
            gh_add(c, A_GCOPY, 0, G_OUT, G_KEYS, 0, dst, 0, 0, c->want);
            c->a = GH_NONE;
            c->b = GH_NONE;
            if (c->want < K) {
                c->a = gh_alloc(c);
                gh_load(c, c->a, G_KEYS, 0, c->want, K);
            }
            if (c->plen > 0) {
                c->b = gh_alloc(c);
                gh_load(c, c->b, G_PARTIAL, 0, 0, c->plen);
            }
            gh_end_step(c, word);
            out_len[c->seq] = c->want;
            c->spare = K - c->want + c->plen;
            c->p = c->a != GH_NONE ? c->a : c->b; /* the spare keys' first K */
            c->d = GH_NONE;                        /* and the rest */
            if (c->a != GH_NONE && c->b != GH_NONE) {
                uint lo, hi;
                gh_merge(c, hdr, c->a, c->b, &lo, &hi); /* not loaded yet: no swap test */
                gh_end_step(c, word);
                c->p = lo;
                c->d = hi;
            }
            c->pc = P_DEL_SPARE;
            break;
        }
        case P_DEL_SPARE:
            if (c->spare >= K) {
                /* The K smallest spare keys refill the root; the node count stays. */
                c->c = c->p;
                gh_store(c, c->d, G_PARTIAL, 0, 0, c->spare - K);
                gh_free(c, c->d);
                asym_store_relaxed(&hdr[GH_PLEN], c->spare - K);
                c->pos = 0;
                c->pos_rel = GH_AVAIL;
                c->changed = true;
                c->pc = P_SIFT;
                break;
            }
            if (c->d != GH_NONE) gh_free(c, c->d);
            /* The last node refills the root. */
            c->last = gh_position(c->count - 1u);
            asym_store_relaxed(&hdr[GH_COUNT], c->count - 1u);
            asym_store_relaxed(&hdr[GH_PLEN], c->spare);
            if (c->last == 0) {
                if (c->p != GH_NONE) gh_store(c, c->p, G_PARTIAL, 0, 0, c->spare);
                gh_after(c, 0, GH_AVAIL);
                gh_end_step(c, word);
                c->pc = P_NEXT;
                break;
            }
            c->st = gh_lock(&word[c->last], hdr, GH_AVAIL);
            if (c->st == GH_TARGET) {
                /* Its INS is still on the way: mark it and wait (holding the root). */
                gh_unlock(&word[c->last], GH_MARKED);
                if (!gh_wait_swap(&word[c->last], hdr, GH_HANDED, GH_HANDED | GH_LOCKED)) {
                    gh_fail(c, hdr, GH_ERR_STALL);
                    break;
                }
            } else if (!gh_holds_keys(c->st)) {
                gh_fail(c, hdr, c->st == GH_ABORT ? GH_ERR_STALL : GH_ERR_STATE);
                break;
            }
            /* A DELMOD last node: a DEL moved keys from it up into its parent, and the climb
             * that would have gone on from the parent will find this node gone: the duty
             * passes to this DEL (P_DEL_TAKE). An INSHOLD one's climb simply stops. */
            c->last_delmod = c->st == GH_DELMOD;
            /* Nothing writes the node before an INS targets it again, which needs the root:
             * it can be let go as soon as its keys are read. */
            c->c = gh_alloc(c);
            gh_load(c, c->c, G_KEYS, (ulong)c->last * K, 0, K);
            gh_after(c, c->last, GH_EMPTY);
            gh_end_step(c, word);
            c->pc = P_DEL_TAKE;
            break;
        case P_DEL_TAKE:
            if (c->last_delmod && c->last > 2u) {
                /* The last node is let go (the load ran): its parent may now be locked below
                 * the root without breaking the top-down order. */
                const uint up = (c->last - 1u) / 2u;
                const uint st = gh_lock(&word[up], hdr, GH_AVAIL);
                if (st == GH_ABORT) {
                    gh_fail(c, hdr, GH_ERR_STALL);
                    break;
                }
                if (gh_holds_keys(st) && !gh_owe(c, hdr, up)) {
                    gh_fail(c, hdr, GH_ERR_STATE);
                    break;
                }
                gh_unlock(&word[up], gh_holds_keys(st) ? GH_DELMOD : st);
            }
            c->last_delmod = false;
            if (c->spare > 0 && gh_overlap(loc, c->c, c->p)) {
                uint lo, hi;
                if (gh_merge_or_swap(c, loc, hdr, c->c, c->p, &lo, &hi)) gh_end_step(c, word);
                c->c = lo;
                c->p = hi;
            }
            /* The buffer's store goes with the sift's first step. */
            if (c->spare > 0) gh_store(c, c->p, G_PARTIAL, 0, 0, c->spare);
            if (c->p != GH_NONE) gh_free(c, c->p);
            c->pos = 0;
            c->pos_rel = GH_AVAIL;
            c->changed = true;
            c->pc = P_SIFT;
            break;

        /* ---- TD-DEL's sift-down: the group holds `pos`, its keys in c; the step being
         * built may hold stores of the levels above ---- */
        case P_SIFT: {
            const uint l = 2u * c->pos + 1u, r = l + 1u;
            __local gh_pending *cur = gh_cur(c);
            if (cur->s.n_act > 0u || cur->n_unlock > 0u) {
                /* The step being built stores the level above (and releases it): try the
                 * children once; if either is busy (the DEL ahead still works below it),
                 * run that step first, so the level above is let go before this group
                 * blocks rather than while it waits on the DEL ahead (measured on the H200:
                 * within the run-to-run spread, docs/BENCHMARKS.md). The node itself stays
                 * held throughout, so nobody overtakes. */
                c->sl = l < slots ? gh_try_lock(&word[l], GH_AVAIL) : GH_NONE;
                c->sr = (r < slots && c->sl != GH_BUSY) ? gh_try_lock(&word[r], GH_AVAIL) : GH_NONE;
                if (c->sl == GH_BUSY || c->sr == GH_BUSY) {
                    if (c->sl != GH_BUSY && c->sl != GH_NONE) gh_unlock(&word[l], c->sl);
                    gh_end_step(c, word);
                    break; /* back here with nothing pending: blocking locks */
                }
            } else {
                GH_PROF(const ulong t_wait = gh_now();)
                const uint at[2] = {l < slots ? l : GH_NONE, r < slots ? r : GH_NONE};
                uint state[2] = {GH_ABORT, GH_ABORT};
                gh_lock_many(word, hdr, 2u, at, GH_AVAIL, state);
                c->sl = state[0];
                c->sr = state[1];
                GH_PROF(c->p_child_wait += gh_now() - t_wait;)
            }
            if (c->sl == GH_ABORT || c->sr == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            gh_sift_children(c, word, l, r);
            gh_end_step(c, word);
            c->pc = P_SIFT_CHILDREN;
            break;
        }
        case P_SIFT_CHILDREN: {
            const uint l = 2u * c->pos + 1u, r = l + 1u;
            if (c->has_l && c->has_r) {
                /* The larger half goes back into the child whose largest key was larger. */
                const bool l_larger = loc[c->a][K - 1] > loc[c->b][K - 1];
                const uint small = l_larger ? c->b : c->a, large = l_larger ? c->a : c->b;
                c->large_pos = l_larger ? l : r;
                c->large_rel = l_larger ? c->sl : c->sr;
                c->child = l_larger ? r : l;
                c->child_rel = l_larger ? c->sr : c->sl;
                if (loc[c->c][K - 1] <= min(loc[c->a][0], loc[c->b][0])) {
                    /* The node is no larger than either child: nothing below changes, not
                     * even the children (the seed's early stop, before their merge). */
                    if (c->changed) gh_store(c, c->c, G_KEYS, (ulong)c->pos * K, 0, K);
                    gh_after(c, l, c->sl);
                    gh_after(c, r, c->sr);
                    gh_after(c, c->pos, c->pos_rel);
                    gh_end_step(c, word);
                    c->pc = P_DUTY;
                    break;
                }
                uint lo = small, hi = large;
                c->child_changed = gh_overlap(loc, small, large);
                if (c->child_changed) {
                    gh_merge(c, hdr, small, large, &lo, &hi);
                    gh_end_step(c, word);
                    gh_store(c, hi, G_KEYS, (ulong)c->large_pos * K, 0, K);
                }
                gh_free(c, hi);
                gh_after(c, c->large_pos, c->large_rel);
                c->a = lo;
            } else {
                c->child = c->has_l ? l : (c->has_r ? r : GH_NONE);
                c->child_rel = c->has_l ? c->sl : c->sr;
                c->a = c->has_l ? c->a : c->b;
                c->child_changed = false;
            }
            c->pc = P_SIFT_DECIDE;
            break;
        }
        case P_SIFT_DECIDE:
            /* a: the smaller child's keys (child_changed: not yet stored). The step being
             * built may hold the larger child's store and unlock. */
            if (c->child == GH_NONE || !gh_overlap(loc, c->c, c->a)) {
                /* The property holds below: store what changed and let go. */
                if (c->changed) gh_store(c, c->c, G_KEYS, (ulong)c->pos * K, 0, K);
                if (c->child != GH_NONE) {
                    if (c->child_changed) gh_store(c, c->a, G_KEYS, (ulong)c->child * K, 0, K);
                    gh_after(c, c->child, c->child_rel);
                }
                gh_after(c, c->pos, c->pos_rel);
                gh_end_step(c, word);
                c->pc = P_DUTY;
                break;
            }
            if (c->dirty && c->pos != 0u) {
                /* Small keys from a climb move up into this node: it may now break its own
                 * parent's order, and this DEL climbs from it after the sift. */
                c->pos_rel = GH_DELMOD;
                if (!gh_owe(c, hdr, c->pos)) {
                    gh_fail(c, hdr, GH_ERR_STATE);
                    break;
                }
            }
            {
                uint lo, hi;
                if (gh_merge_or_swap(c, loc, hdr, c->c, c->a, &lo, &hi)) gh_end_step(c, word);
                /* The node's keys are final: stored with the next level's loads. */
                gh_store(c, lo, G_KEYS, (ulong)c->pos * K, 0, K);
                gh_free(c, lo);
                gh_after(c, c->pos, c->pos_rel);
                c->c = hi;
            }
            c->pos = c->child;
            c->pos_rel = c->child_rel;
            c->changed = true;
            c->pc = P_SIFT;
            break;

        /* ---- BU-INS's climb (structures/src/gheap/concurrent.rs has the rules) ---- */
        case P_DUTY:
            /* Everything built so far has run: every array is free again, and a climb that
             * led here is over (its last unlocks applied). */
            c->free_mask = (1u << GH_ARRAYS) - 1u;
            if (c->climbing) {
                (void)asym_fetch_add(&hdr[GH_CLIMBS], 0xffffffffu); /* minus one */
                c->climbing = false;
            }
            if (c->n_duty == 0u) {
                c->pc = P_NEXT;
                break;
            }
            c->cur = c->duty[0];
            for (uint i = 1; i < c->n_duty; ++i) c->duty[i - 1] = c->duty[i];
            c->n_duty -= 1u;
            c->climb_spins = 0;
            c->climb_step = 0;
            c->climbing = true;
            c->pc = P_CLIMB;
            break;
        case P_CLIMB:
            /* Parent first, then the node: the top-down order of every lock. */
            c->up = (c->cur - 1u) / 2u;
            c->pstate = gh_lock(&word[c->up], hdr, GH_AVAIL);
            c->seen = c->pstate == GH_ABORT ? GH_ABORT : gh_lock(&word[c->cur], hdr, GH_INSHOLD);
            if (c->seen == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            if (!gh_claimed(c->seen)) {
                /* Removed by a DEL (its keys went to the root), or settled by another climb. */
                gh_unlock(&word[c->cur], c->seen);
                gh_unlock(&word[c->up], c->pstate);
                c->pc = P_DUTY;
                break;
            }
            if (c->up != 0u && gh_claimed(c->pstate)) {
                /* Another climb owns the parent: let go and wait until it has moved on, so
                 * keys from above never sink past an open violation. */
                gh_unlock(&word[c->cur], c->seen);
                gh_unlock(&word[c->up], c->pstate);
                if (c->climb_spins == 0u) gh_count(c, GH_STAT_WAITS);
                if (gh_give_up(c->climb_spins++, hdr)) {
                    gh_fail(c, hdr, GH_ERR_STALL);
                    break;
                }
                gh_backoff(&c->climb_step, &word[c->up]);
                break;
            }
            c->c = gh_alloc(c);
            c->d = gh_alloc(c);
            gh_load(c, c->c, G_KEYS, (ulong)c->up * K, 0, K);
            gh_load(c, c->d, G_KEYS, (ulong)c->cur * K, 0, K);
            gh_end_step(c, word);
            c->pc = P_CLIMB_MERGE;
            break;
        case P_CLIMB_MERGE: {
            const bool merged = gh_overlap(loc, c->c, c->d);
            if (merged) {
                gh_count(c, GH_STAT_CLIMB_MERGES);
                uint lo, hi;
                if (gh_merge_or_swap(c, loc, hdr, c->c, c->d, &lo, &hi)) gh_end_step(c, word);
                gh_store(c, lo, G_KEYS, (ulong)c->up * K, 0, K);
                gh_store(c, hi, G_KEYS, (ulong)c->cur * K, 0, K);
                gh_free(c, lo);
                gh_free(c, hi);
            } else {
                gh_free(c, c->c);
                gh_free(c, c->d);
            }
            gh_after(c, c->cur, GH_AVAIL);
            const bool stop = c->up == 0u || (!merged && c->seen == GH_INSHOLD) ||
                              !gh_holds_keys(c->pstate);
            gh_after(c, c->up, stop ? c->pstate : GH_INSHOLD);
            gh_end_step(c, word);
            if (stop) {
                c->pc = P_DUTY;
            } else {
                c->cur = c->up;
                c->pc = P_CLIMB;
            }
            break;
        }
        default:
            gh_fail(c, hdr, GH_ERR_STATE);
            break;
        }
    }
}

/* Runs the launch's operations: ops[2t] is GH_OP_INSERT (ops[2t+1] = the chunk of `in`:
 * keys [chunk·K, min(chunk·K + K, in_len)), each chunk sorted and in the ordered form by a
 * gheap_sort_batches launch before this one: an INS sorting its own batch spent 55 steps of
 * its work-group on it at K = 1024) or GH_OP_DELETE (ops[2t+1] = keys wanted, 1..K).
 * Each work-group takes operations by ticket until none is left; DEL number `seq` writes
 * out[out_base + seq·K ..]. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_run(__global KEY_T *keys, __global uint *word, __global uint *hdr,
                      __global KEY_T *partial, uint slots, __global const uint *ops, uint n_ops,
                      __global const KEY_T *in, uint in_len, __global KEY_T *out,
                      __global uint *out_len, __global uint *order, uint bottom_up,
                      ulong out_base) {
    /* The DELs' keys start `out_base` keys into `out` (the host passes one staging buffer
     * for the inserted keys and, after them, the deleted ones). */
    out += out_base;
    __local KEY_T l0[K], l1[K], l2[K], l3[K], l4[K];
    __local uint step;
    __local KEY_T *loc[GH_ARRAYS] = {l0, l1, l2, l3, l4};
    const uint lid = get_local_id(0);
    /* Work-item 0's control: its scalars in private memory (registers), the steps it builds
     * in local memory. */
    __local gh_pending queue[GH_QUEUE];
    gh_ctl ctl;
    ctl.q = queue;
    if (lid == 0) {
        GH_PROF({
            ctl.p_root_wait = ctl.p_root_hold = ctl.p_child_wait = ctl.p_del_total = 0;
            ctl.p_root_ctl = 0;
            ctl.t_in = 0;
            ctl.p_steps = ctl.p_dels = 0;
            ctl.root_held = ctl.in_del = ctl.ins_held = false;
            ctl.p_ins_wait = ctl.p_ins_hold = 0;
            ctl.p_ins = 0;
        })
        ctl.pc = P_NEXT;
        ctl.head = ctl.tail = 0;
        ctl.out_of_arrays = false;
        ctl.has_ran = false;
        gh_clear(gh_cur(&ctl));
        ctl.free_mask = (1u << GH_ARRAYS) - 1u;
        for (uint i = 0; i < GH_STATS; ++i) ctl.stat[i] = 0u;
    }
    for (;;) {
        if (lid == 0) {
            step = gh_control(&ctl, loc, keys, word, hdr, slots, ops, n_ops, in_len, out_len, order,
                              bottom_up);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        __local const gh_step *st = &queue[step].s;
        const uint n_act = st->n_act;
        if (n_act > 0 && st->act[0].code == A_EXIT) break;
        for (uint i = 0; i < n_act; ++i) gh_run_act(st->act[i], loc, keys, partial, in, out, lid);
        /* Stores are made visible device-wide before work-item 0 may release a lock after
         * this step (the barrier orders the fences before its release). */
        if (st->stores) gh_fence();
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* ======================================================================================
 * DEL-only launches (a delete call): the same TD-DEL as gheap_run's, with the group's control
 * computed by every work-item.
 *
 * A launch whose operations are all DELs meets no INS: no node is a target, none is claimed
 * by a climb (every climb of a BU-INS launch ends in it, and the host checks), so a node is
 * present (AVAIL) or not (EMPTY), and the protocol, its lock order, its linearization point
 * and its memory-ordering argument are gheap_run's (above) for that case. What differs is
 * who decides: here every work-item runs the operation's control itself, on values in local
 * memory that are equal across the group (so every branch is uniform), and work-item 0 only
 * takes and releases locks and reads the header, passing what it learnt through `sh`.
 * gheap_run's work-item 0 instead builds each step as a list of actions in local memory for
 * the group to interpret; a DEL held the root about 16 µs at K = 1024 there, 10 of them
 * work-item 0's control (docs/BENCHMARKS.md).
 *
 * The kernel is one loop of steps, each: work-item 0 lets go of the locks the last step
 * finished with (its stores fenced by every work-item and met at the barrier) and takes the
 * ones this step needs; barrier; the group's data work (loads, merges, stores) and the
 * decision of what comes next, which may run several phases while none needs a barrier;
 * a fence after stores; barrier. Both barriers sit at the top level of the loop, as in
 * gheap_run. A local array a step reads is taken again only in a later step (`later`): a
 * work-item may still be reading it while another writes.
 *
 * A level of the sift is three steps: lock both children and load them; merge them, the
 * larger half straight into the child whose largest key was larger (let go after the step);
 * merge the node with the smaller half, the node's K smallest straight to its place (let go
 * after the step), and go on with the child holding the rest.
 * ====================================================================================== */

enum {
    D_NEXT, D_BUFFER_OUT, D_SPARE, D_REFILL, D_LAST, D_LAST_MERGE, D_SIFT_LOCK,
    D_SIFT_CHILDREN, D_SIFT_NODE
};

/* The local array lowest in `free` (a bit per array), taken from it. Every work-item computes
 * the same roles. Array indices stay valid even where unused (an index of GH_NONE behind a
 * test is one speculated load away from a wild pointer). With none free (a bug: a path
 * needing more than GH_ARRAYS arrays) it hands out array 0 and sets *broken: the launch
 * fails with GH_ERR_STATE. */
inline uint gd_take(uint *free, bool *broken) {
    if (*free == 0u) {
        *broken = true;
        return 0u;
    }
    const uint i = 31u - clz(*free & (0u - *free));
    *free &= ~(1u << i);
    return i;
}

inline void gd_store(volatile __global KEY_T *dst, __local const KEY_T *src, uint n, uint lid) {
    for (uint i = lid; i < n; i += WG) dst[i] = src[i];
}

/* Locks to let go after the step (position, state), at most three. */
typedef struct {
    uint n, at[3], to[3];
} gd_releases;

/* Work-item 0 lets the locks in `r` go (the step that finished with them had its stores
 * fenced by every work-item and met at the barrier), and empties it. */
inline void gd_release(__global uint *word, gd_releases *r) {
    if (r->n > 0u) {
        gh_fence(); /* work-item 0's own header writes, before the words publishing them */
        for (uint i = 0; i < r->n; ++i) asym_store_relaxed(&word[r->at[i]], r->to[i]);
    }
    r->n = 0;
}

inline void gd_after(gd_releases *r, uint at, uint to) {
    /* Three at most (a path that needs more is a bug: the lock stays held, and the waits
     * for it end in GH_ERR_STALL). */
    if (at != GH_NONE && r->n < 3u) {
        r->at[r->n] = at;
        r->to[r->n] = to;
        r->n += 1u;
    }
}

/* Same arguments as gheap_run (`in`, `in_len` and `bottom_up` unused): every operation in
 * `ops` must be a DEL. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_delete(__global KEY_T *keys, __global uint *word, __global uint *hdr,
                         __global KEY_T *partial, uint slots, __global const uint *ops,
                         uint n_ops, __global const KEY_T *in, uint in_len, __global KEY_T *out,
                         __global uint *out_len, __global uint *order, uint bottom_up,
                         ulong out_base) {
    (void)in;
    (void)in_len;
    (void)bottom_up;
    out += out_base;
    __local KEY_T l0[K], l1[K], l2[K], l3[K], l4[K];
    __local KEY_T *loc[GH_ARRAYS] = {l0, l1, l2, l3, l4};
    /* Work-item 0's words to the group: go on (1) or leave (0), then the phase's. */
    __local uint sh[5];
    const uint lid = get_local_id(0);
    volatile __global KEY_T *vkeys = (volatile __global KEY_T *)keys;
    volatile __global KEY_T *vpart = (volatile __global KEY_T *)partial;
    uint merges = 0, swaps = 0; /* work-item 0's are added to the header */
    gd_releases rel;
    rel.n = 0;
    /* The operation's state, the same in every work-item. */
    uint phase = D_NEXT;
    uint want = 0, count = 0, plen = 0, seq = 0, spare = 0, last = 0;
    /* Local arrays free to take in this step, and those the step reads and frees (free
     * from the next step on: a work-item may still read one while another takes it). */
    uint free = 0, later = 0;
    uint p = 0, d = 0, c = 0, a = 0, b = 0, small = 0;
    uint pos = 0, child = GH_NONE, large_pos = GH_NONE;
    bool has_d = false, has_l = false, has_r = false, child_changed = false, spare_due = false;
    bool broken = false;
    __global KEY_T *dst = out;
    for (;;) {
        /* Work-item 0: the last step's releases, then this step's locks. */
        if (lid == 0u) {
            if (broken) {
                (void)asym_cas(&hdr[GH_ERROR], 0u, GH_ERR_STATE);
                rel.n = 0;
            }
            gd_release(word, &rel);
            uint go = broken ? 0u : 1u;
            if (go == 0u) {
                /* leave */
            } else if (phase == D_NEXT) {
                const uint t = asym_load_relaxed(&hdr[GH_ERROR]) != 0u
                                   ? n_ops
                                   : asym_fetch_add(&hdr[GH_TICKET], 1u);
                go = t < n_ops ? 1u : 0u;
                if (go != 0u && gh_lock(&word[0], hdr, GH_AVAIL) == GH_ABORT) go = 0u;
                if (go != 0u) {
                    const gh_header h = gh_take_effect(hdr, order, t);
                    asym_store_relaxed(&hdr[GH_SEQ], h.seq + 1u);
                    sh[1] = ops[2u * t + 1u];
                    sh[2] = h.count;
                    sh[3] = h.plen;
                    sh[4] = h.seq;
                }
            } else if (phase == D_LAST) {
                const uint st = gh_lock(&word[last], hdr, GH_AVAIL);
                if (st != GH_AVAIL) {
                    if (st != GH_ABORT) (void)asym_cas(&hdr[GH_ERROR], 0u, GH_ERR_STATE);
                    go = 0u;
                }
            } else if (phase == D_SIFT_LOCK) {
                const uint l = 2u * pos + 1u, r = l + 1u;
                const uint at[2] = {l < slots ? l : GH_NONE, r < slots ? r : GH_NONE};
                uint state[2] = {GH_ABORT, GH_ABORT};
                gh_lock_many(word, hdr, 2u, at, GH_AVAIL, state);
                go = state[0] == GH_ABORT || state[1] == GH_ABORT ? 0u : 1u;
                for (uint i = 0; i < 2u && go != 0u; ++i) {
                    /* An absent child goes at once; anything but AVAIL or EMPTY is not a
                     * DEL-only launch's. */
                    if (state[i] == GH_EMPTY) {
                        gh_unlock(&word[at[i]], GH_EMPTY);
                    } else if (state[i] != GH_AVAIL && state[i] != GH_NONE) {
                        (void)asym_cas(&hdr[GH_ERROR], 0u, GH_ERR_STATE);
                        go = 0u;
                    }
                }
                sh[1] = state[0] == GH_AVAIL ? 1u : 0u;
                sh[2] = state[1] == GH_AVAIL ? 1u : 0u;
            }
            sh[0] = go;
        }
        rel.n = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (sh[0] == 0u) break;
        bool stores = false;
        free |= later;
        later = 0;
        for (bool more = true; more;) {
            more = false;
            switch (phase) {
            case D_NEXT:
                want = sh[1];
                count = sh[2];
                plen = sh[3];
                seq = sh[4];
                dst = out + (ulong)seq * K;
                free = ((1u << GH_ARRAYS) - 1u) & ~3u; /* l0, l1 loaded here */
                if (count == 0u) {
                    /* Only the buffer holds keys. */
                    gh_load_keys(l0, vpart, 0u, plen, lid);
                    phase = D_BUFFER_OUT;
                    break;
                }
                /* The root's first keys go out; the rest (l0) and the buffer (l1) are the
                 * spare keys, smaller than everything below. */
                for (uint i = lid; i < want; i += WG) dst[i] = ASYM_ORDERED(vkeys[i]);
                gh_load_keys(l0, vkeys, want, K, lid);
                gh_load_keys(l1, vpart, 0u, plen, lid);
                if (lid == 0u) out_len[seq] = want;
                spare = K - want + plen;
                has_d = want < K && plen > 0u;
                phase = D_SPARE;
                break;
            case D_BUFFER_OUT: {
                /* Its first keys go out, the rest move to its front. */
                const uint take = min(want, plen);
                for (uint i = lid; i < take; i += WG) dst[i] = ASYM_ORDERED(l0[i]);
                for (uint i = lid; i + take < plen; i += WG) vpart[i] = l0[i + take];
                if (lid == 0u) {
                    out_len[seq] = take;
                    asym_store_relaxed(&hdr[GH_PLEN], plen - take);
                }
                stores = true;
                gd_after(&rel, 0u, GH_AVAIL);
                phase = D_NEXT;
                break;
            }
            case D_SPARE:
                /* p: the spare keys' first K; d: the rest (when both gave some). */
                if (has_d) {
                    p = gd_take(&free, &broken);
                    d = gd_take(&free, &broken);
                    gheap_merge_path_to(l0, l1, loc[p], loc[d], 0, 0, lid);
                    merges += 1u;
                    later |= 3u;
                    phase = D_REFILL;
                    break;
                }
                p = want < K ? 0u : 1u;
                d = p;
                later |= 3u & ~(1u << p);
                phase = D_REFILL;
                more = true;
                break;
            case D_REFILL:
                if (spare >= K) {
                    /* The K smallest spare keys refill the root (d exists: the buffer held
                     * keys and the root some besides those taken); the node count stays. */
                    c = p;
                    gd_store(vpart, loc[d], spare - K, lid);
                    later |= 1u << d;
                    if (lid == 0u) asym_store_relaxed(&hdr[GH_PLEN], spare - K);
                    stores = true;
                    pos = 0u;
                    phase = D_SIFT_LOCK;
                    break;
                }
                /* The last node refills the root. */
                last = gh_position(count - 1u);
                if (lid == 0u) {
                    asym_store_relaxed(&hdr[GH_COUNT], count - 1u);
                    asym_store_relaxed(&hdr[GH_PLEN], spare);
                }
                if (last == 0u) {
                    gd_store(vpart, loc[p], spare, lid);
                    stores = true;
                    gd_after(&rel, 0u, GH_AVAIL);
                    phase = D_NEXT;
                    break;
                }
                if (has_d) later |= 1u << d;
                phase = D_LAST; /* work-item 0 locks it */
                break;
            case D_LAST:
                c = gd_take(&free, &broken);
                gh_load_keys(loc[c], vkeys + (ulong)last * K, 0u, K, lid);
                /* Nothing writes the node before an INS targets it again, which needs the
                 * root: it goes as soon as its keys are read. */
                gd_after(&rel, last, GH_EMPTY);
                if (spare == 0u) {
                    /* No spare keys to merge with: the sift can lock the children now. */
                    later |= 1u << p;
                    pos = 0u;
                    spare_due = false;
                    phase = D_SIFT_LOCK;
                    break;
                }
                phase = D_LAST_MERGE;
                break;
            case D_LAST_MERGE:
                pos = 0u;
                phase = D_SIFT_LOCK;
                spare_due = spare > 0u;
                if (spare > 0u && loc[c][K - 1] > loc[p][0]) {
                    if (loc[p][K - 1] <= loc[c][0]) {
                        const uint x = c; /* the seed's swap */
                        c = p;
                        p = x;
                        swaps += 1u;
                    } else {
                        const uint lo = gd_take(&free, &broken), hi = gd_take(&free, &broken);
                        gheap_merge_path_to(loc[c], loc[p], loc[lo], loc[hi], 0, 0, lid);
                        merges += 1u;
                        later |= (1u << c) | (1u << p);
                        c = lo;
                        p = hi;
                        break; /* the buffer's store goes with the children's loads */
                    }
                }
                if (spare_due) gd_store(vpart, loc[p], spare, lid);
                spare_due = false;
                stores = true;
                later |= 1u << p;
                break;
            case D_SIFT_LOCK: {
                /* Work-item 0 holds the children present (sh[1], sh[2]). */
                const uint l = 2u * pos + 1u;
                if (spare_due) {
                    gd_store(vpart, loc[p], spare, lid);
                    later |= 1u << p;
                    stores = true;
                    spare_due = false;
                }
                has_l = sh[1] != 0u;
                has_r = sh[2] != 0u;
                a = has_l ? gd_take(&free, &broken) : c;
                b = has_r ? gd_take(&free, &broken) : c;
                if (has_l) gh_load_keys(loc[a], vkeys + (ulong)l * K, 0u, K, lid);
                if (has_r) gh_load_keys(loc[b], vkeys + (ulong)(l + 1u) * K, 0u, K, lid);
                phase = D_SIFT_CHILDREN;
                break;
            }
            case D_SIFT_CHILDREN: {
                const uint l = 2u * pos + 1u, r = l + 1u;
                child = GH_NONE;
                small = c;
                child_changed = false;
                phase = D_SIFT_NODE;
                more = true;
                if (has_l && has_r) {
                    /* The larger half goes back into the child whose largest key was larger. */
                    const bool l_larger = loc[a][K - 1] > loc[b][K - 1];
                    small = l_larger ? b : a;
                    const uint large = l_larger ? a : b;
                    large_pos = l_larger ? l : r;
                    child = l_larger ? r : l;
                    if (loc[c][K - 1] <= min(loc[a][0], loc[b][0])) {
                        /* No larger than either child: nothing below changes. */
                        gd_store(vkeys + (ulong)pos * K, loc[c], K, lid);
                        stores = true;
                        gd_after(&rel, l, GH_AVAIL);
                        gd_after(&rel, r, GH_AVAIL);
                        gd_after(&rel, pos, GH_AVAIL);
                        phase = D_NEXT;
                        more = false;
                        break;
                    }
                    gd_after(&rel, large_pos, GH_AVAIL);
                    child_changed = loc[small][K - 1] > loc[large][0];
                    if (child_changed) {
                        const uint lo = gd_take(&free, &broken), hi = gd_take(&free, &broken);
                        gheap_merge_path_to(loc[small], loc[large], loc[lo], loc[hi], 0,
                                            vkeys + (ulong)large_pos * K, lid);
                        merges += 1u;
                        stores = true;
                        later |= (1u << small) | (1u << large) | (1u << hi);
                        small = lo;
                        more = false; /* the node's merge reads lo after the barrier */
                    } else {
                        later |= 1u << large;
                    }
                } else if (has_l || has_r) {
                    child = has_l ? l : r;
                    small = has_l ? a : b;
                }
                break;
            }
            case D_SIFT_NODE:
                /* small: the smaller child's keys (child_changed: not yet stored). */
                if (child == GH_NONE || !(loc[c][K - 1] > loc[small][0])) {
                    /* The property holds below: store what changed and let go. */
                    gd_store(vkeys + (ulong)pos * K, loc[c], K, lid);
                    if (child_changed) gd_store(vkeys + (ulong)child * K, loc[small], K, lid);
                    stores = true;
                    gd_after(&rel, pos, GH_AVAIL);
                    gd_after(&rel, child, GH_AVAIL);
                    phase = D_NEXT;
                    break;
                }
                /* The node keeps the K smallest of itself and the smaller child, stored
                 * straight to its place; the rest go down into that child. */
                if (loc[small][K - 1] <= loc[c][0]) {
                    gd_store(vkeys + (ulong)pos * K, loc[small], K, lid);
                    swaps += 1u;
                    later |= 1u << small;
                } else {
                    const uint lo = gd_take(&free, &broken), hi = gd_take(&free, &broken);
                    gheap_merge_path_to(loc[c], loc[small], loc[lo], loc[hi],
                                        vkeys + (ulong)pos * K, 0, lid);
                    merges += 1u;
                    later |= (1u << c) | (1u << small) | (1u << lo);
                    c = hi;
                }
                stores = true;
                gd_after(&rel, pos, GH_AVAIL);
                pos = child;
                phase = D_SIFT_LOCK;
                break;
            default:
                break;
            }
        }
        /* Stores are made visible device-wide before work-item 0 lets a lock go after this
         * step (the barrier orders the fences before its release). */
        if (stores) gh_fence();
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0u) {
        if (merges != 0u) (void)asym_fetch_add(&hdr[GH_STAT_MERGES], merges);
        if (swaps != 0u) (void)asym_fetch_add(&hdr[GH_STAT_SWAPS], swaps);
    }
}

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


/* Copies src[src_at .. src_at + n) to dst[dst_at ..) (growing the heap's arrays between
 * launches, reading the root for peek, a call's keys to or from a caller's device buffer).
 * The ranges must not overlap: work-items copy in no particular order. */
kernel void gheap_copy_keys(__global const KEY_T *src, ulong src_at, __global KEY_T *dst,
                            ulong dst_at, ulong n) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) dst[dst_at + i] = src[src_at + i];
}
