//! Device services: a kernel that takes messages from a to-device ring and answers on a
//! from-device ring, behind one API on both transports.
//!
//! - **Fine**: the kernel is launched once, persistently, on its own queue, and host threads
//!   push and pop through SVM atomics while it runs. `stop` raises the control block's stop
//!   word; the kernel returns.
//! - **Coarse**: the host cannot see a running kernel's writes, so a pump thread owns the SVM
//!   rings and delivers at kernel boundaries: it moves staged messages into the mapped
//!   to-device ring, launches one pass of the kernel, then moves replies out of the mapped
//!   from-device ring into a host queue. Senders and receivers use bounded host queues.
//!
//! # Kernel contract
//! `kernel void k(__global uint *to_dev, __global uint *from_dev, __global uint *ctl, ...)`:
//! arguments 0..=2 are set by the service, later ones by the caller before `start`. The kernel
//! handles messages while `ctl[ASYM_CTL_PERSISTENT]` says so and `ctl[ASYM_CTL_STOP]` is 0, and
//! returns when the ring is empty in a one-pass (coarse) launch. It must take a request only
//! when its reply has room, so nothing is dropped. See `asym_echo` in `kernels/runtime.cl`.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::backoff::{poll_within, Backoff};
use crate::error::{Error, Result, Side};
use crate::kernel::{Kernel, Launch, Queue};
use crate::runtime::Runtime;
use crate::signal::{DeviceRing, SignalQueue};
use crate::sys::SvmBuffer;
use crate::transport::Transport;

/// Control block words (must match `ASYM_CTL_*` in `kernels/common.cl`).
const CTL_STOP: usize = 0;
const CTL_PERSISTENT: usize = 1;
const CTL_PROGRESS: usize = 2;
const CTL_WORDS: usize = 16;

/// What a service did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceStats {
    /// Messages the device handled.
    pub handled: u64,
    /// Kernel launches (1 on the fine transport).
    pub launches: u64,
}

/// A kernel serving messages; see the module docs. `&self` methods may be called from many
/// threads at once.
pub struct DeviceService {
    name: String,
    timeout: Duration,
    backend: Backend,
}

enum Backend {
    Fine(Fine),
    Coarse(Coarse),
}

struct Fine {
    to_dev: DeviceRing,
    from_dev: DeviceRing,
    control: SvmBuffer<u32>,
    launch: Mutex<Option<Launch>>,
    exited: AtomicBool,
    _queue: Queue,
}

struct Coarse {
    shared: Arc<CoarseShared>,
    pump: Option<JoinHandle<()>>,
}

struct CoarseShared {
    inbox: SignalQueue<u64>,
    outbox: SignalQueue<u64>,
    stop: AtomicBool,
    failure: Mutex<Option<String>>,
    launches: AtomicU64,
    handled: AtomicU64,
}

impl std::fmt::Debug for DeviceService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceService")
            .field("name", &self.name)
            .finish()
    }
}

impl DeviceService {
    /// Starts `kernel` as a service with rings of `capacity` messages (a power of two),
    /// launched with `global` work-items in groups of `local`. The kernel's parameter table
    /// names the rings and the control words `to_dev`, `from_dev` and `ctl`.
    pub fn start(
        rt: &Runtime,
        mut kernel: Kernel,
        capacity: u32,
        global: usize,
        local: Option<usize>,
    ) -> Result<Self> {
        let name = kernel.name().to_string();
        let to_dev = DeviceRing::new(rt, capacity)?;
        let from_dev = DeviceRing::new(rt, capacity)?;
        let mut control = rt.alloc::<u32>(CTL_WORDS)?;
        {
            let mut ctl = control.map()?;
            ctl[CTL_PERSISTENT] = u32::from(rt.transport() == Transport::Fine);
            ctl.unmap()?;
        }
        kernel
            .arg_svm("to_dev", to_dev.buffer())?
            .arg_svm("from_dev", from_dev.buffer())?
            .arg_svm("ctl", &control)?;
        let backend = match rt.transport() {
            Transport::Fine => {
                let queue = rt.new_queue()?;
                let launch = kernel.launch_on(&queue, global, local)?;
                Backend::Fine(Fine {
                    to_dev,
                    from_dev,
                    control,
                    launch: Mutex::new(Some(launch)),
                    exited: AtomicBool::new(false),
                    _queue: queue,
                })
            }
            Transport::Coarse => {
                let cap = capacity as usize;
                let shared = Arc::new(CoarseShared {
                    inbox: SignalQueue::new(
                        format!("{name} inbox"),
                        cap,
                        Side::Host,
                        Side::Device,
                    )?,
                    outbox: SignalQueue::new(
                        format!("{name} outbox"),
                        cap,
                        Side::Device,
                        Side::Host,
                    )?,
                    stop: AtomicBool::new(false),
                    failure: Mutex::new(None),
                    launches: AtomicU64::new(0),
                    handled: AtomicU64::new(0),
                });
                let pump = Pump {
                    shared: shared.clone(),
                    kernel,
                    to_dev,
                    from_dev,
                    _control: control,
                    global,
                    local,
                    timeout: rt.timeout(),
                };
                let handle = std::thread::Builder::new()
                    .name(format!("asym-pump-{name}"))
                    .spawn(move || pump.run())
                    .map_err(|e| {
                        Error::thread_lost(
                            "the coarse pump thread",
                            format!("cannot start the coarse pump thread: {e}"),
                        )
                    })?;
                Backend::Coarse(Coarse {
                    shared,
                    pump: Some(handle),
                })
            }
        };
        Ok(DeviceService {
            name,
            timeout: rt.timeout(),
            backend,
        })
    }

