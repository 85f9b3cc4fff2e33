//! A site's identity: where it is (as far as it was resolved), the
//! enclosing function and the MPI function.

use serde::{Deserialize, Serialize};

use super::*;

/// Where a site is, as far as it was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) enum Loc {
    Line(String, u32),
    File(String),
    Module(String, String),
    Address(String),
    Folded,
}

impl Loc {
    pub(crate) fn of(site: &Site, function: &str) -> Loc {
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

    pub(crate) fn display(&self) -> String {
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

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct SiteKey {
    pub(crate) loc: Loc,
    pub(crate) function: Option<String>,
    pub(crate) mpi: String,
}
