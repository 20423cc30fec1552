/* asym red-black tree: batched search on the throughput device, one work-item per query,
 * on the tree's nodes in the SVM arena (structures/src/rbtree: the host path that builds and
 * validates the tree, and the layout these constants come from).
 *
 * Layout (arena handles are word indices into the heap; RB_NIL = 0 is never a block):
 *   node (RB_NODE_WORDS words): [RB_KEY] key in the ordered int32 form | [RB_VALUE_LO],
 *       [RB_VALUE_HI] the 64-bit value | [RB_COLOUR] | [RB_LEFT], [RB_RIGHT], [RB_PARENT]
 *       links | a lock word for the concurrent modes.
 *   header block: [RB_ROOT] the root | [RB_COUNT] the node count.
 * Build options: the RB_* constants (KERNEL_CONSTANTS in rbtree/mod.rs) and -DKEY_MAP=<0
 * int32, 1 uint32, 2 float32> for common.cl's ASYM_ORDERED (queries arrive as raw bits).
 *
 * rb_search walks from the root to the key or a NIL link (rb_lower_bound, at the end of the
 * file, to a NIL link, keeping the last node where it turned left): the key and both child links lie
 * in one 32-byte sector, so a level costs one memory transaction, and the top levels of the
 * tree stay in the device's cache across queries. A walk longer than RB_MAX_DEPTH (twice
 * the height bound of a red-black tree of 2^32 nodes) means a damaged tree: the query
 * reports RB_DAMAGED instead of looping and counts itself in the one-word `damaged` (so the
 * host learns of it without reading the answers back).
 *
 * Batched insert and delete: rbtree_update.cl, the next part of this program; routed
 * searches (SearchOrder::Routed): rbtree_route.cl, the part after it.
 *
 * Memory ordering: searches only read. The host changes the tree only between launches
 * (the batch methods map the arena, which waits for launches and, on coarse SVM, moves the
 * nodes), so every launch sees one whole version of the tree.
 */

__kernel void rb_search(__global const ulong *ctl, __global const uint *heap,
                        __global const uint *sb_class, uint header,
                        __global const int *keys, uint n, __global ulong *values,
                        __global uint *status, __global uint *damaged) {
    const uint i = get_global_id(0);
    if (i >= n) return;
    const int key = ASYM_ORDERED(keys[i]);
    uint x = heap[header + RB_ROOT];
    for (uint depth = 0; depth < RB_MAX_DEPTH; ++depth) {
        if (x == RB_NIL) {
            status[i] = RB_ABSENT;
            return;
        }
        const int k = (int)heap[x + RB_KEY];
        if (k == key) {
            values[i] = (ulong)heap[x + RB_VALUE_LO] | ((ulong)heap[x + RB_VALUE_HI] << 32);
            status[i] = RB_FOUND;
            return;
        }
        x = heap[x + (key < k ? RB_LEFT : RB_RIGHT)];
    }
    status[i] = RB_DAMAGED;
    atomic_inc(damaged);
}

/* The smallest key not below each query (its successor or itself): the walk keeps the last
 * node where it turned left. Answers: the key (ordered form) and value, status RB_FOUND or
 * RB_ABSENT (past the largest key); damaged walks as in rb_search. */
__kernel void rb_lower_bound(__global const ulong *ctl, __global const uint *heap,
                             __global const uint *sb_class, uint header,
                             __global const int *keys, uint n, __global ulong *values,
                             __global uint *status, __global uint *damaged,
                             __global int *found_keys) {
    const uint i = get_global_id(0);
    if (i >= n) return;
    const int key = ASYM_ORDERED(keys[i]);
    uint x = heap[header + RB_ROOT];
    uint best = RB_NIL;
    for (uint depth = 0; depth < RB_MAX_DEPTH; ++depth) {
        if (x == RB_NIL) {
            if (best == RB_NIL) {
                status[i] = RB_ABSENT;
            } else {
                found_keys[i] = (int)heap[best + RB_KEY];
                values[i] = (ulong)heap[best + RB_VALUE_LO] |
                            ((ulong)heap[best + RB_VALUE_HI] << 32);
                status[i] = RB_FOUND;
            }
            return;
        }
        const int k = (int)heap[x + RB_KEY];
        if (k >= key) {
            best = x;
            x = heap[x + RB_LEFT];
        } else {
            x = heap[x + RB_RIGHT];
        }
    }
    status[i] = RB_DAMAGED;
    atomic_inc(damaged);
}

