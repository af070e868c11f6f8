//! The one way the program writes a file: datasets, metrics, time series, pictures,
//! GIFs, report pages, benchmarks, summaries, manifests, locks.
//!
//! - An existing path that is not a regular file is refused, naming what it is: a
//!   directory, a device node, a FIFO, a socket, or a symbolic link (a link is never
//!   followed and never replaced, whatever it points to).
//! - The bytes go to a hidden temporary in the same directory (`.name.tmp-<pid>`,
//!   created exclusively, never through a link), are synced to disk, and the temporary
//!   is renamed onto the name. A write that fails (a full disk, a file size limit)
//!   leaves no file under the name and no temporary.
//! - A lock file is opened without following a link and must be a regular file.
//!
//! tests/suite/architecture.rs checks that no other module creates, renames or opens a
//! file for writing.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::OutputError;

fn io_err(path: &Path, source: std::io::Error) -> OutputError {
    OutputError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// What an existing path is, in words, when it is not a regular file.
fn not_regular(ft: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_file() {
        None
    } else if ft.is_symlink() {
        Some("a symbolic link")
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// `Ok` when `target` does not exist or is a regular file; otherwise an error naming
/// the path and what it is. A symbolic link is judged itself, never what it points to.
pub fn check_target(target: &Path) -> Result<(), OutputError> {
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(target, e)),
        Ok(m) => match not_regular(m.file_type()) {
            None => Ok(()),
            Some(what) => Err(io_err(
                target,
                std::io::Error::other(format!(
                    "is {what}: outputs are written only to a new path or over a regular \
                     file (never through a link, a device or a pipe); give a file name"
                )),
            )),
        },
    }
}

/// A new file at `path`, created exclusively (an existing name, a link included, is an
/// error) and never through a symbolic link.
fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
}

/// A file being written under a hidden temporary name beside its target, renamed
/// onto the target when complete and removed when dropped unfinished. Creating it
/// proves the target acceptable (see [`check_target`]) and its directory writable
/// before any work is done; every error names the target, never the temporary.
pub struct PendingFile {
    target: PathBuf,
    /// The temporary; empty once committed.
    tmp: PathBuf,
    file: Option<File>,
}

impl PendingFile {
    /// Check `target` and create its temporary. Temporaries of the same target left by
    /// dead processes are removed.
    pub fn create(target: &Path) -> Result<PendingFile, OutputError> {
        check_target(target)?;
        let parent = parent_of(target);
        if !parent.is_dir() {
            return Err(io_err(
                target,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the directory {} does not exist", parent.display()),
                ),
            ));
        }
        remove_dead_temporaries(target);
        let tmp = temp_path(target);
        // A temporary of this process left by an earlier target of the same name.
        if std::fs::symlink_metadata(&tmp).is_ok_and(|m| m.file_type().is_file()) {
            let _ = std::fs::remove_file(&tmp);
        }
        let file = create_new(&tmp).map_err(|e| io_err(target, e))?;
        Ok(PendingFile {
            target: target.to_path_buf(),
            tmp,
            file: Some(file),
        })
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// A handle on the open temporary, for a writer (this keeps its own, to sync it).
    pub fn take_file(&mut self) -> Result<File, OutputError> {
        match &self.file {
            Some(f) => f.try_clone().map_err(|e| io_err(&self.target, e)),
            None => Err(io_err(
                &self.target,
                std::io::Error::other("already committed"),
            )),
        }
    }

