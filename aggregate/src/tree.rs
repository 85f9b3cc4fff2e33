//! The shape of the binomial tree the ranks of a job merge their parts up
//! (rooted at rank 0, ceil(log2 P) levels): the interposer's merge at
//! `MPI_Finalize` and its simulation in one process (the `merge_sim`
//! example of the report) both take it from here.

fn lowbit(r: usize) -> usize {
    r & r.wrapping_neg()
}

/// The children of `r` in the binomial tree of `p` ranks rooted at 0, with
/// the size of each one's subtree.
pub fn children(r: usize, p: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut d = 1;
    while (r == 0 || d < lowbit(r)) && r + d < p {
        let c = r + d;
        v.push((c, lowbit(c).min(p - c)));
        d <<= 1;
    }
    v
}

pub fn parent(r: usize) -> usize {
    r - lowbit(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank but the root is in exactly one subtree of its parent, and
    /// the subtree sizes add up: the root receives P - 1 frames.
    #[test]
    fn the_binomial_tree_covers_every_rank_once() {
        for p in 1..=70 {
            let mut seen = vec![0; p];
            for r in 0..p {
                for (c, n) in children(r, p) {
                    assert_eq!(parent(c), r, "p {p}");
                    seen[c] += 1;
                    let below: usize = children(c, p).iter().map(|x| x.1).sum();
                    assert_eq!(n, 1 + below, "p {p} child {c}");
                }
            }
            assert!(seen[1..].iter().all(|&s| s == 1), "p {p}: {seen:?}");
            let at_root: usize = children(0, p).iter().map(|x| x.1).sum();
            assert_eq!(at_root, p - 1);
            let depth = (0..p).map(|mut r| {
                let mut d = 0;
                while r != 0 {
                    r = parent(r);
                    d += 1;
                }
                d
            });
            assert!(depth.max().unwrap_or(0) <= (p as f64).log2().ceil() as usize);
        }
    }
}
