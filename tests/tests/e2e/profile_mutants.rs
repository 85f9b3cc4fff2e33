//! Damaged profiles inside the job: a real calibration's profile, mutated
//! as files get damaged or hand-edited (cut short, bits flipped, a key
//! deleted or given twice, values of the wrong type, out of range, NaN as a
//! string, invalid UTF-8, nesting past any parser's depth, empty, a
//! directory), given as `MPIOVER_PROFILE` to a 2-rank late sender. For every
//! mutant: the program's output and exit status are those of the run
//! without the profiler, every rank's record is written, and the job prints
//! at most one `mpiover: warning` line, which names the file (a mutant that
//! is still a valid profile may print none).

use std::path::Path;

use mpiover_common::rng::Rng;
use serde_json::Value;

use crate::harness::*;

/// The mutants of `text` (a profile's JSON), named for the failure message.
fn mutants(text: &str) -> Vec<(&'static str, Vec<u8>)> {
    let bytes = text.as_bytes();
    let json: Value = serde_json::from_str(text).expect("the calibration is JSON");
    let mut rng = Rng::new(0x6d75_7461);
    let mut flipped = bytes.to_vec();
    for _ in 0..16 {
        let i = rng.below(flipped.len());
        flipped[i] ^= 1 << rng.below(8);
    }
    let edit = |f: &dyn Fn(&mut Value)| -> Vec<u8> {
        let mut v = json.clone();
        f(&mut v);
        serde_json::to_vec(&v).expect("serializes")
    };
    let first = |v: &mut Value, key: &str, new: Value| {
        if let Some(e) = v["entries"].get_mut(0) {
            e[key] = new;
        }
    };
    let mut invalid_utf8 = bytes.to_vec();
    if let Some(at) = text.find("MPI_") {
        invalid_utf8[at + 1] = 0xff;
    }
    let duplicated = text.replacen('{', "{\"schema\": \"mpiover-profile/0\", ", 1);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    vec![
        ("cut at a third", bytes[..bytes.len() / 3].to_vec()),
        ("cut one byte short", bytes[..bytes.len() - 2].to_vec()),
        ("16 bits flipped", flipped),
        (
            "entries deleted",
            edit(&|v| drop(v.as_object_mut().map(|o| o.remove("entries")))),
        ),
        (
            "environment deleted",
            edit(&|v| drop(v.as_object_mut().map(|o| o.remove("environment")))),
        ),
        (
            "tmax a string",
            edit(&|v| first(v, "tmax_s", Value::from("NaN"))),
        ),
        (
            "tmax negative",
            edit(&|v| first(v, "tmax_s", Value::from(-1.0))),
        ),
        ("tmax null", edit(&|v| first(v, "tmax_s", Value::Null))),
        (
            "function a number",
            edit(&|v| first(v, "function", Value::from(12345))),
        ),
        (
            "a count past u64",
            set_first(text, "n", "18446744073709551616000"),
        ),
        ("a number out of range", set_first(text, "tmax_s", "1e999")),
        (
            "entries an object",
            edit(&|v| v["entries"] = Value::from(serde_json::Map::new())),
        ),
        ("schema twice", duplicated.into_bytes()),
        ("invalid UTF-8", invalid_utf8),
        ("nested 100,000 deep", deep.into_bytes()),
        ("empty", Vec::new()),
    ]
}

/// `text` with the first value of `key` replaced by the literal `new`.
fn set_first(text: &str, key: &str, new: &str) -> Vec<u8> {
    let k = format!("\"{key}\":");
    let Some(at) = text.find(&k) else {
        return text.as_bytes().to_vec();
    };
    let start = at + k.len();
    let end = start
        + text[start..]
            .find([',', '}', ']'])
            .unwrap_or(text.len() - start);
    format!("{}{new}{}", &text[..start], &text[end..]).into_bytes()
}

#[test]
fn profile_use_of_damaged_profiles_leaves_the_program_alone_and_warns_once() {
    let test = "profile_use_of_damaged_profiles";
    let dir = scratch(test);
    // A real profile of this machine, whatever its quality: only its bytes
    // matter here.
    let prof = quick_profile(&format!("{test}_calibration"), 2, "MPI_Send,MPI_Recv", "8");
    let text = std::fs::read_to_string(prof).expect("the calibration");
    let args = ["2", "1"];
    let plain = Job::new(2, "late_sender", &args, &dir).run();
    plain.assert_success();
    let mut cases: Vec<(&str, std::path::PathBuf)> = mutants(&text)
        .into_iter()
        .enumerate()
        .map(|(i, (what, bytes))| {
            let path = dir.join(format!("mutant-{i:02}.json"));
            std::fs::write(&path, bytes).expect("write the mutant");
            (what, path)
        })
        .collect();
    let a_directory = dir.join("a-directory.json");
    std::fs::create_dir_all(&a_directory).expect("mkdir");
    cases.push(("a directory", a_directory));
    let mut rejected = 0;
    for (i, (what, path)) in cases.iter().enumerate() {
        let p = profile_env(
            &format!("{test}-{i:02}"),
            2,
            "late_sender",
            &args,
            &[("MPIOVER_PROFILE", path.to_str().expect("utf-8 path"))],
        );
        let ctx = format!("mutant {i} ({what}): {}\n{}", path.display(), p.out.dump());
        assert_eq!(p.out.code(), Some(0), "{ctx}");
        assert_eq!(p.out.stdout, plain.stdout, "stdout changed\n{ctx}");
        assert_eq!(p.records.len(), 2, "records of both ranks\n{ctx}");
        let warnings: Vec<&str> = p
            .out
            .stderr
            .lines()
            .filter(|l| l.contains("mpiover: warning"))
            .collect();
        assert!(warnings.len() <= 1, "{warnings:#?}\n{ctx}");
        if let Some(w) = warnings.first() {
            rejected += 1;
            assert!(names(w, path), "the warning names the file: {w}\n{ctx}");
        }
    }
    // Every mutant but the flipped bits (which may by chance leave a valid
    // profile) is damaged beyond use; the checks above would pass vacuously
    // if the file were never read.
    assert!(rejected + 1 >= cases.len(), "only {rejected} rejected");
}

fn names(warning: &str, path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| warning.contains(n))
}
