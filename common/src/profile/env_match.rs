//! Whether a profile was measured in the environment of a run.

use crate::profile::error::Mismatch;
use crate::profile::schema::{Environment, Profile};

pub(crate) fn norm_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Profile {
    /// Whether this profile may be used in `run` (the environment of an
    /// application run; fields left empty/zero are not compared).
    ///
    /// A mismatch is: another MPI library (version string), another CPU model,
    /// none of the run's hosts among the profile's hosts, more ranks on a host
    /// than were calibrated on any host, another binding policy, one host
    /// against several ([`Profile::hosts_differ`]). Each reason names both
    /// values.
    pub fn matches(&self, run: &Environment) -> Result<(), Mismatch> {
        self.compare(run, true)
    }

    /// [`Profile::matches`] without the host-count check: profiles measured
    /// on one host and on several may be merged (the merged profile has both
    /// kinds of point-to-point entry).
    pub(crate) fn matches_for_merge(&self, run: &Environment) -> Result<(), Mismatch> {
        self.compare(run, false)
    }

    /// Whether a profile measured on one host is used for a run on several,
    /// or one measured across hosts for a run on one, and what that means;
    /// `None` when either list is empty (not known). Several hosts against
    /// several more is not a difference: a profile of 2 hosts has the
    /// cross-host entries a run on 8 looks up.
    pub fn hosts_differ(&self, run_hosts: &[String]) -> Option<String> {
        let me = &self.environment.hosts;
        if me.is_empty() || run_hosts.is_empty() || (me.len() > 1) == (run_hosts.len() > 1) {
            return None;
        }
        Some(if me.len() == 1 {
            format!(
                "hosts differ: profile measured on 1 host ({}), this run is on {} hosts ({}): it has \
                 no cross-host entries, calls between hosts get same-host tmax",
                me.join(","),
                run_hosts.len(),
                run_hosts.join(",")
            )
        } else {
            format!(
                "hosts differ: profile measured on {} hosts ({}), this run is on 1 host ({}): its \
                 collectives and the tmax of point-to-point calls were measured across hosts",
                me.len(),
                me.join(","),
                run_hosts.join(",")
            )
        })
    }

    fn compare(&self, run: &Environment, host_count: bool) -> Result<(), Mismatch> {
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
        if host_count {
            reasons.extend(self.hosts_differ(&run.hosts));
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
