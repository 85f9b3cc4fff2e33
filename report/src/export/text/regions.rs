//! Regions in the text report: the root-cause lines under the sites, the
//! REGIONS section and its line under METHODS (`docs/method.md`, "Root
//! causes").

use std::fmt::Write;

use super::{heading, Ctx};
use crate::export::text::table::{plain, truncate, Table};
use crate::model::{SiteReport, TOP_REGIONS};
use crate::prose::regions::{cause, function, label};
use crate::units::{pct, secs};

/// Root causes shown per site (the JSON and HTML have all).
const CAUSES_SHOWN: usize = 3;
/// The part of a site's overhead left unexplained from which the text says
/// so: below it, the causes are the answer.
const UNEXPLAINED_SHOWN: f64 = 0.2;

/// Under a significant site with a wait state: why its late ranks were
/// late, one line per root cause.
pub(super) fn cause_lines(o: &mut String, c: &Ctx, site: &SiteReport) {
    let Some(causes) = site.root_causes.as_ref().filter(|_| site.significant) else {
        return;
    };
    let p = site.position;
    // Without regions in the records there was nothing to compare.
    if c.r.regions.is_empty() {
        return;
    }
    // Without late ranks (waits spread over many peers, as in a pipeline)
    // nothing was asked: only how much is left unexplained is said.
    if causes.is_empty() && !site.late_ranks.is_empty() {
        let _ = writeln!(
            o,
            "  #{p} root cause: none stands out (no late rank's code since it last met the \
             waiting ranks took clearly longer than theirs)"
        );
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
    unexplained_line(o, site);
}

/// What the causes leave unexplained, when it is a fifth of the overhead
/// or more: waiting that no late rank's extra work accounts for.
fn unexplained_line(o: &mut String, site: &SiteReport) {
    let (Some(share), Some(overhead)) = (site.root_causes_share, site.overhead_s) else {
        return;
    };
    let rest = (1.0 - share).max(0.0);
    if rest < UNEXPLAINED_SHOWN {
        return;
    }
    let _ = writeln!(
        o,
        "  #{} {} of the overhead ({}) is not explained by extra work of a late rank: waiting that \
         the order of the program's dependencies builds in (a pipeline filling and draining, a \
         chain of messages), a late rank that did not get a CPU (a busy machine), or work that \
         differed from pass to pass",
        site.position,
        if share > 0.0 {
            format!("the other {}", pct(rest))
        } else {
            pct(rest)
        },
        secs(overhead * rest)
    );
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
    let _ = writeln!(o, "  Root causes  {}", crate::prose::root_cause_rule());
}

#[cfg(test)]
mod tests {
    use crate::export::fixture::fixture_report;
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
        // Nine tenths explained: nothing more to say.
        assert!(!out.contains("#1 the other"), "{out}");
        // A third explained: the rest is said, in share and seconds.
        r.sites[0].root_causes_share = Some(1.0 / 3.0);
        let overhead = r.sites[0].overhead_s.unwrap();
        let out = text(&r);
        let rest = format!(
            "  #1 the other 67 % of the overhead ({}) is not explained by extra work of a late rank",
            crate::units::secs(overhead * 2.0 / 3.0)
        );
        assert!(out.contains(&rest), "{rest}\n{out}");
        r.sites[0].root_causes_share = Some(0.9);
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
        r.sites[0].root_causes_share = Some(0.0);
        let out = text(&r);
        assert!(out.contains("  #1 root cause: none stands out"), "{out}");
        assert!(
            out.contains("  #1 100 % of the overhead ("),
            "none explained: all of it said\n{out}"
        );
        // No late rank to ask about (waits spread over many peers): only
        // what is left unexplained.
        let late = std::mem::take(&mut r.sites[0].late_ranks);
        let out = text(&r);
        assert!(!out.contains("#1 root cause"), "{out}");
        assert!(out.contains("  #1 100 % of the overhead ("), "{out}");
        r.sites[0].late_ranks = late;
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
        assert!(
            out.contains("  Root causes  a late rank's code since it last met the waiting ranks")
        );
        // Every rank passes through it: no note on regions of fewer ranks.
        assert!(!out.contains("Ranks below"));
        r.regions[0].ranks = 2;
        assert!(text(&r).contains("  Ranks below 4: only those ranks pass through"));
        r.regions.clear();
        let out = text(&r);
        assert!(!out.contains("REGIONS") && !out.contains("Root causes"));
    }
}
