//! The instance JSON of SPEC section 1, as plain serde types.
//!
//! These types mirror the file format one to one. They are deliberately loose (signed integers,
//! optional fields) so that a bad value reaches [`crate::validate()`] and gets an error that names
//! the job and the field, instead of a bare serde message.
//!
//! A field the schema does not know (`"dep"` for `"deps"`) is an error naming it and its job
//! ([`UnknownField`]), unless the reader asks to ignore such fields ([`UnknownFields::Ignore`],
//! for files written by a newer schedlm); `meta` is free JSON and holds anything.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lines::excerpt;

/// Integer seconds, as every time in an instance.
pub type Time = i64;

/// One snapshot of a cluster: servers, running jobs and the queue to order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    /// The snapshot time.
    pub now: Time,
    /// Names of the resources; every capacity and demand vector has this length.
    pub resources: Vec<String>,
    /// The servers, in instance order (the dispatcher's tie-break).
    pub servers: Vec<Server>,
    /// Jobs already running at `now`.
    #[serde(default)]
    pub running: Vec<RunningJob>,
    /// Jobs waiting to be ordered.
    pub queue: Vec<QueuedJob>,
}

/// A server and its capacity per resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// Server id, unique across servers, running and queued jobs; running jobs name it in
    /// `server`.
    pub id: String,
    /// Capacity per resource, one non-negative amount per entry of `resources`, in that order.
    pub capacity: Vec<i64>,
}

/// A job that holds `demand` on `server` from before `now` until `end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunningJob {
    /// Job id, unique across servers, running and queued jobs; queued jobs may name it in
    /// `deps`.
    pub id: String,
    /// Id of the server the job runs on (one of `servers`).
    pub server: String,
    /// Amount held per resource, in `resources` order; the running jobs of a server must
    /// fit its capacity together.
    pub demand: Vec<i64>,
    /// When the job frees its server, in seconds (> `now`); in a trace, start + requested
    /// walltime.
    pub end: Time,
}

/// A job waiting in the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueuedJob {
    /// Job id, unique across servers, running and queued jobs; an order lists the queue by
    /// these ids.
    pub id: String,
    /// Submission time in seconds (<= `now`); the wait w_j = S_j - submit counts from it.
    pub submit: Time,
    /// Amount needed per resource, in `resources` order; it must fit at least one server's
    /// capacity.
    pub demand: Vec<i64>,
    /// Requested processing time p_j, the length the scheduler plans with (>= 1).
    pub walltime: Time,
    /// True length, hidden from the scheduler; used only by online simulation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Time>,
    /// Ids of running or queued jobs that must finish before this one starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deps: Vec<String>,
    /// Weight in the `flow` objective; 1 when absent.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub weight: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Submitting user (free text, SPEC section 1); ignored by the dispatcher and objectives.
    pub user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Free JSON data about the job (SPEC section 1), e.g. `{"model": "resnet50"}`; ignored by
    /// the dispatcher. Replay snapshots keep the requested walltime here as
    /// `{"requested_walltime": w}` when the walltime field holds an estimate.
    pub meta: Option<serde_json::Value>,
}

fn one() -> f64 {
    1.0
}

fn is_one(w: &f64) -> bool {
    *w == 1.0
}

impl QueuedJob {
    /// A job with the required fields and every optional field at its default.
    pub fn new(id: impl Into<String>, submit: Time, demand: Vec<i64>, walltime: Time) -> Self {
        QueuedJob {
            id: id.into(),
            submit,
            demand,
            walltime,
            runtime: None,
            deps: Vec::new(),
            weight: 1.0,
            user: None,
            meta: None,
        }
    }
}

impl Instance {
    /// Parses one instance from JSON text; a field the schema does not know is an error
    /// (serde's, without the job: [`Instance::from_json_with`] names it).
    pub fn from_json(text: &str) -> Result<Instance, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Parses one instance from JSON text, with fields the schema does not know rejected or
    /// ignored as `unknown` says; the ignored ones are returned, for a warning. A rejected
    /// field's error names it and its job: `queue job "j3": unknown field "dep" (known: id,
    /// submit, ...)`, every such field `; `-separated.
    pub fn from_json_with(
        text: &str,
        unknown: UnknownFields,
    ) -> Result<(Instance, Vec<UnknownField>), ParseError> {
        let first = match serde_json::from_str(text) {
            Ok(instance) => return Ok((instance, Vec::new())),
            Err(e) => e,
        };
        // The slow path, only for input that does not fit the schema: find the unknown fields
        // in the JSON tree, to name them with their jobs or to drop them.
        let schema_error = || ParseError::Json(crate::lines::bounded(&first.to_string()));
        let Ok(mut value) = serde_json::from_str::<Value>(text) else {
            return Err(schema_error());
        };
        let found = unknown_fields(&value);
        if found.is_empty() {
            return Err(schema_error());
        }
        if unknown == UnknownFields::Reject {
            return Err(ParseError::Unknown(found));
        }
        strip_unknown(&mut value);
        let instance = serde_json::from_value(value)
            .map_err(|e| ParseError::Json(crate::lines::bounded(&e.to_string())))?;
        Ok((instance, found))
    }

