//! Scheduler headers of job scripts: Slurm `#SBATCH` and PBS `#PBS` lines.
//!
//! Fields: `job_name`, `nodes`, `gpus_per_node` (from `--gres=gpu[:type]:N`,
//! `--gpus-per-node`, or `--gpus` / PBS `ngpus` divided by the nodes), `cpus_per_task`,
//! `memory_mib` (`--mem`; PBS `mem`), `requested_time_s` (`--time` / `walltime`, every Slurm
//! time format).

use serde_json::json;

use crate::facts::{Field, JobFacts, Strength};
use crate::precedence::gpus_per_node;
use crate::vocabulary::{Request, PBS_RESOURCES, SLURM_OPTIONS};

/// Reads the `#SBATCH` and `#PBS` lines of `text` (file `name`) into `facts`.
pub fn read_headers(name: &str, text: &str, facts: &mut JobFacts) {
    let mut total_gpus: Option<(u64, String)> = None;
    let mut tasks = Tasks::default();
    for (index, line) in text.lines().enumerate() {
        let source = format!("{name}:{}", index + 1);
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("#SBATCH") {
            let mut set = |field: Field, v: serde_json::Value, confidence: f64| {
                facts.set(field, v, source.clone(), confidence, Strength::Header)
            };
            for (key, value) in options(rest) {
                tasks.read(&key, value.as_deref(), &source);
                if let Some(gpus) = slurm_option(&key, value.as_deref(), &mut set) {
                    total_gpus = Some((gpus, source.clone()));
                }
            }
        } else if let Some(rest) = trimmed.strip_prefix("#PBS") {
            for (key, value) in options(rest) {
                pbs_option(&key, value.as_deref(), &source, facts);
            }
        }
    }
    tasks.record(&mut |field, v, confidence, source| {
        facts.set(field, v, source, confidence, Strength::Header)
    });
    // `--mem-per-cpu` without `--mem`: per node, times the CPUs of its tasks.
    if let (Some((per_cpu, source)), None) = (&tasks.mem_per_cpu, facts.get(Field::MemoryMib)) {
        let cpus = facts.value(Field::CpusPerTask).and_then(|v| v.as_u64());
        if let Some(cpus) = cpus {
            let per_node = per_cpu * cpus * tasks.tasks_per_node().unwrap_or(1);
            facts.set(
                Field::MemoryMib,
                json!(per_node),
                source.clone(),
                0.9,
                Strength::Header,
            );
        }
    }
    // A total GPU count gives GPUs per node only with the node count (default 1).
    if let Some((gpus, source)) = total_gpus {
        if facts.get(Field::GpusPerNode).is_none() {
            let nodes = facts.value(Field::Nodes).and_then(|v| v.as_u64());
            if let Some(per_node) = gpus_per_node(gpus, nodes) {
                facts.set(
                    Field::GpusPerNode,
                    json!(per_node),
                    source,
                    0.9,
                    Strength::Header,
                );
            }
        }
    }
}

/// Tasks per node (`--ntasks-per-node`) and GPUs per task (`--gpus-per-task`), each with its
/// source: their product is the GPUs per node; tasks alone are recorded as `tasks_per_node`
/// (one process per GPU when the tasks run the training script directly; see `extract`).
#[derive(Default)]
struct Tasks {
    per_node: Option<(u64, String)>,
    gpus_each: Option<(u64, String)>,
    /// `--mem-per-cpu`, in MiB.
    mem_per_cpu: Option<(u64, String)>,
}

impl Tasks {
    fn tasks_per_node(&self) -> Option<u64> {
        self.per_node.as_ref().map(|(n, _)| *n)
    }

