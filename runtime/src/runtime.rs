//! The runtime handle: one device, its context, a queue, the chosen transport and the
//! program cache.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use asym_kernels::KernelSource;
use ocl::core::{CommandQueue, Context, Program as ClProgram, ProgramBuildInfo};

use crate::device::{select_device, DeviceProfile};
use crate::error::{Error, Result};
use crate::faults::{FaultPoint, Faults};
use crate::kernel::{Kernel, Queue};
use crate::signal::ring_protocol;
use crate::sys::{SvmBuffer, SvmCache, SvmElement, SvmKind};
use crate::transport::Transport;

/// The environment variable that sets the default bound of every wait, in milliseconds.
pub const TIMEOUT_ENV: &str = "ASYM_TIMEOUT_MS";

/// The environment variable that sets how many MiB of freed SVM a runtime keeps for reuse
/// (default: [`SVM_CACHE_MOST`], at most a sixteenth of device memory; `0` turns reuse off).
pub const SVM_CACHE_ENV: &str = "ASYM_SVM_CACHE_MB";
/// The environment variable that turns on device times (`1`) for runtimes whose options do
/// not say ([`RuntimeOptions::device_times`]).
pub const DEVICE_TIMES_ENV: &str = "ASYM_DEVICE_TIMES";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const PROFILING: ocl::core::CommandQueueProperties =
    ocl::core::CommandQueueProperties::PROFILING_ENABLE;

/// How to open a [`Runtime`]; `None` fields fall back to the environment, then to defaults.
#[derive(Clone, Debug, Default)]
pub struct RuntimeOptions {
    /// Device name fragment (else `ASYM_DEVICE`, else the first GPU, else the first CPU).
    pub device: Option<String>,
    /// Transport (else `ASYM_SVM`, else the best the device supports).
    pub transport: Option<Transport>,
    /// Bound of every wait on the device (else `ASYM_TIMEOUT_MS`, else 60 s).
    pub timeout: Option<Duration>,
    /// Whether the runtime's queues time each command on the device (OpenCL profiling), for
    /// [`Launch::wait_timed`](crate::Launch::wait_timed),
    /// [`Launch::device_interval`](crate::Launch::device_interval) and the transfer times
    /// of staged reads (else `ASYM_DEVICE_TIMES`, else off). It costs every launch host time
    /// on NVIDIA's driver (docs/benchmarks/runtime.md).
    /// A [`DeviceSet`](crate::DeviceSet) turns it on: splitting work by measured rates needs
    /// each member's own device time.
    pub device_times: Option<bool>,
}

/// A device opened for asym. Cheap to clone and shareable between threads.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
    /// Where this handle's launches, SVM maps and [`Runtime::finish`] go: the queue the
    /// device was opened with, or one of [`Runtime::with_new_queue`].
    queue: CommandQueue,
}

struct Inner {
    profile: DeviceProfile,
    transport: Transport,
    context: Context,
    timeout: Duration,
    /// Whether the queues profile their commands ([`RuntimeOptions::device_times`]).
    device_times: bool,
    programs: Mutex<HashMap<(&'static str, String), Program>>,
    /// SVM allocations asked of this runtime, and their bytes (`Runtime::svm_stats`).
    allocations: AtomicU64,
    allocated_bytes: AtomicU64,
    /// Freed allocations kept for the next ones (`sys::SvmCache`).
    svm_cache: Arc<SvmCache>,
    /// Injected faults ([`Runtime::faults`]).
    faults: Arc<Faults>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("device", &self.inner.profile.label())
            .field("transport", &self.inner.transport)
            .finish()
    }
}

/// A built OpenCL program (cached per runtime).
#[derive(Clone, Debug)]
pub struct Program {
    pub(crate) program: ClProgram,
    pub(crate) name: &'static str,
    /// The source it was built from (its kernels' parameter tables).
    pub(crate) source: KernelSource,
}

impl Runtime {
    /// Opens the default device (`ASYM_DEVICE`, else first GPU, else first CPU) with the
    /// default transport (`ASYM_SVM`, else the best available).
    pub fn new() -> Result<Self> {
        Self::with_options(RuntimeOptions::default())
    }

