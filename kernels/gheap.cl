/* The generalized heap's batch operations on the throughput device (concurrent-heap seed,
 * section 4): a work-group sorts one batch of K keys by bitonic sort in local memory, and
 * carries out MergeAndSort of two sorted batches by merge path. These are the building blocks
 * of the device heap's INS and DEL; this file holds them as kernels of their own, one batch
 * (or pair of batches) per work-group, so they can be tested and measured alone.
 *
 * Build options: -DK=<keys per batch: power of two, 2..2048>, -DWG=<work-group size: power
 * of two, at most K>. Keys are int32 in the "ordered" form (signed comparison is the keys'
 * order; the host maps u32 and f32 as the k-selection does).
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

/* Merge path: out[0..2K) = the stable merge of sorted a[0..K) and b[0..K) (ties: a first).
 * All WG work-items must call it; out must be ready for reading after the caller's barrier. */
inline void gheap_merge_path(__local const KEY_T *a, __local const KEY_T *b, __local KEY_T *out,
                             uint lid) {
    const uint per = (2 * K) / WG;
    const uint d = lid * per;
    /* x = how many of the first d outputs come from a. */
    uint lo = d > K ? d - K : 0, hi = min(d, (uint)K);
    while (lo < hi) {
        const uint mid = (lo + hi) / 2;
        if (a[mid] <= b[d - mid - 1]) lo = mid + 1;
        else hi = mid;
    }
    uint i = lo, j = d - lo;
    for (uint t = 0; t < per; ++t) {
        const KEY_T av = a[min(i, (uint)K - 1)];
        const KEY_T bv = b[min(j, (uint)K - 1)];
        const bool take_a = j >= K || (i < K && av <= bv);
        out[d + t] = take_a ? av : bv;
        i += take_a ? 1u : 0u;
        j += take_a ? 0u : 1u;
    }
}

/* Sorts each of `batches` consecutive batches of K keys in place: one work-group per batch. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_sort_batches(__global KEY_T *keys, uint batches) {
    __local KEY_T s[K];
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    if (g >= batches) return; /* whole group */
    __global KEY_T *batch = keys + (ulong)g * K;
    for (uint i = lid; i < K; i += WG) s[i] = batch[i];
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
    gheap_merge_path(la, lb, out, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < K; i += WG) {
        ga[i] = out[i];
        gb[i] = out[K + i];
    }
}

/* ======================================================================================
 * The device generalized heap: INS and DEL from many work-groups at once (the seed's
 * TD-INS/TD-DEL heap, section 3.2), each work-group running one operation at a time and
 * taking operations from a ticket counter until the launch's list is done.
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
 * keys; HANDED the INS left them there for that DEL.
 *
 * Structure: work-item 0 runs the operation's control as a state machine (gh_control):
 * it takes and releases locks (compare-and-swap from an unlocked word to the same word with
 * GH_LOCKED; release by a store of the new state), reads the header, decides, and hands the
 * group one data-parallel step at a time (gh_mop: load a node into local memory, a bitonic
 * stage, a merge-path merge, a store...). Every step is bracketed by two barriers at the top
 * level of the kernel's single loop; no barrier sits in a branch. (A first version with
 * barriers inside conditional helpers took PoCL eight minutes to compile per kernel shape:
 * its barrier tail replication grows with every conditional barrier.)
 *
 * Deadlock freedom: both operations lock top-down, a child before letting go of its parent
 * (siblings left before right), so waits cannot form a cycle; a lock is only ever held by a
 * group that is running (it took the lock), so groups not yet resident on the device hold
 * nothing and oversubscription cannot deadlock. A DEL waiting for a hand-over holds only the
 * root, and the INS it waits for needs only nodes below the root.
 *
 * Memory ordering: keys a group reads were stored by the previous holder of the lock before
 * it released it: every work-item fences its global stores after each step (gh_fence), the
 * group meets at the barrier, and only then does work-item 0 release (asym_store_release).
 * The next holder's work-item 0 acquires (asym_cas, then a fence), the group meets at the
 * barrier, and every work-item reads nodes through volatile pointers, which go past a
 * non-coherent L1 (NVIDIA caches global loads per multiprocessor). On the fine transport the
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
#if K <= 1024

#define GH_EMPTY 0u
#define GH_AVAIL 1u
#define GH_TARGET 2u
#define GH_MARKED 3u
#define GH_HANDED 4u
#define GH_LOCKED 0x100u
#define GH_ABORT 0xffffffffu
#define GH_NONE 0xfffffffeu

#define GH_COUNT 0
#define GH_PLEN 1
#define GH_SEQ 2
#define GH_TICKET 3
#define GH_ERROR 4
#define GH_MAX_NODES 5
#define GH_LIN 6

#define GH_ERR_STALL 1u
#define GH_ERR_CAPACITY 2u
#define GH_ERR_STATE 3u

#ifndef GH_SPIN_LIMIT
#define GH_SPIN_LIMIT (1u << 20)
#endif

#define GH_OP_INSERT 0u
#define GH_OP_DELETE 1u

inline void gh_fence(void) {
#ifdef ASYM_FINE
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_acq_rel, memory_scope_device);
#else
    mem_fence(CLK_GLOBAL_MEM_FENCE);
#endif
}

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

/* Takes the lock of `w`; returns the state it held, or GH_ABORT (wait past its bound, or
 * another group recorded an error). */
