//! The host half of the allocator: the same tagged Treiber stacks as `kernels/alloc.cl`, run
//! by CPU threads on host atomics over the arena's SVM.
//!
//! Memory-ordering rules (the kernel's, mirrored): a block's next word is written `Relaxed`
//! before the head's compare-and-swap, which is `AcqRel` on success and so publishes it; a pop
//! loads the head with `Acquire` before reading the next word. Heads carry a tag that every
//! successful push and pop increments, so a pop's CAS succeeds only when the head did not
//! change since its load, and the next word it read then was the one pushed with the block
//! (see alloc.cl for the full argument). Statistics are `Relaxed` counters.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use asym_runtime::backoff::{Backoff, Deadline};
use asym_runtime::{Error, Result, Side};

use super::{ArenaLayout, CTL_BUMP, CTL_NEXT_SB, CTL_SB_COUNT, EXHAUSTED, MAX_RETRIES, RUN_MAX};
use super::{STAT_BAD_FREE, STAT_FAILED, STAT_FREE, STAT_HIGH, STAT_IN_USE, STAT_RETRIES};

/// Host access to an arena's memory as atomics: `malloc`, `free` and the words of blocks.
///
/// On the fine transport ([`super::SvmArena::view`]) CPU threads use it while kernels run
/// on the same arena; on the coarse transport ([`super::ArenaMap::view`]) between launches.
#[derive(Clone, Copy, Debug)]
pub struct ArenaView<'a> {
    pub(super) layout: ArenaLayout,
    pub(super) ctl: &'a [AtomicU64],
    pub(super) heap: &'a [AtomicU32],
    pub(super) sb_class: &'a [AtomicU32],
}

/// The longest a malloc waits for another party's switch to a fresh run of superblocks (a
/// handful of atomic operations; the bound is there for a party that died mid-switch).
const SWITCH_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What a fetch-and-add on a class's bump word gave.
enum Bump {
    Block(u32),
    Switching,
    Exhausted,
}

fn tagged(old_head: u64, handle: u32) -> u64 {
    (((old_head >> 32) + 1) << 32) | u64::from(handle)
}

impl<'a> ArenaView<'a> {
    /// The arena's layout.
    pub fn layout(&self) -> ArenaLayout {
        self.layout
    }

    /// A block of at least `bytes` bytes. `hint` (a thread number) picks the first free-list
    /// shard tried. `Err(OutOfMemory)` when no block is free and no superblock is left
    /// (the host can [`grow`](super::SvmArena::grow) the arena between launches), or when
    /// `bytes` is 0 or larger than a superblock.
    pub fn malloc(&self, bytes: usize, hint: usize) -> Result<u32> {
        let l = self.layout;
        let Some(c) = l.class_of(bytes) else {
            self.heap[STAT_FAILED].fetch_add(1, Ordering::Relaxed);
            return Err(Error::OutOfMemory(format!(
                "a block of {bytes} bytes: the arena's blocks hold 1 to {} bytes",
                l.superblock_bytes()
            )));
        };
        let shards = l.shards as usize;
        let first = hint % shards;
        if let Some(block) = self.pop_any(c, first) {
            self.account(c);
            return Ok(block);
        }
        let mut backoff = Backoff::new();
        let deadline = Deadline::after(SWITCH_WAIT);
        loop {
            match self.bump(c) {
                Bump::Block(block) => {
                    self.account(c);
                    return Ok(block);
                }
                Bump::Exhausted => break,
                Bump::Switching => {
                    // Another thread (or work-item) is taking a fresh run: look at the free
                    // lists again, then back off so that it can finish.
                    if let Some(block) = self.pop_any(c, first) {
                        self.account(c);
                        return Ok(block);
                    }
                    if deadline.expired() {
                        return Err(Error::Stalled {
                            side: Side::Host,
                            waiting_for: format!(
                                "another thread or work-item to take a fresh run of \
                                 superblocks for {}-byte blocks",
                                l.class_bytes(c)
                            ),
                            waited_ms: deadline.waited_ms(),
                            detail: String::new(),
                        });
                    }
                    backoff.snooze();
                }
            }
        }
        self.heap[STAT_FAILED].fetch_add(1, Ordering::Relaxed);
        Err(Error::OutOfMemory(format!(
            "no free block of {} bytes and every superblock of the arena ({} of {} bytes) is \
             in use",
            l.class_bytes(c),
            self.ctl[CTL_SB_COUNT].load(Ordering::Relaxed) - 1,
            l.superblock_bytes()
        )))
    }

