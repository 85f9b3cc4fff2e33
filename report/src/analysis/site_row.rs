//! A site on its way into the report, and how its key reads there: shared by
//! the assembly, which builds the rows, and the root causes, which fill them
//! in between its steps.

use mpiover_aggregate::{Loc, SiteAcc, SiteKey};

use crate::model::SiteReport;

/// A site on its way into the report.
pub(crate) struct Built {
    pub(crate) key: SiteKey,
    pub(crate) acc: SiteAcc,
    pub(crate) report: SiteReport,
}

/// The file and line of a location, as far as it was resolved.
pub(crate) fn file_line(loc: &Loc) -> (Option<String>, Option<u32>) {
    match loc {
        Loc::Line(f, l) => (Some(f.clone()), Some(*l)),
        Loc::File(f) => (Some(f.clone()), None),
        _ => (None, None),
    }
}

/// A site's enclosing function without its parameter list.
pub(crate) fn function_name(key: &SiteKey) -> Option<String> {
    key.function
        .as_deref()
        .map(|f| mpiover_common::demangle::without_parameters(f).to_string())
}
