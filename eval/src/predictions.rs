//! Raw model outputs produced elsewhere: JSON Lines, one object per record,
//! `{"id": record id, "output": raw text, "best_of": text or null, "time_ms": number}` (the
//! format `schedlm predict` writes; `best_of` and the decision time, `time_ms` or `seconds`,
//! are optional, and so are `best_of_time_ms` (the samples' time), `samples` (how many
//! answers the best-of was chosen from), `decoding` (how the answers were decoded, in words)
//! and `unconstrained` (a constrained model's answer without the constraint); other keys are
//! ignored).
//!
//! A line that is not such an object, or an id given twice, is an error naming the line.
//! Records without a line are scored as invalid answers ("missing prediction"); ids that are
//! not in the evaluated data are counted and listed in the report, never silently dropped.

use std::collections::HashMap;
use std::path::Path;

use schedlm_model::text_lines;
use serde_json::Value;

use crate::error::EvalError;

/// One line of a predictions file.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// 1-based line in the file.
    pub line: usize,
    /// The greedy output; `None` when the line has `"output": null`.
    pub output: Option<String>,
    /// The best-of-N output, when the producer made one.
    pub best_of: Option<String>,
    /// Decision time in seconds, when the producer measured it.
    pub seconds: Option<f64>,
    /// Time of the best-of samples in seconds, when measured apart.
    pub best_of_seconds: Option<f64>,
    /// How many samples the best-of answer was chosen from.
    pub samples: Option<usize>,
    /// How the answers were decoded, in words.
    pub decoding: Option<String>,
    /// The greedy answer without the decoding constraint.
    pub unconstrained: Option<String>,
}

/// The id and prediction of one line, or what is wrong with it.
fn parse_line(text: &str, line: usize) -> Result<(String, Prediction), String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "not JSON: {}",
            schedlm_model::lines::bounded(&e.to_string())
        )
    })?;
    let Value::Object(map) = value else {
        return Err("not a JSON object {\"id\": ..., \"output\": ...}".into());
    };
    let id = match map.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(_) => return Err("field `id` must be a string".into()),
        None => return Err("field `id` is missing".into()),
    };
    let text_field = |key: &str, required: bool| match map.get(key) {
        Some(Value::String(t)) => Ok(Some(t.clone())),
        Some(Value::Null) => Ok(None),
        None if !required => Ok(None),
        None => Err(format!("field `{key}` is missing")),
        Some(_) => Err(format!("field `{key}` must be a string or null")),
    };
    let number = |key: &str| match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(s) if s.is_finite() && s >= 0.0 => Ok(Some(s)),
            _ => Err(format!("field `{key}` must be a number >= 0, not {v}")),
        },
    };
    let seconds = match number("seconds")? {
        Some(s) => Some(s),
        None => number("time_ms")?.map(|ms| ms / 1000.0),
    };
    let samples = match number("samples")? {
        Some(n) if n.fract() == 0.0 => Some(n as usize),
        Some(n) => return Err(format!("field `samples` must be a whole number, not {n}")),
        None => None,
    };
    Ok((
        id,
        Prediction {
            line,
            output: text_field("output", true)?,
            best_of: text_field("best_of", false)?,
            seconds,
            best_of_seconds: number("best_of_time_ms")?.map(|ms| ms / 1000.0),
            samples,
            decoding: text_field("decoding", false)?,
            unconstrained: text_field("unconstrained", false)?,
        },
    ))
}

/// Reads a predictions file into a map from record id to prediction.
pub fn read_predictions(path: &Path) -> Result<HashMap<String, Prediction>, EvalError> {
    let file = std::fs::File::open(path).map_err(|e| EvalError::io(path, e))?;
    let mut out: HashMap<String, Prediction> = HashMap::new();
    for line in text_lines(std::io::BufReader::new(file)) {
        let line = line.map_err(|e| EvalError::io(path, e))?;
        if line.is_blank() {
            continue;
        }
        let line_no = line.number;
        let (id, prediction) = line
            .text
            .and_then(|text| parse_line(&text, line_no))
            .map_err(|m| EvalError::line(path, line_no, m))?;
        if let Some(first) = out.get(&id) {
            return Err(EvalError::line(
                path,
                line_no,
                format!("record id {id} already on line {}", first.line),
            ));
        }
        out.insert(id, prediction);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<HashMap<String, Prediction>, EvalError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        std::fs::write(&path, text).unwrap();
        read_predictions(&path)
    }

    #[test]
    fn reads_lines_and_names_bad_ones() {
        let p = read("{\"id\":\"a\",\"output\":\"J1 J2\",\"extra\":1}\n\n{\"id\":\"b\",\"output\":null,\"best_of\":\"J2 J1\",\"seconds\":0.5}\n").unwrap();
        assert_eq!(p["a"].output.as_deref(), Some("J1 J2"));
        assert_eq!(p["b"].line, 3);
        assert_eq!(p["b"].best_of.as_deref(), Some("J2 J1"));
        let dup =
            read("{\"id\":\"a\",\"output\":\"x\"}\n{\"id\":\"a\",\"output\":\"y\"}\n").unwrap_err();
        assert!(
            dup.to_string()
                .contains("line 2: record id a already on line 1"),
            "{dup}"
        );
        let garbage = read("{\"id\":\"a\",\"output\":\"x\"}\nnot json\n").unwrap_err();
        assert!(garbage.to_string().contains("line 2"), "{garbage}");
        let no_output = read("{\"id\":\"a\"}\n").unwrap_err();
        assert!(no_output.to_string().contains("line 1"), "{no_output}");
        assert!(read("{\"id\":\"a\",\"output\":\"x\",\"seconds\":-1}\n").is_err());
        let ms = read("{\"id\":\"a\",\"output\":\"x\",\"time_ms\":250,\"tokens\":4}\n").unwrap();
        assert_eq!(ms["a"].seconds, Some(0.25));
    }
}
