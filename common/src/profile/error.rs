//! Errors of loading and checking a profile.

use std::fmt;
use std::path::PathBuf;

/// Why a profile could not be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("profile {path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("profile {path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("profile {path}: not valid JSON: {msg}")]
    Json { path: PathBuf, msg: String },
    #[error("profile {path}: {msg}")]
    Schema { path: PathBuf, msg: String },
    #[error("profile {path}: {msg}")]
    Invalid { path: PathBuf, msg: String },
    #[error("cannot merge profiles: {0}")]
    Merge(String),
}

/// Why a profile does not fit an environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub reasons: Vec<String>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.reasons.join("; "))
    }
}

impl std::error::Error for Mismatch {}
