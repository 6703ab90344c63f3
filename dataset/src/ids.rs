//! Short, stable prompt ids: `J1..Jn` for queued jobs (queue order, or a ranking's order for
//! templates that list the queue ranked), `S1..Sm` for servers (instance order) and `R1..Rk`
//! for running jobs (instance order).

use std::collections::BTreeMap;

use schedlm_model::Instance;
use serde::{Deserialize, Serialize};

/// The two-way map between an instance's ids and the short ids used in a prompt.
///
/// Built by [`IdMap::new`] (and returned by [`crate::prompt::render`]). If an instance repeats
/// an id (an invalid instance), the first occurrence keeps the mapping from original to prompt
/// id; every prompt id still maps back to its own original.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Parts", into = "Parts")]
pub struct IdMap {
    /// Original id of each queued job, in queue order.
    jobs: Vec<String>,
    /// The queue index of `J1..Jn`: `by_prompt[k]` is the job called `J{k+1}`.
    by_prompt: Vec<usize>,
    /// The inverse: queued job `j` is called `J{prompt[j]+1}`.
    prompt: Vec<usize>,
    /// Original id of `S1..Sm`, in instance order.
    servers: Vec<String>,
    /// Original id of `R1..Rk`, in instance order.
    running: Vec<String>,
    forward: BTreeMap<String, String>,
}

impl IdMap {
    /// The prompt ids of an instance, jobs numbered in queue order.
    pub fn new(instance: &Instance) -> IdMap {
        IdMap::ranked(instance, &[])
    }

    /// The prompt ids of an instance with jobs numbered in the order `by_prompt` (queue indices:
    /// `J1` is queued job `by_prompt[0]`). Anything but a permutation of the queue indices
    /// (e.g. empty) numbers them in queue order.
    pub fn ranked(instance: &Instance, by_prompt: &[usize]) -> IdMap {
        IdMap::from_parts(Parts {
            jobs: instance.queue.iter().map(|j| j.id.clone()).collect(),
            servers: instance.servers.iter().map(|s| s.id.clone()).collect(),
            running: instance.running.iter().map(|r| r.id.clone()).collect(),
            ranked: by_prompt.to_vec(),
        })
        .unwrap_or_else(|_| IdMap::ranked(instance, &[]))
    }

    fn from_parts(parts: Parts) -> Result<IdMap, String> {
        let Parts {
            jobs,
            servers,
            running,
            ranked,
        } = parts;
        let n = jobs.len();
        let by_prompt: Vec<usize> = if ranked.is_empty() {
            (0..n).collect()
        } else {
            ranked
        };
        let mut prompt = vec![usize::MAX; n];
        for (k, &j) in by_prompt.iter().enumerate() {
            match prompt.get_mut(j) {
                Some(slot) if *slot == usize::MAX => *slot = k,
                _ => {
                    return Err(format!(
                        "job ranking {by_prompt:?} is not a permutation of 0..{n}"
                    ))
                }
            }
        }
        if by_prompt.len() != n {
            return Err(format!(
                "job ranking {by_prompt:?} is not a permutation of 0..{n}"
            ));
        }
        let mut forward = BTreeMap::new();
        for &j in &by_prompt {
            forward
                .entry(jobs[j].clone())
                .or_insert_with(|| format!("J{}", prompt[j] + 1));
        }
        for (prefix, list) in [("S", &servers), ("R", &running)] {
            for (i, original) in list.iter().enumerate() {
                forward
                    .entry(original.clone())
                    .or_insert_with(|| format!("{prefix}{}", i + 1));
            }
        }
        Ok(IdMap {
            jobs,
            by_prompt,
            prompt,
            servers,
            running,
            forward,
        })
    }

    /// The prompt id of an original id (job, server or running job).
    pub fn to_prompt(&self, original: &str) -> Option<&str> {
        self.forward.get(original).map(String::as_str)
    }

    /// The original id of a prompt id such as `J3`, `S1` or `R2` (exact spelling).
    pub fn to_original(&self, prompt_id: &str) -> Option<&str> {
        if prompt_id.starts_with('J') {
            let j = self.job_index(prompt_id)?;
            return self.jobs.get(j).map(String::as_str);
        }
        let (list, rest) = match prompt_id.as_bytes().first()? {
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
        self.by_prompt.get(k - 1).copied()
    }

    /// The prompt id of queued job `j` (queue index): `J{j+1}` when jobs are numbered in queue
    /// order.
    pub fn job(&self, j: usize) -> String {
        format!("J{}", self.prompt.get(j).map_or(j, |&k| k) + 1)
    }

    /// The queue indices in prompt-id order (`J1` first).
    pub fn job_order(&self) -> &[usize] {
        &self.by_prompt
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

/// The serialised form: the original ids per kind (jobs in queue order, the others in
/// prompt-id order), and the queue index of each job prompt id when not the queue order.
#[derive(Clone, Serialize, Deserialize)]
struct Parts {
    jobs: Vec<String>,
    servers: Vec<String>,
    running: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ranked: Vec<usize>,
}

impl TryFrom<Parts> for IdMap {
    type Error = String;

    fn try_from(p: Parts) -> Result<IdMap, String> {
        IdMap::from_parts(p)
    }
}

impl From<IdMap> for Parts {
    fn from(m: IdMap) -> Parts {
        let identity = m.by_prompt.iter().enumerate().all(|(k, &j)| k == j);
        Parts {
            jobs: m.jobs,
            servers: m.servers,
            running: m.running,
            ranked: if identity { Vec::new() } else { m.by_prompt },
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
        for ids in [IdMap::new(&instance()), IdMap::ranked(&instance(), &[1, 0])] {
            let text = serde_json::to_string(&ids).unwrap();
            let back: IdMap = serde_json::from_str(&text).unwrap();
            assert_eq!(back, ids);
        }
        // Queue-order maps keep their old serialised form.
        let text = serde_json::to_string(&IdMap::new(&instance())).unwrap();
        assert!(!text.contains("ranked"), "{text}");
        let bad = r#"{"jobs":["a","b"],"servers":[],"running":[],"ranked":[1,1]}"#;
        assert!(serde_json::from_str::<IdMap>(bad).is_err());
    }

    #[test]
    fn ranked_ids() {
        let inst = instance();
        let ids = IdMap::ranked(&inst, &[1, 0]);
        assert_eq!(ids.to_prompt("b"), Some("J1"));
        assert_eq!(ids.to_prompt("a"), Some("J2"));
        assert_eq!(ids.to_original("J1"), Some("b"));
        assert_eq!(ids.job_index("J1"), Some(1));
        assert_eq!(ids.job_index("J2"), Some(0));
        assert_eq!(ids.job(0), "J2");
        assert_eq!(ids.job(1), "J1");
        assert_eq!(ids.job_order(), &[1, 0]);
        assert_eq!(ids.job_originals(), &["a".to_string(), "b".to_string()]);
        // Not a permutation: queue order.
        assert_eq!(IdMap::ranked(&inst, &[0, 0]), IdMap::new(&inst));
        assert_eq!(IdMap::ranked(&inst, &[0]), IdMap::new(&inst));
    }
}
