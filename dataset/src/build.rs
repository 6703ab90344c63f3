//! The streaming, resumable, shardable dataset build.
//!
//! Items (generated instances `0..count`, or the lines of an instance file) are cut into chunks
//! of consecutive items. Chunks run in parallel on the rayon pool, pulled lazily from the
//! source, so memory holds only the chunks in flight. Each item is fingerprinted
//! ([`crate::canonical`]); items of other shards are passed over before any solving; the rest
//! are solved, rendered and serialised. A finished chunk is written to
//! `DIR/parts/chunk-NNNNNNNN.jsonl` through a temporary file and an atomic rename, so a chunk
//! file exists whole or not at all. A build killed at any moment (SIGKILL included) and run
//! again with the same arguments skips the finished chunks and redoes the rest.
//!
//! When every chunk is there, the chunks are read in order and the records go to
//! `train.jsonl`, `val.jsonl` and `test.jsonl` in source order, leaving out any record whose
//! fingerprint id was already seen (an exact duplicate, counted); `manifest.json` is written
//! last and marks the build complete; then `parts/` is removed. Output bytes depend only on
//! the arguments: not on threads, chunk size or interruptions (see `docs/dataset.md` for the
//! one exception, labels cut by a wall-clock limit).

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rayon::prelude::*;
use schedlm_generator::{generate_one, Config};
use schedlm_model::{parse_valid, text_lines, Instance, Objective, Problem, Variant};
use schedlm_solver::portfolio::{self, Method, SolveOptions};
use serde::{Deserialize, Serialize};

use crate::canonical::fingerprint;
use crate::error::io_err;
pub use crate::error::BuildError;
use crate::prompt::Template;
use crate::record::{
    make_record_with, step_records, AnswerOrder, RecordFormat, RecordKind, RecordOptions,
};
use crate::split::{Split, SplitSpec};

/// Version tag of the on-disk layout; a manifest of another format is refused.
pub const FORMAT: &str = "schedlm-dataset-v1";

/// One part of a sharded build: shard `k` of `n`, 1-based (`--shard K/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

impl Shard {
    /// The whole build (1/1).
    pub const ALL: Shard = Shard { k: 1, n: 1 };

    /// Whether an instance of this fingerprint belongs to this shard.
    pub fn holds(&self, fp: &crate::Fingerprint) -> bool {
        self.n <= 1 || fp.shard(self.n) + 1 == self.k
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::ALL
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || format!("shard `{s}`: expected K/N with 1 <= K <= N, e.g. 3/8");
        let (k, n) = s.split_once('/').ok_or_else(err)?;
        let k: u32 = k.trim().parse().map_err(|_| err())?;
        let n: u32 = n.trim().parse().map_err(|_| err())?;
        if k == 0 || k > n {
            return Err(err());
        }
        Ok(Shard { k, n })
    }
}

/// Where the instances come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Instances `0..count` of the generator; item `i` uses `configs[i % configs.len()]`.
    Generate { configs: Vec<Config>, count: u64 },
    /// The non-blank lines of a JSON Lines file of instances; records carry `label` as family.
    File { path: PathBuf, label: String },
}

/// Every argument that decides the output bytes. A resumed build must repeat them exactly;
/// they are stored in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildArgs {
    pub source: Source,
    pub solver: Method,
    pub objective: Objective,
    pub variant: Variant,
    /// Wall-clock limit of one solve, in milliseconds.
    pub time_limit_ms: u64,
    pub node_limit: Option<u64>,
    /// Seed of the solver's local search.
    pub solver_seed: u64,
    pub template: Template,
    /// Which optimal order is the label (`solver` in manifests written before the choice).
    #[serde(default)]
    pub answer: AnswerOrder,
    pub plan: bool,
    /// One record per instance (`orders`) or per dispatching decision (`steps`); left out of
    /// the manifest for `orders`, so builds from before the choice read and resume unchanged.
    #[serde(default, skip_serializing_if = "RecordKind::is_orders")]
    pub records: RecordKind,
    /// Which form of prompt and answer the files carry (older manifests: both).
    #[serde(default, skip_serializing_if = "RecordFormat::is_both")]
    pub format: RecordFormat,
    pub split: SplitSpec,
    /// Skip invalid input instances (listed in the manifest) instead of failing.
    pub skip_invalid: bool,
}