    /// Opens the device whose platform or device name contains `device` (`None`: as
    /// [`Runtime::new`] picks), with the default transport and timeout: what a `--device`
    /// flag asks for.
    pub fn on_device(device: Option<&str>) -> Result<Self> {
        Self::with_options(RuntimeOptions {
            device: device.map(str::to_string),
            ..Default::default()
        })
    }

    /// Opens a device as `options` say.
    pub fn with_options(options: RuntimeOptions) -> Result<Self> {
        let profile = select_device(options.device.as_deref())?;
        Self::open_with(profile, &options)
    }

    /// Opens `profile` with `transport` (or the default choice) and `timeout` (or the default).
    pub fn open(
        profile: DeviceProfile,
        transport: Option<Transport>,
        timeout: Option<Duration>,
    ) -> Result<Self> {
        Self::open_with(
            profile,
            &RuntimeOptions {
                transport,
                timeout,
                ..Default::default()
            },
        )
    }

    /// Opens `profile` as `options` say (their `device` is not consulted: `profile` is the
    /// device).
    pub fn open_with(profile: DeviceProfile, options: &RuntimeOptions) -> Result<Self> {
        let (transport, timeout) = (options.transport, options.timeout);
        let device_times = match options.device_times {
            Some(on) => on,
            None => crate::env::switch(DEVICE_TIMES_ENV)?,
        };
        let transport = Transport::choose(&profile, transport)?;
        let timeout = match timeout {
            Some(t) => t,
            None => crate::env::parsed::<u64>(TIMEOUT_ENV, "milliseconds (a whole number)")?
                .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
        };
        if let Some(dir) = std::env::var_os(DUMP_BINARIES_ENV).filter(|d| !d.is_empty()) {
            if !std::path::Path::new(&dir).is_dir() {
                return Err(Error::flag(
                    DUMP_BINARIES_ENV,
                    dir.to_string_lossy(),
                    "expected an existing directory",
                ));
            }
        }
        let label = profile.label();
        let faults = Arc::new(Faults::new(label.clone()));
        let cache_limit = match crate::env::parsed::<u64>(SVM_CACHE_ENV, "MiB (a whole number)")? {
            Some(mib) => mib.saturating_mul(1 << 20),
            None => (SVM_CACHE_MOST as u64).min(profile.global_mem_bytes / 16),
        }
        .min(usize::MAX as u64) as usize;
        let context = ocl::core::create_context(None, &[profile.device_id], None, None)
            .map_err(|e| Error::ocl("clCreateContext", label.clone(), e))?;
        // Profiling where asked: launch and transfer times feed the stage timers
        // (`Launch::wait_timed`, `SvmBuffer::last_transfer_time`), at a cost per launch.
        let queue = ocl::core::create_command_queue(
            &context,
            profile.device_id,
            device_times.then_some(PROFILING),
        )
        .map_err(|e| Error::ocl("clCreateCommandQueue", label, e))?;
        let svm_cache = Arc::new(SvmCache::new(context.clone(), cache_limit));
        Ok(Runtime {
            inner: Arc::new(Inner {
                profile,
                transport,
                context,
                timeout,
                device_times,
                programs: Mutex::new(HashMap::new()),
                allocations: AtomicU64::new(0),
                allocated_bytes: AtomicU64::new(0),
                svm_cache,
                faults,
            }),
            queue,
        })
    }

    /// The runtime's fault injection, shared by every handle of this device
    /// ([`crate::faults`]): for tests and the soak of what structures hold after a failure.
    pub fn faults(&self) -> &Arc<Faults> {
        &self.inner.faults
    }

    /// Whether `alloc` was made in this runtime's context.
    pub(crate) fn owns(&self, alloc: &crate::sys::SvmAlloc) -> bool {
        alloc.in_context(&self.inner.context)
    }

    /// The device's profile.
    pub fn profile(&self) -> &DeviceProfile {
        &self.inner.profile
    }

    /// The transport in use.
    pub fn transport(&self) -> Transport {
        self.inner.transport
    }

