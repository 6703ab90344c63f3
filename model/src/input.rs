//! Instance files read whole, as every command that takes `FILE.jsonl` reads them: the
//! non-blank lines of a file or standard input (`-`), each with its 1-based number and its
//! text (or why its bytes are not text), an empty input refused ([`InputError::Empty`]), and
//! under [`UnknownFields::Ignore`] one warning that names every unknown field with the first
//! lines that hold it ([`UnknownFieldsSeen`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::instance::{unknown_fields, UnknownFields};
use crate::lines::text_lines;
use crate::{parse_valid_with, Instance, Problem};

/// Why an input file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file cannot be opened.
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A line cannot be read (an I/O error, or a line over the bound).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The one rule for empty input (docs/design.md): an input that holds nothing to work on
    /// (no instance, record, answer or trace job; a directory without a file of the format) is
    /// an error that names it, before anything is written, so a pipeline whose earlier step
    /// produced nothing stops there instead of reporting a clean run over nothing.
    #[error("{}: no {what}: the input is empty (nothing to work on)", path.display())]
    Empty {
        /// The input.
        path: PathBuf,
        /// What it should hold (`instance`, `record`).
        what: String,
    },
}

/// An empty input of `what`s at `path` ([`InputError::Empty`]).
pub fn empty_input(path: &Path, what: &str) -> InputError {
    InputError::Empty {
        path: path.to_path_buf(),
        what: what.to_string(),
    }
}

/// One non-blank line of an input file: its 1-based number and its text (or why its bytes are
/// not text), and what its parser does with fields the instance schema does not know.
#[derive(Debug, Clone)]
pub struct Line {
    /// The 1-based line number.
    pub number: usize,
    /// The text, or why the bytes are not UTF-8.
    pub text: Result<String, String>,
    /// What the parser does with unknown instance fields.
    pub unknown: UnknownFields,
}

impl Line {
    /// Parses and validates the line as an instance; the error lists every problem found.
    pub fn instance(&self) -> Result<(Instance, Problem), String> {
        let text = self.text.as_deref().map_err(String::clone)?;
        let (instance, _) = parse_valid_with(text, self.unknown)?;
        let problem = Problem::new(&instance).map_err(|e| e.to_string())?;
        Ok((instance, problem))
    }
}

/// Reads every non-blank line of `path` (`-` reads standard input), each at most
/// [`crate::lines::max_line_bytes`] long, with `unknown` as their parser's rule. A line that
/// is not UTF-8 is kept, as a bad line; an input without any line is [`InputError::Empty`].
/// Under [`UnknownFields::Ignore`] the unknown fields give one warning, returned beside.
pub fn read_instance_lines(
    path: &Path,
    unknown: UnknownFields,
) -> Result<(Vec<Line>, Option<String>), InputError> {
    let reader: Box<dyn BufRead> = if path == Path::new("-") {
        Box::new(BufReader::new(io::stdin()))
    } else {
        Box::new(BufReader::new(open(path)?))
    };
    let mut lines = Vec::new();
    for line in text_lines(reader) {
        let line = line.map_err(|source| read_error(path, source))?;
        if !line.is_blank() {
            let (number, text) = (line.number, line.text);
            lines.push(Line {
                number,
                text,
                unknown,
            });
        }
    }
    if lines.is_empty() {
        return Err(empty_input(path, "instance"));
    }
    let mut seen = UnknownFieldsSeen::default();
    if unknown == UnknownFields::Ignore {
        for line in &lines {
            seen.add_line(line);
        }
    }
    Ok((lines, seen.warning(path)))
}

/// The warning of [`UnknownFieldsSeen`] for the instance file `path`, read one line at a time.
pub fn unknown_fields_warning(path: &Path) -> Result<Option<String>, InputError> {
    let mut seen = UnknownFieldsSeen::default();
    for line in text_lines(BufReader::new(open(path)?)) {
        let line = line.map_err(|source| read_error(path, source))?;
        if let Ok(text) = &line.text {
            seen.add(line.number, text);
        }
    }
    Ok(seen.warning(path))
}

fn open(path: &Path) -> Result<File, InputError> {
    File::open(path).map_err(|source| InputError::Open {
        path: path.to_path_buf(),
        source,
    })
}

fn read_error(path: &Path, source: io::Error) -> InputError {
    InputError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// Unknown instance fields met under [`UnknownFields::Ignore`], for one warning that names
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
        for field in unknown_fields(&value) {
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

    fn add_line(&mut self, line: &Line) {
        if let Ok(text) = &line.text {
            self.add(line.number, text);
        }
    }

    /// The warning, or `None` when no field was unknown.
    pub fn warning(&self, path: &Path) -> Option<String> {
        if self.fields.is_empty() {
            return None;
        }
        let fields: Vec<String> = (self.fields.iter())
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
}
