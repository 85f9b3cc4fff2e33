//! Errors of loading and checking a profile.

use std::fmt;
use std::path::PathBuf;

/// Why a profile could not be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    // The I/O error is part of the message, not a `source`: a chained
    // report (`{:#}`) would print it twice.
    #[error("profile {path}: cannot read: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("profile {path}: cannot write: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
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
