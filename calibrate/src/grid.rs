//! The grid of base points and the job list.
//!
//! Process counts p in {2, 3, 4, 6, 8, 12, 16, 24, ...} (2^n and 1.5 * 2^n,
//! the overhead paper §8) up to the world size; sizes 1, 10, 20, ..., 100, 200, ...,
//! 1000, ... up to 4 MiB. A job is one (pattern, p, bytes); point-to-point
//! patterns run on pairs (`same_host` true, and false when the job spans
//! several hosts) instead of on p.
//!
//! Jobs are shuffled with a seeded generator (recorded), in two levels: first
//! the coarse sizes (1, 100, 10^4, 10^6 and the largest), then the others, so
//! that a run stopped by its time budget still has a usable coarse grid.

use mpiover_common::rng::Rng;

use crate::pattern::Pattern;

/// Default sizes up to `max`: 1, 10..100 by 10, 200..1000 by 100, ... and `max`.
pub fn default_sizes(max: u64) -> Vec<u64> {
    let mut v = vec![1u64];
    let mut decade = 10u64;
    'outer: loop {
        for k in 1..=9u64 {
            let b = k * decade;
            if decade > 10 && k == 1 {
                continue; // 100, 1000, ... already added as 10 * previous decade
            }
            if b > max {
                break 'outer;
            }
            v.push(b);
        }
        let b = 10 * decade;
        if b > max {
            break;
        }
        v.push(b);
        decade *= 10;
    }
    if *v.last().unwrap() < max {
        v.push(max);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Default process counts up to `world`.
pub fn default_procs(world: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut k = 2u32;
    while k <= world {
        v.push(k);
        let h = k + k / 2;
        if h <= world && k >= 2 {
            v.push(h);
        }
        k *= 2;
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Powers of two from 2 up to `world`.
pub fn powers_of_two(world: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut k = 2u32;
    while k <= world {
        v.push(k);
        k = match k.checked_mul(2) {
            Some(n) => n,
            None => break,
        };
    }
    v
}

/// Parse a size: `4096`, `4Ki`, `4Mi`, `1k` (1000), `1M` (10^6).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("Ki") {
        (n, 1u64 << 10)
    } else if let Some(n) = t.strip_suffix("Mi") {
        (n, 1 << 20)
    } else if let Some(n) = t.strip_suffix("Gi") {
        (n, 1 << 30)
    } else if let Some(n) = t.strip_suffix(['k', 'K']) {
        (n, 1000)
    } else if let Some(n) = t.strip_suffix('M') {
        (n, 1_000_000)
    } else {
        (t, 1)
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("not a size: \"{s}\" (use bytes, or a suffix k, M, Ki, Mi)"))
}

/// Which pair a point-to-point job uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pair {
    SameHost,
    CrossHost,
}

/// One point of the grid: a pattern at one size and byte count, what one
/// measurement (`crate::measure::run_job`) covers.
#[derive(Debug, Clone)]
pub struct Job {
    pub kind: Pattern,
    /// The entries' p: the communicator size, 2 for a pair, the number of
    /// neighbours k of an exchange.
    pub p: u32,
    /// Ranks taking part: p, 2 for a pair, every rank for an exchange (an
    /// application's halo exchange runs on all its ranks at once, and how
    /// long one takes depends on that load).
    pub ranks: u32,
    pub bytes: u64,
    pub pair: Option<Pair>,
    pub level: u8,
}

impl Job {
    pub fn label(&self) -> String {
        let mut s = format!("{} p={} {}B", self.kind.name(), self.p, self.bytes);
        if self.pair == Some(Pair::CrossHost) {
            s.push_str(" cross-host");
        }
        s
    }
}

fn level(bytes: u64, largest: u64) -> u8 {
    if matches!(bytes, 0 | 1 | 100 | 10_000 | 1_000_000) || bytes == largest {
        0
    } else {
        1
    }
}

/// Neighbour counts k of the exchange pattern: a pair, a line, the faces of a
/// 3-D stencil (6) and all its neighbours (26), and more in between for the
/// full grid.
pub fn exchange_neighbours(quick: bool) -> Vec<u32> {
    if quick {
        vec![1, 2, 6, 26]
    } else {
        vec![1, 2, 4, 6, 8, 12, 16, 26]
    }
}

