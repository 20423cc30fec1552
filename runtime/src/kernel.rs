//! Kernels, their arguments and launches.
//!
//! A [`Launch`] keeps every SVM buffer its kernel uses alive and marked "in use" until its
//! event completes, so the host can neither free nor map memory a kernel may still touch.

use std::sync::Arc;
use std::time::Duration;

use ocl::core::{CommandQueue, Event, Kernel as ClKernel, OclPrm};

use crate::backoff::poll_within;
use crate::error::{Error, Result, Side};
use crate::faults::{FaultPoint, Faults};
use crate::runtime::{Program, Runtime};
use crate::sys::{self, SvmAlloc, SvmBuffer, SvmElement};

/// An extra in-order command queue (see [`Runtime::new_queue`]).
#[derive(Clone, Debug)]
pub struct Queue {
    pub(crate) queue: CommandQueue,
}

/// Where a kernel argument goes: its position (`0u32`), or its name in the kernel's parameter
/// table ([`KernelParams`](asym_kernels::KernelParams), checked against the kernel's
/// signature when its program is built): `"dist"`.
pub trait ArgIndex: Copy {
    /// The argument's position in `kernel`'s parameters.
    fn index_in(self, kernel: &Kernel) -> Result<u32>;
}

impl ArgIndex for u32 {
    fn index_in(self, _: &Kernel) -> Result<u32> {
        Ok(self)
    }
}

impl ArgIndex for &str {
    fn index_in(self, kernel: &Kernel) -> Result<u32> {
        let what = || format!("a parameter of kernel {}", kernel.name);
        let table = kernel.params.ok_or_else(|| {
            Error::out_of_range(
                what(),
                self,
                "a position: the kernel's source has no parameter table",
            )
        })?;
        table
            .index_of(self)
            .ok_or_else(|| Error::out_of_range(what(), self, table.params.join(", ")))
    }
}

/// Kernel objects are made and released one at a time in the process. PoCL keeps one cache
/// entry per compiled kernel, shared by its devices, and two threads making or releasing
/// kernels of one program on two of its devices at once can break that entry's reference
/// count: `pocl_release_dlhandle_cache` then asserts and aborts the process (seen with PoCL
/// 3.1 and 5.0 under device sets of two PoCL devices).
static KERNEL_OBJECTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One kernel of a built program, with its arguments. Not `Sync`: build one per thread.
pub struct Kernel {
    rt: Runtime,
    /// The OpenCL kernel object (`None` only while it is released, in `drop`).
    kernel: Option<ClKernel>,
    name: String,
    /// The kernel's parameter table, where its source has one.
    params: Option<&'static asym_kernels::KernelParams>,
    svm_args: Vec<Option<Arc<SvmAlloc>>>,
    indirect: Vec<Arc<SvmAlloc>>,
    /// References to the device buffers set as arguments (each kept until replaced).
    buffer_args: Vec<Option<ocl::core::Mem>>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel").field("name", &self.name).finish()
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let _released = KERNEL_OBJECTS.lock().unwrap_or_else(|p| p.into_inner());
        self.kernel.take();
    }
}

impl Kernel {
    pub(crate) fn new(rt: Runtime, program: &Program, name: &str) -> Result<Self> {
        let made = KERNEL_OBJECTS.lock().unwrap_or_else(|p| p.into_inner());
        let kernel = ocl::core::create_kernel(&program.program, name).map_err(|e| {
            Error::ocl(
                "clCreateKernel",
                format!("kernel {name:?} of {}", program.name),
                e,
            )
        })?;
        drop(made);
        Ok(Kernel {
            rt,
            kernel: Some(kernel),
            params: program.source.params_of(name),
            name: name.to_string(),
            svm_args: Vec::new(),
            indirect: Vec::new(),
            buffer_args: Vec::new(),
        })
    }

