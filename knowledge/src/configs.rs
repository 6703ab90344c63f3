//! Configuration files: JSON (DeepSpeed, Hugging Face `config.json`, training configs), YAML
//! (Hydra, recipe files of the Hugging Face alignment handbook, axolotl, ...) and TOML.
//!
//! The file is parsed, and every leaf whose key is a known training-argument name
//! ([`crate::vocabulary::NAMES`]) gives its field, wherever it sits in the tree. Precision comes
//! from `bf16: true` / `fp16: true` and DeepSpeed's `"bf16": {"enabled": true}`. DeepSpeed's
//! `"auto"` (filled in by the Hugging Face integration at run time) says nothing. A Hugging Face
//! model config (`model_type` and `architectures`) gives the architecture as `model_type`.
//! The line of a fact is the first line of the file that holds its key.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::facts::{Field, JobFacts, Source, Strength};
use crate::launch::setting;
use crate::scheduler::{read_cited_options, submitit_option};
use crate::vocabulary::{Flags, LAUNCHER_FLAGS, NOT_TRAINING, SECTION_KEYS};

/// Why a configuration file was not read.
pub type Unreadable = String;

/// The syntax of a configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `.json`
    Json,
    /// `.yaml`, `.yml`
    Yaml,
    /// `.toml`
    Toml,
}

impl Syntax {
    /// The syntax of a file with this extension, if it is a configuration file.
    pub fn of_extension(extension: &str) -> Option<Syntax> {
        match extension {
            "json" => Some(Syntax::Json),
            "yaml" | "yml" => Some(Syntax::Yaml),
            "toml" => Some(Syntax::Toml),
            _ => None,
        }
    }
}

/// Reads configuration file `name` (its text, in `syntax`) into `facts`.
pub fn read_config(
    name: &str,
    text: &str,
    syntax: Syntax,
    facts: &mut JobFacts,
) -> Result<(), Unreadable> {
    let mut duplicates = Vec::new();
    let tree = match syntax {
        Syntax::Yaml => parse_yaml(text, &mut duplicates)?,
        Syntax::Json => serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?,
        Syntax::Toml => {
            let table: toml::Table =
                toml::from_str(text).map_err(|e| format!("not valid TOML: {e}"))?;
            serde_json::to_value(table).map_err(|e| format!("TOML value outside JSON: {e}"))?
        }
    };
    read_tree(name, text, &tree, facts);
    note_duplicates(name, &duplicates, facts);
    Ok(())
}

/// A key given twice in one YAML mapping: PyYAML, OmegaConf and LightningCLI take the last
/// value, and so does the reader; the earlier value and the later line are noted here.
#[derive(Debug, Clone, PartialEq)]
struct Duplicate {
    /// The key.
    key: String,
    /// The value given first (the one not taken).
    first: Value,
    /// The value given last (the one taken).
    last: Value,
    /// The line of the key given last (the one taken).
    line: usize,
}

/// For each duplicated key that gives a field of this file: the fact cites the key taken (the
/// last), and notes the earlier value in `also`.
fn note_duplicates(name: &str, duplicates: &[Duplicate], facts: &mut JobFacts) {
    for d in duplicates {
        let key = d.key.replace('-', "_").to_ascii_lowercase();
        let (Some((field, first, _)), Some((_, last, _))) = (
            setting(&key, d.first.clone()),
            setting(&key, d.last.clone()),
        ) else {
            continue;
        };
        // The fact this file gave from the key taken (not one from another section).
        let Some(fact) = facts.get(field) else {
            continue;
        };
        let this_file = matches!(&fact.source, Source::Line { file, .. } if file == name);
        if !this_file || fact.value != last {
            continue;
        }
        facts.cite(field, Source::line(name, d.line));
        facts.note(
            field,
            format!(
                "{first} @ {name} (the key `{}` is given twice; the last is taken, as PyYAML does)",
                crate::confine::escape(&d.key)
            ),
        );
    }
}

