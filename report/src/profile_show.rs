//! What `mpiover profile show` says of a calibration's clocks and eager
//! limits beyond the raw figures: each host's clock model as an offset and
//! a drift a person can check against what they know of the machines, and
//! which eager limit a report will use and why a measured one can differ
//! from the one the library states.

use mpiover_common::profile::{ClockSync, Profile, RankClock};

use crate::units::precise_secs;

/// A signed duration (`+5.00 ms`, `-120 ns`).
fn signed(s: f64) -> String {
    format!(
        "{}{}",
        if s < 0.0 { "-" } else { "+" },
        precise_secs(s.abs())
    )
}

/// One line per host: its ranks, their clocks' offset from rank 0's at the
/// first fit point (the start of the run), their drift against it in ppm,
/// and the worst fit residual. Ranks of one host read one clock, so their
/// models agree up to the residual: the host's figures are their mean.
pub(crate) fn clock_hosts(prof: &Profile, cs: &ClockSync) -> Vec<String> {
    let hosts = &prof.environment.hosts;
    // Profiles made before ranks carried their host: one host is all of
    // them; of several, the ranks cannot be placed.
    let host_of = |r: &RankClock| -> String {
        if !r.host.is_empty() {
            r.host.clone()
        } else if hosts.len() == 1 {
            hosts[0].clone()
        } else {
            "host not recorded".into()
        }
    };
    let mut names: Vec<String> = Vec::new();
    for r in &cs.ranks {
        let h = host_of(r);
        if !names.contains(&h) {
            names.push(h);
        }
    }
    names
        .iter()
        .map(|h| {
            let rs: Vec<&RankClock> = cs.ranks.iter().filter(|r| &host_of(r) == h).collect();
            let n = rs.len() as f64;
            // The offset at the first fit point: the model's, half its span
            // before the reference time.
            let start = rs
                .iter()
                .map(|r| r.offset_s - r.drift * r.span_s / 2.0)
                .sum::<f64>()
                / n;
            let ppm = rs.iter().map(|r| r.drift).sum::<f64>() / n * 1e6;
            let worst = rs.iter().map(|r| r.residual_s).fold(0.0, f64::max);
            if rs.iter().all(|r| r.shared) {
                return format!(
                    "            {h} ({}): rank 0's clock (one kernel): offset 0, not learned",
                    rank_list(&rs)
                );
            }
            format!(
                "            {h} ({}): offset {} at the start, drift {ppm:+.2} ppm, worst residual {}",
                rank_list(&rs),
                signed(start),
                precise_secs(worst)
            )
        })
        .collect()
}

