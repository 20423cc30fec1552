/* asym red-black tree: batched insert and delete on the throughput device, the part of the
 * tree's program after rbtree.cl (which holds the node layout, the search kernels and the
 * RB_* constants' description). */

/* ---------------------------------------------------------------------------------------
 * Batched insert and delete: rounds of two launches over a batch sorted by key (ordered
 * form, no key twice), until every operation is done (rbtree/device_update.rs drives them).
 *
 * rb_locate (the tree is quiescent: no launch changes it meanwhile) walks each pending
 * operation from the root. An insert whose key is there writes the value and is done
 * (RB_OP_OLD); otherwise it records the gap its key falls in: the node whose NIL child is
 * the gap, that node's version (its lock word) and the side. The header is a node whose
 * left link is the root (RB_ROOT == RB_LEFT), so an empty tree's gap is the header's left.
 * The batch's keys in one gap are consecutive in the batch: a galloping search out from the
 * operation's own index for the gap's bounds (the last keys the walk turned right and left
 * at) finds them, and only the middle one (or the first after it whose transaction did not
 * overflow) is eligible this round. A run of m keys in one gap (ascending keys past the
 * largest, all keys in one subtree) therefore goes in in log2(m) rounds, not m: each insert
 * splits its gap in two. A delete records its node and version (a missing key is RB_OP_OLD).
 * The first round runs over the whole batch; in a long batch each round then lists the
 * operations still pending (rb_pending, at the end of the file), and the next round's
 * launches run over that list only.
 *
 * rb_apply runs each eligible pending operation as a transaction (rb_tx): it reads nodes
 * into private slots, remembering each node's version, and runs the textbook insert or
 * delete with its fix-up (the host path's, rbtree/ops.rs) on the slots. To commit, it takes
 * the lock of every node it changes in increasing handle order (one global order, so no
 * cycle of waits), each by compare-and-swap from the version it read to version | 1, then,
 * after a sequentially consistent fence, checks that every node it only read is unlocked at
 * the version it read (as TL2 does): a
 * lock held by another, or a version that moved since the read, fails the transaction,
 * which drops what it took and retries in the next round (after a fresh rb_locate). Passing
 * that, what it read is what the tree holds (every writer holds the locks of the nodes it
 * writes and bumps their versions by 2 on release), so it writes its changed slots back and
 * releases them at the new versions. No work-item waits for
 * another inside a launch: a launch always ends, and the host loop checks progress.
 * A transaction that needs more than RB_TX_SLOTS nodes (a fix-up cascading up a deep tree)
 * is RB_OP_OVERFLOW and left to the host path; one that read an impossible link is checked
 * against its versions: a moved version makes it a conflict, none makes the tree damaged.
 *
 * Memory ordering: a slot's version is read with acquire before its words; the words are
 * written before the release that stores the new version; the lock CAS is a read-modify-
 * write (acq_rel on the fine transport, fenced on the coarse one). A node an insert links
 * is written whole and fenced before the commit publishes the link. Reads are volatile
 * (past NVIDIA's incoherent L1): a stale read can only fail a version check, not commit.
 * -------------------------------------------------------------------------------------- */

#define RB_TX_SLOTS 128u
#define RB_TX_NONE 0xffffffffu
/* Why a transaction stopped (bits of rb_tx.bad). */
#define RB_TX_CONFLICT 1u
#define RB_TX_OVERFLOW 2u
#define RB_TX_IMPOSSIBLE 4u

typedef struct {
    uint n;
    uint bad;
    uint node[RB_TX_SLOTS];
    uint ver[RB_TX_SLOTS];
    uchar dirty[RB_TX_SLOTS];
    /* The node's words RB_COLOUR .. RB_PARENT (colour, left, right, parent). */
    uint word[RB_TX_SLOTS][4];
} rb_tx;

typedef struct {
    __global uint *heap;
    uint heap_words;
    uint header;
} rb_mem;