    /// Creates kernel `name` of an already built `program` (for programs built with extra
    /// options, [`Runtime::program_with`]).
    pub fn from_program(rt: &Runtime, program: &Program, name: &str) -> Result<Self> {
        Self::new(rt.clone(), program, name)
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The OpenCL kernel object.
    fn cl(&self) -> Result<&ClKernel> {
        self.kernel.as_ref().ok_or_else(|| {
            Error::corrupted(format!("kernel {}", self.name), "used after its release")
        })
    }

    fn remember_svm(&mut self, index: u32, alloc: Option<Arc<SvmAlloc>>) {
        let i = index as usize;
        if self.svm_args.len() <= i {
            self.svm_args.resize(i + 1, None);
        }
        self.svm_args[i] = alloc;
        if let Some(slot) = self.buffer_args.get_mut(i) {
            *slot = None;
        }
    }

    /// Sets argument `index` (a position or a parameter's name: [`ArgIndex`]) to a device
    /// buffer ([`Runtime::device_buffer`]).
    ///
    /// Keep each argument of a kernel object to one kind, SVM or device buffer: on NVIDIA's
    /// driver, launches of a build whose kernels switched an argument between the two from
    /// call to call failed with `CL_INVALID_KERNEL_ARGS`, while kernels whose arguments kept
    /// their kind ran (the knapsack's arena).
    ///
    /// [`Runtime::device_buffer`]: crate::Runtime::device_buffer
    pub fn arg_buffer<T: SvmElement>(
        &mut self,
        index: impl ArgIndex,
        buffer: &crate::DeviceBuffer<T>,
    ) -> Result<&mut Self> {
        let index = index.index_in(self)?;
        let mem = sys::set_kernel_arg_buffer(self.cl()?, index, buffer)?;
        self.remember_svm(index, None);
        let i = index as usize;
        if self.buffer_args.len() <= i {
            self.buffer_args.resize(i + 1, None);
        }
        self.buffer_args[i] = Some(mem);
        Ok(self)
    }

    /// Sets argument `index` (a position or a parameter's name: [`ArgIndex`]) to an SVM
    /// buffer (a `__global T*` in the kernel).
    pub fn arg_svm<T: SvmElement>(
        &mut self,
        index: impl ArgIndex,
        buffer: &SvmBuffer<T>,
    ) -> Result<&mut Self> {
        let index = index.index_in(self)?;
        self.check_context(buffer.shared(), &format!("argument {index}"))?;
        sys::set_kernel_arg_svm(self.cl()?, index, buffer.shared())?;
        self.remember_svm(index, Some(buffer.shared().clone()));
        Ok(self)
    }

    /// Sets argument `index` (a position or a parameter's name) to a scalar (write typed
    /// literals: `5u32`, `1.0f32`).
    pub fn arg_scalar<T: OclPrm>(&mut self, index: impl ArgIndex, value: T) -> Result<&mut Self> {
        let index = index.index_in(self)?;
        ocl::core::set_kernel_arg(self.cl()?, index, ocl::core::ArgVal::scalar(&value)).map_err(
            |e| {
                Error::ocl(
                    "clSetKernelArg",
                    format!("{} argument {index}", self.name),
                    e,
                )
            },
        )?;
        self.remember_svm(index, None);
        Ok(self)
    }

    /// Sets argument `index` (a position or a parameter's name) to `len` elements of local
    /// memory (a `__local T*`).
    pub fn arg_local<T: OclPrm>(&mut self, index: impl ArgIndex, len: usize) -> Result<&mut Self> {
        let index = index.index_in(self)?;
        ocl::core::set_kernel_arg(self.cl()?, index, ocl::core::ArgVal::local::<T>(&len)).map_err(
            |e| {
                Error::ocl(
                    "clSetKernelArg",
                    format!("{} local argument {index}", self.name),
                    e,
                )
            },
        )?;
        self.remember_svm(index, None);
        Ok(self)
    }

    /// Declares that the kernel follows pointers stored in memory into `buffer` (a
    /// pointer-linked structure), so the device makes it available (`clSetKernelExecInfo`).
    pub fn use_indirect_svm<T: SvmElement>(&mut self, buffer: &SvmBuffer<T>) -> Result<&mut Self> {
        self.check_context(buffer.shared(), "an indirectly reached buffer")?;
        if !self
            .indirect
            .iter()
            .any(|a| Arc::ptr_eq(a, buffer.shared()))
        {
            self.indirect.push(buffer.shared().clone());
        }
        let list: Vec<&SvmAlloc> = self.indirect.iter().map(|a| a.as_ref()).collect();
        sys::set_kernel_exec_info_svm_ptrs(self.cl()?, &list)?;
        Ok(self)
    }

    /// Refuses an allocation of another context: its pointer means nothing to this
    /// kernel's device (a launch would read or write memory it does not own).
    fn check_context(&self, alloc: &SvmAlloc, what: &str) -> Result<()> {
        if self.rt.owns(alloc) {
            return Ok(());
        }
        Err(Error::InvalidArgument(format!(
            "kernel {}: {what} is an SVM buffer of another runtime (another OpenCL context); \
             allocate it on the kernel's runtime or one that shares its context",
            self.name
        )))
    }

    /// Launches `global` work-items in work-groups of `local` on the runtime's main queue.
    pub fn launch(&mut self, global: usize, local: Option<usize>) -> Result<Launch> {
        let queue = self.rt.queue().clone();
        self.launch_on_queue(&queue, global, local, true)
    }

    /// Launches on another queue (for example a persistent kernel beside the main queue).
    pub fn launch_on(
        &mut self,
        queue: &Queue,
        global: usize,
        local: Option<usize>,
    ) -> Result<Launch> {
        self.launch_on_queue(&queue.queue, global, local, true)
    }

    /// [`Kernel::launch`] without submitting the queue to the device: for all but the last
    /// of several launches enqueued back to back, which the last one's submission carries
    /// (a flush costs each launch a driver call, and a device set enqueues on every member
    /// before it waits on any). Waiting on (or dropping) the launch submits it first, so it
    /// cannot be left waiting for a submission that never comes.
    pub fn launch_unflushed(&mut self, global: usize, local: Option<usize>) -> Result<Launch> {
        let queue = self.rt.queue().clone();
        self.launch_on_queue(&queue, global, local, false)
    }

    /// [`Kernel::launch_unflushed`] on another queue.
    pub fn launch_unflushed_on(
        &mut self,
        queue: &Queue,
        global: usize,
        local: Option<usize>,
    ) -> Result<Launch> {
        self.launch_on_queue(&queue.queue, global, local, false)
    }

    fn launch_on_queue(
        &mut self,
        queue: &CommandQueue,
        global: usize,
        local: Option<usize>,
        flush: bool,
    ) -> Result<Launch> {
        if global == 0 {
            return Err(Error::out_of_range(
                format!("kernel {} launched with", self.name),
                "0 work-items",
                "at least one",
            ));
        }
        if let Some(l) = local {
            let max = self.rt.profile().max_work_group_size;
            if l == 0 || global % l != 0 || (max > 0 && l > max) {
                return Err(Error::out_of_range(
                    format!("kernel {}: work-group size", self.name),
                    l,
                    format!("must divide the global size {global} and be at most {max}"),
                ));
            }
        }
        let faults = self.rt.faults().clone();
        faults.check(FaultPoint::Launch, || format!("kernel {}", self.name))?;
        let mut uses: Vec<Arc<SvmAlloc>> = Vec::new();
        for a in self.svm_args.iter().flatten().chain(self.indirect.iter()) {
            if !uses.iter().any(|u| Arc::ptr_eq(u, a)) {
                uses.push(a.clone());
            }
        }
        let mut claimed = Vec::with_capacity(uses.len());
        for a in uses {
            if let Err(e) = a.begin_use() {
                claimed.iter().for_each(|c: &Arc<SvmAlloc>| c.end_use());
                return Err(e);
            }
            claimed.push(a);
        }
        let wait: Vec<Event> = claimed.iter().filter_map(|a| a.pending_unmap()).collect();
        match sys::enqueue_kernel(queue, self.cl()?, global, local, &wait, flush) {
            Ok(event) => Ok(Launch {
                event,
                uses: claimed,
                name: self.name.clone(),
                timeout: self.rt.timeout(),
                done: false,
                unflushed: (!flush).then(|| queue.clone()),
                faults,
            }),
            Err(e) => {
                claimed.iter().for_each(|c| c.end_use());
                Err(e)
            }
        }
    }
}

/// A kernel launch in flight. Dropping it waits (bounded) for the kernel to finish.
#[derive(Debug)]
pub struct Launch {
    event: Event,
    uses: Vec<Arc<SvmAlloc>>,
    name: String,
    timeout: Duration,
    done: bool,
    /// The queue of a launch enqueued without a flush, until a wait has flushed it.
    unflushed: Option<CommandQueue>,
    /// The runtime's injected faults, checked at every wait.
    faults: Arc<Faults>,
}

impl Launch {
    /// Whether the kernel has finished (and releases its buffers if so). A failure to read
    /// the kernel's event status is an [`Error::OpenCl`].
    pub fn is_complete(&mut self) -> Result<bool> {
        if self.done {
            return Ok(true);
        }
        if let Some(queue) = self.unflushed.take() {
            sys::flush_queue(&queue)?;
        }
        let status = ocl::core::event_status(&self.event)
            .map_err(|e| Error::ocl("clGetEventInfo", format!("kernel {}", self.name), e))?;
        match status {
            ocl::core::CommandExecutionStatus::Complete => {
                self.release();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn release(&mut self) {
        self.done = true;
        for a in self.uses.drain(..) {
            a.end_use();
        }
    }

    /// Waits at most `timeout` for the kernel to finish; [`Error::Stalled`] names the kernel.
    pub fn wait_for(&mut self, timeout: Duration) -> Result<()> {
        let name = self.name.clone();
        if let Err(injected) = self
            .faults
            .check(FaultPoint::Wait, || format!("kernel {name}"))
        {
            // The kernel runs to its end first (see `crate::faults`): what it did stands.
            self.wait_for_kernel(timeout)?;
            return Err(injected);
        }
        self.wait_for_kernel(timeout)
    }

    /// [`Launch::wait_for`] without the fault check.
    fn wait_for_kernel(&mut self, timeout: Duration) -> Result<()> {
        let name = self.name.clone();
        poll_within(
            timeout,
            || Ok(self.is_complete()?.then_some(())),
            |waited_ms| Error::Stalled {
                side: Side::Device,
                waiting_for: format!("finish kernel {name}"),
                waited_ms,
                detail: String::new(),
            },
        )
    }

    /// Gives up on a kernel that did not finish: its buffers are leaked (never freed, never
    /// mappable again) so that memory it may still touch stays valid.
    pub(crate) fn abandon(mut self) {
        self.done = true;
        for a in self.uses.drain(..) {
            std::mem::forget(a);
        }
    }

    /// Waits for the kernel with the runtime's default bound.
    pub fn wait(mut self) -> Result<()> {
        self.wait_for(self.timeout)
    }

    /// Waits with the runtime's default bound and returns how long the kernel ran on the
    /// device (profiling start to end; `None` where the driver gives no times).
    pub fn wait_timed(mut self) -> Result<Option<Duration>> {
        self.wait_for(self.timeout)?;
        Ok(sys::event_device_time(&self.event))
    }

    /// Waits with the runtime's default bound, keeping the launch (for
    /// [`Launch::device_interval`] afterwards).
    pub fn wait_in_place(&mut self) -> Result<()> {
        self.wait_for(self.timeout)
    }

    /// When the launch started and ended on the device (profiling times, ns of the device's
    /// clock), once it has completed; `None` before, or where the driver gives no times.
    pub fn device_interval(&self) -> Option<(u64, u64)> {
        sys::event_device_interval(&self.event)
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Not a wait of the caller's: no fault is injected here (`crate::faults`).
        if let Err(e) = self.wait_for_kernel(self.timeout) {
            // The kernel may still run: never free or hand back memory it can touch. Leak the
            // buffers (they stay marked in use, so the host cannot map them either).
            eprintln!("asym: {e}; leaking its SVM buffers to stay memory-safe");
            for a in self.uses.drain(..) {
                std::mem::forget(a);
            }
        }
    }
}