    /// The bound of waits on the device.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// Whether the queues time commands on the device ([`RuntimeOptions::device_times`]):
    /// without, device times are `None`.
    pub fn device_times(&self) -> bool {
        self.inner.device_times
    }

    pub(crate) fn queue(&self) -> &CommandQueue {
        &self.queue
    }

    /// `Error::Unsupported` unless the device runs work-groups of `size` (`what`: the job, for
    /// the message, e.g. "run k-selection").
    pub fn check_work_group(&self, size: usize, what: &str) -> Result<()> {
        let max = self.inner.profile.max_work_group_size.max(1);
        if size > max {
            return Err(Error::Unsupported {
                device: self.inner.profile.label(),
                what: format!("{what} with work-groups of {size}"),
                lacks: format!("work-groups that large (max {max})"),
            });
        }
        Ok(())
    }

    /// `len` zeroed elements in device memory, outside SVM ([`DeviceBuffer`]): for scratch
    /// that only kernels and a few blocking copies touch, where an SVM allocation would cost
    /// by its size (docs/benchmarks/runtime.md has both). Kernels take it with
    /// [`Kernel::arg_buffer`](crate::Kernel::arg_buffer).
    ///
    /// [`DeviceBuffer`]: crate::DeviceBuffer
    pub fn device_buffer<T: SvmElement>(&self, len: usize) -> Result<crate::DeviceBuffer<T>> {
        self.inner
            .faults
            .check(FaultPoint::Alloc, || "a device buffer".into())?;
        crate::DeviceBuffer::new(&self.inner.context, &self.queue, len)
    }

    /// Allocates `len` zeroed elements of SVM of the kind the transport uses.
    pub fn alloc<T: SvmElement>(&self, len: usize) -> Result<SvmBuffer<T>> {
        self.alloc_kind(len, self.inner.transport.svm_kind())
    }

    /// Allocates `len` zeroed elements of SVM of the transport's kind whose maps and unmaps go
    /// to `queue` instead of the main queue. A pipeline stage with its own queue and buffers
    /// can then map one buffer while a kernel of another stage runs: on one in-order queue a
    /// blocking map waits for every command enqueued before it.
    pub fn alloc_on<T: SvmElement>(&self, len: usize, queue: &Queue) -> Result<SvmBuffer<T>> {
        let kind = self.inner.transport.svm_kind();
        self.check_svm_kind(kind)?;
        self.count_allocation::<T>(len);
        let cache = Some(&self.inner.svm_cache);
        let faults = Some(&self.inner.faults);
        SvmBuffer::allocate(&self.inner.context, &queue.queue, len, kind, cache, faults)
    }

    /// Allocates `len` zeroed elements of SVM of `kind`, if the device supports it.
    pub fn alloc_kind<T: SvmElement>(&self, len: usize, kind: SvmKind) -> Result<SvmBuffer<T>> {
        self.check_svm_kind(kind)?;
        self.count_allocation::<T>(len);
        let cache = Some(&self.inner.svm_cache);
        let faults = Some(&self.inner.faults);
        SvmBuffer::allocate(&self.inner.context, &self.queue, len, kind, cache, faults)
    }

    /// SVM allocations asked of this runtime so far: how many, how many reused a freed
    /// buffer instead of calling the driver, and their bytes together.
    pub fn svm_stats(&self) -> SvmStats {
        SvmStats {
            allocations: self.inner.allocations.load(Ordering::Relaxed),
            reused: self.inner.svm_cache.reused(),
            bytes: self.inner.allocated_bytes.load(Ordering::Relaxed),
        }
    }

    /// The most bytes of freed SVM the runtime keeps for reuse.
    pub fn svm_cache_limit(&self) -> usize {
        self.inner.svm_cache.limit()
    }

    /// Allocates, zeroes and frees `bytes` of the transport's SVM kind, timing the three parts
    /// (`cargo bench --bench runtime`: which part of an allocation costs).
    pub fn time_svm_allocation(&self, bytes: usize) -> Result<[Duration; 3]> {
        let kind = self.inner.transport.svm_kind();
        self.check_svm_kind(kind)?;
        crate::sys::SvmAlloc::time_phases(&self.inner.context, &self.queue, bytes, kind)
    }

