//! GpuOnly and the device half of Cooperative-by-amount: the heap (`kernels/kselect.cl`, one
//! work-group per sub-list) or radix select (`device_radix.rs`), fed in
//! chunks through two sets of SVM staging buffers (double buffering: the host copies chunk
//! i+1 while the device selects in chunk i).

use std::sync::atomic::Ordering;
use std::time::Instant;

use asym_runtime::{
    copy_bits_streaming, copy_bits_streaming_par, Error, Kernel, Launch, Queue, Result, Runtime,
    SvmBuffer,
};

use super::device_radix::{
    longest_sublist, radix_options, radix_program, radix_work_group, DeviceRadix, RadixBuffers,
};
use super::{DeviceStaging, DeviceTimes, DeviceUpdate, Job, Key, Learned, Strategy};

/// How a device driver sizes its claims on the shared counter.
#[derive(Clone, Copy, Debug)]
pub(super) enum ClaimPolicy {
    /// Full chunks until the counter is empty (GpuOnly on one device).
    Full,
    /// A share of what remains by measured speeds, beside other workers: the latency threads
    /// (their keys in `Progress::cpu_keys`) and, on a device set, the other members (their
    /// keys in `Progress::members`). `hint` holds what earlier calls measured, with
    /// `cpu_keys_per_s` standing for all the other workers together.
    Guided {
        hint: Learned,
        /// This driver's slot in `Progress::members` (`None` on one device).
        member: Option<usize>,
        /// The anchor never sits out and claims until the counter is empty (on a device set
        /// without the latency threads someone must).
        anchor: bool,
        /// Workers selecting beside this one, counting each latency thread (to size a first
        /// probe).
        others: usize,
        /// Workers selecting beside this one, the latency threads as one (for an equal share
        /// while none of them has answered).
        peers: usize,
        /// Sub-lists `start..end` claimed for this driver's first launch before any driver
        /// started: a member of a set whose speed is not known yet probes with them, so
        /// that every member is measured even when its thread starts after the others
        /// emptied the counter.
        probe: Option<(usize, usize)>,
    },
}

impl ClaimPolicy {
    /// One device's policy: guided by `hint` beside `cpu_threads` latency threads
    /// (Cooperative), or full chunks alone (`None`: GpuOnly).
    pub(super) fn one_device(hint: Option<Learned>, cpu_threads: usize) -> Self {
        match hint {
            Some(hint) => ClaimPolicy::Guided {
                hint,
                member: None,
                anchor: false,
                others: cpu_threads,
                peers: 1,
                probe: None,
            },
            None => ClaimPolicy::Full,
        }
    }
}

pub(super) struct DeviceOutcome {
    pub(super) sublists: usize,
    pub(super) launches: usize,
    pub(super) local_heap: bool,
    /// Heap nodes in local memory (k for a local heap, the split point, or 0).
    pub(super) local_heap_nodes: usize,
    /// Keys the device answered and the time it spent from its first claim to its last answer.
    pub(super) keys: usize,
    pub(super) device_s: f64,
    /// The shortest claim-to-answer time of one launch (0: none measured).
    pub(super) fastest_launch_s: f64,
    /// Where the time went, summed over launches.
    pub(super) times: DeviceTimes,
}

pub(super) fn min_known(a: f64, b: f64) -> f64 {
    match (a > 0.0, b > 0.0) {
        (true, true) => a.min(b),
        (true, false) => a,
        _ => b,
    }
}

/// Where the device kernel keeps a heap (`-DHEAP_LOCAL` in kselect.cl).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HeapPlace {
    /// All of it in local memory.
    Local,
    /// Nodes below this index in local memory, the rest in global scratch.
    Split(usize),
    /// All of it in global scratch.
    Global,
}

/// Device-side sizes for one selection.
pub(super) struct DevicePlan {
    rt: Runtime,
    /// The device's method: `Heap` or `Radix`.
    method: Strategy,
    /// Keys per tile of the device radix (0: a work-group per sub-list).
    radix_tile: usize,
    place: HeapPlace,
    /// Heap nodes in local memory (reported in the stats).
    local_heap_nodes: usize,
    /// Words of the kernel's local heap argument.
    local_words: usize,
    staging: DeviceStaging,
    wg: usize,
    heap_words: usize,
    chunk: usize,
    options: String,
    /// Fails the run with [`Error::DeviceLost`] right after starting this launch (counted from 0),
    /// with the launch in flight: tests of a member failing mid-call (`None` in use).
    pub(super) fail_at_launch: Option<usize>,
}

