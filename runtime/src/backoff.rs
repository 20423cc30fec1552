//! Back-off for every spin in asym, and deadlines for every wait.
//!
//! PoCL's worker threads and asym's pinned threads share the same cores on a small machine: a
//! thread that spins without yielding can starve the very thread it waits for. So a wait
//! spins briefly, then yields, then sleeps with growing intervals (capped at a millisecond).

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Escalating back-off: spin, then yield, then sleep.
#[derive(Debug, Default)]
pub struct Backoff {
    step: u32,
}

const SPIN_LIMIT: u32 = 6;
/// Yields before the first sleep: a yield hands the core to a runnable thread (often the one
/// we wait for) and costs about a microsecond when none is runnable, so ~50 yields cover the
/// typical kernel launch (tens of µs on PoCL, ~15 µs on NVIDIA) without oversleeping it.
const YIELD_LIMIT: u32 = SPIN_LIMIT + 50;

impl Backoff {
    /// A fresh back-off.
    pub fn new() -> Self {
        Backoff { step: 0 }
    }

    /// Waits a little longer than last time.
    pub fn snooze(&mut self) {
        if self.step <= SPIN_LIMIT {
            for _ in 0..(1u32 << self.step) {
                std::hint::spin_loop();
            }
        } else if self.step <= YIELD_LIMIT {
            std::thread::yield_now();
        } else {
            let exp = (self.step - YIELD_LIMIT).min(6);
            std::thread::sleep(Duration::from_micros(16u64 << exp));
        }
        self.step = self.step.saturating_add(1);
    }

    /// [`Backoff::snooze`] for a wait that has lasted `waited` so far: a sleep never exceeds
    /// a 64th of that (at least 16 µs), so a wait oversleeps what it waits for by at most
    /// about 1.6 % (a 1 ms kernel waited for with plain snoozes can be noticed up to 1 ms
    /// late; docs/benchmarks/runtime.md).
    pub fn snooze_within(&mut self, waited: Duration) {
        if self.step <= YIELD_LIMIT {
            return self.snooze();
        }
        crate::sys::fine_timer_slack();
        let exp = (self.step - YIELD_LIMIT).min(6);
        let cap = (waited / 64).max(Duration::from_micros(16));
        std::thread::sleep(Duration::from_micros(16u64 << exp).min(cap));
        self.step = self.step.saturating_add(1);
    }

    /// Starts over after progress.
    pub fn reset(&mut self) {
        self.step = 0;
    }
}

/// A point in time after which a bounded wait gives up.
#[derive(Clone, Copy, Debug)]
pub struct Deadline {
    start: Instant,
    limit: Duration,
}

impl Deadline {
    /// A deadline `limit` from now.
    pub fn after(limit: Duration) -> Self {
        Deadline {
            start: Instant::now(),
            limit,
        }
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.start.elapsed() >= self.limit
    }

    /// Time waited so far.
    pub fn waited(&self) -> Duration {
        self.start.elapsed()
    }

    /// Milliseconds waited so far.
    pub fn waited_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Time left, zero once expired.
    pub fn remaining(&self) -> Duration {
        self.limit.saturating_sub(self.start.elapsed())
    }
}

/// Polls `attempt` with back-off ([`Backoff::snooze_within`]) until it yields a value or
/// `limit` has passed; then the error `stalled` makes of the milliseconds waited. An error
/// from `attempt` ends the wait at once. The one shape of the runtime's bounded waits on a
/// device (a kernel's event, a buffer's fill, a service's reply).
pub(crate) fn poll_within<T>(
    limit: Duration,
    mut attempt: impl FnMut() -> Result<Option<T>>,
    stalled: impl FnOnce(u64) -> Error,
) -> Result<T> {
    let deadline = Deadline::after(limit);
    let mut backoff = Backoff::new();
    loop {
        if let Some(v) = attempt()? {
            return Ok(v);
        }
        if deadline.expired() {
            return Err(stalled(deadline.waited_ms()));
        }
        backoff.snooze_within(deadline.waited());
    }
}

#[cfg(test)]
mod tests {
    use super::poll_within;
    use crate::error::Error;
    use std::time::Duration;

    fn stalled(waited_ms: u64) -> Error {
        Error::Stalled {
            side: crate::Side::Host,
            waiting_for: "a test".into(),
            waited_ms,
            detail: String::new(),
        }
    }

    #[test]
    fn a_bounded_wait_returns_the_value_the_bound_or_the_error() {
        let mut polls = 0;
        let got = poll_within(
            Duration::from_secs(5),
            || {
                polls += 1;
                Ok((polls == 3).then_some(polls))
            },
            stalled,
        );
        assert_eq!(got.unwrap(), 3);
        let never = poll_within(Duration::from_millis(20), || Ok(None::<()>), stalled);
        match never {
            Err(Error::Stalled { waited_ms, .. }) => assert!(waited_ms >= 20, "{waited_ms}"),
            other => panic!("{other:?}"),
        }
        let failed = poll_within(
            Duration::from_secs(5),
            || Err::<Option<()>, _>(Error::thread_lost("a test thread", "gone")),
            stalled,
        );
        assert!(matches!(failed, Err(Error::ThreadLost { .. })));
    }
}