/// Reads a parsed configuration `tree` of file `name` (its `text`, for the lines to cite)
/// into `facts`: the rules of [`read_config`], for any syntax that gives a tree (Python
/// configs of nested `dict(...)` give one too).
pub fn read_tree(name: &str, text: &str, tree: &Value, facts: &mut JobFacts) {
    let mut leaves = Vec::new();
    walk(tree, None, &mut leaves);
    for leaf in &mut leaves {
        leaf.2 = interpolate(tree, &leaf.2);
    }
    // Megatron-style configs (NeMo) give a global and a micro batch and compute the
    // accumulation from them; their `accumulate_grad_batches: 1` is a placeholder.
    let has = |k: &str| leaves.iter().any(|(_, key, _)| key == k);
    let megatron_batches = has("global_batch_size") && has("micro_batch_size");
    // NVIDIA's Transformer-XL splits its `batch_size` into `batch_chunk` chunks accumulated on
    // each GPU: beside `batch_chunk`, `batch_size` is the global batch.
    let chunked = has("batch_chunk");
    let mut ids = Vec::new();
    dataset_ids(tree, &mut ids);
    if !ids.is_empty() {
        let key = ids.first().map_or("", |(k, _)| k.as_str()).to_string();
        let mut unique: Vec<Value> = Vec::new();
        for (_, id) in ids {
            if !unique.contains(&id) {
                unique.push(id);
            }
        }
        let value = if unique.len() == 1 {
            unique.remove(0)
        } else {
            Value::Array(unique)
        };
        facts.set(
            Field::Dataset,
            value,
            Source::line(name, line_of(text, &key)),
            0.9,
            Strength::Config,
        );
    }
    // An accelerate config (`distributed_type: ...`) counts its machines and processes (all
    // machines together, divided by the machines in `derive`); its processes are GPUs only
    // when it runs on GPUs (not `MULTI_CPU`, `XLA` or `use_cpu: true`). `Some(on GPUs)` for
    // such a config.
    let accelerate = tree.get("distributed_type").map(|kind| {
        kind.as_str()
            .is_some_and(|t| matches!(t, "MULTI_GPU" | "DEEPSPEED" | "FSDP" | "MEGATRON_LM" | "NO"))
            && tree.get("use_cpu").and_then(Value::as_bool) != Some(true)
    });
    // Hydra's Slurm launcher (`hydra.launcher`) is one request, read after the other keys.
    let mut launcher = Vec::new();
    for (parent, key, value) in leaves {
        let source = || Source::line(name, line_of(text, &key));
        // yacs configs (detectron2) write keys in capitals: `SOLVER.BASE_LR`.
        let key = key.replace('-', "_").to_ascii_lowercase();
        let parent = parent.map(|p| p.to_ascii_lowercase());
        // A model's own config.json (`architectures`) describes the architecture: its
        // `max_sequence_length` and `torch_dtype` are the model's limits and weights, not the
        // training's. Only its `model_type` (above) is read.
        if tree.get("architectures").is_some() && key != "model_type" {
            continue;
        }
        if megatron_batches && key == "accumulate_grad_batches" {
            continue;
        }
        if key == "model_type" && value.is_string() {
            // Hugging Face `config.json` (top level, with `architectures`), torchtune's
            // `checkpointer.model_type`.
            let confidence = if parent.is_none() && tree.get("architectures").is_some() {
                1.0
            } else {
                0.8
            };
            facts.set(
                Field::ModelType,
                value,
                source(),
                confidence,
                Strength::Config,
            );
            continue;
        }
        // torchtune / Hydra components: `model: {_component_: torchtune.models.llama3_8b}`,
        // fairseq's `model: {_name: data2vec_text}`.
        if key == "_component_" || key == "_name" {
            if let Some(p @ ("model" | "dataset")) = parent.as_deref() {
                if let Some((field, value, confidence)) = setting(p, value) {
                    facts.set(field, value, source(), confidence, Strength::Config);
                }
            }
            continue;
        }
        if parent.as_deref() == Some("launcher") {
            if let Some(word) = submitit_option(&key, &value) {
                launcher.push((word, source()));
                continue;
            }
        }
        if let (None, Some(on_gpus)) = (parent.as_deref(), accelerate) {
            let field = accelerate_count(&key).filter(|&f| on_gpus || f != Field::GpusTotal);
            if let (Some(field), Some(n)) = (field, value.as_u64().filter(|&n| n > 0)) {
                facts.set(field, json!(n), source(), 1.0, Strength::Config);
                continue;
            }
        }
        // FSDP's `mixed_precision` (`PURE`, `DEFAULT`) is how it shards, not the training's
        // precision.
        if parent.as_deref() == Some("fsdp_config") && key == "mixed_precision" {
            continue;
        }
        let name = parent
            .as_deref()
            .and_then(|p| section_name(p, &key))
            .map_or(key, str::to_string);
        let accumulation = name.contains("accum") && value.as_u64().is_some_and(|n| n > 1);
        let name = if chunked && name == "batch_size" {
            "global_batch_size".to_string()
        } else {
            name
        };
        match setting(&name, value.clone()) {
            Some((field, value, confidence)) => {
                facts.set(field, value, source(), confidence, Strength::Config)
            }
            // A count under a name that says accumulation and is not read as one: the
            // accumulation is not known (no global batch derived as if it were 1).
            None if accumulation => facts.set(
                Field::GradientAccumulationUnknown,
                json!(format!(
                    "{name}: {value} (a name that says accumulation, not understood)"
                )),
                source(),
                1.0,
                Strength::Config,
            ),
            None => {}
        }
    }
    read_cited_options(&launcher, Strength::Config, facts);
}

/// The setting a key of section `parent` names by where it stands ([`SECTION_KEYS`]).
fn section_name(parent: &str, key: &str) -> Option<&'static str> {
    SECTION_KEYS
        .iter()
        .find(|(sections, keys, _)| sections.contains(&parent) && keys.contains(&key))
        .map(|&(.., name)| name)
}