/// One set of staging buffers, the kernel bound to them and their own command queue: the
/// host can map this stage's buffers while the other stage's kernel runs (on a shared
/// in-order queue a blocking map would wait for it).
pub(super) struct Stage {
    queue: Queue,
    data: SvmBuffer<i32>,
    offs: SvmBuffer<u32>,
    out: SvmBuffer<i32>,
    /// The heaps kept in global memory (heap), or the candidates, as long as the keys (radix).
    _scratch: SvmBuffer<u32>,
    kernel: StageKernel,
    launch: Option<(RadixOrHeap, std::ops::Range<usize>)>,
    keys: usize,
    subs: usize,
    /// The program options, heap stride and radix tile the stage was made for (reuse needs
    /// all equal).
    options: String,
    heap_words: usize,
    radix_tile: usize,
}

/// A stage's launch in flight.
enum RadixOrHeap {
    Heap(Launch),
    Radix(super::device_radix::RadixLaunch),
}

impl RadixOrHeap {
    fn wait_timed(self) -> Result<Option<std::time::Duration>> {
        match self {
            RadixOrHeap::Heap(l) => l.wait_timed(),
            RadixOrHeap::Radix(l) => l.wait_timed(),
        }
    }
}

/// What a stage launches.
enum StageKernel {
    Heap(Kernel),
    Radix(Box<DeviceRadix>),
}

/// Stages kept between selections: SVM allocation and zeroing cost milliseconds per call
/// (tens of MiB on a GPU), so a selector reuses its staging buffers.
pub(super) type StageCache = std::sync::Mutex<Vec<Stage>>;

/// Who copies keys into mapped staging buffers.
pub(super) enum Copier {
    /// Rayon's global pool: every core (GpuOnly, where the CPU has nothing else to do).
    Global,
    /// A pool of its own, on the cores the latency threads left free (Cooperative).
    Pool(std::sync::Arc<rayon::ThreadPool>),
    /// The device's driver thread alone.
    Serial,
}

/// Keys per device chunk: enough to keep the device busy, small enough to pipeline.
const CHUNK_KEYS: usize = 1 << 23;

/// Keys each work-item filters per round with [`DeviceUpdate::SingleItem`]: enough to
/// amortise the round's prefix sum and barriers over several keys.
const KEYS_PER_ITEM: usize = 4;

/// The selector's choices for the device kernel.
#[derive(Clone, Copy)]
pub(super) struct DeviceShape {
    /// `Heap` or `Radix`.
    pub(super) method: Strategy,
    /// Keys per tile of the device radix.
    pub(super) radix_tile: usize,
    pub(super) d: usize,
    pub(super) work_group: Option<usize>,
    pub(super) update: DeviceUpdate,
    /// At most this many bytes of local memory for a heap (`None`: what the device has).
    pub(super) local_heap_limit: Option<usize>,
    pub(super) staging: DeviceStaging,
}

