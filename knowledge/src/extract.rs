//! One job directory (with an optional launch command and logs) to [`JobFacts`].
//!
//! Job scripts are the files under the directory (six levels deep, hidden folders and
//! `__pycache__`, `node_modules`, `wandb` skipped) whose name ends in `.sh`, `.bash`,
//! `.slurm`, `.sbatch`, `.pbs`, `.job` or `.qsub`, or that start with `#!`: their scheduler
//! headers and their command lines (continuations joined) are read. Configuration files are
//! the `.json`, `.yaml`, `.yml` and `.toml` files ([`crate::configs`]); Python files (`.py`)
//! give their literal defaults ([`crate::python`]). Scripts and configs over 1 MiB,
//! files that are not UTF-8 text and configs that do not parse are listed as skipped, with the
//! reason. Sources are read in
//! path order, so the output does not depend on the file system.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::configs::Syntax;
use crate::confine::{escape, excerpt, Confined, Kind};
use crate::facts::{Field, JobFacts, Source, Strength};
use crate::shell::commands;
use crate::{configs, launch, logs, python, scheduler};

/// Largest file read as a job script.
const MAX_SCRIPT_BYTES: u64 = 1 << 20;

/// Deepest folder level searched below the job directory.
const MAX_DEPTH: usize = 6;

/// Extensions of job scripts.
const SCRIPT_EXTENSIONS: &[&str] = &["sh", "bash", "slurm", "sbatch", "pbs", "job", "qsub"];

/// Folders never searched.
const SKIPPED_DIRS: &[&str] = &["__pycache__", "node_modules", "wandb"];

/// Extensions of files that are plainly not job definitions (data, weights, images, docs,
/// archives): not listed as skipped, to keep the list about what could have mattered.
const QUIET_EXTENSIONS: &[&str] = &[
    "md",
    "rst",
    "txt",
    "csv",
    "tsv",
    "parquet",
    "arrow",
    "bin",
    "pt",
    "pth",
    "ckpt",
    "safetensors",
    "npy",
    "npz",
    "png",
    "jpg",
    "jpeg",
    "gif",
    "svg",
    "pdf",
    "gz",
    "zip",
    "tar",
    "whl",
    "lock",
    "log",
    "out",
    "err",
    "ipynb",
    "html",
];

/// Entries of a job directory looked at, at most, by default ([`ExtractOptions`]).
pub const MAX_ENTRIES: usize = 20_000;

/// Files listed one by one in [`Extraction::skipped`], at most; the others are counted in
/// [`Extraction::skipped_more`].
pub const MAX_LISTED: usize = 1_000;

/// Entries counted past [`ExtractOptions::max_entries`], at most (a count that reaches it
/// means "at least").
pub const MAX_COUNTED: usize = 1_000_000;

/// How a job directory is walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractOptions {
    /// Entries (files, folders, links) looked at, at most, in path order; the rest are
    /// counted in [`Extraction::not_walked`], not looked at.
    pub max_entries: usize,
    /// Read files with more than one hard link (by default they are skipped and listed: a hard
    /// link may name a file outside the directory).
    pub follow_hard_links: bool,
}

impl Default for ExtractOptions {
    fn default() -> ExtractOptions {
        ExtractOptions {
            max_entries: MAX_ENTRIES,
            follow_hard_links: false,
        }
    }
}

/// What went wrong reading a job's files.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// The job directory cannot be listed.
    #[error("cannot read the job directory {}: {source}", escape(&path.display().to_string()))]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A log given with `--log` cannot be read.
    #[error("cannot read the log {}: {source}", escape(&path.display().to_string()))]
    Log {
        /// The log file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The facts of one job and what was read to find them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Extraction {
    /// The job directory as given.
    pub dir: String,
    /// Field -> fact.
    pub facts: JobFacts,
    /// Files read (relative to the directory; logs as given).
    pub read: Vec<String>,
    /// Files under the directory not read, with the reason (the first [`MAX_LISTED`]).
    pub skipped: Vec<Skipped>,
    /// Files not read beyond those listed in `skipped`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped_more: usize,
    /// Entries not looked at: the walk stopped at [`ExtractOptions::max_entries`] (counted up
    /// to 1,000,000).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_walked: usize,
    /// Scripts and configs parsed in this run.
    pub parsed: usize,
    /// Scripts and configs whose facts came from the cache (their content had not changed).
    pub reused: usize,
    /// What the LLM agent did, when it was asked (`extract --llm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<crate::agent::AgentReport>,
    /// The sentence embedding of the job's command and files, when asked for
    /// (`extract --embed`; see [`crate::embed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<crate::embed::Embedding>,
}

/// Facts per file, keyed by content: a file whose SHA-256 has not changed since the last run
/// is not parsed again, and a changed file re-derives only its own facts. Saved as JSON
/// (`schedlm extract --cache FILE`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cache {
    /// [`CACHE_VERSION`] of the extractor that wrote it; another version's cache is not used.
    pub version: u32,
    /// Path relative to the job directory -> what reading it gave.
    pub files: BTreeMap<String, CachedFile>,
    /// The LLM agent's last answers, valid while the files, the model and the agent's options
    /// are the same ([`crate::agent::cache_key`]).
    #[serde(default)]
    pub agent: Option<CachedAgent>,
    /// The job's last sentence embedding, valid while its text and the model are the same
    /// ([`crate::embed::cache_key`]).
    #[serde(default)]
    pub embedding: Option<CachedEmbedding>,
}

impl Cache {
    /// The cache at `path`: an empty one when there is none yet, or when it cannot be read or
    /// is not valid (then with what went wrong, for the user).
    pub fn load(path: &Path) -> (Cache, Option<String>) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Cache::default(), None),
            Err(e) => {
                return (
                    Cache::default(),
                    Some(format!("cannot read the cache: {e}")),
                )
            }
        };
        match serde_json::from_str(&text) {
            Ok(cache) => (cache, None),
            Err(e) => (
                Cache::default(),
                Some(format!("the cache is not valid ({e})")),
            ),
        }
    }

    /// Writes the cache to `path` through a temporary file and a rename, so a killed run
    /// leaves the old one.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_string(self)?)?;
        std::fs::rename(&tmp, path)
    }
}

impl Extraction {
    /// What extraction did, in one line: facts, files read, scripts and configs parsed or
    /// reused from the cache.
    pub fn summary(&self, with_command: bool) -> String {
        format!(
            "{} fact(s) from {} file(s){}; {} script(s)/config(s) parsed, {} reused from the cache",
            self.facts.iter().count(),
            self.read.len(),
            if with_command { " and the command" } else { "" },
            self.parsed,
            self.reused,
        )
    }

