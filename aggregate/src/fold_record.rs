//! Folding one rank's record into an [`Aggregate`], entry by entry, in named
//! steps: the site's totals, its tmax figures, the lines that posted and
//! completed its requests, whom it waited for, its display histogram and the
//! rank's row.
//!
//! Runs in the preload library at `MPI_Finalize`: nothing here panics on a
//! record it does not expect (an entry whose site is missing is skipped).

use mpiover_common::functions::{class_of, EventClass, WaitState};
use mpiover_common::record::{Entry, Record, Region, Site};

use crate::aggregate::Aggregate;
use crate::display_bins::BucketBins;
use crate::eager_limit::Thresholds;
use crate::exact_sum::Fx;
use crate::merged_keys::{key_id, merge_key, KeyAcc};
use crate::regions::{RegionAcc, RegionId, RegionRank};
use crate::site_key::{Loc, SiteKey};
use crate::site_totals::{site_eval, MultiWait, PeerAcc, RankSite, SiteAcc};
use crate::tmax_eval::{count_lookup, evaluate, EntryEval, TmaxLookup};
use crate::wait_state::{entry_wait_state, is_peer_wait, is_receive_post, waits_on_its_peer};
use crate::HashMap;

/// A point-to-point request completed at a completion site: its peer, the
/// line that posted it, whether it is a receive.
type PostDone = (u32, String, bool);

/// What the entries of one record share while it is folded.
struct RecordView<'r> {
    rec: &'r Record,
    rendezvous: Thresholds,
    /// Completion site -> the point-to-point requests completed there.
    posts_done: HashMap<u32, Vec<PostDone>>,
}

impl<'r> RecordView<'r> {
    fn new(rec: &'r Record, rendezvous: Thresholds) -> RecordView<'r> {
        let mut view = RecordView {
            rec,
            rendezvous,
            posts_done: HashMap::default(),
        };
        view.posts_done = view.completed_posts();
        view
    }

    fn rank(&self) -> u32 {
        self.rec.rank
    }

    fn unit(&self) -> f64 {
        self.rec.timer.unit_s
    }

    /// A site by id: ids are indices into the record's sites, except in
    /// records made by hand.
    fn site(&self, id: u32) -> Option<&'r Site> {
        match self.rec.sites.get(id as usize) {
            Some(s) if s.id == id => Some(s),
            _ => self.rec.sites.iter().find(|s| s.id == id),
        }
    }

    /// The line of site `id`, as the report shows it.
    fn line(&self, id: u32, function: &str) -> Option<String> {
        Some(Loc::of(self.site(id)?, function).display())
    }

    /// The point-to-point posts of the record, by the completion site that
    /// completed their requests.
    fn completed_posts(&self) -> HashMap<u32, Vec<PostDone>> {
        let mut posts_done: HashMap<u32, Vec<PostDone>> = HashMap::default();
        for e in &self.rec.entries {
            let (Some(done), Some(peer)) = (e.completed_at, e.peer.filter(|&p| p >= 0)) else {
                continue;
            };
            if class_of(&e.function) != Some(EventClass::Post) {
                continue;
            }
            let Some(at) = self.line(e.site, &e.function) else {
                continue;
            };
            let v = posts_done.entry(done).or_default();
            let item = (peer as u32, at, is_receive_post(&e.function));
            if !v.contains(&item) {
                v.push(item);
            }
        }
        posts_done
    }
}

/// One entry against tmax, with the wait state its overhead indicates.
struct Evaluated<'e> {
    e: &'e Entry,
    ev: EntryEval,
    class: Option<EventClass>,
    state: Option<WaitState>,
    /// A point-to-point wait state: whom it waited for is a peer.
    waits: bool,
}

impl<'e> Evaluated<'e> {
    fn new<T: TmaxLookup + ?Sized>(
        e: &'e Entry,
        view: &RecordView,
        tmax: Option<&T>,
    ) -> Evaluated<'e> {
        let state = entry_wait_state(
            &e.function,
            e.bytes,
            e.role.as_deref(),
            e.completes.as_deref(),
            e.requests,
            view.rendezvous.for_peer(e.cross_host),
        );
        Evaluated {
            e,
            ev: evaluate(e, view.unit(), tmax),
            class: class_of(&e.function),
            state,
            waits: is_peer_wait(state),
        }
    }

    fn is_completion(&self) -> bool {
        self.class == Some(EventClass::Completion)
    }

    /// Waited on a peer, with overhead to charge to it.
    fn charges_a_peer(&self) -> bool {
        self.waits && self.ev.tmax.is_some() && self.ev.overhead > 0.0
    }

    /// Whether the requests it waited for are receives (a late sender).
    fn waits_for_receives(&self) -> bool {
        self.state == Some(WaitState::LateSender)
    }
}

