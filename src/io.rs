//! Reading and writing JSON Lines files of instances and results.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use schedlm_model::UnknownFields;

/// `println!` that returns an error instead of panicking when standard output fails (a closed
/// pipe, a full disk): `outln!("...")?`.
macro_rules! outln {
    () => {
        $crate::io::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::io::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` with the error handling of [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::io::write_stdout(format_args!($($arg)*))
    };
}

/// Writes to standard output, naming it in the error.
pub fn write_stdout(args: std::fmt::Arguments<'_>) -> Result<()> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_fmt(args)
        .and_then(|()| stdout.flush())
        .context("cannot write to standard output")
}

/// Whether an error comes from writing to a pipe whose reader has gone.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

pub use schedlm_model::input::{empty_input, Line};

/// `--allow-unknown-fields` of every command that reads instances.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct InstanceArgs {
    /// Accept instance fields the schema does not know (files from a newer schedlm): they are
    /// left out, with one warning that names them. Without it such a field is an error naming
    /// it and its job, since a typo ("dep" for "deps") would silently drop a constraint.
    /// `meta` is free JSON either way.
    #[arg(long)]
    pub allow_unknown_fields: bool,
}

impl InstanceArgs {
    /// What the instance parser does with unknown fields.
    pub fn unknown(&self) -> UnknownFields {
        if self.allow_unknown_fields {
            UnknownFields::Ignore
        } else {
            UnknownFields::Reject
        }
    }
}

/// Under `--allow-unknown-fields`, one warning for the file `path` (each unknown field with
/// the first lines that hold it), read one line at a time.
pub fn warn_unknown_fields_in(path: &Path) -> Result<()> {
    if let Some(warning) = schedlm_model::input::unknown_fields_warning(path)? {
        eprintln!("{warning}");
    }
    Ok(())
}

/// Reads every non-blank line of `path` (`-` reads standard input) as
/// [`schedlm_model::input::read_instance_lines`] does, printing its warning on unknown fields.
pub fn read_instance_lines(path: &Path, instances: InstanceArgs) -> Result<Vec<Line>> {
    let (lines, warning) = schedlm_model::input::read_instance_lines(path, instances.unknown())?;
    if let Some(warning) = warning {
        eprintln!("{warning}");
    }
    Ok(lines)
}

/// Opens `path` for writing (`None` or `-` writes standard output).
pub fn create_output(path: Option<&Path>) -> Result<Box<dyn Write>> {
    match path {
        Some(p) if p != Path::new("-") => {
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            let file = File::create(p).with_context(|| format!("cannot create {}", p.display()))?;
            Ok(Box::new(BufWriter::new(file)))
        }
        _ => Ok(Box::new(BufWriter::new(io::stdout().lock()))),
    }
}

/// Writes values as JSON Lines, one per line.
pub fn write_jsonl<T: serde::Serialize>(out: &mut dyn Write, values: &[T]) -> Result<()> {
    let mut writer = serde_jsonlines::JsonLinesWriter::new(out);
    writer
        .write_all(values.iter())
        .context("cannot write output")?;
    writer.flush().context("cannot write output")?;
    Ok(())
}

/// Splits per-line results into the good values and a count of failures, reporting each failure
/// on stderr as `FILE:LINE: skipped: REASON`.
pub fn report_skipped<T>(
    file: &Path,
    lines: &[Line],
    results: Vec<std::result::Result<T, String>>,
) -> (Vec<T>, usize) {
    let mut good = Vec::with_capacity(results.len());
    let mut skipped = 0;
    for (line, result) in lines.iter().zip(results) {
        match result {
            Ok(value) => good.push(value),
            Err(reason) => {
                skipped += 1;
                eprintln!("{}:{}: skipped: {}", file.display(), line.number, reason);
            }
        }
    }
    (good, skipped)
}

pub use schedlm_model::progress::ProgressArgs;
