//! Reader of workload traces in the Standard Workload Format (SWF, Parallel Workloads
//! Archive, Feitelson et al. 2014), with explicit cleaning.
//!
//! An SWF file holds `;` comment lines (the header: `; MaxProcs: 128` and the like) and one
//! line per job with 18 whitespace-separated numeric fields (1-based, as in the format's
//! definition): 1 job number, 2 submit time, 3 wait time, 4 run time, 5 allocated processors,
//! 6 average CPU time, 7 used memory, 8 requested processors, 9 requested time, 10 requested
//! memory, 11 status, 12 user, 13 group, 14 executable, 15 queue, 16 partition, 17 preceding
//! job, 18 think time. `-1` means "missing".
//!
//! [`read_swf`] (a plain or gzipped file, gzip detected by its magic bytes) and [`parse_swf`]
//! (any [`BufRead`]) turn such a text into a [`Trace`]: the header, the kept jobs as
//! [`TraceJob`]s sorted by (submit, number), and a [`CleaningReport`] that counts what every
//! policy did. Nothing is dropped or changed silently: each job that is skipped is counted
//! under exactly one reason, and each field that is filled in from another one is counted.
//!
//! # Syntax
//!
//! - A line whose first non-blank character is `;` is a comment, kept in
//!   [`SwfHeader::comments`]. `; MaxProcs: N`, `; MaxNodes: N` and `; UnixStartTime: N` (keys
//!   compared without case) set the header fields; the value's leading integer is taken, so
//!   `338 (batch partition; 512 total)` reads as 338. A value without a leading integer is a
//!   malformed line.
//! - Blank lines are counted and ignored.
//! - Any other line must have exactly 18 fields, each a number. Fields 1, 2, 3, 4, 5, 8, 9, 11
//!   and 12 must be integers (an integral decimal such as `28800.00` is accepted); the others
//!   may be decimals (field 6, the average CPU time, is written as `552.21` in several logs)
//!   and are only checked to be numbers. Any negative value means "missing", like `-1`.
//! - A malformed line is an error ([`SwfError::FieldCount`], [`SwfError::Number`],
//!   [`SwfError::Header`]) that names the file and the 1-based line, unless
//!   [`SwfOptions::skip_bad_lines`] is set: then it is counted in
//!   [`CleaningReport::bad_lines_skipped`] and the reading goes on.
//!
//! # Cleaning policies (defaults in brackets)
//!
//! Each job line is checked in this order; the first reason that applies skips the job and is
//! counted under that reason only, so `records = jobs_kept + skipped()`.
//!
//! 1. The job number was already seen on an earlier line: skipped (`duplicate_skipped`),
//!    since ids must be unique.
//! 2. Submit time missing: skipped (`submit_missing_skipped`).
//! 3. Status 5 (cancelled) and run time 0 or missing: the job never ran; skipped
//!    (`cancelled_skipped`). A cancelled job with a positive run time did occupy the machine
//!    and is kept (counted in `cancelled_kept`).
//! 4. Run time missing: skipped (`runtime_missing_skipped`).
//! 5. Run time 0: skipped (`runtime_zero_skipped`), or set to 1 s with
//!    [`ZeroRuntime::One`] (`runtime_zero_to_one`).
//! 6. Requested processors (field 8) missing or 0: [taken from the allocated processors,
//!    field 5] (`procs_from_allocated`; CTC-SP2 and lublin_256 have no field 8). If that is
//!    missing too, or with `procs_from_allocated: false`, skipped (`procs_missing_skipped`).
//! 7. Requested time (field 9) missing or 0: [taken from the run time] (`walltime_from_runtime`;
//!    lublin_256 has no field 9, so there walltime = run time exactly). With
//!    `walltime_from_runtime: false`, skipped (`walltime_missing_skipped`).
//! 8. Requested processors above the machine size: skipped (`procs_over_machine`): such a
//!    job cannot have run as requested and would fit no server; [`OverMachine::Cap`] caps it
//!    at the machine size instead (counted under the same name).
//!
//! Run time above the requested time (the job overran its request, which schedulers allow
//! by a grace period): [kept as in the file] and counted in `runtime_over_walltime`; a replay
//! after SPEC section 5 kills it at its walltime anyway. [`Overrun::CapRuntime`] lowers the
//! run time to the walltime, [`Overrun::RaiseWalltime`] raises the walltime to the run time.
//!
//! The machine size used in step 8 is [`SwfOptions::machine_procs`] if given, else the
//! header's `MaxProcs`, else its `MaxNodes` (one processor per node), else unknown (no job is
//! over it). [`CleaningReport::machine_procs`] holds it, and when it is unknown the largest
//! kept job's processors, with [`CleaningReport::machine_source`] saying which.
//!
//! The jobs are sorted by (submit, number); how many were out of that order in the file is
//! counted in `reordered`. Status values other than 5 (0 failed, 1 completed, -1 unknown) are
//! kept as they are.
//!
//! ```
//! use schedlm_generator::trace::swf::{parse_swf, SwfOptions};
//!
//! let text = "\
//! ; MaxProcs: 64
//! 1 0 5 100 4 -1 -1 4 200 -1 1 7 -1 -1 -1 -1 -1 -1
//! 2 10 -1 -1 8 -1 -1 8 300 -1 5 7 -1 -1 -1 -1 -1 -1
//! 3 20 0 50 2 12.5 -1 -1 -1 -1 1 8 -1 -1 -1 -1 -1 -1
//! ";
//! let trace = parse_swf(text.as_bytes(), "tiny.swf", &SwfOptions::default()).unwrap();
//! assert_eq!(trace.header.max_procs, Some(64));
//! assert_eq!(trace.jobs.len(), 2);
//! assert_eq!(trace.report.cancelled_skipped, 1);
//! assert_eq!((trace.jobs[1].procs, trace.jobs[1].walltime), (2, 50));
//! assert_eq!(trace.report.procs_from_allocated, 1);
//! assert_eq!(trace.report.walltime_from_runtime, 1);
//!
//! // A malformed line is an error naming the file and the line.
//! let err = parse_swf("1 0 5\n".as_bytes(), "bad.swf", &SwfOptions::default()).unwrap_err();
//! assert!(err.to_string().starts_with("bad.swf:1: expected 18"), "{err}");
//! ```

