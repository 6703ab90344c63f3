//! A fingerprint of an instance's content that ignores ids, listing order and the clock.
//!
//! Two snapshots that differ only in their job, server or running-job ids, in the listing order
//! of running or queued jobs, or by a shift of every time (`now`, `submit`, `end`) have the same
//! fingerprint: a model sees the same prompt content for them and the same orders are optimal,
//! so they must never sit in two splits. The fingerprint gives the record id, the split and the
//! shard.
//!
//! Canonical form, hashed with SHA-256:
//! - the resource names, and each server's capacity in listing order (server order decides
//!   where the dispatcher places a job, so it is content);
//! - each running job as (server position, demand, `end - now`), sorted;
//! - each queued job as a key: the hash of (`submit - now`, demand, walltime, weight, `meta`
//!   with object keys sorted, and the sorted keys of the jobs it depends on); the keys sorted.
//!
//! The hidden `runtime` and the free `user` field are not part of it: no prompt shows them and
//! no snapshot objective uses them. Dependency structure enters through the keys (a Merkle hash
//! over the dependency DAG), so renaming cannot change it.

use std::collections::HashMap;
use std::fmt::Write as _;

use schedlm_model::Instance;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 of an instance's canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The record id: the first 8 bytes as 16 lowercase hex digits.
    pub fn id(&self) -> String {
        hex(&self.0[..8])
    }

    /// A number in [0, 1) from the first 8 bytes, which picks the split.
    pub fn unit(&self) -> f64 {
        (self.word(0) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The shard (0-based) among `n`, from bytes 8..16 (independent of the split's bytes).
    pub fn shard(&self, n: u32) -> u32 {
        (self.word(8) % u64::from(n.max(1))) as u32
    }

    fn word(&self, at: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[at..at + 8]);
        u64::from_be_bytes(b)
    }
}

/// The fingerprint of an instance. Works on any instance, valid or not (a dependency on an
/// unknown id enters by its name).
pub fn fingerprint(instance: &Instance) -> Fingerprint {
    let now = instance.now;
    let mut text = String::new();
    let _ = writeln!(text, "resources {:?}", instance.resources);
    for s in &instance.servers {
        let _ = writeln!(text, "server {:?}", s.capacity);
    }
    let server_pos: HashMap<&str, usize> = instance
        .servers
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    // A running job's key is its description (short; no hash needed).
    let mut keys: HashMap<&str, String> = HashMap::with_capacity(instance.running.len());
    let mut running: Vec<String> = instance
        .running
        .iter()
        .map(|r| {
            let server = server_pos
                .get(r.server.as_str())
                .map_or_else(|| format!("?{}", r.server), |p| p.to_string());
            let desc = format!(
                "running {server} {:?} {}",
                r.demand,
                r.end.saturating_sub(now)
            );
            keys.entry(r.id.as_str()).or_insert_with(|| desc.clone());
            desc
        })
        .collect();
    running.sort();
    for r in running {
        let _ = writeln!(text, "{r}");
    }
    let by_id: HashMap<&str, usize> = instance
        .queue
        .iter()
        .enumerate()
        .map(|(i, j)| (j.id.as_str(), i))
        .collect();
    let mut memo: Vec<Option<String>> = vec![None; instance.queue.len()];
    let mut queue: Vec<String> = (0..instance.queue.len())
        .map(|j| queued_key(instance, j, &by_id, &keys, &mut memo, 0))
        .collect();
    queue.sort();
    for q in queue {
        let _ = writeln!(text, "queued {q}");
    }
    Fingerprint(Sha256::digest(text.as_bytes()).into())
}

/// The key of queued job `j`: a hash of its content and its dependencies' keys. `depth` stops
/// a cycle (an invalid instance) from recursing forever.
fn queued_key(
    instance: &Instance,
    j: usize,
    by_id: &HashMap<&str, usize>,
    running: &HashMap<&str, String>,
    memo: &mut Vec<Option<String>>,
    depth: usize,
) -> String {
    if let Some(k) = &memo[j] {
        return k.clone();
    }
    let job = &instance.queue[j];
    let mut deps: Vec<String> = job
        .deps
        .iter()
        .map(|d| {
            if let Some(k) = running.get(d.as_str()) {
                k.clone()
            } else if let Some(&q) = by_id.get(d.as_str()).filter(|_| depth < memo.len()) {
                queued_key(instance, q, by_id, running, memo, depth + 1)
            } else {
                format!("?{d}")
            }
        })
        .collect();
    deps.sort();
    let meta = job.meta.as_ref().map(sorted_json).unwrap_or_default();
    let desc = format!(
        "{} {:?} {} {:?} {meta} {deps:?}",
        job.submit.saturating_sub(instance.now),
        job.demand,
        job.walltime,
        job.weight,
    );
    let key = sha_hex(&desc);
    memo[j] = Some(key.clone());
    key
}

/// JSON text with every object's keys sorted.
fn sorted_json(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), sorted_json(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(sorted_json).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

fn sha_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Instance {
        Instance::from_json(
            r#"{"now": 1000, "resources": ["cores"],
                "servers": [{"id": "a", "capacity": [8]}, {"id": "b", "capacity": [4]}],
                "running": [{"id": "r1", "server": "a", "demand": [4], "end": 1500},
                            {"id": "r2", "server": "b", "demand": [2], "end": 1200}],
                "queue": [{"id": "x", "submit": 900, "demand": [4], "walltime": 100,
                           "deps": ["r1"]},
                          {"id": "y", "submit": 950, "demand": [2], "walltime": 50,
                           "deps": ["x"], "meta": {"b": 1, "a": [1, {"d": 2, "c": 3}]}},
                          {"id": "z", "submit": 990, "demand": [8], "walltime": 10}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn renaming_reordering_and_shifting_keep_the_fingerprint() {
        let a = base();
        let mut b = a.clone();
        // Rename everything consistently.
        for (old, new) in [("x", "q1"), ("y", "q2"), ("z", "q3")] {
            for j in &mut b.queue {
                if j.id == old {
                    j.id = new.into();
                }
                for d in &mut j.deps {
                    if d == old {
                        *d = new.into();
                    }
                }
            }
        }
        for r in &mut b.running {
            let new = format!("run-{}", r.id);
            for j in &mut b.queue {
                for d in &mut j.deps {
                    if *d == r.id {
                        *d = new.clone();
                    }
                }
            }
            r.id = new;
        }
        for s in &mut b.servers {
            let new = format!("node-{}", s.id);
            for r in &mut b.running {
                if r.server == s.id {
                    r.server = new.clone();
                }
            }
            s.id = new;
        }
        // Reorder the lists and shift the clock.
        b.queue.reverse();
        b.running.reverse();
        b.now += 7;
        for j in &mut b.queue {
            j.submit += 7;
            j.runtime = Some(3); // hidden: not content
        }
        for r in &mut b.running {
            r.end += 7;
        }
        // Meta with other key order.
        b.queue[1].meta = Some(serde_json::json!({"a": [1, {"c": 3, "d": 2}], "b": 1}));
        assert_eq!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn content_changes_change_the_fingerprint() {
        let a = base();
        let f = fingerprint(&a);
        let mut changes: Vec<Instance> = Vec::new();
        let mut c = a.clone();
        c.queue[0].walltime += 1;
        changes.push(c);
        let mut c = a.clone();
        c.queue[2].demand[0] -= 1;
        changes.push(c);
        let mut c = a.clone();
        c.queue[1].deps.clear();
        changes.push(c);
        let mut c = a.clone();
        c.queue[0].deps = vec!["r2".into()]; // same shape, other running job
        changes.push(c);
        let mut c = a.clone();
        c.servers.swap(0, 1); // server order is content
        changes.push(c);
        let mut c = a.clone();
        c.queue[2].weight = 2.0;
        changes.push(c);
        let mut c = a.clone();
        c.now += 1; // only the clock moves: every relative time changes
        changes.push(c);
        let mut c = a.clone();
        c.queue[1].meta = None;
        changes.push(c);
        for (i, c) in changes.iter().enumerate() {
            assert_ne!(fingerprint(c), f, "change {i} kept the fingerprint");
        }
    }

    #[test]
    fn cycles_and_unknown_ids_do_not_hang() {
        let mut a = base();
        a.queue[0].deps = vec!["y".into(), "nope".into()];
        let _ = fingerprint(&a);
    }

    #[test]
    fn id_unit_and_shard() {
        let f = fingerprint(&base());
        assert_eq!(f.id().len(), 16);
        assert!((0.0..1.0).contains(&f.unit()));
        assert!(f.shard(3) < 3);
        assert_eq!(f.shard(1), 0);
    }
}
