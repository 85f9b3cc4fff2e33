//! Loading and saving a profile: validation on load, the one-entry-per-line
//! writer (readable, diffable files).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::PROFILE_SCHEMA;
use crate::profile::error::ProfileError;
use crate::profile::schema::{Environment, Method, Profile, ProfileEntry, ProfileKey};

impl Profile {
    pub fn new(environment: Environment, method: Method) -> Self {
        Profile {
            schema: PROFILE_SCHEMA.to_string(),
            environment,
            method,
            runs: Vec::new(),
            entries: Vec::new(),
            skipped: Vec::new(),
            protocol: None,
            index: OnceLock::new(),
        }
    }

    /// Read and check a profile file.
    pub fn load(path: impl AsRef<Path>) -> Result<Profile, ProfileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ProfileError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        Self::from_json(&text, path)
    }

    /// Parse and check a profile; `path` is only used in messages.
    pub fn from_json(text: &str, path: &Path) -> Result<Profile, ProfileError> {
        #[derive(Deserialize)]
        struct Head {
            schema: Option<serde_json::Value>,
        }
        let p = || path.to_path_buf();
        // A JSON list or scalar would otherwise fail with serde's "trailing
        // characters" (a struct can be read from a sequence), which says
        // nothing useful: say what the file is not.
        if let Some(c) = text.trim_start().chars().next().filter(|c| *c != '{') {
            let what = match c {
                '[' => "a JSON list",
                '"' => "a JSON string",
                _ => "not a JSON object",
            };
            return Err(ProfileError::Schema {
                path: p(),
                msg: format!("{what}: not an mpiover profile (expected an object with \"schema\": \"{PROFILE_SCHEMA}\")"),
            });
        }
        let head: Head = serde_json::from_str(text).map_err(|e| ProfileError::Json {
            path: p(),
            msg: e.to_string(),
        })?;
        match head.schema {
            None => {
                return Err(ProfileError::Schema {
                    path: p(),
                    msg: format!(
                    "no \"schema\" field: not an mpiover profile (expected \"{PROFILE_SCHEMA}\")"
                ),
                })
            }
            Some(serde_json::Value::String(s)) if s == PROFILE_SCHEMA => {}
            Some(serde_json::Value::String(s)) if s.starts_with("mpiover-profile/") => {
                return Err(ProfileError::Schema {
                    path: p(),
                    msg: format!(
                        "schema {s:?} is not supported (this mpiover reads \"{PROFILE_SCHEMA}\")"
                    ),
                })
            }
            Some(other) => {
                return Err(ProfileError::Schema {
                    path: p(),
                    msg: format!(
                        "schema {other} is not an mpiover profile (expected \"{PROFILE_SCHEMA}\")"
                    ),
                })
            }
        }
        // serde repeats an unknown value back, and the checks name the
        // entries' functions: either can hold a line break of the file.
        let prof: Profile = serde_json::from_str(text).map_err(|e| ProfileError::Json {
            path: p(),
            msg: crate::one_line::one_line(&e.to_string()),
        })?;
        prof.validate().map_err(|msg| ProfileError::Invalid {
            path: p(),
            msg: crate::one_line::one_line(&msg),
        })?;
        Ok(prof)
    }

    /// Check the entries: finite non-negative times, p >= 1, no duplicate keys.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = HashMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            let k = e.key();
            let bad = |what: &str| format!("entry {i} ({k}): {what}");
            if e.function.is_empty() {
                return Err(bad("empty function name"));
            }
            if e.p == 0 {
                return Err(bad("p must be at least 1"));
            }
            for (name, v) in [
                ("tmax_s", e.tmax_s),
                ("min_s", e.min_s),
                ("median_s", e.median_s),
            ] {
                if !v.is_finite() || v < 0.0 {
                    return Err(bad(&format!("{name} = {v} is not a non-negative number")));
                }
            }
            if let Some(j) = seen.insert(k.clone(), i) {
                return Err(format!("entries {j} and {i} have the same key ({k})"));
            }
        }
        Ok(())
    }

    /// The profile as JSON: pretty header, one entry per line.
    pub fn to_json(&self) -> String {
        fn field<T: Serialize>(out: &mut String, name: &str, v: &T, last: bool) {
            out.push_str("  \"");
            out.push_str(name);
            out.push_str("\": ");
            let s = serde_json::to_string_pretty(v).expect("profile serializes");
            out.push_str(&s.replace('\n', "\n  "));
            out.push_str(if last { "\n" } else { ",\n" });
        }
        fn list<T: Serialize>(out: &mut String, name: &str, v: &[T], last: bool) {
            out.push_str("  \"");
            out.push_str(name);
            out.push_str("\": [");
            for (i, e) in v.iter().enumerate() {
                out.push_str(if i == 0 { "\n    " } else { ",\n    " });
                out.push_str(&serde_json::to_string(e).expect("profile serializes"));
            }
            out.push_str(if v.is_empty() { "]" } else { "\n  ]" });
            out.push_str(if last { "\n" } else { ",\n" });
        }
        let mut out = String::from("{\n");
        field(&mut out, "schema", &self.schema, false);
        field(&mut out, "environment", &self.environment, false);
        field(&mut out, "method", &self.method, false);
        list(&mut out, "runs", &self.runs, false);
        list(&mut out, "entries", &self.entries, false);
        if let Some(p) = &self.protocol {
            field(&mut out, "protocol", p, false);
        }
        list(&mut out, "skipped", &self.skipped, true);
        out.push_str("}\n");
        out
    }

    /// Write the profile atomically: a temporary file in the same directory,
    /// then a rename, so a reader (or a killed run) never sees half a file.
    pub fn save_atomic(&self, path: impl AsRef<Path>) -> Result<(), ProfileError> {
        let path = path.as_ref();
        let werr = |error| ProfileError::Write {
            path: path.to_path_buf(),
            error,
        };
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        std::fs::write(&tmp, self.to_json()).map_err(werr)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            werr(e)
        })
    }

    /// Add an entry (replacing one with the same key) and drop the lookup index.
    pub fn push_entry(&mut self, e: ProfileEntry) {
        let k = e.key();
        if let Some(old) = self.entries.iter_mut().find(|x| x.key() == k) {
            *old = e;
        } else {
            self.entries.push(e);
        }
        self.index = OnceLock::new();
    }

    /// Call after changing `entries` directly, before the next lookup.
    pub fn invalidate_index(&mut self) {
        self.index = OnceLock::new();
    }

    pub fn entry(&self, key: &ProfileKey) -> Option<&ProfileEntry> {
        self.entries.iter().find(|e| e.key() == *key)
    }
}
