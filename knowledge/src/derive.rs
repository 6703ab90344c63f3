//! Facts computed from other facts: every derived job fact has its one function here, and
//! here alone is decided its value, strength, confidence and source, whichever reader met
//! its inputs.
//!
//! | derived fact | from | function |
//! |---|---|---|
//! | `gpus_per_node` | a GPU total and the node count | `gpus_per_node_from_total` |
//! | `gpus_per_node` | tasks per node and GPUs per task | `gpus_per_node_from_tasks` |
//! | `gpus_per_node` | one GPU per Slurm task that runs the training script | `one_gpu_per_task` |
//! | `memory_mib` | memory per CPU, CPUs per task and tasks per node | `memory_from_per_cpu` |
//! | `global_batch_size` | per-device batch, GPUs per node, nodes, accumulation | `global_batch_size` |
//!
//! A derivation runs in one of two scopes:
//!
//! - **A scheduler request** ([`request`]): the `#SBATCH`/`#PBS` lines of a script, the
//!   options of one `srun` or `sbatch` command, submitit's parameters. What it derives from
//!   its own counts is what it asks for: the request's strength, confidence 0.9 for a
//!   division (1.0 for a product of two literal counts), the line of the count as source.
//! - **The whole job** ([`job`]), once every source is read and the precedence rules applied
//!   ([`crate::precedence::resolve`]): strength `derived`, the confidence of the weakest
//!   input (times 0.9 for a product, 0.6 for a guess), and a source that names the rule.
//!
//! A derived value only fills: it never replaces a value of its field that a reader gave.

use serde_json::json;

use crate::facts::{Field, JobFacts, Source, Strength};

/// A count a scheduler request gives that makes a fact only together with another: the
/// name of its [`crate::vocabulary::SLURM_COUNTS`] row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// `--gpus`: the GPUs of the whole request, over its nodes.
    GpusTotal,
    /// `--ntasks-per-node`.
    TasksPerNode,
    /// `--gpus-per-task`.
    GpusPerTask,
    /// `--mem-per-cpu`, in MiB.
    MemPerCpuMib,
}

/// One count with the line it was read on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    /// The number.
    pub n: u64,
    /// Where it was read.
    pub source: Source,
}

/// The counts of one scheduler request, each the last one given.
#[derive(Debug, Clone, Default)]
pub struct RequestCounts {
    gpus_total: Option<Count>,
    tasks_per_node: Option<Count>,
    gpus_per_task: Option<Count>,
    mem_per_cpu_mib: Option<Count>,
}

impl RequestCounts {
    /// Records count `which` (a later one replaces an earlier one, as a later option does).
    pub fn set(&mut self, which: Counted, n: u64, source: &Source) {
        let count = Some(Count {
            n,
            source: source.clone(),
        });
        match which {
            Counted::GpusTotal => self.gpus_total = count,
            Counted::TasksPerNode => self.tasks_per_node = count,
            Counted::GpusPerTask => self.gpus_per_task = count,
            Counted::MemPerCpuMib => self.mem_per_cpu_mib = count,
        }
    }
}

/// What a request's GPU total is divided by when the request gives no node count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodesUnsaid {
    /// One node: a job script's header lines (a job asks for one node unless it says more).
    One,
    /// Unknown: the options of a command (an `srun` step spans the allocation, whatever its
    /// size), so no GPUs per node follow from its total alone.
    Unknown,
}

/// How a derived value is recorded: its source, confidence and strength.
struct Derivation {
    source: Source,
    confidence: f64,
    strength: Strength,
}

impl Derivation {
    fn record(self, facts: &mut JobFacts, field: Field, value: u64) {
        if facts.get(field).is_none() {
            facts.set(
                field,
                json!(value),
                self.source,
                self.confidence,
                self.strength,
            );
        }
    }
}

/// The facts one scheduler request derives from its `counts` and the facts it read itself
/// (`facts`, at `strength`): GPUs per node from tasks and GPUs per task, else from the GPU
/// total and its node count; tasks per node, recorded as read when no GPU count goes with
/// them; memory from memory per CPU.
pub fn request(
    facts: &mut JobFacts,
    counts: &RequestCounts,
    strength: Strength,
    unsaid: NodesUnsaid,
) {
    match (&counts.tasks_per_node, &counts.gpus_per_task) {
        (Some(tasks), Some(each)) => gpus_per_node_from_tasks(facts, tasks, each, strength),
        (Some(tasks), None) => facts.set(
            Field::TasksPerNode,
            json!(tasks.n),
            tasks.source.clone(),
            1.0,
            strength,
        ),
        _ => {}
    }
    if let Some(total) = &counts.gpus_total {
        let nodes = count(facts, Field::Nodes).or(match unsaid {
            NodesUnsaid::One => Some(1),
            NodesUnsaid::Unknown => None,
        });
        if let Some(nodes) = nodes {
            let how = Derivation {
                source: total.source.clone(),
                confidence: 0.9,
                strength,
            };
            gpus_per_node_from_total(facts, total.n, nodes, how);
        }
    }
    if let Some(per_cpu) = &counts.mem_per_cpu_mib {
        let tasks = counts.tasks_per_node.as_ref().map_or(1, |t| t.n);
        memory_from_per_cpu(facts, per_cpu, tasks, strength);
    }
}

