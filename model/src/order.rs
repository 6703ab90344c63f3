//! Orders of the queue (SPEC section 2): checking, mapping ids, and the dependency repair.

use crate::lines::excerpt;
use crate::problem::Problem;

/// Why a list of jobs is not an order of the queue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    #[error("the order names {}, which is not a queued job", excerpt(.0))]
    /// An id in the order (see [`order_from_ids`]) is not the id of a queued job; the field
    /// is that id.
    UnknownJob(String),
    #[error("the order lists {} twice", excerpt(.0))]
    /// The order lists a queued job more than once; the field is the job's id.
    Duplicate(String),
    #[error("the order misses queued job {}", excerpt(.0))]
    /// The order leaves out a queued job; the field is the id of the first one missed, in
    /// queue order.
    Missing(String),
    #[error("job index {0} is out of range")]
    /// A queue index in the order is not below the number of queued jobs; the field is that
    /// 0-based index.
    OutOfRange(usize),
}

/// Maps a list of job ids to queue indices, checking that it is a permutation of the queue.
pub fn order_from_ids<S: AsRef<str>>(
    problem: &Problem,
    ids: &[S],
) -> Result<Vec<usize>, OrderError> {
    let mut order = Vec::with_capacity(ids.len());
    for id in ids {
        let id = id.as_ref();
        let j = problem
            .job_index(id)
            .ok_or_else(|| OrderError::UnknownJob(id.to_string()))?;
        order.push(j);
    }
    check_permutation(problem, &order)?;
    Ok(order)
}

/// Checks that `order` lists every queued job exactly once.
pub fn check_permutation(problem: &Problem, order: &[usize]) -> Result<(), OrderError> {
    let n = problem.jobs();
    let mut seen = vec![false; n];
    for &j in order {
        if j >= n {
            return Err(OrderError::OutOfRange(j));
        }
        if seen[j] {
            return Err(OrderError::Duplicate(problem.job_id(j).to_string()));
        }
        seen[j] = true;
    }
    match seen.iter().position(|s| !s) {
        Some(j) => Err(OrderError::Missing(problem.job_id(j).to_string())),
        None => Ok(()),
    }
}

/// The repair of SPEC section 2: repeatedly take the first remaining job whose queued
/// dependencies have all been taken. An order that already respects the dependencies is
/// returned unchanged. `order` must be a permutation (see [`check_permutation`]).
pub fn repair(problem: &Problem, order: &[usize]) -> Vec<usize> {
    if !problem.has_queued_deps() {
        return order.to_vec();
    }
    let n = problem.jobs();
    let mut taken = vec![false; n];
    let mut remaining: Vec<usize> = order.to_vec();
    let mut out = Vec::with_capacity(n);
    while !remaining.is_empty() {
        let pos = remaining
            .iter()
            .position(|&j| problem.deps(j).iter().all(|&d| taken[d]))
            // A valid problem has no cycle, so some remaining job is always ready.
            .unwrap_or(0);
        let j = remaining.remove(pos);
        taken[j] = true;
        out.push(j);
    }
    out
}
