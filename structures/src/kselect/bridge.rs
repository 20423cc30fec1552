//! Cooperative by kind: k-selection on ad-heaps ([`crate::adheap`]), every update-key split
//! between the two kinds of cores.
//!
//! A *slot* holds the ad-heap of one sub-list at a time. Its latency side (a pinned CPU
//! thread) builds the heap from the first k keys, filters the sub-list for the next key below
//! the root (the cheap, branchy part the CPU is good at) and writes it as the new root; the
//! device computes the bridge (the max-child walk, the wide part); a latency thread applies the
//! bridge and filters again. When a sub-list has no key left below its root, the root is the
//! answer and the slot takes the next sub-list from the selection's claim counter.
//!
//! Two schedules:
//! - **Live** (fine transport): `adheap_service` runs persistently; slot indices travel to it
//!   and back through the runtime's signal rings ([`DeviceService`]). Any latency thread may
//!   take any answered slot, so the CPU side balances itself. At most as many slots as the
//!   rings hold are in flight, so a send never finds a full ring.
//! - **Pipelined** (any transport, the only one on coarse SVM): the slots are split in two
//!   halves; while one launch of `adheap_bridges` computes the bridges of one half, the
//!   latency threads apply the other half's bridges and write its new roots (double buffering).
//!   Each heap has a host copy (the latency threads') and a device copy (the kernel's), kept
//!   equal by applying the same bridge to both: mapping shared heaps at every hand-off would
//!   copy all of them over the bus on coarse SVM (slower on the GPU machine), and on fine
//!   SVM (PoCL) the two ways ran equally fast.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use asym_runtime::backoff::{Backoff, Deadline};
use asym_runtime::signal::{pack, unpack, DeviceService};
use asym_runtime::{
    DeviceKind, Error, Kernel, LatencyPool, Launch, Result, Runtime, Side, SvmBuffer,
};

use super::{Job, Key};
use crate::adheap::{AdHeapLayout, AtomicSlot, SlotWords};
use crate::dheap::DHeap;

/// Slots in flight on the live schedule (bounded by the rings; enough to cover the round trip).
const LIVE_SLOTS: usize = 1024;
/// Most slots per half on the pipelined schedule, and the most SVM they may take.
const PIPELINED_SLOTS: usize = 1 << 16;
const PIPELINED_BYTES: usize = 256 << 20;

/// What a bridge run did.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BridgeOutcome {
    /// Sub-lists finished.
    pub sublists: usize,
    /// Update-keys done through a device bridge.
    pub updates: u64,
    /// Kernel launches (1 on the live schedule).
    pub launches: usize,
}

/// Options of a bridge run.
#[derive(Clone, Copy, Debug)]
pub(super) struct BridgeOptions {
    pub d: usize,
    pub work_group: Option<usize>,
    /// Check every bridge against the rules and the heap after applying it (tests).
    pub checks: bool,
}

/// Which sub-list a slot works on and how far its filter has read.
#[derive(Clone, Copy, Debug)]
struct SlotState {
    sub: usize,
    cursor: usize,
}

/// The latency side of one selection, shared by both schedules.
struct Latency<'a, 'j, K> {
    job: &'a Job<'j, K>,
    layout: AdHeapLayout,
    checks: bool,
    finished: &'a AtomicUsize,
    updates: &'a AtomicU64,
}

impl<K: Key> Latency<'_, '_, K> {
    /// Step 1 of update-key: reads on from the cursor to the next key below the root and writes
    /// it as the new root. `true`: the slot goes to the device; `false`: the sub-list is done
    /// and its answer stored.
    fn advance<S: SlotWords + ?Sized>(&self, slot: &mut S, st: &mut SlotState) -> bool {
        let job = self.job;
        let list = &job.data[job.offs[st.sub]..job.offs[st.sub + 1]];
        let root = self.layout.root(slot);
        while st.cursor < list.len() {
            let v = list[st.cursor].to_ordered();
            st.cursor += 1;
            if v < root {
                self.layout.write_root(slot, v);
                return true;
            }
        }
        job.results[st.sub].store(root, Ordering::Relaxed);
        self.finished.fetch_add(1, Ordering::AcqRel);
        false
    }

