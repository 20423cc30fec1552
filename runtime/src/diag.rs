//! Probes of the runtime's mechanisms, shared by the `devices` example and the runtime
//! benchmarks: SVM round trips, launch + finish latency, map + unmap cost, host/device
//! ping-pong on the fine transport, and the echo service behind the signal ring.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::backoff::{Backoff, Deadline};
use crate::error::{Error, Result, Side};
use crate::kernel::{Kernel, Launch, Queue};
use crate::runtime::Runtime;
use crate::signal::DeviceService;
use crate::sys::SvmBuffer;
use crate::transport::Transport;

/// Writes `n` pseudo-random words to SVM, adds one to each in a kernel, reads them back and
/// checks every word. Returns the time of the whole round trip.
pub fn svm_round_trip(rt: &Runtime, n: usize, seed: u32) -> Result<Duration> {
    let start = Instant::now();
    let mut buf = rt.alloc::<u32>(n)?;
    let mut x = seed | 1;
    let data: Vec<u32> = (0..n)
        .map(|_| {
            // xorshift32: enough to make every word distinct-ish and checkable.
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
        .collect();
    buf.write(&data)?;
    let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_add_one")?;
    k.arg_svm("data", &buf)?.arg_scalar("n", n as u32)?;
    k.launch(n.max(1), None)?.wait()?;
    let back = buf.read()?;
    if let Some(i) = (0..n).find(|&i| back[i] != data[i].wrapping_add(1)) {
        return Err(Error::device_lost(rt.profile().label(), format!(
            "SVM round trip on {} ({}) corrupted word {i}: wrote {}, device should make {}, host read {}",
            rt.profile().label(),
            rt.transport(),
            data[i],
            data[i].wrapping_add(1),
            back[i]
        )));
    }
    Ok(start.elapsed())
}

/// What uploading one buffer of host data to the device costs, by path (see [`upload_probe`]).
#[derive(Clone, Copy, Debug)]
pub struct UploadTimes {
    /// Bytes uploaded by each path.
    pub bytes: usize,
    /// Mapped path: the blocking `map_for_overwrite`.
    pub map: Duration,
    /// Mapped path: the host writing every byte of the mapping (first touch), on `threads`.
    pub first_write: Duration,
    /// Mapped path: writing every byte again in the same mapping (no first-touch cost).
    pub second_write: Duration,
    /// Mapped path: unmap until the transfer to the device finished.
    pub unmap_transfer: Duration,
    /// Copy-engine path: `SvmBuffer::copy_from_host` from an ordinary (pageable) `Vec`.
    pub copy_engine: Duration,
}

/// Times the two ways of getting `bytes` of host data into a device buffer: mapping the
/// buffer and writing into the mapping with `threads` threads, and the driver's copy from
/// ordinary host memory. Each path runs `rounds` times (after one untimed round); the fastest
/// round of each step is reported.
pub fn upload_probe(
    rt: &Runtime,
    bytes: usize,
    threads: usize,
    rounds: usize,
) -> Result<UploadTimes> {
    let words = (bytes / 4).max(1);
    let threads = threads.max(1);
    let mut buf = rt.alloc::<u32>(words)?;
    let source: Vec<u32> = (0..words as u32).collect();
    let fill = |dst: &mut [u32], v: u32| {
        let chunk = dst.len().div_ceil(threads);
        std::thread::scope(|s| {
            for part in dst.chunks_mut(chunk.max(1)) {
                s.spawn(move || part.fill(v));
            }
        });
    };
    let mut best = UploadTimes {
        bytes: words * 4,
        map: Duration::MAX,
        first_write: Duration::MAX,
        second_write: Duration::MAX,
        unmap_transfer: Duration::MAX,
        copy_engine: Duration::MAX,
    };
    for round in 0..=rounds.max(1) {
        let keep = |slot: &mut Duration, d: Duration| {
            if round > 0 {
                *slot = (*slot).min(d);
            }
        };
        let t = Instant::now();
        let mut map = buf.map_for_overwrite()?;
        keep(&mut best.map, t.elapsed());
        let t = Instant::now();
        fill(&mut map, round as u32);
        keep(&mut best.first_write, t.elapsed());
        let t = Instant::now();
        fill(&mut map, round as u32 + 1);
        keep(&mut best.second_write, t.elapsed());
        let t = Instant::now();
        map.unmap()?;
        rt.finish()?; // the buffer's maps go to the main queue
        keep(&mut best.unmap_transfer, t.elapsed());
        let mut probe = buf.map()?;
        if probe[words - 1] != round as u32 + 1 {
            return Err(Error::device_lost(
                rt.profile().label(),
                format!(
                    "upload probe: the buffer holds {} after writing {}",
                    probe[words - 1],
                    round + 1
                ),
            ));
        }
        probe[0] = 0;
        probe.unmap()?;
        let t = Instant::now();
        buf.copy_from_host(0, &source)?;
        keep(&mut best.copy_engine, t.elapsed());
    }
    let back = buf.read()?;
    if back != source {
        return Err(Error::device_lost(
            rt.profile().label(),
            "upload probe: the copy engine's upload did not arrive intact",
        ));
    }
    Ok(best)
}

/// An empty kernel, to time launch + finish.
pub struct LaunchProbe {
    kernel: Kernel,
    _buf: SvmBuffer<u32>,
}

impl LaunchProbe {
    /// Builds the probe (and the runtime program, once).
    pub fn new(rt: &Runtime) -> Result<Self> {
        let buf = rt.alloc::<u32>(1)?;
        let mut kernel = rt.kernel(&asym_kernels::RUNTIME, "asym_noop")?;
        kernel.arg_svm("data", &buf)?;
        Ok(LaunchProbe { kernel, _buf: buf })
    }

    /// One launch of one work-item, waited for.
    pub fn launch_finish(&mut self) -> Result<()> {
        self.kernel.launch(1, None)?.wait()
    }
}

/// The access a [`ChaseProbe`] chains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChaseAccess {
    /// A volatile load.
    Load,
    /// An atomic minimum that leaves the word as it is and returns it.
    AtomicMin,
}

/// One random cycle through `words` words of SVM, followed link by link by one work-item
/// (`asym_chase`): each link's address is the previous link's value, so the time per link is
/// the latency of one dependent global-memory access on the device.
pub struct ChaseProbe {
    device: String,
    kernel: Kernel,
    next: Vec<u32>,
    out: SvmBuffer<u32>,
    _cycle: SvmBuffer<u32>,
}

impl ChaseProbe {
    /// Links a random cycle through `words` words (at least 2, below 2^32; Sattolo's
    /// shuffle, so every word is on the one cycle) and writes it to SVM.
    pub fn new(rt: &Runtime, words: usize, seed: u64) -> Result<Self> {
        if !(2..u32::MAX as usize).contains(&words) {
            return Err(Error::InvalidArgument(format!(
                "a chase through {words} words: it takes 2 to 2^32 - 2"
            )));
        }
        let mut next: Vec<u32> = (0..words as u32).collect();
        let mut x = seed | 1;
        for i in (1..words).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            next.swap(i, (x % i as u64) as usize);
        }
        let mut cycle = rt.alloc::<u32>(words)?;
        cycle.write(&next)?;
        let out = rt.alloc::<u32>(1)?;
        let mut kernel = rt.kernel(&asym_kernels::RUNTIME, "asym_chase")?;
        kernel.arg_svm("next", &cycle)?.arg_svm("out", &out)?;
        Ok(ChaseProbe {
            device: rt.profile().label(),
            kernel,
            next,
            out,
            _cycle: cycle,
        })
    }

    /// One launch following `links` links with `access`, waited for.
    pub fn follow(&mut self, access: ChaseAccess, links: u32) -> Result<()> {
        self.kernel
            .arg_scalar("steps", links)?
            .arg_scalar("atomic", u32::from(access == ChaseAccess::AtomicMin))?;
        self.kernel.launch(1, None)?.wait()
    }

    /// Checks that the last [`follow`](Self::follow) of `links` links ended where the cycle
    /// leads.
    pub fn check(&mut self, links: u32) -> Result<()> {
        let mut want = 0u32;
        for _ in 0..links {
            want = self.next[want as usize];
        }
        let got = self.out.read()?[0];
        if got != want {
            return Err(Error::device_lost(
                self.device.clone(),
                format!(
                    "{links} links of the chase cycle end at {want}; the device ended at {got}"
                ),
            ));
        }
        Ok(())
    }

    /// Nanoseconds per link: the median time of `samples` launches of `links` + 1,000 links
    /// less that of launches of 1,000, over `links` (the launch's own cost cancels), each
    /// length's end checked.
    pub fn ns_per_link(&mut self, access: ChaseAccess, links: u32, samples: usize) -> Result<f64> {
        let mut median = |n: u32| -> Result<f64> {
            let s = sample(1, samples, || self.follow(access, n))?;
            self.check(n)?;
            Ok(s.median_us)
        };
        let short = median(1_000)?;
        let long = median(1_000 + links)?;
        Ok((long - short) * 1e3 / f64::from(links.max(1)))
    }
}