/* Keys within [los[i], his[i]] for each range (raw bits; 0 when hi < lo): a walk to the
 * smallest key not below lo, then successor steps (down the right subtree's left spine, or
 * up the parent links) while the key is not above hi. There are no subtree sizes to count
 * by, so a range costs its length plus the height. A walk of more than `steps` steps (three
 * per node of the tree plus the height bound, more than any real walk takes) or a link
 * outside the arena marks the tree damaged, as in rb_search. */
__kernel void rb_range_count(__global const ulong *ctl, __global const uint *heap,
                             __global const uint *sb_class, uint header, uint heap_words,
                             __global const int *los, __global const int *his, uint n,
                             __global uint *counts, __global uint *damaged, uint steps) {
    const uint i = get_global_id(0);
    if (i >= n) return;
    const int lo = ASYM_ORDERED(los[i]), hi = ASYM_ORDERED(his[i]);
    counts[i] = 0u;
    if (hi < lo) return;
    const uint last = heap_words - 8u; /* the highest handle a node can have */
    uint x = heap[header + RB_ROOT], best = RB_NIL, step = 0u;
    bool bad = false;
    for (; x != RB_NIL && !bad; ++step) {
        bad = x > last || step >= steps;
        if (bad) break;
        if ((int)heap[x + RB_KEY] >= lo) {
            best = x;
            x = heap[x + RB_LEFT];
        } else {
            x = heap[x + RB_RIGHT];
        }
    }
    uint count = 0u;
    x = best;
    while (!bad && x != RB_NIL && (int)heap[x + RB_KEY] <= hi) {
        ++count;
        const uint r = heap[x + RB_RIGHT];
        if (r != RB_NIL) {
            /* The successor: the right subtree's leftmost node. */
            x = r;
            for (;;) {
                bad = x > last || ++step >= steps;
                if (bad) break;
                const uint l = heap[x + RB_LEFT];
                if (l == RB_NIL) break;
                x = l;
            }
        } else {
            /* The successor: the first ancestor reached from its left. */
            uint p = heap[x + RB_PARENT];
            for (;;) {
                bad = p > last || ++step >= steps;
                if (bad || p == RB_NIL || x != heap[p + RB_RIGHT]) break;
                x = p;
                p = heap[p + RB_PARENT];
            }
            x = p;
        }
    }
    if (bad) {
        atomic_inc(damaged);
        return;
    }
    counts[i] = count;
}

/* Builds a tree from m keys in strictly increasing order (ordered form), their values and a
 * node handle each (from the arena), one work-item per key, no locks: the shape is the
 * midpoint tree (the root is key m/2, each side built the same way), so a work-item finds
 * its own node's place by descending the index ranges from [0, m) and writes its node whole.
 * Sibling subtrees differ in size by at most one, so every NIL leaf lies at depth h or h + 1
 * (h = floor(log2 m)); nodes at depth h are red (unless h = 0: a lone root is black), the
 * rest black: every path from the root to a NIL then holds h black nodes, and a red node
 * (depth h) has only NIL children and a black parent. Work-item 0 writes the header. The
 * host reads nothing until the launch ends. */
__kernel void rb_build(__global const ulong *ctl, __global uint *heap,
                       __global const uint *sb_class, uint header,
                       __global const uint *handles, __global const int *keys,
                       __global const ulong *values, uint m, uint h) {
    const uint i = get_global_id(0);
    if (i >= m) return;
    uint lo = 0, hi = m, parent = RB_NIL, depth = 0;
    for (;;) {
        const uint mid = lo + (hi - lo) / 2;
        if (i == mid) break;
        parent = handles[mid];
        if (i < mid) hi = mid; else lo = mid + 1;
        ++depth;
    }
    const uint x = handles[i];
    heap[x + RB_KEY] = (uint)keys[i];
    heap[x + RB_VALUE_LO] = (uint)values[i];
    heap[x + RB_VALUE_HI] = (uint)(values[i] >> 32);
    heap[x + RB_COLOUR] = depth == h && depth > 0u ? RB_RED : 0u; /* the root stays black */
    heap[x + RB_LEFT] = lo < i ? handles[lo + (i - lo) / 2] : RB_NIL;
    heap[x + RB_RIGHT] = i + 1 < hi ? handles[i + 1 + (hi - i - 1) / 2] : RB_NIL;
    heap[x + RB_PARENT] = parent;
    heap[x + RB_LOCK] = 0u;
    if (i == 0) {
        heap[header + RB_ROOT] = handles[m / 2];
        heap[header + RB_COUNT] = m;
    }
}
