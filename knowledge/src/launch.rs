//! Launch commands: `torchrun`, `python -m torch.distributed.run`, `deepspeed`,
//! `accelerate launch`, `python script.py` / `python -m module`, behind `srun`, environment
//! assignments or `exec`.
//!
//! The launchers are the rows of [`crate::vocabulary::LAUNCHERS`]; their own flags
//! ([`crate::vocabulary::LAUNCHER_FLAGS`]) give `gpus_per_node` and `nodes`; the flags after
//! the training script are its arguments, mapped to fields by their names
//! ([`crate::vocabulary::NAMES`]). A flag without a value (`--bf16`) is `true`. The words come
//! from the shell interpreter ([`crate::shell`]).

use serde_json::{json, Value};

use crate::facts::{Field, JobFacts, Source, Strength};
use crate::shell::program;
use crate::vocabulary::{
    Flags, Launcher, CONTAINER_RUNNERS, LAUNCHERS, LAUNCHER_FLAGS, NAMES, NOT_TRAINING,
    OTHER_MODELS, PLAIN_BATCHES, PRECISION_FLAGS, SRUN_SWITCHES, SWITCHES,
};

/// The field and confidence of a training-argument name (`-` read as `_` by the caller), from
/// [`NAMES`]; a name of the accumulation's pattern ([`is_accumulation`]) not in the table is
/// the gradient accumulation (confidence 0.9).
pub fn argument(name: &str) -> Option<(Field, f64)> {
    NAMES
        .iter()
        .find(|(arg, ..)| *arg == name)
        .map(|&(_, field, confidence, _)| (field, confidence))
        .or_else(|| is_accumulation(name).then_some((Field::GradientAccumulation, 0.9)))
}

/// Whether a setting's name (`-` read as `_`) names a count of gradient accumulation steps
/// by its words: one starts with `accum` (`accum`, `accumulate`, `accumulation`) and the
/// others are among `ACCUMULATION_WORDS` (MAE's `accum_iter`, `grad_accum_steps`,
/// OpenNMT's `accum_count`, `num_accumulation_steps`). `grad_accum_dtype` is not one.
pub fn is_accumulation(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let words: Vec<&str> = name.split('_').filter(|w| !w.is_empty()).collect();
    words.iter().any(|w| w.starts_with("accum"))
        && words
            .iter()
            .all(|w| w.starts_with("accum") || ACCUMULATION_WORDS.contains(w))
}

/// Words that may stand beside `accum...` in the name of an accumulation count.
const ACCUMULATION_WORDS: &[&str] = &[
    "grad",
    "grads",
    "gradient",
    "gradients",
    "iter",
    "iters",
    "iteration",
    "iterations",
    "step",
    "steps",
    "freq",
    "frequency",
    "count",
    "num",
    "n",
    "batches",
    "micro",
    "times",
];

/// The one rule by which flags, configs and Python sources turn a training setting (`name`,
/// with `-` read as `_`, and its value) into a fact: `(field, value, confidence)`, or `None`.
///
/// - A value that says "not set" gives nothing ([`crate::precedence::unset`]).
/// - A list of one value is that value (fairseq's `lr: [0.0002]`).
/// - `bf16` / `fp16` / `amp` set `precision` to their own name when on (true, `"true"`,
///   `"yes"`, 1), and nothing when off.
/// - Any other name of [`NAMES`] sets its field to the value, parsed as the field's kind
///   ([`Field::parse`]).
pub fn setting(name: &str, value: Value) -> Option<(Field, Value, f64)> {
    if crate::precedence::unset(&value) {
        return None;
    }
    // fairseq writes one-value lists (`lr: [0.0002]`, `update_freq: [1]`): the value.
    let value = match value {
        Value::Array(mut one) if one.len() == 1 && !one[0].is_array() && !one[0].is_object() => {
            one.remove(0)
        }
        other => other,
    };
    // Composer's `max_duration: 2ep` (epochs) or `500ba` (batches, i.e. steps); in tokens or
    // samples (`50000000000tok`) it is neither.
    if name == "max_duration" {
        return value
            .as_str()
            .and_then(duration)
            .map(|(field, n)| (field, json!(n), 1.0));
    }
    if let Some(&flag) = PRECISION_FLAGS.iter().find(|&&f| f == name) {
        let on = match &value {
            Value::Bool(b) => *b,
            Value::Number(n) => n.as_f64() == Some(1.0),
            Value::String(t) => matches!(t.to_ascii_lowercase().as_str(), "true" | "yes" | "1"),
            _ => false,
        };
        return on.then(|| (Field::Precision, json!(flag), 1.0));
    }
    let (field, confidence) = argument(name)?;
    // A learning rate of 0 trains nothing: a placeholder the code fills (DINOv2's `lr: 0.`
    // beside `base_lr`); no accumulation is written 0 as often as 1 (Swin's
    // `ACCUMULATION_STEPS = 0`); a device list (`--gpus 0,1`) or `auto` is not a count: each
    // is no value of its field's kind.
    Some((field, field.parse(value)?.to_json(), confidence))
}

/// `2ep` -> (`epochs`, 2), `500ba` -> (`max_steps`, 500).
fn duration(text: &str) -> Option<(Field, u64)> {
    let text = text.trim();
    if let Some(n) = text.strip_suffix("ep") {
        return n.parse().ok().map(|n| (Field::Epochs, n));
    }
    text.strip_suffix("ba")
        .and_then(|n| n.parse().ok())
        .map(|n| (Field::MaxSteps, n))
}

