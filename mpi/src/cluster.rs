//! The ranks of one MPI job ([`Cluster`]), and the two rules every distributed call keeps.
//!
//! 1. **Every wait is bounded.** Each collective starts as MPI's nonblocking form and is
//!    tested with back-off until it completes. Past the cluster's bound ([`TIMEOUT_ENV`],
//!    default 600 s) the rank prints which step it waited in and ends the job
//!    (`MPI_Abort`), so no rank waits forever on one that hangs. A rank that dies (killed,
//!    crashed, exited early) is noticed by the launcher, which ends every rank.
//! 2. **Errors are agreed on before results are used.** A step that can fail on one rank
//!    alone (bad input, a device lost, memory) ends in [`Cluster::agree`]: one allreduce of
//!    who failed; where one did, its message travels to every rank and all of them return an
//!    error naming it ([`Error::RankFailed`]; the failed rank returns its own), so they leave
//!    the call at the same step instead of waiting for it in the next collective.
//!
//! Every rank calls the same collectives in the same order (MPI's rule). Each function here
//! that takes a `step` is one collective, or two where sizes travel first; `step` is what a
//! stalled rank reports. Checks that every rank makes on the same gathered values (sizes,
//! counts) fail on every rank alike, so they need no agreement round.

use std::time::{Duration, Instant};

use asym_runtime::backoff::Backoff;
use asym_runtime::{
    list_devices, select_device, CpuTopology, DeviceKind, DeviceProfile, DeviceSet, Error,
    LatencyPool, PoolOptions, Result, Runtime, RuntimeOptions, DEVICE_ENV,
};
use mpi::collective::SystemOperation;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::request::{scope, Request, Scope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};
use mpi::Count;

/// Seconds a rank waits in one collective before it ends the job (default 600).
pub const TIMEOUT_ENV: &str = "ASYM_MPI_TIMEOUT_S";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The exit status of a job a stalled rank ends.
const EXIT_STALLED: i32 = 1;
/// Elements per piece of one reduction: MPI counts are `i32`.
const REDUCE_PIECE: usize = 1 << 28;

/// This process's rank in an MPI job, with every rank's place.
///
/// One per process: MPI is initialized when it is made and finalized when it is dropped.
pub struct Cluster {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    host: String,
    local: (usize, usize),
    timeout: Duration,
    /// Whether this rank's own failure was told to every rank by [`Cluster::agree`].
    told: std::cell::Cell<bool>,
    // Dropped last: finalizes MPI after the communicator is gone.
    _universe: Universe,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("host", &self.host)
            .finish()
    }
}

impl Cluster {
    /// The rank count the launcher (mpirun, srun) gave this process, from its environment,
    /// without starting MPI; `None` when it was not started by one.
    pub fn launched_ranks() -> Option<usize> {
        asym_runtime::env::launched_ranks()
    }

