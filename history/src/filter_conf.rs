//! The Slurm filter's settings file, `schedlm-submit.conf` beside `slurm.conf` (docs/slurm.md),
//! read in this one place: by `schedlm submit fill --conf` (which the plugin
//! `slurm/job_submit.lua` runs) and by `schedlm history replay --conf` (which measures the
//! same settings on the history).
//!
//! The file is `key = value` lines; blank lines and lines starting with `#` are comments. Every
//! value is checked here, and a bad one is an error naming the file, line and key; a key this
//! build does not know is an error too (a typo would otherwise leave a default in force
//! without a word). The plugin itself reads only the two settings it needs to start the filler,
//! `schedlm` and `timeout`.
//!
//! ```
//! use schedlm_history::filter_conf::FilterConf;
//!
//! let conf = FilterConf::parse("db = /var/lib/schedlm/h.sqlite\nmargin = 2\n# note\n", "c").unwrap();
//! assert_eq!(conf.margin, Some(2.0));
//! assert_eq!(conf.budget_ms(), FilterConf::BUDGET_MS); // not in the file: the default
//! assert!(FilterConf::parse("margn = 2\n", "c").unwrap_err().to_string().contains("c:1"));
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A settings file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfError {
    /// The file cannot be read.
    #[error("cannot read {path}: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// Neither the command line nor the file names the history.
    #[error("no history: give --db, or a --conf file with a `db` line")]
    NoHistory,
    /// A line that is not a setting, or a value that is not one.
    #[error("{path}:{line}: {message}")]
    Line {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The settings of `schedlm-submit.conf`; `None` where the file does not set one (the filler's
/// flag, else its default, applies).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterConf {
    /// The `schedlm` executable the plugin runs.
    pub schedlm: Option<PathBuf>,
    /// The job history.
    pub db: Option<PathBuf>,
    /// Past runs for the GPU count and batch size.
    pub runs: Option<PathBuf>,
    /// The time limit's margin over the prediction.
    pub margin: Option<f64>,
    /// The longest time limit filled in.
    pub max_time: Option<Duration>,
    /// The filler's budget, milliseconds.
    pub budget_ms: Option<u64>,
    /// Seconds after which the plugin kills the filler.
    pub timeout: Option<u64>,
    /// GPUs per node of the cluster.
    pub gpus_per_node: Option<u32>,
}

impl FilterConf {
    /// The time limit's margin when neither flag nor file sets one.
    pub const MARGIN: f64 = 1.5;
    /// The longest time limit filled in by default: 7 days.
    pub const MAX_TIME: Duration = Duration::from_secs(7 * 86_400);
    /// The filler's budget by default, milliseconds.
    pub const BUDGET_MS: u64 = 100;
    /// GPUs per node by default.
    pub const GPUS_PER_NODE: u32 = 8;

    /// The settings of the file at `path` (none given: every setting unset) with `flags`, the
    /// command line's, over them: a setting given there wins.
    pub fn resolve(path: Option<&Path>, flags: FilterConf) -> Result<FilterConf, ConfError> {
        let file = match path {
            Some(path) => FilterConf::read(path)?,
            None => FilterConf::default(),
        };
        Ok(FilterConf {
            schedlm: flags.schedlm.or(file.schedlm),
            db: flags.db.or(file.db),
            runs: flags.runs.or(file.runs),
            margin: flags.margin.or(file.margin),
            max_time: flags.max_time.or(file.max_time),
            budget_ms: flags.budget_ms.or(file.budget_ms),
            timeout: flags.timeout.or(file.timeout),
            gpus_per_node: flags.gpus_per_node.or(file.gpus_per_node),
        })
    }

    /// The history, which has no default.
    pub fn db(&self) -> Result<&Path, ConfError> {
        self.db.as_deref().ok_or(ConfError::NoHistory)
    }

    /// The margin, or [`FilterConf::MARGIN`].
    pub fn margin(&self) -> f64 {
        self.margin.unwrap_or(Self::MARGIN)
    }

    /// The longest time limit, or [`FilterConf::MAX_TIME`].
    pub fn max_time(&self) -> Duration {
        self.max_time.unwrap_or(Self::MAX_TIME)
    }

    /// The filler's budget, or [`FilterConf::BUDGET_MS`].
    pub fn budget_ms(&self) -> u64 {
        self.budget_ms.unwrap_or(Self::BUDGET_MS)
    }

    /// GPUs per node, or [`FilterConf::GPUS_PER_NODE`].
    pub fn gpus_per_node(&self) -> u32 {
        self.gpus_per_node.unwrap_or(Self::GPUS_PER_NODE)
    }

    /// Reads and checks the file at `path`.
    pub fn read(path: &Path) -> Result<FilterConf, ConfError> {
        let text = schedlm_model::lines::read_bounded(path).map_err(|error| ConfError::Read {
            path: path.display().to_string(),
            error,
        })?;
        FilterConf::parse(&text, &path.display().to_string())
    }

    /// Parses the text of a settings file called `name` (for messages).
    pub fn parse(text: &str, name: &str) -> Result<FilterConf, ConfError> {
        let mut conf = FilterConf::default();
        for (n, line) in text.lines().enumerate() {
            let bad = |message: String| ConfError::Line {
                path: name.to_string(),
                line: n + 1,
                message,
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                return Err(bad(format!("`{line}` is not `key = value`")));
            };
            let (key, value) = (key.trim(), value.trim());
            conf.set(key, value).map_err(bad)?;
        }
        Ok(conf)
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let number = |what: &str| format!("{key} must be {what}, got `{value}`");
        if value.is_empty() {
            return Err(format!("{key} has no value"));
        }
        match key {
            "schedlm" => self.schedlm = Some(PathBuf::from(value)),
            "db" => self.db = Some(PathBuf::from(value)),
            "runs" => self.runs = Some(PathBuf::from(value)),
            "margin" => {
                let m = value.parse::<f64>().ok().filter(|m| *m >= 1.0);
                self.margin = Some(m.ok_or_else(|| number("a number of at least 1"))?);
            }
            "max_time" => {
                let t = humantime::parse_duration(value).ok();
                self.max_time = Some(t.ok_or_else(|| number("a duration such as 7d or 36h"))?);
            }
            "budget_ms" => {
                let b = value.parse::<u64>().ok().filter(|b| *b >= 1);
                self.budget_ms = Some(b.ok_or_else(|| number("a whole number of at least 1"))?);
            }
            "timeout" => {
                let t = value.parse::<u64>().ok().filter(|t| *t >= 1);
                self.timeout = Some(t.ok_or_else(|| number("whole seconds, at least 1"))?);
            }
            "gpus_per_node" => {
                let g = value.parse::<u32>().ok().filter(|g| *g >= 1);
                self.gpus_per_node = Some(g.ok_or_else(|| number("a whole number of at least 1"))?);
            }
            _ => {
                return Err(format!(
                    "`{key}` is not a setting (schedlm, db, runs, margin, max_time, budget_ms, \
                     timeout, gpus_per_node)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_is_read_typed() {
        let text = "schedlm = /usr/bin/schedlm\ndb=/h.sqlite\nruns = r.csv\nmargin = 1.25\n\
                    max_time = 36h\nbudget_ms = 250\ntimeout = 2\ngpus_per_node = 4\n";
        let conf = FilterConf::parse(text, "c").unwrap();
        assert_eq!(
            conf,
            FilterConf {
                schedlm: Some("/usr/bin/schedlm".into()),
                db: Some("/h.sqlite".into()),
                runs: Some("r.csv".into()),
                margin: Some(1.25),
                max_time: Some(Duration::from_secs(36 * 3600)),
                budget_ms: Some(250),
                timeout: Some(2),
                gpus_per_node: Some(4),
            }
        );
    }

    #[test]
    fn a_bad_value_or_an_unknown_key_names_the_line() {
        for (text, said) in [
            (
                "db = h\nmargin = 0.5\n",
                "c:2: margin must be a number of at least 1",
            ),
            ("max_time = soon\n", "c:1: max_time must be a duration"),
            ("\n\ngpus_per_node = 0\n", "c:3: gpus_per_node"),
            ("budget = 100\n", "c:1: `budget` is not a setting"),
            ("db\n", "c:1: `db` is not `key = value`"),
            ("db =\n", "c:1: db has no value"),
        ] {
            let e = FilterConf::parse(text, "c").unwrap_err().to_string();
            assert!(e.starts_with(said), "{text:?}: {e}");
        }
    }
}
