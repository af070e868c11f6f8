//! One writer per shard: an advisory lock (`flock`) on `DIR/shard=K/.writer.lock`,
//! held for the whole run and released by the kernel when the process ends however it
//! ends. The file names its holder (pid, host, start time) for the error a second
//! writer gets.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Name of the lock file inside a shard's directory.
pub const LOCK_FILE: &str = ".writer.lock";

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "{path} is locked by another writer ({holder}): one sweep writes a shard at a time; \
         wait for it, or stop it and run again with --resume"
    )]
    Held { path: String, holder: String },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct ShardLock {
    _file: File,
    pub path: PathBuf,
}

/// Take the lock of the shard directory `shard_dir` (created if missing), at once or
/// not at all.
pub fn lock_shard(shard_dir: &Path) -> Result<ShardLock, LockError> {
    let path = shard_dir.join(LOCK_FILE);
    let io = |source| LockError::Io {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(shard_dir).map_err(io)?;
    // Never through a link, never a device or a pipe: the lock's holder line is
    // written into it.
    let mut file = crate::output_file::open_lock(&path).map_err(io)?;
    // flock(2), exclusive, non-blocking (std's File::try_lock needs Rust 1.89).
    // SAFETY: the descriptor is open and owned by `file` for the whole call.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    let err = std::io::Error::last_os_error();
    match rc {
        0 => {}
        _ if err.kind() == std::io::ErrorKind::WouldBlock => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(LockError::Held {
                path: path.display().to_string(),
                holder: if holder.is_empty() {
                    "holder not yet recorded".into()
                } else {
                    holder.to_string()
                },
            });
        }
        _ => return Err(io(err)),
    }
    let who = format!(
        "pid {}, host {}, started {}",
        std::process::id(),
        hostname(),
        utc_now()
    );
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    file.write_all(who.as_bytes()).map_err(io)?;
    file.flush().map_err(io)?;
    Ok(ShardLock { _file: file, path })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Now as `YYYY-MM-DD HH:MM:SS UTC` (civil date from days since 1970, Hinnant's method).
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