    /// Sync to disk and rename onto the target (checked again: a link or a device put
    /// there meanwhile is refused, and the temporary removed).
    pub fn commit(mut self) -> Result<(), OutputError> {
        if let Some(f) = self.file.take() {
            f.sync_all().map_err(|e| io_err(&self.target, e))?;
        }
        check_target(&self.target)?;
        std::fs::rename(&self.tmp, &self.target).map_err(|e| io_err(&self.target, e))?;
        self.tmp = PathBuf::new();
        // The rename itself made durable (best effort: not every filesystem syncs a
        // directory).
        if let Ok(d) = File::open(parent_of(&self.target)) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Write `bytes` to `path` through a [`PendingFile`].
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut pending = PendingFile::create(path)?;
    let mut f = pending.take_file()?;
    f.write_all(bytes).map_err(|e| io_err(path, e))?;
    drop(f);
    pending.commit()
}

/// Write `bytes` to `path` only if nothing is there yet, appearing whole (a hard link
/// from a synced temporary: it fails when the name exists, a link included). The
/// error of a name already taken has kind `AlreadyExists`.
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temp_path(path);
    if std::fs::symlink_metadata(&tmp).is_ok_and(|m| m.file_type().is_file()) {
        let _ = std::fs::remove_file(&tmp);
    }
    let written = (|| {
        let mut f = create_new(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::hard_link(&tmp, path)
    })();
    let _ = std::fs::remove_file(&tmp);
    written
}

/// Move the regular file `from` to the new name `to` (same filesystem), refusing a `to`
/// that exists. `from` being gone already is `Ok(false)`.
pub fn move_file(from: &Path, to: &Path) -> Result<bool, OutputError> {
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(io_err(
            to,
            std::io::Error::new(std::io::ErrorKind::AlreadyExists, "already exists"),
        ));
    }
    match std::fs::symlink_metadata(from) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io_err(from, e)),
        Ok(m) if !m.file_type().is_file() => return check_target(from).map(|_| false),
        Ok(_) => {}
    }
    match std::fs::rename(from, to) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err(from, e)),
    }
}

/// Open (creating if missing) the lock file `path` for reading and writing, never
/// through a symbolic link, and only if it is a regular file. Its contents are kept.
pub fn open_lock(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                std::io::Error::other("is a symbolic link: a lock file is never followed")
            } else {
                e
            }
        })?;
    if let Some(what) = not_regular(file.metadata()?.file_type()) {
        return Err(std::io::Error::other(format!(
            "is {what}: a lock file must be a regular file"
        )));
    }
    Ok(file)
}

/// Create the directory `dir` and its missing parents.
pub fn create_dir_all(dir: &Path) -> Result<(), OutputError> {
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))
}

fn parent_of(target: &Path) -> &Path {
    target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// `dir/.name.tmp-<pid>`: same filesystem as the target, hidden from `*.parquet` globs.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Remove `.name.tmp-<pid>` files of `target` whose process no longer exists (a
/// killed writer's leftovers). Only where `/proc` tells which processes live.
fn remove_dead_temporaries(target: &Path) {
    let Some(name) = target.file_name() else {
        return;
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    let prefix = format!(".{}.tmp-", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(parent_of(target)) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = n.strip_prefix(&prefix).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let regular = e.file_type().is_ok_and(|t| t.is_file());
        if regular && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "metachron-output-file-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn mkfifo(p: &Path) {
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn refuses_links_fifos_directories_and_leaves_them_alone() {
        let d = scratch("refuse");
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        for (p, what) in [(&link, "symbolic link"), (&fifo, "FIFO"), (&d, "directory")] {
            let e = write_bytes(p, b"x").unwrap_err().to_string();
            assert!(
                e.contains(what) && e.contains(&p.display().to_string()),
                "{e}"
            );
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        // A lock through a link or on a FIFO is refused (and opening it does not block).
        assert!(open_lock(&link)
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        assert!(open_lock(&fifo).unwrap_err().to_string().contains("FIFO"));
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        // A regular file is replaced whole; no temporary stays.
        write_bytes(&victim, b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn write_new_never_replaces() {
        let d = scratch("new");
        let p = d.join("m.json");
        write_new(&p, b"one").unwrap();
        let e = write_new(&p, b"two").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        let _ = std::fs::remove_dir_all(&d);
    }
}
