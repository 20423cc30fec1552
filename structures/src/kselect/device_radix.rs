//! Radix select on the device (`kernels/kselect_radix.cl`), for both of its users: keys the
//! application keeps in SVM (`resident.rs`) and keys staged in chunks (`device.rs`).
//!
//! A launch runs one of two forms, chosen by the longest sub-list of the launch:
//! - **whole**: one work-group per sub-list (`kselect_radix`), everything in local memory;
//! - **tiled**: when a sub-list is longer than a tile, every sub-list is cut into tiles of at
//!   most `tile` keys, a work-group each, with global histograms merged between four
//!   launches (`radix_clear`, `radix_count`, `radix_keep`, `radix_finish`). 128 sub-lists of
//!   2^21 keys are 128 work-groups whole (fewer than a large GPU's compute units) but 4096
//!   tiled.

use asym_runtime::{Error, Kernel, Launch, Program, Queue, Result, Runtime, SvmBuffer, SvmElement};

use super::Key;

/// Work-items per work-group: a multiple of every warp and wavefront size, within every
/// device's limit that asym runs on.
const RADIX_WG: usize = 256;

/// Sub-lists at most this long run whole on work-groups of [`SHORT_WG`] work-items, which
/// hold the keys in registers (the kernel's KEEP = 2048 / WG keys each, read once): a
/// short sub-list costs its work-group's fixed steps (barriers, the bucket pick) more than
/// its loads, and a small work-group makes those steps cheap.
const SHORT_SUBLIST: usize = 2048;
const SHORT_WG: usize = 64;

/// Keys per tile when the selector does not set one: see docs/decisions.md for the sweep.
pub(super) const DEFAULT_TILE: usize = 1 << 16;

/// Counters per sub-list in the global histograms (two digits of 256 buckets).
const HIST_WORDS: usize = 512;

/// The radix kernel's work-group size on `rt`'s device for sub-lists at most `longest` keys
/// long (`requested`, else 64 up to [`SHORT_SUBLIST`] keys and 256 above, or the device's
/// limit), checked against its limits.
pub(super) fn radix_work_group(
    rt: &Runtime,
    requested: Option<usize>,
    longest: usize,
) -> Result<usize> {
    let default = if longest <= SHORT_SUBLIST {
        SHORT_WG
    } else {
        RADIX_WG
    };
    let wg = requested.unwrap_or_else(|| default.min(rt.profile().max_work_group_size).max(1));
    rt.check_work_group(wg, "run radix select")?;
    Ok(wg)
}

/// The radix program's build options for keys of type `K`.
pub(super) fn radix_options<K: Key>(wg: usize) -> String {
    format!("-DWG={wg} -DKEY_MAP={}", K::KEY_MAP)
}

/// The work-group size and what a site that always runs tiled is made for (the build
/// options for keys of type `K`, and the tile size: `tile`, or the default for 0).
pub(super) fn tiled_spec<K: Key>(
    rt: &Runtime,
    work_group: Option<usize>,
    tile: usize,
) -> Result<(usize, (String, usize))> {
    // Tiles are long: the work-group for long sub-lists.
    let wg = radix_work_group(rt, work_group, usize::MAX)?;
    let tile = if tile == 0 { DEFAULT_TILE } else { tile };
    Ok((wg, (radix_options::<K>(wg), tile)))
}

/// The radix program built with `options` ([`radix_options`]), from the runtime's cache.
pub(super) fn radix_program(rt: &Runtime, options: &str) -> Result<Program> {
    rt.program_with(&asym_kernels::KSELECT_RADIX, options)
}

