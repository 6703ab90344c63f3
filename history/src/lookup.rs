//! The submission filter's look-ups (docs/slurm.md): the nearest completed past jobs of a new
//! one, answered from indexed columns of the history instead of reading every past job.
//!
//! Each job's matching [`Descriptor`] (what [`crate::history::descriptor`] makes of its facts)
//! is stored beside it when it is added (`d_k0` ... kinds as integers, `d_s0` ... logarithms
//! of sizes, NULL where unknown), and a partial index over the completed jobs with a run time
//! covers those columns. [`History::nearest_completed`] then answers
//! [`crate::history::neighbours`]'s question (by metadata, completed jobs only) exactly, in two
//! steps:
//!
//! 1. the past jobs whose kinds all equal the new job's (an index range): every other job
//!    differs in at least one kind and so lies at distance 1 or more; when the `k` nearest of
//!    the range are all nearer than 1, they are the answer;
//! 2. otherwise one pass over the index (no table rows, no facts parsed, no expression
//!    evaluated by SQLite), each entry's distance computed here.
//!
//! Step 1 orders the range by the size terms in SQL and fetches a few more rows than asked
//! for; both steps compute the distances with the matcher's own function and keep the `k`
//! nearest (the most recent first on ties), so the answer is the one
//! [`crate::history::neighbours`] gives over [`History::jobs`]; only those `k` rows' facts are
//! read.
//!
//! [`History::open_for_lookup`] opens the file read only, never waits for a lock (a locked
//! file is [`HistoryError::Busy`] at once), skips the integrity check (it reads the whole file)
//! and stops any statement at a deadline ([`HistoryError::Deadline`]).

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::types::Value as Sql;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};
use schedlm_generator::similar::{self, Descriptor, MISSING_KIND, SLOTS};
use schedlm_knowledge::facts::JobFacts;

use crate::history::{
    descriptor, predict_from, unshared, History, HistoryError, Neighbour, Outcome, Prediction,
    SCHEMA_VERSION,
};

/// The descriptor columns, as in `CREATE TABLE` (comma-separated).
pub(crate) const COLUMNS_SQL: &str = "d_k0 INTEGER, d_k1 INTEGER, d_k2 INTEGER, d_k3 INTEGER, \
     d_k4 INTEGER, d_k5 INTEGER, d_s0 REAL, d_s1 REAL, d_s2 REAL, d_s3 REAL, d_s4 REAL, d_s5 REAL";

/// The indexes of the look-ups: names (the duplicate check of `add`) and the completed jobs'
/// descriptors (with the columns of the condition, so that a look-up reads the index only).
pub(crate) const INDEXES_SQL: &str = "CREATE INDEX IF NOT EXISTS jobs_name ON jobs(name);
     CREATE INDEX IF NOT EXISTS jobs_nearest ON jobs(d_k0, d_k1, d_k2, d_k3, d_k4, d_k5,
         d_s0, d_s1, d_s2, d_s3, d_s4, d_s5, outcome, actual_s)
         WHERE outcome = 'completed' AND actual_s IS NOT NULL;";

/// The rows the look-ups consider (the partial index's condition, word for word, so that
/// SQLite uses it).
const USABLE: &str = "outcome = 'completed' AND actual_s IS NOT NULL";

/// Rows fetched beyond the `k` asked for, whose distances are recomputed exactly: SQL sums
/// the same terms, but its rounding may order near-ties differently.
const SLACK: usize = 8;

// The columns are one per slot of the matcher's descriptor.
const _: () = assert!(SLOTS == 6);

/// A descriptor as stored: NULL where unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stored {
    kinds: [Option<i64>; SLOTS],
    sizes: [Option<f64>; SLOTS],
}

impl Stored {
    /// The stored form of `d` (kinds keep their 64 bits, as signed integers).
    pub(crate) fn of(d: &Descriptor) -> Stored {
        Stored {
            kinds: d.kinds.map(|k| (k != MISSING_KIND).then_some(k as i64)),
            sizes: d.sizes.map(|s| (!s.is_nan()).then_some(s)),
        }
    }

