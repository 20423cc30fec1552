//! asym's OpenCL C sources, embedded at build time.
//!
//! One `.cl` file per structure lives in this crate's directory (`kernels/`); the shared
//! helpers (`common.cl`: atomics and back-off for both transports; `ring.cl`: the device side
//! of the SVM signal ring; `heap.cl`: the work-group find-max-child reduction) are prepended to
//! every program by [`with_helpers`].
#![warn(missing_docs, unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

mod constants;
mod params;

pub use constants::{cl_defines, given_names, undeclared, undeclared_names, ClConst};
pub use params::{kernel_signatures, signature_problems, KernelParams};

/// An OpenCL C source file and the name it is known by in errors and caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSource {
    /// File name, for example `runtime.cl`.
    pub name: &'static str,
    /// The OpenCL C text.
    pub text: &'static str,
    /// Sources this one builds on, placed (in order) between the shared helpers and it.
    pub deps: &'static [KernelSource],
    /// Files that continue this source, placed (in order) right after it: one program's
    /// text cut at its sections.
    pub parts: &'static [KernelSource],
    /// Prefixes of the names this source takes from the host as `-D` options (`GH_`): every
    /// one it uses must be given, none it defines may be, none given may go unused. The
    /// runtime checks this at every build of the program ([`KernelSource::contract_problems`]).
    pub constants: &'static [&'static str],
    /// The host's names for its kernels' parameters ([`KernelParams`]): checked against the
    /// kernels' signatures at every build of the program, and what host code sets arguments
    /// by.
    pub params: &'static [KernelParams],
}

impl KernelSource {
    /// A source of the user's own (it gets the shared helpers prepended too).
    pub const fn new(name: &'static str, text: &'static str) -> Self {
        KernelSource {
            name,
            text,
            deps: &[],
            parts: &[],
            constants: &[],
            params: &[],
        }
    }

    /// A source that builds on `deps` (for example the list on the allocator).
    pub const fn with_deps(
        name: &'static str,
        text: &'static str,
        deps: &'static [KernelSource],
    ) -> Self {
        KernelSource {
            name,
            text,
            deps,
            parts: &[],
            constants: &[],
            params: &[],
        }
    }

    /// This source, continued by `parts` (see [`KernelSource::parts`]).
    pub const fn with_parts(self, parts: &'static [KernelSource]) -> Self {
        KernelSource { parts, ..self }
    }

    /// This source, taking the names with `prefixes` from the host (see
    /// [`KernelSource::constants`]).
    pub const fn taking(self, prefixes: &'static [&'static str]) -> Self {
        KernelSource {
            constants: prefixes,
            ..self
        }
    }

    /// This source, its kernels' parameters named by `params` (see [`KernelSource::params`]).
    pub const fn with_params(self, params: &'static [KernelParams]) -> Self {
        KernelSource { params, ..self }
    }

    /// The parameter table of `kernel`, in this program's files (the sources it builds on,
    /// this one and its parts).
    pub fn params_of(&self, kernel: &str) -> Option<&'static KernelParams> {
        self.files()
            .into_iter()
            .flat_map(|f| f.params.iter())
            .find(|p| p.kernel == kernel)
    }

    /// The program's files: the sources it builds on, this one and its parts.
    fn files(&self) -> Vec<&KernelSource> {
        self.deps.iter().chain([self]).chain(self.parts).collect()
    }

    /// What disagrees between this program's text (the sources it builds on, this one and
    /// its parts) and the constants the build `options` give (`-DNAME=VALUE`): see
    /// [`undeclared_names`], over every prefix any of them takes; and between the kernels'
    /// signatures and the host's parameter tables ([`signature_problems`]). Empty where they
    /// agree.
    pub fn contract_problems(&self, options: &str) -> Vec<String> {
        let files = self.files();
        let prefixes: Vec<&str> = files
            .iter()
            .flat_map(|f| f.constants.iter().copied())
            .collect();
        let params: Vec<KernelParams> = files
            .iter()
            .flat_map(|f| f.params.iter().copied())
            .collect();
        if prefixes.is_empty() && params.is_empty() {
            return Vec::new();
        }
        let text: String = files.iter().map(|f| f.text).collect::<Vec<_>>().join("\n");
        let mut problems: Vec<String> = if prefixes.is_empty() {
            Vec::new()
        } else {
            undeclared_names(&text, &prefixes, &given_names(options))
        };
        problems.extend(signature_problems(&text, &params));
        problems
            .into_iter()
            .map(|p| format!("{}: {p}", self.name))
            .collect()
    }
}

