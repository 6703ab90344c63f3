//! Where progress bars draw (feature `progress`): in place on a terminal; one line per update,
//! at most one a second, when standard error is a file or a pipe (a log, CI), so a log holds
//! readable lines instead of redraws joined by carriage returns.

use std::io::{self, IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `-q/--quiet` and `--progress` of every command that can take more than a few seconds: the
/// one place that decides whether progress (bars, progress lines, summaries) goes to standard
/// error. Warnings and errors always do.
#[derive(Debug, Clone, Copy, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct ProgressArgs {
    /// Print nothing on standard error but warnings and errors (no progress bar, no summary).
    #[cfg_attr(feature = "clap", arg(short = 'q', long))]
    pub quiet: bool,
    /// Show progress even when standard error is not a terminal (a log file, CI): the bar is
    /// then written as one line per update, at most one a second.
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "quiet"))]
    pub progress: bool,
}

impl ProgressArgs {
    /// Whether progress is shown: not `--quiet`, and `--progress` or a terminal.
    pub fn shown(&self) -> bool {
        !self.quiet && (self.progress || io::stderr().is_terminal())
    }

    /// A progress bar of `len` steps with `template` (indicatif's syntax): hidden unless
    /// [`ProgressArgs::shown`]; drawn in place on a terminal, as lines otherwise
    /// ([`draw_target`]).
    pub fn bar(&self, len: u64, template: &str) -> indicatif::ProgressBar {
        if !self.shown() {
            return indicatif::ProgressBar::hidden();
        }
        let style = indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        indicatif::ProgressBar::with_draw_target(Some(len), draw_target()).with_style(style)
    }

    /// `eprintln!` of a progress message or summary, unless `--quiet`.
    pub fn say(&self, message: std::fmt::Arguments<'_>) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }
}

/// Shortest time between two progress lines written to a non-terminal.
pub const LINE_INTERVAL: Duration = Duration::from_secs(1);

/// The draw target of every progress bar of schedlm: standard error redrawn in place when it
/// is a terminal, else [`LineTerm`].
pub fn draw_target() -> indicatif::ProgressDrawTarget {
    if io::stderr().is_terminal() {
        indicatif::ProgressDrawTarget::stderr()
    } else {
        indicatif::ProgressDrawTarget::term_like_with_hz(Box::new(LineTerm::default()), 1)
    }
}

/// A progress bar's "terminal" when standard error is not one: each redraw is one
/// newline-terminated line, and redraws within [`LINE_INTERVAL`] of the last line written are
/// left out, except the last one, written when the bar is dropped (so a log ends with the
/// final count). Cursor moves, carriage returns and the blanks that pad a bar to the
/// terminal's width are not written.
#[derive(Debug, Default)]
pub struct LineTerm {
    last: Mutex<Option<Instant>>,
    /// The latest line left out, written on drop.
    pending: Mutex<Option<String>>,
}

impl Drop for LineTerm {
    fn drop(&mut self) {
        if let Ok(pending) = self.pending.get_mut() {
            if let Some(text) = pending.take() {
                let _ = writeln!(io::stderr(), "{text}");
            }
        }
    }
}

impl LineTerm {
    /// Whether a line may be written now (and notes that one is).
    fn due(&self) -> bool {
        let Ok(mut last) = self.last.lock() else {
            return false;
        };
        let now = Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < LINE_INTERVAL) {
            return false;
        }
        *last = Some(now);
        true
    }

    fn line(&self, s: &str) -> io::Result<()> {
        let text = s.trim_matches(|c: char| c.is_whitespace());
        if text.is_empty() {
            return Ok(());
        }
        let due = self.due();
        if let Ok(mut pending) = self.pending.lock() {
            *pending = (!due).then(|| text.to_string());
        }
        if !due {
            return Ok(());
        }
        writeln!(io::stderr(), "{text}")
    }
}

impl indicatif::TermLike for LineTerm {
    fn width(&self) -> u16 {
        100
    }
    fn move_cursor_up(&self, _n: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _n: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _n: usize) -> io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _n: usize) -> io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> io::Result<()> {
        self.line(s)
    }
    fn write_str(&self, s: &str) -> io::Result<()> {
        self.line(s)
    }
    fn clear_line(&self) -> io::Result<()> {
        Ok(())
    }
    fn flush(&self) -> io::Result<()> {
        io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval() {
        let term = LineTerm::default();
        assert!(term.due());
        assert!(!term.due(), "a second line within the interval");
        *term.last.lock().unwrap() = Some(Instant::now() - LINE_INTERVAL);
        assert!(term.due());
    }
}
