//! A barrier for the latency threads of one job: the threads of a [`LatencyPool`] broadcast
//! that run a round-based algorithm together (delta-stepping's buckets) meet here between
//! rounds, thousands of times per job.
//!
//! `std::sync::Barrier` parks every waiter on a condition variable: tens of microseconds per
//! round to wake 16 threads. This one spins, then yields for up to 2 ms (a yield hands the
//! core to a thread that still works, so a waiter never starves the thread it waits for on a
//! small machine), and only then backs off to sleeps ([`Backoff`]); and it never hangs:
//! a wait gives up with [`Error::Stalled`] after the timeout, and a party that fails (returns
//! an error or panics while holding a [`BarrierGuard`]) poisons the barrier so that every
//! other waiter returns [`Error::ThreadLost`] instead of waiting for it.
//!
//! Memory ordering: the last arriving party runs the round's `leader` closure, then publishes
//! the new generation with a `Release` store; waiters read the generation with `Acquire`. So
//! everything each party wrote before arriving (its `AcqRel` arrival increment orders it
//! before the last party's) and everything the leader wrote is visible to every party once
//! its wait returns.
//!
//! [`LatencyPool`]: super::LatencyPool

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crossbeam::utils::CachePadded;

use crate::backoff::{Backoff, Deadline};
use crate::error::{Error, Result, Side};

/// Polls that only spin before a waiter starts yielding.
const SPIN_POLLS: u32 = 64;
/// How long a waiter yields before it starts sleeping.
const YIELD_FOR: Duration = Duration::from_millis(2);

/// A reusable spinning barrier for a fixed number of parties, with a timeout and poisoning.
#[derive(Debug)]
pub struct SpinBarrier {
    parties: usize,
    /// Taken by every arrival's read-modify-write; on its own cache line so that the waiters
    /// polling `generation` are not disturbed by each arrival, only by the release.
    arrived: CachePadded<AtomicUsize>,
    generation: CachePadded<AtomicUsize>,
    poisoned: AtomicBool,
    timeout: Duration,
}

impl SpinBarrier {
    /// A barrier for `parties` threads (at least 1); a wait gives up after `timeout`.
    pub fn new(parties: usize, timeout: Duration) -> Self {
        SpinBarrier {
            parties: parties.max(1),
            arrived: CachePadded::new(AtomicUsize::new(0)),
            generation: CachePadded::new(AtomicUsize::new(0)),
            poisoned: AtomicBool::new(false),
            timeout,
        }
    }

    /// Waits until every party has arrived; the last to arrive runs `leader` first (with
    /// every other party still waiting) and gets `true`.
    pub fn wait_with(&self, leader: impl FnOnce()) -> Result<bool> {
        self.check()?;
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            leader();
            self.generation
                .store(generation.wrapping_add(1), Ordering::Release);
            return Ok(true);
        }
        let deadline = Deadline::after(self.timeout);
        let mut backoff = Backoff::new();
        let mut polls = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            self.check()?;
            if deadline.expired() {
                self.poison();
                return Err(Error::Stalled {
                    side: Side::Host,
                    waiting_for: format!("{} latency threads to meet at a barrier", self.parties),
                    waited_ms: deadline.waited_ms(),
                    detail: String::new(),
                });
            }
            // Rounds are short (tens of microseconds): yield rather than sleep for the first
            // YIELD_FOR, so a waiter is back within a microsecond or so of the release where
            // a sleep would cost it 50 µs or more, yet hands its core to a thread that still
            // works when there are more threads than cores. Then back off to sleeps.
            polls += 1;
            if polls < SPIN_POLLS {
                std::hint::spin_loop();
            } else if deadline.waited() < YIELD_FOR {
                std::thread::yield_now();
            } else {
                backoff.snooze_within(deadline.waited());
            }
        }
        Ok(false)
    }

    /// [`SpinBarrier::wait_with`] with nothing for the leader to do.
    pub fn wait(&self) -> Result<bool> {
        self.wait_with(|| ())
    }

    /// Marks the barrier failed: every wait from now on returns [`Error::ThreadLost`].
    pub fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
    }

    /// Whether a party failed.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// A guard that poisons the barrier when dropped before [`BarrierGuard::finish`] (a
    /// party returning early with an error, or unwinding from a panic).
    pub fn guard(&self) -> BarrierGuard<'_> {
        BarrierGuard {
            barrier: self,
            finished: false,
        }
    }

    fn check(&self) -> Result<()> {
        if self.is_poisoned() {
            return Err(Error::thread_lost(
                "a latency thread of this job",
                "another latency thread of this job failed; its partners stopped",
            ));
        }
        Ok(())
    }
}

/// Poisons its barrier unless finished (see [`SpinBarrier::guard`]).
#[derive(Debug)]
pub struct BarrierGuard<'a> {
    barrier: &'a SpinBarrier,
    finished: bool,
}

impl BarrierGuard<'_> {
    /// The party is done with the barrier: dropping the guard no longer poisons it.
    pub fn finish(mut self) {
        self.finished = true;
    }
}

impl Drop for BarrierGuard<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.barrier.poison();
        }
    }
}