    /// The descriptor back.
    fn descriptor(&self) -> Descriptor {
        Descriptor {
            kinds: self.kinds.map(|k| k.map_or(MISSING_KIND, |k| k as u64)),
            sizes: self.sizes.map(|s| s.unwrap_or(f64::NAN)),
        }
    }

    /// Writes it into job `id`'s columns.
    pub(crate) fn write(&self, conn: &Connection, id: i64) -> rusqlite::Result<()> {
        let k = &self.kinds;
        let s = &self.sizes;
        conn.execute(
            "UPDATE jobs SET d_k0 = ?1, d_k1 = ?2, d_k2 = ?3, d_k3 = ?4, d_k4 = ?5, d_k5 = ?6,
                 d_s0 = ?7, d_s1 = ?8, d_s2 = ?9, d_s3 = ?10, d_s4 = ?11, d_s5 = ?12
             WHERE id = ?13",
            params![k[0], k[1], k[2], k[3], k[4], k[5], s[0], s[1], s[2], s[3], s[4], s[5], id],
        )
        .map(|_| ())
    }

    /// Reads it from columns `first..first + 2 * SLOTS` of `row`.
    fn read(row: &rusqlite::Row, first: usize) -> rusqlite::Result<Stored> {
        let mut stored = Stored {
            kinds: [None; SLOTS],
            sizes: [None; SLOTS],
        };
        for slot in 0..SLOTS {
            stored.kinds[slot] = row.get(first + slot)?;
            stored.sizes[slot] = row.get(first + SLOTS + slot)?;
        }
        Ok(stored)
    }
}

/// Why the stored descriptors could not be filled.
#[derive(Debug)]
pub(crate) enum Fill {
    /// SQLite refused.
    Sqlite(rusqlite::Error),
    /// A job's facts do not parse.
    Facts {
        /// The job.
        id: i64,
        /// The parser's message.
        message: String,
    },
}

/// Computes and stores every job's descriptor (the upgrade from version 3), inside the
/// caller's transaction.
pub(crate) fn fill_descriptors(conn: &Connection) -> Result<(), Fill> {
    let rows: Vec<(i64, String)> = conn
        .prepare("SELECT id, facts FROM jobs ORDER BY id")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })
        .map_err(Fill::Sqlite)?;
    for (id, facts) in rows {
        let facts: JobFacts = serde_json::from_str(&facts).map_err(|e| Fill::Facts {
            id,
            message: e.to_string(),
        })?;
        Stored::of(&descriptor(&facts))
            .write(conn, id)
            .map_err(Fill::Sqlite)?;
    }
    Ok(())
}

/// The columns a look-up selects: the id, then the descriptor.
const SELECTED: &str = "id, d_k0, d_k1, d_k2, d_k3, d_k4, d_k5, \
     d_s0, d_s1, d_s2, d_s3, d_s4, d_s5";

/// The matcher's distance from the query (`q`) to a stored row, in SQL (the terms of
/// [`similar::distance`] plus [`unshared`]'s, in the same order), for one kind slot or size
/// slot; its parameters are pushed to `values`.
fn term(column: &str, query: Option<Sql>, values: &mut Vec<Sql>) -> String {
    match query {
        None => format!("({column} IS NOT NULL)"),
        Some(q) => {
            let absent = 1.0 + UNSHARED_SQL;
            values.push(q.clone());
            let n = values.len();
            match q {
                Sql::Real(_) => {
                    format!("(CASE WHEN {column} IS NULL THEN {absent:?} ELSE abs({column} - ?{n}) END)")
                }
                _ => format!(
                    "(CASE WHEN {column} IS NULL THEN {absent:?} WHEN {column} = ?{n} THEN 0.0 ELSE 1.0 END)"
                ),
            }
        }
    }
}

