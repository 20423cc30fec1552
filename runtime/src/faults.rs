//! Fault injection: a runtime made to fail its n-th launch, map, allocation or wait, so that
//! tests (and `scripts/soak.sh`) can show what every structure holds after a call fails at
//! any step.
//!
//! Each [`Runtime`](crate::Runtime) (and every handle cloned from it, queues included) shares
//! one [`Faults`]: a countdown per [`FaultPoint`], armed with [`Faults::arm`]. When an armed
//! countdown reaches its operation, that operation fails with [`Error::DeviceLost`] naming
//! the device and the step, the kind of error a real failure of the device gives (a device
//! set fails over it, [`Error::is_device_fault`]):
//! - **launch**: the kernel is not enqueued;
//! - **map**: the buffer is not mapped (on fine SVM, where a map enqueues nothing, the call
//!   still counts and fails);
//! - **alloc**: nothing is allocated;
//! - **wait**: the kernel first runs to its end (within the runtime's bound), then the wait
//!   reports the failure, so that no kernel still writes memory the caller goes on to reuse;
//!   what the kernel did stands.
//!
//! [`Faults::seen`] counts every operation of each kind, armed or not, so that a test can
//! learn how many steps a call takes and inject a failure at each in turn.
//!
//! Ordering: the counters are independent `SeqCst` atomics; a countdown is taken by
//! compare-and-swap, so that among operations racing on several threads exactly one fails.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

use crate::error::{Error, Result};
use crate::named::Named;

/// The device operations a fault can be injected into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// Enqueuing a kernel.
    Launch,
    /// Mapping an SVM buffer for the host.
    Map,
    /// Allocating SVM or a device buffer.
    Alloc,
    /// Waiting for a kernel to finish.
    Wait,
}

impl Named for FaultPoint {
    const ALL: &'static [Self] = &[
        FaultPoint::Launch,
        FaultPoint::Map,
        FaultPoint::Alloc,
        FaultPoint::Wait,
    ];
    const KIND: &'static str = "fault point";
    fn name(self) -> &'static str {
        match self {
            FaultPoint::Launch => "launch",
            FaultPoint::Map => "map",
            FaultPoint::Alloc => "alloc",
            FaultPoint::Wait => "wait",
        }
    }
}

impl FaultPoint {
    fn index(self) -> usize {
        self as usize
    }
}

/// The fault countdowns of one runtime (see the module docs).
#[derive(Debug)]
pub struct Faults {
    device: String,
    /// Per point: 0 disarmed, n > 0 the n-th operation from now fails.
    armed: [AtomicU64; 4],
    /// Per point: operations seen since the runtime opened.
    seen: [AtomicU64; 4],
    fired: AtomicU64,
}

impl Faults {
    pub(crate) fn new(device: String) -> Self {
        Faults {
            device,
            armed: Default::default(),
            seen: Default::default(),
            fired: AtomicU64::new(0),
        }
    }

    /// Makes the `nth` operation at `point` from now fail (`1`: the next one; `0` disarms
    /// `point`). Replaces what `point` was armed with.
    pub fn arm(&self, point: FaultPoint, nth: u64) {
        self.armed[point.index()].store(nth, SeqCst);
    }

    /// Disarms every point.
    pub fn disarm(&self) {
        self.armed.iter().for_each(|a| a.store(0, SeqCst));
    }

    /// Whether a countdown is still armed (its fault not yet fired).
    pub fn is_armed(&self) -> bool {
        self.armed.iter().any(|a| a.load(SeqCst) != 0)
    }

    /// Operations at `point` since the runtime opened.
    pub fn seen(&self, point: FaultPoint) -> u64 {
        self.seen[point.index()].load(SeqCst)
    }

    /// Faults fired since the runtime opened.
    pub fn fired(&self) -> u64 {
        self.fired.load(SeqCst)
    }

    /// Counts an operation at `point`; the error of an injected fault when it is this one's.
    /// `what` names the operation (called only when it fails: no cost on the way through).
    pub(crate) fn check(&self, point: FaultPoint, what: impl FnOnce() -> String) -> Result<()> {
        let i = point.index();
        let n = self.seen[i].fetch_add(1, SeqCst) + 1;
        let armed = &self.armed[i];
        let mut left = armed.load(SeqCst);
        while left != 0 {
            match armed.compare_exchange(left, left - 1, SeqCst, SeqCst) {
                Ok(_) if left == 1 => {
                    self.fired.fetch_add(1, SeqCst);
                    return Err(Error::DeviceLost {
                        device: self.device.clone(),
                        what: format!("a failure injected at {} {n} ({})", point.name(), what()),
                    });
                }
                Ok(_) => return Ok(()),
                Err(now) => left = now,
            }
        }
        Ok(())
    }
}

/// Runs `step` once more if it fails with a device fault ([`Error::is_device_fault`]): for
/// the steps after a call took effect on the device (reading back what a kernel did), where
/// giving up would lose that effect. A transient fault (an injected one, a map the driver
/// refused once) is survived; a fault that persists (a device really lost) is returned the
/// second time, and the caller calls its structure damaged.
pub fn retry_once<R>(mut step: impl FnMut() -> Result<R>) -> Result<R> {
    match step() {
        Err(e) if e.is_device_fault() => step(),
        done => done,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nth_operation_fails_once_and_is_counted() {
        let f = Faults::new("dev".into());
        f.arm(FaultPoint::Map, 3);
        assert!(f.check(FaultPoint::Launch, || "k".into()).is_ok());
        assert!(f.check(FaultPoint::Map, || "a".into()).is_ok());
        assert!(f.check(FaultPoint::Map, || "b".into()).is_ok());
        let e = f.check(FaultPoint::Map, || "c".into()).unwrap_err();
        assert!(e.is_device_fault(), "{e}");
        assert!(e.to_string().contains("injected at map 3 (c)"), "{e}");
        assert!(f.check(FaultPoint::Map, || "d".into()).is_ok());
        assert_eq!((f.seen(FaultPoint::Map), f.fired()), (4, 1));
        assert!(!f.is_armed());
    }

    #[test]
    fn racing_threads_see_exactly_one_failure() {
        let f = std::sync::Arc::new(Faults::new("dev".into()));
        f.arm(FaultPoint::Wait, 500);
        let failures: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let f = &f;
                    s.spawn(move || {
                        (0..1000)
                            .filter(|_| f.check(FaultPoint::Wait, || "w".into()).is_err())
                            .count()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(
            (failures, f.fired(), f.seen(FaultPoint::Wait)),
            (1, 1, 4000)
        );
    }
}
