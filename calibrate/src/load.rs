//! How busy the host is while the calibration measures.
//!
//! Ideal conditions are the method's premise: a sample measured while other
//! processes compete for the cores holds their scheduling noise, and its tmax
//! moves with their load (a calibration on a busy 2-core VM had medians about
//! 50 times an idle one's). The check reads, at the start and at the end of a
//! run, `/proc/stat` (busy and stolen CPU time of the whole host) and
//! `/proc/loadavg`, and every rank's own CPU time (`getrusage`). What the host
//! spent beyond the calibration's ranks is other work. Only rank 0's host is
//! read (the ranks of other hosts are not counted against it).
use mpiover_common::profile::HostLoad;

/// Host-wide CPU counters of `/proc/stat`'s first line, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq.
    pub busy_s: f64,
    pub steal_s: f64,
    /// Every field but guest time (which user time already counts).
    pub total_s: f64,
}

/// A reading at one moment.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    pub cpu: Option<CpuTimes>,
    pub loadavg: Option<f64>,
    /// Monotonic time, seconds.
    pub at_s: f64,
}

/// Parses the `cpu ` line of `/proc/stat` (jiffies of `ticks_per_s`).
pub fn parse_stat(text: &str, ticks_per_s: f64) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse::<f64>().ok())
        .collect::<Option<Vec<_>>>()?;
    if v.len() < 8 || ticks_per_s <= 0.0 {
        return None;
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    let busy = v[0] + v[1] + v[2] + v[5] + v[6];
    let total: f64 = v[..8].iter().sum();
    Some(CpuTimes {
        busy_s: busy / ticks_per_s,
        steal_s: v[7] / ticks_per_s,
        total_s: total / ticks_per_s,
    })
}

/// The first field of `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The host's counters now (rank 0).
pub fn read() -> Reading {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Reading {
        cpu: std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|t| parse_stat(&t, hz)),
        loadavg: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|t| parse_loadavg(&t)),
        at_s: mpiover_common::timer::mono_ns() as f64 * 1e-9,
    }
}

/// This process's CPU time (user + system, every thread), seconds.
pub fn own_cpu_s() -> f64 {
    // SAFETY: rusage is plain integers and timevals, for which all-zero
    // bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live local that getrusage fills.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The verdict over a run: `ours_s` is the CPU time the calibration's ranks
/// on the host used between the readings. None when a reading is missing.
pub fn judge(start: &Reading, end: &Reading, ours_s: f64) -> Option<HostLoad> {
    let (a, b) = (start.cpu?, end.cpu?);
    let wall = end.at_s - start.at_s;
    if wall.is_nan() || wall <= 0.0 {
        return None;
    }
    let busy = (b.busy_s - a.busy_s).max(0.0);
    let total = (b.total_s - a.total_s).max(0.0);
    let steal = (b.steal_s - a.steal_s).max(0.0);
    let others = ((busy - ours_s) / wall).max(0.0);
    let steal_share = if total > 0.0 { steal / total } else { 0.0 };
    Some(HostLoad {
        wall_s: wall,
        others_cpus: others,
        steal_share,
        loadavg_start: start.loadavg.unwrap_or(0.0),
        loadavg_end: end.loadavg.unwrap_or(0.0),
        busy: HostLoad::judge(others, steal_share),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 20 30 1000 5 1 2 4 0 0\ncpu0 50 10 15 500 2 0 1 2 0 0\n";

    #[test]
    fn stat_and_loadavg_parse() {
        let c = parse_stat(STAT, 100.0).unwrap();
        assert_eq!(c.busy_s, 1.53);
        assert_eq!(c.steal_s, 0.04);
        assert!((c.total_s - 11.62).abs() < 1e-12);
        assert_eq!(parse_loadavg("0.52 0.58 0.59 1/389 12345\n"), Some(0.52));
        assert!(parse_stat("intr 1 2 3\n", 100.0).is_none());
        assert!(parse_stat("cpu  1 2 x 4 5 6 7 8\n", 100.0).is_none());
    }

    /// Other work is what the host was busy with beyond our own CPU time.
    #[test]
    fn others_are_the_busy_time_we_did_not_use() {
        let r = |busy: f64, steal: f64, total: f64, at: f64| Reading {
            cpu: Some(CpuTimes {
                busy_s: busy,
                steal_s: steal,
                total_s: total,
            }),
            loadavg: Some(1.0),
            at_s: at,
        };
        // 10 s on 2 CPUs: 20 CPU-s; busy 19, of which ours 18: others 0.1 CPUs.
        let quiet = judge(&r(0.0, 0.0, 0.0, 0.0), &r(19.0, 0.1, 20.0, 10.0), 18.0).unwrap();
        assert!((quiet.others_cpus - 0.1).abs() < 1e-12);
        assert!(!quiet.busy, "{quiet:?}");
        // Busy 19, ours 9: another process used a CPU.
        let busy = judge(&r(0.0, 0.0, 0.0, 0.0), &r(19.0, 0.1, 20.0, 10.0), 9.0).unwrap();
        assert!((busy.others_cpus - 1.0).abs() < 1e-12 && busy.busy);
        // Steal alone makes a host busy.
        let stolen = judge(&r(0.0, 0.0, 0.0, 0.0), &r(10.0, 2.0, 20.0, 10.0), 10.0).unwrap();
        assert!(stolen.busy && (stolen.steal_share - 0.1).abs() < 1e-12);
        assert!(judge(&Reading::default(), &r(1.0, 0.0, 2.0, 1.0), 0.0).is_none());
    }
}
