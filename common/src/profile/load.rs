//! How busy the host was while a calibration run measured (`runs[].load`):
//! the reading, its verdicts and the one line that describes it.

use serde::{Deserialize, Serialize};

/// What else ran on rank 0's host while a calibration run measured: the
/// samples of a busy host hold the other work's noise, and its tmax moves
/// with that load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostLoad {
    /// Seconds between the two readings.
    pub wall_s: f64,
    /// CPUs the other processes of the host kept busy on average: the
    /// host's busy CPU time (`/proc/stat`) less the calibration ranks' own
    /// (`getrusage`), over the wall time.
    pub others_cpus: f64,
    /// Share of the host's CPU time the hypervisor gave to other guests
    /// (`steal` in `/proc/stat`).
    pub steal_share: f64,
    /// The 1-minute load average at the start and at the end.
    pub loadavg_start: f64,
    pub loadavg_end: f64,
    /// How far the entries' typical call moved while each was measured:
    /// over the run's entries of at least `DRIFT_MIN_SAMPLES` samples, the
    /// median of (larger / smaller) of the medians of the first and the
    /// second half of the entry's samples in measurement order. About
    /// 1.01-1.06 on an idle host; load that comes and goes moves it.
    /// Absent when fewer than `DRIFT_MIN_ENTRIES` entries qualify.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<f64>,
    /// The entries `drift` is the median over.
    #[serde(skip_serializing_if = "is_zero")]
    pub drift_entries: u32,
    /// The verdict: other work used more than a quarter of a CPU, or steal
    /// was above 5 %.
    pub busy: bool,
    /// `drift` above `UNSTEADY_DRIFT`: the calls' typical time moved during
    /// the run, by load that came and went or, with nothing else running, by
    /// the machine itself (a virtual machine whose latency switches between
    /// levels every few seconds).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unsteady: bool,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl HostLoad {
    /// Other processes' average CPU use above which a host is busy.
    pub const BUSY_OTHERS_CPUS: f64 = 0.25;
    /// Steal share above which a host is busy.
    pub const BUSY_STEAL: f64 = 0.05;

    /// Half-to-half median ratio above which the medians moved during the
    /// run. Quick calibrations of this project's idle 2-core VM (2-3 s)
    /// read 1.01-1.06 (Open MPI) and up to 1.09 (MPICH, 4 ranks spinning on
    /// 2 CPUs); with another process taking one or two CPUs, 1.12-1.18; in
    /// six rounds spread over 26 s on the idle VM, 1.14-1.35.
    pub const UNSTEADY_DRIFT: f64 = 1.10;
    /// Samples an entry needs to count in `drift` (20 per half).
    pub const DRIFT_MIN_SAMPLES: usize = 40;
    /// Entries `drift` needs to be stated at all.
    pub const DRIFT_MIN_ENTRIES: usize = 20;

    /// The reading's verdict (see `busy`).
    pub fn judge(others_cpus: f64, steal_share: f64) -> bool {
        others_cpus > Self::BUSY_OTHERS_CPUS || steal_share > Self::BUSY_STEAL
    }

    /// Sets `drift` from the half-to-half ratios of the entries (one per
    /// entry, see `drift`) and `unsteady` from it.
    pub fn with_drift(mut self, mut ratios: Vec<f64>) -> HostLoad {
        ratios.retain(|r| r.is_finite() && *r >= 1.0);
        if ratios.len() >= Self::DRIFT_MIN_ENTRIES {
            self.drift_entries = ratios.len() as u32;
            self.drift = Some(super::samples::median_of(ratios));
        }
        self.unsteady = self.drift.is_some_and(|d| d > Self::UNSTEADY_DRIFT);
        self
    }

    /// One line: what ran beside the calibration.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "other processes used {:.2} CPUs on average over {:.1} s, steal {:.1} %, load average {:.2} -> {:.2}",
            self.others_cpus,
            self.wall_s,
            100.0 * self.steal_share,
            self.loadavg_start,
            self.loadavg_end
        );
        if let Some(d) = self.drift {
            s += &format!(
                ", entries' medians moved x{d:.2} between the halves of their samples \
                 (median of {} entries{})",
                self.drift_entries,
                if d > Self::UNSTEADY_DRIFT {
                    format!(", above {:.2}", Self::UNSTEADY_DRIFT)
                } else {
                    String::new()
                }
            );
        }
        s
    }
}
