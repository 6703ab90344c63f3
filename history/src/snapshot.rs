//! Extracted jobs as a scheduling snapshot: the queue of an instance (SPEC section 1) on the
//! `dl` family's GPU nodes, whose demands, walltimes and `meta` come from the jobs' files and
//! the job history.
//!
//! Each job becomes a queued job with
//!
//! - demand `[gpus, cores, mem_gib]`: GPUs = GPUs per node x nodes (1 when the files say
//!   nothing), cores = CPUs per task (8 per GPU when unknown), memory = the requested memory
//!   in GiB rounded up (64 GiB per GPU when unknown);
//! - walltime: the history's prediction ([`crate::history::predict`]: the nearest completed
//!   job's run time, capped at the request) when a history is given, else the requested time;
//!   a job with neither is an error that names it;
//! - `meta`: the facts that matter to a scheduler ([`Field::SCHEDULING`](schedlm_knowledge::facts::Field::SCHEDULING): model, dataset,
//!   GPUs, nodes, batch sizes, sequence length, epochs, max steps, learning rate, precision),
//!   the requested walltime, and how the walltime was set (`walltime_from`).
//!
//! The snapshot has no running jobs and `now` = 0; every job is submitted at 0.

use schedlm_generator::family::dl::{NODE_CORES, NODE_GPUS, NODE_MEM_GIB, RESOURCES};
use schedlm_model::instance::{Instance, QueuedJob, Server};
use serde_json::{json, Map, Value};

use crate::history::{predict, MatchBy, PastJob, Query};
use schedlm_knowledge::facts::{Field, JobFacts};

/// Why a snapshot could not be made (the job is named).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SnapshotError {
    /// The job has no requested time and there is no history to predict one from.
    #[error("job {job}: no requested time (#SBATCH --time) and no --history to predict one from")]
    NoWalltime {
        /// The job's name.
        job: String,
    },
    /// The job needs more than one node's resources.
    #[error("job {job}: needs {need} {resource}, a node has {have} (jobs must fit one node)")]
    TooBig {
        /// The job's name.
        job: String,
        /// The resource.
        resource: &'static str,
        /// What it needs.
        need: i64,
        /// What a node has.
        have: i64,
    },
    /// A fact has a value that cannot be a count (the field is named).
    #[error("job {job}: {field} = {value} is not a positive whole number")]
    Count {
        /// The job's name.
        job: String,
        /// The field.
        field: Field,
        /// Its value.
        value: String,
    },
    /// A job directory without a name (`/`, `..`): job ids come from directory names.
    #[error("{0}: a job directory needs a name")]
    Unnamed(std::path::PathBuf),
    /// Two job directories of one name.
    #[error("two jobs named {name} ({first} and {second}): job ids come from directory names")]
    SameName {
        /// The name.
        name: String,
        /// The first directory.
        first: String,
        /// The second.
        second: String,
    },
    /// A job directory could not be read.
    #[error("cannot read job {job}: {reason}")]
    Extract {
        /// The job's name.
        job: String,
        /// What the extractor said.
        reason: String,
    },
    /// The snapshot breaks the instance rules (a bug if it happens).
    #[error("the snapshot is not a valid instance: {0}")]
    Invalid(String),
}

/// One job to put in the snapshot: a name (its id in the instance) and its facts.
pub struct Job<'a> {
    /// Its id in the snapshot (unique).
    pub name: String,
    /// What extraction read.
    pub facts: &'a JobFacts,
}

/// The snapshot of the training jobs in `dirs` (each named by its directory, read as
/// `schedlm extract` reads it) on `servers` `dl` nodes; walltimes from `history` when given.
pub fn snapshot_of_dirs(
    dirs: &[std::path::PathBuf],
    history: Option<&[PastJob]>,
    servers: usize,
) -> Result<Instance, SnapshotError> {
    let mut named: Vec<(String, &std::path::PathBuf)> = Vec::new();
    for dir in dirs {
        let name = (dir.file_name().map(|n| n.to_string_lossy().into_owned()))
            .ok_or_else(|| SnapshotError::Unnamed(dir.clone()))?;
        if let Some((_, first)) = named.iter().find(|(n, _)| *n == name) {
            let (first, second) = (first.display().to_string(), dir.display().to_string());
            return Err(SnapshotError::SameName {
                name,
                first,
                second,
            });
        }
        named.push((name, dir));
    }
    let mut facts = Vec::new();
    for (name, dir) in &named {
        let e = schedlm_knowledge::extract(dir, None, &[]).map_err(|source| {
            SnapshotError::Extract {
                job: name.clone(),
                reason: source.to_string(),
            }
        })?;
        facts.push((name.clone(), e.facts));
    }
    let jobs: Vec<Job> = (facts.iter())
        .map(|(name, facts)| Job {
            name: name.clone(),
            facts,
        })
        .collect();
    let instance = snapshot(&jobs, history, servers)?;
    schedlm_model::validate(&instance).map_err(|e| SnapshotError::Invalid(e.to_string()))?;
    Ok(instance)
}

