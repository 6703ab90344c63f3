//! A job's working directory read for another user (`schedlm submit fill`, the Slurm filter):
//! only what that user may read, a bounded amount of it, in bounded time (docs/slurm.md).
//!
//! Run as root (slurmctld's filter), the directory is read by a child process: the caller's
//! [`Reader`] (for `schedlm`, the binary again as `schedlm submit read-dir`, hidden, which
//! calls [`serve`]), started with the submitter's uid and groups (its
//! supplementary groups from the system's group database, `setgroups`, `setgid`, `setuid`
//! before the program starts), killed when its parent dies or its time is up. The kernel then
//! refuses whatever the user could not read. Run as the submitter itself, the directory is read
//! in the process. Run as anyone else, it is not read at all: only the job script Slurm passes
//! is.
//!
//! The walk ([`walk`]) looks at no more than [`MAX_ENTRIES`] entries, [`MAX_DEPTH`] levels
//! deep, follows no link, reads only regular files (opened without following a final link and
//! without blocking, checked again on the handle) of at most [`MAX_FILE_BYTES`], and
//! [`MAX_BYTES`] in all. The files come back to the parent as frames on a pipe ([`Walk::write`],
//! [`Walk::read`]); the parent checks every path and size again (the child runs as the user,
//! who may tamper with it), writes the files into a private folder and extracts the job's facts
//! from there. What was not read is counted by cause, never named: no name or content of an
//! unreadable file reaches the message the user sees.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Why a directory could not be read for its user (the reasons a directory gives, such as
/// permissions, are a [`Walk`]'s `refused`, not errors).
#[derive(Debug, thiserror::Error)]
pub enum UserDirError {
    /// The reader's answer does not parse or breaks the limits: it runs as the user, who may
    /// tamper with it.
    #[error("the directory reader's answer is refused: {0}")]
    Answer(String),
    /// Starting the reader, reading its answer, writing or serving files failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        error: std::io::Error,
    },
}

type Result<T> = std::result::Result<T, UserDirError>;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> UserDirError {
    let what = what.into();
    move |error| UserDirError::Io { what, error }
}

fn refuse<T>(why: &str) -> Result<T> {
    Err(UserDirError::Answer(why.into()))
}

/// The program that reads a directory as another user: `program args... --time-ms N --dir
/// DIR`, which must call [`serve`] (for `schedlm`: its own executable with `submit read-dir`).
#[derive(Debug, Clone)]
pub struct Reader {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments before `--time-ms`.
    pub args: Vec<String>,
}

/// Entries (files, folders, links, ...) looked at, at most.
pub const MAX_ENTRIES: usize = 256;
/// Folder levels read: the directory and this many levels below it, less one.
pub const MAX_DEPTH: usize = 3;
/// The largest file read; a larger one is skipped (counted as `size`).
pub const MAX_FILE_BYTES: u64 = 256 << 10;
/// Bytes read in all; files beyond it are skipped (counted as `size`).
pub const MAX_BYTES: u64 = 2 << 20;

/// Folders never entered (besides hidden ones): what they hold is not a job's definition.
const SKIPPED_DIRS: &[&str] = &["__pycache__", "node_modules", "wandb"];

/// What the walk of a directory gave.
#[derive(Debug, Default, PartialEq)]
pub struct Walk {
    /// The files read: path relative to the directory, bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// Why the directory itself could not be read (permission, missing, not a folder).
    pub refused: Option<String>,
    /// Entries not followed: links.
    pub links: u32,
    /// Entries that are not regular files or folders (FIFOs, sockets, devices).
    pub special: u32,
    /// Files and folders the user may not read.
    pub denied: u32,
    /// Files over [`MAX_FILE_BYTES`] or beyond [`MAX_BYTES`].
    pub large: u32,
    /// Whether the walk stopped at [`MAX_ENTRIES`] with entries left.
    pub truncated: bool,
    /// Whether the walk stopped at its deadline.
    pub late: bool,
}