    /// Claims sub-lists into the slot until one needs the device (`Some`), or none is left.
    fn refill<S: SlotWords + ?Sized>(
        &self,
        slot: &mut S,
        scratch: &mut Scratch,
    ) -> Result<Option<SlotState>> {
        let job = self.job;
        while let Some(r) = job.claims.claim(1) {
            let sub = r.start;
            let list = &job.data[job.offs[sub]..job.offs[sub + 1]];
            scratch.keys.clear();
            scratch
                .keys
                .extend(list[..job.k].iter().map(|x| x.to_ordered()));
            scratch.heap.rebuild_from(&scratch.keys);
            self.layout.build(slot, &scratch.heap)?;
            let mut st = SlotState { sub, cursor: job.k };
            if self.advance(slot, &mut st) {
                return Ok(Some(st));
            }
        }
        Ok(None)
    }

    /// Step 3 of update-key and what follows: applies the device's bridge, filters on, and
    /// refills the slot when its sub-list is done.
    fn after_bridge<S: SlotWords + ?Sized>(
        &self,
        slot: &mut S,
        state: &mut Option<SlotState>,
        scratch: &mut Scratch,
    ) -> Result<Next> {
        let k = self.job.k;
        if let Some(st) = state.as_mut() {
            if self.checks {
                self.layout.check_bridge(slot, k)?;
            }
            self.layout.apply_bridge(slot, k)?;
            self.updates.fetch_add(1, Ordering::Relaxed);
            if self.checks && !self.layout.is_valid(slot, k) {
                return Err(Error::corrupted(
                    "an ad-heap bridge",
                    format!(
                        "ad-heap of sub-list {} is not a heap after its bridge",
                        st.sub
                    ),
                ));
            }
            if self.advance(slot, st) {
                return Ok(Next::Device { fresh: false });
            }
        }
        *state = self.refill(slot, scratch)?;
        Ok(match state {
            Some(_) => Next::Device { fresh: true },
            None => Next::Idle,
        })
    }
}

/// A latency thread's reusable buffers for building heaps.
struct Scratch {
    keys: Vec<i32>,
    heap: DHeap<i32>,
}

impl Scratch {
    fn new(layout: &AdHeapLayout) -> Result<Self> {
        Ok(Scratch {
            keys: Vec::with_capacity(layout.capacity()),
            heap: DHeap::with_capacity(layout.d(), layout.capacity())?,
        })
    }
}

/// Where a slot goes after the latency side's turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    /// To the device, with a new root; `fresh`: it holds a newly built heap.
    Device { fresh: bool },
    /// Nowhere: its sub-list is done and none is left to claim.
    Idle,
}

/// Work-group size for the bridge walk: at least d (one child per work-item) and at least the
/// bridge's pairs (one pair per work-item); a warp on GPUs; at least 8 everywhere, because
/// PoCL 3.1 crashes on entry to the service kernel built for groups of 2 or 4 (a null
/// argument block, seen here with the ring-polling loop; groups of 8 and more run fine).
fn work_group(rt: &Runtime, layout: &AdHeapLayout, requested: Option<usize>) -> Result<usize> {
    let p = rt.profile();
    let need = layout
        .d()
        .max(layout.max_pairs().next_power_of_two())
        .max(8);
    let wg = match requested {
        Some(w) => w.max(need),
        None if p.kind == DeviceKind::Gpu => need.max(32),
        None => need.max(16),
    };
    rt.check_work_group(wg, "run the ad-heap bridge")?;
    Ok(wg)
}

fn program_options(layout: &AdHeapLayout, wg: usize) -> String {
    format!("{} -DWG={wg}", layout.cl_defines())
}

/// Tracks global progress for the bounded waits of the latency threads.
struct Liveness {
    seen: u64,
    deadline: Deadline,
}

impl Liveness {
    fn new(now: u64, rt: &Runtime) -> Self {
        Liveness {
            seen: now,
            deadline: Deadline::after(rt.timeout()),
        }
    }

    /// An error once `progress` has not moved for the runtime's timeout.
    fn check(&mut self, progress: u64, rt: &Runtime, what: &str) -> Result<()> {
        if progress != self.seen {
            *self = Liveness::new(progress, rt);
        } else if self.deadline.expired() {
            return Err(Error::Stalled {
                side: Side::Device,
                waiting_for: what.to_string(),
                waited_ms: self.deadline.waited_ms(),
                detail: format!("{progress} bridges applied so far"),
            });
        }
        Ok(())
    }
}

