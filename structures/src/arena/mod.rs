//! The SVM allocator: superblocks carved from shared virtual memory into size classes, with
//! lock-free free lists that work-items (`kernels/alloc.cl`) and CPU threads
//! ([`ArenaView`]) use alike.
//!
//! A block is named by its *handle*, the word offset of its first word in the arena's heap:
//! the same number on the host and on the device, with 0 as null, and unchanged when the host
//! grows the arena between launches (the heap is copied whole into a larger allocation).
//! Handles are multiples of two words, so structures may use their low bit as a mark
//! (Harris's list does).
//!
//! Who may call `malloc`/`free` when:
//! - fine transport (SVM atomics): kernels and CPU threads at the same time
//!   ([`SvmArena::view`] takes `&self`, so a launch on the arena may be in flight);
//! - coarse transport: kernels during launches, CPU threads between them
//!   ([`SvmArena::map`] takes `&mut self` and maps the arena to the host).
//!
//! Exhaustion returns 0 in a kernel and `Err(OutOfMemory)` on the host, and is counted;
//! [`SvmArena::grow`] adds superblocks between launches.

mod view;

use asym_kernels::{cl_defines, ClConst};
use asym_runtime::faults::retry_once;
use asym_runtime::{Error, Kernel, Result, Runtime, SvmBuffer, SvmMap};

pub use view::ArenaView;

pub(crate) const CTL_NEXT_SB: usize = 0;
pub(crate) const CTL_SB_COUNT: usize = 1;
/// Per class: ((first superblock << 4 | run length - 1) << 32) | next unused block
/// (alloc.cl's `arena_bump`).
pub(crate) const CTL_BUMP: usize = 2;
// Statistics: u32 words at the start of the heap (superblock 0 is never carved), as
// alloc.cl's ARENA_STAT_*.
/// 8-byte units in blocks handed out and not freed.
pub(crate) const STAT_IN_USE: usize = 0;
pub(crate) const STAT_HIGH: usize = 1;
pub(crate) const STAT_FAILED: usize = 2;
pub(crate) const STAT_BAD_FREE: usize = 3;
pub(crate) const STAT_RETRIES: usize = 4;
/// Per class: blocks on its free lists (a hint; malloc skips the lists while it reads 0).
pub(crate) const STAT_FREE: usize = 8;
/// The high half of a class's bump word once the arena is used up.
pub(crate) const EXHAUSTED: u32 = u32::MAX;
/// The longest run of superblocks a class takes at once (alloc.cl's ARENA_RUN_MAX).
pub(crate) const RUN_MAX: u32 = 16;
/// Lost compare-and-swaps after which a push or pop gives up (as the kernel's
/// `ARENA_MAX_RETRIES`): a bound on every wait, far above any contention seen.
pub(crate) const MAX_RETRIES: u32 = 1 << 24;

/// The constants `alloc.cl` takes from the host (one source for both sides).
pub(crate) const KERNEL_CONSTANTS: &[ClConst] = &[
    ClConst::int("ARENA_NEXT_SB", CTL_NEXT_SB as u64),
    ClConst::int("ARENA_SB_COUNT", CTL_SB_COUNT as u64),
    ClConst::int("ARENA_BUMP", CTL_BUMP as u64),
    ClConst::int("ARENA_STAT_IN_USE", STAT_IN_USE as u64),
    ClConst::int("ARENA_STAT_HIGH", STAT_HIGH as u64),
    ClConst::int("ARENA_STAT_FAILED", STAT_FAILED as u64),
    ClConst::int("ARENA_STAT_BAD_FREE", STAT_BAD_FREE as u64),
    ClConst::int("ARENA_STAT_RETRIES", STAT_RETRIES as u64),
    ClConst::int("ARENA_STAT_FREE", STAT_FREE as u64),
    ClConst::uint("ARENA_EXHAUSTED", EXHAUSTED as u64),
    ClConst::uint("ARENA_MAX_RETRIES", MAX_RETRIES as u64),
    ClConst::uint("ARENA_RUN_MAX", RUN_MAX as u64),
];

/// The arena's geometry, shared with the kernels through build options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaLayout {
    /// Words (4 bytes) per superblock, a power of two.
    pub superblock_words: u32,
    /// Size classes: class `c` holds blocks of `2^(c+1)` words (8 bytes and up).
    pub classes: u32,
    /// Free-list shards per class.
    pub shards: u32,
}

