//! The same mutants through the `mpiover` binary, on a sample: each ends
//! with exit 0, or exit 2 and one line on stderr, `mpiover: error: ...`,
//! naming the file (never a signal, another code, or several lines).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Corpus, FORMATS};

/// The command lines a mutant of `format` at `file` (in run directory
/// `dir`) is given to, against a good run and profile.
fn commands(format: &str, file: &Path, dir: &Path, good: &Path, prof: &Path) -> Vec<Vec<String>> {
    let s = |p: &Path| p.display().to_string();
    let out = s(&dir.join("out.json"));
    match format {
        "record" | "log" => vec![
            vec!["report".into(), s(dir)],
            vec!["report".into(), s(dir), "--profile".into(), s(prof)],
            vec!["diff".into(), s(good), s(dir)],
        ],
        "profile" => vec![
            vec!["profile".into(), "show".into(), s(file)],
            vec!["profile".into(), "check".into(), s(file)],
            vec![
                "profile".into(),
                "merge".into(),
                s(file),
                s(prof),
                "-o".into(),
                out,
            ],
            vec!["report".into(), "--profile".into(), s(file), s(good)],
        ],
        _ => vec![vec!["fit".into(), s(file)]],
    }
}

/// Runs one command line with a time limit; the problem, if any.
fn check(args: &[String], file: &Path) -> Option<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mpiover"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs mpiover");
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return Some(format!("mpiover {args:?} ran over 60 s"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut err = String::new();
    use std::io::Read;
    child.stderr.take().unwrap().read_to_string(&mut err).ok();
    let name = file.display().to_string();
    match status.code() {
        Some(0) => None,
        Some(2) => {
            let lines: Vec<&str> = err.lines().collect();
            let one = lines.len() == 1 && lines[0].starts_with("mpiover: error: ");
            (!one || !err.contains(&name))
                .then(|| format!("mpiover {args:?}: exit 2 with stderr {err:?}"))
        }
        _ => Some(format!("mpiover {args:?}: {status} with stderr {err:?}")),
    }
}

/// `per_format` mutants of each format, spread over the first `of`.
pub fn run(per_format: u64, of: u64) -> Vec<String> {
    let env = super::env_for("cli");
    let good = env.good_run.clone();
    let prof = env.good_profile.clone();
    let mut problems = Vec::new();
    for (f, name) in FORMATS.iter().enumerate() {
        let corpus = Corpus::new(f);
        for k in 0..per_format {
            let index = k * (of / per_format).max(1) + k % corpus.seed_inputs() as u64;
            let data = corpus.mutant(index);
            let (file, dir): (PathBuf, PathBuf) = match *name {
                "record" | "log" => {
                    let n = match *name {
                        "record" => "rank-000000.json",
                        _ => "job.mpiover-log",
                    };
                    let d = env.run_dir_with(n, &data);
                    (d.join(n), d)
                }
                _ => {
                    let p = env.file_with(&format!("{name}.input"), &data);
                    (p, env.dir.clone())
                }
            };
            for args in commands(name, &file, &dir, &good, &prof) {
                if let Some(p) = check(&args, &file) {
                    super::save_failure(f, index, &data);
                    problems.push(format!("{name}:{index}: {p}"));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(env.dir.parent().unwrap());
    problems
}

#[test]
fn the_command_gives_one_error_line_and_exit_2_on_mutants() {
    let per = std::env::var("MPIOVER_FUZZ_CLI")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let problems = run(per, 1500);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