impl Walk {
    /// What was not read, by cause (counts, no names), for the user's message.
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        for (n, what) in [
            (self.denied, "not readable by the submitting user"),
            (self.links, "links (never followed)"),
            (self.special, "not regular files"),
            (self.large, "size: over 256 KiB, or past 2 MiB in all"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if self.truncated {
            parts.push(format!(
                "size: only the first {MAX_ENTRIES} entries looked at"
            ));
        }
        if self.late {
            parts.push("timeout: the walk ran out of time".into());
        }
        (!parts.is_empty()).then(|| format!("dir: not read: {}", parts.join(", ")))
    }

    /// Writes the walk as frames: `F`, path length (u32 LE), path, length (u32 LE), bytes, per
    /// file; then `S` and the counts as one line of JSON.
    pub fn write(&self, out: &mut impl Write) -> std::io::Result<()> {
        for (path, bytes) in &self.files {
            out.write_all(b"F")?;
            for part in [path.as_bytes(), bytes.as_slice()] {
                out.write_all(&(part.len() as u32).to_le_bytes())?;
                out.write_all(part)?;
            }
        }
        let counts = serde_json::json!({
            "refused": self.refused, "links": self.links, "special": self.special,
            "denied": self.denied, "large": self.large, "truncated": self.truncated,
            "late": self.late,
        });
        out.write_all(b"S")?;
        out.write_all(counts.to_string().as_bytes())?;
        out.flush()
    }

    /// Reads what [`Walk::write`] wrote, checking it again: relative paths of plain
    /// components only, files within [`MAX_FILE_BYTES`] and [`MAX_BYTES`] in all.
    pub fn read(bytes: &[u8]) -> Result<Walk> {
        let mut walk = Walk::default();
        let mut rest = bytes;
        let mut total = 0u64;
        let take = |rest: &mut &[u8], n: usize| -> Result<Vec<u8>> {
            if rest.len() < n {
                return refuse("cut short");
            }
            let (head, tail) = rest.split_at(n);
            *rest = tail;
            Ok(head.to_vec())
        };
        let length = |rest: &mut &[u8]| -> Result<usize> {
            let b = take(rest, 4)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        loop {
            let tag = take(&mut rest, 1)?;
            match tag[0] {
                b'F' => {
                    let n = length(&mut rest)?;
                    let Ok(path) = String::from_utf8(take(&mut rest, n)?) else {
                        return refuse("a path that is not UTF-8");
                    };
                    if !plain_relative(&path) {
                        return refuse("a path outside the directory");
                    }
                    let n = length(&mut rest)?;
                    total += n as u64;
                    if n as u64 > MAX_FILE_BYTES || total > MAX_BYTES {
                        return refuse("more bytes than its limits");
                    }
                    walk.files.push((path, take(&mut rest, n)?));
                }
                b'S' => {
                    let Ok(counts) = serde_json::from_slice::<serde_json::Value>(rest) else {
                        return refuse("its summary does not parse");
                    };
                    let count = |key: &str| {
                        counts[key]
                            .as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .unwrap_or(0)
                    };
                    walk.refused = counts["refused"].as_str().map(str::to_string);
                    walk.links = count("links");
                    walk.special = count("special");
                    walk.denied = count("denied");
                    walk.large = count("large");
                    walk.truncated = counts["truncated"].as_bool().unwrap_or(false);
                    walk.late = counts["late"].as_bool().unwrap_or(false);
                    return Ok(walk);
                }
                _ => return refuse("it does not parse"),
            }
        }
    }
}

/// Whether `path` is relative and made of plain names only (no `..`, no root, no `.`).
fn plain_relative(path: &str) -> bool {
    !path.is_empty()
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Walks `dir` within the limits of the module documentation, with the rights of the calling
/// process, stopping at `deadline`.
pub fn walk(dir: &Path, deadline: Instant) -> Walk {
    let mut walk = Walk::default();
    let mut total = 0u64;
    let mut seen = 0usize;
    // Breadth first: the directory's own files before those of its folders.
    let mut queue = vec![(dir.to_path_buf(), String::new(), 0usize)];
    let mut next = 0;
    while next < queue.len() {
        let (path, rel, depth) = queue[next].clone();
        next += 1;
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if depth == 0 => {
                walk.refused = Some(match e.kind() {
                    std::io::ErrorKind::PermissionDenied => {
                        "the directory is not readable by the submitting user".into()
                    }
                    std::io::ErrorKind::NotFound => "no such directory".into(),
                    _ => format!("the directory cannot be read ({})", e.kind()),
                });
                return walk;
            }
            Err(_) => {
                walk.denied += 1;
                continue;
            }
        };
        for entry in entries {
            if Instant::now() >= deadline {
                walk.late = true;
                return walk;
            }
            if seen == MAX_ENTRIES {
                walk.truncated = true;
                return walk;
            }
            seen += 1;
            let Ok(entry) = entry else {
                walk.denied += 1;
                continue;
            };
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            let child_rel = if rel.is_empty() {
                name.to_string()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                walk.denied += 1;
                continue;
            };
            if kind.is_symlink() {
                walk.links += 1;
            } else if kind.is_dir() {
                if depth + 1 < MAX_DEPTH && !name.starts_with('.') && !SKIPPED_DIRS.contains(&name)
                {
                    queue.push((entry.path(), child_rel, depth + 1));
                }
            } else if kind.is_file() {
                match read_file(&entry.path(), MAX_BYTES - total) {
                    Got::Bytes(bytes) => {
                        total += bytes.len() as u64;
                        walk.files.push((child_rel, bytes));
                    }
                    Got::Denied => walk.denied += 1,
                    Got::Special => walk.special += 1,
                    Got::Large => walk.large += 1,
                }
            } else if kind.is_fifo()
                || kind.is_socket()
                || kind.is_block_device()
                || kind.is_char_device()
            {
                walk.special += 1;
            }
        }
    }
    walk
}

/// What reading one file gave.
enum Got {
    Bytes(Vec<u8>),
    Denied,
    Special,
    Large,
}

/// Reads the regular file `path` (no final link followed, no blocking), when it has at most
/// [`MAX_FILE_BYTES`] and `left`.
fn read_file(path: &Path, left: u64) -> Got {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let Ok(file) = file else {
        return Got::Denied;
    };
    let Ok(meta) = file.metadata() else {
        return Got::Denied;
    };
    if !meta.is_file() {
        return Got::Special;
    }
    let limit = MAX_FILE_BYTES.min(left);
    if meta.len() > limit {
        return Got::Large;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    if file.take(limit + 1).read_to_end(&mut bytes).is_err() {
        return Got::Denied;
    }
    if bytes.len() as u64 > limit {
        return Got::Large;
    }
    Got::Bytes(bytes)
}

/// Who submitted the job.
#[derive(Debug, Clone, Copy)]
pub struct Submitter {
    /// The user id.
    pub uid: u32,
    /// The group id Slurm gives (used as the primary group when the user belongs to it).
    pub gid: Option<u32>,
}

/// Reads `dir` as `who` may, until `deadline`: by a child process (`reader`) with `who`'s
/// rights when this one runs as root, in this process when it runs as `who` (or `who` is not
/// given); otherwise not at all (the reason is the walk's `refused`).
pub fn read_as(
    dir: &Path,
    who: Option<Submitter>,
    deadline: Instant,
    reader: &Reader,
) -> Result<Walk> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    match who {
        Some(who) if who.uid != euid => {
            if euid != 0 {
                return Ok(Walk {
                    refused: Some(format!(
                        "schedlm runs as uid {euid}, neither root nor the submitting uid {}, and \
                         reads a directory only with the submitter's rights",
                        who.uid
                    )),
                    ..Walk::default()
                });
            }
            read_in_child(dir, who, deadline, reader)
        }
        _ => {
            let (send, receive) = mpsc::channel();
            let owned = dir.to_path_buf();
            std::thread::spawn(move || {
                let _ = send.send(walk(&owned, deadline));
            });
            Ok(receive
                .recv_timeout(deadline.saturating_duration_since(Instant::now()) + GRACE)
                .unwrap_or_else(|_| Walk {
                    late: true,
                    ..Walk::default()
                }))
        }
    }
}

/// How long past the walk's own deadline its answer is awaited (the walk checks the deadline
/// between entries; a read in progress finishes).
const GRACE: Duration = Duration::from_millis(5);

/// The groups of user `uid` from the system's databases (its primary group first), with `gid`
/// as the primary group when the user belongs to it; `None` when the user is unknown.
fn groups_of(uid: u32, gid: Option<u32>) -> Option<(u32, Vec<libc::gid_t>)> {
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, buf is as long as said.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() {
        return None;
    }
    let primary = pwd.pw_gid;
    // SAFETY: pw_name points into buf, NUL-terminated, set by getpwuid_r.
    let name: CString = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) }.to_owned();
    let mut groups = vec![0 as libc::gid_t; 256];
    let mut n = groups.len() as libc::c_int;
    // SAFETY: groups holds n entries; getgrouplist writes at most n and sets n.
    let rc = unsafe { libc::getgrouplist(name.as_ptr(), primary, groups.as_mut_ptr(), &mut n) };
    if rc < 0 {
        groups.truncate(1);
        groups[0] = primary;
    } else {
        groups.truncate(usize::try_from(n).unwrap_or(0));
    }
    let main = gid.filter(|g| groups.contains(g)).unwrap_or(primary);
    Some((main, groups))
}

