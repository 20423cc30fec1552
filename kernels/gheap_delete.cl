#if K <= GH_MAX_K

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
 * work-item 0's control (docs/benchmarks/heap.md).
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

/* A DEL-only launch's control state, the same in every work-item (each keeps its own copy):
 * the phase, the operation's numbers, the local arrays' roles and which are free, the sift's
 * position, and the step's flags. */
typedef struct {
    uint phase, want, count, plen, seq, spare, last;
    /* Local arrays free to take in this step, and those the step reads and frees (free from
     * the next step on: a work-item may still read one while another takes it). */
    uint free, later;
    uint p, d, c, a, b, small;
    uint pos, child, large_pos;
    uint merges, swaps; /* work-item 0's are added to the header */
    bool has_d, has_l, has_r, child_changed, spare_due, broken;
    /* The step stored keys (a fence before the barrier); another phase runs before it ends. */
    bool stores, more;
    __global KEY_T *dst;
} gd_state;

/* What every phase of the group takes. */
#define GD_PARAMS                                                                            \
    gd_state *s, __local KEY_T *loc[GH_ARRAYS], volatile __global KEY_T *vkeys,               \
        volatile __global KEY_T *vpart, __global KEY_T *out, __global uint *hdr,              \
        __global uint *out_len, __local uint *sh, gd_releases *rel, uint lid
#define GD_ARGS &st, loc, vkeys, vpart, out, hdr, out_len, sh, &rel, lid

/* Work-item 0, before each step: the last step's releases (every lock when the launch broke),
 * then the locks this step needs, what it learnt written to `sh` (sh[0]: go on or leave). */
