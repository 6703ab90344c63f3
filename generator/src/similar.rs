//! Similar-job matching: the nearest neighbours of a job among past jobs, by normalised
//! metadata.
//!
//! A job is described by up to [`SLOTS`] *kinds* (categorical values: the executable, the
//! queue, the model name, ...; compared for equality) and up to [`SLOTS`] *sizes* (positive
//! quantities on a log scale: processors, requested time, GPUs, batch size, ...). The distance
//! between two jobs is
//!
//! ```text
//! d(a, b) = sum over kinds of [a.kind != b.kind] + sum over sizes of |ln a.size - ln b.size|
//! ```
//!
//! so one differing category counts as much as a factor of e in one size. A value missing on
//! one side only adds 1 (as a differing category); missing on both sides adds nothing. No
//! weight is fitted: the scale is the normalisation.
//!
//! Two users of this module share it: the trace estimator [`crate::trace::estimate`]
//! (`Estimator::Similar`, over a user's recent jobs) and the job-history store of the
//! knowledge crate (`schedlm history match|predict`, over extracted training jobs). The choices
//! (one neighbour, the user's last 16 jobs) were made on SDSC-SP2 alone and are scored on the
//! other traces in docs/knowledge.md.
//!
//! ```
//! use schedlm_generator::similar::{nearest, Descriptor, Match};
//!
//! let mut past = [Descriptor::EMPTY; 2];
//! past[0].kinds[0] = 7; // executable 7
//! past[0].sizes[0] = (64f64).ln(); // 64 processors
//! past[1].kinds[0] = 9;
//! past[1].sizes[0] = (64f64).ln();
//! let mut query = Descriptor::EMPTY;
//! query.kinds[0] = 9;
//! query.sizes[0] = (32f64).ln();
//! let mut out = [Match::NONE; 1];
//! assert_eq!(nearest(&query, past.iter(), &mut out), 1);
//! assert_eq!(out[0].index, 1); // same executable, half the processors
//! assert!((out[0].distance - 2f64.ln()).abs() < 1e-12);
//! ```

/// Kinds and sizes a descriptor holds (unused slots stay missing on both sides).
pub const SLOTS: usize = 6;

/// A kind that is not known.
pub const MISSING_KIND: u64 = u64::MAX;

/// What the matcher knows about one job.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Descriptor {
    /// Categorical values; [`MISSING_KIND`] where unknown.
    pub kinds: [u64; SLOTS],
    /// Natural logarithms of positive quantities; NaN where unknown.
    pub sizes: [f64; SLOTS],
}

impl Descriptor {
    /// Nothing known.
    pub const EMPTY: Descriptor = Descriptor {
        kinds: [MISSING_KIND; SLOTS],
        sizes: [f64::NAN; SLOTS],
    };

    /// Sets size `slot` to ln(`value`); a value that is not positive and finite stays missing.
    pub fn set_size(&mut self, slot: usize, value: f64) {
        if value.is_finite() && value > 0.0 {
            self.sizes[slot] = value.ln();
        }
    }
}

/// The distance of the module documentation.
pub fn distance(a: &Descriptor, b: &Descriptor) -> f64 {
    let mut d = 0.0;
    for (x, y) in a.kinds.iter().zip(&b.kinds) {
        if x != y {
            d += 1.0;
        }
    }
    for (x, y) in a.sizes.iter().zip(&b.sizes) {
        d += match (x.is_nan(), y.is_nan()) {
            (true, true) => 0.0,
            (false, false) => (x - y).abs(),
            _ => 1.0,
        };
    }
    d
}

/// One neighbour: its position among the candidates and its distance to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Match {
    /// Index of the candidate in the order given.
    pub index: usize,
    /// Its distance to the query.
    pub distance: f64,
}

impl Match {
    /// A placeholder for an output slot.
    pub const NONE: Match = Match {
        index: usize::MAX,
        distance: f64::INFINITY,
    };
}

