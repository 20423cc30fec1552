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

#endif /* K <= GH_MAX_K */
