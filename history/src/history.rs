//! Job history: past training jobs, what they asked for and what they did, in an SQLite file;
//! similar-job matching and duration prediction over it.
//!
//! A job enters the history as the facts [`schedlm_knowledge::extract()`] read from its files, with its
//! requested and actual run times and its outcome ([`History::add`]). A new job is matched
//! with the past jobs by [`schedlm_generator::similar`] (the matcher the trace estimator
//! `similar` uses, scored on real traces in docs/knowledge.md) over
//!
//! - kinds: model, dataset, training script, precision;
//! - sizes: total GPUs, global batch size, sequence length, max steps, epochs;
//!
//! and its duration is predicted as the actual run time of the nearest completed job, the most
//! recent one on ties, capped at the new job's requested time ([`predict`]).
//!
//! ```
//! use schedlm_history::history::{History, MatchBy, NewJob, Outcome, Query, predict};
//! use schedlm_knowledge::{facts::{Field, Source}, JobFacts, Strength};
//! use serde_json::json;
//!
//! let facts = |model: &str, gpus: u64| {
//!     let mut f = JobFacts::default();
//!     f.set(Field::Model, json!(model), Source::line("run.sh", 3), 1.0, Strength::Script);
//!     f.set(Field::GpusPerNode, json!(gpus), Source::line("run.sh", 1), 1.0, Strength::Header);
//!     f
//! };
//! let history = History::open_in_memory().unwrap();
//! let job = |name: &str, model, gpus, actual| NewJob {
//!     name: name.into(), user: None, facts: facts(model, gpus),
//!     requested_s: Some(36_000), actual_s: Some(actual), outcome: Outcome::Completed,
//!     embedding: None, accounting: Default::default(),
//! };
//! history.add(&job("a", "gpt2", 8, 3_600)).unwrap();
//! history.add(&job("b", "llama-7b", 8, 20_000)).unwrap();
//! let past = history.jobs().unwrap();
//! let query = Query { facts: &facts("llama-7b", 16), embedding: None };
//! let p = predict(&past, query, Some(18_000), 3, MatchBy::Meta).unwrap();
//! assert_eq!(p.seconds, 18_000); // job b's 20,000 s, capped at the request
//! assert_eq!(p.matches[0].name, "b");
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use rusqlite::{params, Connection, OptionalExtension};
use schedlm_generator::similar::{self, kind_of, Descriptor};
use serde::{Deserialize, Serialize};

use schedlm_knowledge::embed::{comparable, cosine, Embedding};
use schedlm_knowledge::facts::{FactValue, Field, JobFacts};

/// The store's schema version (SQLite `PRAGMA user_version`); a file of another version is
/// refused rather than misread.
pub const SCHEMA_VERSION: i64 = 5;

/// How past jobs are matched with a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MatchBy {
    /// Normalised metadata ([`descriptor`]): the default.
    #[default]
    Meta,
    /// Sentence embeddings of command and files ([`schedlm_knowledge::embed`]): the highest cosine.
    Text,
}

impl FromStr for MatchBy {
    type Err = String;
    fn from_str(s: &str) -> Result<MatchBy, String> {
        match s {
            "meta" => Ok(MatchBy::Meta),
            "text" => Ok(MatchBy::Text),
            _ => Err(format!("expected meta or text, got {s:?}")),
        }
    }
}

/// Parses an instant: Unix seconds, or a UTC time `YYYY-MM-DDTHH:MM:SS` (sacct's format; a
/// space also separates date and time).
pub fn parse_instant(s: &str) -> Result<i64, String> {
    if let Ok(seconds) = s.parse::<i64>() {
        return Ok(seconds);
    }
    let time = humantime::parse_rfc3339_weak(s).map_err(|e| {
        format!("`{s}` is neither Unix seconds nor a time as 2026-11-28T02:36:16 ({e})")
    })?;
    let since = (time.duration_since(std::time::UNIX_EPOCH))
        .map_err(|_| format!("`{s}` is before 1970"))?;
    i64::try_from(since.as_secs()).map_err(|_| format!("`{s}` is too far in the future"))
}

/// How a past job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Ran to its end.
    Completed,
    /// Stopped with an error (the failure class is in the facts when a log said it).
    Failed,
    /// Killed at its time limit.
    Timeout,
    /// Cancelled by its user or an administrator.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 4] = [
        Outcome::Completed,
        Outcome::Failed,
        Outcome::Timeout,
        Outcome::Cancelled,
    ];

    /// The name stored and printed.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Outcome {
    type Err = HistoryError;

    fn from_str(s: &str) -> Result<Outcome, HistoryError> {
        Outcome::ALL
            .into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| HistoryError::Outcome(s.to_string()))
    }
}