impl BuildArgs {
    fn solve_options(&self) -> SolveOptions {
        SolveOptions {
            method: self.solver,
            objective: self.objective,
            variant: self.variant,
            time_limit: Duration::from_millis(self.time_limit_ms),
            node_limit: self.node_limit,
            seed: self.solver_seed,
        }
    }

    fn record_options(&self) -> RecordOptions {
        RecordOptions {
            answer: self.answer,
            template: self.template,
            objective: self.objective,
            variant: self.variant,
            plan: self.plan,
            split: self.split,
        }
    }
}

/// An input instance that was left out, with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Source index (line number for `--from`).
    pub index: u64,
    pub reason: String,
}

/// What a finished build (or a merge) contains; `DIR/manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub args: BuildArgs,
    /// The shard built, or `None` for a whole build or a merge of every shard.
    pub shard: Option<Shard>,
    /// Records per split file.
    pub records: BTreeMap<Split, u64>,
    /// Records per family.
    pub families: BTreeMap<String, u64>,
    pub proven_optimal: u64,
    /// Exact duplicates (same fingerprint as an earlier item) left out.
    pub duplicates: u64,
    pub skipped: Vec<Skipped>,
}

impl Manifest {
    /// Total records over all splits.
    pub fn total(&self) -> u64 {
        self.records.values().sum()
    }
}

/// How a build ran.
#[derive(Debug, Clone)]
pub struct BuildReport {
    pub manifest: Manifest,
    /// Chunks found finished from an earlier, interrupted run.
    pub chunks_reused: u64,
    pub chunks_built: u64,
    /// True when the directory already held the complete build.
    pub already_complete: bool,
}

/// Tuning that does not change the output.
#[derive(Debug, Clone, Copy)]
pub struct BuildTuning {
    /// Items per chunk (the unit of resumption).
    pub chunk: u64,
}

impl Default for BuildTuning {
    fn default() -> Self {
        BuildTuning { chunk: 64 }
    }
}

/// One unit of input: its source index and, for files, its text.
struct Item {
    index: u64,
    /// The input line (`--from`), or why its bytes are not text; `None` when generated.
    text: Option<Result<String, String>>,
}

/// A run of consecutive items.
struct Chunk {
    number: u64,
    items: Vec<Item>,
}

/// The progress callback: called with the number of items just finished.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// How many items the source holds (a pass over the file for `Source::File`).
pub fn source_len(source: &Source) -> Result<u64, BuildError> {
    match source {
        Source::Generate { count, .. } => Ok(*count),
        Source::File { path, .. } => {
            let mut n = 0;
            for line in text_lines(open(path)?) {
                if !line.map_err(io_err(path))?.is_blank() {
                    n += 1;
                }
            }
            Ok(n)
        }
    }
}

/// Builds (or resumes, or finds complete) the dataset of `args` and `shard` in `dir`.
pub fn build(
    args: &BuildArgs,
    shard: Shard,
    dir: &Path,
    tuning: BuildTuning,
    progress: Progress<'_>,
) -> Result<BuildReport, BuildError> {
    if let Source::Generate { configs, .. } = &args.source {
        if configs.is_empty() {
            return Err(BuildError::Solve {
                index: 0,
                reason: "no generator family given".into(),
            });
        }
        for c in configs {
            c.check()
                .map_err(|source| BuildError::Generate { index: 0, source })?;
        }
    }
    let _lock = lock_dir(dir)?;
    let manifest_path = dir.join("manifest.json");
    if manifest_path.exists() {
        let manifest = read_manifest(dir)?;
        check_same(dir, &manifest.args, args, manifest.shard, shard)?;
        // Killed after the manifest but before the chunks were removed: finish the cleanup.
        let parts = dir.join("parts");
        if parts.exists() {
            fs::remove_dir_all(&parts).map_err(io_err(&parts))?;
        }
        return Ok(BuildReport {
            manifest,
            chunks_reused: 0,
            chunks_built: 0,
            already_complete: true,
        });
    }
    let parts = dir.join("parts");
    fs::create_dir_all(&parts).map_err(io_err(&parts))?;
    let header = Header {
        format: FORMAT.to_string(),
        args: args.clone(),
        shard,
        chunk: tuning.chunk,
    };
    check_or_write_header(&parts, &header)?;
    let done = finished_chunks(&parts)?;
    let reused = done.len() as u64;
    let chunk_size = tuning.chunk.max(1);
    let chunks = chunk_iter(&args.source, chunk_size)?;
    let context = Context::new(args, shard);
    // Chunks are numbered from 0, so the source's chunk count is the highest number + 1.
    let chunk_count = AtomicU64::new(0);
    chunks
        .par_bridge()
        .try_for_each(|chunk| -> Result<(), BuildError> {
            let chunk = chunk?;
            chunk_count.fetch_max(chunk.number + 1, Ordering::Relaxed);
            let n = chunk.items.len() as u64;
            if !done.contains(&chunk.number) {
                let lines = context.run_chunk(&chunk)?;
                write_atomic(&chunk_path(&parts, chunk.number), &lines)?;
            }
            progress(n);
            Ok(())
        })?;
    let total_chunks = chunk_count.into_inner();
    let manifest = assemble(dir, &parts, args, shard, total_chunks)?;
    Ok(BuildReport {
        manifest,
        chunks_reused: reused,
        chunks_built: total_chunks.saturating_sub(reused),
        already_complete: false,
    })
}

