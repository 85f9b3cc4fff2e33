//! Building the example programs (once per suite, under both MPIs) and
//! finding the lines their `MPIOVER-EXPECT` markers tag.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::harness::paths::{examples_out, examples_src, make_vars};

/// Path of a built example, building all of them (once per test process) with
/// `make -C examples OUT=<tmp>/examples`.
pub fn example(name: &str) -> PathBuf {
    static OUT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let out = OUT.get_or_init(|| {
        let out = examples_out();
        make(&examples_src(), &out)?;
        Ok(out)
    });
    match out {
        Ok(dir) => {
            let p = dir.join(name);
            assert!(
                p.is_file(),
                "example {name} was not built into {}",
                dir.display()
            );
            p
        }
        Err(e) => panic!("{e}"),
    }
}

/// Path of a program built by `make -C examples/<dir> OUT=<tmp>/<dir>` (once
/// per directory and test process): the Fortran examples (`fortran`), the
/// thread, non-blocking and `MPI_Pcontrol` examples.
pub fn example_in(dir: &str, name: &str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, Result<PathBuf, String>>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let res = built.entry(dir.to_string()).or_insert_with(|| {
        let out = examples_out().join(dir);
        make(&examples_src().join(dir), &out)?;
        Ok(out)
    });
    match res {
        Ok(out) => {
            let p = out.join(name);
            assert!(p.is_file(), "{name} was not built into {}", out.display());
            p
        }
        Err(e) => panic!("{e}"),
    }
}

/// Line of the unique marker `MPIOVER-EXPECT: <tag>` in `examples/<file>`,
/// in any comment syntax (`/* ... */` in C, `! ...` at the end of a
/// Fortran line, `# ...` in Python).
pub fn marker_any(file: &str, tag: &str) -> u32 {
    let needle = format!("MPIOVER-EXPECT: {tag}");
    unique_line(file, tag, |l| {
        l.match_indices(&needle).any(|(i, _)| {
            let rest = &l[i + needle.len()..];
            rest.is_empty() || rest.starts_with(' ') || rest.starts_with('*')
        })
    })
}

/// Line of the unique `/* MPIOVER-EXPECT: <tag> */` marker in `examples/<file>`.
pub fn marker(file: &str, tag: &str) -> u32 {
    let needle = format!("MPIOVER-EXPECT: {tag} */");
    unique_line(file, tag, |l| l.contains(&needle))
}

/// The one line of `examples/<file>` that `is_marker` accepts.
fn unique_line(file: &str, tag: &str, is_marker: impl Fn(&str) -> bool) -> u32 {
    let path = examples_src().join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let lines: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| is_marker(l))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "marker {tag:?} in {file}: found on lines {lines:?}"
    );
    lines[0]
}

/// `make -s -C src OUT=out` with the suite's MPI compiler.
fn make(src: &Path, out: &Path) -> Result<(), String> {
    let res = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(src)
        .arg(format!("OUT={}", out.display()))
        .args(make_vars())
        .output()
        .map_err(|e| format!("running make: {e}"))?;
    if !res.status.success() {
        return Err(format!(
            "make -C {} failed ({}):\n{}{}",
            src.display(),
            res.status,
            String::from_utf8_lossy(&res.stdout),
            String::from_utf8_lossy(&res.stderr)
        ));
    }
    Ok(())
}
