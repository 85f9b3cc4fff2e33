//! The profile's entries by where their tmax comes from, as the methods
//! block names them.

use serde::{Deserialize, Serialize};

/// The profile's entries by the source of their tmax.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TmaxFrom {
    pub entries: u64,
    /// Entries per chosen model family (`mixture`, `lognormal`, ...).
    pub models: std::collections::BTreeMap<String, u64>,
    /// Entries where every model was rejected: tmax is the empirical q_max
    /// quantile of the sample.
    pub empirical: u64,
}

impl TmaxFrom {
    /// Counts a profile's entries.
    pub fn of(p: &mpiover_common::profile::Profile) -> TmaxFrom {
        let mut t = TmaxFrom {
            entries: p.entries.len() as u64,
            ..Default::default()
        };
        for e in &p.entries {
            match e.model.filter(|_| !e.fallback) {
                Some(m) => *t.models.entry(m.to_string()).or_insert(0) += 1,
                None => t.empirical += 1,
            }
        }
        t
    }

    /// "tmax from a model on 88 of 103 entries (mixture 18, lognormal 10, a
    /// generalized Pareto tail 60), the empirical q quantile on 15".
    pub fn describe(&self, q_max: Option<f64>) -> String {
        let modelled = self.entries - self.empirical;
        // Body families first, then the tail model, which is no family of the body.
        let mut fams: Vec<String> = self
            .models
            .iter()
            .filter(|(k, _)| k.as_str() != "tail")
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if let Some(t) = self.models.get("tail") {
            fams.push(format!("a generalized Pareto tail {t}"));
        }
        format!(
            "tmax from an error model on {modelled} of {} entries{}, the empirical {} quantile on {}",
            self.entries,
            if fams.is_empty() {
                String::new()
            } else {
                format!(" ({})", fams.join(", "))
            },
            q_max.map_or("q_max".to_string(), |q| q.to_string()),
            self.empirical
        )
    }
}