    /// Why nothing was read from `dir` (as shown), when no file was and no command was given.
    pub fn nothing_read(&self, dir: &str) -> String {
        let skipped = match self.skipped.len() + self.skipped_more {
            0 => String::new(),
            n => format!("; {n} file(s) skipped, listed above"),
        };
        format!(
            "nothing readable in {dir}: no job script, configuration or Python file was read \
             (and no --cmd or --log given){skipped}"
        )
    }

    /// The files skipped, for the user: names escaped (a newline or an ESC in a name shows as
    /// `\n`, `\u{1b}`), reasons as the extractor cut and escaped them; past the listed ones, a
    /// count; then the entries not looked at. `dir` is the directory as shown.
    pub fn skipped_lines(&self, dir: &str) -> Vec<String> {
        use crate::confine::escape;
        let mut lines: Vec<String> = (self.skipped.iter())
            .map(|s| format!("skipped {dir}/{}: {}", escape(&s.file), escape(&s.reason)))
            .collect();
        if self.skipped_more > 0 {
            lines.push(format!(
                "skipped {} more file(s) in {dir}, not listed (the listing stops at {MAX_LISTED})",
                self.skipped_more
            ));
        }
        if self.not_walked > 0 {
            let at_least = if self.not_walked >= MAX_COUNTED {
                "at least "
            } else {
                ""
            };
            lines.push(format!(
                "{at_least}{} more entries of {dir} not looked at: over --max-entries",
                self.not_walked
            ));
        }
        lines
    }
}

/// A sentence embedding kept in the [`Cache`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CachedEmbedding {
    /// [`crate::embed::cache_key`] of the text and model that gave it.
    pub key: String,
    /// The embedding.
    pub embedding: crate::embed::Embedding,
}

/// The agent's answers kept in the [`Cache`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CachedAgent {
    /// [`crate::agent::cache_key`] of the run that gave them.
    pub key: String,
    /// The facts it filled.
    pub facts: JobFacts,
    /// Its report.
    pub report: crate::agent::AgentReport,
}

/// Bumped whenever an extractor changes what it reads, so old caches are not trusted.
pub const CACHE_VERSION: u32 = 15;

/// One file's entry in the [`Cache`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CachedFile {
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
    /// What reading it gave.
    pub outcome: Outcome,
    /// The files a script `source`d, with their SHA-256 then: the entry holds only while
    /// they are unchanged too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sourced: Vec<(String, String)>,
}

/// What reading one file gave.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Outcome {
    /// A script or config: its facts.
    Read {
        /// The facts from this file alone.
        facts: JobFacts,
    },
    /// A script or config that could not be read, and why.
    Skipped {
        /// Why.
        reason: String,
    },
    /// Neither a script nor a config.
    Other,
}

/// A file left out and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skipped {
    /// Path relative to the job directory.
    pub file: String,
    /// Why it was not read.
    pub reason: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Reads the job scripts under `dir`, then `command` (the launch command, strongest), then
/// each log, and derives what follows from them (GPUs per node from a total, the global batch).
pub fn extract(
    dir: &Path,
    command: Option<&str>,
    log_files: &[PathBuf],
) -> Result<Extraction, ExtractError> {
    extract_cached(dir, command, log_files, &mut Cache::default())
}

/// [`extract`] with a cache of per-file facts: files whose content is unchanged are not parsed
/// again; `cache` is updated to this run's files (logs, which grow while a job runs, are
/// always read).
pub fn extract_cached(
    dir: &Path,
    command: Option<&str>,
    log_files: &[PathBuf],
    cache: &mut Cache,
) -> Result<Extraction, ExtractError> {
    extract_with(dir, command, log_files, cache, ExtractOptions::default())
}