/// The five kernels of one radix launch site, with the tile tables they share, bound to one
/// set of keys, offsets, scratch and answers buffers.
pub(super) struct DeviceRadix {
    rt: Runtime,
    queue: Option<Queue>,
    wg: usize,
    tile: usize,
    whole: Kernel,
    clear: Kernel,
    count: Kernel,
    keep: Kernel,
    finish: Kernel,
    compact: Kernel,
    take: Kernel,
    /// Kept keys packed for the host ([`DeviceRadix::kept_keys`], [`DeviceRadix::take_keys`]),
    /// grown as needed.
    packed: Option<SvmBuffer<u32>>,
    /// `radix_take`'s want, base and fill words per sub-list.
    take_table: SvmBuffer<u32>,
    /// (sub-list, first key, end) per tile.
    tiles: SvmBuffer<u32>,
    /// First tile per sub-list, and the end.
    first_tile: SvmBuffer<u32>,
    hist: SvmBuffer<u32>,
    kept: SvmBuffer<u32>,
    max_subs: usize,
    /// The cut the tile tables hold (empty: none yet), and the tables themselves.
    tables_for: Vec<usize>,
    tiles_host: Vec<u32>,
}

/// The buffers one radix launch reads and writes. Keys and scratch hold the sub-lists at
/// `offsets` (relative to the launch); scratch is as long as the keys.
pub(super) struct RadixBuffers<'a, T: SvmElement> {
    pub(super) keys: &'a SvmBuffer<T>,
    pub(super) offsets: &'a SvmBuffer<u32>,
    pub(super) scratch: &'a SvmBuffer<u32>,
    pub(super) answers: &'a SvmBuffer<i32>,
}

/// The launches of one radix selection in flight (one, or four when tiled).
pub(super) struct RadixLaunch {
    launches: Vec<Launch>,
}

impl RadixLaunch {
    /// Kernel launches enqueued.
    pub(super) fn len(&self) -> usize {
        self.launches.len()
    }

    /// Waits for every launch; the device time of all of them (`None` without profiling).
    pub(super) fn wait_timed(self) -> Result<Option<std::time::Duration>> {
        let mut total = Some(std::time::Duration::ZERO);
        for l in self.launches {
            let t = l.wait_timed()?;
            total = total.zip(t).map(|(a, b)| a + b);
        }
        Ok(total)
    }
}

impl DeviceRadix {
    /// Kernels from `program` ([`radix_program`], for work-group size `wg`) for
    /// launches of up to `max_subs` sub-lists holding up to `max_keys` keys, on `queue` (the
    /// runtime's main queue when `None`); sub-lists longer than `tile` keys run tiled (0:
    /// never).
    pub(super) fn new(
        rt: &Runtime,
        program: &Program,
        queue: Option<Queue>,
        wg: usize,
        tile: usize,
        max_keys: usize,
        max_subs: usize,
    ) -> Result<Self> {
        let kernel = |name: &str| Kernel::from_program(rt, program, name);
        let max_tiles = if tile == 0 {
            1
        } else {
            max_keys.div_ceil(tile) + max_subs
        };
        let alloc = |len: usize| match &queue {
            Some(q) => rt.alloc_on::<u32>(len.max(1), q),
            None => rt.alloc::<u32>(len.max(1)),
        };
        let tiles = alloc(3 * max_tiles)?;
        let first_tile = alloc(max_subs + 1)?;
        let hist = alloc(HIST_WORDS * max_subs)?;
        let kept = alloc(max_tiles)?;
        let mut compact = kernel("radix_compact")?;
        compact.arg_svm("tiles", &tiles)?.arg_svm("kept", &kept)?;
        let take_table = alloc(3 * max_subs)?;
        let mut take = kernel("radix_take")?;
        take.arg_svm("tiles", &tiles)?
            .arg_svm("kept", &kept)?
            .arg_svm("table", &take_table)?;
        Ok(DeviceRadix {
            rt: rt.clone(),
            wg,
            tile,
            whole: kernel("kselect_radix")?,
            clear: kernel("radix_clear")?,
            count: kernel("radix_count")?,
            keep: kernel("radix_keep")?,
            finish: kernel("radix_finish")?,
            compact,
            take,
            packed: None,
            take_table,
            tiles,
            first_tile,
            hist,
            kept,
            max_subs,
            tables_for: Vec::new(),
            tiles_host: Vec::new(),
            queue,
        })
    }