    /// The next unused block of class `c`'s current run of superblocks (alloc.cl's
    /// `arena_bump`: runs double per switch up to `RUN_MAX` superblocks; the thread whose
    /// fetch-and-add returns exactly the run's block count takes a fresh run; while a switch
    /// is pending the others see it with a plain load and wait without adding).
    fn bump(&self, c: u32) -> Bump {
        let l = self.layout;
        let bump = &self.ctl[CTL_BUMP + c as usize];
        let bw = l.class_words(c);
        let per = l.superblock_words / bw;
        let seen = bump.load(Ordering::Relaxed);
        if (seen >> 32) as u32 == EXHAUSTED {
            return Bump::Exhausted;
        }
        if seen as u32 > ((((seen >> 32) as u32) & 15) + 1) * per {
            return Bump::Switching;
        }
        let b = bump.fetch_add(1, Ordering::AcqRel);
        let (hi, idx) = ((b >> 32) as u32, b as u32);
        if hi == EXHAUSTED {
            return Bump::Exhausted;
        }
        let (sb, run) = (hi >> 4, (hi & 15) + 1);
        let blocks = run * per;
        if idx < blocks {
            return Bump::Block(sb * l.superblock_words + idx * bw);
        }
        if idx > blocks {
            return Bump::Switching;
        }
        let want = if sb == 0 { 1 } else { (2 * run).min(RUN_MAX) };
        let fresh = self.ctl[CTL_NEXT_SB].fetch_add(u64::from(want), Ordering::AcqRel);
        let count = self.ctl[CTL_SB_COUNT].load(Ordering::Acquire);
        if fresh >= count {
            bump.store(
                (u64::from(EXHAUSTED) << 32) | u64::from(blocks),
                Ordering::Release,
            );
            return Bump::Exhausted;
        }
        let got = u64::from(want).min(count - fresh);
        for k in 0..got {
            self.sb_class[(fresh + k) as usize].store(c + 1, Ordering::Relaxed);
        }
        // The release store publishes the classes above with the run.
        bump.store((((fresh << 4) | (got - 1)) << 32) | 1, Ordering::Release);
        Bump::Block(fresh as u32 * l.superblock_words)
    }

    /// Returns `block` to its size class. `Err(InvalidArgument)` when `block` is not the
    /// handle of a block (nothing changes then); freeing a block twice is not detected.
    pub fn free(&self, block: u32, hint: usize) -> Result<()> {
        let l = self.layout;
        let sb = (block / l.superblock_words) as usize;
        let count = self.ctl[CTL_SB_COUNT].load(Ordering::Acquire) as usize;
        let cls = if sb == 0 || sb >= count {
            0
        } else {
            self.sb_class[sb].load(Ordering::Acquire)
        };
        if cls == 0 || (block % l.superblock_words) % l.class_words(cls - 1) != 0 {
            self.heap[STAT_BAD_FREE].fetch_add(1, Ordering::Relaxed);
            return Err(Error::out_of_range(
                "free of handle",
                block,
                "not a block of this arena",
            ));
        }
        let c = cls - 1;
        self.push(c, hint % l.shards as usize, block);
        self.heap[STAT_IN_USE].fetch_sub(l.class_words(c) / 2, Ordering::Relaxed);
        Ok(())
    }

