//! Criterion's settings for the structure benches: short warm-ups and 10 samples of about 3 s,
//! since one sample of a large workload takes tens to hundreds of milliseconds.

use std::time::Duration;

use criterion::Criterion;

/// The settings every structure bench runs with.
pub fn short() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10)
}
