//! Regions and root causes in words, the same in the text and HTML reports
//! (`docs/method.md`, "Root causes").

use std::collections::HashMap;

use crate::model::{RegionEndReport, RegionRef, RootCause};
use crate::units::{pct, secs};

/// Where an end of a region is: `file:line` with the path shortened, else
/// the location as sites show it.
pub fn end_loc(e: &RegionEndReport, shorts: &HashMap<String, String>) -> String {
    let short = |f: &String| shorts.get(f).cloned().unwrap_or_else(|| f.clone());
    match (&e.file, e.line) {
        (Some(f), Some(l)) => format!("{}:{l}", short(f)),
        (Some(f), None) => short(f),
        _ => e.location.clone(),
    }
}

/// `halo.c:41 (MPI_Bcast) and halo.c:57 (MPI_Allreduce) in step()`, or
/// with the ends in two functions, each end's.
pub fn between(g: &RegionRef, shorts: &HashMap<String, String>) -> String {
    let end = |e: &RegionEndReport| format!("{} ({})", end_loc(e, shorts), e.mpi_function);
    match g.function() {
        Some(f) => format!("{} and {} in {f}()", end(&g.from), end(&g.to)),
        None => {
            let with = |e: &RegionEndReport| match &e.function {
                Some(f) => format!("{} in {f}()", end(e)),
                None => end(e),
            };
            format!("{} and {}", with(&g.from), with(&g.to))
        }
    }
}

/// A region in a table cell: `halo.c:41 MPI_Bcast -> halo.c:57 MPI_Allreduce`.
pub fn label(g: &RegionRef, shorts: &HashMap<String, String>) -> String {
    format!(
        "{} {} -> {} {}",
        end_loc(&g.from, shorts),
        g.from.mpi_function,
        end_loc(&g.to, shorts),
        g.to.mpi_function
    )
}

/// The function a region is in: the one both ends share, else `f -> g`.
pub fn function(g: &RegionRef) -> String {
    match (g.function(), &g.from.function, &g.to.function) {
        (Some(f), _, _) => f.to_string(),
        (None, None, None) => "-".into(),
        (None, a, b) => format!(
            "{} -> {}",
            a.as_deref().unwrap_or("?"),
            b.as_deref().unwrap_or("?")
        ),
    }
}

/// A root cause in one sentence: `rank 5 spent 1.20 s more than the ranks
/// waiting for it between ... in step(), 92 % of the site's overhead`, and
/// when the lateness was passed on, through whom.
pub fn cause(c: &RootCause, shorts: &HashMap<String, String>) -> String {
    let mut s = format!(
        "rank {} spent {} more than the ranks waiting for it between {}, {} of the site's overhead",
        c.rank,
        secs(c.excess_s),
        between(&c.region, shorts),
        pct(c.share)
    );
    if !c.via.is_empty() {
        let chain: Vec<String> = c
            .via
            .iter()
            .skip(1)
            .chain(std::iter::once(&c.rank))
            .map(|r| format!(", which waited for rank {r}"))
            .collect();
        s.push_str(&format!(
            " (the site waited for rank {}{})",
            c.via[0],
            chain.concat()
        ));
    }
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn end(file: &str, line: u32, function: Option<&str>, mpi: &str) -> RegionEndReport {
        RegionEndReport {
            file: Some(file.into()),
            line: Some(line),
            function: function.map(Into::into),
            mpi_function: mpi.into(),
            location: format!("{file}:{line}"),
        }
    }

    #[test]
    fn regions_in_words() {
        let shorts = super::super::paths::short_paths(["/src/solver.c", "/src/io.c"]);
        let same = RegionRef {
            from: end("/src/solver.c", 41, Some("step"), "MPI_Bcast"),
            to: end("/src/solver.c", 57, Some("step"), "MPI_Allreduce"),
        };
        assert_eq!(
            between(&same, &shorts),
            "solver.c:41 (MPI_Bcast) and solver.c:57 (MPI_Allreduce) in step()"
        );
        assert_eq!(
            label(&same, &shorts),
            "solver.c:41 MPI_Bcast -> solver.c:57 MPI_Allreduce"
        );
        assert_eq!(function(&same), "step");
        let two = RegionRef {
            from: end("/src/solver.c", 80, Some("step"), "MPI_Allreduce"),
            to: end("/src/io.c", 12, Some("dump"), "MPI_File_write_all"),
        };
        assert_eq!(
            between(&two, &shorts),
            "solver.c:80 (MPI_Allreduce) in step() and io.c:12 (MPI_File_write_all) in dump()"
        );
        assert_eq!(function(&two), "step -> dump");
    }

    #[test]
    fn a_cause_names_the_ranks_it_passed_through() {
        let shorts = HashMap::new();
        let mut c = RootCause {
            rank: 5,
            region: RegionRef {
                from: end("s.c", 41, Some("f"), "MPI_Bcast"),
                to: end("s.c", 57, Some("f"), "MPI_Allreduce"),
            },
            excess_s: 1.2,
            share: 0.92,
            via: vec![],
        };
        assert_eq!(
            cause(&c, &shorts),
            "rank 5 spent 1.20 s more than the ranks waiting for it between s.c:41 (MPI_Bcast) \
             and s.c:57 (MPI_Allreduce) in f(), 92 % of the site's overhead"
        );
        c.via = vec![1, 3];
        assert!(cause(&c, &shorts).ends_with(
            "overhead (the site waited for rank 1, which waited for rank 3, which waited for rank 5)"
        ));
    }
}
