/* 0/1 knapsack branch-and-bound: the expansion of search nodes on the throughput device, so
 * that a round's nodes go from the device heap (a DEL's keys) to their children in the heap
 * (an INS's keys) without crossing to the host (structures/src/apps/knapsack/device_expand.rs).
 *
 * The problem (structures/src/apps/knapsack/bounds.rs has the bounds' derivation): the free
 * items in ratio order, `prof[i]`, `wt[i]`, their prefix sums `ps[0..=n]`, `ws[0..=n]`, the
 * capacity, the cardinality bound `cap` that caps every bound, the surrogate multiplier
 * `lambda` (0: none) and `lightest[i]` (the smallest weight of items i..). A node is a level
 * (items 0..level decided), its profit and weight, and its bound U2 (Martello and Toth,
 * capped by the cardinality and surrogate bounds). The host checks before building that no
 * product below reaches 2^64 ((max weight + lambda) · max profit and capacity + lambda · n),
 * which the host search computes in 128 bits.
 *
 * knapsack_expand: one work-item per node taken from the heap. A node whose bound cannot beat
 * the incumbent is dropped; else the work-item walks forward through the items that fit
 * (Horowitz and Sahni's forward move, as `Problem::expand`): at each level the "skip" child
 * is a new node when its bound beats the incumbent, the "take" child is walked into at once.
 * A walk makes at most KN_MAX_KIDS skip children and KN_MAX_STEPS steps; where it stops early
 * its current node (the take child, whose bound beats the incumbent) is one more child, the
 * walk's continuation: so a node makes at most KN_MAX_KIDS + 1 children (the host sizes the
 * output for that) and no work-item walks much longer than the others.
 *
 * Children: child number `c` of the launch (a 64-bit fetch-add on a running counter; the host
 * passes the counter's value at the launch, `kids_base`) takes slot `free[n_free - 1 - c]`
 * of the free stack while there are some, else `arena_len + c - n_free`; past `limit` the
 * launch records KC_FULL and writes nothing there, and the host runs the round again with a
 * larger arena: nothing the failed launch wrote matters (the children it placed sit in slots
 * that were free, the popped nodes and their slots are untouched: knapsack_release does
 * nothing after a full launch, and only a raised incumbent, a valid one, stays). Its node goes to the arena (4 words:
 * bound, profit, weight, level), its heap key to `out[c]`: the pair (key, slot) in the device
 * heap's form for (u32, u32) pairs, the key ordering by bound (best first) and then by depth
 * (the deepest first), as the host search's `key` does. The popped nodes' own slots are not
 * reused in the launch that reads them: knapsack_release pushes them on the free stack
 * afterwards.
 *
 * knapsack_release, the launch after, puts the popped nodes' slots back on the free stack and,
 * while the host's heap is empty, carries a round's children over its nodes when they fit
 * one; knapsack_rounds (GPUs) runs such rounds many to a launch, with grid barriers between
 * the two steps (its comment below has the argument).
 *
 * Memory ordering: the arena slots a launch writes are distinct (the counter hands each child
 * its own) and none is read in the same launch (the popped nodes' slots are not handed out);
 * the next launches read them after the kernel boundary. The incumbent is a 64-bit word
 * raised by compare-and-swap; a work-item reads it once at its start and prunes with its own
 * best after that (a stale incumbent only prunes less). OpenCL C 1.2 and 64-bit atomics
 * (cl_khr_int64_base_atomics, -DASYM_INT64_ATOMICS=1).
 */

/* The control words (KC_*: the incumbent, the running counters, and knapsack_rounds' state at
 * its end, KC_ST_*), knapsack_rounds' exit codes (KN_EXIT_*), KN_CTL_WORDS, KN_MAX_KIDS and
 * KN_MAX_STEPS come from the host (device_expand.rs, KERNEL_CONSTANTS). */

/* The problem's arrays and scalars, passed along the helpers. */
typedef struct {
    __global const ulong *prof, *wt, *ps, *ws, *lightest;
    uint n;
    ulong capacity, cap, lambda;
} kn_problem;

