/* asym lock-free list: Harris's list ("A Pragmatic Implementation of Non-blocking
 * Linked-Lists", DISC 2001) on nodes from the SVM allocator (alloc.cl), one work-item per
 * operation. The host half is structures/src/list (the same algorithm on host atomics), so on
 * the fine transport CPU threads and this kernel work on one list at the same time.
 *
 * Layout (arena handles, word offsets; 0 is null):
 *   root block (32 bytes): [LF_FIRST] the first node | [LF_RETIRED] the retire stack |
 *       [LF_RETIRED_N] nodes retired | [LF_RETRIES] lost CASes of host threads (a launch
 *       counts its own in launch_stats) (the root plays the head sentinel: its LF_FIRST word
 *       is the head's next).
 *   node (16 bytes): [LF_VALUE] the value (int) | [LF_NEXT] successor handle, low bit = mark |
 *       [LF_RETIRE] link on the retire stack.
 * Handles are multiples of 2 words, so the low bit of a next word is free for the mark.
 *
 * The algorithm. A node is logically deleted when its next word is marked (one CAS; the
 * linearization point of a successful remove); a marked next word never changes again.
 * Physically unlinking a node is a CAS on its predecessor's unmarked next word; whoever's CAS
 * unlinks a node retires it. Inserts link a new node by a CAS on its predecessor's next word
 * while that word is unmarked (the linearization point), so nothing is ever linked behind a
 * deleted node.
 *   Ordered set (insert/remove/contains of keys, ascending): Harris's search finds adjacent
 *   (left, right) with left.key < key <= right.key, unlinking marked nodes between them.
 *   Positional list (the seed's workload: insert a value right after the node holding a
 *   target, remove the node holding a value): a scan from the head finds the first unmarked
 *   node holding the value; remove marks it and tries one unlinking CAS on the predecessor
 *   it came from (a cleanup pass unlinks what is left, as in the seed). The work-items of a
 *   work-group share one scan (lf_positional_group).
 *
 * Safe reclamation: retired nodes go on the list's retire stack (push-only while operations
 * run: a head value never repeats, so there is no ABA) and are freed by the host only at a
 * quiescent point, when no launch and no host operation on the list is in flight (the host API
 * needs exclusive access to reclaim). An operation can hold a reference to an unlinked node
 * only while it runs, so no node is freed while anyone may still read it.
 *
 * Memory ordering: a new node's value and next word are written before the linking CAS
 * (acq_rel on the fine transport, fenced with membar.gl on the coarse one) publishes them;
 * readers load next words with acquire (fine) or through the address dependency (coarse, see
 * lf_next) before reading the node they name.
 *
 * Every loop is bounded: a scan stops after `max_steps` nodes (a kernel argument, more nodes
 * than the arena can hold: a longer walk means a cycle, reported as LF_ERR_BOUND), a retry
 * loop after LF_MAX_RETRIES.
 */

/* The root's words (LF_RETIRED, LF_RETIRED_N), a node's words (LF_VALUE,
 * LF_NEXT, LF_RETIRE), LF_NODE_BYTES, LF_MARK, LF_MAX_RETRIES, the operation kinds (LF_OP_*)
 * and result codes (LF_FAILED, LF_DONE, LF_NO_MEMORY, LF_ERR_BOUND, LF_ERR_KIND) come from
 * the host (`list::KERNEL_CONSTANTS`). */

typedef struct {
    asym_arena a;
    uint root;
    uint max_steps;
    uint retries;
    uint error;
} lf_list;

inline bool lf_marked(uint p) { return (p & LF_MARK) != 0u; }
inline uint lf_unmarked(uint p) { return p & ~LF_MARK; }
inline __global uint *lf_word(lf_list *l, uint node, uint w) { return l->a.heap + node + w; }
/* The root's LF_FIRST word is the head's next word: "node" root, word LF_NEXT == LF_FIRST.
 * Fine transport: an acquire load. Coarse transport (NVIDIA): a volatile load with no fence,
 * relying on the address dependency from the link to the node's fields (the "consume" order):
 * the GPU does not issue a load before its address is known, volatile loads are served by L2,
 * and the publisher's membar.gl (asym_fence before the linking CAS) made the fields visible
 * there before the link. An acquire fence per step cost the seed's experiment a third more
 * time on the GPU machine. */
inline uint lf_next(lf_list *l, uint node) {
#ifdef ASYM_FINE
    return asym_load_acquire(lf_word(l, node, LF_NEXT));
#else
    return asym_load_relaxed(lf_word(l, node, LF_NEXT));
#endif
}
inline int lf_value(lf_list *l, uint node) { return (int)asym_load_relaxed(lf_word(l, node, LF_VALUE)); }