    /// The transport this service runs on.
    pub fn transport(&self) -> Transport {
        match self.backend {
            Backend::Fine(_) => Transport::Fine,
            Backend::Coarse(_) => Transport::Coarse,
        }
    }

    /// Sends a message, waiting at most the runtime's timeout while the ring is full.
    pub fn send(&self, msg: u64) -> Result<()> {
        self.send_timeout(msg, self.timeout)
    }

    /// Receives a reply, waiting at most the runtime's timeout.
    pub fn recv(&self) -> Result<u64> {
        self.recv_timeout(self.timeout)
    }

    /// Sends without waiting: `Ok(false)` when the ring is full (back-pressure).
    pub fn try_send(&self, msg: u64) -> Result<bool> {
        match &self.backend {
            Backend::Fine(f) => Ok(f.to_dev.try_push(msg)?.is_ok()),
            Backend::Coarse(c) => {
                c.shared.check()?;
                let sent = c.shared.inbox.try_send(msg).is_ok();
                if sent {
                    if let Some(p) = &c.pump {
                        p.thread().unpark();
                    }
                }
                Ok(sent)
            }
        }
    }

    /// Receives without waiting.
    pub fn try_recv(&self) -> Result<Option<u64>> {
        match &self.backend {
            Backend::Fine(f) => f.from_dev.try_pop(),
            Backend::Coarse(c) => match c.shared.outbox.try_recv() {
                Some(m) => Ok(Some(m)),
                None => c.shared.check().map(|()| None),
            },
        }
    }

    /// Sends, waiting at most `timeout` for room.
    pub fn send_timeout(&self, msg: u64, timeout: Duration) -> Result<()> {
        self.wait(
            timeout,
            "take messages from the full to-device ring",
            || self.try_send(msg).map(|ok| ok.then_some(())),
        )
    }

    /// Receives, waiting at most `timeout` for a reply.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<u64> {
        self.wait(timeout, "reply on the from-device ring", || self.try_recv())
    }

    fn wait<T>(
        &self,
        timeout: Duration,
        waiting_for: &str,
        mut attempt: impl FnMut() -> Result<Option<T>>,
    ) -> Result<T> {
        let mut polls = 0u32;
        poll_within(
            timeout,
            || {
                if let Some(v) = attempt()? {
                    return Ok(Some(v));
                }
                polls = polls.wrapping_add(1);
                if polls % 64 == 0 {
                    self.check_alive()?;
                }
                Ok(None)
            },
            |waited_ms| Error::Stalled {
                side: Side::Device,
                waiting_for: format!("{waiting_for} of service {}", self.name),
                waited_ms,
                detail: format!("device handled {} messages so far", self.progress()),
            },
        )
    }

    /// Liveness: an error if the service kernel exited or the pump failed (for callers that
    /// poll with [`DeviceService::try_recv`] under their own deadline).
    pub fn check_alive(&self) -> Result<()> {
        match &self.backend {
            Backend::Fine(f) => {
                if f.exited.load(Ordering::Acquire) {
                    return Err(Error::device_lost(
                        self.name.clone(),
                        format!("service kernel {} has exited", self.name),
                    ));
                }
                if let Ok(mut guard) = f.launch.try_lock() {
                    if let Some(l) = guard.as_mut() {
                        if l.is_complete()? {
                            f.exited.store(true, Ordering::Release);
                            return Err(Error::device_lost(
                                self.name.clone(),
                                format!("service kernel {} has exited", self.name),
                            ));
                        }
                    }
                }
                Ok(())
            }
            Backend::Coarse(c) => c.shared.check(),
        }
    }

    /// Messages the device has handled so far (its liveness counter).
    pub fn progress(&self) -> u64 {
        match &self.backend {
            Backend::Fine(f) => f
                .control
                .atomics()
                .map(|a: &[AtomicU32]| a[CTL_PROGRESS].load(Ordering::Acquire) as u64)
                .unwrap_or(0),
            Backend::Coarse(c) => c.shared.handled.load(Ordering::Acquire),
        }
    }

    /// Stops the service: the kernel returns (fine) or the pump ends (coarse). Messages not
    /// yet received stay undelivered.
    pub fn stop(mut self) -> Result<ServiceStats> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<ServiceStats> {
        match &mut self.backend {
            Backend::Fine(f) => {
                let atomics = f.control.atomics()?;
                atomics[CTL_STOP].store(1, Ordering::Release);
                let launch = f.launch.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(mut l) = launch {
                    if let Err(e) = l.wait_for(self.timeout) {
                        l.abandon();
                        return Err(e);
                    }
                }
                Ok(ServiceStats {
                    handled: atomics[CTL_PROGRESS].load(Ordering::Acquire) as u64,
                    launches: 1,
                })
            }
            Backend::Coarse(c) => {
                c.shared.stop.store(true, Ordering::Release);
                if let Some(h) = c.pump.take() {
                    h.thread().unpark();
                    if h.join().is_err() {
                        return Err(Error::thread_lost(
                            format!("the coarse pump of {}", self.name),
                            format!("the coarse pump of {} panicked", self.name),
                        ));
                    }
                }
                if let Some(f) = c
                    .shared
                    .failure
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
                {
                    return Err(Error::device_lost(self.name.clone(), f));
                }
                Ok(ServiceStats {
                    handled: c.shared.handled.load(Ordering::Acquire),
                    launches: c.shared.launches.load(Ordering::Acquire),
                })
            }
        }
    }
}