/// Reads the commands of `text` (one launch command or several lines of shell, as given
/// with `--cmd`) at `source` into `facts`, through the shell interpreter ([`crate::shell`]);
/// returns whether any was a launch command.
pub fn read_line(text: &str, source: &Source, strength: Strength, facts: &mut JobFacts) -> bool {
    let mut any = false;
    for command in crate::shell::commands(text, &mut |_| None) {
        any |= read_command(&command.words, source, strength, facts);
    }
    any
}

/// Reads one simple command (its words, as [`crate::shell`] gives them, at `source`, e.g.
/// `train.sh:12` or `command`) into `facts`; returns false when it is not a launch command.
pub fn read_command(
    words: &[String],
    source: &Source,
    strength: Strength,
    facts: &mut JobFacts,
) -> bool {
    let all = words;
    let (words, srun) = strip_prefixes(words);
    let Some((first, rest)) = words.split_first() else {
        return false;
    };
    let prefix = &all[..all.len() - words.len()];
    let base = program(first);
    // Read into a scratch first: a command that runs an evaluation script is not the
    // training run and must not overwrite it (`if [[ $1 == eval ]]; then python eval.py`);
    // it only fills what no other command gave (a job that only evaluates still has GPUs).
    let mut found = JobFacts::default();
    // `srun --nodes=32 --gres=gpu:8 python train.py`: srun's options request what `#SBATCH`
    // lines do, for the step they run (`Strength::Step`: not above the headers).
    let step = strength.max(Strength::Step);
    crate::scheduler::read_options(srun, source, step, &mut found);
    // `sbatch -N 2 --gres=gpu:4 job.sh` in a submit script: its options request the job, as
    // the job script's `#SBATCH` lines would (and override them).
    if base == "sbatch" {
        let options: Vec<String> = rest
            .iter()
            .take_while(|w| w.starts_with('-') || !w.ends_with(".sh"))
            .cloned()
            .collect();
        crate::scheduler::read_options(&options, source, strength, &mut found);
        facts.absorb(&found);
        return true;
    }
    let mut set = |field: Field, value: Value, confidence: f64| {
        found.set(field, value, source.clone(), confidence, strength)
    };
    let script_args = match launcher_of(words) {
        Some((launcher, at)) => launcher_flags(launcher.flags, &words[at..], &mut set),
        None if base.starts_with("python") => match skip_interpreter_options(rest) {
            [m, module, tail @ ..] if m == "-m" => {
                set(Field::Script, json!(module), 1.0);
                tail
            }
            [script, tail @ ..] if script.ends_with(".py") => {
                set(Field::Script, json!(script), 1.0);
                tail
            }
            _ => return false,
        },
        None => return false,
    };
    read_arguments(script_args, &mut set);
    // `CUDA_VISIBLE_DEVICES=0,1,2,3 deepspeed train.py`: the devices the launch may use, when
    // it says no GPU count of its own. Not above the allocation (`#SBATCH --gres`): strength
    // `step`.
    let counted = [
        Field::GpusPerNode,
        Field::GpusTotal,
        Field::GpusPerNodeUnknown,
        Field::GpusTotalUnknown,
    ]
    .iter()
    .any(|&f| found.get(f).is_some());
    if let Some(devices) = prefix
        .iter()
        .rev()
        .find_map(|w| visible_devices(w))
        .filter(|_| !counted)
    {
        found.set(
            Field::GpusPerNode,
            json!(devices),
            source.clone(),
            0.8,
            step,
        );
    }
    crate::precedence::add_command(facts, &found, strength);
    true
}

/// The devices an assignment `CUDA_VISIBLE_DEVICES=0,1,2,3` (indices or `GPU-`/`MIG-`
/// UUIDs) makes visible, counted; `None` for another word, an empty list, `-1` or a value
/// the files do not resolve.
fn visible_devices(word: &str) -> Option<u64> {
    let list = word.strip_prefix("CUDA_VISIBLE_DEVICES=")?;
    let list = list.trim_matches(|c| c == '"' || c == '\'');
    let devices: Vec<&str> = list.split(',').map(str::trim).collect();
    let device = |d: &&str| {
        d.chars().all(|c| c.is_ascii_digit()) && !d.is_empty()
            || d.starts_with("GPU-")
            || d.starts_with("MIG-")
    };
    (!list.is_empty() && devices.iter().all(device)).then_some(devices.len() as u64)
}

/// The row of [`LAUNCHERS`] that `words` start with, and how many words it takes (`python`
/// matches any `python3...`, after the interpreter's own options).
fn launcher_of(words: &[String]) -> Option<(&'static Launcher, usize)> {
    let (first, rest) = words.split_first()?;
    let first = program(first);
    LAUNCHERS.iter().find_map(|launcher| {
        let (head, tail) = launcher.words.split_first()?;
        let rest = if *head == "python" {
            if !first.starts_with("python") {
                return None;
            }
            skip_interpreter_options(rest)
        } else if first == *head {
            rest
        } else {
            return None;
        };
        let matches = tail.len() <= rest.len() && tail.iter().zip(rest).all(|(t, w)| t == w);
        matches.then(|| (launcher, words.len() - rest.len() + tail.len()))
    })
}

/// The words after `python` without the interpreter's own options (`-u`, `-O`, `-W ignore`,
/// `-X dev`), which come before the script or `-m`.
fn skip_interpreter_options(words: &[String]) -> &[String] {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        match w.as_str() {
            "-W" | "-X" => i += 2,
            "-u" | "-O" | "-OO" | "-B" | "-E" | "-s" | "-S" | "-I" | "-b" | "-bb" | "-q" => i += 1,
            _ => break,
        }
    }
    &words[i.min(words.len())..]
}

/// Whether `word` starts a launch command this module reads: a program of [`LAUNCHERS`],
/// `python...`, or a shell that runs one.
fn is_launcher(word: &str) -> bool {
    let base = program(word);
    LAUNCHERS.iter().any(|l| l.words[0] == base)
        || base.starts_with("python")
        || matches!(base, "bash" | "sh")
}

