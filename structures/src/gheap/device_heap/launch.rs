//! The launches behind the device heap's calls: operations by ticket, bulk rebuilds, the
//! header read back and checked after each launch.

use super::*;
use asym_runtime::faults::retry_once;

impl<T: DeviceHeapKey> Inner<T> {
    /// The `n` smallest keys (at most the keys held), sorted, by ⌈n/K⌉ DELs in one launch.
    pub(super) fn delete_by_operations(&mut self, n: usize) -> Result<Vec<T>> {
        let k = self.partial.len();
        let ops: Vec<HeapOp> = (0..n.div_ceil(k))
            .map(|i| HeapOp::Delete((n - i * k).min(k)))
            .collect();
        // The DELs' results in linearization order are the sorted sequence.
        let out: Vec<T> = self
            .run(Keys::Host(&[]), &ops, false, true)?
            .deleted_in_order(k);
        if out.len() != n {
            return Err(Error::corrupted(
                "the device heap",
                format!(
                    "the device heap returned {} keys for a delete of {n} with {n} or more held",
                    out.len()
                ),
            ));
        }
        Ok(out)
    }

    /// [`Inner::delete_by_operations`] with the keys left on the device: each DEL's keys
    /// are copied from the staging buffer to their place in `dst` (runs of DELs that
    /// returned K keys each in one copy; only the DEL of fewer than K, at most one, breaks a
    /// run).
    pub(super) fn delete_to_device(&mut self, n: usize, dst: &SvmBuffer<T::Upload>) -> Result<()> {
        let k = self.partial.len();
        let ops: Vec<HeapOp> = (0..n.div_ceil(k))
            .map(|i| HeapOp::Delete((n - i * k).min(k)))
            .collect();
        let raw = self.run(Keys::Host(&[]), &ops, false, false)?;
        // (source offset, length) of each run of DEL results that lie back to back.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (seq, &len) in raw.lens.iter().enumerate() {
            let len = (len as usize).min(k);
            match runs.last_mut() {
                Some((at, run)) if *at + *run == seq * k => *run += len,
                _ => runs.push((seq * k, len)),
            }
        }
        let total: usize = runs.iter().map(|r| r.1).sum();
        if total != n {
            return Err(Error::corrupted(
                "the device heap",
                format!(
                "the device heap returned {total} keys for a delete of {n} with {n} or more held"
            ),
            ));
        }
        let io = self.staging.keys.as_ref().expect("staged by the run");
        let mut to = 0;
        let mut last = None;
        for (at, len) in runs.into_iter().filter(|r| r.1 > 0) {
            // In-order queue: the copies run one after another; the last is waited for.
            last = Some(copy_keys(&mut self.copy, io, at, dst, to, len)?);
            to += len;
        }
        last.map_or(Ok(()), Launch::wait)
    }

    /// Waits for the launches a call left in flight ([`Inner::pending`]), bounded as every
    /// wait is; a failure poisons the heap (the error reaches the caller through
    /// [`Inner::usable`]).
    pub(super) fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut launches = std::mem::take(&mut self.pending);
        for launch in &mut launches {
            if let Err(e) = retry_once(|| launch.wait_in_place()) {
                self.poisoned.get_or_insert_with(|| e.to_string());
                // Dropping the rest waits for them (bounded) or leaks their buffers.
                return;
            }
        }
        self.record_bulk_launches(&launches);
    }

    pub(super) fn usable(&self) -> Result<()> {
        match &self.poisoned {
            Some(why) => Err(Error::corrupted(
                "the device heap",
                format!("the device heap is unusable after an earlier failure ({why}); clear() it"),
            )),
            None => Ok(()),
        }
    }

    /// Makes room for `nodes` full nodes (between launches), copying the heap on the device.
    pub(super) fn reserve(&mut self, nodes: usize) -> Result<()> {
        if nodes <= self.max_nodes {
            return Ok(());
        }
        let k = self.partial.len();
        if let Some(limit) = self.limit {
            if nodes > limit {
                return Err(Error::CapacityExceeded {
                    what: format!("a device generalized heap of batches of {k} keys"),
                    capacity: limit * k + k - 1,
                });
            }
        }
        // Four times while the heap holds under 2^24 keys, then twice: each growth is three
        // driver allocations (keys, lock words, staging), 1-4 ms on the H200, and a search
        // that grows its heap from a few nodes paid them a dozen times.
        let factor = if self.max_nodes * k < (1 << 24) { 4 } else { 2 };
        let grown = nodes
            .max(self.max_nodes.saturating_mul(factor))
            .min(self.limit.unwrap_or(usize::MAX));
        let slots = tree_slots(grown);
        let keys = alloc_zeroed::<T::Repr>(&self.rt, slots * k)?;
        let used = (self.slots * k) as u64;
        if used > 0 {
            copy_keys(&mut self.copy, &self.keys, 0, &keys, 0, used as usize)?.wait()?;
        }
        let mut words = vec![0u32; slots];
        words[..self.slots].copy_from_slice(&self.words.read()?);
        let mut new_words = self.rt.alloc::<u32>(slots)?;
        new_words.write(&words)?;
        self.keys = keys;
        self.words = new_words;
        self.slots = slots;
        self.max_nodes = grown;
        self.reserve_staging()
    }

    /// Grows the staging buffer with the key array: a call's keys in or out, and a bulk
    /// call's runs (every key of the heap), then fit without an allocation in the call (an
    /// SVM allocation costs by its size on NVIDIA, more than a rebuild's own kernels:
    /// docs/benchmarks/runtime.md).
    pub(super) fn reserve_staging(&mut self) -> Result<()> {
        let k = self.partial.len();
        staged(&self.rt, &mut self.staging.keys, self.slots * k).map(|_| ())
    }

    /// The start of the staging buffer, mapped for writing the `len` keys an operation call
    /// ([`Keys::Staged`]) then inserts: the buffer is made as long as that call's `run`
    /// asks, so it finds the keys where they were written.
    pub(super) fn ops_staging(
        &mut self,
        len: usize,
    ) -> Result<asym_runtime::SvmMap<'_, T::Upload>> {
        let k = self.partial.len();
        // Grown now, as `run` would grow it: the staging buffer grows with the key array,
        // and a reallocation after the keys are written would lose them.
        self.reserve((self.count * k + self.plen + len) / k)?;
        let io = staged(&self.rt, &mut self.staging.keys, len.next_multiple_of(k))?;
        io.map_range_for_overwrite_as::<T::Upload>(0, len)
    }

    /// One launch of `ops` (checked by the caller) over the insert keys `keys`; reads back the
    /// linearization order only when `want_order`, and the DELs' keys only when `download`
    /// (else they stay in the staging buffer, `lens[seq]` keys at `seq·K`).
    pub(super) fn run(
        &mut self,
        keys: Keys<'_, T>,
        ops: &[HeapOp],
        want_order: bool,
        download: bool,
    ) -> Result<RawLaunch<T>> {
        let t_start = std::time::Instant::now();
        let k = self.partial.len();
        let n_keys = keys.len();
        let n_ops = to_u32(ops.len(), "operations in one call")?;
        let in_len = to_u32(n_keys, "keys in one call")?;
        let (words, inserted, dels) = op_words(ops, n_keys, k);
        // The most nodes this launch can reach: every insert lands before any delete.
        self.reserve((self.count * k + self.plen + inserted) / k)?;
        // Operations move keys between nodes: the layout is a heap's, no longer sorted.
        self.sorted_layout = false;
        let rt = &self.rt;
        let st = &mut self.staging;
        // The DELs' keys go after the inserted ones in the one staging buffer (whose last
        // batch is padded to K when it is sorted).
        let out_base = n_keys.next_multiple_of(k);
        let t_alloc = std::time::Instant::now();
        let io = staged(rt, &mut st.keys, out_base + dels * k)?;
        let mut alloc = t_alloc.elapsed();
        let t_copy = std::time::Instant::now();
        // Keys on the device are copied there; the sort after sees them (in-order queue).
        let uploaded = match keys {
            Keys::Host([]) | Keys::Device(_, 0) | Keys::Staged(_) => None,
            Keys::Host(keys) => {
                io.write_range(0, &T::upload(keys))?;
                None
            }
            Keys::Device(src, len) => Some(copy_keys(&mut self.copy, src, 0, io, 0, len)?),
        };
        let copy = t_copy.elapsed();
        let sorted = if n_keys == 0 {
            None
        } else {
            Some(self.bulk.sort_batches(io, 0, n_keys, k, self.wg)?)
        };
        let op_buf = staged(rt, &mut st.ops, words.len())?;
        op_buf.copy_from_host(0, &words)?;
        let t_alloc = std::time::Instant::now();
        staged(rt, &mut st.out_len, dels)?;
        staged(rt, &mut st.order, ops.len())?;
        alloc += t_alloc.elapsed();
        if let Some(p) = &mut self.profile {
            p.host_alloc_us += alloc.as_secs_f64() * 1e6;
            p.host_copy_us += copy.as_secs_f64() * 1e6;
        }
        let (Some(io), Some(op_buf), Some(out_len), Some(order)) =
            (&mut st.keys, &st.ops, &mut st.out_len, &mut st.order)
        else {
            unreachable!("staged() filled every buffer");
        };
        let mut h = self.hdr.read()?;
        h[HDR_SEQ] = 0;
        h[HDR_TICKET] = 0;
        h[HDR_ERROR] = 0;
        h[HDR_LIN] = 0;
        h[HDR_STAT_CLIMB_MERGES..].fill(0);
        h[HDR_MAX_NODES] = to_u32(self.max_nodes, "nodes")?;
        self.hdr.write(&h)?;
        let groups = self.groups.min(ops.len()).max(1);
        let kernel = match &mut self.delete {
            Some(delete) if dels == ops.len() => delete,
            _ => &mut self.run,
        };
        kernel
            .arg_svm("keys", &self.keys)?
            .arg_svm("word", &self.words)?
            .arg_svm("hdr", &self.hdr)?
            .arg_svm("partial", &self.partial)?
            .arg_scalar("slots", to_u32(self.slots, "node slots")?)?
            .arg_svm("ops", op_buf)?
            .arg_scalar("n_ops", n_ops)?
            .arg_svm("in", io)?
            .arg_scalar("in_len", in_len)?
            .arg_svm("out", io)?
            .arg_svm("out_len", out_len)?
            .arg_svm("order", order)?
            .arg_scalar("bottom_up", self.bottom_up)?
            .arg_scalar("out_base", out_base as u64)?;
        self.stats.launches += 1;
        let t_kernel_start = std::time::Instant::now();
        // From the launch on, the call has taken effect: a failed wait (the kernel may have
        // run) or a failed read is not the end. The header says how far the launch got
        // (`settle_launch` checks it, read again once if the read fails); only a header that
        // shows the launch unfinished, or cannot be read twice, makes the heap damaged.
        let waited = kernel.launch(groups * self.wg, Some(self.wg))?.wait();
        for before in [uploaded, sorted].into_iter().flatten() {
            // Done before the run (in-order queue): this lets its buffers go.
            let _ = before.wait();
        }
        let t_kernel = t_kernel_start.elapsed();
        if let Err(e) = retry_once(|| self.settle_launch(n_ops, dels)) {
            let e = match waited {
                Err(w) if !matches!(e, Error::Corrupted { .. }) => w,
                _ => e,
            };
            self.poisoned.get_or_insert_with(|| e.to_string());
            return Err(e);
        }
        let st = &mut self.staging;
        let (Some(io), Some(out_len), Some(order)) = (&mut st.keys, &mut st.out_len, &mut st.order)
        else {
            unreachable!("staged() filled every buffer");
        };
        // The deleted keys live only here now: read again once rather than lose them.
        let (lens, out) = match dels {
            0 => (Vec::new(), Vec::new()),
            _ if !download => (retry_once(|| out_len.read_range(0, dels))?, Vec::new()),
            _ => (
                retry_once(|| out_len.read_range(0, dels))?,
                T::download(retry_once(|| {
                    io.read_range_as::<T::Upload>(out_base, dels * k)
                })?),
            ),
        };
        let order = if want_order {
            retry_once(|| order.read_range(0, ops.len()))?
        } else {
            Vec::new()
        };
        if let Some(p) = &mut self.profile {
            p.host_prepare_us += (t_kernel_start - t_start).as_secs_f64() * 1e6;
            p.kernel_us += t_kernel.as_secs_f64() * 1e6;
            p.host_read_us += t_kernel_start
                .elapsed()
                .saturating_sub(t_kernel)
                .as_secs_f64()
                * 1e6;
        }
        Ok(RawLaunch { order, lens, out })
    }

    /// Reads the header a launch of `n_ops` operations (`dels` of them DELs) left: its
    /// counters into the stats and the profile, the heap's new length, and its verdict. An
    /// error the kernel raised, or a launch that did not take effect for every operation,
    /// poisons the heap.
    fn settle_launch(&mut self, n_ops: u32, dels: usize) -> Result<()> {
        let h = self.hdr.read()?;
        self.stats.climb_merges += u64::from(h[HDR_STAT_CLIMB_MERGES]);
        self.stats.del_climbs += u64::from(h[HDR_STAT_DEL_CLIMBS]);
        self.stats.waits += u64::from(h[HDR_STAT_WAITS]);
        self.stats.merges += u64::from(h[HDR_STAT_MERGES]);
        self.stats.swaps += u64::from(h[HDR_STAT_SWAPS]);
        if let Some(p) = &mut self.profile {
            let us = |i: usize| f64::from(h[HDR_PROF + i]) * 0.256;
            p.root_wait_us += us(0);
            p.root_hold_us += us(1);
            p.root_steps += u64::from(h[HDR_PROF + 2]);
            p.child_wait_us += us(3);
            p.del_us += us(4);
            p.dels += u64::from(h[HDR_PROF + 5]);
            p.root_control_us += us(6);
            p.ins_root_wait_us += us(7);
            p.ins_root_hold_us += us(8);
            p.inserts += u64::from(h[HDR_PROF + 9]);
        }
        self.count = h[HDR_COUNT] as usize;
        self.plen = h[HDR_PLEN] as usize;
        if h[HDR_ERROR] != 0 {
            let e = match h[HDR_ERROR] {
                ERR_STALL => Error::Stalled {
                    side: Side::Device,
                    waiting_for: "take a node lock of the device heap".into(),
                    waited_ms: 0,
                    detail: "a work-group spun past its bound".into(),
                },
                ERR_CAPACITY => Error::corrupted(
                    "the device heap",
                    "the device heap ran out of nodes inside a launch the host had sized",
                ),
                ERR_STATE => Error::corrupted(
                    "the device heap",
                    "the device heap found a node in a state its protocol does not allow",
                ),
                code => Error::corrupted(
                    "the device heap",
                    format!("the device heap stopped with error code {code}"),
                ),
            };
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        if h[HDR_TICKET] < n_ops
            || h[HDR_LIN] != n_ops
            || h[HDR_SEQ] != dels as u32
            || h[HDR_CLIMBS] != 0
        {
            let e = Error::corrupted(
                "the device heap",
                format!(
                    "the device heap's launch took effect for {} of {n_ops} operations ({} of \
                 {dels} DELs), {} BU-INS climbs left unfinished",
                    h[HDR_LIN], h[HDR_SEQ], h[HDR_CLIMBS]
                ),
            );
            self.poisoned = Some(e.to_string());
            return Err(e);
        }
        Ok(())
    }

    /// The first key of the root (`source` 0) or of the partial buffer (1).
    pub(super) fn read_first(&mut self, source: u32, k: usize) -> Result<T::Repr> {
        if source == 1 {
            return Ok(self.partial.read()?[0]);
        }
        // Copy the root's first batch to a small buffer on the device: a map of the whole
        // key array would move the heap to the host on the coarse transport.
        let mut small = alloc_zeroed::<T::Repr>(&self.rt, k)?;
        copy_keys(&mut self.copy, &self.keys, 0, &small, 0, k)?.wait()?;
        Ok(small.read()?[0])
    }
}

