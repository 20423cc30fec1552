//! One iteration of a search over a set together: the frontier split by the workers' speed
//! models, each other worker caught up and expanding its slice, what they lowered merged on
//! the primary (see the module documentation above).

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::Instant;

use asym_runtime::spread::{split, Failures, MemberReport, SpeedModel, Worker};
use asym_runtime::{Error, LatencyPool, Result};

use super::super::{cpu, next_iteration, Pair, Relaxer};
use super::{SetMember, RULE, SAMPLE_MIN};
use crate::graph::Graph;

/// The search loop's view of a set searching together. The frontier and the merged distances
/// live on the primary member (the fastest when the search started); the others get slices
/// of the frontier, and the distances they lower are merged on the primary (`sssp_merge`).
/// An iteration the primary runs alone costs what it costs on the primary alone.
pub(super) struct SetRelaxer<'a, 'g> {
    pub(super) graph: &'g Graph,
    pub(super) members: &'a mut Vec<SetMember<'g>>,
    pub(super) failures: &'a mut Failures,
    /// The latency threads, where the set has them (worker index: the members' count).
    pub(super) cpu: Option<CpuSide<'a>>,
    pub(super) primary: usize,
    /// Entries in the primary's frontier.
    pub(super) len: usize,
    /// Whether the primary's frontier is the list of vertices whose distance dropped in the
    /// last iteration (not a heap's pop).
    pub(super) frontier_is_changes: bool,
    /// That list, where the heap took it from the frontier.
    pub(super) changes_on_host: Option<Vec<Pair>>,
    /// Per member, then the latency threads: the last iteration it expanded a slice in. A
    /// worker that expanded in the previous iteration catches up by applying that
    /// iteration's changes; any other gets the primary's whole distance array.
    pub(super) expanded_in: Vec<Option<u64>>,
    /// The search's source (a member is reset when it first gets a slice).
    pub(super) source: usize,
    /// See [`SpreadSssp::round_robin`].
    pub(super) round_robin: bool,
    /// Iterations expanded.
    pub(super) round: u64,
    /// The stamp of the current iteration (every member's launches of one iteration share it).
    pub(super) stamp: u32,
    pub(super) shares: Vec<MemberReport>,
    pub(super) redone: u64,
}

/// The latency threads as a worker of one search: their own distances and stamps in host
/// memory (made when they first get a slice), caught up like a device's.
pub(super) struct CpuSide<'a> {
    pub(super) pool: &'a LatencyPool,
    pub(super) model: &'a mut SpeedModel,
    pub(super) dist: Vec<AtomicU32>,
    pub(super) stamp: Vec<AtomicU32>,
}

impl CpuSide<'_> {
    /// Catches up as `catch_up` says and expands `slice` with stamp `stamp`.
    pub(super) fn expand(
        &mut self,
        graph: &Graph,
        catch_up: &CatchUp,
        changes: &[Pair],
        dist: &[u32],
        slice: &[Pair],
        stamp: u32,
    ) -> Result<(Vec<Pair>, u64, u64)> {
        match catch_up {
            CatchUp::Changes => {
                for &(d, v) in changes {
                    self.dist[v as usize].fetch_min(d, Relaxed);
                }
            }
            CatchUp::Everything { .. } if self.dist.len() != dist.len() => {
                self.dist = dist.iter().map(|&d| AtomicU32::new(d)).collect();
                self.stamp = (0..dist.len()).map(|_| AtomicU32::new(0)).collect();
            }
            CatchUp::Everything { .. } => {
                for (a, &d) in self.dist.iter().zip(dist) {
                    a.store(d, Relaxed);
                }
            }
        }
        cpu::expand_slice(graph, self.pool, &self.dist, &self.stamp, slice, stamp)
    }
}

/// What a member applies before expanding its slice.
pub(super) enum CatchUp {
    /// The last iteration's changes (it expanded in that iteration).
    Changes,
    /// The primary's whole distance array (after a reset of its stamps where this is its
    /// first slice of the search).
    Everything { first: bool },
}

/// What one other member returned from an iteration.
pub(super) struct Expanded {
    pub(super) member: usize,
    pub(super) range: std::ops::Range<usize>,
    pub(super) result: Result<(Vec<Pair>, u64, u64)>,
    pub(super) secs: f64,
}

