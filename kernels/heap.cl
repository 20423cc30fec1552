/* asym shared heap helpers: the work-group find-max-child reduction used by every d-heap
 * kernel (kselect.cl: the d-heap update-key; adheap.cl: the ad-heap's bridge walk).
 *
 * ASYM_MAX_CHILD(D, WG, lid, V, I, V2, I2): work-items 0..D-1 have stored one child's value in
 * V[lid] and its node in I[lid] (others a neutral INT_MIN and any node), all WG work-items
 * wrote their slot and passed a barrier; afterwards V[0], I[0] hold the largest value and its
 * node (the first of equal maxima is not guaranteed: any max child is a valid choice).
 * log2(D) tree steps, unrolled by the preprocessor, each ending in a local barrier, so every
 * work-item of the group must reach it (uniform control flow).
 *
 * PoCL 3.1 note: stores to local memory under a condition that differs between work-items
 * (`if (lid < s) V[lid] = ...`) were lost after a barrier (seen for D = 2..16 with every
 * work-group method PoCL offers), so each step stores unconditionally and ping-pongs between
 * two buffer pairs (V, I) and (V2, I2): no step reads what it writes, and work-items with
 * nothing to add copy their own slot.
 */
#define ASYM_REDUCE_STEP(WG, lid, S, SRCV, SRCI, DSTV, DSTI)              \
    {                                                                     \
        const uint o_ = min((lid) + (S), (uint)((WG) - 1));               \
        const int a_ = SRCV[lid], b_ = SRCV[o_];                          \
        const bool take_ = (lid) < (S) && b_ > a_;                        \
        DSTV[lid] = take_ ? b_ : a_;                                      \
        DSTI[lid] = take_ ? SRCI[o_] : SRCI[lid];                         \
    }                                                                     \
    barrier(CLK_LOCAL_MEM_FENCE);

/* Pairs of steps, each pair ending back in (V, I); a step of stride 0 is a plain copy. */
#define ASYM_REDUCE_PAIR(WG, lid, S1, S2, V, I, V2, I2)                   \
    ASYM_REDUCE_STEP(WG, lid, S1, V, I, V2, I2)                           \
    ASYM_REDUCE_STEP(WG, lid, S2, V2, I2, V, I)

#define ASYM_MAX_CHILD(D, WG, lid, V, I, V2, I2)                          \
    if ((D) >= 64) { ASYM_REDUCE_PAIR(WG, lid, 32, 16, V, I, V2, I2) }    \
    else if ((D) >= 32) { ASYM_REDUCE_PAIR(WG, lid, 16, 0, V, I, V2, I2) } \
    if ((D) >= 16) { ASYM_REDUCE_PAIR(WG, lid, 8, 4, V, I, V2, I2) }      \
    else if ((D) >= 8) { ASYM_REDUCE_PAIR(WG, lid, 4, 0, V, I, V2, I2) } \
    if ((D) >= 4) { ASYM_REDUCE_PAIR(WG, lid, 2, 1, V, I, V2, I2) }       \
    else { ASYM_REDUCE_PAIR(WG, lid, 1, 0, V, I, V2, I2) }
