//! Everything the command prints on standard output goes through [`out!`] and [`outln!`]
//! (`println!` and `print!` are refused by clippy in this crate, see its `clippy.toml`).
//!
//! A reader that stops reading (`numabal list | head -1`) closes the pipe; the next write
//! fails with `EPIPE` (Rust ignores `SIGPIPE`). The command then ends quietly with status 0,
//! as ripgrep does: the reader had what it wanted, and `set -o pipefail` scripts do not
//! fail for it. Any other write error (a full disk behind a redirect) is reported in one
//! line with status 1. The daemon is the one command that must not stop without cleaning
//! up: its decision log treats a closed pipe as a stop request instead (`daemon.rs`).

use std::cell::RefCell;
use std::io::Write;

thread_local! {
    /// Text written while [`capture`] runs on this thread, instead of standard output.
    static CAPTURED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// What `f` prints, as text (the library's callers, the Python package, get a command's
/// tables without a terminal). Printing is done on the calling thread, so a capture
/// sees all of it.
pub fn capture(f: impl FnOnce()) -> String {
    let before = CAPTURED.with(|c| c.borrow_mut().replace(String::new()));
    f();
    CAPTURED
        .with(|c| std::mem::replace(&mut *c.borrow_mut(), before))
        .unwrap_or_default()
}

/// Write to standard output, or end the process as described above.
pub fn write(args: std::fmt::Arguments<'_>) {
    let taken = CAPTURED.with(|c| match c.borrow_mut().as_mut() {
        Some(s) => {
            use std::fmt::Write as _;
            let _ = s.write_fmt(args);
            true
        }
        None => false,
    });
    if taken {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        gone(&e);
    }
}

/// Standard output failed: quiet status 0 for a closed pipe, one line and status 1 else.
pub fn gone(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("numabal: standard output: {e}");
    std::process::exit(1);
}

/// `print!` through [`write`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::write(format_args!($($arg)*)) };
}

/// `println!` through [`write`].
macro_rules! outln {
    () => { $crate::stdout::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*))) };
}
