//! What the end of a run says about a profile with holes or weak entries,
//! and which option fixes each cause: the budget that cut an entry short is
//! the one to raise, not another.

use mpiover_common::profile::{Basis, Profile, ProfileEntry, StopReason};

/// At most this many entries are named in one line.
const NAMED: usize = 4;

fn name(e: &ProfileEntry) -> String {
    format!("{} p={} {} B (n = {})", e.function, e.p, e.bytes, e.n)
}

fn listed(es: &[&ProfileEntry]) -> String {
    let mut s: Vec<String> = es.iter().take(NAMED).map(|e| name(e)).collect();
    if es.len() > NAMED {
        s.push(format!("{} more", es.len() - NAMED));
    }
    s.join(", ")
}

/// The warnings of a finished run, each with the option that fixes its
/// cause; empty when the profile is complete and every entry strong.
/// `host_cpus`: the CPUs the ranks of rank 0's host (the profile's first
/// host) may run on together, from their affinity (0: unknown): fewer than
/// the machine's under a cpuset or a container, and what the calibrator
/// counted when it chose to spin or yield.
pub(crate) fn warnings(prof: &Profile, output: &str, host_cpus: u32) -> Vec<String> {
    let mut w = Vec::new();
    let budget = prof
        .skipped
        .iter()
        .filter(|s| s.reason == "time budget")
        .count();
    if budget > 0 {
        w.push(format!(
            "{budget} planned entries not measured: the run's time budget ran out before they \
             started (listed under \"skipped\" in {output}); --resume with a larger \
             --time-budget measures them"
        ));
    }
    let invalid: Vec<String> = prof
        .skipped
        .iter()
        .filter(|s| s.reason != "time budget")
        .map(|s| format!("{} p={} {} B", s.function, s.p, s.bytes))
        .collect();
    if !invalid.is_empty() {
        // Named: a hole in the grid moves every lookup between its
        // neighbours to them (or beyond the measured range).
        let mut named: Vec<String> = invalid.iter().take(NAMED).cloned().collect();
        if invalid.len() > NAMED {
            named.push(format!("{} more", invalid.len() - NAMED));
        }
        w.push(format!(
            "{} planned entries not measured ({}): they got no valid sample, also when measured \
             again at the end (every window was late, overrun or preempted; listed under \
             \"skipped\" in {output}); lookups there use the neighbouring entries. The machine \
             is busier than its cores allow, so run with fewer ranks per core or on an idle \
             machine, and give them time with a larger --entry-budget",
            invalid.len(),
            named.join(", ")
        ));
    }
    if let Some(l) = prof
        .runs
        .last()
        .and_then(|r| r.load.as_ref())
        .filter(|l| l.busy)
    {
        w.push(format!(
            "the host was busy while it was calibrated ({}): the samples hold that work's \
             scheduling noise and tmax will move with its load; calibrate again with the host \
             idle (`top` shows what runs), or expect overhead that is only the load",
            l.describe()
        ));
    }
    if let Some(l) = prof
        .runs
        .last()
        .and_then(|r| r.load.as_ref())
        .filter(|l| l.unsteady && !l.busy)
    {
        w.push(format!(
            "the calls' typical time moved while they were measured, with the host otherwise \
             idle ({}): this machine's latency changes over time (on a shared or virtual machine \
             it can switch between levels every few seconds), and tmax holds the states this run \
             saw; {}",
            l.describe(),
            if prof.method.rounds > 1 {
                "its entries were pooled over --rounds already: a longer --spread sees more states"
                    .to_string()
            } else {
                format!(
                    "calibrate with --rounds 6 --spread 60 so that every entry is measured across \
                     them, or merge calibrations (`{} profile merge`)",
                    mpiover_common::suggest::program("mpiover")
                )
            }
        ));
    }
    let env = &prof.environment;
    let on_first = env.ranks_per_host.first().copied().unwrap_or(0);
    let cpus = match (host_cpus, env.cpus) {
        (0, c) => c,
        (h, 0) => h,
        (h, c) => h.min(c),
    };
    if cpus > 0 && on_first > cpus {
        w.push(format!(
            "{on_first} ranks shared the {} of {}: a rank that waits in an MPI call keeps \
             its CPU when the library spins while it polls (MPICH's ch4 device does), so a \
             collective ends only once the scheduler has run every rank, calls take time \
             slices (milliseconds) and few samples fit an entry's budget; the profile describes \
             this host's scheduler. For ideal conditions calibrate, and run, at most one rank \
             per CPU",
            if cpus == 1 {
                "1 CPU".to_string()
            } else {
                format!("{cpus} CPUs")
            },
            env.hosts.first().map_or("the host", String::as_str)
        ));
    }
    let min = prof.method.min_samples;
    let short = |stop: StopReason| -> Vec<&ProfileEntry> {
        prof.entries
            .iter()
            .filter(|e| e.n < min && e.stop == Some(stop))
            .collect()
    };
    let by_entry = short(StopReason::EntryBudget);
    if !by_entry.is_empty() {
        let raise = match prof.method.pace_s {
            Some(p) => format!(
                "a larger --pace (now {p} s; it divides the run's time among the entries and \
                 cut their budgets) or a larger --entry-budget"
            ),
            None => format!(
                "a larger --entry-budget (now {} s)",
                prof.method.entry_budget_s
            ),
        };
        w.push(format!(
            "{} entries stopped at their time budget with fewer than the {min} samples the \
             stopping rule asks ({}): their tmax is weak and the report says so; {raise} \
             measures them fully",
            by_entry.len(),
            listed(&by_entry)
        ));
    }
    let by_run = short(StopReason::TimeBudget);
    if !by_run.is_empty() {
        w.push(format!(
            "{} entries were cut short by the run's time budget with fewer than the {min} \
             samples the stopping rule asks ({}): a larger --time-budget measures them fully",
            by_run.len(),
            listed(&by_run)
        ));
    }
    let skewed: Vec<&ProfileEntry> = prof
        .entries
        .iter()
        .filter(|e| Basis::judged(e, &prof.method).skewed)
        .collect();
    if !skewed.is_empty() {
        let residual = prof.method.clock_sync.as_ref().map_or(0.0, |c| {
            c.ranks.iter().map(|r| r.residual_s).fold(0.0, f64::max)
        });
        w.push(format!(
            "the clock synchronization's residual ({:.1} us) exceeds the median call of {} \
             entries ({}): their windows did not start the ranks together, so their tmax holds \
             the skew; calibrate on an idle machine, with more --sync-exchanges per fit point",
            residual * 1e6,
            skewed.len(),
            listed(&skewed)
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiover_common::profile::{Environment, Measured, Method, Skipped};

    fn entry(n: u64, stop: StopReason) -> ProfileEntry {
        ProfileEntry {
            function: "MPI_Allreduce".into(),
            p: 4,
            bytes: 1,
            role: None,
            same_host: None,
            measured: Measured {
                hosts: 1,
                n,
                n_invalid: 0,
                n_late: 0,
                n_overrun: 0,
                n_preempted: 0,
                min_s: 1e-6,
                median_s: 2e-6,
                median_ci_s: None,
                max_s: None,
                q90_s: None,
                q99_s: None,
                tmax_s: 12e-3,
                model: None,
                lambda: None,
                params: None,
                chi2: None,
                df: None,
                critical: None,
                accepted: false,
                fallback: true,
                tail_test: None,
                bin_width_s: None,
                window_s: None,
                stop: Some(stop),
                sum_s: None,
                elapsed_s: None,
                note: None,
            },
            runs: Vec::new(),
            samples: None,
        }
    }

    fn profile(entries: Vec<ProfileEntry>, pace: Option<f64>) -> Profile {
        let mut p = Profile::new(
            Environment::default(),
            Method {
                min_samples: 200,
                entry_budget_s: 1.5,
                pace_s: pace,
                ..Method::default()
            },
        );
        for e in entries {
            p.push_entry(e);
        }
        p
    }

    #[test]
    fn entries_cut_by_their_budget_name_that_budget_not_the_run_budget() {
        let w = warnings(
            &profile(vec![entry(16, StopReason::EntryBudget)], None),
            "p.json",
            0,
        );
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("--entry-budget (now 1.5 s)"), "{w:?}");
        assert!(w[0].contains("MPI_Allreduce p=4 1 B (n = 16)"), "{w:?}");
        assert!(!w[0].contains("--time-budget"), "{w:?}");
        // Paced: the pace is what cut them.
        let w = warnings(
            &profile(vec![entry(16, StopReason::EntryBudget)], Some(90.0)),
            "p",
            0,
        );
        assert!(w[0].contains("--pace (now 90 s"), "{w:?}");
    }

    #[test]
    fn the_run_budget_and_invalid_windows_have_their_own_advice() {
        let mut p = profile(vec![entry(50, StopReason::TimeBudget)], None);
        p.skipped.push(Skipped {
            function: "MPI_Bcast".into(),
            p: 4,
            bytes: 1,
            reason: "no valid sample".into(),
        });
        let w = warnings(&p, "p.json", 0);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("no valid sample")
                && w[0].contains("--entry-budget")
                && w[0].contains("(MPI_Bcast p=4 1 B)"),
            "{w:?}"
        );
        assert!(w[1].contains("--time-budget"), "{w:?}");
    }

    #[test]
    fn more_ranks_than_cpus_is_said_with_its_consequence() {
        let mut p = profile(vec![entry(400, StopReason::Stable)], None);
        p.environment.cpus = 2;
        p.environment.ranks_per_host = vec![4];
        p.environment.hosts = vec!["node1".into()];
        let w = warnings(&p, "p", 0);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("4 ranks shared the 2 CPUs of node1"),
            "{w:?}"
        );
    }

    #[test]
    fn more_ranks_than_the_cpus_their_affinity_allows_is_said() {
        // Two ranks on a 2-CPU machine, both allowed only CPU 0 (a cpuset,
        // or a fake-cluster host): oversubscribed, though the machine is not.
        let mut p = profile(vec![entry(400, StopReason::Stable)], None);
        p.environment.cpus = 2;
        p.environment.ranks_per_host = vec![2];
        p.environment.hosts = vec!["node1".into()];
        assert!(warnings(&p, "p", 2).is_empty());
        let w = warnings(&p, "p", 1);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("2 ranks shared the 1 CPU of node1"),
            "{w:?}"
        );
    }

    #[test]
    fn a_full_profile_says_nothing() {
        assert!(warnings(&profile(vec![entry(400, StopReason::Stable)], None), "p", 0).is_empty());
    }

    /// Every option a warning names is one the calibrator has.
    #[test]
    fn the_options_named_are_the_calibrators() {
        use clap::CommandFactory;
        let cmd = crate::args::Args::command();
        let known: Vec<String> = cmd
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        let code = include_str!("advice.rs");
        let code = &code[..code.find("#[cfg(test)]").unwrap()];
        let mut named = 0;
        for (i, _) in code.match_indices("--") {
            let word: String = code[i + 2..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                .collect();
            if word.is_empty() {
                continue;
            }
            named += 1;
            assert!(
                known.contains(&format!("--{word}")),
                "--{word} is no option of the calibrator"
            );
        }
        assert!(named >= 8, "{named} options found");
    }

    /// The README tells which warning asks for --rounds in the words the
    /// calibrator prints: an unsteady idle host (its warning and the load
    /// line it quotes), not a busy one.
    #[test]
    fn the_readme_quotes_the_unsteady_warning_as_printed() {
        let mut p = profile(vec![], None);
        let load = mpiover_common::profile::HostLoad {
            wall_s: 30.0,
            ..Default::default()
        };
        let ratios = vec![1.2; 25];
        p.runs.push(mpiover_common::profile::CalibrationRun {
            load: Some(load.clone().with_drift(ratios.clone())),
            ..Default::default()
        });
        let unsteady = warnings(&p, "p.json", 0).join("\n");
        p.runs[0].load = Some(mpiover_common::profile::HostLoad {
            others_cpus: 1.0,
            busy: true,
            ..load.with_drift(ratios)
        });
        let busy = warnings(&p, "p.json", 0).join("\n");
        let readme = include_str!("../../README.md")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for phrase in [
            "the calls' typical time moved while they were measured, with the host otherwise idle",
            "entries' medians moved x",
        ] {
            assert!(unsteady.contains(phrase), "{phrase:?} not in {unsteady}");
            assert!(
                readme.contains(phrase),
                "the README does not quote {phrase:?}"
            );
        }
        let busy_phrase = "the host was busy while it was calibrated";
        assert!(
            busy.contains(busy_phrase) && busy.contains("entries' medians moved x"),
            "{busy}"
        );
        assert!(
            readme.contains(busy_phrase),
            "the README does not quote {busy_phrase:?}"
        );
    }
}
