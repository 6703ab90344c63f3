//! The submission filter's look-ups (docs/slurm.md): the nearest completed past jobs of a new
//! one, answered from indexed columns of the history instead of reading every past job.
//!
//! Each job's matching [`Descriptor`] (what [`crate::history::descriptor`] makes of its facts)
//! is stored beside it when it is added (`d_k0` ... kinds as integers, `d_s0` ... logarithms
//! of sizes, NULL where unknown), a partial index over the completed jobs with a run time
//! covers those columns, and a table holds the distinct descriptors of those jobs with their
//! counts (kept by triggers, whatever writes the jobs: a history of 100,000 synthetic jobs has
//! 3,336). [`History::nearest_completed`] then answers [`crate::history::neighbours`]'s
//! question (by metadata, completed jobs only) exactly, in two steps:
//!
//! 1. one pass over the distinct descriptors, each one's distance computed here with the
//!    matcher's own function (jobs of one descriptor lie at one distance);
//! 2. from the nearest descriptor on, a whole distance at a time, the `k` most recent jobs of
//!    each (an index range), until `k` jobs are found: every job of a farther descriptor lies
//!    farther than each of them. Of those the `k` nearest are kept (the most recent first on
//!    ties), so the answer is the one [`crate::history::neighbours`] gives over
//!    [`History::jobs`]; only those `k` rows' facts are read.
//!
//! The cost is one pass over the distinct descriptors, not over the jobs: a history whose jobs
//! all differ in some size gains nothing.
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

/// The descriptor columns' names, in order.
const NAMES: [&str; 2 * SLOTS] = [
    "d_k0", "d_k1", "d_k2", "d_k3", "d_k4", "d_k5", "d_s0", "d_s1", "d_s2", "d_s3", "d_s4", "d_s5",
];

/// `d_k0 IS {row}.d_k0 AND ...` over every descriptor column (`IS`: NULL equals NULL).
fn same_descriptor(row: &str) -> String {
    NAMES.map(|c| format!("{c} IS {row}.{c}")).join(" AND ")
}

/// The distinct descriptors of the usable jobs, each with how many jobs have it (schema
/// version 5): what a look-up reads in place of every job. Triggers keep it whatever writes
/// the jobs table (`history add`, an administrator's `sqlite3`): a job counts under its
/// descriptor while it is usable, and a descriptor no job has any more is removed.
pub(crate) fn descriptors_sql() -> String {
    let columns = NAMES.join(", ");
    let new_values = NAMES.map(|c| format!("NEW.{c}")).join(", ");
    let add = |row: &str| {
        format!(
            "INSERT INTO descriptors ({columns}, jobs) SELECT {values}, 0
                 WHERE NOT EXISTS (SELECT 1 FROM descriptors WHERE {same});
             UPDATE descriptors SET jobs = jobs + 1 WHERE {same};",
            values = new_values.replace("NEW.", &format!("{row}.")),
            same = same_descriptor(row),
        )
    };
    let remove = |row: &str| {
        format!(
            "UPDATE descriptors SET jobs = jobs - 1 WHERE {same};
             DELETE FROM descriptors WHERE {same} AND jobs <= 0;",
            same = same_descriptor(row),
        )
    };
    let usable = |row: &str| format!("{row}.outcome = 'completed' AND {row}.actual_s IS NOT NULL");
    format!(
        "CREATE TABLE IF NOT EXISTS descriptors ({COLUMNS_SQL}, jobs INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS descriptors_key ON descriptors({columns});
         CREATE TRIGGER IF NOT EXISTS descriptors_insert AFTER INSERT ON jobs
             WHEN {new_usable} BEGIN {add_new} END;
         CREATE TRIGGER IF NOT EXISTS descriptors_delete AFTER DELETE ON jobs
             WHEN {old_usable} BEGIN {remove_old} END;
         CREATE TRIGGER IF NOT EXISTS descriptors_update_old
             AFTER UPDATE OF {columns}, outcome, actual_s ON jobs
             WHEN {old_usable} BEGIN {remove_old} END;
         CREATE TRIGGER IF NOT EXISTS descriptors_update_new
             AFTER UPDATE OF {columns}, outcome, actual_s ON jobs
             WHEN {new_usable} BEGIN {add_new} END;",
        new_usable = usable("NEW"),
        old_usable = usable("OLD"),
        add_new = add("NEW"),
        remove_old = remove("OLD"),
    )
}

