//! Facts about the local machine for the environment a profile or a record
//! states (no MPI): CPU model and count, binding, OS, MPI variables, dates.

use std::collections::BTreeMap;

/// `model name` of the first CPU in /proc/cpuinfo (or `unknown`).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| {
                    l.starts_with("model name")
                        || l.starts_with("Processor")
                        || l.starts_with("cpu model")
                })
                .and_then(|l| l.split_once(':').map(|x| x.1.trim().to_string()))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Number of CPUs listed in /proc/cpuinfo.
pub fn cpus_online() -> u32 {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count() as u32)
        .unwrap_or(0)
}

/// This process's allowed CPUs (`Cpus_allowed_list` of /proc/self/status).
pub fn cpus_allowed_list() -> Option<String> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Cpus_allowed_list:"))
                .map(|l| l["Cpus_allowed_list:".len()..].trim().to_string())
        })
}

/// Number of CPUs in a CPU list like `0-3,6`.
pub fn cpu_list_len(list: &str) -> u32 {
    list.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|part| match part.trim().split_once('-') {
            Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
                (Ok(a), Ok(b)) if b >= a => b - a + 1,
                _ => 0,
            },
            None => u32::from(part.trim().parse::<u32>().is_ok()),
        })
        .sum()
}

/// The binding policy asked for through the environment, if any.
pub fn binding_policy() -> Option<String> {
    for var in [
        "OMPI_MCA_hwloc_base_binding_policy",
        "MPICH_BIND_TO",
        "HYDRA_BINDING",
        "I_MPI_PIN_DOMAIN",
    ] {
        if let Ok(v) = std::env::var(var) {
            if !v.is_empty() {
                return Some(format!("{var}={v}"));
            }
        }
    }
    None
}

/// Kernel release.
pub fn os_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!("Linux {}", s.trim()))
        .unwrap_or_else(|_| std::env::consts::OS.to_string())
}

/// MPI tuning variables of the environment.
pub fn mpi_env() -> BTreeMap<String, String> {
    const PREFIXES: &[&str] = &[
        "OMPI_MCA_",
        "MPICH_",
        "MPIR_CVAR_",
        "I_MPI_",
        "UCX_",
        "PSM2_",
        "FI_",
        "HYDRA_",
    ];
    std::env::vars()
        .filter(|(k, _)| PREFIXES.iter().any(|p| k.starts_with(p)))
        .collect()
}

/// UTC date-time of a Unix time, ISO 8601 (`2026-01-31T12:00:00Z`).
pub fn iso8601_utc(unix_s: f64) -> String {
    let secs = unix_s.floor() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Current Unix time in seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The first line of an `MPI_Get_library_version` string with its runs of
/// white space (MPICH separates with tabs) made one space: what a report
/// header shows.
pub fn library_headline(version: &str) -> String {
    version
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod headline_tests {
    #[test]
    fn mpich_tabs_become_one_space_and_only_the_first_line_is_kept() {
        let v = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7";
        assert_eq!(super::library_headline(v), "MPICH Version: 4.0.2");
        let o = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4";
        assert_eq!(super::library_headline(o), o);
    }
}

#[cfg(test)]
mod date_and_cpu_list_tests {
    use super::{cpu_list_len, iso8601_utc};

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601_utc(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601_utc(951_782_400.0), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601_utc(1_700_000_000.0), "2023-11-14T22:13:20Z");
        assert_eq!(cpu_list_len("0-3,6"), 5);
        assert_eq!(cpu_list_len("1"), 1);
    }
}
