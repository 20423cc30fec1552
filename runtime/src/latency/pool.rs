//! The latency pool: N long-lived threads, each pinned to one CPU, fed jobs through
//! crossbeam channels.
//!
//! Every wait on the pool is bounded: a job that does not come back within the timeout is
//! reported as [`Error::Stalled`] naming the threads that did not answer, and a panic in a job
//! becomes [`Error::LatencyThreadPanicked`] for the caller (the thread itself survives).
//!
//! # Sharing cores with a CPU OpenCL device
//! On a CPU device (PoCL) the device's worker threads run on the same cores as the pool. The
//! default pool for such a runtime ([`LatencyPool::for_runtime`]) leaves half the cores to the
//! device (at least one thread for the pool), and PoCL can be told to use the rest with
//! `POCL_MAX_PTHREAD_COUNT=<cores - pool threads>` set before the program starts. Every spin
//! in asym backs off (see `backoff.rs`), so oversubscription costs time, never liveness.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam::channel::{self, Receiver, Sender};

use super::topology::CpuTopology;
use crate::backoff::Deadline;
use crate::device::DeviceKind;
use crate::error::{Error, Result, Side};
use crate::runtime::Runtime;
use crate::sys;

/// The environment variable that sets the number of latency threads.
pub const THREADS_ENV: &str = "ASYM_LATENCY_THREADS";

/// How to build a [`LatencyPool`]. `None` fields take defaults.
#[derive(Clone, Debug, Default)]
pub struct PoolOptions {
    /// Number of threads (else `ASYM_LATENCY_THREADS`, else one per usable CPU, minus
    /// `leave_for_device`).
    pub threads: Option<usize>,
    /// The CPUs to pin to, by OS id (thread i gets `cores[i % len]`); else the topology's
    /// order, distinct cores first.
    pub cores: Option<Vec<usize>>,
    /// CPUs to leave free for a CPU OpenCL device.
    pub leave_for_device: usize,
    /// Bound of waits on the pool (else 60 s).
    pub timeout: Option<Duration>,
}

/// What a job learns about the thread running it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerInfo {
    /// Index of the thread in the pool.
    pub index: usize,
    /// Number of threads in the pool.
    pub threads: usize,
    /// The CPU it is pinned to (`None` if pinning failed).
    pub pinned_cpu: Option<usize>,
}

impl WorkerInfo {
    /// The CPU the thread is running on right now (`sched_getcpu`).
    pub fn current_cpu(&self) -> Option<usize> {
        sys::current_cpu()
    }
}

use crate::sys::Job;

struct Worker {
    jobs: Sender<Job>,
    handle: Option<JoinHandle<()>>,
    info: WorkerInfo,
}

/// N pinned threads; see the module docs.
pub struct LatencyPool {
    workers: Vec<Worker>,
    timeout: Duration,
    topology: CpuTopology,
}

impl std::fmt::Debug for LatencyPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencyPool")
            .field("cpus", &self.pinned_cpus())
            .finish()
    }
}

/// A latency pool a structure keeps using: borrowed for the structure's lifetime, or shared
/// through an `Arc` by structures that must own what they use (a heap held by a Python
/// object, say).
#[derive(Debug, Clone)]
pub enum PoolRef<'a> {
    /// A pool that outlives the structure.
    Borrowed(&'a LatencyPool),
    /// A pool kept alive by every structure holding it.
    Shared(std::sync::Arc<LatencyPool>),
}

impl std::ops::Deref for PoolRef<'_> {
    type Target = LatencyPool;
    fn deref(&self) -> &LatencyPool {
        match self {
            PoolRef::Borrowed(p) => p,
            PoolRef::Shared(p) => p,
        }
    }
}

impl<'a> From<&'a LatencyPool> for PoolRef<'a> {
    fn from(pool: &'a LatencyPool) -> Self {
        PoolRef::Borrowed(pool)
    }
}

impl From<std::sync::Arc<LatencyPool>> for PoolRef<'static> {
    fn from(pool: std::sync::Arc<LatencyPool>) -> Self {
        PoolRef::Shared(pool)
    }
}

impl LatencyPool {
    /// A pool of `threads` threads (`None`: `ASYM_LATENCY_THREADS`, else one per usable CPU),
    /// the other options at their defaults: what a `--threads` flag asks for.
    pub fn with_threads(threads: Option<usize>) -> Result<Self> {
        Self::new(PoolOptions {
            threads,
            ..Default::default()
        })
    }