/// Grid barriers over one work-group per compute unit (`asym_grid_barriers`): what a kernel
/// that runs many steps in one launch, as near-far's resident search does, pays a step.
pub struct GridBarrierProbe {
    device: String,
    kernel: Kernel,
    ctl: SvmBuffer<u32>,
    groups: usize,
    wg: usize,
    /// The barrier counter's value when the next launch starts.
    base: u32,
}

impl GridBarrierProbe {
    /// A probe launching `groups` groups (`None`: one per compute unit) of `wg` work-items
    /// (at most the device's).
    pub fn new(rt: &Runtime, groups: Option<usize>, wg: usize) -> Result<Self> {
        let profile = rt.profile();
        let wg = wg.clamp(1, profile.max_work_group_size.max(1));
        let groups = groups
            .unwrap_or(profile.compute_units as usize)
            .clamp(1, u32::MAX as usize / wg);
        let ctl = rt.alloc::<u32>(3)?;
        let mut kernel = rt.kernel(&asym_kernels::RUNTIME, "asym_grid_barriers")?;
        kernel.arg_svm("ctl", &ctl)?;
        Ok(GridBarrierProbe {
            device: profile.label(),
            kernel,
            ctl,
            groups,
            wg,
            base: 0,
        })
    }

    /// Work-groups per launch.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// One launch passing `count` barriers, waited for.
    pub fn pass(&mut self, count: u32) -> Result<()> {
        self.kernel
            .arg_scalar("count", count)?
            .arg_scalar("base", self.base)?;
        self.kernel
            .launch(self.groups * self.wg, Some(self.wg))?
            .wait()?;
        self.base = self
            .base
            .wrapping_add(count.wrapping_mul(self.groups as u32));
        Ok(())
    }

