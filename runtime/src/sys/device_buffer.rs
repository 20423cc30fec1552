//! Device-only buffers (`clCreateBuffer`), for scratch that the host barely touches.
//!
//! An SVM allocation on NVIDIA's driver costs by its size, while a buffer object costs
//! little whatever its size (docs/benchmarks/runtime.md): structures that
//! grow their device-side storage (a branch-and-bound search's arena of nodes) allocate it
//! here. Kernels see both as `__global T*`; the host reads and writes a buffer object only
//! through blocking copies on the runtime's in-order queue, ordered after every launch
//! enqueued before them, so no host access races with a kernel.
//!
//! Lifetime: OpenCL deletes a buffer object only once its last reference is released and
//! the commands using it have finished, so a launch never sees it freed; a [`Kernel`]
//! argument holds a reference of its own until the argument is replaced.
//!
//! [`Kernel`]: crate::Kernel

use std::marker::PhantomData;

use ocl::core::{ArgVal, CommandQueue, Context, Event, Kernel as ClKernel, Mem};

use super::svm::SvmElement;
use crate::error::{Error, Result};

/// `len` elements of T in device memory, zeroed when made.
pub struct DeviceBuffer<T: SvmElement> {
    mem: Mem,
    queue: CommandQueue,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: SvmElement> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("len", &self.len)
            .finish()
    }
}

fn out_of_memory(what: String, e: ocl::OclCoreError) -> Error {
    Error::OutOfMemory(format!("{what}: {e}"))
}

impl<T: SvmElement> DeviceBuffer<T> {
    /// `len` zeroed elements (at least one is allocated) in `context`, copied through `queue`.
    pub(crate) fn new(context: &Context, queue: &CommandQueue, len: usize) -> Result<Self> {
        let elements = len.max(1);
        let bytes = elements
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::OutOfMemory(format!("a device buffer of {len} elements")))?;
        // SAFETY: no host pointer is given (`None`), so the driver reads no host memory; the
        // flags ask for a plain read-write buffer of `elements` elements.
        let mem = unsafe {
            ocl::core::create_buffer::<_, T>(context, ocl::core::MEM_READ_WRITE, elements, None)
        }
        .map_err(|e| out_of_memory(format!("clCreateBuffer of {bytes} bytes"), e))?;
        // Zeroed on the device, in order before anything enqueued after it (a driver may
        // also only commit the memory here: a failure is out of memory).
        ocl::core::enqueue_fill_buffer(
            queue,
            &mem,
            T::default(),
            0,
            elements,
            None::<Event>,
            None::<&mut Event>,
            None,
        )
        .map_err(|e| out_of_memory(format!("zeroing a device buffer of {bytes} bytes"), e))?;
        Ok(DeviceBuffer {
            mem,
            queue: queue.clone(),
            len,
            _element: PhantomData,
        })
    }

    /// Elements held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, at: usize, len: usize, verb: &str) -> Result<()> {
        if at.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(Error::out_of_range(
                format!("{verb} at offset {at}"),
                format!("{len} elements"),
                format!("a device buffer of {}", self.len),
            ));
        }
        Ok(())
    }

    /// Copies elements `at..at + out.len()` into `out` (after every launch enqueued before).
    pub fn read_range_into(&self, at: usize, out: &mut [T]) -> Result<()> {
        self.check(at, out.len(), "reading")?;
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: a blocking read (`true`): the driver has finished writing `out` when the
        // call returns, and `out` is exclusively borrowed until then; the range lies inside
        // the buffer (checked above), and T has OpenCL's layout of the element.
        unsafe {
            ocl::core::enqueue_read_buffer(
                &self.queue,
                &self.mem,
                true,
                at,
                out,
                None::<Event>,
                None::<&mut Event>,
            )
        }
        .map_err(|e| Error::ocl("clEnqueueReadBuffer", "reading a device buffer", e))
    }

    /// Copies `data` into elements `at..at + data.len()` (after every launch enqueued before,
    /// before every one enqueued after).
    pub fn write_range(&mut self, at: usize, data: &[T]) -> Result<()> {
        self.check(at, data.len(), "writing")?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: a blocking write (`true`): the driver has read `data` when the call
        // returns, and `data` is borrowed until then; the range lies inside the buffer.
        unsafe {
            ocl::core::enqueue_write_buffer(
                &self.queue,
                &self.mem,
                true,
                at,
                data,
                None::<Event>,
                None::<&mut Event>,
            )
        }
        .map_err(|e| Error::ocl("clEnqueueWriteBuffer", "writing a device buffer", e))
    }
}

/// Sets argument `index` of `kernel` to `buffer`; returns the reference the argument keeps.
pub(crate) fn set_kernel_arg_buffer<T: SvmElement>(
    kernel: &ClKernel,
    index: u32,
    buffer: &DeviceBuffer<T>,
) -> Result<Mem> {
    ocl::core::set_kernel_arg(kernel, index, ArgVal::mem(&buffer.mem))
        .map_err(|e| Error::ocl("clSetKernelArg", format!("argument {index}"), e))?;
    Ok(buffer.mem.clone())
}