    /// Builds a pool as `options` say.
    pub fn new(options: PoolOptions) -> Result<Self> {
        let topology = CpuTopology::discover();
        let usable = topology.pus.clone();
        let threads = match options.threads {
            Some(n) => n,
            None => crate::env::parsed::<usize>(THREADS_ENV, "a thread count")?
                .unwrap_or_else(|| usable.len().saturating_sub(options.leave_for_device).max(1)),
        };
        if threads == 0 || threads > 4096 {
            return Err(Error::out_of_range(
                "latency threads",
                threads,
                "a latency pool needs 1 to 4096",
            ));
        }
        let cores = match options.cores {
            Some(c) if c.is_empty() => {
                return Err(Error::out_of_range(
                    "cores",
                    "[]",
                    "the latency pool needs at least one",
                ))
            }
            Some(c) => {
                if let Some(bad) = c.iter().find(|id| !usable.contains(id)) {
                    return Err(Error::out_of_range(
                        "CPU",
                        bad,
                        format!("not available to this process (usable: {usable:?})"),
                    ));
                }
                c
            }
            None => {
                // Distinct cores first; with a device to leave room for, take them from the end.
                let mut order = usable.clone();
                if options.leave_for_device > 0 {
                    let shift = options.leave_for_device.min(order.len().saturating_sub(1));
                    order.rotate_left(shift);
                }
                order
            }
        };
        let timeout = options.timeout.unwrap_or(Duration::from_secs(60));
        let mut workers = Vec::with_capacity(threads);
        for index in 0..threads {
            let cpu = cores[index % cores.len()];
            let (tx, rx) = channel::unbounded::<Job>();
            let (ready_tx, ready_rx) = channel::bounded::<Option<usize>>(1);
            let handle = std::thread::Builder::new()
                .name(format!("asym-latency-{index}"))
                .spawn(move || {
                    let pinned = core_affinity::set_for_current(core_affinity::CoreId { id: cpu });
                    let _ = ready_tx.send(pinned.then_some(cpu));
                    worker_loop(
                        rx,
                        WorkerInfo {
                            index,
                            threads,
                            pinned_cpu: pinned.then_some(cpu),
                        },
                    );
                })
                .map_err(|e| {
                    Error::thread_lost(
                        format!("latency thread {index}"),
                        format!("cannot spawn latency thread {index}: {e}"),
                    )
                })?;
            let pinned_cpu = ready_rx.recv_timeout(timeout).map_err(|_| Error::Stalled {
                side: Side::Host,
                waiting_for: format!("latency thread {index} to start"),
                waited_ms: timeout.as_millis() as u64,
                detail: String::new(),
            })?;
            workers.push(Worker {
                jobs: tx,
                handle: Some(handle),
                info: WorkerInfo {
                    index,
                    threads,
                    pinned_cpu,
                },
            });
        }
        Ok(LatencyPool {
            workers,
            timeout,
            topology,
        })
    }

    /// The default pool beside `rt`: on a CPU OpenCL device, half the CPUs are left to the
    /// device (see the module docs); on a GPU, every CPU.
    pub fn for_runtime(rt: &Runtime) -> Result<Self> {
        let cpus = CpuTopology::discover().pus.len();
        let leave = if rt.profile().kind == DeviceKind::Cpu {
            cpus / 2
        } else {
            0
        };
        Self::new(PoolOptions {
            leave_for_device: leave,
            timeout: Some(rt.timeout()),
            ..Default::default()
        })
    }

    /// Number of threads.
    pub fn len(&self) -> usize {
        self.workers.len()
    }

    /// Whether the pool has no threads (never true for a built pool).
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// The CPU each thread is pinned to.
    pub fn pinned_cpus(&self) -> Vec<Option<usize>> {
        self.workers.iter().map(|w| w.info.pinned_cpu).collect()
    }

    /// The topology the pool was built from.
    pub fn topology(&self) -> &CpuTopology {
        &self.topology
    }

    /// How long the pool's bounded waits last before they report a stall.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs `f` once on every thread and returns the results in thread order, waiting at
    /// most the pool's timeout.
    pub fn broadcast<R, F>(&self, f: F) -> Result<Vec<R>>
    where
        R: Send + 'static,
        F: Fn(&WorkerInfo) -> R + Send + Sync + 'static,
    {
        self.broadcast_timeout(f, self.timeout)
    }

