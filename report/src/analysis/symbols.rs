//! Call sites resolved by the report: a rank that wrote its record on a
//! signal or at exit had no time to read debug information (the launcher's
//! SIGKILL follows its SIGTERM within a second), so its sites hold only
//! module, GNU build-id and offset. When that module is still on disk with
//! the same build-id (the usual case: the report runs where the job ran),
//! the report reads its debug information and fills in function, file and
//! line as the interposer would have, so that these ranks' calls join the
//! same sites as the ranks that finished normally. A module that was rebuilt
//! since (another build-id) is left alone: its lines would be wrong.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use mpiover_common::demangle::demangle;
use mpiover_common::record::{Record, Site};

/// The modules read so far (path and build-id), shared by the report's
/// workers; `None` where a module cannot be used.
#[derive(Default)]
pub struct Symbols {
    modules: Mutex<HashMap<(String, String), Option<Module>>>,
}

struct Module {
    loader: addr2line::Loader,
    /// Offsets resolved already (many ranks hold the same sites).
    done: HashMap<u64, Resolved>,
}

#[derive(Clone, Default)]
struct Resolved {
    function: Option<String>,
    symbol: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    inlined_into: Vec<String>,
}

impl Symbols {
    pub fn new() -> Symbols {
        Symbols::default()
    }

    /// Resolves the sites of `rec` that the rank left unresolved.
    pub fn resolve(&self, rec: &mut Record) {
        for site in rec.sites.iter_mut().filter(|s| needs(s)) {
            let (Some(module), Some(build_id), Some(offset)) =
                (site.module.clone(), site.build_id.clone(), offset_of(site))
            else {
                continue;
            };
            let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
            let entry = modules
                .entry((module.clone(), build_id.clone()))
                .or_insert_with(|| Module::open(Path::new(&module), &build_id));
            if let Some(m) = entry {
                let r = m.resolve(offset);
                if r.function.is_some() || r.file.is_some() {
                    apply(site, r);
                }
            }
        }
    }
}

/// A native site that the rank located but did not resolve.
fn needs(s: &Site) -> bool {
    s.file.is_none()
        && s.function.is_none()
        && s.language.is_none()
        && s.note
            .as_deref()
            .is_some_and(|n| n.starts_with("unresolved"))
}

fn offset_of(s: &Site) -> Option<u64> {
    let hex = s.offset.as_deref()?.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok().filter(|&o| o > 0)
}

fn apply(site: &mut Site, r: Resolved) {
    site.function = r.function;
    site.symbol = r.symbol;
    site.file = r.file;
    site.line = r.line;
    site.inlined_into = r.inlined_into;
    site.note = None;
}

impl Module {
    /// The module at `path` when its build-id is `want`.
    fn open(path: &Path, want: &str) -> Option<Module> {
        if build_id_of(path)? != want {
            return None;
        }
        let loader = addr2line::Loader::new(path).ok()?;
        Some(Module {
            loader,
            done: HashMap::new(),
        })
    }

    /// The call at return address `offset`: the call instruction ends there,
    /// so its line is looked up one byte before (as `addr2line -e M
    /// OFFSET-1`). Innermost frame first; the frames it was inlined into
    /// follow, as the interposer writes them.
    fn resolve(&mut self, offset: u64) -> Resolved {
        if let Some(r) = self.done.get(&offset) {
            return r.clone();
        }
        let probe = offset - 1;
        let mut frames: Vec<(Option<String>, Option<String>, Option<u32>)> = Vec::new();
        if let Ok(mut it) = self.loader.find_frames(probe) {
            while let Ok(Some(f)) = it.next() {
                let name = f
                    .function
                    .as_ref()
                    .and_then(|n| n.raw_name().ok())
                    .map(|n| n.into_owned());
                let (file, line) = f
                    .location
                    .map_or((None, None), |l| (l.file.map(str::to_owned), l.line));
                frames.push((name, file, line));
            }
        }
        if frames.first().is_none_or(|f| f.0.is_none()) {
            // No debug information for this address: the symbol table's name.
            let sym = self.loader.find_symbol(probe).map(str::to_owned);
            match frames.first_mut() {
                Some(f) => f.0 = sym,
                None => frames.push((sym, None, None)),
            }
        }
        let mut r = Resolved::default();
        let mut it = frames.into_iter();
        if let Some((name, file, line)) = it.next() {
            if let Some(raw) = name {
                let readable = demangle(&raw).into_owned();
                r.symbol = (readable != raw).then_some(raw);
                r.function = Some(readable);
            }
            r.file = file;
            r.line = line;
        }
        r.inlined_into = it
            .map(|(name, file, line)| {
                let f = name.map_or_else(|| "?".into(), |n| demangle(&n).into_owned());
                match (file, line) {
                    (Some(file), Some(line)) => format!("{f} ({file}:{line})"),
                    (Some(file), None) => format!("{f} ({file})"),
                    _ => f,
                }
            })
            .collect();
        self.done.insert(offset, r.clone());
        r
    }
}

/// The GNU build-id of the ELF file at `path`, in hex; None when the file is
/// missing, not ELF or has none. Reads only the headers and the note.
fn build_id_of(path: &Path) -> Option<String> {
    use object::{Object as _, ReadCache};
    let file = std::fs::File::open(path).ok()?;
    let cache = ReadCache::new(file);
    let obj = object::File::parse(&cache).ok()?;
    let id = obj.build_id().ok()??;
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary itself is an ELF file with a build-id (Rust links
    /// with `--build-id` on Linux); a site in it with another build-id stays
    /// unresolved.
    #[test]
    fn a_module_whose_build_id_differs_is_not_read() {
        let me = std::env::current_exe().expect("the test binary");
        let Some(id) = build_id_of(&me) else {
            return; // linked without a build-id: nothing to compare
        };
        assert!(Module::open(&me, &id).is_some());
        let other = if id.starts_with('0') { "1" } else { "0" };
        assert!(Module::open(&me, &format!("{other}{}", &id[1..])).is_none());
        assert!(Module::open(Path::new("/nonexistent/module"), &id).is_none());
    }

    #[test]
    fn only_unresolved_native_sites_are_looked_up() {
        let mut s = Site {
            id: 1,
            address: "0x1".into(),
            module: Some("/bin/true".into()),
            build_id: Some("ab".into()),
            offset: Some("0x10".into()),
            function: None,
            symbol: None,
            file: None,
            line: None,
            inlined_into: Vec::new(),
            note: Some("unresolved (signal)".into()),
            native: None,
            language: None,
        };
        assert!(needs(&s));
        assert_eq!(offset_of(&s), Some(0x10));
        s.language = Some("python".into());
        assert!(!needs(&s));
        s.language = None;
        s.note = Some("folded keys (MPIOVER_MAX_KEYS reached) or unknown caller".into());
        assert!(!needs(&s));
    }
}
