//! OpenCL platforms and devices: enumeration, profiles and selection by name.

use std::fmt;

use ocl::core::{DeviceId, DeviceInfo, DeviceInfoResult, PlatformInfo};
use ocl::ffi;

use crate::error::{Error, Result};

/// What kind of processor an OpenCL device is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// A GPU (a throughput unit with many lanes).
    Gpu,
    /// A CPU exposed as an OpenCL device (for example PoCL).
    Cpu,
    /// An accelerator or anything else.
    Other,
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Gpu => "GPU",
            DeviceKind::Cpu => "CPU",
            DeviceKind::Other => "other",
        })
    }
}

/// The shared-virtual-memory level a device supports, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SvmLevel {
    /// No SVM (OpenCL 1.x drivers).
    None,
    /// Coarse-grained buffer SVM (NVIDIA).
    Coarse,
    /// Fine-grained buffer SVM without SVM atomics.
    Fine,
    /// Fine-grained buffer SVM with SVM atomics (PoCL CPU, AMD and Intel APUs).
    FineAtomics,
}

impl fmt::Display for SvmLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SvmLevel::None => "none",
            SvmLevel::Coarse => "coarse",
            SvmLevel::Fine => "fine",
            SvmLevel::FineAtomics => "fine+atomics",
        })
    }
}

/// Everything asym needs to know about one device.
#[derive(Clone, Debug)]
pub struct DeviceProfile {
    /// Platform name (for example `NVIDIA CUDA`, `Portable Computing Language`).
    pub platform: String,
    /// Device name.
    pub name: String,
    /// Device vendor.
    pub vendor: String,
    /// Driver version string.
    pub driver: String,
    /// GPU, CPU or other.
    pub kind: DeviceKind,
    /// Compute units.
    pub compute_units: u32,
    /// Maximum work-group size.
    pub max_work_group_size: usize,
    /// Local memory per work-group, bytes.
    pub local_mem_bytes: u64,
    /// Global memory, bytes.
    pub global_mem_bytes: u64,
    /// Highest OpenCL C version the compiler accepts (major, minor).
    pub opencl_c: (u32, u32),
    /// Whether OpenCL C acquire/release atomics with device scope are available (OpenCL C 2.0,
    /// or 3.0 with `__opencl_c_atomic_order_acq_rel` and `__opencl_c_atomic_scope_device`).
    pub c11_atomics: bool,
    /// SVM level.
    pub svm: SvmLevel,
    /// 64-bit global atomics (`cl_khr_int64_base_atomics`).
    pub int64_atomics: bool,
    pub(crate) device_id: DeviceId,
}

impl DeviceProfile {
    /// `platform / device`, the label used in listings and errors.
    pub fn label(&self) -> String {
        format!("{} / {}", self.platform, self.name)
    }

    /// The OpenCL C `-cl-std` option asym builds with: CL3.0 where supported (PoCL rejects
    /// CL2.0's atomics), CL2.0 on 2.x compilers, else CL1.2.
    pub fn cl_std(&self) -> &'static str {
        match self.opencl_c {
            (3, _) => "CL3.0",
            (2, _) => "CL2.0",
            _ => "CL1.2",
        }
    }

    /// Whether `other` describes the same OpenCL device (two PoCL devices share a name).
    pub fn same_device(&self, other: &DeviceProfile) -> bool {
        self.device_id == other.device_id
    }

    /// Whether `query` (case-insensitive) is part of the platform or device name.
    pub fn matches(&self, query: &str) -> bool {
        let q = query.to_lowercase();
        self.name.to_lowercase().contains(&q) || self.platform.to_lowercase().contains(&q)
    }
}

impl fmt::Display for DeviceProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.label())?;
        writeln!(f, "  type              {}", self.kind)?;
        writeln!(f, "  vendor / driver   {} / {}", self.vendor, self.driver)?;
        writeln!(f, "  compute units     {}", self.compute_units)?;
        writeln!(f, "  max work-group    {}", self.max_work_group_size)?;
        writeln!(f, "  local memory      {} KiB", self.local_mem_bytes / 1024)?;
        writeln!(f, "  global memory     {} MiB", self.global_mem_bytes >> 20)?;
        writeln!(
            f,
            "  OpenCL C          {}.{} (building with -cl-std={}; C11 atomics: {})",
            self.opencl_c.0,
            self.opencl_c.1,
            self.cl_std(),
            yes_no(self.c11_atomics)
        )?;
        writeln!(f, "  SVM               {}", self.svm)?;
        write!(f, "  64-bit atomics    {}", yes_no(self.int64_atomics))
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

