//! Fixed limits that shape a report and that its words state, so both the
//! assembly (which applies them) and the exporters (which print them) read
//! them here, from the model, rather than from each other.

/// Regions the text and HTML reports list (by load imbalance); the assembly
/// reads the source lines of these (and of those a detailed site names as a
/// root cause), so the HTML shows no region without its source.
pub const TOP_REGIONS: usize = 10;

/// Noise in root causes: an excess below this part of the waiting ranks'
/// own time in the region is not a cause (`docs/method.md`, "Root causes").
pub const CAUSE_OF_REFERENCE: f64 = 0.05;
/// Noise in root causes: a region explaining less than this part of the
/// overhead asked about is not a cause.
pub const CAUSE_OF_OVERHEAD: f64 = 0.05;