inline void gd_locks(gd_state *s, __global uint *word, __global uint *hdr, uint slots,
                     __global const uint *ops, uint n_ops, __global uint *order, __local uint *sh,
                     gd_releases *rel) {
    if (s->broken) {
        (void)asym_cas(&hdr[GH_ERROR], 0u, GH_ERR_STATE);
        rel->n = 0;
    }
    gd_release(word, rel);
    uint go = s->broken ? 0u : 1u;
    if (go == 0u) {
        /* leave */
    } else if (s->phase == D_NEXT) {
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
    } else if (s->phase == D_LAST) {
        const uint st = gh_lock(&word[s->last], hdr, GH_AVAIL);
        if (st != GH_AVAIL) {
            if (st != GH_ABORT) (void)asym_cas(&hdr[GH_ERROR], 0u, GH_ERR_STATE);
            go = 0u;
        }
    } else if (s->phase == D_SIFT_LOCK) {
        const uint l = 2u * s->pos + 1u, r = l + 1u;
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

/* D_NEXT: the operation work-item 0 took by ticket: its keys out of the root. */
inline void gd_next(GD_PARAMS) {
    s->want = sh[1];
    s->count = sh[2];
    s->plen = sh[3];
    s->seq = sh[4];
    s->dst = out + (ulong)s->seq * K;
    s->free = ((1u << GH_ARRAYS) - 1u) & ~3u; /* l0, l1 loaded here */
    if (s->count == 0u) {
        /* Only the buffer holds keys. */
        gh_load_keys(loc[0], vpart, 0u, s->plen, lid);
        s->phase = D_BUFFER_OUT;
        return;
    }
    /* The root's first keys go out; the rest (l0) and the buffer (l1) are the
     * spare keys, smaller than everything below. */
    for (uint i = lid; i < s->want; i += WG) s->dst[i] = ASYM_ORDERED(vkeys[i]);
    gh_load_keys(loc[0], vkeys, s->want, K, lid);
    gh_load_keys(loc[1], vpart, 0u, s->plen, lid);
    if (lid == 0u) out_len[s->seq] = s->want;
    s->spare = K - s->want + s->plen;
    s->has_d = s->want < K && s->plen > 0u;
    s->phase = D_SPARE;
}

/* D_BUFFER_OUT: with no node, the buffer's first keys go out. */
inline void gd_buffer_out(GD_PARAMS) {
    /* Its first keys go out, the rest move to its front. */
    const uint take = min(s->want, s->plen);
    for (uint i = lid; i < take; i += WG) s->dst[i] = ASYM_ORDERED(loc[0][i]);
    for (uint i = lid; i + take < s->plen; i += WG) vpart[i] = loc[0][i + take];
    if (lid == 0u) {
        out_len[s->seq] = take;
        asym_store_relaxed(&hdr[GH_PLEN], s->plen - take);
    }
    s->stores = true;
    gd_after(rel, 0u, GH_AVAIL);
    s->phase = D_NEXT;
}

/* D_SPARE: the spare keys (the root's rest and the buffer) merged. */
inline void gd_spare(GD_PARAMS) {
    /* p: the spare keys' first K; d: the rest (when both gave some). */
    if (s->has_d) {
        s->p = gd_take(&s->free, &s->broken);
        s->d = gd_take(&s->free, &s->broken);
        gheap_merge_path_to(loc[0], loc[1], loc[s->p], loc[s->d], 0, 0, lid);
        s->merges += 1u;
        s->later |= 3u;
        s->phase = D_REFILL;
        return;
    }
    s->p = s->want < K ? 0u : 1u;
    s->d = s->p;
    s->later |= 3u & ~(1u << s->p);
    s->phase = D_REFILL;
    s->more = true;
}

/* D_REFILL: the K smallest spare keys refill the root, else the last node will. */
inline void gd_refill(GD_PARAMS) {
    if (s->spare >= K) {
        /* The K smallest spare keys refill the root (d exists: the buffer held
         * keys and the root some besides those taken); the node count stays. */
        s->c = s->p;
        gd_store(vpart, loc[s->d], s->spare - K, lid);
        s->later |= 1u << s->d;
        if (lid == 0u) asym_store_relaxed(&hdr[GH_PLEN], s->spare - K);
        s->stores = true;
        s->pos = 0u;
        s->phase = D_SIFT_LOCK;
        return;
    }
    /* The last node refills the root. */
    s->last = gh_position(s->count - 1u);
    if (lid == 0u) {
        asym_store_relaxed(&hdr[GH_COUNT], s->count - 1u);
        asym_store_relaxed(&hdr[GH_PLEN], s->spare);
    }
    if (s->last == 0u) {
        gd_store(vpart, loc[s->p], s->spare, lid);
        s->stores = true;
        gd_after(rel, 0u, GH_AVAIL);
        s->phase = D_NEXT;
        return;
    }
    if (s->has_d) s->later |= 1u << s->d;
    s->phase = D_LAST; /* work-item 0 locks it */
}

/* D_LAST: the last node's keys loaded (work-item 0 locked it). */
inline void gd_last(GD_PARAMS) {
    s->c = gd_take(&s->free, &s->broken);
    gh_load_keys(loc[s->c], vkeys + (ulong)s->last * K, 0u, K, lid);
    /* Nothing writes the node before an INS targets it again, which needs the
     * root: it goes as soon as its keys are read. */
    gd_after(rel, s->last, GH_EMPTY);
    if (s->spare == 0u) {
        /* No spare keys to merge with: the sift can lock the children now. */
        s->later |= 1u << s->p;
        s->pos = 0u;
        s->spare_due = false;
        s->phase = D_SIFT_LOCK;
        return;
    }
    s->phase = D_LAST_MERGE;
}

/* D_LAST_MERGE: the last node merged with the spare keys. */
inline void gd_last_merge(GD_PARAMS) {
    s->pos = 0u;
    s->phase = D_SIFT_LOCK;
    s->spare_due = s->spare > 0u;
    if (s->spare > 0u && loc[s->c][K - 1] > loc[s->p][0]) {
        if (loc[s->p][K - 1] <= loc[s->c][0]) {
            const uint x = s->c; /* the seed's swap */
            s->c = s->p;
            s->p = x;
            s->swaps += 1u;
        } else {
            const uint lo = gd_take(&s->free, &s->broken), hi = gd_take(&s->free, &s->broken);
            gheap_merge_path_to(loc[s->c], loc[s->p], loc[lo], loc[hi], 0, 0, lid);
            s->merges += 1u;
            s->later |= (1u << s->c) | (1u << s->p);
            s->c = lo;
            s->p = hi;
            return; /* the buffer's store goes with the children's loads */
        }
    }
    if (s->spare_due) gd_store(vpart, loc[s->p], s->spare, lid);
    s->spare_due = false;
    s->stores = true;
    s->later |= 1u << s->p;
}

/* D_SIFT_LOCK: the children work-item 0 locked, loaded. */
inline void gd_sift_lock(GD_PARAMS) {
    /* Work-item 0 holds the children present (sh[1], sh[2]). */
    const uint l = 2u * s->pos + 1u;
    if (s->spare_due) {
        gd_store(vpart, loc[s->p], s->spare, lid);
        s->later |= 1u << s->p;
        s->stores = true;
        s->spare_due = false;
    }
    s->has_l = sh[1] != 0u;
    s->has_r = sh[2] != 0u;
    s->a = s->has_l ? gd_take(&s->free, &s->broken) : s->c;
    s->b = s->has_r ? gd_take(&s->free, &s->broken) : s->c;
    if (s->has_l) gh_load_keys(loc[s->a], vkeys + (ulong)l * K, 0u, K, lid);
    if (s->has_r) gh_load_keys(loc[s->b], vkeys + (ulong)(l + 1u) * K, 0u, K, lid);
    s->phase = D_SIFT_CHILDREN;
}

/* D_SIFT_CHILDREN: the children merged, the larger half into the child whose largest key was larger. */
inline void gd_sift_children(GD_PARAMS) {
    const uint l = 2u * s->pos + 1u, r = l + 1u;
    s->child = GH_NONE;
    s->small = s->c;
    s->child_changed = false;
    s->phase = D_SIFT_NODE;
    s->more = true;
    if (s->has_l && s->has_r) {
        /* The larger half goes back into the child whose largest key was larger. */
        const bool l_larger = loc[s->a][K - 1] > loc[s->b][K - 1];
        s->small = l_larger ? s->b : s->a;
        const uint large = l_larger ? s->a : s->b;
        s->large_pos = l_larger ? l : r;
        s->child = l_larger ? r : l;
        if (loc[s->c][K - 1] <= min(loc[s->a][0], loc[s->b][0])) {
            /* No larger than either child: nothing below changes. */
            gd_store(vkeys + (ulong)s->pos * K, loc[s->c], K, lid);
            s->stores = true;
            gd_after(rel, l, GH_AVAIL);
            gd_after(rel, r, GH_AVAIL);
            gd_after(rel, s->pos, GH_AVAIL);
            s->phase = D_NEXT;
            s->more = false;
            return;
        }
        gd_after(rel, s->large_pos, GH_AVAIL);
        s->child_changed = loc[s->small][K - 1] > loc[large][0];
        if (s->child_changed) {
            const uint lo = gd_take(&s->free, &s->broken), hi = gd_take(&s->free, &s->broken);
            gheap_merge_path_to(loc[s->small], loc[large], loc[lo], loc[hi], 0,
                                vkeys + (ulong)s->large_pos * K, lid);
            s->merges += 1u;
            s->stores = true;
            s->later |= (1u << s->small) | (1u << large) | (1u << hi);
            s->small = lo;
            s->more = false; /* the node's merge reads lo after the barrier */
        } else {
            s->later |= 1u << large;
        }
    } else if (s->has_l || s->has_r) {
        s->child = s->has_l ? l : r;
        s->small = s->has_l ? s->a : s->b;
    }
}

/* D_SIFT_NODE: the node merged with the smaller half, its K smallest stored; the sift goes on below. */
inline void gd_sift_node(GD_PARAMS) {
    /* small: the smaller child's keys (child_changed: not yet stored). */
    if (s->child == GH_NONE || !(loc[s->c][K - 1] > loc[s->small][0])) {
        /* The property holds below: store what changed and let go. */
        gd_store(vkeys + (ulong)s->pos * K, loc[s->c], K, lid);
        if (s->child_changed) gd_store(vkeys + (ulong)s->child * K, loc[s->small], K, lid);
        s->stores = true;
        gd_after(rel, s->pos, GH_AVAIL);
        gd_after(rel, s->child, GH_AVAIL);
        s->phase = D_NEXT;
        return;
    }
    /* The node keeps the K smallest of itself and the smaller child, stored
     * straight to its place; the rest go down into that child. */
    if (loc[s->small][K - 1] <= loc[s->c][0]) {
        gd_store(vkeys + (ulong)s->pos * K, loc[s->small], K, lid);
        s->swaps += 1u;
        s->later |= 1u << s->small;
    } else {
        const uint lo = gd_take(&s->free, &s->broken), hi = gd_take(&s->free, &s->broken);
        gheap_merge_path_to(loc[s->c], loc[s->small], loc[lo], loc[hi],
                            vkeys + (ulong)s->pos * K, 0, lid);
        s->merges += 1u;
        s->later |= (1u << s->c) | (1u << s->small) | (1u << lo);
        s->c = hi;
    }
    s->stores = true;
    gd_after(rel, s->pos, GH_AVAIL);
    s->pos = s->child;
    s->phase = D_SIFT_LOCK;
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
    gd_releases rel;
    rel.n = 0;
    /* The operation's state, the same in every work-item. */
    gd_state st;
    st.phase = D_NEXT;
    st.want = st.count = st.plen = st.seq = st.spare = st.last = 0;
    st.free = st.later = 0;
    st.p = st.d = st.c = st.a = st.b = st.small = 0;
    st.pos = 0;
    st.child = st.large_pos = GH_NONE;
    st.merges = st.swaps = 0;
    st.has_d = st.has_l = st.has_r = st.child_changed = st.spare_due = st.broken = false;
    st.dst = out;
    for (;;) {
        /* Work-item 0: the last step's releases, then this step's locks. */
        if (lid == 0u) gd_locks(&st, word, hdr, slots, ops, n_ops, order, sh, &rel);
        rel.n = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (sh[0] == 0u) break;
        st.stores = false;
        st.free |= st.later;
        st.later = 0;
        for (st.more = true; st.more;) {
            st.more = false;
            switch (st.phase) {
            case D_NEXT: gd_next(GD_ARGS); break;
            case D_BUFFER_OUT: gd_buffer_out(GD_ARGS); break;
            case D_SPARE: gd_spare(GD_ARGS); break;
            case D_REFILL: gd_refill(GD_ARGS); break;
            case D_LAST: gd_last(GD_ARGS); break;
            case D_LAST_MERGE: gd_last_merge(GD_ARGS); break;
            case D_SIFT_LOCK: gd_sift_lock(GD_ARGS); break;
            case D_SIFT_CHILDREN: gd_sift_children(GD_ARGS); break;
            case D_SIFT_NODE: gd_sift_node(GD_ARGS); break;
            default:
                break;
            }
        }
        /* Stores are made visible device-wide before work-item 0 lets a lock go after this
         * step (the barrier orders the fences before its release). */
        if (st.stores) gh_fence();
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0u) {
        if (st.merges != 0u) (void)asym_fetch_add(&hdr[GH_STAT_MERGES], st.merges);
        if (st.swaps != 0u) (void)asym_fetch_add(&hdr[GH_STAT_SWAPS], st.swaps);
    }
}

#endif /* K <= GH_MAX_K */