impl DevicePlan {
    pub(super) fn new<K: Key>(rt: &Runtime, shape: DeviceShape, job: &Job<'_, K>) -> Result<Self> {
        let DeviceShape {
            method,
            radix_tile,
            d,
            work_group: wg,
            update,
            local_heap_limit,
            staging,
        } = shape;
        let p = rt.profile();
        let k = job.k;
        let n = job.claims.n;
        let avg = job.data.len() / n;
        let chunk = (CHUNK_KEYS / avg.max(1))
            .max(p.compute_units as usize * 4)
            .clamp(1, n);
        if method == Strategy::Radix {
            let longest = longest_sublist(job.offs);
            let wg = radix_work_group(rt, wg, longest)?;
            return Ok(DevicePlan {
                rt: rt.clone(),
                method,
                radix_tile,
                place: HeapPlace::Global,
                local_heap_nodes: 0,
                local_words: 0,
                staging,
                wg,
                heap_words: 0,
                chunk,
                options: radix_options::<K>(wg),
                fail_at_launch: None,
            });
        }
        if k > (u32::MAX as usize) / 64 - 64 {
            return Err(Error::too_large("k for the device kernel", k, 1u64 << 26));
        }
        // GPU: one warp when one work-item runs the update-keys (H200: kernel 12.9 ms vs
        // 23.3 ms with 64 at 2^28 keys in 2^11 sub-lists); two for the group reduction.
        let wg = wg.unwrap_or(match (p.kind, update) {
            (asym_runtime::DeviceKind::Gpu, DeviceUpdate::SingleItem) => d.max(32),
            (asym_runtime::DeviceKind::Gpu, DeviceUpdate::GroupReduce) => d.max(64),
            _ => d.max(16),
        });
        rt.check_work_group(wg, "run k-selection")?;
        // The kernel pads the last child block with INT_MIN: k + 2d words hold it (kselect.cl).
        let heap_words = (k + 2 * d).next_multiple_of(16);
        let (serial, per) = match update {
            DeviceUpdate::GroupReduce => (0, 1),
            DeviceUpdate::SingleItem => (1, KEYS_PER_ITEM),
        };
        // Baseline: cand (2·WG), redv, redi, redv2, redi2, scan (WG each); single-item: the
        // candidates (2·WG·PER) and scan; both: root, plus slack.
        let fixed_local = match update {
            DeviceUpdate::GroupReduce => 7 * wg * 4,
            DeviceUpdate::SingleItem => (2 * per + 1) * wg * 4,
        } + 256;
        // Local memory the heap may use: the device's, less the kernel's own, capped by the
        // selector's limit (tests and measurements force every placement with it).
        let local_words = (p.local_mem_bytes as usize)
            .saturating_sub(fixed_local)
            .min(local_heap_limit.unwrap_or(usize::MAX))
            / 4;
        let place = if heap_words <= local_words {
            HeapPlace::Local
        } else if update == DeviceUpdate::SingleItem && local_words >= d - 1 + 1 + d {
            // The largest split point that is 1 modulo d (a child block never straddles it)
            // and fits with the padding words: at least the root and its children.
            HeapPlace::Split(((local_words - (d - 1) - 1) / d) * d + 1)
        } else {
            HeapPlace::Global
        };
        // Both stagings move the keys' raw bits; the kernel maps them to the ordered form.
        let key_map = K::KEY_MAP;
        let (heap_local, split) = match place {
            HeapPlace::Global => (0, 0),
            HeapPlace::Local => (1, 0),
            HeapPlace::Split(s) => (2, s),
        };
        let options = format!(
            "-DD={d} -DWG={wg} -DHEAP_LOCAL={heap_local} -DSPLIT={split} -DSERIAL={serial} \
             -DPER={per} -DKEY_MAP={key_map}"
        );
        Ok(DevicePlan {
            staging,
            rt: rt.clone(),
            method,
            radix_tile,
            wg,
            place,
            local_heap_nodes: match place {
                HeapPlace::Local => k,
                HeapPlace::Split(split) => split,
                HeapPlace::Global => 0,
            },
            local_words: match place {
                HeapPlace::Local => heap_words,
                // The split point's nodes and the d − 1 words before the root.
                HeapPlace::Split(split) => split + d - 1,
                HeapPlace::Global => 1,
            },
            heap_words,
            chunk,
            options,
            fail_at_launch: None,
        })
    }

    /// Staging buffers for up to `subs` sub-lists holding up to `keys` keys, and the kernel
    /// bound to them.
    fn stage(&self, k: usize, keys: usize, subs: usize) -> Result<Stage> {
        let rt = &self.rt;
        let queue = rt.new_queue()?;
        let data = rt.alloc_on::<i32>(keys, &queue)?;
        let offs = rt.alloc_on::<u32>(subs + 1, &queue)?;
        let out = rt.alloc_on::<i32>(subs, &queue)?;
        let scratch_len = match (self.method, self.place) {
            (Strategy::Radix, _) => keys,
            (_, HeapPlace::Local) => 1,
            _ => subs * self.heap_words,
        };
        let scratch = rt.alloc_on::<u32>(scratch_len, &queue)?;
        let kernel = if self.method == Strategy::Radix {
            let program = radix_program(rt, &self.options)?;
            let mut radix = DeviceRadix::new(
                rt,
                &program,
                Some(queue.clone()),
                self.wg,
                self.radix_tile,
                keys,
                subs,
            )?;
            radix.bind(&RadixBuffers {
                keys: &data,
                offsets: &offs,
                scratch: &scratch,
                answers: &out,
            })?;
            StageKernel::Radix(Box::new(radix))
        } else {
            let program = rt.program_with(&asym_kernels::KSELECT, &self.options)?;
            let mut kernel = Kernel::from_program(rt, &program, "kselect_dheap")?;
            kernel
                .arg_svm("data", &data)?
                .arg_svm("offsets", &offs)?
                .arg_svm("out", &out)?
                .arg_svm("scratch", &scratch)?
                .arg_scalar("k", k as u32)?
                .arg_scalar("nsub", 0u32)?
                .arg_scalar("scratch_stride", self.heap_words as u32)?
                .arg_local::<i32>("lheap", self.local_words)?;
            StageKernel::Heap(kernel)
        };
        Ok(Stage {
            queue,
            data,
            offs,
            out,
            _scratch: scratch,
            kernel,
            launch: None,
            keys,
            subs,
            options: self.options.clone(),
            heap_words: self.heap_words,
            radix_tile: self.radix_tile,
        })
    }