    /// The instance as one line of JSON.
    pub fn to_json(&self) -> String {
        // Serialising these plain types cannot fail: every map key is a string and every
        // float is finite after validation (and serde_json writes non-finite floats as null).
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Why a text is not an instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Not JSON, or JSON of another shape (a missing field, a string for a number): the
    /// parser's message, bounded ([`crate::lines::bounded`]).
    Json(String),
    /// Fields the schema does not know, under [`UnknownFields::Reject`]: every one found.
    Unknown(Vec<UnknownField>),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Json(e) => write!(f, "not an instance: {e}"),
            ParseError::Unknown(fields) => {
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        write!(f, "; ")?;
                    }
                    write!(f, "{field}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// The fields of the instance object (SPEC section 1), in the schema's order.
pub const INSTANCE_FIELDS: &[&str] = &["now", "resources", "servers", "running", "queue"];
/// The fields of a server.
pub const SERVER_FIELDS: &[&str] = &["id", "capacity"];
/// The fields of a running job.
pub const RUNNING_FIELDS: &[&str] = &["id", "server", "demand", "end"];
/// The fields of a queued job (`meta` is free JSON: what it holds is never unknown).
pub const QUEUED_FIELDS: &[&str] = &[
    "id", "submit", "demand", "walltime", "runtime", "deps", "weight", "user", "meta",
];

/// What a reader does with a field the instance schema does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownFields {
    /// An error that names the field and its job (the default: a typo such as `"dep"` for
    /// `"deps"` would otherwise drop a constraint without a word).
    #[default]
    Reject,
    /// Accepted and left out of the parsed instance, reported back for one warning (files
    /// written by a newer schedlm: `--allow-unknown-fields`).
    Ignore,
}

impl UnknownFields {
    /// Whether unknown fields are rejected (the default).
    pub fn is_reject(&self) -> bool {
        *self == UnknownFields::Reject
    }
}

/// A field of an instance that the schema does not know, with what holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    /// What holds it: `"instance"`, `"server"`, `"running job"` or `"queue job"`.
    pub kind: &'static str,
    /// How the message names the holder: its id as an escaped, bounded excerpt (`"j3"`), or
    /// its 1-based position when it has no string id (`#3`); empty for the instance.
    pub holder: String,
    /// The field's name.
    pub field: String,
}

impl UnknownField {
    /// The fields its holder knows.
    pub fn known(&self) -> &'static [&'static str] {
        match self.kind {
            "server" => SERVER_FIELDS,
            "running job" => RUNNING_FIELDS,
            "queue job" => QUEUED_FIELDS,
            _ => INSTANCE_FIELDS,
        }
    }

    /// What holds the field and the field, without the job: `queue job field "dep"`, the
    /// key under which a warning groups the same field of many jobs.
    pub fn place(&self) -> String {
        match self.kind {
            "instance" => format!("top-level field {}", excerpt(&self.field)),
            kind => format!("{kind} field {}", excerpt(&self.field)),
        }
    }
}

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind == "instance" {
            write!(f, "the instance")?;
        } else {
            write!(f, "{} {}", self.kind, self.holder)?;
        }
        write!(
            f,
            ": unknown field {} (known: {})",
            excerpt(&self.field),
            self.known().join(", ")
        )
    }
}

/// The members of an instance's JSON objects that the schema does not know: at the top level,
/// in `servers`, `running` and `queue` (not inside `meta`, which is free). Members of a shape
/// the schema cannot read (a `queue` that is not an array) are left to the parser's error.
pub fn unknown_fields(value: &Value) -> Vec<UnknownField> {
    let mut out = Vec::new();
    let Some(top) = value.as_object() else {
        return out;
    };
    extra(top, INSTANCE_FIELDS, "instance", String::new(), &mut out);
    for (key, kind, known) in [
        ("servers", "server", SERVER_FIELDS),
        ("running", "running job", RUNNING_FIELDS),
        ("queue", "queue job", QUEUED_FIELDS),
    ] {
        let Some(items) = top.get(key).and_then(Value::as_array) else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            if let Some(object) = item.as_object() {
                let holder = match object.get("id").and_then(Value::as_str) {
                    Some(id) => excerpt(id),
                    None => format!("#{}", i + 1),
                };
                extra(object, known, kind, holder, &mut out);
            }
        }
    }
    out
}