/// The live schedule (fine transport only).
pub(super) fn live<K: Key>(
    rt: &Runtime,
    pool: &LatencyPool,
    opts: BridgeOptions,
    job: &Job<'_, K>,
) -> Result<BridgeOutcome> {
    if rt.transport() != asym_runtime::Transport::Fine {
        return Err(Error::Unsupported {
            device: rt.profile().label(),
            what: "run the ad-heap bridge live (a persistent kernel sharing heaps with CPU threads)"
                .into(),
            lacks: "fine-grained SVM with atomics in use (this runtime uses the coarse transport; the pipelined schedule works there)".into(),
        });
    }
    let layout = AdHeapLayout::new(opts.d, job.k)?;
    let wg = work_group(rt, &layout, opts.work_group)?;
    let stride = layout.stride();
    let n = job.claims.n;
    let slots = n.clamp(1, LIVE_SLOTS);
    let groups = if rt.profile().kind == DeviceKind::Gpu {
        (rt.profile().compute_units as usize * 2).clamp(1, slots)
    } else {
        // A CPU device shares its cores with the latency threads: one spinning group is enough.
        1
    };
    let capacity = (slots as u32).next_power_of_two().max(2);
    let buf = rt.alloc::<i32>(slots * stride)?;
    let program = rt.program_with(&asym_kernels::ADHEAP, &program_options(&layout, wg))?;
    let mut kernel = Kernel::from_program(rt, &program, "adheap_service")?;
    kernel
        .arg_svm("slots", &buf)?
        .arg_scalar("stride", stride as u32)?
        .arg_scalar("len", job.k as u32)?;
    let service = DeviceService::start(rt, kernel, capacity, groups * wg, Some(wg))?;
    let finished = AtomicUsize::new(0);
    let updates = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let states: Vec<Mutex<Option<SlotState>>> = (0..slots).map(|_| Mutex::new(None)).collect();
    let worked = (|| -> Result<()> {
        let words = buf.atomics()?;
        let lat = Latency {
            job,
            layout,
            checks: opts.checks,
            finished: &finished,
            updates: &updates,
        };
        let results = pool.broadcast_scoped(|w| -> Result<()> {
            let run = || -> Result<()> {
                let mut scratch = Scratch::new(&lat.layout)?;
                let slot_of = |s: usize| AtomicSlot(&words[s * stride..(s + 1) * stride]);
                // Fill this thread's share of the slots.
                for s in (w.index..slots).step_by(w.threads.max(1)) {
                    let mut st = states[s].lock().unwrap_or_else(|p| p.into_inner());
                    *st = lat.refill(&mut slot_of(s), &mut scratch)?;
                    if st.is_some() {
                        service.send(pack(s as u32, 0))?;
                    }
                }
                let mut backoff = Backoff::new();
                let mut alive = Liveness::new(updates.load(Ordering::Relaxed), rt);
                let mut polls = 0u32;
                while finished.load(Ordering::Acquire) < n && !failed.load(Ordering::Relaxed) {
                    if let Some(msg) = service.try_recv()? {
                        let (s, _) = unpack(msg);
                        let s = s as usize;
                        if s >= slots {
                            return Err(Error::corrupted(
                                "an ad-heap bridge",
                                format!("the device answered slot {s}"),
                            ));
                        }
                        let mut st = states[s].lock().unwrap_or_else(|p| p.into_inner());
                        if lat.after_bridge(&mut slot_of(s), &mut st, &mut scratch)? != Next::Idle {
                            service.send(msg)?;
                        }
                        backoff.reset();
                        continue;
                    }
                    polls = polls.wrapping_add(1);
                    if polls % 64 == 0 {
                        service.check_alive()?;
                        alive.check(
                            updates.load(Ordering::Relaxed),
                            rt,
                            "ad-heap bridges from adheap_service",
                        )?;
                    }
                    backoff.snooze();
                }
                Ok(())
            };
            let r = run();
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            r
        })?;
        results.into_iter().collect()
    })();
    // Stop the service whatever happened, so its kernel never outlives the buffers.
    let stopped = service.stop();
    worked?;
    stopped?;
    Ok(BridgeOutcome {
        sublists: finished.load(Ordering::Acquire),
        updates: updates.load(Ordering::Relaxed),
        launches: 1,
    })
}