    /// Takes a cached stage made for this plan (same program, same heap stride) and sets the
    /// per-selection arguments.
    fn reuse(&self, cache: &StageCache, k: usize) -> Result<Option<Stage>> {
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        let Some(i) = cache.iter().position(|s| {
            s.options == self.options
                && s.heap_words == self.heap_words
                && s.radix_tile == self.radix_tile
        }) else {
            return Ok(None);
        };
        let mut stage = cache.swap_remove(i);
        if let StageKernel::Heap(kernel) = &mut stage.kernel {
            kernel.arg_scalar("k", k as u32)?;
        }
        Ok(Some(stage))
    }

    pub(super) fn run<K: Key>(
        &self,
        job: &Job<'_, K>,
        policy: ClaimPolicy,
        cache: &StageCache,
        copier: &Copier,
    ) -> Result<DeviceOutcome> {
        // Staging buffers come from the selector's cache or are made on first use, sized to the
        // claim (a small probe in Cooperative mode, a full chunk in GpuOnly), and regrown if a
        // later claim is larger; they go back to the cache at the end.
        let mut stages: [Option<Stage>; 2] = [self.reuse(cache, job.k)?, self.reuse(cache, job.k)?];
        let mut claimed_at: [Option<Instant>; 2] = [None, None];
        let mut cur = 0;
        let mut outcome = DeviceOutcome {
            sublists: 0,
            launches: 0,
            local_heap: self.place == HeapPlace::Local,
            local_heap_nodes: self.local_heap_nodes,
            keys: 0,
            device_s: 0.0,
            fastest_launch_s: 0.0,
            times: DeviceTimes::default(),
        };
        let started = Instant::now();
        let me = match policy {
            ClaimPolicy::Guided { member, .. } => member,
            ClaimPolicy::Full => None,
        };
        let member = me.and_then(|m| job.progress.members.get(m));
        if let Some(m) = member {
            m.start();
        }
        // Waits for a stage, books its answers and its claim-to-answer time.
        let settle = |stage: &mut Stage,
                      at: &mut Option<Instant>,
                      outcome: &mut DeviceOutcome|
         -> Result<()> {
            if let Some((done, keys)) = self.finish(stage, job, &mut outcome.times)? {
                outcome.sublists += done;
                outcome.keys += keys;
                if let Some(m) = member {
                    m.keys.fetch_add(keys, Ordering::Relaxed);
                }
                if let Some(t) = at.take() {
                    outcome.fastest_launch_s =
                        min_known(outcome.fastest_launch_s, t.elapsed().as_secs_f64());
                }
            }
            Ok(())
        };
        loop {
            let reserved = match policy {
                ClaimPolicy::Guided {
                    probe: Some((start, end)),
                    ..
                } if outcome.launches == 0 => Some(start..end),
                _ => None,
            };
            let count = match policy {
                _ if reserved.is_some() => 0,
                ClaimPolicy::Full => self.chunk,
                ClaimPolicy::Guided {
                    hint,
                    anchor,
                    others,
                    peers,
                    ..
                } => {
                    let count = if outcome.launches == 0 {
                        self.first_cooperative_claim(job, hint, others)
                    } else {
                        self.guided_chunk(job, me, peers, outcome.keys, started)
                    };
                    match count {
                        Some(c) => c,
                        None if anchor => 1,
                        None => break,
                    }
                }
            };
            let Some(range) = reserved.or_else(|| job.claims.claim(count)) else {
                break;
            };
            if let Some(stage) = stages[cur].as_mut() {
                settle(stage, &mut claimed_at[cur], &mut outcome)?;
            }
            let keys = job.offs[range.end] - job.offs[range.start];
            if stages[cur]
                .as_ref()
                .is_none_or(|s| s.keys < keys || s.subs < range.len())
            {
                let (keys, subs) = match stages[cur].as_ref() {
                    Some(s) => (keys.max(s.keys), range.len().max(s.subs)),
                    None => (keys, range.len()),
                };
                stages[cur] = Some(self.stage(job.k, keys, subs)?);
            }
            let stage = stages[cur].as_mut().expect("made above");
            claimed_at[cur] = Some(Instant::now());
            let staging = Instant::now();
            self.start(stage, job, range, copier)?;
            outcome.times.stage_s += staging.elapsed().as_secs_f64();
            outcome.launches += 1;
            if self.fail_at_launch == Some(outcome.launches - 1) {
                return Err(Error::device_lost(
                    self.rt.profile().label(),
                    format!(
                        "{}: a failure injected with launch {} in flight",
                        self.rt.profile().label(),
                        outcome.launches - 1
                    ),
                ));
            }
            if matches!(policy, ClaimPolicy::Guided { .. }) && outcome.launches == 1 {
                // Measure the first launch before deciding on the next claim.
                settle(stage, &mut claimed_at[cur], &mut outcome)?;
            }
            cur ^= 1;
        }
        for s in [cur, cur ^ 1] {
            if let Some(stage) = stages[s].as_mut() {
                settle(stage, &mut claimed_at[s], &mut outcome)?;
            }
        }
        outcome.device_s = started.elapsed().as_secs_f64();
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.extend(stages.into_iter().flatten());
        // Keep the cache bounded: the two largest stages per program suffice.
        cache.sort_by_key(|s| std::cmp::Reverse(s.keys));
        let mut seen: Vec<(String, usize, usize)> = Vec::new();
        cache.retain(|s| {
            let n = seen
                .iter()
                .filter(|(o, h, _)| *o == s.options && *h == s.heap_words)
                .count();
            seen.push((s.options.clone(), s.heap_words, 0));
            n < 2
        });
        Ok(outcome)
    }

