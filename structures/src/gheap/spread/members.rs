//! Running a set heap's members: every member's part of a call at once, one driver thread
//! each, and settling what each did. A failure of any kind poisons the heap: the failing
//! member's keys are no longer known to be whole.

use std::sync::Mutex;

use asym_runtime::spread::{Failures, Worker};
use asym_runtime::{Error, Result};

use super::super::device_heap::DeviceHeapKey;
use super::{Member, State};

impl<T: DeviceHeapKey> State<T> {
    /// Books each member's outcome; a failure poisons the heap (whatever its kind, the
    /// failing member's keys are no longer known to be whole) and is returned.
    pub(super) fn settle<R>(&mut self, results: Vec<(Result<(usize, R)>, f64)>) -> Result<Vec<R>> {
        let mut out = Vec::with_capacity(results.len());
        let mut first_error = None;
        for (i, (m, (result, busy_s))) in self.members.iter_mut().zip(results).enumerate() {
            match result {
                Ok((keys, r)) => {
                    if keys > 0 {
                        m.report.items += keys as u64;
                        m.report.busy_s += busy_s;
                        m.model.record(keys, busy_s, 0);
                        m.report.items_per_s = m.model.items_per_s;
                    }
                    out.push(r);
                }
                Err(e) => {
                    m.report.error = Some(e.to_string());
                    // A device fault names its member; any other error is the call's own.
                    let e = match e {
                        Error::OpenCl { .. } | Error::Stalled { .. } if e.is_device_fault() => {
                            Error::device_lost(m.report.worker.clone(), e)
                        }
                        e => e,
                    };
                    self.failures.settle(Worker::Device(i), &e);
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            self.failed = Some(e.to_string());
            return Err(e);
        }
        Ok(out)
    }
}

/// Clears what the members' reports say of the last call.
pub(super) fn begin_call<T: DeviceHeapKey>(members: &mut [Member<T>]) {
    for m in members {
        m.report.items = 0;
        m.report.busy_s = 0.0;
        m.report.error = None;
    }
}

/// Runs `f` on every member at once (one driver thread each): the keys each moved, what it
/// returned and the seconds it took. A member with an injected failure fails instead.
pub(super) fn run_members<T: DeviceHeapKey + Sync, R: Send>(
    members: &[Member<T>],
    failures: &mut Failures,
    f: impl Fn(&Member<T>, usize) -> Result<(usize, R)> + Sync,
) -> Vec<(Result<(usize, R)>, f64)> {
    let faults: Vec<Mutex<Option<Error>>> = (0..members.len())
        .map(|i| Mutex::new(failures.due(i, 0)))
        .collect();
    super::super::on_threads(
        members.iter().enumerate(),
        "a member's driver thread",
        |(i, m)| match faults[i].lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => f(m, i),
        },
    )
}