/// [`read_as`] by a child with `who`'s rights.
fn read_in_child(dir: &Path, who: Submitter, deadline: Instant, reader: &Reader) -> Result<Walk> {
    let Some((gid, groups)) = groups_of(who.uid, who.gid) else {
        return Ok(Walk {
            refused: Some(format!("uid {} is not a known user", who.uid)),
            ..Walk::default()
        });
    };
    let uid = who.uid;
    let left = deadline.saturating_duration_since(Instant::now());
    let mut command = Command::new(&reader.program);
    command
        .args(&reader.args)
        .arg("--time-ms")
        .arg(left.as_millis().max(1).to_string())
        .arg("--dir")
        .arg(dir)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // async-signal-safe functions on memory prepared before the fork.
    unsafe {
        command.pre_exec(move || {
            let fail = || Err(std::io::Error::last_os_error());
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return fail();
            }
            // Nothing the filter inherited (slurmctld's sockets and files) reaches a process
            // the user owns: every descriptor past the standard three closes at exec.
            let all = libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            if all != 0 {
                for fd in 3..65_536 {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            if libc::setgroups(groups.len(), groups.as_ptr()) != 0 {
                return fail();
            }
            if libc::setgid(gid) != 0 {
                return fail();
            }
            if libc::setuid(uid) != 0 {
                return fail();
            }
            Ok(())
        });
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Ok(Walk {
                refused: Some(format!(
                    "the reader could not start as uid {uid} ({})",
                    e.kind()
                )),
                ..Walk::default()
            })
        }
    };
    let Some(stdout) = child.stdout.take() else {
        return refuse("the reader has no output");
    };
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // Frames add at most 9 bytes per file to the files' bytes, plus the summary.
        let limit = MAX_BYTES + 9 * MAX_ENTRIES as u64 + (64 << 10);
        let result = stdout.take(limit).read_to_end(&mut bytes).map(|_| bytes);
        let _ = send.send(result);
    });
    let answer = receive.recv_timeout(left + GRACE);
    let _ = child.kill();
    let _ = child.wait();
    match answer {
        Ok(Ok(bytes)) => Walk::read(&bytes),
        Ok(Err(e)) => Err(io("cannot read the directory reader's answer")(e)),
        Err(_) => Ok(Walk {
            late: true,
            ..Walk::default()
        }),
    }
}

