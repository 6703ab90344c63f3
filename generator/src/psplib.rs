//! Import of PSPLIB single-mode RCPSP instances (`.sm` files, Kolisch & Sprecher 1996) as
//! SPEC instances, and of the `optimum.csv` tables that list their proven optimal makespans.
//!
//! # Mapping
//!
//! An `.sm` file describes one project: jobs 1..=N with durations, per-period requests of K
//! renewable resources and finish-to-start precedence relations. [`parse_sm`] turns it into:
//!
//! - `now = 0`, resources `"R1"`..`"RK"` (the file's renewable resources, in file order);
//! - one server `"pool"` whose capacity is the file's availabilities: the whole pool of
//!   renewable resources is one machine, so the dispatcher of SPEC section 3 is exactly the
//!   serial schedule generation scheme of the RCPSP, and the optimum over orders (SPEC
//!   section 4, objective `makespan`) is the RCPSP optimum;
//! - no running jobs;
//! - one queued job per real job, in job-number order, with id `"j<jobnr>"` (so `"j2"`..`"j31"`
//!   for j30), `submit = 0`, `walltime` = duration, `demand` = its requests and `deps` = its
//!   predecessors (the inverted successor lists), sorted by job number.
//!
//! **Dummy jobs.** Job 1 (the supersource) and job N (the supersink) have duration 0 and no
//! requests. SPEC requires `walltime >= 1`, so they are dropped. Dropping a zero-length job
//! that uses nothing changes no schedule: its precedence relations are passed through (every
//! predecessor of a dummy becomes a predecessor of each of its successors), which in a
//! well-formed file means the edges from the source and into the sink simply vanish. Since
//! the sink's start is the project's makespan, and no real job can start before 0, the
//! makespan of an instance (max C_j - now) equals the PSPLIB makespan.
//!
//! Only those two jobs are dummies. Any other job with duration 0 is an error
//! ([`PsplibError::ZeroDuration`]) rather than being dropped; none of the PSPLIB j30 files has
//! one. A dummy with a nonzero request is an error too.
//!
//! **Other resources.** Non-renewable resources (`N`) constrain only the total consumption
//! over the project, which in a single-mode file is the same for every schedule: the import
//! checks that the total fits the availability ([`PsplibError::NonrenewableExceeded`] if
//! not, since no schedule is then feasible) and then leaves them out. Doubly constrained
//! resources (`D`) are not supported ([`PsplibError::Unsupported`]); none of the PSPLIB
//! single-mode sets (j30, j60, j90, j120) has any. Multi-mode files (`.mm`) are rejected too.
//!
//! The header's horizon, the project information (due date, tardiness cost, MPM time) and
//! the base-data lines are not needed for the makespan and are ignored.
//!
//! Every error names the 1-based line of the file and what was expected there. The produced
//! instance is checked with [`schedlm_model::validate()`]; a request larger than the
//! availability, for example, is reported as [`PsplibError::Invalid`] naming the job.
//!
//! ```
//! use schedlm_generator::psplib::parse_sm;
//!
//! let text = "\
//! jobs (incl. supersource/sink ):  4
//! RESOURCES
//!   - renewable                 :  1   R
//!   - nonrenewable              :  0   N
//!   - doubly constrained        :  0   D
//! ****************************************
//! PRECEDENCE RELATIONS:
//! jobnr.    #modes  #successors   successors
//!    1        1          2           2   3
//!    2        1          1           3
//!    3        1          1           4
//!    4        1          0
//! ****************************************
//! REQUESTS/DURATIONS:
//! jobnr. mode duration  R 1
//! ----------------------------------------
//!   1      1     0       0
//!   2      1     3       2
//!   3      1     5       1
//!   4      1     0       0
//! ****************************************
//! RESOURCEAVAILABILITIES:
//!   R 1
//!    2
//! ****************************************
//! ";
//! let instance = parse_sm(text).unwrap();
//! assert_eq!(instance.resources, ["R1"]);
//! assert_eq!(instance.servers[0].capacity, [2]);
//! let ids: Vec<&str> = instance.queue.iter().map(|j| j.id.as_str()).collect();
//! assert_eq!(ids, ["j2", "j3"]);
//! assert_eq!(instance.queue[1].deps, ["j2"]);
//! assert_eq!(instance.queue[1].walltime, 5);
//!
//! // Errors name the line and what was expected.
//! let bad = text.replace("   3        1          1           4", "   3        1          2           4");
//! let err = parse_sm(&bad).unwrap_err().to_string();
//! assert!(err.starts_with("line 11: expected 2 successors"), "{err}");
//! ```