/// Whether `word` is a wrapper script that runs the command after it (`run_env.sh python
/// train.py`): a `.sh` file followed by a launcher.
fn is_wrapper(word: &str, next: Option<&String>) -> bool {
    word.ends_with(".sh") && next.is_some_and(|n| is_launcher(n))
}

/// Drops `srun ...`/`mpirun ...` launcher prefixes with their options, wrapper scripts and the
/// shell's words after them ([`crate::shell::is_prefix_word`]: `env`, `NAME=value`) before the
/// command; returns the command and `srun`'s options.
fn strip_prefixes(words: &[String]) -> (&[String], &[String]) {
    let mut srun: &[String] = &[];
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        // An unresolved variable in command position (`${AUTO_RESUME} srun ...`) is an optional
        // prefix the job's environment may set; the command follows it.
        let unresolved = w.starts_with('$') && !is_launcher(w) && i + 1 < words.len();
        // A wrapper script that runs its arguments (`scripts/run_with_environment.sh python
        // train.py ...`).
        let wrapper = is_wrapper(w, words.get(i + 1));
        if unresolved || wrapper || crate::shell::is_prefix_word(w) {
            i += 1;
        } else if let Some(at) = container_command(&words[i..]) {
            i += at;
        } else if w == "srun" || w == "mpirun" || w == "mpiexec" {
            i += 1;
            let start = i;
            // Their options: `--flag`, `--flag=value`, `-n 4`, and switches such as `-l`.
            // A long option without `=` takes the next word unless that word is the launch
            // (`--container-image IMG torchrun ...`, pyxis).
            // An unresolved variable among them (`srun $SRUN_ARGS -u bash -c ...`) holds more
            // options.
            let option_variable = |w: &str| w.starts_with('$') && !is_launcher(w);
            while i < words.len() && (words[i].starts_with('-') || option_variable(&words[i])) {
                let w = words[i].as_str();
                if option_variable(w) {
                    i += 1;
                    continue;
                }
                let next_is_value = words.get(i + 1).is_some_and(|n| {
                    !n.starts_with('-') && !is_launcher(n) && !is_wrapper(n, words.get(i + 2))
                });
                let takes_value = !w.contains('=')
                    && !SRUN_SWITCHES.contains(&w)
                    && (w.len() == 2 || next_is_value);
                i += 1 + usize::from(takes_value);
            }
            if w == "srun" {
                srun = &words[start..i.min(words.len())];
            }
        } else {
            break;
        }
    }
    (&words[i.min(words.len())..], srun)
}

/// The words a container runner takes before the command it runs (`apptainer run --nv --bind
/// DIR IMAGE python ...`: 5), from [`CONTAINER_RUNNERS`]; `None` when `words` do not start
/// with one.
fn container_command(words: &[String]) -> Option<usize> {
    let (program, subcommand) = (words.first()?, words.get(1)?);
    let runner = CONTAINER_RUNNERS
        .iter()
        .find(|r| r.0 == crate::shell::program(program) && r.1.contains(&subcommand.as_str()))?;
    let mut i = 2;
    while let Some(w) = words.get(i).filter(|w| w.starts_with('-')) {
        let takes_value = !w.contains('=') && !runner.2.contains(&w.as_str());
        i += 1 + usize::from(takes_value);
    }
    // The image, then the command.
    (i + 1 < words.len()).then_some(i + 1)
}

/// Reads the flags of `launcher` up to the training script; returns the script's arguments.
fn launcher_flags<'w>(
    launcher: Flags,
    words: &'w [String],
    set: &mut impl FnMut(Field, Value, f64),
) -> &'w [String] {
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "--module" || w == "-m" {
            if let Some(module) = words.get(i + 1).filter(|m| !m.contains('$')) {
                set(Field::Script, json!(module), 1.0);
            }
            return words.get(i + 2..).unwrap_or(&[]);
        }
        // A short flag with its value (Composer's `-n 8`).
        let short = w.len() == 2 && w.starts_with('-') && w != "-m";
        let long = w.strip_prefix("--").or_else(|| short.then(|| &w[1..]));
        let Some(name) = long else {
            // The training script (or `-m module`).
            if w == "-m" {
                if let Some(module) = words.get(i + 1).filter(|m| !m.contains('$')) {
                    set(Field::Script, json!(module), 1.0);
                }
                return words.get(i + 2..).unwrap_or(&[]);
            }
            if !w.contains('$') {
                set(Field::Script, json!(w), 1.0);
            }
            return &words[i + 1..];
        };
        let (name, value) = match name.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            // torchrun's `--tee 3` (a stream spec: digits, `:` and `,`) takes a value.
            None if name == "tee"
                && words.get(i + 1).is_some_and(|n| {
                    n.chars()
                        .all(|c| c.is_ascii_digit() || c == ':' || c == ',')
                }) =>
            {
                i += 1;
                (name, None)
            }
            None if SWITCHES.contains(&name.replace('-', "_").as_str()) => (name, None),
            None => {
                let next = words.get(i + 1).filter(|n| is_value(n)).cloned();
                i += usize::from(next.is_some());
                (name, next)
            }
        };
        if let Some(value) = value {
            launcher_flag(launcher, &name.replace('-', "_"), &value, set);
        }
        i += 1;
    }
    &[]
}

/// Whether a word after a flag is its value: not another flag, but a negative number is.
fn is_value(word: &str) -> bool {
    !word.starts_with('-') || word.parse::<f64>().is_ok()
}