inline uint gh_lock(__global uint *w, __global uint *hdr) {
    uint step = 0;
    for (uint spins = 0;; ++spins) {
        const uint v = asym_load_relaxed(w);
        if ((v & GH_LOCKED) == 0u && asym_cas(w, v, v | GH_LOCKED)) {
            gh_fence();
            return v;
        }
        if (asym_load_relaxed(&hdr[GH_ERROR]) != 0u) return GH_ABORT;
        if (spins >= GH_SPIN_LIMIT) {
            (void)asym_cas(&hdr[GH_ERROR], 0u, GH_ERR_STALL);
            return GH_ABORT;
        }
        asym_backoff(&step, w);
    }
}

/* Waits until `w` holds exactly `from` (unlocked) and swaps in `to`: an INS reserving its
 * target (`from` EMPTY), a DEL taking handed keys (`from` HANDED, `to` locked). */
inline bool gh_wait_swap(__global uint *w, __global uint *hdr, uint from, uint to) {
    uint step = 0;
    for (uint spins = 0;; ++spins) {
        if (asym_load_relaxed(w) == from && asym_cas(w, from, to)) {
            gh_fence();
            return true;
        }
        if (asym_load_relaxed(&hdr[GH_ERROR]) != 0u) return false;
        if (spins >= GH_SPIN_LIMIT) {
            (void)asym_cas(&hdr[GH_ERROR], 0u, GH_ERR_STALL);
            return false;
        }
        asym_backoff(&step, w);
    }
}

/* Releases a lock with the node's new state (after the group's stores were fenced and met
 * at a barrier). */
inline void gh_unlock(__global uint *w, uint state) { asym_store_release(w, state); }

/* ---- Data-parallel steps (gh_mop), run by the whole group between two barriers ---- */

#define MO_NONE 0u   /* nothing: work-item 0 only needed a barrier                      */
#define MO_EXIT 1u   /* the group leaves                                                */
#define MO_LOAD 2u   /* loc[x][0..K) = glob[y][off..off+n), padded with KEY_MAX        */
#define MO_STORE 3u  /* glob[y][off..off+n) = loc[x][from..from+n)                       */
#define MO_SORT 4u   /* bitonic stage (k = off, j = n) over loc[x]                      */
#define MO_MERGE 5u  /* loc[M] = merge path of loc[x] and loc[y]                         */
#define MO_SPLIT 6u  /* loc[x] = loc[M][0..K), loc[y] = loc[M][K..2K) (GH_NONE: skipped) */
#define MO_SHIFT 7u  /* loc[x][i] = loc[y][i + from], KEY_MAX past the end               */
#define MO_COPY 8u   /* loc[x] = loc[y]                                                  */

/* Local arrays: A, B, C (nodes and the buffer), D (the batch an INS carries), M (2K). */
#define LA 0u
#define LB 1u
#define LC 2u
#define LD 3u
#define LM 4u
/* Global arrays. */
#define G_KEYS 0u
#define G_PARTIAL 1u
#define G_IN 2u
#define G_OUT 3u

typedef struct {
    uint code, x, y, from, n;
    ulong off;
} gh_mop;

inline gh_mop gh_make(uint code, uint x, uint y, ulong off, uint from, uint n) {
    gh_mop m;
    m.code = code;
    m.x = x;
    m.y = y;
    m.off = off;
    m.from = from;
    m.n = n;
    return m;
}