use schedlm_model::lines::excerpt;
use std::collections::HashMap;

use schedlm_model::{validate, Instance, InstanceError, QueuedJob, Server};

/// Id of the single server that holds the whole resource pool.
pub const POOL: &str = "pool";

/// Why an `.sm` file or an `optimum.csv` table could not be imported.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PsplibError {
    /// The text at `line` is not what the format has there.
    #[error("line {line}: expected {expected}, found {found}")]
    Syntax {
        /// 1-based line number (one past the last line when the text ends too early).
        line: usize,
        /// What the format has at this place.
        expected: String,
        /// What the line holds (quoted), or `end of file`.
        found: String,
    },
    /// A job other than the first and the last (the dummies) has duration 0.
    #[error("line {line}: job {job} has duration 0, but only the dummy source (job 1) and sink (job {last}) may; SPEC walltimes must be at least 1, and a real job is never dropped")]
    ZeroDuration {
        /// 1-based line of the job's row in the REQUESTS/DURATIONS section.
        line: usize,
        /// PSPLIB job number (1-based, as in the file's `jobnr.` column).
        job: usize,
        /// Number of the last job, the sink (the header's job count, dummies included).
        last: usize,
    },
    /// A dummy job (duration 0) requests a resource.
    #[error("line {line}: dummy job {job} has duration 0 but requests {resource} = {amount}; expected no requests")]
    DummyRequest {
        /// 1-based line of the dummy's row in the REQUESTS/DURATIONS section.
        line: usize,
        /// PSPLIB job number of the dummy: 1 (the source) or the last job (the sink).
        job: usize,
        /// Label of the first resource the dummy requests, as `R1` or `N2`.
        resource: String,
        /// The amount of that resource requested per period (> 0).
        amount: i64,
    },
    /// The jobs together consume more of a non-renewable resource than is available.
    #[error("line {line}: the jobs consume {total} of non-renewable resource {resource} in all, but only {available} is available; the project has no feasible schedule")]
    NonrenewableExceeded {
        /// 1-based line of the availability values in the RESOURCEAVAILABILITIES section.
        line: usize,
        /// Label of the non-renewable resource, as `N1`.
        resource: String,
        /// Sum of the requests of all jobs for that resource.
        total: i64,
        /// The file's availability of that resource.
        available: i64,
    },
    /// A feature of the format that the import does not handle.
    #[error("line {line}: {what} is not supported")]
    Unsupported {
        /// 1-based line where the feature shows: a header count or a precedence row.
        line: usize,
        /// The feature, in words (several projects, doubly constrained resources, or a job
        /// with more than one mode).
        what: String,
    },
    /// The converted instance fails SPEC validation (for example a request above the
    /// availability, or a precedence cycle).
    #[error("the imported instance is invalid: {0}")]
    Invalid(#[from] InstanceError),
}

fn syntax(line: usize, expected: impl Into<String>, found: &str) -> PsplibError {
    PsplibError::Syntax {
        line,
        expected: expected.into(),
        found: excerpt(found.trim()),
    }
}

