//! One type for every model the crate trains or decodes with, and the run directory layout.
//!
//! A run directory holds `config.json` ([`ModelSpec`]), the tokenizer (`tokenizer.json`,
//! `tokenizer_meta.json`) and the trained variables: `model.safetensors` for a GPT trained
//! from scratch, `adapters.safetensors` (LoRA only) for a pretrained base, which
//! `config.json` names by path. `merged.safetensors` (optional) holds base and adapters
//! folded together in Hugging Face names.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{VarBuilder, VarMap};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use schedlm_dataset::distribution::TrainingDistribution;
use schedlm_dataset::RecordKind;

use crate::error::{FinetuneError, Result};
use crate::gpt::{Gpt, GptConfig};
use crate::llama::{Llama, LoraConfig};
use crate::nn::KvCache;
use crate::pretrained::{hub_snapshot, load_gguf, load_hf_dir, Pretrained};
use crate::tokenizer::TextTokenizer;

/// File of a run directory with its [`ModelSpec`] (JSON).
pub const CONFIG_FILE: &str = "config.json";
/// File of a run directory with every weight of a GPT trained from scratch (safetensors).
pub const MODEL_FILE: &str = "model.safetensors";
/// File of a run directory with only the LoRA adapters of a pretrained base (safetensors).
pub const ADAPTERS_FILE: &str = "adapters.safetensors";
/// File of a run directory with base and adapters folded together in Hugging Face names
/// (safetensors), written by [`save_merged`].
pub const MERGED_FILE: &str = "merged.safetensors";
/// What the model was trained to answer ([`Task`]); absent in runs trained on order records.
pub const TASK_FILE: &str = "task.json";

/// What a run's model answers: whole queue orders, or one decision at a time (step records,
/// rolled out by [`crate::rollout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Task {
    /// The kind of records the model was trained on: `Orders` (answers a whole queue order) or
    /// `Steps` (names one job per prompt).
    pub records: RecordKind,
    /// Step models: the template of their states, `step-v1` (absent: runs before step-v2) or
    /// `step-v2`; rollouts render every state with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_template: Option<schedlm_dataset::Template>,
}

/// Where a pretrained base comes from: `gguf:PATH`, `hf:DIR` or `hf:ORG/NAME` (hf-hub cache).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Base {
    /// A GGUF file of architecture `llama` (`gguf:PATH`); its weights are dequantized to f32.
    Gguf(PathBuf),
    /// A Hugging Face model directory, or else a model id `ORG/NAME[@REVISION]` looked up in the
    /// hf-hub cache (`hf:...`).
    Hf(String),
}

impl Base {
    /// Loads the base model and its tokenizer, offline.
    pub fn load(&self, device: &Device) -> Result<Pretrained> {
        match self {
            Base::Gguf(path) => load_gguf(path, device),
            Base::Hf(id) => {
                let dir = Path::new(id);
                if dir.is_dir() {
                    load_hf_dir(dir, device)
                } else {
                    load_hf_dir(&hub_snapshot(id)?, device)
                }
            }
        }
    }
}

/// What a run directory's model is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ModelSpec {
    /// A GPT trained from scratch.
    Gpt {
        /// Shape of the GPT.
        config: GptConfig,
    },
    /// A pretrained Llama-architecture base with LoRA adapters.
    Lora {
        /// The pretrained model the adapters sit on, read again from there at every load.
        base: Base,
        /// Rank, scale and target projections of the adapters.
        lora: LoraConfig,
    },
}