impl SetRelaxer<'_, '_> {
    /// The share of worker `w` (index `w` of the members, or theirs for the latency threads).
    pub(super) fn share(&mut self, w: usize) -> Option<&mut MemberReport> {
        let member = (w < self.members.len()).then_some(w);
        self.shares.iter_mut().find(|s| s.member == member)
    }

    /// The worker of index `w`.
    pub(super) fn worker(&self, w: usize) -> Worker {
        if w < self.members.len() {
            Worker::Device(w)
        } else {
            Worker::LatencyThreads
        }
    }

    /// The iteration's slices by the workers' speed models (or whole to the next worker in
    /// turn, `round_robin`): the primary's, and each other worker's with how it catches up.
    fn slices(&self) -> (std::ops::Range<usize>, Vec<Slice>) {
        let (p, round) = (self.primary, self.round);
        let cpu_index = self.members.len();
        let mut models: Vec<(Worker, SpeedModel)> = self
            .failures
            .live()
            .into_iter()
            .map(|i| (Worker::Device(i), self.members[i].model))
            .collect();
        if let Some(c) = self.cpu.as_ref() {
            models.push((Worker::LatencyThreads, *c.model));
        }
        let ranges: Vec<(usize, std::ops::Range<usize>)> = if self.round_robin {
            let (worker, _) = models[(round % models.len() as u64) as usize];
            vec![(worker, 0..self.len)]
        } else {
            split(&models, self.len, RULE)
        }
        .into_iter()
        .map(|(w, r)| match w {
            Worker::Device(i) => (i, r),
            Worker::LatencyThreads => (cpu_index, r),
        })
        .collect();
        let primary_range = ranges
            .iter()
            .find(|(i, _)| *i == p)
            .map_or(0..0, |(_, r)| r.clone());
        let others: Vec<Slice> = ranges
            .iter()
            .filter(|(i, _)| *i != p)
            .map(|(i, r)| {
                let catch_up = match self.expanded_in[*i] {
                    Some(r) if r + 1 == round => CatchUp::Changes,
                    last => CatchUp::Everything {
                        first: last.is_none(),
                    },
                };
                (*i, r.clone(), catch_up)
            })
            .collect();
        (primary_range, others)
    }

    /// What the `others` need from the primary, read before it expands: its frontier, and
    /// its distances where one of them catches up with everything.
    fn read_for(&mut self, others: &[Slice]) -> Result<(Vec<Pair>, Vec<u32>)> {
        let p = self.primary;
        if others.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let primary = &mut self.members[p].sssp;
        let frontier = primary
            .read_frontier(self.len)
            .map_err(|e| self.primary_failed(e))?;
        let needs_all = others
            .iter()
            .any(|o| matches!(o.2, CatchUp::Everything { .. }));
        let primary = &mut self.members[p].sssp;
        let dist = if needs_all {
            primary
                .read_raw_distances()
                .map_err(|e| self.primary_failed(e))?
        } else {
            Vec::new()
        };
        Ok((frontier, dist))
    }

    /// Books what the other workers returned: their speeds and shares, and what they
    /// lowered. A worker whose device failed leaves the set, and the primary expands its
    /// slice again (same stamp: whatever it queued already stays queued once); any other
    /// error is the search's. Returns the lowered pairs, and the entries visited and stale.
    fn book(&mut self, outcomes: Vec<Expanded>, stamp: u32) -> Result<(Vec<Pair>, u64, u64)> {
        let (p, round) = (self.primary, self.round);
        let mut lowered = Vec::new();
        let (mut visited, mut stale) = (0, 0);
        for out in outcomes {
            match out.result {
                Ok((pairs, v, st)) => {
                    let model = match self.members.get_mut(out.member) {
                        Some(m) => &mut m.model,
                        None => &mut *self.cpu.as_mut().expect("the latency threads").model,
                    };
                    model.record(out.range.len(), out.secs, SAMPLE_MIN);
                    self.expanded_in[out.member] = Some(round);
                    if let Some(share) = self.share(out.member) {
                        share.items += out.range.len() as u64;
                        share.pieces += 1;
                        share.busy_s += out.secs;
                    }
                    visited += v;
                    stale += st;
                    lowered.extend_from_slice(&pairs);
                }
                Err(e) => {
                    if let Some(share) = self.share(out.member) {
                        share.error = Some(e.to_string());
                        share.busy_s += out.secs;
                    }
                    // Only a device fault fails over; any other error is the search's.
                    let worker = self.worker(out.member);
                    if !self.failures.settle(worker, &e) {
                        return Err(e);
                    }
                    // Its distances are left behind; the primary expands its slice again
                    // (same stamp: whatever it queued already stays queued once).
                    self.redone += out.range.len() as u64;
                    let primary = &mut self.members[p].sssp;
                    primary
                        .expand_launch(out.range.start, out.range.end, stamp)
                        .map_err(|e| self.primary_failed(e))?;
                    if let Some(share) = self.share(p) {
                        share.items += out.range.len() as u64;
                    }
                }
            }
        }
        Ok((lowered, visited, stale))
    }