/* ---- Work-item 0's control: the operations as a state machine ---- */

enum {
    P_NEXT, P_SORT, P_INS_LOCK, P_INS_SPLIT, P_INS_BUF_ROOT, P_INS_BUF_STORE, P_UNLOCK_ROOT,
    P_INS_ROOT_MERGE, P_INS_DOWN, P_INS_RELEASE, P_INS_NODE_MERGE, P_INS_FINISH,
    P_DEL_LOCK, P_DEL_SPARE, P_DEL_TAKE, P_DEL_REFILL, P_SIFT, P_SIFT_CHILDREN,
    P_SIFT_RELEASE_LARGE, P_SIFT_DECIDE, P_SIFT_END, P_SIFT_STEP
};

#define GH_QUEUE 8

typedef struct {
    uint pc;
    uint qlen, qpos;
    gh_mop q[GH_QUEUE];
    /* the operation */
    uint t, n, want, count, plen, total, target, depth, level, held, pos, st, seq, spare, last;
    uint sort_k, sort_j, child, ck, large_pos, sl, sr;
    bool changed, child_changed, has_l, has_r;
} gh_ctl;

inline void gh_push(gh_ctl *c, gh_mop m) { c->q[c->qlen++] = m; }

/* Records `code` (the first error wins) and makes the group leave. */
inline void gh_fail(gh_ctl *c, __global uint *hdr, uint code) {
    (void)asym_cas(&hdr[GH_ERROR], 0u, code);
    c->qlen = 0;
    c->qpos = 0;
    gh_push(c, gh_make(MO_EXIT, 0, 0, 0, 0, 0));
}

inline void gh_merge_steps(gh_ctl *c, uint a, uint b) {
    gh_push(c, gh_make(MO_MERGE, a, b, 0, 0, 0));
    gh_push(c, gh_make(MO_SPLIT, a, b, 0, 0, 0));
}

/* Under the root lock: the operation takes effect here; the host reads the order. */
inline void gh_linearize(gh_ctl *c, __global uint *hdr, __global uint *order) {
    const uint lin = asym_load_relaxed(&hdr[GH_LIN]);
    asym_store_relaxed(&hdr[GH_LIN], lin + 1u);
    order[lin] = c->t;
}

/* The next step for the group. `loc` are the group's local arrays, readable here because
 * every call follows a barrier. */
