//! The failure record of a set, its policy, and fault injection.

use crate::error::{Error, Result};

use super::Worker;

/// Which workers of a set have failed (and are left out since), with their errors, and the
/// faults tests inject: one record per spreading structure, one policy for all of them.
///
/// The policy ([`Failures::settle`]): a worker whose error is a device fault
/// ([`Error::is_device_fault`]) leaves the set, and the structure hands its share to the
/// others where it can (k-selection selects the sub-lists it left again, SSSP searches on
/// without it; a heap cannot, its keys lived there, and reports itself damaged). Any other
/// error is the call's own and leaves every worker in: a damaged structure, a bad argument or
/// a host limit would fail the same way anywhere. The latency threads fail only with the
/// host's errors, which never fail over.
#[derive(Clone, Debug)]
pub struct Failures {
    labels: Vec<String>,
    failed: Vec<Option<String>>,
    /// Per member, the step (launch, iteration: the structure's count from 0 in the next call
    /// that gives it work) at which an injected fault fires.
    inject: Vec<Option<u64>>,
}

impl Failures {
    /// A record of members labelled `labels`, none failed.
    pub fn new(labels: Vec<String>) -> Self {
        let n = labels.len();
        Failures {
            labels,
            failed: vec![None; n],
            inject: vec![None; n],
        }
    }

    /// Member `i`'s label.
    pub fn label(&self, i: usize) -> &str {
        &self.labels[i]
    }

    /// The members that have not failed, in order.
    pub fn live(&self) -> Vec<usize> {
        (0..self.labels.len())
            .filter(|&i| self.failed[i].is_none())
            .collect()
    }

    /// Whether member `i` is still in the set.
    pub fn is_live(&self, i: usize) -> bool {
        self.failed.get(i).is_some_and(Option::is_none)
    }

    /// The members that failed, with their errors.
    pub fn failed(&self) -> Vec<(String, String)> {
        self.labels
            .iter()
            .zip(&self.failed)
            .filter_map(|(l, e)| e.clone().map(|e| (l.clone(), e)))
            .collect()
    }

    /// Applies the policy to `worker`'s error `e`: a device fault takes the member out of the
    /// set (true: the structure may hand its share to the others); any other error leaves it
    /// in (false: the error is the call's).
    pub fn settle(&mut self, worker: Worker, e: &Error) -> bool {
        match worker {
            Worker::Device(i) if e.is_device_fault() => {
                if let Some(slot) = self.failed.get_mut(i) {
                    slot.get_or_insert_with(|| e.to_string());
                }
                true
            }
            _ => false,
        }
    }

    /// The error of a call that found no worker left: every member's failure, named.
    pub fn all_failed(&self) -> Error {
        let failed: Vec<String> = self
            .failed()
            .iter()
            .map(|(d, e)| format!("{d}: {e}"))
            .collect();
        Error::device_lost("every device of the set", failed.join("; "))
    }

    /// Makes member `member` fail at step `at` of the next call that gives it work: a fault
    /// injection for tests of the recovery.
    pub fn inject(&mut self, member: usize, at: u64) -> Result<()> {
        let n = self.labels.len();
        let slot = self
            .inject
            .get_mut(member)
            .ok_or_else(|| Error::out_of_range("member", member, format!("a set of {n}")))?;
        *slot = Some(at);
        Ok(())
    }

    /// The error of member `i`'s injected fault where it is due at step `step` (its step
    /// reached or passed); taken, so it fires once.
    pub fn due(&mut self, i: usize, step: u64) -> Option<Error> {
        let slot = self.inject.get_mut(i)?;
        if slot.is_some_and(|at| step >= at) {
            *slot = None;
            Some(Error::device_lost(
                self.labels[i].clone(),
                format!("a failure injected at step {step}"),
            ))
        } else {
            None
        }
    }

    /// The step of member `i`'s injected fault, taken from the record for a structure that
    /// checks the step itself (put it back with [`Failures::inject`] if the call gave the
    /// member no work).
    pub fn take_armed(&mut self, i: usize) -> Option<u64> {
        self.inject.get_mut(i).and_then(Option::take)
    }
}
