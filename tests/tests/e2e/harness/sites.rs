//! Sites of a record, assertions on times, shared fixtures and the delays
//! examples report having injected.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use mpiover_common::record::{Entry, Record, Site};

use crate::harness::job::Outcome;

pub fn site(r: &Record, id: u32) -> Option<&Site> {
    r.sites.iter().find(|s| s.id == id)
}

/// Whether a site is `file:line` (file compared by name: the debug info may
/// hold a relative or an absolute path).
pub fn site_is(s: &Site, file: &str, line: u32) -> bool {
    s.line == Some(line) && s.file.as_deref().is_some_and(|f| file_is(f, file))
}

pub fn file_is(path: &str, file: &str) -> bool {
    Path::new(path).file_name().and_then(|n| n.to_str()) == Some(file)
}

pub fn describe_site(r: &Record, id: u32) -> String {
    match site(r, id) {
        Some(s) => format!(
            "{}:{} in {} ({} {})",
            s.file.as_deref().unwrap_or("?"),
            s.line.map(|l| l.to_string()).unwrap_or_else(|| "?".into()),
            s.function.as_deref().unwrap_or("?"),
            s.module.as_deref().unwrap_or("?"),
            s.offset.as_deref().unwrap_or("?"),
        ),
        None => format!("<site {id}>"),
    }
}

/// Entries of `function` whose site is `file:line`.
pub fn entries_at<'a>(r: &'a Record, function: &str, file: &str, line: u32) -> Vec<&'a Entry> {
    r.entries
        .iter()
        .filter(|e| e.function == function)
        .filter(|e| site(r, e.site).is_some_and(|s| site_is(s, file, line)))
        .collect()
}

/// Sites by total time over all their entries, largest first: (site id, seconds).
pub fn sites_by_time(r: &Record) -> Vec<(u32, f64)> {
    let mut by: BTreeMap<u32, f64> = BTreeMap::new();
    for e in &r.entries {
        if e.function != "other" {
            *by.entry(e.site).or_default() += e.sum_s;
        }
    }
    let mut v: Vec<(u32, f64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// Human-readable summary of a record's sites, for failure messages.
pub fn dump_sites(r: &Record) -> String {
    let mut s = format!("rank {} sites by time:\n", r.rank);
    for (id, t) in sites_by_time(r).iter().take(12) {
        let fns: Vec<String> = r
            .entries
            .iter()
            .filter(|e| e.site == *id)
            .map(|e| format!("{} x{} {}B peer {:?}", e.function, e.count, e.bytes, e.peer))
            .collect();
        s += &format!(
            "  {:9.3} ms  {}  [{}]\n",
            t * 1e3,
            describe_site(r, *id),
            fns.join(", ")
        );
    }
    s
}

/// Asserts `actual` is within `rel` (relative) of `expected`. The finding is
/// said again after the context: a CI log that keeps only a failure's head and
/// tail still shows it.
pub fn assert_close(what: &str, actual: f64, expected: f64, rel: f64, context: &str) {
    let finding = format!(
        "{what}: {:.3} ms, expected {:.3} ms +- {:.0} %",
        actual * 1e3,
        expected * 1e3,
        rel * 100.0
    );
    assert!(
        (actual - expected).abs() <= rel * expected,
        "{finding}\n{context}\n{finding}"
    );
}

/// A value computed once and shared by several tests (a run they all look
/// at). If computing it panicked, every test using it fails with that message
/// instead of re-running the job.
pub fn shared<T>(cell: &'static OnceLock<Result<T, String>>, f: impl FnOnce() -> T) -> &'static T {
    let res = cell.get_or_init(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panicked".to_string())
        })
    });
    match res {
        Ok(v) => v,
        Err(e) => panic!("shared fixture failed: {e}"),
    }
}

/// The delay (seconds) a rank of a delay-injecting example actually injected,
/// from its stderr line `<program>: rank <r> injected <ms> ms` (sleeps overrun
/// on a busy machine, so the nominal delay is only a lower bound).
pub fn injected_s(out: &Outcome, program: &str, rank: u32) -> f64 {
    let prefix = format!("{program}: rank {rank} injected ");
    out.stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix(&prefix)?
                .strip_suffix(" ms")?
                .parse::<f64>()
                .ok()
        })
        .map(|ms| ms / 1e3)
        .unwrap_or_else(|| panic!("no `{prefix}... ms` line on stderr\n{}", out.dump()))
}
