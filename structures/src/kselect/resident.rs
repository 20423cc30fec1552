//! Selection from keys the application keeps in SVM ([`KSelector::select_svm`]): filled
//! through a map (on an APU that is the application's own memory), written by the
//! application's own kernels, or uploaded once and queried many times. Nothing is staged:
//! the device radix (`device_radix.rs`: a work-group per sub-list or per tile, the keys read
//! twice) reads the buffer where it is. The selector keeps a scratch buffer as long as the
//! keys for the candidates, the tile tables and the kernels (made on the first call with a
//! cut, reused while the cut, the key type and the tile size stay the same).

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use asym_runtime::{Error, Program, Result, Runtime, SvmBuffer};

use super::device_radix::{
    longest_sublist, radix_options, radix_program, radix_work_group, DeviceRadix, RadixBuffers,
    RadixLaunch,
};
use super::{KSelector, Key, SelectStats, Strategy, Sublists};

/// The offsets and answers buffers of the last resident call, reused while the cut of the
/// next call is the same (an SVM allocation costs by its size on NVIDIA).
#[derive(Default)]
pub(super) struct ResidentCache(Mutex<Option<ResidentBuffers>>);

struct ResidentBuffers {
    offs: Vec<usize>,
    /// The sub-list length when the cut was [`Sublists::Equal`].
    equal_len: Option<usize>,
    /// The longest sub-list of the cut (scanned once, not on every call).
    longest: usize,
    /// The build options (key type, work-group size) and the tile size the kernels were made
    /// for.
    made_for: (String, usize),
    radix: DeviceRadix,
    offsets: SvmBuffer<u32>,
    answers: SvmBuffer<i32>,
    /// As long as the keys: each work-group keeps its sub-list's candidates in its slice.
    scratch: SvmBuffer<u32>,
}

impl KSelector {
    /// The k-th smallest key of every sub-list of `keys`, a buffer in this selector's
    /// runtime, by radix select on the device, reading the keys where they are (the
    /// buffer must not be mapped on the host). Also reports the device's time:
    /// `device_times.wait_s` is the call's time less the one-time setup of a new cut's
    /// buffers and kernels.
    pub fn select_svm<K: Key>(
        &self,
        keys: &SvmBuffer<K>,
        sublists: &Sublists,
        k: usize,
    ) -> Result<(Vec<K>, SelectStats)> {
        let rt = self.device_runtime()?;
        self.launch_resident(rt, &self.resident, keys, sublists, k)?
            .finish()
    }

    /// [`KSelector::select_svm`] on `rt` (the buffer's device) with that device's cache,
    /// enqueued and not waited for: a device set launches every member before it waits on
    /// any, from one thread.
    pub(super) fn launch_resident<'c, K: Key>(
        &self,
        rt: &Runtime,
        resident: &'c ResidentCache,
        keys: &SvmBuffer<K>,
        sublists: &Sublists,
        k: usize,
    ) -> Result<ResidentRun<'c, K>> {
        let n = sublists.count(keys.len(), k)?;
        if keys.len() > u32::MAX as usize || k > u32::MAX as usize {
            return Err(Error::too_large(
                "keys of a resident selection",
                keys.len(),
                u32::MAX,
            ));
        }
        let longest = match sublists {
            Sublists::Equal(len) => *len,
            Sublists::Offsets(o) => longest_sublist(o),
        };
        let wg = radix_work_group(rt, self.work_group, longest)?;
        let made_for = (radix_options::<K>(wg), self.radix_tile);
        let started = Instant::now();
        let mut cache = resident.0.lock().map_err(|_| {
            Error::thread_lost("a resident selection", "a resident selection panicked")
        })?;
        // Equal sub-lists are matched to the cached cut by their length: no boundaries built
        // and compared on every call (half a million of each at 2^30 keys in sub-lists of 2^11).
        let same_cut = |c: &ResidentBuffers| match sublists {
            Sublists::Equal(len) => c.equal_len == Some(*len) && c.offs.last() == Some(&keys.len()),
            Sublists::Offsets(o) => c.offs == *o,
        };
        let mut setup = std::time::Duration::ZERO;
        if cache
            .as_ref()
            .is_none_or(|c| !same_cut(c) || c.made_for != made_for)
        {
            let t = Instant::now();
            // Free the old buffers before making new ones.
            *cache = None;
            let program = radix_program(rt, &made_for.0)?;
            let offs = sublists.boundaries(keys.len(), k)?;
            *cache = Some(buffers(rt, &program, wg, offs, sublists, made_for)?);
            setup = t.elapsed();
        }
        let bufs = cache.as_mut().expect("filled above");
        bufs.radix.bind(&RadixBuffers {
            keys,
            offsets: &bufs.offsets,
            scratch: &bufs.scratch,
            answers: &bufs.answers,
        })?;
        let launch = bufs.radix.launch(&bufs.offs, bufs.longest, k);
        // The site is kept between calls: it must not hold the caller's buffer alive.
        bufs.radix.unbind_keys(&bufs.scratch)?;
        Ok(ResidentRun {
            launch: launch?,
            cache,
            sublists: n,
            started,
            setup,
            key: std::marker::PhantomData,
        })
    }
}