inline gh_mop gh_control(gh_ctl *c, __local KEY_T *loc[5], __global uint *word,
                         __global uint *hdr, uint slots, __global const uint *ops, uint n_ops,
                         uint in_len, __global uint *out_len, __global uint *order) {
    for (;;) {
        if (c->qpos < c->qlen) {
            gh_mop m = c->q[c->qpos++];
            if (c->qpos == c->qlen) c->qpos = c->qlen = 0;
            return m;
        }
        switch (c->pc) {
        case P_NEXT: {
            const uint t = asym_load_relaxed(&hdr[GH_ERROR]) != 0u
                               ? n_ops
                               : asym_fetch_add(&hdr[GH_TICKET], 1u);
            if (t >= n_ops) return gh_make(MO_EXIT, 0, 0, 0, 0, 0);
            const uint kind = ops[2u * t], arg = ops[2u * t + 1u];
            c->t = t;
            if (kind == GH_OP_INSERT) {
                const ulong start = (ulong)arg * K;
                c->n = (uint)min((ulong)K, (ulong)in_len - start);
                gh_push(c, gh_make(MO_LOAD, LD, G_IN, start, 0, c->n));
                c->sort_k = 2;
                c->sort_j = 1;
                c->pc = P_SORT;
            } else {
                c->want = arg;
                c->pc = P_DEL_LOCK;
            }
            break;
        }
        case P_SORT:
            if (c->sort_k > K) {
                c->pc = P_INS_LOCK;
                break;
            }
            gh_push(c, gh_make(MO_SORT, LD, 0, c->sort_k, 0, c->sort_j));
            c->sort_j >>= 1;
            if (c->sort_j == 0) {
                c->sort_k <<= 1;
                c->sort_j = c->sort_k >> 1;
            }
            break;

        /* ---- INS (TD-INS) ---- */
        case P_INS_LOCK:
            if (gh_lock(&word[0], hdr) == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            gh_linearize(c, hdr, order);
            c->count = asym_load_relaxed(&hdr[GH_COUNT]);
            c->plen = asym_load_relaxed(&hdr[GH_PLEN]);
            gh_push(c, gh_make(MO_LOAD, LA, G_PARTIAL, 0, 0, c->plen));
            gh_push(c, gh_make(MO_MERGE, LA, LD, 0, 0, 0));
            c->pc = P_INS_SPLIT;
            break;
        case P_INS_SPLIT:
            c->total = c->plen + c->n;
            if (c->total < K) {
                /* Everything stays in the buffer, after a MergeAndSort with the root. */
                gh_push(c, gh_make(MO_SPLIT, LA, GH_NONE, 0, 0, 0));
                if (c->count > 0) {
                    gh_push(c, gh_make(MO_LOAD, LC, G_KEYS, 0, 0, K));
                    c->pc = P_INS_BUF_ROOT;
                } else {
                    c->pc = P_INS_BUF_STORE;
                }
                break;
            }
            if (c->count >= asym_load_relaxed(&hdr[GH_MAX_NODES])) {
                /* The host grows the heap before every launch: the last line of defence. */
                gh_unlock(&word[0], GH_AVAIL);
                gh_fail(c, hdr, GH_ERR_CAPACITY);
                break;
            }
            /* The K smallest travel down as the new node; the rest stay in the buffer. */
            gh_push(c, gh_make(MO_SPLIT, LD, LA, 0, 0, 0));
            gh_push(c, gh_make(MO_STORE, LA, G_PARTIAL, 0, 0, c->total - K));
            asym_store_relaxed(&hdr[GH_PLEN], c->total - K);
            asym_store_relaxed(&hdr[GH_COUNT], c->count + 1u);
            if (c->count == 0) {
                gh_push(c, gh_make(MO_STORE, LD, G_KEYS, 0, 0, K));
                c->pc = P_UNLOCK_ROOT;
                break;
            }
            c->target = gh_position(c->count);
            if (c->target >= slots) {
                gh_fail(c, hdr, GH_ERR_CAPACITY);
                break;
            }
            /* Reserve the target (a DEL sifting down may hold its lock for a moment). */
            if (!gh_wait_swap(&word[c->target], hdr, GH_EMPTY, GH_TARGET)) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            gh_push(c, gh_make(MO_LOAD, LC, G_KEYS, 0, 0, K));
            c->depth = 31u - clz(c->target + 1u);
            c->level = 1;
            c->held = 0;
            c->pc = P_INS_ROOT_MERGE;
            break;
        case P_INS_BUF_ROOT:
            if (loc[LC][K - 1] > loc[LA][0]) {
                gh_merge_steps(c, LC, LA);
                gh_push(c, gh_make(MO_STORE, LC, G_KEYS, 0, 0, K));
            }
            c->pc = P_INS_BUF_STORE;
            break;
        case P_INS_BUF_STORE:
            gh_push(c, gh_make(MO_STORE, LA, G_PARTIAL, 0, 0, c->total));
            asym_store_relaxed(&hdr[GH_PLEN], c->total);
            c->pc = P_UNLOCK_ROOT;
            break;
        case P_UNLOCK_ROOT:
            gh_unlock(&word[0], GH_AVAIL);
            c->pc = P_NEXT;
            break;
        case P_INS_ROOT_MERGE:
        case P_INS_NODE_MERGE:
            /* C: the node on the path, D: the carried batch. */
            c->changed = loc[LC][K - 1] > loc[LD][0];
            if (c->changed) gh_merge_steps(c, LC, LD);
            c->pc = P_INS_DOWN;
            break;
        case P_INS_DOWN:
            c->pos = ((c->target + 1u) >> (c->depth - c->level)) - 1u;
            c->st = gh_lock(&word[c->pos], hdr);
            if (c->st == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            if (c->changed) {
                gh_push(c, gh_make(MO_STORE, LC, G_KEYS, (ulong)c->held * K, 0, K));
            }
            c->pc = P_INS_RELEASE;
            break;
        case P_INS_RELEASE:
            gh_unlock(&word[c->held], GH_AVAIL);
            if (c->pos == c->target) {
                gh_push(c, gh_make(MO_STORE, LD, G_KEYS, (ulong)c->pos * K, 0, K));
                c->pc = P_INS_FINISH;
                break;
            }
            if (c->st != GH_AVAIL) {
                gh_fail(c, hdr, GH_ERR_STATE);
                break;
            }
            gh_push(c, gh_make(MO_LOAD, LC, G_KEYS, (ulong)c->pos * K, 0, K));
            c->held = c->pos;
            c->level += 1u;
            c->pc = P_INS_NODE_MERGE;
            break;
        case P_INS_FINISH:
            if (c->st == GH_MARKED) {
                gh_unlock(&word[c->pos], GH_HANDED);
            } else if (c->st == GH_TARGET) {
                gh_unlock(&word[c->pos], GH_AVAIL);
            } else {
                gh_fail(c, hdr, GH_ERR_STATE);
                break;
            }
            c->pc = P_NEXT;
            break;

        /* ---- DEL (TD-DEL) ---- */
        case P_DEL_LOCK:
            if (gh_lock(&word[0], hdr) == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            gh_linearize(c, hdr, order);
            c->count = asym_load_relaxed(&hdr[GH_COUNT]);
            c->plen = asym_load_relaxed(&hdr[GH_PLEN]);
            c->seq = asym_load_relaxed(&hdr[GH_SEQ]);
            asym_store_relaxed(&hdr[GH_SEQ], c->seq + 1u);
            if (c->count == 0) {
                const uint take = min(c->want, c->plen);
                gh_push(c, gh_make(MO_LOAD, LA, G_PARTIAL, 0, 0, c->plen));
                gh_push(c, gh_make(MO_STORE, LA, G_OUT, (ulong)c->seq * K, 0, take));
                gh_push(c, gh_make(MO_STORE, LA, G_PARTIAL, 0, take, c->plen - take));
                out_len[c->seq] = take;
                asym_store_relaxed(&hdr[GH_PLEN], c->plen - take);
                c->pc = P_UNLOCK_ROOT;
                break;
            }
            /* The root's keys not returned, merged with the buffer: smaller than the rest. */
            gh_push(c, gh_make(MO_LOAD, LC, G_KEYS, 0, 0, K));
            gh_push(c, gh_make(MO_LOAD, LB, G_PARTIAL, 0, 0, c->plen));
            gh_push(c, gh_make(MO_STORE, LC, G_OUT, (ulong)c->seq * K, 0, c->want));
            gh_push(c, gh_make(MO_SHIFT, LA, LC, 0, c->want, 0));
            gh_push(c, gh_make(MO_MERGE, LA, LB, 0, 0, 0));
            out_len[c->seq] = c->want;
            c->spare = K - c->want + c->plen;
            c->pc = P_DEL_SPARE;
            break;
        case P_DEL_SPARE:
            if (c->spare >= K) {
                /* The K smallest spare keys refill the root; the node count stays. */
                gh_push(c, gh_make(MO_SPLIT, LC, LA, 0, 0, 0));
                gh_push(c, gh_make(MO_STORE, LA, G_PARTIAL, 0, 0, c->spare - K));
                asym_store_relaxed(&hdr[GH_PLEN], c->spare - K);
                c->pos = 0;
                c->changed = true;
                c->pc = P_SIFT;
                break;
            }
            /* The last node refills the root. */
            c->last = gh_position(c->count - 1u);
            asym_store_relaxed(&hdr[GH_COUNT], c->count - 1u);
            if (c->last == 0) {
                gh_push(c, gh_make(MO_STORE, LM, G_PARTIAL, 0, 0, c->spare));
                asym_store_relaxed(&hdr[GH_PLEN], c->spare);
                c->pc = P_UNLOCK_ROOT;
                break;
            }
            gh_push(c, gh_make(MO_SPLIT, LA, GH_NONE, 0, 0, 0));
            c->st = gh_lock(&word[c->last], hdr);
            if (c->st == GH_TARGET) {
                /* Its INS is still on the way: mark it and wait (holding the root). */
                gh_unlock(&word[c->last], GH_MARKED);
                if (!gh_wait_swap(&word[c->last], hdr, GH_HANDED, GH_HANDED | GH_LOCKED)) {
                    gh_fail(c, hdr, GH_ERR_STALL);
                    break;
                }
            } else if (c->st != GH_AVAIL) {
                gh_fail(c, hdr, c->st == GH_ABORT ? GH_ERR_STALL : GH_ERR_STATE);
                break;
            }
            gh_push(c, gh_make(MO_LOAD, LC, G_KEYS, (ulong)c->last * K, 0, K));
            c->pc = P_DEL_TAKE;
            break;
        case P_DEL_TAKE:
            /* The keys are in C; nothing writes the node before an INS targets it again,
             * which needs the root. */
            gh_unlock(&word[c->last], GH_EMPTY);
            if (loc[LC][K - 1] > loc[LA][0]) gh_merge_steps(c, LC, LA);
            c->pc = P_DEL_REFILL;
            break;
        case P_DEL_REFILL:
            gh_push(c, gh_make(MO_STORE, LA, G_PARTIAL, 0, 0, c->spare));
            asym_store_relaxed(&hdr[GH_PLEN], c->spare);
            c->pos = 0;
            c->changed = true;
            c->pc = P_SIFT;
            break;

        /* ---- TD-DEL's sift-down: the group holds `pos`, its keys in C ---- */
        case P_SIFT: {
            const uint l = 2u * c->pos + 1u, r = l + 1u;
            c->sl = l < slots ? gh_lock(&word[l], hdr) : GH_NONE;
            c->sr = (r < slots && c->sl != GH_ABORT) ? gh_lock(&word[r], hdr) : GH_NONE;
            if (c->sl == GH_ABORT || c->sr == GH_ABORT) {
                gh_fail(c, hdr, GH_ERR_STALL);
                break;
            }
            c->has_l = c->sl == GH_AVAIL;
            c->has_r = c->sr == GH_AVAIL;
            /* An absent child (empty, or a target whose INS is behind us) is let go now. */
            if (c->sl != GH_NONE && !c->has_l) gh_unlock(&word[l], c->sl);
            if (c->sr != GH_NONE && !c->has_r) gh_unlock(&word[r], c->sr);
            if (c->has_l) gh_push(c, gh_make(MO_LOAD, LA, G_KEYS, (ulong)l * K, 0, K));
            if (c->has_r) gh_push(c, gh_make(MO_LOAD, LB, G_KEYS, (ulong)r * K, 0, K));
            c->pc = P_SIFT_CHILDREN;
            break;
        }
        case P_SIFT_CHILDREN: {
            const uint l = 2u * c->pos + 1u, r = l + 1u;
            c->child_changed = false;
            if (c->has_l && c->has_r) {
                /* The larger half goes back into the child whose largest key was larger. */
                const bool l_larger = loc[LA][K - 1] > loc[LB][K - 1];
                const uint small = l_larger ? LB : LA, large = l_larger ? LA : LB;
                c->large_pos = l_larger ? l : r;
                c->child = l_larger ? r : l;
                c->ck = small;
                c->child_changed = loc[small][K - 1] > loc[large][0];
                if (c->child_changed) {
                    gh_merge_steps(c, small, large);
                    gh_push(c, gh_make(MO_STORE, large, G_KEYS, (ulong)c->large_pos * K, 0, K));
                }
                c->pc = P_SIFT_RELEASE_LARGE;
                break;
            }
            c->child = c->has_l ? l : (c->has_r ? r : GH_NONE);
            c->ck = c->has_l ? LA : LB;
            c->pc = P_SIFT_DECIDE;
            break;
        }
        case P_SIFT_RELEASE_LARGE:
            gh_unlock(&word[c->large_pos], GH_AVAIL);
            c->pc = P_SIFT_DECIDE;
            break;
        case P_SIFT_DECIDE:
            if (c->child == GH_NONE || loc[LC][K - 1] <= loc[c->ck][0]) {
                /* The property holds below: store what changed and let go. */
                if (c->changed) gh_push(c, gh_make(MO_STORE, LC, G_KEYS, (ulong)c->pos * K, 0, K));
                if (c->child != GH_NONE && c->child_changed) {
                    gh_push(c, gh_make(MO_STORE, c->ck, G_KEYS, (ulong)c->child * K, 0, K));
                }
                c->pc = P_SIFT_END;
                break;
            }
            gh_merge_steps(c, LC, c->ck);
            gh_push(c, gh_make(MO_STORE, LC, G_KEYS, (ulong)c->pos * K, 0, K));
            c->pc = P_SIFT_STEP;
            break;
        case P_SIFT_END:
            if (c->child != GH_NONE) gh_unlock(&word[c->child], GH_AVAIL);
            gh_unlock(&word[c->pos], GH_AVAIL);
            c->pc = P_NEXT;
            break;
        case P_SIFT_STEP:
            /* The child, still locked, becomes the node: its new keys move into C. */
            gh_unlock(&word[c->pos], GH_AVAIL);
            gh_push(c, gh_make(MO_COPY, LC, c->ck, 0, 0, 0));
            c->pos = c->child;
            c->changed = true;
            c->pc = P_SIFT;
            break;
        default:
            gh_fail(c, hdr, GH_ERR_STATE);
            break;
        }
    }
}

/* One step by the whole group; no barrier inside. */
inline void gh_exec(gh_mop m, __local KEY_T *loc[5], __global KEY_T *keys,
                    __global KEY_T *partial, __global const KEY_T *in, __global KEY_T *out,
                    uint lid) {
    __global KEY_T *glob = m.y == G_KEYS ? keys : (m.y == G_PARTIAL ? partial : out);
    switch (m.code) {
    case MO_LOAD: {
        __local KEY_T *dst = loc[m.x];
        if (m.y == G_IN) {
            for (uint i = lid; i < K; i += WG) dst[i] = i < m.n ? in[m.off + i] : KEY_MAX;
        } else {
            volatile __global const KEY_T *src = (volatile __global const KEY_T *)(glob + m.off);
            for (uint i = lid; i < K; i += WG) dst[i] = i < m.n ? src[i] : KEY_MAX;
        }
        break;
    }
    case MO_STORE: {
        volatile __global KEY_T *dst = (volatile __global KEY_T *)(glob + m.off);
        __local const KEY_T *src = loc[m.x] + m.from;
        for (uint i = lid; i < m.n; i += WG) dst[i] = src[i];
        gh_fence();
        break;
    }
    case MO_SORT:
        gheap_bitonic_stage(loc[m.x], (uint)m.off, m.n, lid);
        break;
    case MO_MERGE:
        gheap_merge_path(loc[m.x], loc[m.y], loc[LM], lid);
        break;
    case MO_SPLIT:
        for (uint i = lid; i < K; i += WG) {
            if (m.x != GH_NONE) loc[m.x][i] = loc[LM][i];
            if (m.y != GH_NONE) loc[m.y][i] = loc[LM][K + i];
        }
        break;
    case MO_SHIFT:
        for (uint i = lid; i < K; i += WG) {
            loc[m.x][i] = i + m.from < K ? loc[m.y][i + m.from] : KEY_MAX;
        }
        break;
    case MO_COPY:
        for (uint i = lid; i < K; i += WG) loc[m.x][i] = loc[m.y][i];
        break;
    default:
        break;
    }
}

/* Runs the launch's operations: ops[2t] is GH_OP_INSERT (ops[2t+1] = the chunk of `in`:
 * keys [chunk·K, min(chunk·K + K, in_len))) or GH_OP_DELETE (ops[2t+1] = keys wanted, 1..K).
 * Each work-group takes operations by ticket until none is left. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void gheap_run(__global KEY_T *keys, __global uint *word, __global uint *hdr,
                      __global KEY_T *partial, uint slots, __global const uint *ops, uint n_ops,
                      __global const KEY_T *in, uint in_len, __global KEY_T *out,
                      __global uint *out_len, __global uint *order) {
    __local KEY_T la[K], lb[K], lc[K], ld[K], lm[2 * K];
    __local gh_mop step;
    __local KEY_T *loc[5] = {la, lb, lc, ld, lm};
    const uint lid = get_local_id(0);
    gh_ctl ctl;
    ctl.pc = P_NEXT;
    ctl.qlen = 0;
    ctl.qpos = 0;
    for (;;) {
        if (lid == 0) step = gh_control(&ctl, loc, word, hdr, slots, ops, n_ops, in_len, out_len,
                                           order);
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        const gh_mop m = step;
        if (m.code == MO_EXIT) break;
        gh_exec(m, loc, keys, partial, in, out, lid);
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
}

#endif /* K <= 1024 */

/* Copies n keys (growing the heap's arrays between launches, reading the root for peek). */
kernel void gheap_copy_keys(__global const KEY_T *src, __global KEY_T *dst, ulong n) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) dst[i] = src[i];
}