    /// Starts MPI (asking for `MPI_THREAD_MULTIPLE`; asym calls it from one thread) and
    /// learns every rank's host. A collective: every rank of the job calls it.
    pub fn init() -> Result<Cluster> {
        let timeout = match asym_runtime::env::parsed::<f64>(TIMEOUT_ENV, "seconds")? {
            None => DEFAULT_TIMEOUT,
            Some(s) if s > 0.0 && s <= 1e7 => Duration::from_secs_f64(s),
            Some(s) => {
                return Err(Error::out_of_range(
                    TIMEOUT_ENV,
                    s,
                    "seconds, more than 0 and at most 10^7",
                ))
            }
        };
        let (universe, _threading) = mpi::initialize_with_threading(mpi::Threading::Multiple)
            .ok_or_else(|| {
                Error::InvalidArgument(
                    "MPI is already initialized in this process (one Cluster per process)".into(),
                )
            })?;
        let world = universe.world();
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "?".into());
        let mut cluster = Cluster {
            rank: world.rank() as usize,
            size: world.size() as usize,
            world,
            host,
            local: (0, 1),
            timeout,
            told: Default::default(),
            _universe: universe,
        };
        cluster.local = cluster.place_on_host();
        cluster.keep_to_share();
        Ok(cluster)
    }

    /// Where the launcher left this rank free to run on every CPU of a host it shares with
    /// other ranks, keeps the calling thread (and the threads it starts after) to this
    /// rank's share: unpinned, the ranks' own threads wander onto one another's cores
    /// (measured on the 2-core dev machine: 2 ranks selecting 2^22 keys each took 4.7 ms
    /// unpinned, 3.0 ms kept to their shares, one rank alone 2.9 ms).
    fn keep_to_share(&self) {
        let usable = CpuTopology::discover().pus;
        let share = self.cpus();
        if self.local.1 > 1 && share.len() < usable.len() {
            asym_runtime::pin_current_thread_to(&share);
        }
    }

    /// This rank's place among the ranks of its host, and how many ranks its host runs.
    fn place_on_host(&self) -> (usize, usize) {
        let hash = self.host.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        let hosts = self.all_gather("learning each rank's host", hash);
        let local_rank = hosts[..self.rank].iter().filter(|&&h| h == hash).count();
        let local_size = hosts.iter().filter(|&&h| h == hash).count();
        (local_rank, local_size)
    }

    /// This process's rank, 0 to `size() - 1`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether this is rank 0, the one that prints and writes.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// The host this rank runs on (MPI's processor name).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// This rank's place among the ranks of its host, and how many ranks its host runs
    /// (to share the host's cores and devices among them).
    pub fn on_host(&self) -> (usize, usize) {
        self.local
    }

    /// This rank's share of its host's CPUs, by OS id: the CPUs the launcher bound it to, or
    /// where it bound it to none (every CPU usable), an equal slice of them by its place on
    /// the host (a CPU of its own at least, shared round-robin past one rank per CPU).
    pub fn cpus(&self) -> Vec<usize> {
        let usable = CpuTopology::discover().pus;
        let (place, ranks) = self.local;
        share_of(&usable, place, ranks)
    }

    /// This rank's device: among the devices `spec` names, the one at its place on its
    /// host, round-robin, so that the ranks of a host with several GPUs take one each. A
    /// name fragment names every device it matches (`nvidia`: each NVIDIA GPU); `all` and
    /// comma-separated lists as [`DeviceSet::choose`]; `None` reads `ASYM_DEVICE`, else
    /// takes every GPU, else the first CPU device.
    ///
    /// Returns the device with its place among the candidates and their number.
    pub fn device(&self, spec: Option<&str>) -> Result<(Runtime, usize, usize)> {
        let spec = spec
            .map(str::to_string)
            .or_else(|| std::env::var(DEVICE_ENV).ok())
            .filter(|s| !s.trim().is_empty());
        let candidates: Vec<DeviceProfile> = match spec.as_deref().map(str::trim) {
            Some(s) if s.contains(',') || s.eq_ignore_ascii_case("all") => {
                DeviceSet::choose(Some(s))?
            }
            Some(s) => {
                let matching: Vec<_> = list_devices()?
                    .into_iter()
                    .filter(|d| d.matches(s))
                    .collect();
                if matching.is_empty() {
                    vec![select_device(Some(s))?]
                } else {
                    matching
                }
            }
            None => {
                let gpus: Vec<_> = list_devices()?
                    .into_iter()
                    .filter(|d| d.kind == DeviceKind::Gpu)
                    .collect();
                if gpus.is_empty() {
                    vec![select_device(None)?]
                } else {
                    gpus
                }
            }
        };
        let (place, _) = self.local;
        let at = place % candidates.len().max(1);
        match candidates.get(at) {
            Some(p) => Ok((
                Runtime::open_with(p.clone(), &RuntimeOptions::default())?,
                at,
                candidates.len(),
            )),
            None => Err(Error::NoPlatform),
        }
    }

    /// A latency pool on this rank's share of its host ([`Cluster::cpus`]): `threads` of
    /// them (default: one per CPU of the share), pinned to it.
    pub fn latency_pool(&self, threads: Option<usize>) -> Result<LatencyPool> {
        let cpus = self.cpus();
        LatencyPool::new(PoolOptions {
            threads: threads.or(Some(cpus.len())),
            cores: Some(cpus),
            ..Default::default()
        })
    }

    /// The bound on one collective wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets the bound on one collective wait (default: [`TIMEOUT_ENV`], else 600 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Waits for `req` with back-off; past the bound, ends the job naming `step`.
    fn wait<'a, D: ?Sized, S: Scope<'a>>(&self, step: &str, mut req: Request<'a, D, S>) {
        // MPI moves a nonblocking collective on only inside MPI_Test, on every rank: a rank
        // that sleeps between tests holds up the others' next round. So a wait tests without
        // sleeping while a collective's usual latency lasts, then yields the core (to a rank
        // sharing it, on an oversubscribed host), and sleeps only past that.
        const TEST_ONLY: Duration = Duration::from_micros(200);
        const YIELDING: Duration = Duration::from_millis(20);
        let start = Instant::now();
        let mut backoff = Backoff::new();
        loop {
            match req.test() {
                Ok(_) => return,
                Err(pending) => req = pending,
            }
            let waited = start.elapsed();
            if waited < TEST_ONLY {
                std::hint::spin_loop();
            } else if waited < YIELDING {
                std::thread::yield_now();
            } else if waited >= self.timeout {
                self.abort_stalled(step, waited);
            } else {
                backoff.snooze_within(waited);
            }
        }
    }

    fn abort_stalled(&self, step: &str, waited: Duration) -> ! {
        eprintln!(
            "rank {} ({}): timed out after {:.1} s {step}, waiting for the other ranks (one \
             of them stopped answering); ending the job (bound: {TIMEOUT_ENV})",
            self.rank,
            self.host,
            waited.as_secs_f64()
        );
        self.world.abort(EXIT_STALLED)
    }

    /// Ends the job at once with `code`: for a rank that cannot go on and cannot tell the
    /// others in a collective.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }

    /// Waits until every rank is here (a start line for timings).
    pub fn barrier(&self, step: &str) {
        let req = self.world.immediate_barrier();
        self.wait(step, req);
    }

    /// Every rank's `value`, in rank order.
    pub fn all_gather<T: Equivalence + Copy + Default>(&self, step: &str, value: T) -> Vec<T> {
        let mut out = vec![T::default(); self.size];
        scope(|s| {
            let req = self
                .world
                .immediate_all_gather_into(s, &value, &mut out[..]);
            self.wait(step, req);
        });
        out
    }

    /// Element-wise `op` of every rank's `local` (all of one length), on every rank.
    fn all_reduce<T: Equivalence + Copy + Default>(
        &self,
        step: &str,
        local: &[T],
        op: SystemOperation,
    ) -> Vec<T> {
        let mut out = vec![T::default(); local.len()];
        for (send, recv) in local.chunks(REDUCE_PIECE).zip(out.chunks_mut(REDUCE_PIECE)) {
            scope(|s| {
                let req = self.world.immediate_all_reduce_into(s, send, recv, op);
                self.wait(step, req);
            });
        }
        out
    }

    /// Element-wise sum of every rank's `local` (all of one length), on every rank.
    pub fn all_reduce_sum<T: Equivalence + Copy + Default>(
        &self,
        step: &str,
        local: &[T],
    ) -> Vec<T> {
        self.all_reduce(step, local, SystemOperation::sum())
    }

    /// Element-wise minimum of every rank's `local`, on every rank.
    pub fn all_reduce_min<T: Equivalence + Copy + Default>(
        &self,
        step: &str,
        local: &[T],
    ) -> Vec<T> {
        self.all_reduce(step, local, SystemOperation::min())
    }

    /// Element-wise maximum of every rank's `local`, on every rank.
    pub fn all_reduce_max<T: Equivalence + Copy + Default>(
        &self,
        step: &str,
        local: &[T],
    ) -> Vec<T> {
        self.all_reduce(step, local, SystemOperation::max())
    }

    /// Every rank's `local`, concatenated in rank order, on every rank.
    pub fn all_gather_varcount<T: Equivalence + Copy + Default>(
        &self,
        step: &str,
        local: &[T],
    ) -> Result<Vec<T>> {
        let lens = self.all_gather(step, local.len() as u64);
        let (counts, displs) = partition(&lens, step)?;
        let mut out = receive_buffer(lens.iter().sum::<u64>() as usize);
        let mut recv = PartitionMut::new(&mut out[..], &counts[..], &displs[..]);
        scope(|s| {
            let req = self
                .world
                .immediate_all_gather_varcount_into(s, local, &mut recv);
            self.wait(step, req);
        });
        Ok(out)
    }

    /// Every rank's `local`, concatenated in rank order, on rank 0 (`None` elsewhere).
    pub fn gather_to_root<T: Equivalence + Copy + Default>(
        &self,
        step: &str,
        local: &[T],
    ) -> Result<Option<Vec<T>>> {
        let lens = self.all_gather(step, local.len() as u64);
        let (counts, displs) = partition(&lens, step)?;
        let root = self.world.process_at_rank(0);
        if !self.is_root() {
            scope(|s| {
                let req = root.immediate_gather_varcount_into(s, local);
                self.wait(step, req);
            });
            return Ok(None);
        }
        let mut out = receive_buffer(lens.iter().sum::<u64>() as usize);
        let mut recv = PartitionMut::new(&mut out[..], &counts[..], &displs[..]);
        scope(|s| {
            let req = root.immediate_gather_varcount_into_root(s, local, &mut recv);
            self.wait(step, req);
        });
        Ok(Some(out))
    }

    /// Personalized exchange: `send[send_offsets[r]..send_offsets[r + 1]]` goes to rank `r`;
    /// returns what every rank sent this one, in rank order, with the offsets of each
    /// rank's part.
    pub fn all_to_all_varcount<T: Equivalence + Copy + Default>(
        &self,
        step: &str,
        send: &[T],
        send_offsets: &[usize],
    ) -> Result<(Vec<T>, Vec<usize>)> {
        if send_offsets.len() != self.size + 1
            || send_offsets[0] != 0
            || send_offsets[self.size] != send.len()
            || send_offsets.windows(2).any(|w| w[1] < w[0])
        {
            // A caller's bug on this rank alone: end the job rather than leave the others
            // waiting in the exchange.
            eprintln!(
                "rank {}: {step}: send offsets {send_offsets:?} do not cut {} items over {} ranks",
                self.rank,
                send.len(),
                self.size
            );
            self.abort(EXIT_STALLED);
        }
        let send_lens: Vec<u64> = send_offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as u64)
            .collect();
        let mut recv_lens = vec![0u64; self.size];
        scope(|s| {
            let req = self
                .world
                .immediate_all_to_all_into(s, &send_lens[..], &mut recv_lens[..]);
            self.wait(step, req);
        });
        let (send_counts, send_displs) = partition(&send_lens, step)?;
        let (recv_counts, recv_displs) = partition(&recv_lens, step)?;
        let mut out = receive_buffer(recv_lens.iter().sum::<u64>() as usize);
        let sent = Partition::new(send, &send_counts[..], &send_displs[..]);
        let mut recv = PartitionMut::new(&mut out[..], &recv_counts[..], &recv_displs[..]);
        scope(|s| {
            let req = self
                .world
                .immediate_all_to_all_varcount_into(s, &sent, &mut recv);
            self.wait(step, req);
        });
        let mut offsets = Vec::with_capacity(self.size + 1);
        offsets.push(0);
        for &l in &recv_lens {
            offsets.push(offsets.last().copied().unwrap_or(0) + l as usize);
        }
        Ok((out, offsets))
    }

    /// `bytes` of rank `root`, on every rank (the others pass anything).
    pub fn broadcast_bytes(&self, step: &str, root: usize, bytes: Vec<u8>) -> Vec<u8> {
        let sender = self.world.process_at_rank(root as i32);
        let mut len = bytes.len() as u64;
        scope(|s| {
            let req = sender.immediate_broadcast_into(s, &mut len);
            self.wait(step, req);
        });
        let mut out = if self.rank == root {
            bytes
        } else {
            vec![0u8; len as usize]
        };
        scope(|s| {
            let req = sender.immediate_broadcast_into(s, &mut out[..]);
            self.wait(step, req);
        });
        out
    }

    /// Ends a step that may have failed on some ranks only: every rank learns whether any
    /// failed. All succeeded: `local` comes back. Otherwise the lowest failed rank returns
    /// its own error and every other rank [`Error::RankFailed`] with its message.
    pub fn agree<T>(&self, step: &str, local: Result<T>) -> Result<T> {
        self.agree_gathering(step, local, &[]).map(|(v, _)| v)
    }

    /// [`Cluster::agree`] that also gathers every rank's `record` (all of one length), in
    /// rank order, in the same collective: a call's closing round (its figures, its counts)
    /// costs no more than its agreement.
    pub fn agree_gathering<T>(
        &self,
        step: &str,
        local: Result<T>,
        record: &[u64],
    ) -> Result<(T, Vec<Vec<u64>>)> {
        let mut mine = Vec::with_capacity(record.len() + 1);
        mine.push(local.is_err() as u64);
        mine.extend_from_slice(record);
        let mut all = vec![0u64; mine.len() * self.size];
        scope(|s| {
            let req = self
                .world
                .immediate_all_gather_into(s, &mine[..], &mut all[..]);
            self.wait(step, req);
        });
        let records: Vec<Vec<u64>> = all
            .chunks_exact(mine.len())
            .map(|c| c[1..].to_vec())
            .collect();
        let Some(rank) = all.chunks_exact(mine.len()).position(|c| c[0] == 1) else {
            return local.map(|v| (v, records));
        };
        let mut payload = Vec::new();
        if let (true, Err(e)) = (rank == self.rank, &local) {
            payload.push(e.is_usage_error() as u8);
            payload.extend_from_slice(e.to_string().as_bytes());
        }
        let payload = self.broadcast_bytes(step, rank, payload);
        if rank == self.rank {
            self.told.set(true);
            return local.map(|v| (v, records));
        }
        Err(Error::RankFailed {
            rank,
            message: String::from_utf8_lossy(payload.get(1..).unwrap_or_default()).into_owned(),
            usage: payload.first() == Some(&1),
        })
    }

    /// The line a program prints for `e`, where this rank is the one to print it: rank 0
    /// prints every error that ended the call (another rank's arrives as
    /// [`Error::RankFailed`], which names it); another rank prints only its own error that
    /// never reached the others (one that stopped it outside [`Cluster::agree`]).
    pub fn error_line(&self, program: &str, e: &Error) -> Option<String> {
        match e {
            Error::RankFailed { .. } if self.is_root() => Some(format!("{program}: {e}")),
            Error::RankFailed { .. } => None,
            _ if self.is_root() || !self.told.get() => {
                Some(format!("{program}: rank {}: {e}", self.rank))
            }
            _ => None,
        }
    }
}

