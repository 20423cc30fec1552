//! One selection's shared state: the counter every worker claims sub-lists from, the
//! progress each side made, and the latency threads' claiming loop.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::time::Instant;

use super::Strategy;
use crate::key::Key;

/// Sub-lists handed out from one counter to every worker, CPU or device: those in
/// `next..end` of the selection's `n`.
pub(super) struct Claims {
    pub(super) next: AtomicUsize,
    pub(super) start: usize,
    pub(super) end: usize,
    /// Sub-lists of the whole selection (for sizes and shares).
    pub(super) n: usize,
}

impl Claims {
    /// Sub-lists `range` of a selection of `n`.
    pub(super) fn new(range: std::ops::Range<usize>, n: usize) -> Self {
        Claims {
            next: AtomicUsize::new(range.start),
            start: range.start,
            end: range.end,
            n,
        }
    }
    pub(super) fn claim(&self, count: usize) -> Option<std::ops::Range<usize>> {
        let start = self.next.fetch_add(count.max(1), Ordering::Relaxed);
        (start < self.end).then(|| start..(start + count.max(1)).min(self.end))
    }
    /// The sub-lists these claims hand out.
    pub(super) fn range(&self) -> std::ops::Range<usize> {
        self.start..self.end
    }
    pub(super) fn remaining(&self) -> usize {
        self.end.saturating_sub(self.next.load(Ordering::Relaxed))
    }
}

/// Progress shared by the workers of one selection (keys done per side, for the split).
pub(super) struct Progress {
    pub(super) cpu_keys: AtomicUsize,
    pub(super) started: Instant,
    /// One entry per device of a device set (empty on one device).
    pub(super) members: Vec<MemberProgress>,
}

impl Progress {
    pub(super) fn new(members: usize) -> Self {
        Progress {
            cpu_keys: AtomicUsize::new(0),
            started: Instant::now(),
            members: (0..members).map(|_| MemberProgress::default()).collect(),
        }
    }
}

/// One device's keys answered so far in a selection over a device set, and when it began
/// (for the others' claims).
#[derive(Default)]
pub(super) struct MemberProgress {
    pub(super) keys: AtomicUsize,
    /// The member's first claim of the selection (a redo round keeps it: `keys` counts on).
    pub(super) started: std::sync::OnceLock<Instant>,
}

impl MemberProgress {
    pub(super) fn start(&self) {
        let _ = self.started.set(Instant::now());
    }

    /// Keys per second since the member started (0 before it started).
    pub(super) fn rate(&self) -> f64 {
        self.started.get().map_or(0.0, |t| {
            self.keys.load(Ordering::Relaxed) as f64 / t.elapsed().as_secs_f64().max(1e-9)
        })
    }
}

/// Sub-lists at least this long are shared by the latency threads when there are too few to
/// give each thread its own (radix select).
pub(super) const SPLIT_FROM: usize = 1 << 16;

/// A latency thread's share: sub-lists claimed from the shared counter (in chunks of about
/// 2^15 keys), each answered by `select`; returns how many it did.
pub(super) fn claim_sublists<K: Key>(
    job: &Job<'_, K>,
    mut select: impl FnMut(&[K]) -> i32,
) -> usize {
    let mut done = 0;
    let avg = job.data.len() / job.claims.n;
    let chunk = ((1 << 15) / avg.max(1)).max(1);
    while let Some(range) = job.claims.claim(chunk) {
        let mut keys = 0;
        for i in range {
            let list = &job.data[job.offs[i]..job.offs[i + 1]];
            job.results[i].store(select(list), Ordering::Relaxed);
            keys += list.len();
            job.mark_done(i..i + 1);
            done += 1;
        }
        job.progress.cpu_keys.fetch_add(keys, Ordering::Relaxed);
    }
    done
}

/// One selection's shared state.
pub(super) struct Job<'a, K> {
    /// Per sub-list, whether its answer is stored (selections over a device set, to redo
    /// what a failed member claimed; empty otherwise).
    pub(super) done: &'a [std::sync::atomic::AtomicBool],
    pub(super) data: &'a [K],
    pub(super) offs: &'a [usize],
    pub(super) k: usize,
    pub(super) results: &'a [AtomicI32],
    pub(super) claims: &'a Claims,
    pub(super) progress: &'a Progress,
    pub(super) cpu_threads: usize,
    /// The method the latency threads run.
    pub(super) cpu_strategy: Strategy,
    /// The method the device runs (GpuOnly and Cooperative by amount).
    pub(super) device_strategy: Strategy,
}

impl<K> Job<'_, K> {
    /// Sub-lists of this job's claims whose answers are stored (device sets).
    pub(super) fn answered(&self) -> usize {
        self.done.get(self.claims.range()).map_or(0, |d| {
            d.iter().filter(|f| f.load(Ordering::Relaxed)).count()
        })
    }

    /// Books the answers of sub-lists `range` as stored.
    pub(super) fn mark_done(&self, range: std::ops::Range<usize>) {
        if let Some(flags) = self.done.get(range) {
            for f in flags {
                f.store(true, Ordering::Relaxed);
            }
        }
    }
}
