/* asym SVM allocator: malloc/free for work-items, over the same memory the host's
 * `SvmArena` (structures/src/arena) serves to CPU threads.
 *
 * Layout (all in SVM, built with -DASYM_INT64_ATOMICS=1 and the ArenaLayout defines):
 *   heap      uint words; superblock s covers words [s*ARENA_SB_WORDS, (s+1)*ARENA_SB_WORDS).
 *             Superblock 0 is never carved, so handle 0 is the null handle. A handle is the
 *             word offset of a block: the same value names the block on the host and on the
 *             device, and survives the host growing the arena (the heap is copied whole).
 *             Superblock 0's first words hold the statistics (ARENA_STAT_*).
 *   sb_class  uint per superblock: 0 while uncarved, else 1 + the size class it was cut into.
 *   ctl       ulong words: ARENA_NEXT_SB (bump counter of uncarved superblocks), ARENA_SB_COUNT
 *             (superblocks in the heap, written by the host between launches), from ARENA_BUMP
 *             each class's current run of superblocks and next unused block, and from
 *             ARENA_HEADS the free-list heads, ARENA_SHARDS per size class.
 *
 * Size class c holds blocks of 2^(c+1) words (8 bytes .. ARENA_SB_WORDS words). A class's free
 * blocks are spread over ARENA_SHARDS Treiber stacks (a work-item starts at the shard its id
 * picks, then tries the others) so that thousands of work-items do not all hit one word.
 * When every shard is empty, malloc takes the next unused block of the class's current run
 * of superblocks (one fetch-and-add on ARENA_BUMP + c, see arena_bump), and the one work-item
 * that finds the run used up takes a fresh one (ARENA_NEXT_SB). Superblocks stay in the class
 * they were cut for; blocks freed return to their class's lists.
 *
 * ABA: a head is (tag << 32 | handle) and every successful push or pop increments the tag,
 * so a pop whose compare-and-swap succeeds saw no other change to the head between its load
 * and its CAS; the block's next word it read in between is therefore the one pushed with it.
 * A pop may read the next word of a block another pop has just taken (and its new owner is
 * overwriting): it reads through an atomic load, the value is garbage, and the CAS fails on
 * the tag. Reading is always in bounds: handles on a free list are blocks of the heap, and the
 * heap never shrinks.
 *
 * Memory ordering: a pusher writes the next word (relaxed) and publishes it with the head CAS
 * (acq_rel on the fine transport, fenced on the coarse one); a popper loads the head with
 * acquire before reading the next word. Statistics are relaxed counters.
 */

#ifndef ARENA_SB_WORDS
#error "alloc.cl needs the ArenaLayout defines (-DARENA_SB_WORDS=... -DARENA_CLASSES=... -DARENA_SHARDS=...)"
#endif
#ifndef ASYM_INT64_ATOMICS
#error "alloc.cl needs -DASYM_INT64_ATOMICS=1"
#endif

/* The control words (ARENA_NEXT_SB, ARENA_SB_COUNT, ARENA_BUMP: per class
 * ((first superblock << 4 | run - 1) << 32) | next block), the statistics words
 * (ARENA_STAT_*: uint words at the start of the heap, superblock 0, never carved; relaxed
 * single atomics, no CAS loops: a high-water CAS loop on one word serialised the seed's
 * experiment's 50,000 mallocs on the H200), ARENA_EXHAUSTED, ARENA_MAX_RETRIES and
 * ARENA_RUN_MAX come from the host (`arena::KERNEL_CONSTANTS`). */
#define ARENA_HEADS (ARENA_BUMP + ARENA_CLASSES)

typedef struct {
    __global ulong *ctl;
    __global uint *heap;
    __global uint *sb_class;
} asym_arena;

/* Words in a block of class c. */
inline uint arena_class_words(uint c) { return 2u << c; }

/* The smallest class whose blocks hold `bytes`, or ARENA_CLASSES when none does. */
inline uint arena_class_of(uint bytes) {
    uint words = max(bytes / 4u + ((bytes & 3u) != 0u ? 1u : 0u), 2u);
    uint c = 31u - clz(words - 1u); /* ceil(log2(words)) - 1, for words >= 2 */
    return c < ARENA_CLASSES ? c : ARENA_CLASSES;
}

inline __global ulong *arena_head(asym_arena a, uint c, uint shard) {
    return a.ctl + ARENA_HEADS + c * ARENA_SHARDS + shard;
}

inline ulong arena_tagged(ulong old_head, uint handle) {
    return (((old_head >> 32) + 1ul) << 32) | (ulong)handle;
}