/// Fills the descriptors table from the jobs (the upgrade from version 4), inside the
/// caller's transaction.
pub(crate) fn fill_distinct(conn: &Connection) -> rusqlite::Result<()> {
    let columns = NAMES.join(", ");
    conn.execute(
        &format!(
            "INSERT INTO descriptors ({columns}, jobs)
             SELECT {columns}, count(*) FROM jobs WHERE {USABLE} GROUP BY {columns}"
        ),
        [],
    )
    .map(|_| ())
}

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

    /// Its values, in the order of the columns (`d_k0` ... `d_s5`).
    pub(crate) fn values(&self) -> [Sql; 2 * SLOTS] {
        std::array::from_fn(|i| match i.checked_sub(SLOTS) {
            None => self.kinds[i].map_or(Sql::Null, Sql::Integer),
            Some(slot) => self.sizes[slot].map_or(Sql::Null, Sql::Real),
        })
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
    /// [`crate::history::MatchBy::Meta`], from the distinct descriptors and the index (the
    /// module documentation says how).
    pub fn nearest_completed(
        &self,
        facts: &JobFacts,
        k: usize,
    ) -> Result<Vec<(Neighbour, JobFacts)>, HistoryError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let q = descriptor(facts);
        let fail = |e| self.lookup_error("cannot look up the nearest past jobs", e);
        // 1. Every distinct descriptor, with its distance to the query.
        let mut distinct: Vec<(f64, Stored)> = Vec::new();
        {
            let sql = format!(
                "SELECT {} FROM descriptors WHERE jobs > 0",
                NAMES.join(", ")
            );
            let mut stmt = self.conn.prepare(&sql).map_err(fail)?;
            let mut rows = stmt.query([]).map_err(fail)?;
            while let Some(row) = rows.next().map_err(fail)? {
                let stored = Stored::read(row, 0).map_err(fail)?;
                let d = stored.descriptor();
                distinct.push((similar::distance(&q, &d) + unshared(&q, &d), stored));
            }
        }
        distinct.sort_by(|a, b| a.0.total_cmp(&b.0));
        // 2. The jobs of the nearest descriptors, a whole distance at a time (jobs at equal
        // distances rank by id), until k jobs are found: every job of a later descriptor lies
        // farther than all of them.
        let same = NAMES
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} IS ?{}", i + 1))
            .collect::<Vec<_>>()
            .join(" AND ");
        let sql =
            format!("SELECT id FROM jobs WHERE {USABLE} AND {same} ORDER BY id DESC LIMIT {k}");
        let mut stmt = self.conn.prepare(&sql).map_err(fail)?;
        let mut found: Vec<(f64, i64)> = Vec::new();
        let mut at = 0;
        while at < distinct.len() && found.len() < k {
            let distance = distinct[at].0;
            while at < distinct.len() && distinct[at].0.total_cmp(&distance).is_eq() {
                let values = distinct[at].1.values();
                let ids = stmt
                    .query_map(rusqlite::params_from_iter(values), |r| r.get::<_, i64>(0))
                    .map_err(fail)?;
                for id in ids {
                    found.push((distance, id.map_err(fail)?));
                }
                at += 1;
            }
        }
        found.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        found.truncate(k);
        let mut out = Vec::with_capacity(found.len());
        for (distance, id) in found {
            out.push(self.neighbour(id, distance)?);
        }
        Ok(out)
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

    /// Compares the look-up with reading every job, for `k` of 1 to 4 and `queries` queries.
    fn same_as_reading_every_job(path: &Path, rng: &mut Rng, queries: usize) {
        let past = History::open(path).unwrap().jobs().unwrap();
        let history = History::open_for_lookup(path, None).unwrap();
        for _ in 0..queries {
            let q = random_facts(rng);
            let query = Query {
                facts: &q,
                embedding: None,
            };
            for k in 1..=4 {
                let all = neighbours(&past, query, k, true, MatchBy::Meta).unwrap();
                let all: Vec<(i64, f64)> = all.iter().map(|n| (n.id, n.distance)).collect();
                assert_eq!(
                    ids(&history.nearest_completed(&q, k).unwrap()),
                    all,
                    "k {k}"
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// Whatever writes the jobs (added, deleted, their outcome or run time changed by
        /// hand), the distinct descriptors keep the look-up's answers those of reading every
        /// job.
        #[test]
        fn the_look_up_answers_as_reading_every_job_after_any_writes(
            seed in 1u64..u64::MAX,
            size in 0usize..120,
            deleted in 0usize..30,
            changed in 0usize..30,
        ) {
            let mut rng = Rng(seed);
            let (_dir, path) = history_of(&mut rng, size);
            let conn = Connection::open(&path).unwrap();
            for _ in 0..deleted.min(size) {
                let id = 1 + rng.below(size as u64) as i64;
                conn.execute("DELETE FROM jobs WHERE id = ?1", [id]).unwrap();
            }
            for _ in 0..changed.min(size) {
                let id = 1 + rng.below(size as u64) as i64;
                let (outcome, actual) = match rng.below(3) {
                    0 => ("failed", Some(60)),
                    1 => ("completed", None),
                    _ => ("completed", Some(60 * (1 + rng.below(5) as i64))),
                };
                conn.execute(
                    "UPDATE jobs SET outcome = ?1, actual_s = ?2 WHERE id = ?3",
                    params![outcome, actual, id],
                )
                .unwrap();
            }
            // More jobs after the changes, through `add`.
            let more: Vec<NewJob> = (0..rng.below(20) as usize)
                .map(|i| random_job(&mut rng, size + i))
                .collect();
            History::open(&path).unwrap().add_all(&more).unwrap();
            // The table holds exactly the distinct descriptors of the usable jobs.
            let columns = NAMES.join(", ");
            let counted = |sql: &str| -> Vec<String> {
                let mut stmt = conn.prepare(sql).unwrap();
                let rows = stmt.query_map([], |r| {
                    let values: Vec<String> = (0..=2 * SLOTS)
                        .map(|i| format!("{:?}", r.get::<_, Sql>(i).unwrap()))
                        .collect();
                    Ok(values.join(" "))
                });
                let mut rows: Vec<String> = rows.unwrap().map(Result::unwrap).collect();
                rows.sort();
                rows
            };
            proptest::prop_assert_eq!(
                counted(&format!("SELECT {columns}, jobs FROM descriptors")),
                counted(&format!(
                    "SELECT {columns}, count(*) FROM jobs WHERE {USABLE} GROUP BY {columns}"
                ))
            );
            same_as_reading_every_job(&path, &mut rng, 10);
        }
    }

    #[test]
    fn a_version_4_file_gains_the_distinct_descriptors_and_answers_the_same() {
        let mut rng = Rng(5);
        let (_dir, path) = history_of(&mut rng, 200);
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "DROP TRIGGER descriptors_insert; DROP TRIGGER descriptors_delete;
                 DROP TRIGGER descriptors_update_old; DROP TRIGGER descriptors_update_new;
                 DROP TABLE descriptors; PRAGMA user_version = 4;",
            )
            .unwrap();
        let e = History::open_for_lookup(&path, None).err().unwrap();
        assert!(
            matches!(e, HistoryError::NotIndexed { found: 4, .. }),
            "{e}"
        );
        // Opening it for writing upgrades it.
        drop(History::open(&path).unwrap());
        same_as_reading_every_job(&path, &mut rng, 30);
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
        let same = NAMES
            .iter()
            .map(|c| format!("{c} IS 1"))
            .collect::<Vec<_>>()
            .join(" AND ");
        let fetch = plan(&format!(
            "SELECT id FROM jobs WHERE {USABLE} AND {same} ORDER BY id DESC LIMIT 3"
        ));
        assert!(
            fetch.contains("USING COVERING INDEX jobs_nearest (d_k0=?"),
            "{fetch}"
        );
    }
}
