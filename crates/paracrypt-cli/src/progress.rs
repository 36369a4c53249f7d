//! Progress on stderr, in one of two shapes:
//!
//! - on a terminal, a bar (indicatif), drawn only once the work has run for
//!   [`BAR_DELAY`] (small work draws nothing) and cleared at its end; never while the output is
//!   a terminal on stdout (decrypting to the screen: the bar would overdraw the plaintext);
//! - anywhere else, with `--progress` only (a batch job's log), plain lines with no escape
//!   codes: a line at each tenth of a known total or [`LINE_EVERY`] after the last line,
//!   whichever comes first, and a final line when the work succeeded, in a stable shape:
//!
//!   ```text
//!   encrypting: 10% 4.77 MiB/47.68 MiB 210.11 MiB/s eta 0s
//!   done: 50000000 bytes (47.68 MiB) in 0.23 s, 207.31 MiB/s
//!   ```
//!
//!   A tree's (or a stream's) total is not known beforehand: its lines, one at the first bytes
//!   and then one every [`LINE_EVERY`], say the bytes so far and the rate
//!   (`encrypting: 12.00 MiB 210.11 MiB/s`). A failure prints no `done:` line (the error line
//!   says what happened).
//!
//! `--quiet` shows neither. A drawn bar is cleared before an error is printed and when the
//! process is interrupted.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use indicatif::{BinaryBytes, HumanDuration, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long work runs before its bar is drawn on a terminal.
pub const BAR_DELAY: Duration = Duration::from_secs(1);

/// The longest time between two plain lines (a line also comes at each tenth of a known total).
pub const LINE_EVERY: Duration = Duration::from_secs(5);

/// Whether to show progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Only when stderr is a terminal (a bar).
    Auto,
    /// Always: a bar on a terminal, plain lines elsewhere.
    Always,
    /// Never.
    Never,
}

impl Show {
    /// From the `--progress` and `--quiet` flags.
    pub fn from_flags(progress: bool, quiet: bool) -> Self {
        match (progress, quiet) {
            (_, true) => Show::Never,
            (true, false) => Show::Always,
            (false, false) => Show::Auto,
        }
    }
}

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes of input.
    Bytes,
    /// Steps of a benchmark (its runs).
    Runs,
}

/// The shape progress takes, decided from [`Show`] and what stderr and stdout are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Nothing.
    Hidden,
    /// A bar on the terminal (stderr).
    Bar,
    /// Plain lines.
    Lines,
}

impl Shape {
    /// The shape for `show`, where `stderr_tty` says whether stderr is a terminal and
    /// `plaintext_tty` whether the output goes to stdout and stdout is a terminal.
    pub fn decide(show: Show, stderr_tty: bool, plaintext_tty: bool) -> Shape {
        match show {
            Show::Never => Shape::Hidden,
            // The bar would be drawn over the output.
            _ if stderr_tty && plaintext_tty => Shape::Hidden,
            _ if stderr_tty => Shape::Bar,
            Show::Always => Shape::Lines,
            Show::Auto => Shape::Hidden,
        }
    }
}

/// When to print the next plain line, and its text: a pure state machine, given the time
/// elapsed since the work began (so that it is tested without a clock).
#[derive(Clone, Debug)]
pub struct Lines {
    label: String,
    unit: Unit,
    total: Option<u64>,
    done: u64,
    /// The next tenth of `total` that prints a line (1 to 9).
    next_tenth: u64,
    /// When the last line was printed (`None`: no line yet).
    last: Option<Duration>,
}

impl Lines {
    /// Lines for work of `total` units (unknown: `None`), each beginning with `label`.
    pub fn new(label: &str, unit: Unit, total: Option<u64>) -> Self {
        Lines {
            label: if label.is_empty() { "working" } else { label }.to_string(),
            unit,
            total,
            done: 0,
            next_tenth: 1,
            last: None,
        }
    }

    /// `n` more units done at `elapsed`: the line to print now, if any. A line comes when a
    /// tenth of a known total is passed or [`LINE_EVERY`] after the last line (an unknown
    /// total: at the first units, then every [`LINE_EVERY`]); none once the whole known total
    /// is done (the final line says it).
    pub fn advance(&mut self, n: u64, elapsed: Duration) -> Option<String> {
        self.done = self.done.saturating_add(n);
        let tenths = self.total.filter(|&t| t > 0).map(|total| {
            u64::try_from(u128::from(self.done.min(total)) * 10 / u128::from(total))
                .expect("at most 10")
        });
        if tenths.is_some_and(|t| t >= 10) {
            return None;
        }
        let tenth_passed = tenths.is_some_and(|t| t >= self.next_tenth);
        let due = match self.last {
            Some(last) => elapsed.saturating_sub(last) >= LINE_EVERY,
            None => self.total.is_none() || elapsed >= LINE_EVERY,
        };
        if !tenth_passed && !due {
            return None;
        }
        if let Some(t) = tenths {
            self.next_tenth = self.next_tenth.max(t + 1);
        }
        self.last = Some(elapsed);
        Some(self.line(elapsed))
    }