/// One launcher flag: a field of [`LAUNCHER_FLAGS`], or DeepSpeed's hosts.
fn launcher_flag(
    launcher: Flags,
    name: &str,
    value: &str,
    set: &mut impl FnMut(Field, Value, f64),
) {
    // `deepspeed --include host1:0,1@host2:0,1`: the hosts and the GPUs used on each.
    // An empty device list (`localhost:` from an empty variable) names the host only.
    if launcher == Flags::Deepspeed && name == "include" {
        let hosts: Vec<Option<u64>> = value
            .split('@')
            .filter(|h| !h.is_empty())
            .map(|h| {
                let devices = h.split_once(':').map_or(0, |(_, d)| {
                    d.split(',').filter(|x| !x.is_empty()).count() as u64
                });
                Some(devices).filter(|&n| n > 0)
            })
            .collect();
        if let Some((nodes, gpus)) = per_host(&hosts) {
            set(Field::Nodes, json!(nodes), 1.0);
            if let Some(gpus) = gpus {
                set(Field::GpusPerNode, json!(gpus), 1.0);
            }
        }
        return;
    }
    // `deepspeed --hostfile FILE`: `extract` reads the file's `host slots=N` lines.
    if launcher == Flags::Deepspeed && name == "hostfile" {
        set(Field::Hostfile, json!(value), 1.0);
        return;
    }
    let Some(field) = LAUNCHER_FLAGS
        .iter()
        .find(|(l, flag, _)| *l == launcher && *flag == name)
        .map(|(_, _, field)| *field)
    else {
        return;
    };
    if let (Some(marker), true) = (field.unknown(), value.contains('$')) {
        // `--num_machines $NUM_NODES`: the value is the job's, but unknown here.
        set(marker, json!(format!("--{name} {value}")), 1.0);
        return;
    }
    // An elastic range (`--nnodes 1:4`) gives its minimum, with less confidence.
    let elastic = field.kind() == crate::facts::Kind::Count && value.contains(':');
    let value = if elastic {
        value.split(':').next().unwrap_or(value)
    } else {
        value
    };
    set(field, typed(value), if elastic { 0.8 } else { 1.0 });
}

/// Nodes and GPUs per node from the GPU count of each host (`--include host1:0,1@host2:0,1`, a
/// hostfile's `slots=N`; `None` where a host's count is not given): one node per host, and the
/// GPUs per node when every host has the same count. `None` without hosts.
pub fn per_host(counts: &[Option<u64>]) -> Option<(u64, Option<u64>)> {
    let first = *counts.first()?;
    let gpus = first.filter(|_| counts.iter().all(|c| *c == first));
    Some((counts.len() as u64, gpus))
}

/// Training-script arguments: `--name value`, `--name=value`, `--name v1 v2 ...` (a list),
/// `--flag`. A value that still holds a shell variable (`$OUT`, unresolved) says nothing and is
/// left out.
fn read_arguments(words: &[String], set: &mut impl FnMut(Field, Value, f64)) {
    // The script's own arguments passed on (`"$@"`, `${@:4}`, `$*`) are more arguments, not
    // the value of the flag before them.
    let words: Vec<String> = words
        .iter()
        .filter(|w| !matches!(w.as_str(), "$@" | "$*" | "${@}" | "${*}") && !w.starts_with("${@:"))
        .cloned()
        .collect();
    let words = words.as_slice();
    let mut settings = Vec::new();
    // Fields left to an unknown variable: ([`unknown`] fact, the words as written).
    let mut unknowns: Vec<(Field, Value)> = Vec::new();
    let names: Vec<String> = words
        .iter()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|n| n.split('=').next().unwrap_or(n).replace('-', "_"))
        .collect();
    let mut i = 0;
    while i < words.len() {
        let Some(name) = words[i].strip_prefix("--") else {
            // Hydra / torchtune overrides: `trainer.max_epochs=10`, `+a.b=1` (add), `++a.b=1`
            // (add or override); `~a.b` deletes. A list is written `[a,b]`.
            if let Some((name, value)) = words[i].split_once('=') {
                let name = name.trim_start_matches('+');
                let path = name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
                if path && !name.starts_with('-') && !value.is_empty() {
                    if value.contains('$') {
                        if let Some(marker) = dotted_field(name).and_then(Field::unknown) {
                            unknowns.push((marker, json!(words[i].clone())));
                        }
                    } else {
                        settings.push((name.to_string(), hydra_value(value)));
                    }
                }
            }
            i += 1;
            continue;
        };
        let (name, values) = match name.split_once('=') {
            Some((n, v)) => (n.to_string(), vec![v.to_string()]),
            None => {
                let values: Vec<String> = words[i + 1..]
                    .iter()
                    .take_while(|w| !w.starts_with("--") && is_value(w))
                    .cloned()
                    .collect();
                i += values.len();
                (name.to_string(), values)
            }
        };
        i += 1;
        let name = name.replace('-', "_");
        if values.iter().any(|v| v.contains('$')) {
            // A value the files leave to an unknown variable overrides any weaker one with
            // something unknown (an accumulation is unknown, not 1).
            if let Some(marker) = argument(&name).and_then(|(field, _)| field.unknown()) {
                let written = format!("--{name} {}", values.join(" "));
                unknowns.push((marker, json!(written)));
            }
            continue;
        }
        let value = match values.as_slice() {
            // A bare switch (`--bf16`) is on; any other bare flag says nothing.
            [] if PRECISION_FLAGS.contains(&name.as_str()) => json!(true),
            [] => continue,
            [one] => typed(one),
            many => Value::Array(many.iter().map(|v| typed(v)).collect()),
        };
        settings.push((name, value));
    }
    // A batch counted in tokens or frames (`++dataset_conf.batch_type=token
    // ++dataset_conf.batch_size=6000`, FunASR) is not a number of samples, as in a config.
    let not_samples: Vec<String> = settings
        .iter()
        .filter(|(name, value)| {
            let last = name.rsplit('.').next().unwrap_or(name);
            matches!(last, "batch_type" | "batch_size_type")
                && value.as_str().is_some_and(|t| !t.starts_with("sample"))
        })
        .map(|(name, _)| name.rsplit_once('.').map_or("", |(p, _)| p).to_string())
        .collect();
    settings.retain(|(name, _)| {
        let (section, last) = name.rsplit_once('.').unwrap_or(("", name));
        !(last.contains("batch_size") && not_samples.iter().any(|p| p == section))
    });
    // A count under a name that says accumulation and is not read as one
    // (`--grad_accumulation_interval 8`): the accumulation is not known, so no global batch is
    // derived as if it were 1.
    for (name, value) in &settings {
        let last = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
        let count = value.as_u64().is_some_and(|n| n > 1)
            || value
                .as_str()
                .and_then(|t| t.parse::<u64>().ok())
                .is_some_and(|n| n > 1);
        if last.contains("accum") && count && dotted_setting(name, value.clone()).is_none() {
            unknowns.push((
                Field::GradientAccumulationUnknown,
                json!(format!(
                    "--{name} {value} (a name that says accumulation, not understood)"
                )),
            ));
        }
    }
    let others: Vec<(Field, Value)> = settings
        .iter()
        .filter_map(|(name, value)| other_model_setting(name, value.clone()))
        .collect();
    let mut facts: Vec<_> = settings
        .into_iter()
        .filter_map(|(name, value)| Some((name.clone(), dotted_setting(&name, value)?, ())))
        .collect();
    settle(&mut facts, &names);
    // A job that trains a second model (an RL critic or reward model): a field the two models
    // give different values has no single value, and its batch counts prompts or rollouts,
    // not sequences per optimizer step (verl's `data.train_batch_size`).
    if !others.is_empty() {
        facts.retain(|(_, (field, value, _), ())| {
            *field != Field::GlobalBatchSize && others.iter().all(|(f, v)| f != field || v == value)
        });
    }
    for (_, (field, value, confidence), ()) in facts {
        set(field, value, confidence);
    }
    for (marker, written) in unknowns {
        set(marker, written, 1.0);
    }
}

