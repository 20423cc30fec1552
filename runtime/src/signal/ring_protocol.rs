//! The index protocol of asym's signal ring: Vyukov's bounded MPMC queue with a sequence
//! number per slot, over 32-bit words that the host and the device share.
//!
//! This module is the single source of truth for the layout: [`cl_defines`] hands the same
//! offsets to the OpenCL side (`kernels/ring.cl`) as `-DASYM_RING_*` build options.
//!
//! # Memory ordering
//! - A producer claims ticket `t` by CAS on `tail` (relaxed: the CAS only arbitrates between
//!   producers), writes the payload words (relaxed), then publishes with `seq = t + 1`
//!   (release).
//! - A consumer claims ticket `t` by CAS on `head` after an acquire load saw `seq == t + 1`,
//!   which makes the payload visible; it reads the payload and frees the slot for the next lap
//!   with `seq = t + capacity` (release), so the next producer's acquire load sees the slot
//!   empty only after the read.
//! - `seq - t < 0` (as a signed difference) means full for a producer and empty for a
//!   consumer: the ring never overwrites. Counters wrap at 2^32; capacities up to 2^30 keep
//!   the signed differences exact.
//!
//! The same functions run on [`std::sync::atomic::AtomicU32`] (host side of the fine
//! transport), on [`std::cell::Cell<u32>`] (a mapped coarse buffer, owned by one thread), and
//! on loom's atomics in `tests/loom_ring.rs`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

/// Word index of the consumer counter.
pub const HEAD: usize = 0;
/// Word index of the producer counter (its own 64-byte line).
pub const TAIL: usize = 16;
/// Word index of `capacity - 1`.
pub const MASK: usize = 32;
/// Word index of slot 0 (after a 64-byte line of header fields).
pub const SLOTS: usize = 48;
/// Words per slot: sequence number, payload low, payload high, unused.
pub const SLOT_WORDS: usize = 4;
// The two counters live on separate 64-byte lines (16 words), and slots after the header line.
const _: () = assert!(TAIL - HEAD >= 16 && MASK - TAIL >= 16 && SLOTS - MASK >= 16);

/// Largest capacity the protocol supports.
pub const MAX_CAPACITY: u32 = 1 << 30;

/// The `-D` options that give `kernels/ring.cl` this layout.
pub fn cl_defines() -> String {
    format!(
        "-DASYM_RING_HEAD={HEAD} -DASYM_RING_TAIL={TAIL} -DASYM_RING_MASK={MASK} \
         -DASYM_RING_SLOTS={SLOTS} -DASYM_RING_SLOT_WORDS={SLOT_WORDS}"
    )
}

/// Words needed for a ring of `capacity` slots.
pub fn words_for(capacity: u32) -> usize {
    SLOTS + SLOT_WORDS * capacity as usize
}

