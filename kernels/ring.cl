/* asym signal ring, device side: a bounded multi-producer multi-consumer queue in SVM.
 *
 * Layout (u32 words; offsets come from the runtime as -DASYM_RING_* so the Rust side in
 * runtime/src/signal/ring_protocol.rs is the single source of truth):
 *   [ASYM_RING_HEAD]  consumer ticket counter   (own 64-byte line)
 *   [ASYM_RING_TAIL]  producer ticket counter   (own 64-byte line)
 *   [ASYM_RING_MASK]  capacity - 1 (capacity is a power of two)
 *   [ASYM_RING_SLOTS + ASYM_RING_SLOT_WORDS * i]  slot i: seq, payload lo, payload hi, unused
 *
 * Algorithm (Vyukov's bounded MPMC queue): slot i starts with seq = i. A producer holding
 * ticket t (claimed by CAS on tail) may write slot t & mask when seq == t, then publishes
 * with seq = t + 1 (release). A consumer holding ticket t (CAS on head) may read when
 * seq == t + 1, then frees the slot for the next lap with seq = t + capacity (release).
 * seq - t < 0 means full (producer) or empty (consumer): the ring never overwrites, so a full
 * ring is back-pressure. Counters wrap at 2^32; differences are taken as signed ints, which is
 * exact because capacity <= 2^30.
 *
 * Ordering: payload words are written before the releasing seq store and read after the
 * acquiring seq load, so a message is never seen half-written; the ticket CAS only arbitrates
 * between producers (or consumers) of the same side.
 */
inline __global uint *asym_ring_slot(__global uint *r, uint ticket) {
    uint mask = r[ASYM_RING_MASK];
    return r + ASYM_RING_SLOTS + ASYM_RING_SLOT_WORDS * (ticket & mask);
}

/* Pushes (lo, hi); false when the ring is full. */
inline bool asym_ring_try_push(__global uint *r, uint lo, uint hi) {
    for (;;) {
        uint t = asym_load_relaxed(r + ASYM_RING_TAIL);
        __global uint *slot = asym_ring_slot(r, t);
        int dif = (int)(asym_load_acquire(slot) - t);
        if (dif == 0) {
            if (asym_cas(r + ASYM_RING_TAIL, t, t + 1u)) {
                asym_store_relaxed(slot + 1, lo);
                asym_store_relaxed(slot + 2, hi);
                asym_store_release(slot, t + 1u);
                return true;
            }
        } else if (dif < 0) {
            return false;
        }
        /* dif > 0: another producer took ticket t; reload the tail. */
    }
}

/* Pops into (*lo, *hi); false when the ring is empty. */
inline bool asym_ring_try_pop(__global uint *r, __private uint *lo, __private uint *hi) {
    for (;;) {
        uint t = asym_load_relaxed(r + ASYM_RING_HEAD);
        __global uint *slot = asym_ring_slot(r, t);
        int dif = (int)(asym_load_acquire(slot) - (t + 1u));
        if (dif == 0) {
            if (asym_cas(r + ASYM_RING_HEAD, t, t + 1u)) {
                *lo = asym_load_relaxed(slot + 1);
                *hi = asym_load_relaxed(slot + 2);
                asym_store_release(slot, t + r[ASYM_RING_MASK] + 1u);
                return true;
            }
        } else if (dif < 0) {
            return false;
        }
    }
}

/* Whether a push would succeed now. Exact only when the caller is the ring's sole producer
 * (consumers can only make more room); services use it to take a request only when its reply
 * has a slot, so a reply is never dropped. */
inline bool asym_ring_has_room(__global uint *r) {
    uint t = asym_load_relaxed(r + ASYM_RING_TAIL);
    return asym_load_acquire(asym_ring_slot(r, t)) == t;
}