/// Rank `place` of `ranks` on a host's share of `usable` CPUs.
fn share_of(usable: &[usize], place: usize, ranks: usize) -> Vec<usize> {
    let n = usable.len();
    if n == 0 || ranks == 0 {
        return vec![0];
    }
    if ranks >= n {
        return vec![usable[place % n]];
    }
    usable[place * n / ranks..(place + 1) * n / ranks].to_vec()
}

/// MPI counts and displacements for parts of `lens` elements: an error (the same on every
/// rank, which all see the same `lens`) where they pass MPI's `i32` counts.
fn partition(lens: &[u64], step: &str) -> Result<(Vec<Count>, Vec<Count>)> {
    let mut counts = Vec::with_capacity(lens.len());
    let mut displs = Vec::with_capacity(lens.len());
    let mut at = 0u64;
    for &l in lens {
        if at + l > Count::MAX as u64 {
            return Err(Error::TooLarge {
                what: format!("items in one collective ({step})"),
                size: lens.iter().sum(),
                limit: Count::MAX as u64,
            });
        }
        counts.push(l as Count);
        displs.push(at as Count);
        at += l;
    }
    Ok((counts, displs))
}

/// A receive buffer of `len` items whose address no send buffer shares. OpenMPI 4.1's
/// nonblocking collectives (libnbc) take a send buffer at the receive buffer's address for an
/// in-place call, and two empty vectors of one type share one dangling address: an
/// `Ialltoallv` where a rank sent and received nothing then never completed on any rank
/// (3 ranks, at the first exchange with data after empty ones). A real allocation, even for
/// no items, has an address of its own.
fn receive_buffer<T: Default + Clone>(len: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(len.max(1));
    out.resize(len, T::default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_a_host_s_cpus() {
        let cpus: Vec<usize> = (0..16).collect();
        assert_eq!(share_of(&cpus, 0, 1), cpus);
        assert_eq!(share_of(&cpus, 1, 4), vec![4, 5, 6, 7]);
        assert_eq!(share_of(&cpus, 2, 3), (10..16).collect::<Vec<_>>());
        assert_eq!(share_of(&[0, 1], 3, 4), vec![1]);
        assert_eq!(share_of(&[5], 0, 2), vec![5]);
    }

    #[test]
    fn partitions_stop_at_mpi_counts() {
        let (c, d) = partition(&[3, 0, 2], "test").unwrap();
        assert_eq!((c, d), (vec![3, 0, 2], vec![0, 3, 3]));
        assert!(partition(&[1 << 30, 1 << 30], "test").is_err());
    }
}
