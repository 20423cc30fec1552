//! Raw OpenCL calls that `ocl` 0.19 does not wrap safely: SVM kernel arguments, indirect SVM
//! pointers (`clSetKernelExecInfo`) and the kernel enqueue itself.

use std::ffi::c_void;

use ocl::core::{CommandQueue, Event, Kernel};
use ocl::ffi;

use super::SvmAlloc;
use crate::error::{Error, Result};

/// Sets argument `index` of `kernel` to the SVM pointer of `alloc`.
pub(crate) fn set_kernel_arg_svm(kernel: &Kernel, index: u32, alloc: &SvmAlloc) -> Result<()> {
    // SAFETY: `kernel` is a live kernel object (owned by the caller's `Kernel`), and the pointer
    // is the base of a live SVM allocation of the same context. The caller keeps the allocation
    // alive (an `Arc<SvmAlloc>`) for as long as the argument can be used by a launch.
    let code = unsafe {
        ffi::clSetKernelArgSVMPointer(kernel.as_ptr(), index, alloc.as_ptr() as *const c_void)
    };
    if code != 0 {
        return Err(Error::status(
            "clSetKernelArgSVMPointer",
            format!("argument {index}"),
            code,
        ));
    }
    Ok(())
}

/// Tells the runtime which SVM allocations `kernel` reaches through pointers stored in memory
/// (pointer-linked structures), so it makes them available to the device.
pub(crate) fn set_kernel_exec_info_svm_ptrs(kernel: &Kernel, allocs: &[&SvmAlloc]) -> Result<()> {
    let ptrs: Vec<*const c_void> = allocs.iter().map(|a| a.as_ptr() as *const c_void).collect();
    // SAFETY: `ptrs` is a valid array of `ptrs.len()` pointers that lives across the call; the
    // OpenCL runtime copies it. Each pointer is the base of a live SVM allocation that the caller
    // keeps alive while launches of this kernel may run.
    let code = unsafe {
        ffi::clSetKernelExecInfo(
            kernel.as_ptr(),
            ffi::CL_KERNEL_EXEC_INFO_SVM_PTRS,
            std::mem::size_of_val(ptrs.as_slice()),
            ptrs.as_ptr() as *const c_void,
        )
    };
    if code != 0 {
        return Err(Error::status(
            "clSetKernelExecInfo",
            "CL_KERNEL_EXEC_INFO_SVM_PTRS",
            code,
        ));
    }
    Ok(())
}

/// Enqueues a 1-D NDRange of `kernel` on `queue` after the events in `wait`, flushes the queue
/// when `flush` (NVIDIA may not start work without a flush) and returns the launch's event.
pub(crate) fn enqueue_kernel(
    queue: &CommandQueue,
    kernel: &Kernel,
    global: usize,
    local: Option<usize>,
    wait: &[Event],
    flush: bool,
) -> Result<Event> {
    let mut event = Event::null();
    // SAFETY: every argument of `kernel` was set by `Kernel` (scalars by value, SVM pointers to
    // allocations that the launch keeps alive until its event completes); the work sizes are
    // plain values; `wait` holds live events. `ocl` checks the returned status.
    unsafe {
        ocl::core::enqueue_kernel(
            queue,
            kernel,
            1,
            None,
            &[global, 1, 1],
            local.map(|l| [l, 1, 1]),
            (!wait.is_empty()).then_some(wait),
            Some(&mut event),
        )
    }
    .map_err(|e| Error::ocl("clEnqueueNDRangeKernel", "kernel launch", e))?;
    if flush {
        flush_queue(queue)?;
    }
    Ok(event)
}

/// Submits what was enqueued on `queue` to the device.
pub(crate) fn flush_queue(queue: &CommandQueue) -> Result<()> {
    ocl::core::flush(queue).map_err(|e| Error::ocl("clFlush", "after kernel launch", e))
}

/// How long a completed command ran on the device (profiling `END - START`), or `None` when the
/// queue does not profile, the command has not completed, or the driver gives no times.
pub(crate) fn event_device_time(event: &Event) -> Option<std::time::Duration> {
    let (start, end) = event_device_interval(event)?;
    Some(std::time::Duration::from_nanos(end.saturating_sub(start)))
}

/// When a completed command started and ended on the device (profiling `START`, `END`, ns of
/// the device's clock), or `None` as for [`event_device_time`].
pub(crate) fn event_device_interval(event: &Event) -> Option<(u64, u64)> {
    use ocl::core::{ProfilingInfo, ProfilingInfoResult};
    let status = ocl::core::event_status(event).ok()?;
    if status != ocl::core::CommandExecutionStatus::Complete {
        return None;
    }
    let start = match ocl::core::get_event_profiling_info(event, ProfilingInfo::Start).ok()? {
        ProfilingInfoResult::Start(t) => t,
        _ => return None,
    };
    let end = match ocl::core::get_event_profiling_info(event, ProfilingInfo::End).ok()? {
        ProfilingInfoResult::End(t) => t,
        _ => return None,
    };
    Some((start, end))
}