/// Why the history could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// SQLite refused an operation (the file, and what was being done, are named).
    #[error("{what}: {source}")]
    Sqlite {
        /// What was being done, with the file.
        what: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The file was written by another schema version.
    #[error("{path} has history schema version {found}; this schedlm reads version {expected}")]
    Version {
        /// The file.
        path: String,
        /// Its `user_version`.
        found: i64,
        /// [`SCHEMA_VERSION`].
        expected: i64,
    },
    /// A stored row does not parse (a column of job `id`).
    #[error("history job {id}: column {column}: {message}")]
    Row {
        /// The job's id.
        id: i64,
        /// The column.
        column: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The file is a damaged database (SQLite's integrity check failed): nothing is written.
    #[error("{path} is a damaged history database ({detail}); nothing was written: restore it from a copy or start a new file")]
    Malformed {
        /// The file.
        path: String,
        /// What SQLite's `quick_check` reported first.
        detail: String,
    },
    /// An outcome name that is not one of [`Outcome::ALL`].
    #[error("unknown outcome \"{0}\"; expected one of: completed, failed, timeout, cancelled")]
    Outcome(String),
    /// A run time that is not a positive number of seconds (the field is named).
    #[error("{field} must be a positive number of seconds, got {value}")]
    Seconds {
        /// `requested_s` or `actual_s`.
        field: &'static str,
        /// The value given.
        value: i64,
    },
    /// An accounting record in which the job starts before it was submitted.
    #[error("the job starts (start {start}) before it was submitted (submit {submit})")]
    StartBeforeSubmit {
        /// The submit time given.
        submit: i64,
        /// The start time given.
        start: i64,
    },
    /// Text matching was asked for a job without an embedding.
    #[error(
        "the job has no embedding to match by text: extract it with `schedlm extract --embed DIR`"
    )]
    NoEmbedding,
    /// The history is locked by a writer: a look-up does not wait ([`History::open_for_lookup`]).
    #[error("{path} is locked by a writer (a look-up does not wait)")]
    Busy {
        /// The file.
        path: String,
    },
    /// A look-up ran past its deadline and was stopped ([`History::open_for_lookup`]).
    #[error("the look-up in {path} ran past its deadline")]
    Deadline {
        /// The file.
        path: String,
    },
    /// The file is of an older schema, without the look-ups' indexes: a look-up never writes,
    /// so it is not upgraded there.
    #[error(
        "{path} has history schema version {found}, without the look-up indexes: any \
         `schedlm history` command that writes (`history add`) upgrades it"
    )]
    NotIndexed {
        /// The file.
        path: String,
        /// Its `user_version`.
        found: i64,
    },
    /// Nothing to predict from: no completed job with an actual run time, and no request.
    #[error(
        "no prediction: the history has no completed job with an actual run time, and the job \
         requests no time"
    )]
    Nothing,
    /// A history that a reader needs is not there (reading never creates one).
    #[error("{0}: no such history (`schedlm history add` creates it)")]
    Missing(PathBuf),
    /// A new history is to be written where one with jobs is.
    #[error("{0} already holds jobs: a synthetic history is written into a new file")]
    NotNew(PathBuf),
    /// The job's facts cannot be read.
    #[error("{source_name}: {reason}")]
    JobFacts {
        /// The file, or `standard input`.
        source_name: String,
        /// What is wrong.
        reason: String,
    },
    /// The job's requested time fact is not a positive number of seconds.
    #[error("the job's requested_time_s ({value} at {at}) is not a positive number of seconds")]
    RequestedTime {
        /// The value.
        value: String,
        /// Where it was read.
        at: String,
    },
}

/// A job to add.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// A label (the job directory, or a name the user gives).
    pub name: String,
    /// Who submitted it, when known.
    pub user: Option<String>,
    /// What extraction read.
    pub facts: JobFacts,
    /// The requested time limit in seconds.
    pub requested_s: Option<i64>,
    /// How long it ran, in seconds.
    pub actual_s: Option<i64>,
    /// How it ended.
    pub outcome: Outcome,
    /// The sentence embedding of its command and files, when extraction made one.
    pub embedding: Option<Embedding>,
    /// When it was submitted and started and how many GPUs it held, from the cluster's
    /// accounting (`sacct`), when recorded: what a replay of the history needs.
    pub accounting: Accounting,
}

/// A job's record in the cluster's accounting: what `sacct` says of it (`Submit`, `Start`,
/// the GPUs of `AllocTRES`). Times are Unix seconds. The replay of a history
/// ([`crate::deployed`]) replays the jobs that have all three and an actual run time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Accounting {
    /// When it was submitted.
    pub submit: Option<i64>,
    /// When it started.
    pub start: Option<i64>,
    /// The GPUs it held.
    pub gpus: Option<u32>,
}

/// A job of the history, with its id (1, 2, ... in the order added).
#[derive(Debug, Clone, PartialEq)]
pub struct PastJob {
    /// Its row id.
    pub id: i64,
    /// The job as added.
    pub job: NewJob,
}

/// An open history file.
pub struct History {
    pub(crate) conn: Connection,
    pub(crate) path: String,
}

impl History {
    /// Opens a history that must exist already (reading never creates one).
    pub fn open_existing(path: &Path) -> Result<History, HistoryError> {
        if !path.exists() {
            return Err(HistoryError::Missing(path.to_path_buf()));
        }
        History::open(path)
    }

    /// Adds `jobs` to a history that holds none yet (a synthetic history is never mixed into
    /// a real one).
    pub fn add_new(&self, jobs: &[NewJob], path: &Path) -> Result<(), HistoryError> {
        if !self.jobs()?.is_empty() {
            return Err(HistoryError::NotNew(path.to_path_buf()));
        }
        self.add_all(jobs).map(drop)
    }

    /// Opens (creating if needed) the history at `path`.
    pub fn open(path: &Path) -> Result<History, HistoryError> {
        let shown = path.display().to_string();
        let conn = Connection::open(path).map_err(|source| HistoryError::Sqlite {
            what: format!("cannot open {shown}"),
            source,
        })?;
        History::init(conn, shown)
    }

    /// A history that lives in memory only (tests, examples).
    pub fn open_in_memory() -> Result<History, HistoryError> {
        let conn = Connection::open_in_memory().map_err(|source| HistoryError::Sqlite {
            what: "cannot open an in-memory history".into(),
            source,
        })?;
        History::init(conn, ":memory:".into())
    }