    /// Binds the buffers every later launch uses.
    pub(super) fn bind<T: SvmElement>(&mut self, b: &RadixBuffers<'_, T>) -> Result<()> {
        self.whole
            .arg_svm("keys", b.keys)?
            .arg_svm("offsets", b.offsets)?
            .arg_svm("answers", b.answers)?
            .arg_svm("scratch", b.scratch)?;
        self.clear.arg_svm("hist", &self.hist)?;
        self.count
            .arg_svm("keys", b.keys)?
            .arg_svm("tiles", &self.tiles)?
            .arg_svm("hist", &self.hist)?;
        self.keep
            .arg_svm("keys", b.keys)?
            .arg_svm("tiles", &self.tiles)?
            .arg_svm("hist", &self.hist)?
            .arg_svm("scratch", b.scratch)?
            .arg_svm("kept", &self.kept)?;
        self.compact.arg_svm("scratch", b.scratch)?;
        self.take.arg_svm("scratch", b.scratch)?;
        self.finish
            .arg_svm("scratch", b.scratch)?
            .arg_svm("tiles", &self.tiles)?
            .arg_svm("first_tile", &self.first_tile)?
            .arg_svm("hist", &self.hist)?
            .arg_svm("kept", &self.kept)?
            .arg_svm("answers", b.answers)?;
        Ok(())
    }

    /// Binds `placeholder` where the keys were, so this site no longer holds the caller's
    /// buffer alive (the resident path keeps its site between calls).
    pub(super) fn unbind_keys(&mut self, placeholder: &SvmBuffer<u32>) -> Result<()> {
        self.whole.arg_svm("keys", placeholder)?;
        self.count.arg_svm("keys", placeholder)?;
        self.keep.arg_svm("keys", placeholder)?;
        Ok(())
    }

    /// Enqueues the selection of the k-th of every sub-list at `offs` (relative to the keys
    /// buffer bound; the same cut the bound offsets buffer holds), `longest` keys the
    /// longest of them ([`longest_sublist`]: a caller that keeps its cut scans it once).
    pub(super) fn launch(
        &mut self,
        offs: &[usize],
        longest: usize,
        k: usize,
    ) -> Result<RadixLaunch> {
        let subs = self.check_subs(offs)?;
        let k = k_word(k)?;
        let wg = self.wg;
        if self.tile == 0 || longest <= self.tile {
            self.whole.arg_scalar("k", k)?;
            return Ok(RadixLaunch {
                launches: vec![enqueue(&self.queue, &mut self.whole, subs, wg, true)?],
            });
        }
        self.keep.arg_scalar("k", k)?;
        self.finish.arg_scalar("k", k)?;
        // Four launches back to back: only the last submits the queue (one flush, not four).
        let mut tiled = self.count_launches(offs, false)?;
        let n_tiles = self.tiles_host.len() / 3;
        tiled
            .launches
            .push(enqueue(&self.queue, &mut self.keep, n_tiles, wg, false)?);
        tiled
            .launches
            .push(enqueue(&self.queue, &mut self.finish, subs, wg, true)?);
        Ok(tiled)
    }
}

impl DeviceRadix {
    /// Writes the tile tables for the cut `offs` unless they hold it already; the number of
    /// tiles.
    fn write_tables(&mut self, offs: &[usize]) -> Result<usize> {
        if self.tables_for == offs {
            return Ok(self.tiles_host.len() / 3);
        }
        let (tiles, first) = cut_tiles(offs, self.tile);
        let n_tiles = tiles.len() / 3;
        if n_tiles > self.kept.len() {
            return Err(Error::InvalidArgument(format!(
                "{n_tiles} tiles on buffers made for {}",
                self.kept.len()
            )));
        }
        self.tables_for.clear();
        let mut map = self.tiles.map_range_for_overwrite(0, tiles.len())?;
        map.copy_from_slice(&tiles);
        map.unmap()?;
        let mut map = self.first_tile.map_range_for_overwrite(0, first.len())?;
        map.copy_from_slice(&first);
        map.unmap()?;
        self.tables_for.extend_from_slice(offs);
        self.tiles_host = tiles;
        Ok(n_tiles)
    }
}