impl ModelSpec {
    /// The model a name asks for: `gpt-tiny` (a GPT of shape `gpt`, its vocabulary the
    /// tokenizer's), `gguf:PATH` or `hf:DIR|ORG/NAME[@REVISION]` (LoRA adapters `lora` on that
    /// base).
    pub fn parse(name: &str, gpt: GptConfig, lora: LoraConfig) -> Result<ModelSpec> {
        Ok(match name {
            "gpt-tiny" => ModelSpec::Gpt { config: gpt },
            m => match m.split_once(':') {
                Some(("gguf", path)) => ModelSpec::Lora {
                    base: Base::Gguf(path.into()),
                    lora,
                },
                Some(("hf", id)) => ModelSpec::Lora {
                    base: Base::Hf(id.into()),
                    lora,
                },
                _ => {
                    return Err(FinetuneError::Config(format!(
                        "--model `{m}`: write gpt-tiny, gguf:PATH or hf:DIR|ORG/NAME[@REVISION]"
                    )))
                }
            },
        })
    }
}

/// A model ready to run.
pub enum Model {
    /// A GPT trained from scratch.
    Gpt(Gpt),
    /// A pretrained Llama-architecture model with its LoRA adapters.
    Llama(Llama),
}

impl Model {
    /// Final hidden states [b, t, width] of `ids` [b, t] after the cached tokens.
    pub fn hidden(&self, ids: &Tensor, cache: Option<&mut KvCache>) -> Result<Tensor> {
        match self {
            Model::Gpt(m) => m.hidden(ids, cache),
            Model::Llama(m) => m.hidden(ids, cache),
        }
    }

    /// Logits of hidden states.
    pub fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        match self {
            Model::Gpt(m) => m.logits(hidden),
            Model::Llama(m) => m.logits(hidden),
        }
    }

    /// Logits [b, t, vocab] of every position of `ids`.
    pub fn forward(&self, ids: &Tensor, cache: Option<&mut KvCache>) -> Result<Tensor> {
        self.logits(&self.hidden(ids, cache)?)
    }

    /// Transformer blocks, one entry each in the key/value cache.
    pub fn layers(&self) -> usize {
        match self {
            Model::Gpt(m) => m.config().layers,
            Model::Llama(m) => m.config().layers,
        }
    }

    /// Longest sequence, in tokens.
    pub fn context(&self) -> usize {
        match self {
            Model::Gpt(m) => m.config().context,
            Model::Llama(m) => m.config().context,
        }
    }

    /// An empty key/value cache for this model.
    pub fn cache(&self) -> KvCache {
        KvCache::new(self.layers())
    }
}

/// A model, its trainable variables, its tokenizer and what it answers.
pub struct Loaded {
    /// What the model is, as written to `config.json`.
    pub spec: ModelSpec,
    /// The model itself, ready to run.
    pub model: Model,
    /// The trainable variables, which the optimizer updates: every weight of a GPT (saved to
    /// `model.safetensors`), only the adapters of a LoRA model (`adapters.safetensors`).
    pub vars: VarMap,
    /// The model's tokenizer: trained on the data for a GPT, the base model's own for LoRA.
    pub tokenizer: TextTokenizer,
    /// What the model answers (from `task.json`; whole orders when the file is absent).
    pub task: Task,
    /// What it was trained on (`training_data.json`, written from the training records;
    /// `None` for runs made before it was recorded).
    pub trained_on: Option<TrainingDistribution>,
}

/// Builds a fresh model: a GPT initialised from `seed`, or a base with new adapters (`A`
/// random from `seed`, `B` zero, so the adapted model starts equal to the base).
pub fn build(
    spec: &ModelSpec,
    tokenizer: Option<TextTokenizer>,
    seed: u64,
    device: &Device,
) -> Result<Loaded> {
    let vars = VarMap::new();
    let vb = VarBuilder::from_varmap(&vars, DType::F32, device);
    let (model, tokenizer) = match spec {
        ModelSpec::Gpt { config } => {
            let tokenizer = tokenizer.ok_or_else(|| {
                FinetuneError::Config("a GPT from scratch needs a tokenizer".into())
            })?;
            (Model::Gpt(Gpt::new(*config, vb)?), tokenizer)
        }
        ModelSpec::Lora { base, lora } => {
            let p = base.load(device)?;
            let llama = Llama::new(p.config, p.weights, Some(lora), vb)?;
            (Model::Llama(llama), p.tokenizer)
        }
    };
    init_vars(&vars, seed)?;
    Ok(Loaded {
        spec: spec.clone(),
        model,
        vars,
        tokenizer,
        task: Task::default(),
        trained_on: None,
    })
}