/// The field of a count in an accelerate config (`num_machines`, `num_processes`): the
/// launcher's flag of the same name ([`LAUNCHER_FLAGS`]), when it counts nodes or GPUs.
fn accelerate_count(key: &str) -> Option<Field> {
    LAUNCHER_FLAGS
        .iter()
        .find(|&&(flags, flag, _)| flags == Flags::Accelerate && flag == key)
        .map(|&(.., field)| field)
        .filter(|f| matches!(f, Field::Nodes | Field::GpusTotal))
}

/// A value `${a.b.c}` (OmegaConf / Hydra interpolation, as NeMo and llm-foundry configs write
/// it) replaced by the value at that absolute path of the same file, when it is a scalar there;
/// other values as they are. Chains are followed a few levels.
fn interpolate(tree: &Value, value: &Value) -> Value {
    let mut current = value.clone();
    for _ in 0..4 {
        let Some(path) = current
            .as_str()
            .and_then(|t| t.trim().strip_prefix("${"))
            .and_then(|t| t.strip_suffix('}'))
            .filter(|p| !p.contains(['$', '{', ':']))
        else {
            break;
        };
        let mut node = tree;
        for part in path.split('.') {
            match node.get(part) {
                Some(next) => node = next,
                None => return current,
            }
        }
        if node.is_object() || node.is_array() {
            return current;
        }
        current = node.clone();
    }
    current
}

/// Every (parent key, key, value) leaf of a tree; arrays of scalars are leaves. Sections of
/// [`NOT_TRAINING`] (`eval:`, `validation:`) are left out: their steps and batches are not the
/// training run's.
fn walk(node: &Value, key: Option<&str>, out: &mut Vec<(Option<String>, String, Value)>) {
    let Value::Object(map) = node else { return };
    // A length beside beam search or a minimum length bounds generated text (LAVIS's
    // `max_len: 30, min_len: 8, num_beams: 5`), not the training's sequences.
    let generation = ["num_beams", "min_len", "min_length", "min_new_tokens"]
        .iter()
        .any(|k| map.contains_key(*k));
    // A batch counted in frames or tokens (F5-TTS's `batch_size_type: frame`) is not a number
    // of samples.
    let not_samples = ["batch_size_type", "batch_type"].iter().any(|k| {
        map.get(*k)
            .and_then(Value::as_str)
            .is_some_and(|t| !t.starts_with("sample"))
    });
    for (k, v) in map {
        if generation && GENERATION_LENGTHS.contains(&k.as_str()) {
            continue;
        }
        if not_samples && k.contains("batch_size") {
            continue;
        }
        match v {
            Value::Object(_) if not_training(k) => {}
            Value::Object(_) => walk(v, Some(k), out),
            Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {}
            _ => out.push((key.map(str::to_string), k.clone(), v.clone())),
        }
    }
}

/// Lengths that bound generated text when they sit beside generation settings.
const GENERATION_LENGTHS: &[&str] = &["max_len", "max_length", "max_new_tokens"];

/// Whether a section is not the training run's: a name of [`NOT_TRAINING`], whole or as its
/// first word (mmengine's `val_dataloader`, `test_cfg`).
fn not_training(section: &str) -> bool {
    NOT_TRAINING.contains(&section)
        || section
            .split_once('_')
            .is_some_and(|(first, _)| NOT_TRAINING.contains(&first))
}

/// Dataset mixtures: the `id` (or `path`) of each entry of a list of objects under a key that
/// names datasets (`datasets:`, `dataset_mixture:`), with that key.
fn dataset_ids(node: &Value, out: &mut Vec<(String, Value)>) {
    let Value::Object(map) = node else { return };
    for (k, v) in map {
        match v {
            Value::Array(items) if k.contains("dataset") => {
                for item in items {
                    if let Some(id) = item.get("id").or_else(|| item.get("path")) {
                        out.push((k.clone(), id.clone()));
                    }
                }
            }
            // The alignment handbook's `dataset_mixer: {org/name: 1.0}`, lingua's `sources:
            // {dclm_baseline_1.0: 100.0}`: data sets with their shares.
            Value::Object(mix)
                if (k.contains("dataset") || k == "sources")
                    && !mix.is_empty()
                    && mix.values().all(Value::is_number) =>
            {
                for name in mix.keys() {
                    out.push((k.clone(), json!(name)));
                }
            }
            // LAVIS: `datasets: {coco_caption: {vis_processor: ...}}`, one section per data set.
            Value::Object(sets)
                if k == "datasets" && !sets.is_empty() && sets.values().all(Value::is_object) =>
            {
                for name in sets.keys() {
                    out.push((k.clone(), json!(name)));
                }
            }
            Value::Object(_) => dataset_ids(v, out),
            _ => {}
        }
    }
}

