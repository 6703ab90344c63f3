//! Reading a job directory someone else wrote: nothing outside it, only regular files, bounded
//! bytes.
//!
//! A scheduler that runs `extract` on its users' job directories reads input it does not
//! control. [`Confined`] is the one way the extractor touches the directory:
//!
//! - every entry is looked at without following it ([`Confined::kind`]); a symbolic link is
//!   followed only when its target, fully resolved, lies inside the directory and is a regular
//!   file; a link that leads outside, a link to a folder, a broken link, a FIFO, a socket or a
//!   device is not read, and the reason is returned so that the caller lists it as skipped;
//! - a file is opened without following a final link and without blocking (a FIFO swapped in
//!   after the check does not hang the reader), checked again on the open handle to be a
//!   regular file, and read up to a per-file limit;
//! - all reads of one job share a byte budget ([`JOB_BYTES`]); a file beyond it is skipped;
//! - a regular file with more than one hard link is not read unless asked for
//!   ([`Confined::follow_hard_links`]): a hard link may name a file outside the directory
//!   (another user's config), and nothing on the link says where the other names are.
//!
//! Names and error texts from the directory are shown through [`escape`] and [`excerpt`]:
//! control characters (newlines, ESC) escaped, and long texts cut.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Bytes read from one job directory at most, all files together.
pub const JOB_BYTES: u64 = 64 << 20;

/// What an entry of the job directory is, seen without following it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A folder (not a link to one).
    Dir,
    /// A regular file, or a link whose resolved target is a regular file inside the directory.
    File,
    /// Not to be read, and why.
    Skip(String),
}

/// The job directory, resolved, and what is left of its byte budget.
#[derive(Debug)]
pub struct Confined {
    root: PathBuf,
    left: u64,
    hard_links: bool,
}

impl Confined {
    /// The directory `dir`, resolved (links and `..` removed), with the full budget.
    pub fn new(dir: &Path) -> std::io::Result<Confined> {
        Ok(Confined {
            root: dir.canonicalize()?,
            left: JOB_BYTES,
            hard_links: false,
        })
    }

    /// Reads files with more than one hard link too (`extract --follow-hard-links`): only for
    /// a directory whose files are known not to be links to files outside it.
    pub fn follow_hard_links(mut self, follow: bool) -> Confined {
        self.hard_links = follow;
        self
    }

    /// Why a regular file with metadata `meta` is not read: more than one hard link, unless
    /// asked for.
    fn linked(&self, meta: &fs::Metadata) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        (!self.hard_links && meta.nlink() > 1).then(|| {
            format!(
                "a file with {} hard links (it may be a file outside the job directory; \
                 --follow-hard-links reads it)",
                meta.nlink()
            )
        })
    }

    /// The resolved job directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` fully resolved (links and `..` removed), when that lies inside the job
    /// directory; the reason otherwise.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf, String> {
        let target = path
            .canonicalize()
            .map_err(|e| format!("cannot be read: {e}"))?;
        if target.starts_with(&self.root) {
            Ok(target)
        } else {
            Err("a symbolic link that leads outside the job directory".into())
        }
    }

    /// What the entry at `path` is, without following it (see the module docs).
    pub fn kind(&self, path: &Path) -> Kind {
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) => return Kind::Skip(format!("cannot be read: {e}")),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let Ok(target) = path.canonicalize() else {
                return Kind::Skip("a symbolic link to nothing".into());
            };
            if !target.starts_with(&self.root) {
                return Kind::Skip("a symbolic link that leads outside the job directory".into());
            }
            return match fs::metadata(&target) {
                Ok(m) if m.is_file() => self.linked(&m).map_or(Kind::File, Kind::Skip),
                Ok(m) if m.is_dir() => {
                    Kind::Skip("a symbolic link to a folder (not followed)".into())
                }
                Ok(m) => Kind::Skip(format!("a symbolic link to {}", special(&m.file_type()))),
                Err(e) => Kind::Skip(format!("cannot be read: {e}")),
            };
        }
        if kind.is_dir() {
            Kind::Dir
        } else if kind.is_file() {
            self.linked(&meta).map_or(Kind::File, Kind::Skip)
        } else {
            Kind::Skip(format!("not a regular file: {}", special(&kind)))
        }
    }

    /// The first `n` bytes of the file at `path` (fewer when it is shorter), opened as
    /// [`Confined::read`] opens it; they count against the job's budget.
    pub fn head(&mut self, path: &Path, n: u64) -> Result<Vec<u8>, String> {
        let (file, _) = self.open(path)?;
        let bytes = read_at_most(file, n.min(self.left))?;
        self.left -= bytes.len() as u64;
        Ok(bytes)
    }

    /// The regular file at `path`, resolved inside the directory, opened without following a
    /// final link and without blocking; with its metadata.
    fn open(&self, path: &Path) -> Result<(File, fs::Metadata), String> {
        let target = self.resolve(path)?;
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&target)
            .map_err(|e| format!("cannot be read: {e}"))?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot be read: {e}"))?;
        if !meta.is_file() {
            return Err(format!(
                "not a regular file: {}",
                special(&meta.file_type())
            ));
        }
        if let Some(reason) = self.linked(&meta) {
            return Err(reason);
        }
        Ok((file, meta))
    }

    /// The bytes of the file at `path` (inside the directory: checked again here), at most
    /// `limit` of them and within the job's budget; the reason otherwise.
    pub fn read(&mut self, path: &Path, limit: u64) -> Result<Vec<u8>, String> {
        let (file, meta) = self.open(path)?;
        if meta.len() > limit {
            return Err(format!(
                "{} bytes, over the {} limit for one file",
                meta.len(),
                human_bytes(limit)
            ));
        }
        if meta.len() > self.left {
            return Err(format!(
                "{} bytes, over what is left of the {} read from one job",
                meta.len(),
                human_bytes(JOB_BYTES)
            ));
        }
        let bytes = read_at_most(file, limit.min(self.left))?;
        self.left -= bytes.len() as u64;
        Ok(bytes)
    }
}

