/* The device generalized heap, continued (gheap_locks.cl has the design): gh_control, the
 * state machine work-item 0 runs, and gheap_run, the kernel every INS/DEL launch runs. */
#if K <= GH_MAX_K

/* The parameters every state of the control takes (gh_control's own). */
#define GHCTL_PARAMS                                                                        \
    gh_ctl *c, __local KEY_T *loc[GH_ARRAYS], __global const KEY_T *keys, __global uint *word, \
        __global uint *hdr, uint slots, __global const uint *ops, uint n_ops, uint in_len,     \
        __global uint *out_len, __global uint *order, uint bottom_up
#define GHCTL_ARGS c, loc, keys, word, hdr, slots, ops, n_ops, in_len, out_len, order, bottom_up

/* P_NEXT: the next operation by ticket (or the launch's end). */
inline void gh_s_next(GHCTL_PARAMS) {
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
        return;
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
}

/* ---- INS (TD-INS) ---- */
/* P_INS_LOCK: an INS takes the root and merges its batch with the buffer. */
inline void gh_s_ins_lock(GHCTL_PARAMS) {
    GH_PROF(const ulong t_wait = gh_now();)
    if (gh_lock(&word[0], hdr, GH_AVAIL) == GH_ABORT) {
        gh_fail(c, hdr, GH_ERR_STALL);
        return;
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
            return;
        }
        asym_store_relaxed(&hdr[GH_COUNT], c->count + 1u);
        c->st = gh_lock(&word[c->target], hdr, GH_EMPTY);
        if (c->st != GH_EMPTY) {
            gh_fail(c, hdr, c->st == GH_ABORT ? GH_ERR_STALL : GH_ERR_STATE);
            return;
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
        return;
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
}

/* P_INS_MERGED: the INS keeps its keys in the buffer, or sends the K smallest down. */
inline void gh_s_ins_merged(GHCTL_PARAMS) {
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
        return;
    }
    if (c->count >= c->max_nodes) {
        /* The host grows the heap before every launch: the last line of defence. */
        gh_unlock(&word[0], GH_AVAIL);
        gh_fail(c, hdr, GH_ERR_CAPACITY);
        return;
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
        return;
    }
    c->target = gh_position(c->count);
    if (c->target >= slots) {
        gh_fail(c, hdr, GH_ERR_CAPACITY);
        return;
    }
    if (bottom_up) {
        /* BU-INS: the batch goes straight into the target, claimed for the climb
         * (a DEL sifting down may hold the empty slot's lock for a moment). */
        c->st = gh_lock(&word[c->target], hdr, GH_EMPTY);
        if (c->st != GH_EMPTY) {
            gh_fail(c, hdr, c->st == GH_ABORT ? GH_ERR_STALL : GH_ERR_STATE);
            return;
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
        return;
    }
    /* Reserve the target (a DEL sifting down may hold its lock for a moment). */
    if (!gh_wait_swap(&word[c->target], hdr, GH_EMPTY, GH_TARGET)) {
        gh_fail(c, hdr, GH_ERR_STALL);
        return;
    }
    c->depth = 31u - clz(c->target + 1u);
    c->level = 1;
    c->held = 0;
    c->pc = P_INS_NODE;
}

/* P_INS_NODE: the INS locks the next node on its path and decides whether it must merge. */
inline void gh_s_ins_node(GHCTL_PARAMS) {
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
        return;
    }
    const bool at_target = c->pos == c->target;
    if (at_target ? (c->st != GH_MARKED && c->st != GH_TARGET) : c->st != GH_AVAIL) {
        gh_fail(c, hdr, GH_ERR_STATE);
        return;
    }
    c->pc = P_INS_MERGE;
    const KEY_T largest = ((volatile __global const KEY_T *)keys)[(ulong)c->held * K + K - 1];
    if (largest > loc[c->d][0]) {
        c->c = gh_alloc(c);
        gh_load(c, c->c, G_KEYS, (ulong)c->held * K, 0, K);
        gh_end_step(c, word);
    }
}

/* P_INS_MERGE: the INS merges into the held node and moves on (or stores at its target). */
inline void gh_s_ins_merge(GHCTL_PARAMS) {
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
        return;
    }
    c->c = GH_NONE;
    gh_end_step(c, word);
    c->held = c->pos;
    c->level += 1u;
    c->pc = P_INS_NODE;
}