    /// The device's first claim beside other workers, or `None` to leave everything to them.
    ///
    /// With measurements from earlier runs of this sub-list length: sit out when one launch
    /// takes 90 % of what the others need for the whole job (the device would set the finish
    /// time), else claim the device's share of the throughput. (Not half: with long
    /// sub-lists one launch holds every sub-list the device takes and lasts as long as its
    /// longest one, so half of the sub-lists on each side can still balance.) Without: probe
    /// with 1/256
    /// of the sub-lists, unless there are fewer than 8 per other worker (then even one
    /// sub-list is too big a bet on a device of unknown speed).
    pub(super) fn first_cooperative_claim<K>(
        &self,
        job: &Job<'_, K>,
        hint: Learned,
        others: usize,
    ) -> Option<usize> {
        let total_keys = job.data.len();
        if hint.sizes_a_share() {
            let others_alone_s = total_keys as f64 / hint.cpu_keys_per_s;
            if hint.dev_launch_s > 0.9 * others_alone_s {
                return None;
            }
            let share = hint.dev_keys_per_s / (hint.dev_keys_per_s + hint.cpu_keys_per_s);
            let count = (job.claims.n as f64 * share * 0.9).floor() as usize;
            return (count > 0).then(|| count.min(self.chunk));
        }
        if job.claims.n < 8 * others {
            return None;
        }
        Some((job.claims.n / 256).clamp(1, self.chunk))
    }

