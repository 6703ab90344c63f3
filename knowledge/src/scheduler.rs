//! Scheduler requests: the Slurm `#SBATCH` and PBS `#PBS` lines of job scripts, the options
//! of `srun` and `sbatch` commands, submitit's parameters and Hydra's Slurm launcher, each read
//! as one request whose counts give the facts [`crate::derive::request`] computes.
//!
//! Fields: `job_name`, `nodes`, `gpus_per_node` (from `--gres=gpu[:type]:N`,
//! `--gpus-per-node`, PBS `ngpus`, or derived), `tasks_per_node`, `cpus_per_task`,
//! `memory_mib` (`--mem`; PBS `mem`; or derived), `requested_time_s` (`--time` / `walltime`,
//! every Slurm time format).

use serde_json::json;

use crate::derive::{NodesUnsaid, RequestCounts};
use crate::facts::{Field, JobFacts, Source, Strength};
use crate::vocabulary::{
    Request, PBS_OPTIONS, PBS_RESOURCES, SLURM_COUNTS, SLURM_OPTIONS, SUBMITIT_OPTIONS,
};

/// Reads the `#SBATCH` and `#PBS` lines of `text` (file `name`) into `facts`: one request at
/// strength `header`, whose GPU total without a node count is one node's.
pub fn read_headers(name: &str, text: &str, facts: &mut JobFacts) {
    let mut request = SchedulerRequest::new(Strength::Header);
    for (index, line) in text.lines().enumerate() {
        let source = Source::line(name, index + 1);
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("#SBATCH") {
            for (key, value) in options(rest) {
                request.slurm_option(&key, value.as_deref(), &source);
            }
        } else if let Some(rest) = trimmed.strip_prefix("#PBS") {
            for (key, value) in options(rest) {
                request.pbs_option(&key, value.as_deref(), &source);
            }
        }
    }
    request.finish(facts, NodesUnsaid::One);
}

/// The Slurm options of a command line (the words between `srun` and the command, `sbatch`'s
/// options, submitit's parameters written as options), which request what `#SBATCH` lines
/// do: one request at `strength`, each fact citing `source`. A GPU total gives GPUs per node
/// only with a node count among the options (a step's total alone may span nodes).
pub fn read_options(words: &[String], source: &Source, strength: Strength, facts: &mut JobFacts) {
    let mut request = SchedulerRequest::new(strength);
    for (key, value) in option_pairs(words) {
        request.slurm_option(&key, value.as_deref(), source);
    }
    request.finish(facts, NodesUnsaid::Unknown);
}

/// Slurm options written one to a line (`--gpus-per-node=8`), each citing its own line: one
/// request at `strength`, as [`read_options`] reads one (Hydra's Slurm launcher, whose keys
/// [`submitit_option`] writes as options).
pub fn read_cited_options(options: &[(String, Source)], strength: Strength, facts: &mut JobFacts) {
    let mut request = SchedulerRequest::new(strength);
    for (word, source) in options {
        for (key, value) in option_pairs(std::slice::from_ref(word)) {
            request.slurm_option(&key, value.as_deref(), source);
        }
    }
    request.finish(facts, NodesUnsaid::Unknown);
}

/// A keyword of submitit's `update_parameters(gpus_per_node=8, ...)` or a key of Hydra's
/// Slurm launcher (`hydra.launcher`) as the Slurm option it stands for (`--gpus-per-node=8`,
/// [`SUBMITIT_OPTIONS`]), for [`read_options`]; `None` for another keyword, or a value that is
/// neither text nor a whole number.
pub fn submitit_option(keyword: &str, value: &serde_json::Value) -> Option<String> {
    let name = keyword.strip_prefix("slurm_").unwrap_or(keyword);
    let &(_, option) = SUBMITIT_OPTIONS.iter().find(|(k, _)| *k == name)?;
    let value = match value {
        serde_json::Value::String(t) => t.clone(),
        serde_json::Value::Number(n) if n.is_u64() => n.to_string(),
        _ => return None,
    };
    let unit = if name == "mem_gb" { "G" } else { "" };
    Some(format!("--{option}={value}{unit}"))
}

/// One scheduler request as it is read: its own facts, and the counts that give facts only
/// together ([`crate::derive::request`]).
struct SchedulerRequest {
    facts: JobFacts,
    counts: RequestCounts,
    strength: Strength,
}

impl SchedulerRequest {
    fn new(strength: Strength) -> SchedulerRequest {
        SchedulerRequest {
            facts: JobFacts::default(),
            counts: RequestCounts::default(),
            strength,
        }
    }