    /// [`LatencyPool::broadcast`] with an explicit bound.
    pub fn broadcast_timeout<R, F>(&self, f: F, timeout: Duration) -> Result<Vec<R>>
    where
        R: Send + 'static,
        F: Fn(&WorkerInfo) -> R + Send + Sync + 'static,
    {
        let f = std::sync::Arc::new(f);
        let (tx, rx) = channel::bounded(self.workers.len());
        for w in &self.workers {
            let (f, tx) = (f.clone(), tx.clone());
            let job: Job = Box::new(move |info: &WorkerInfo| {
                let r = catch_unwind(AssertUnwindSafe(|| f(info)));
                let _ = tx.send((info.index, r));
            });
            w.jobs.send(job).map_err(|_| {
                Error::thread_lost(
                    format!("latency thread {}", w.info.index),
                    format!("latency thread {} has exited", w.info.index),
                )
            })?;
        }
        drop(tx);
        let mut out: Vec<Option<R>> = (0..self.workers.len()).map(|_| None).collect();
        let deadline = Deadline::after(timeout);
        let mut first_panic = None;
        for _ in 0..self.workers.len() {
            match rx.recv_timeout(deadline.remaining()) {
                Ok((i, Ok(r))) => out[i] = Some(r),
                Ok((i, Err(p))) => {
                    first_panic.get_or_insert(Error::LatencyThreadPanicked {
                        thread: i,
                        cpu: self.workers[i].info.pinned_cpu,
                        message: crate::panic_message(p.as_ref()),
                    });
                    out[i] = None;
                }
                Err(_) => {
                    let missing: Vec<usize> =
                        (0..out.len()).filter(|&i| out[i].is_none()).collect();
                    return Err(Error::Stalled {
                        side: Side::Host,
                        waiting_for: format!("latency thread(s) {missing:?} to finish a job"),
                        waited_ms: deadline.waited_ms(),
                        detail: String::new(),
                    });
                }
            }
        }
        if let Some(e) = first_panic {
            return Err(e);
        }
        Ok(out
            .into_iter()
            .map(|r| r.expect("every thread answered"))
            .collect())
    }

    /// Runs `f` once on every thread, letting it borrow from the caller, and returns the
    /// results in thread order.
    ///
    /// Unlike [`LatencyPool::broadcast`], this wait has no time bound: `f` borrows the caller's
    /// data, so the call cannot return while any thread may still use it. Its liveness check is
    /// structural: every job ends by returning or panicking (panics are caught and returned as
    /// [`Error::LatencyThreadPanicked`]), and a job that cannot be delivered is dropped unrun.
    /// Use it for work that terminates (a batch), not for waits on other parties.
    pub fn broadcast_scoped<R, F>(&self, f: F) -> Result<Vec<R>>
    where
        R: Send,
        F: Fn(&WorkerInfo) -> R + Sync,
    {
        let queues: Vec<&Sender<Job>> = self.workers.iter().map(|w| &w.jobs).collect();
        let out = sys::run_scoped(&queues, &f);
        let mut results = Vec::with_capacity(out.len());
        for (i, r) in out.into_iter().enumerate() {
            match r {
                Some(Ok(v)) => results.push(v),
                Some(Err(p)) => {
                    return Err(Error::LatencyThreadPanicked {
                        thread: i,
                        cpu: self.workers[i].info.pinned_cpu,
                        message: crate::panic_message(p.as_ref()),
                    })
                }
                None => {
                    return Err(Error::thread_lost(
                        format!("latency thread {i}"),
                        format!("latency thread {i} has exited"),
                    ))
                }
            }
        }
        Ok(results)
    }

    /// Runs `f` on thread `index` and waits (bounded) for its result.
    pub fn run_on<R, F>(&self, index: usize, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&WorkerInfo) -> R + Send + 'static,
    {
        let w = self.workers.get(index).ok_or_else(|| {
            Error::out_of_range(
                "latency thread",
                index,
                format!("does not exist (pool of {})", self.workers.len()),
            )
        })?;
        let (tx, rx) = channel::bounded(1);
        let job: Job = Box::new(move |info: &WorkerInfo| {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(|| f(info))));
        });
        w.jobs.send(job).map_err(|_| {
            Error::thread_lost(
                format!("latency thread {index}"),
                format!("latency thread {index} has exited"),
            )
        })?;
        match rx.recv_timeout(self.timeout) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(p)) => Err(Error::LatencyThreadPanicked {
                thread: index,
                cpu: w.info.pinned_cpu,
                message: crate::panic_message(p.as_ref()),
            }),
            Err(_) => Err(Error::Stalled {
                side: Side::Host,
                waiting_for: format!("latency thread {index} to finish a job"),
                waited_ms: self.timeout.as_millis() as u64,
                detail: String::new(),
            }),
        }
    }
}

fn worker_loop(jobs: Receiver<Job>, info: WorkerInfo) {
    for job in jobs {
        job(&info);
    }
}

impl Drop for LatencyPool {
    fn drop(&mut self) {
        let handles: Vec<_> = self
            .workers
            .drain(..)
            .filter_map(|mut w| {
                drop(w.jobs);
                w.handle.take()
            })
            .collect();
        // Join threads that finish within the bound; a thread stuck in a job is detached
        // rather than hanging the caller.
        let deadline = Deadline::after(self.timeout.min(Duration::from_secs(5)));
        for h in handles {
            while !h.is_finished() && !deadline.expired() {
                std::thread::sleep(Duration::from_millis(1));
            }
            if h.is_finished() {
                let _ = h.join();
            } else {
                eprintln!("asym: a latency thread is still busy; detaching it");
            }
        }
    }
}
