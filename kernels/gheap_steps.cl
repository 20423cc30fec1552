/* The device generalized heap, continued (gheap_locks.cl has the design): work-item 0's
 * control helpers, the operations as a state machine. */
#if K <= GH_MAX_K

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

#endif /* K <= GH_MAX_K */