/// [`extract_cached`] with the walk's [`ExtractOptions`] (the cap on entries, hard links).
pub fn extract_with(
    dir: &Path,
    command: Option<&str>,
    log_files: &[PathBuf],
    cache: &mut Cache,
    options: ExtractOptions,
) -> Result<Extraction, ExtractError> {
    if cache.version != CACHE_VERSION {
        *cache = Cache {
            version: CACHE_VERSION,
            files: BTreeMap::new(),
            agent: None,
            embedding: None,
        };
    }
    let mut out = Extraction {
        dir: dir.display().to_string(),
        facts: JobFacts::default(),
        read: Vec::new(),
        skipped: Vec::new(),
        skipped_more: 0,
        not_walked: 0,
        parsed: 0,
        reused: 0,
        agent: None,
        embedding: None,
    };
    let mut confined = Confined::new(dir)
        .map_err(|source| ExtractError::Dir {
            path: dir.to_path_buf(),
            source,
        })?
        .follow_hard_links(options.follow_hard_links);
    // The directory itself must be listable; a folder under it that is not is skipped.
    fs::read_dir(dir).map_err(|source| ExtractError::Dir {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut walk = Walk {
        confined: &confined,
        top: dir,
        left: options.max_entries,
        files: Vec::new(),
        skipped: Vec::new(),
        not_walked: 0,
    };
    walk.list(dir, 0);
    let Walk {
        files,
        skipped,
        not_walked,
        ..
    } = walk;
    out.not_walked = not_walked;
    for s in skipped {
        out.skip(s.file, s.reason);
    }
    let mut seen = BTreeMap::new();
    for path in files {
        let rel = relative(dir, &path);
        let Some(bytes) = read_bytes(&mut confined, &path, &rel, &mut out) else {
            continue;
        };
        let sha256 = sha256_hex(&bytes);
        let mut unchanged = |c: &CachedFile| {
            c.sha256 == sha256
                && c.sourced.iter().all(|(file, sha)| {
                    file_sha256(&mut confined, &dir.join(file)).as_ref() == Some(sha)
                })
        };
        let (outcome, sourced) = match cache.files.get(&rel) {
            Some(cached) if unchanged(cached) => {
                if !matches!(cached.outcome, Outcome::Other) {
                    out.reused += 1;
                }
                (cached.outcome.clone(), cached.sourced.clone())
            }
            _ => {
                let (outcome, sourced) = read_file(&mut confined, dir, &path, &rel, bytes);
                if !matches!(outcome, Outcome::Other) {
                    out.parsed += 1;
                }
                (outcome, sourced)
            }
        };
        match &outcome {
            Outcome::Read { facts } => {
                out.facts.absorb(facts);
                out.read.push(rel.clone());
            }
            Outcome::Skipped { reason } => out.skip(rel.clone(), reason.clone()),
            Outcome::Other => {}
        }
        seen.insert(
            rel,
            CachedFile {
                sha256,
                outcome,
                sourced,
            },
        );
    }
    cache.files = seen;
    if let Some(command) = command {
        launch::read_line(command, &Source::Command, Strength::Command, &mut out.facts);
    }
    read_hostfile(&mut confined, dir, &mut out.facts);
    for log in log_files {
        let bytes = read_log_file(log)?;
        let name = log.display().to_string();
        logs::read_log(&name, &String::from_utf8_lossy(&bytes), &mut out.facts);
        out.read.push(name);
    }
    crate::precedence::resolve(&mut out.facts);
    crate::derive::job(&mut out.facts);
    Ok(out)
}

/// Most bytes of one log read (`--log`): a longer log is refused with its size, not read
/// into memory.
const MAX_LOG_BYTES: u64 = 256 << 20;

/// The bytes of a log the user named: a regular file (a FIFO or a device is refused, and
/// opening never blocks) of at most [`MAX_LOG_BYTES`].
fn read_log_file(log: &Path) -> Result<Vec<u8>, ExtractError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let error = |source| ExtractError::Log {
        path: log.to_path_buf(),
        source,
    };
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(log)
        .map_err(error)?;
    let meta = file.metadata().map_err(error)?;
    let refuse = |why: String| error(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
    if !meta.is_file() {
        return Err(refuse("not a regular file".into()));
    }
    if meta.len() > MAX_LOG_BYTES {
        return Err(refuse(format!(
            "{} bytes, over the {} MiB limit for a log (pass its end: tail -c 100M LOG > end.log)",
            meta.len(),
            MAX_LOG_BYTES >> 20
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_LOG_BYTES)
        .read_to_end(&mut bytes)
        .map_err(error)?;
    Ok(bytes)
}

/// A DeepSpeed hostfile the launch names (`--hostfile configs/hostfile`, inside the job
/// directory): one `host slots=N` line per node gives the nodes, and the GPUs per node when
/// every node has as many slots. Read each time (like logs), at the launch's strength.
fn read_hostfile(confined: &mut Confined, dir: &Path, facts: &mut JobFacts) {
    let Some(fact) = facts.get(Field::Hostfile).cloned() else {
        return;
    };
    let Some(name) = fact.value.as_str() else {
        return;
    };
    let mut read = Vec::new();
    let Some((rel, text)) = read_sourced(confined, &[dir.join(name)], &mut read) else {
        return;
    };
    let slots: Vec<Option<u64>> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("slots="))
                .and_then(|n| n.parse().ok())
        })
        .collect();
    let Some((nodes, gpus)) = launch::per_host(&slots) else {
        return;
    };
    let source = Source::line(rel, 1);
    facts.set(
        Field::Nodes,
        json!(nodes),
        source.clone(),
        1.0,
        fact.strength,
    );
    if let Some(gpus) = gpus {
        facts.set(Field::GpusPerNode, json!(gpus), source, 1.0, fact.strength);
    }
}

/// Bytes as lower-case hexadecimal (SHA-256 digests in the cache).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes`, hex: the content hashes of the cache.
fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

impl Extraction {
    /// Lists `file` as not read, for `reason` (cut and escaped: [`excerpt`]); past
    /// [`MAX_LISTED`] files, only counted.
    fn skip(&mut self, file: String, reason: String) {
        if self.skipped.len() < MAX_LISTED {
            let reason = excerpt(&reason);
            self.skipped.push(Skipped { file, reason });
        } else {
            self.skipped_more += 1;
        }
    }
}

/// A walk of the job directory: every file under it (sorted, depth-limited, skipped folders
/// left out), seen without following links ([`Confined::kind`]), up to a number of entries.
struct Walk<'a> {
    confined: &'a Confined,
    /// The job directory as given: names are relative to it.
    top: &'a Path,
    /// Entries that may still be looked at.
    left: usize,
    /// The files to read, in path order.
    files: Vec<PathBuf>,
    /// What is not to be read, and why (a folder that cannot be listed among them).
    skipped: Vec<Skipped>,
    /// Entries past the cap (counted, not looked at).
    not_walked: usize,
}

impl Walk<'_> {
    /// The entries of `dir` (at folder level `depth`), in name order.
    fn list(&mut self, dir: &Path, depth: usize) {
        let entries = match sorted_entries(dir) {
            Ok(entries) => entries,
            Err(e) => {
                self.skipped.push(Skipped {
                    file: relative(self.top, dir),
                    reason: format!("a folder that cannot be read: {e}"),
                });
                return;
            }
        };
        for (path, name, folder) in entries {
            if self.left == 0 {
                // Counted from the listing alone: nothing is opened or followed.
                if self.not_walked < MAX_COUNTED {
                    self.not_walked += 1;
                    if folder && searched(&name, depth) {
                        let limit = MAX_COUNTED - self.not_walked;
                        self.not_walked += count_entries(&path, depth + 1, limit);
                    }
                }
                continue;
            }
            self.left -= 1;
            match self.confined.kind(&path) {
                Kind::Dir => {
                    if searched(&name, depth) {
                        self.list(&path, depth + 1);
                    }
                }
                Kind::File => self.files.push(path),
                Kind::Skip(reason) => self.skipped.push(Skipped {
                    file: relative(self.top, &path),
                    reason,
                }),
            }
        }
    }
}

/// The entries of folder `dir` (path, name, and whether the listing says it is a folder),
/// sorted by name; an entry that cannot be read while listing is left out, and a folder's
/// listing stops at [`MAX_COUNTED`] entries.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<(PathBuf, String, bool)>> {
    let mut entries: Vec<_> = fs::read_dir(dir)?
        .take(MAX_COUNTED)
        .filter_map(Result::ok)
        .map(|e| {
            let folder = e.file_type().is_ok_and(|t| t.is_dir());
            (e.path(), e.file_name(), folder)
        })
        .collect();
    entries.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(entries
        .into_iter()
        .map(|(path, name, folder)| (path, name.to_string_lossy().into_owned(), folder))
        .collect())
}

/// Whether the folder `name`, found at level `depth`, is searched: not too deep, not hidden,
/// not one of [`SKIPPED_DIRS`].
fn searched(name: &str, depth: usize) -> bool {
    depth + 1 < MAX_DEPTH && !name.starts_with('.') && !SKIPPED_DIRS.contains(&name)
}

/// The entries under folder `dir` (at level `depth`) that a walk would look at, counted by
/// listing only (nothing opened or followed), at most `limit`.
fn count_entries(dir: &Path, depth: usize, limit: usize) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for entry in entries.filter_map(Result::ok) {
        if n >= limit {
            break;
        }
        n += 1;
        let folder = entry.file_type().is_ok_and(|t| t.is_dir());
        if folder && searched(&entry.file_name().to_string_lossy(), depth) {
            n += count_entries(&entry.path(), depth + 1, limit - n);
        }
    }
    n.min(limit)
}