    /// The primary failed: the search cannot go on (its distances were the merged ones).
    pub(super) fn primary_failed(&mut self, e: Error) -> Error {
        let p = self.primary;
        self.failures.settle(Worker::Device(p), &e);
        if let Some(share) = self.share(p) {
            share.error = Some(e.to_string());
        }
        e
    }
}

impl Relaxer for SetRelaxer<'_, '_> {
    fn frontier_len(&self) -> usize {
        self.len
    }

    fn take_frontier(&mut self) -> Result<Vec<Pair>> {
        let p = self.primary;
        let pairs = self.members[p].sssp.read_frontier(self.len)?;
        // Kept only for a worker that can catch up with them: one that expanded in the
        // iteration that made them (any other gets the whole distance array).
        let last = self.round.checked_sub(1);
        let needed = self
            .expanded_in
            .iter()
            .enumerate()
            .any(|(i, e)| i != p && e.is_some() && *e == last);
        if self.frontier_is_changes && needed {
            self.changes_on_host = Some(pairs.clone());
        }
        self.frontier_is_changes = false;
        self.len = 0;
        Ok(pairs)
    }

    fn set_frontier(&mut self, pairs: &[Pair]) -> Result<()> {
        let p = self.primary;
        self.members[p].sssp.write_frontier(pairs)?;
        self.len = pairs.len();
        self.frontier_is_changes = false;
        Ok(())
    }

