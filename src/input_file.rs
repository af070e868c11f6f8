//! Reading a sweep or config file: a few KB of TOML, read with a size limit so that a
//! wrong path (a device such as /dev/zero, a FIFO, a dataset, a log) fails at once
//! instead of blocking or filling memory. Every file read from the user goes through
//! [`open_regular`].

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `path` opened for reading, refused at once unless it is a regular file (after
/// links): a FIFO is opened without waiting for a writer and refused, a device or a
/// directory likewise, so a wrong path never blocks or streams forever.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let ft = file.metadata()?.file_type();
    if !ft.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if ft.is_dir() {
            "a directory"
        } else if ft.is_fifo() {
            "a FIFO (named pipe)"
        } else if ft.is_char_device() || ft.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {what}: only a regular file is read"),
        ));
    }
    // Reads block as usual from here on (O_NONBLOCK only kept the open from waiting).
    // SAFETY: the descriptor is open and owned by `file` for the whole call.
    unsafe {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(file)
}

/// Largest sweep or config file read (bytes): 4 MiB, a thousand times a large sweep file.
pub const MAX_INPUT_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of `path`, refused when it is larger than [`MAX_INPUT_FILE_BYTES`] or not
/// UTF-8 (the error says which; the caller names the file).
pub fn read_limited(path: &Path) -> std::io::Result<String> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_INPUT_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than the {} MiB allowed for a sweep or config file (a TOML file of \
                 a few KB): is it the right file?",
                MAX_INPUT_FILE_BYTES / (1024 * 1024)
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not UTF-8 text (a sweep or config file is TOML)",
        )
    })
}
