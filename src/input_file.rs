//! Reading a sweep or config file: a few KB of TOML, read with a size limit so that a
//! wrong path (a device such as /dev/zero, a dataset, a log) fails at once instead of
//! filling memory.

use std::io::Read;
use std::path::Path;

/// Largest sweep or config file read (bytes): 4 MiB, a thousand times a large sweep file.
pub const MAX_INPUT_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of `path`, refused when it is larger than [`MAX_INPUT_FILE_BYTES`] or not
/// UTF-8 (the error says which; the caller names the file).
pub fn read_limited(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
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