    fn read(&mut self, key: &str, value: Option<&str>, source: &str) {
        if key == "mem-per-cpu" {
            let mib = value.and_then(memory_mib).filter(|&m| m > 0);
            self.mem_per_cpu = mib.map(|m| (m, source.to_string()));
            return;
        }
        let Some(n) = value.and_then(|v| v.parse::<u64>().ok()).filter(|&n| n > 0) else {
            return;
        };
        match key {
            "ntasks-per-node" => self.per_node = Some((n, source.to_string())),
            "gpus-per-task" => self.gpus_each = Some((n, source.to_string())),
            _ => {}
        }
    }

    fn record(&self, set: &mut impl FnMut(Field, serde_json::Value, f64, String)) {
        match (self.per_node.clone(), self.gpus_each.clone()) {
            (Some((tasks, source)), Some((gpus, _))) => {
                set(Field::GpusPerNode, json!(tasks * gpus), 1.0, source)
            }
            (Some((tasks, source)), None) => set(Field::TasksPerNode, json!(tasks), 1.0, source),
            _ => {}
        }
    }
}

/// The options of an `srun` command line (the words between `srun` and the command), which
/// request what `#SBATCH` lines do; `set` records a field. A total GPU count (`--gpus 16`)
/// gives GPUs per node with a node count among them.
pub fn read_options(words: &[String], set: &mut impl FnMut(Field, serde_json::Value, f64)) {
    let mut total_gpus = None;
    let mut nodes = None;
    let mut tasks = Tasks::default();
    for (key, value) in option_pairs(words) {
        tasks.read(&key, value.as_deref(), "");
        if matches!(key.as_str(), "N" | "nodes") {
            nodes = value.as_deref().and_then(|v| v.parse::<u64>().ok());
        }
        if let Some(gpus) = slurm_option(&key, value.as_deref(), set) {
            total_gpus = Some(gpus);
        }
    }
    // Here only with a node count among the options: a step's total alone may span nodes.
    if let (Some(gpus), Some(nodes)) = (total_gpus, nodes.filter(|&n| n > 0)) {
        if let Some(per_node) = gpus_per_node(gpus, Some(nodes)) {
            set(Field::GpusPerNode, json!(per_node), 0.9);
        }
    }
    tasks.record(&mut |field, v, confidence, _| set(field, v, confidence));
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

/// One Slurm option ([`SLURM_OPTIONS`]); returns a total GPU count (`--gpus`, `-G`) for later
/// division.
fn slurm_option(
    key: &str,
    value: Option<&str>,
    set: &mut impl FnMut(Field, serde_json::Value, f64),
) -> Option<u64> {
    // Template placeholders (`{ jobname }`, `<account>`) and shell variables say nothing.
    let value = value.filter(|v| !v.starts_with(['{', '<']) && !v.contains('$'))?;
    let &(_, field, how) = SLURM_OPTIONS
        .iter()
        .find(|(names, ..)| names.contains(&key))?;
    let (v, confidence) = request(how, value)?;
    if field == Field::GpusTotal {
        return v.as_u64();
    }
    set(field, v, confidence);
    None
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

/// One PBS option (`-N name`, `-l resource=value:...`, [`PBS_RESOURCES`]).
fn pbs_option(key: &str, value: Option<&str>, source: &str, facts: &mut JobFacts) -> Option<()> {
    let value = value?;
    let mut set = |field: Field, v: serde_json::Value| {
        facts.set(field, v, source.to_string(), 1.0, Strength::Header)
    };
    match key {
        "N" => set(Field::JobName, json!(value)),
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
                let Some((k, v)) = item.split_once('=') else {
                    // `select=2:ncpus=...` starts with the chunk count.
                    continue;
                };
                let Some(&(_, field, how)) = PBS_RESOURCES.iter().find(|(n, ..)| n.contains(&k))
                else {
                    continue;
                };
                set(field, request(how, v)?.0);
            }
        }
        _ => {}
    }
    Some(())
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
        for (_, text, field, value) in &examples {
            assert_eq!(read(text).value(*field), Some(value), "{text}");
        }
        for (names, ..) in SLURM_OPTIONS.iter().chain(PBS_RESOURCES) {
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