/// The 1-based number of the first line that starts with `key` as a key (`key:`, `"key"` or
/// `key =`), else of the first that holds it as a keyword inside a line (a Python config's
/// `dict(type='AdamW', lr=0.1)`, a yacs default's `_C.TRAIN.EPOCHS = 300`), or 1.
fn line_of(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    let plain = format!("{key}:");
    let starts = |l: &str| {
        let t = l.trim_start();
        t.starts_with(&quoted)
            || t.starts_with(&plain)
            || t.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with('='))
    };
    let inside = |l: &str| {
        l.match_indices(key).any(|(at, _)| {
            let before = l[..at].chars().next_back();
            let after = l[at + key.len()..].trim_start();
            before.is_some_and(|c| matches!(c, '(' | ',' | ' ' | '{' | '.'))
                && after.starts_with('=')
                && !after.starts_with("==")
        })
    };
    text.lines()
        .position(starts)
        .or_else(|| text.lines().position(inside))
        .map_or(1, |i| i + 1)
}

/// Most nodes a YAML file's aliases may add once expanded: a few hundred bytes of nested
/// aliases ("billion laughs") otherwise expand to gigabytes. Nodes written out are not
/// counted (a file is at most 1 MiB).
const MAX_ALIAS_NODES: u64 = 100_000;

/// A YAML document as a JSON tree (the first document of the file); the keys given twice in
/// a mapping into `duplicates` (the last value is taken). A file whose aliases would add more
/// than [`MAX_ALIAS_NODES`] nodes is refused before anything is expanded.
fn parse_yaml(text: &str, duplicates: &mut Vec<Duplicate>) -> Result<Value, Unreadable> {
    let invalid = |e: yaml_rust2::ScanError| format!("not valid YAML: {e}");
    let mut count = Expansion::default();
    yaml_rust2::parser::Parser::new_from_str(text)
        .load(&mut count, true)
        .map_err(invalid)?;
    if count.aliased > MAX_ALIAS_NODES {
        return Err(format!(
            "YAML whose aliases would add {} nodes once expanded, over the limit of \
             {MAX_ALIAS_NODES} (refused unexpanded)",
            count.aliased
        ));
    }
    let mut loader = Loader::default();
    yaml_rust2::parser::Parser::new_from_str(text)
        .load(&mut loader, true)
        .map_err(invalid)?;
    *duplicates = loader.duplicates;
    Ok(loader.docs.first().map_or(Value::Null, yaml_to_json))
}

/// The nodes that a YAML stream's aliases add once expanded, counted from the parser's events
/// without expanding anything (an alias adds its anchor's count); saturating.
#[derive(Default)]
struct Expansion {
    /// Expanded size of each anchor.
    sizes: HashMap<usize, u64>,
    /// Open sequences and mappings: (anchor, nodes so far).
    open: Vec<(usize, u64)>,
    /// Nodes the aliases add.
    aliased: u64,
}

impl Expansion {
    fn add(&mut self, anchor: usize, nodes: u64) {
        if anchor > 0 {
            self.sizes.insert(anchor, nodes);
        }
        if let Some((_, n)) = self.open.last_mut() {
            *n = n.saturating_add(nodes);
        }
    }
}

impl yaml_rust2::parser::EventReceiver for Expansion {
    fn on_event(&mut self, event: yaml_rust2::parser::Event) {
        use yaml_rust2::parser::Event;
        match event {
            Event::Scalar(_, _, anchor, _) => self.add(anchor, 1),
            Event::Alias(id) => {
                let nodes = self.sizes.get(&id).copied().unwrap_or(1);
                self.aliased = self.aliased.saturating_add(nodes);
                self.add(0, nodes);
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                self.open.push((anchor, 1));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, nodes)) = self.open.pop() {
                    self.add(anchor, nodes);
                }
            }
            _ => {}
        }
    }
}

/// Builds the documents of a YAML stream as `yaml_rust2`'s loader does, except that a key
/// given twice in one mapping takes its last value (as PyYAML does) and is recorded, where
/// `yaml_rust2` refuses the whole file.
#[derive(Default)]
struct Loader {
    docs: Vec<yaml_rust2::Yaml>,
    /// Open nodes: (node, anchor).
    stack: Vec<(yaml_rust2::Yaml, usize)>,
    /// For each open mapping: the key waiting for its value, with its line.
    keys: Vec<Option<(yaml_rust2::Yaml, usize)>>,
    anchors: HashMap<usize, yaml_rust2::Yaml>,
    duplicates: Vec<Duplicate>,
}

impl Loader {
    fn insert(&mut self, node: yaml_rust2::Yaml, anchor: usize, line: usize) {
        use yaml_rust2::Yaml;
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let Some((parent, _)) = self.stack.last_mut() else {
            self.docs.push(node);
            return;
        };
        match parent {
            Yaml::Array(items) => items.push(node),
            Yaml::Hash(map) => match self.keys.last_mut() {
                Some(slot @ None) => *slot = Some((node, line)),
                Some(slot) => {
                    if let Some((key, key_line)) = slot.take() {
                        let name = key.as_str().map(str::to_string);
                        let last = map.contains_key(&key).then(|| yaml_to_json(&node));
                        if let (Some(old), Some(name), Some(last)) =
                            (map.insert(key, node), name, last)
                        {
                            self.duplicates.push(Duplicate {
                                key: name,
                                first: yaml_to_json(&old),
                                last,
                                line: key_line,
                            });
                        }
                    }
                }
                None => {}
            },
            _ => {}
        }
    }
}