/* A node's value and next word, as one step of a walk reads them. Coarse transport: one
 * 64-bit volatile load of both (adjacent words, 8-byte aligned as handles are even), so a
 * step is one memory request where lf_next and lf_value make two, both served by L2 (100,000
 * walks of a 10,000-node list keep the L2 busy with requests). The same address dependency
 * as lf_next's orders it after the link it came from. Fine transport: lf_next's acquire load
 * and lf_value (no mixed-size atomics on words the host's threads change with 32-bit ones). */
#if LF_NEXT != LF_VALUE + 1 || LF_VALUE % 2 != 0
#error "lf_step needs the value and next words adjacent, the value first and 8-byte aligned"
#endif
typedef struct {
    uint next;
    int value;
} lf_step;
inline lf_step lf_read(lf_list *l, uint node) {
    lf_step s;
#ifdef ASYM_FINE
    s.next = lf_next(l, node);
    s.value = lf_value(l, node);
#else
    const ulong w = asym_load64_relaxed((__global ulong *)lf_word(l, node, LF_VALUE));
    s.value = (int)(uint)w; /* little-endian: the lower word is LF_VALUE */
    s.next = (uint)(w >> 32);
#endif
    return s;
}

/* A CAS on a next word. Coarse transport: a release fence before it publishes what the
 * work-item wrote (a new node's fields); none after, as nothing read after a list CAS needs
 * ordering against it (a retry re-reads through lf_next). */
inline bool lf_cas_next(lf_list *l, uint node, uint expected, uint desired) {
#ifndef ASYM_FINE
    asym_fence();
#endif
    bool ok = asym_cas(lf_word(l, node, LF_NEXT), expected, desired);
    if (!ok) l->retries += 1u;
    return ok;
}

/* Pushes the chain first .. last (linked through their LF_RETIRE words, last's to be set
 * here), `count` nodes, onto the retire stack with one CAS. */
inline void lf_retire_chain(lf_list *l, uint first, uint last, uint count) {
    __global uint *top = lf_word(l, l->root, LF_RETIRED);
    for (uint tries = 0; tries < LF_MAX_RETRIES; ++tries) {
        uint h = asym_load_acquire(top);
        asym_store_relaxed(lf_word(l, last, LF_RETIRE), h);
#ifndef ASYM_FINE
        asym_fence();
#endif
        if (asym_cas(top, h, first)) {
            asym_fetch_add(lf_word(l, l->root, LF_RETIRED_N), count);
            return;
        }
    }
    l->error = LF_ERR_BOUND;
}

inline void lf_retire(lf_list *l, uint node) { lf_retire_chain(l, node, node, 1u); }

/* Harris's search: right = the first unmarked node with value >= key (0 at the end),
 * *left = its unmarked predecessor, adjacent when it returns. Returns LF_MARK (not a handle)
 * when a bound was hit. */
inline uint lf_search(lf_list *l, int key, uint *left) {
    for (uint tries = 0; tries < LF_MAX_RETRIES; ++tries) {
        uint t = l->root;
        uint t_next = lf_next(l, t);
        uint left_next = t_next;
        *left = t;
        uint steps = 0;
        lf_step s;
        do {
            if (!lf_marked(t_next)) {
                *left = t;
                left_next = t_next;
            }
            t = lf_unmarked(t_next);
            if (t == 0u) break;
            s = lf_read(l, t);
            t_next = s.next;
            if (++steps > l->max_steps) {
                l->error = LF_ERR_BOUND;
                return LF_MARK;
            }
        } while (lf_marked(t_next) || s.value < key);
        uint right = t;
        if (left_next == right) {
            if (right != 0u && lf_marked(lf_next(l, right))) continue;
            return right;
        }
        if (lf_cas_next(l, *left, left_next, right)) {
            /* The nodes from left_next up to right are marked and now unlinked: ours. */
            for (uint n = left_next; n != right && n != 0u; ) {
                uint nn = lf_unmarked(lf_next(l, n));
                lf_retire(l, n);
                n = nn;
            }
            if (right != 0u && lf_marked(lf_next(l, right))) continue;
            return right;
        }
    }
    l->error = LF_ERR_BOUND;
    return LF_MARK;
}

inline uint lf_new_node(lf_list *l, int value, uint hint) {
    uint n = asym_malloc(l->a, LF_NODE_BYTES, hint);
    if (n != 0u) {
        asym_store_relaxed(lf_word(l, n, LF_VALUE), (uint)value);
        asym_store_relaxed(lf_word(l, n, LF_RETIRE), 0u);
    }
    return n;
}

