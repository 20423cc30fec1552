//! A progress bar for the examples' long runs, shown on stderr only once a run has taken
//! more than a second (and never with `--json`, whose output is for machines).

use std::time::{Duration, Instant};

/// A progress bar that appears only once the run has taken more than a second.
pub struct Progress {
    /// The bar (hidden until the first step after a second).
    pub bar: indicatif::ProgressBar,
    started: Instant,
    shown: bool,
}

impl Progress {
    /// A bar of `steps` steps; `quiet` keeps it hidden.
    pub fn new(steps: u64, quiet: bool) -> Self {
        let bar = indicatif::ProgressBar::hidden();
        bar.set_length(steps);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
            )
            .expect("static template")
            .progress_chars("=> "),
        );
        Progress {
            bar,
            started: Instant::now(),
            shown: quiet,
        }
    }
    /// One step done; `msg` says what comes next.
    pub fn step(&mut self, msg: String) {
        if !self.shown && self.started.elapsed() > Duration::from_secs(1) {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
            self.shown = true;
        }
        self.bar.set_message(msg);
        self.bar.inc(1);
    }
}