use schedlm_model::lines::excerpt;
use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use schedlm_model::Server;
use serde::{Deserialize, Serialize};

/// Number of fields of an SWF job line.
pub const FIELDS: usize = 18;

/// Names of the 18 SWF fields, index 0 = field 1.
pub const FIELD_NAMES: [&str; FIELDS] = [
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
];

/// SWF status code of a cancelled job (field 11).
pub const STATUS_CANCELLED: i64 = 5;

/// Id of the single server of [`ClusterShape::Pool`].
pub const POOL: &str = "pool";

/// Fields that must hold integers (1-based); the others may be decimals.
const INTEGER_FIELDS: [usize; 13] = [1, 2, 3, 4, 5, 8, 9, 11, 12, 13, 14, 15, 16];

/// What the `;` header says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwfHeader {
    /// `; MaxProcs:` (leading integer).
    pub max_procs: Option<i64>,
    /// `; MaxNodes:` (leading integer; `338 (batch partition; 512 total)` gives 338).
    pub max_nodes: Option<i64>,
    /// `; UnixStartTime:`, the epoch second that submit time 0 stands for.
    pub unix_start_time: Option<i64>,
    /// Every comment line, without its `;` and trailing blanks, in file order.
    pub comments: Vec<String>,
}

/// One kept job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceJob {
    /// SWF job number (field 1).
    pub number: i64,
    /// Submit time in seconds, as in the file (field 2).
    pub submit: i64,
    /// True run time (field 4), >= 1 after cleaning.
    pub runtime: i64,
    /// Requested time (field 9, or the run time; see the policies), >= 1.
    pub walltime: i64,
    /// Requested processors (field 8, or field 5; see the policies), >= 1.
    pub procs: i64,
    /// User id (field 12); -1 when the file has none.
    pub user: i64,
    /// Group id (field 13); -1 when the file has none.
    pub group: i64,
    /// Executable (application) number (field 14); -1 when the file has none.
    pub executable: i64,
    /// Queue number (field 15); -1 when the file has none.
    pub queue: i64,
    /// Partition number (field 16); -1 when the file has none.
    pub partition: i64,
    /// Status (field 11): 1 completed, 0 failed, 5 cancelled, -1 unknown.
    pub status: i64,
    /// 1-based line of the file.
    pub line: usize,
}

/// What to do with a run time of 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZeroRuntime {
    /// Skip the job (`runtime_zero_skipped`).
    #[default]
    Skip,
    /// Keep it with run time 1 s (`runtime_zero_to_one`).
    One,
}

