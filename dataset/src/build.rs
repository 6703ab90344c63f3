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

use std::collections::HashSet;
use std::fs;
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use schedlm_generator::generate_one;
use schedlm_model::{parse_valid_with, text_lines, Instance, Problem};
use schedlm_solver::portfolio::{self, SolveOptions};
use serde::{Deserialize, Serialize};

use crate::canonical::fingerprint;
use crate::error::{io_err, BuildError};
use crate::layout::{
    chunk_path, filtered_line, finished_chunks, lock_dir, open, parse_line, skip_line,
    write_atomic, Line, SplitWriters,
};
use crate::manifest::{
    read_manifest, write_manifest, BuildArgs, Manifest, Shard, Source, Tally, FORMAT,
};
use crate::record::{
    record_with_fingerprint, step_records_with, RecordKind, RecordOptions, Targets,
};

/// How a build ran.
#[derive(Debug, Clone)]
pub struct BuildReport {
    /// The manifest written by this run, or the one found when the build was already complete.
    pub manifest: Manifest,
    /// Chunks found finished from an earlier, interrupted run.
    pub chunks_reused: u64,
    /// Chunks solved and written by this run: every chunk of the source but the reused ones
    /// (0 when the build was already complete).
    pub chunks_built: u64,
    /// True when the directory already held the complete build.
    pub already_complete: bool,
}

/// What a finished build tells its user.
impl BuildReport {
    /// What was written to `out` in `secs` seconds, the instances `--min-headroom` kept and
    /// the labels' difficulty, one line each (empty when the build was already complete).
    pub fn summary(&self, args: &BuildArgs, out: &Path, secs: f64) -> Vec<String> {
        let m = &self.manifest;
        if self.already_complete {
            let n = m.total();
            return vec![format!(
                "{} already holds this build ({n} records); nothing to do",
                out.display()
            )];
        }
        let counts: Vec<String> = m.records.iter().map(|(s, n)| format!("{s} {n}")).collect();
        let resumed = match self.chunks_reused {
            0 => String::new(),
            n => format!(", resumed ({n} chunks were done)"),
        };
        let mut lines = vec![format!(
            "wrote {} records to {} ({}) in {secs:.1} s: {} proven optimal ({:.0}/s), {} \
             duplicates left out, {} skipped{resumed}",
            m.total(),
            out.display(),
            counts.join(", "),
            m.proven_optimal,
            m.proven_optimal as f64 / secs.max(1e-9),
            m.duplicates,
            m.skipped.len(),
        )];
        if let Some(min) = args.min_headroom {
            let kept = m.instances();
            let drawn = match kept {
                0 => "none kept: lower the headroom or change the family's settings".to_string(),
                _ => format!(
                    "{:.2} candidates drawn per instance kept",
                    m.candidates() as f64 / kept as f64
                ),
            };
            lines.push(format!(
                "--min-headroom {:.2}%: kept {kept} of {} candidate instances ({} below it); {drawn}",
                100.0 * min,
                m.candidates(),
                m.filtered,
            ));
        }
        if let Some(d) = &m.difficulty {
            lines.push(format!(
                "difficulty: {:.1}% of the labels are the prompt's ranking, {:.1}% of label \
                 positions leave it, mean headroom over the best rule per instance {:.2}% \
                 (`schedlm dataset stats {}` for quantiles and queue lengths)",
                100.0 * d.all.label_is_ranking,
                100.0 * d.all.deviating_positions,
                100.0 * d.all.headroom.mean,
                out.display()
            ));
        }
        lines
    }

    /// Warnings: labels that depend on the machine (the clock stopped some solves, or the
    /// clock was the only budget), and labels that are mostly the prompt's ranking.
    pub fn warnings(&self, args: &BuildArgs) -> Vec<String> {
        let m = &self.manifest;
        let mut warnings = Vec::new();
        if self.already_complete {
            return warnings;
        }
        if m.time_limited > 0 {
            warnings.push(format!(
                "warning: {} of {} records have labels the wall clock stopped (--time-limit; \
                 manifest `time_limited`): they depend on this machine's speed and load, so \
                 this build is not reproducible. Raise or drop --time-limit",
                m.time_limited,
                m.total()
            ));
        } else if args.work_limit.is_none() && args.node_limit.is_none() {
            warnings.push(
                "warning: --work-limit none: labels stopped by the clock depend on this \
                 machine's speed and load; give a work limit for a reproducible build"
                    .to_string(),
            );
        }
        if let Some(d) = m.difficulty.as_ref().filter(|d| d.mostly_ranking()) {
            warnings.push(crate::stats::ranking_warning(d));
        }
        warnings
    }

    /// Why the dataset this run wrote to `out` is empty, when it is (a build found complete
    /// is not this run's).
    pub fn empty(&self, out: &Path) -> Option<String> {
        let m = &self.manifest;
        if self.already_complete {
            return None;
        }
        match (m.total(), m.filtered) {
            (0, 0) => Some(format!(
                "the dataset in {} is empty: all {} input lines were skipped (reasons above)",
                out.display(),
                m.skipped.len()
            )),
            (0, filtered) => Some(format!(
                "the dataset in {} is empty: all {filtered} candidates were below --min-headroom",
                out.display(),
            )),
            _ => None,
        }
    }
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

/// How many items the source holds (a pass over the file for `Source::File`); a source without
/// any is an error ([`BuildError::Args`]), before anything is written.
pub fn source_len(source: &Source) -> Result<u64, BuildError> {
    let n = match source {
        Source::Generate { count, .. } => *count,
        Source::File { path, .. } => {
            let mut n = 0;
            for line in text_lines(open(path)?) {
                if !line.map_err(io_err(path))?.is_blank() {
                    n += 1;
                }
            }
            n
        }
    };
    if n == 0 {
        let what = match source {
            Source::File { path, .. } => format!("{} is empty", path.display()),
            Source::Generate { .. } => "--count is 0".to_string(),
        };
        let why = format!("no instance to build from: {what}; nothing was written");
        return Err(BuildError::Args(why));
    }
    Ok(n)
}

/// Builds (or resumes, or finds complete) the dataset of `args` and `shard` in `dir`.
pub fn build(
    args: &BuildArgs,
    shard: Shard,
    dir: &Path,
    tuning: BuildTuning,
    progress: Progress<'_>,
) -> Result<BuildReport, BuildError> {
    args.check()?;
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
        let record = record_with_fingerprint(
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
        if let (Some(min), Some(d)) = (self.args.min_headroom, &record.difficulty) {
            if !d.has_headroom(min) {
                return Ok(vec![filtered_line(item.index)]);
            }
        }
        let records = match self.args.records {
            RecordKind::Orders => vec![record],
            RecordKind::Steps => {
                let values = match self.args.targets {
                    Targets::Label => None,
                    Targets::Values => Some(
                        self.args
                            .value_work_limit
                            .unwrap_or(schedlm_solver::values::DEFAULT_VALUE_WORK),
                    ),
                };
                let steps = step_records_with(&record, &problem, values).map_err(|e| {
                    BuildError::Solve {
                        index: item.index,
                        reason: e.to_string(),
                    }
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
            (
                Source::File {
                    label,
                    unknown_fields,
                    ..
                },
                Some(Ok(text)),
            ) => match parse_valid_with(text, *unknown_fields) {
                Ok((instance, _)) => Ok(Ok((instance, label.clone()))),
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
                Line::Filtered => tally.filtered += 1,
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