/// The lines of a text with 1-based numbers; blank lines are skipped.
struct Cursor<'a> {
    lines: Vec<(usize, &'a str)>,
    pos: usize,
    end_line: usize,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        let all: Vec<&str> = text.lines().collect();
        let end_line = all.len() + 1;
        let lines = all
            .into_iter()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty())
            .collect();
        Cursor {
            lines,
            pos: 0,
            end_line,
        }
    }

    /// The next non-blank line, or an error saying that `expected` was due there.
    fn next(&mut self, expected: &str) -> Result<(usize, &'a str), PsplibError> {
        match self.lines.get(self.pos) {
            Some(&l) => {
                self.pos += 1;
                Ok(l)
            }
            None => Err(PsplibError::Syntax {
                line: self.end_line,
                expected: expected.to_string(),
                found: "end of file".to_string(),
            }),
        }
    }

    /// The next line that is not a `****` separator.
    fn next_content(&mut self, expected: &str) -> Result<(usize, &'a str), PsplibError> {
        loop {
            let (n, l) = self.next(expected)?;
            if !is_rule(l, '*') {
                return Ok((n, l));
            }
        }
    }

    /// Skips to the line that starts with `title` (a section heading), failing at the first
    /// line that is neither a separator nor `title`.
    fn section(&mut self, title: &str) -> Result<usize, PsplibError> {
        let expected = format!("the section heading `{title}`");
        let (n, l) = self.next_content(&expected)?;
        if l.starts_with(title) {
            Ok(n)
        } else {
            Err(syntax(n, expected, l))
        }
    }
}

/// Whether `line` consists only of `c` (a section separator).
fn is_rule(line: &str, c: char) -> bool {
    !line.is_empty() && line.chars().all(|x| x == c)
}

/// The whitespace-separated non-negative integers of a row.
fn integers(line: usize, text: &str, what: &str) -> Result<Vec<i64>, PsplibError> {
    text.split_whitespace()
        .map(|t| match t.parse::<i64>() {
            Ok(v) if v >= 0 => Ok(v),
            _ => Err(PsplibError::Syntax {
                line,
                expected: format!("{what} (non-negative integers)"),
                found: format!("{} in {}", excerpt(t), excerpt(text)),
            }),
        })
        .collect()
}

/// Resource kinds of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Renewable,
    Nonrenewable,
    Doubly,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Renewable => 'R',
            Kind::Nonrenewable => 'N',
            Kind::Doubly => 'D',
        }
    }
}

/// Parses resource labels such as `R 1  R 2  N 1` or `R1 R2 N1` into (kind, number).
fn resource_labels(line: usize, text: &str) -> Result<Vec<(Kind, u32)>, PsplibError> {
    let expected = "resource labels such as `R 1  R 2` (a letter R, N or D, then a number)";
    let mut out = Vec::new();
    let mut tokens = text.split_whitespace().peekable();
    while let Some(t) = tokens.next() {
        let mut chars = t.chars();
        let kind = match chars.next() {
            Some('R') => Kind::Renewable,
            Some('N') => Kind::Nonrenewable,
            Some('D') => Kind::Doubly,
            _ => return Err(syntax(line, expected, text)),
        };
        let rest = chars.as_str();
        let number = if rest.is_empty() {
            tokens.next().and_then(|n| n.parse::<u32>().ok())
        } else {
            rest.parse::<u32>().ok()
        };
        match number {
            Some(k) => out.push((kind, k)),
            None => return Err(syntax(line, expected, text)),
        }
    }
    Ok(out)
}

/// The header: job count and resource counts per kind.
struct Header {
    jobs: usize,
    renewable: usize,
    nonrenewable: usize,
    doubly: usize,
    /// Line of each count, for messages.
    lines: [usize; 4],
}

