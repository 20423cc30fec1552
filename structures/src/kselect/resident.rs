//! Selection from keys the application keeps in SVM ([`KSelector::select_svm`]): filled
//! through a map (on an APU that is the application's own memory), written by the
//! application's own kernels, or uploaded once and queried many times. Nothing is staged:
//! one launch of `kernels/kselect_radix.cl` (a work-group per sub-list, four digits with a
//! local histogram, the keys read twice) reads the buffer where it is. The selector keeps a
//! scratch buffer as long as the keys for the candidates (allocated on the first call with a
//! cut, reused while the cut stays the same).

use std::sync::Mutex;
use std::time::Instant;

use asym_runtime::{Error, Kernel, Result, Runtime, SvmBuffer};

use super::device::{radix_options, radix_work_group};
use super::{KSelector, Key, SelectStats, Strategy, Sublists};

/// The offsets and answers buffers of the last resident call, reused while the cut of the
/// next call is the same (SVM allocation costs about 0.45 ms per MiB on the H200).
#[derive(Default)]
pub(super) struct ResidentCache(Mutex<Option<ResidentBuffers>>);

struct ResidentBuffers {
    offs: Vec<usize>,
    offsets: SvmBuffer<u32>,
    answers: SvmBuffer<i32>,
    /// As long as the keys: each work-group keeps its sub-list's candidates in its slice.
    scratch: SvmBuffer<u32>,
}

impl KSelector {
    /// The k-th smallest key of every sub-list of `keys`, a buffer in this selector's
    /// runtime, by radix select on the device, reading the keys where they are (the
    /// buffer must not be mapped on the host). Also reports the device's time.
    pub fn select_svm<K: Key>(
        &self,
        keys: &SvmBuffer<K>,
        sublists: &Sublists,
        k: usize,
    ) -> Result<(Vec<K>, SelectStats)> {
        let rt = self.device_runtime()?;
        let offs = sublists.boundaries(keys.len(), k)?;
        let n = offs.len() - 1;
        if keys.len() > u32::MAX as usize || k > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!(
                "{} keys: resident selection takes fewer than 2^32",
                keys.len()
            )));
        }
        let wg = radix_work_group(rt)?;
        let program = rt.program_with(&asym_kernels::KSELECT_RADIX, &radix_options::<K>(wg))?;
        // The program is the runtime's cached one; the kernel object is made per call on
        // purpose: a kept kernel would hold the caller's key buffer (its last argument) alive.
        let mut kernel = Kernel::from_program(rt, &program, "kselect_radix")?;
        let started = Instant::now();
        let mut cache = self
            .resident
            .0
            .lock()
            .map_err(|_| Error::Lost("a resident selection panicked".into()))?;
        if cache.as_ref().is_none_or(|c| c.offs != offs) {
            *cache = Some(buffers(rt, offs)?);
        }
        let bufs = cache.as_mut().expect("filled above");
        kernel
            .arg_svm(0, keys)?
            .arg_svm(1, &bufs.offsets)?
            .arg_scalar(2, k as u32)?
            .arg_svm(3, &bufs.answers)?
            .arg_svm(4, &bufs.scratch)?;
        let kernel_time = kernel.launch(n * wg, Some(wg))?.wait_timed()?;
        let answers = bufs.answers.read()?;
        let mut stats = SelectStats {
            device_sublists: n,
            launches: 1,
            device_strategy: Some(Strategy::Radix),
            ..SelectStats::default()
        };
        stats.device_times.kernel_s = kernel_time.map_or(0.0, |d| d.as_secs_f64());
        stats.device_times.wait_s = started.elapsed().as_secs_f64();
        Ok((answers.into_iter().map(K::from_ordered).collect(), stats))
    }
}

fn buffers(rt: &Runtime, offs: Vec<usize>) -> Result<ResidentBuffers> {
    let mut offsets = rt.alloc::<u32>(offs.len())?;
    offsets.write(&offs.iter().map(|&o| o as u32).collect::<Vec<_>>())?;
    let answers = rt.alloc::<i32>(offs.len() - 1)?;
    let scratch = rt.alloc::<u32>(*offs.last().unwrap_or(&0))?;
    Ok(ResidentBuffers {
        offs,
        offsets,
        answers,
        scratch,
    })
}