    fn count_allocation<T: SvmElement>(&self, len: usize) {
        self.inner.allocations.fetch_add(1, Ordering::Relaxed);
        let bytes = len.saturating_mul(std::mem::size_of::<T>()) as u64;
        self.inner
            .allocated_bytes
            .fetch_add(bytes, Ordering::Relaxed);
    }

    fn check_svm_kind(&self, kind: SvmKind) -> Result<()> {
        use crate::device::SvmLevel;
        let need = match kind {
            SvmKind::Coarse => SvmLevel::Coarse,
            SvmKind::Fine => SvmLevel::Fine,
            SvmKind::FineAtomics => SvmLevel::FineAtomics,
        };
        if self.inner.profile.svm < need {
            return Err(Error::Unsupported {
                device: self.inner.profile.label(),
                what: format!("allocate {kind:?} SVM"),
                lacks: format!("SVM level {need} (it has {})", self.inner.profile.svm),
            });
        }
        Ok(())
    }

    /// The build options for this device and transport (plus `extra`). NVIDIA devices also
    /// get `-DASYM_NVIDIA=1`: their OpenCL C 1.2 `mem_fence` orders memory for the work-group
    /// only, so common.cl's `asym_fence` issues PTX `membar.gl` there.
    pub fn build_options(&self, extra: &str) -> String {
        let transport = match self.inner.transport {
            Transport::Fine => "-DASYM_FINE=1",
            Transport::Coarse => "-DASYM_COARSE=1",
        };
        let vendor = if self.inner.profile.platform.contains("NVIDIA") {
            " -DASYM_NVIDIA=1"
        } else {
            ""
        };
        format!(
            "-cl-std={} {transport}{vendor} {} {extra}",
            self.inner.profile.cl_std(),
            ring_protocol::cl_defines()
        )
        .trim()
        .to_string()
    }

    /// Builds `source` (after the shared helpers in `kernels/common.cl` and `kernels/ring.cl`)
    /// once per runtime and caches it. A failure returns [`Error::Build`] with the full log.
    pub fn program(&self, source: &KernelSource) -> Result<Program> {
        self.program_with(source, "")
    }

    /// Like [`Runtime::program`], with extra build options (for example `-DD=8`); each
    /// distinct option string is a separate cache entry.
    pub fn program_with(&self, source: &KernelSource, extra_options: &str) -> Result<Program> {
        let key = (source.name, extra_options.to_string());
        let mut cache = self
            .inner
            .programs
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(p) = cache.get(&key) {
            return Ok(p.clone());
        }
        let program = self.build(source, extra_options)?;
        cache.insert(key, program.clone());
        Ok(program)
    }

    fn build(&self, source: &KernelSource, extra: &str) -> Result<Program> {
        let profile = &self.inner.profile;
        let text = asym_kernels::with_helpers(source);
        let nul = |what: &str| Error::InvalidArgument(format!("{what} contains a NUL byte"));
        let text = CString::new(text).map_err(|_| nul(source.name))?;
        let options = self.build_options(extra);
        // The one check of every host↔kernel contract: the names the source takes from the
        // host against the -D options this build gives, before the compiler sees either.
        let problems = source.contract_problems(&options);
        if !problems.is_empty() {
            return Err(Error::Build {
                device: profile.label(),
                program: source.name.to_string(),
                options,
                log: format!(
                    "the host's constants and the kernel disagree:\n{}",
                    problems.join("\n")
                ),
            });
        }
        let c_options = CString::new(options.clone()).map_err(|_| nul("build options"))?;
        let program = ocl::core::create_program_with_source(&self.inner.context, &[text])
            .map_err(|e| Error::ocl("clCreateProgramWithSource", source.name, e))?;
        if ocl::core::build_program(&program, Some(&[profile.device_id]), &c_options, None, None)
            .is_err()
        {
            let log = match ocl::core::get_program_build_info(
                &program,
                profile.device_id,
                ProgramBuildInfo::BuildLog,
            ) {
                Ok(log) => log.to_string(),
                Err(e) => format!("(the build log could not be read: {e})"),
            };
            return Err(Error::Build {
                device: profile.label(),
                program: source.name.to_string(),
                options,
                log,
            });
        }
        if let Some(dir) = std::env::var_os(DUMP_BINARIES_ENV).filter(|d| !d.is_empty()) {
            dump_binary(&program, source.name, &options, std::path::Path::new(&dir));
        }
        Ok(Program {
            program,
            name: source.name,
            source: *source,
        })
    }