fn parse_header(cur: &mut Cursor) -> Result<Header, PsplibError> {
    // (value, line) of jobs, renewable, nonrenewable, doubly constrained.
    let mut found: [Option<(usize, usize)>; 4] = [None; 4];
    let names = [
        "`jobs (incl. supersource/sink ): <count>`",
        "`- renewable : <count> R`",
        "`- nonrenewable : <count> N`",
        "`- doubly constrained : <count> D`",
    ];
    loop {
        let missing = found.iter().position(Option::is_none);
        let expected = match missing {
            Some(i) => format!("the header line {}", names[i]),
            None => "the section heading `PRECEDENCE RELATIONS:`".to_string(),
        };
        let (n, l) = cur.next(&expected)?;
        if l.starts_with("PRECEDENCE RELATIONS") {
            if missing.is_some() {
                return Err(syntax(n, expected, l));
            }
            cur.pos -= 1;
            break;
        }
        let Some((key, value)) = l.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_start_matches('-').trim();
        let (slot, unit) = if key.starts_with("jobs") {
            (0, None)
        } else if key == "renewable" {
            (1, Some("R"))
        } else if key == "nonrenewable" {
            (2, Some("N"))
        } else if key == "doubly constrained" {
            (3, Some("D"))
        } else if key == "projects" {
            match value.trim().parse::<u32>() {
                Ok(1) => continue,
                _ => {
                    return Err(PsplibError::Unsupported {
                        line: n,
                        what: format!("a file with `projects : {}` (only 1 project)", value.trim()),
                    })
                }
            }
        } else {
            continue;
        };
        if found[slot].is_some() {
            return Err(syntax(n, "each header count once", l));
        }
        let mut tokens = value.split_whitespace();
        let count = tokens.next().and_then(|t| t.parse::<usize>().ok());
        let ok_unit = match unit {
            Some(u) => tokens.next() == Some(u) && tokens.next().is_none(),
            None => tokens.next().is_none(),
        };
        match count {
            Some(c) if ok_unit => found[slot] = Some((c, n)),
            _ => return Err(syntax(n, names[slot], l)),
        }
    }
    let [(jobs, l0), (renewable, l1), (nonrenewable, l2), (doubly, l3)] =
        found.map(|f| f.unwrap_or_default());
    if jobs < 2 {
        return Err(syntax(
            l0,
            "a job count of at least 2 (the dummy source and sink)",
            &jobs.to_string(),
        ));
    }
    if jobs > cur.lines.len() {
        // Each job needs rows further down; this also keeps a corrupt count from allocating.
        return Err(syntax(
            l0,
            format!(
                "a job count no larger than the file's {} lines",
                cur.lines.len()
            ),
            &jobs.to_string(),
        ));
    }
    Ok(Header {
        jobs,
        renewable,
        nonrenewable,
        doubly,
        lines: [l0, l1, l2, l3],
    })
}