inline uint rb_tx_slot(rb_tx *t, rb_mem m, uint node) {
    for (uint s = 0; s < t->n; ++s)
        if (t->node[s] == node) return s;
    if (node == RB_NIL || node > m.heap_words - 8u) {
        t->bad |= RB_TX_IMPOSSIBLE;
        return RB_TX_NONE;
    }
    if (t->n == RB_TX_SLOTS) {
        t->bad |= RB_TX_OVERFLOW;
        return RB_TX_NONE;
    }
    const uint v = asym_load_acquire(m.heap + node + RB_LOCK);
    if (v & 1u) {
        t->bad |= RB_TX_CONFLICT;
        return RB_TX_NONE;
    }
    const uint s = t->n++;
    t->node[s] = node;
    t->ver[s] = v;
    t->dirty[s] = 0;
    for (uint w = 0; w < 4u; ++w) t->word[s][w] = asym_load_relaxed(m.heap + node + RB_COLOUR + w);
    return s;
}

inline uint rb_get(rb_tx *t, rb_mem m, uint node, uint field) {
    const uint s = rb_tx_slot(t, m, node);
    return s == RB_TX_NONE ? RB_NIL : t->word[s][field - RB_COLOUR];
}

inline void rb_set(rb_tx *t, rb_mem m, uint node, uint field, uint v) {
    const uint s = rb_tx_slot(t, m, node);
    if (s == RB_TX_NONE) return;
    t->word[s][field - RB_COLOUR] = v;
    t->dirty[s] = 1;
}

inline bool rb_red(rb_tx *t, rb_mem m, uint node) {
    return node != RB_NIL && rb_get(t, m, node, RB_COLOUR) == RB_RED;
}

inline void rb_paint(rb_tx *t, rb_mem m, uint node, bool red) {
    rb_set(t, m, node, RB_COLOUR, red ? RB_RED : 0u);
}

/* Puts v where u was under u's parent (v may be NIL); the root link is the header's left. */
inline void rb_transplant(rb_tx *t, rb_mem m, uint u, uint v) {
    const uint p = rb_get(t, m, u, RB_PARENT);
    if (p == RB_NIL) rb_set(t, m, m.header, RB_ROOT, v);
    else if (u == rb_get(t, m, p, RB_LEFT)) rb_set(t, m, p, RB_LEFT, v);
    else rb_set(t, m, p, RB_RIGHT, v);
    if (v != RB_NIL) rb_set(t, m, v, RB_PARENT, p);
}

/* Rotates x down to the left (left true) or right, its child on the other side up. */
inline void rb_rotate(rb_tx *t, rb_mem m, uint x, bool left) {
    const uint near = left ? RB_LEFT : RB_RIGHT, far = left ? RB_RIGHT : RB_LEFT;
    const uint y = rb_get(t, m, x, far);
    const uint inner = rb_get(t, m, y, near);
    rb_set(t, m, x, far, inner);
    if (inner != RB_NIL) rb_set(t, m, inner, RB_PARENT, x);
    rb_transplant(t, m, x, y);
    rb_set(t, m, y, near, x);
    rb_set(t, m, x, RB_PARENT, y);
}

inline void rb_insert_fixup(rb_tx *t, rb_mem m, uint z) {
    for (uint guard = 0; guard < RB_MAX_DEPTH && t->bad == 0u; ++guard) {
        uint p = rb_get(t, m, z, RB_PARENT);
        if (!rb_red(t, m, p)) break;
        const uint g = rb_get(t, m, p, RB_PARENT);
        const bool p_left = p == rb_get(t, m, g, RB_LEFT);
        const uint uncle = rb_get(t, m, g, p_left ? RB_RIGHT : RB_LEFT);
        if (rb_red(t, m, uncle)) {
            rb_paint(t, m, p, false);
            rb_paint(t, m, uncle, false);
            rb_paint(t, m, g, true);
            z = g;
            continue;
        }
        if (z == rb_get(t, m, p, p_left ? RB_RIGHT : RB_LEFT)) {
            rb_rotate(t, m, p, p_left);
            const uint tmp = z;
            z = p;
            p = tmp;
        }
        rb_paint(t, m, p, false);
        rb_paint(t, m, g, true);
        rb_rotate(t, m, g, !p_left);
        break;
    }
    /* The case-1 climb may have painted the root red (the root is the node without parent). */
    if (rb_get(t, m, z, RB_PARENT) == RB_NIL) rb_paint(t, m, z, false);
}