/// The planned jobs in canonical order (the job id is the index). `ks`:
/// the exchange's neighbour counts; `world`: the ranks of the run.
pub fn plan(
    kinds: &[Pattern],
    procs: &[u32],
    ks: &[u32],
    sizes: &[u64],
    pairs: &[Pair],
    world: u32,
) -> Vec<Job> {
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let mut jobs = Vec::new();
    for &kind in kinds {
        let sz: Vec<u64> = if kind == Pattern::Barrier {
            vec![0]
        } else {
            sizes.to_vec()
        };
        if kind.p2p() {
            for &pair in pairs {
                for &b in &sz {
                    if kind.feasible(2, b) {
                        jobs.push(Job {
                            kind,
                            p: 2,
                            ranks: 2,
                            bytes: b,
                            pair: Some(pair),
                            level: level(b, largest),
                        });
                    }
                }
            }
        } else {
            // (the entries' p, the ranks that take part)
            let points: Vec<(u32, u32)> = if kind == Pattern::Exchange {
                ks.iter().map(|&k| (k, world)).collect()
            } else {
                procs.iter().map(|&p| (p, p)).collect()
            };
            for (p, ranks) in points {
                for &b in &sz {
                    if kind.feasible(p, b) {
                        jobs.push(Job {
                            kind,
                            p,
                            ranks,
                            bytes: b,
                            pair: None,
                            level: level(b, largest),
                        });
                    }
                }
            }
        }
    }
    jobs
}

/// Job ids in run order: shuffled (Fisher-Yates) within each level.
pub fn order(jobs: &[Job], seed: u64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(jobs.len());
    for lvl in 0..=1u8 {
        let mut ids: Vec<usize> = (0..jobs.len()).filter(|&i| jobs[i].level == lvl).collect();
        for i in (1..ids.len()).rev() {
            let j = rng.below(i + 1);
            ids.swap(i, j);
        }
        out.extend(ids);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_paper() {
        let s = default_sizes(4 << 20);
        assert_eq!(&s[..12], &[1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200]);
        assert!(
            s.contains(&1000)
                && s.contains(&2000)
                && s.contains(&1_000_000)
                && s.contains(&4_000_000)
        );
        assert_eq!(*s.last().unwrap(), 4 << 20);
        assert_eq!(default_sizes(1000).last(), Some(&1000));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn procs_follow_the_paper() {
        assert_eq!(default_procs(4), vec![2, 3, 4]);
        assert_eq!(default_procs(16), vec![2, 3, 4, 6, 8, 12, 16]);
        assert_eq!(default_procs(7), vec![2, 3, 4, 6]);
        assert!(default_procs(1).is_empty());
    }

    #[test]
    fn powers_of_two_up_to_the_world() {
        assert_eq!(powers_of_two(8), vec![2, 4, 8]);
        assert_eq!(powers_of_two(12), vec![2, 4, 8]);
        assert!(powers_of_two(1).is_empty());
        assert_eq!(powers_of_two(u32::MAX).len(), 31);
    }

    #[test]
    fn size_parsing() {
        assert_eq!(parse_size("4Mi").unwrap(), 4 << 20);
        assert_eq!(parse_size("1k").unwrap(), 1000);
        assert_eq!(parse_size(" 17 ").unwrap(), 17);
        assert!(parse_size("x").is_err());
    }

    #[test]
    fn order_is_seeded_and_levelled() {
        let jobs = plan(
            &[Pattern::Allreduce, Pattern::Send, Pattern::Exchange],
            &[2, 3, 4],
            &exchange_neighbours(true),
            &default_sizes(1 << 20),
            &[Pair::SameHost],
            4,
        );
        // The exchange runs on every rank, whatever its neighbour count.
        let ex: Vec<(u32, u32)> = jobs
            .iter()
            .filter(|j| j.kind == Pattern::Exchange)
            .map(|j| (j.p, j.ranks))
            .collect();
        assert!(ex.contains(&(1, 4)) && ex.contains(&(2, 4)) && ex.contains(&(26, 4)));
        let a = order(&jobs, 7);
        let b = order(&jobs, 7);
        let c = order(&jobs, 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..jobs.len()).collect::<Vec<_>>());
        let first_fine = a.iter().position(|&i| jobs[i].level == 1).unwrap();
        assert!(a[first_fine..].iter().all(|&i| jobs[i].level == 1));
    }
}
