//! The generalized heap's batch operations on the device (`kernels/gheap.cl`): bitonic sort
//! of batches and merge-path MergeAndSort of pairs of batches, one batch or pair per
//! work-group, in local memory. The building blocks of the device heap's INS and DEL, usable
//! (and tested, and measured) alone; the device heap is [`super::DeviceGeneralizedHeap`].

use asym_runtime::{Error, Kernel, Result, Runtime};

/// The largest batch the device kernels take (merge path keeps 4·K keys in local memory).
pub const MAX_DEVICE_BATCH: usize = 2048;

/// Refuses a kernel shape whose local arrays (`bytes`) do not fit the device.
pub(crate) fn check_local_memory(rt: &Runtime, bytes: usize, what: &str) -> Result<()> {
    let p = rt.profile();
    if bytes as u64 > p.local_mem_bytes {
        return Err(Error::Unsupported {
            device: p.label(),
            what: what.to_string(),
            lacks: format!(
                "{bytes} bytes of local memory (it has {})",
                p.local_mem_bytes
            ),
        });
    }
    Ok(())
}

/// The most work-items per group the device takes (256 where it does not say).
pub(crate) fn max_work_group(rt: &Runtime) -> usize {
    match rt.profile().max_work_group_size {
        0 => 256,
        n => n,
    }
}

/// The batch kernels' default work-group: the largest power of two up to K, 256 and what
/// the device allows.
pub(crate) fn default_work_group(rt: &Runtime, batch: usize) -> usize {
    let cap = batch.min(256).min(max_work_group(rt)).max(1);
    1 << (usize::BITS - 1 - cap.leading_zeros())
}

/// Batch sorting and MergeAndSort on one device for batches of `K` keys. Holds its kernels:
/// build one per thread (`Kernel` is not `Sync`).
pub struct DeviceBatchOps {
    rt: Runtime,
    batch: usize,
    wg: usize,
    sort: Kernel,
    merge: Kernel,
}

impl DeviceBatchOps {
    /// Kernels for batches of `batch` keys (a power of two, 2 to [`MAX_DEVICE_BATCH`], and
    /// 4·K keys must fit the device's local memory).
    pub fn new(rt: &Runtime, batch: usize) -> Result<Self> {
        if !batch.is_power_of_two() || !(2..=MAX_DEVICE_BATCH).contains(&batch) {
            return Err(Error::out_of_range(
                "batch size",
                batch,
                format!("the device kernels take a power of two from 2 to {MAX_DEVICE_BATCH}"),
            ));
        }
        check_local_memory(rt, 4 * batch * 4, &format!("merge batches of {batch} keys"))?;
        let wg = default_work_group(rt, batch);
        rt.check_work_group(wg, "run the generalized heap's batch kernels")?;
        let program = rt.program_with(
            &asym_kernels::GHEAP,
            &super::device_heap::gheap_cl_defines(batch, wg),
        )?;
        Ok(DeviceBatchOps {
            rt: rt.clone(),
            batch,
            wg,
            sort: Kernel::from_program(rt, &program, "gheap_sort_batches")?,
            merge: Kernel::from_program(rt, &program, "gheap_merge_batches")?,
        })
    }

    /// Keys per batch.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Sorts every batch of `keys` (its length a multiple of K) ascending, on the device.
    pub fn sort_batches(&mut self, keys: &mut [i32]) -> Result<()> {
        let batches = self.count(keys.len(), "sorting")?;
        if batches == 0 {
            return Ok(());
        }
        let mut buf = self.rt.alloc::<i32>(keys.len())?;
        buf.write(keys)?;
        self.sort
            .arg_svm("keys", &buf)?
            .arg_scalar("at", 0u64)?
            .arg_scalar("len", keys.len() as u64)?;
        self.sort.launch(batches * self.wg, Some(self.wg))?.wait()?;
        keys.copy_from_slice(&buf.read()?);
        Ok(())
    }

    /// MergeAndSort of `a[i]` and `b[i]` for every batch pair (equal lengths, multiples of K;
    /// every batch sorted): `a` gets each pair's K smallest keys, `b` the rest, sorted.
    pub fn merge_batches(&mut self, a: &mut [i32], b: &mut [i32]) -> Result<()> {
        if a.len() != b.len() {
            return Err(Error::out_of_range(
                "merging keys",
                format!("{} with {}", a.len(), b.len()),
                "the two sides must have equal lengths",
            ));
        }
        let pairs = self.count(a.len(), "merging")?;
        if pairs == 0 {
            return Ok(());
        }
        let mut ba = self.rt.alloc::<i32>(a.len())?;
        let mut bb = self.rt.alloc::<i32>(b.len())?;
        ba.write(a)?;
        bb.write(b)?;
        self.merge
            .arg_svm("a", &ba)?
            .arg_svm("b", &bb)?
            .arg_scalar("pairs", pairs as u32)?;
        self.merge.launch(pairs * self.wg, Some(self.wg))?.wait()?;
        a.copy_from_slice(&ba.read()?);
        b.copy_from_slice(&bb.read()?);
        Ok(())
    }

    fn count(&self, len: usize, what: &str) -> Result<usize> {
        if len % self.batch != 0 {
            return Err(Error::out_of_range(
                format!("{what} keys"),
                len,
                format!("not a multiple of the batch size {}", self.batch),
            ));
        }
        let n = len / self.batch;
        u32::try_from(n)
            .map_err(|_| Error::too_large(format!("{what} batches in one call"), n, u32::MAX))?;
        Ok(n)
    }
}