/// Converts the text of a PSPLIB single-mode `.sm` file into a SPEC instance (see the
/// module documentation for the mapping) and validates it.
pub fn parse_sm(text: &str) -> Result<Instance, PsplibError> {
    let mut cur = Cursor::new(text);
    let header = parse_header(&mut cur)?;
    let n = header.jobs;
    if header.doubly > 0 {
        return Err(PsplibError::Unsupported {
            line: header.lines[3],
            what: format!("a file with {} doubly constrained resources", header.doubly),
        });
    }

    // PRECEDENCE RELATIONS: `jobnr #modes #successors successors...`, jobs 1..=n in order.
    cur.section("PRECEDENCE RELATIONS:")?;
    let expected_head = "the column header `jobnr. #modes #successors successors`";
    let (ln, l) = cur.next(expected_head)?;
    if !l.starts_with("jobnr") {
        return Err(syntax(ln, expected_head, l));
    }
    // Index 0 is unused, so that job numbers index directly.
    let mut successors: Vec<Vec<usize>> = vec![Vec::new()];
    for job in 1..=n {
        let what = format!("the precedence row of job {job}: `{job} 1 <#successors> <successors>`");
        let (ln, l) = cur.next_content(&what)?;
        let v = integers(ln, l, &what)?;
        if v.len() < 3 || v[0] != job as i64 {
            return Err(syntax(ln, what, l));
        }
        if v[1] != 1 {
            return Err(PsplibError::Unsupported {
                line: ln,
                what: format!(
                    "job {job} with {} modes (only single-mode .sm files, with 1 mode per job)",
                    v[1]
                ),
            });
        }
        let listed = &v[3..];
        if listed.len() as i64 != v[2] {
            return Err(syntax(
                ln,
                format!("{} successors (the count given for job {job})", v[2]),
                l,
            ));
        }
        for &s in listed {
            if s < 1 || s > n as i64 {
                return Err(syntax(
                    ln,
                    format!("successor job numbers between 1 and {n} (job {job})"),
                    l,
                ));
            }
        }
        successors.push(listed.iter().map(|&s| s as usize).collect());
    }

    // REQUESTS/DURATIONS: column header with resource labels, a `----` rule, then
    // `jobnr mode duration requests...`.
    cur.section("REQUESTS/DURATIONS:")?;
    let expected_head = "the column header `jobnr. mode duration R 1 ...`";
    let (ln, l) = cur.next(expected_head)?;
    let Some(labels_text) = l
        .strip_prefix("jobnr.")
        .or_else(|| l.strip_prefix("jobnr"))
        .and_then(|r| r.trim_start().strip_prefix("mode"))
        .and_then(|r| r.trim_start().strip_prefix("duration"))
    else {
        return Err(syntax(ln, expected_head, l));
    };
    let labels = resource_labels(ln, labels_text)?;
    check_labels(ln, l, &labels, &header)?;
    let (ln, l) = cur.next("a line of dashes `-----`")?;
    if !is_rule(l, '-') {
        return Err(syntax(ln, "a line of dashes `-----`", l));
    }
    let k = labels.len();
    let mut duration = vec![0i64; n + 1];
    let mut requests: Vec<Vec<i64>> = vec![Vec::new(); n + 1];
    let mut request_line = vec![0usize; n + 1];
    for job in 1..=n {
        let what = format!("the request row of job {job}: `{job} 1 <duration>` and {k} requests");
        let (ln, l) = cur.next_content(&what)?;
        let v = integers(ln, l, &what)?;
        if v.len() != 3 + k || v[0] != job as i64 || v[1] != 1 {
            return Err(syntax(ln, what, l));
        }
        duration[job] = v[2];
        requests[job] = v[3..].to_vec();
        request_line[job] = ln;
    }

    // RESOURCEAVAILABILITIES: the labels again, then one row of capacities.
    cur.section("RESOURCEAVAILABILITIES:")?;
    let (ln, l) = cur.next("the resource labels `R 1 R 2 ...`")?;
    let avail_labels = resource_labels(ln, l)?;
    if avail_labels != labels {
        return Err(syntax(
            ln,
            format!("the same resource labels as the request header ({labels_text})"),
            l,
        ));
    }
    let what = format!("{k} resource availabilities");
    let (ln, l) = cur.next_content(&what)?;
    let available = integers(ln, l, &what)?;
    if available.len() != k {
        return Err(syntax(ln, what, l));
    }
    let avail_value_line = ln;
    if let Some(avail) = cur.lines.get(cur.pos).filter(|(_, l)| !is_rule(l, '*')) {
        return Err(syntax(
            avail.0,
            "the end of the file after the availabilities",
            avail.1,
        ));
    }

    // Dummies: the first and last jobs when they have duration 0.
    let is_dummy = |job: usize| (job == 1 || job == n) && duration[job] == 0;
    for job in 1..=n {
        if duration[job] == 0 && !is_dummy(job) {
            return Err(PsplibError::ZeroDuration {
                line: request_line[job],
                job,
                last: n,
            });
        }
        if is_dummy(job) {
            if let Some((q, &amount)) = requests[job].iter().enumerate().find(|(_, &a)| a > 0) {
                return Err(PsplibError::DummyRequest {
                    line: request_line[job],
                    job,
                    resource: label_name(labels[q]),
                    amount,
                });
            }
        }
    }

    // Non-renewable resources: the total is fixed in single mode; check it, then drop them.
    for (q, &label) in labels.iter().enumerate() {
        if label.0 == Kind::Nonrenewable {
            let total: i64 = (1..=n).map(|j| requests[j][q]).sum();
            if total > available[q] {
                return Err(PsplibError::NonrenewableExceeded {
                    line: avail_value_line,
                    resource: label_name(label),
                    total,
                    available: available[q],
                });
            }
        }
    }
    let kept: Vec<usize> = (0..k).filter(|&q| labels[q].0 == Kind::Renewable).collect();

    // Predecessors, with the dummies' relations passed through.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
    for (job, succ) in successors.iter().enumerate() {
        for &s in succ {
            preds[s].push(job);
        }
    }
    for d in (1..=n).filter(|&j| is_dummy(j)) {
        let (dp, ds) = (preds[d].clone(), successors[d].clone());
        for &s in &ds {
            preds[s].retain(|&p| p != d);
            for &p in &dp {
                preds[s].push(p);
            }
        }
        for &p in &dp {
            successors[p].retain(|&s| s != d);
            successors[p].extend(&ds);
        }
        preds[d].clear();
        successors[d].clear();
    }

    let queue = (1..=n)
        .filter(|&j| !is_dummy(j))
        .map(|j| {
            let mut deps = preds[j].clone();
            deps.sort_unstable();
            deps.dedup();
            let mut job = QueuedJob::new(
                job_id(j),
                0,
                kept.iter().map(|&q| requests[j][q]).collect(),
                duration[j],
            );
            job.deps = deps.into_iter().map(job_id).collect();
            job
        })
        .collect();
    let instance = Instance {
        now: 0,
        resources: kept.iter().map(|&q| label_name(labels[q])).collect(),
        servers: vec![Server {
            id: POOL.to_string(),
            capacity: kept.iter().map(|&q| available[q]).collect(),
        }],
        running: Vec::new(),
        queue,
    };
    validate(&instance)?;
    Ok(instance)
}