// Device queries that ocl 0.19's `DeviceInfo` does not name (OpenCL 3.0).
const CL_DEVICE_OPENCL_C_ALL_VERSIONS: u32 = 0x1066;
const CL_DEVICE_OPENCL_C_FEATURES: u32 = 0x106F;
/// Size of `cl_name_version`: a `cl_version` then a 64-byte name.
const NAME_VERSION_BYTES: usize = 4 + 64;

fn info_string(id: DeviceId, what: DeviceInfo) -> Result<String> {
    match ocl::core::get_device_info(id, what) {
        Ok(r) => Ok(r.to_string().trim().to_string()),
        Err(e) => Err(Error::ocl("clGetDeviceInfo", format!("{what:?}"), e)),
    }
}

fn raw_u64(id: DeviceId, code: u32) -> Option<u64> {
    let bytes = ocl::core::get_device_info_raw(id, code).ok()?;
    match bytes.len() {
        4 => Some(u32::from_ne_bytes(bytes[..4].try_into().ok()?) as u64),
        8 => Some(u64::from_ne_bytes(bytes[..8].try_into().ok()?)),
        _ => None,
    }
}

/// Parses an array of `cl_name_version` into (name, major, minor) triples.
fn name_versions(id: DeviceId, code: u32) -> Vec<(String, u32, u32)> {
    let Ok(bytes) = ocl::core::get_device_info_raw(id, code) else {
        return Vec::new();
    };
    bytes
        .chunks_exact(NAME_VERSION_BYTES)
        .map(|c| {
            let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
            let name = &c[4..];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            (
                String::from_utf8_lossy(&name[..end]).into_owned(),
                v >> 22,
                (v >> 12) & 0x3ff,
            )
        })
        .collect()
}