/// The facts that follow from the whole job's resolved facts: GPUs per node from a total
/// (a launcher's process count, a config's `num_processes`), one GPU per Slurm task, the
/// global batch size.
pub fn job(facts: &mut JobFacts) {
    if let Some(total) = count(facts, Field::GpusTotal) {
        let nodes = count(facts, Field::Nodes).unwrap_or(1);
        let how = Derivation {
            source: Source::derived("gpus_total / nodes"),
            confidence: weakest(facts, &[Field::GpusTotal, Field::Nodes]),
            strength: Strength::Derived,
        };
        gpus_per_node_from_total(facts, total, nodes, how);
    }
    one_gpu_per_task(facts);
    global_batch_size(facts);
}

/// GPUs per node from a GPU total over `nodes` nodes: the total divided by the nodes when it
/// divides evenly, else nothing (an uneven split says the total is not per-node GPUs times
/// nodes).
fn gpus_per_node_from_total(facts: &mut JobFacts, total: u64, nodes: u64, how: Derivation) {
    let nodes = nodes.max(1);
    if total.is_multiple_of(nodes) {
        how.record(facts, Field::GpusPerNode, total / nodes);
    }
}

/// GPUs per node as tasks per node times GPUs per task, both literal counts of one request.
fn gpus_per_node_from_tasks(facts: &mut JobFacts, tasks: &Count, each: &Count, strength: Strength) {
    let how = Derivation {
        source: tasks.source.clone(),
        confidence: 1.0,
        strength,
    };
    how.record(facts, Field::GpusPerNode, tasks.n * each.n);
}

/// Memory per node from `--mem-per-cpu` (without `--mem`): per CPU times the CPUs of a task
/// times the tasks of a node; nothing without a CPU count.
fn memory_from_per_cpu(facts: &mut JobFacts, per_cpu: &Count, tasks: u64, strength: Strength) {
    let Some(cpus) = count(facts, Field::CpusPerTask) else {
        return;
    };
    let how = Derivation {
        source: per_cpu.source.clone(),
        confidence: 0.9,
        strength,
    };
    how.record(facts, Field::MemoryMib, per_cpu.n * cpus * tasks);
}

/// Slurm tasks that run the training script itself, with no GPU count anywhere: one process
/// per GPU (`srun python train.py` with `--ntasks-per-node=8`), as the launchers that spawn a
/// process per GPU do. A guess: confidence 0.6 of the task count's.
fn one_gpu_per_task(facts: &mut JobFacts) {
    let gpus_unknown = [Field::GpusPerNodeUnknown, Field::GpusTotalUnknown]
        .iter()
        .any(|&m| facts.get(m).is_some());
    if facts.get(Field::Script).is_none() || gpus_unknown {
        return;
    }
    if let Some(tasks) = count(facts, Field::TasksPerNode) {
        let how = Derivation {
            source: Source::derived("one GPU per Slurm task (tasks_per_node)"),
            confidence: 0.6 * weakest(facts, &[Field::TasksPerNode]),
            strength: Strength::Derived,
        };
        how.record(facts, Field::GpusPerNode, tasks);
    }
}

/// The global batch size: per-device batch x GPUs per node x nodes x accumulation steps
/// (1 when unsaid). Only with every other factor known (a job script without a node count
/// may be submitted to several nodes, `sbatch --nodes=4 job.slurm`); not with tensor or
/// pipeline parallelism (fewer data-parallel ranks than GPUs), nor when a factor is given as
/// something the files do not resolve (`--gradient_accumulation_steps $GAS`).
fn global_batch_size(facts: &mut JobFacts) {
    const FACTORS: [Field; 4] = [
        Field::BatchSizePerDevice,
        Field::GpusPerNode,
        Field::Nodes,
        Field::GradientAccumulation,
    ];
    let model_parallel = count(facts, Field::ModelParallel).is_some_and(|n| n > 1);
    let factor_unknown = FACTORS
        .iter()
        .any(|&f| facts.get(f).is_none() && f.unknown().is_some_and(|m| facts.get(m).is_some()));
    if model_parallel || factor_unknown {
        return;
    }
    let (Some(batch), Some(gpus), Some(nodes)) = (
        count(facts, Field::BatchSizePerDevice),
        count(facts, Field::GpusPerNode),
        count(facts, Field::Nodes),
    ) else {
        return;
    };
    let accumulation = count(facts, Field::GradientAccumulation).unwrap_or(1);
    let how = Derivation {
        source: Source::derived(
            "batch_size_per_device x gpus_per_node x nodes x gradient_accumulation",
        ),
        confidence: 0.9 * weakest(facts, &FACTORS),
        strength: Strength::Derived,
    };
    how.record(
        facts,
        Field::GlobalBatchSize,
        batch * gpus * nodes * accumulation,
    );
}

/// The value of `field` as a whole number.
fn count(facts: &JobFacts, field: Field) -> Option<u64> {
    facts.value(field).and_then(|v| v.as_u64())
}