/// Checks the labels of the request header against the header counts.
fn check_labels(
    line: usize,
    text: &str,
    labels: &[(Kind, u32)],
    header: &Header,
) -> Result<(), PsplibError> {
    let count = |kind: Kind| labels.iter().filter(|l| l.0 == kind).count();
    for (kind, want) in [
        (Kind::Renewable, header.renewable),
        (Kind::Nonrenewable, header.nonrenewable),
        (Kind::Doubly, header.doubly),
    ] {
        if count(kind) != want {
            return Err(syntax(
                line,
                format!(
                    "{want} resource columns of kind {} (as the header says)",
                    kind.letter()
                ),
                text,
            ));
        }
    }
    for (i, a) in labels.iter().enumerate() {
        if labels[..i].contains(a) {
            return Err(syntax(line, "distinct resource labels", text));
        }
    }
    Ok(())
}

fn label_name((kind, k): (Kind, u32)) -> String {
    format!("{}{k}", kind.letter())
}

/// The queued-job id of PSPLIB job number `job`: `"j<job>"`.
pub fn job_id(job: usize) -> String {
    format!("j{job}")
}

/// Parses an `optimum.csv` table (header `problem,optimum`, then one `name,makespan` row per
/// instance, for example `j301_1.sm,43`) into (name, optimum) pairs in file order. A name
/// listed twice is an error.
pub fn read_optimum_csv(text: &str) -> Result<Vec<(String, i64)>, PsplibError> {
    let mut cur = Cursor::new(text);
    let head = "the header `problem,optimum`";
    let (ln, l) = cur.next(head)?;
    let cells: Vec<&str> = l.split(',').map(str::trim).collect();
    if cells != ["problem", "optimum"] {
        return Err(syntax(ln, head, l));
    }
    let mut out: Vec<(String, i64)> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    while cur.pos < cur.lines.len() {
        let (ln, l) = cur.next("a row")?;
        let row = "a row `<problem>,<optimum>` with a file name and a non-negative integer";
        let Some((name, value)) = l.split_once(',') else {
            return Err(syntax(ln, row, l));
        };
        let (name, value) = (name.trim(), value.trim());
        let value = match value.parse::<i64>() {
            Ok(v) if v >= 0 && !name.is_empty() => v,
            _ => return Err(syntax(ln, row, l)),
        };
        if let Some(first) = seen.insert(name.to_string(), ln) {
            return Err(syntax(
                ln,
                format!("each problem once (\"{name}\" is already on line {first})"),
                l,
            ));
        }
        out.push((name.to_string(), value));
    }
    Ok(out)
}