/// The size terms of the distance, summed in slot order.
fn size_terms(stored: &Stored, values: &mut Vec<Sql>) -> String {
    (0..SLOTS)
        .map(|slot| {
            term(
                &format!("d_s{slot}"),
                stored.sizes[slot].map(Sql::Real),
                values,
            )
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// What a fact the query states and a past job does not adds on top of the matcher's 1.
const UNSHARED_SQL: f64 = crate::history::UNSHARED;

impl History {
    /// Opens the existing history at `path` for look-ups only: read only, never waiting for a
    /// lock held by a writer ([`HistoryError::Busy`] at once), without the integrity check
    /// (which reads the whole file), and with every statement stopped once `deadline` has
    /// passed ([`HistoryError::Deadline`]). A file of an older schema is
    /// [`HistoryError::NotIndexed`] (any `schedlm history` command that opens it for writing
    /// upgrades it); the file is never written.
    pub fn open_for_lookup(
        path: &Path,
        deadline: Option<Instant>,
    ) -> Result<History, HistoryError> {
        let shown = path.display().to_string();
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn =
            Connection::open_with_flags(path, flags).map_err(|source| HistoryError::Sqlite {
                what: format!("cannot open {shown}"),
                source,
            })?;
        let setup = conn
            .busy_timeout(Duration::ZERO)
            .and_then(|()| match deadline {
                Some(deadline) => {
                    conn.progress_handler(1_000, Some(move || Instant::now() >= deadline))
                }
                None => Ok(()),
            });
        let history = History { conn, path: shown };
        setup.map_err(|e| history.lookup_error("cannot set up the look-up", e))?;
        let version: i64 = history
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| history.lookup_error("cannot read the schema version", e))?;
        if (1..SCHEMA_VERSION).contains(&version) {
            return Err(HistoryError::NotIndexed {
                path: history.path,
                found: version,
            });
        }
        if version != SCHEMA_VERSION {
            return Err(HistoryError::Version {
                path: history.path,
                found: version,
                expected: SCHEMA_VERSION,
            });
        }
        Ok(history)
    }

    /// A look-up's SQLite error: a lock is [`HistoryError::Busy`], a statement stopped at the
    /// deadline [`HistoryError::Deadline`].
    fn lookup_error(&self, what: &str, source: rusqlite::Error) -> HistoryError {
        match source.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => HistoryError::Busy {
                path: self.path.clone(),
            },
            Some(ErrorCode::OperationInterrupted) => HistoryError::Deadline {
                path: self.path.clone(),
            },
            _ => self.error(what, source),
        }
    }

    /// The `k` completed past jobs (with an actual run time) nearest to a job with `facts` by
    /// metadata, nearest first, the most recent first on ties, each with its facts: the answer
    /// of [`crate::history::neighbours`] over [`History::jobs`] with `completed_only` and
    /// [`crate::history::MatchBy::Meta`], from the index (the module documentation says how).
    pub fn nearest_completed(
        &self,
        facts: &JobFacts,
        k: usize,
    ) -> Result<Vec<(Neighbour, JobFacts)>, HistoryError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let q = descriptor(facts);
        let stored = Stored::of(&q);
        let limit = k + SLACK;
        // 1. The jobs of the same kinds: their distances differ only in sizes.
        let mut values = Vec::new();
        let mut same_kinds = Vec::new();
        for (slot, kind) in stored.kinds.iter().enumerate() {
            same_kinds.push(match kind {
                None => format!("d_k{slot} IS NULL"),
                Some(k) => {
                    values.push(Sql::Integer(*k));
                    format!("d_k{slot} = ?{}", values.len())
                }
            });
        }
        let sizes = size_terms(&stored, &mut values);
        let sql = format!(
            "SELECT {SELECTED} FROM jobs WHERE {USABLE} AND {} ORDER BY {sizes}, id DESC \
             LIMIT {limit}",
            same_kinds.join(" AND ")
        );
        let mut found = self.candidates(&sql, &values, &q)?;
        // Every other job differs in a kind: at distance 1 or more.
        if !found.get(k - 1).is_some_and(|c| c.0 < 1.0) {
            // 2. All of them: one pass over the index (no expression, no sort in SQL), the
            // distances computed here, the k nearest kept.
            found = self.scan(&q, k)?;
        }
        found.truncate(k);
        let mut out = Vec::with_capacity(found.len());
        for (distance, id) in found {
            out.push(self.neighbour(id, distance)?);
        }
        Ok(out)
    }

    /// The rows `sql` selects, with their exact distances to `q`, nearest first (the most
    /// recent first on ties).
    fn candidates(
        &self,
        sql: &str,
        values: &[Sql],
        q: &Descriptor,
    ) -> Result<Vec<(f64, i64)>, HistoryError> {
        let fail = |e| self.lookup_error("cannot look up the nearest past jobs", e);
        let mut stmt = self.conn.prepare(sql).map_err(fail)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(values), |r| {
                Ok((r.get::<_, i64>(0)?, Stored::read(r, 1)?))
            })
            .map_err(fail)?;
        let mut found = Vec::new();
        for row in rows {
            let (id, stored) = row.map_err(fail)?;
            let d = stored.descriptor();
            found.push((similar::distance(q, &d) + unshared(q, &d), id));
        }
        found.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        Ok(found)
    }

    /// The `k` nearest of all completed jobs, by one pass over the index: (distance, id),
    /// nearest first, the most recent first on ties.
    fn scan(&self, q: &Descriptor, k: usize) -> Result<Vec<(f64, i64)>, HistoryError> {
        let fail = |e| self.lookup_error("cannot look up the nearest past jobs", e);
        let sql = format!("SELECT {SELECTED} FROM jobs WHERE {USABLE}");
        let mut stmt = self.conn.prepare(&sql).map_err(fail)?;
        let mut rows = stmt.query([]).map_err(fail)?;
        let mut best: Vec<(f64, i64)> = Vec::with_capacity(k + 1);
        let before = |a: &(f64, i64), b: &(f64, i64)| a.0 < b.0 || (a.0 == b.0 && a.1 > b.1);
        while let Some(row) = rows.next().map_err(fail)? {
            let id: i64 = row.get(0).map_err(fail)?;
            let d = Stored::read(row, 1).map_err(fail)?.descriptor();
            let candidate = (similar::distance(q, &d) + unshared(q, &d), id);
            if best.len() == k && !before(&candidate, &best[k - 1]) {
                continue;
            }
            let at = best.partition_point(|b| before(b, &candidate));
            best.insert(at, candidate);
            best.truncate(k);
        }
        Ok(best)
    }

    /// Job `id` as a neighbour at `distance`, with its facts.
    fn neighbour(&self, id: i64, distance: f64) -> Result<(Neighbour, JobFacts), HistoryError> {
        let fail = |e| self.lookup_error("cannot read a past job", e);
        let row = self
            .conn
            .query_row(
                "SELECT name, requested_s, actual_s, outcome, facts FROM jobs WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, Option<i64>>(1)?,
                        r.get::<_, Option<i64>>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                    ))
                },
            )
            .optional()
            .map_err(fail)?;
        let (name, requested_s, actual_s, outcome, facts) = row.ok_or(HistoryError::Row {
            id,
            column: "id",
            message: "the job went away during the look-up".into(),
        })?;
        let row_error = |column, message: String| HistoryError::Row {
            id,
            column,
            message,
        };
        let outcome: Outcome = outcome
            .parse()
            .map_err(|e: HistoryError| row_error("outcome", e.to_string()))?;
        let facts: JobFacts =
            serde_json::from_str(&facts).map_err(|e| row_error("facts", e.to_string()))?;
        Ok((
            Neighbour {
                id,
                name,
                distance,
                similarity: None,
                actual_s,
                requested_s,
                outcome,
            },
            facts,
        ))
    }
}

