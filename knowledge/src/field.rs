//! The vocabulary of job facts: every field a reader may set ([`Field`]), what kind of value
//! it holds, in which unit ([`Kind`]), and the one parser per kind ([`Kind::parse`]) through
//! which every reader's value goes before it becomes a fact.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// What kind of value a field holds, with its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number >= 1 (nodes, GPUs, batch sizes, steps, epochs).
    Count,
    /// Whole seconds >= 0.
    Seconds,
    /// Whole MiB >= 1.
    Mib,
    /// A positive finite number (a learning rate, iterations per second, epochs: `0.5`).
    Number,
    /// A training precision, in its short spelling (`bf16`, `fp16`, `amp`, `fp32`, `"32"`).
    Precision,
    /// A name or path as written (model, script, job name).
    Text,
    /// Names as written: one, or a list of several, each once (data sets).
    Texts,
    /// What a reader noted as written (an unknown value's flag, a failure's evidence).
    Note,
}

impl Kind {
    /// The value as this kind holds it, or `None` when it is no value of the kind: numbers
    /// from numbers or numeric text, counts >= 1, seconds >= 0, rates > 0 and finite; a
    /// precision with its long spellings shortened (`bfloat16` -> `bf16`, `float16`/`half`
    /// -> `fp16`); data sets split at `,` or `+` (`identity,alpaca_en_demo`), each once;
    /// text not empty (a number or a switch where text is expected is its written text).
    pub fn parse(self, value: Value) -> Option<FactValue> {
        let number = || match &value {
            Value::Number(n) => n.as_f64(),
            Value::String(t) => t.trim().parse::<f64>().ok(),
            _ => None,
        };
        match self {
            Kind::Count | Kind::Mib => {
                let n = number().filter(|x| x.fract() == 0.0 && *x >= 1.0 && *x < 9.0e15)?;
                Some(FactValue::Whole(n as u64))
            }
            Kind::Seconds => {
                let n = number().filter(|x| x.fract() == 0.0 && *x >= 0.0 && *x < 9.0e15)?;
                Some(FactValue::Whole(n as u64))
            }
            Kind::Number => {
                let x = number().filter(|x| x.is_finite() && *x > 0.0)?;
                match value {
                    Value::Number(n) => Some(FactValue::Number(n)),
                    _ => serde_json::Number::from_f64(x).map(FactValue::Number),
                }
            }
            // A switch (`mixed_precision: true`) does not say which precision.
            Kind::Precision if value.is_boolean() => None,
            Kind::Precision => text(value).map(|t| FactValue::Text(precision(t))),
            Kind::Text | Kind::Note => text(value).map(FactValue::Text),
            Kind::Texts => datasets(value),
        }
    }
}

/// A value as text: text itself unless empty, a number or a switch as written, a list or a
/// map as its JSON; null is none.
fn text(value: Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(t) if t.trim().is_empty() => None,
        Value::String(t) => Some(t),
        other => Some(other.to_string()),
    }
}

/// A precision with the long spellings shortened: `bfloat16` -> `bf16`, `float16` and `half`
/// -> `fp16`.
fn precision(text: String) -> String {
    match text.to_ascii_lowercase().as_str() {
        "bfloat16" | "torch.bfloat16" => "bf16".into(),
        "float16" | "half" | "torch.float16" => "fp16".into(),
        _ => text,
    }
}

