//! Source paths as the text and HTML reports print them: each cut to the
//! shortest tail that still tells it from the others the report names.

use std::collections::HashMap;

use crate::model::Report;

/// Every source file the report names, its sites' and its regions', for
/// [`short_paths`].
pub fn report_files(r: &Report) -> impl Iterator<Item = &str> {
    let causes = r
        .sites
        .iter()
        .filter_map(|s| s.root_causes.as_ref())
        .flatten()
        .map(|c| &c.region);
    let regions = r.regions.iter().map(|g| &g.region).chain(causes);
    r.sites.iter().filter_map(|s| s.file.as_deref()).chain(
        regions
            .flat_map(|g| [&g.from, &g.to])
            .filter_map(|e| e.file.as_deref()),
    )
}

/// For each file path, the shortest trailing part (whole path components)
/// that no other path in the set shares: `halo.c`, or `a/util.c` next to
/// `b/util.c`.
pub fn short_paths<'a>(paths: impl IntoIterator<Item = &'a str>) -> HashMap<String, String> {
    let mut all: Vec<&str> = paths.into_iter().collect();
    all.sort_unstable();
    all.dedup();
    let suffix = |p: &str, k: usize| -> String {
        let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
        let k = k.min(parts.len());
        parts[parts.len() - k..].join("/")
    };
    let mut out = HashMap::new();
    for p in &all {
        let mut k = 1;
        loop {
            let s = suffix(p, k);
            let clash = all.iter().any(|q| q != p && (suffix(q, k) == s));
            if !clash || s.len() >= p.trim_start_matches('/').len() {
                out.insert(p.to_string(), s);
                break;
            }
            k += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::short_paths;

    #[test]
    fn short_paths_are_unique() {
        let m = short_paths(["/a/x/util.c", "/a/y/util.c", "/a/main.c"]);
        assert_eq!(m["/a/x/util.c"], "x/util.c");
        assert_eq!(m["/a/y/util.c"], "y/util.c");
        assert_eq!(m["/a/main.c"], "main.c");
        let m = short_paths(["main.c"]);
        assert_eq!(m["main.c"], "main.c");
    }
}
