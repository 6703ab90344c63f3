//! Joining the parts of a sharded build into one dataset.
//!
//! Every part must come from the same arguments, the shards must be `1/N ..= N/N` each exactly
//! once, and each part's files must hold what its manifest says. Records are merged by source
//! index, so the result has the same bytes as one unsharded build: a duplicate always shares
//! its original's fingerprint, hence its shard, and was already left out there.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use schedlm_model::lines::{text_lines, TextLines};

use crate::error::BuildError;
use crate::layout::{read_head, Head, SplitWriters};
use crate::manifest::{read_manifest, write_manifest, Manifest, Tally};
use crate::split::Split;

/// Merges the part directories into `out`; returns the merged manifest.
pub fn merge(parts: &[PathBuf], out: &Path) -> Result<Manifest, BuildError> {
    let manifests = check_parts(parts)?;
    fs::create_dir_all(out).map_err(|source| BuildError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    if out.join("manifest.json").exists() {
        return Err(BuildError::Merge(format!(
            "{} already holds a dataset; merge into a new directory",
            out.display()
        )));
    }
    let mut writers = SplitWriters::create(out)?;
    let mut tally = Tally::default();
    let mut owner: HashMap<String, usize> = HashMap::new();
    for split in Split::ALL {
        let mut readers: Vec<PartReader> = parts
            .iter()
            .map(|dir| PartReader::open(&dir.join(split.file_name())))
            .collect::<Result<_, _>>()?;
        let mut counts = vec![0u64; parts.len()];
        loop {
            let next = readers
                .iter()
                .enumerate()
                .filter_map(|(p, r)| r.head.as_ref().map(|(head, _)| (head.position(), p)))
                .min();
            let Some((_, p)) = next else { break };
            let (head, text) = readers[p].take()?;
            let id = head.id.clone();
            if let Some(&q) = owner.get(&id) {
                return Err(BuildError::Merge(format!(
                    "record {id} is in both {} and {}: the parts overlap",
                    parts[q].display(),
                    parts[p].display()
                )));
            }
            owner.insert(id, p);
            tally.add(&head);
            writers.write(split, &text)?;
            counts[p] += 1;
        }
        for (p, m) in manifests.iter().enumerate() {
            let expected = m.records.get(&split).copied().unwrap_or(0);
            if counts[p] != expected {
                return Err(BuildError::Merge(format!(
                    "{}: {} holds {} records, its manifest says {expected}: the part is incomplete or changed",
                    parts[p].display(),
                    split.file_name(),
                    counts[p]
                )));
            }
        }
    }
    writers.finish()?;
    for m in &manifests {
        tally.duplicates += m.duplicates;
        tally.filtered += m.filtered;
        tally.skipped.extend(m.skipped.iter().cloned());
    }
    tally.skipped.sort_by_key(|s| s.index);
    let manifest = tally.into_manifest(&manifests[0].args, None);
    write_manifest(out, &manifest)?;
    Ok(manifest)
}

/// Reads every part's manifest and checks that together they are one whole build.
fn check_parts(parts: &[PathBuf]) -> Result<Vec<Manifest>, BuildError> {
    if parts.is_empty() {
        return Err(BuildError::Merge("no parts given".into()));
    }
    let manifests: Vec<Manifest> = parts
        .iter()
        .map(|p| read_manifest(p))
        .collect::<Result<_, _>>()?;
    let first = &manifests[0];
    let n = first.shard.map_or(1, |s| s.n);
    let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
    for (dir, m) in parts.iter().zip(&manifests) {
        if m.args != first.args {
            return Err(BuildError::Merge(format!(
                "{} was built with other arguments than {}",
                dir.display(),
                parts[0].display()
            )));
        }
        let shard = m.shard.map_or((1, 1), |s| (s.k, s.n));
        if shard.1 != n {
            return Err(BuildError::Merge(format!(
                "{} is shard {}/{}, but {} is one of {n}",
                dir.display(),
                shard.0,
                shard.1,
                parts[0].display()
            )));
        }
        if let Some(other) = seen.insert(shard.0, dir) {
            return Err(BuildError::Merge(format!(
                "shard {}/{n} given twice: {} and {}",
                shard.0,
                other.display(),
                dir.display()
            )));
        }
    }
    let missing: Vec<String> = (1..=n)
        .filter(|k| !seen.contains_key(k))
        .map(|k| format!("{k}/{n}"))
        .collect();
    if !missing.is_empty() {
        return Err(BuildError::Merge(format!(
            "shard {} missing",
            missing.join(", ")
        )));
    }
    Ok(manifests)
}

/// A split file of one part, read a record at a time.
struct PartReader {
    path: PathBuf,
    lines: TextLines<BufReader<File>>,
    line: u64,
    /// Source index and step of the record taken last (the steps of one instance share its
    /// index and follow each other).
    last: Option<(u64, usize)>,
    /// The next record and its line text.
    head: Option<(Head, String)>,
}

impl PartReader {
    fn open(path: &Path) -> Result<Self, BuildError> {
        let file = File::open(path).map_err(|source| BuildError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut reader = PartReader {
            path: path.to_path_buf(),
            lines: text_lines(BufReader::new(file)),
            line: 0,
            last: None,
            head: None,
        };
        reader.advance()?;
        Ok(reader)
    }

    fn advance(&mut self) -> Result<(), BuildError> {
        let previous = self.last;
        for line in self.lines.by_ref() {
            let line = line.map_err(|source| BuildError::Io {
                path: self.path.clone(),
                source,
            })?;
            self.line = line.number as u64;
            if line.is_blank() {
                continue;
            }
            let text = line.text.map_err(|reason| BuildError::Record {
                path: self.path.clone(),
                line: self.line,
                reason,
            })?;
            let head = read_head(&self.path, self.line, &text)?;
            if let Some((index, step)) = previous.filter(|&last| head.position() <= last) {
                return Err(BuildError::Merge(format!(
                    "{}:{}: record index {} (step {}) after {index} (step {step}): the file is \
                     not in source order",
                    self.path.display(),
                    self.line,
                    head.index,
                    head.position().1
                )));
            }
            self.head = Some((head, text));
            break;
        }
        Ok(())
    }

    /// The current record; moves to the next. The caller checked `head` is `Some`.
    fn take(&mut self) -> Result<(Head, String), BuildError> {
        let (head, text) = self.head.take().ok_or_else(|| {
            BuildError::Merge(format!("{}: read past the end", self.path.display()))
        })?;
        self.last = Some(head.position());
        self.advance()?;
        Ok((head, text))
    }
}