inline void kn_fetch_max64(__global ulong *p, ulong v) {
    ulong seen = asym_load64_relaxed(p);
    while (seen < v && !asym_cas64(p, seen, v)) seen = asym_load64_relaxed(p);
}

/* `room · p / w`, rounded down (the host's `frac`; the product fits, see the header). */
inline ulong kn_frac(ulong room, ulong p, ulong w) { return room * p / w; }

/* The largest t in lo..=hi with ws[t] <= limit (ws[lo] <= limit holds). */
inline uint kn_last_weight_within(const kn_problem *pb, uint lo, uint hi, ulong limit) {
    while (lo < hi) {
        const uint mid = (lo + hi + 1) / 2;
        if (pb->ws[mid] <= limit) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The surrogate bound of a node at `level` (the host's `Problem::surrogate`). */
inline ulong kn_surrogate(const kn_problem *pb, uint level, ulong profit, ulong room) {
    const uint n = pb->n;
    if (level == n || pb->lambda == 0) return ULONG_MAX;
    const ulong lambda = pb->lambda;
    const ulong more = min(room / pb->lightest[level], (ulong)(n - level));
    const ulong limit = room + lambda * more;
    const ulong wl = pb->ws[level];
    /* used(t) = ws[t] - ws[level] + lambda·(t - level), monotone in t. */
    uint lo = level, hi = n;
    while (lo < hi) {
        const uint mid = (lo + hi + 1) / 2;
        if (pb->ws[mid] - wl + lambda * (ulong)(mid - level) <= limit) lo = mid;
        else hi = mid - 1;
    }
    const uint t = lo;
    ulong b = profit + pb->ps[t] - pb->ps[level];
    if (t < n) {
        const ulong used = pb->ws[t] - wl + lambda * (ulong)(t - level);
        b += (limit - used) * pb->prof[t] / (pb->wt[t] + lambda);
    }
    return b;
}

/* U2 of a node at `level` with `profit` and `weight`, capped (the host's `Problem::bound`);
 * *feasible gets the profit of the items from `level` taken in order while they fit. */
inline ulong kn_bound(const kn_problem *pb, uint level, ulong profit, ulong weight,
                      ulong *feasible) {
    const uint n = pb->n;
    const ulong room = pb->capacity - weight;
    const ulong wl = pb->ws[level];
    const ulong limit = wl + room; /* at most the capacity plus the items' weight: no overflow */
    const uint s = kn_last_weight_within(pb, level, n, limit);
    const ulong prefix = profit + pb->ps[s] - pb->ps[level];
    const ulong left = room - (pb->ws[s] - wl);
    *feasible = prefix;
    if (s == n) return min(prefix, pb->cap);
    const ulong ws_ = pb->wt[s], ps_ = pb->prof[s];
    ulong u0 = prefix;
    if (s + 1 < n) u0 += kn_frac(left, pb->prof[s + 1], pb->wt[s + 1]);
    ulong u1 = 0;
    if (s > level && ws_ <= room) {
        const ulong pp = pb->prof[s - 1], pw = pb->wt[s - 1];
        const ulong loss = ((ws_ - left) * pp + pw - 1) / pw;
        const ulong whole = prefix + ps_;
        u1 = whole > loss ? whole - loss : 0;
    }
    const ulong u = min(max(u0, u1), pb->cap);
    return min(u, kn_surrogate(pb, level, profit, room));
}

/* The heap key of a node with bound `b` at `level` (the host's `key` in device.rs). */
inline uint kn_key(ulong b, uint level, ulong root_bound, uint shift, uint depth_bits,
                   uint levels) {
    const ulong below = min((root_bound > b ? root_bound - b : 0) >> shift, (ulong)UINT_MAX);
    const ulong left = (ulong)(levels - level);
    return (uint)min((below << depth_bits) | left, (ulong)UINT_MAX);
}

/* Writes child number `c` (KC_FULL past the limit). */
inline void kn_emit(ulong c, ulong b, uint level, ulong profit, ulong weight,
                    __global const uint *free, ulong n_free, ulong arena_len, ulong limit,
                    __global ulong *arena, __global long *out, __global ulong *ctl,
                    ulong root_bound, uint shift, uint depth_bits, uint levels) {
    /* Volatile: in knapsack_rounds another group pushed it during this launch. */
    const ulong slot = c < n_free ? (ulong)asym_load_relaxed((__global uint *)&free[n_free - 1 - c])
                                  : arena_len + (c - n_free);
    if (slot >= limit) {
        ctl[KC_FULL] = 1;
        return;
    }
    __global ulong *node = arena + 4 * slot;
    node[0] = b;
    node[1] = profit;
    node[2] = weight;
    node[3] = level;
    const uint key = kn_key(b, level, root_bound, shift, depth_bits, levels);
    /* The device heap's form of the pair (key, slot): the key's order bit flipped, high
     * word; the payload, low word (DeviceHeapKey for (u32, u32)). */
    out[c] = as_long(((ulong)(key ^ 0x80000000u) << 32) | (ulong)(uint)slot);
}

/* The tables follow the control words in one buffer: prof[n], wt[n], ps[n + 1], ws[n + 1],
 * lightest[max(n, 1)]. */
inline kn_problem kn_tables(__global const ulong *ctl, uint n, ulong capacity, ulong cap,
                            ulong lambda) {
    __global const ulong *prof = ctl + KN_CTL_WORDS;
    const kn_problem pb = {prof,  prof + n, prof + 2 * n, prof + 3 * n + 1, prof + 4 * n + 2,
                           n,     capacity, cap,          lambda};
    return pb;
}

/* Expands popped node `j` (module header). Every word another work-group may have written
 * in the same launch (knapsack_rounds: the node's pair, its arena words, the free stack) is
 * read with a volatile load. */
inline void kn_expand_node(uint j, __global const long *popped, __global ulong *arena,
                           __global const uint *free, ulong n_free, ulong arena_len, ulong limit,
                           __global long *out, __global ulong *ctl, ulong kids_base,
                           ulong host_best, const kn_problem *pb, ulong root_bound, uint shift,
                           uint depth_bits) {
    const uint n = pb->n;
    const ulong capacity = pb->capacity;
    __global const ulong *prof = pb->prof, *wt = pb->wt;
    const ulong pair = asym_load64_relaxed((__global ulong *)&popped[j]);
    const ulong slot = (ulong)(uint)(pair & 0xffffffffu);
    __global ulong *node = arena + 4 * slot;
    const ulong nb = asym_load64_relaxed(&node[0]);
    ulong profit = asym_load64_relaxed(&node[1]), weight = asym_load64_relaxed(&node[2]);
    uint level = (uint)asym_load64_relaxed(&node[3]);
    const ulong start = max(host_best, asym_load64_relaxed(&ctl[KC_BEST]));
    if (nb <= start) {
        (void)asym_fetch_add64(&ctl[KC_PRUNED], 1);
        return;
    }
    (void)asym_fetch_add64(&ctl[KC_EXPANDED], 1);
    ulong best = max(start, profit);
    uint kids = 0, steps = 0;
    while (level < n) {
        /* Skip item `level`. */
        ulong feasible;
        ulong b = kn_bound(pb, level + 1, profit, weight, &feasible);
        best = max(best, feasible);
        if (b > best) {
            const ulong c = asym_fetch_add64(&ctl[KC_KIDS], 1) - kids_base;
            kn_emit(c, b, level + 1, profit, weight, free, n_free, arena_len, limit, arena, out,
                    ctl, root_bound, shift, depth_bits, n);
            kids += 1;
        }
        /* Take it, and walk into that child at once. */
        const ulong w = wt[level];
        if (weight + w > capacity) break;
        profit += prof[level];
        weight += w;
        level += 1;
        b = kn_bound(pb, level, profit, weight, &feasible);
        best = max(best, feasible);
        if (b <= best) break;
        steps += 1;
        if (level < n && (kids >= KN_MAX_KIDS || steps >= KN_MAX_STEPS)) {
            /* The walk's continuation: the take child, expanded by a later round. */
            const ulong c = asym_fetch_add64(&ctl[KC_KIDS], 1) - kids_base;
            kn_emit(c, b, level, profit, weight, free, n_free, arena_len, limit, arena, out, ctl,
                    root_bound, shift, depth_bits, n);
            break;
        }
    }
    if (best > start) kn_fetch_max64(&ctl[KC_BEST], best);
}

__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void knapsack_expand(__global const long *popped, uint n_popped,
                            __global ulong *arena, __global const uint *free, ulong n_free,
                            ulong arena_len, ulong limit, __global long *out,
                            __global ulong *ctl, ulong kids_base, ulong host_best, uint n,
                            ulong capacity, ulong cap, ulong lambda, ulong root_bound,
                            uint shift, uint depth_bits) {
    const uint j = get_global_id(0);
    if (j >= n_popped) return;
    const kn_problem pb = kn_tables(ctl, n, capacity, cap, lambda);
    kn_expand_node(j, popped, arena, free, n_free, arena_len, limit, out, ctl, kids_base,
                   host_best, &pb, root_bound, shift, depth_bits);
}

/* knapsack_release's work for work-item `j` of `g`: indices j, j + g, j + 2g, ... of the
 * popped nodes (their slots onto the stack) and, with `carry`, of the children (their pairs
 * over the round's). Each index has one work-item, which reads a pair's slot before it writes
 * the pair over it, so no pair is overwritten before its slot is pushed. */
inline void kn_release(ulong j, ulong g, __global long *popped, uint n_popped,
                       __global uint *free, ulong n_free, ulong kids, __global const long *out,
                       bool carry) {
    const ulong at = n_free - min(kids, n_free);
    const ulong end = carry ? max((ulong)n_popped, kids) : (ulong)n_popped;
    for (ulong i = j; i < end; i += g) {
        if (i < n_popped) {
            const ulong pair = asym_load64_relaxed((__global ulong *)&popped[i]);
            free[at + i] = (uint)(pair & 0xffffffffu);
        }
        if (carry && i < kids) {
            popped[i] = as_long(asym_load64_relaxed((__global ulong *)&out[i]));
        }
    }
}

/* After knapsack_expand (the next launch of the queue, so its counter is final here): the
 * popped nodes' slots onto the free stack, above the entries the children left. With `carry`
 * (the host's heap is empty) and at most `carry_max` children, the children's pairs become
 * the next round's nodes, `popped[i] = out[i]` (kn_release). The host reads the same counter
 * and knows the round went straight on. */
kernel void knapsack_release(__global long *popped, uint n_popped, __global uint *free,
                             ulong n_free, __global const ulong *ctl, ulong kids_base,
                             __global const long *out, uint carry, uint carry_max) {
    /* A round that ran out of slots runs again: the stack and the round stay as they were. */
    if (ctl[KC_FULL] != 0) return;
    const ulong kids = ctl[KC_KIDS] - kids_base;
    kn_release(get_global_id(0), get_global_size(0), popped, n_popped, free, n_free, kids, out,
               carry != 0 && kids <= carry_max);
}

/* Rounds in one launch while the host's heap is empty (GPUs; device_expand.rs's resident
 * rounds): each round is knapsack_expand's work spread over the launch's work-items, a grid
 * barrier (asym_grid_barrier, common.cl; `bar[0]` its counter from `bar_base`, `bar[1]` the
 * abort word), knapsack_release's work with the carry, and a second grid barrier, after
 * which the next round's nodes (carried over `popped`), the free stack and the arena's nodes
 * are all written. The round state (nodes, free stack length, arena length, KC_KIDS at the
 * round's start) is in private variables, the same in every work-item: each computes it
 * from the words it read after the barrier (KC_FULL, KC_KIDS), which no work-item writes
 * between that barrier and the next round's expansion. The launch ends at the first round
 * that fills the arena (not released: the host runs it again, as after a full
 * knapsack_expand), makes no children, or makes more than `carry_max` (released, the
 * children left in `out` for the heap), or after `max_rounds`; work-item 0 then writes the
 * state for the host (KC_ST_*). The incumbent is KC_BEST, read at each node's start. */
__attribute__((reqd_work_group_size(WG, 1, 1)))
kernel void knapsack_rounds(__global long *popped, __global ulong *arena, __global uint *free,
                            __global long *out, __global ulong *ctl, __global uint *bar,
                            ulong n_popped, ulong n_free, ulong arena_len, ulong kids_base,
                            ulong limit, ulong carry_max, uint max_rounds, uint bar_base,
                            ulong host_best, uint n, ulong capacity, ulong cap, ulong lambda,
                            ulong root_bound, uint shift, uint depth_bits) {
    __local uint lflag;
    const kn_problem pb = kn_tables(ctl, n, capacity, cap, lambda);
    const ulong gid = get_global_id(0), g = get_global_size(0);
    const uint groups = (uint)get_num_groups(0);
    uint target = bar_base, bars = 0, ran = 0, exit_code = KN_EXIT_MORE;
    ulong expanded_at = 0, pruned_at = 0;
    while (ran < max_rounds) {
        for (ulong j = gid; j < n_popped; j += g) {
            kn_expand_node((uint)j, popped, arena, free, n_free, arena_len, limit, out, ctl,
                           kids_base, host_best, &pb, root_bound, shift, depth_bits);
        }
        target += groups;
        bars += 1;
        if (!asym_grid_barrier(&bar[0], &bar[1], target, &lflag)) {
            exit_code = KN_EXIT_ABORT;
            break;
        }
        if (asym_load64_relaxed(&ctl[KC_FULL]) != 0) {
            exit_code = KN_EXIT_FULL;
            break;
        }
        if (gid == 0) {
            /* The next round's start: stable between the barriers. */
            expanded_at = asym_load64_relaxed(&ctl[KC_EXPANDED]);
            pruned_at = asym_load64_relaxed(&ctl[KC_PRUNED]);
        }
        const ulong kids = asym_load64_relaxed(&ctl[KC_KIDS]) - kids_base;
        const bool carry = kids <= carry_max;
        kn_release(gid, g, popped, (uint)n_popped, free, n_free, kids, out, carry);
        const ulong reused = min(kids, n_free);
        n_free = n_free - reused + n_popped;
        arena_len += kids - reused;
        kids_base += kids;
        n_popped = kids;
        ran += 1;
        if (!carry) {
            exit_code = KN_EXIT_HEAP;
            break;
        }
        if (kids == 0) {
            exit_code = KN_EXIT_DONE;
            break;
        }
        target += groups;
        bars += 1;
        if (!asym_grid_barrier(&bar[0], &bar[1], target, &lflag)) {
            exit_code = KN_EXIT_ABORT;
            break;
        }
    }
    if (gid == 0) {
        ctl[KC_ST_POPPED] = n_popped;
        ctl[KC_ST_FREE] = n_free;
        ctl[KC_ST_LEN] = arena_len;
        ctl[KC_ST_RAN] = ran;
        ctl[KC_ST_EXIT] = exit_code;
        ctl[KC_ST_BARS] = bars;
        ctl[KC_ST_EXPANDED] = expanded_at;
        ctl[KC_ST_PRUNED] = pruned_at;
    }
}

/* Garbage collection of the heap's nodes: pairs[0..n) (the whole heap, taken out) are kept
 * (`kept`, compacted in no particular order) where their bound beats `best`, else their slots
 * go onto the free stack at free[n_free ..]; the running counters ctl[KC_KEPT] and
 * ctl[KC_FREED] hand out the places (their values at the launch: `kept_base`, `freed_base`). */
kernel void knapsack_collect(__global const long *pairs, uint n, __global const ulong *arena,
                             ulong best, __global long *kept, __global uint *free, ulong n_free,
                             __global ulong *ctl, ulong kept_base, ulong freed_base) {
    const uint j = get_global_id(0);
    if (j >= n) return;
    const long pair = pairs[j];
    const uint slot = (uint)(as_ulong(pair) & 0xffffffffu);
    if (arena[4 * (ulong)slot] > best) {
        kept[asym_fetch_add64(&ctl[KC_KEPT], 1) - kept_base] = pair;
    } else {
        free[n_free + asym_fetch_add64(&ctl[KC_FREED], 1) - freed_base] = slot;
    }
}

/* Copies n 32-bit words (the arena and the free stack growing between rounds). */
kernel void knapsack_copy(__global const uint *src, __global uint *dst, ulong n) {
    for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) dst[i] = src[i];
}