/// Atomics, memory-ordering wrappers and device-side back-off for both SVM transports.
pub const COMMON: KernelSource = KernelSource::new("common.cl", include_str!("../common.cl"));

/// The device side of the SVM signal ring (bounded MPMC, per-slot sequence numbers).
pub const RING: KernelSource = KernelSource::new("ring.cl", include_str!("../ring.cl"));

/// The work-group find-max-child reduction shared by the heap kernels (macros only).
pub const HEAP: KernelSource = KernelSource::new("heap.cl", include_str!("../heap.cl"));

/// The runtime's own kernels: round trips, ping-pong, launch latency, the echo service.
pub const RUNTIME: KernelSource =
    KernelSource::new("runtime.cl", include_str!("../runtime.cl")).with_params(RUNTIME_PARAMS);

/// Heap-based batch k-selection (the d-heap baseline of the ad-heap seed), one work-group per
/// sub-list; built with `-DD=`, `-DWG=`, `-DHEAP_LOCAL=`.
pub const KSELECT: KernelSource =
    KernelSource::new("kselect.cl", include_str!("../kselect.cl")).with_params(KSELECT_PARAMS);

/// Radix select on the device (keys resident in SVM or staged): one work-group per sub-list
/// (`kselect_radix`), or a work-group per tile of a long sub-list with global histograms
/// (`radix_clear`, `radix_count`, `radix_keep`, `radix_finish`; `radix_compact` and
/// `radix_take` pack kept keys for a host that takes them); built with `-DWG=` and `-DKEY_MAP=`.
pub const KSELECT_RADIX: KernelSource =
    KernelSource::new("kselect_radix.cl", include_str!("../kselect_radix.cl"))
        .with_params(KSELECT_RADIX_PARAMS);

/// The ad-heap's bridge walk (device half of update-key), batch and service kernels; built
/// with `AdHeapLayout::cl_defines` and `-DWG=`.
pub const ADHEAP: KernelSource =
    KernelSource::new("adheap.cl", include_str!("../adheap.cl")).with_params(ADHEAP_PARAMS);

/// The generalized heap on the device: its batch operations (bitonic sort, merge-path
/// MergeAndSort, one batch or pair per work-group) and the heap run by work-groups
/// (`gheap_run`, `gheap_delete`) and its bulk calls, in six files; built with `-DK=`, `-DWG=` and the `GH_`
/// constants.
pub const GHEAP: KernelSource = KernelSource::new("gheap.cl", include_str!("../gheap.cl"))
    .with_params(GHEAP_PARAMS)
    .with_parts(&[
        KernelSource::new("gheap_locks.cl", include_str!("../gheap_locks.cl")),
        KernelSource::new("gheap_steps.cl", include_str!("../gheap_steps.cl")),
        KernelSource::new("gheap_run.cl", include_str!("../gheap_run.cl")),
        KernelSource::new("gheap_delete.cl", include_str!("../gheap_delete.cl")),
        KernelSource::new("gheap_bulk.cl", include_str!("../gheap_bulk.cl")),
    ])
    .taking(&["GH_"]);

/// One frontier expansion of the label-correcting SSSP search (relaxation with atomic minima,
/// deduplicated next frontier) and its helpers.
pub const SSSP: KernelSource = KernelSource::new("sssp.cl", include_str!("../sssp.cl"))
    .with_parts(&[
        KernelSource::new("sssp_near_far.cl", include_str!("../sssp_near_far.cl")),
        KernelSource::new("sssp_async.cl", include_str!("../sssp_async.cl")),
    ])
    .taking(&["SSSP_", "NF_", "NA_"])
    .with_params(SSSP_PARAMS);