    fn init(conn: Connection, path: String) -> Result<History, HistoryError> {
        let history = History { conn, path };
        let version: i64 = history
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| history.error("cannot read the schema version", e))?;
        let tables: i64 = history
            .conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| history.error("cannot read the schema", e))?;
        if tables == 0 {
            history
                .conn
                .execute_batch(&format!(
                    "CREATE TABLE jobs (
                        id INTEGER PRIMARY KEY,
                        name TEXT NOT NULL,
                        user TEXT,
                        facts TEXT NOT NULL,
                        requested_s INTEGER,
                        actual_s INTEGER,
                        outcome TEXT NOT NULL,
                        embedding_model TEXT,
                        embedding BLOB,
                        submit INTEGER,
                        start INTEGER,
                        gpus INTEGER,
                        {columns}
                    );
                    {indexes}
                    {descriptors}
                    PRAGMA user_version = {SCHEMA_VERSION};",
                    columns = crate::lookup::COLUMNS_SQL,
                    indexes = crate::lookup::INDEXES_SQL,
                    descriptors = crate::lookup::descriptors_sql(),
                ))
                .map_err(|e| history.error("cannot create the jobs table", e))?;
        } else if (1..SCHEMA_VERSION).contains(&version) {
            history.check_integrity()?;
            history.upgrade(version)?;
        } else if version != SCHEMA_VERSION {
            return Err(HistoryError::Version {
                path: history.path,
                found: version,
                expected: SCHEMA_VERSION,
            });
        } else {
            history.check_integrity()?;
        }
        Ok(history)
    }

    /// SQLite's `quick_check` (pages, records, indexes; linear in the file's size): a damaged
    /// file is refused before anything reads or writes it.
    fn check_integrity(&self) -> Result<(), HistoryError> {
        let first: String = self
            .conn
            .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
            .map_err(|e| HistoryError::Malformed {
                path: self.path.clone(),
                detail: e.to_string(),
            })?;
        if first == "ok" {
            Ok(())
        } else {
            Err(HistoryError::Malformed {
                path: self.path.clone(),
                detail: first,
            })
        }
    }

    /// Version 1 had no embeddings, version 2 no accounting, version 3 no stored descriptors
    /// and indexes, version 4 no table of distinct descriptors (what the submission filter's
    /// look-ups read, [`crate::lookup`]): the columns and tables are added (every job without
    /// embedding or accounting, each job's descriptor computed from its facts, the distinct
    /// descriptors counted) in one transaction that first takes the write lock and reads
    /// the version again, so an interrupted or concurrent upgrade leaves the old version or
    /// the new one, never half of it.
    fn upgrade(&self, from: i64) -> Result<(), HistoryError> {
        let what = format!("cannot upgrade the schema from version {from}");
        let fail = |e| self.error(&what, e);
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
        let result = self.upgrade_locked();
        match result {
            Ok(()) => self.conn.execute_batch("COMMIT").map_err(fail),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(match e {
                    HistoryError::Sqlite { source, .. } => fail(source),
                    other => other,
                })
            }
        }
    }

    /// [`History::upgrade`] inside its transaction.
    fn upgrade_locked(&self) -> Result<(), HistoryError> {
        let fail = |e| self.error("upgrade", e);
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(fail)?;
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        let mut upgrade = String::new();
        if version == 1 {
            upgrade.push_str(
                "ALTER TABLE jobs ADD COLUMN embedding_model TEXT;
                 ALTER TABLE jobs ADD COLUMN embedding BLOB;",
            );
        }
        if version <= 2 {
            upgrade.push_str(
                "ALTER TABLE jobs ADD COLUMN submit INTEGER;
                 ALTER TABLE jobs ADD COLUMN start INTEGER;
                 ALTER TABLE jobs ADD COLUMN gpus INTEGER;",
            );
        }
        if version <= 3 {
            for column in crate::lookup::COLUMNS_SQL.split(',') {
                upgrade.push_str(&format!("ALTER TABLE jobs ADD COLUMN {};", column.trim()));
            }
            self.conn.execute_batch(&upgrade).map_err(fail)?;
            crate::lookup::fill_descriptors(&self.conn).map_err(|e| match e {
                crate::lookup::Fill::Sqlite(e) => fail(e),
                crate::lookup::Fill::Facts { id, message } => HistoryError::Row {
                    id,
                    column: "facts",
                    message,
                },
            })?;
            self.conn
                .execute_batch(crate::lookup::INDEXES_SQL)
                .map_err(fail)?;
        }
        self.conn
            .execute_batch(&crate::lookup::descriptors_sql())
            .map_err(fail)?;
        crate::lookup::fill_distinct(&self.conn).map_err(fail)?;
        self.conn
            .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))
            .map_err(fail)
    }

    pub(crate) fn error(&self, what: &str, source: rusqlite::Error) -> HistoryError {
        HistoryError::Sqlite {
            what: format!("{}: {what}", self.path),
            source,
        }
    }

    /// Adds `job` and returns its id. Idempotent: a job with the same content (name, user,
    /// facts, run times, outcome and embedding) already in the history is not added again and
    /// its id is returned, so an `add` retried after a kill (committed, id not yet printed)
    /// leaves one row. Checked and inserted in one write transaction.
    pub fn add(&self, job: &NewJob) -> Result<i64, HistoryError> {
        Ok(self.add_all(std::slice::from_ref(job))?[0])
    }

    /// Adds each of `jobs` as [`History::add`] does, all in one write transaction (one sync of
    /// the file, not one per job: `history synth` writes 100,000 jobs in seconds); their ids in
    /// order. Nothing is added when one of them is refused.
    pub fn add_all(&self, jobs: &[NewJob]) -> Result<Vec<i64>, HistoryError> {
        let fail = |e| self.error("cannot add the job", e);
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
        let mut ids = Vec::with_capacity(jobs.len());
        for job in jobs {
            match self.add_locked(job) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(e);
                }
            }
        }
        self.conn.execute_batch("COMMIT").map_err(fail)?;
        Ok(ids)
    }

    /// One job of [`History::add_all`], inside its transaction.
    fn add_locked(&self, job: &NewJob) -> Result<i64, HistoryError> {
        for (field, value) in [("requested_s", job.requested_s), ("actual_s", job.actual_s)] {
            if let Some(v) = value.filter(|&v| v <= 0) {
                return Err(HistoryError::Seconds { field, value: v });
            }
        }
        let a = job.accounting;
        if let (Some(submit), Some(start)) = (a.submit, a.start) {
            if start < submit {
                return Err(HistoryError::StartBeforeSubmit { submit, start });
            }
        }
        let facts = serde_json::to_string(&job.facts).map_err(|e| HistoryError::Row {
            id: 0,
            column: "facts",
            message: e.to_string(),
        })?;
        let fail = |e| self.error("cannot add the job", e);
        let stored = crate::lookup::Stored::of(&descriptor(&job.facts));
        let values = params![
            job.name,
            job.user,
            facts,
            job.requested_s,
            job.actual_s,
            job.outcome.name(),
            job.embedding.as_ref().map(|e| e.model.clone()),
            job.embedding.as_ref().map(|e| to_blob(&e.vector)),
            a.submit,
            a.start,
            a.gpus,
        ];
        let found = self
            .conn
            .query_row(
                "SELECT id FROM jobs WHERE name = ?1 AND user IS ?2 AND facts = ?3
                   AND requested_s IS ?4 AND actual_s IS ?5 AND outcome = ?6
                   AND embedding_model IS ?7 AND embedding IS ?8
                   AND submit IS ?9 AND start IS ?10 AND gpus IS ?11
                 ORDER BY id LIMIT 1",
                values,
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map_err(fail)?;
        if let Some(id) = found {
            return Ok(id);
        }
        // The descriptor in the same statement: the triggers that count it run once.
        let described = stored.values();
        let mut inserted: Vec<&dyn rusqlite::ToSql> = values.to_vec();
        inserted.extend(described.iter().map(|v| v as &dyn rusqlite::ToSql));
        self.conn
            .execute(
                "INSERT INTO jobs (name, user, facts, requested_s, actual_s, outcome,
                                   embedding_model, embedding, submit, start, gpus,
                                   d_k0, d_k1, d_k2, d_k3, d_k4, d_k5,
                                   d_s0, d_s1, d_s2, d_s3, d_s4, d_s5)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                         ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
                &*inserted,
            )
            .map_err(fail)?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Every job, in the order added.
    pub fn jobs(&self) -> Result<Vec<PastJob>, HistoryError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, name, user, facts, requested_s, actual_s, outcome, embedding_model,
                        embedding, submit, start, gpus
                 FROM jobs ORDER BY id",
            )
            .map_err(|e| self.error("cannot read the jobs", e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, Option<String>>(7)?,
                    r.get::<_, Option<Vec<u8>>>(8)?,
                    Accounting {
                        submit: r.get(9)?,
                        start: r.get(10)?,
                        gpus: r.get(11)?,
                    },
                ))
            })
            .map_err(|e| self.error("cannot read the jobs", e))?;
        let mut jobs = Vec::new();
        for row in rows {
            let (id, name, user, facts, requested_s, actual_s, outcome, model, blob, accounting) =
                row.map_err(|e| self.error("cannot read a job", e))?;
            let embedding = match (model, blob) {
                (Some(model), Some(blob)) => Some(Embedding {
                    model,
                    vector: from_blob(&blob).ok_or(HistoryError::Row {
                        id,
                        column: "embedding",
                        message: format!("{} bytes, not a whole number of f32", blob.len()),
                    })?,
                }),
                _ => None,
            };
            let facts = serde_json::from_str(&facts).map_err(|e| HistoryError::Row {
                id,
                column: "facts",
                message: e.to_string(),
            })?;
            let outcome = outcome
                .parse()
                .map_err(|e: HistoryError| HistoryError::Row {
                    id,
                    column: "outcome",
                    message: e.to_string(),
                })?;
            jobs.push(PastJob {
                id,
                job: NewJob {
                    name,
                    user,
                    facts,
                    requested_s,
                    actual_s,
                    outcome,
                    embedding,
                    accounting,
                },
            });
        }
        Ok(jobs)
    }
}