impl Aggregate {
    /// Folds one rank's record: its entries evaluated against `tmax` (else
    /// against what the record carries), sends of at least `rendezvous`'s
    /// threshold (across hosts for a peer on another host) taken as
    /// rendezvous sends.
    pub fn add_record<T: TmaxLookup + ?Sized>(
        &mut self,
        rec: &Record,
        tmax: Option<&T>,
        rendezvous: impl Into<Thresholds>,
    ) {
        let view = RecordView::new(rec, rendezvous.into());
        let mut event_time = 0.0;
        let mut rank_overhead: Option<f64> = None;
        for e in &rec.entries {
            let Some(site) = view.site(e.site) else {
                continue;
            };
            if let Some(o) = self.add_entry(&view, e, site, tmax) {
                *rank_overhead.get_or_insert(0.0) += o;
            }
            event_time += e.sum_s;
        }
        self.folded_keys += rec.folded.keys;
        self.folded_calls += rec.folded.calls;
        self.add_regions(rec, |id| view.site(id));
        self.ranks
            .push(crate::RankAcc::of_record(rec, event_time, rank_overhead));
    }

    /// Folds one entry made at `site`; its overhead, when it had a tmax.
    fn add_entry<T: TmaxLookup + ?Sized>(
        &mut self,
        view: &RecordView,
        e: &Entry,
        site: &Site,
        tmax: Option<&T>,
    ) -> Option<f64> {
        let key = SiteKey::of_entry(site, e);
        let f = Evaluated::new(e, view, tmax);
        if e.function != "other" {
            count_lookup(&mut self.lookups, &f.ev, e.count, 1);
            if self.want_keys {
                let k = KeyAcc::of_entry(e, view.unit(), view.rank());
                let keys = if e.cross_host == Some(true) {
                    &mut self.keys_cross_host
                } else {
                    &mut self.keys
                };
                merge_key(keys, key_id(&key, e), k);
            }
        }
        let acc = self
            .sites
            .entry(key)
            .or_insert_with(|| SiteAcc::new(view.rank(), site));
        add_totals(acc, view.rank(), site, e);
        site_eval(acc, &f.ev, e.count, f.state);
        if let Some(at) = e.completed_at.and_then(|d| view.line(d, &e.function)) {
            *acc.completed_at.entry(at).or_default() += e.count;
        }
        add_completed_posts(acc, view, &f);
        let p2p_peer = e
            .peer
            .filter(|&p| p >= 0 && waits_on_its_peer(&e.function))
            .map(|p| p as u32);
        if let Some(peer) = p2p_peer {
            add_peer_wait(acc, &mut self.wait, view, &f, peer);
        }
        add_pair(acc, view.rank(), e);
        if self.want_dist {
            add_dist(acc, &mut self.bucket_bins, e, view.unit());
        }
        add_requests(acc, view, e);
        add_rank_row(acc, view.rank(), &f)
    }
}

/// Calls, time, bytes and the extremes; the lowest rank shows the site.
fn add_totals(acc: &mut SiteAcc, rank: u32, site: &Site, e: &Entry) {
    if rank < acc.shown_by {
        acc.shown_by = rank;
        acc.site = site.clone();
    }
    acc.calls += e.count;
    acc.time.add(e.sum_s);
    acc.bytes += e.bytes as u128 * e.count as u128;
    if e.count > 0 {
        acc.min = acc.min.min(e.min_s);
        acc.max = acc.max.max(e.max_s);
    }
}

/// A completion of point-to-point requests: the lines that posted them, and
/// when it waited on several peers, the candidates for whom it waited for.
fn add_completed_posts(acc: &mut SiteAcc, view: &RecordView, f: &Evaluated) {
    let Some(done) = view.posts_done.get(&f.e.site) else {
        return;
    };
    if !f.is_completion() {
        return;
    }
    let e = f.e;
    if e.post_site.is_none() {
        for (_, at, _) in done {
            *acc.posted_at.entry(at.clone()).or_default() += e.count;
        }
    }
    if e.peer.is_none() && f.charges_a_peer() {
        // Several peers: whom it waited for is decided once every rank's
        // wait at this site is known.
        let want_recv = f.waits_for_receives();
        let candidates: Vec<(u32, Option<String>)> = done
            .iter()
            .filter(|(_, _, recv)| *recv == want_recv)
            .map(|(p, at, _)| (*p, Some(at.clone())))
            .collect();
        if !candidates.is_empty() {
            acc.multi.push(MultiWait {
                rank: view.rank(),
                overhead: f.ev.overhead,
                time: e.sum_s,
                calls: e.count,
                candidates,
            });
        }
    }
}