    /// Checks that the last [`pass`](Self::pass) of `count` barriers passed them all: an
    /// [`Error::Unsupported`] when a group gave up waiting (the groups were not all resident
    /// at once).
    pub fn check(&mut self, count: u32) -> Result<()> {
        let ctl = self.ctl.read()?;
        if ctl[1] != 0 || ctl[2] != count {
            return Err(Error::Unsupported {
                device: self.device.clone(),
                what: format!(
                    "pass {count} grid barriers over {} groups ({} passed before a group gave up \
                     waiting)",
                    self.groups, ctl[2]
                ),
                lacks: "one resident work-group per compute unit".into(),
            });
        }
        Ok(())
    }

    /// Microseconds per barrier: the median time of `samples` launches of `count` + 100
    /// barriers less that of launches of 100, over `count`, each length checked.
    pub fn us_per_barrier(&mut self, count: u32, samples: usize) -> Result<f64> {
        let mut median = |n: u32| -> Result<f64> {
            let s = sample(1, samples, || self.pass(n))?;
            self.check(n)?;
            Ok(s.median_us)
        };
        let short = median(100)?;
        let long = median(100 + count)?;
        Ok((long - short) / f64::from(count.max(1)))
    }
}

/// A buffer to time map + unmap (blocking map on coarse SVM, bookkeeping only on fine).
pub struct MapProbe {
    buf: SvmBuffer<u32>,
}

impl MapProbe {
    /// A probe over `words` words of the transport's SVM.
    pub fn new(rt: &Runtime, words: usize) -> Result<Self> {
        Ok(MapProbe {
            buf: rt.alloc::<u32>(words)?,
        })
    }

    /// Maps, touches one word, unmaps.
    pub fn map_unmap(&mut self) -> Result<()> {
        let mut m = self.buf.map()?;
        m[0] = m[0].wrapping_add(1);
        m.unmap()
    }
}

