//! The one error type of asym.
//!
//! Shaped after wgpu-hal: variants say what went wrong in the user's terms (`OutOfMemory`,
//! `Stalled`, `Unsupported`), OpenCL status codes are shown by name, and a failed kernel build
//! carries the device and the full build log.

use std::fmt;

/// Which side of a device boundary a bounded wait was waiting for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The OpenCL device (a running kernel, or the queue that feeds it).
    Device,
    /// A host thread (a latency thread, the coarse transport's pump, or a producer/consumer).
    Host,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Device => "device",
            Side::Host => "host",
        })
    }
}

/// Everything that can go wrong in asym.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An OpenCL call returned an error status.
    #[error("OpenCL {call} failed: {status}{}", detail_suffix(.detail))]
    OpenCl {
        /// The API call (for example `clSVMAlloc`).
        call: &'static str,
        /// The status code by name (`CL_OUT_OF_RESOURCES`) or the error text from `ocl`.
        status: String,
        /// What asym was doing.
        detail: String,
    },
    /// No OpenCL platform is installed (no ICD registered).
    #[error("no OpenCL platform found: install an OpenCL driver (on Debian: apt-get install pocl-opencl-icd ocl-icd-opencl-dev)")]
    NoPlatform,
    /// The requested device name matched nothing.
    #[error("no OpenCL device matches {query:?}; devices that exist: {}", .available.join("; "))]
    DeviceNotFound {
        /// The name fragment that was asked for.
        query: String,
        /// `platform / device` of every device present.
        available: Vec<String>,
    },
    /// The device lacks a capability the requested operation needs.
    #[error("device {device:?} cannot {what}: it lacks {lacks}")]
    Unsupported {
        /// Device name.
        device: String,
        /// What was asked for.
        what: String,
        /// The missing capability.
        lacks: String,
    },
    /// A kernel program failed to build; the log is the compiler's full output.
    #[error("building OpenCL program {program:?} for {device:?} with options {options:?} failed:\n{log}")]
    Build {
        /// Device name.
        device: String,
        /// Name of the kernel source (for example `runtime.cl`).
        program: String,
        /// Build options used.
        options: String,
        /// The complete build log.
        log: String,
    },
    /// An allocation (SVM, host, or a structure's pool) could not be satisfied.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// A size given from outside (a file's header, a flag) needs more host memory than the
    /// process may still use (see [`host_memory::available`](crate::host_memory::available));
    /// nothing was allocated.
    #[error("out of host memory: {what} needs {}, this process may use {} more ({bound})", crate::host_memory::human_bytes(*.needed), crate::host_memory::human_bytes(*.available))]
    HostOutOfMemory {
        /// What would have been allocated, in the user's terms.
        what: String,
        /// Bytes it needs (`u64::MAX` when the size overflows).
        needed: u64,
        /// Bytes the process could still use when it was checked.
        available: u64,
        /// What bounds `available`: the machine's available memory, `ulimit -v`, `ulimit -d`
        /// or the cgroup's limit.
        bound: &'static str,
    },
    /// A bounded structure is full (a ring, a pool, a heap of fixed capacity).
    #[error("capacity exceeded: {what} holds at most {capacity}")]
    CapacityExceeded {
        /// The structure.
        what: String,
        /// Its capacity.
        capacity: usize,
    },
    /// An argument of a call was out of range or malformed.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A file the user gave is malformed: the file, the line where there is one, what is wrong.
    #[error("{file}{}: {what}", line_suffix(*.line))]
    Parse {
        /// The file as the user named it.
        file: String,
        /// The line (from 1), when the problem has one.
        line: Option<usize>,
        /// What is wrong there.
        what: String,
    },
    /// A command-line flag or an `ASYM_*` environment variable has a value it does not accept.
    #[error("{name} {}: {expected}", shown(.value))]
    Flag {
        /// The flag (`--mode`) or variable (`ASYM_SVM`).
        name: String,
        /// The value given.
        value: String,
        /// What it accepts.
        expected: String,
    },
    /// An SVM buffer was used while another party owns it (mapped on the host, or in use by a
    /// running kernel).
    #[error("SVM buffer busy: {0}")]
    Busy(String),
    /// A bounded wait ran out: which side did not make progress, and what we waited for.
    #[error("timed out after {waited_ms} ms waiting for the {side} to {waiting_for}{}", detail_suffix(.detail))]
    Stalled {
        /// The side that did not make progress.
        side: Side,
        /// What the wait expected.
        waiting_for: String,
        /// How long the wait lasted.
        waited_ms: u64,
        /// Liveness facts gathered at the time (for example the device's progress counter).
        detail: String,
    },
    /// A latency thread panicked; the panic message is kept.
    #[error("latency thread {thread} (cpu {cpu:?}) panicked: {message}")]
    LatencyThreadPanicked {
        /// Index of the thread in its pool.
        thread: usize,
        /// CPU it was pinned to.
        cpu: Option<usize>,
        /// The panic payload as text.
        message: String,
    },
    /// A device failed under a call: a kernel stopped early, a service kernel exited, data
    /// came back broken from it, or a fault was injected there (tests). The one kind of
    /// error a device set fails over ([`Error::is_device_fault`]).
    #[error("device {device} lost: {what}")]
    DeviceLost {
        /// The device (its label), or the part of the set that failed.
        device: String,
        /// What went wrong.
        what: String,
    },
    /// A structure failed one of its own checks: it is damaged, and no retry elsewhere can
    /// mend it (its keys or links are what went wrong).
    #[error("{structure} is damaged: {what}")]
    Corrupted {
        /// The structure (`the device heap`, `the red-black tree`).
        structure: String,
        /// The check that failed.
        what: String,
    },
    /// A host thread a call depends on could not start, exited or panicked.
    #[error("{thread} lost: {what}")]
    ThreadLost {
        /// The thread (`latency thread 3`, `the device driver thread`).
        thread: String,
        /// What happened to it.
        what: String,
    },
    /// A size beyond what a structure, a kernel or the device can take.
    #[error("{what}: {size} is more than the limit of {limit}")]
    TooLarge {
        /// What was too large, in the caller's terms.
        what: String,
        /// The size asked for.
        size: u64,
        /// The most allowed.
        limit: u64,
    },
    /// An argument of a call outside the values the call accepts.
    #[error("{what} {value}: {expected}")]
    OutOfRange {
        /// The argument, in the caller's terms (`batch size`, `d`).
        what: String,
        /// The value given.
        value: String,
        /// What it accepts.
        expected: String,
    },
    /// Another rank of a distributed call (over MPI) failed: every rank returns this, so none
    /// waits for the failed one. The failed rank itself returns its own error.
    #[error("rank {rank}: {message}")]
    RankFailed {
        /// The rank that failed (the lowest, where several did).
        rank: usize,
        /// Its error, as it printed it.
        message: String,
        /// Whether its error was the caller's (bad arguments or input), so every rank exits as
        /// the failed one does.
        usage: bool,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// A flag's value as the user typed it, quoted only where it would not read as one word.
fn shown(value: &str) -> String {
    if value.is_empty() || value.contains(char::is_whitespace) || value.contains('"') {
        format!("{value:?}")
    } else {
        value.to_string()
    }
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

impl Error {
    /// A [`Error::Parse`] at `line` of `file`.
    pub fn parse(file: impl Into<String>, line: usize, what: impl std::fmt::Display) -> Self {
        Error::Parse {
            file: file.into(),
            line: Some(line),
            what: what.to_string(),
        }
    }

    /// A [`Error::Parse`] of `file` as a whole.
    pub fn parse_file(file: impl Into<String>, what: impl std::fmt::Display) -> Self {
        Error::Parse {
            file: file.into(),
            line: None,
            what: what.to_string(),
        }
    }

    /// A [`Error::DeviceLost`] of `device`.
    pub fn device_lost(device: impl Into<String>, what: impl std::fmt::Display) -> Self {
        Error::DeviceLost {
            device: device.into(),
            what: what.to_string(),
        }
    }

    /// A [`Error::Corrupted`] of `structure`.
    pub fn corrupted(structure: impl Into<String>, what: impl std::fmt::Display) -> Self {
        Error::Corrupted {
            structure: structure.into(),
            what: what.to_string(),
        }
    }

    /// A [`Error::ThreadLost`] of `thread`.
    pub fn thread_lost(thread: impl Into<String>, what: impl std::fmt::Display) -> Self {
        Error::ThreadLost {
            thread: thread.into(),
            what: what.to_string(),
        }
    }

    /// A [`Error::TooLarge`]: `what` of `size` where at most `limit` is allowed.
    pub fn too_large(
        what: impl Into<String>,
        size: impl TryInto<u64>,
        limit: impl TryInto<u64>,
    ) -> Self {
        Error::TooLarge {
            what: what.into(),
            size: size.try_into().unwrap_or(u64::MAX),
            limit: limit.try_into().unwrap_or(u64::MAX),
        }
    }

    /// An [`Error::OutOfRange`]: `what` does not accept `value`; it accepts `expected`.
    pub fn out_of_range(
        what: impl Into<String>,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        Error::OutOfRange {
            what: what.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// Whether the caller's arguments are at fault: a malformed argument, a value out of
    /// range, a size too large. The same call fails the same way on any device (a binding
    /// raises `ValueError` for these).
    pub fn is_argument_error(&self) -> bool {
        matches!(
            self,
            Error::InvalidArgument(_) | Error::OutOfRange { .. } | Error::TooLarge { .. }
        )
    }

    /// Whether the error comes from what the user gave (flags, files, names, sizes, the
    /// memory and devices the machine offers) rather than from the run itself: the programs
    /// exit with 2 for these, 1 for the rest.
    pub fn is_usage_error(&self) -> bool {
        matches!(
            self,
            Error::InvalidArgument(_)
                | Error::OutOfRange { .. }
                | Error::TooLarge { .. }
                | Error::Flag { .. }
                | Error::Parse { .. }
                | Error::DeviceNotFound { .. }
                | Error::Io { .. }
                | Error::HostOutOfMemory { .. }
                | Error::CapacityExceeded { .. }
                | Error::Unsupported { .. }
                | Error::NoPlatform
                | Error::RankFailed { usage: true, .. }
        )
    }

    /// Whether the error is a device's fault, the one kind a device set fails over: the
    /// member whose device failed leaves the set and its share goes to the others where the
    /// structure allows it.
    ///
    /// The policy, written once for every structure that spreads work:
    /// - a device fault is [`Error::DeviceLost`], any failed OpenCL call ([`Error::OpenCl`]:
    ///   the driver said the device, its queue or its memory failed) and a wait on the device
    ///   that ran out ([`Error::Stalled`] on [`Side::Device`]);
    /// - everything else is the call's error: a damaged structure ([`Error::Corrupted`]: its
    ///   keys or links are what went wrong, so another device would only repeat them), bad
    ///   arguments and sizes (the same on every member), memory running out, a host thread
    ///   lost or stalled (the host is shared by every member).
    pub fn is_device_fault(&self) -> bool {
        matches!(
            self,
            Error::DeviceLost { .. }
                | Error::OpenCl { .. }
                | Error::Stalled {
                    side: Side::Device,
                    ..
                }
        )
    }

    /// A [`Error::Flag`]: `name` does not accept `value`; it accepts `expected`.
    pub fn flag(
        name: impl Into<String>,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        Error::Flag {
            name: name.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}

/// asym's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an `ocl` error from `call`, keeping the status code by name.
    pub(crate) fn ocl(
        call: &'static str,
        detail: impl Into<String>,
        err: ocl::core::Error,
    ) -> Self {
        let status = match err.api_status() {
            Some(s) => format!("{s:?}"),
            None => err.to_string(),
        };
        Error::OpenCl {
            call,
            status,
            detail: detail.into(),
        }
    }

    /// Wraps a raw OpenCL status code from `call`.
    pub(crate) fn status(call: &'static str, detail: impl Into<String>, code: i32) -> Self {
        Error::OpenCl {
            call,
            status: status_name(code),
            detail: detail.into(),
        }
    }
}

/// The name of an OpenCL status code (`-5` → `CL_OUT_OF_RESOURCES`).
pub fn status_name(code: i32) -> String {
    match <ocl::core::Status as num_traits::FromPrimitive>::from_i32(code) {
        Some(s) => format!("{s:?}"),
        None => format!("unknown status {code}"),
    }
}

/// A caught panic's message (the text of a `&str` or `String` payload), for the errors that
/// report a panic instead of passing it on.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".into()
    }
}