/// A vector as little-endian f32 bytes (the `embedding` column).
fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The vector of an `embedding` column; `None` when its length is not a multiple of 4.
fn from_blob(blob: &[u8]) -> Option<Vec<f32>> {
    blob.len().is_multiple_of(4).then(|| {
        blob.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// What the matcher compares (the module documentation lists the fields).
pub fn descriptor(facts: &JobFacts) -> Descriptor {
    let mut d = Descriptor::EMPTY;
    for (slot, field) in [
        Field::Model,
        Field::Dataset,
        Field::Script,
        Field::Precision,
    ]
    .into_iter()
    .enumerate()
    {
        if let Some(v) = facts.value(field) {
            d.kinds[slot] = kind_of(&text(v));
        }
    }
    let number = |field: Field| facts.value(field).and_then(FactValue::as_f64);
    let gpus = number(Field::GpusPerNode).map(|g| g * number(Field::Nodes).unwrap_or(1.0));
    let global = number(Field::GlobalBatchSize).or_else(|| {
        let per_device = number(Field::BatchSizePerDevice)?;
        Some(per_device * gpus? * number(Field::GradientAccumulation).unwrap_or(1.0))
    });
    let sizes = [
        gpus,
        global,
        number(Field::SequenceLength),
        number(Field::MaxSteps),
        number(Field::Epochs),
    ];
    for (slot, size) in sizes.into_iter().enumerate() {
        if let Some(size) = size {
            d.set_size(slot, size);
        }
    }
    d
}

/// What a past job adds to its distance for each fact the query states and it does not
/// ([`UNSHARED`] each, on top of [`similar::distance`]'s 1): a record with few facts is not
/// near everything.
pub(crate) fn unshared(query: &Descriptor, past: &Descriptor) -> f64 {
    let kinds = query
        .kinds
        .iter()
        .zip(&past.kinds)
        .filter(|(q, p)| **q != similar::MISSING_KIND && **p == similar::MISSING_KIND)
        .count();
    let sizes = query
        .sizes
        .iter()
        .zip(&past.sizes)
        .filter(|(q, p)| !q.is_nan() && p.is_nan())
        .count();
    UNSHARED * (kinds + sizes) as f64
}

/// Extra distance of a fact the query states and a past job does not: with it a missing fact
/// weighs 3, as much as a factor of 20 in one size, so that a nearly empty record ranks below
/// a job of the same model whose sizes differ.
pub(crate) const UNSHARED: f64 = 2.0;

/// A value as text (lists joined with `+`, in order).
fn text(value: &FactValue) -> String {
    match value {
        FactValue::Text(s) => s.clone(),
        FactValue::Texts(items) => items.join("+"),
        other => other.to_string(),
    }
}

/// A past job near the query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Neighbour {
    /// Its id in the history.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its distance to the query: by metadata [`similar::distance`], by text 1 minus the
    /// cosine similarity.
    pub distance: f64,
    /// The cosine similarity of its embedding to the query's (text matching).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// Its actual run time.
    pub actual_s: Option<i64>,
    /// Its requested time.
    pub requested_s: Option<i64>,
    /// How it ended.
    pub outcome: Outcome,
}

/// What a new job is matched by: its facts, and its embedding for text matching.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// Its extracted facts.
    pub facts: &'a JobFacts,
    /// Its embedding, if extraction made one.
    pub embedding: Option<&'a Embedding>,
}

/// The `k` past jobs nearest to `query` by `by`, nearest first, the most recent first on
/// ties; only completed jobs with an actual run time when `completed_only`. Text matching
/// needs the query's embedding ([`HistoryError::NoEmbedding`] otherwise) and considers only
/// past jobs embedded by the same model (same name and vector length).
pub fn neighbours(
    history: &[PastJob],
    query: Query,
    k: usize,
    completed_only: bool,
    by: MatchBy,
) -> Result<Vec<Neighbour>, HistoryError> {
    let usable = |p: &&PastJob| {
        !completed_only || (p.job.outcome == Outcome::Completed && p.job.actual_s.is_some())
    };
    let newest_first = history.iter().rev().filter(usable);
    let neighbour = |p: &PastJob, distance: f64, similarity: Option<f64>| Neighbour {
        id: p.id,
        name: p.job.name.clone(),
        distance,
        similarity,
        actual_s: p.job.actual_s,
        requested_s: p.job.requested_s,
        outcome: p.job.outcome,
    };
    let Some(text) = (by != MatchBy::Meta)
        .then(|| query.embedding.ok_or(HistoryError::NoEmbedding))
        .transpose()?
    else {
        let candidates: Vec<(&PastJob, Descriptor)> = newest_first
            .map(|p| (p, descriptor(&p.job.facts)))
            .collect();
        let q = descriptor(query.facts);
        let mut scored: Vec<(f64, &PastJob)> = candidates
            .iter()
            .map(|(p, d)| (similar::distance(&q, d) + unshared(&q, d), *p))
            .collect();
        // Stable: among equals the newest stays first.
        scored.sort_by(|a, b| a.0.total_cmp(&b.0));
        return Ok(scored
            .into_iter()
            .take(k)
            .map(|(distance, p)| neighbour(p, distance, None))
            .collect());
    };
    let mut scored: Vec<(f64, &PastJob)> = newest_first
        .filter_map(|p| {
            let e = p.job.embedding.as_ref().filter(|e| comparable(e, text))?;
            // A stored vector that is not a unit vector (zeros, NaN) matches nothing.
            let cos = f64::from(cosine(&text.vector, &e.vector));
            cos.is_finite().then_some((cos, p))
        })
        .collect();
    // Stable: among equals the newest stays first.
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(scored
        .into_iter()
        .take(k)
        .map(|(cos, p)| neighbour(p, 1.0 - cos, Some(cos)))
        .collect())
}

/// A predicted duration and what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Predicted run time in seconds.
    pub seconds: i64,
    /// How it was made: `nearest` (the nearest completed job's run time), `nearest, scaled by
    /// epochs (2 / 1)` (by the ratio of the work the two jobs state: their `max_steps`, else
    /// their `epochs`), `nearest, not scaled: ...` (the jobs differ in work and one of them does
    /// not say by how much), each with `, capped at the request` when the request is lower; or
    /// `request` (no completed job to match).
    pub basis: String,
    /// The nearest completed jobs (at most `k`), nearest first.
    pub matches: Vec<Neighbour>,
}

