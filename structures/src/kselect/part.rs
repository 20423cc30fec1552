//! Radix select of sub-lists whose keys are partly elsewhere: this process holds one part of
//! every sub-list in SVM, others (other ranks of an MPI job) hold the rest, and the
//! selection's first two digit passes are split around merges the caller does
//! ([`KSelector::count_part_svm`], [`PartCount::keep`], [`PartKept::take`]).
//!
//! 1. The device counts the top digit of every part (`radix_clear`, `radix_count`: a
//!    work-group per tile, the keys read where they are).
//! 2. The caller adds every holder's counts per sub-list (an `MPI_Allreduce`) and hands the
//!    sums back; the device keeps its parts' keys in the bucket holding each sub-list's k-th
//!    (`radix_keep`, which picks the bucket from the summed counts exactly as every other
//!    holder does), counting their second digit on the way.
//! 3. The caller sums those second-digit counts too and names each sub-list's second digit;
//!    the device packs the kept keys of both digits (`radix_take`) and the host reads them in
//!    one piece: about 1/65,536 of the keys for spread-out keys. (Or, for a caller that
//!    merges once, [`PartKept::all`] packs every kept key: about 1/256.)
//!
//! The caller finishes the last digits on the keys that came back, with every holder's. The
//! scratch, tile tables and kernels are kept between calls while the key type, work-group
//! size and sizes fit, as the resident path keeps its own.

use std::marker::PhantomData;
use std::sync::{Mutex, MutexGuard, TryLockError};

use asym_runtime::{Error, Result, SvmBuffer, SvmElement};

use super::device_radix::{radix_program, tiled_spec, DeviceRadix, RadixBuffers};
use super::{KSelector, Key};

/// The device site of the last part count, kept while later calls fit in it.
#[derive(Default)]
pub(super) struct PartCache(Mutex<Option<PartSite>>);

struct PartSite {
    /// The build options (key type, work-group size) and the tile size.
    made_for: (String, usize),
    radix: DeviceRadix,
    /// Bound where the kernels want them; the part path never launches the kernels that
    /// read them (`kselect_radix`, `radix_finish`).
    offsets: SvmBuffer<u32>,
    answers: SvmBuffer<i32>,
    /// As long as the keys: every tile keeps its keys in its own range.
    scratch: SvmBuffer<u32>,
    max_subs: usize,
}

impl PartSite {
    fn bind<K: SvmElement>(&mut self, keys: &SvmBuffer<K>) -> Result<()> {
        self.radix.bind(&RadixBuffers {
            keys,
            offsets: &self.offsets,
            scratch: &self.scratch,
            answers: &self.answers,
        })
    }
}

/// The top-digit counts of one part of every sub-list, on the device that holds them
/// ([`KSelector::count_part_svm`]); [`PartCount::keep`] takes the summed counts of every
/// part. The selector's part site stays locked in between.
pub struct PartCount<'a, K: Key> {
    site: MutexGuard<'a, Option<PartSite>>,
    keys: &'a SvmBuffer<K>,
    histograms: Vec<[u32; 256]>,
}

impl<K: Key> std::fmt::Debug for PartCount<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartCount")
            .field("sublists", &self.histograms.len())
            .finish()
    }
}