/// `rank 3`, `ranks 0-1`, `ranks 0, 2`.
fn rank_list(rs: &[&RankClock]) -> String {
    let ids: Vec<u32> = rs.iter().map(|r| r.rank).collect();
    match ids.as_slice() {
        [one] => format!("rank {one}"),
        [a, .., b] if (b - a) as usize + 1 == ids.len() => format!("ranks {a}-{b}"),
        _ => format!(
            "ranks {}",
            ids.iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Which eager limit `mpiover report` takes from this profile (the
/// measured one, before the library's statement: `--eager-limit` alone
/// overrides it), and, where the measured and stated limits differ, why.
pub(crate) fn eager_used(prof: &Profile) -> Vec<String> {
    let Some(p) = &prof.protocol else {
        return vec![
            "  report:   uses the library's MPI_T statement recorded with the run, else 64 KiB \
             (this profile measured no limit); --eager-limit overrides"
                .into(),
        ];
    };
    let Some((same, cross)) = p.rendezvous_bytes_by_host() else {
        return vec![
            "  report:   every size measured was eager: no send is taken for a rendezvous one \
             below the library's MPI_T statement recorded with the run; --eager-limit overrides"
                .into(),
        ];
    };
    let mut out = vec![format!(
        "  report:   uses the measured limits: sends of {same} B or more{} are taken to wait for \
         their receiver (Late Receiver); --eager-limit BYTES overrides",
        cross.map_or(String::new(), |c| format!(
            " within a host, of {c} B or more across hosts,"
        ))
    )];
    let differs = |measured: Option<u64>, stated: Option<u64>| match (measured, stated) {
        (Some(m), Some(s)) if m < p.searched_up_to => m != s,
        _ => false,
    };
    if differs(p.eager_limit_same_host, p.mpi_t.as_ref().map(|t| t.bytes))
        || differs(
            p.eager_limit_cross_host,
            p.mpi_t_cross_host.as_ref().map(|t| t.bytes),
        )
    {
        out.push(
            "            measured and stated differ: the stated value is a setting of the \
             library's eager protocol, the measured one where a blocking send stopped \
             returning before a late receiver posted its receive (a library can copy small \
             messages out at once and hold larger ones, or run short of buffers): what the \
             program's sends do is the measured one, so the report takes it"
                .into(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiover_common::profile::{Environment, Method, MpiTValue, Protocol};

    fn clock(rank: u32, host: &str, offset_s: f64, drift: f64) -> RankClock {
        RankClock {
            rank,
            host: host.into(),
            offset_s,
            drift,
            span_s: 10.0,
            residual_s: 1e-7 * (rank + 1) as f64,
            ..RankClock::default()
        }
    }

    #[test]
    fn each_host_its_offset_at_the_start_and_its_drift() {
        let prof = Profile::new(Environment::default(), Method::default());
        let cs = ClockSync {
            method: "fit".into(),
            fitpoints: 4,
            exchanges: 16,
            resync_interval_s: 10.0,
            ranks: vec![
                clock(0, "node1", 0.0, 0.0),
                clock(1, "node1", 0.0, 0.0),
                // 5 ms ahead at the middle of a 10 s span, 30 ppm faster:
                // 150 us less at the start.
                clock(2, "node2", 5e-3, 30e-6),
                clock(3, "node2", 5e-3, 30e-6),
            ],
        };
        let l = clock_hosts(&prof, &cs);
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(l[0].contains("node1 (ranks 0-1): offset +0"), "{l:?}");
        assert!(
            l[1].contains("node2 (ranks 2-3): offset +4.850 ms"),
            "{l:?}"
        );
        assert!(l[1].contains("drift +30.00 ppm"), "{l:?}");
        assert!(l[1].contains("worst residual 400.0 ns"), "{l:?}");
    }

    #[test]
    fn a_host_on_rank_0s_clock_says_so_instead_of_a_model() {
        let prof = Profile::new(Environment::default(), Method::default());
        let shared = |rank| RankClock {
            shared: true,
            ..clock(rank, "node1", 0.0, 0.0)
        };
        let cs = ClockSync {
            ranks: vec![shared(0), shared(1), clock(2, "node2", 5e-3, 30e-6)],
            ..ClockSync::default()
        };
        let l = clock_hosts(&prof, &cs);
        assert_eq!(
            l[0].trim(),
            "node1 (ranks 0-1): rank 0's clock (one kernel): offset 0, not learned"
        );
        assert!(l[1].contains("node2 (rank 2): offset +4.850 ms"), "{l:?}");
    }

    #[test]
    fn the_report_takes_the_measured_limit_and_says_why_the_stated_differs() {
        let mut prof = Profile::new(Environment::default(), Method::default());
        prof.protocol = Some(Protocol {
            eager_limit_same_host: Some(256),
            eager_limit_cross_host: None,
            searched_up_to: 1 << 20,
            method: "late receiver".into(),
            mpi_t: Some(MpiTValue {
                cvar: "btl_vader_eager_limit".into(),
                bytes: 4096,
            }),
            mpi_t_cross_host: None,
        });
        let l = eager_used(&prof).join("\n");
        assert!(
            l.contains("uses the measured limits: sends of 257 B or more"),
            "{l}"
        );
        assert!(l.contains("measured and stated differ"), "{l}");
        prof.protocol.as_mut().unwrap().eager_limit_same_host = Some(4096);
        let l = eager_used(&prof).join("\n");
        assert!(!l.contains("differ"), "{l}");
    }
}
