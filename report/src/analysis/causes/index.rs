//! The regions indexed for the root-cause analysis, and the region table of
//! the report (load imbalance per region).

use mpiover_aggregate::{RegionAcc, RegionId, RegionRank};

use super::super::site_row::{file_line, function_name};
use super::super::*;

/// The regions, indexed for the analysis: each one's rows sorted by rank,
/// and the regions by the site that ended them.
pub(crate) struct RegionIndex<'a> {
    regions: &'a HashMap<RegionId, RegionAcc>,
    by_end: HashMap<&'a SiteKey, Vec<&'a RegionId>>,
}

impl<'a> RegionIndex<'a> {
    /// `regions`' rows must be sorted by rank ([`sort_rows`]).
    pub(crate) fn new(regions: &'a HashMap<RegionId, RegionAcc>) -> RegionIndex<'a> {
        let mut by_end: HashMap<&SiteKey, Vec<&RegionId>> = HashMap::default();
        for id in regions.keys() {
            by_end.entry(&id.to).or_default().push(id);
        }
        for v in by_end.values_mut() {
            v.sort();
        }
        RegionIndex { regions, by_end }
    }

    /// `rank`'s passes through the region, when it ran it.
    pub(super) fn row(&self, id: &RegionId, rank: u32) -> Option<&RegionRank> {
        let rows = &self.regions.get(id)?.per_rank;
        let i = rows.binary_search_by_key(&rank, |r| r.rank).ok()?;
        rows.get(i)
    }

    /// The regions that ended at `site`, in a fixed order.
    pub(super) fn ending_at(&self, site: &SiteKey) -> &[&'a RegionId] {
        self.by_end.get(site).map_or(&[], |v| v.as_slice())
    }
}

/// Sorts every region's rows by rank (for [`RegionIndex`]).
pub(crate) fn sort_rows(regions: &mut HashMap<RegionId, RegionAcc>) {
    for r in regions.values_mut() {
        r.per_rank.sort_by_key(|r| r.rank);
    }
}

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One end of a region as the report names it.
pub(crate) fn end_report(key: &SiteKey) -> RegionEndReport {
    let (file, line) = file_line(&key.loc);
    RegionEndReport {
        file,
        line,
        function: function_name(key),
        mpi_function: key.mpi.clone(),
        location: key.loc.display(),
    }
}

pub(crate) fn region_ref(id: &RegionId) -> RegionRef {
    RegionRef {
        from: end_report(&id.from),
        to: end_report(&id.to),
    }
}

/// Load imbalance of every region, largest first.
pub(crate) fn region_reports(regions: &HashMap<RegionId, RegionAcc>) -> Vec<RegionReport> {
    let mut out: Vec<RegionReport> = regions
        .iter()
        .filter(|(_, r)| !r.per_rank.is_empty())
        .map(|(id, r)| {
            let times: Vec<f64> = r.per_rank.iter().map(|x| x.time).collect();
            let (max_rank, max_s) = r
                .per_rank
                .iter()
                .map(|x| (x.rank, x.time))
                .fold((0, f64::NEG_INFINITY), |a, b| if b.1 > a.1 { b } else { a });
            let min_s = times.iter().copied().fold(f64::INFINITY, f64::min);
            let mut median_s = median(times);
            let mut ranks = r.per_rank.len() as u32;
            // Bounded in a merged job log: every rank's time is in the
            // sketch; the slowest and fastest rows are kept.
            if let Some(s) = r.spread.as_ref().filter(|s| s.time.n > u64::from(ranks)) {
                median_s = s.time.median();
                ranks = s.time.n.min(u64::from(u32::MAX)) as u32;
            }
            RegionReport {
                region: region_ref(id),
                ranks,
                passes: r.count,
                time_s: r.time.get(),
                max_s,
                median_s,
                min_s,
                max_rank,
                imbalance_s: max_s - median_s,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.imbalance_s
            .total_cmp(&a.imbalance_s)
            .then(b.time_s.total_cmp(&a.time_s))
            .then_with(|| a.region.from.location.cmp(&b.region.from.location))
            .then_with(|| a.region.to.location.cmp(&b.region.to.location))
    });
    out
}
