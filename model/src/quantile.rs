//! The one definition of a percentile that every report of schedlm uses: linear interpolation
//! between the closest ranks, NumPy's default (`numpy.percentile(x, 100 q)`, Hyndman and Fan's
//! type 7). On `n` sorted values the q-quantile sits at position `q (n - 1)`; the median is the
//! middle value, or the mean of the two middle values for an even count.

/// The q-quantile (`q` in [0, 1], clamped) of values sorted in ascending order; `None` when
/// there are none.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let pos = q.clamp(0.0, 1.0) * last as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// The median of values sorted in ascending order ([`quantile`] at 0.5).
pub fn median(sorted: &[f64]) -> Option<f64> {
    quantile(sorted, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_percentiles() {
        // numpy.percentile([1, 2, 3, 4], [0, 50, 90, 100]) = [1, 2.5, 3.7, 4]
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(median(&v), Some(2.5));
        assert!((quantile(&v, 0.9).unwrap() - 3.7).abs() < 1e-12);
        assert_eq!(quantile(&v, 1.0), Some(4.0));
        assert_eq!(median(&[1.0, 5.0, 9.0]), Some(5.0));
        assert_eq!(quantile(&[7.0], 0.9), Some(7.0));
        assert_eq!(median(&[]), None);
    }
}