    fn expand(&mut self) -> Result<(u64, u64)> {
        self.stamp = next_iteration(self.stamp)?;
        let (p, stamp, round, source) = (self.primary, self.stamp, self.round, self.source);
        let cpu_index = self.members.len();
        let (primary_range, others) = self.slices();
        // What the others need from the primary, read before it expands: the frontier (their
        // slices, and the last changes where the frontier holds them) and its distances.
        // The last iteration's changes: the frontier itself unless a heap took them.
        let changes_taken = self.changes_on_host.take();
        let (frontier, dist) = self.read_for(&others)?;
        let changes: &[Pair] = match &changes_taken {
            _ if self.frontier_is_changes => &frontier,
            Some(c) => c,
            None => &[],
        };
        let (frontier, dist) = (&frontier[..], &dist[..]);
        // Faults injected into members expanding in this iteration (tests).
        let mut injected: Vec<Option<Error>> = (0..self.members.len())
            .map(|i| {
                let expands = i == p || others.iter().any(|o| o.0 == i);
                expands.then(|| self.failures.due(i, round)).flatten()
            })
            .collect();
        let mut primary_fault = None;
        let mut primary_secs = 0.0;
        let outcomes: Vec<Expanded> = {
            let mut primary_member = None;
            let mut work = Vec::new();
            for (i, m) in self.members.iter_mut().enumerate() {
                if i == p {
                    primary_member = Some(m);
                } else if let Some((_, r, c)) = others.iter().find(|o| o.0 == i) {
                    work.push((i, r.clone(), c, m, injected[i].take()));
                }
            }
            let primary_injected = injected[p].take();
            let primary_member = primary_member.expect("the primary is a member");
            let graph = self.graph;
            let cpu_work = others
                .iter()
                .find(|o| o.0 == cpu_index)
                .and_then(|(_, r, c)| self.cpu.as_mut().map(|cpu| (r.clone(), c, cpu)));
            std::thread::scope(|s| {
                let cpu_handle = cpu_work.map(|(range, catch_up, cpu)| {
                    s.spawn(move || {
                        let t = Instant::now();
                        let result = cpu.expand(
                            graph,
                            catch_up,
                            changes,
                            dist,
                            &frontier[range.clone()],
                            stamp,
                        );
                        Expanded {
                            member: cpu_index,
                            range,
                            result,
                            secs: t.elapsed().as_secs_f64(),
                        }
                    })
                });
                let handles: Vec<_> = work
                    .into_iter()
                    .map(|(i, range, catch_up, m, fault)| {
                        let h = s.spawn(move || {
                            let t = Instant::now();
                            let slice = &frontier[range.clone()];
                            let catch = Catch {
                                catch_up,
                                changes,
                                dist,
                                source,
                            };
                            let result = expand_member(m, catch, slice, stamp, fault);
                            Expanded {
                                member: i,
                                range,
                                result,
                                secs: t.elapsed().as_secs_f64(),
                            }
                        });
                        (i, h)
                    })
                    .collect();
                // The primary's own slice, on this thread.
                let t = Instant::now();
                let m = primary_member;
                let mine = (|| {
                    if let Some(e) = primary_injected {
                        return Err(e);
                    }
                    m.sssp.begin_iteration()?;
                    m.sssp
                        .expand_launch(primary_range.start, primary_range.end, stamp)
                })();
                primary_secs = t.elapsed().as_secs_f64();
                if let Err(e) = mine {
                    primary_fault = Some(e);
                }
                handles
                    .into_iter()
                    .chain(cpu_handle.map(|h| (cpu_index, h)))
                    .map(|(i, h)| {
                        h.join().unwrap_or_else(|_| Expanded {
                            member: i,
                            range: 0..0,
                            result: Err(Error::thread_lost("an SSSP driver thread", "it panicked")),
                            secs: 0.0,
                        })
                    })
                    .collect()
            })
        };
        if let Some(e) = primary_fault {
            return Err(self.primary_failed(e));
        }
        if !primary_range.is_empty() {
            self.members[p]
                .model
                .record(primary_range.len(), primary_secs, SAMPLE_MIN);
            if let Some(share) = self.share(p) {
                share.items += primary_range.len() as u64;
                share.pieces += 1;
                share.busy_s += primary_secs;
            }
        }
        let (lowered, visited, stale) = self.book(outcomes, stamp)?;
        let primary = &mut self.members[p].sssp;
        let finished = primary
            .merge_launch(&lowered, stamp)
            .and_then(|()| primary.finish_iteration());
        let (next, pv, ps) = finished.map_err(|e| self.primary_failed(e))?;
        self.expanded_in[p] = Some(round);
        self.len = next;
        self.frontier_is_changes = true;
        self.round += 1;
        Ok((visited + pv, stale + ps))
    }

    fn distances(&mut self) -> Result<Vec<u64>> {
        let p = self.primary;
        self.members[p].sssp.read_distances(None)
    }
}

/// A worker's slice of an iteration: its index, its range of the frontier and how it catches
/// up first.
type Slice = (usize, std::ops::Range<usize>, CatchUp);

/// What a member catches up with before its slice.
struct Catch<'x> {
    catch_up: &'x CatchUp,
    /// The last iteration's changes.
    changes: &'x [Pair],
    /// The primary's whole distance array (where some worker catches up with everything).
    dist: &'x [u32],
    /// The search's source (a member's first slice resets it).
    source: usize,
}

/// A member's part of an iteration: catch up, take its slice, expand it (or fail with the
/// injected `fault`), and return what it lowered with the entries visited and stale.
fn expand_member(
    m: &mut SetMember<'_>,
    catch: Catch<'_>,
    slice: &[Pair],
    stamp: u32,
    fault: Option<Error>,
) -> Result<(Vec<Pair>, u64, u64)> {
    match catch.catch_up {
        CatchUp::Changes => {
            m.sssp.write_frontier(catch.changes)?;
            m.sssp.apply_frontier(catch.changes.len())?;
        }
        CatchUp::Everything { first } => {
            if *first {
                m.sssp.reset(catch.source)?;
            }
            m.sssp.write_distances(catch.dist)?
        }
    }
    m.sssp.write_frontier(slice)?;
    if let Some(e) = fault {
        return Err(e);
    }
    let (next, visited, stale) = m.sssp.expand_range(0, slice.len(), stamp)?;
    Ok((m.sssp.read_frontier(next)?, visited, stale))
}