/* The textbook delete fix-up without reading the root: the root stays black through every
 * case (case 1 and 4 rotations put a black node or the old root's colour on top), so case 4
 * just ends the loop. */
inline void rb_delete_fixup(rb_tx *t, rb_mem m, uint x, uint parent) {
    for (uint guard = 0; guard < RB_MAX_DEPTH && t->bad == 0u; ++guard) {
        if (parent == RB_NIL || rb_red(t, m, x)) break;
        const bool x_left = x == rb_get(t, m, parent, RB_LEFT);
        const uint near = x_left ? RB_LEFT : RB_RIGHT, far = x_left ? RB_RIGHT : RB_LEFT;
        uint w = rb_get(t, m, parent, far);
        if (rb_red(t, m, w)) {
            rb_paint(t, m, w, false);
            rb_paint(t, m, parent, true);
            rb_rotate(t, m, parent, x_left);
            w = rb_get(t, m, parent, far);
        }
        const uint w_near = rb_get(t, m, w, near), w_far = rb_get(t, m, w, far);
        if (!rb_red(t, m, w_near) && !rb_red(t, m, w_far)) {
            rb_paint(t, m, w, true);
            x = parent;
            parent = rb_get(t, m, x, RB_PARENT);
            continue;
        }
        if (!rb_red(t, m, w_far)) {
            rb_paint(t, m, w_near, false);
            rb_paint(t, m, w, true);
            rb_rotate(t, m, w, !x_left);
            w = rb_get(t, m, parent, far);
        }
        rb_set(t, m, w, RB_COLOUR, rb_get(t, m, parent, RB_COLOUR));
        rb_paint(t, m, parent, false);
        const uint wf = rb_get(t, m, w, far);
        if (wf != RB_NIL) rb_paint(t, m, wf, false);
        rb_rotate(t, m, parent, x_left);
        return;
    }
    if (x != RB_NIL) rb_paint(t, m, x, false);
}

/* Removes z (found by rb_locate) from the tree, on the slots. */
inline void rb_delete_tx(rb_tx *t, rb_mem m, uint z) {
    /* z holds the key whatever happened to it since rb_locate: nodes never trade keys
     * (deletion relinks the successor's node), and only this operation deletes the key. */
    const uint zs = rb_tx_slot(t, m, z);
    if (zs == RB_TX_NONE) return;
    t->dirty[zs] = 1; /* z leaves the tree: its version moves, so no one commits on it */
    const uint zl = rb_get(t, m, z, RB_LEFT), zr = rb_get(t, m, z, RB_RIGHT);
    bool removed_red = rb_red(t, m, z);
    uint x, x_parent;
    if (zl == RB_NIL) {
        x = zr;
        x_parent = rb_get(t, m, z, RB_PARENT);
        rb_transplant(t, m, z, zr);
    } else if (zr == RB_NIL) {
        x = zl;
        x_parent = rb_get(t, m, z, RB_PARENT);
        rb_transplant(t, m, z, zl);
    } else {
        uint y = zr;
        for (uint guard = 0; guard < RB_MAX_DEPTH && t->bad == 0u; ++guard) {
            const uint l = rb_get(t, m, y, RB_LEFT);
            if (l == RB_NIL) break;
            y = l;
        }
        removed_red = rb_red(t, m, y);
        x = rb_get(t, m, y, RB_RIGHT);
        if (rb_get(t, m, y, RB_PARENT) == z) {
            x_parent = y;
        } else {
            x_parent = rb_get(t, m, y, RB_PARENT);
            rb_transplant(t, m, y, x);
            rb_set(t, m, y, RB_RIGHT, zr);
            rb_set(t, m, zr, RB_PARENT, y);
        }
        rb_transplant(t, m, z, y);
        rb_set(t, m, y, RB_LEFT, zl);
        rb_set(t, m, zl, RB_PARENT, y);
        rb_set(t, m, y, RB_COLOUR, rb_get(t, m, z, RB_COLOUR));
    }
    if (!removed_red) rb_delete_fixup(t, m, x, x_parent);
}

