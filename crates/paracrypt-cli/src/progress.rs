//! Progress bars on stderr (indicatif): shown for long work when stderr is a terminal, forced
//! with `--progress`, silenced with `--quiet`; never drawn into a pipe by default. A drawn bar is
//! cleared before an error is printed and when the process is interrupted.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether to draw a bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Only when stderr is a terminal.
    Auto,
    /// Always.
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

/// A bar for `total` bytes (a byte counter when the total is unknown), or a hidden bar.
pub fn bar(show: Show, total: Option<u64>, label: &str) -> ProgressBar {
    let target = match show {
        Show::Never => return ProgressBar::hidden(),
        Show::Auto if !std::io::stderr().is_terminal() => return ProgressBar::hidden(),
        Show::Auto => ProgressDrawTarget::stderr(),
        // indicatif hides its stderr target when stderr is not a terminal: draw anyway.
        Show::Always => ProgressDrawTarget::term_like_with_hz(Box::new(console::Term::stderr()), 4),
    };
    let bar = match total {
        Some(total) => ProgressBar::with_draw_target(Some(total), target).with_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} eta {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        ),
        None => ProgressBar::with_draw_target(None, target).with_style(
            ProgressStyle::with_template("{msg} {spinner} {binary_bytes} {binary_bytes_per_sec}")
                .expect("valid template"),
        ),
    };
    let bar = bar.with_message(label.to_string());
    crate::interrupt::pending().set_bar(bar.clone());
    bar
}