/// `path` (found by listing `top`) relative to the job directory `top`.
fn relative(top: &Path, path: &Path) -> String {
    path.strip_prefix(top).unwrap_or(path).display().to_string()
}

/// Whether [`extract`] reads a file of the job directory at `path` whose bytes start with
/// `head`: a script, a config or Python by its name, or a file that starts with `#!`. What
/// it gives of any other file is its name in [`Extraction::skipped`], never a fact.
pub fn reads(path: &Path, head: &[u8]) -> bool {
    by_name(path) || head.starts_with(b"#!")
}

/// Whether a file's name says it is a script, a config or Python: read whole. Other files are
/// read only when they start with `#!`.
fn by_name(path: &Path) -> bool {
    config_kind(path).is_some()
        || extension(path) == "py"
        || SCRIPT_EXTENSIONS.contains(&extension(path))
}

/// The bytes of a file that may be a script or a config: whole for a file whose name says so
/// (up to 1 MiB; larger ones listed as skipped), else only when it starts with `#!` (a script
/// without an extension). A file that cannot be read is listed; `None` for the others.
fn read_bytes(
    confined: &mut Confined,
    path: &Path,
    rel: &str,
    out: &mut Extraction,
) -> Option<Vec<u8>> {
    if !by_name(path) && !confined.head(path, 2).is_ok_and(|head| head == b"#!") {
        if !QUIET_EXTENSIONS.contains(&extension(path)) {
            out.skip(
                rel.to_string(),
                format!("not read: {}", unknown_format(path)),
            );
        }
        return None;
    }
    match confined.read(path, MAX_SCRIPT_BYTES) {
        Ok(bytes) => Some(bytes),
        Err(reason) => {
            out.skip(rel.to_string(), reason);
            None
        }
    }
}

/// A file of a format the reader does not know, in words.
fn unknown_format(path: &Path) -> String {
    match extension(path) {
        "" => "no extension and no #! line, a format the reader does not know".into(),
        e => format!("`.{e}` is a format the reader does not know"),
    }
}

fn extension(path: &Path) -> &str {
    path.extension().and_then(|e| e.to_str()).unwrap_or("")
}

/// The syntax of a configuration file, `None` for other files.
fn config_kind(path: &Path) -> Option<Syntax> {
    Syntax::of_extension(extension(path))
}

/// Parses one file (its bytes) if it is a job script or a configuration file; with the files a
/// script `source`d (relative to `dir`, with their SHA-256), for the cache.
fn read_file(
    confined: &mut Confined,
    dir: &Path,
    path: &Path,
    rel: &str,
    bytes: Vec<u8>,
) -> (Outcome, Vec<(String, String)>) {
    let config = config_kind(path);
    let python = extension(path) == "py";
    let by_name = config.is_some() || python || SCRIPT_EXTENSIONS.contains(&extension(path));
    if !by_name && !bytes.starts_with(b"#!") {
        return (Outcome::Other, Vec::new());
    }
    let Ok(text) = String::from_utf8(bytes) else {
        let reason = "not UTF-8 text".into();
        return (Outcome::Skipped { reason }, Vec::new());
    };
    let mut facts = JobFacts::default();
    if python {
        let mut imported = Vec::new();
        let mut resolve = |from: &str, module: &str, level: usize| {
            python_module(confined, dir, from, module, level, &mut imported)
        };
        let outcome = match python::read_python_with(rel, &text, &mut facts, &mut resolve) {
            Ok(()) => Outcome::Read { facts },
            Err(reason) => Outcome::Skipped { reason },
        };
        return (outcome, imported);
    }
    if let Some(syntax) = config {
        let outcome = match configs::read_config(rel, &text, syntax, &mut facts) {
            Ok(()) => Outcome::Read { facts },
            Err(reason) => Outcome::Skipped { reason },
        };
        return (outcome, Vec::new());
    }
    scheduler::read_headers(rel, &text, &mut facts);
    let mut sourced = Vec::new();
    let here = path.parent().unwrap_or(dir);
    let mut source = |name: &str| {
        let candidates = [here.join(name), dir.join(name)];
        read_sourced(confined, &candidates, &mut sourced).map(|(_, text)| text)
    };
    for command in commands(&text, &mut source) {
        launch::read_command(
            &command.words,
            &Source::line(rel, command.line),
            Strength::Script,
            &mut facts,
        );
    }
    (Outcome::Read { facts }, sourced)
}

/// The first of `candidates` that is a file inside the job directory `dir`, with its path
/// relative to `dir` and its text: a file a script sources (`source env.sh`, looked up beside
/// the script, then in the job directory) or a module a Python file imports. `None` for a
/// file outside the job directory (`source ~/.bashrc`, `/etc/profile`, an installed package),
/// missing or not UTF-8. Records what it read, with its hash, in `sourced` (for the cache).
fn read_sourced(
    confined: &mut Confined,
    candidates: &[PathBuf],
    sourced: &mut Vec<(String, String)>,
) -> Option<(String, String)> {
    let path = candidates
        .iter()
        .filter_map(|p| confined.resolve(p).ok())
        .find(|p| p.is_file())?;
    let bytes = confined.read(&path, MAX_SCRIPT_BYTES).ok()?;
    let rel = path
        .strip_prefix(confined.root())
        .ok()?
        .display()
        .to_string();
    let sha = sha256_hex(&bytes);
    if !sourced.iter().any(|(f, _)| f == &rel) {
        sourced.push((rel.clone(), sha));
    }
    Some((rel, String::from_utf8(bytes).ok()?))
}

/// The file of a module that Python file `from` (relative to `dir`) imports: `a.b` is
/// `a/b.py` or `a/b/__init__.py`, beside the importing file, then from the job directory
/// (`level` 0), or that many folders up from the importing file (a relative import, `from
/// ..config import lr`: level 2).
fn python_module(
    confined: &mut Confined,
    dir: &Path,
    from: &str,
    module: &str,
    level: usize,
    imported: &mut Vec<(String, String)>,
) -> Option<(String, String)> {
    if module.is_empty() {
        return None;
    }
    let here = dir.join(from);
    let mut base = here.parent()?.to_path_buf();
    for _ in 1..level {
        base = base.parent()?.to_path_buf();
    }
    let bases = if level == 0 {
        vec![base, dir.to_path_buf()]
    } else {
        vec![base]
    };
    let relative = module.replace('.', "/");
    let candidates: Vec<PathBuf> = bases
        .iter()
        .flat_map(|b| {
            [
                b.join(format!("{relative}.py")),
                b.join(&relative).join("__init__.py"),
            ]
        })
        .collect();
    read_sourced(confined, &candidates, imported)
}