/// A 32-bit shared word with the operations the protocol needs.
pub trait RingWord {
    /// Atomic load.
    fn load(&self, order: Ordering) -> u32;
    /// Atomic store.
    fn store(&self, value: u32, order: Ordering);
    /// Strong compare-and-swap; `Ok(previous)` on success, `Err(actual)` on failure.
    fn compare_exchange(
        &self,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u32, u32>;
}

impl RingWord for AtomicU32 {
    fn load(&self, order: Ordering) -> u32 {
        AtomicU32::load(self, order)
    }
    fn store(&self, value: u32, order: Ordering) {
        AtomicU32::store(self, value, order)
    }
    fn compare_exchange(
        &self,
        current: u32,
        new: u32,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u32, u32> {
        AtomicU32::compare_exchange(self, current, new, success, failure)
    }
}

/// Mapped memory owned by one thread (the coarse transport between kernels): no atomics needed.
impl RingWord for Cell<u32> {
    fn load(&self, _: Ordering) -> u32 {
        self.get()
    }
    fn store(&self, value: u32, _: Ordering) {
        self.set(value)
    }
    fn compare_exchange(
        &self,
        current: u32,
        new: u32,
        _: Ordering,
        _: Ordering,
    ) -> Result<u32, u32> {
        let v = self.get();
        if v == current {
            self.set(new);
            Ok(v)
        } else {
            Err(v)
        }
    }
}

/// Whether `capacity` is usable: a power of two in `2..=MAX_CAPACITY`.
pub fn valid_capacity(capacity: u32) -> bool {
    capacity.is_power_of_two() && (2..=MAX_CAPACITY).contains(&capacity)
}

/// Initialises an empty ring of `capacity` slots in `words` (which must hold
/// [`words_for`]`(capacity)` words and must not be in use by anyone else).
pub fn init<W: RingWord>(words: &[W], capacity: u32) {
    assert!(
        valid_capacity(capacity),
        "ring capacity {capacity} is not a power of two in 2..=2^30"
    );
    assert!(words.len() >= words_for(capacity), "ring memory too small");
    words[HEAD].store(0, Ordering::Relaxed);
    words[TAIL].store(0, Ordering::Relaxed);
    words[MASK].store(capacity - 1, Ordering::Relaxed);
    for i in 0..capacity as usize {
        words[SLOTS + SLOT_WORDS * i].store(i as u32, Ordering::Relaxed);
    }
}

fn slot<W: RingWord>(words: &[W], ticket: u32) -> usize {
    let mask = words[MASK].load(Ordering::Relaxed);
    SLOTS + SLOT_WORDS * (ticket & mask) as usize
}

/// Pushes `msg`; gives it back as `Err(msg)` when the ring is full.
pub fn try_push<W: RingWord>(words: &[W], msg: u64) -> Result<(), u64> {
    loop {
        let t = words[TAIL].load(Ordering::Relaxed);
        let s = slot(words, t);
        let dif = words[s].load(Ordering::Acquire).wrapping_sub(t) as i32;
        if dif == 0 {
            if words[TAIL]
                .compare_exchange(t, t.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                words[s + 1].store(msg as u32, Ordering::Relaxed);
                words[s + 2].store((msg >> 32) as u32, Ordering::Relaxed);
                words[s].store(t.wrapping_add(1), Ordering::Release);
                return Ok(());
            }
        } else if dif < 0 {
            return Err(msg);
        }
        // dif > 0: another producer took ticket t; reload.
    }
}

/// Pops the oldest message, or `None` when the ring is empty.
pub fn try_pop<W: RingWord>(words: &[W]) -> Option<u64> {
    loop {
        let t = words[HEAD].load(Ordering::Relaxed);
        let s = slot(words, t);
        let dif = words[s]
            .load(Ordering::Acquire)
            .wrapping_sub(t.wrapping_add(1)) as i32;
        if dif == 0 {
            if words[HEAD]
                .compare_exchange(t, t.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                let lo = words[s + 1].load(Ordering::Relaxed) as u64;
                let hi = words[s + 2].load(Ordering::Relaxed) as u64;
                let capacity = words[MASK].load(Ordering::Relaxed).wrapping_add(1);
                words[s].store(t.wrapping_add(capacity), Ordering::Release);
                return Some(lo | (hi << 32));
            }
        } else if dif < 0 {
            return None;
        }
    }
}

/// Messages pushed and not yet popped (exact when no operation is in progress).
pub fn len<W: RingWord>(words: &[W]) -> u32 {
    let tail = words[TAIL].load(Ordering::Acquire);
    let head = words[HEAD].load(Ordering::Acquire);
    tail.wrapping_sub(head)
}

/// The ring's capacity.
pub fn capacity<W: RingWord>(words: &[W]) -> u32 {
    words[MASK].load(Ordering::Relaxed).wrapping_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(cap: u32) -> Vec<AtomicU32> {
        let w: Vec<AtomicU32> = (0..words_for(cap)).map(|_| AtomicU32::new(0)).collect();
        init(&w, cap);
        w
    }

    #[test]
    fn fifo_full_and_empty() {
        let w = ring(4);
        assert_eq!(try_pop(&w), None);
        for i in 0..4u64 {
            try_push(&w, i << 32 | (i + 7)).unwrap();
        }
        assert_eq!(
            try_push(&w, 99),
            Err(99),
            "a full ring refuses, never overwrites"
        );
        assert_eq!(len(&w), 4);
        for i in 0..4u64 {
            assert_eq!(try_pop(&w), Some(i << 32 | (i + 7)));
        }
        assert_eq!(try_pop(&w), None);
    }

    #[test]
    fn counters_wrap_at_u32() {
        let w = ring(8);
        // Start both counters just below 2^32 with slot sequence numbers to match.
        let start = u32::MAX - 3;
        w[HEAD].store(start, Ordering::Relaxed);
        w[TAIL].store(start, Ordering::Relaxed);
        for t in (0..8u32).map(|k| start.wrapping_add(k)) {
            let i = (t & 7) as usize;
            w[SLOTS + SLOT_WORDS * i].store(t, Ordering::Relaxed);
        }
        for k in 0..100u64 {
            try_push(&w, k).unwrap();
            try_push(&w, k + 1000).unwrap();
            assert_eq!(try_pop(&w), Some(k));
            assert_eq!(try_pop(&w), Some(k + 1000));
        }
        assert_eq!(len(&w), 0);
    }

    #[test]
    fn layout_matches_ring_cl() {
        // ring.cl takes its offsets from these defines: check it uses every one of them.
        let cl = asym_kernels::RING.text;
        for name in [
            "ASYM_RING_HEAD",
            "ASYM_RING_TAIL",
            "ASYM_RING_MASK",
            "ASYM_RING_SLOTS",
            "ASYM_RING_SLOT_WORDS",
        ] {
            assert!(cl.contains(name), "ring.cl does not use {name}");
            assert!(cl_defines().contains(&format!("-D{name}=")));
        }
    }
}