impl Drop for DeviceService {
    fn drop(&mut self) {
        let running = match &self.backend {
            Backend::Fine(f) => f.launch.lock().map(|l| l.is_some()).unwrap_or(false),
            Backend::Coarse(c) => c.pump.is_some(),
        };
        if running {
            if let Err(e) = self.stop_inner() {
                eprintln!("asym: stopping service {}: {e}", self.name);
            }
        }
    }
}

impl CoarseShared {
    fn check(&self) -> Result<()> {
        match &*self.failure.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(f) => Err(Error::device_lost("a coarse service kernel", f.clone())),
            None if self.stop.load(Ordering::Acquire) => Err(Error::device_lost(
                "a coarse service kernel",
                "the service was stopped",
            )),
            None => Ok(()),
        }
    }
}

/// The coarse transport's pump: owns the SVM rings and moves messages at kernel boundaries.
struct Pump {
    shared: Arc<CoarseShared>,
    kernel: Kernel,
    to_dev: DeviceRing,
    from_dev: DeviceRing,
    _control: SvmBuffer<u32>,
    global: usize,
    local: Option<usize>,
    timeout: Duration,
}

impl Pump {
    fn run(mut self) {
        if let Err(e) = self.pump() {
            *self
                .shared
                .failure
                .lock()
                .unwrap_or_else(|p| p.into_inner()) =
                Some(format!("coarse pump of {}: {e}", self.kernel.name()));
        }
    }

    fn pump(&mut self) -> Result<()> {
        let shared = self.shared.clone();
        let (mut pending_in, mut pending_out) = (0u32, 0u32);
        let mut idle = Backoff::new();
        while !shared.stop.load(Ordering::Acquire) {
            if shared.inbox.is_empty() && pending_in == 0 && pending_out == 0 {
                std::thread::park_timeout(Duration::from_micros(200));
                continue;
            }
            let mut moved = 0u64;
            // Hand staged messages to the device (the host owns the ring while it is mapped).
            pending_in = self.to_dev.with_mapped(|ring| {
                while ring.room() > 0 {
                    let Some(m) = shared.inbox.try_recv() else {
                        break;
                    };
                    ring.try_push(m)
                        .expect("room was checked and the pump is the only producer");
                    moved += 1;
                }
                ring.len()
            })?;
            if pending_in > 0 {
                self.kernel
                    .launch(self.global, self.local)?
                    .wait_for(self.timeout)?;
                shared.launches.fetch_add(1, Ordering::AcqRel);
            }
            // Collect replies, as many as the outbox has room for (nothing is dropped).
            pending_out = self.from_dev.with_mapped(|ring| {
                while shared.outbox.len() < shared.outbox.capacity() {
                    let Some(m) = ring.try_pop() else { break };
                    shared
                        .outbox
                        .try_send(m)
                        .expect("room was checked and the pump is the only producer");
                    shared.handled.fetch_add(1, Ordering::AcqRel);
                    moved += 1;
                }
                ring.len()
            })?;
            if moved > 0 {
                idle.reset();
            } else {
                idle.snooze();
            }
        }
        Ok(())
    }
}
