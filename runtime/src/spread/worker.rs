//! Who takes a share of a call, and what each reports.

/// A worker of a device set: who a share of a call goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Worker {
    /// Member `i` of the set: a local OpenCL device, or a lane of one.
    Device(usize),
    /// This host's latency threads.
    LatencyThreads,
}

/// What one worker did in a call over a set, and what it holds: the one report of every
/// structure that spreads work.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemberReport {
    /// The device's label (`latency threads` for them).
    pub worker: String,
    /// The device's place in the set (`None` for the latency threads; two devices of one
    /// name differ here).
    pub member: Option<usize>,
    /// Items it handled in the call (keys, frontier entries): what its speed counts.
    pub items: u64,
    /// Pieces of work it took (sub-lists, iterations; 0 where the structure has none).
    pub pieces: u64,
    /// Items it holds after the call (a heap's keys; 0 where the structure keeps nothing).
    pub held: u64,
    /// Device launches (0 for the latency threads, and where not counted).
    pub launches: u64,
    /// Seconds it was busy in the call (0 when it sat out).
    pub busy_s: f64,
    /// Its measured speed, items per second over the calls so far (0: not measured yet).
    pub items_per_s: f64,
    /// The error that stopped it, where it failed in the call.
    pub error: Option<String>,
}

impl MemberReport {
    /// An empty report of `worker`, labelled `label`.
    pub fn of(worker: Worker, label: impl Into<String>) -> Self {
        MemberReport {
            worker: label.into(),
            member: match worker {
                Worker::Device(i) => Some(i),
                Worker::LatencyThreads => None,
            },
            ..Default::default()
        }
    }
}
