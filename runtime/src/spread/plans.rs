//! Plan exploration: which group of workers runs a call of one shape, learned by trying.

use super::Worker;

/// Whole-call speeds of one shape of call (a sub-list length and mode, a search order), per
/// group of workers tried: the set's one way of choosing who runs a call.
///
/// [`PlanBook::plan`] proposes every worker together first; then each worker alone, one
/// call each, best guess first; then, with three or more workers (where
/// [`PlanBook::with_subgroups`] allows), each group of all but one whose bound (the sum of its
/// workers' speeds alone: sharing host cores and memory bandwidth only takes away) beats the
/// best measured; then the fastest group measured, every worker together unless another
/// group was more than 3 % faster. A group's first call only warms it (buffers sized, programs
/// built): it counts as measured after its second, at the fastest of its calls since.
#[derive(Clone, Debug, Default)]
pub struct PlanBook {
    /// Each group tried: its speed (the fastest of its calls after the first) and how many
    /// calls it ran.
    tried: Vec<(Vec<Worker>, f64, u32)>,
    /// The fastest whole call measured (a group's second call or later).
    best_ever: f64,
    /// Whether groups of all but one worker are tried.
    subgroups: bool,
}

/// Calls before a group counts as measured: the first warms it.
const TRIALS: u32 = 2;
/// How much faster than every worker together another group must be to be kept instead.
const MARGIN: f64 = 1.03;

impl PlanBook {
    /// A book that tries every worker together and each alone.
    pub fn new() -> Self {
        Self::default()
    }

    /// A book that also tries each group of all but one worker that could win.
    pub fn with_subgroups() -> Self {
        PlanBook {
            subgroups: true,
            ..Self::default()
        }
    }

    /// The group of `workers` (in their order) for the next call, and whether it is a trial
    /// (not yet measured). `guess` orders the trials of workers alone: a speed measured
    /// beside the others, which can be far below a worker's speed alone (a CPU device's
    /// kernels on every host core slow a GPU's staging copies from host memory).
    pub fn plan(&self, workers: &[Worker], guess: impl Fn(Worker) -> f64) -> (Vec<Worker>, bool) {
        let all = workers.to_vec();
        let Some(together) = self.measured(&all) else {
            return (all, workers.len() > 1);
        };
        if workers.len() < 2 {
            return (all, false);
        }
        if let Some(&w) = workers
            .iter()
            .filter(|&&w| self.measured(&[w]).is_none())
            .max_by(|a, b| guess(**a).total_cmp(&guess(**b)))
        {
            return (vec![w], true);
        }
        let mut groups: Vec<Vec<Worker>> = workers.iter().map(|&w| vec![w]).collect();
        if self.subgroups && workers.len() >= 3 {
            groups.extend((0..workers.len()).map(|skip| {
                let mut g = all.clone();
                g.remove(skip);
                g
            }));
        }
        let best = groups
            .iter()
            .filter_map(|g| self.measured(g).map(|r| (g, r)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        // Against the best speed ever measured, so that a group once left untried stays so
        // (the trials end).
        let bound = |g: &[Worker]| g.iter().filter_map(|&w| self.measured(&[w])).sum::<f64>();
        if let Some(next) = groups
            .iter()
            .filter(|g| self.measured(g).is_none() && bound(g) > self.best_ever * MARGIN)
            .max_by(|a, b| bound(a).total_cmp(&bound(b)))
        {
            return (next.clone(), true);
        }
        match best {
            Some((g, r)) if r > together * MARGIN => (g.clone(), false),
            _ => (all, false),
        }
    }

    /// Books a call of `group` that ran at `rate` (items per second over the whole call).
    pub fn record(&mut self, group: &[Worker], rate: f64) {
        match self.tried.iter_mut().find(|(t, _, _)| t == group) {
            Some(slot) => {
                // The first call only warmed the group: its speed is the fastest of the
                // calls after it, so that the choice settles instead of following noise.
                slot.1 = if slot.2 < TRIALS {
                    rate
                } else {
                    slot.1.max(rate)
                };
                slot.2 += 1;
                self.best_ever = self.best_ever.max(slot.1);
            }
            None => self.tried.push((group.to_vec(), rate, 1)),
        }
    }

    /// The speed `group` was measured at, once measured.
    fn measured(&self, group: &[Worker]) -> Option<f64> {
        self.tried
            .iter()
            .find(|(t, _, calls)| t == group && *calls >= TRIALS)
            .map(|(_, r, _)| *r)
    }
}

#[cfg(test)]
mod tests {
    use super::{PlanBook, Worker};

    /// Together first; then each worker alone, best guess first; then each all-but-one
    /// group whose bound (its workers' speeds alone, summed) beats the best; then the
    /// fastest measured.
    #[test]
    fn the_set_tries_each_worker_alone_and_each_group_that_could_win_then_keeps_the_fastest() {
        let gpu = Worker::Device(0);
        let pocl = Worker::Device(1);
        let cpu = Worker::LatencyThreads;
        let workers = [gpu, pocl, cpu];
        // Speeds measured beside each other (they only order the trials).
        let rate = |w: Worker| match w {
            Worker::Device(0) => 0.2,
            Worker::Device(_) => 0.5,
            Worker::LatencyThreads => 1.2,
        };
        // A group counts as measured after its second call.
        let measure = |r: &mut PlanBook, g: &[Worker], rate: f64| {
            r.record(g, 0.1);
            assert!(r.plan(&workers, |_| 1.0).1, "one call is not a measurement");
            r.record(g, rate);
        };
        let mut r = PlanBook::with_subgroups();
        assert_eq!(r.plan(&workers, rate), (workers.to_vec(), true));
        measure(&mut r, &workers, 2.3);
        assert_eq!(
            r.plan(&workers, rate),
            (vec![cpu], true),
            "best guess first"
        );
        measure(&mut r, &[cpu], 3.0);
        assert_eq!(r.plan(&workers, rate), (vec![pocl], true));
        measure(&mut r, &[pocl], 1.0);
        assert_eq!(
            r.plan(&workers, rate),
            (vec![gpu], true),
            "even at 0.2 beside them"
        );
        measure(&mut r, &[gpu], 6.0);
        // Bounds: gpu+cpu 9, gpu+pocl 7, pocl+cpu 4 (< 6: never tried).
        assert_eq!(r.plan(&workers, rate), (vec![gpu, cpu], true));
        measure(&mut r, &[gpu, cpu], 5.0);
        assert_eq!(r.plan(&workers, rate), (vec![gpu, pocl], true));
        measure(&mut r, &[gpu, pocl], 4.0);
        assert_eq!(
            r.plan(&workers, rate),
            (vec![gpu], false),
            "the GPU alone kept"
        );
        // Within 3 % of together: together.
        let mut close = PlanBook::with_subgroups();
        measure(&mut close, &[gpu, pocl], 1.0);
        for (w, speed) in [(gpu, 1.0), (pocl, 1.0), (cpu, 3.05)] {
            measure(&mut close, &[w], speed);
        }
        measure(&mut close, &workers, 3.0);
        measure(&mut close, &[gpu, cpu], 2.0);
        assert_eq!(
            close.plan(&workers, rate),
            (vec![pocl, cpu], true),
            "4.05 > 3.05"
        );
        measure(&mut close, &[pocl, cpu], 1.0);
        assert_eq!(close.plan(&workers, rate), (workers.to_vec(), false));
        assert_eq!(
            PlanBook::with_subgroups().plan(&[gpu], rate),
            (vec![gpu], false)
        );
    }
}