/// 0/1 knapsack branch-and-bound nodes expanded on the device, children handed to the
/// device heap where they were written; built with `-DWG=`, `-DKN_MAX_KIDS=`,
/// `-DKN_MAX_STEPS=` and `-DASYM_INT64_ATOMICS=1`.
pub const KNAPSACK: KernelSource = KernelSource::new("knapsack.cl", include_str!("../knapsack.cl"))
    .taking(&["KC_", "KN_"])
    .with_params(KNAPSACK_PARAMS);

/// The runtime's own kernels.
const RUNTIME_PARAMS: &[KernelParams] = &[
    KernelParams::new("asym_add_one", &["data", "n"]),
    KernelParams::new("asym_noop", &["data"]),
    KernelParams::new("asym_pingpong", &["flag", "ctl", "rounds", "max_spins"]),
    KernelParams::new("asym_echo", &["to_dev", "from_dev", "ctl"]),
    KernelParams::new("asym_follow_pointer", &["table", "n"]),
    KernelParams::new("asym_chase", &["next", "out", "steps", "atomic"]),
    KernelParams::new("asym_grid_barriers", &["ctl", "count", "base"]),
];

/// The d-heap k-selection kernel.
const KSELECT_PARAMS: &[KernelParams] = &[KernelParams::new(
    "kselect_dheap",
    &[
        "data",
        "offsets",
        "out",
        "scratch",
        "k",
        "nsub",
        "scratch_stride",
        "lheap",
    ],
)];

/// The device radix select's kernels.
const KSELECT_RADIX_PARAMS: &[KernelParams] = &[
    KernelParams::new(
        "kselect_radix",
        &["keys", "offsets", "k", "answers", "scratch"],
    ),
    KernelParams::new("radix_clear", &["hist", "words"]),
    KernelParams::new("radix_count", &["keys", "tiles", "hist"]),
    KernelParams::new(
        "radix_keep",
        &["keys", "tiles", "k", "hist", "scratch", "kept"],
    ),
    KernelParams::new(
        "radix_finish",
        &[
            "scratch",
            "tiles",
            "first_tile",
            "k",
            "hist",
            "kept",
            "answers",
        ],
    ),
    KernelParams::new("radix_compact", &["scratch", "tiles", "kept", "packed"]),
    KernelParams::new(
        "radix_take",
        &["scratch", "tiles", "kept", "table", "subs", "packed"],
    ),
];

/// The ad-heap bridge's kernels.
const ADHEAP_PARAMS: &[KernelParams] = &[
    KernelParams::new(
        "adheap_bridges",
        &["slots", "work", "count", "stride", "len", "fresh", "out"],
    ),
    KernelParams::new(
        "adheap_service",
        &["to_dev", "from_dev", "ctl", "slots", "stride", "len"],
    ),
];

/// The allocator's kernels (its tests and benchmark).
const ALLOC_PARAMS: &[KernelParams] = &[
    KernelParams::new(
        "arena_malloc_each",
        &["ctl", "heap", "sb_class", "sizes", "handles", "n"],
    ),
    KernelParams::new(
        "arena_free_each",
        &["ctl", "heap", "sb_class", "handles", "ok", "n"],
    ),
    KernelParams::new(
        "arena_churn",
        &[
            "ctl", "heap", "sb_class", "bytes", "per", "rounds", "failures",
        ],
    ),
];

/// The lock-free list's kernel.
const LIST_PARAMS: &[KernelParams] = &[KernelParams::new(
    "list_apply",
    &[
        "ctl",
        "heap",
        "sb_class",
        "root",
        "max_steps",
        "positional",
        "window",
        "ops",
        "results",
        "n",
        "launch_stats",
    ],
)];