/// One latency thread's share of a half: its first slot's index, words and states.
type Part<'a> = (usize, &'a mut [i32], &'a mut [Option<SlotState>]);

/// One half of the pipelined schedule: the host copy of its heaps, the device copy, and the
/// small buffers that cross the bus at each hand-off.
struct Half {
    host: Vec<i32>,
    states: Vec<Option<SlotState>>,
    /// The device copy: only the kernel touches it (kept alive for the kernel's argument).
    _dev_slots: SvmBuffer<i32>,
    /// (slot, new root, fresh index) per work-group.
    work: SvmBuffer<u32>,
    /// The bridges, `1 + 2·max_pairs` words per work-group.
    out: SvmBuffer<i32>,
    kernel: Kernel,
    /// Staging for fresh heaps in power-of-two size classes (class c holds 2^c heaps), so a
    /// round with few new sub-lists copies little. Per half: a half maps its staging only after
    /// its own launch, the one that read it, has completed.
    staging: Vec<Option<SvmBuffer<i32>>>,
    /// The slots of the launch in flight, in work-group order.
    in_flight: Vec<u32>,
    launch: Option<Launch>,
}

/// The pipelined schedule (any transport): heaps mirrored, bridges replayed (see
/// `adheap_bridges` in `kernels/adheap.cl`); only work lists, fresh heaps and bridges
/// are copied.
pub(super) fn pipelined<K: Key>(
    rt: &Runtime,
    pool: &LatencyPool,
    opts: BridgeOptions,
    job: &Job<'_, K>,
) -> Result<BridgeOutcome> {
    let layout = AdHeapLayout::new(opts.d, job.k)?;
    let wg = work_group(rt, &layout, opts.work_group)?;
    let stride = layout.stride();
    let bridge_words = 1 + 2 * layout.max_pairs();
    let (k, pad) = (job.k, layout.pad());
    let n = job.claims.n;
    let per_half = n
        .div_ceil(2)
        .min(PIPELINED_SLOTS)
        .min((PIPELINED_BYTES / 2 / (stride * 4)).max(1))
        .max(1);
    let program = rt.program_with(&asym_kernels::ADHEAP, &program_options(&layout, wg))?;
    let mut halves = Vec::with_capacity(2);
    for _ in 0..2 {
        let dev_slots = rt.alloc::<i32>(per_half * stride)?;
        let work = rt.alloc::<u32>(3 * per_half)?;
        let out = rt.alloc::<i32>(per_half * bridge_words)?;
        let mut kernel = Kernel::from_program(rt, &program, "adheap_bridges")?;
        kernel
            .arg_svm("slots", &dev_slots)?
            .arg_svm("work", &work)?
            .arg_scalar("count", 0u32)?
            .arg_scalar("stride", stride as u32)?
            .arg_scalar("len", k as u32)?
            .arg_svm("out", &out)?;
        halves.push(Half {
            host: vec![0; per_half * stride],
            states: vec![None; per_half],
            _dev_slots: dev_slots,
            work,
            out,
            kernel,
            staging: Vec::new(),
            in_flight: Vec::new(),
            launch: None,
        });
    }
    let finished = AtomicUsize::new(0);
    let updates = AtomicU64::new(0);
    let lat = Latency {
        job,
        layout,
        checks: opts.checks,
        finished: &finished,
        updates: &updates,
    };
    let mut launches = 0;
    loop {
        let mut any = false;
        for half in halves.iter_mut() {
            if let Some(launch) = half.launch.take() {
                launch.wait()?;
            }
            if half.in_flight.is_empty() && job.claims.remaining() == 0 {
                continue; // drained: nothing to apply, nothing to claim
            }
            // The bridges of the launch that just completed, by slot.
            let mut bridge_of = vec![u32::MAX; per_half];
            let bridges = if half.in_flight.is_empty() {
                Vec::new()
            } else {
                let map = half.out.map_read()?;
                let v = map[..half.in_flight.len() * bridge_words].to_vec();
                map.unmap()?;
                v
            };
            for (g, &s) in half.in_flight.iter().enumerate() {
                bridge_of[s as usize] = g as u32;
            }
            let next = mirror_round(pool, &lat, half, stride, &bridge_of, &bridges, bridge_words)?;
            half.in_flight = next.iter().map(|&(s, _)| s).collect();
            if next.is_empty() {
                continue;
            }
            any = true;
            // Fresh heaps into the smallest staging class that holds them.
            let fresh: Vec<u32> = next.iter().filter(|(_, f)| *f).map(|&(s, _)| s).collect();
            if !fresh.is_empty() {
                let class = fresh.len().next_power_of_two().trailing_zeros() as usize;
                if half.staging.len() <= class {
                    half.staging.resize_with(class + 1, || None);
                }
                if half.staging[class].is_none() {
                    half.staging[class] = Some(rt.alloc::<i32>((1 << class) * k)?);
                }
                let buf = half.staging[class].as_mut().expect("made above");
                {
                    let mut map = buf.map_for_overwrite()?;
                    for (i, &s) in fresh.iter().enumerate() {
                        let src = s as usize * stride + pad;
                        map[i * k..(i + 1) * k].copy_from_slice(&half.host[src..src + k]);
                    }
                    map.unmap()?;
                }
                half.kernel.arg_svm("fresh", buf)?;
            } else {
                // No fresh heap this round: any buffer will do for the unused argument.
                half.kernel.arg_svm("fresh", &half.out)?;
            }
            {
                let mut map = half.work.map_for_overwrite()?;
                // Fresh slots take staging places in the order they were copied above.
                let mut staged = 0u32..;
                for (g, &(s, is_fresh)) in next.iter().enumerate() {
                    map[3 * g] = s;
                    map[3 * g + 1] = lat.layout.root(&half.host[s as usize * stride..]) as u32;
                    map[3 * g + 2] = if is_fresh {
                        staged.next().expect("unbounded")
                    } else {
                        u32::MAX
                    };
                }
                map.unmap()?;
            }
            half.kernel.arg_scalar("count", next.len() as u32)?;
            half.launch = Some(half.kernel.launch(next.len() * wg, Some(wg))?);
            launches += 1;
        }
        if !any {
            break;
        }
    }
    Ok(BridgeOutcome {
        sublists: finished.load(Ordering::Acquire),
        updates: updates.load(Ordering::Relaxed),
        launches,
    })
}

