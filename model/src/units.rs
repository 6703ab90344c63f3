//! The values a user writes on a command line, parsed once for every crate and command:
//! durations (`10s`, `1h 30m`), whole seconds (`5400` or a duration), shares (`1%`, `0.01`)
//! and queue-length ranges (`8..12`). Each error says what was given and how to write it.

use std::time::Duration;

/// Parses a duration such as `10s`, `500ms`, `2m` or `1h 30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("`{s}` is not a duration ({e}); write e.g. 10s, 500ms or 2m"))
}

/// Parses a whole number of seconds, `5400` or a duration such as `1h 30m`, at least 1 s.
pub fn parse_seconds(s: &str) -> Result<i64, String> {
    let seconds = match s.trim().parse::<i64>() {
        Ok(n) => n,
        Err(_) => i64::try_from(parse_duration(s)?.as_secs()).unwrap_or(i64::MAX),
    };
    if seconds < 1 {
        return Err(format!("`{s}` must be at least one second"));
    }
    Ok(seconds)
}

/// [`parse_seconds`], where 0 is allowed.
pub fn parse_seconds_or_zero(s: &str) -> Result<i64, String> {
    if s.trim() == "0" {
        return Ok(0);
    }
    parse_seconds(s)
}

/// Parses a whole number of at least 1 (a count of entries, samples or steps).
pub fn parse_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "expected a whole number >= 1, got {}",
            s.escape_debug()
        )),
    }
}

/// Parses a share written as a percentage (`1%`, `0.5%`) or a fraction below 1 (`0.01`).
/// A bare number of 1 or more is refused: `2` could mean 2% or 200%.
pub fn parse_share(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (number, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 0.01),
        None => (t, 1.0),
    };
    let v: f64 = number.parse().map_err(|_| {
        format!("`{s}` is not a share; write a percentage such as 1% or a fraction such as 0.01")
    })?;
    let v = v * scale;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}`: a share must be 0 or more"));
    }
    if scale == 1.0 && v >= 1.0 {
        return Err(format!(
            "`{s}` is ambiguous: write {s}% for a percentage, or a fraction below 1"
        ));
    }
    Ok(v)
}

/// A queue-length range such as `8..12` (inclusive; `8..=12` too) or a single length such as
/// `10`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueRange {
    /// The shortest queue (at least 1).
    pub min: usize,
    /// The longest queue (at least `min`).
    pub max: usize,
}

impl std::str::FromStr for QueueRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("`{s}` is not a queue range: write MIN..MAX (inclusive, e.g. 8..12) or one length (e.g. 10)")
        };
        let (min, max) = match s.split_once("..") {
            Some((a, b)) => (a, b.strip_prefix('=').unwrap_or(b)),
            None => (s, s),
        };
        let min: usize = min.trim().parse().map_err(|_| bad())?;
        let max: usize = max.trim().parse().map_err(|_| bad())?;
        if min == 0 || min > max {
            return Err(format!("queue range `{s}` must satisfy 1 <= MIN <= MAX"));
        }
        Ok(QueueRange { min, max })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_percentages_or_fractions() {
        assert_eq!(parse_share("1%"), Ok(0.01));
        assert_eq!(parse_share("0.5 %"), Ok(0.005));
        assert_eq!(parse_share("0.02"), Ok(0.02));
        assert_eq!(parse_share("150%"), Ok(1.5));
        assert!(parse_share("2").unwrap_err().contains("ambiguous"));
        assert!(parse_share("-1%").is_err());
        assert!(parse_share("x").is_err());
    }

    #[test]
    fn seconds_and_queue_ranges() {
        assert_eq!(parse_seconds("5400"), Ok(5400));
        assert_eq!(parse_seconds("1h 30m"), Ok(5400));
        assert!(parse_seconds("0").is_err());
        assert_eq!(parse_seconds_or_zero("0"), Ok(0));
        assert_eq!(parse_count("3"), Ok(3));
        assert!(parse_count("0").is_err());
        assert!(parse_count("\u{1b}x").unwrap_err().contains("\\u{1b}"));
        assert_eq!("8..12".parse(), Ok(QueueRange { min: 8, max: 12 }));
        assert_eq!("8..=12".parse(), Ok(QueueRange { min: 8, max: 12 }));
        assert_eq!("10".parse(), Ok(QueueRange { min: 10, max: 10 }));
        assert!("0..3".parse::<QueueRange>().is_err());
        assert!("5..3".parse::<QueueRange>().is_err());
        assert!("a..b"
            .parse::<QueueRange>()
            .unwrap_err()
            .contains("MIN..MAX"));
    }
}
