//! The crate's error type.

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A file or directory could not be read, created or written (an input, `answers.jsonl`,
    /// a report file).
    #[error("{path}: {source}")]
    Io {
        /// The path of the file or directory that failed.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A bad line of an input file (1-based line number).
    #[error("{path} line {line}: {message}")]
    Line {
        /// The path of the input file.
        path: String,
        /// The 1-based number of the bad line.
        line: usize,
        /// What is wrong with the line (which field, and why).
        message: String,
    },
    /// A policy named on the command line cannot be used.
    #[error("policy `{spec}`: {message}")]
    Policy {
        /// The policy as written on the command line (e.g. `openai:URL#MODEL`).
        spec: String,
        /// Why it cannot be used.
        message: String,
    },
    /// Inputs that do not fit together (mixed objectives, no records, ...).
    #[error("{0}")]
    Input(String),
    /// A report file or plot could not be made.
    #[error("report: {0}")]
    Report(String),
}

impl EvalError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> EvalError {
        EvalError::Io {
            path: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn line(path: &std::path::Path, line: usize, message: impl Into<String>) -> Self {
        EvalError::Line {
            path: path.display().to_string(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn policy(spec: &str, message: impl Into<String>) -> EvalError {
        EvalError::Policy {
            spec: spec.to_string(),
            message: message.into(),
        }
    }
}
