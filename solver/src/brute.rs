//! Brute force: every permutation of the queue through [`dispatch()`](schedlm_model::dispatch()). Exponential; for checking
//! the other methods on small queues (up to about 9 jobs).

use schedlm_model::{dispatch, Objective, Problem, Variant};

/// The best order over all permutations (the first in lexicographic order among ties) and its
/// value. Every permutation is repaired and dispatched as SPEC says, with no shortcut.
pub fn brute_force(problem: &Problem, objective: Objective, variant: Variant) -> (Vec<usize>, f64) {
    let mut perm: Vec<usize> = (0..problem.jobs()).collect();
    let mut best = (perm.clone(), f64::INFINITY);
    loop {
        if let Ok(s) = dispatch(problem, &perm, variant) {
            let v = objective.value(problem, &s.start);
            if v < best.1 {
                best = (perm.clone(), v);
            }
        }
        if !next_permutation(&mut perm) {
            return best;
        }
    }
}

/// Rearranges `v` into the next permutation in lexicographic order; false after the last.
pub fn next_permutation(v: &mut [usize]) -> bool {
    let Some(i) = v.windows(2).rposition(|w| w[0] < w[1]) else {
        return false;
    };
    let j = v.iter().rposition(|&x| x > v[i]).unwrap_or(i);
    v.swap(i, j);
    v[i + 1..].reverse();
    true
}

#[cfg(test)]
mod tests {
    use super::next_permutation;

    #[test]
    fn enumerates_all_permutations_once() {
        let mut v = vec![0, 1, 2, 3];
        let mut seen = vec![v.clone()];
        while next_permutation(&mut v) {
            seen.push(v.clone());
        }
        assert_eq!(seen.len(), 24);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 24);
    }
}
