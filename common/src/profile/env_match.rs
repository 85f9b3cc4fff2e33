//! Whether a profile was measured in the environment of a run.

use super::*;

pub(crate) fn norm_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Profile {
    /// Whether this profile may be used in `run` (the environment of an
    /// application run; fields left empty/zero are not compared).
    ///
    /// A mismatch is: another MPI library (version string), another CPU model,
    /// none of the run's hosts among the profile's hosts, more ranks on a host
    /// than were calibrated on any host, another binding policy. Each reason
    /// names both values.
    pub fn matches(&self, run: &Environment) -> Result<(), Mismatch> {
        let me = &self.environment;
        let mut reasons = Vec::new();
        if !me.mpi_library.is_empty()
            && !run.mpi_library.is_empty()
            && norm_ws(&me.mpi_library) != norm_ws(&run.mpi_library)
        {
            reasons.push(format!(
                "MPI library differs: profile \"{}\", this run \"{}\"",
                first_line(&me.mpi_library),
                first_line(&run.mpi_library)
            ));
        }
        if !me.cpu_model.is_empty()
            && !run.cpu_model.is_empty()
            && norm_ws(&me.cpu_model) != norm_ws(&run.cpu_model)
        {
            reasons.push(format!(
                "CPU differs: profile \"{}\", this run \"{}\"",
                me.cpu_model, run.cpu_model
            ));
        }
        if !me.hosts.is_empty()
            && !run.hosts.is_empty()
            && !run.hosts.iter().any(|h| me.hosts.contains(h))
        {
            reasons.push(format!(
                "other machine: profile measured on {}, this run is on {}",
                me.hosts.join(","),
                run.hosts.join(",")
            ));
        }
        let max_me = me.ranks_per_host.iter().copied().max().unwrap_or(0);
        let max_run = run.ranks_per_host.iter().copied().max().unwrap_or(0);
        if max_me > 0 && max_run > max_me {
            reasons.push(format!(
                "{max_run} ranks on a host, the profile was measured with at most {max_me} per host"
            ));
        }
        if let (Some(a), Some(b)) = (&me.binding.policy, &run.binding.policy) {
            if a != b {
                reasons.push(format!("binding policy differs: profile {a}, this run {b}"));
            }
        }
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(Mismatch { reasons })
        }
    }
}

pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("").trim()
}