/// The red-black tree's kernels.
const RBTREE_PARAMS: &[KernelParams] = &[
    KernelParams::new(
        "rb_search",
        &[
            "ctl", "heap", "sb_class", "header", "keys", "n", "values", "status", "damaged",
        ],
    ),
    KernelParams::new(
        "rb_lower_bound",
        &[
            "ctl",
            "heap",
            "sb_class",
            "header",
            "keys",
            "n",
            "values",
            "status",
            "damaged",
            "found_keys",
        ],
    ),
    KernelParams::new(
        "rb_route_top",
        &["ctl", "heap", "sb_class", "header", "levels", "top"],
    ),
    KernelParams::new(
        "rb_route",
        &[
            "keys", "n", "levels", "tile", "top", "route", "counts", "ltop", "hist",
        ],
    ),
    KernelParams::new("rb_route_offsets", &["counts", "cursor", "buckets", "scan"]),
    KernelParams::new(
        "rb_route_place",
        &[
            "keys",
            "route",
            "n",
            "levels",
            "tile",
            "cursor",
            "order_keys",
            "at",
            "base",
            "rank",
        ],
    ),
    KernelParams::new(
        "rb_route_answer",
        &[
            "at",
            "n",
            "routed_values",
            "routed_status",
            "routed_found",
            "values",
            "status",
            "found_keys",
            "lower_bound",
        ],
    ),
    KernelParams::new(
        "rb_range_count",
        &[
            "ctl",
            "heap",
            "sb_class",
            "header",
            "heap_words",
            "los",
            "his",
            "n",
            "counts",
            "damaged",
            "steps",
        ],
    ),
    KernelParams::new(
        "rb_build",
        &[
            "ctl", "heap", "sb_class", "header", "handles", "keys", "values", "m", "h",
        ],
    ),
    KernelParams::new(
        "rb_locate",
        &[
            "ctl",
            "heap",
            "sb_class",
            "header",
            "heap_words",
            "deleting",
            "keys",
            "values",
            "n",
            "op_lo",
            "op_hi",
            "state",
            "where",
            "handles",
            "rounds",
            "phase",
            "fresh",
            "spare_ctl",
            "list",
            "listed",
            "check_order",
            "next",
            "find_first",
        ],
    ),
    KernelParams::new(
        "rb_apply",
        &[
            "ctl",
            "heap",
            "sb_class",
            "header",
            "heap_words",
            "deleting",
            "keys",
            "values",
            "n",
            "op_lo",
            "op_hi",
            "state",
            "where",
            "handles",
            "rounds",
            "phase",
            "only",
            "spare",
            "spare_ctl",
            "spare_len",
            "spare_cap",
            "list",
            "listed",
            "check_order",
        ],
    ),
    KernelParams::new(
        "rb_pending",
        &[
            "state", "list", "listed", "op_lo", "op_hi", "next", "rounds", "phase", "scan",
        ],
    ),
];

/// The generalized heap's kernels (its six files).
const GHEAP_PARAMS: &[KernelParams] = &[
    KernelParams::new("gheap_sort_batches", &["keys", "at", "len"]),
    KernelParams::new("gheap_merge_batches", &["a", "b", "pairs"]),
    KernelParams::new("gheap_copy_keys", &["src", "src_at", "dst", "dst_at", "n"]),
    KernelParams::new("gheap_run", GHEAP_OPS),
    KernelParams::new("gheap_delete", GHEAP_OPS),
    KernelParams::new(
        "gheap_bulk_gather",
        &["keys", "partial", "runs", "count", "plen"],
    ),
    KernelParams::new(
        "gheap_bulk_split",
        &["src", "splits", "total", "run", "tiles", "at", "first"],
    ),
    KernelParams::new(
        "gheap_bulk_merge",
        &["src", "dst", "splits", "total", "run", "at", "first"],
    ),
    KernelParams::new(
        "gheap_bulk_merge_pass",
        &["src", "dst", "total", "run", "at", "first"],
    ),
    KernelParams::new(
        "gheap_bulk_place",
        &[
            "sorted", "keys", "partial", "out", "word", "n_out", "count", "plen", "slots", "hdr",
        ],
    ),
];