/// The reader's side of [`read_as`] (a [`Reader`] program calls it with its `--dir` and
/// `--time-ms`): walks `dir` for `time_ms` and writes the walk's frames to `out`.
pub fn serve(dir: &Path, time_ms: u64, out: &mut impl Write) -> Result<()> {
    let deadline = Instant::now() + Duration::from_millis(time_ms);
    walk(dir, deadline)
        .write(out)
        .map_err(io("cannot write the directory's files"))
}

/// Writes the walk's files that the extractor reads ([`crate::extract::reads`]:
/// scripts, configs, Python, files that start with `#!`) into `into` (a private folder),
/// checking each path again. The others would give no fact, and writing them costs more than
/// the rest of a fill (a folder of 200,000 data files gives 256 of them to write).
pub fn materialise(walk: &Walk, into: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (rel, bytes) in &walk.files {
        if !plain_relative(rel) {
            return refuse("a path outside the directory");
        }
        if !crate::extract::reads(Path::new(rel), bytes) {
            continue;
        }
        let path = into.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(io(format!("cannot create {}", parent.display())))?;
        }
        std::fs::write(&path, bytes).map_err(io(format!("cannot write {}", path.display())))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    #[test]
    fn only_the_files_the_extractor_reads_are_written() {
        let walk = Walk {
            files: vec![
                ("train.sh".into(), b"python train.py\n".to_vec()),
                ("run".into(), b"#!/bin/bash\ntorchrun train.py\n".to_vec()),
                ("conf/a.yaml".into(), b"lr: 1\n".to_vec()),
                ("model.py".into(), b"LR = 1\n".to_vec()),
                ("data/f1.txt".into(), Vec::new()),
                ("notes".into(), b"lr 1\n".to_vec()),
            ],
            ..Walk::default()
        };
        let into = tempfile::tempdir().unwrap();
        let written = materialise(&walk, into.path()).unwrap();
        let mut names: Vec<String> = written
            .iter()
            .map(|p| p.strip_prefix(into.path()).unwrap().display().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["conf/a.yaml", "model.py", "run", "train.sh"]);
        assert!(!into.path().join("data").exists());
    }

    #[test]
    fn the_walk_reads_small_regular_files_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("train.sh"), "#!/bin/bash\npython train.py\n").unwrap();
        std::fs::create_dir_all(d.join("configs/deep/deeper")).unwrap();
        std::fs::write(d.join("configs/a.yaml"), "lr: 1\n").unwrap();
        std::fs::write(d.join("configs/deep/b.yaml"), "lr: 2\n").unwrap();
        std::fs::write(d.join("configs/deep/deeper/c.yaml"), "lr: 3\n").unwrap();
        std::fs::write(d.join("big.bin"), vec![0u8; MAX_FILE_BYTES as usize + 1]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", d.join("passwd")).unwrap();
        std::os::unix::fs::symlink("train.sh", d.join("inside")).unwrap();
        let fifo = CString::new(d.join("pipe").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let walk = walk(d, later());
        let mut names: Vec<&str> = walk.files.iter().map(|(p, _)| p.as_str()).collect();
        names.sort();
        assert_eq!(names, ["configs/a.yaml", "configs/deep/b.yaml", "train.sh"]);
        assert_eq!((walk.links, walk.special, walk.large), (2, 1, 1));
        let summary = walk.summary().unwrap();
        assert!(
            !summary.contains("passwd") && !summary.contains("big"),
            "{summary}"
        );
        // Through the frames and back.
        let mut bytes = Vec::new();
        walk.write(&mut bytes).unwrap();
        assert_eq!(Walk::read(&bytes).unwrap(), walk);
    }

    #[test]
    fn a_large_directory_is_cut_at_the_entry_limit() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_ENTRIES + 10) {
            std::fs::write(dir.path().join(format!("f{i}.txt")), "x").unwrap();
        }
        let walk = walk(dir.path(), later());
        assert!(walk.truncated);
        assert_eq!(walk.files.len(), MAX_ENTRIES);
        // A deadline already past reads nothing.
        let late = super::walk(dir.path(), Instant::now());
        assert!(late.late && late.files.is_empty());
    }

    #[test]
    fn a_path_out_of_the_directory_is_refused_by_the_parent() {
        let mut bytes = Vec::new();
        let walk = Walk {
            files: vec![("../escape".into(), b"x".to_vec())],
            ..Walk::default()
        };
        walk.write(&mut bytes).unwrap();
        assert!(Walk::read(&bytes).is_err());
        assert!(!plain_relative("/etc/passwd") && !plain_relative("a/../b"));
        assert!(plain_relative("a/b.sh"));
    }

    #[test]
    fn an_unreadable_directory_is_refused_without_its_names() {
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Root reads everything: the child with dropped rights is tested in tests/slurm.rs.
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("private");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(secret.join("secret-model.sh"), "x").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
        let walk = walk(&secret, later());
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(walk.refused.is_some() && walk.files.is_empty());
    }
}