/// Settings whose meaning depends on the others of the same command line or Python source
/// (`(name, fact, payload)`):
///
/// - `train_batch_size` or `batch_size` beside a batch named per device
///   (`--micro_train_batch_size`, `micro_batch_size`) is the global batch (OpenRLHF,
///   DeepSpeed's meaning; alpaca-lora's and lit-llama's `batch_size`); alone, it is the
///   script's batch per device (Hugging Face's example scripts, Lightning's; confidence 0.7).
///   Config files keep `train_batch_size` global (DeepSpeed, Composer, Levanter).
/// - `dataset_name` beside a `dataset_path` names its subset (`load_dataset(path, name)`).
/// - Beside an argument naming a text encoder (`names`: every argument name given, known or
///   not), a text length is the captions' limit: no sequence length.
pub fn settle<T>(settings: &mut Vec<(String, (Field, Value, f64), T)>, names: &[String]) {
    settle_batches(settings);
    // A text-conditioned generator's lengths (`--text_encoder_name google/mt5-xxl
    // --model_max_length 512`) bound its captions, not the training's sequences.
    if names.iter().any(|n| n.starts_with("text_encoder")) {
        settings.retain(|(_, (field, _, _), _)| *field != Field::SequenceLength);
    }
    // `load_dataset(path, name)`: beside a `dataset_path`, a `dataset_name` names a subset.
    if settings.iter().any(|(name, _, _)| name == "dataset_path") {
        settings.retain(|(name, _, _)| name != "dataset_name");
    }
}

/// The batch rule of [`settle`].
fn settle_batches<T>(settings: &mut [(String, (Field, Value, f64), T)]) {
    let per_device = settings.iter().any(|(name, (field, _, _), _)| {
        *field == Field::BatchSizePerDevice && !PLAIN_BATCHES.contains(&name.as_str())
    });
    for (name, fact, _) in settings.iter_mut() {
        if PLAIN_BATCHES.contains(&name.as_str()) {
            *fact = if per_device {
                (Field::GlobalBatchSize, fact.1.clone(), 0.8)
            } else {
                (Field::BatchSizePerDevice, fact.1.clone(), 0.7)
            };
        }
    }
}

/// [`setting`] for a name that may be dotted (`--train.batch_size`, `data.max_len=2048`): the
/// whole name with `.` read as `_` (`train_batch_size`), else its last part (`max_len`);
/// nothing under a section of [`NOT_TRAINING`].
fn dotted_setting(name: &str, value: Value) -> Option<(Field, Value, f64)> {
    setting(&dotted_name(name)?, value)
}

/// The setting of a second model of the job (`critic.optim.lr=1e-5`: a section of
/// [`OTHER_MODELS`]), read as [`dotted_setting`] reads the rest of its name.
fn other_model_setting(name: &str, value: Value) -> Option<(Field, Value)> {
    let (section, rest) = name.split_once('.')?;
    if !OTHER_MODELS.contains(&section) {
        return None;
    }
    dotted_setting(rest, value).map(|(field, value, _)| (field, value))
}

/// The field a setting name sets, dotted or not (as [`dotted_setting`] reads it).
fn dotted_field(name: &str) -> Option<Field> {
    argument(&dotted_name(name)?).map(|(field, _)| field)
}