/// A launch of the heap's operations (`gheap_run`, and `gheap_delete` for DELs alone).
const GHEAP_OPS: &[&str] = &[
    "keys",
    "word",
    "hdr",
    "partial",
    "slots",
    "ops",
    "n_ops",
    "in",
    "in_len",
    "out",
    "out_len",
    "order",
    "bottom_up",
    "out_base",
];

/// The SSSP searches' kernels.
const SSSP_PARAMS: &[KernelParams] = &[
    KernelParams::new("sssp_init", &["dist", "stamp", "n", "source"]),
    KernelParams::new(
        "sssp_expand",
        &[
            "offsets",
            "targets",
            "weights",
            "dist",
            "stamp",
            "frontier",
            "first",
            "flen",
            "next",
            "counters",
            "iteration",
            "chunks",
            "chunk_cap",
        ],
    ),
    KernelParams::new(
        "sssp_expand_list",
        &[
            "offsets",
            "targets",
            "weights",
            "dist",
            "stamp",
            "list",
            "next",
            "counters",
            "iteration",
            "chunks",
            "chunk_cap",
            "in_at",
            "out_at",
            "clear_at",
        ],
    ),
    KernelParams::new(
        "sssp_expand_chunks",
        &[
            "targets",
            "weights",
            "dist",
            "stamp",
            "next",
            "counters",
            "iteration",
            "chunks",
            "chunk_cap",
            "count_at",
            "len_at",
        ],
    ),
    KernelParams::new("sssp_pairs", &["next", "len", "dist", "frontier"]),
    KernelParams::new("sssp_apply", &["updates", "len", "dist"]),
    KernelParams::new(
        "sssp_merge",
        &[
            "incoming",
            "len",
            "dist",
            "stamp",
            "next",
            "counters",
            "iteration",
        ],
    ),
    KernelParams::new("nf_clear", &["words", "n", "value"]),
    KernelParams::new("nf_step", NF_STEP),
    KernelParams::new("nf_run", NF_RUN),
    KernelParams::new(
        "nf_async",
        &[
            "offsets", "targets", "weights", "dist", "fstamp", "far0", "far1", "ctl", "expd",
            "pool", "inq", "delta", "cap", "pool_cap", "count", "bar_base",
        ],
    ),
];

/// `nf_run`'s iterations in one launch, and a near-far iteration (`nf_step`: the same but
/// `count` and `bar_base`).
const NF_STEP: &[&str] = NF_RUN.split_at(NF_RUN.len() - 2).0;
const NF_RUN: &[&str] = &[
    "offsets",
    "targets",
    "weights",
    "dist",
    "stamp",
    "fstamp",
    "near0",
    "near1",
    "far0",
    "far1",
    "ctl",
    "expd",
    "delta",
    "cap",
    "yield_below",
    "local_rounds",
    "iter",
    "count",
    "bar_base",
];

/// The knapsack's device expansion's kernels.
const KNAPSACK_PARAMS: &[KernelParams] = &[
    KernelParams::new(
        "knapsack_expand",
        &[
            "popped",
            "n_popped",
            "arena",
            "free",
            "n_free",
            "arena_len",
            "limit",
            "out",
            "ctl",
            "kids_base",
            "host_best",
            "n",
            "capacity",
            "cap",
            "lambda",
            "root_bound",
            "shift",
            "depth_bits",
        ],
    ),
    KernelParams::new(
        "knapsack_release",
        &[
            "popped",
            "n_popped",
            "free",
            "n_free",
            "ctl",
            "kids_base",
            "out",
            "carry",
            "carry_max",
        ],
    ),
    KernelParams::new(
        "knapsack_rounds",
        &[
            "popped",
            "arena",
            "free",
            "out",
            "ctl",
            "bar",
            "n_popped",
            "n_free",
            "arena_len",
            "kids_base",
            "limit",
            "carry_max",
            "max_rounds",
            "bar_base",
            "host_best",
            "n",
            "capacity",
            "cap",
            "lambda",
            "root_bound",
            "shift",
            "depth_bits",
        ],
    ),
    KernelParams::new(
        "knapsack_collect",
        &[
            "pairs",
            "n",
            "arena",
            "best",
            "kept",
            "free",
            "n_free",
            "ctl",
            "kept_base",
            "freed_base",
        ],
    ),
    KernelParams::new("knapsack_copy", &["src", "dst", "n"]),
];

