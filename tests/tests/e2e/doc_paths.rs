//! Every repository path the documentation names exists: `docs/*.md`, the
//! top-level `README.md`, `bench/README.md`, `bench/results/*.md` and the
//! crates' module docs (`//!` lines). A file that moves or goes leaves its
//! old name behind in prose, where no compiler looks; this finds it.
//!
//! What counts as a path (anything else is prose):
//! - in plain text, a word `dir/.../file.ext` or `dir/.../` whose first
//!   component is a top-level directory of the repository;
//! - in backticks, any word with a `/` whose last component has an
//!   extension, or that ends in `/`, and a bare name of one of our kinds of
//!   source (`write.rs`, `wrapper_floor.c`);
//! - as a Markdown link's target, any relative file (`results.md`) or
//!   directory.
//!
//! A path is looked up from the repository root, the document's directory
//! and, for a crate's module docs, the crate's directory and its `src/`
//! (for a Markdown document, every crate's directory and `src/`).
//!
//! Not checked: URLs, absolute and home paths, paths with a placeholder
//! (`<test>`, `$VAR`, `*`, `...`, or an upper-case component such as `DIR`
//! or `PREFIX`), and the examples of [`ALLOWED`].
//!
//! Needs no MPI and no build: it reads the source tree only.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::harness::workspace_root;

/// Paths that are not files of this repository (what a build, an install or
/// a run makes, other projects' files, the docs' example programs):
/// prefixes, matched against the path as written.
const ALLOWED: &[&str] = &[
    // Build output (`target/release/libmpiover.so`, `target/tmp/e2e/...`).
    "target/",
    // A run's output directory in the examples of the docs.
    "mpiover-run/",
    // An installed prefix's layout (`PREFIX/bin/mpiover`, `../lib/` from it).
    "bin/",
    "lib/",
    "../lib/",
    // Other projects' source trees: mpi4py's and MPICH's `test/`, CPython's
    // `Objects/`.
    "test/",
    "Objects/",
    // The user's program in the docs' examples of `mpiover record`.
    "app.py",
];

/// Stale paths in files whose owners have yet to fix them (file, path as
/// written): skipped here so that the rest stays checked. An entry whose
/// path was fixed is only reported, so that it can be taken out.
const KNOWN_STALE: &[(&str, &str)] = &[("stats/src/stopping.rs", "tests/statistical.rs")];

/// One path a document names, where, and as written.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Named {
    file: String,
    line: usize,
    path: String,
}

#[test]
fn every_path_the_docs_name_exists() {
    let root = workspace_root();
    let top = top_level_dirs(&root);
    let mut missing = Vec::new();
    let mut known = BTreeSet::new();
    for (file, base_dirs, lines) in documents(&root) {
        let rel = file.strip_prefix(&root).unwrap_or(&file);
        let rel = rel.display().to_string();
        for (n, text) in lines {
            for (path, place) in candidates(&text) {
                if !is_repo_path(&path, place, &top) || exists(&base_dirs, &path) {
                    continue;
                }
                if KNOWN_STALE.contains(&(rel.as_str(), path.as_str())) {
                    known.insert((rel.clone(), path));
                    continue;
                }
                missing.push(Named {
                    file: rel.clone(),
                    line: n,
                    path,
                });
            }
        }
    }
    for (file, path) in KNOWN_STALE {
        if !known.contains(&(file.to_string(), path.to_string())) {
            eprintln!("doc_paths: {file} no longer names {path}: take it out of KNOWN_STALE");
        }
    }
    missing.sort();
    let list: Vec<String> = missing
        .iter()
        .map(|m| format!("  {}:{}: {}", m.file, m.line, m.path))
        .collect();
    assert!(
        missing.is_empty(),
        "{} paths named in the docs do not exist:\n{}",
        missing.len(),
        list.join("\n")
    );
}

#[test]
fn the_path_rules_tell_paths_from_prose() {
    let top: BTreeSet<String> = ["docs", "interpose"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let found = |line: &str| -> Vec<String> {
        candidates(line)
            .into_iter()
            .filter(|(p, place)| is_repo_path(p, *place, &top))
            .map(|(p, _)| p)
            .collect()
    };
    assert_eq!(
        found("see docs/method.md, section 2, and `src/lib.rs:12`."),
        ["docs/method.md", "src/lib.rs"]
    );
    assert_eq!(
        found("[the method](../docs/method.md#tmax)"),
        ["../docs/method.md"]
    );
    assert_eq!(
        found("[results](results.md), [above](#tmax)"),
        ["results.md"]
    );
    assert_eq!(found("interpose/src/ (the wrappers)"), ["interpose/src/"]);
    // Prose, placeholders, URLs, absolute paths and build output.
    assert!(found("send/receive and MPI_Send/MPI_Recv, 1/x").is_empty());
    assert!(found("`PREFIX/lib/libmpiover.so`, `<dir>/p.json`, `$OUT/a.json`").is_empty());
    assert!(found("https://example.org/docs/a.md and /tmp/x/y.json").is_empty());
    assert!(found("`target/release/libmpiover.so`").is_empty());
    assert!(found("`mpiover-log/2`, other/plain.md").is_empty());
    // Bare names: our kinds of source only.
    assert_eq!(found("`write.rs` writes `p.json`; `mpi.h`"), ["write.rs"]);
}

/// The documents and, for each, the directories its relative paths may be
/// relative to, with the lines to read (numbered from 1).
type Document = (PathBuf, Vec<PathBuf>, Vec<(usize, String)>);

fn documents(root: &Path) -> Vec<Document> {
    let mut docs = Vec::new();
    let mut md: Vec<PathBuf> = vec![root.join("README.md"), root.join("bench/README.md")];
    for dir in ["docs", "bench/results"] {
        let mut in_dir: Vec<PathBuf> = fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{dir}/: {e}"))
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        in_dir.sort();
        md.extend(in_dir);
    }
    for f in md {
        let text = fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let dir = f.parent().expect("a file has a directory").to_path_buf();
        // The README's table of crates names each crate's files from the
        // crate's directory or its `src/`.
        let mut bases = vec![root.to_path_buf(), dir];
        for c in crate_dirs(root) {
            bases.push(c.join("src"));
            bases.push(c);
        }
        docs.push((f, bases, numbered(&text, |_| true)));
    }
    for krate in crate_dirs(root) {
        let mut files = Vec::new();
        rust_files(&krate, &mut files);
        files.sort();
        for f in files {
            // This file's own docs name paths as examples of the rules.
            if f.ends_with("tests/e2e/doc_paths.rs") {
                continue;
            }
            let text = fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            let dir = f.parent().expect("a file has a directory").to_path_buf();
            let lines = numbered(&text, |l| l.trim_start().starts_with("//!"));
            if !lines.is_empty() {
                let bases = vec![root.to_path_buf(), krate.clone(), krate.join("src"), dir];
                docs.push((f, bases, lines));
            }
        }
    }
    docs
}

fn numbered(text: &str, keep: impl Fn(&str) -> bool) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        // Code blocks are commands and their output, where a path may be one
        // the command creates: only prose and inline code are read.
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced && keep(l) {
            out.push((i + 1, l.to_string()));
        }
    }
    out
}

