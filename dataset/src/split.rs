//! Train, validation and test splits, chosen by the instance fingerprint so that the same
//! content always lands in the same split, whatever its ids, listing order or clock.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::canonical::Fingerprint;

/// A dataset split; its name is also the file name (`train.jsonl`, `val.jsonl`, `test.jsonl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Examples to train on (`train.jsonl`; 90 % by default).
    Train,
    /// Held-out examples for validation during fine-tuning (`val.jsonl`; 5 % by default).
    Val,
    /// Held-out examples for the final evaluation (`test.jsonl`; 5 % by default).
    Test,
}

impl Split {
    /// Every split, in file and sort order: train, val, test.
    pub const ALL: [Split; 3] = [Split::Train, Split::Val, Split::Test];

    /// The lowercase name used in records and file names: `train`, `val` or `test`.
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Val => "val",
            Split::Test => "test",
        }
    }

    /// The split's file name inside a dataset directory.
    pub fn file_name(self) -> String {
        format!("{}.jsonl", self.name())
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Shares of train, validation and test, in percent, e.g. `90/5/5` (the default).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SplitSpec {
    /// Share of train, in percent (0 to 100; the shares of a parsed spec sum to 100).
    pub train: f64,
    /// Share of validation, in percent.
    pub val: f64,
    /// Share of test, in percent.
    pub test: f64,
}

impl Default for SplitSpec {
    fn default() -> Self {
        SplitSpec {
            train: 90.0,
            val: 5.0,
            test: 5.0,
        }
    }
}

impl SplitSpec {
    /// The split of an instance: its fingerprint's unit number against the cumulative shares.
    pub fn of(&self, fp: &Fingerprint) -> Split {
        let total = self.train + self.val + self.test;
        let u = fp.unit() * total;
        if u < self.train {
            Split::Train
        } else if u < self.train + self.val {
            Split::Val
        } else {
            Split::Test
        }
    }
}

impl fmt::Display for SplitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.train, self.val, self.test)
    }
}

/// Why a split specification was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("split `{0}`: expected three shares TRAIN/VAL/TEST in percent summing to 100, e.g. 90/5/5")]
pub struct SplitSpecError(pub String);

impl FromStr for SplitSpec {
    type Err = SplitSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || SplitSpecError(s.to_string());
        let parts: Vec<f64> = s
            .split('/')
            .map(|p| p.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| err())?;
        let [train, val, test] = parts[..] else {
            return Err(err());
        };
        let ok = parts.iter().all(|p| p.is_finite() && *p >= 0.0)
            && (train + val + test - 100.0).abs() < 1e-9;
        if !ok {
            return Err(err());
        }
        Ok(SplitSpec { train, val, test })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!("90/5/5".parse::<SplitSpec>().unwrap(), SplitSpec::default());
        assert_eq!(
            "80/10/10".parse::<SplitSpec>().unwrap().to_string(),
            "80/10/10"
        );
        for bad in ["90/5", "90/5/6", "a/b/c", "-10/55/55", "100/0/0/0", ""] {
            assert!(bad.parse::<SplitSpec>().is_err(), "{bad}");
        }
        assert!("100/0/0".parse::<SplitSpec>().is_ok());
    }

    #[test]
    fn shares_are_respected() {
        let spec = SplitSpec::default();
        let mut counts = [0usize; 3];
        for i in 0..20_000u32 {
            use sha2::Digest;
            let bytes: [u8; 32] = sha2::Sha256::digest(i.to_le_bytes()).into();
            let s = spec.of(&Fingerprint(bytes));
            counts[s as usize] += 1;
        }
        assert!((17_700..18_300).contains(&counts[0]), "{counts:?}");
        assert!((850..1_150).contains(&counts[1]), "{counts:?}");
        assert!((850..1_150).contains(&counts[2]), "{counts:?}");
    }
}