/* The ordered-set insert: links a new node holding `key` between the nodes around it,
 * failing when `key` is present; retries with a fresh search when the CAS loses. The node is
 * allocated only once a place is found, kept for the next try when a CAS loses. */
inline uint lf_set_insert(lf_list *l, int key, uint hint) {
    uint node = 0u;
    for (uint tries = 0; tries < LF_MAX_RETRIES; ++tries) {
        uint pred;
        const uint succ = lf_search(l, key, &pred);
        if (succ == LF_MARK) break;
        if (succ != 0u && lf_value(l, succ) == key) {
            if (node != 0u) asym_free(l->a, node, hint);
            return LF_FAILED;
        }
        if (node == 0u) {
            node = lf_new_node(l, key, hint);
            if (node == 0u) return LF_NO_MEMORY;
        }
        asym_store_relaxed(lf_word(l, node, LF_NEXT), succ);
        if (lf_cas_next(l, pred, succ, node)) return LF_DONE;
    }
    l->error = LF_ERR_BOUND;
    return LF_ERR_BOUND;
}

/* The positional operations, once the group's walk reached `cur` holding the operation's
 * target unmarked (`pred` the node it came from, `succ` cur's next word as read). Removes
 * mark cur's next word (the linearization point) and try one unlinking CAS on pred; inserts
 * link a new node after cur. A CAS lost to an insert after cur is retried on cur with its
 * new successor; one lost to a remove of cur (its next word now marked) returns
 * LF_SEARCHING: the operation goes on searching further along the walk, as a walk of its own
 * that read cur after the remove would. `*node` keeps an insert's allocated node between
 * tries. */
#define LF_SEARCHING 0xffffffffu /* not a result code: still searching */
/* Whether a positional batch's removes retire their nodes as one chain per work-group
 * (lf_group_retire) or each its own (lf_retire). */
#if defined(ASYM_FINE) || defined(ASYM_NVIDIA)
#define LF_GROUP_RETIRE 1
#else
#define LF_GROUP_RETIRE 0
#endif
inline uint lf_positional_at(lf_list *l, uint kind, int value, uint pred, uint cur, uint succ,
                             uint *node, uint *retired, uint hint) {
    if (kind == LF_OP_INSERT_AFTER && *node == 0u) {
        *node = lf_new_node(l, value, hint);
        if (*node == 0u) return LF_NO_MEMORY;
    }
    uint res = LF_ERR_BOUND;
    for (uint tries = 0; tries < LF_MAX_RETRIES && res == LF_ERR_BOUND; ++tries) {
        bool won;
        if (kind == LF_OP_REMOVE_VALUE) {
            won = lf_cas_next(l, cur, succ, succ | LF_MARK);
            if (won && lf_cas_next(l, pred, cur, succ)) {
#if LF_GROUP_RETIRE
                *retired = cur; /* on the retire stack with the group's chain */
#else
                lf_retire(l, cur);
#endif
            }
        } else {
            asym_store_relaxed(lf_word(l, *node, LF_NEXT), succ);
            won = lf_cas_next(l, cur, succ, *node);
        }
        if (won) {
            res = LF_DONE;
        } else {
            succ = lf_next(l, cur);
            if (lf_marked(succ)) res = LF_SEARCHING;
        }
    }
    if (res == LF_ERR_BOUND) l->error = LF_ERR_BOUND;
    return res;
}

/* The positional list's batch: one walk per work-group, shared by all its work-items. Every
 * operation scans from the head for the first unmarked node holding its target, so a
 * work-item per walk makes the device's work-items all read the same nodes at about the same
 * time: each node's line takes a request from every warp, one L2 slice serves them in turn,
 * and a step costs that queue rather than a load's latency. Here the group's first work-item
 * (the leader) reads the walk a window of `window` nodes at a time (value and next word of
 * each, lf_read) into local memory, and every work-item then scans the window for its target
 * and acts on the first unmarked node holding it (lf_positional_at); the walk ends when no
 * work-item of the group is searching, at the end of the list or past max_steps.
 *
 * Each operation sees what a walk of its own would see, read by the leader on its behalf in
 * the same order, up to `window` steps earlier than it acts: a CAS that finds the node
 * changed since is retried on its fresh successor or, when the node was removed, goes on
 * searching (lf_positional_at), as a lone walk whose CAS lost would. A window of one is a
 * barrier per node; a window of W makes the leader's dependent loads follow each other
 * without a barrier between them and costs every work-item a scan of W local entries. A lane
 * past n (the last group) takes part in the barriers only. The window buffer is
 * double-buffered by parity, so one barrier a window orders the leader's writes before the
 * group's reads and those reads before the leader's next write to the same slot; `left` only
 * falls, so the leader's read of it (one window late at worst) costs at most a window more.
 * Local memory: `step` 2 × LF_WINDOW_WORDS words, `left` 1. The loop tests its exit at the
 * bottom, after the barrier (PoCL's work-group compiler rejected a `break` out of the middle
 * of a loop holding a barrier).
 *
 * On the H200 (docs/benchmarks/list.md), groups of 512: one walk of the seed's 10,000 nodes
 * alone takes 5.4 ms with a window of one node (a barrier per node), 2.6 ms with 32 or 64
 * (0.26 µs a dependent load); the seed's experiment 7.3–7.6 ms and 3.0 ms of device time. */