    /// One Slurm option ([`SLURM_OPTIONS`], [`SLURM_COUNTS`]).
    fn slurm_option(&mut self, key: &str, value: Option<&str>, source: &Source) {
        // Template placeholders (`{ jobname }`, `<account>`) and shell variables say nothing.
        let Some(value) = value.filter(|v| !v.starts_with(['{', '<']) && !v.contains('$')) else {
            return;
        };
        if let Some(&(_, which, how)) = SLURM_COUNTS.iter().find(|(n, ..)| n.contains(&key)) {
            if let Some(n) = request(how, value).and_then(|(v, _)| v.as_u64()) {
                self.counts.set(which, n, source);
            }
        } else if let Some(&(_, field, how)) = SLURM_OPTIONS.iter().find(|(n, ..)| n.contains(&key))
        {
            if let Some((v, confidence)) = request(how, value) {
                let strength = self.strength;
                self.facts
                    .set(field, v, source.clone(), confidence, strength);
            }
        }
    }

    /// One PBS option (`-N name`, [`PBS_OPTIONS`]; `-l resource=value:...`,
    /// [`PBS_RESOURCES`]).
    fn pbs_option(&mut self, key: &str, value: Option<&str>, source: &Source) {
        let Some(value) = value else { return };
        let strength = self.strength;
        let mut set = |field: Field, v: serde_json::Value| {
            self.facts.set(field, v, source.clone(), 1.0, strength)
        };
        match key {
            "l" => {
                // `walltime=hh:mm:ss` keeps its colons; chunk specs (`select=2:ngpus=4`) split.
                let items = value.split(',').flat_map(|part| {
                    if part.starts_with("walltime=") {
                        vec![part]
                    } else {
                        part.split(':').collect()
                    }
                });
                for item in items {
                    // `select=2:ncpus=...` starts with the chunk count.
                    let Some((k, v)) = item.split_once('=') else {
                        continue;
                    };
                    let Some(&(_, field, how)) =
                        PBS_RESOURCES.iter().find(|(n, ..)| n.contains(&k))
                    else {
                        continue;
                    };
                    if let Some((v, _)) = request(how, v) {
                        set(field, v);
                    }
                }
            }
            _ => {
                let Some(&(_, field, how)) = PBS_OPTIONS.iter().find(|(n, ..)| n.contains(&key))
                else {
                    return;
                };
                if let Some((v, _)) = request(how, value) {
                    set(field, v);
                }
            }
        }
    }

    /// The request's derived facts ([`crate::derive::request`]), then all its facts into
    /// `facts`.
    fn finish(mut self, facts: &mut JobFacts, unsaid: NodesUnsaid) {
        crate::derive::request(&mut self.facts, &self.counts, self.strength, unsaid);
        facts.absorb(&self.facts);
    }
}

/// `--key=value`, `--key value`, `-k value` and `-kvalue` pairs of a header line; a comment
/// after the options (`# ...`) ends them.
fn options(rest: &str) -> Vec<(String, Option<String>)> {
    let rest = rest.split(" #").next().unwrap_or("");
    option_pairs(&shlex::split(rest).unwrap_or_default())
}

/// The option pairs of [`options`], from words.
fn option_pairs(words: &[String]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if let Some(long) = w.strip_prefix("--") {
            match long.split_once('=') {
                Some((k, v)) => out.push((k.to_string(), Some(v.to_string()))),
                None => {
                    let next = words.get(i + 1).filter(|n| !n.starts_with('-')).cloned();
                    i += usize::from(next.is_some());
                    out.push((long.to_string(), next));
                }
            }
        } else if let Some(short) = w.strip_prefix('-') {
            if short.len() > 1 {
                out.push((short[..1].to_string(), Some(short[1..].to_string())));
            } else {
                let next = words.get(i + 1).cloned();
                i += usize::from(next.is_some());
                out.push((short.to_string(), next));
            }
        }
        i += 1;
    }
    out
}

/// A request's value read as `how` says, with its confidence.
fn request(how: Request, value: &str) -> Option<(serde_json::Value, f64)> {
    let count = |v: &str| v.parse::<u64>().ok();
    Some(match how {
        Request::Text => (json!(value), 1.0),
        Request::Count => (json!(count(value)?), 1.0),
        // `2` or a range `2-4`: the job gets at least the minimum.
        Request::CountOrRange => (
            json!(count(value.split('-').next()?)?),
            if value.contains('-') { 0.8 } else { 1.0 },
        ),
        Request::TypedCount => (json!(count(value.rsplit(':').next()?)?), 1.0),
        Request::Gres => {
            let gpus = value.split(',').find_map(|g| {
                let mut parts = g.split(':');
                (parts.next() == Some("gpu")).then_some(())?;
                count(parts.next_back()?)
            })?;
            (json!(gpus), 1.0)
        }
        Request::Memory => (json!(memory_mib(value)?), 1.0),
        // `--mem=0` asks for all the memory of the node: not a number of MiB.
        Request::MemoryNotZero => (json!(memory_mib(value).filter(|&m| m > 0)?), 1.0),
        Request::Time => (json!(slurm_time(value)?), 1.0),
    })
}

