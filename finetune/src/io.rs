//! Small file helpers with errors that name the file.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{FinetuneError, Result};

/// Reads a JSON file.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = schedlm_model::lines::read_bounded(path).map_err(|e| FinetuneError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| FinetuneError::json(path, e))
}

/// Writes a JSON file (pretty).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| FinetuneError::json(path, e))?;
    std::fs::write(path, text + "\n").map_err(|e| FinetuneError::io(path, e))
}

/// Creates a directory and its parents.
pub fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|e| FinetuneError::io(path, e))
}
