//! Reading and writing JSON Lines files of instances and results.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use schedlm_model::{text_lines, Instance, Problem};

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
/// not text).
pub struct Line {
    pub number: usize,
    pub text: std::result::Result<String, String>,
}

/// Reads every non-blank line of `path` (`-` reads standard input). A line that is not UTF-8
/// is kept, as a bad line. An input without any line is an error ([`empty_input`]).
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
    let instance = schedlm_model::parse_valid(text)?;
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
    /// then written as a line about once a second.
    #[arg(long, conflicts_with = "quiet")]
    pub progress: bool,
}

impl ProgressArgs {
    /// Whether progress is shown: not `--quiet`, and `--progress` or a terminal.
    pub fn shown(&self) -> bool {
        !self.quiet && (self.progress || std::io::IsTerminal::is_terminal(&std::io::stderr()))
    }

    /// A progress bar of `len` steps with `template` (indicatif's syntax): hidden unless
    /// [`ProgressArgs::shown`]; drawn in place on a terminal, as lines otherwise.
    pub fn bar(&self, len: u64, template: &str) -> indicatif::ProgressBar {
        if !self.shown() {
            return indicatif::ProgressBar::hidden();
        }
        let style = indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        let target = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            indicatif::ProgressDrawTarget::stderr()
        } else {
            indicatif::ProgressDrawTarget::term_like_with_hz(Box::new(LineTerm), 1)
        };
        indicatif::ProgressBar::with_draw_target(Some(len), target).with_style(style)
    }

    /// `eprintln!` of a progress message or summary, unless `--quiet`.
    pub fn say(&self, message: std::fmt::Arguments<'_>) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }
}

/// A progress bar's "terminal" when standard error is not one: each redraw is a line.
#[derive(Debug)]
struct LineTerm;

impl indicatif::TermLike for LineTerm {
    fn width(&self) -> u16 {
        100
    }
    fn move_cursor_up(&self, _n: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _n: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _n: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _n: usize) -> io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        if s.trim().is_empty() {
            return Ok(());
        }
        writeln!(io::stderr(), "{s}")
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        if s.trim().is_empty() {
            return Ok(());
        }
        write!(io::stderr(), "{s}")
    }
    fn clear_line(&self) -> io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> io::Result<()> {
        io::stderr().flush()
    }
}