/// What to do with a job that requests more processors than the machine has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverMachine {
    /// Skip it.
    #[default]
    Skip,
    /// Cap its processors at the machine size.
    Cap,
}

/// What to do with a job whose run time exceeds its requested time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overrun {
    /// Keep both as in the file.
    #[default]
    Keep,
    /// Lower the run time to the walltime.
    CapRuntime,
    /// Raise the walltime to the run time.
    RaiseWalltime,
}

/// Reading and cleaning switches. [`SwfOptions::default`] gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwfOptions {
    /// Count and skip malformed lines instead of failing on the first one (default false).
    pub skip_bad_lines: bool,
    /// Run time 0 (default: skip).
    pub zero_runtime: ZeroRuntime,
    /// Requested processors missing: use the allocated ones (default true; false skips).
    pub procs_from_allocated: bool,
    /// Requested time missing: use the run time (default true; false skips).
    pub walltime_from_runtime: bool,
    /// Requested processors above the machine size (default: skip).
    pub over_machine: OverMachine,
    /// Run time above the requested time (default: keep).
    pub overrun: Overrun,
    /// Machine size to use instead of the header's (default none).
    pub machine_procs: Option<i64>,
}

impl Default for SwfOptions {
    fn default() -> Self {
        SwfOptions {
            skip_bad_lines: false,
            zero_runtime: ZeroRuntime::Skip,
            procs_from_allocated: true,
            walltime_from_runtime: true,
            over_machine: OverMachine::Skip,
            overrun: Overrun::Keep,
            machine_procs: None,
        }
    }
}

/// Where [`CleaningReport::machine_procs`] comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MachineSource {
    /// [`SwfOptions::machine_procs`].
    Option,
    /// The header's `MaxProcs`.
    MaxProcs,
    /// The header's `MaxNodes` (no `MaxProcs`; one processor per node assumed).
    MaxNodes,
    /// Neither header: the largest kept job's processors.
    LargestJob,
    /// Nothing: no header and no kept job.
    #[default]
    Unknown,
}

impl fmt::Display for MachineSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MachineSource::Option => "given as an option",
            MachineSource::MaxProcs => "from the MaxProcs header",
            MachineSource::MaxNodes => {
                "from the MaxNodes header (no MaxProcs; one processor per node assumed)"
            }
            MachineSource::LargestJob => "from the largest job (no MaxProcs or MaxNodes header)",
            MachineSource::Unknown => "unknown (no header and no job)",
        })
    }
}

/// What reading and cleaning did: one counter per policy.
///
/// Every job line is either kept or skipped under exactly one `*_skipped` reason (or
/// `procs_over_machine` with [`OverMachine::Skip`]): `records == jobs_kept + skipped()`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleaningReport {
    /// Every line of the file.
    pub lines_read: usize,
    /// `;` lines.
    pub comment_lines: usize,
    /// Empty or blank lines.
    pub blank_lines: usize,
    /// Well-formed job lines (kept or skipped).
    pub records: usize,
    /// Jobs in [`Trace::jobs`].
    pub jobs_kept: usize,
    /// Malformed lines skipped (only with [`SwfOptions::skip_bad_lines`]); not in `records`.
    pub bad_lines_skipped: usize,
    /// A job number seen before.
    pub duplicate_skipped: usize,
    /// Submit time missing.
    pub submit_missing_skipped: usize,
    /// Status 5 with run time 0 or missing.
    pub cancelled_skipped: usize,
    /// Run time missing.
    pub runtime_missing_skipped: usize,
    /// Run time 0 ([`ZeroRuntime::Skip`]).
    pub runtime_zero_skipped: usize,
    /// Run time 0 set to 1 ([`ZeroRuntime::One`]).
    pub runtime_zero_to_one: usize,
    /// Requested and allocated processors both missing (or no fallback allowed).
    pub procs_missing_skipped: usize,
    /// Requested time missing and no fallback allowed.
    pub walltime_missing_skipped: usize,
    /// Requested processors above the machine size: skipped or capped as `over_machine` says.
    pub procs_over_machine: usize,
    /// Requested processors missing, allocated ones used.
    pub procs_from_allocated: usize,
    /// Requested time missing, run time used.
    pub walltime_from_runtime: usize,
    /// Run time above the requested time (kept, capped or raised as `overrun` says).
    pub runtime_over_walltime: usize,
    /// Cancelled jobs kept because they ran (status 5, run time > 0).
    pub cancelled_kept: usize,
    /// Kept jobs that were out of (submit, number) order in the file.
    pub reordered: usize,
    /// The policy applied to `procs_over_machine`.
    pub over_machine: OverMachine,
    /// The policy applied to `runtime_over_walltime`.
    pub overrun: Overrun,
    /// The machine size in processors (see [`MachineSource`]).
    pub machine_procs: Option<i64>,
    /// Where `machine_procs` comes from.
    pub machine_source: MachineSource,
}

