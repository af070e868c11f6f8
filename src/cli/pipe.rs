//! A closed standard output ends a command quietly, as it ends `cat` or `ls`.
//!
//! Rust ignores SIGPIPE, so a write to a pipe whose reader has gone (`metachron check
//! DIR | head -1`) fails with EPIPE, and `println!` panics on it. [`guard`] runs a
//! command so that such a failure, whether a `println!` panic or an `io::Error` returned
//! up to `main`, unwinds the command (its temporaries are removed, its locks released
//! by their destructors) and then ends the process by SIGPIPE: the status a shell
//! reports for any producer whose reader left (141 in bash; `set -o pipefail` sees it).
//! Nothing is printed: the reader asked for no more.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the panic hook when it silenced a failed print to a closed standard output.
static SILENCED: AtomicBool = AtomicBool::new(false);

/// Is standard output a pipe with no reader left? (`poll` reports POLLERR on the
/// write end of such a pipe; a terminal, a file or a live pipe never do.)
fn stdout_widowed() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n == 1 && fd.revents & libc::POLLERR != 0
}

/// Does the error, or any of its causes, say that a pipe was closed?
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// End the process as a producer whose reader has gone: by SIGPIPE, default action.
fn die_of_sigpipe() -> ! {
    // SAFETY: restoring the default disposition and raising a signal at ourselves.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Not reached (SIGPIPE's default action ends the process); the conventional status
    // should the signal be blocked.
    std::process::exit(128 + libc::SIGPIPE)
}

/// Run `command`; a closed standard output ends it quietly by SIGPIPE (see the module).
pub fn guard<T>(command: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let default_hook = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        // `println!` panics "failed printing to stdout: Broken pipe (os error 32)" (and
        // a library writing to stdout may `expect` its write): stay quiet when that is
        // what happened; any other panic is reported as usual.
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if metachron::parquet::decoder_panicking() {
            // Caught and reported as an error naming the file.
            return;
        }
        let lower = text.to_ascii_lowercase();
        let pipe = lower.contains("broken pipe") || lower.contains("brokenpipe");
        if pipe && stdout_widowed() {
            SILENCED.store(true, Ordering::SeqCst);
        } else {
            default_hook(info);
        }
    }));
    match panic::catch_unwind(AssertUnwindSafe(command)) {
        Ok(Err(e)) if is_broken_pipe(&e) && stdout_widowed() => die_of_sigpipe(),
        Ok(result) => result,
        Err(_) if SILENCED.load(Ordering::SeqCst) => die_of_sigpipe(),
        Err(payload) => panic::resume_unwind(payload),
    }
}