/// [`crate::history::predict`] by metadata from the history's index
/// ([`History::nearest_completed`]): the same prediction, reading only the `k` nearest jobs.
pub fn predict_indexed(
    history: &History,
    facts: &JobFacts,
    requested_s: Option<i64>,
    k: usize,
) -> Result<Prediction, HistoryError> {
    let found = history.nearest_completed(facts, k.max(1))?;
    let nearest = found.first().map(|(_, f)| f.clone());
    let matches = found.into_iter().map(|(n, _)| n).collect();
    predict_from(facts, matches, nearest.as_ref(), requested_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::tests::facts;
    use crate::history::{neighbours, predict, Accounting, MatchBy, NewJob, Query};
    use serde_json::{json, Value};

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Facts drawn from few values, some fields missing, so that kinds repeat, sizes tie and
    /// some jobs state little.
    fn random_facts(rng: &mut Rng) -> JobFacts {
        let mut fields: Vec<(&str, Value)> = Vec::new();
        fn pick(rng: &mut Rng, values: &[&'static str]) -> &'static str {
            values[rng.below(values.len() as u64) as usize]
        }
        if rng.below(5) > 0 {
            fields.push(("model", json!(pick(rng, &["bert", "gpt2", "llama-7b"]))));
        }
        if rng.below(3) > 0 {
            fields.push(("dataset", json!(pick(rng, &["c4", "wiki"]))));
        }
        if rng.below(4) == 0 {
            fields.push(("precision", json!("bf16")));
        }
        if rng.below(3) > 0 {
            fields.push(("gpus_per_node", json!(1 << rng.below(4))));
        }
        if rng.below(2) > 0 {
            fields.push(("global_batch_size", json!(16 << rng.below(3))));
        }
        if rng.below(2) > 0 {
            fields.push(("epochs", json!(1 + rng.below(3))));
        }
        if rng.below(4) == 0 {
            fields.push(("max_steps", json!(1000 * (1 + rng.below(5)))));
        }
        facts(&fields)
    }

    fn random_job(rng: &mut Rng, i: usize) -> NewJob {
        let outcome = match rng.below(6) {
            0 => Outcome::Failed,
            1 => Outcome::Timeout,
            _ => Outcome::Completed,
        };
        NewJob {
            name: format!("job{i}"),
            user: None,
            facts: random_facts(rng),
            requested_s: Some(36_000),
            actual_s: (rng.below(8) > 0).then(|| 600 * (1 + rng.below(20) as i64)),
            outcome,
            embedding: None,
            accounting: Accounting::default(),
        }
    }

    fn history_of(rng: &mut Rng, n: usize) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.sqlite");
        let jobs: Vec<NewJob> = (0..n).map(|i| random_job(rng, i)).collect();
        History::open(&path).unwrap().add_all(&jobs).unwrap();
        (dir, path)
    }

    fn ids(found: &[(Neighbour, JobFacts)]) -> Vec<(i64, f64)> {
        found.iter().map(|(n, _)| (n.id, n.distance)).collect()
    }

    #[test]
    fn the_index_gives_the_same_nearest_jobs_and_predictions_as_reading_every_job() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for size in [0, 1, 5, 40, 300] {
            let (_dir, path) = history_of(&mut rng, size);
            let past = History::open(&path).unwrap().jobs().unwrap();
            let history = History::open_for_lookup(&path, None).unwrap();
            for _ in 0..60 {
                let q = random_facts(&mut rng);
                let query = Query {
                    facts: &q,
                    embedding: None,
                };
                for k in 1..=4 {
                    let all = neighbours(&past, query, k, true, MatchBy::Meta).unwrap();
                    let indexed = history.nearest_completed(&q, k).unwrap();
                    let all: Vec<(i64, f64)> = all.iter().map(|n| (n.id, n.distance)).collect();
                    assert_eq!(ids(&indexed), all, "history of {size}, k {k}");
                }
                let before = predict(&past, query, None, 3, MatchBy::Meta);
                let now = predict_indexed(&history, &q, None, 3);
                match (before, now) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b),
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => panic!("{a:?} vs {b:?}"),
                }
            }
        }
    }

    #[test]
    fn a_version_3_file_gains_the_descriptors_and_answers_the_same() {
        let mut rng = Rng(7);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v3.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE jobs (id INTEGER PRIMARY KEY, name TEXT NOT NULL, user TEXT,
                 facts TEXT NOT NULL, requested_s INTEGER, actual_s INTEGER,
                 outcome TEXT NOT NULL, embedding_model TEXT, embedding BLOB,
                 submit INTEGER, start INTEGER, gpus INTEGER);
             PRAGMA user_version = 3;",
        )
        .unwrap();
        for i in 0..50 {
            let job = random_job(&mut rng, i);
            conn.execute(
                "INSERT INTO jobs (name, facts, actual_s, outcome) VALUES (?1, ?2, ?3, ?4)",
                params![
                    job.name,
                    serde_json::to_string(&job.facts).unwrap(),
                    job.actual_s,
                    job.outcome.name()
                ],
            )
            .unwrap();
        }
        drop(conn);
        // A look-up never writes: the old file is named, not upgraded.
        let e = History::open_for_lookup(&path, None).err().unwrap();
        assert!(
            matches!(e, HistoryError::NotIndexed { found: 3, .. }),
            "{e}"
        );
        let past = History::open(&path).unwrap().jobs().unwrap();
        let history = History::open_for_lookup(&path, None).unwrap();
        for _ in 0..30 {
            let q = random_facts(&mut rng);
            let query = Query {
                facts: &q,
                embedding: None,
            };
            let all = neighbours(&past, query, 3, true, MatchBy::Meta).unwrap();
            let all: Vec<(i64, f64)> = all.iter().map(|n| (n.id, n.distance)).collect();
            assert_eq!(ids(&history.nearest_completed(&q, 3).unwrap()), all);
        }
    }

    #[test]
    fn a_locked_history_is_busy_at_once_and_a_late_look_up_stops() {
        let mut rng = Rng(11);
        let (_dir, path) = history_of(&mut rng, 2_000);
        let writer = Connection::open(&path).unwrap();
        writer.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let e = History::open_for_lookup(&path, None)
            .and_then(|h| h.nearest_completed(&JobFacts::default(), 3))
            .err()
            .unwrap();
        assert!(matches!(e, HistoryError::Busy { .. }), "{e}");
        writer.execute_batch("ROLLBACK").unwrap();
        // A deadline already past stops the first statement that does real work.
        let late = History::open_for_lookup(&path, Some(Instant::now()))
            .and_then(|h| h.nearest_completed(&facts(&[("model", json!("t5"))]), 3))
            .err()
            .unwrap();
        assert!(matches!(late, HistoryError::Deadline { .. }), "{late}");
    }

    #[test]
    fn the_look_ups_use_the_index() {
        let mut rng = Rng(3);
        let (_dir, path) = history_of(&mut rng, 10);
        let history = History::open_for_lookup(&path, None).unwrap();
        let plan = |sql: &str| -> String {
            let mut stmt = history
                .conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap();
            let rows = stmt.query_map([], |r| r.get::<_, String>(3)).unwrap();
            rows.map(Result::unwrap).collect::<Vec<_>>().join("; ")
        };
        let same = plan(&format!(
            "SELECT {SELECTED} FROM jobs WHERE {USABLE} AND d_k0 = 1 AND d_k1 IS NULL \
             AND d_k2 IS NULL AND d_k3 IS NULL AND d_k4 IS NULL AND d_k5 IS NULL \
             ORDER BY abs(d_s0 - 1.0), id DESC LIMIT 3"
        ));
        assert!(
            same.contains("USING COVERING INDEX jobs_nearest (d_k0=?"),
            "{same}"
        );
        let all = plan(&format!("SELECT {SELECTED} FROM jobs WHERE {USABLE}"));
        assert!(all.contains("COVERING INDEX jobs_nearest"), "{all}");
    }
}