    /// Sub-lists for the device's next claim beside other workers: the device's measured
    /// share of the throughput applied to what is left (so all finish together), at most a
    /// full chunk; `None` once that share rounds to nothing (the device is too slow to help
    /// with the rest). The others' speed is the latency threads' plus, on a device set, the
    /// other members' (`me` is this device's own entry, left out).
    fn guided_chunk<K>(
        &self,
        job: &Job<'_, K>,
        me: Option<usize>,
        peers: usize,
        device_keys: usize,
        device_started: Instant,
    ) -> Option<usize> {
        let remaining = job.claims.remaining();
        let cpu_rate = job.progress.cpu_keys.load(Ordering::Relaxed) as f64
            / job.progress.started.elapsed().as_secs_f64().max(1e-9);
        let members_rate: f64 = job
            .progress
            .members
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != me)
            .map(|(_, m)| m.rate())
            .sum();
        let others = cpu_rate + members_rate;
        let dev_rate = device_keys as f64 / device_started.elapsed().as_secs_f64().max(1e-9);
        let share = if others > 0.0 {
            dev_rate / (dev_rate + others)
        } else if me.is_some() {
            // On a set, members that have not answered yet are starting (building programs,
            // staging), not idle: leave them an equal share instead of taking it all.
            1.0 / (1 + peers) as f64
        } else {
            1.0
        };
        let count = (remaining as f64 * share * 0.9).floor() as usize;
        (count > 0).then(|| count.min(self.chunk))
    }

    fn start<K: Key>(
        &self,
        stage: &mut Stage,
        job: &Job<'_, K>,
        range: std::ops::Range<usize>,
        copier: &Copier,
    ) -> Result<()> {
        let base = job.offs[range.start];
        let end = job.offs[range.end];
        if u32::try_from(end - base).is_err() {
            return Err(Error::too_large(
                "a device chunk's keys",
                end - base,
                u32::MAX,
            ));
        }
        let src = &job.data[base..end];
        if self.staging == DeviceStaging::CopyEngine {
            stage.data.copy_from_host(0, src)?;
        } else {
            let mut map = stage.data.map_for_overwrite()?;
            let dst = &mut map[..src.len()];
            match copier {
                Copier::Global => copy_bits_streaming_par(dst, src)?,
                // Small copies stay on this thread (a hand-off to the pool costs more).
                Copier::Pool(pool) if src.len() > 1 << 16 => {
                    pool.install(|| copy_bits_streaming_par(dst, src))?
                }
                _ => copy_bits_streaming(dst, src)?,
            }
            map.unmap()?;
        }
        let rel: Vec<usize> = job.offs[range.start..=range.end]
            .iter()
            .map(|o| o - base)
            .collect();
        {
            let mut map = stage.offs.map_for_overwrite()?;
            for (m, &o) in map.iter_mut().zip(&rel) {
                *m = o as u32;
            }
            map.unmap()?;
        }
        let count = range.len();
        let launch = match &mut stage.kernel {
            StageKernel::Heap(kernel) => {
                kernel.arg_scalar("nsub", count as u32)?;
                RadixOrHeap::Heap(kernel.launch_on(&stage.queue, count * self.wg, Some(self.wg))?)
            }
            StageKernel::Radix(radix) => {
                let longest = longest_sublist(&rel);
                RadixOrHeap::Radix(radix.launch(&rel, longest, job.k)?)
            }
        };
        stage.launch = Some((launch, range));
        Ok(())
    }

    /// Waits for a stage's launch, stores its answers and books the stage times: (sub-lists,
    /// keys) done.
    fn finish<K>(
        &self,
        stage: &mut Stage,
        job: &Job<'_, K>,
        times: &mut DeviceTimes,
    ) -> Result<Option<(usize, usize)>> {
        let Some((launch, range)) = stage.launch.take() else {
            return Ok(None);
        };
        let waiting = Instant::now();
        let kernel = launch.wait_timed()?;
        times.wait_s += waiting.elapsed().as_secs_f64();
        times.kernel_s += kernel.map_or(0.0, |t| t.as_secs_f64());
        // The launch waited for both unmaps, so their times are final now.
        times.transfer_s += [
            stage.data.last_transfer_time(),
            stage.offs.last_transfer_time(),
        ]
        .into_iter()
        .flatten()
        .map(|t| t.as_secs_f64())
        .sum::<f64>();
        let reading = Instant::now();
        let map = stage.out.map_read()?;
        for (j, i) in range.clone().enumerate() {
            job.results[i].store(map[j], Ordering::Relaxed);
        }
        job.mark_done(range.clone());
        map.unmap()?;
        times.readback_s += reading.elapsed().as_secs_f64();
        Ok(Some((
            range.len(),
            job.offs[range.end] - job.offs[range.start],
        )))
    }
}