/// The work fields a run time scales with, strongest first: the two jobs' ratio of the first
/// one both state.
const WORK_FIELDS: [Field; 2] = [Field::MaxSteps, Field::Epochs];

/// How the nearest job's run time is scaled to the query: the factor and a note for the
/// prediction's basis (empty when nothing differs).
fn work_scale(query: &JobFacts, neighbour: &JobFacts) -> (f64, String) {
    let number = |f: &JobFacts, field: Field| {
        f.value(field)
            .and_then(FactValue::as_f64)
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    for field in WORK_FIELDS {
        match (number(query, field), number(neighbour, field)) {
            (Some(q), Some(n)) if q == n => return (1.0, String::new()),
            (Some(q), Some(n)) => return (q / n, format!(", scaled by {field} ({q} / {n})")),
            (Some(_), None) => {
                return (
                    1.0,
                    format!(", not scaled: the past job's {field} is unknown"),
                )
            }
            (None, Some(_)) => {
                return (1.0, format!(", not scaled: this job's {field} is unknown"))
            }
            (None, None) => {}
        }
    }
    (1.0, String::new())
}

/// Predicts the duration of a job with `facts` and `requested_s` from `history`: the actual run
/// time of the nearest completed job, scaled by the ratio of the work both state (steps, else
/// epochs), capped at the request; the request when nothing matches.
pub fn predict(
    history: &[PastJob],
    query: Query,
    requested_s: Option<i64>,
    k: usize,
    by: MatchBy,
) -> Result<Prediction, HistoryError> {
    let matches = neighbours(history, query, k.max(1), true, by)?;
    let nearest = matches
        .first()
        .and_then(|m| history.iter().find(|p| p.id == m.id))
        .map(|p| &p.job.facts);
    predict_from(query.facts, matches, nearest, requested_s)
}

/// The prediction from the nearest completed jobs `matches` (nearest first) and the facts of
/// the first (`nearest`): [`predict`]'s rule, shared with the indexed look-up
/// ([`crate::lookup::predict_indexed`]).
pub(crate) fn predict_from(
    facts: &JobFacts,
    matches: Vec<Neighbour>,
    nearest: Option<&JobFacts>,
    requested_s: Option<i64>,
) -> Result<Prediction, HistoryError> {
    let nearest = matches.first().and_then(|m| {
        let run = m.actual_s?;
        let (factor, note) = work_scale(facts, nearest?);
        Some((((run as f64) * factor).round().max(1.0) as i64, note))
    });
    let (seconds, basis) = match (nearest, requested_s) {
        (Some((run, note)), Some(cap)) if run > cap => {
            (cap, format!("nearest{note}, capped at the request"))
        }
        (Some((run, note)), _) => (run, format!("nearest{note}")),
        (None, Some(cap)) => (cap, "request".to_string()),
        (None, None) => return Err(HistoryError::Nothing),
    };
    Ok(Prediction {
        seconds,
        basis,
        matches,
    })
}

impl PastJob {
    /// The job as `schedlm history list` prints it: id, name, user, requested and actual
    /// seconds, outcome, the embedding's model, accounting and facts.
    pub fn listing(&self) -> serde_json::Value {
        let (job, accounting) = (&self.job, &self.job.accounting);
        serde_json::json!({
            "id": self.id,
            "name": job.name,
            "user": job.user,
            "requested_s": job.requested_s,
            "actual_s": job.actual_s,
            "outcome": job.outcome,
            "embedding_model": job.embedding.as_ref().map(|e| &e.model),
            "submit": accounting.submit,
            "start": accounting.start,
            "gpus": accounting.gpus,
            "facts": job.facts,
        })
    }
}

/// The output of `schedlm extract` at `path`, or on standard input for `-`.
pub fn read_extraction(path: &Path) -> Result<schedlm_knowledge::Extraction, HistoryError> {
    let stdin = path == Path::new("-");
    let source_name = if stdin {
        "standard input".into()
    } else {
        path.display().to_string()
    };
    let failed = |reason: String| HistoryError::JobFacts {
        source_name: source_name.clone(),
        reason,
    };
    let text = if stdin {
        schedlm_model::lines::read_to_string_bounded(std::io::stdin())
    } else {
        schedlm_model::lines::read_bounded(path)
    };
    let text = text.map_err(|e| failed(format!("cannot read the job's facts: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        failed(format!(
            "not the output of `schedlm extract` (a JSON object with `dir` and `facts`): {e}"
        ))
    })
}

