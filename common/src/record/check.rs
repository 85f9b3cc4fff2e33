//! A record's internal consistency, whatever file or job log frame it came
//! from: beside the record so that every reader (the run directory, the job
//! log) checks it alike without importing the other.

use super::Record;

/// What is wrong inside a record; the reader adds where the record is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordFault {
    #[error("{0}")]
    Invalid(String),
    #[error("rank {rank} is not below the number of ranks ({ranks})")]
    RankOutOfRange { rank: u32, ranks: u32 },
}

impl Record {
    /// The internal consistency of one record: the rank is in range, every entry
    /// names a known site, histograms are well formed, figures are finite.
    pub fn check(&self) -> Result<(), RecordFault> {
        let rec = self;
        let invalid = RecordFault::Invalid;
        if rec.ranks == 0 {
            return Err(invalid("\"ranks\" is 0".into()));
        }
        if rec.rank >= rec.ranks {
            return Err(RecordFault::RankOutOfRange {
                rank: rec.rank,
                ranks: rec.ranks,
            });
        }
        if !(rec.timer.unit_s.is_finite() && rec.timer.unit_s > 0.0) {
            return Err(invalid(format!(
                "timer.unit_s is {}, expected a positive number of seconds",
                rec.timer.unit_s
            )));
        }
        for (name, v) in [
            ("app_time_s", rec.app_time_s),
            ("mpi_time_s", rec.mpi_time_s),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(invalid(format!("{name} is {v}")));
            }
        }
        let mut ids: Vec<u32> = rec.sites.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(invalid(format!("site id {} is defined twice", w[0])));
        }
        for (i, e) in rec.entries.iter().enumerate() {
            if ids.binary_search(&e.site).is_err() {
                return Err(invalid(format!(
                    "entries[{i}] ({}) refers to site {} which is not in \"sites\"",
                    e.function, e.site
                )));
            }
            if let Some(ps) = e.post_site {
                if ids.binary_search(&ps).is_err() {
                    return Err(invalid(format!(
                        "entries[{i}] ({}) refers to post_site {ps} which is not in \"sites\"",
                        e.function
                    )));
                }
            }
            if !e.hist.is_valid() {
                return Err(invalid(format!(
                    "entries[{i}] ({}): malformed histogram",
                    e.function
                )));
            }
            if !e.sum_s.is_finite() || e.sum_s < 0.0 {
                return Err(invalid(format!(
                    "entries[{i}] ({}): sum_s is {}",
                    e.function, e.sum_s
                )));
            }
        }
        Ok(())
    }
}