impl CleaningReport {
    /// Job lines skipped for any reason (malformed lines not included).
    pub fn skipped(&self) -> usize {
        let over = match self.over_machine {
            OverMachine::Skip => self.procs_over_machine,
            OverMachine::Cap => 0,
        };
        self.duplicate_skipped
            + self.submit_missing_skipped
            + self.cancelled_skipped
            + self.runtime_missing_skipped
            + self.runtime_zero_skipped
            + self.procs_missing_skipped
            + self.walltime_missing_skipped
            + over
    }
}

impl fmt::Display for CleaningReport {
    /// One line per nonzero counter, then the machine size.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let over = match self.over_machine {
            OverMachine::Skip => "requested processors above the machine, skipped",
            OverMachine::Cap => "requested processors above the machine, capped",
        };
        let overrun = match self.overrun {
            Overrun::Keep => "run time above requested time, kept",
            Overrun::CapRuntime => "run time above requested time, run time capped",
            Overrun::RaiseWalltime => "run time above requested time, walltime raised",
        };
        let rows: [(&str, usize); 20] = [
            ("lines read", self.lines_read),
            ("comment lines", self.comment_lines),
            ("blank lines", self.blank_lines),
            ("job records", self.records),
            ("jobs kept", self.jobs_kept),
            ("bad lines skipped", self.bad_lines_skipped),
            ("duplicate job numbers skipped", self.duplicate_skipped),
            ("submit time missing, skipped", self.submit_missing_skipped),
            ("cancelled before running, skipped", self.cancelled_skipped),
            ("run time missing, skipped", self.runtime_missing_skipped),
            ("run time 0, skipped", self.runtime_zero_skipped),
            ("run time 0, set to 1", self.runtime_zero_to_one),
            ("processors missing, skipped", self.procs_missing_skipped),
            (
                "requested time missing, skipped",
                self.walltime_missing_skipped,
            ),
            (over, self.procs_over_machine),
            (
                "requested processors missing, allocated used",
                self.procs_from_allocated,
            ),
            (
                "requested time missing, run time used",
                self.walltime_from_runtime,
            ),
            (overrun, self.runtime_over_walltime),
            ("cancelled after running, kept", self.cancelled_kept),
            ("out of submit order, sorted", self.reordered),
        ];
        for (label, count) in rows {
            if count != 0 {
                writeln!(f, "{label}: {count}")?;
            }
        }
        match self.machine_procs {
            Some(p) => write!(f, "machine: {p} processors, {}", self.machine_source),
            None => write!(f, "machine: {}", self.machine_source),
        }
    }
}

/// A cleaned trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    /// What the file's `;` comment lines say (machine size, start time, all comments).
    pub header: SwfHeader,
    /// Kept jobs, sorted by (submit, number).
    pub jobs: Vec<TraceJob>,
    /// What the reading and cleaning did, one counter per policy, and the machine size.
    pub report: CleaningReport,
}