/// The snapshot of `jobs` on `servers` `dl` nodes; walltimes from `history` when given.
pub fn snapshot(
    jobs: &[Job],
    history: Option<&[PastJob]>,
    servers: usize,
) -> Result<Instance, SnapshotError> {
    let queue = jobs
        .iter()
        .map(|job| queued(job, history))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Instance {
        now: 0,
        resources: RESOURCES.iter().map(|r| r.to_string()).collect(),
        servers: (0..servers)
            .map(|i| Server {
                id: format!("node{i}"),
                capacity: vec![NODE_GPUS, NODE_CORES, NODE_MEM_GIB],
            })
            .collect(),
        running: Vec::new(),
        queue,
    })
}

fn queued(job: &Job, history: Option<&[PastJob]>) -> Result<QueuedJob, SnapshotError> {
    let count = |field: Field| -> Result<Option<i64>, SnapshotError> {
        job.facts
            .positive_count(field)
            .map_err(|fact| SnapshotError::Count {
                job: job.name.clone(),
                field,
                value: fact.value.to_string(),
            })
    };
    let gpus = count(Field::GpusPerNode)?.unwrap_or(1) * count(Field::Nodes)?.unwrap_or(1);
    let cores = count(Field::CpusPerTask)?.unwrap_or(8 * gpus);
    let mem_gib = count(Field::MemoryMib)?.map_or(64 * gpus, |m| (m + 1023) / 1024);
    for (resource, need, have) in [
        ("gpus", gpus, NODE_GPUS),
        ("cores", cores, NODE_CORES),
        ("mem_gib", mem_gib, NODE_MEM_GIB),
    ] {
        if need > have {
            return Err(SnapshotError::TooBig {
                job: job.name.clone(),
                resource,
                need,
                have,
            });
        }
    }
    let requested = count(Field::RequestedTimeS)?;
    let (walltime, from) = match (history, requested) {
        (Some(past), _) => match predict(
            past,
            Query {
                facts: job.facts,
                embedding: None,
            },
            requested,
            1,
            MatchBy::Meta,
        ) {
            Ok(p) => (p.seconds, format!("history ({})", p.basis)),
            Err(_) => {
                return Err(SnapshotError::NoWalltime {
                    job: job.name.clone(),
                })
            }
        },
        (None, Some(r)) => (r, "request".to_string()),
        (None, None) => {
            return Err(SnapshotError::NoWalltime {
                job: job.name.clone(),
            })
        }
    };
    let mut meta = Map::new();
    for field in Field::SCHEDULING {
        if let Some(v) = job.facts.value(field) {
            meta.insert(field.to_string(), v.to_json());
        }
    }
    meta.insert("requested_walltime".into(), json!(requested));
    meta.insert("walltime_from".into(), json!(from));
    Ok(QueuedJob {
        id: job.name.clone(),
        submit: 0,
        demand: vec![gpus, cores, mem_gib],
        walltime,
        runtime: None,
        deps: Vec::new(),
        weight: 1.0,
        user: None,
        meta: Some(Value::Object(meta)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{NewJob, Outcome};

    use crate::history::tests::facts;

    #[test]
    fn demands_walltimes_and_meta_come_from_the_facts() {
        let a = facts(&[
            ("gpus_per_node", json!(4)),
            ("requested_time_s", json!(7_200)),
            ("model", json!("gpt2")),
        ]);
        let jobs = [Job {
            name: "a".into(),
            facts: &a,
        }];
        let instance = snapshot(&jobs, None, 2).unwrap();
        schedlm_model::validate(&instance).unwrap();
        let q = &instance.queue[0];
        assert_eq!(q.demand, vec![4, 32, 256]);
        assert_eq!(q.walltime, 7_200);
        let meta = q.meta.as_ref().unwrap();
        assert_eq!(meta["model"], "gpt2");
        assert_eq!(meta["walltime_from"], "request");

        // With a history, the nearest completed job's run time.
        let past = [PastJob {
            id: 1,
            job: NewJob {
                name: "old".into(),
                user: None,
                facts: a.clone(),
                requested_s: Some(7_200),
                actual_s: Some(3_000),
                outcome: Outcome::Completed,
                embedding: None,
                accounting: Default::default(),
            },
        }];
        let predicted = snapshot(&jobs, Some(&past), 2).unwrap();
        assert_eq!(predicted.queue[0].walltime, 3_000);
        assert_eq!(
            predicted.queue[0].meta.as_ref().unwrap()["walltime_from"],
            "history (nearest)"
        );
    }

    #[test]
    fn jobs_that_cannot_be_placed_or_timed_are_named() {
        let big = facts(&[
            ("gpus_per_node", json!(8)),
            ("nodes", json!(2)),
            ("requested_time_s", json!(60)),
        ]);
        let untimed = facts(&[("gpus_per_node", json!(1))]);
        let one = |name: &str, f| {
            snapshot(
                &[Job {
                    name: name.into(),
                    facts: f,
                }],
                None,
                1,
            )
        };
        assert_eq!(
            one("big", &big).unwrap_err().to_string(),
            "job big: needs 16 gpus, a node has 8 (jobs must fit one node)"
        );
        assert!(one("slow", &untimed)
            .unwrap_err()
            .to_string()
            .contains("job slow"));
    }
}