/* ---- DEL (TD-DEL) ---- */
/* P_DEL_LOCK: a DEL takes the root and hands out its keys. */
inline void gh_s_del_lock(GHCTL_PARAMS) {
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
            return;
        }
        gh_backoff(&c->climb_step, &hdr[GH_CLIMBS]);
        return;
    }
    GH_PROF(const ulong t_wait = gh_now();)
    const uint root_state = gh_lock(&word[0], hdr, GH_AVAIL);
    if (root_state == GH_ABORT) {
        gh_fail(c, hdr, GH_ERR_STALL);
        return;
    }
    GH_PROF({
        c->t_root = gh_now();
        c->p_root_wait += c->t_root - t_wait;
    })
    if (bottom_up && asym_load_relaxed(&hdr[GH_CLIMBS]) != 0u) {
        gh_unlock(&word[0], root_state);
        return;
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
        return;
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
}

/* P_DEL_SPARE: the spare keys refill the root, else the last node does. */
inline void gh_s_del_spare(GHCTL_PARAMS) {
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
        return;
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
        return;
    }
    c->st = gh_lock(&word[c->last], hdr, GH_AVAIL);
    if (c->st == GH_TARGET) {
        /* Its INS is still on the way: mark it and wait (holding the root). */
        gh_unlock(&word[c->last], GH_MARKED);
        if (!gh_wait_swap(&word[c->last], hdr, GH_HANDED, GH_HANDED | GH_LOCKED)) {
            gh_fail(c, hdr, GH_ERR_STALL);
            return;
        }
    } else if (!gh_holds_keys(c->st)) {
        gh_fail(c, hdr, c->st == GH_ABORT ? GH_ERR_STALL : GH_ERR_STATE);
        return;
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
}