/// The device's half of a sub-list split by range with the latency threads (Cooperative
/// radix on few long sub-lists): the device counts the top digit of its ranges, the host
/// merges those counts with its own and writes the merged histograms back, and the device
/// keeps its ranges' keys of the k-th's bucket for the host to finish.
impl DeviceRadix {
    /// Counts the top digit of every sub-list at `offs` into the global histograms (the
    /// tiled kernels at any length).
    pub(super) fn launch_count(&mut self, offs: &[usize]) -> Result<RadixLaunch> {
        self.count_launches(offs, true)
    }

    /// [`DeviceRadix::launch_count`], the queue submitted after it only if `submit`.
    fn count_launches(&mut self, offs: &[usize], submit: bool) -> Result<RadixLaunch> {
        let subs = self.check_subs(offs)?;
        let n_tiles = self.write_tables(offs)?;
        let words = HIST_WORDS * subs;
        self.clear.arg_scalar("words", words as u32)?;
        let clear_wg = self.clear_wg();
        let launches = vec![
            enqueue(
                &self.queue,
                &mut self.clear,
                words.div_ceil(clear_wg),
                clear_wg,
                false,
            )?,
            enqueue(&self.queue, &mut self.count, n_tiles, self.wg, submit)?,
        ];
        Ok(RadixLaunch { launches })
    }

    /// The top-digit histogram of each of the `subs` sub-lists counted by
    /// [`DeviceRadix::launch_count`] (after its launches finished).
    pub(super) fn top_histograms(&mut self, subs: usize) -> Result<Vec<[u32; 256]>> {
        self.digit_histograms(subs, 0)
    }

    /// The histograms of digit `digit` (0: top, 1: second) of the `subs` sub-lists.
    fn digit_histograms(&mut self, subs: usize, digit: usize) -> Result<Vec<[u32; 256]>> {
        let words = self.hist.read_range(0, HIST_WORDS * subs)?;
        Ok(words
            .chunks(HIST_WORDS)
            .map(|c| {
                c[256 * digit..256 * (digit + 1)]
                    .try_into()
                    .expect("a histogram of 256 counters")
            })
            .collect())
    }

    /// Writes the merged top-digit histograms (the device's counts and the host's) and keeps,
    /// in each tile's range of scratch, the tile's keys in the bucket holding the `k`-th
    /// (1-based) of its sub-list.
    pub(super) fn launch_keep(&mut self, merged: &[[u32; 256]], k: usize) -> Result<RadixLaunch> {
        let subs = merged.len();
        let k = k_word(k)?;
        let mut map = self.hist.map_range_for_overwrite(0, HIST_WORDS * subs)?;
        for (words, top) in map.chunks_mut(HIST_WORDS).zip(merged) {
            words[..256].copy_from_slice(top);
            words[256..].fill(0);
        }
        map.unmap()?;
        self.keep.arg_scalar("k", k)?;
        let n_tiles = self.tiles_host.len() / 3;
        let launches = vec![enqueue(
            &self.queue,
            &mut self.keep,
            n_tiles,
            self.wg,
            true,
        )?];
        Ok(RadixLaunch { launches })
    }

