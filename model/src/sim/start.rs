//! Start rules (SPEC section 5): strict, EASY and conservative backfilling, and the engine
//! that runs one step's policy call and start rule.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::dispatch::{Dispatcher, Variant};
use crate::instance::Time;
use crate::problem::Problem;

use super::{Policy, SimError, SimState};

/// How jobs are started from the ordered queue (SPEC section 5).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum StartRule {
    /// In order while the next job fits now; no overtaking.
    Strict,
    /// EASY backfilling: one reservation for the first job that does not fit.
    #[default]
    Easy,
    /// Conservative backfilling: a reservation for every waiting job (SPEC section 3).
    Conservative,
}

impl StartRule {
    /// Every start rule.
    pub const ALL: [StartRule; 3] = [StartRule::Strict, StartRule::Easy, StartRule::Conservative];

    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            StartRule::Strict => "strict",
            StartRule::Easy => "easy",
            StartRule::Conservative => "conservative",
        }
    }
}

impl std::fmt::Display for StartRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Scratch of one replay.
pub(super) struct Engine {
    pub(super) heap: BinaryHeap<Reverse<(Time, usize)>>,
    pub(super) next_arrival: usize,
    pub(super) order: Vec<usize>,
    pub(super) started: Vec<usize>,
}

impl Engine {
    /// One step's policy call and start rule.
    pub(super) fn pass<P: Policy + ?Sized>(
        &mut self,
        state: &mut SimState<'_>,
        policy: &mut P,
        rule: StartRule,
    ) -> Result<(), SimError> {
        self.started.clear();
        if state.keyed {
            match rule {
                StartRule::Conservative => {
                    self.order.clear();
                    self.order.extend(state.keyed_queue.iter().map(|k| k.job));
                    conservative(state, &self.order, &mut self.heap, &mut self.started);
                }
                _ => {
                    // Walk the sorted queue without cloning it: take it out for the pass.
                    let queue = std::mem::take(&mut state.keyed_queue);
                    easy_or_strict(
                        state,
                        queue.iter().map(|k| k.job),
                        rule,
                        &mut self.heap,
                        &mut self.started,
                    );
                    state.keyed_queue = queue;
                }
            }
        } else {
            let order = policy.order(&*state, &state.waiting);
            check_order(&order, state.waiting.len(), state.now)?;
            self.order.clear();
            self.order.extend(order.iter().map(|&i| state.waiting[i]));
            match rule {
                StartRule::Conservative => {
                    conservative(state, &self.order, &mut self.heap, &mut self.started)
                }
                _ => easy_or_strict(
                    state,
                    self.order.iter().copied(),
                    rule,
                    &mut self.heap,
                    &mut self.started,
                ),
            }
        }
        let started = std::mem::take(&mut self.started);
        state.dequeue(&started);
        self.started = started;
        Ok(())
    }
}

pub(super) fn check_order(order: &[usize], n: usize, now: Time) -> Result<(), SimError> {
    let bad = |why: String| SimError::BadOrder {
        now,
        waiting: n,
        why,
    };
    if order.len() != n {
        return Err(bad(format!("it has {} entries", order.len())));
    }
    let mut seen = vec![false; n];
    for &i in order {
        if i >= n {
            return Err(bad(format!("position {i} is out of range")));
        }
        if seen[i] {
            return Err(bad(format!("position {i} appears twice")));
        }
        seen[i] = true;
    }
    Ok(())
}

/// The strict and EASY start rules over jobs in policy order.
pub(super) fn easy_or_strict(
    state: &mut SimState<'_>,
    mut order: impl Iterator<Item = usize>,
    rule: StartRule,
    heap: &mut BinaryHeap<Reverse<(Time, usize)>>,
    started: &mut Vec<usize>,
) {
    let mut head = None;
    for j in order.by_ref() {
        match state.fits_now(j) {
            Some(s) => {
                state.begin(j, s, heap);
                started.push(j);
            }
            None => {
                head = Some(j);
                break;
            }
        }
    }
    let Some(head) = head else { return };
    if rule == StartRule::Strict || state.closed() {
        return;
    }
    let (t_res, s_res, mut extra) = state.reservation(head);
    let now = state.now;
    let servers = state.sim.servers.len();
    for j in order {
        let job = &state.input[j];
        let d = &job.demand;
        let ends_before = now + job.plan() <= t_res;
        let mut chosen = None;
        for s in 0..servers {
            if !state.room(s, d) {
                continue;
            }
            if s != s_res || ends_before {
                chosen = Some((s, false));
                break;
            }
            if extra.iter().zip(d).all(|(e, d)| d <= e) {
                chosen = Some((s, true));
                break;
            }
        }
        if let Some((s, uses_extra)) = chosen {
            if uses_extra {
                for (e, x) in extra.iter_mut().zip(d) {
                    *e -= x;
                }
            }
            state.begin(j, s, heap);
            started.push(j);
            if state.closed() {
                break;
            }
        }
    }
}

/// The conservative start rule: dispatch the whole queue in `order` (SPEC section 3) and start
/// what the dispatcher places now.
pub(super) fn conservative(
    state: &mut SimState<'_>,
    order: &[usize],
    heap: &mut BinaryHeap<Reverse<(Time, usize)>>,
    started: &mut Vec<usize>,
) {
    if state.closed() {
        return;
    }
    let instance = state.snapshot_of(order);
    // The snapshot of a valid simulation is a valid instance (running ends > now, every
    // queued job fits some server, unique ids).
    let problem = Problem::new(&instance).expect("a replay snapshot is a valid instance");
    let mut dispatcher = Dispatcher::new(&problem, Variant::Serial);
    let now = state.now;
    for (i, &j) in order.iter().enumerate() {
        let at = dispatcher.place(i);
        if at.start == now {
            // The dispatcher found room at `now` counting the running jobs and the jobs
            // started before, so the job has room now on that server.
            state.begin(j, at.server, heap);
            started.push(j);
            // Later jobs cannot start now once every server lacks something they all need;
            // their reservations are in the future, so they need not be placed.
            if state.closed() {
                break;
            }
        }
    }
}
