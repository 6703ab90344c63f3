//! Who orders the waiting queue at every step: the [`Policy`] trait, [`Fcfs`] and [`OrderFn`].

use super::{SimJob, SimState};

/// Orders the waiting queue at every step of a replay.
pub trait Policy {
    /// The order in which to consider the waiting jobs: a permutation of
    /// `0..waiting.len()`, first = runs first. `waiting` holds indices into
    /// [`SimState::jobs`], in arrival order (submit, then input position).
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize>;

    /// A score that stays fixed while the job waits (ascending runs first), for policies that
    /// are a static priority. When this is `Some` for the first job, it must be `Some` for
    /// every job: the simulator then keeps the queue sorted by (key, submit, input position)
    /// and never calls [`Policy::order`]. The default `None` calls `order` at every step.
    fn static_key(&self, _job: &SimJob) -> Option<f64> {
        None
    }

    /// Called when job `job` (an index into [`SimState::jobs`]) arrives, before it joins the
    /// queue: a policy that configures jobs at submission (GPUs filled in, so a new demand and
    /// run time) returns the job as configured, with its id and submit time unchanged; the
    /// default `None` keeps it as given. [`Policy::static_key`] then sees the configured job.
    fn arrive(&mut self, _state: &SimState<'_>, _job: usize) -> Option<SimJob> {
        None
    }
}

/// First come, first served: arrival order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fcfs;

impl Policy for Fcfs {
    fn order(&mut self, _state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        (0..waiting.len()).collect()
    }

    fn static_key(&self, job: &SimJob) -> Option<f64> {
        Some(job.submit as f64)
    }
}

/// A policy from a closure `(state, waiting) -> order`, called at every step.
pub struct OrderFn<F>(pub F);

impl<F> Policy for OrderFn<F>
where
    F: FnMut(&SimState<'_>, &[usize]) -> Vec<usize>,
{
    fn order(&mut self, state: &SimState<'_>, waiting: &[usize]) -> Vec<usize> {
        (self.0)(state, waiting)
    }
}
