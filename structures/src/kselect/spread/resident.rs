//! Keys resident across the devices of a set ([`SpreadKeys`]): each member holds a run of whole
//! sub-lists in its own SVM, uploaded once, and a selection runs the device radix on every
//! member at once where its keys are.

use super::super::{KSelector, Key, SelectStats, Sublists};
use super::*;

/// A list set's keys resident on the devices of a set ([`KSelector::upload_spread`]): each
/// member holds a run of whole sub-lists in its own SVM.
pub struct SpreadKeys<K: Key> {
    parts: Vec<ResidentPart<K>>,
    /// Sub-list boundaries of the whole list set.
    offs: Vec<usize>,
    /// The shortest sub-list's length (the largest k), found once at upload.
    shortest: usize,
}

struct ResidentPart<K: Key> {
    member: usize,
    /// The sub-lists this member holds, of the whole set's.
    sublists: std::ops::Range<usize>,
    /// Their boundaries within the part.
    cut: Sublists,
    keys: asym_runtime::SvmBuffer<K>,
}

impl<K: Key> std::fmt::Debug for SpreadKeys<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpreadKeys")
            .field("shares", &self.shares())
            .finish()
    }
}

impl<K: Key> SpreadKeys<K> {
    /// Per part: the member holding it and its sub-lists.
    pub fn shares(&self) -> Vec<(usize, std::ops::Range<usize>)> {
        self.parts
            .iter()
            .map(|p| (p.member, p.sublists.clone()))
            .collect()
    }

    /// Keys in all parts.
    pub fn len(&self) -> usize {
        self.offs.last().copied().unwrap_or(0)
    }

    /// Whether no key is held (never: an upload needs keys).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl KSelector {
    /// Uploads `data`, cut by `sublists`, to the devices (a set's members, or the one
    /// device): each member a run of whole sub-lists, as many keys as its resident speed
    /// measured by earlier [`KSelector::select_spread_svm`] calls gives it (the kernels' own
    /// time where the device profiles them, else the call's; equal shares of the
    /// keys until each is measured; a member below 2 % of the whole speed holds none). `k`
    /// is checked as a selection would. Upload again to follow newer measurements.
    pub fn upload_spread<K: Key>(
        &self,
        data: &[K],
        sublists: &Sublists,
        k: usize,
    ) -> Result<SpreadKeys<K>> {
        let offs = sublists.boundaries(data.len(), k)?;
        let n = offs.len() - 1;
        let devices: Vec<(usize, &Runtime)> = if self.members.is_empty() {
            vec![(0, self.device_runtime()?)]
        } else {
            self.members
                .iter()
                .enumerate()
                .filter(|(i, _)| self.is_live(*i))
                .map(|(i, m)| (i, &m.rt))
                .collect()
        };
        if devices.is_empty() {
            return Err(self.failures().all_failed());
        }
        let rates: Vec<f64> = devices
            .iter()
            .map(|(i, _)| {
                self.members.get(*i).map_or(1.0, |m| {
                    *m.resident_keys_per_s
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                })
            })
            .collect();
        let weights: Vec<f64> = if rates.iter().any(|&r| r <= 0.0) {
            vec![1.0; rates.len()]
        } else {
            let sum: f64 = rates.iter().sum();
            rates
                .iter()
                .map(|&r| if r / sum < 0.02 { 0.0 } else { r })
                .collect()
        };
        let sum: f64 = weights.iter().sum();
        // Cut at sub-list boundaries nearest each member's share of the keys.
        let mut parts = Vec::new();
        let mut start = 0;
        let mut acc = 0.0;
        for (j, ((member, rt), w)) in devices.iter().zip(&weights).enumerate() {
            acc += w / sum;
            let end = if j + 1 == devices.len() {
                n
            } else {
                let target = (acc * data.len() as f64) as usize;
                offs.partition_point(|&o| o < target).min(n).max(start)
            };
            if end > start {
                let (a, b) = (offs[start], offs[end]);
                let mut keys = rt.alloc::<K>(b - a)?;
                keys.write(&data[a..b])?;
                parts.push(ResidentPart {
                    member: *member,
                    sublists: start..end,
                    // Equal sub-lists stay `Equal`: explicit offsets cost each selection a
                    // copy and a check of one word per sub-list on the host.
                    cut: match sublists {
                        Sublists::Equal(len) => Sublists::Equal(*len),
                        Sublists::Offsets(_) => {
                            Sublists::Offsets(offs[start..=end].iter().map(|o| o - a).collect())
                        }
                    },
                    keys,
                });
            }
            start = end;
        }
        let shortest = offs.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(0);
        Ok(SpreadKeys {
            parts,
            offs,
            shortest,
        })
    }