    /// After [`DeviceRadix::launch_keep`] finished: the keys each sub-list's tiles kept, by
    /// sub-list (unsigned images, as the host's radix holds them). `radix_compact` packs
    /// them on the device first, so they come back in one read (not one per tile: 4,096
    /// reads of 2^28 keys in tiles of 2^16 took 60 ms on an H200).
    pub(super) fn kept_keys(&mut self, subs: usize) -> Result<Vec<Vec<u32>>> {
        let n_tiles = self.tiles_host.len() / 3;
        let kept = self.kept.read_range(0, n_tiles)?;
        let total: usize = kept.iter().map(|&c| c as usize).sum();
        let mut out = vec![Vec::new(); subs];
        if total == 0 {
            return Ok(out);
        }
        self.ensure_packed(total)?;
        enqueue(&self.queue, &mut self.compact, n_tiles, self.wg, true)?.wait()?;
        let packed = self.packed.as_mut().expect("made above");
        let keys = packed.read_range(0, total)?;
        let mut at = 0;
        for (row, &count) in self.tiles_host.chunks(3).zip(&kept) {
            let count = count as usize;
            out[row[0] as usize].extend_from_slice(&keys[at..at + count]);
            at += count;
        }
        Ok(out)
    }

    /// After [`DeviceRadix::launch_keep`] finished: the second-digit histogram of each of
    /// the `subs` sub-lists' kept keys (`radix_keep` counts it as it keeps).
    pub(super) fn second_histograms(&mut self, subs: usize) -> Result<Vec<[u32; 256]>> {
        self.digit_histograms(subs, 1)
    }

    /// After [`DeviceRadix::launch_keep`] finished: the kept keys whose top 16 bits are
    /// `want[s]`, by sub-list, where `counts[s]` (from [`DeviceRadix::second_histograms`])
    /// says how many sub-list s holds.
    pub(super) fn take_keys(&mut self, want: &[u32], counts: &[u32]) -> Result<Vec<Vec<u32>>> {
        let subs = want.len();
        let mut bases = Vec::with_capacity(subs + 1);
        bases.push(0usize);
        for &c in counts {
            bases.push(bases[bases.len() - 1] + c as usize);
        }
        let total = bases[subs];
        let mut out = vec![Vec::new(); subs];
        if total == 0 {
            return Ok(out);
        }
        self.ensure_packed(total)?;
        let mut map = self.take_table.map_range_for_overwrite(0, 3 * subs)?;
        map[..subs].copy_from_slice(want);
        for (into, &b) in map[subs..2 * subs].iter_mut().zip(&bases) {
            *into = b as u32;
        }
        map[2 * subs..].fill(0);
        map.unmap()?;
        self.take.arg_scalar("subs", subs as u32)?;
        let n_tiles = self.tiles_host.len() / 3;
        enqueue(&self.queue, &mut self.take, n_tiles, self.wg, true)?.wait()?;
        let filled = self.take_table.read_range(2 * subs, subs)?;
        if let Some(s) = (0..subs).find(|&s| filled[s] != counts[s]) {
            return Err(Error::corrupted(
                "a part's kept keys",
                format!(
                    "sub-list {s}: {} keys taken of the {} its histogram counts",
                    filled[s], counts[s]
                ),
            ));
        }
        let packed = self.packed.as_mut().expect("made above");
        let keys = packed.read_range(0, total)?;
        for (s, into) in out.iter_mut().enumerate() {
            into.extend_from_slice(&keys[bases[s]..bases[s + 1]]);
        }
        Ok(out)
    }

    /// Makes the packed buffer hold `total` keys at least (a quarter more when it grows, so
    /// that a slowly growing count does not allocate on every call).
    fn ensure_packed(&mut self, total: usize) -> Result<()> {
        if self.packed.as_ref().is_some_and(|p| p.len() >= total) {
            return Ok(());
        }
        self.packed = None;
        let len = total + total / 4;
        let packed = match &self.queue {
            Some(q) => self.rt.alloc_on::<u32>(len, q)?,
            None => self.rt.alloc::<u32>(len)?,
        };
        self.compact.arg_svm("packed", &packed)?;
        self.take.arg_svm("packed", &packed)?;
        self.packed = Some(packed);
        Ok(())
    }

    fn check_subs(&self, offs: &[usize]) -> Result<usize> {
        let subs = offs.len().saturating_sub(1);
        if subs == 0 || subs > self.max_subs {
            return Err(Error::InvalidArgument(format!(
                "a radix launch of {subs} sub-lists on buffers made for {}",
                self.max_subs
            )));
        }
        Ok(subs)
    }

