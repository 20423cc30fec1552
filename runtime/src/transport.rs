//! SVM transports: how host threads and kernels hand data to each other.
//!
//! | transport | needs | host ↔ running kernel |
//! | --- | --- | --- |
//! | [`Transport::Fine`] | fine-grained buffer SVM + SVM atomics + OpenCL C acquire/release atomics | live, through SVM atomics |
//! | [`Transport::Coarse`] | coarse-grained buffer SVM | at kernel boundaries (map/unmap, events) |
//!
//! `ASYM_SVM=coarse` forces the coarse transport on a fine-capable device, so CI on PoCL runs
//! the path NVIDIA takes; `ASYM_SVM=fine` insists on fine and fails clearly where it is missing.

use std::fmt;

use crate::device::{DeviceProfile, SvmLevel};
use crate::error::{Error, Result};
use crate::named::Named;
use crate::sys::SvmKind;

/// The environment variable that forces a transport (`fine` or `coarse`).
pub const SVM_ENV: &str = "ASYM_SVM";

/// How host and device share SVM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Host threads and a persistent kernel share rings and flags through SVM atomics.
    Fine,
    /// Ownership passes at kernel boundaries; cooperation is pipelined in batches.
    Coarse,
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Named for Transport {
    const KIND: &'static str = "SVM transport";
    const ALL: &'static [Transport] = &[Transport::Fine, Transport::Coarse];
    fn name(self) -> &'static str {
        match self {
            Transport::Fine => "fine",
            Transport::Coarse => "coarse",
        }
    }
}

impl Transport {
    /// The SVM allocation kind this transport uses for shared structures.
    pub fn svm_kind(self) -> SvmKind {
        match self {
            Transport::Fine => SvmKind::FineAtomics,
            Transport::Coarse => SvmKind::Coarse,
        }
    }

    /// Whether `device` can run this transport; `Err` names what it lacks.
    pub fn check(self, device: &DeviceProfile) -> Result<()> {
        let lacks = match self {
            Transport::Fine if device.svm < SvmLevel::FineAtomics => Some(format!(
                "fine-grained buffer SVM with SVM atomics (it has SVM level `{}`)",
                device.svm
            )),
            Transport::Fine if !device.c11_atomics => Some(format!(
                "OpenCL C acquire/release atomics with device scope (OpenCL C {}.{})",
                device.opencl_c.0, device.opencl_c.1
            )),
            Transport::Coarse if device.svm < SvmLevel::Coarse => {
                Some("shared virtual memory (OpenCL 2.0 coarse-grained buffer SVM)".into())
            }
            _ => None,
        };
        match lacks {
            None => Ok(()),
            Some(lacks) => Err(Error::Unsupported {
                device: device.label(),
                what: format!("use the {self} SVM transport"),
                lacks,
            }),
        }
    }

    /// The transports `device` supports, best first.
    pub fn supported_by(device: &DeviceProfile) -> Vec<Transport> {
        [Transport::Fine, Transport::Coarse]
            .into_iter()
            .filter(|t| t.check(device).is_ok())
            .collect()
    }

    /// The transports to exercise on `device`: the one `ASYM_SVM` forces (checked), else every
    /// one the device supports. Tests and benchmarks run each of these.
    pub fn candidates(device: &DeviceProfile) -> Result<Vec<Transport>> {
        match crate::env::named::<Transport>(SVM_ENV)? {
            Some(t) => t.check(device).map(|()| vec![t]),
            None => Ok(Transport::supported_by(device)),
        }
    }

    /// The transport to use: `requested`, else `ASYM_SVM`, else the best the device supports.
    pub fn choose(device: &DeviceProfile, requested: Option<Transport>) -> Result<Transport> {
        let requested = match requested {
            Some(t) => Some(t),
            None => crate::env::named::<Transport>(SVM_ENV)?,
        };
        match requested {
            Some(t) => t.check(device).map(|()| t),
            None => Transport::supported_by(device)
                .first()
                .copied()
                .ok_or_else(|| Error::Unsupported {
                    device: device.label(),
                    what: "share memory with the host".into(),
                    lacks: "shared virtual memory (OpenCL 2.0 SVM); asym needs at least \
                            coarse-grained buffer SVM"
                        .into(),
                }),
        }
    }
}