fn extra(
    object: &serde_json::Map<String, Value>,
    known: &[&str],
    kind: &'static str,
    holder: String,
    out: &mut Vec<UnknownField>,
) {
    for field in object.keys().filter(|k| !known.contains(&k.as_str())) {
        out.push(UnknownField {
            kind,
            holder: holder.clone(),
            field: field.clone(),
        });
    }
}

/// Removes the members [`unknown_fields`] reports.
fn strip_unknown(value: &mut Value) {
    let Some(top) = value.as_object_mut() else {
        return;
    };
    top.retain(|k, _| INSTANCE_FIELDS.contains(&k.as_str()));
    for (key, known) in [
        ("servers", SERVER_FIELDS),
        ("running", RUNNING_FIELDS),
        ("queue", QUEUED_FIELDS),
    ] {
        if let Some(items) = top.get_mut(key).and_then(Value::as_array_mut) {
            for object in items.iter_mut().filter_map(Value::as_object_mut) {
                object.retain(|k, _| known.contains(&k.as_str()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"{"now": 10, "resources": ["cores"],
        "servers": [{"id": "n0", "capacity": [4]}],
        "running": [{"id": "r1", "server": "n0", "demand": [1], "end": 20}],
        "queue": [{"id": "j1", "submit": 0, "demand": [1], "walltime": 5,
                   "runtime": 4, "deps": ["r1"], "weight": 2, "user": "u",
                   "meta": {"anything": {"at": ["all"]}}}]}"#;

    /// The lists of known fields are the types' fields: a full instance written out has
    /// exactly these keys.
    #[test]
    fn known_fields_are_the_schemas() {
        let instance = Instance::from_json(ONE).unwrap();
        let value: Value = serde_json::from_str(&instance.to_json()).unwrap();
        let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
        assert_eq!(keys(&value), INSTANCE_FIELDS);
        assert_eq!(keys(&value["servers"][0]), SERVER_FIELDS);
        assert_eq!(keys(&value["running"][0]), RUNNING_FIELDS);
        assert_eq!(keys(&value["queue"][0]), QUEUED_FIELDS);
        assert!(unknown_fields(&value).is_empty());
    }

    #[test]
    fn an_unknown_field_is_named_with_its_job() {
        let typo = ONE.replace("\"deps\"", "\"dep\"");
        assert!(Instance::from_json(&typo).is_err());
        let e = Instance::from_json_with(&typo, UnknownFields::Reject)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("queue job \"j1\": unknown field \"dep\" (known: id, submit, demand,"),
            "{e}"
        );
        let (instance, ignored) = Instance::from_json_with(&typo, UnknownFields::Ignore).unwrap();
        assert!(instance.queue[0].deps.is_empty());
        assert_eq!(ignored.len(), 1);
        assert_eq!(ignored[0].place(), "queue job field \"dep\"");
    }

    #[test]
    fn unknown_fields_everywhere_but_meta() {
        let text = ONE
            .replace("\"now\"", "\"extra\": 1, \"now\"")
            .replace("\"capacity\"", "\"cap\": 1, \"capacity\"")
            .replace("\"end\"", "\"\\u001b[2J\": 1, \"end\"");
        let e = Instance::from_json_with(&text, UnknownFields::Reject)
            .unwrap_err()
            .to_string();
        let parts: Vec<&str> = e.split("; ").collect();
        assert_eq!(parts.len(), 3, "{e}");
        assert!(parts[0].starts_with("the instance: unknown field \"extra\" (known: now,"));
        assert!(parts[1].starts_with("server \"n0\": unknown field \"cap\""));
        assert!(parts[2].starts_with("running job \"r1\": unknown field \"\\u{1b}[2J\""));
        assert!(!e.contains('\u{1b}'));
        let (instance, ignored) = Instance::from_json_with(&text, UnknownFields::Ignore).unwrap();
        assert_eq!(ignored.len(), 3);
        assert_eq!(instance, Instance::from_json(ONE).unwrap());
    }

    #[test]
    fn a_job_without_an_id_is_named_by_position_and_bad_json_keeps_its_error() {
        let text = r#"{"now": 0, "resources": ["c"], "servers": [], "queue": [{"x": 1}]}"#;
        let e = Instance::from_json_with(text, UnknownFields::Reject)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("queue job #1: unknown field \"x\""), "{e}");
        let e = Instance::from_json_with("{\"now\": \"x\"}", UnknownFields::Ignore)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("not an instance: invalid type"), "{e}");
    }
}