    fn clear_wg(&self) -> usize {
        64.min(self.rt.profile().max_work_group_size.max(1))
    }
}

/// The length of the longest sub-list at `offs`.
pub(super) fn longest_sublist(offs: &[usize]) -> usize {
    offs.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
}

/// k as the kernels take it.
fn k_word(k: usize) -> Result<u32> {
    u32::try_from(k).map_err(|_| Error::too_large("k", k, u32::MAX))
}

/// Enqueues `kernel` as `groups` work-groups of `local` on `queue` (the runtime's main queue
/// when `None`), submitting the queue to the device if `submit` (else a later launch's
/// submission, or the first wait, carries it).
fn enqueue(
    queue: &Option<Queue>,
    kernel: &mut Kernel,
    groups: usize,
    local: usize,
    submit: bool,
) -> Result<Launch> {
    let (global, local) = (groups * local, Some(local));
    match (queue, submit) {
        (Some(q), true) => kernel.launch_on(q, global, local),
        (Some(q), false) => kernel.launch_unflushed_on(q, global, local),
        (None, true) => kernel.launch(global, local),
        (None, false) => kernel.launch_unflushed(global, local),
    }
}

/// Cuts every sub-list at `offs` into tiles of at most `tile` keys, as even as possible:
/// (sub-list, first key, end) per tile, and each sub-list's first tile (and the end).
fn cut_tiles(offs: &[usize], tile: usize) -> (Vec<u32>, Vec<u32>) {
    let mut tiles = Vec::new();
    let mut first = Vec::with_capacity(offs.len());
    for (s, w) in offs.windows(2).enumerate() {
        first.push((tiles.len() / 3) as u32);
        let len = w[1] - w[0];
        let parts = len.div_ceil(tile).max(1);
        for p in 0..parts {
            tiles.extend([
                s as u32,
                (w[0] + len * p / parts) as u32,
                (w[0] + len * (p + 1) / parts) as u32,
            ]);
        }
    }
    first.push((tiles.len() / 3) as u32);
    (tiles, first)
}

#[cfg(test)]
mod tests {
    use super::{cut_tiles, radix_work_group, RADIX_WG, SHORT_SUBLIST, SHORT_WG};

    #[test]
    fn short_sub_lists_get_the_small_work_group_unless_one_is_asked_for() {
        let device = asym_runtime::select_device(None).expect("an OpenCL device");
        let rt = asym_runtime::Runtime::open(device, None, None).expect("runtime");
        let max = rt.profile().max_work_group_size;
        assert_eq!(
            radix_work_group(&rt, None, SHORT_SUBLIST).unwrap(),
            SHORT_WG.min(max)
        );
        assert_eq!(radix_work_group(&rt, None, 1).unwrap(), SHORT_WG.min(max));
        assert_eq!(
            radix_work_group(&rt, None, SHORT_SUBLIST + 1).unwrap(),
            RADIX_WG.min(max)
        );
        assert_eq!(radix_work_group(&rt, Some(128), 1).unwrap(), 128);
        assert!(radix_work_group(&rt, Some(max * 2), 1).is_err());
    }

    #[test]
    fn tiles_cover_every_key_once_and_stay_within_the_size() {
        for tile in [1usize, 3, 64, 1000] {
            let offs = [0usize, 1, 65, 1065, 1066, 5000];
            let (tiles, first) = cut_tiles(&offs, tile);
            assert_eq!(first.len(), offs.len());
            let mut next = 0u32;
            for (t, row) in tiles.chunks(3).enumerate() {
                let s = row[0] as usize;
                assert!(first[s] as usize <= t && t < first[s + 1] as usize);
                assert_eq!(row[1], next, "tile {t} starts where the last ended");
                assert!(row[2] > row[1] && (row[2] - row[1]) as usize <= tile);
                next = row[2];
            }
            assert_eq!(next as usize, *offs.last().unwrap());
        }
    }
}