/// The first lines of `parts/header.json`: what the chunks were made with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Header {
    format: String,
    args: BuildArgs,
    shard: Shard,
    chunk: u64,
}

fn check_or_write_header(parts: &Path, header: &Header) -> Result<(), BuildError> {
    let path = parts.join("header.json");
    if path.exists() {
        let text = fs::read_to_string(&path).map_err(io_err(&path))?;
        let old: Header = serde_json::from_str(&text).map_err(|e| BuildError::Manifest {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let dir = parts.parent().unwrap_or(parts);
        check_same(dir, &old.args, &header.args, Some(old.shard), header.shard)?;
        if old.chunk != header.chunk {
            return Err(BuildError::OtherArgs {
                dir: dir.to_path_buf(),
                what: format!("chunk size {} instead of {}", old.chunk, header.chunk),
            });
        }
        return Ok(());
    }
    let text = serde_json::to_string_pretty(header).unwrap_or_default();
    write_atomic(&path, &[text])
}

fn check_same(
    dir: &Path,
    old: &BuildArgs,
    new: &BuildArgs,
    old_shard: Option<Shard>,
    new_shard: Shard,
) -> Result<(), BuildError> {
    if old != new {
        let old_json = serde_json::to_value(old).unwrap_or_default();
        let new_json = serde_json::to_value(new).unwrap_or_default();
        let what = differing_fields(&old_json, &new_json).join(", ");
        return Err(BuildError::OtherArgs {
            dir: dir.to_path_buf(),
            what: format!("differs in {what}"),
        });
    }
    let old_shard = old_shard.unwrap_or(Shard::ALL);
    if old_shard != new_shard {
        return Err(BuildError::OtherArgs {
            dir: dir.to_path_buf(),
            what: format!("shard {old_shard} instead of {new_shard}"),
        });
    }
    Ok(())
}

fn differing_fields(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => a
            .iter()
            .filter(|(k, v)| b.get(*k) != Some(v))
            .map(|(k, _)| k.clone())
            .collect(),
        _ => vec!["everything".to_string()],
    }
}

fn chunk_path(parts: &Path, number: u64) -> PathBuf {
    parts.join(format!("chunk-{number:08}.jsonl"))
}

/// The lock file that keeps two builds out of one directory.
pub const LOCK_FILE: &str = ".build.lock";

/// Takes the build lock of `dir` (created if missing) for as long as the returned file lives;
/// a directory another process is building into is refused. The lock is the operating
/// system's (released when that process ends, however it ends), so a killed build never
/// leaves a stale lock behind.
fn lock_dir(dir: &Path) -> Result<File, BuildError> {
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let path = dir.join(LOCK_FILE);
    let file = File::create(&path).map_err(io_err(&path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(fs::TryLockError::WouldBlock) => Err(BuildError::Busy {
            dir: dir.to_path_buf(),
        }),
        Err(fs::TryLockError::Error(e)) => Err(io_err(&path)(e)),
    }
}

/// The chunks an earlier run finished; the temporary files of chunks it was writing when it
/// stopped are removed (their chunks are built again).
fn finished_chunks(parts: &Path) -> Result<HashSet<u64>, BuildError> {
    let mut done = HashSet::new();
    for entry in fs::read_dir(parts).map_err(io_err(parts))? {
        let entry = entry.map_err(io_err(parts))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("chunk-") && name.ends_with(".tmp") {
            fs::remove_file(entry.path()).map_err(io_err(&entry.path()))?;
            continue;
        }
        if let Some(n) = name
            .strip_prefix("chunk-")
            .and_then(|r| r.strip_suffix(".jsonl"))
            .and_then(|n| n.parse::<u64>().ok())
        {
            done.insert(n);
        }
    }
    Ok(done)
}

/// Writes `lines` to `path` whole or not at all: a temporary file, flushed and synced, then
/// renamed over `path`.
pub fn write_atomic(path: &Path, lines: &[String]) -> Result<(), BuildError> {
    let tmp = path.with_extension("tmp");
    {
        let file = File::create(&tmp).map_err(io_err(&tmp))?;
        let mut out = BufWriter::new(file);
        for line in lines {
            out.write_all(line.as_bytes()).map_err(io_err(&tmp))?;
            out.write_all(b"\n").map_err(io_err(&tmp))?;
        }
        let file = out.into_inner().map_err(|e| BuildError::Io {
            path: tmp.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(io_err(&tmp))?;
    }
    fs::rename(&tmp, path).map_err(io_err(path))
}

fn open(path: &Path) -> Result<BufReader<File>, BuildError> {
    File::open(path).map(BufReader::new).map_err(io_err(path))
}

/// The source cut into chunks, lazily.
fn chunk_iter(
    source: &Source,
    size: u64,
) -> Result<Box<dyn Iterator<Item = Result<Chunk, BuildError>> + Send>, BuildError> {
    match source {
        Source::Generate { count, .. } => {
            let count = *count;
            Ok(Box::new((0..count.div_ceil(size)).map(move |number| {
                let items = (number * size..((number + 1) * size).min(count))
                    .map(|index| Item { index, text: None })
                    .collect();
                Ok(Chunk { number, items })
            })))
        }
        Source::File { path, .. } => {
            let path = path.clone();
            let mut lines = text_lines(open(&path)?);
            let mut number = 0;
            Ok(Box::new(std::iter::from_fn(move || {
                let mut items = Vec::new();
                while (items.len() as u64) < size {
                    match lines.next() {
                        None => break,
                        Some(Err(e)) => return Some(Err(io_err(&path)(e))),
                        Some(Ok(line)) if line.is_blank() => {}
                        Some(Ok(line)) => items.push(Item {
                            index: line.number as u64,
                            text: Some(line.text),
                        }),
                    }
                }
                if items.is_empty() {
                    return None;
                }
                let chunk = Chunk { number, items };
                number += 1;
                Some(Ok(chunk))
            })))
        }
    }
}

/// What every chunk needs.
struct Context<'a> {
    args: &'a BuildArgs,
    shard: Shard,
    solve: SolveOptions,
    record: RecordOptions,
}

impl<'a> Context<'a> {
    fn new(args: &'a BuildArgs, shard: Shard) -> Self {
        Context {
            args,
            shard,
            solve: args.solve_options(),
            record: args.record_options(),
        }
    }

    /// The lines of a chunk file: the records (one, or one per step) or the skip note of
    /// each item of this shard.
    fn run_chunk(&self, chunk: &Chunk) -> Result<Vec<String>, BuildError> {
        let lines: Vec<Vec<String>> = chunk
            .items
            .par_iter()
            .map(|item| self.run_item(item))
            .collect::<Result<_, _>>()?;
        Ok(lines.into_iter().flatten().collect())
    }

    fn run_item(&self, item: &Item) -> Result<Vec<String>, BuildError> {
        let (instance, family) = match self.instance(item)? {
            Ok(found) => found,
            // An invalid line has no fingerprint: shard 1 reports it.
            Err(reason) if self.shard.k == 1 => return Ok(vec![skip_line(item.index, &reason)]),
            Err(_) => return Ok(Vec::new()),
        };
        let fp = fingerprint(&instance);
        if !self.shard.holds(&fp) {
            return Ok(Vec::new());
        }
        let problem = match Problem::new(&instance) {
            Ok(p) => p,
            Err(e) => {
                let reason = self.invalid(item, e.to_string())?;
                return Ok(vec![skip_line(item.index, &reason)]);
            }
        };
        let solution = portfolio::solve(&problem, &self.solve).map_err(|e| BuildError::Solve {
            index: item.index,
            reason: e.to_string(),
        })?;
        let record = make_record_with(
            fp,
            item.index,
            &family,
            &instance,
            &problem,
            &solution,
            self.args.solver.name(),
            &self.record,
        )
        .map_err(|e| BuildError::Solve {
            index: item.index,
            reason: e.to_string(),
        })?;
        let records = match self.args.records {
            RecordKind::Orders => vec![record],
            RecordKind::Steps => {
                let steps = step_records(&record, &problem).map_err(|e| BuildError::Solve {
                    index: item.index,
                    reason: e.to_string(),
                })?;
                if steps.is_empty() {
                    let reason = "a queue of one job has no dispatching decision to record";
                    return Ok(vec![skip_line(item.index, reason)]);
                }
                steps
            }
        };
        records
            .into_iter()
            .map(|r| {
                serde_json::to_string(&r.into_format(self.args.format)).map_err(|e| {
                    BuildError::Solve {
                        index: item.index,
                        reason: e.to_string(),
                    }
                })
            })
            .collect()
    }

    /// The item's instance and family, or the reason it is invalid (when skipping is on).
    #[allow(clippy::type_complexity)]
    fn instance(&self, item: &Item) -> Result<Result<(Instance, String), String>, BuildError> {
        match (&self.args.source, &item.text) {
            (Source::Generate { configs, .. }, _) => {
                let config = &configs[(item.index % configs.len().max(1) as u64) as usize];
                let instance =
                    generate_one(config, item.index).map_err(|source| BuildError::Generate {
                        index: item.index,
                        source,
                    })?;
                Ok(Ok((instance, config.family.name().to_string())))
            }
            (Source::File { label, .. }, Some(Ok(text))) => match parse_valid(text) {
                Ok(instance) => Ok(Ok((instance, label.clone()))),
                Err(reason) => self.invalid(item, reason).map(Err),
            },
            (Source::File { .. }, Some(Err(reason))) => self.invalid(item, reason.clone()).map(Err),
            (Source::File { path, .. }, None) => Err(BuildError::Input {
                path: path.clone(),
                line: item.index,
                reason: "no text".into(),
            }),
        }
    }

    /// An invalid input: its reason when skipping is on, else the build's error.
    fn invalid(&self, item: &Item, reason: String) -> Result<String, BuildError> {
        match &self.args.source {
            Source::File { .. } if self.args.skip_invalid => Ok(reason),
            Source::File { path, .. } => Err(BuildError::Input {
                path: path.clone(),
                line: item.index,
                reason: format!("{reason} (use --skip-invalid to leave such lines out)"),
            }),
            Source::Generate { .. } => Err(BuildError::Solve {
                index: item.index,
                reason,
            }),
        }
    }
}

/// A chunk-file line for a skipped item.
fn skip_line(index: u64, reason: &str) -> String {
    serde_json::json!({ "skipped": Skipped { index, reason: reason.to_string() } }).to_string()
}

/// The fields of a record line that assembly and merge look at.
#[derive(Deserialize)]
pub(crate) struct Head {
    pub id: String,
    /// Step records: the step (duplicates are counted once per instance, at step 0).
    #[serde(default)]
    pub step: Option<usize>,
    pub index: u64,
    pub split: Split,
    pub family: String,
    pub proven_optimal: bool,
}

impl Head {
    /// Where the record stands in the source: its index, then its step (0 for order records).
    pub(crate) fn position(&self) -> (u64, usize) {
        (self.index, self.step.unwrap_or(0))
    }
}

/// A chunk-file line: a record or a skip note.
enum Line {
    Record(Head),
    Skipped(Skipped),
}

fn parse_line(path: &Path, number: u64, text: &str) -> Result<Line, BuildError> {
    #[derive(Deserialize)]
    struct Skip {
        skipped: Skipped,
    }
    if text.starts_with("{\"skipped\"") {
        let s: Skip = serde_json::from_str(text).map_err(|e| BuildError::Record {
            path: path.to_path_buf(),
            line: number,
            reason: e.to_string(),
        })?;
        return Ok(Line::Skipped(s.skipped));
    }
    read_head(path, number, text).map(Line::Record)
}

pub(crate) fn read_head(path: &Path, number: u64, text: &str) -> Result<Head, BuildError> {
    serde_json::from_str(text).map_err(|e| BuildError::Record {
        path: path.to_path_buf(),
        line: number,
        reason: e.to_string(),
    })
}

/// The open split files of a directory being written.
pub(crate) struct SplitWriters {
    dir: PathBuf,
    files: BTreeMap<Split, BufWriter<File>>,
}

impl SplitWriters {
    pub(crate) fn create(dir: &Path) -> Result<Self, BuildError> {
        let mut files = BTreeMap::new();
        for split in Split::ALL {
            let tmp = dir.join(format!("{}.tmp", split.file_name()));
            let file = File::create(&tmp).map_err(io_err(&tmp))?;
            files.insert(split, BufWriter::new(file));
        }
        Ok(SplitWriters {
            dir: dir.to_path_buf(),
            files,
        })
    }

    pub(crate) fn write(&mut self, split: Split, line: &str) -> Result<(), BuildError> {
        let path = self.dir.join(split.file_name());
        let out = self.files.get_mut(&split).ok_or_else(|| BuildError::Io {
            path: path.clone(),
            source: io::Error::other("split file not open"),
        })?;
        out.write_all(line.as_bytes()).map_err(io_err(&path))?;
        out.write_all(b"\n").map_err(io_err(&path))
    }

    /// Flushes, syncs and renames every temporary split file into place.
    pub(crate) fn finish(self) -> Result<(), BuildError> {
        for (split, out) in self.files {
            let tmp = self.dir.join(format!("{}.tmp", split.file_name()));
            let file = out.into_inner().map_err(|e| BuildError::Io {
                path: tmp.clone(),
                source: e.into_error(),
            })?;
            file.sync_all().map_err(io_err(&tmp))?;
            let path = self.dir.join(split.file_name());
            fs::rename(&tmp, &path).map_err(io_err(&path))?;
        }
        Ok(())
    }
}

/// Counts that become a manifest.
#[derive(Default)]
pub(crate) struct Tally {
    pub records: BTreeMap<Split, u64>,
    pub families: BTreeMap<String, u64>,
    pub proven_optimal: u64,
    pub duplicates: u64,
    pub skipped: Vec<Skipped>,
}

impl Tally {
    pub(crate) fn add(&mut self, head: &Head) {
        *self.records.entry(head.split).or_default() += 1;
        *self.families.entry(head.family.clone()).or_default() += 1;
        self.proven_optimal += u64::from(head.proven_optimal);
    }

    pub(crate) fn into_manifest(self, args: &BuildArgs, shard: Option<Shard>) -> Manifest {
        let mut records = self.records;
        for split in Split::ALL {
            records.entry(split).or_default();
        }
        Manifest {
            format: FORMAT.to_string(),
            args: args.clone(),
            shard,
            records,
            families: self.families,
            proven_optimal: self.proven_optimal,
            duplicates: self.duplicates,
            skipped: self.skipped,
        }
    }
}

/// Joins the chunk files into the split files and the manifest, then removes `parts/`.
fn assemble(
    dir: &Path,
    parts: &Path,
    args: &BuildArgs,
    shard: Shard,
    chunks: u64,
) -> Result<Manifest, BuildError> {
    let mut writers = SplitWriters::create(dir)?;
    let mut seen: HashSet<String> = HashSet::new();
    let mut tally = Tally::default();
    for number in 0..chunks {
        let path = chunk_path(parts, number);
        for (i, text) in open(&path)?.lines().enumerate() {
            let text = text.map_err(io_err(&path))?;
            match parse_line(&path, i as u64 + 1, &text)? {
                Line::Skipped(s) => tally.skipped.push(s),
                Line::Record(head) => {
                    if !seen.insert(head.id.clone()) {
                        tally.duplicates += u64::from(head.position().1 == 0);
                        continue;
                    }
                    tally.add(&head);
                    writers.write(head.split, &text)?;
                }
            }
        }
    }
    writers.finish()?;
    let shard = (shard != Shard::ALL).then_some(shard);
    let manifest = tally.into_manifest(args, shard);
    write_manifest(dir, &manifest)?;
    fs::remove_dir_all(parts).map_err(io_err(parts))?;
    Ok(manifest)
}

/// Writes `DIR/manifest.json` atomically.
pub(crate) fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<(), BuildError> {
    let text = serde_json::to_string_pretty(manifest).unwrap_or_default();
    write_atomic(&dir.join("manifest.json"), &[text])
}

/// Reads `DIR/manifest.json`.
pub fn read_manifest(dir: &Path) -> Result<Manifest, BuildError> {
    let path = dir.join("manifest.json");
    let text = fs::read_to_string(&path).map_err(io_err(&path))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| BuildError::Manifest {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    if manifest.format != FORMAT {
        return Err(BuildError::Manifest {
            path,
            reason: format!("format `{}`, expected `{FORMAT}`", manifest.format),
        });
    }
    Ok(manifest)
}
