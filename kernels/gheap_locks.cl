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
 * root section shortened by 5 % on the GPU machine). GH_NONE: no guess. */
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

#endif /* K <= GH_MAX_K */
