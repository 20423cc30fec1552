//! loom model of fault injection's countdown (`runtime/src/faults.rs`, `Faults::check`),
//! restated with loom's atomics and the same orderings: threads counting operations against
//! one armed countdown. Whatever the interleaving, exactly one operation fails (the armed
//! step's), every operation is counted, and the countdown ends disarmed.

use loom::sync::atomic::{AtomicU64, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

struct Countdown {
    armed: AtomicU64,
    seen: AtomicU64,
    fired: AtomicU64,
}

impl Countdown {
    /// `Faults::check`: whether this operation is the one that fails.
    fn check(&self) -> bool {
        self.seen.fetch_add(1, SeqCst);
        let mut left = self.armed.load(SeqCst);
        while left != 0 {
            match self.armed.compare_exchange(left, left - 1, SeqCst, SeqCst) {
                Ok(_) if left == 1 => {
                    self.fired.fetch_add(1, SeqCst);
                    return true;
                }
                Ok(_) => return false,
                Err(now) => left = now,
            }
        }
        false
    }
}

#[test]
fn exactly_one_operation_fails_whatever_the_interleaving() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let c = Arc::new(Countdown {
            armed: AtomicU64::new(2),
            seen: AtomicU64::new(0),
            fired: AtomicU64::new(0),
        });
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let c = c.clone();
                thread::spawn(move || (0..2).filter(|_| c.check()).count())
            })
            .collect();
        let here = usize::from(c.check());
        let failed: usize = workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .sum::<usize>()
            + here;
        assert_eq!(failed, 1);
        assert_eq!(c.fired.load(SeqCst), 1);
        assert_eq!(c.seen.load(SeqCst), 5);
        assert_eq!(c.armed.load(SeqCst), 0);
    });
}
