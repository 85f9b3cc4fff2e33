//! Which profile the overhead comes from, and the run's warnings: a
//! profile measured elsewhere, lookups out of range or missing, the tool's own
//! warnings (once each, with the ranks that raised them).

use std::collections::BTreeMap;

use mpiover_aggregate::{Lookups, RankAcc};
use mpiover_common::profile::Environment;
use mpiover_common::run::RunSummary;

use crate::model::{ProfileMethod, ProfileSource};
use crate::tmax::TmaxSource;

/// The profile used (`--profile` wins over what the records say), its
/// q_max, and every warning of the run in the order the report lists them.
pub(crate) fn profile_and_warnings(
    ranks: &[RankAcc],
    summary: &RunSummary,
    hosts: &[String],
    tmax: Option<&dyn TmaxSource>,
    lookups: &Lookups,
) -> (Option<ProfileMethod>, Option<f64>, Vec<String>) {
    let first = &ranks[0];
    // The profile and q_max: --profile wins over what the records say.
    let mut warnings: Vec<String> = summary.warnings.iter().map(|w| w.to_string()).collect();
    let (profile, q_max) = match tmax {
        Some(src) => {
            // The run's environment as the records give it: recording
            // compares the same (and more: CPU, binding) at MPI_Init.
            let run = Environment {
                mpi_library: first.mpi_library.to_string(),
                hosts: hosts.to_vec(),
                ranks: ranks.len() as u32,
                ranks_per_host: {
                    let mut per: BTreeMap<&str, u32> = BTreeMap::new();
                    for r in ranks {
                        *per.entry(&r.host).or_default() += 1;
                    }
                    hosts
                        .iter()
                        .map(|h| per.get(h.as_str()).copied().unwrap_or(0))
                        .collect()
                },
                ..Default::default()
            };
            let m = src.matches(&run);
            (
                Some(ProfileMethod {
                    source: ProfileSource::Option,
                    path: src.name(),
                    matched: m.as_ref().map(|m| m.0),
                    note: m.map(|m| m.1).filter(|s| !s.is_empty()),
                    tmax_from: src.tmax_from(),
                }),
                src.q_max(),
            )
        }
        None => {
            let used: Vec<&(String, bool, Option<f64>, Option<String>)> =
                ranks.iter().filter_map(|r| r.profile.as_deref()).collect();
            match used.first() {
                None => (None, None),
                Some(p) => {
                    let matched = used.iter().all(|u| u.1);
                    let mut paths: Vec<&str> = used.iter().map(|u| u.0.as_str()).collect();
                    paths.sort();
                    paths.dedup();
                    let mut qs: Vec<f64> = used.iter().filter_map(|u| u.2).collect();
                    qs.sort_by(f64::total_cmp);
                    qs.dedup();
                    if paths.len() > 1 || qs.len() > 1 {
                        warnings.push(format!(
                            "ranks used different profiles or q_max ({}); overhead mixes them",
                            paths.join(", ")
                        ));
                    }
                    (
                        Some(ProfileMethod {
                            source: ProfileSource::Record,
                            path: p.0.clone(),
                            matched: Some(matched),
                            note: p.3.clone(),
                            // Read here when the file is still where the
                            // ranks read it (not an error when it is not).
                            tmax_from: mpiover_common::profile::Profile::load(&p.0)
                                .ok()
                                .map(|prof| crate::model::TmaxFrom::of(&prof)),
                        }),
                        qs.first().copied(),
                    )
                }
            }
        }
    };
    if let Some(p) = &profile {
        if p.matched == Some(false) {
            warnings.push(format!(
                "the profile {} was measured in another environment than this run{}: tmax may not fit",
                p.path,
                p.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
            ));
        }
    }
    if lookups.out_of_range_calls > 0 {
        warnings.push(format!(
            "{} of {} calls with a tmax were outside the profile's measured range (p or bytes): their tmax is clamped to the nearest measured point",
            lookups.out_of_range_calls, lookups.calls
        ));
    }
    if tmax.is_some() && lookups.missing_calls > 0 {
        warnings.push(format!(
            "the profile has no tmax for {} calls ({} keys): they count in time but not in overhead",
            lookups.missing_calls, lookups.missing_entries
        ));
    }
    // The tool's own warnings, once each, with the ranks that raised them.
    let mut tool_w: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for r in ranks {
        for w in r.warnings.iter() {
            tool_w.entry(w.as_str()).or_default().push(r.rank);
        }
    }
    for (w, rs) in tool_w {
        warnings.push(format!("{w} ({})", mpiover_common::run::rank_list(&rs, 5)));
    }
    (profile, q_max, warnings)
}
