//! Progress on stderr for runs that take more than a moment: a bar with an ETA on a
//! terminal, a plain line every few seconds otherwise; nothing with `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Plain lines (not a terminal) at most this often.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Progress of `total` runs (`total` 0: one run, counted in simulated seconds).
pub struct Progress {
    bar: ProgressBar,
    plain: bool,
    cmd: &'static str,
    total: u64,
    done: AtomicU64,
    start: Instant,
    last_line: Mutex<Instant>,
}

impl Progress {
    /// Progress of `total` runs of `cmd`.
    pub fn runs(cmd: &'static str, total: u64, quiet: bool) -> Progress {
        Progress::new(
            cmd,
            total,
            quiet,
            "{elapsed_precise} [{bar:30}] {pos}/{len} runs, eta {eta} {wide_msg}",
        )
    }

    /// Progress of one run, in simulated seconds.
    pub fn simulated(cmd: &'static str, quiet: bool) -> Progress {
        Progress::new(cmd, 0, quiet, "{elapsed_precise} {spinner} {wide_msg}")
    }

    fn new(cmd: &'static str, total: u64, quiet: bool, template: &str) -> Progress {
        let target = if quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target((total > 0).then_some(total), target);
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        let plain = !quiet && bar.is_hidden();
        Progress {
            bar,
            plain,
            cmd,
            total,
            done: AtomicU64::new(0),
            start: Instant::now(),
            last_line: Mutex::new(Instant::now()),
        }
    }

    /// A plain line if one is due (or `last`).
    fn line(&self, text: impl FnOnce() -> String, last: bool) {
        if !self.plain {
            return;
        }
        if let Ok(mut t) = self.last_line.lock()
            && (last || t.elapsed() >= PLAIN_EVERY)
        {
            *t = Instant::now();
            eprintln!(
                "numabal {}: {} ({:.0} s)",
                self.cmd,
                text(),
                self.start.elapsed().as_secs_f64()
            );
        }
    }

    /// One run done; `what` names it.
    pub fn run_done(&self, what: &str) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        self.bar.inc(1);
        self.bar.set_message(what.to_string());
        self.line(|| format!("{n}/{} runs done", self.total), n == self.total);
    }

    /// The run has simulated `t_s` seconds.
    pub fn simulated_to(&self, t_s: f64) {
        let wall = self.start.elapsed().as_secs_f64().max(1e-9);
        let msg = || format!("{t_s:.0} s simulated, {:.1}x real time", t_s / wall);
        self.bar.set_message(msg());
        self.bar.tick();
        self.line(msg, false);
    }

    /// Clear the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