/// Why a trace could not be read or turned into a cluster.
#[derive(Debug, thiserror::Error)]
pub enum SwfError {
    /// The file could not be opened or read (or its gzip stream is broken).
    #[error("{name}: cannot read (after line {line}): {source}")]
    Io {
        /// The file's name as given to the reader (the path as displayed, for [`read_swf`]).
        name: String,
        /// Lines read completely before the failure (0 when the file could not be opened).
        line: usize,
        /// The I/O or gzip error.
        #[source]
        source: io::Error,
    },
    /// A job line without exactly 18 fields.
    #[error("{name}:{line}: expected {FIELDS} whitespace-separated fields, found {found}: {text}")]
    FieldCount {
        /// The file's name as given to the reader (the path as displayed, for [`read_swf`]).
        name: String,
        /// 1-based line number of the job line.
        line: usize,
        /// Number of whitespace-separated fields on the line.
        found: usize,
        /// The line's text as an error quotes it (bounded, escaped:
        /// [`schedlm_model::lines::excerpt`]; bytes that are not UTF-8 replaced).
        text: String,
    },
    /// A field that is not a number (or not an integer where one is required).
    #[error("{name}:{line}: field {field} ({field_name}) must be {expected}, found {value}")]
    Number {
        /// The file's name as given to the reader (the path as displayed, for [`read_swf`]).
        name: String,
        /// 1-based line number of the job line.
        line: usize,
        /// 1-based SWF field number (1 job number ... 18 think time).
        field: usize,
        /// The field's name, from [`FIELD_NAMES`].
        field_name: &'static str,
        /// What the field must hold, in words: a number, an integer, or an integer below 10^18
        /// in magnitude.
        expected: &'static str,
        /// The field's text as an error quotes it (bounded, escaped:
        /// [`schedlm_model::lines::excerpt`]; bytes that are not UTF-8 replaced).
        value: String,
    },
    /// A header line of a known key whose value does not start with an integer.
    #[error("{name}:{line}: header {key} must start with an integer, found {value}")]
    Header {
        /// The file's name as given to the reader (the path as displayed, for [`read_swf`]).
        name: String,
        /// 1-based line number of the comment line.
        line: usize,
        /// The header key, spelled `MaxProcs`, `MaxNodes` or `UnixStartTime`.
        key: &'static str,
        /// The value after the `:`, trimmed, as an error quotes it (bounded, escaped).
        value: String,
    },
    /// [`ClusterShape::Pool`] on a trace whose machine size is unknown.
    #[error("the machine size is unknown: the trace has no MaxProcs or MaxNodes header and no job; give the size as an option or use a node shape")]
    NoMachineSize,
    /// A [`ClusterShape::Nodes`] with no node or no core.
    #[error("bad cluster shape: {0}")]
    Shape(String),
    /// A job larger than every server of the shape (a job runs on one server).
    #[error("job {job} (line {line}) requests {procs} processors but a server of this shape has {cores} cores; a job runs on one server, so use a larger node or the pool shape")]
    JobTooLarge {
        /// SPEC id of the job, `j<job number>` (see [`job_id`]).
        job: String,
        /// 1-based line of the job in the SWF file.
        line: usize,
        /// The job's requested processors after cleaning.
        procs: i64,
        /// Cores of one server of the shape: the node size, or the machine size for
        /// [`ClusterShape::Pool`].
        cores: i64,
    },
}

/// Reads an SWF file, plain or gzipped (detected by the magic bytes `1f 8b`, whatever the
/// name), and cleans it as [`parse_swf`] does. Errors name the file as `path` displays.
pub fn read_swf(path: &Path, options: &SwfOptions) -> Result<Trace, SwfError> {
    read_swf_with_waits(path, options).map(|(trace, _)| trace)
}

/// [`read_swf`], also returning each kept job's wait time (field 3; `None` when missing), in
/// the order of [`Trace::jobs`]. The trace's own timeline (submit + wait + run) is what
/// [`crate::trace::estimate`] uses for causality.
pub fn read_swf_with_waits(
    path: &Path,
    options: &SwfOptions,
) -> Result<(Trace, Vec<Option<i64>>), SwfError> {
    let name = path.display().to_string();
    let io_err = |source| SwfError::Io {
        name: name.clone(),
        line: 0,
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let head = reader.fill_buf().map_err(io_err)?;
    if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
        let gz = BufReader::with_capacity(1 << 16, MultiGzDecoder::new(reader));
        parse_swf_with_waits(gz, &name, options)
    } else {
        parse_swf_with_waits(reader, &name, options)
    }
}

/// Parses and cleans an SWF text; `name` is used in error messages (a file name).
pub fn parse_swf(text: impl BufRead, name: &str, options: &SwfOptions) -> Result<Trace, SwfError> {
    parse_swf_with_waits(text, name, options).map(|(trace, _)| trace)
}