    /// Creates kernel `name` of `source` (building the program on first use). `Kernel` is
    /// `Send` but not `Sync`: create one per thread.
    pub fn kernel(&self, source: &KernelSource, name: &str) -> Result<Kernel> {
        let program = self.program(source)?;
        Kernel::new(self.clone(), &program, name)
    }

    /// A new in-order command queue on this device, for work that must not wait behind the
    /// main queue (a persistent kernel, a pipeline stage).
    pub fn new_queue(&self) -> Result<Queue> {
        let q = ocl::core::create_command_queue(
            &self.inner.context,
            self.inner.profile.device_id,
            self.inner.device_times.then_some(PROFILING),
        )
        .map_err(|e| Error::ocl("clCreateCommandQueue", self.inner.profile.label(), e))?;
        Ok(Queue { queue: q })
    }

    /// The same device, context, built programs and SVM cache, with launches, SVM maps and
    /// [`Runtime::finish`] going to a new in-order queue: work enqueued through two such
    /// handles can run on the device at once (kernels of one queue run one after another),
    /// where a second [`Runtime`] opened on the device would be a second context, with SVM
    /// buffers of its own. Buffers allocated through a
    /// handle map on its queue.
    pub fn with_new_queue(&self) -> Result<Runtime> {
        Ok(Runtime {
            inner: self.inner.clone(),
            queue: self.new_queue()?.queue,
        })
    }

    /// Waits for every command on this handle's queue.
    pub fn finish(&self) -> Result<()> {
        ocl::core::finish(&self.queue).map_err(|e| Error::ocl("clFinish", "main queue", e))
    }
}

/// The most freed SVM a runtime keeps for reuse (and at most a sixteenth of the device's
/// global memory), in buffers of at most an eighth of it: enough for a search's or a
/// structure's working buffers; larger buffers are rare and their own transfers outweigh the
/// driver's allocation.
pub const SVM_CACHE_MOST: usize = 256 << 20;

/// SVM allocations asked of a runtime ([`Runtime::svm_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SvmStats {
    /// Allocations asked for.
    pub allocations: u64,
    /// Of them, served by a freed buffer of the runtime (no driver call, a device fill
    /// instead: docs/benchmarks/runtime.md).
    pub reused: u64,
    /// Their bytes together.
    pub bytes: u64,
}

impl SvmStats {
    /// Allocations that called the driver.
    pub fn driver_allocations(&self) -> u64 {
        self.allocations - self.reused
    }
}

/// Set to a directory to have every program's device binary (PTX on NVIDIA) written there
/// after it builds: for checking what the compiler made of fences and atomics.
pub const DUMP_BINARIES_ENV: &str = "ASYM_DUMP_BINARIES";

fn dump_binary(program: &ocl::core::Program, name: &str, options: &str, dir: &std::path::Path) {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    options.hash(&mut h);
    let result = ocl::core::get_program_info(program, ocl::enums::ProgramInfo::Binaries);
    match result {
        Ok(ocl::enums::ProgramInfoResult::Binaries(bins)) => {
            for (i, b) in bins.iter().enumerate() {
                let path = dir.join(format!("{name}-{:016x}-{i}.bin", h.finish()));
                if let Err(e) = std::fs::write(&path, b) {
                    eprintln!("asym: cannot write {}: {e}", path.display());
                }
            }
        }
        Ok(_) => {}
        Err(e) => eprintln!("asym: cannot read the binary of {name}: {e}"),
    }
}