/* Whether every slot's node still has the version the transaction read. */
inline bool rb_tx_current(rb_tx *t, rb_mem m) {
    for (uint s = 0; s < t->n; ++s)
        if (asym_load_acquire(m.heap + t->node[s] + RB_LOCK) != t->ver[s]) return false;
    return true;
}

/* Locks every changed slot's node in increasing handle order at the version read, then
 * checks that every slot only read still has its version and is not locked (a writer holds
 * the lock of what it writes: a node it changes either moved its version already or is
 * locked now), writes the changed slots back and releases them at version + 2. Read-only
 * nodes are never locked, so readers of one node do not fail each other. False: a lock was
 * taken or a version moved; nothing was written. */
inline bool rb_tx_commit(rb_tx *t, rb_mem m) {
    uchar order[RB_TX_SLOTS];
    uint w = 0;
    for (uint s = 0; s < t->n; ++s) {
        if (!t->dirty[s]) continue;
        uint j = w++;
        while (j > 0u && t->node[order[j - 1u]] > t->node[s]) {
            order[j] = order[j - 1u];
            --j;
        }
        order[j] = (uchar)s;
    }
    for (uint k = 0; k < w; ++k) {
        const uint s = order[k];
        if (!asym_cas(m.heap + t->node[s] + RB_LOCK, t->ver[s], t->ver[s] | 1u)) {
            for (uint j = 0; j < k; ++j)
                asym_store_release(m.heap + t->node[order[j]] + RB_LOCK, t->ver[order[j]]);
            return false;
        }
    }
    /* Between the locks and the check of the nodes only read: a sequentially consistent
     * fence (without it two transactions may each lock one node and read the other's as it
     * was before, and both commit a write skew; structures/tests/loom_rbtree.rs). */
    asym_fence_seq_cst();
    for (uint s = 0; s < t->n; ++s) {
        if (t->dirty[s] ||
            asym_load_acquire(m.heap + t->node[s] + RB_LOCK) == t->ver[s])
            continue;
        for (uint j = 0; j < w; ++j)
            asym_store_release(m.heap + t->node[order[j]] + RB_LOCK, t->ver[order[j]]);
        return false;
    }
    asym_fence();
    for (uint k = 0; k < w; ++k) {
        const uint s = order[k];
        for (uint x = 0; x < 4u; ++x)
            asym_store_relaxed(m.heap + t->node[s] + RB_COLOUR + x, t->word[s][x]);
    }
    for (uint k = 0; k < w; ++k)
        asym_store_release(m.heap + t->node[order[k]] + RB_LOCK, t->ver[order[k]] + 2u);
    return true;
}

/* The round words a launch counts into (set `phase` of the RB_R_SETS in `rounds`, a ring:
 * round k of a batch counts into the set after round k - 1's). Its first work-item leaves
 * the next set fresh (as fresh_counts() on the host) for the next round, so the host reads
 * the sets of the rounds it enqueued together while later rounds count into others, and no
 * host write resets them between rounds (a blocking write a round). Plain stores: the next
 * launch, or the host after the wait, sees them at the kernel boundary. */
inline __global uint *rb_round_words(__global uint *rounds, uint phase) {
    if (get_global_id(0) == 0u) {
        __global uint *next = rounds + ((phase + 1u) % RB_R_SETS) * RB_R_WORDS;
        for (uint w = 0; w < RB_R_WORDS; ++w) next[w] = w == RB_R_FIRST ? RB_R_NO_FIRST : 0u;
    }
    return rounds + phase * RB_R_WORDS;
}

/* The operation a work-item of a round runs: op_lo + its index over the slice [op_lo,
 * op_hi) of the batch, or, in a round over a pending list (listed != 0; rb_pending wrote
 * its length to list[0] and its entries after it), the entry at its index; RB_TX_NONE past
 * the end. `listed` bounds the length: the launch's size, which the host took from an
 * earlier list (a round's list holds a subset of the one it ran over). */
