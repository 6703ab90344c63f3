//! The on-disk layout of a dataset directory: the split files (`train.jsonl`, `val.jsonl`,
//! `test.jsonl`) written through temporary files, the chunk files of a build in progress
//! (`parts/chunk-NNNNNNNN.jsonl`), the build lock, and the few fields of a record line
//! (`Head`) that assembly and merge read.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{io_err, BuildError};
use crate::manifest::Skipped;
use crate::split::Split;

pub(crate) fn chunk_path(parts: &Path, number: u64) -> PathBuf {
    parts.join(format!("chunk-{number:08}.jsonl"))
}

/// The lock file that keeps two builds out of one directory.
pub const LOCK_FILE: &str = ".build.lock";

/// Takes the build lock of `dir` (created if missing) for as long as the returned file lives;
/// a directory another process is building into is refused. The lock is the operating
/// system's (released when that process ends, however it ends), so a killed build never
/// leaves a stale lock behind.
pub(crate) fn lock_dir(dir: &Path) -> Result<File, BuildError> {
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
pub(crate) fn finished_chunks(parts: &Path) -> Result<HashSet<u64>, BuildError> {
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

pub(crate) fn open(path: &Path) -> Result<BufReader<File>, BuildError> {
    File::open(path).map(BufReader::new).map_err(io_err(path))
}

/// A chunk-file line for a skipped item.
pub(crate) fn skip_line(index: u64, reason: &str) -> String {
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
    /// How the solve ended (`time_limit`: the clock stopped it).
    #[serde(default)]
    pub status: String,
    /// Absent in records built before difficulty was stored.
    #[serde(default)]
    pub difficulty: Option<crate::difficulty::Difficulty>,
    #[serde(default)]
    pub instance: QueueHead,
}

/// The part of a record's instance the manifest counts: its queue length.
#[derive(Deserialize, Default)]
pub(crate) struct QueueHead {
    #[serde(default)]
    pub queue: Vec<serde::de::IgnoredAny>,
}

impl Head {
    /// Where the record stands in the source: its index, then its step (0 for order records).
    pub(crate) fn position(&self) -> (u64, usize) {
        (self.index, self.step.unwrap_or(0))
    }
}

/// A chunk-file line for an item left out by `--min-headroom`.
pub(crate) fn filtered_line(index: u64) -> String {
    serde_json::json!({ "filtered": { "index": index } }).to_string()
}

/// A chunk-file line: a record, a skip note, or an item the headroom filter left out.
pub(crate) enum Line {
    Record(Head),
    Skipped(Skipped),
    Filtered,
}

pub(crate) fn parse_line(path: &Path, number: u64, text: &str) -> Result<Line, BuildError> {
    #[derive(Deserialize)]
    struct Skip {
        skipped: Skipped,
    }
    if text.starts_with("{\"skipped\"") {
        let s: Skip = serde_json::from_str(text).map_err(|e| BuildError::Record {
            path: path.to_path_buf(),
            line: number,
            reason: schedlm_model::lines::bounded(&e.to_string()),
        })?;
        return Ok(Line::Skipped(s.skipped));
    }
    if text.starts_with("{\"filtered\"") {
        return Ok(Line::Filtered);
    }
    read_head(path, number, text).map(Line::Record)
}

pub(crate) fn read_head(path: &Path, number: u64, text: &str) -> Result<Head, BuildError> {
    serde_json::from_str(text).map_err(|e| BuildError::Record {
        path: path.to_path_buf(),
        line: number,
        reason: schedlm_model::lines::bounded(&e.to_string()),
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
