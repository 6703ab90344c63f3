//! The dataset crate's error type: why a build, merge or read failed, naming the file, line or
//! item.

use std::io;
use std::path::{Path, PathBuf};

/// Why a build, merge or read failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A file system operation failed: opening, reading, writing, syncing, renaming, creating,
    /// removing or locking a file or directory.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory the operation was on.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A line of the `--from` instance file is not a valid instance and `--skip-invalid` is
    /// off.
    #[error("{path}:{line}: {reason}")]
    Input {
        /// The `--from` file.
        path: PathBuf,
        /// 1-based line number of the bad line in that file.
        line: u64,
        /// Why the line is not a valid instance (bad JSON, a validation error naming the job
        /// and field, or bytes that are not UTF-8).
        reason: String,
    },
    /// The generator refused a family's configuration or failed to generate an instance.
    #[error("generator, instance {index}: {source}")]
    Generate {
        /// Generator index of the instance (`0..count`); 0 when a configuration was refused
        /// before anything was generated.
        index: u64,
        /// The generator's error.
        source: schedlm_generator::GenError,
    },
    /// One item could not be turned into records: the solver failed, the label could not be
    /// rendered or serialised, a generated instance was invalid, or no generator family was
    /// given.
    #[error("instance {index}: {reason}")]
    Solve {
        /// Source index of the item: the generator index, or the 1-based line of `--from`
        /// (0 when no generator family was given).
        index: u64,
        /// What failed, as the solver, renderer or validator reported it.
        reason: String,
    },
    /// The output directory already holds a build (complete, or its `parts/`) made with other
    /// [`BuildArgs`](crate::manifest::BuildArgs), another shard or another chunk size.
    #[error("{dir} holds a build made with other arguments ({what}); use another output directory or delete it")]
    OtherArgs {
        /// The output directory.
        dir: PathBuf,
        /// What differs: the names of the differing argument fields, or the old and new shard
        /// or chunk size.
        what: String,
    },
    /// A `manifest.json` (or a build's `parts/header.json`) is not valid JSON of the expected
    /// shape, or is of another [`FORMAT`](crate::manifest::FORMAT).
    #[error("{path}: not a schedlm dataset manifest: {reason}")]
    Manifest {
        /// The manifest or header file.
        path: PathBuf,
        /// The JSON error, or the format found and the one expected.
        reason: String,
    },
    /// `schedlm dataset merge` refused its parts: none given, built with other arguments, a
    /// shard missing, given twice or of another shard count, a record in two parts, a split
    /// file that disagrees with its manifest or is out of source order, or an output directory
    /// that already holds a dataset. The message names the part directories or file.
    #[error("merge: {0}")]
    Merge(String),
    /// Build arguments that do not go together (a step template for order records, values
    /// without steps, a plan line for one-job answers, a solver setting that cannot run); the
    /// message names the options.
    #[error("{0}")]
    Args(String),
    /// Another process holds the build lock ([`LOCK_FILE`](crate::layout::LOCK_FILE)) of the
    /// output directory, i.e. another build is writing to it.
    #[error("another `schedlm dataset build` is writing to {dir}; wait for it to finish or use another output directory")]
    Busy {
        /// The output directory.
        dir: PathBuf,
    },
    /// A non-blank line of a dataset split file, or of a build's chunk file, is not a record:
    /// not JSON, a field missing or of the wrong type, or neither `messages` nor `prompt` and
    /// `completion`.
    #[error("{path}:{line}: not a record: {reason}")]
    Record {
        /// The file read.
        path: PathBuf,
        /// 1-based line number of the bad line in that file.
        line: u64,
        /// The JSON error, or which field is missing.
        reason: String,
    },
}

pub(crate) fn io_err(path: &Path) -> impl FnOnce(io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}