    /// The `len` words of the block at `handle`; `None` when they are not inside the arena.
    pub fn words(&self, handle: u32, len: usize) -> Option<&'a [AtomicU32]> {
        let at = handle as usize;
        self.heap.get(at..at.checked_add(len)?)
    }

    /// Word `i` of the block at `handle`; `None` outside the arena.
    pub fn word(&self, handle: u32, i: usize) -> Option<&'a AtomicU32> {
        self.heap.get((handle as usize).checked_add(i)?)
    }

    fn head(&self, c: u32, shard: usize) -> &AtomicU64 {
        &self.ctl[self.layout.heads_at() + c as usize * self.layout.shards as usize + shard]
    }

    fn push(&self, c: u32, shard: usize, block: u32) {
        let head = self.head(c, shard);
        let mut h = head.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            self.heap[block as usize].store(h as u32, Ordering::Relaxed);
            match head.compare_exchange_weak(
                h,
                tagged(h, block),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.heap[STAT_FREE + c as usize].fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(now) => {
                    h = now;
                    self.heap[STAT_RETRIES].fetch_add(1, Ordering::Relaxed);
                    std::hint::spin_loop();
                }
            }
        }
        // As in the kernel: a push that lost every race drops its block rather than link it
        // twice, and says so in the statistics.
        self.heap[STAT_BAD_FREE].fetch_add(1, Ordering::Relaxed);
    }

    /// A block from any of class `c`'s shards, starting at `first`; skips the lists while
    /// their count hint reads 0.
    fn pop_any(&self, c: u32, first: usize) -> Option<u32> {
        if self.heap[STAT_FREE + c as usize].load(Ordering::Relaxed) == 0 {
            return None;
        }
        let shards = self.layout.shards as usize;
        (0..shards).find_map(|i| self.pop(c, (first + i) % shards))
    }

    fn pop(&self, c: u32, shard: usize) -> Option<u32> {
        let head = self.head(c, shard);
        let mut h = head.load(Ordering::Acquire);
        for _ in 0..MAX_RETRIES {
            let block = h as u32;
            if block == 0 {
                return None;
            }
            let next = self.heap[block as usize].load(Ordering::Relaxed);
            match head.compare_exchange_weak(
                h,
                tagged(h, next),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.heap[STAT_FREE + c as usize].fetch_sub(1, Ordering::Relaxed);
                    return Some(block);
                }
                Err(now) => {
                    h = now;
                    self.heap[STAT_RETRIES].fetch_add(1, Ordering::Relaxed);
                    std::hint::spin_loop();
                }
            }
        }
        None
    }

    fn account(&self, c: u32) {
        let units = self.layout.class_words(c) / 2;
        let now = self.heap[STAT_IN_USE].fetch_add(units, Ordering::Relaxed) + units;
        self.heap[STAT_HIGH].fetch_max(now, Ordering::Relaxed);
    }

    /// Free blocks of class `c`: on its lists (found by walking them) and not yet handed out
    /// from its current superblock. Call it only when nothing else uses the arena (the walk
    /// follows next words that a concurrent pop may change).
    pub(super) fn free_blocks_quiescent(&self, c: u32) -> Result<u64> {
        let per = self.layout.superblock_words / self.layout.class_words(c);
        let b = self.ctl[CTL_BUMP + c as usize].load(Ordering::Acquire);
        let (hi, idx) = ((b >> 32) as u32, b as u32);
        let blocks = ((hi & 15) + 1) * per;
        let mut n = if hi >> 4 == 0 || hi == EXHAUSTED {
            0
        } else {
            u64::from(blocks - idx.min(blocks))
        };
        let limit = self.heap.len() as u64;
        for shard in 0..self.layout.shards as usize {
            let mut b = self.head(c, shard).load(Ordering::Acquire) as u32;
            while b != 0 {
                n += 1;
                if n > limit {
                    return Err(Error::corrupted(
                        "the SVM arena",
                        format!(
                            "the free list of {}-byte blocks has a cycle (a block freed twice?)",
                            self.layout.class_bytes(c)
                        ),
                    ));
                }
                b = self
                    .heap
                    .get(b as usize)
                    .ok_or_else(|| {
                        Error::corrupted(
                            "the SVM arena",
                            format!("a free list links to {b}, outside the arena"),
                        )
                    })?
                    .load(Ordering::Relaxed);
            }
        }
        Ok(n)
    }
}