/// Parses `OpenCL C 1.2 ...` into (1, 2).
fn parse_c_version(s: &str) -> (u32, u32) {
    s.strip_prefix("OpenCL C ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| {
            let (a, b) = v.split_once('.')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .unwrap_or((1, 0))
}

fn profile(platform: &str, device_id: DeviceId) -> Result<DeviceProfile> {
    let name = info_string(device_id, DeviceInfo::Name)?;
    let kind = match ocl::core::get_device_info(device_id, DeviceInfo::Type) {
        Ok(DeviceInfoResult::Type(t)) if t.contains(ocl::core::DeviceType::GPU) => DeviceKind::Gpu,
        Ok(DeviceInfoResult::Type(t)) if t.contains(ocl::core::DeviceType::CPU) => DeviceKind::Cpu,
        _ => DeviceKind::Other,
    };
    let extensions = info_string(device_id, DeviceInfo::Extensions).unwrap_or_default();
    let legacy_c = parse_c_version(&info_string(device_id, DeviceInfo::OpenclCVersion)?);
    let all_c = name_versions(device_id, CL_DEVICE_OPENCL_C_ALL_VERSIONS);
    let opencl_c = all_c
        .iter()
        .map(|&(_, a, b)| (a, b))
        .chain([legacy_c])
        .max()
        .unwrap_or(legacy_c);
    let features: Vec<String> = name_versions(device_id, CL_DEVICE_OPENCL_C_FEATURES)
        .into_iter()
        .map(|f| f.0)
        .collect();
    let has = |f: &str| features.iter().any(|x| x == f);
    let c11_atomics = match opencl_c {
        (2, _) => true,
        (3, _) => has("__opencl_c_atomic_order_acq_rel") && has("__opencl_c_atomic_scope_device"),
        _ => false,
    };
    let caps = raw_u64(device_id, ffi::CL_DEVICE_SVM_CAPABILITIES).unwrap_or(0);
    let svm = if caps & ffi::CL_DEVICE_SVM_FINE_GRAIN_BUFFER != 0 {
        if caps & ffi::CL_DEVICE_SVM_ATOMICS != 0 {
            SvmLevel::FineAtomics
        } else {
            SvmLevel::Fine
        }
    } else if caps & ffi::CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0 {
        SvmLevel::Coarse
    } else {
        SvmLevel::None
    };
    let num = |what: u32| raw_u64(device_id, what).unwrap_or(0);
    Ok(DeviceProfile {
        platform: platform.to_string(),
        vendor: info_string(device_id, DeviceInfo::Vendor).unwrap_or_default(),
        driver: info_string(device_id, DeviceInfo::DriverVersion).unwrap_or_default(),
        name,
        kind,
        compute_units: num(ffi::CL_DEVICE_MAX_COMPUTE_UNITS) as u32,
        max_work_group_size: num(ffi::CL_DEVICE_MAX_WORK_GROUP_SIZE) as usize,
        local_mem_bytes: num(ffi::CL_DEVICE_LOCAL_MEM_SIZE),
        global_mem_bytes: num(ffi::CL_DEVICE_GLOBAL_MEM_SIZE),
        opencl_c,
        c11_atomics,
        svm,
        int64_atomics: extensions.contains("cl_khr_int64_base_atomics"),
        device_id,
    })
}

/// Every OpenCL device of every platform, in the order the ICD loader lists them.
///
/// Enumerated once per process, under a lock: PoCL's first device query is not safe to run
/// from several threads at once (it can report no devices), and the list cannot change.
pub fn list_devices() -> Result<Vec<DeviceProfile>> {
    static DEVICES: std::sync::Mutex<Option<Vec<DeviceProfile>>> = std::sync::Mutex::new(None);
    let mut cache = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(list) = cache.as_ref() {
        return Ok(list.clone());
    }
    let list = enumerate()?;
    *cache = Some(list.clone());
    Ok(list)
}

fn enumerate() -> Result<Vec<DeviceProfile>> {
    let platforms = match ocl::core::get_platform_ids() {
        Ok(p) => p,
        // The ICD loader reports CL_PLATFORM_NOT_FOUND_KHR (-1001) when no driver is registered.
        Err(_) => return Err(Error::NoPlatform),
    };
    if platforms.is_empty() {
        return Err(Error::NoPlatform);
    }
    let mut out = Vec::new();
    for p in platforms {
        let pname = ocl::core::get_platform_info(p, PlatformInfo::Name)
            .map(|r| r.to_string())
            .unwrap_or_else(|_| "unknown platform".into());
        let ids = match ocl::core::get_device_ids(p, Some(ocl::core::DeviceType::ALL), None) {
            Ok(ids) => ids,
            // A platform with no devices answers CL_DEVICE_NOT_FOUND: skip it.
            Err(e) if e.api_status() == Some(ocl::core::Status::CL_DEVICE_NOT_FOUND) => continue,
            Err(e) => return Err(Error::ocl("clGetDeviceIDs", pname.trim().to_string(), e)),
        };
        for id in ids {
            out.push(profile(pname.trim(), id)?);
        }
    }
    Ok(out)
}

/// The environment variable that selects a device by name fragment.
pub const DEVICE_ENV: &str = "ASYM_DEVICE";

/// Picks a device: the first whose platform or device name contains `query`
/// (case-insensitive); with no query, `ASYM_DEVICE`; with neither, the first GPU, else the
/// first CPU device, else the first device. A device set's name (`all`, or a
/// comma-separated list, see [`crate::DeviceSet`]) picks the device a one-device program
/// would take from it: the default choice for `all`, the list's first for a list.
pub fn select_device(query: Option<&str>) -> Result<DeviceProfile> {
    let devices = list_devices()?;
    let env = std::env::var(DEVICE_ENV)
        .ok()
        .filter(|s| !s.trim().is_empty());
    let query = query.map(str::to_string).or(env).and_then(|q| {
        let q = q.trim();
        if q.eq_ignore_ascii_case("all") {
            None
        } else {
            Some(q.split(',').next().unwrap_or(q).trim().to_string())
        }
    });
    let found = match &query {
        Some(q) => devices.iter().find(|d| d.matches(q.trim())),
        None => devices
            .iter()
            .find(|d| d.kind == DeviceKind::Gpu)
            .or_else(|| devices.iter().find(|d| d.kind == DeviceKind::Cpu))
            .or_else(|| devices.first()),
    };
    found.cloned().ok_or_else(|| Error::DeviceNotFound {
        query: query.unwrap_or_default(),
        available: devices.iter().map(DeviceProfile::label).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_c_versions() {
        assert_eq!(parse_c_version("OpenCL C 1.2 PoCL"), (1, 2));
        assert_eq!(parse_c_version("OpenCL C 3.0 "), (3, 0));
        assert_eq!(parse_c_version("garbage"), (1, 0));
    }
}