/// Fills `out` with the `out.len()` candidates nearest to `query`, nearest first; of equally
/// near candidates the one given first wins (give the most recent first). Returns how many
/// slots were filled (fewer when there are fewer candidates). Allocates nothing.
pub fn nearest<'a>(
    query: &Descriptor,
    candidates: impl IntoIterator<Item = &'a Descriptor>,
    out: &mut [Match],
) -> usize {
    let mut filled = 0;
    for (index, candidate) in candidates.into_iter().enumerate() {
        let d = distance(query, candidate);
        // Insert after every kept match that is at least as near (stable: earlier wins ties).
        let at = out[..filled].partition_point(|m| m.distance <= d);
        if at == out.len() {
            continue;
        }
        if filled < out.len() {
            filled += 1;
        }
        out.copy_within(at..filled - 1, at + 1);
        out[at] = Match { index, distance: d };
    }
    filled
}

/// A stable 64-bit code for a categorical text value (FNV-1a), the same on every run and
/// machine; never [`MISSING_KIND`].
pub fn kind_of(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    if h == MISSING_KIND {
        0
    } else {
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn desc(kinds: &[u64], sizes: &[f64]) -> Descriptor {
        let mut d = Descriptor::EMPTY;
        d.kinds[..kinds.len()].copy_from_slice(kinds);
        for (i, s) in sizes.iter().enumerate() {
            d.set_size(i, *s);
        }
        d
    }

    #[test]
    fn missing_on_one_side_costs_one_and_on_both_nothing() {
        let a = desc(&[1], &[4.0]);
        assert_eq!(distance(&a, &a), 0.0);
        assert_eq!(distance(&a, &desc(&[2], &[4.0])), 1.0);
        assert_eq!(distance(&a, &desc(&[MISSING_KIND], &[4.0])), 1.0);
        assert_eq!(distance(&a, &desc(&[1], &[])), 1.0);
        assert!((distance(&a, &desc(&[1], &[8.0])) - 2f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn non_positive_sizes_stay_missing() {
        let mut d = Descriptor::EMPTY;
        d.set_size(0, 0.0);
        d.set_size(1, -3.0);
        d.set_size(2, f64::INFINITY);
        assert!(d.sizes.iter().all(|s| s.is_nan()));
    }

    #[test]
    fn ties_go_to_the_candidate_given_first() {
        let q = desc(&[1], &[]);
        let c = [desc(&[2], &[]), desc(&[2], &[]), desc(&[1], &[])];
        let mut out = [Match::NONE; 2];
        assert_eq!(nearest(&q, c.iter(), &mut out), 2);
        assert_eq!((out[0].index, out[1].index), (2, 0));
    }

    #[test]
    fn kind_codes_are_stable() {
        // FNV-1a test vectors.
        assert_eq!(kind_of(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(kind_of("a"), 0xaf63_dc4c_8601_ec8c);
    }

    proptest! {
        /// `nearest` keeps exactly what a full sort by (distance, index) keeps.
        #[test]
        fn nearest_agrees_with_a_sort(
            sizes in prop::collection::vec((0u64..3, 1.0f64..100.0), 0..30),
            k in 1usize..5,
        ) {
            let c: Vec<Descriptor> = sizes.iter().map(|&(kind, s)| desc(&[kind], &[s])).collect();
            let q = desc(&[1], &[10.0]);
            let mut out = vec![Match::NONE; k];
            let filled = nearest(&q, c.iter(), &mut out);
            let mut all: Vec<(f64, usize)> =
                c.iter().enumerate().map(|(i, d)| (distance(&q, d), i)).collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            prop_assert_eq!(filled, k.min(c.len()));
            for (m, (d, i)) in out[..filled].iter().zip(&all) {
                prop_assert_eq!(m.index, *i);
                prop_assert_eq!(m.distance, *d);
            }
        }
    }
}