/// Memory like `64G`, `500M`, `64gb`, `1T`, or plain megabytes, in MiB.
pub fn memory_mib(text: &str) -> Option<u64> {
    let lower = text.trim().to_ascii_lowercase();
    let digits: String = lower.chars().take_while(|c| c.is_ascii_digit()).collect();
    let number: u64 = digits.parse().ok()?;
    let unit = lower[digits.len()..].trim_end_matches(['b', 'i']);
    let factor = match unit {
        "" | "m" => 1,
        "k" => return Some(number.div_ceil(1024)),
        "g" => 1024,
        "t" => 1024 * 1024,
        _ => return None,
    };
    Some(number * factor)
}

/// A Slurm time (`minutes`, `minutes:seconds`, `hours:minutes:seconds`, `days-hours`,
/// `days-hours:minutes`, `days-hours:minutes:seconds`; PBS `hh:mm:ss`) in seconds.
pub fn slurm_time(text: &str) -> Option<u64> {
    let (days, rest) = match text.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().ok()?, Some(r)),
        None => (0, None),
    };
    let parts: Vec<u64> = rest
        .unwrap_or(text)
        .split(':')
        .map(|p| p.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    let seconds = match (rest.is_some(), parts.as_slice()) {
        (false, [m]) => m * 60,
        (false, [m, s]) => m * 60 + s,
        (_, [h, m, s]) => h * 3600 + m * 60 + s,
        (true, [h]) => h * 3600,
        (true, [h, m]) => h * 3600 + m * 60,
        _ => return None,
    };
    Some(days * 86_400 + seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> JobFacts {
        let mut facts = JobFacts::default();
        read_headers("job.sbatch", text, &mut facts);
        facts
    }

    #[test]
    fn every_request_row_reads_its_example() {
        // (the row's name, a header that uses it, the field it sets, the value)
        let examples = [
            ("J", "#SBATCH -J sft-7b", Field::JobName, json!("sft-7b")),
            ("nodes", "#SBATCH --nodes=2-4", Field::Nodes, json!(2)),
            (
                "gres",
                "#SBATCH --gres=gpu:a100:4",
                Field::GpusPerNode,
                json!(4),
            ),
            (
                "gpus-per-node",
                "#SBATCH --gpus-per-node=h100:8",
                Field::GpusPerNode,
                json!(8),
            ),
            (
                "gpus",
                "#SBATCH -N 2\n#SBATCH --gpus=16",
                Field::GpusPerNode,
                json!(8),
            ),
            (
                "cpus-per-task",
                "#SBATCH --cpus-per-task=12",
                Field::CpusPerTask,
                json!(12),
            ),
            ("mem", "#SBATCH --mem=64G", Field::MemoryMib, json!(65536)),
            (
                "time",
                "#SBATCH --time=1-00:00:00",
                Field::RequestedTimeS,
                json!(86400),
            ),
            ("N", "#PBS -N bert", Field::JobName, json!("bert")),
            ("select", "#PBS -l select=2:ngpus=4", Field::Nodes, json!(2)),
            (
                "ngpus",
                "#PBS -l select=2:ngpus=4",
                Field::GpusPerNode,
                json!(4),
            ),
            (
                "ncpus",
                "#PBS -l select=1:ncpus=16",
                Field::CpusPerTask,
                json!(16),
            ),
            (
                "mem",
                "#PBS -l select=1:mem=2gb",
                Field::MemoryMib,
                json!(2048),
            ),
            (
                "walltime",
                "#PBS -l walltime=02:00:00",
                Field::RequestedTimeS,
                json!(7200),
            ),
        ];
        // The counts, which give a fact with another.
        let counts = [
            (
                "ntasks-per-node",
                "#SBATCH --ntasks-per-node=8",
                Field::TasksPerNode,
                json!(8),
            ),
            (
                "gpus-per-task",
                "#SBATCH --ntasks-per-node=4 --gpus-per-task=a100:2",
                Field::GpusPerNode,
                json!(8),
            ),
            (
                "mem-per-cpu",
                "#SBATCH -c 4\n#SBATCH --mem-per-cpu=1G",
                Field::MemoryMib,
                json!(4096),
            ),
        ];
        let examples: Vec<_> = examples.iter().chain(&counts).collect();
        for (_, text, field, value) in &examples {
            assert_eq!(read(text).json(*field).as_ref(), Some(value), "{text}");
        }
        let names = SLURM_OPTIONS
            .iter()
            .chain(PBS_OPTIONS)
            .chain(PBS_RESOURCES)
            .map(|r| r.0);
        for names in names.chain(SLURM_COUNTS.iter().map(|r| r.0)) {
            assert!(
                examples.iter().any(|(n, ..)| names.contains(n)),
                "no example for {names:?}"
            );
        }
        // `--mem=0` (the whole node) is no number; a PBS `mem=0` is.
        assert_eq!(read("#SBATCH --mem=0").value(Field::MemoryMib), None);
    }

    #[test]
    fn slurm_header() {
        let facts = read(
            "#!/bin/bash\n#SBATCH --job-name=llama-ft\n#SBATCH -N 2\n#SBATCH --gres=gpu:a100:4  # four per node\n#SBATCH --cpus-per-task=32\n#SBATCH --mem=256G\n#SBATCH --time=1-12:00:00\n",
        );
        assert_eq!(facts.value(Field::JobName).unwrap(), "llama-ft");
        assert_eq!(facts.value(Field::Nodes).unwrap(), 2);
        assert_eq!(facts.value(Field::GpusPerNode).unwrap(), 4);
        assert_eq!(
            facts.get(Field::GpusPerNode).unwrap().source,
            "job.sbatch:4"
        );
        assert_eq!(facts.value(Field::CpusPerTask).unwrap(), 32);
        assert_eq!(facts.value(Field::MemoryMib).unwrap(), 256 * 1024);
        assert_eq!(facts.value(Field::RequestedTimeS).unwrap(), 36 * 3600);
    }

    #[test]
    fn memory_per_cpu_times_the_cpus_of_a_node() {
        let facts = read("#SBATCH --cpus-per-task=16\n#SBATCH --mem-per-cpu=20G\n");
        assert_eq!(facts.value(Field::MemoryMib).unwrap(), 16 * 20 * 1024);
        let tasks = read("#SBATCH --ntasks-per-node=2\n#SBATCH -c 4\n#SBATCH --mem-per-cpu=1000\n");
        assert_eq!(tasks.value(Field::MemoryMib).unwrap(), 2 * 4 * 1000);
        let both = read("#SBATCH -c 4\n#SBATCH --mem-per-cpu=1G\n#SBATCH --mem=64G\n");
        assert_eq!(
            both.value(Field::MemoryMib).unwrap(),
            64 * 1024,
            "--mem wins"
        );
    }

    #[test]
    fn total_gpus_are_divided_by_the_nodes() {
        let facts = read("#SBATCH --nodes=2\n#SBATCH --gpus=16\n#SBATCH -t 90\n");
        assert_eq!(facts.value(Field::GpusPerNode).unwrap(), 8);
        assert_eq!(facts.get(Field::GpusPerNode).unwrap().confidence, 0.9);
        assert_eq!(facts.value(Field::RequestedTimeS).unwrap(), 5400);
    }

    #[test]
    fn pbs_header() {
        let facts = read("#PBS -N bert\n#PBS -l select=2:ncpus=16:ngpus=4:mem=128gb\n#PBS -l walltime=08:30:00\n");
        assert_eq!(facts.value(Field::JobName).unwrap(), "bert");
        assert_eq!(facts.value(Field::Nodes).unwrap(), 2);
        assert_eq!(facts.value(Field::GpusPerNode).unwrap(), 4);
        assert_eq!(facts.value(Field::MemoryMib).unwrap(), 128 * 1024);
        assert_eq!(facts.value(Field::RequestedTimeS).unwrap(), 8 * 3600 + 1800);
    }

    #[test]
    fn time_formats() {
        for (text, s) in [
            ("30", 1800),
            ("30:15", 1815),
            ("2:00:00", 7200),
            ("1-0", 86_400),
            ("1-2:30", 95_400),
            ("2-00:00:10", 172_810),
        ] {
            assert_eq!(slurm_time(text), Some(s), "{text}");
        }
        assert_eq!(slurm_time("soon"), None);
        assert_eq!(memory_mib("500M"), Some(500));
        assert_eq!(memory_mib("2T"), Some(2 * 1024 * 1024));
        assert_eq!(memory_mib("lots"), None);
    }
}
