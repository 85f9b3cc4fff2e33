//! A site's identity: where it is (as far as it was resolved), the
//! enclosing function and the MPI function. Entries of all ranks with the
//! same identity are one site, whatever their p, bytes, peer or address.

use mpiover_common::record::{Entry, Site};
use serde::{Deserialize, Serialize};

/// Where a site is, as far as it was resolved: `file:line`, else module and
/// offset from the load bias (stable under ASLR), else the raw address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Loc {
    Line(String, u32),
    File(String),
    Module(String, String),
    Address(String),
    /// The interposer's `other` key, where it folds keys past its cap.
    Folded,
}

impl Loc {
    pub fn of(site: &Site, function: &str) -> Loc {
        if function == "other" {
            return Loc::Folded;
        }
        match (&site.file, site.line, &site.module, &site.offset) {
            (Some(f), Some(l), _, _) => Loc::Line(f.clone(), l),
            (Some(f), None, _, _) => Loc::File(f.clone()),
            (None, _, Some(m), Some(o)) => Loc::Module(m.clone(), o.clone()),
            _ => Loc::Address(site.address.clone()),
        }
    }

    pub fn display(&self) -> String {
        match self {
            Loc::Line(f, l) => format!("{f}:{l}"),
            Loc::File(f) => f.clone(),
            Loc::Module(m, o) => {
                let base = m.rsplit('/').next().unwrap_or(m);
                format!("{base}+{o}")
            }
            Loc::Address(a) => a.clone(),
            Loc::Folded => "(folded keys)".to_string(),
        }
    }
}

/// A report site: (location, enclosing function, MPI function).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SiteKey {
    pub loc: Loc,
    pub function: Option<String>,
    pub mpi: String,
}

impl SiteKey {
    /// The site of a record entry made at `site`.
    pub fn of_entry(site: &Site, e: &Entry) -> SiteKey {
        SiteKey::of_call(site, &e.function)
    }

    /// The site of a call of `mpi` (C name, or `other`) made at `site`.
    pub fn of_call(site: &Site, mpi: &str) -> SiteKey {
        SiteKey {
            loc: Loc::of(site, mpi),
            function: if mpi == "other" {
                None
            } else {
                // Records written before names were demangled.
                site.function
                    .as_deref()
                    .map(|f| mpiover_common::demangle::demangle(f).into_owned())
            },
            mpi: mpi.to_string(),
        }
    }
}
