//! Regions in the text report: the root-cause lines under the sites, the
//! REGIONS section and its line under METHODS (`docs/method.md`, "Root
//! causes").

use super::*;
use crate::export::regions::{cause, function, label};
use crate::export::TOP_REGIONS;

/// Root causes shown per site (the JSON and HTML have all).
const CAUSES_SHOWN: usize = 3;

/// Under a significant site with a wait state: why its late ranks were
/// late, one line per root cause.
pub(super) fn cause_lines(o: &mut String, c: &Ctx, site: &SiteReport) {
    let Some(causes) = site.root_causes.as_ref().filter(|_| site.significant) else {
        return;
    };
    let p = site.position;
    if causes.is_empty() {
        // Without regions in the records there was nothing to compare.
        if !c.r.regions.is_empty() && !site.late_ranks.is_empty() {
            let _ = writeln!(
                o,
                "  #{p} root cause: none stands out (no region of the late ranks took clearly longer \
                 than the waiting ranks')"
            );
        }
        return;
    }
    for rc in causes.iter().take(CAUSES_SHOWN) {
        let _ = writeln!(o, "  #{p} root cause: {}", cause(rc, c.shorts));
    }
    if causes.len() > CAUSES_SHOWN {
        let _ = writeln!(
            o,
            "  #{p} and {} more root causes (HTML and JSON reports)",
            causes.len() - CAUSES_SHOWN
        );
    }
}

/// Load imbalance per region: the slowest rank's time in it against the
/// median rank's.
pub(super) fn regions(o: &mut String, c: &Ctx) {
    let r = c.r;
    if r.regions.is_empty() {
        return;
    }
    let shown = &r.regions[..TOP_REGIONS.min(r.regions.len())];
    heading(
        o,
        c,
        "REGIONS",
        format_args!(
            "the code between two MPI calls, by imbalance: the slowest rank's time minus the \
             median rank's; {} of {}",
            shown.len(),
            r.regions.len()
        ),
    );
    let mut t = Table::new(&[
        "Region",
        "Function",
        ">Ranks",
        ">Max",
        ">Median",
        ">Min",
        ">Max rank",
        ">Imbalance",
    ]);
    for g in shown {
        t.rows.push(vec![
            plain(label(&g.region, c.shorts)),
            plain(truncate(&function(&g.region), 40)),
            plain(g.ranks.to_string()),
            plain(secs(g.max_s)),
            plain(secs(g.median_s)),
            plain(secs(g.min_s)),
            plain(g.max_rank.to_string()),
            plain(secs(g.imbalance_s)),
        ]);
    }
    t.render(o, c.st, "  ");
    if shown.iter().any(|g| (g.ranks as usize) < r.ranks.len()) {
        let _ = writeln!(
            o,
            "  Ranks below {}: only those ranks pass through the region (their own code path), \
             so its imbalance is among them; root causes compare it with the waiting ranks' code.",
            r.ranks.len()
        );
    }
    o.push('\n');
}

/// The METHODS line on root causes, when the records carry regions.
pub(super) fn methods_line(o: &mut String, c: &Ctx) {
    if c.r.regions.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "  Root causes  {}",
        crate::export::prose::root_cause_rule()
    );
}

#[cfg(test)]
mod tests {
    use crate::export::regions::tests::fixture_report;
    use crate::export::ExportOptions;

    fn text(r: &crate::model::Report) -> String {
        String::from_utf8(super::super::export(r, &ExportOptions::default())).unwrap()
    }

    #[test]
    fn a_root_cause_line_under_its_site() {
        let mut r = fixture_report();
        let out = text(&r);
        assert!(
            out.contains(
                "\n  #1 root cause: rank 0 spent 400 ms more than the ranks waiting for it between \
                 solver.c:80 (MPI_Bcast) and solver.c:88 (MPI_Allreduce) in solve(), 90 % of the \
                 site's overhead\n"
            ),
            "{out}"
        );
        // At most three, and how many more.
        let c = r.sites[0].root_causes.as_ref().unwrap()[0].clone();
        r.sites[0].root_causes = Some(vec![c; 5]);
        let out = text(&r);
        assert_eq!(out.matches("#1 root cause: rank 0").count(), 3);
        assert!(out.contains("  #1 and 2 more root causes (HTML and JSON reports)\n"));
        // Not under a site that is not significant.
        r.sites[0].significant = false;
        assert!(!text(&r).contains("#1 root cause"));
        // None found: said, when the records had regions to compare.
        r.sites[0].significant = true;
        r.sites[0].root_causes = Some(Vec::new());
        assert!(text(&r).contains("  #1 root cause: none stands out"));
        r.regions.clear();
        assert!(!text(&r).contains("root cause"));
    }

    #[test]
    fn the_regions_section() {
        let mut r = fixture_report();
        let out = text(&r);
        let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("no {s} in\n{out}"));
        assert!(
            at("PER-RANK SPREAD") < at("\nREGIONS  (") && at("\nREGIONS  (") < at("\nRANKS  (")
        );
        assert!(out.contains(
            "REGIONS  (the code between two MPI calls, by imbalance: the slowest rank's time minus \
             the median rank's; 1 of 1)\n"
        ));
        let row = out
            .lines()
            .find(|l| l.contains("solver.c:80 MPI_Bcast -> solver.c:88 MPI_Allreduce"))
            .unwrap();
        let cells: Vec<&str> = row
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(
            cells,
            [
                "solver.c:80 MPI_Bcast -> solver.c:88 MPI_Allreduce",
                "solve",
                "4",
                "400 ms",
                "100 ms",
                "90.0 ms",
                "0",
                "300 ms"
            ]
        );
        assert!(out.contains("  Root causes  a late rank's time between two MPI calls"));
        // Every rank passes through it: no note on regions of fewer ranks.
        assert!(!out.contains("Ranks below"));
        r.regions[0].ranks = 2;
        assert!(text(&r).contains("  Ranks below 4: only those ranks pass through"));
        r.regions.clear();
        let out = text(&r);
        assert!(!out.contains("REGIONS") && !out.contains("Root causes"));
    }
}