/// The job's `requested_time_s` fact, if it has one (it must be a positive integer).
pub fn requested_fact(facts: &JobFacts) -> Result<Option<i64>, HistoryError> {
    facts
        .positive_count(Field::RequestedTimeS)
        .map_err(|fact| HistoryError::RequestedTime {
            value: fact.value.to_string(),
            at: fact.source.to_string(),
        })
}

/// How many past jobs text matching leaves out for a job embedded as `embedding` (no
/// embedding, or one from another model), said so that a thin match is not mistaken for a
/// thin history; `None` when none is, or matching is by metadata only.
pub fn unembedded_note(
    past: &[PastJob],
    embedding: Option<&Embedding>,
    by: MatchBy,
) -> Option<String> {
    let query = embedding.filter(|_| by != MatchBy::Meta)?;
    let comparable =
        |p: &&PastJob| (p.job.embedding.as_ref()).is_some_and(|e| comparable(e, query));
    let left_out = past.len() - past.iter().filter(comparable).count();
    (left_out > 0).then(|| {
        format!(
            "{left_out} of {} past job(s) have no embedding by {} and are not matched by text",
            past.len(),
            query.model
        )
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use schedlm_knowledge::facts::Strength;
    use serde_json::json;

    /// Facts from (field name, value) pairs, each read once from a script line.
    pub(crate) fn facts(fields: &[(&str, serde_json::Value)]) -> JobFacts {
        let mut f = JobFacts::default();
        for (name, value) in fields {
            f.set(
                name.parse().unwrap(),
                value.clone(),
                schedlm_knowledge::facts::Source::line("t", 1),
                1.0,
                Strength::Script,
            );
        }
        f
    }

    fn job(name: &str, f: JobFacts, actual: Option<i64>, outcome: Outcome) -> NewJob {
        NewJob {
            name: name.into(),
            user: Some("ana".into()),
            facts: f,
            requested_s: Some(10_000),
            actual_s: actual,
            outcome,
            embedding: None,
            accounting: Default::default(),
        }
    }

    #[test]
    fn a_record_with_few_facts_is_not_near_everything() {
        let megatron = |nodes: i64, batch: i64, seq: i64, steps: i64| {
            facts(&[
                ("model", json!("llama-7b")),
                ("script", json!("pretrain_gpt.py")),
                ("gpus_per_node", json!(8)),
                ("nodes", json!(nodes)),
                ("global_batch_size", json!(batch)),
                ("sequence_length", json!(seq)),
                ("max_steps", json!(steps)),
            ])
        };
        // The same model and script at another scale: 7.2 apart by the sizes (ln 16 + ln 8 +
        // ln 2 + ln 5); the nearly empty record is 5 apart by plain distance (a script and four
        // sizes missing), and used to come first.
        let past: Vec<NewJob> = [
            job(
                "other-size",
                megatron(4, 256, 2048, 20_000),
                Some(50_000),
                Outcome::Completed,
            ),
            job(
                "empty",
                facts(&[("model", json!("llama-7b"))]),
                Some(60),
                Outcome::Completed,
            ),
        ]
        .into_iter()
        .collect();
        let past = numbered(past);
        let q = megatron(64, 2048, 4096, 100_000);
        let query = Query {
            facts: &q,
            embedding: None,
        };
        let found = neighbours(&past, query, 2, true, MatchBy::Meta).unwrap();
        assert_eq!(found[0].name, "other-size", "{found:?}");
        assert!(
            similar::distance(&descriptor(&q), &descriptor(&past[1].job.facts)) < found[0].distance
        );
        // Five times the steps of the nearest job: five times its run time.
        let p = predict(&past, query, Some(1_000_000), 1, MatchBy::Meta).unwrap();
        assert_eq!(p.seconds, 250_000);
        assert_eq!(p.basis, "nearest, scaled by max_steps (100000 / 20000)");
        // A job that states no steps is predicted unscaled, and says why.
        let bare = facts(&[
            ("model", json!("llama-7b")),
            ("script", json!("pretrain_gpt.py")),
        ]);
        let p = predict(
            &past[..1],
            Query {
                facts: &bare,
                embedding: None,
            },
            Some(30_000),
            1,
            MatchBy::Meta,
        )
        .unwrap();
        assert_eq!(p.seconds, 30_000);
        assert_eq!(
            p.basis,
            "nearest, not scaled: this job's max_steps is unknown, capped at the request"
        );
    }

    #[test]
    fn adding_the_same_job_again_returns_its_first_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        let a = job(
            "a",
            facts(&[("model", json!("gpt2"))]),
            Some(3600),
            Outcome::Completed,
        );
        let first = History::open(&path).unwrap().add(&a).unwrap();
        // A retry after a kill opens the file anew and adds the same content.
        let again = History::open(&path).unwrap().add(&a).unwrap();
        assert_eq!(first, again);
        let other = job(
            "a",
            facts(&[("model", json!("gpt2"))]),
            Some(3601),
            Outcome::Completed,
        );
        let h = History::open(&path).unwrap();
        assert_ne!(h.add(&other).unwrap(), first);
        let e = embedded(a.clone(), "m", [1.0, 0.0]);
        let with = h.add(&e).unwrap();
        assert_eq!(h.add(&e).unwrap(), with);
        assert_eq!(h.jobs().unwrap().len(), 3);
    }

    #[test]
    fn a_damaged_file_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        {
            let h = History::open(&path).unwrap();
            for k in 0..200 {
                let f = facts(&[("model", json!(format!("model-{k}-{}", "x".repeat(200))))]);
                h.add(&job(&format!("j{k}"), f, Some(60 + k), Outcome::Completed))
                    .unwrap();
            }
        }
        let mut bytes = std::fs::read(&path).unwrap();
        let half = bytes.len() / 2;
        bytes[half..half + 4096].fill(0xA5);
        std::fs::write(&path, &bytes).unwrap();
        let e = match History::open(&path) {
            Err(e) => e.to_string(),
            Ok(h) => h
                .add(&job("new", JobFacts::default(), None, Outcome::Failed))
                .map(|id| format!("added as {id}"))
                .unwrap_or_else(|e| e.to_string()),
        };
        assert!(e.contains("damaged") || e.contains("malformed"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing was written");
        std::fs::write(
            &path,
            "this is not a database, it is a text file\n".repeat(200),
        )
        .unwrap();
        assert!(History::open(&path).is_err());
    }

    /// Past jobs with ids 1, 2, ... in order.
    fn numbered(jobs: Vec<NewJob>) -> Vec<PastJob> {
        jobs.into_iter()
            .enumerate()
            .map(|(i, job)| PastJob {
                id: i as i64 + 1,
                job,
            })
            .collect()
    }

    fn embedded(mut job: NewJob, model: &str, vector: [f32; 2]) -> NewJob {
        job.embedding = Some(Embedding {
            model: model.into(),
            vector: vector.to_vec(),
        });
        job
    }

    #[test]
    fn text_matching_ranks_by_cosine_within_one_model() {
        let gpt2 = || facts(&[("model", json!("gpt2"))]);
        let llama = || facts(&[("model", json!("llama"))]);
        let history = History::open_in_memory().unwrap();
        for j in [
            embedded(
                job("near", llama(), Some(100), Outcome::Completed),
                "m",
                [0.8, 0.6],
            ),
            embedded(
                job("far", gpt2(), Some(200), Outcome::Completed),
                "m",
                [0.0, 1.0],
            ),
            embedded(
                job("other-model", gpt2(), Some(300), Outcome::Completed),
                "x",
                [1.0, 0.0],
            ),
            job("no-embedding", gpt2(), Some(400), Outcome::Completed),
        ] {
            history.add(&j).unwrap();
        }
        let past = history.jobs().unwrap();
        assert_eq!(past[0].job.embedding.as_ref().unwrap().vector, [0.8, 0.6]);
        let q = gpt2();
        let e = Embedding {
            model: "m".into(),
            vector: vec![1.0, 0.0],
        };
        let query = Query {
            facts: &q,
            embedding: Some(&e),
        };
        let names = |by| {
            neighbours(&past, query, 5, true, by)
                .unwrap()
                .into_iter()
                .map(|n| n.name)
                .collect::<Vec<_>>()
        };
        // By text: the highest cosine first; other models and unembedded jobs left out.
        assert_eq!(names(MatchBy::Text), ["near", "far"]);
        // By metadata: every job; the newest first among the gpt2 ties.
        assert_eq!(
            names(MatchBy::Meta),
            ["no-embedding", "other-model", "far", "near"]
        );
        let near = &neighbours(&past, query, 1, true, MatchBy::Text).unwrap()[0];
        assert!((near.similarity.unwrap() - 0.8).abs() < 1e-6);
        assert!((near.distance - 0.2).abs() < 1e-6);
    }

    #[test]
    fn a_version_1_file_is_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, user TEXT,
                 facts TEXT NOT NULL, requested_s INTEGER, actual_s INTEGER,
                 outcome TEXT NOT NULL);
             INSERT INTO jobs (name, facts, actual_s, outcome)
                 VALUES ('old', '{}', 60, 'completed');
             PRAGMA user_version = 1;",
        )
        .unwrap();
        drop(conn);
        let history = History::open(&path).unwrap();
        let new = embedded(
            job("new", JobFacts::default(), Some(5), Outcome::Completed),
            "m",
            [0.6, 0.8],
        );
        history.add(&new).unwrap();
        let past = History::open(&path).unwrap().jobs().unwrap();
        assert_eq!(past.len(), 2);
        assert_eq!(
            (past[0].job.name.as_str(), past[0].job.embedding.is_none()),
            ("old", true)
        );
        assert_eq!(past[1].job.embedding, new.embedding);
    }

    #[test]
    fn a_version_2_file_gains_the_accounting_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, user TEXT,
                 facts TEXT NOT NULL, requested_s INTEGER, actual_s INTEGER,
                 outcome TEXT NOT NULL, embedding_model TEXT, embedding BLOB);
             INSERT INTO jobs (name, facts, actual_s, outcome)
                 VALUES ('old', '{}', 60, 'completed');
             PRAGMA user_version = 2;",
        )
        .unwrap();
        drop(conn);
        let history = History::open(&path).unwrap();
        let mut new = job("new", JobFacts::default(), Some(5), Outcome::Completed);
        new.accounting = Accounting {
            submit: Some(100),
            start: Some(160),
            gpus: Some(8),
        };
        history.add(&new).unwrap();
        let past = History::open(&path).unwrap().jobs().unwrap();
        assert_eq!(past[0].job.accounting, Accounting::default());
        assert_eq!(past[1].job.accounting, new.accounting);
        let version: i64 = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        // An accounting record that starts before its submission is refused.
        new.accounting.start = Some(99);
        let e = history.add(&new).unwrap_err().to_string();
        assert!(e.contains("before it was submitted"), "{e}");
    }

    #[test]
    fn jobs_survive_reopening_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        let a = job(
            "a",
            facts(&[("model", json!("gpt2"))]),
            Some(60),
            Outcome::Completed,
        );
        {
            let h = History::open(&path).unwrap();
            assert_eq!(h.add(&a).unwrap(), 1);
        }
        let h = History::open(&path).unwrap();
        let jobs = h.jobs().unwrap();
        assert_eq!(jobs, vec![PastJob { id: 1, job: a }]);
    }

    #[test]
    fn another_schema_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        drop(History::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute_batch("PRAGMA user_version = 9")
            .unwrap();
        let e = History::open(&path).err().unwrap().to_string();
        assert!(e.contains("version 9") && e.contains("h.sqlite"), "{e}");
    }

    #[test]
    fn bad_seconds_and_outcomes_are_refused_by_name() {
        let h = History::open_in_memory().unwrap();
        let mut bad = job("a", JobFacts::default(), Some(0), Outcome::Completed);
        assert!(h.add(&bad).unwrap_err().to_string().contains("actual_s"));
        bad.actual_s = Some(5);
        bad.requested_s = Some(-1);
        assert!(h.add(&bad).unwrap_err().to_string().contains("requested_s"));
        assert!("done"
            .parse::<Outcome>()
            .unwrap_err()
            .to_string()
            .contains("done"));
    }

    #[test]
    fn the_nearest_completed_job_predicts_and_failures_do_not() {
        let past: Vec<NewJob> = [
            job(
                "small",
                facts(&[("model", json!("gpt2")), ("gpus_per_node", json!(1))]),
                Some(600),
                Outcome::Completed,
            ),
            job(
                "big",
                facts(&[("model", json!("gpt2")), ("gpus_per_node", json!(8))]),
                Some(4_000),
                Outcome::Completed,
            ),
            job(
                "big-failed",
                facts(&[("model", json!("gpt2")), ("gpus_per_node", json!(8))]),
                Some(30),
                Outcome::Failed,
            ),
        ]
        .into_iter()
        .collect();
        let past = numbered(past);
        let query = facts(&[("model", json!("gpt2")), ("gpus_per_node", json!(4))]);
        let query = Query {
            facts: &query,
            embedding: None,
        };
        let by = MatchBy::Meta;
        let p = predict(&past, query, Some(9_000), 2, by).unwrap();
        // ln 8/4 < ln 4/1: "big" is nearer; the failed run is not a match.
        assert_eq!((p.seconds, p.basis.as_str()), (4_000, "nearest"));
        assert_eq!(
            p.matches
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>(),
            ["big", "small"]
        );
        assert_eq!(
            predict(&past, query, Some(1_000), 1, by).unwrap().seconds,
            1_000
        );
        // Every job, failed ones too, for matching alone.
        let all = neighbours(&past, query, 1, false, by).unwrap();
        assert_eq!(all[0].name, "big-failed");
        assert_eq!(
            predict(&[], query, Some(77), 1, by).unwrap().basis,
            "request"
        );
        assert!(matches!(
            predict(&[], query, None, 1, by),
            Err(HistoryError::Nothing)
        ));
        assert!(matches!(
            neighbours(&past, query, 1, false, MatchBy::Text),
            Err(HistoryError::NoEmbedding)
        ));
    }

    #[test]
    fn the_global_batch_is_derived_when_not_given() {
        let given = descriptor(&facts(&[("global_batch_size", json!(64))]));
        let derived = descriptor(&facts(&[
            ("batch_size_per_device", json!(4)),
            ("gpus_per_node", json!(8)),
            ("nodes", json!(1)),
            ("gradient_accumulation", json!(2)),
        ]));
        assert_eq!(given.sizes[1], derived.sizes[1]);
        assert!(descriptor(&JobFacts::default())
            .sizes
            .iter()
            .all(|s| s.is_nan()));
    }
}
