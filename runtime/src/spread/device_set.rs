//! Several OpenCL devices at once: one [`Runtime`] per device, each with its own context,
//! queue, program cache and SVM transport (fine on PoCL, coarse on NVIDIA: a transport is a
//! property of one device's SVM, so members do not share buffers).
//!
//! A set is named the way `--device` names one device: `all` takes every device the ICD
//! loader lists; a comma-separated list takes, for each name fragment in turn, the first
//! matching device not taken yet (so `pthread,pthread` takes two PoCL devices when PoCL
//! lists two, as `POCL_DEVICES="pthread pthread"` makes it); a single fragment (or none:
//! `ASYM_DEVICE`, else the default device) takes one.

use std::time::Duration;

use crate::device::{list_devices, select_device, DeviceProfile, DEVICE_ENV};
use crate::error::{Error, Result};
use crate::runtime::{Runtime, RuntimeOptions};
use crate::transport::Transport;

/// The devices of a set, each opened as its own [`Runtime`].
#[derive(Clone, Debug)]
pub struct DeviceSet {
    members: Vec<Runtime>,
}

impl DeviceSet {
    /// Opens the devices `spec` names (see the module documentation), each with its default
    /// transport and timeout. `None` reads `ASYM_DEVICE`.
    pub fn open(spec: Option<&str>) -> Result<Self> {
        Self::with_options(spec, None, None)
    }

    /// [`DeviceSet::open`] with one `transport` forced on every member (an error if one
    /// cannot give it) and a `timeout` for every wait.
    pub fn with_options(
        spec: Option<&str>,
        transport: Option<Transport>,
        timeout: Option<Duration>,
    ) -> Result<Self> {
        let profiles = Self::choose(spec)?;
        let members = profiles
            .into_iter()
            .map(|p| {
                // Device times on: the set splits work by each member's measured rate, and
                // members running at once stretch one another's wall times.
                let options = RuntimeOptions {
                    transport,
                    timeout,
                    device_times: Some(true),
                    ..Default::default()
                };
                Runtime::open_with(p, &options)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DeviceSet { members })
    }

    /// A set of runtimes opened by the caller (each with the transport and timeout it
    /// chose); an error when `members` is empty or names one device twice.
    pub fn from_runtimes(members: Vec<Runtime>) -> Result<Self> {
        if members.is_empty() {
            return Err(Error::out_of_range(
                "devices",
                0,
                "a device set needs at least one",
            ));
        }
        for (i, a) in members.iter().enumerate() {
            if let Some(b) = members[..i]
                .iter()
                .find(|b| b.profile().same_device(a.profile()))
            {
                return Err(Error::InvalidArgument(format!(
                    "the set names {} twice",
                    b.profile().label()
                )));
            }
        }
        Ok(DeviceSet { members })
    }

    /// The devices `spec` names, without opening them.
    pub fn choose(spec: Option<&str>) -> Result<Vec<DeviceProfile>> {
        let env = std::env::var(DEVICE_ENV).ok();
        let spec = spec
            .map(str::to_string)
            .or(env)
            .filter(|s| !s.trim().is_empty());
        let Some(spec) = spec else {
            return Ok(vec![select_device(None)?]);
        };
        let spec = spec.trim();
        let devices = list_devices()?;
        if spec.eq_ignore_ascii_case("all") {
            return Ok(devices);
        }
        if !spec.contains(',') {
            return Ok(vec![select_device(Some(spec))?]);
        }
        let mut taken: Vec<usize> = Vec::new();
        for fragment in spec.split(',').map(str::trim) {
            if fragment.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "device list {spec:?} has an empty name"
                )));
            }
            let next = (0..devices.len())
                .find(|i| !taken.contains(i) && devices[*i].matches(fragment))
                .ok_or_else(|| Error::DeviceNotFound {
                    query: format!("{fragment} (in {spec:?}, after the devices taken before it)"),
                    available: devices.iter().map(DeviceProfile::label).collect(),
                })?;
            taken.push(next);
        }
        Ok(taken.into_iter().map(|i| devices[i].clone()).collect())
    }

    /// The members, in the order the spec named them.
    pub fn members(&self) -> &[Runtime] {
        &self.members
    }

    /// How many devices the set holds.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the set holds no device (never, once opened: an empty spec is an error).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}
