//! The dataset crate's error type: why a build, merge or read failed, naming the file, line or
//! item.

use std::io;
use std::path::{Path, PathBuf};

/// Why a build, merge or read failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}:{line}: {reason}")]
    Input {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    #[error("generator, instance {index}: {source}")]
    Generate {
        index: u64,
        source: schedlm_generator::GenError,
    },
    #[error("instance {index}: {reason}")]
    Solve { index: u64, reason: String },
    #[error("{dir} holds a build made with other arguments ({what}); use another output directory or delete it")]
    OtherArgs { dir: PathBuf, what: String },
    #[error("{path}: not a schedlm dataset manifest: {reason}")]
    Manifest { path: PathBuf, reason: String },
    #[error("merge: {0}")]
    Merge(String),
    #[error("another `schedlm dataset build` is writing to {dir}; wait for it to finish or use another output directory")]
    Busy { dir: PathBuf },
    #[error("{path}:{line}: not a record: {reason}")]
    Record {
        path: PathBuf,
        line: u64,
        reason: String,
    },
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}