inline uint rb_op_index(__global const uint *list, uint listed, uint op_lo, uint op_hi) {
    const uint g = get_global_id(0);
    if (listed != 0u) return g < min(listed, list[0]) ? list[1u + g] : RB_TX_NONE;
    return g < op_hi - op_lo ? op_lo + g : RB_TX_NONE;
}

/* The bounds of the run of batch keys in one gap, searched out from an operation's own
 * index i (its key lies in the gap): galloping away from i, then a binary search in the
 * last step's bracket. A run of m keys costs about 2 log2(m) reads near i, where a binary
 * search over the whole batch cost 2 log2(n) dependent reads (most runs hold one key). */

/* The first index j <= i whose key is above `bound` (keys[i] is). */
inline uint rb_run_first(__global const int *keys, uint i, int bound) {
    uint hi = i, lo = 0u;
    for (uint step = 1u; hi >= step; step <<= 1) {
        const uint probe = hi - step;
        if (ASYM_ORDERED(keys[probe]) <= bound) {
            lo = probe + 1u;
            break;
        }
        hi = probe;
    }
    while (lo < hi) { /* keys[hi] > bound throughout */
        const uint mid = lo + (hi - lo) / 2u;
        if (ASYM_ORDERED(keys[mid]) > bound) hi = mid; else lo = mid + 1u;
    }
    return lo;
}

/* The first index j > i in [0, n) whose key is not below `bound` (n if none; keys[i] is
 * below it). */
inline uint rb_run_end(__global const int *keys, uint n, uint i, int bound) {
    uint lo = i, hi = n;
    for (uint step = 1u; n - lo > step; step <<= 1) {
        const uint probe = lo + step;
        if (ASYM_ORDERED(keys[probe]) >= bound) {
            hi = probe;
            break;
        }
        lo = probe;
    }
    ++lo; /* keys[lo - 1] < bound; keys[hi] >= bound or hi == n */
    while (lo < hi) {
        const uint mid = lo + (hi - lo) / 2u;
        if (ASYM_ORDERED(keys[mid]) >= bound) hi = mid; else lo = mid + 1u;
    }
    return lo;
}

/* One locate pass over operations [op_lo, op_hi) of a batch of n keys (raw bits, mapped by
 * ASYM_ORDERED; the gap's run is searched out from each operation's index; see the
 * section comment). `fresh` makes it a pass before the first round that only resets the
 * operations' words and the spare count and checks the order (the first round counts into
 * the same round words, so the host reads the check with the round's counts). where[3i] the
 * gap's node (insert) or the key's node (delete), where[3i + 1] its version, where[3i + 2]
 * bit 0 the side (1: right), bit 1 eligible this round. Round words: pending and eligible
 * operations counted, the first eligible one's index kept (atomic_min), damaged walks
 * counted. Only the first round reads the order check (`check_order`, rb_apply too): the
 * host stops after it when keys are out of order, and a load of that word's line in every
 * work-item of a later round cost up to 10 % (it takes every launch's atomics). The first
 * eligible index is kept only with `find_first` (for a round run alone after one without
 * progress, and the cooperative rounds): an atomic minimum of every eligible operation on
 * that line cost a batch 4-7 %. */