/// [`parse_swf`], also returning each kept job's wait time (field 3), as
/// [`read_swf_with_waits`].
pub fn parse_swf_with_waits(
    mut text: impl BufRead,
    name: &str,
    options: &SwfOptions,
) -> Result<(Trace, Vec<Option<i64>>), SwfError> {
    let mut header = SwfHeader::default();
    let mut report = CleaningReport {
        over_machine: options.over_machine,
        overrun: options.overrun,
        ..CleaningReport::default()
    };
    let mut jobs: Vec<(TraceJob, Option<i64>)> = Vec::new();
    let mut seen: HashSet<i64> = HashSet::new();
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let mut line = 0usize;
    let limit = schedlm_model::lines::max_line_bytes().map_err(|e| SwfError::Io {
        name: name.to_string(),
        line: 0,
        source: io::Error::new(io::ErrorKind::InvalidInput, e),
    })?;
    loop {
        buf.clear();
        let n = schedlm_model::lines::read_line_bounded(&mut text, &mut buf, limit, line + 1)
            .map_err(|source| SwfError::Io {
                name: name.to_string(),
                line,
                source,
            })?;
        if n == 0 {
            break;
        }
        line += 1;
        report.lines_read += 1;
        // A UTF-8 byte-order mark at the start of the file is not part of the first line.
        let bytes = match buf.strip_prefix(b"\xEF\xBB\xBF") {
            Some(rest) if line == 1 => rest,
            _ => &buf[..],
        };
        let trimmed = bytes.trim_ascii();
        if trimmed.is_empty() {
            report.blank_lines += 1;
            continue;
        }
        let result = if trimmed[0] == b';' {
            report.comment_lines += 1;
            comment(&trimmed[1..], &mut header, name, line)
        } else {
            record(trimmed, name, line).map(|r| {
                report.records += 1;
                if let Some(job) = clean(&r, line, options, &mut report, &mut seen) {
                    jobs.push((job, r.wait));
                }
            })
        };
        if let Err(e) = result {
            if options.skip_bad_lines {
                report.bad_lines_skipped += 1;
            } else {
                return Err(e);
            }
        }
    }

    // Step 8: the machine size and the jobs above it.
    let (machine, source) = match (options.machine_procs, header.max_procs, header.max_nodes) {
        (Some(p), _, _) => (Some(p), MachineSource::Option),
        (None, Some(p), _) => (Some(p), MachineSource::MaxProcs),
        (None, None, Some(n)) => (Some(n), MachineSource::MaxNodes),
        (None, None, None) => (None, MachineSource::Unknown),
    };
    if let Some(machine) = machine {
        let before = jobs.len();
        match options.over_machine {
            OverMachine::Skip => jobs.retain(|(j, _)| j.procs <= machine),
            OverMachine::Cap => {
                for (j, _) in jobs.iter_mut().filter(|(j, _)| j.procs > machine) {
                    j.procs = machine.max(1);
                    report.procs_over_machine += 1;
                }
            }
        }
        report.procs_over_machine += before - jobs.len();
        report.machine_procs = Some(machine);
        report.machine_source = source;
    } else if let Some(largest) = jobs.iter().map(|(j, _)| j.procs).max() {
        report.machine_procs = Some(largest);
        report.machine_source = MachineSource::LargestJob;
    }

    report.reordered = jobs
        .windows(2)
        .filter(|w| (w[1].0.submit, w[1].0.number) < (w[0].0.submit, w[0].0.number))
        .count();
    if report.reordered > 0 {
        jobs.sort_by_key(|(j, _)| (j.submit, j.number));
    }
    report.jobs_kept = jobs.len();
    let (jobs, waits) = jobs.into_iter().unzip();
    Ok((
        Trace {
            header,
            jobs,
            report,
        },
        waits,
    ))
}

/// The fields of a job line that the cleaning uses; `None` = missing (negative).
struct Record {
    number: i64,
    submit: Option<i64>,
    wait: Option<i64>,
    run: Option<i64>,
    allocated: Option<i64>,
    requested: Option<i64>,
    req_time: Option<i64>,
    status: i64,
    user: i64,
    group: i64,
    executable: i64,
    queue: i64,
    partition: i64,
}

/// A comment line (text after the `;`): stored, and parsed if it is a known header key.
fn comment(body: &[u8], header: &mut SwfHeader, name: &str, line: usize) -> Result<(), SwfError> {
    let text = String::from_utf8_lossy(body);
    let text = text.trim_end();
    if let Some((key, value)) = text.split_once(':') {
        let key = key.trim();
        let slot = if key.eq_ignore_ascii_case("MaxProcs") {
            Some(("MaxProcs", &mut header.max_procs))
        } else if key.eq_ignore_ascii_case("MaxNodes") {
            Some(("MaxNodes", &mut header.max_nodes))
        } else if key.eq_ignore_ascii_case("UnixStartTime") {
            Some(("UnixStartTime", &mut header.unix_start_time))
        } else {
            None
        };
        if let Some((key, slot)) = slot {
            let value = value.trim();
            *slot = Some(leading_integer(value).ok_or_else(|| SwfError::Header {
                name: name.to_string(),
                line,
                key,
                value: excerpt(value),
            })?);
        }
    }
    header.comments.push(text.to_string());
    Ok(())
}