/* Pushes a block onto a stack. */
inline void arena_push(asym_arena a, uint c, uint shard, uint block) {
    __global ulong *head = arena_head(a, c, shard);
    for (uint tries = 0; tries < ARENA_MAX_RETRIES; ++tries) {
        ulong h = asym_load64_acquire(head);
        asym_store_relaxed(a.heap + block, (uint)h);
        if (asym_cas64(head, h, arena_tagged(h, block))) {
            asym_fetch_add(a.heap + ARENA_STAT_FREE + c, 1u);
            return;
        }
        asym_fetch_add(a.heap + ARENA_STAT_RETRIES, 1u);
    }
    /* A push that lost 2^24 races in a row: the block is dropped (counted as a bad free),
     * never linked twice. */
    asym_fetch_add(a.heap + ARENA_STAT_BAD_FREE, 1u);
}

/* Pops one block of a stack, or 0 when it is empty. An empty stack costs one load and no
 * fence. */
inline uint arena_pop(asym_arena a, uint c, uint shard) {
    __global ulong *head = arena_head(a, c, shard);
    if ((uint)asym_load64_relaxed(head) == 0u) {
        return 0u;
    }
    for (uint tries = 0; tries < ARENA_MAX_RETRIES; ++tries) {
        ulong h = asym_load64_acquire(head);
        uint block = (uint)h;
        if (block == 0u) {
            return 0u;
        }
        uint next = asym_load_relaxed(a.heap + block);
        if (asym_cas64(head, h, arena_tagged(h, next))) {
            asym_fetch_add(a.heap + ARENA_STAT_FREE + c, 0xFFFFFFFFu); /* minus one */
            return block;
        }
        asym_fetch_add(a.heap + ARENA_STAT_RETRIES, 1u);
    }
    return 0u;
}

inline void arena_account(asym_arena a, uint c) {
    uint units = arena_class_words(c) / 2u;
    uint now = asym_fetch_add(a.heap + ARENA_STAT_IN_USE, units) + units;
    asym_fetch_max_relaxed(a.heap + ARENA_STAT_HIGH, now);
}

/* Takes the next unused block of class c's current run of superblocks, switching to a fresh
 * run when it is used up. bump[c] = ((first superblock << 4 | run length - 1) << 32) | next
 * block index; one fetch-and-add hands out a block. The work-item whose add returns exactly
 * the run's block count is the only one that switches (it takes the new run's first block).
 * Runs double per switch (1, 2, 4 .. ARENA_RUN_MAX superblocks, fewer at the arena's end), so
 * a class that is used a little takes little and a burst of thousands of mallocs switches a
 * few times, not once per superblock. While a switch is pending, others see the index past
 * the count with a plain load and wait (bounded, trying the free lists meanwhile) without
 * adding: a storm of adds on the word would queue the switcher's store behind them.
 * Returns 0 with *oom set when the arena has no superblock left. */
inline uint arena_bump(asym_arena a, uint c, uint *oom) {
    __global ulong *bump = a.ctl + ARENA_BUMP + c;
    uint bw = arena_class_words(c);
    uint per = ARENA_SB_WORDS / bw;
    ulong seen = asym_load64_relaxed(bump);
    if ((uint)(seen >> 32) == ARENA_EXHAUSTED) {
        *oom = 1u;
        return 0u;
    }
    if ((uint)seen > ((((uint)(seen >> 32)) & 15u) + 1u) * per) {
        return 0u; /* a switch is pending */
    }
    ulong b = asym_fetch_add64(bump, 1ul);
    uint hi = (uint)(b >> 32);
    uint idx = (uint)b;
    if (hi == ARENA_EXHAUSTED) {
        *oom = 1u;
        return 0u;
    }
    uint run = (hi & 15u) + 1u;
    uint sb = hi >> 4;
    uint blocks = run * per;
    if (idx < blocks) {
        return sb * ARENA_SB_WORDS + idx * bw;
    }
    if (idx > blocks) {
        return 0u; /* another work-item is switching runs */
    }
    uint want = sb == 0u ? 1u : min(2u * run, ARENA_RUN_MAX);
    ulong fresh = asym_fetch_add64(a.ctl + ARENA_NEXT_SB, (ulong)want);
    ulong count = asym_load64_acquire(a.ctl + ARENA_SB_COUNT);
    if (fresh >= count) {
        asym_store64_release(bump, ((ulong)ARENA_EXHAUSTED << 32) | (ulong)blocks);
        *oom = 1u;
        return 0u;
    }
    uint got = (uint)min((ulong)want, count - fresh);
    for (uint k = 0; k < got; ++k) {
        asym_store_relaxed(a.sb_class + (uint)fresh + k, c + 1u);
    }
    /* The release store publishes the classes above with the run. */
    asym_store64_release(bump, ((((ulong)fresh << 4) | (ulong)(got - 1u)) << 32) | 1ul);
    return (uint)fresh * ARENA_SB_WORDS;
}

/* A block of at least `bytes` bytes (its handle), or 0 when the arena has no room (or `bytes`
 * is 0 or larger than a superblock). `hint` picks the first shard tried (a work-item id). */
