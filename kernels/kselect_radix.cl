/* Radix select on the throughput device: the k-th smallest key of every sub-list, for keys
 * that already live in SVM (KSelector::select_svm: no staging copy).
 *
 * One work-group per sub-list. Build options: -DWG=<work-group size>, -DKEY_MAP=<0 int32,
 * 1 uint32, 2 float32: how raw bits become the ordered int32 form, common.cl's ASYM_ORDERED>.
 *
 * Algorithm (per sub-list of n keys, 1 <= k <= n): four passes, one per 8-bit digit of the
 * key's unsigned image (the ordered int32 form with its sign bit flipped, so unsigned order is
 * the keys' order), most significant first. A pass zeroes a 256-counter histogram in local
 * memory, every work-item counts the digit of its keys (strided by WG, so a warp's loads are
 * coalesced) among those that match the digits fixed so far, and work-item 0 walks the
 * histogram to the bucket holding the k-th, fixing one more digit and the rank within it.
 * After four passes every digit is fixed: the image is the answer. Each pass reads the
 * sub-list again (from L2 for short sub-lists); nothing is written but the answer.
 *
 * Memory ordering: the histogram lives in local memory and is shared within the work-group
 * only; local atomics count, and barrier(CLK_LOCAL_MEM_FENCE) separates zeroing, counting,
 * the bucket walk and the next pass. The keys are read-only; the answer is one plain store
 * per work-group, visible to the host after the launch completes (kernel boundary).
 */

#define RADIX_BUCKETS 256

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void kselect_radix(__global const int *keys, __global const uint *offsets, uint k,
                   __global int *answers) {
    __local uint hist[RADIX_BUCKETS];
    __local uint chosen[3]; /* prefix, mask, rank within the bucket */
    const uint g = get_group_id(0);
    const uint lid = get_local_id(0);
    const uint start = offsets[g];
    const uint end = offsets[g + 1];
    uint prefix = 0u, mask = 0u, rank = k - 1u;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (uint b = lid; b < RADIX_BUCKETS; b += WG) hist[b] = 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint i = start + lid; i < end; i += WG) {
            uint v = (uint)ASYM_ORDERED(keys[i]) ^ 0x80000000u;
            if ((v & mask) == prefix) atomic_inc(&hist[(v >> shift) & 0xffu]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            uint below = 0u, b = 0u;
            for (; b < RADIX_BUCKETS - 1; ++b) {
                if (below + hist[b] > rank) break;
                below += hist[b];
            }
            chosen[0] = prefix | (b << shift);
            chosen[1] = mask | (0xffu << shift);
            chosen[2] = rank - below;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        prefix = chosen[0];
        mask = chosen[1];
        rank = chosen[2];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) answers[g] = (int)(prefix ^ 0x80000000u);
}