/// The lowest confidence among the facts of `fields` that are known (1.0 when none is).
fn weakest(facts: &JobFacts, fields: &[Field]) -> f64 {
    fields
        .iter()
        .filter_map(|f| facts.get(*f).map(|x| x.confidence))
        .fold(1.0, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_facts(counts: &[(Counted, u64)], read: &[(Field, u64)]) -> JobFacts {
        let mut facts = JobFacts::default();
        for &(field, n) in read {
            facts.set(
                field,
                json!(n),
                Source::line("job.sh", 1),
                1.0,
                Strength::Header,
            );
        }
        let mut c = RequestCounts::default();
        for &(which, n) in counts {
            c.set(which, n, &Source::line("job.sh", 2));
        }
        request(&mut facts, &c, Strength::Header, NodesUnsaid::One);
        facts
    }

    #[test]
    fn a_request_derives_from_its_own_counts_and_never_over_a_read_value() {
        let f = request_facts(&[(Counted::GpusTotal, 16)], &[(Field::Nodes, 2)]);
        let fact = f.get(Field::GpusPerNode).unwrap();
        assert_eq!((fact.value.to_json(), fact.confidence), (json!(8), 0.9));
        assert_eq!(
            (fact.source.to_string().as_str(), fact.strength),
            ("job.sh:2", Strength::Header)
        );
        // One node when the header says none; nothing from an uneven split.
        let f = request_facts(&[(Counted::GpusTotal, 4)], &[]);
        assert_eq!(f.json(Field::GpusPerNode), Some(json!(4)));
        let f = request_facts(&[(Counted::GpusTotal, 12)], &[(Field::Nodes, 5)]);
        assert_eq!(f.value(Field::GpusPerNode), None);
        // Tasks times GPUs per task before the total; a read value before both.
        let both = [(Counted::TasksPerNode, 4), (Counted::GpusPerTask, 2)];
        let f = request_facts(&[both[0], both[1], (Counted::GpusTotal, 2)], &[]);
        assert_eq!(f.json(Field::GpusPerNode), Some(json!(8)));
        assert_eq!(f.value(Field::TasksPerNode), None);
        let f = request_facts(&both, &[(Field::GpusPerNode, 3)]);
        assert_eq!(f.json(Field::GpusPerNode), Some(json!(3)));
        assert!(f.get(Field::GpusPerNode).unwrap().also.is_empty());
        // Tasks alone are a fact as read.
        let f = request_facts(&[(Counted::TasksPerNode, 8)], &[]);
        assert_eq!(f.json(Field::TasksPerNode), Some(json!(8)));
        assert_eq!(f.value(Field::GpusPerNode), None);
        // Memory per CPU with the CPUs and tasks of a node; `--mem` wins.
        let per_cpu = [(Counted::MemPerCpuMib, 1000), (Counted::TasksPerNode, 2)];
        let f = request_facts(&per_cpu, &[(Field::CpusPerTask, 4)]);
        assert_eq!(f.json(Field::MemoryMib), Some(json!(8000)));
        let f = request_facts(&per_cpu, &[(Field::CpusPerTask, 4), (Field::MemoryMib, 64)]);
        assert_eq!(f.json(Field::MemoryMib), Some(json!(64)));
        let f = request_facts(&per_cpu, &[]);
        assert_eq!(f.value(Field::MemoryMib), None);
    }

    #[test]
    fn a_step_without_nodes_derives_nothing_from_its_total() {
        let mut facts = JobFacts::default();
        let mut counts = RequestCounts::default();
        counts.set(Counted::GpusTotal, 16, &Source::Command);
        request(&mut facts, &counts, Strength::Step, NodesUnsaid::Unknown);
        assert!(facts.is_empty());
    }

    #[test]
    fn the_job_derives_at_strength_derived_from_its_resolved_facts() {
        let mut facts = JobFacts::default();
        let mut set = |f: Field, n: u64, c: f64| {
            facts.set(f, json!(n), Source::line("x", 1), c, Strength::Script);
        };
        set(Field::GpusTotal, 16, 1.0);
        set(Field::Nodes, 2, 0.8);
        set(Field::BatchSizePerDevice, 4, 1.0);
        set(Field::GradientAccumulation, 2, 1.0);
        job(&mut facts);
        let per_node = facts.get(Field::GpusPerNode).unwrap();
        assert_eq!(per_node.value, json!(8));
        assert_eq!(per_node.strength, Strength::Derived);
        assert_eq!(per_node.confidence, 0.8);
        let global = facts.get(Field::GlobalBatchSize).unwrap();
        assert_eq!(global.value, json!(4 * 8 * 2 * 2));
        assert!((global.confidence - 0.72).abs() < 1e-12);
        // Model parallelism: no global batch from the GPUs.
        facts.remove(Field::GlobalBatchSize);
        facts.set(
            Field::ModelParallel,
            json!(2),
            Source::line("x", 2),
            1.0,
            Strength::Script,
        );
        job(&mut facts);
        assert_eq!(facts.value(Field::GlobalBatchSize), None);
    }
}