inline void rb_locate_one(__global uint *heap, uint header, uint heap_words, uint deleting,
                          __global const int *keys, __global const ulong *values, uint n,
                          uint op_lo, uint op_hi, __global uint *state, __global uint *where,
                          __global uint *handles, __global uint *round, uint fresh,
                          __global uint *spare_ctl, __global const uint *list, uint listed,
                          uint check_order, __global uint *next, uint find_first,
                          __local uint *lcount) {
    /* state[] of other operations is read (overflowed ones in the run), written only by
     * the previous apply launch. */
    if (get_global_id(0) == 0u) {
        if (fresh) spare_ctl[0] = spare_ctl[1] = 0u;
        next[0] = 0u; /* the length of the list this round's rb_pending writes */
    }
    const uint i = rb_op_index(list, listed, op_lo, op_hi);
    if (i == RB_TX_NONE) return;
    const int key = ASYM_ORDERED(keys[i]);
    if (fresh) {
        /* A pass before the first round: every operation pending, no node taken yet, no
         * spare node counted, and the batch's order checked (the gap runs and the merged
         * keys rely on it): the first round's launches change nothing when it failed. */
        state[i] = RB_OP_PENDING;
        handles[i] = RB_NIL;
        if (i > 0u && ASYM_ORDERED(keys[i - 1u]) >= key) atomic_inc(round + RB_R_UNSORTED);
        return;
    }
    if ((check_order && round[RB_R_UNSORTED] != 0u) || state[i] != RB_OP_PENDING) return;
    uint x = heap[header + RB_ROOT], parent = RB_NIL, side = 0u;
    int lo = 0, hi = 0;
    bool has_lo = false, has_hi = false;
    for (uint depth = 0; depth < RB_MAX_DEPTH; ++depth) {
        if (x == RB_NIL) {
            if (deleting) {
                state[i] = RB_OP_OLD; /* missing */
                return;
            }
            const uint node = parent == RB_NIL ? header : parent;
            where[3u * i] = node;
            where[3u * i + 1u] = heap[node + RB_LOCK];
            const uint first = has_lo ? rb_run_first(keys, i, lo) : 0u;
            const uint end = has_hi ? rb_run_end(keys, n, i, hi) : n;
            /* The middle key of the run, or the first after it that a transaction can
             * hold (keys past an overflowed one need not wait for the host). */
            uint pick = first + (end - 1u - first) / 2u;
            while (pick < i && state[pick] == RB_OP_OVERFLOW) ++pick;
            const bool eligible = end > first && i == pick;
            where[3u * i + 2u] = side | (eligible ? 2u : 0u);
            atomic_inc(&lcount[0]);
            if (eligible) {
                atomic_inc(&lcount[1]);
                if (find_first) atomic_min(round + RB_R_FIRST, i);
            }
            return;
        }
        if (x > heap_words - 8u) break;
        const int k = (int)heap[x + RB_KEY];
        if (k == key) {
            if (deleting) {
                where[3u * i] = x;
                where[3u * i + 1u] = heap[x + RB_LOCK];
                where[3u * i + 2u] = 2u;
                atomic_inc(&lcount[0]);
                atomic_inc(&lcount[1]);
                if (find_first) atomic_min(round + RB_R_FIRST, i);
            } else {
                heap[x + RB_VALUE_LO] = (uint)values[i];
                heap[x + RB_VALUE_HI] = (uint)(values[i] >> 32);
                state[i] = RB_OP_OLD; /* updated */
            }
            return;
        }
        parent = x;
        if (key < k) {
            hi = k;
            has_hi = true;
            side = 0u;
            x = heap[x + RB_LEFT];
        } else {
            lo = k;
            has_lo = true;
            side = 1u;
            x = heap[x + RB_RIGHT];
        }
    }
    atomic_inc(round + RB_R_DAMAGED);
}

/* Pending and eligible operations are counted per work-group (local atomics) and added to
 * the round words once a group: two atomics on that one line from every operation, and two
 * more in rb_apply per commit, cost a batch 10-25 %. */
__kernel void rb_locate(__global const ulong *ctl, __global uint *heap,
                        __global const uint *sb_class, uint header, uint heap_words,
                        uint deleting, __global const int *keys, __global const ulong *values,
                        uint n, uint op_lo, uint op_hi, __global uint *state,
                        __global uint *where, __global uint *handles,
                        __global uint *rounds, uint phase, uint fresh,
                        __global uint *spare_ctl, __global const uint *list, uint listed,
                        uint check_order, __global uint *next, uint find_first) {
    __local uint lcount[2]; /* pending, eligible */
    __global uint *round = rb_round_words(rounds, phase);
    if (get_local_id(0) == 0u) lcount[0] = lcount[1] = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    rb_locate_one(heap, header, heap_words, deleting, keys, values, n, op_lo, op_hi, state,
                  where, handles, round, fresh, spare_ctl, list, listed, check_order, next,
                  find_first, lcount);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0u) {
        if (lcount[0] != 0u) atomic_add(round + RB_R_PENDING, lcount[0]);
        if (lcount[1] != 0u) atomic_add(round + RB_R_ELIGIBLE, lcount[1]);
    }
}