    /// The k-th smallest key of every sub-list of keys resident across the devices: every
    /// member runs the device radix on its part at once (see [`KSelector::select_svm`]), the
    /// answers in sub-list order; each member's share and time in the stats' workers.
    pub fn select_spread_svm<K: Key>(
        &self,
        keys: &SpreadKeys<K>,
        k: usize,
    ) -> Result<(Vec<K>, SelectStats)> {
        let n = keys.offs.len() - 1;
        let shortest = keys.shortest;
        if k == 0 || k > shortest {
            return Err(Error::out_of_range(
                "k =",
                k,
                format!("out of range: it must be between 1 and the shortest sub-list's length, {shortest}"),
            ));
        }
        // Every member's launches are enqueued (and flushed) before any is waited for, all
        // from this thread: the devices run at once with no driver thread to start and join.
        let runs: Vec<Result<_>> = keys
            .parts
            .iter()
            .map(|part| {
                let (rt, cache) = match self.members.get(part.member) {
                    Some(m) => (&m.rt, &m.resident),
                    None if self.members.is_empty() && keys.parts.len() == 1 => {
                        (self.device_runtime()?, &self.resident)
                    }
                    None => {
                        return Err(Error::InvalidArgument(format!(
                            "keys uploaded to member {} of a device set; this selector has {} \
                             members: select with the selector that uploaded them",
                            part.member,
                            self.members.len()
                        )))
                    }
                };
                self.launch_resident(rt, cache, &part.keys, &part.cut, k)
            })
            .collect();
        let results: Vec<Result<(Vec<K>, SelectStats)>> = runs
            .into_iter()
            .map(|run| run.and_then(|r| r.finish()))
            .collect();
        let mut answers = Vec::with_capacity(n);
        let mut stats = SelectStats {
            device_strategy: Some(super::super::Strategy::Radix),
            ..Default::default()
        };
        for (part, result) in keys.parts.iter().zip(results) {
            let (a, s) = result?;
            answers.extend(a);
            let part_keys = keys.offs[part.sublists.end] - keys.offs[part.sublists.start];
            let busy_s = s.device_times.wait_s;
            // The device's own time where the queue profiles it: the members run at once, and
            // on the H200 machine PoCL's kernels on every host core stretched NVIDIA's host
            // side (launch, wait, read-back) up to five-fold, which wall time books as NVIDIA's.
            let measured_s = if s.device_times.kernel_s > 0.0 {
                s.device_times.kernel_s
            } else {
                busy_s
            };
            if let Some(m) = self.members.get(part.member) {
                *m.resident_keys_per_s
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = part_keys as f64 / measured_s.max(1e-9);
            }
            stats.device_sublists += s.device_sublists;
            stats.launches += s.launches;
            stats.device_times.kernel_s += s.device_times.kernel_s;
            stats.device_times.wait_s = stats.device_times.wait_s.max(busy_s);
            let label = self
                .members
                .get(part.member)
                .map_or_else(|| "device".into(), |m| m.rt.profile().label());
            stats.workers.push(MemberReport {
                pieces: part.sublists.len() as u64,
                items: part_keys as u64,
                launches: s.launches as u64,
                busy_s,
                ..MemberReport::of(Worker::Device(part.member), label)
            });
        }
        Ok((answers, stats))
    }
}
