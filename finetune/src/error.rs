//! The one error type of the crate.

use std::path::PathBuf;

/// Why training, loading or decoding failed.
#[derive(Debug, thiserror::Error)]
pub enum FinetuneError {
    #[error("tensor error: {0}")]
    Candle(#[from] candle_core::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path} line {line}: {message}")]
    Data {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("GGUF file: {0}")]
    Gguf(String),
    #[error("model: {0}")]
    Model(String),
    #[error("prompt of {tokens} tokens leaves no room for the answer in the context of {context}")]
    PromptTooLong { tokens: usize, context: usize },
    #[error("invalid option: {0}")]
    Config(String),
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