/// The setting name a possibly dotted name stands for: undotted as it is; the whole name with
/// `.` read as `_` when that is a known name (`train_batch_size`), else its last part
/// (`max_len`); `None` under a section of [`NOT_TRAINING`]. `-` is read as `_`.
fn dotted_name(name: &str) -> Option<String> {
    let name = name.replace('-', "_");
    let Some((section, _)) = name.split_once('.') else {
        return Some(name);
    };
    if NOT_TRAINING.contains(&section) || OTHER_MODELS.contains(&section) {
        return None;
    }
    let joined = name.replace('.', "_");
    if argument(&joined).is_some() || PRECISION_FLAGS.contains(&joined.as_str()) {
        return Some(joined);
    }
    // The last two parts, when they are a known name (`actor_rollout_ref.model.path` is a
    // `model_path`, `data.train_files` names the training files).
    let parts: Vec<&str> = name.rsplit('.').take(2).collect();
    if let [last, before] = parts.as_slice() {
        let two = format!("{before}_{last}");
        if argument(&two).is_some() {
            return Some(two);
        }
    }
    Some(name.rsplit('.').next().unwrap_or(&name).to_string())
}

/// A Hydra override's value: `[a,b]` is a list, anything else [`typed`].
fn hydra_value(text: &str) -> Value {
    match text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        Some(items) => Value::Array(
            items
                .split(',')
                .map(str::trim)
                .filter(|i| !i.is_empty())
                .map(typed)
                .collect(),
        ),
        None => typed(text),
    }
}

