//! CPU topology discovery.
//!
//! hwloc2 2.2.0 has two known bugs we steer around: querying NUMA nodes by type panics, and
//! `TopologyObject::name()` frees C memory with Rust's allocator. So only packages, cores,
//! PUs and caches are queried, and never by name. Pinning itself uses core_affinity.

use hwloc2::{ObjectType, Topology};

/// One cache level as hwloc reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheInfo {
    /// 1, 2, 3...
    pub level: u32,
    /// Size of one cache of this level, bytes.
    pub size_bytes: u64,
    /// Line size, bytes.
    pub line_bytes: u32,
    /// How many caches of this level exist.
    pub count: usize,
}

/// The machine's CPUs as seen by asym.
#[derive(Clone, Debug)]
pub struct CpuTopology {
    /// Physical packages (sockets).
    pub packages: usize,
    /// Physical cores.
    pub cores: usize,
    /// OS CPU ids of the processing units this process may use, one per core first (so
    /// taking the first n spreads threads over distinct cores), then the SMT siblings.
    pub pus: Vec<usize>,
    /// Data caches, L1 upwards.
    pub caches: Vec<CacheInfo>,
    /// Where the facts came from: `hwloc` or `core_affinity` (fallback).
    pub source: &'static str,
}

impl CpuTopology {
    /// Discovers the topology (hwloc, else core_affinity).
    pub fn discover() -> Self {
        let allowed: Vec<usize> = core_affinity::get_core_ids()
            .map(|ids| ids.into_iter().map(|c| c.id).collect())
            .unwrap_or_default();
        Self::from_hwloc(&allowed).unwrap_or_else(|| CpuTopology {
            packages: 1,
            cores: allowed.len().max(1),
            pus: if allowed.is_empty() { vec![0] } else { allowed },
            caches: Vec::new(),
            source: "core_affinity",
        })
    }

    fn from_hwloc(allowed: &[usize]) -> Option<Self> {
        let topo = Topology::new()?;
        let count = |t: ObjectType| topo.objects_with_type(&t).map(|v| v.len()).unwrap_or(0);
        let cores = topo.objects_with_type(&ObjectType::Core).ok()?;
        // PU ids per core, in core order.
        let mut per_core: Vec<Vec<usize>> = Vec::new();
        for core in &cores {
            let ids: Vec<usize> = core
                .cpuset()
                .map(|set| set.into_iter().map(|i| i as usize).collect())
                .unwrap_or_default();
            per_core.push(
                ids.into_iter()
                    .filter(|i| allowed.is_empty() || allowed.contains(i))
                    .collect(),
            );
        }
        per_core.retain(|v| !v.is_empty());
        if per_core.is_empty() {
            return None;
        }
        let depth = per_core.iter().map(Vec::len).max().unwrap_or(1);
        let mut pus = Vec::new();
        for k in 0..depth {
            pus.extend(per_core.iter().filter_map(|v| v.get(k).copied()));
        }
        let mut caches = Vec::new();
        for (level, t) in [
            (1, ObjectType::L1Cache),
            (2, ObjectType::L2Cache),
            (3, ObjectType::L3Cache),
        ] {
            if let Ok(objs) = topo.objects_with_type(&t) {
                if let Some(attr) = objs.first().and_then(|o| o.cache_attributes()) {
                    caches.push(CacheInfo {
                        level,
                        size_bytes: attr.size(),
                        line_bytes: attr.linesize,
                        count: objs.len(),
                    });
                }
            }
        }
        Some(CpuTopology {
            packages: count(ObjectType::Package).max(1),
            cores: per_core.len(),
            pus,
            caches,
            source: "hwloc",
        })
    }
}