/// A resident selection enqueued on one device ([`KSelector::launch_resident`]): its cache
/// stays locked until [`ResidentRun::finish`] has read the answers.
pub(super) struct ResidentRun<'c, K> {
    cache: MutexGuard<'c, Option<ResidentBuffers>>,
    launch: RadixLaunch,
    sublists: usize,
    started: Instant,
    /// The one-time setup of a new cut's buffers and kernels, within the call.
    setup: Duration,
    key: std::marker::PhantomData<K>,
}

impl<K: Key> ResidentRun<'_, K> {
    /// Waits for the launches and reads the answers back.
    pub(super) fn finish(mut self) -> Result<(Vec<K>, SelectStats)> {
        let launches = self.launch.len();
        let kernel_time = self.launch.wait_timed()?;
        let bufs = self.cache.as_mut().expect("filled at launch");
        let answers = bufs.answers.read_range(0, self.sublists)?;
        let mut stats = SelectStats {
            device_sublists: self.sublists,
            launches,
            device_strategy: Some(Strategy::Radix),
            ..SelectStats::default()
        };
        stats.device_times.kernel_s = kernel_time.map_or(0.0, |d| d.as_secs_f64());
        // The call's time less the one-time setup of a new cut's buffers and kernels (what
        // the next call with this cut takes; a device set splits by it).
        stats.device_times.wait_s = self
            .started
            .elapsed()
            .saturating_sub(self.setup)
            .as_secs_f64();
        Ok((answers.into_iter().map(K::from_ordered).collect(), stats))
    }
}

fn buffers(
    rt: &Runtime,
    program: &Program,
    wg: usize,
    offs: Vec<usize>,
    cut: &Sublists,
    made_for: (String, usize),
) -> Result<ResidentBuffers> {
    let total = *offs.last().unwrap_or(&0);
    let mut offsets = rt.alloc::<u32>(offs.len())?;
    offsets.write(&offs.iter().map(|&o| o as u32).collect::<Vec<_>>())?;
    let answers = rt.alloc::<i32>(offs.len() - 1)?;
    let scratch = rt.alloc::<u32>(total)?;
    let radix = DeviceRadix::new(rt, program, None, wg, made_for.1, total, offs.len() - 1)?;
    Ok(ResidentBuffers {
        longest: longest_sublist(&offs),
        offs,
        equal_len: match cut {
            Sublists::Equal(len) => Some(*len),
            Sublists::Offsets(_) => None,
        },
        made_for,
        radix,
        offsets,
        answers,
        scratch,
    })
}