/// A number when the text is one, else the text.
fn typed(text: &str) -> Value {
    if let Ok(n) = text.parse::<u64>() {
        return json!(n);
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => json!(x),
        _ => json!(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Option<JobFacts> {
        let mut facts = JobFacts::default();
        read_line(line, &Source::Command, Strength::Command, &mut facts).then_some(facts)
    }

    #[test]
    fn torchrun_with_trainer_arguments() {
        let facts = read(
            "srun --ntasks=2 torchrun --nnodes=2 --nproc_per_node 8 run_clm.py --model_name_or_path gpt2 \
             --per_device_train_batch_size 16 --gradient_accumulation_steps=4 --block_size 1024 \
             --num_train_epochs 3 --learning_rate 5e-5 --bf16 --dataset_name wikitext --output_dir /tmp/out",
        )
        .unwrap();
        let v = |f: &str| {
            facts
                .value(f.parse().unwrap())
                .cloned()
                .unwrap_or_else(|| panic!("{f} missing"))
        };
        assert_eq!(v("nodes"), 2);
        assert_eq!(v("gpus_per_node"), 8);
        assert_eq!(v("script"), "run_clm.py");
        assert_eq!(v("model"), "gpt2");
        assert_eq!(v("batch_size_per_device"), 16);
        assert_eq!(v("gradient_accumulation"), 4);
        assert_eq!(v("sequence_length"), 1024);
        assert_eq!(v("epochs"), 3);
        assert_eq!(v("learning_rate"), 5e-5);
        assert_eq!(v("precision"), "bf16");
        assert_eq!(v("dataset"), "wikitext");
    }

    #[test]
    fn deepspeed_accelerate_and_python_module() {
        let ds =
            read("deepspeed --num_gpus=4 --num_nodes 1 train.py --deepspeed ds.json --lr 1e-4")
                .unwrap();
        assert_eq!(ds.value(Field::GpusPerNode).unwrap(), 4);
        assert_eq!(ds.value(Field::LearningRate).unwrap(), 1e-4);
        let acc = read("accelerate launch --num_processes 16 --num_machines 2 --mixed_precision fp16 finetune.py --max_steps 5000").unwrap();
        assert_eq!(acc.value(Field::GpusTotal).unwrap(), 16);
        assert_eq!(acc.value(Field::Nodes).unwrap(), 2);
        assert_eq!(acc.value(Field::Precision).unwrap(), "fp16");
        assert_eq!(acc.value(Field::MaxSteps).unwrap(), 5000);
        let m = read("CUDA_VISIBLE_DEVICES=0,1 python -m torch.distributed.run --nproc-per-node=2 -m trainer.main --epochs 10").unwrap();
        assert_eq!(m.value(Field::GpusPerNode).unwrap(), 2);
        assert_eq!(m.value(Field::Script).unwrap(), "trainer.main");
        assert_eq!(m.value(Field::Epochs).unwrap(), 10);
    }

    #[test]
    fn one_rule_for_unset_values_and_precision_switches() {
        let facts = read(
            "python train.py --max_steps -1 --num_train_epochs 3 --bf16 false --fp16 True --lr auto",
        )
        .unwrap();
        assert_eq!(facts.value(Field::MaxSteps), None, "-1 means not set");
        assert_eq!(facts.json(Field::Epochs), Some(json!(3)));
        assert_eq!(facts.json(Field::Precision), Some(json!("fp16")));
        assert_eq!(facts.value(Field::LearningRate), None, "auto means not set");
        let bare = read("python train.py --bf16").unwrap();
        assert_eq!(bare.json(Field::Precision), Some(json!("bf16")));
        // The same rule for every reader.
        assert_eq!(
            setting("bf16", json!(true)).map(|s| s.1),
            Some(json!("bf16"))
        );
        assert_eq!(
            setting("fp16", json!("yes")).map(|s| s.1),
            Some(json!("fp16"))
        );
        assert_eq!(setting("fp16", json!(false)), None);
        assert_eq!(setting("max_steps", json!(-1)), None);
        assert_eq!(setting("max_steps", json!(null)), None);
        assert_eq!(
            setting("lr", json!(0.1)).map(|s| s.0),
            Some(Field::LearningRate)
        );
    }

    #[test]
    fn a_plain_batch_is_global_only_beside_a_micro_batch() {
        let alone = read("accelerate launch train.py --train_batch_size=4").unwrap();
        assert_eq!(alone.json(Field::BatchSizePerDevice), Some(json!(4)));
        assert_eq!(alone.value(Field::GlobalBatchSize), None);
        let openrlhf = read(
            "deepspeed --module openrlhf.cli.train_sft --train_batch_size 128 --micro_train_batch_size 2",
        )
        .unwrap();
        assert_eq!(openrlhf.json(Field::GlobalBatchSize), Some(json!(128)));
        assert_eq!(openrlhf.json(Field::BatchSizePerDevice), Some(json!(2)));
        let plain = read("python finetune.py --batch_size 128 --micro_batch_size 4").unwrap();
        assert_eq!(plain.json(Field::GlobalBatchSize), Some(json!(128)));
        assert_eq!(plain.json(Field::BatchSizePerDevice), Some(json!(4)));
        let alone = read("python train.py --batch_size 32").unwrap();
        assert_eq!(alone.json(Field::BatchSizePerDevice), Some(json!(32)));
    }

    #[test]
    fn a_text_encoders_length_is_not_the_sequence_length() {
        let t2v = read("accelerate launch train_t2v.py --text_encoder_name_1 google/mt5-xxl --model_max_length 512 --lr 1e-5").unwrap();
        assert_eq!(t2v.value(Field::SequenceLength), None);
        assert_eq!(t2v.json(Field::LearningRate), Some(json!(1e-5)));
        let lm = read("torchrun train.py --model_max_length 512").unwrap();
        assert_eq!(lm.json(Field::SequenceLength), Some(json!(512)));
    }

    #[test]
    fn deepspeed_include_and_oumi_distributed() {
        let ds = read("deepspeed --include localhost:0,1 finetune.py --lr 5e-5").unwrap();
        assert_eq!(ds.json(Field::Nodes), Some(json!(1)));
        assert_eq!(ds.json(Field::GpusPerNode), Some(json!(2)));
        let two = read("deepspeed --include=a:0,1,2,3@b:0,1,2,3 train.py").unwrap();
        assert_eq!(two.json(Field::Nodes), Some(json!(2)));
        assert_eq!(two.json(Field::GpusPerNode), Some(json!(4)));
        let uneven = read("deepspeed --include a:0,1@b:0 train.py").unwrap();
        assert_eq!(uneven.value(Field::GpusPerNode), None);
        let empty = read("deepspeed --include localhost: train.py").unwrap();
        assert_eq!(empty.json(Field::Nodes), Some(json!(1)));
        assert_eq!(empty.value(Field::GpusPerNode), None, "no devices named");
        let oumi = read("oumi distributed torchrun -m oumi train -c cfg.yaml --training.max_steps 100 --training.per_device_train_batch_size 32").unwrap();
        assert_eq!(oumi.json(Field::Script), Some(json!("oumi")));
        assert_eq!(oumi.json(Field::MaxSteps), Some(json!(100)));
        assert_eq!(oumi.json(Field::BatchSizePerDevice), Some(json!(32)));
    }

    #[test]
    fn composer_launcher_and_durations() {
        let facts = read("composer -n 8 train.py cfg.yaml max_duration=48000ba data_local=/data model.path=/ckpt.pt global_train_batch_size=256").unwrap();
        assert_eq!(facts.json(Field::GpusPerNode), Some(json!(8)));
        assert_eq!(facts.json(Field::Script), Some(json!("train.py")));
        assert_eq!(facts.json(Field::MaxSteps), Some(json!(48000)));
        assert_eq!(facts.json(Field::Dataset), Some(json!("/data")));
        assert_eq!(facts.json(Field::Model), Some(json!("/ckpt.pt")));
        assert_eq!(
            setting("max_duration", json!("2ep")).map(|s| s.0),
            Some(Field::Epochs)
        );
        assert_eq!(setting("max_duration", json!("5000000tok")), None);
    }

    #[test]
    fn sbatch_options_request_the_job() {
        let facts = read("sbatch -N 2 --ntasks-per-node 4 --mem=128G --cpus-per-task 10 --gres=gpu:a100:4 --time 0:59:59 --job-name sft job.sh --lr 1").unwrap();
        assert_eq!(facts.json(Field::Nodes), Some(json!(2)));
        assert_eq!(facts.json(Field::GpusPerNode), Some(json!(4)));
        assert_eq!(facts.json(Field::MemoryMib), Some(json!(128 * 1024)));
        assert_eq!(facts.json(Field::CpusPerTask), Some(json!(10)));
        assert_eq!(facts.json(Field::RequestedTimeS), Some(json!(3599)));
        assert_eq!(facts.json(Field::JobName), Some(json!("sft")));
        assert_eq!(
            facts.value(Field::LearningRate),
            None,
            "the job script's arguments"
        );
    }

    #[test]
    fn hydra_prefixes_lists_and_unknowns() {
        let facts = read("python launch.py loss=dpo train_datasets=[ultrafeedback,shp] ++model.name_or_path=org/m ++lr=${LR} ~model.x").unwrap();
        assert_eq!(
            facts.json(Field::Dataset),
            Some(json!(["ultrafeedback", "shp"]))
        );
        assert_eq!(facts.json(Field::Model), Some(json!("org/m")));
        assert_eq!(facts.value(Field::LearningRate), None);
        assert_eq!(
            facts.json(Field::LearningRateUnknown),
            Some(json!("++lr=${LR}"))
        );
        let plus = read("python run.py --train_dataset_name a+b+a").unwrap();
        assert_eq!(plus.json(Field::Dataset), Some(json!(["a", "b"])));
    }

    #[test]
    fn a_value_left_to_an_unknown_variable_is_unknown() {
        let facts = read("python train.py --gradient_accumulation_steps $GAS").unwrap();
        assert_eq!(facts.value(Field::GradientAccumulation), None);
        assert_eq!(
            facts.json(Field::GradientAccumulationUnknown),
            Some(json!("--gradient_accumulation_steps $GAS"))
        );
        let acc =
            read("accelerate launch --num_machines $NUM_NODES --config_file z3.yaml t.py").unwrap();
        assert_eq!(
            acc.json(Field::NodesUnknown),
            Some(json!("--num_machines $NUM_NODES"))
        );
        let eval =
            read("eval \"torchrun --nproc_per_node 2 -m pkg.train\" \"--lr 2e-5 --bf16 True\"")
                .unwrap();
        assert_eq!(eval.json(Field::GpusPerNode), Some(json!(2)));
        assert_eq!(eval.json(Field::Script), Some(json!("pkg.train")));
        assert_eq!(eval.json(Field::LearningRate), Some(json!(2e-5)));
    }

    #[test]
    fn srun_options_and_lightning_gpus() {
        let facts = read("srun -p part --gres=gpu:8 --nodes=32 --ntasks-per-node=8 --cpus-per-task=10 --kill-on-bad-exit=1 python -u train.py --lr 2e-5").unwrap();
        assert_eq!(facts.json(Field::Nodes), Some(json!(32)));
        assert_eq!(facts.json(Field::GpusPerNode), Some(json!(8)));
        assert_eq!(facts.json(Field::CpusPerTask), Some(json!(10)));
        assert_eq!(facts.json(Field::Script), Some(json!("train.py")));
        let total = read("srun -N 2 --gpus 16 torchrun train.py").unwrap();
        assert_eq!(total.json(Field::GpusPerNode), Some(json!(8)));
        let lightning = read("python finetune.py --gpus 1 --data_dir cnn_dm").unwrap();
        assert_eq!(lightning.json(Field::GpusPerNode), Some(json!(1)));
        assert_eq!(lightning.json(Field::Dataset), Some(json!("cnn_dm")));
        let list = read("python train.py --gpus 0,1").unwrap();
        assert_eq!(
            list.value(Field::GpusPerNode),
            None,
            "a device list is not a count"
        );
    }

    #[test]
    fn other_commands_are_not_launches() {
        assert!(read("echo hello").is_none());
        assert!(read("python").is_none());
        assert!(read("module load cuda/12.1").is_none());
        assert!(read("unterminated 'quote").is_none());
    }

    #[test]
    fn an_evaluation_command_does_not_override_the_training_one() {
        let mut facts = JobFacts::default();
        let strength = Strength::Script;
        assert!(read_line(
            "python train.py --batch_size 16",
            &Source::line("run.sh", 3),
            strength,
            &mut facts
        ));
        assert!(read_line(
            "torchrun --nproc_per_node 8 eval.py --batch_size 8",
            &Source::line("run.sh", 9),
            strength,
            &mut facts
        ));
        assert_eq!(facts.value(Field::Script).unwrap(), "train.py");
        assert_eq!(facts.value(Field::BatchSizePerDevice).unwrap(), 16);
        // What only the evaluation gave is kept: the job still runs on 8 GPUs.
        assert_eq!(facts.value(Field::GpusPerNode).unwrap(), 8);
        // A job that only evaluates keeps its facts.
        let only = read("python evaluate.py --model_name_or_path gpt2").unwrap();
        assert_eq!(only.value(Field::Model).unwrap(), "gpt2");
        for name in [
            "run_eval.py",
            "val.py",
            "tools/validate.py",
            "lm_eval",
            "test.py",
        ] {
            assert!(crate::precedence::is_evaluation_script(name), "{name}");
        }
        for name in [
            "train.py",
            "pretrain_gpt.py",
            "finetune/adapter.py",
            "retrieval_train.py",
        ] {
            assert!(!crate::precedence::is_evaluation_script(name), "{name}");
        }
        // The user's own command wins, whatever its script is called.
        let mut facts = JobFacts::default();
        read_line(
            "python train.py --batch_size 16",
            &Source::line("run.sh", 3),
            Strength::Script,
            &mut facts,
        );
        read_line(
            "python eval.py --batch_size 64",
            &Source::Command,
            Strength::Command,
            &mut facts,
        );
        assert_eq!(facts.value(Field::BatchSizePerDevice).unwrap(), 64);
    }

    #[test]
    fn wrappers_interpreter_options_and_other_launchers() {
        // srun with an options variable, a wrapper script, a python found through $HOME.
        let olmo = read(
            "srun $SRUN_ARGS --kill-on-bad-exit scripts/run_env.sh $HOME/envs/bin/python -u \
             scripts/train.py configs/llama7.yaml --device_train_microbatch_size=6",
        )
        .unwrap();
        assert_eq!(olmo.value(Field::Script).unwrap(), "scripts/train.py");
        assert_eq!(olmo.value(Field::BatchSizePerDevice).unwrap(), 6);
        let x = read("python -W ignore -X dev -m trainer.main --num_epoch 3").unwrap();
        assert_eq!(x.value(Field::Script).unwrap(), "trainer.main");
        assert_eq!(x.value(Field::Epochs).unwrap(), 3);
        // ColossalAI's launcher takes torchrun's flags; torchrun's `--tee 3` takes a value.
        let c =
            read("colossalai run --nproc_per_node 4 --master_port 29505 vit.py --lr 2e-4").unwrap();
        assert_eq!(c.value(Field::GpusPerNode).unwrap(), 4);
        assert_eq!(c.value(Field::Script).unwrap(), "vit.py");
        let t =
            read("torchrun --nproc_per_node 8 --tee 3 run_train.py --config-file a.yaml").unwrap();
        assert_eq!(t.value(Field::Script).unwrap(), "run_train.py");
    }
}