/// Work-items for a grid-stride loop over `n` elements, in groups of `wg`.
pub(super) fn stride_items(n: usize, wg: usize) -> usize {
    n.div_ceil(wg).clamp(1, 65_536) * wg
}

/// Enqueues `gheap_copy_keys`: `src[src_at..][..n]` to `dst[dst_at..][..n]`, elements of the
/// device form's size (the key array, the staging buffer, a caller's buffer of upload-form
/// keys). Both ranges are checked: the kernel writes where it is told.
pub(super) fn copy_keys<A: SvmElement, B: SvmElement>(
    kernel: &mut Kernel,
    src: &SvmBuffer<A>,
    src_at: usize,
    dst: &SvmBuffer<B>,
    dst_at: usize,
    n: usize,
) -> Result<Launch> {
    debug_assert_eq!(std::mem::size_of::<A>(), std::mem::size_of::<B>());
    if src_at.saturating_add(n) > src.len() || dst_at.saturating_add(n) > dst.len() {
        return Err(Error::InvalidArgument(format!(
            "a copy of {n} keys from {src_at} of {} to {dst_at} of {}",
            src.len(),
            dst.len()
        )));
    }
    kernel
        .arg_svm("src", src)?
        .arg_scalar("src_at", src_at as u64)?
        .arg_svm("dst", dst)?
        .arg_scalar("dst_at", dst_at as u64)?
        .arg_scalar("n", n as u64)?;
    // Submitted by the caller's next submitting launch or by waiting on (dropping) it;
    // retried once on a device fault, as a bulk call's launches are (`bulk.rs`).
    retry_once(|| kernel.launch_unflushed(stride_items(n, 256), Some(256)))
}

/// A buffer of `len` elements (at least one); the runtime zeroes new SVM.
pub(super) fn alloc_zeroed<E: SvmElement>(rt: &Runtime, len: usize) -> Result<SvmBuffer<E>> {
    rt.alloc::<E>(len.max(1))
}

pub(super) fn to_u32(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n)
        .map_err(|_| Error::too_large(format!("{what} in one device heap call"), n, u32::MAX))
}

/// The words of a launch's operations (an op code and its argument each), the keys its
/// inserts add and its DELs.
fn op_words(ops: &[HeapOp], n_keys: usize, k: usize) -> (Vec<u32>, usize, usize) {
    let mut words = Vec::with_capacity(2 * ops.len());
    let mut inserted = 0;
    let mut dels = 0;
    for op in ops {
        match *op {
            HeapOp::Insert(b) => {
                inserted += (n_keys - b * k).min(k);
                words.extend([OP_INSERT, b as u32]);
            }
            HeapOp::Delete(n) => {
                dels += 1;
                words.extend([OP_DELETE, n as u32]);
            }
        }
    }
    (words, inserted, dels)
}