/// The SVM allocator: `asym_malloc`/`asym_free` for work-items over the host's `SvmArena`
/// (tagged Treiber free lists per size class); built with `ArenaLayout::cl_defines`.
pub const ALLOC: KernelSource = KernelSource::new("alloc.cl", include_str!("../alloc.cl"))
    .taking(&["ARENA_"])
    .with_params(ALLOC_PARAMS);

/// Harris's lock-free list on allocator nodes (ordered set and positional operations), one
/// work-item per operation, a positional list's work-groups sharing one walk; builds on
/// [`ALLOC`].
pub const LIST: KernelSource =
    KernelSource::with_deps("list.cl", include_str!("../list.cl"), &[ALLOC])
        .taking(&["LF_"])
        .with_params(LIST_PARAMS);

/// The red-black tree's device search, one work-item per query, on arena nodes, its batched
/// updates in rounds (`rbtree_update.cl`) and its routing of large batches by subtree
/// (`rbtree_route.cl`); built with the tree's `RB_*` constants and `-DKEY_MAP=`.
pub const RBTREE: KernelSource =
    KernelSource::with_deps("rbtree.cl", include_str!("../rbtree.cl"), &[ALLOC])
        .with_parts(&[
            KernelSource::new("rbtree_update.cl", include_str!("../rbtree_update.cl")),
            KernelSource::new("rbtree_route.cl", include_str!("../rbtree_route.cl")),
        ])
        .taking(&["RB_"])
        .with_params(RBTREE_PARAMS);

/// `source` preceded by the shared helpers, with `#line` markers so compiler messages name the
/// right file and line.
pub fn with_helpers(source: &KernelSource) -> String {
    let mut out = String::new();
    let helpers = [&COMMON, &RING, &HEAP].into_iter().filter(|h| *h != source);
    for part in helpers
        .chain(source.deps)
        .chain([source])
        .chain(source.parts)
    {
        out.push_str(&format!("#line 1 \"{}\"\n", part.name));
        out.push_str(part.text);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_table_matches_its_kernel() {
        for source in [
            RUNTIME,
            KSELECT,
            KSELECT_RADIX,
            ADHEAP,
            GHEAP,
            SSSP,
            KNAPSACK,
            ALLOC,
            LIST,
            RBTREE,
        ] {
            let text: String = source
                .files()
                .iter()
                .map(|f| f.text)
                .collect::<Vec<_>>()
                .join("\n");
            let params: Vec<KernelParams> = source
                .files()
                .iter()
                .flat_map(|f| f.params.iter().copied())
                .collect();
            assert!(!params.is_empty(), "{}", source.name);
            assert_eq!(signature_problems(&text, &params), Vec::<String>::new());
            assert!(source.params_of(params[0].kernel).is_some());
        }
        assert!(SSSP.params_of("gheap_run").is_none());
    }

    #[test]
    fn helpers_come_first_once() {
        let s = with_helpers(&RUNTIME);
        let c = s.find("#line 1 \"common.cl\"").unwrap();
        let r = s.find("#line 1 \"ring.cl\"").unwrap();
        let k = s.find("#line 1 \"runtime.cl\"").unwrap();
        assert!(c < r && r < k);
        assert_eq!(
            with_helpers(&RING).matches("#line 1 \"ring.cl\"").count(),
            1
        );
    }
}
