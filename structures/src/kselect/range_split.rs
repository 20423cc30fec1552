//! Cooperative radix on few long sub-lists: every sub-list is split by range, its first
//! part to the device and the rest to the latency threads (each thread a share of it), and
//! the two sides select as one.
//!
//! 1. Both sides count the top digit of their ranges at once: the device with the tiled
//!    kernels (`radix_clear`, `radix_count`), each latency thread into its own histogram.
//! 2. The host merges the counts per sub-list and writes the merged histograms back; both
//!    sides then keep their ranges' keys in the bucket holding the k-th (the device with
//!    `radix_keep`, which picks the same bucket from the same merged counts).
//! 3. The host gathers both sides' kept keys (about 1/256 of each sub-list) and finishes the
//!    last digits on them.
//!
//! Splitting whole sub-lists cannot balance a handful of them; splitting each one can, at
//! the price of two device round trips per call.

use std::sync::atomic::Ordering;
use std::time::Instant;

use std::sync::Mutex;

use asym_runtime::{Error, Program, Result, Runtime, SvmBuffer};

use super::device_radix::{radix_program, tiled_spec, DeviceRadix, RadixBuffers};
use super::{beside, radix, Job, KSelector, Key, SelectStats};

/// The device buffers of the last range split, kept while later calls fit in them.
#[derive(Default)]
pub(super) struct RangeCache(Mutex<Option<RangeBuffers>>);

struct RangeBuffers {
    /// The build options (key type, work-group size) and tile size the kernels were made for.
    made_for: (String, usize),
    keys: SvmBuffer<i32>,
    offsets: SvmBuffer<u32>,
    /// Where `radix_keep` keeps each tile's keys: owned here, reached only through the
    /// kernels' bindings.
    #[allow(dead_code)]
    scratch: SvmBuffer<u32>,
    answers: SvmBuffer<i32>,
    dev: DeviceRadix,
}

impl RangeBuffers {
    fn new(
        rt: &Runtime,
        program: &Program,
        wg: usize,
        made_for: (String, usize),
        keys: usize,
        subs: usize,
    ) -> Result<Self> {
        let keys_buf = rt.alloc::<i32>(keys.max(1))?;
        let offsets = rt.alloc::<u32>(subs + 1)?;
        let scratch = rt.alloc::<u32>(keys.max(1))?;
        let answers = rt.alloc::<i32>(subs)?;
        let mut dev = DeviceRadix::new(rt, program, None, wg, made_for.1, keys, subs)?;
        dev.bind(&RadixBuffers {
            keys: &keys_buf,
            offsets: &offsets,
            scratch: &scratch,
            answers: &answers,
        })?;
        Ok(RangeBuffers {
            made_for,
            keys: keys_buf,
            offsets,
            scratch,
            answers,
            dev,
        })
    }
}

/// What the device side of a range split did.
pub(super) struct RangeSplitOutcome {
    /// Keys the device counted and kept from.
    pub(super) device_keys: usize,
    /// Seconds the device side took (staging, both launches, reading back).
    pub(super) device_s: f64,
}