/// LLaMA-Factory's `dataset: identity,alpaca_en_demo`; distil-whisper's and parler-tts's
/// `a+b+c`; a list: each data set once, one alone as itself. A list that alternates weights
/// and names (Megatron's `--data-path 0.3 a 0.7 b`, NeMo's `data_prefix: [0.3, a, 0.7, b]`)
/// is a blend: its names are the data sets.
fn datasets(value: Value) -> Option<FactValue> {
    let items: Vec<String> = match value {
        Value::String(t) if t.contains([',', '+']) && !t.contains(char::is_whitespace) => t
            .split([',', '+'])
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect(),
        Value::Array(items) => unblended(items.into_iter().filter_map(text).collect()),
        other => return text(other).map(FactValue::Text),
    };
    let mut sets: Vec<String> = Vec::new();
    for item in items {
        if !sets.contains(&item) {
            sets.push(item);
        }
    }
    match sets.len() {
        0 => None,
        1 => sets.pop().map(FactValue::Text),
        _ => Some(FactValue::Texts(sets)),
    }
}

/// The names of a blend (`[weight, name, weight, name, ...]`, every weight a number and no
/// name one); other lists as they are.
fn unblended(items: Vec<String>) -> Vec<String> {
    let is_number = |t: &String| t.parse::<f64>().is_ok();
    let blend = items.len() >= 2
        && items.len().is_multiple_of(2)
        && items.iter().step_by(2).all(is_number)
        && !items.iter().skip(1).step_by(2).any(is_number);
    if blend {
        items.into_iter().skip(1).step_by(2).collect()
    } else {
        items
    }
}

/// A fact's value, as its field's [`Kind`] holds it; written as JSON (a number, a text, a
/// list of texts) and read back from any JSON but null (a switch or a map as its text, a
/// list's items as texts), so that facts written by an earlier version still read.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum FactValue {
    /// A whole number: a count, seconds, MiB.
    Whole(u64),
    /// A number as written (a learning rate, `0.5` epochs, iterations per second).
    Number(serde_json::Number),
    /// A text: a name, a path, a precision, a note.
    Text(String),
    /// Several names, each once (data sets).
    Texts(Vec<String>),
}

impl FactValue {
    /// The value as a whole number, when it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            FactValue::Whole(n) => Some(*n),
            FactValue::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    /// The value as a signed whole number, when it is one.
    pub fn as_i64(&self) -> Option<i64> {
        self.as_u64().and_then(|n| i64::try_from(n).ok())
    }

    /// The value as a number, when it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            FactValue::Whole(n) => Some(*n as f64),
            FactValue::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    /// The text, when the value is one text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            FactValue::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The value as JSON.
    pub fn to_json(&self) -> Value {
        match self {
            FactValue::Whole(n) => json!(n),
            FactValue::Number(n) => Value::Number(n.clone()),
            FactValue::Text(t) => json!(t),
            FactValue::Texts(ts) => json!(ts),
        }
    }
}

impl TryFrom<Value> for FactValue {
    type Error = &'static str;

    fn try_from(value: Value) -> Result<FactValue, &'static str> {
        Ok(match value {
            Value::Null => return Err("a fact's value is not null"),
            Value::Number(n) => match n.as_u64() {
                Some(whole) => FactValue::Whole(whole),
                None => FactValue::Number(n),
            },
            Value::String(t) => FactValue::Text(t),
            Value::Array(items) => FactValue::Texts(items.into_iter().filter_map(text).collect()),
            other => FactValue::Text(other.to_string()),
        })
    }
}