impl yaml_rust2::parser::MarkedEventReceiver for Loader {
    fn on_event(&mut self, event: yaml_rust2::parser::Event, mark: yaml_rust2::scanner::Marker) {
        use yaml_rust2::parser::Event;
        use yaml_rust2::Yaml;
        let line = mark.line();
        match event {
            Event::SequenceStart(anchor, _) => self.stack.push((Yaml::Array(Vec::new()), anchor)),
            Event::MappingStart(anchor, _) => {
                self.stack
                    .push((Yaml::Hash(yaml_rust2::yaml::Hash::new()), anchor));
                self.keys.push(None);
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if matches!(event, Event::MappingEnd) {
                    self.keys.pop();
                }
                if let Some((node, anchor)) = self.stack.pop() {
                    self.insert(node, anchor, line);
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let node = scalar(text, style, tag);
                self.insert(node, anchor, line);
            }
            Event::Alias(id) => {
                let node = self.anchors.get(&id).cloned().unwrap_or(Yaml::BadValue);
                self.insert(node, 0, line);
            }
            Event::DocumentEnd if self.stack.is_empty() && self.docs.is_empty() => {
                self.docs.push(Yaml::BadValue);
            }
            _ => {}
        }
    }
}

/// A scalar as `yaml_rust2`'s loader reads it: quoted text is text; a plain scalar with a core
/// tag (`!!int`, `!!float`, `!!bool`, `!!null`, `!!str`) is of that type; other plain
/// scalars are typed by their look.
fn scalar(
    text: String,
    style: yaml_rust2::scanner::TScalarStyle,
    tag: Option<yaml_rust2::parser::Tag>,
) -> yaml_rust2::Yaml {
    use yaml_rust2::Yaml;
    if style != yaml_rust2::scanner::TScalarStyle::Plain {
        return Yaml::String(text);
    }
    match tag {
        Some(tag) if tag.handle == "tag:yaml.org,2002:" => match tag.suffix.as_str() {
            "bool" | "int" | "float" | "null" => match Yaml::from_str(&text) {
                typed @ (Yaml::Boolean(_) | Yaml::Integer(_) | Yaml::Real(_) | Yaml::Null) => typed,
                _ => Yaml::BadValue,
            },
            _ => Yaml::String(text),
        },
        Some(_) => Yaml::String(text),
        None => Yaml::from_str(&text),
    }
}

/// The quoted strings of a text `("a", 'b')` or `['a']`, when it is only that.
fn python_tuple(text: &str) -> Option<Vec<Value>> {
    let t = text.trim();
    let inner = t
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| t.strip_prefix('[').and_then(|r| r.strip_suffix(']')))?;
    let items: Option<Vec<Value>> = inner
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let unquoted = item
                .strip_prefix('\'')
                .and_then(|r| r.strip_suffix('\''))
                .or_else(|| item.strip_prefix('"').and_then(|r| r.strip_suffix('"')))?;
            (!unquoted.contains(['\'', '"'])).then(|| json!(unquoted))
        })
        .collect();
    items.filter(|i| !i.is_empty())
}

fn yaml_to_json(node: &yaml_rust2::Yaml) -> Value {
    use yaml_rust2::Yaml;
    match node {
        Yaml::Integer(i) => json!(i),
        Yaml::Real(r) => r.parse::<f64>().map_or_else(|_| json!(r), |x| json!(x)),
        Yaml::String(s) => number_or_text(s),
        Yaml::Boolean(b) => json!(b),
        Yaml::Array(items) => Value::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Hash(map) => {
            let mut out = serde_json::Map::new();
            let mut merged = Vec::new();
            for (k, v) in map {
                match k.as_str() {
                    Some(MERGE_KEY) => merged.push(v),
                    Some(k) => {
                        out.insert(k.to_string(), yaml_to_json(v));
                    }
                    None => {}
                }
            }
            // PyYAML's merge keys (`<<: *base`, `<<: [*a, *b]`): the keys of the mappings
            // merged that the mapping does not give itself, the first mapping of a list first.
            for value in merged {
                let sources = match value {
                    Yaml::Array(items) => items.iter().collect(),
                    one => vec![one],
                };
                for source in sources {
                    if let Value::Object(keys) = yaml_to_json(source) {
                        for (k, v) in keys {
                            out.entry(k).or_insert(v);
                        }
                    }
                }
            }
            Value::Object(out)
        }
        _ => Value::Null,
    }
}

/// YAML 1.1's merge key, which PyYAML (and so every Python training script) reads.
const MERGE_KEY: &str = "<<";