/// The workspace's crates: the directories holding a `Cargo.toml` below the
/// root (the root's own is the workspace's).
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root)
        .expect("the root is readable")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn top_level_dirs(root: &Path) -> BTreeSet<String> {
    fs::read_dir(root)
        .expect("the root is readable")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && n != "target")
        .collect()
}

/// Where in a line a word stands, which decides what counts as a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Prose: only paths from a top-level directory of the repository.
    Plain,
    /// Inside backticks: any path with a directory.
    Code,
    /// A Markdown link's target: any relative path, a bare file name too.
    Link,
}

/// The words of a line that may be paths, each with its place.
fn candidates(line: &str) -> Vec<(String, Place)> {
    let mut out = Vec::new();
    for (i, span) in line.split('`').enumerate() {
        let place = if i % 2 == 1 {
            Place::Code
        } else {
            Place::Plain
        };
        for word in span.split_whitespace() {
            if let Some(target) = link_target(word) {
                out.push((clean(target), Place::Link));
            } else {
                out.push((clean(word), place));
            }
        }
    }
    out.retain(|(p, place)| match place {
        Place::Link => true,
        Place::Code => p.contains('/') || is_source_file(p),
        Place::Plain => p.contains('/'),
    });
    out
}

/// A bare file name in backticks that is one of ours by its kind (`write.rs`,
/// `wrapper_floor.c`), unlike the names of files a run writes (`p.json`) or
/// of the system's (`mpi.h`).
fn is_source_file(word: &str) -> bool {
    const KINDS: &[&str] = &["rs", "md", "sh", "py", "c", "toml"];
    word.rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && KINDS.contains(&ext))
}

/// `[text](target)`'s target, from the word that holds `](`.
fn link_target(word: &str) -> Option<&str> {
    let start = word.find("](")? + 2;
    let rest = &word[start..];
    Some(&rest[..rest.find(')').unwrap_or(rest.len())])
}

/// The path without what surrounds it in prose: quotes and brackets,
/// closing punctuation, a `:line` or `#anchor` suffix.
fn clean(word: &str) -> String {
    let w = word.trim_start_matches(['(', '[', '"', '\'', '*']);
    let w = w.trim_end_matches([')', ']', '"', '\'', '*', ',', ';', '.', ':']);
    let w = w.split('#').next().unwrap_or("");
    let w = match w.rsplit_once(':') {
        Some((p, n)) if n.chars().all(|c| c.is_ascii_digit() || c == '-') => p,
        _ => w,
    };
    w.to_string()
}

fn is_repo_path(path: &str, place: Place, top: &BTreeSet<String>) -> bool {
    let placeholder = ["://", "$", "<", ">", "*", "{", "...", "…", "=", "|", "~"]
        .iter()
        .any(|m| path.contains(m));
    if placeholder || path.starts_with('/') || path.is_empty() {
        return false;
    }
    if ALLOWED.iter().any(|a| path.starts_with(a)) {
        return false;
    }
    let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let upper = |c: &str| {
        c.chars().any(|ch| ch.is_ascii_uppercase())
            && c.chars()
                .all(|ch| ch.is_ascii_uppercase() || ch.is_ascii_digit() || ch == '_' || ch == '-')
    };
    if parts.is_empty() || parts.iter().any(|c| upper(c)) {
        return false;
    }
    let last = parts[parts.len() - 1];
    let has_ext = last
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && !ext.is_empty());
    let file_or_dir = has_ext || path.ends_with('/');
    let first = parts.iter().find(|c| **c != ".." && **c != ".");
    match place {
        Place::Link | Place::Code => file_or_dir,
        Place::Plain => file_or_dir && first.is_some_and(|f| top.contains(*f)),
    }
}

fn exists(bases: &[PathBuf], path: &str) -> bool {
    let rel = path.trim_end_matches('/');
    bases.iter().any(|b| b.join(rel).exists())
}