impl KSelector {
    /// Counts the top digit (the key's order image's highest byte) of every sub-list part
    /// `keys[offsets[i]..offsets[i + 1]]` on this selector's device, reading the keys where
    /// they are (the buffer must not be mapped on the host). Parts may be empty; `offsets`
    /// need not start at 0.
    pub fn count_part_svm<'a, K: Key>(
        &'a self,
        keys: &'a SvmBuffer<K>,
        offsets: &[usize],
    ) -> Result<PartCount<'a, K>> {
        let rt = self.device_runtime()?;
        check_offsets(offsets, keys.len())?;
        let subs = offsets.len() - 1;
        let (wg, made_for) = tiled_spec::<K>(rt, self.work_group, self.radix_tile)?;
        let tile = made_for.1;
        // A part count holds the site until its keep: a second one on this selector while
        // the first is open would wait for ever, so it is refused.
        let mut site = match self.part.0.try_lock() {
            Ok(site) => site,
            Err(TryLockError::WouldBlock) => {
                return Err(Error::InvalidArgument(
                    "this selector has a part count open: keep or drop it before the next".into(),
                ))
            }
            Err(TryLockError::Poisoned(_)) => {
                return Err(Error::thread_lost(
                    "a part count",
                    "a part count on this selector panicked",
                ))
            }
        };
        if site.as_ref().is_none_or(|s| {
            s.made_for != made_for || s.scratch.len() < keys.len() || s.max_subs < subs
        }) {
            // Free the old buffers before making new ones.
            *site = None;
            let program = radix_program(rt, &made_for.0)?;
            let max_keys = keys.len().max(1);
            let radix = DeviceRadix::new(rt, &program, None, wg, tile, max_keys, subs)?;
            *site = Some(PartSite {
                made_for,
                radix,
                offsets: rt.alloc::<u32>(1)?,
                answers: rt.alloc::<i32>(1)?,
                scratch: rt.alloc::<u32>(max_keys)?,
                max_subs: subs,
            });
        }
        let s = site.as_mut().expect("filled above");
        s.bind(keys)?;
        let counted = s
            .radix
            .launch_count(offsets)
            .and_then(|l| l.wait_timed().map(drop))
            .and_then(|()| s.radix.top_histograms(subs));
        // The site is kept between calls: it must not hold the caller's buffer alive.
        s.radix.unbind_keys(&s.scratch)?;
        let histograms = counted?;
        for (i, h) in histograms.iter().enumerate() {
            let counted: usize = h.iter().map(|&c| c as usize).sum();
            let len = offsets[i + 1] - offsets[i];
            if counted != len {
                return Err(Error::corrupted(
                    "a part count",
                    format!("sub-list {i}: the device counted {counted} of its {len} keys"),
                ));
            }
        }
        Ok(PartCount {
            site,
            keys,
            histograms,
        })
    }
}

impl<'a, K: Key> PartCount<'a, K> {
    /// This part's top-digit histogram of every sub-list.
    pub fn histograms(&self) -> &[[u32; 256]] {
        &self.histograms
    }

    /// Keeps this part's keys in the bucket holding the `k`-th smallest (1-based) of each
    /// sub-list as `merged` (every part's histograms added up) places it, on the device; the
    /// kept keys' second-digit histograms come back ([`PartKept::histograms`]), the keys
    /// stay there until [`PartKept::take`] or [`PartKept::all`].
    pub fn keep(mut self, merged: &[[u32; 256]], k: usize) -> Result<PartKept<'a, K>> {
        let subs = self.histograms.len();
        if merged.len() != subs {
            return Err(Error::InvalidArgument(format!(
                "{} merged histograms for {subs} sub-lists",
                merged.len()
            )));
        }
        for (i, (m, own)) in merged.iter().zip(&self.histograms).enumerate() {
            let total: u64 = m.iter().map(|&c| c as u64).sum();
            if k == 0 || k as u64 > total || m.iter().zip(own).any(|(a, b)| a < b) {
                return Err(Error::InvalidArgument(format!(
                    "sub-list {i}: merged counts of {total} keys cannot hold this part's \
                     counts and a k-th of {k}"
                )));
            }
        }
        let s = self.site.as_mut().expect("filled by the count");
        s.bind(self.keys)?;
        let second = s
            .radix
            .launch_keep(merged, k)
            .and_then(|l| l.wait_timed().map(drop))
            .and_then(|()| s.radix.second_histograms(subs));
        s.radix.unbind_keys(&s.scratch)?;
        let histograms = second?;
        let picked = merged.iter().map(|m| pick_top(m, k)).collect::<Vec<u32>>();
        for (i, (h, own)) in histograms.iter().zip(&self.histograms).enumerate() {
            let kept: u32 = h.iter().sum();
            if kept != own[picked[i] as usize] {
                return Err(Error::corrupted(
                    "a part's keep",
                    format!(
                        "sub-list {i}: {kept} keys kept of the {} in the k-th's bucket",
                        own[picked[i] as usize]
                    ),
                ));
            }
        }
        Ok(PartKept {
            site: self.site,
            top: picked,
            histograms,
            key: PhantomData,
        })
    }
}