/* One apply pass over operations [op_lo, op_hi) (the batch has n keys): every eligible
 * pending operation (or only operation `only` when it is not
 * RB_TX_NONE: the host's fallback after a round without progress) runs its transaction.
 * Inserts take their node once (kept in handles[i] across retries): from the tree's spare
 * nodes while they last (spare[0, spare_len), taken from the top by one fetch-and-add on
 * spare_ctl[0]), else from the arena. Deletes put theirs on the spare stack after the commit
 * (one fetch-and-add on spare_ctl[1] past spare_len; no later reader can reach the node, and
 * a transaction that read it fails on its moved version), or free it to the arena when the
 * stack is full. The arena's free lists are Treiber stacks: a million work-items pushing
 * and popping them in one launch spent most of the launch in compare-and-swap retries.
 * Round words count commits (the work-group's, by rb_apply below, which also moves the
 * header's count by them), conflicts, overflows, damaged trees and failed mallocs. */
inline void rb_apply_one(__global ulong *ctl, __global uint *heap, __global uint *sb_class,
                         uint header, uint heap_words, uint deleting,
                         __global const int *keys, __global const ulong *values,
                         uint op_lo, uint op_hi, __global uint *state,
                         __global const uint *where, __global uint *handles,
                         __global uint *round, uint only, __global uint *spare,
                         __global uint *spare_ctl, uint spare_len, uint spare_cap,
                         __global const uint *list, uint listed, uint check_order,
                         __local uint *lcommitted) {
    const uint i = rb_op_index(list, listed, op_lo, op_hi);
    if (i == RB_TX_NONE || (check_order && round[RB_R_UNSORTED] != 0u) ||
        state[i] != RB_OP_PENDING)
        return;
    const uint w = where[3u * i + 2u];
    if (!(w & 2u) || (only != RB_TX_NONE && i != only)) return;
    const rb_mem m = {heap, heap_words, header};
    asym_arena a = {ctl, heap, sb_class};
    rb_tx t;
    t.n = 0u;
    t.bad = 0u;
    const uint node = where[3u * i];
    uint z = RB_NIL;
    if (deleting) {
        z = node;
        rb_delete_tx(&t, m, z);
    } else {
        z = handles[i];
        if (z == RB_NIL) {
            const uint k = spare_len > 0u ? atomic_inc(spare_ctl) : spare_len;
            z = k < spare_len ? spare[spare_len - 1u - k] : asym_malloc(a, RB_NODE_BYTES, i);
            if (z == RB_NIL) {
                atomic_inc(round + RB_R_OOM);
                return;
            }
            handles[i] = z;
        }
        heap[z + RB_KEY] = (uint)ASYM_ORDERED(keys[i]);
        heap[z + RB_VALUE_LO] = (uint)values[i];
        heap[z + RB_VALUE_HI] = (uint)(values[i] >> 32);
        heap[z + RB_COLOUR] = RB_RED;
        heap[z + RB_LEFT] = RB_NIL;
        heap[z + RB_RIGHT] = RB_NIL;
        heap[z + RB_PARENT] = node == header ? RB_NIL : node;
        heap[z + RB_LOCK] = 0u;
        asym_fence();
        const uint ps = rb_tx_slot(&t, m, node);
        const uint link = (w & 1u) ? RB_RIGHT : RB_LEFT;
        /* The gap is still the one rb_locate found while its link is NIL, even if the node
         * changed since: rotations keep the key order, and no other key of this gap runs
         * in this round (one per gap), so the link, if NIL, is still the gap before or after
         * the node's key that holds this key. */
        if (ps != RB_TX_NONE && t.word[ps][link - RB_COLOUR] != RB_NIL)
            t.bad |= RB_TX_CONFLICT;
        rb_set(&t, m, node, link, z);
        rb_tx_slot(&t, m, z);
        rb_insert_fixup(&t, m, z);
    }
    /* A read that met a held lock returned NIL, so impossible links may follow it: retry.
     * An impossible read with every version current is a damaged tree; with a moved one, a
     * race (retry). An overflow with current versions is real. */
    if ((t.bad & RB_TX_CONFLICT) || (t.bad != 0u && !rb_tx_current(&t, m))) t.bad = RB_TX_CONFLICT;
    if (t.bad == 0u && rb_tx_commit(&t, m)) {
        state[i] = RB_OP_NEW;
        atomic_inc(lcommitted);
        if (deleting) {
            const uint k = atomic_inc(spare_ctl + 1);
            if (spare_len + k < spare_cap) spare[spare_len + k] = z;
            else asym_free(a, z, i);
        }
    } else if (t.bad & RB_TX_OVERFLOW) {
        /* (after an overflow every read was NIL, so impossible links may follow) */
        state[i] = RB_OP_OVERFLOW;
        atomic_inc(round + RB_R_OVERFLOW);
    } else if (t.bad & RB_TX_IMPOSSIBLE) {
        atomic_inc(round + RB_R_DAMAGED);
    } else {
        atomic_inc(round + RB_R_CONFLICTS);
    }
}


