//! Progress for long training loops.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar on a terminal; on a pipe (CI logs), about twenty plain
/// `label: step i/n: loss x` lines, the way the lectures print progress.
pub struct Progress {
    total: usize,
    label: String,
    bar: Option<ProgressBar>,
    every: usize,
    silent: bool,
}

impl Progress {
    /// A progress report for `total` steps.
    pub fn new(total: usize, label: &str) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} {msg} ({eta})")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(label.to_string());
            bar
        });
        Progress {
            total,
            label: label.to_string(),
            bar,
            every: (total / 20).max(1),
            silent: false,
        }
    }

    /// A progress report that shows nothing: the other ranks of a
    /// data-parallel run leave the reporting to rank 0.
    pub fn silent(total: usize, label: &str) -> Progress {
        Progress {
            total,
            label: label.to_string(),
            bar: None,
            every: 1,
            silent: true,
        }
    }

    /// Reports that step `step` (0-based) finished with this loss.
    pub fn set(&self, step: usize, loss: f64) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(step as u64 + 1);
                if step.is_multiple_of(100) || step + 1 == self.total {
                    bar.set_message(format!("loss {loss:.4}"));
                }
            }
            None if self.silent => {}
            None => {
                if step.is_multiple_of(self.every) || step + 1 == self.total {
                    println!("{}: step {step}/{}: loss {loss:.4}", self.label, self.total);
                }
            }
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
