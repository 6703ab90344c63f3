//! Reading and writing JSON Lines files of instances and results.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use schedlm_model::{Instance, Problem};

/// One non-blank line of an input file: its 1-based number and its text.
pub struct Line {
    pub number: usize,
    pub text: String,
}

/// Reads every non-blank line of `path` (`-` reads standard input).
pub fn read_lines(path: &Path) -> Result<Vec<Line>> {
    let reader: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(BufReader::new(io::stdin()))
    } else {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        Box::new(BufReader::new(file))
    };
    let mut lines = Vec::new();
    for (i, text) in reader.lines().enumerate() {
        let text =
            text.with_context(|| format!("{}: cannot read line {}", path.display(), i + 1))?;
        if !text.trim().is_empty() {
            lines.push(Line {
                number: i + 1,
                text,
            });
        }
    }
    Ok(lines)
}

/// Parses and validates one line as an instance; the error lists every problem found.
pub fn parse_instance(text: &str) -> std::result::Result<(Instance, Problem), String> {
    let instance = schedlm_dataset::build::parse_valid(text)?;
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
