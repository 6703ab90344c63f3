//! The one error type of the crate.

use std::path::PathBuf;

/// Why training, loading or decoding failed.
#[derive(Debug, thiserror::Error)]
pub enum FinetuneError {
    /// A tensor operation failed in candle: shapes or dtypes that do not fit, a device error, or a
    /// safetensors file that cannot be read or written.
    #[error("tensor error: {0}")]
    Candle(#[from] candle_core::Error),
    /// Reading or writing a file or directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A JSON file of a run or model directory (`config.json`, `tokenizer_meta.json`,
    /// `train_state.json`, `task.json`, ...) does not parse into the expected type, or a value
    /// cannot be written as JSON.
    #[error("{path}: {source}")]
    Json {
        /// The JSON file.
        path: PathBuf,
        /// What serde_json reported (with line and column when parsing).
        source: serde_json::Error,
    },
    /// A line of a text data file does not parse (a row of `curve.csv`).
    #[error("{path} line {line}: {message}")]
    Data {
        /// The data file.
        path: PathBuf,
        /// Line number of the bad line, from 1 (the header is line 1).
        line: usize,
        /// What is wrong with the line (field count, or the cell that does not parse).
        message: String,
    },
    /// A tokenizer could not be trained, read, written, or used to encode or decode, or it lacks
    /// its end token; the message says which and, for files, names the path.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A GGUF file cannot be read or is not supported: a missing metadata key or tensor, an
    /// architecture other than `llama`, or a tokenizer other than `gpt2` BPE.
    #[error("GGUF file: {0}")]
    Gguf(String),
    /// A model does not match its files or input: a missing weight or optimizer tensor, no gradient
    /// for a variable, a sequence longer than the context, an empty prompt, no token allowed to
    /// follow, no snapshot in the hf-hub cache, a learning-curve plot that cannot be drawn.
    #[error("model: {0}")]
    Model(String),
    /// A prompt leaves too little room in the model's context for the answer: two tokens per job
    /// and the end token when constrained, one token otherwise, eight tokens for one step of a
    /// rollout. That snapshot gets no answer.
    #[error("prompt of {tokens} tokens leaves no room for the answer in the context of {context}")]
    PromptTooLong {
        /// Tokens of the prompt, start token and chat format included.
        tokens: usize,
        /// The model's context, in tokens.
        context: usize,
    },
    /// An option or input is invalid: a GPT shape, a LoRA rank or target, a device name, an
    /// instance that is not a valid problem, a record's unknown template, no training example that
    /// fits the context.
    #[error("invalid option: {0}")]
    Config(String),
    /// A records file cannot be read, or does not fit the training: records of two kinds or
    /// templates, no values for value targets (the message names the file and the records).
    #[error("{0}")]
    Records(String),
}

impl FinetuneError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> FinetuneError {
        FinetuneError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn json(path: impl Into<PathBuf>, source: serde_json::Error) -> FinetuneError {
        FinetuneError::Json {
            path: path.into(),
            source,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = FinetuneError> = std::result::Result<T, E>;