inline uint asym_malloc(asym_arena a, uint bytes, uint hint) {
    uint c = arena_class_of(bytes);
    if (bytes == 0u || c >= ARENA_CLASSES) {
        asym_fetch_add(a.heap + ARENA_STAT_FAILED, 1u);
        return 0u;
    }
    uint first = hint % ARENA_SHARDS;
    uint step = 0;
    for (uint tries = 0; tries < ARENA_MAX_RETRIES; ++tries) {
        bool listed = asym_load_relaxed(a.heap + ARENA_STAT_FREE + c) != 0u;
        for (uint i = 0; listed && i < ARENA_SHARDS; ++i) {
            uint block = arena_pop(a, c, (first + i) % ARENA_SHARDS);
            if (block != 0u) {
                arena_account(a, c);
                return block;
            }
        }
        uint oom = 0u;
        uint block = arena_bump(a, c, &oom);
        if (block != 0u) {
            arena_account(a, c);
            return block;
        }
        if (oom) break;
        asym_backoff(&step, a.heap + ARENA_STAT_FREE + c);
    }
    asym_fetch_add(a.heap + ARENA_STAT_FAILED, 1u);
    return 0u;
}

/* Returns `block` to its class; false (and counted) when it is not a block's handle. Freeing a
 * block twice is not detected (like C's free, it corrupts the class's free list). */
inline bool asym_free(asym_arena a, uint block, uint hint) {
    uint sb = block / ARENA_SB_WORDS;
    uint cls = sb == 0u || (ulong)sb >= asym_load64_acquire(a.ctl + ARENA_SB_COUNT)
                   ? 0u
                   : asym_load_acquire(a.sb_class + sb);
    if (cls == 0u || (block % ARENA_SB_WORDS) % arena_class_words(cls - 1u) != 0u) {
        asym_fetch_add(a.heap + ARENA_STAT_BAD_FREE, 1u);
        return false;
    }
    uint c = cls - 1u;
    arena_push(a, c, hint % ARENA_SHARDS, block);
    asym_fetch_add(a.heap + ARENA_STAT_IN_USE, 0u - arena_class_words(c) / 2u);
    return true;
}

#ifndef ARENA_NO_KERNELS
/* Work-item i mallocs sizes[i] bytes into handles[i] (0 when out of memory) and fills the
 * block's words with i, so that overlapping blocks show in the host's check. */
__kernel void arena_malloc_each(__global ulong *ctl, __global uint *heap, __global uint *sb_class,
                                __global const uint *sizes, __global uint *handles, uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    asym_arena a = {ctl, heap, sb_class};
    uint h = asym_malloc(a, sizes[i], i);
    handles[i] = h;
    if (h != 0u) {
        uint words = (sizes[i] + 3u) / 4u;
        for (uint w = 0; w < words; ++w) asym_store_relaxed(heap + h + w, i);
    }
}

/* Work-item i frees handles[i] (skipping 0); ok[i] = 1 when the free was accepted. */
__kernel void arena_free_each(__global ulong *ctl, __global uint *heap, __global uint *sb_class,
                              __global const uint *handles, __global uint *ok, uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    asym_arena a = {ctl, heap, sb_class};
    uint h = handles[i];
    ok[i] = h == 0u ? 1u : (uint)asym_free(a, h, i);
}

/* Churn: each work-item runs `rounds` rounds of malloc `per` blocks of `bytes`, stamp them with
 * a round-unique value, check the stamps, free them. failures[0] counts stamps found wrong
 * (overlapping blocks), failures[1] mallocs that returned 0. */
__kernel void arena_churn(__global ulong *ctl, __global uint *heap, __global uint *sb_class,
                          uint bytes, uint per, uint rounds, __global uint *failures) {
    uint i = get_global_id(0);
    asym_arena a = {ctl, heap, sb_class};
    uint held[8];
    per = min(per, 8u);
    uint words = max((bytes + 3u) / 4u, 1u);
    for (uint r = 0; r < rounds; ++r) {
        uint stamp = (i << 8) ^ (r * 2654435761u);
        for (uint k = 0; k < per; ++k) {
            held[k] = asym_malloc(a, bytes, i + k);
            if (held[k] == 0u) {
                asym_fetch_add(failures + 1, 1u);
                continue;
            }
            for (uint w = 0; w < words; ++w) asym_store_relaxed(heap + held[k] + w, stamp + k);
        }
        for (uint k = 0; k < per; ++k) {
            if (held[k] == 0u) continue;
            for (uint w = 0; w < words; ++w) {
                if (asym_load_relaxed(heap + held[k] + w) != stamp + k) {
                    asym_fetch_add(failures, 1u);
                    break;
                }
            }
            asym_free(a, held[k], i + k);
        }
    }
}
#endif