/// The latency threads' turn on one half: take each slot's bridge into the host copy,
/// apply it, filter, refill. Returns (slot, fresh) for the slots that go to the device.
fn mirror_round<K: Key>(
    pool: &LatencyPool,
    lat: &Latency<'_, '_, K>,
    half: &mut Half,
    stride: usize,
    bridge_of: &[u32],
    bridges: &[i32],
    bridge_words: usize,
) -> Result<Vec<(u32, bool)>> {
    let per_half = half.states.len();
    let threads = pool.len().max(1);
    let share = per_half.div_ceil(threads).max(1);
    let parts: Vec<Mutex<Part<'_>>> = half
        .host
        .chunks_mut(share * stride)
        .zip(half.states.chunks_mut(share))
        .enumerate()
        .map(|(i, (words, states))| Mutex::new((i * share, words, states)))
        .collect();
    let lists = pool.broadcast_scoped(|w| -> Result<Vec<(u32, bool)>> {
        let mut out = Vec::new();
        let Some(part) = parts.get(w.index) else {
            return Ok(out);
        };
        let mut part = part.lock().unwrap_or_else(|p| p.into_inner());
        let (base, words, states) = &mut *part;
        let mut scratch = Scratch::new(&lat.layout)?;
        for (j, (slot, state)) in words.chunks_mut(stride).zip(states.iter_mut()).enumerate() {
            let s = *base + j;
            let g = bridge_of[s];
            if g != u32::MAX {
                // The whole bridge area (the head holds it: pad ≥ bridge_words); words past
                // the counter's pairs are ignored, a bad counter is caught when applying.
                let b = &bridges[g as usize * bridge_words..(g as usize + 1) * bridge_words];
                slot[..bridge_words].copy_from_slice(b);
            }
            match lat.after_bridge(slot, state, &mut scratch)? {
                Next::Device { fresh } => out.push((s as u32, fresh)),
                Next::Idle => {}
            }
        }
        Ok(out)
    })?;
    let mut next = Vec::new();
    for l in lists {
        next.extend(l?);
    }
    Ok(next)
}