/// A call that waited on its one peer: the site's peers, the wait matrix,
/// and for a completion the late peer with its posting line.
fn add_peer_wait(
    acc: &mut SiteAcc,
    wait: &mut HashMap<(u32, u32), PeerAcc>,
    view: &RecordView,
    f: &Evaluated,
    peer: u32,
) {
    let e = f.e;
    // A blocking call's late peer is in `peers` already.
    if f.is_completion() && f.charges_a_peer() {
        // The posting line: the completion's own when all its requests
        // shared one, else that of the requests to or from this peer of
        // the kind that waits.
        let want_recv = f.waits_for_receives();
        let at = e
            .post_site
            .and_then(|ps| view.line(ps, &e.function))
            .or_else(|| {
                view.posts_done
                    .get(&e.site)?
                    .iter()
                    .find_map(|(p, at, recv)| {
                        (*p == peer && *recv == want_recv).then(|| at.clone())
                    })
            });
        acc.waited_for
            .entry((peer, at))
            .or_default()
            .add(f.ev.overhead);
    }
    let pa = acc.peers.entry(peer).or_default();
    pa.time.add(e.sum_s);
    pa.calls += e.count;
    let cell = wait.entry((view.rank(), peer)).or_default();
    cell.time.add(e.sum_s);
    cell.calls += e.count;
    if f.waits && f.ev.tmax.is_some() {
        pa.overhead.add(f.ev.overhead);
        cell.overhead.add(f.ev.overhead);
        if f.ev.overhead > 0.0 {
            acc.add_pair_wait(view.rank(), peer, f.ev.overhead, e.sum_s, e.count);
        }
    }
}

/// A send or receive with a known peer: the (rank, peer) pair.
fn add_pair(acc: &mut SiteAcc, rank: u32, e: &Entry) {
    let Some(peer) = e.peer.filter(|&p| p >= 0) else {
        return;
    };
    let p2p = mpiover_common::functions::catalogue::get(&e.function)
        .is_some_and(|f| f.direction != mpiover_common::functions::catalogue::Direction::None);
    if p2p {
        let c = acc.pairs.entry((rank, peer as u32)).or_default();
        *c = c.saturating_add(u32::try_from(e.count).unwrap_or(u32::MAX));
    }
}

/// The entry's histogram into the site's display bins.
fn add_dist(acc: &mut SiteAcc, bins: &mut BucketBins, e: &Entry, unit: f64) {
    for b in &e.hist.buckets {
        let bin = bins.bin(b.index(), unit);
        if let Some(d) = acc.dist.get_mut(bin) {
            *d += b.count();
        }
    }
}

/// What a completion completed, and the line that posted its requests when
/// they shared one.
fn add_requests(acc: &mut SiteAcc, view: &RecordView, e: &Entry) {
    if let Some(c) = &e.completes {
        acc.completes.insert(c.clone());
    }
    if let Some(at) = e.post_site.and_then(|ps| view.line(ps, &e.function)) {
        *acc.posted_at.entry(at).or_default() += e.count;
    }
}

/// The rank's row at the site; the entry's overhead, when it had a tmax.
fn add_rank_row(acc: &mut SiteAcc, rank: u32, f: &Evaluated) -> Option<f64> {
    // One row per rank and site: a record's entries are folded one after
    // another and its rank is unique in a run, so the site's last row is
    // this record's if it has one.
    if acc.per_rank.last().map(|r| r.rank) != Some(rank) {
        acc.per_rank.push(RankSite {
            rank,
            calls: 0,
            time: 0.0,
            overhead: None,
            root: false,
        });
    }
    let row = acc.per_rank.last_mut()?;
    let e = f.e;
    row.calls += e.count;
    row.time += e.sum_s;
    row.root |= e.role.as_deref() == Some("root");
    f.ev.tmax.is_some().then(|| {
        *row.overhead.get_or_insert(0.0) += f.ev.overhead;
        f.ev.overhead
    })
}

// A record's regions, folded per pair of report sites.
impl Aggregate {
    /// Folds a record's regions (called once per record).
    pub(crate) fn add_regions<'r>(
        &mut self,
        rec: &'r Record,
        site: impl Fn(u32) -> Option<&'r Site>,
    ) {
        for r in &rec.regions {
            let (Some(from), Some(to)) = (site(r.from.site), site(r.to.site)) else {
                continue;
            };
            self.add_region(rec.rank, r, from, to);
        }
        let f = &rec.regions_folded;
        self.regions_folded.keys += f.keys;
        self.regions_folded.count += f.count;
        self.regions_folded.time.add(f.sum_s);
    }

    fn add_region(&mut self, rank: u32, r: &Region, from: &Site, to: &Site) {
        let id = RegionId {
            from: SiteKey::of_call(from, &r.from.function),
            to: SiteKey::of_call(to, &r.to.function),
        };
        let acc = self.regions.entry(id).or_insert_with(|| RegionAcc {
            shown_by: rank,
            from: from.clone(),
            to: to.clone(),
            count: 0,
            time: Fx::default(),
            per_rank: Vec::new(),
            spread: None,
        });
        if rank < acc.shown_by {
            acc.shown_by = rank;
            acc.from = from.clone();
            acc.to = to.clone();
        }
        acc.count += r.count;
        acc.time.add(r.sum_s);
        // Two threads' pairs of sites may be the same report region (or
        // two addresses on one line): one row per rank.
        match acc.per_rank.last_mut() {
            Some(row) if row.rank == rank => {
                row.count += r.count;
                row.time += r.sum_s;
            }
            _ => acc.per_rank.push(RegionRank {
                rank,
                count: r.count,
                time: r.sum_s,
            }),
        }
    }
}