impl Default for ArenaLayout {
    /// 16 KiB superblocks, classes of 8 bytes to 16 KiB, 256 shards per class (fewer shards
    /// put thousands of work-items on one free-list head: docs/benchmarks/list.md).
    fn default() -> Self {
        ArenaLayout {
            superblock_words: 4096,
            classes: 12,
            shards: 256,
        }
    }
}

impl ArenaLayout {
    fn check(&self) -> Result<()> {
        let sb = self.superblock_words;
        if !sb.is_power_of_two() || !(16..=1 << 20).contains(&sb) {
            return Err(Error::out_of_range(
                "superblock words",
                sb,
                "a power of two from 16 to 2^20",
            ));
        }
        if self.classes == 0
            || 2u64 << (self.classes - 1) > u64::from(sb)
            || STAT_FREE + self.classes as usize > sb as usize
        {
            return Err(Error::out_of_range(
                "size classes",
                self.classes,
                format!("1 to log2({sb}) (the largest class is a whole superblock)"),
            ));
        }
        if !(1..=256).contains(&self.shards) {
            return Err(Error::out_of_range(
                "free-list shards per class",
                self.shards,
                "1 to 256",
            ));
        }
        Ok(())
    }

    /// The build options of programs that include `alloc.cl`.
    pub fn cl_defines(&self) -> String {
        format!(
            "-DASYM_INT64_ATOMICS=1 -DARENA_SB_WORDS={}u -DARENA_CLASSES={}u -DARENA_SHARDS={}u {}",
            self.superblock_words,
            self.classes,
            self.shards,
            cl_defines(KERNEL_CONSTANTS)
        )
    }

    /// Bytes per superblock.
    pub fn superblock_bytes(&self) -> usize {
        4 * self.superblock_words as usize
    }

    /// Words in a block of class `c`.
    pub fn class_words(&self, c: u32) -> u32 {
        2 << c
    }

    /// Bytes in a block of class `c`.
    pub fn class_bytes(&self, c: u32) -> usize {
        4 * self.class_words(c) as usize
    }

    /// The class whose blocks hold `bytes` (the smallest), `None` for 0 or too many bytes.
    pub fn class_of(&self, bytes: usize) -> Option<u32> {
        if bytes == 0 {
            return None;
        }
        let words = bytes.div_ceil(4).max(2);
        let c = words.next_power_of_two().trailing_zeros() - 1;
        (c < self.classes).then_some(c)
    }

    /// Where the free-list heads start in the control words (after the bump words).
    pub(crate) fn heads_at(&self) -> usize {
        CTL_BUMP + self.classes as usize
    }

    fn ctl_words(&self) -> usize {
        self.heads_at() + (self.classes * self.shards) as usize
    }

    /// A class's bump word with no run yet: the first fetch-and-add on it returns
    /// the block count, so that thread takes a fresh run (of one superblock).
    fn bump_start(&self, c: u32) -> u64 {
        u64::from(self.superblock_words / self.class_words(c))
    }
}

/// What the arena holds, read between launches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArenaStats {
    /// Bytes the arena can hand out (its superblocks, less the reserved first one).
    pub capacity_bytes: u64,
    /// Bytes in blocks handed out and not freed (block sizes, not requested sizes).
    pub bytes_in_use: u64,
    /// The most `bytes_in_use` has been.
    pub high_water_bytes: u64,
    /// Superblocks cut into blocks of some class.
    pub superblocks_carved: u64,
    /// Superblocks the arena has (less the reserved first one).
    pub superblocks: u64,
    /// Free blocks of each size class (8, 16, 32, ... bytes): on the free lists, or not yet
    /// handed out from the class's current run of superblocks.
    pub free_blocks: Vec<u64>,
    /// Mallocs that found no memory (a 32-bit counter: wraps after 2^32).
    pub failed_mallocs: u64,
    /// Frees of handles that were not blocks (and pushes dropped after too many lost races).
    pub bad_frees: u64,
    /// Compare-and-swaps on free-list heads that lost a race (wraps after 2^32).
    pub cas_retries: u64,
}

impl ArenaStats {
    /// Whether the counters agree with the free lists: every byte of every carved
    /// superblock is either in use or on a free list (holds when nothing is in flight and no
    /// push was dropped).
    pub fn consistent(&self, layout: &ArenaLayout) -> bool {
        let free: u64 = (0..layout.classes)
            .map(|c| self.free_blocks[c as usize] * layout.class_bytes(c) as u64)
            .sum();
        free + self.bytes_in_use == self.superblocks_carved * layout.superblock_bytes() as u64
    }
}