/// Host ↔ running-kernel ping-pong through one SVM word (fine transport only).
pub struct PingPong {
    flag: SvmBuffer<u32>,
    control: SvmBuffer<u32>,
    launch: Option<Launch>,
    round: u32,
    rounds: u32,
    timeout: Duration,
    _queue: Queue,
}

impl PingPong {
    /// Launches the ping-pong kernel for `rounds` rounds on its own queue.
    pub fn start(rt: &Runtime, rounds: u32) -> Result<Self> {
        if rt.transport() != Transport::Fine {
            return Err(Error::Unsupported {
                device: rt.profile().label(),
                what: "ping-pong with a running kernel".into(),
                lacks: "the fine transport (a running kernel and the host do not see each other's writes on coarse SVM)".into(),
            });
        }
        if rounds == 0 || rounds > u32::MAX / 2 {
            return Err(Error::out_of_range(
                "ping-pong rounds",
                rounds,
                "1 to 2^31 - 1",
            ));
        }
        let flag = rt.alloc::<u32>(1)?;
        let control = rt.alloc::<u32>(16)?;
        let mut k = rt.kernel(&asym_kernels::RUNTIME, "asym_pingpong")?;
        k.arg_svm("flag", &flag)?
            .arg_svm("ctl", &control)?
            .arg_scalar("rounds", rounds)?
            .arg_scalar("max_spins", u32::MAX)?;
        let queue = rt.new_queue()?;
        let launch = k.launch_on(&queue, 1, Some(1))?;
        Ok(PingPong {
            flag,
            control,
            launch: Some(launch),
            round: 0,
            rounds,
            timeout: rt.timeout(),
            _queue: queue,
        })
    }

    /// One round: the host stores `2i-1`, waits (bounded) for the kernel's `2i`.
    pub fn round(&mut self) -> Result<()> {
        if self.round >= self.rounds {
            return Err(Error::too_large(
                "ping-pong rounds",
                self.round as u64 + 1,
                self.rounds,
            ));
        }
        self.round += 1;
        let word = &self.flag.atomics()?[0];
        word.store(2 * self.round - 1, Ordering::Release);
        let deadline = Deadline::after(self.timeout);
        let mut backoff = Backoff::new();
        let mut polls = 0u32;
        while word.load(Ordering::Acquire) != 2 * self.round {
            polls += 1;
            // Pure spinning first: the answer usually comes within a microsecond.
            if polls > 2000 {
                backoff.snooze();
                if deadline.expired() {
                    return Err(Error::Stalled {
                        side: Side::Device,
                        waiting_for: format!("answer ping-pong round {}", self.round),
                        waited_ms: deadline.waited_ms(),
                        detail: String::new(),
                    });
                }
            } else {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }

    /// Stops the kernel (early if rounds remain) and waits for it.
    pub fn finish(mut self) -> Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> Result<()> {
        if let Some(mut l) = self.launch.take() {
            self.control.atomics()?[0].store(1, Ordering::Release);
            if let Err(e) = l.wait_for(self.timeout) {
                l.abandon();
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("asym: stopping ping-pong: {e}");
        }
    }
}

/// Starts the runtime's echo service (`asym_echo`): replies `(lo + 1, hi)` to `(lo, hi)`.
pub fn echo_service(rt: &Runtime, capacity: u32) -> Result<DeviceService> {
    let k = rt.kernel(&asym_kernels::RUNTIME, "asym_echo")?;
    DeviceService::start(rt, k, capacity, 1, Some(1))
}

/// Summary of latency samples, microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// Samples.
    pub n: usize,
    /// Median.
    pub median_us: f64,
    /// 10th percentile.
    pub p10_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
}

impl Summary {
    /// Summarises durations (at least one).
    pub fn of(samples: &mut [Duration]) -> Summary {
        assert!(!samples.is_empty(), "no samples");
        samples.sort_unstable();
        let at =
            |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
        Summary {
            n: samples.len(),
            median_us: at(0.5),
            p10_us: at(0.1),
            p90_us: at(0.9),
        }
    }
}

/// Times `n` runs of `f` after `warmup` untimed ones.
pub fn sample(warmup: usize, n: usize, mut f: impl FnMut() -> Result<()>) -> Result<Summary> {
    for _ in 0..warmup {
        f()?;
    }
    let mut v = Vec::with_capacity(n);
    for _ in 0..n.max(1) {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed());
    }
    Ok(Summary::of(&mut v))
}