/// YAML 1.2 reads `5e-5` (no dot) and `100_000` (YAML 1.1's digit groups) as strings;
/// training configs mean numbers. yacs (detectron2) evaluates a Python tuple written as text,
/// `('voc_2007_trainval', 'voc_2012_trainval')`: a list.
fn number_or_text(text: &str) -> Value {
    if let Some(items) = python_tuple(text) {
        return Value::Array(items);
    }
    let grouped = text.contains('_')
        && !text.starts_with('_')
        && !text.ends_with('_')
        && !text.contains("__")
        && text.chars().all(|c| c.is_ascii_digit() || c == '_');
    if grouped {
        if let Ok(n) = text.replace('_', "").parse::<u64>() {
            return json!(n);
        }
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && text.chars().any(|c| c.is_ascii_digit()) => json!(x),
        _ => json!(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepspeed_json() {
        let mut facts = JobFacts::default();
        let text = "{\n  \"train_batch_size\": 256,\n  \"train_micro_batch_size_per_gpu\": 8,\n  \"gradient_accumulation_steps\": \"auto\",\n  \"bf16\": {\n    \"enabled\": true\n  },\n  \"zero_optimization\": {\"stage\": 3}\n}\n";
        read_config("ds.json", text, Syntax::Json, &mut facts).unwrap();
        assert_eq!(facts.value(Field::GlobalBatchSize).unwrap(), 256);
        assert_eq!(facts.value(Field::BatchSizePerDevice).unwrap(), 8);
        assert_eq!(
            facts.get(Field::BatchSizePerDevice).unwrap().source,
            "ds.json:3"
        );
        assert!(
            facts.get(Field::GradientAccumulation).is_none(),
            "auto says nothing"
        );
        assert_eq!(facts.value(Field::Precision).unwrap(), "bf16");
    }

    #[test]
    fn accelerate_config_counts_machines_and_processes() {
        let text =
            "distributed_type: FSDP\nmixed_precision: bf16\nnum_machines: 2\nnum_processes: 16\n";
        let mut facts = JobFacts::default();
        read_config("fsdp.yaml", text, Syntax::Yaml, &mut facts).unwrap();
        assert_eq!(facts.value(Field::Nodes).unwrap(), 2);
        assert_eq!(facts.value(Field::GpusTotal).unwrap(), 16);
        assert_eq!(facts.value(Field::Precision).unwrap(), "bf16");
        // Elsewhere, or on CPUs, `num_processes` is not a GPU count.
        for text in [
            "num_processes: 16\n",
            "distributed_type: MULTI_CPU\nnum_processes: 16\n",
            "distributed_type: MULTI_GPU\nuse_cpu: true\nnum_processes: 16\n",
        ] {
            let mut facts = JobFacts::default();
            read_config("a.yaml", text, Syntax::Yaml, &mut facts).unwrap();
            assert!(facts.value(Field::GpusTotal).is_none(), "{text}");
        }
    }

    #[test]
    fn alias_bombs_are_refused_and_aliases_still_read() {
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for k in 1..10 {
            let prev = format!("*a{}", k - 1);
            bomb += &format!("a{k}: &a{k} [{}]\n", [prev.as_str(); 9].join(", "));
        }
        let mut facts = JobFacts::default();
        let e = read_config("bomb.yaml", &bomb, Syntax::Yaml, &mut facts).unwrap_err();
        assert!(e.contains("aliases would add"), "{e}");
        let text = "base: &b\n  learning_rate: 0.001\ntrain: *b\n";
        read_config("ok.yaml", text, Syntax::Yaml, &mut facts).unwrap();
        assert_eq!(facts.get(Field::LearningRate).unwrap().value, json!(0.001));
    }

    #[test]
    fn merge_keys_read_as_pyyaml_does() {
        // PyYAML: {'train': {'learning_rate': 0.0003, 'epochs': 3, 'max_steps': 1000,
        // 'per_device_train_batch_size': 16}} (the mapping's own keys win; of a list of
        // merged mappings, the first).
        let text = "base: &base\n  learning_rate: 0.001\n  epochs: 3\n\
                    more: &more\n  max_steps: 1000\n  epochs: 9\n\
                    batch: &batch\n  per_device_train_batch_size: 16\n\
                    train:\n  <<: [*base, *more]\n  learning_rate: 0.0003\n  \
                    inner:\n    <<: *batch\n";
        let mut duplicates = Vec::new();
        let value = parse_yaml(text, &mut duplicates).unwrap();
        assert_eq!(
            value["train"],
            json!({"learning_rate": 0.0003, "epochs": 3, "max_steps": 1000,
                   "inner": {"per_device_train_batch_size": 16}})
        );
        assert!(duplicates.is_empty(), "{duplicates:?}");
    }

    #[test]
    fn many_plain_anchors_are_no_bomb() {
        let mut text = String::from("items:\n");
        for k in 0..100_001 {
            text += &format!("  - &a{k} {k}\n");
        }
        text += "learning_rate: 0.01\n";
        let mut facts = JobFacts::default();
        read_config("anchors.yaml", &text, Syntax::Yaml, &mut facts).unwrap();
        assert_eq!(facts.get(Field::LearningRate).unwrap().value, json!(0.01));
        // Aliases that add more than the limit are refused, and the message says so.
        let mut bomb = String::from("a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: [");
        bomb += &vec!["*a"; 10_001].join(", ");
        bomb += "]\n";
        let e = read_config("bomb.yaml", &bomb, Syntax::Yaml, &mut facts).unwrap_err();
        assert!(e.contains("aliases would add 110011 nodes"), "{e}");
        assert!(e.contains("over the limit of 100000"), "{e}");
    }

    #[test]
    fn a_duplicated_yaml_key_takes_the_last_value_with_a_note() {
        let text = "model_name_or_path: org/a\nlearning_rate: 0.1\ntrain:\n  epochs: 3\n  epochs: 5\nlearning_rate: 0.2\n";
        let mut facts = JobFacts::default();
        read_config("cfg.yaml", text, Syntax::Yaml, &mut facts).unwrap();
        let lr = facts.get(Field::LearningRate).unwrap();
        assert_eq!(lr.value, json!(0.2));
        assert_eq!(lr.source, "cfg.yaml:6");
        assert_eq!(
            lr.also,
            ["0.1 @ cfg.yaml (the key `learning_rate` is given twice; the last is taken, as PyYAML does)"]
        );
        let epochs = facts.get(Field::Epochs).unwrap();
        assert_eq!(
            (epochs.value.to_json(), epochs.source.to_string().as_str()),
            (json!(5), "cfg.yaml:5")
        );
        assert_eq!(facts.get(Field::Model).unwrap().value, json!("org/a"));
        // An accumulation under a name not understood is unknown, not 1.
        let mut facts = JobFacts::default();
        let text = "grad_accum_dtype: fp32\naccum_iter: 4\n";
        read_config("a.yaml", text, Syntax::Yaml, &mut facts).unwrap();
        assert_eq!(facts.json(Field::GradientAccumulation), Some(json!(4)));
        assert!(facts.get(Field::GradientAccumulationUnknown).is_none());
        let mut facts = JobFacts::default();
        let text = "grad_accumulation_interval: 8\n";
        read_config("b.yaml", text, Syntax::Yaml, &mut facts).unwrap();
        assert!(
            facts.get(Field::GradientAccumulationUnknown).is_some(),
            "{facts:?}"
        );
    }

    #[test]
    fn toml_config() {
        let mut facts = JobFacts::default();
        let text = "[model]\nname = \"gpt2-medium\"\n\n[train]\nlearning_rate = 3e-4\nmax_steps = 20000\nbf16 = true\n";
        read_config("train.toml", text, Syntax::Toml, &mut facts).unwrap();
        assert_eq!(facts.value(Field::LearningRate).unwrap(), 3e-4);
        assert_eq!(
            facts.get(Field::LearningRate).unwrap().source,
            "train.toml:5"
        );
        assert_eq!(facts.value(Field::MaxSteps).unwrap(), 20000);
        assert_eq!(facts.value(Field::Precision).unwrap(), "bf16");
        assert!(read_config("bad.toml", "a = ", Syntax::Toml, &mut facts).is_err());
    }

    #[test]
    fn yaml_recipe_and_model_config() {
        let mut facts = JobFacts::default();
        let text = "model_name_or_path: mistralai/Mistral-7B-v0.1\ntraining:\n  learning_rate: 2.0e-05\n  lr: 5e-5\n  num_train_epochs: 1\n  bf16: true\n  max_seq_length: 2048\n";
        read_config("recipe.yaml", text, Syntax::Yaml, &mut facts).unwrap();
        assert_eq!(
            facts.value(Field::Model).unwrap(),
            "mistralai/Mistral-7B-v0.1"
        );
        assert_eq!(facts.value(Field::LearningRate).unwrap(), 5e-5);
        assert_eq!(
            facts.get(Field::LearningRate).unwrap().also,
            vec!["0.00002 @ recipe.yaml:3"]
        );
        assert_eq!(facts.value(Field::Epochs).unwrap(), 1);
        assert_eq!(facts.value(Field::Precision).unwrap(), "bf16");
        assert_eq!(facts.value(Field::SequenceLength).unwrap(), 2048);
        let mut model = JobFacts::default();
        read_config("config.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 4096}", Syntax::Json, &mut model).unwrap();
        assert_eq!(model.value(Field::ModelType).unwrap(), "llama");
        let mut arch = JobFacts::default();
        let text = "{\"architectures\": [\"LlamaForCausalLM\"], \"max_sequence_length\": 2048, \"torch_dtype\": \"float16\"}";
        read_config("llama_7b.json", text, Syntax::Json, &mut arch).unwrap();
        assert!(
            arch.is_empty(),
            "an architecture's limits are not the training's: {arch:?}"
        );
        let mut mix = JobFacts::default();
        let text = "dataset_mixer:\n  org/a: 1.0\n  org/b: 0.5\n";
        read_config("recipe.yaml", text, Syntax::Yaml, &mut mix).unwrap();
        assert_eq!(
            mix.value(Field::Dataset).unwrap(),
            &json!(["org/a", "org/b"])
        );
        assert!(read_config("bad.yaml", "a: [1, 2", Syntax::Yaml, &mut model).is_err());
    }

    #[test]
    fn yacs_capitals_tuples_and_digit_groups() {
        let text = "MODEL:\n  WEIGHTS: \"detectron2://R-50.pkl\"\nDATASETS:\n  TRAIN: ('voc_2007_trainval', 'voc_2012_trainval')\n  TEST: ('voc_2007_test',)\nSOLVER:\n  IMS_PER_BATCH: 16\n  MAX_ITER: 18000\n";
        let mut facts = JobFacts::default();
        read_config("voc.yaml", text, Syntax::Yaml, &mut facts).unwrap();
        let v = |f: &str| facts.json(f.parse().unwrap());
        assert_eq!(v("model"), Some(json!("detectron2://R-50.pkl")));
        assert_eq!(
            v("dataset"),
            Some(json!(["voc_2007_trainval", "voc_2012_trainval"]))
        );
        assert_eq!(facts.get(Field::Dataset).unwrap().source, "voc.yaml:4");
        assert_eq!(v("global_batch_size"), Some(json!(16)));
        assert_eq!(v("max_steps"), Some(json!(18000)));
        assert_eq!(number_or_text("100_000"), json!(100000));
        assert_eq!(number_or_text("1__0"), json!("1__0"));
        assert_eq!(number_or_text("(a, 'b')"), json!("(a, 'b')"));
    }

    #[test]
    fn hydra_launcher_fairseq_lists_lavis_sections_and_generation_lengths() {
        let fairseq = "hydra:\n  launcher:\n    timeout_min: 4320\n    cpus_per_task: 80\n    gpus_per_node: 8\n    mem_gb: 450\n    nodes: 2\n    name: ${env:PREFIX}\nmodel:\n  _name: data2vec_text\noptimization:\n  lr: [0.0002]\n  update_freq: [1]\ntask:\n  tokens_per_sample: 512\n";
        let mut facts = JobFacts::default();
        read_config("base.yaml", fairseq, Syntax::Yaml, &mut facts).unwrap();
        let v = |f: &str| facts.json(f.parse().unwrap());
        assert_eq!(v("nodes"), Some(json!(2)));
        assert_eq!(v("gpus_per_node"), Some(json!(8)));
        assert_eq!(v("cpus_per_task"), Some(json!(80)));
        assert_eq!(v("memory_mib"), Some(json!(450 * 1024)));
        assert_eq!(v("requested_time_s"), Some(json!(4320 * 60)));
        assert_eq!(v("model"), Some(json!("data2vec_text")));
        assert_eq!(
            v("learning_rate"),
            Some(json!(0.0002)),
            "a list of one value"
        );
        assert_eq!(v("gradient_accumulation"), Some(json!(1)));
        assert_eq!(v("sequence_length"), Some(json!(512)));
        assert_eq!(v("job_name"), None);
        assert_eq!(
            facts.get(Field::MemoryMib).unwrap().source,
            "base.yaml:6",
            "each key cites its line"
        );
        // The launcher is one request: tasks times GPUs per task are the GPUs of a node.
        let tasks = "hydra:\n  launcher:\n    tasks_per_node: 4\n    gpus_per_task: 2\n";
        let mut facts = JobFacts::default();
        read_config("slurm.yaml", tasks, Syntax::Yaml, &mut facts).unwrap();
        assert_eq!(facts.json(Field::GpusPerNode), Some(json!(8)));
        assert_eq!(
            facts.get(Field::GpusPerNode).unwrap().source,
            "slurm.yaml:3"
        );

        let lavis = "model:\n  arch: blip2_opt\ndatasets:\n  coco_caption:\n    vis_processor:\n      train: {name: x}\nrun:\n  init_lr: 1e-5\n  max_epoch: 5\n  batch_size_train: 16\n  batch_size_eval: 8\n  accum_grad_iters: 1\n  max_len: 30\n  min_len: 8\n  num_beams: 5\n  amp: True\n";
        let mut facts = JobFacts::default();
        read_config("caption.yaml", lavis, Syntax::Yaml, &mut facts).unwrap();
        let v = |f: &str| facts.json(f.parse().unwrap());
        assert_eq!(v("model"), Some(json!("blip2_opt")));
        assert_eq!(v("dataset"), Some(json!("coco_caption")));
        assert_eq!(v("learning_rate"), Some(json!(1e-5)));
        assert_eq!(v("epochs"), Some(json!(5)));
        assert_eq!(v("batch_size_per_device"), Some(json!(16)));
        assert_eq!(v("gradient_accumulation"), Some(json!(1)));
        assert_eq!(v("precision"), Some(json!("amp")));
        assert_eq!(
            v("sequence_length"),
            None,
            "max_len beside num_beams is generation"
        );

        // mmengine's `val_dataloader` is not the training's.
        let mut facts = JobFacts::default();
        let text = "train_dataloader:\n  batch_size: 64\nval_dataloader:\n  batch_size: 8\n  dataset: {data_root: val/}\n";
        read_config("c.yaml", text, Syntax::Yaml, &mut facts).unwrap();
        assert_eq!(facts.json(Field::BatchSizePerDevice), Some(json!(64)));
        assert_eq!(facts.value(Field::Dataset), None);
    }
}
