//! Where the fields the tool reads lie in a CPython's structures: facts of
//! one minor version (a 64-bit release build), checked against the
//! installed interpreter's headers by `layout_check.c` in the unit tests.

/// Byte offsets (and a few constants) of one CPython minor version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyLayout {
    /// `PyThreadState.cframe` (`_PyCFrame *`).
    pub ts_cframe: usize,
    /// `_PyCFrame.current_frame` (`_PyInterpreterFrame *`).
    pub cframe_current_frame: usize,
    /// `_PyInterpreterFrame.f_code`, `.previous`, `.prev_instr`, `.owner`.
    pub frame_code: usize,
    pub frame_previous: usize,
    pub frame_prev_instr: usize,
    pub frame_owner: usize,
    /// `FRAME_OWNED_BY_GENERATOR`.
    pub owner_generator: u8,
    /// `PyObject.ob_type`, `PyVarObject.ob_size`.
    pub ob_type: usize,
    pub ob_size: usize,
    /// `PyCodeObject` fields.
    pub code_firstlineno: usize,
    pub code_filename: usize,
    pub code_qualname: usize,
    pub code_linetable: usize,
    pub code_firsttraceable: usize,
    pub code_adaptive: usize,
    /// `sizeof(_Py_CODEUNIT)`.
    pub code_unit: usize,
    /// `PyBytesObject.ob_sval`.
    pub bytes_sval: usize,
    /// `PyASCIIObject.length`, `.state`; where the characters of a compact
    /// ASCII and a compact string start; `PyUnicodeObject.data`.
    pub str_length: usize,
    pub str_state: usize,
    pub ascii_data: usize,
    pub compact_data: usize,
    pub legacy_data: usize,
    /// Bits of `state.kind`, `state.compact`, `state.ascii`.
    pub state_kind_mask: u32,
    pub state_compact_mask: u32,
    pub state_ascii_mask: u32,
}

/// CPython 3.11 (verified against the headers of 3.11.2 and 3.11.7; the
/// layout is the same across 3.11.x releases).
pub const PY311: PyLayout = PyLayout {
    ts_cframe: 56,
    cframe_current_frame: 8,
    frame_code: 32,
    frame_previous: 48,
    frame_prev_instr: 56,
    frame_owner: 69,
    owner_generator: 1,
    ob_type: 8,
    ob_size: 16,
    code_firstlineno: 72,
    code_filename: 112,
    code_qualname: 128,
    code_linetable: 136,
    code_firsttraceable: 168,
    code_adaptive: 184,
    code_unit: 2,
    bytes_sval: 32,
    str_length: 16,
    str_state: 32,
    ascii_data: 48,
    compact_data: 72,
    legacy_data: 72,
    state_kind_mask: 28,
    state_compact_mask: 32,
    state_ascii_mask: 64,
};

/// The layout of a CPython `major.minor`, when the tool knows it.
pub fn for_version(major: u32, minor: u32) -> Option<&'static PyLayout> {
    match (major, minor) {
        (3, 11) => Some(&PY311),
        _ => None,
    }
}

impl PyLayout {
    /// The fields in `layout_check.c`'s order, by its names.
    pub fn fields(&self) -> Vec<(&'static str, i64)> {
        vec![
            ("ts_cframe", self.ts_cframe as i64),
            ("cframe_current_frame", self.cframe_current_frame as i64),
            ("frame_code", self.frame_code as i64),
            ("frame_previous", self.frame_previous as i64),
            ("frame_prev_instr", self.frame_prev_instr as i64),
            ("frame_owner", self.frame_owner as i64),
            ("owner_generator", self.owner_generator as i64),
            ("ob_type", self.ob_type as i64),
            ("ob_size", self.ob_size as i64),
            ("code_firstlineno", self.code_firstlineno as i64),
            ("code_filename", self.code_filename as i64),
            ("code_qualname", self.code_qualname as i64),
            ("code_linetable", self.code_linetable as i64),
            ("code_firsttraceable", self.code_firsttraceable as i64),
            ("code_adaptive", self.code_adaptive as i64),
            ("code_unit", self.code_unit as i64),
            ("bytes_sval", self.bytes_sval as i64),
            ("str_length", self.str_length as i64),
            ("str_state", self.str_state as i64),
            ("ascii_data", self.ascii_data as i64),
            ("compact_data", self.compact_data as i64),
            ("legacy_data", self.legacy_data as i64),
            ("state_kind_mask", self.state_kind_mask as i64),
            ("state_compact_mask", self.state_compact_mask as i64),
            ("state_ascii_mask", self.state_ascii_mask as i64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// `--includes` of every CPython 3.11 development installation found:
    /// the `python3` on the PATH and Debian's `python3.11`.
    fn includes() -> Vec<(String, String)> {
        let mut out = Vec::new();
        for cfg in ["python3-config", "/usr/bin/python3.11-config"] {
            let Ok(o) = Command::new(cfg).arg("--includes").output() else {
                continue;
            };
            let flags = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if o.status.success() && flags.contains("python3.11") {
                out.push((cfg.to_string(), flags));
            }
        }
        out
    }

    #[test]
    fn layout_matches_the_installed_headers() {
        let found = includes();
        if found.is_empty() {
            eprintln!(
                "no CPython 3.11 headers found (python3-config, python3.11-config): not checked"
            );
            return;
        }
        let dir = std::env::temp_dir().join(format!("mpiover-pylayout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let src = dir.join("layout_check.c");
        std::fs::write(&src, include_str!("layout_check.c")).expect("writing the C check");
        for (i, (cfg, flags)) in found.iter().enumerate() {
            let exe = dir.join(format!("check{i}"));
            let cc = Command::new("cc")
                .args(flags.split_whitespace())
                .arg(&src)
                .arg("-o")
                .arg(&exe)
                .output()
                .expect("running cc");
            if !cc.status.success() {
                let err = String::from_utf8_lossy(&cc.stderr);
                if err.contains("pycore_frame.h") {
                    // Headers without the internal ones (a distribution's
                    // -dev package may leave them out): nothing to compare.
                    eprintln!("{cfg}: no internal headers; not checked");
                    continue;
                }
                panic!("{cfg}: compiling layout_check.c failed:\n{err}");
            }
            let run = Command::new(&exe).output().expect("running the check");
            let text = String::from_utf8_lossy(&run.stdout);
            let got: Vec<(String, i64)> = text
                .lines()
                .filter_map(|l| {
                    let (k, v) = l.split_once(' ')?;
                    Some((k.to_string(), v.parse().ok()?))
                })
                .collect();
            let want: Vec<(String, i64)> = PY311
                .fields()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            assert_eq!(got, want, "{cfg}: CPython 3.11 layout");
            eprintln!("{cfg}: layout checked ({} fields)", got.len());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_known_versions_have_a_layout() {
        assert!(for_version(3, 11).is_some());
        assert!(for_version(3, 12).is_none());
        assert!(for_version(3, 10).is_none());
    }
}