/// Exclusive host access to an arena (any transport); see [`ArenaMap::view`].
pub struct ArenaMap<'a> {
    layout: ArenaLayout,
    ctl: SvmMap<'a, u64>,
    heap: SvmMap<'a, u32>,
    sb_class: SvmMap<'a, u32>,
}

impl ArenaMap<'_> {
    /// The mapped arena as atomics, for CPU threads to share.
    pub fn view(&mut self) -> ArenaView<'_> {
        ArenaView {
            layout: self.layout,
            ctl: self.ctl.atomics(),
            heap: self.heap.atomics(),
            sb_class: self.sb_class.atomics(),
        }
    }
}

/// What a churn launch found (see [`SvmArena::churn_on_device`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChurnReport {
    /// Blocks whose stamp another work-item overwrote: two live blocks overlapped.
    pub overlaps: u32,
    /// Mallocs that returned null.
    pub failed: u32,
}

/// An SVM allocator's memory: the heap of superblocks, their classes and the control words.
pub struct SvmArena {
    rt: Runtime,
    layout: ArenaLayout,
    ctl: SvmBuffer<u64>,
    heap: SvmBuffer<u32>,
    sb_class: SvmBuffer<u32>,
    /// Superblocks in `heap`, the reserved first one included.
    superblocks: usize,
    kernels: Option<ArenaKernels>,
}

struct ArenaKernels {
    malloc_each: Kernel,
    free_each: Kernel,
    churn: Kernel,
}

impl std::fmt::Debug for SvmArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SvmArena")
            .field("layout", &self.layout)
            .field("superblocks", &self.superblocks)
            .finish_non_exhaustive()
    }
}

/// Superblocks (the reserved one included) for at least `bytes` of blocks. Handles are 32-bit
/// word offsets, so the heap stays below 2^32 words; that also keeps superblock numbers below
/// 2^28 (superblocks have at least 16 words), which the bump word's `superblock << 4` needs.
fn superblocks_for(layout: &ArenaLayout, bytes: usize) -> Result<usize> {
    let n = bytes.div_ceil(layout.superblock_bytes()).max(1) + 1;
    if (n as u64) * u64::from(layout.superblock_words) > u64::from(u32::MAX) {
        return Err(Error::CapacityExceeded {
            what: "an SVM arena, in bytes (blocks are named by 32-bit word offsets),".into(),
            capacity: (u32::MAX as usize / layout.superblock_words as usize)
                * layout.superblock_bytes(),
        });
    }
    Ok(n)
}

impl SvmArena {
    /// An arena of at least `bytes` bytes of blocks with the default layout.
    pub fn new(rt: &Runtime, bytes: usize) -> Result<Self> {
        Self::with_layout(rt, bytes, ArenaLayout::default())
    }

    /// An arena of at least `bytes` bytes of blocks with `layout`. Fails with
    /// `Unsupported` on a device without 64-bit atomics (the free-list heads are tagged
    /// 64-bit words).
    pub fn with_layout(rt: &Runtime, bytes: usize, layout: ArenaLayout) -> Result<Self> {
        layout.check()?;
        let profile = rt.profile();
        if !profile.int64_atomics {
            return Err(Error::Unsupported {
                device: profile.label(),
                what: "run the SVM allocator".into(),
                lacks: "64-bit atomics (cl_khr_int64_base_atomics)".into(),
            });
        }
        let superblocks = superblocks_for(&layout, bytes)?;
        let mut ctl = rt.alloc::<u64>(layout.ctl_words())?;
        let heap = rt.alloc::<u32>(superblocks * layout.superblock_words as usize)?;
        let sb_class = rt.alloc::<u32>(superblocks)?;
        {
            let mut m = ctl.map()?;
            m[CTL_NEXT_SB] = 1;
            m[CTL_SB_COUNT] = superblocks as u64;
            for c in 0..layout.classes {
                m[CTL_BUMP + c as usize] = layout.bump_start(c);
            }
            m.unmap()?;
        }
        Ok(SvmArena {
            rt: rt.clone(),
            layout,
            ctl,
            heap,
            sb_class,
            superblocks,
            kernels: None,
        })
    }

    /// The arena's layout.
    pub fn layout(&self) -> ArenaLayout {
        self.layout
    }

    /// The runtime the arena lives in.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// Bytes of blocks the arena can hold.
    pub fn capacity_bytes(&self) -> usize {
        (self.superblocks - 1) * self.layout.superblock_bytes()
    }

    /// Words in the heap (handles are word offsets below this).
    pub fn heap_words(&self) -> usize {
        self.heap.len()
    }

