//! Spreading work over a device set: the one engine under every structure that does it
//! (k-selection's sub-lists, the heap's key ranges, SSSP's frontiers).
//!
//! A set's workers ([`Worker`]) are its members, one [`Runtime`](crate::Runtime) each (a local
//! OpenCL device, or a lane of one: `Runtime::with_new_queue`), and where the caller gives
//! them, this host's latency threads. The engine owns what every spreading structure needs
//! and nothing of what it spreads:
//!
//! | piece | type | what |
//! | --- | --- | --- |
//! | members | [`DeviceSet`] | the devices, each opened as its own runtime with its transport |
//! | speed model | [`SpeedModel`] | per worker, `fixed_s + items / items_per_s`, learned share after share |
//! | share split | [`split`], [`SplitRule`] | a call's items cut so that the workers taking part finish together, a worker joining only where it saves time |
//! | plan exploration | [`PlanBook`] | which group of workers runs a call of one shape: every worker together, each alone, then the fastest measured |
//! | failure record and policy | [`Failures`] | who failed, with what; only a device fault takes a member out ([`crate::Error::is_device_fault`]) |
//! | fault injection | [`Failures::inject`] | a member made to fail at a given step of its next call (tests) |
//! | per-member report | [`MemberReport`] | what each worker did in the last call and holds after it |
//!
//! Each structure keeps only its routing: which items go to which worker, how their results
//! come back together, and what a failed member's share becomes. A remote member (a rank
//! over MPI) joins as one more [`Worker`] with the same model, plan and report.

mod device_set;
mod failures;
mod plans;
mod speed;
mod worker;

pub use device_set::DeviceSet;
pub use failures::Failures;
pub use plans::PlanBook;
pub use speed::{split, SpeedModel, SplitRule};
pub use worker::{MemberReport, Worker};