    /// The text of a line at `elapsed`.
    fn line(&self, elapsed: Duration) -> String {
        let label = &self.label;
        let secs = elapsed.as_secs_f64().max(0.001);
        let rate = self.done as f64 / secs;
        let eta = |total: u64| {
            let left = total.saturating_sub(self.done) as f64;
            let eta = if rate > 0.0 { left / rate } else { 0.0 };
            HumanDuration(Duration::from_secs_f64(eta.min(1e9)))
        };
        match (self.unit, self.total) {
            (Unit::Bytes, Some(total)) => format!(
                "{label}: {}% {}/{} {}/s eta {}",
                percent(self.done, total),
                BinaryBytes(self.done),
                BinaryBytes(total),
                BinaryBytes(rate as u64),
                eta(total)
            ),
            (Unit::Bytes, None) => format!(
                "{label}: {} {}/s",
                BinaryBytes(self.done),
                BinaryBytes(rate as u64)
            ),
            (Unit::Runs, Some(total)) => format!(
                "{label}: {}% {}/{total} runs eta {}",
                percent(self.done, total),
                self.done,
                eta(total)
            ),
            (Unit::Runs, None) => format!("{label}: {} runs", self.done),
        }
    }

    /// The final line, once the work succeeded at `elapsed` (a stable shape: see the
    /// [module](self)).
    pub fn done_line(&self, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64();
        match self.unit {
            Unit::Bytes => format!(
                "done: {} bytes ({}) in {secs:.2} s, {}/s",
                self.done,
                BinaryBytes(self.done),
                BinaryBytes((self.done as f64 / secs.max(0.001)) as u64)
            ),
            Unit::Runs => format!("done: {} runs in {secs:.2} s", self.done),
        }
    }
}

/// `done` of `total` in whole percent, rounded down.
fn percent(done: u64, total: u64) -> u64 {
    if total == 0 {
        return 100;
    }
    u64::try_from(u128::from(done.min(total)) * 100 / u128::from(total)).expect("at most 100")
}

/// Progress of one piece of work: a bar, plain lines, or nothing (see the [module](self)).
/// Clones share it.
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    /// A bar not drawn yet (waiting for [`BAR_DELAY`]).
    waiting: Option<Arc<AtomicBool>>,
    lines: Option<Arc<Mutex<Lines>>>,
}