/// Looks up the optimum of `name` (for example `"j301_1.sm"` or `"j301_1"`) in a table
/// returned by [`read_optimum_csv`].
pub fn optimum_of(table: &[(String, i64)], name: &str) -> Option<i64> {
    let key = name.strip_suffix(".sm").unwrap_or(name);
    table
        .iter()
        .find(|(n, _)| n.strip_suffix(".sm").unwrap_or(n) == key)
        .map(|&(_, v)| v)
}

/// Why PSPLIB files could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A directory could not be listed, or a file read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A file is not a PSPLIB instance this importer reads.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, with its line.
        source: PsplibError,
    },
    /// No `.sm` file was named or found.
    #[error(transparent)]
    Empty(#[from] schedlm_model::input::InputError),
}

/// The instances of the `.sm` files named in `inputs`, each directory replaced by its `.sm`
/// files in natural order (`j301_2` before `j301_10`).
pub fn import_files(inputs: &[std::path::PathBuf]) -> Result<Vec<Instance>, ImportError> {
    let files = expand(inputs, "sm")?;
    if files.is_empty() {
        let first = inputs.first().cloned().unwrap_or_default();
        return Err(schedlm_model::input::empty_input(&first, "PSPLIB file (.sm)").into());
    }
    let read = |path: &std::path::PathBuf| {
        let text =
            schedlm_model::lines::read_bounded(path).map_err(|source| ImportError::Read {
                path: path.clone(),
                source,
            })?;
        parse_sm(&text).map_err(|source| ImportError::Parse {
            path: path.clone(),
            source,
        })
    };
    files.iter().map(read).collect()
}

/// The files named, with each directory replaced by its files of this extension, by name.
fn expand(
    inputs: &[std::path::PathBuf],
    extension: &str,
) -> Result<Vec<std::path::PathBuf>, ImportError> {
    let mut files = Vec::new();
    for input in inputs.iter() {
        if !input.is_dir() {
            files.push(input.clone());
            continue;
        }
        let listing = std::fs::read_dir(input).map_err(|source| ImportError::Read {
            path: input.clone(),
            source,
        })?;
        let mut found: Vec<std::path::PathBuf> = (listing.filter_map(|e| e.ok().map(|e| e.path())))
            .filter(|p| p.extension().is_some_and(|e| e == extension))
            .collect();
        found.sort_by_key(|a| natural_key(a));
        files.extend(found);
    }
    Ok(files)
}