/// The integer at the start of `s` (an optional `-`, then digits).
fn leading_integer(s: &str) -> Option<i64> {
    let digits_start = usize::from(s.starts_with('-'));
    let end = s[digits_start..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(s.len(), |i| i + digits_start);
    s[..end].parse().ok()
}

/// Splits and checks a job line.
fn record(text: &[u8], name: &str, line: usize) -> Result<Record, SwfError> {
    let mut fields: [&[u8]; FIELDS] = [&[]; FIELDS];
    let mut count = 0;
    for field in text
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty())
    {
        if count < FIELDS {
            fields[count] = field;
        }
        count += 1;
    }
    if count != FIELDS {
        return Err(SwfError::FieldCount {
            name: name.to_string(),
            line,
            found: count,
            text: excerpt(&String::from_utf8_lossy(text)),
        });
    }
    let bad = |index: usize, expected: &'static str| SwfError::Number {
        name: name.to_string(),
        line,
        field: index + 1,
        field_name: FIELD_NAMES[index],
        expected,
        value: excerpt(&String::from_utf8_lossy(fields[index])),
    };
    let mut ints = [0i64; FIELDS];
    for (index, field) in fields.iter().enumerate() {
        if INTEGER_FIELDS.contains(&(index + 1)) {
            ints[index] =
                parse_integer(field).ok_or_else(|| bad(index, integer_expected(field)))?;
        } else if !is_number(field) {
            return Err(bad(index, "a number"));
        }
    }
    let present = |v: i64| (v >= 0).then_some(v);
    Ok(Record {
        number: ints[0],
        submit: present(ints[1]),
        wait: present(ints[2]),
        run: present(ints[3]),
        allocated: present(ints[4]),
        requested: present(ints[7]),
        req_time: present(ints[8]),
        status: ints[10],
        user: ints[11],
        group: ints[12],
        executable: ints[13],
        queue: ints[14],
        partition: ints[15],
    })
}

/// Applies policies 1 to 7 (8 needs the whole header and is applied at the end).
fn clean(
    r: &Record,
    line: usize,
    options: &SwfOptions,
    report: &mut CleaningReport,
    seen: &mut HashSet<i64>,
) -> Option<TraceJob> {
    if !seen.insert(r.number) {
        report.duplicate_skipped += 1;
        return None;
    }
    let Some(submit) = r.submit else {
        report.submit_missing_skipped += 1;
        return None;
    };
    let cancelled = r.status == STATUS_CANCELLED;
    if cancelled && r.run.unwrap_or(0) == 0 {
        report.cancelled_skipped += 1;
        return None;
    }
    let Some(mut runtime) = r.run else {
        report.runtime_missing_skipped += 1;
        return None;
    };
    if runtime == 0 {
        match options.zero_runtime {
            ZeroRuntime::Skip => {
                report.runtime_zero_skipped += 1;
                return None;
            }
            ZeroRuntime::One => runtime = 1,
        }
    }
    let procs = match (
        r.requested.filter(|&p| p > 0),
        r.allocated.filter(|&p| p > 0),
    ) {
        (Some(p), _) => p,
        (None, Some(p)) if options.procs_from_allocated => p,
        _ => {
            report.procs_missing_skipped += 1;
            return None;
        }
    };
    let mut walltime = match r.req_time.filter(|&t| t > 0) {
        Some(t) => t,
        None if options.walltime_from_runtime => runtime,
        None => {
            report.walltime_missing_skipped += 1;
            return None;
        }
    };
    // The job is kept: count the fills.
    if r.run == Some(0) {
        report.runtime_zero_to_one += 1;
    }
    if r.requested.filter(|&p| p > 0).is_none() {
        report.procs_from_allocated += 1;
    }
    if r.req_time.filter(|&t| t > 0).is_none() {
        report.walltime_from_runtime += 1;
    }
    if cancelled {
        report.cancelled_kept += 1;
    }
    if runtime > walltime {
        report.runtime_over_walltime += 1;
        match options.overrun {
            Overrun::Keep => {}
            Overrun::CapRuntime => runtime = walltime,
            Overrun::RaiseWalltime => walltime = runtime,
        }
    }
    Some(TraceJob {
        number: r.number,
        submit,
        runtime,
        walltime,
        procs,
        user: r.user,
        group: r.group,
        executable: r.executable,
        queue: r.queue,
        partition: r.partition,
        status: r.status,
        line,
    })
}

