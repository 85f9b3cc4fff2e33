//! One record entry against tmax: its overhead, the calls over tmax and
//! where tmax came from.

use super::*;

/// The less certain of two known bases (unknown ones do not count).
pub(crate) fn weaker(a: Option<Basis>, b: Option<Basis>) -> Option<Basis> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.weaker(y)),
        (x, y) => x.or(y),
    }
}

/// The figures of one entry once tmax is known.
pub(crate) struct EntryEval {
    pub(crate) tmax: Option<Tmax>,
    pub(crate) overhead: f64,
    pub(crate) calls_over: f64,
    /// Why there is no tmax although a profile was used.
    pub(crate) missing: Option<String>,
}

pub(crate) fn evaluate(e: &Entry, unit_s: f64, tmax: Option<&dyn TmaxSource>) -> EntryEval {
    let none = EntryEval {
        tmax: None,
        overhead: 0.0,
        calls_over: 0.0,
        missing: None,
    };
    if e.function == "other" {
        return none;
    }
    match tmax {
        Some(src) => match src.tmax(&KeyRef {
            function: &e.function,
            p: e.p,
            bytes: e.bytes,
            role: e.role.as_deref(),
            completes: e.completes.as_deref(),
            requests: e.requests,
        }) {
            Ok(t) if t.s.is_finite() && t.s >= 0.0 => {
                let ex = e.hist.excess(unit_s, t.s);
                EntryEval {
                    tmax: Some(t),
                    overhead: ex.overhead_s,
                    calls_over: ex.calls_over,
                    missing: None,
                }
            }
            Ok(_) => EntryEval {
                missing: Some("the profile's tmax is not a number".into()),
                ..none
            },
            Err(m) => EntryEval {
                missing: Some(m.to_string()),
                ..none
            },
        },
        None => match e.tmax_s {
            Some(t) if t.is_finite() && t >= 0.0 => {
                let ex = e.hist.excess(unit_s, t);
                EntryEval {
                    tmax: Some(Tmax {
                        s: t,
                        out_of_range: e.tmax_out_of_range,
                        basis: e.tmax_basis,
                        composed: composed_rule(e.tmax_composed.as_deref()),
                    }),
                    overhead: e
                        .overhead_s
                        .filter(|o| o.is_finite())
                        .unwrap_or(ex.overhead_s),
                    calls_over: ex.calls_over,
                    missing: None,
                }
            }
            _ => EntryEval {
                missing: e.tmax_missing.clone(),
                ..none
            },
        },
    }
}

/// A composition rule named in a record, as the catalogue's own string
/// (the report keeps one copy of each rule's wording).
pub(crate) fn composed_rule(r: Option<&str>) -> Option<&'static str> {
    let r = r?;
    Some(
        mpiover_common::completion::RULES
            .iter()
            .copied()
            .find(|k| *k == r)
            .unwrap_or("composed from other measurements"),
    )
}