/// This part's keys of the bucket holding each sub-list's k-th, kept on the device
/// ([`PartCount::keep`]), with their second-digit histograms.
pub struct PartKept<'a, K: Key> {
    site: MutexGuard<'a, Option<PartSite>>,
    /// The top digit each sub-list's k-th has.
    top: Vec<u32>,
    histograms: Vec<[u32; 256]>,
    key: PhantomData<K>,
}

impl<K: Key> std::fmt::Debug for PartKept<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartKept")
            .field("sublists", &self.histograms.len())
            .finish()
    }
}

impl<K: Key> PartKept<'_, K> {
    /// The second-digit histogram of each sub-list's kept keys (this part's).
    pub fn histograms(&self) -> &[[u32; 256]] {
        &self.histograms
    }

    /// The kept keys whose second digit is `second[s]` for sub-list s (where every part's
    /// second-digit histograms added up place its k-th), by sub-list, as images
    /// ([`Key::to_image`]): about 1/65,536 of a part's keys for spread-out
    /// keys, packed on the device and read back in one piece.
    pub fn take(mut self, second: &[u32]) -> Result<Vec<Vec<u32>>> {
        let subs = self.histograms.len();
        if second.len() != subs || second.iter().any(|&d| d > 255) {
            return Err(Error::InvalidArgument(format!(
                "{} second digits (each 0 to 255) for {subs} sub-lists",
                second.len()
            )));
        }
        let want: Vec<u32> = self
            .top
            .iter()
            .zip(second)
            .map(|(&t, &d)| t << 8 | d)
            .collect();
        let counts: Vec<u32> = self
            .histograms
            .iter()
            .zip(second)
            .map(|(h, &d)| h[d as usize])
            .collect();
        let s = self.site.as_mut().expect("filled by the count");
        s.radix.take_keys(&want, &counts)
    }

    /// Every kept key, by sub-list, as images ([`Key::to_image`]): about 1/256 of a part's
    /// keys for spread-out keys (a caller that merges once).
    pub fn all(mut self) -> Result<Vec<Vec<u32>>> {
        let subs = self.histograms.len();
        let s = self.site.as_mut().expect("filled by the count");
        s.radix.kept_keys(subs)
    }
}

/// The top digit's bucket holding the `k`-th (1-based) of a histogram, as `radix_keep` picks
/// it from the same counts.
fn pick_top(h: &[u32; 256], k: usize) -> u32 {
    let mut below = 0u64;
    for (b, &c) in h.iter().enumerate() {
        below += c as u64;
        if below >= k as u64 {
            return b as u32;
        }
    }
    255
}

fn check_offsets(offsets: &[usize], keys: usize) -> Result<()> {
    if offsets.len() < 2 {
        return Err(Error::InvalidArgument(
            "a part count needs at least one sub-list (two offsets)".into(),
        ));
    }
    if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(Error::InvalidArgument(format!(
            "part offsets decrease at sub-list {i} ({} then {})",
            offsets[i],
            offsets[i + 1]
        )));
    }
    let end = offsets[offsets.len() - 1];
    if end > keys {
        return Err(Error::out_of_range(
            "the last part offset",
            end,
            format!("must be at most the buffer's {keys} keys"),
        ));
    }
    if end > u32::MAX as usize {
        return Err(Error::too_large("a part's keys", end, u32::MAX));
    }
    Ok(())
}