/// Sorts `j301_2` before `j301_10`: digit runs compare as numbers.
fn natural_key(path: &std::path::Path) -> Vec<(u64, String)> {
    let name = (path.file_name().map(|n| n.to_string_lossy().into_owned())).unwrap_or_default();
    let mut key = Vec::new();
    let mut rest = name.as_str();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits > 0 {
            key.push((rest[..digits].parse().unwrap_or(u64::MAX), String::new()));
            rest = &rest[digits..];
        } else {
            let text = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            key.push((0, rest[..text].to_string()));
            rest = &rest[text..];
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_sort_with_numbers_as_numbers() {
        let mut names = ["j301_10.sm", "j3010_1.sm", "j301_2.sm", "j301_1.sm", "a.sm"]
            .map(std::path::PathBuf::from);
        names.sort_by_key(|p| natural_key(p));
        let sorted: Vec<_> = names.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            sorted,
            ["a.sm", "j301_1.sm", "j301_2.sm", "j301_10.sm", "j3010_1.sm"]
        );
    }

    const SMALL: &str = "\
jobs (incl. supersource/sink ):  5
RESOURCES
  - renewable                 :  2   R
  - nonrenewable              :  1   N
  - doubly constrained        :  0   D
****
PRECEDENCE RELATIONS:
jobnr.    #modes  #successors   successors
   1        1          2           2   3
   2        1          1           4
   3        1          1           4
   4        1          1           5
   5        1          0
****
REQUESTS/DURATIONS:
jobnr. mode duration  R 1  R 2  N 1
------------------------------------------------------------------------
  1      1     0       0    0    0
  2      1     3       2    1    4
  3      1     5       1    0    3
  4      1     2       1    1    0
  5      1     0       0    0    0
****
RESOURCEAVAILABILITIES:
  R 1  R 2  N 1
   2    1    7
****
";

    #[test]
    fn small_file_with_a_nonrenewable_resource() {
        let i = parse_sm(SMALL).unwrap();
        assert_eq!(i.resources, ["R1", "R2"]);
        assert_eq!(i.servers[0].capacity, [2, 1]);
        assert_eq!(i.queue.len(), 3);
        assert_eq!(i.queue[0].deps, Vec::<String>::new());
        assert_eq!(i.queue[2].id, "j4");
        assert_eq!(i.queue[2].deps, ["j2", "j3"]);
        assert_eq!(i.queue[0].demand, [2, 1]);
    }

    #[test]
    fn nonrenewable_total_is_checked() {
        let bad = SMALL.replace("   2    1    7", "   2    1    6");
        let e = parse_sm(&bad).unwrap_err();
        assert!(
            matches!(
                e,
                PsplibError::NonrenewableExceeded {
                    line: 26,
                    total: 7,
                    available: 6,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn zero_duration_real_job_is_an_error() {
        let bad = SMALL.replace("  3      1     5 ", "  3      1     0 ");
        let e = parse_sm(&bad).unwrap_err();
        assert_eq!(
            e,
            PsplibError::ZeroDuration {
                line: 20,
                job: 3,
                last: 5
            }
        );
        assert!(e.to_string().starts_with("line 20: job 3 has duration 0"));
    }

    #[test]
    fn dummy_pass_through() {
        // The source has a real job as predecessor (not PSPLIB, but the relation must
        // survive): 2 -> 1 -> 3 becomes 2 -> 3.
        let text = SMALL
            .replace(
                "   1        1          2           2   3",
                "   1        1          1           3",
            )
            .replace(
                "   2        1          1           4",
                "   2        1          2           1   4",
            );
        let i = parse_sm(&text).unwrap();
        assert_eq!(i.queue[1].id, "j3");
        assert_eq!(i.queue[1].deps, ["j2"]);
    }

    #[test]
    fn truncated_file() {
        let cut: String = SMALL.lines().take(12).map(|l| format!("{l}\n")).collect();
        let e = parse_sm(&cut).unwrap_err();
        let PsplibError::Syntax { line, found, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!((*line, found.as_str()), (13, "end of file"), "{e}");
        assert!(e.to_string().contains("precedence row of job 5"), "{e}");
    }

    #[test]
    fn multi_mode_is_unsupported() {
        let bad = SMALL.replace(
            "   4        1          1           5",
            "   4        2          1           5",
        );
        let e = parse_sm(&bad).unwrap_err();
        assert!(
            matches!(e, PsplibError::Unsupported { line: 12, .. }),
            "{e}"
        );
    }

    #[test]
    fn optimum_csv() {
        let t = read_optimum_csv("problem,optimum\nj301_1.sm,43\r\nj301_2.sm,47\n").unwrap();
        assert_eq!(
            t,
            [("j301_1.sm".to_string(), 43), ("j301_2.sm".to_string(), 47)]
        );
        assert_eq!(optimum_of(&t, "j301_2"), Some(47));
        let e = read_optimum_csv("problem,optimum\nj301_1.sm,4x3\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2: expected a row"), "{e}");
        let e = read_optimum_csv("problem,optimum\na,1\na,2\n").unwrap_err();
        assert!(e.to_string().contains("already on line 2"), "{e}");
        let e = read_optimum_csv("name,value\n").unwrap_err();
        assert!(
            e.to_string().starts_with("line 1: expected the header"),
            "{e}"
        );
    }
}