/// An integer, or an integral decimal such as `28800.00`.
fn parse_integer(field: &[u8]) -> Option<i64> {
    let (negative, digits) = match field.first()? {
        b'-' => (true, &field[1..]),
        b'+' => (false, &field[1..]),
        _ => (false, field),
    };
    if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) && digits.len() <= 18 {
        let value = digits
            .iter()
            .fold(0i64, |acc, &d| acc * 10 + i64::from(d - b'0'));
        return Some(if negative { -value } else { value });
    }
    if !is_number(field) {
        return None;
    }
    let value: f64 = std::str::from_utf8(field).ok()?.parse().ok()?;
    (value.fract() == 0.0 && value.abs() < 1e18).then_some(value as i64)
}

/// What an integer field that [`parse_integer`] refused should have been: a whole number too
/// large is out of range, anything else is not an integer.
fn integer_expected(field: &[u8]) -> &'static str {
    let whole = is_number(field)
        && std::str::from_utf8(field)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_some_and(|v| v.fract() == 0.0);
    if whole {
        "an integer of magnitude below 10^18 (out of range)"
    } else {
        "an integer"
    }
}

/// `[+-]digits[.digits][(e|E)[+-]digits]`, with at least one digit before the exponent.
fn is_number(field: &[u8]) -> bool {
    let mut i = 0;
    let n = field.len();
    if i < n && (field[i] == b'-' || field[i] == b'+') {
        i += 1;
    }
    let mut digits = 0;
    while i < n && field[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < n && field[i] == b'.' {
        i += 1;
        while i < n && field[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return false;
    }
    if i < n && (field[i] == b'e' || field[i] == b'E') {
        i += 1;
        if i < n && (field[i] == b'-' || field[i] == b'+') {
            i += 1;
        }
        let start = i;
        while i < n && field[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == n
}

/// The SPEC id of a trace job: `"j{number}"`.
pub fn job_id(job: &TraceJob) -> String {
    format!("j{}", job.number)
}

/// How the machine of a trace is laid out as SPEC servers (one resource, `"cores"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClusterShape {
    /// One server [`POOL`] with all the machine's processors
    /// ([`CleaningReport::machine_procs`]: MaxProcs, else MaxNodes, else the largest job, as
    /// [`CleaningReport::machine_source`] reports). This is the usual model of these traces:
    /// a job takes any `procs` of the machine's processors.
    Pool,
    /// `nodes` servers `n0`, `n1`, ... of `cores` cores each. A job runs on one server, so
    /// every job must request at most `cores` processors.
    Nodes {
        /// Number of identical servers (>= 1).
        nodes: usize,
        /// Cores of each server (>= 1), the one resource `"cores"`.
        cores: i64,
    },
}

/// The resources (`["cores"]`) and servers of a trace's machine.
pub fn cluster(trace: &Trace, shape: ClusterShape) -> Result<(Vec<String>, Vec<Server>), SwfError> {
    let resources = vec!["cores".to_string()];
    let servers = match shape {
        ClusterShape::Pool => {
            let procs = trace
                .report
                .machine_procs
                .filter(|&p| p >= 1)
                .ok_or(SwfError::NoMachineSize)?;
            if let Some(job) = trace.jobs.iter().find(|j| j.procs > procs) {
                return Err(SwfError::JobTooLarge {
                    job: job_id(job),
                    line: job.line,
                    procs: job.procs,
                    cores: procs,
                });
            }
            vec![Server {
                id: POOL.to_string(),
                capacity: vec![procs],
            }]
        }
        ClusterShape::Nodes { nodes, cores } => {
            if nodes == 0 {
                return Err(SwfError::Shape("0 nodes; use at least 1".to_string()));
            }
            if cores < 1 {
                return Err(SwfError::Shape(format!(
                    "{cores} cores per node; use at least 1"
                )));
            }
            if let Some(job) = trace.jobs.iter().find(|j| j.procs > cores) {
                return Err(SwfError::JobTooLarge {
                    job: job_id(job),
                    line: job.line,
                    procs: job.procs,
                    cores,
                });
            }
            (0..nodes)
                .map(|i| Server {
                    id: format!("n{i}"),
                    capacity: vec![cores],
                })
                .collect()
        }
    };
    Ok((resources, servers))
}