impl<'de> Deserialize<'de> for FactValue {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<FactValue, D::Error> {
        FactValue::try_from(Value::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

/// Numbers equal by value (`3` and `3.0`), texts and lists by their text.
impl PartialEq for FactValue {
    fn eq(&self, other: &FactValue) -> bool {
        match (self, other) {
            (FactValue::Text(a), FactValue::Text(b)) => a == b,
            (FactValue::Texts(a), FactValue::Texts(b)) => a == b,
            (a, b) => a.as_f64().is_some() && a.as_f64() == b.as_f64(),
        }
    }
}

/// A value equals the JSON it is written as.
impl PartialEq<Value> for FactValue {
    fn eq(&self, other: &Value) -> bool {
        FactValue::try_from(other.clone()).is_ok_and(|v| *self == v)
    }
}

macro_rules! equal_to {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for FactValue {
            fn eq(&self, other: &$t) -> bool {
                *self == json!(other)
            }
        }
        impl PartialEq<$t> for &FactValue {
            fn eq(&self, other: &$t) -> bool {
                **self == json!(other)
            }
        }
    )*};
}

equal_to!(i32, u64, f64, &str);

/// The value as JSON text (`8`, `"gpt2"`, `["a","b"]`).
impl fmt::Display for FactValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

macro_rules! fields {
    ($($(#[$doc:meta])* $variant:ident = $name:literal, $kind:ident;)*) => {
        /// A fact's field. Declared in name order, so facts list in name order.
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum Field {
            $($(#[$doc])* $variant,)*
        }

        impl Field {
            /// Every field, in name order.
            pub const ALL: &'static [Field] = &[$(Field::$variant,)*];

            /// Its name in the output (`gpus_per_node`).
            pub fn name(self) -> &'static str {
                match self {
                    $(Field::$variant => $name,)*
                }
            }

            /// The kind (and unit) of its value.
            pub fn kind(self) -> Kind {
                match self {
                    $(Field::$variant => Kind::$kind,)*
                }
            }
        }
    };
}

fields! {
    /// Sequences per device per step.
    BatchSizePerDevice = "batch_size_per_device", Count;
    /// A batch per device written as an unknown variable (`--micro_batch_size $MBS`).
    BatchSizePerDeviceUnknown = "batch_size_per_device_unknown", Note;
    /// CPUs per task (Slurm) or per node (PBS `ncpus`).
    CpusPerTask = "cpus_per_task", Count;
    /// The last step a log reports.
    CurrentStep = "current_step", Count;
    /// The data set(s) trained on, as written.
    Dataset = "dataset", Texts;
    /// The data set written as an unknown variable.
    DatasetUnknown = "dataset_unknown", Note;
    /// Time a log says the run has taken.
    ElapsedS = "elapsed_s", Seconds;
    /// Passes over the data.
    Epochs = "epochs", Number;
    /// Epochs written as an unknown variable.
    EpochsUnknown = "epochs_unknown", Note;
    /// Time a log says the run has left.
    EtaS = "eta_s", Seconds;
    /// Why the run died (`cuda_oom`, `nccl_timeout`, `time_limit`, ...), from the error itself.
    Failure = "failure", Text;
    /// The log line that shows the failure.
    FailureEvidence = "failure_evidence", Note;
    /// Sequences per optimizer step over all devices.
    GlobalBatchSize = "global_batch_size", Count;
    /// The global batch written as an unknown variable.
    GlobalBatchSizeUnknown = "global_batch_size_unknown", Note;
    /// GPUs on each node.
    GpusPerNode = "gpus_per_node", Count;
    /// GPUs per node written as an unknown variable.
    GpusPerNodeUnknown = "gpus_per_node_unknown", Note;
    /// GPUs over all nodes (`accelerate --num_processes`, `--gpus=16`): divided by the nodes.
    GpusTotal = "gpus_total", Count;
    /// The GPU total written as an unknown variable.
    GpusTotalUnknown = "gpus_total_unknown", Note;
    /// Micro-batches accumulated per optimizer step.
    GradientAccumulation = "gradient_accumulation", Count;
    /// The accumulation written as an unknown variable.
    GradientAccumulationUnknown = "gradient_accumulation_unknown", Note;
    /// A DeepSpeed hostfile the launch names (`--hostfile FILE`), read for nodes and slots.
    Hostfile = "hostfile", Text;
    /// Steps per second a log reports.
    IterationsPerS = "iterations_per_s", Number;
    /// The scheduler's job name.
    JobName = "job_name", Text;
    /// The (peak) learning rate.
    LearningRate = "learning_rate", Number;
    /// The learning rate written as an unknown variable.
    LearningRateUnknown = "learning_rate_unknown", Note;
    /// Optimizer steps to train for.
    MaxSteps = "max_steps", Count;
    /// The step count written as an unknown variable.
    MaxStepsUnknown = "max_steps_unknown", Note;
    /// Memory per node requested, MiB.
    MemoryMib = "memory_mib", Mib;
    /// The model trained (a hub id, a path, a framework's model name).
    Model = "model", Text;
    /// Tensor or pipeline parallel degree (> 1: fewer data-parallel ranks than GPUs).
    ModelParallel = "model_parallel", Count;
    /// The model's architecture family as a config names it (`llama`, `gpt2`).
    ModelType = "model_type", Text;
    /// The model written as an unknown variable.
    ModelUnknown = "model_unknown", Note;
    /// Nodes.
    Nodes = "nodes", Count;
    /// Nodes written as an unknown variable.
    NodesUnknown = "nodes_unknown", Note;
    /// The training precision.
    Precision = "precision", Precision;
    /// The precision written as an unknown variable.
    PrecisionUnknown = "precision_unknown", Note;
    /// The time limit requested from the scheduler.
    RequestedTimeS = "requested_time_s", Seconds;
    /// The training entry point as the launch names it (a file, a module, a recipe).
    Script = "script", Text;
    /// Tokens per training sequence.
    SequenceLength = "sequence_length", Count;
    /// The sequence length written as an unknown variable.
    SequenceLengthUnknown = "sequence_length_unknown", Note;
    /// Tasks per node (Slurm), used to derive GPUs per node.
    TasksPerNode = "tasks_per_node", Count;
    /// The step count a log reports as the total.
    TotalSteps = "total_steps", Count;
}

impl Field {
    /// The fact that says this field was given but could not be read (`--num_machines
    /// $NUM_NODES`): a weaker source's value for the field is then not the job's, and nothing
    /// is derived from it. `None` for fields no flag sets.
    pub fn unknown(self) -> Option<Field> {
        Some(match self {
            Field::Model => Field::ModelUnknown,
            Field::Dataset => Field::DatasetUnknown,
            Field::BatchSizePerDevice => Field::BatchSizePerDeviceUnknown,
            Field::GlobalBatchSize => Field::GlobalBatchSizeUnknown,
            Field::GradientAccumulation => Field::GradientAccumulationUnknown,
            Field::SequenceLength => Field::SequenceLengthUnknown,
            Field::Epochs => Field::EpochsUnknown,
            Field::MaxSteps => Field::MaxStepsUnknown,
            Field::LearningRate => Field::LearningRateUnknown,
            Field::Precision => Field::PrecisionUnknown,
            Field::Nodes => Field::NodesUnknown,
            Field::GpusPerNode => Field::GpusPerNodeUnknown,
            Field::GpusTotal => Field::GpusTotalUnknown,
            _ => return None,
        })
    }

    /// The fields that matter to a scheduler: what the LLM agent is asked about and what a
    /// snapshot job's `meta` carries.
    pub const SCHEDULING: [Field; 11] = [
        Field::Model,
        Field::Dataset,
        Field::GpusPerNode,
        Field::Nodes,
        Field::BatchSizePerDevice,
        Field::GlobalBatchSize,
        Field::SequenceLength,
        Field::Epochs,
        Field::MaxSteps,
        Field::LearningRate,
        Field::Precision,
    ];

    /// Parses `value` as this field's [`Kind`] ([`Kind::parse`]).
    pub fn parse(self, value: Value) -> Option<FactValue> {
        self.kind().parse(value)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no field of the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown field `{0}`")]
pub struct UnknownField(pub String);

impl FromStr for Field {
    type Err = UnknownField;

    fn from_str(s: &str) -> Result<Field, UnknownField> {
        Field::ALL
            .iter()
            .copied()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownField(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sorted_round_trip_and_match_serde() {
        let names: Vec<&str> = Field::ALL.iter().map(|f| f.name()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "declared in name order");
        for &field in Field::ALL {
            assert_eq!(field.name().parse::<Field>(), Ok(field));
            assert_eq!(serde_json::to_value(field).unwrap(), json!(field.name()));
        }
        assert!("gpus".parse::<Field>().is_err());
    }

    #[test]
    fn values_read_back_from_any_json_but_null() {
        for (json, value) in [
            (json!(8), FactValue::Whole(8)),
            (
                json!(3e-4),
                FactValue::Number(serde_json::Number::from_f64(3e-4).unwrap()),
            ),
            (json!("gpt2"), FactValue::Text("gpt2".into())),
            (
                json!([1, "a"]),
                FactValue::Texts(vec!["1".into(), "a".into()]),
            ),
            (json!(true), FactValue::Text("true".into())),
        ] {
            assert_eq!(
                serde_json::from_value::<FactValue>(json.clone()).unwrap(),
                value
            );
            assert_eq!(value, json, "equal to its JSON");
        }
        assert!(serde_json::from_value::<FactValue>(json!(null)).is_err());
        assert_eq!(
            FactValue::Whole(3),
            FactValue::Number(serde_json::Number::from_f64(3.0).unwrap())
        );
        assert_ne!(FactValue::Whole(3), FactValue::Text("3".into()));
        assert_eq!(
            serde_json::to_string(&FactValue::Texts(vec!["a".into()])).unwrap(),
            r#"["a"]"#
        );
    }

    #[test]
    fn one_parser_per_kind() {
        assert_eq!(
            Kind::Count.parse(json!("8")).map(|v| v.to_json()),
            Some(json!(8))
        );
        assert_eq!(Kind::Count.parse(json!(0)).map(|v| v.to_json()), None);
        assert_eq!(Kind::Count.parse(json!(2.5)).map(|v| v.to_json()), None);
        assert_eq!(Kind::Count.parse(json!("0,1")).map(|v| v.to_json()), None);
        assert_eq!(
            Kind::Seconds.parse(json!(0)).map(|v| v.to_json()),
            Some(json!(0))
        );
        assert_eq!(
            Kind::Number.parse(json!(2e-5)).map(|v| v.to_json()),
            Some(json!(2e-5))
        );
        assert_eq!(
            Kind::Number.parse(json!("3e-4")).map(|v| v.to_json()),
            Some(json!(3e-4))
        );
        assert_eq!(Kind::Number.parse(json!(0.0)).map(|v| v.to_json()), None);
        assert_eq!(
            Kind::Precision
                .parse(json!("bfloat16"))
                .map(|v| v.to_json()),
            Some(json!("bf16"))
        );
        assert_eq!(
            Kind::Precision.parse(json!(32)).map(|v| v.to_json()),
            Some(json!("32"))
        );
        assert_eq!(
            Kind::Precision.parse(json!(true)).map(|v| v.to_json()),
            None
        );
        assert_eq!(
            Kind::Texts.parse(json!("a,b+a")).map(|v| v.to_json()),
            Some(json!(["a", "b"]))
        );
        assert_eq!(Kind::Text.parse(json!(" ")).map(|v| v.to_json()), None);
        // A blend's weights are no data sets; one set alone is itself.
        let texts = |v: Value| Kind::Texts.parse(v).map(|v| v.to_json());
        assert_eq!(
            texts(json!([0.3, "a", "0.7", "b"])),
            Some(json!(["a", "b"]))
        );
        assert_eq!(
            texts(json!(["1", "./data/books"])),
            Some(json!("./data/books"))
        );
        assert_eq!(texts(json!(["a", "b", "a"])), Some(json!(["a", "b"])));
        assert_eq!(texts(json!(["a"])), Some(json!("a")));
        assert_eq!(
            texts(json!([1, 2])),
            Some(json!(["1", "2"])),
            "no names: no blend"
        );
    }
}
