//! Progress on rank 0's stderr: a bar, the current entry and the time left.
//!
//! The estimate of the time left is the mean time per finished job times the
//! jobs left: the job order is shuffled, so the finished jobs are a fair
//! sample of the remaining ones. Quiet when stderr is not a terminal or with
//! `--quiet`.

use std::io::{IsTerminal, Write};

pub struct Progress {
    enabled: bool,
    total: usize,
    start: f64,
    last_len: usize,
}

fn now() -> f64 {
    crate::clock::raw_now()
}

pub fn fmt_duration(s: f64) -> String {
    if !s.is_finite() {
        return "?".into();
    }
    let s = s.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s / 60) % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

fn is_terminal(path: &std::path::Path) -> bool {
    std::fs::read_link(path)
        .map(|t| {
            let t = t.to_string_lossy();
            t.starts_with("/dev/pts/") || t.starts_with("/dev/tty")
        })
        .unwrap_or(false)
}

/// Whether the user sees stderr on a terminal. Under `mpirun` a rank's
/// stderr is a pipe to the launcher, which forwards it: then the launcher's
/// stderr decides (parent and grandparent, for a daemon in between).
fn stderr_is_terminal() -> bool {
    if std::io::stderr().is_terminal() {
        return true;
    }
    // SAFETY: getppid takes nothing and cannot fail.
    let mut pid = unsafe { libc::getppid() };
    for _ in 0..2 {
        if pid <= 1 {
            break;
        }
        if is_terminal(std::path::Path::new(&format!("/proc/{pid}/fd/2"))) {
            return true;
        }
        // Field 4 of /proc/PID/stat is the parent (after the parenthesized name).
        pid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(0);
    }
    false
}

impl Progress {
    pub fn new(total: usize, quiet: bool) -> Progress {
        let tty = !quiet && stderr_is_terminal();
        Progress {
            enabled: tty && !quiet,
            total,
            start: now(),
            last_len: 0,
        }
    }

    /// `done` jobs finished (out of the total), `current` is starting.
    pub fn update(&mut self, done: usize, current: &str) {
        if !self.enabled {
            return;
        }
        let elapsed = now() - self.start;
        let eta = if done > 0 {
            elapsed / done as f64 * (self.total - done) as f64
        } else {
            f64::NAN
        };
        let width = 30;
        let filled = (done * width).checked_div(self.total).unwrap_or(width);
        let bar: String = "#".repeat(filled) + &".".repeat(width - filled);
        let line = format!(
            "[{bar}] {done}/{} {current}  elapsed {} left ~{}",
            self.total,
            fmt_duration(elapsed),
            fmt_duration(eta)
        );
        let pad = self.last_len.saturating_sub(line.len());
        self.last_len = line.len();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}{}", " ".repeat(pad));
        let _ = err.flush();
    }

    pub fn finish(&mut self) {
        if self.enabled && self.last_len > 0 {
            let _ = writeln!(std::io::stderr());
        }
    }
}