/// SHA-256 of a file's bytes, hex; `None` when it cannot be read.
fn file_sha256(confined: &mut Confined, path: &Path) -> Option<String> {
    confined
        .read(path, MAX_SCRIPT_BYTES)
        .ok()
        .map(|b| sha256_hex(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::{open_quote, script_call, substitute};
    use std::collections::HashMap;

    #[test]
    fn a_bash_c_body_is_a_script_of_its_own() {
        let script = "LR=2e-5\nsrun --nodes=2 bash -c \"\ninit_env\nexport MODEL=org/m\naccelerate launch \\\n  train.py --model_name_or_path \\$MODEL --lr $LR\n\"\n";
        let commands = commands(script, &mut |_| None);
        let mut facts = JobFacts::default();
        for c in &commands {
            launch::read_command(
                &c.words,
                &Source::line("job.sh", c.line),
                Strength::Script,
                &mut facts,
            );
        }
        assert_eq!(
            facts.json(Field::Model),
            Some(json!("org/m")),
            "{commands:?}"
        );
        assert_eq!(facts.json(Field::LearningRate), Some(json!(2e-5)));
        assert_eq!(
            facts.json(Field::Nodes),
            Some(json!(2)),
            "srun's options kept"
        );
        assert_eq!(facts.get(Field::Model).unwrap().source, "job.sh:2");
    }

    #[test]
    fn a_job_script_run_with_arguments_binds_them() {
        let caller = "MODEL=org/m\nsbatch -N 2 <<EOF\n#!/bin/bash\nsrun bash scripts/sft.sh out $MODEL 3\nEOF\n";
        let called = "torchrun --nproc_per_node 4 train.py --model_name_or_path $2 --num_train_epochs $3 --output_dir $1\n";
        let commands = commands(caller, &mut |name| {
            (name == "scripts/sft.sh").then(|| called.to_string())
        });
        let mut facts = JobFacts::default();
        for c in &commands {
            launch::read_command(
                &c.words,
                &Source::line("submit.sh", c.line),
                Strength::Script,
                &mut facts,
            );
        }
        assert_eq!(facts.json(Field::Nodes), Some(json!(2)), "{commands:?}");
        assert_eq!(
            facts.json(Field::Model),
            Some(json!("org/m")),
            "{commands:?}"
        );
        assert_eq!(facts.json(Field::Epochs), Some(json!(3)));
        assert_eq!(facts.json(Field::GpusPerNode), Some(json!(4)));
        assert_eq!(
            script_call(&shlex::split("bash run.sh").unwrap()),
            None,
            "no arguments"
        );
        assert_eq!(
            script_call(&shlex::split("scripts/env.sh python train.py --lr 1").unwrap()),
            None,
            "a wrapper"
        );
    }

    #[test]
    fn quoted_strings_go_on_over_lines() {
        let script = "ARGS=\" \\\n  --lr 1e-5 \\\n  --seed 2023\n\"\nCMD=\"deepspeed train.py ${ARGS}\"\neval ${CMD}\n";
        let commands = commands(script, &mut |_| None);
        assert_eq!(commands.len(), 1, "{commands:?}");
        assert!(
            commands[0].words.join(" ").contains("--lr 1e-5"),
            "{commands:?}"
        );
        assert!(!open_quote("echo \"a\" 'b' \\\""));
        assert!(open_quote("X=\"a"));
        assert!(!open_quote("X='it\"s'"));
    }

    #[test]
    fn shell_arithmetic_is_evaluated_when_its_operands_are_known() {
        let vars: HashMap<String, String> = [("GPUS", "256"), ("PER", "4"), ("N", "$1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(substitute("$((GPUS / 8))", &vars), "32");
        assert_eq!(substitute("x=$(( 1024 / $PER / ${GPUS} ))", &vars), "x=1");
        assert_eq!(substitute("$(( (2 + 1) * -3 % 5 ))", &vars), "-4");
        // Unknown operands, division by zero and anything else stay as written.
        assert_eq!(substitute("$((N * 2))", &vars), "$((N * 2))");
        assert_eq!(substitute("$((GPUS / 0))", &vars), "$((GPUS / 0))");
        assert_eq!(substitute("$((GPUS ** 2))", &vars), "$((GPUS ** 2))");
        let script = "GPUS=16\nGPN=8\nNODES=$((GPUS / GPN))\ntorchrun --nnodes $NODES train.py\n";
        assert_eq!(
            commands(script, &mut |_| None)[0].words.join(" "),
            "torchrun --nnodes 2 train.py"
        );
        // An accumulation still unknown after substitution derives no global batch.
        let mut facts = JobFacts::default();
        let line = "torchrun --nnodes 1 --nproc_per_node 4 train.py --per_device_train_batch_size 2 --gradient_accumulation_steps $((X / 2))";
        launch::read_line(
            line,
            &Source::line("job.sh", 1),
            Strength::Script,
            &mut facts,
        );
        crate::precedence::resolve(&mut facts);
        crate::derive::job(&mut facts);
        assert_eq!(facts.value(Field::GlobalBatchSize), None);
        let known = line.replace("$((X / 2))", "3");
        let mut facts = JobFacts::default();
        launch::read_line(
            &known,
            &Source::line("job.sh", 1),
            Strength::Script,
            &mut facts,
        );
        crate::precedence::resolve(&mut facts);
        crate::derive::job(&mut facts);
        assert_eq!(facts.json(Field::GlobalBatchSize), Some(json!(24)));
    }

    #[test]
    fn derived_gpus_from_tasks_and_step_counts_over_default_epochs() {
        let script = "#!/bin/bash\n#SBATCH --nodes 2\n#SBATCH --ntasks-per-node=8\nsrun python train.py --batch-size 10 --max_train_steps 500\n";
        let facts = script_facts_with(script, |facts| {
            let default = |facts: &mut JobFacts, field, value, line| {
                let source = Source::line("train.py", line);
                facts.set(field, value, source, 1.0, Strength::Default)
            };
            default(facts, Field::Epochs, json!(100), 9);
            default(facts, Field::LearningRate, json!(1e-4), 8);
        });
        assert_eq!(facts.json(Field::GpusPerNode), Some(json!(8)));
        assert!(facts.get(Field::GpusPerNode).unwrap().confidence < 1.0);
        assert_eq!(facts.json(Field::GlobalBatchSize), Some(json!(160)));
        assert_eq!(
            facts.value(Field::Epochs),
            None,
            "the step count overrides the default"
        );
        assert_eq!(
            facts.get(Field::MaxSteps).unwrap().also,
            vec!["epochs 100 @ train.py:9 (a default the step count overrides)"]
        );
        // GPUs per task give the GPUs per node outright.
        let mut facts = JobFacts::default();
        let header = "#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=2\n";
        scheduler::read_headers("job.sh", header, &mut facts);
        assert_eq!(facts.json(Field::GpusPerNode), Some(json!(8)));
    }

    #[test]
    fn variables_and_here_documents_are_substituted() {
        let script = "GPUS=8\nOUT=$1\nread -r -d '' ARGS <<EOF\ntrain.py \\\n  --lr 1e-5 \\\n  --output_dir $OUT\nEOF\ntorchrun --nproc_per_node ${GPUS} $ARGS\n";
        let commands = commands(script, &mut |_| None);
        assert_eq!(commands.len(), 1, "{commands:?}");
        assert_eq!(
            commands[0].words.join(" "),
            "torchrun --nproc_per_node 8 train.py --lr 1e-5 --output_dir $1"
        );
        // A whole command in a variable, with a reference it cannot resolve.
        let built = "L=\"accelerate launch --num_processes $((N * 4))\"\nexport CMD=\"$L run.py --lr 3e-4\"\nsrun $CMD\n";
        assert_eq!(
            super::commands(built, &mut |_| None)[0].words.join(" "),
            "srun accelerate launch --num_processes $((N*4)) run.py --lr 3e-4"
        );
        assert_eq!(
            substitute(
                "$A-${B}x $C",
                &HashMap::from([("A".into(), "1".into()), ("B".into(), "2".into())])
            ),
            "1-2x $C"
        );
    }

    #[test]
    fn a_job_directory_with_a_script_a_command_and_a_log() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("train.sbatch"),
            "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:4\n#SBATCH --time=04:00:00\n\nmodule load cuda\nsrun torchrun --nnodes 2 --nproc_per_node 4 \\\n    train.py --per_device_train_batch_size 8 \\\n    --gradient_accumulation_steps 2 --lr 3e-4\n",
        )
        .unwrap();
        fs::create_dir(dir.path().join(".git")).unwrap();
        fs::write(
            dir.path().join(".git").join("hook.sh"),
            "#SBATCH --nodes=99\n",
        )
        .unwrap();
        fs::write(dir.path().join("notes.txt"), "python other.py --lr 1\n").unwrap();
        let log = dir.path().join("slurm-1.out");
        fs::write(&log, "  20%|##  | 200/1000 [10:00<40:00,  0.33it/s]\nCUDA out of memory. Tried to allocate 1 GiB\n").unwrap();
        let out = extract(
            dir.path(),
            Some("python train.py --lr 1e-4 \\\n --max_steps 1000"),
            &[log],
        )
        .unwrap();
        let f = &out.facts;
        assert_eq!(f.value(Field::Nodes).unwrap(), 2);
        assert_eq!(f.get(Field::Nodes).unwrap().source, "train.sbatch:7");
        assert_eq!(f.value(Field::GpusPerNode).unwrap(), 4);
        assert_eq!(f.value(Field::RequestedTimeS).unwrap(), 4 * 3600);
        // The launch command beats the script.
        assert_eq!(f.value(Field::LearningRate).unwrap(), 1e-4);
        assert_eq!(
            f.get(Field::LearningRate).unwrap().also,
            vec!["0.0003 @ train.sbatch:7"]
        );
        assert_eq!(f.value(Field::MaxSteps).unwrap(), 1000);
        assert_eq!(f.value(Field::GlobalBatchSize).unwrap(), 8 * 4 * 2 * 2);
        assert_eq!(f.value(Field::CurrentStep).unwrap(), 200);
        assert_eq!(f.value(Field::Failure).unwrap(), "cuda_oom");
        assert_eq!(out.read.len(), 2, "{:?}", out.read);
        assert!(out.skipped.is_empty());
    }

    #[test]
    fn an_unchanged_job_is_not_parsed_again_and_a_changed_file_only_is() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| fs::write(dir.path().join(name), text).unwrap();
        write(
            "job.slurm",
            "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:4\npython train.py --lr 1e-4\n",
        );
        write("ds.json", "{\"train_micro_batch_size_per_gpu\": 8}\n");
        write("notes.txt", "not a script\n");
        let mut cache = Cache::default();
        let first = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        assert_eq!((first.parsed, first.reused), (2, 0));
        let again = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        assert_eq!((again.parsed, again.reused), (0, 2));
        assert_eq!(again.facts, first.facts);
        // The cache survives a round trip through JSON, as `--cache FILE` stores it.
        let mut cache: Cache =
            serde_json::from_str(&serde_json::to_string(&cache).unwrap()).unwrap();
        write("ds.json", "{\"train_micro_batch_size_per_gpu\": 16}\n");
        let changed = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        assert_eq!((changed.parsed, changed.reused), (1, 1));
        assert_eq!(changed.facts.value(Field::BatchSizePerDevice).unwrap(), 16);
        assert_eq!(
            changed.facts.value(Field::GlobalBatchSize).unwrap(),
            16 * 4 * 2
        );
        // The same facts as a run without a cache.
        assert_eq!(changed.facts, extract(dir.path(), None, &[]).unwrap().facts);
    }

    /// Writes `text` to `dir/name`, making its folders.
    fn write_file(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn a_sourced_file_sets_variables_and_its_changes_reach_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| write_file(dir.path(), name, text);
        write(
            "conf/cluster.env",
            "export NPROC=4\nMODEL=gpt2\npython other.py --lr 9\n",
        );
        write(
            "scripts/run.sh",
            "#!/bin/bash\nsource ../conf/cluster.env\nsource ~/.bashrc\n. /etc/profile\n\
             torchrun --nproc_per_node $NPROC train.py --model_name_or_path $MODEL\n",
        );
        let mut cache = Cache::default();
        let first = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        let value = |e: &Extraction, f: &str| e.facts.json(f.parse().unwrap());
        assert_eq!(value(&first, "gpus_per_node"), Some(serde_json::json!(4)));
        assert_eq!(value(&first, "model"), Some(serde_json::json!("gpt2")));
        // The sourced file's own commands are not the job's.
        assert_eq!(value(&first, "learning_rate"), None);
        assert_eq!(value(&first, "script"), Some(serde_json::json!("train.py")));
        let again = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        assert_eq!(again.parsed, 0);
        // A change to the sourced file re-derives the script that sources it.
        write("conf/cluster.env", "export NPROC=8\nMODEL=gpt2\n");
        let changed = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        assert_eq!(changed.parsed, 1, "the script sourcing it");
        assert_eq!(value(&changed, "gpus_per_node"), Some(serde_json::json!(8)));
    }

    #[test]
    fn python_imports_of_the_jobs_own_modules_are_followed_and_cached() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| write_file(dir.path(), name, text);
        write(
            "src/hparams.py",
            "LR = 3e-4\nBASE = \"org/model-7b\"\nSTEPS = 10\nSTEPS = 20\n",
        );
        write("src/pkg/__init__.py", "");
        write("src/pkg/data.py", "NAME = \"org/data\"\n");
        write("src/consts.py", "EPOCHS = 3\n");
        write(
            "src/train.py",
            "from hparams import LR, BASE as MODEL, STEPS\nfrom .pkg.data import *\n\
             import consts as c\nfrom transformers import TrainingArguments\n\
             model = AutoModelForCausalLM.from_pretrained(MODEL)\n\
             ds = load_dataset(NAME)\n\
             TrainingArguments(learning_rate=LR, num_train_epochs=c.EPOCHS, max_steps=STEPS)\n",
        );
        let mut cache = Cache::default();
        let first = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        let fact = |e: &Extraction, f: &str| {
            e.facts
                .get(f.parse().unwrap())
                .map(|x| (x.value.to_json(), x.source.clone()))
        };
        use serde_json::json;
        assert_eq!(
            fact(&first, "learning_rate"),
            Some((json!(3e-4), Source::line("src/hparams.py", 1)))
        );
        assert_eq!(
            fact(&first, "model"),
            Some((json!("org/model-7b"), Source::line("src/hparams.py", 2)))
        );
        assert_eq!(
            fact(&first, "dataset"),
            Some((json!("org/data"), Source::line("src/pkg/data.py", 1)))
        );
        assert_eq!(
            fact(&first, "epochs"),
            Some((json!(3), Source::line("src/consts.py", 1)))
        );
        assert_eq!(fact(&first, "max_steps"), None, "bound twice in its module");
        // An unchanged job parses nothing; a change to an imported module re-derives the
        // file that imports it (and the module itself).
        let again = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        assert_eq!(again.parsed, 0);
        write("src/hparams.py", "LR = 1e-4\nBASE = \"org/model-7b\"\n");
        let changed = extract_cached(dir.path(), None, &[], &mut cache).unwrap();
        assert_eq!(changed.parsed, 2, "hparams.py and train.py");
        assert_eq!(
            fact(&changed, "learning_rate").map(|f| f.0),
            Some(json!(1e-4))
        );
    }

    #[test]
    fn a_deepspeed_hostfile_gives_nodes_and_slots() {
        let dir = tempfile::tempdir().unwrap();
        write_file(
            dir.path(),
            "configs/hostfile",
            "# hosts\nnode1 slots=8\nnode2 slots=8\n",
        );
        write_file(
            dir.path(),
            "run.sh",
            "deepspeed --hostfile configs/hostfile train.py --per_device_train_batch_size 1\n",
        );
        let out = extract(dir.path(), None, &[]).unwrap();
        assert_eq!(out.facts.json(Field::Nodes), Some(json!(2)));
        assert_eq!(out.facts.json(Field::GpusPerNode), Some(json!(8)));
        assert_eq!(
            out.facts.get(Field::Nodes).unwrap().source,
            "configs/hostfile:1"
        );
        assert_eq!(out.facts.json(Field::GlobalBatchSize), Some(json!(16)));
    }

    #[test]
    fn skipped_files_are_named_relative_to_the_directory_as_given() {
        // The job directory reached through a link: its resolved path differs from the one
        // given, and the listing is named against the one given.
        let real = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc", real.path().join("etc")).unwrap();
        let links = tempfile::tempdir().unwrap();
        let job = links.path().join("job");
        std::os::unix::fs::symlink(real.path(), &job).unwrap();
        let out = extract(&job, None, &[]).unwrap();
        let names: Vec<&str> = out.skipped.iter().map(|s| s.file.as_str()).collect();
        assert_eq!(names, ["etc"]);
    }

    #[test]
    fn a_quoted_variable_of_launcher_options_over_several_lines() {
        let dir = tempfile::tempdir().unwrap();
        write_file(
            dir.path(),
            "pretrain_gpt.sh",
            "#!/bin/bash\nGPUS_PER_NODE=8\nNNODES=2\n\
             DISTRIBUTED_ARGS=\"--nproc_per_node $GPUS_PER_NODE \\\n                  \
             --nnodes $NNODES \\\n                  --master_port 6000\"\n\
             torchrun $DISTRIBUTED_ARGS pretrain_gpt.py --micro-batch-size 4 --lr 1e-4\n",
        );
        let out = extract(dir.path(), None, &[]).unwrap();
        let f = &out.facts;
        assert_eq!(f.json(Field::GpusPerNode), Some(json!(8)), "{f:?}");
        assert_eq!(f.json(Field::Nodes), Some(json!(2)));
        assert_eq!(f.json(Field::BatchSizePerDevice), Some(json!(4)));
        assert_eq!(f.get(Field::Nodes).unwrap().source, "pretrain_gpt.sh:7");
        // The quote opened on a line of its own, `NNODES` never set: the line breaks inside
        // the value are word breaks, not the end of the `torchrun` command.
        let dir = tempfile::tempdir().unwrap();
        write_file(
            dir.path(),
            "pretrain_gpt.sh",
            "GPUS_PER_NODE=8\nDISTRIBUTED_ARGS=\"\n    --nproc_per_node $GPUS_PER_NODE \\\n    \
             --nnodes $NNODES \\\n    --master_port 6000\n\"\n\
             torchrun $DISTRIBUTED_ARGS pretrain_gpt.py --micro-batch-size 4\n",
        );
        let out = extract(dir.path(), None, &[]).unwrap();
        let f = &out.facts;
        assert_eq!(f.json(Field::GpusPerNode), Some(json!(8)), "{f:?}");
        assert_eq!(f.json(Field::BatchSizePerDevice), Some(json!(4)), "{f:?}");
        assert!(f.get(Field::NodesUnknown).is_some(), "{f:?}");
        assert_eq!(f.value(Field::GlobalBatchSize), None);
    }

    #[test]
    fn a_folder_that_cannot_be_listed_is_skipped_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        write_file(dir.path(), "a.sh", "python train.py --lr 1\n");
        let confined = Confined::new(dir.path()).unwrap();
        let mut walk = Walk {
            confined: &confined,
            top: dir.path(),
            left: 10,
            files: Vec::new(),
            skipped: Vec::new(),
            not_walked: 0,
        };
        walk.list(&dir.path().join("gone"), 1);
        walk.list(dir.path(), 0);
        assert_eq!(walk.files, [dir.path().join("a.sh")]);
        assert_eq!(walk.skipped.len(), 1);
        assert_eq!(walk.skipped[0].file, "gone");
        assert!(
            walk.skipped[0]
                .reason
                .starts_with("a folder that cannot be read"),
            "{:?}",
            walk.skipped
        );
    }

    /// Facts of one script, resolved and derived as `extract` does.
    fn script_facts(script: &str) -> JobFacts {
        script_facts_with(script, |_| {})
    }

    /// The facts of a job script read alone, with `more` (the training code's) added before
    /// the precedence rules and the derivations run.
    fn script_facts_with(script: &str, more: impl FnOnce(&mut JobFacts)) -> JobFacts {
        let mut facts = JobFacts::default();
        scheduler::read_headers("job.sh", script, &mut facts);
        for c in commands(script, &mut |_| None) {
            launch::read_command(
                &c.words,
                &Source::line("job.sh", c.line),
                Strength::Script,
                &mut facts,
            );
        }
        more(&mut facts);
        crate::precedence::resolve(&mut facts);
        crate::derive::job(&mut facts);
        facts
    }

    #[test]
    fn visible_devices_count_the_gpus_when_nothing_stronger_does() {
        for launch in ["deepspeed train.py", "torchrun train.py", "python train.py"] {
            let f = script_facts(&format!("CUDA_VISIBLE_DEVICES=0,1,2,3 {launch} --lr 1\n"));
            assert_eq!(f.json(Field::GpusPerNode), Some(json!(4)), "{launch}");
        }
        // The launcher's own count, then the allocation, say more.
        let f = script_facts("CUDA_VISIBLE_DEVICES=0,1,2,3 deepspeed --num_gpus 2 train.py\n");
        assert_eq!(f.json(Field::GpusPerNode), Some(json!(2)));
        let f =
            script_facts("#SBATCH --gres=gpu:8\nCUDA_VISIBLE_DEVICES=0,1,2,3 deepspeed train.py\n");
        assert_eq!(f.json(Field::GpusPerNode), Some(json!(8)));
        // Set for the whole script, exported or not (Slurm exports it): the same; a
        // command's own assignment wins.
        for set in [
            "export CUDA_VISIBLE_DEVICES=0,1,2,3",
            "CUDA_VISIBLE_DEVICES=\"0,1,2,3\"",
        ] {
            let f = script_facts(&format!("{set}\ncd /work\ntorchrun train.py --lr 1\n"));
            assert_eq!(f.json(Field::GpusPerNode), Some(json!(4)), "{set}");
            let f = script_facts(&format!(
                "{set}\nCUDA_VISIBLE_DEVICES=0,1 deepspeed train.py\n"
            ));
            assert_eq!(f.json(Field::GpusPerNode), Some(json!(2)), "{set}");
        }
        let f = script_facts(
            "#SBATCH --gres=gpu:8\nexport CUDA_VISIBLE_DEVICES=0,1,2,3\ntorchrun train.py\n",
        );
        assert_eq!(f.json(Field::GpusPerNode), Some(json!(8)));
        for unknown in ["$DEVICES", "", "-1"] {
            let f = script_facts(&format!(
                "CUDA_VISIBLE_DEVICES={unknown} deepspeed train.py\n"
            ));
            assert_eq!(f.value(Field::GpusPerNode), None, "{unknown}");
        }
    }

    #[test]
    fn accumulation_names_and_products_with_an_unknown_factor() {
        // MAE's `--accum_iter`: 64 x 8 GPUs x 1 node x 10.
        let f = script_facts(
            "torchrun --nnodes 1 --nproc_per_node 8 main_pretrain.py --batch_size 64 --accum_iter 10\n",
        );
        assert_eq!(f.json(Field::GradientAccumulation), Some(json!(10)));
        assert_eq!(f.json(Field::GlobalBatchSize), Some(json!(5_120)));
        // A name that says accumulation and is not understood: no product from the others.
        let f = script_facts(
            "torchrun --nnodes 1 --nproc_per_node 8 main.py --batch_size 64 --grad_accumulation_interval 10\n",
        );
        assert_eq!(f.value(Field::GlobalBatchSize), None, "{f:?}");
        assert!(f.get(Field::GradientAccumulationUnknown).is_some(), "{f:?}");
        // A batch counted in tokens (FunASR's overrides) is no batch of sequences.
        let f = script_facts(
            "torchrun --nproc_per_node 8 train_ds.py ++dataset_conf.batch_type=token ++dataset_conf.batch_size=6000\n",
        );
        assert_eq!(f.value(Field::BatchSizePerDevice), None, "{f:?}");
        let f = script_facts("torchrun train_ds.py ++dataset_conf.batch_size=6000\n");
        assert_eq!(f.json(Field::BatchSizePerDevice), Some(json!(6000)));
        // Not accumulation counts.
        assert!(!launch::is_accumulation("grad_accum_dtype"));
        assert!(!launch::is_accumulation("batch_size"));
        assert!(launch::is_accumulation("grad_accum_steps"));
        assert!(launch::is_accumulation("accum_count"));
    }

    #[test]
    fn fifos_in_the_job_directory_are_listed_never_opened() {
        // A FIFO without a writer blocks whoever opens it for reading: those named like the
        // files extract reads (a script, a config), and a link to one, are listed as skipped
        // from their metadata; the rest of the job is read.
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("run.sh"),
            "torchrun --nproc_per_node 4 train.py\n",
        )
        .unwrap();
        for name in ["train.sh", "config.yaml", "args.json"] {
            let path = dir.path().join(name);
            let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        }
        std::os::unix::fs::symlink("train.sh", dir.path().join("link.sh")).unwrap();
        let e = extract(dir.path(), None, &[]).unwrap();
        assert_eq!(e.facts.json(Field::GpusPerNode), Some(json!(4)));
        let mut skipped: Vec<(&str, &str)> = e
            .skipped
            .iter()
            .map(|s| (s.file.as_str(), s.reason.as_str()))
            .collect();
        skipped.sort();
        assert_eq!(
            skipped,
            [
                ("args.json", "not a regular file: a FIFO"),
                ("config.yaml", "not a regular file: a FIFO"),
                ("link.sh", "a symbolic link to a FIFO"),
                ("train.sh", "not a regular file: a FIFO"),
            ]
        );
    }

    #[test]
    fn missing_directory_and_log_are_errors_that_name_them() {
        let err = extract(Path::new("/nonexistent/job"), None, &[]).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/job"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let err = extract(dir.path(), None, &[dir.path().join("nope.log")]).unwrap_err();
        assert!(err.to_string().contains("nope.log"), "{err}");
        // A FIFO given as the log is refused at once, not waited on.
        let fifo = dir.path().join("train.log");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = extract(dir.path(), None, &[fifo]).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let err = extract(dir.path(), None, &[PathBuf::from("/dev/zero")]).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
}
