//! The crate's error type.

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A bad line of an input file (1-based line number).
    #[error("{path} line {line}: {message}")]
    Line {
        path: String,
        line: usize,
        message: String,
    },
    /// A policy named on the command line cannot be used.
    #[error("policy `{spec}`: {message}")]
    Policy { spec: String, message: String },
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