/* P_DEL_TAKE: the last node's keys go to the root and its sift-down starts. */
inline void gh_s_del_take(GHCTL_PARAMS) {
    if (c->last_delmod && c->last > 2u) {
        /* The last node is let go (the load ran): its parent may now be locked below
         * the root without breaking the top-down order. */
        const uint up = (c->last - 1u) / 2u;
        const uint st = gh_lock(&word[up], hdr, GH_AVAIL);
        if (st == GH_ABORT) {
            gh_fail(c, hdr, GH_ERR_STALL);
            return;
        }
        if (gh_holds_keys(st) && !gh_owe(c, hdr, up)) {
            gh_fail(c, hdr, GH_ERR_STATE);
            return;
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
}

/* ---- TD-DEL's sift-down: the group holds `pos`, its keys in c; the step being
 * built may hold stores of the levels above ---- */
/* P_SIFT: the sift-down locks the held node's children. */
inline void gh_s_sift(GHCTL_PARAMS) {
    const uint l = 2u * c->pos + 1u, r = l + 1u;
    __local gh_pending *cur = gh_cur(c);
    if (cur->s.n_act > 0u || cur->n_unlock > 0u) {
        /* The step being built stores the level above (and releases it): try the
         * children once; if either is busy (the DEL ahead still works below it),
         * run that step first, so the level above is let go before this group
         * blocks rather than while it waits on the DEL ahead (measured on the H200:
         * within the run-to-run spread). The node itself stays
         * held throughout, so nobody overtakes. */
        c->sl = l < slots ? gh_try_lock(&word[l], GH_AVAIL) : GH_NONE;
        c->sr = (r < slots && c->sl != GH_BUSY) ? gh_try_lock(&word[r], GH_AVAIL) : GH_NONE;
        if (c->sl == GH_BUSY || c->sr == GH_BUSY) {
            if (c->sl != GH_BUSY && c->sl != GH_NONE) gh_unlock(&word[l], c->sl);
            gh_end_step(c, word);
            return; /* back here with nothing pending: blocking locks */
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
        return;
    }
    gh_sift_children(c, word, l, r);
    gh_end_step(c, word);
    c->pc = P_SIFT_CHILDREN;
}

/* P_SIFT_CHILDREN: the children's keys are loaded. */
inline void gh_s_sift_children(GHCTL_PARAMS) {
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
            return;
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
}

/* P_SIFT_DECIDE: the sift-down merges with the smaller child or stops. */
inline void gh_s_sift_decide(GHCTL_PARAMS) {
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
        return;
    }
    if (c->dirty && c->pos != 0u) {
        /* Small keys from a climb move up into this node: it may now break its own
         * parent's order, and this DEL climbs from it after the sift. */
        c->pos_rel = GH_DELMOD;
        if (!gh_owe(c, hdr, c->pos)) {
            gh_fail(c, hdr, GH_ERR_STATE);
            return;
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
}

/* ---- BU-INS's climb (structures/src/gheap/concurrent.rs has the rules) ---- */
/* P_DUTY: a DEL's owed climbs. */
inline void gh_s_duty(GHCTL_PARAMS) {
    /* Everything built so far has run: every array is free again, and a climb that
     * led here is over (its last unlocks applied). */
    c->free_mask = (1u << GH_ARRAYS) - 1u;
    if (c->climbing) {
        (void)asym_fetch_add(&hdr[GH_CLIMBS], 0xffffffffu); /* minus one */
        c->climbing = false;
    }
    if (c->n_duty == 0u) {
        c->pc = P_NEXT;
        return;
    }
    c->cur = c->duty[0];
    for (uint i = 1; i < c->n_duty; ++i) c->duty[i - 1] = c->duty[i];
    c->n_duty -= 1u;
    c->climb_spins = 0;
    c->climb_step = 0;
    c->climbing = true;
    c->pc = P_CLIMB;
}

/* P_CLIMB: a BU-INS climb locks the parent. */
inline void gh_s_climb(GHCTL_PARAMS) {
    /* Parent first, then the node: the top-down order of every lock. */
    c->up = (c->cur - 1u) / 2u;
    c->pstate = gh_lock(&word[c->up], hdr, GH_AVAIL);
    c->seen = c->pstate == GH_ABORT ? GH_ABORT : gh_lock(&word[c->cur], hdr, GH_INSHOLD);
    if (c->seen == GH_ABORT) {
        gh_fail(c, hdr, GH_ERR_STALL);
        return;
    }
    if (!gh_claimed(c->seen)) {
        /* Removed by a DEL (its keys went to the root), or settled by another climb. */
        gh_unlock(&word[c->cur], c->seen);
        gh_unlock(&word[c->up], c->pstate);
        c->pc = P_DUTY;
        return;
    }
    if (c->up != 0u && gh_claimed(c->pstate)) {
        /* Another climb owns the parent: let go and wait until it has moved on, so
         * keys from above never sink past an open violation. */
        gh_unlock(&word[c->cur], c->seen);
        gh_unlock(&word[c->up], c->pstate);
        if (c->climb_spins == 0u) gh_count(c, GH_STAT_WAITS);
        if (gh_give_up(c->climb_spins++, hdr)) {
            gh_fail(c, hdr, GH_ERR_STALL);
            return;
        }
        gh_backoff(&c->climb_step, &word[c->up]);
        return;
    }
    c->c = gh_alloc(c);
    c->d = gh_alloc(c);
    gh_load(c, c->c, G_KEYS, (ulong)c->up * K, 0, K);
    gh_load(c, c->d, G_KEYS, (ulong)c->cur * K, 0, K);
    gh_end_step(c, word);
    c->pc = P_CLIMB_MERGE;
}

/* P_CLIMB_MERGE: the climb merges with the parent and goes on up. */
inline void gh_s_climb_merge(GHCTL_PARAMS) {
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
}

/* The next step for the group. `loc` is readable here: every call follows a barrier. */
inline uint gh_control(GHCTL_PARAMS) {
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
        case P_NEXT: gh_s_next(GHCTL_ARGS); break;
        case P_INS_LOCK: gh_s_ins_lock(GHCTL_ARGS); break;
        case P_INS_MERGED: gh_s_ins_merged(GHCTL_ARGS); break;
        case P_INS_NODE: gh_s_ins_node(GHCTL_ARGS); break;
        case P_INS_MERGE: gh_s_ins_merge(GHCTL_ARGS); break;
        case P_DEL_LOCK: gh_s_del_lock(GHCTL_ARGS); break;
        case P_DEL_SPARE: gh_s_del_spare(GHCTL_ARGS); break;
        case P_DEL_TAKE: gh_s_del_take(GHCTL_ARGS); break;
        case P_SIFT: gh_s_sift(GHCTL_ARGS); break;
        case P_SIFT_CHILDREN: gh_s_sift_children(GHCTL_ARGS); break;
        case P_SIFT_DECIDE: gh_s_sift_decide(GHCTL_ARGS); break;
        case P_DUTY: gh_s_duty(GHCTL_ARGS); break;
        case P_CLIMB: gh_s_climb(GHCTL_ARGS); break;
        case P_CLIMB_MERGE: gh_s_climb_merge(GHCTL_ARGS); break;
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

#endif /* K <= GH_MAX_K */