impl Progress {
    /// Progress of `total` units (unknown: `None`) labelled `label`, shown as `show` says;
    /// `to_stdout`: the work's output goes to stdout.
    pub fn new(show: Show, total: Option<u64>, label: &str, unit: Unit, to_stdout: bool) -> Self {
        let shape = Shape::decide(
            show,
            std::io::stderr().is_terminal(),
            to_stdout && std::io::stdout().is_terminal(),
        );
        let bar = match shape {
            Shape::Hidden | Shape::Lines => ProgressBar::hidden(),
            Shape::Bar => {
                let template = match (unit, total) {
                    (Unit::Bytes, Some(_)) => {
                        "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}"
                    }
                    (Unit::Bytes, None) => "{msg} {spinner} {binary_bytes} {binary_bytes_per_sec}",
                    (Unit::Runs, _) => "{msg} [{bar:30}] {pos}/{len} eta {eta}",
                };
                ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden()).with_style(
                    ProgressStyle::with_template(template)
                        .expect("valid template")
                        .progress_chars("=> "),
                )
            }
        };
        let bar = bar.with_message(label.to_string());
        crate::interrupt::pending().set_bar(bar.clone());
        Progress {
            bar,
            waiting: (shape == Shape::Bar).then(|| Arc::new(AtomicBool::new(true))),
            lines: (shape == Shape::Lines)
                .then(|| Arc::new(Mutex::new(Lines::new(label, unit, total)))),
        }
    }

    /// Sets the bar's label (the lines keep theirs).
    pub fn set_message(&self, message: impl Into<std::borrow::Cow<'static, str>>) {
        self.bar.set_message(message);
    }

    /// `n` more units done.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
        if let Some(waiting) = &self.waiting
            && self.bar.elapsed() >= BAR_DELAY
            && waiting.swap(false, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
        if let Some(lines) = &self.lines {
            let line = lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .advance(n, self.bar.elapsed());
            if let Some(line) = line {
                crate::exit::say!("{line}");
            }
        }
    }

    /// The work succeeded: the bar is cleared, the plain lines end with the `done:` line.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
        if let Some(lines) = &self.lines {
            let line = lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .done_line(self.bar.elapsed());
            crate::exit::say!("{line}");
        }
    }

    /// The work failed or stopped: the bar is cleared, no `done:` line.
    pub fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_terminal_gets_a_bar_and_a_file_lines_only_when_asked() {
        assert_eq!(Shape::decide(Show::Auto, true, false), Shape::Bar);
        assert_eq!(Shape::decide(Show::Always, true, false), Shape::Bar);
        assert_eq!(Shape::decide(Show::Auto, false, false), Shape::Hidden);
        assert_eq!(Shape::decide(Show::Always, false, false), Shape::Lines);
        assert_eq!(Shape::decide(Show::Never, true, false), Shape::Hidden);
        assert_eq!(Shape::decide(Show::Never, false, false), Shape::Hidden);
    }

    #[test]
    fn no_bar_over_output_on_the_terminal() {
        assert_eq!(Shape::decide(Show::Auto, true, true), Shape::Hidden);
        assert_eq!(Shape::decide(Show::Always, true, true), Shape::Hidden);
        // stderr into a log while the plaintext is on the screen: the log gets its lines.
        assert_eq!(Shape::decide(Show::Always, false, true), Shape::Lines);
    }

    #[test]
    fn a_line_at_each_tenth_of_a_known_total() {
        let mut lines = Lines::new("encrypting", Unit::Bytes, Some(100 * MIB));
        assert_eq!(lines.advance(5 * MIB, secs(0.1)), None);
        let first = lines.advance(5 * MIB, secs(0.2)).expect("10 %");
        assert!(
            first.starts_with("encrypting: 10% 10.00 MiB/100.00 MiB "),
            "{first}"
        );
        assert!(first.contains(" MiB/s eta "), "{first}");
        assert_eq!(lines.advance(MIB, secs(0.3)), None);
        // Past two tenths at once: one line.
        let line = lines.advance(25 * MIB, secs(0.4)).expect("36 %");
        assert!(line.starts_with("encrypting: 36% "), "{line}");
        assert_eq!(
            lines.advance(3 * MIB, secs(0.5)),
            None,
            "39 %: no new tenth"
        );
        assert!(lines.advance(MIB, secs(0.6)).is_some(), "40 %");
    }

    #[test]
    fn a_line_after_five_seconds_without_one() {
        let mut lines = Lines::new("decrypting", Unit::Bytes, Some(1000 * MIB));
        assert_eq!(lines.advance(MIB, secs(4.9)), None);
        let line = lines.advance(MIB, secs(5.0)).expect("5 s");
        assert!(
            line.starts_with("decrypting: 0% 2.00 MiB/1000.00 MiB "),
            "{line}"
        );
        assert_eq!(lines.advance(MIB, secs(9.9)), None);
        assert!(lines.advance(MIB, secs(10.0)).is_some());
    }

    #[test]
    fn an_unknown_total_gets_a_line_at_its_first_bytes_then_every_five_seconds() {
        let mut lines = Lines::new("encrypting", Unit::Bytes, None);
        assert_eq!(
            lines.advance(MIB, secs(1.0)).as_deref(),
            Some("encrypting: 1.00 MiB 1.00 MiB/s")
        );
        assert_eq!(lines.advance(99 * MIB, secs(5.9)), None);
        assert_eq!(
            lines.advance(100 * MIB, secs(6.0)).as_deref(),
            Some("encrypting: 200.00 MiB 33.33 MiB/s")
        );
        assert_eq!(lines.advance(MIB, secs(7.0)), None);
    }

    #[test]
    fn no_line_once_all_is_done_and_small_work_prints_only_the_final_line() {
        let mut lines = Lines::new("decrypting", Unit::Bytes, Some(135));
        assert_eq!(lines.advance(135, secs(0.001)), None);
        assert_eq!(
            lines.advance(0, secs(60.0)),
            None,
            "done: the final line says it"
        );
        assert_eq!(
            lines.done_line(secs(0.5)),
            "done: 135 bytes (135 B) in 0.50 s, 270 B/s"
        );
    }

    #[test]
    fn the_final_line() {
        let mut lines = Lines::new("encrypting", Unit::Bytes, Some(50_000_000));
        lines.advance(50_000_000, secs(0.25));
        assert_eq!(
            lines.done_line(secs(0.25)),
            "done: 50000000 bytes (47.68 MiB) in 0.25 s, 190.73 MiB/s"
        );
        // Work that took no measurable time has a rate all the same.
        let empty = Lines::new("decrypting", Unit::Bytes, Some(0));
        assert_eq!(
            empty.done_line(Duration::ZERO),
            "done: 0 bytes (0 B) in 0.00 s, 0 B/s"
        );
    }

    #[test]
    fn runs_are_counted_as_runs() {
        let mut lines = Lines::new("benchmarking", Unit::Runs, Some(4));
        let line = lines.advance(1, secs(1.0)).expect("25 %");
        assert!(
            line.starts_with("benchmarking: 25% 1/4 runs eta "),
            "{line}"
        );
        lines.advance(3, secs(4.0));
        assert_eq!(lines.done_line(secs(4.0)), "done: 4 runs in 4.00 s");
    }
}