impl KSelector {
    /// Every sub-list of `job` split by range: the device takes the first `share` of each
    /// (rounded), the latency threads the rest. `0 < share < 1`.
    pub(super) fn run_range_split<K: Key>(
        &self,
        job: &Job<'_, K>,
        share: f64,
        stats: &mut SelectStats,
    ) -> Result<RangeSplitOutcome> {
        let rt = self.device_runtime()?;
        let n = job.claims.n;
        let offs = job.offs;
        let lens: Vec<usize> = offs.windows(2).map(|w| w[1] - w[0]).collect();
        let parts: Vec<usize> = lens
            .iter()
            .map(|&len| ((len as f64 * share).round() as usize).min(len))
            .collect();
        let mut dev_offs = Vec::with_capacity(n + 1);
        dev_offs.push(0usize);
        for &p in &parts {
            dev_offs.push(dev_offs.last().copied().unwrap_or(0) + p);
        }
        let total_dev = dev_offs[n];
        if total_dev > u32::MAX as usize {
            return Err(Error::too_large(
                "a device range's keys",
                total_dev,
                u32::MAX,
            ));
        }
        let started = Instant::now();
        let (wg, made_for) = tiled_spec::<K>(rt, self.work_group, self.radix_tile)?;
        let mut cache = self.range.0.lock().map_err(|_| {
            Error::thread_lost(
                "a range-split selection",
                "a range-split selection panicked",
            )
        })?;
        if cache.as_ref().is_none_or(|c| {
            c.made_for != made_for || c.keys.len() < total_dev || c.answers.len() < n
        }) {
            // Free the old buffers before making new ones (SVM allocation is slow: they are
            // kept between calls).
            *cache = None;
            let program = radix_program(rt, &made_for.0)?;
            *cache = Some(RangeBuffers::new(rt, &program, wg, made_for, total_dev, n)?);
        }
        let RangeBuffers {
            keys, offsets, dev, ..
        } = cache.as_mut().expect("filled above");
        offsets.write_range(0, &dev_offs.iter().map(|&o| o as u32).collect::<Vec<_>>())?;
        let threads = self.pool.len();
        // Worker w's share of sub-list i's host range.
        let host_part = |i: usize, w: usize| -> &[K] {
            let list = &job.data[offs[i] + parts[i]..offs[i + 1]];
            let each = list.len().div_ceil(threads);
            let start = (w * each).min(list.len());
            &list[start..(start + each).min(list.len())]
        };
        // 1. Both sides count the top digit of their ranges.
        let (dev_hists, host_hists) = beside(
            || -> Result<(Vec<[u32; 256]>, usize)> {
                for i in 0..n {
                    keys.write_range(dev_offs[i], &job.data[offs[i]..offs[i] + parts[i]])?;
                }
                let launch = dev.launch_count(&dev_offs)?;
                let launches = launch.len();
                launch.wait_timed()?;
                Ok((dev.top_histograms(n)?, launches))
            },
            || {
                self.pool.broadcast_scoped(|w| {
                    let mut scratch = radix::RadixScratch::default();
                    (0..n)
                        .map(|i| radix::top_histogram(host_part(i, w.index), &mut scratch))
                        .collect::<Vec<_>>()
                })
            },
        );
        let ((dev_hists, count_launches), host_hists) = (dev_hists?, host_hists?);
        let merged = merge_histograms(dev_hists, &host_hists, &lens)?;
        let located: Vec<_> = merged.iter().map(|m| radix::locate_top(m, job.k)).collect();
        // 2. Both sides keep their keys of the k-th's bucket.
        let (dev_kept, host_kept) = beside(
            || -> Result<(Vec<Vec<u32>>, usize)> {
                let launch = dev.launch_keep(&merged, job.k)?;
                let launches = launch.len();
                launch.wait_timed()?;
                Ok((dev.kept_keys(n)?, launches))
            },
            || {
                self.pool.broadcast_scoped(|w| {
                    (0..n)
                        .map(|i| radix::gather_bucket(host_part(i, w.index), located[i].0))
                        .collect::<Vec<_>>()
                })
            },
        );
        let ((dev_kept, keep_launches), host_kept) = (dev_kept?, host_kept?);
        let device_s = started.elapsed().as_secs_f64();
        // 3. The last digits on the kept keys.
        let mut finisher = radix::RadixScratch::default();
        for (i, mut candidates) in dev_kept.into_iter().enumerate() {
            for per_worker in &host_kept {
                candidates.extend_from_slice(&per_worker[i]);
            }
            let (bucket, rank, prefix, shift) = located[i];
            check_kept(i, candidates.len(), merged[i][bucket])?;
            finisher.set_candidates(candidates);
            job.results[i].store(
                radix::finish_digits(&mut finisher, rank, prefix, shift),
                Ordering::Relaxed,
            );
        }
        job.progress
            .cpu_keys
            .fetch_add(job.data.len() - total_dev, Ordering::Relaxed);
        stats.split_sublists = n;
        stats.launches = count_launches + keep_launches;
        Ok(RangeSplitOutcome {
            device_keys: total_dev,
            device_s,
        })
    }
}

/// The device's and every latency thread's top-digit histograms added up per sub-list; each
/// must count its sub-list's `lens[i]` keys.
fn merge_histograms(
    device: Vec<[u32; 256]>,
    host: &[Vec<[u32; 256]>],
    lens: &[usize],
) -> Result<Vec<[u32; 256]>> {
    let mut merged = device;
    for per_worker in host {
        for (m, h) in merged.iter_mut().zip(per_worker) {
            for (a, b) in m.iter_mut().zip(h) {
                *a += b;
            }
        }
    }
    for (i, m) in merged.iter().enumerate() {
        let counted: usize = m.iter().map(|&c| c as usize).sum();
        if counted != lens[i] {
            return Err(Error::corrupted(
                "a range-split selection",
                format!(
                    "sub-list {i}: the merged histogram counts {counted} of its {} keys",
                    lens[i]
                ),
            ));
        }
    }
    Ok(merged)
}

/// Sub-list `i`'s kept keys must be every key of the k-th's bucket (`in_bucket`).
fn check_kept(i: usize, kept: usize, in_bucket: u32) -> Result<()> {
    if kept == in_bucket as usize {
        return Ok(());
    }
    Err(Error::corrupted(
        "a range-split selection",
        format!("sub-list {i}: {kept} keys kept of the {in_bucket} in the k-th's bucket"),
    ))
}