/// `text` with what a terminal would act on shown escaped: control characters (newline,
/// tab, carriage return, ESC, DEL, ...) and the invisible direction and width marks
/// (U+200B-U+200F, U+202A-U+202E, U+2060-U+206F, U+FEFF) as Rust writes them (`\n`,
/// `\u{1b}`); everything else as it is. For file names and texts of a job directory shown on
/// standard error or in messages.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let invisible = matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}');
        if c.is_control() || invisible {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Characters of one line kept by [`excerpt`].
pub const EXCERPT_LINE_CHARS: usize = 200;

/// Characters kept by [`excerpt`] in all.
pub const EXCERPT_CHARS: usize = 1000;

/// An error text or a name from a job directory, fit to show: each line cut to
/// [`EXCERPT_LINE_CHARS`] characters and the whole to [`EXCERPT_CHARS`] (saying how much was
/// cut), then [`escape`]d (so its line breaks show as `\n`).
pub fn excerpt(text: &str) -> String {
    let mut kept = String::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            kept.push('\n');
        }
        let chars = line.chars().count();
        if chars > EXCERPT_LINE_CHARS {
            kept.extend(line.chars().take(EXCERPT_LINE_CHARS));
            kept.push_str(&format!(
                "... ({} more characters)",
                chars - EXCERPT_LINE_CHARS
            ));
        } else {
            kept.push_str(line);
        }
    }
    let chars = kept.chars().count();
    if chars > EXCERPT_CHARS {
        let mut cut: String = kept.chars().take(EXCERPT_CHARS).collect();
        cut.push_str(&format!("... ({} more characters)", chars - EXCERPT_CHARS));
        kept = cut;
    }
    escape(&kept)
}

/// At most `limit` bytes of `file` (a file that grew after its size was checked is cut there).
fn read_at_most(file: File, limit: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    Ok(bytes)
}

/// What a file that is neither a regular file nor a folder is, in words.
fn special(kind: &fs::FileType) -> &'static str {
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_leading_outside_and_special_files_are_not_read() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("secret.json"),
            "{\"model\": \"stolen\"}",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.yaml"), "lr: 1").unwrap();
        symlink(outside.path().join("secret.json"), d.join("cfg.json")).unwrap();
        symlink(d.join("a.yaml"), d.join("inside.yaml")).unwrap();
        symlink(outside.path(), d.join("etc")).unwrap();
        symlink(d.join("gone"), d.join("broken.yaml")).unwrap();
        symlink("/dev/zero", d.join("zero.yaml")).unwrap();
        let fifo = std::ffi::CString::new(d.join("x.yaml").as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let mut c = Confined::new(d).unwrap();
        assert_eq!(c.kind(&d.join("a.yaml")), Kind::File);
        assert_eq!(c.kind(&d.join("inside.yaml")), Kind::File);
        for (name, why) in [
            ("cfg.json", "outside the job directory"),
            ("etc", "outside the job directory"),
            ("broken.yaml", "to nothing"),
            ("zero.yaml", "outside the job directory"),
            ("x.yaml", "a FIFO"),
        ] {
            match c.kind(&d.join(name)) {
                Kind::Skip(reason) => assert!(reason.contains(why), "{name}: {reason}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        // Reading checks again: neither the link nor the FIFO is read, and nothing blocks.
        assert!(c.read(&d.join("cfg.json"), 1 << 20).is_err());
        assert!(c
            .read(&d.join("x.yaml"), 1 << 20)
            .unwrap_err()
            .contains("FIFO"));
        assert_eq!(c.read(&d.join("inside.yaml"), 1 << 20).unwrap(), b"lr: 1");
    }

    #[test]
    fn byte_limits_hold_per_file_and_per_job() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("big.yaml"), vec![b'a'; 2000]).unwrap();
        let mut c = Confined::new(d).unwrap();
        assert!(c
            .read(&d.join("big.yaml"), 1000)
            .unwrap_err()
            .contains("limit"));
        c.left = 1500;
        assert!(c
            .read(&d.join("big.yaml"), 4000)
            .unwrap_err()
            .contains("left"));
        c.left = 5000;
        assert_eq!(c.read(&d.join("big.yaml"), 4000).unwrap().len(), 2000);
        assert_eq!(c.left, 3000);
    }
}
