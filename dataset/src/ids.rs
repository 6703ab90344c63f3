//! Short, stable prompt ids: `J1..Jn` for queued jobs (queue order), `S1..Sm` for servers
//! (instance order) and `R1..Rk` for running jobs (instance order).

use std::collections::BTreeMap;

use schedlm_model::Instance;
use serde::{Deserialize, Serialize};

/// The two-way map between an instance's ids and the short ids used in a prompt.
///
/// Built by [`IdMap::new`] (and returned by [`crate::prompt::render`]). If an instance repeats
/// an id (an invalid instance), the first occurrence keeps the mapping from original to prompt
/// id; every prompt id still maps back to its own original.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Parts", into = "Parts")]
pub struct IdMap {
    /// Original id of `J1..Jn`, in queue order.
    jobs: Vec<String>,
    /// Original id of `S1..Sm`, in instance order.
    servers: Vec<String>,
    /// Original id of `R1..Rk`, in instance order.
    running: Vec<String>,
    forward: BTreeMap<String, String>,
}

impl IdMap {
    /// The prompt ids of an instance.
    pub fn new(instance: &Instance) -> IdMap {
        IdMap::from_parts(
            instance.queue.iter().map(|j| j.id.clone()).collect(),
            instance.servers.iter().map(|s| s.id.clone()).collect(),
            instance.running.iter().map(|r| r.id.clone()).collect(),
        )
    }

    fn from_parts(jobs: Vec<String>, servers: Vec<String>, running: Vec<String>) -> IdMap {
        let mut forward = BTreeMap::new();
        for (prefix, list) in [("J", &jobs), ("S", &servers), ("R", &running)] {
            for (i, original) in list.iter().enumerate() {
                forward
                    .entry(original.clone())
                    .or_insert_with(|| format!("{prefix}{}", i + 1));
            }
        }
        IdMap {
            jobs,
            servers,
            running,
            forward,
        }
    }

    /// The prompt id of an original id (job, server or running job).
    pub fn to_prompt(&self, original: &str) -> Option<&str> {
        self.forward.get(original).map(String::as_str)
    }

    /// The original id of a prompt id such as `J3`, `S1` or `R2` (exact spelling).
    pub fn to_original(&self, prompt_id: &str) -> Option<&str> {
        let (list, rest) = match prompt_id.as_bytes().first()? {
            b'J' => (&self.jobs, &prompt_id[1..]),
            b'S' => (&self.servers, &prompt_id[1..]),
            b'R' => (&self.running, &prompt_id[1..]),
            _ => return None,
        };
        let k = parse_index(rest)?;
        list.get(k - 1).map(String::as_str)
    }

    /// The queue index of a job prompt id (`J1` is 0), if it names a queued job.
    pub fn job_index(&self, prompt_id: &str) -> Option<usize> {
        let rest = prompt_id.strip_prefix('J')?;
        let k = parse_index(rest)?;
        (k <= self.jobs.len()).then_some(k - 1)
    }

    /// The prompt id of queued job `j` (queue index): `J{j+1}`.
    pub fn job(&self, j: usize) -> String {
        format!("J{}", j + 1)
    }

    /// The prompt id of server `s` (instance index): `S{s+1}`.
    pub fn server(&self, s: usize) -> String {
        format!("S{}", s + 1)
    }

    /// The prompt id of running job `r` (instance index): `R{r+1}`.
    pub fn running(&self, r: usize) -> String {
        format!("R{}", r + 1)
    }

    /// Number of queued jobs.
    pub fn jobs(&self) -> usize {
        self.jobs.len()
    }

    /// The original ids of the queued jobs, in queue order.
    pub fn job_originals(&self) -> &[String] {
        &self.jobs
    }
}

/// The serialised form: the original ids per kind, in prompt-id order.
#[derive(Clone, Serialize, Deserialize)]
struct Parts {
    jobs: Vec<String>,
    servers: Vec<String>,
    running: Vec<String>,
}

impl From<Parts> for IdMap {
    fn from(p: Parts) -> IdMap {
        IdMap::from_parts(p.jobs, p.servers, p.running)
    }
}

impl From<IdMap> for Parts {
    fn from(m: IdMap) -> Parts {
        Parts {
            jobs: m.jobs,
            servers: m.servers,
            running: m.running,
        }
    }
}

/// `"12"` to 12; rejects empty, leading zeros, non-digits, zero and overflow.
fn parse_index(digits: &str) -> Option<usize> {
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|&k: &usize| k >= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance() -> Instance {
        Instance::from_json(
            r#"{"now": 100, "resources": ["cores"],
                "servers": [{"id": "n0", "capacity": [8]}, {"id": "n1", "capacity": [4]}],
                "running": [{"id": "r7", "server": "n0", "demand": [4], "end": 200}],
                "queue": [{"id": "a", "submit": 50, "demand": [2], "walltime": 10},
                          {"id": "b", "submit": 60, "demand": [2], "walltime": 10}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn ids_round_trip() {
        let ids = IdMap::new(&instance());
        for (orig, prompt) in [
            ("a", "J1"),
            ("b", "J2"),
            ("n0", "S1"),
            ("n1", "S2"),
            ("r7", "R1"),
        ] {
            assert_eq!(ids.to_prompt(orig), Some(prompt));
            assert_eq!(ids.to_original(prompt), Some(orig));
        }
        assert_eq!(ids.to_prompt("zz"), None);
        for bad in [
            "J0", "J3", "J01", "j1", "S3", "R2", "X1", "J", "", "J1x", "J+1",
        ] {
            assert_eq!(ids.to_original(bad), None, "{bad}");
        }
        assert_eq!(ids.job_index("J2"), Some(1));
        assert_eq!(ids.job_index("J3"), None);
        assert_eq!(ids.job(0), "J1");
        assert_eq!(ids.server(1), "S2");
    }

    #[test]
    fn serde_round_trip() {
        let ids = IdMap::new(&instance());
        let text = serde_json::to_string(&ids).unwrap();
        let back: IdMap = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ids);
    }
}
