//! Scoped jobs on the latency pool's long-lived threads: the one place where a job's borrows
//! outlive what the type system can see, so the waiting that makes it sound lives here too.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crossbeam::channel::{self, Sender};

use crate::latency::WorkerInfo;

/// A job as the pool's threads receive it.
pub(crate) type Job = Box<dyn FnOnce(&WorkerInfo) + Send + 'static>;

/// Sends `f` to every thread behind `queues` and returns each thread's result (`None` for a
/// thread whose queue is closed), indexed by `WorkerInfo::index`.
///
/// Does not return until every job has run and been dropped, or been dropped unrun: that is
/// what lets `f` and `R` borrow from the caller.
pub(crate) fn run_scoped<R, F>(
    queues: &[&Sender<Job>],
    f: &F,
) -> Vec<Option<std::thread::Result<R>>>
where
    R: Send,
    F: Fn(&WorkerInfo) -> R + Sync,
{
    let (tx, rx) = channel::unbounded::<(usize, std::thread::Result<R>)>();
    for q in queues {
        let tx = tx.clone();
        let job: Box<dyn FnOnce(&WorkerInfo) + Send + '_> = Box::new(move |info: &WorkerInfo| {
            let r = catch_unwind(AssertUnwindSafe(|| f(info)));
            let _ = tx.send((info.index, r));
        });
        // SAFETY: the two types differ only in the trait object's lifetime bound, so they have
        // the same layout. The job borrows `f` (and sends `R`s that may borrow) from our
        // caller; we do not return until `rx` reports every sender gone, and each job owns one
        // sender that it drops only when the job itself is dropped (after running, or unrun
        // when the send below fails and hands the job back to be dropped here). So no job can
        // touch a borrow after we return.
        let job: Job =
            unsafe { std::mem::transmute::<Box<dyn FnOnce(&WorkerInfo) + Send + '_>, Job>(job) };
        let _ = q.send(job);
    }
    drop(tx);
    let mut out: Vec<Option<std::thread::Result<R>>> = (0..queues.len()).map(|_| None).collect();
    while let Ok((i, r)) = rx.recv() {
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(r);
        }
    }
    out
}