#define LF_WINDOW_WORDS (3u * LF_WINDOW_MAX + 2u) /* (node, value, next) per step; count; go */
inline uint lf_positional_group(lf_list *l, uint kind, int x, int y, bool active, uint window,
                                __local uint *step, __local uint *left, uint *retired) {
    const bool leader = get_local_id(0) == 0u;
    const bool op = active && (kind == LF_OP_REMOVE_VALUE || kind == LF_OP_INSERT_AFTER);
    uint r = op ? LF_SEARCHING : (active ? LF_ERR_KIND : LF_FAILED);
    uint node = 0u; /* an insert's new node, allocated when its target is found */
    if (leader) *left = 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (op) atomic_inc(left);
    barrier(CLK_LOCAL_MEM_FENCE);
    uint pred = l->root, walked = 0u, parity = 0u, go;
    uint next = leader ? lf_unmarked(lf_next(l, l->root)) : 0u; /* the leader's cursor */
    do {
        __local uint *s = step + parity * LF_WINDOW_WORDS;
        parity ^= 1u;
        if (leader) {
            /* go: 1 the walk goes on after this window, 0 it ends with it, 2 it passed
             * max_steps after the window's nodes. */
            uint g = atomic_add(left, 0u) != 0u ? 1u : 0u, count = 0u;
            while (g == 1u && count < window && next != 0u) {
                if (++walked > l->max_steps) {
                    g = 2u;
                } else {
                    const lf_step st = lf_read(l, next);
                    s[3u * count] = next;
                    s[3u * count + 1u] = (uint)st.value;
                    s[3u * count + 2u] = st.next;
                    ++count;
                    next = lf_unmarked(st.next);
                }
            }
            if (g == 1u && next == 0u) g = 0u;
            s[3u * LF_WINDOW_MAX] = count;
            s[3u * LF_WINDOW_MAX + 1u] = g;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        const uint count = s[3u * LF_WINDOW_MAX];
        go = s[3u * LF_WINDOW_MAX + 1u];
        /* The inner loop finds the next entry holding the target unmarked (a local load and
         * a compare an entry); the operation acts outside it and, when it goes on
         * searching, the scan resumes after that entry. */
        for (uint j = 0u; r == LF_SEARCHING && j < count; ++j) {
            while (j < count && ((int)s[3u * j + 1u] != x || lf_marked(s[3u * j + 2u]))) ++j;
            if (j < count) {
                const uint at_pred = j > 0u ? s[3u * (j - 1u)] : pred;
                r = lf_positional_at(l, kind, y, at_pred, s[3u * j], s[3u * j + 2u], &node,
                                     retired, get_global_id(0));
                if (r != LF_SEARCHING) atomic_dec(left);
            }
        }
        if (count > 0u) pred = s[3u * (count - 1u)];
        if (go == 2u && r == LF_SEARCHING) r = LF_ERR_BOUND;
    } while (go == 1u);
    if (r == LF_SEARCHING) r = LF_FAILED;
    if (r == LF_ERR_BOUND) l->error = LF_ERR_BOUND;
    /* An insert whose target is gone frees the node it allocated (never published). */
    if (r != LF_DONE && node != 0u) asym_free(l->a, node, get_global_id(0));
    return r;
}

inline uint lf_set_remove(lf_list *l, int key) {
    for (uint tries = 0; tries < LF_MAX_RETRIES; ++tries) {
        uint left;
        uint right = lf_search(l, key, &left);
        if (right == LF_MARK) break;
        if (right == 0u || lf_value(l, right) != key) return LF_FAILED;
        uint rn = lf_next(l, right);
        if (lf_marked(rn)) continue;
        if (lf_cas_next(l, right, rn, rn | LF_MARK)) {
            if (lf_cas_next(l, left, right, rn)) {
                lf_retire(l, right);
            } else {
                (void)lf_search(l, key, &left); /* unlinks it */
            }
            return LF_DONE;
        }
    }
    l->error = LF_ERR_BOUND;
    return LF_ERR_BOUND;
}

inline uint lf_set_contains(lf_list *l, int key) {
    uint t = lf_unmarked(lf_next(l, l->root));
    uint steps = 0;
    while (t != 0u) {
        const lf_step s = lf_read(l, t);
        if (s.value >= key) return s.value == key && !lf_marked(s.next) ? LF_DONE : LF_FAILED;
        t = lf_unmarked(s.next);
        if (++steps > l->max_steps) {
            l->error = LF_ERR_BOUND;
            return LF_ERR_BOUND;
        }
    }
    return LF_FAILED;
}

/* The nodes a positional batch's work-group unlinked (`retired`: each work-item's, or 0) go
 * on the retire stack as one chain: one CAS on the stack's top word per group, where a CAS
 * per node made 10,000 removes queue on that word. Every work-item of the group calls it;
 * the chain is linked in local memory's order of arrival. `chain`: top, bottom, count.
 *
 * Only where LF_GROUP_RETIRE is set (the fine transport, NVIDIA): PoCL 3.1's coarse build
 * (OpenCL C 1.2 atomics) ran the work-item-0 block after the second barrier once per
 * work-item, pushing the chain several times (a cycle in the retire stack, caught by
 * structures/tests/list.rs), and a push by the group's last work-item to arrive, with no
 * barrier, left the stack and its count disagreeing; there each remove retires its node
 * where it unlinks it (lf_positional_at), as before the chain. */
inline void lf_group_retire(lf_list *l, uint retired, __local uint *chain) {
#if LF_GROUP_RETIRE
    if (get_local_id(0) == 0u) {
        chain[0] = 0u;
        chain[1] = 0u;
        chain[2] = 0u;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (retired != 0u) {
        const uint below = atomic_xchg(&chain[0], retired);
        asym_store_relaxed(lf_word(l, retired, LF_RETIRE), below);
        if (below == 0u) chain[1] = retired;
        atomic_inc(&chain[2]);
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (get_local_id(0) == 0u && chain[0] != 0u) {
        lf_retire_chain(l, chain[0], chain[1], chain[2]);
    }
#endif
}

/* One work-item per operation: ops[3i] kind, ops[3i+1], ops[3i+2] its two values;
 * results[i] one of LF_FAILED .. LF_ERR_KIND. `positional` (1) or ordered set (0) says which
 * kinds this list takes; a positional list's work-groups share their walks
 * (lf_positional_group), an ordered set's work-items walk alone. */
__kernel void list_apply(__global ulong *ctl, __global uint *heap, __global uint *sb_class,
                         uint root, uint max_steps, uint positional, uint window,
                         __global const uint *ops, __global uint *results, uint n,
                         __global uint *launch_stats) {
    __local uint step[2u * LF_WINDOW_WORDS];
    __local uint left, chain[3];
    const uint i = get_global_id(0);
    lf_list l = {{ctl, heap, sb_class}, root, max_steps, 0u, 0u};
    const bool active = i < n;
    const uint kind = active ? ops[3u * i] : 0u;
    const int x = active ? (int)ops[3u * i + 1u] : 0;
    const int y = active ? (int)ops[3u * i + 2u] : 0;
    uint r;
    if (positional != 0u) {
        /* Every work-item of the group, past n too, reaches the walk's barriers. */
        uint retired = 0u;
        r = lf_positional_group(&l, kind, x, y, active, window, step, &left, &retired);
        lf_group_retire(&l, retired, chain);
    } else if (!active) {
        return;
    } else if (kind == LF_OP_SET_INSERT) {
        r = lf_set_insert(&l, x, i);
    } else if (kind == LF_OP_SET_REMOVE) {
        r = lf_set_remove(&l, x);
    } else if (kind == LF_OP_SET_CONTAINS) {
        r = lf_set_contains(&l, x);
    } else {
        r = LF_ERR_KIND;
    }
    if (!active) return;
    results[i] = r;
    /* The launch's counters go to a small buffer of their own, so that the host reads them
     * without mapping the arena. */
    if (l.retries != 0u) asym_fetch_add(launch_stats, l.retries);
    if (l.error != 0u) (void)asym_cas(launch_stats + 1, 0u, l.error);
}
