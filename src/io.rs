//! Reading and writing JSON Lines files of instances and results.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use schedlm_model::{text_lines, Instance, Problem, UnknownFields};

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

/// One non-blank line of an input file: its 1-based number and its text (or why its bytes are
/// not text), and what its parser does with fields the instance schema does not know.
pub struct Line {
    pub number: usize,
    pub text: std::result::Result<String, String>,
    pub unknown: UnknownFields,
}

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

/// Unknown instance fields met under `--allow-unknown-fields`, for one warning that names
/// each with the first lines that hold it.
#[derive(Debug, Default)]
pub struct UnknownFieldsSeen {
    /// Per field (`queue job field "dep"`): its first lines and how many lines hold it.
    fields: BTreeMap<String, (Vec<usize>, usize)>,
}

/// Lines a warning lists per unknown field.
const LINES_SHOWN: usize = 3;

impl UnknownFieldsSeen {
    /// Notes the unknown fields of the instance on line `number`; a line that is not JSON is
    /// left to the parser's error.
    pub fn add(&mut self, number: usize, text: &str) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
            return;
        };
        for field in schedlm_model::instance::unknown_fields(&value) {
            let (first, count) = self.fields.entry(field.place()).or_default();
            if first.last() == Some(&number) {
                continue;
            }
            if first.len() < LINES_SHOWN {
                first.push(number);
            }
            *count += 1;
        }
    }

    /// The warning, or `None` when no field was unknown.
    pub fn warning(&self, path: &Path) -> Option<String> {
        if self.fields.is_empty() {
            return None;
        }
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|(place, (first, count))| {
                let shown: Vec<String> = first.iter().map(usize::to_string).collect();
                let more = match count - first.len() {
                    0 => String::new(),
                    n => format!(" and {n} more"),
                };
                let word = if *count == 1 { "line" } else { "lines" };
                format!("{place} ({word} {}{more})", shown.join(", "))
            })
            .collect();
        Some(format!(
            "warning: {}: ignored unknown fields (--allow-unknown-fields): {}",
            path.display(),
            fields.join("; ")
        ))
    }

    /// Prints [`UnknownFieldsSeen::warning`] on stderr, if any.
    pub fn warn(&self, path: &Path) {
        if let Some(message) = self.warning(path) {
            eprintln!("{message}");
        }
    }
}

/// Under `--allow-unknown-fields`, one warning ([`UnknownFieldsSeen`]) for the file `path`,
/// read one line at a time.
pub fn warn_unknown_fields_in(path: &Path) -> Result<()> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut seen = UnknownFieldsSeen::default();
    for line in text_lines(BufReader::new(file)) {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if let Ok(text) = &line.text {
            seen.add(line.number, text);
        }
    }
    seen.warn(path);
    Ok(())
}

/// Reads every non-blank line of `path` (`-` reads standard input), each at most
/// `schedlm_model::lines::max_line_bytes()` long. A line that is not UTF-8 is kept, as a bad
/// line. An input without any line is an error ([`empty_input`]). Under
/// `--allow-unknown-fields` the unknown fields get one warning ([`UnknownFieldsSeen`]).
pub fn read_instance_lines(path: &Path, instances: InstanceArgs) -> Result<Vec<Line>> {
    let mut lines = read_lines(path)?;
    let unknown = instances.unknown();
    if unknown == UnknownFields::Ignore {
        let mut seen = UnknownFieldsSeen::default();
        for line in &lines {
            if let Ok(text) = &line.text {
                seen.add(line.number, text);
            }
        }
        seen.warn(path);
    }
    for line in &mut lines {
        line.unknown = unknown;
    }
    Ok(lines)
}

/// Reads every non-blank line of `path` as [`read_instance_lines`] does, unknown instance
/// fields rejected.
pub fn read_lines(path: &Path) -> Result<Vec<Line>> {
    let reader: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(BufReader::new(io::stdin()))
    } else {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        Box::new(BufReader::new(file))
    };
    let mut lines = Vec::new();
    for line in text_lines(reader) {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if !line.is_blank() {
            lines.push(Line {
                number: line.number,
                text: line.text,
                unknown: UnknownFields::Reject,
            });
        }
    }
    if lines.is_empty() {
        return Err(empty_input(path, "instance"));
    }
    Ok(lines)
}

/// The one rule for empty input (docs/design.md): an input that holds nothing to work on (no
/// instance, record, answer or trace job; a directory without a file of the format) is an
/// error that names it, before anything is written, so a pipeline whose earlier step produced
/// nothing stops there instead of reporting a clean run over nothing.
pub fn empty_input(path: &Path, what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: no {what}: the input is empty (nothing to work on)",
        path.display()
    )
}

/// Parses and validates one line as an instance; the error lists every problem found.
pub fn parse_instance(line: &Line) -> std::result::Result<(Instance, Problem), String> {
    let text = line.text.as_deref().map_err(String::clone)?;
    let (instance, _) = schedlm_model::parse_valid_with(text, line.unknown)?;
    let problem = Problem::new(&instance).map_err(|e| e.to_string())?;
    Ok((instance, problem))
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

/// `-q/--quiet` and `--progress` of every command that can take more than a few seconds: the
/// one place that decides whether progress (bars, progress lines, summaries) goes to standard
/// error. Warnings and errors always do.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ProgressArgs {
    /// Print nothing on standard error but warnings and errors (no progress bar, no summary).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Show progress even when standard error is not a terminal (a log file, CI): the bar is
    /// then written as one line per update, at most one a second.
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
}

impl ProgressArgs {
    /// Whether progress is shown: not `--quiet`, and `--progress` or a terminal.
    pub fn shown(&self) -> bool {
        !self.quiet && (self.progress || std::io::IsTerminal::is_terminal(&std::io::stderr()))
    }

    /// A progress bar of `len` steps with `template` (indicatif's syntax): hidden unless
    /// [`ProgressArgs::shown`]; drawn in place on a terminal, as lines otherwise
    /// (`schedlm_model::progress`).
    pub fn bar(&self, len: u64, template: &str) -> indicatif::ProgressBar {
        if !self.shown() {
            return indicatif::ProgressBar::hidden();
        }
        let style = indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        indicatif::ProgressBar::with_draw_target(Some(len), schedlm_model::progress::draw_target())
            .with_style(style)
    }

    /// `eprintln!` of a progress message or summary, unless `--quiet`.
    pub fn say(&self, message: std::fmt::Arguments<'_>) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }
}