    /// Host atomics on the arena while kernels may be using it: fine transport only
    /// (`InvalidArgument` on the coarse one, where [`SvmArena::map`] is the way in).
    pub fn view(&self) -> Result<ArenaView<'_>> {
        Ok(ArenaView {
            layout: self.layout,
            ctl: self.ctl.atomics()?,
            heap: self.heap.atomics()?,
            sb_class: self.sb_class.atomics()?,
        })
    }

    /// Exclusive host access (any transport): maps the arena to the host; `Busy` while a
    /// launch on it is in flight.
    pub fn map(&mut self) -> Result<ArenaMap<'_>> {
        Ok(ArenaMap {
            layout: self.layout,
            ctl: self.ctl.map()?,
            heap: self.heap.map()?,
            sb_class: self.sb_class.map()?,
        })
    }

    /// Adds superblocks for at least `bytes` more bytes of blocks. Handles stay valid: the
    /// heap is copied into the larger allocation. Takes `&mut self`: no launch and no host
    /// view may be using the arena.
    pub fn grow(&mut self, bytes: usize) -> Result<()> {
        let l = self.layout;
        let more = superblocks_for(&l, bytes)? - 1;
        let total = superblocks_for(&l, (self.superblocks - 1 + more) * l.superblock_bytes())?;
        let words = total * l.superblock_words as usize;
        let mut heap = self.rt.alloc::<u32>(words)?;
        heap.copy_from_host(0, &self.heap.read()?)?;
        let mut sb_class = self.rt.alloc::<u32>(total)?;
        sb_class.copy_from_host(0, &self.sb_class.read()?)?;
        {
            let mut m = self.ctl.map()?;
            // Failed mallocs may have bumped the counter past the old end: superblocks from
            // there on were never carved.
            m[CTL_NEXT_SB] = m[CTL_NEXT_SB].min(self.superblocks as u64);
            m[CTL_SB_COUNT] = total as u64;
            // Classes that found the arena used up take a fresh superblock on next use.
            for c in 0..l.classes {
                let b = &mut m[CTL_BUMP + c as usize];
                if (*b >> 32) as u32 == EXHAUSTED {
                    *b = l.bump_start(c);
                }
            }
            m.unmap()?;
        }
        self.heap = heap;
        self.sb_class = sb_class;
        self.superblocks = total;
        Ok(())
    }

    /// Counters and free-list lengths. Takes `&mut self`: nothing may be using the arena.
    pub fn stats(&mut self) -> Result<ArenaStats> {
        let l = self.layout;
        let superblocks = self.superblocks as u64;
        let mut m = self.map()?;
        let v = m.view();
        let relaxed = std::sync::atomic::Ordering::Relaxed;
        let stat = |i: usize| u64::from(v.heap[i].load(relaxed));
        let free_blocks = (0..l.classes)
            .map(|c| v.free_blocks_quiescent(c))
            .collect::<Result<Vec<u64>>>()?;
        Ok(ArenaStats {
            capacity_bytes: (superblocks - 1) * l.superblock_bytes() as u64,
            bytes_in_use: 8 * stat(STAT_IN_USE),
            high_water_bytes: 8 * stat(STAT_HIGH),
            superblocks_carved: v.ctl[CTL_NEXT_SB].load(relaxed).min(superblocks) - 1,
            superblocks: superblocks - 1,
            free_blocks,
            failed_mallocs: stat(STAT_FAILED),
            bad_frees: stat(STAT_BAD_FREE),
            cas_retries: stat(STAT_RETRIES),
        })
    }

    /// Sets the arena's three buffers as the arguments `ctl`, `heap` and `sb_class` of a
    /// kernel whose program includes `alloc.cl` (built with [`ArenaLayout::cl_defines`]) and
    /// whose parameter table names them so.
    pub fn set_args(&self, kernel: &mut Kernel) -> Result<()> {
        kernel
            .arg_svm("ctl", &self.ctl)?
            .arg_svm("heap", &self.heap)?
            .arg_svm("sb_class", &self.sb_class)?;
        Ok(())
    }

    /// Runs `f` with the arena (for its buffers: [`SvmArena::set_args`], [`SvmArena::view`])
    /// and its kernels, built on first use (taken out of `self` for the call).
    fn with_kernels<R>(
        &mut self,
        f: impl FnOnce(&Self, &mut ArenaKernels) -> Result<R>,
    ) -> Result<R> {
        let mut kernels = match self.kernels.take() {
            Some(k) => k,
            None => {
                let program = self
                    .rt
                    .program_with(&asym_kernels::ALLOC, &self.layout.cl_defines())?;
                let k = |name| Kernel::from_program(&self.rt, &program, name);
                ArenaKernels {
                    malloc_each: k("arena_malloc_each")?,
                    free_each: k("arena_free_each")?,
                    churn: k("arena_churn")?,
                }
            }
        };
        let r = f(self, &mut kernels);
        self.kernels = Some(kernels);
        r
    }

    /// One launch of `kernel` over `n` work-items: work-item `i` applies it to `input[i]`
    /// and writes `output[i]` (the kernel's parameters `names`: the input's, the output's).
    fn each(
        &mut self,
        which: fn(&mut ArenaKernels) -> &mut Kernel,
        names: [&str; 2],
        input: &[u32],
    ) -> Result<Vec<u32>> {
        if input.is_empty() {
            return Ok(Vec::new());
        }
        let n = u32::try_from(input.len())
            .map_err(|_| Error::too_large("operations in one call", input.len(), u32::MAX))?;
        let mut in_buf = self.rt.alloc::<u32>(input.len())?;
        in_buf.write(input)?;
        let mut out = self.rt.alloc::<u32>(input.len())?;
        self.with_kernels(|a, kernels| {
            let k = which(kernels);
            a.set_args(k)?;
            k.arg_svm(names[0], &in_buf)?
                .arg_svm(names[1], &out)?
                .arg_scalar("n", n)?;
            let wg = 64;
            let mut launch = k.launch(input.len().div_ceil(wg) * wg, Some(wg))?;
            // From the launch on the blocks are the arena's business: a failed wait or read
            // is tried again once rather than leave blocks nobody holds a handle to.
            retry_once(|| launch.wait_in_place())
        })?;
        retry_once(|| out.read())
    }

    /// One launch in which work-item `i` mallocs `sizes[i]` bytes and fills the block's
    /// first `sizes[i]` bytes with `i`; returns the handles (0 where the arena ran out).
    pub fn malloc_on_device(&mut self, sizes: &[u32]) -> Result<Vec<u32>> {
        self.each(|k| &mut k.malloc_each, ["sizes", "handles"], sizes)
    }

    /// One launch in which work-item `i` frees `handles[i]` (0 is skipped); returns which
    /// frees the arena accepted.
    pub fn free_on_device(&mut self, handles: &[u32]) -> Result<Vec<bool>> {
        let ok = self.each(|k| &mut k.free_each, ["handles", "ok"], handles)?;
        Ok(ok.into_iter().map(|v| v == 1).collect())
    }

    /// A churn launch of `work_items` work-items, each running `rounds` rounds of malloc
    /// `per` (≤ 8) blocks of `bytes`, stamp, check, free. On the fine transport `during` runs
    /// on the host with a view of the arena while the launch is in flight (CPU threads may
    /// churn at the same time); on the coarse transport it runs after the launch, on a map.
    pub fn churn_on_device<R>(
        &mut self,
        work_items: usize,
        bytes: u32,
        per: u32,
        rounds: u32,
        during: impl FnOnce(ArenaView<'_>) -> R,
    ) -> Result<(ChurnReport, R)> {
        if per == 0 || per > 8 {
            return Err(Error::out_of_range("blocks per work-item", per, "1 to 8"));
        }
        let mut failures = self.rt.alloc::<u32>(2)?;
        let fine = self.rt.transport() == asym_runtime::Transport::Fine;
        let wg = 64;
        let global = work_items.max(1).div_ceil(wg) * wg;
        let mut during = Some(during);
        let ran = self.with_kernels(|a, kernels| {
            let k = &mut kernels.churn;
            a.set_args(k)?;
            k.arg_scalar("bytes", bytes)?
                .arg_scalar("per", per)?
                .arg_scalar("rounds", rounds)?
                .arg_svm("failures", &failures)?;
            let launch = k.launch(global, Some(wg))?;
            // Fine transport: the host part runs while the launch is in flight.
            let r = match during.take_if(|_| fine) {
                Some(f) => Some(f(a.view()?)),
                None => None,
            };
            launch.wait()?;
            Ok(r)
        })?;
        let host = match (ran, during) {
            (Some(r), _) => r,
            (None, Some(f)) => f(self.map()?.view()),
            (None, None) => unreachable!("`during` runs in the launch or after it"),
        };
        let f = failures.read()?;
        Ok((
            ChurnReport {
                overlaps: f[0],
                failed: f[1],
            },
            host,
        ))
    }
}