/* Commits are counted per work-group and added to the round words and the header's count
 * once a group, as rb_locate's counts (the header's count is read by nothing until the
 * launch ends). */
__kernel void rb_apply(__global ulong *ctl, __global uint *heap, __global uint *sb_class,
                       uint header, uint heap_words, uint deleting,
                       __global const int *keys, __global const ulong *values, uint n,
                       uint op_lo, uint op_hi, __global uint *state,
                       __global const uint *where, __global uint *handles,
                       __global uint *rounds, uint phase, uint only, __global uint *spare,
                       __global uint *spare_ctl, uint spare_len, uint spare_cap,
                       __global const uint *list, uint listed, uint check_order) {
    __local uint lcommitted;
    __global uint *round = rb_round_words(rounds, phase);
    if (get_local_id(0) == 0u) lcommitted = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    rb_apply_one(ctl, heap, sb_class, header, heap_words, deleting, keys, values, op_lo, op_hi,
                 state, where, handles, round, only, spare, spare_ctl, spare_len, spare_cap,
                 list, listed, check_order, &lcommitted);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0u && lcommitted != 0u) {
        atomic_add(round + RB_R_COMMITTED, lcommitted);
        if (deleting) atomic_sub(heap + header + RB_COUNT, lcommitted);
        else atomic_add(heap + header + RB_COUNT, lcommitted);
    }
}

/* Lists the operations still pending after a round's apply, over the same operations as
 * the round (rb_op_index), for the next round's launches: a later round's few operations
 * then fill whole warps instead of leaving most work-items of most warps idle behind one
 * walk. Each work-group writes its pending operations in batch order into one block of
 * `next`, taken by one fetch-and-add on its length word next[0] (which the round's
 * rb_locate zeroed), so a warp holds neighbouring keys, whose walks share nodes as in the
 * first round; the blocks land in any order. The round word RB_R_LISTED counts them too,
 * for the host, which sizes the next launches by it without reading the list. */
__kernel void rb_pending(__global const uint *state, __global const uint *list, uint listed,
                         uint op_lo, uint op_hi, __global uint *next,
                         __global uint *rounds, uint phase, __local uint *scan) {
    __local uint at;
    __global uint *round = rb_round_words(rounds, phase);
    const uint lid = get_local_id(0), wg = get_local_size(0);
    const uint i = rb_op_index(list, listed, op_lo, op_hi);
    const bool keep = i != RB_TX_NONE && state[i] == RB_OP_PENDING;
    asym_inclusive_scan(scan, lid, wg, keep ? 1u : 0u);
    if (lid == wg - 1u) {
        at = 0u;
        if (scan[lid] != 0u) {
            at = atomic_add(next, scan[lid]);
            atomic_add(round + RB_R_LISTED, scan[lid]);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (keep) next[1u + at + scan[lid] - 1u] = i;
}
