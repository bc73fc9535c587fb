//! Progress on stderr for runs that take more than a moment: a bar with an ETA on a
//! terminal, a plain line every few seconds otherwise; nothing with `--quiet`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Plain lines (not a terminal) at most this often.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Steps of the bar of one run (its share done, in tenths of a percent).
const RUN_STEPS: u64 = 1000;

/// Progress of `total` runs, or of one run by the share of its work done.
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

    /// Progress of one run by the share of its work done (numabal_sim's `RunProgress`).
    pub fn simulated(cmd: &'static str, quiet: bool) -> Progress {
        Progress::new(
            cmd,
            RUN_STEPS,
            quiet,
            "{elapsed_precise} [{bar:30}] {percent:>3}%, eta {eta} {wide_msg}",
        )
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

    /// Where the run is: the bar at its share done, and in plain lines the simulated
    /// time against the run's expected length (time so far over the share done).
    pub fn simulated_to(&self, p: numabal_sim::RunProgress) {
        let wall = self.start.elapsed().as_secs_f64().max(1e-9);
        let speed = p.t_s / wall;
        self.bar.set_position((p.done * RUN_STEPS as f64) as u64);
        self.bar
            .set_message(format!("{:.0} s simulated, {speed:.1}x real time", p.t_s));
        self.line(
            || {
                let of = if p.done > 0.0 {
                    format!(" of about {:.0}", p.t_s / p.done)
                } else {
                    String::new()
                };
                format!(
                    "{:.0}{of} s simulated ({:.0}% of the work), {speed:.1}x real time",
                    p.t_s,
                    100.0 * p.done
                )
            },
            false,
        );
    }

    /// Clear the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