/// The variables sorted by name (a stable order for the optimizer and for seeding).
pub fn sorted_vars(vars: &VarMap) -> Vec<(String, Var)> {
    let data = vars.data().lock().unwrap_or_else(|e| e.into_inner());
    let mut list: Vec<(String, Var)> = data.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    list.sort_by(|a, b| a.0.cmp(&b.0));
    list
}

/// Seeded initialisation: biases and LoRA `B` zero, norm weights one, the rest normal with
/// standard deviation 0.02 (LoRA `A`: 1 / sqrt(fan-in)).
fn init_vars(vars: &VarMap, seed: u64) -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (name, var) in sorted_vars(vars) {
        let shape = var.shape().clone();
        let n = shape.elem_count();
        let values: Vec<f32> = if name.ends_with("bias") || name.ends_with("lora_b") {
            vec![0.0; n]
        } else if name.contains("ln") && name.ends_with("weight") {
            vec![1.0; n]
        } else {
            let std = if name.ends_with("lora_a") {
                1.0 / (*shape.dims().last().unwrap_or(&1) as f32).sqrt()
            } else {
                0.02
            };
            (0..n).map(|_| normal(&mut rng) * std).collect()
        };
        var.set(&Tensor::from_vec(values, shape, var.device())?)?;
    }
    Ok(())
}

fn normal(rng: &mut ChaCha8Rng) -> f32 {
    let u1: f32 = rng.random::<f32>().max(1e-7);
    let u2: f32 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

/// File of the trained variables of a spec.
pub fn vars_file(spec: &ModelSpec) -> &'static str {
    match spec {
        ModelSpec::Gpt { .. } => MODEL_FILE,
        ModelSpec::Lora { .. } => ADAPTERS_FILE,
    }
}

/// Writes config, tokenizer and variables into `dir`.
pub fn save(loaded: &Loaded, dir: &Path) -> Result<()> {
    crate::io::create_dir(dir)?;
    crate::io::write_json(&dir.join(CONFIG_FILE), &loaded.spec)?;
    loaded.tokenizer.save(dir)?;
    loaded.vars.save(dir.join(vars_file(&loaded.spec)))?;
    if loaded.task.records != RecordKind::Orders {
        crate::io::write_json(&dir.join(TASK_FILE), &loaded.task)?;
    }
    if let Some(d) = &loaded.trained_on {
        d.write(dir).map_err(FinetuneError::Model)?;
    }
    Ok(())
}

/// Loads the model of a run directory.
pub fn load(dir: &Path, device: &Device) -> Result<Loaded> {
    let spec: ModelSpec = crate::io::read_json(&dir.join(CONFIG_FILE))?;
    let tokenizer = match spec {
        ModelSpec::Gpt { .. } => Some(TextTokenizer::load(dir)?),
        ModelSpec::Lora { .. } => None,
    };
    let mut loaded = build(&spec, tokenizer, 0, device)?;
    let task = dir.join(TASK_FILE);
    if task.exists() {
        loaded.task = crate::io::read_json(&task)?;
    }
    loaded.trained_on = TrainingDistribution::read(dir).map_err(FinetuneError::Model)?;
    let path = dir.join(vars_file(&spec));
    loaded
        .vars
        .load(&path)
        .map_err(|e| FinetuneError::Model(format!("{}: {e}", path.display())))?;
    Ok(loaded)
}

/// Writes base and adapters folded together (Hugging Face names) to `merged.safetensors`.
pub fn save_merged(loaded: &Loaded, dir: &Path) -> Result<PathBuf> {
    let Model::Llama(llama) = &loaded.model else {
        return Err(FinetuneError::Config("only LoRA runs can be merged".into()));
    };
    let path = dir.join(MERGED_FILE);
    candle_core::safetensors::save(&llama.merged_weights()?, &path)?;
    Ok(path)
}
