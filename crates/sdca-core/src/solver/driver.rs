//! The epoch driver, the fit-wide budget and the stopping rule, shared by every solver.
//!
//! Like argmin's executor, [`drive`] owns the loop: it draws the coordinate order of each epoch
//! (uniform with replacement, a fresh permutation, or proportional to the rows' gaps, from a
//! seeded RNG), calls a check every `check_every` epochs (and at the end of its budget), and
//! stops when the check says so, on `max_epochs` or on `max_seconds`. A solver only supplies one
//! pass of coordinate updates ([`Coordinate`]); the plain solver, the inner solves of the
//! accelerated one, a CoCoA+ round and Pdprox's full passes run under the same driver.
//!
//! A certificate costs a full pass (two, with the rebuild of the dual sum that removes rounding
//! drift): a third of a logistic fit when it ran after every pass. A solver that keeps a
//! running [`Estimate`] of its gap (the Fenchel-Young gaps of the rows it visits, measured before
//! their steps; liblinear and lightning stop on such a sum) runs it only when that estimate says
//! the target may be met ([`Coordinate::settled`]), on the `check_every` schedule; the
//! certificate itself is always the exact one, so the estimate decides when to pay for it, never
//! what it certifies.
//!
//! With `shrinking` (the default), a plain SDCA pass over a permutation leaves out the rows
//! whose box-constrained dual is settled at a bound (liblinear's shrinking, `super::shrink`):
//! `drive` keeps them at the tail of the order and brings them back after a check, but those
//! that the check's certificate found settled ([`Coordinate::resume`]).
//!
//! [`Judge`] is the stopping rule: it turns a certified statement about the problem solved into
//! the original problem's certificate and says whether it meets `tol`.

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::lasso::Reduction;
use super::{Certificate, Status};
use crate::config::{FitConfig, Interrupt, Sampling};
use crate::data::Rows;
use crate::loss::BlockLoss;
use crate::sampling::GapSampler;

/// One solver's contribution to the loop: a pass of coordinate updates.
pub(crate) trait Coordinate {
    /// Rows that take part in sampling (others have fixed duals).
    fn active(&self) -> &[u32];
    /// The stored row gaps, indexed by position in [`Coordinate::active`], under gap sampling.
    fn gaps(&self) -> Option<&GapSampler> {
        None
    }
    /// Update the coordinates in `order`. A solver that shrinks ([`shrink`]) moves the rows it
    /// drops to the end of `order` and returns how many it kept; the others return
    /// `order.len()`.
    fn pass(&mut self, order: &mut [u32]) -> usize;
    /// For a solver with a running [`Estimate`], after each pass: whether the estimate met its
    /// target, so that a check may pay (on the `check_every` schedule; a solver that shrinks
    /// then has every row active again). `None` for the others, whose checks follow
    /// `check_every` alone.
    fn settled(&mut self) -> Option<bool> {
        None
    }
    /// After a check that did not stop the fit, with `order` holding every row of the passes:
    /// how many of them the next pass visits, moved to the front. A solver that shrinks leaves
    /// out the rows its certificate found settled ([`shrink`]); the others visit every row.
    fn resume(&mut self, order: &mut [u32]) -> usize {
        order.len()
    }
}

/// The running estimate of a solver's duality gap: the weighted Fenchel-Young gaps of the rows a
/// pass visits, measured before their steps (free next to a step for the losses with a cheap
/// gap; the logistic loss gives its second-order value, [`crate::loss::Loss::dual_step_gap`]),
/// averaged over all `n` rows (a row a pass leaves out counts 0).
///
/// It is not a bound: the pass's steps lower the gaps it measured, and rows left out can regain
/// gap. So it only decides when the exact certificate is worth its pass: the first pass is
/// always certified, and after each certificate the estimate is calibrated against it (their
/// ratio `r` at that pass), so that the next certificate runs when the estimate has fallen to
/// `r` times the goal ([`Estimate::aim`]). Where the ratio drifts (a non-smooth loss, whose gap
/// falls faster than its rows' gaps) a check is also due once the work since the last one (row
/// visits, in passes over all rows) reaches a quarter of all the work so far, and at least
/// [`Estimate::MIN_WAIT`] passes, which bounds the extra work to about a quarter. A wrong guess
/// costs passes or a certificate, never a wrong certificate.
#[derive(Debug, Clone)]
pub(crate) struct Estimate {
    /// `sum_i s_i gap_i` over the rows visited in this pass.
    visited: f64,
    /// Rows visited in this pass.
    visits: usize,
    /// The last finished pass's estimate (mean over the `n` rows).
    last: f64,
    /// The estimate at which a check is due: `+inf` until the first certificate.
    target: f64,
    /// Estimate over certified gap at the last certificate (1 before).
    ratio: f64,
    /// Row visits so far and since the last certificate, in passes over all rows.
    work: f64,
    since: f64,
}

impl Estimate {
    /// Passes over all rows after a certificate before the next one is due whatever the
    /// estimate says.
    pub const MIN_WAIT: f64 = 4.0;

    /// No target yet: the first pass is certified.
    pub fn new() -> Self {
        Self {
            visited: 0.0,
            visits: 0,
            last: f64::INFINITY,
            target: f64::INFINITY,
            ratio: 1.0,
            work: 0.0,
            since: 0.0,
        }
    }

    /// A visited row's weighted gap.
    #[inline(always)]
    pub fn add(&mut self, gap: f64) {
        self.visited += gap;
        self.visits += 1;
    }

    /// Moves the gaps `other` gathered in its pass into this estimate (a parallel fit's estimate
    /// is the sum of its partitions', taken in partition order).
    pub fn merge(&mut self, other: &mut Estimate) {
        self.visited += other.visited;
        self.visits += other.visits;
        (other.visited, other.visits) = (0.0, 0);
    }

    /// Ends a pass over a problem of `n` rows: whether a check is due.
    pub fn settled(&mut self, n: usize) -> bool {
        let n = n as f64;
        self.last = self.visited / n;
        self.work += self.visits as f64 / n;
        self.since += self.visits as f64 / n;
        (self.visited, self.visits) = (0.0, 0);
        // A NaN estimate checks at once (the certificate then reports the overflow).
        self.last <= self.target || self.last.is_nan() || self.since >= Self::MIN_WAIT.max(0.25 * self.work)
    }

    /// Calibrates the estimate against a certificate that found the gap `gap` of the problem
    /// solved: their ratio at the last pass (kept when either is not a positive number).
    pub fn calibrate(&mut self, gap: f64) {
        self.since = 0.0;
        let ratio = self.last / gap;
        if ratio.is_finite() && ratio > 0.0 {
            self.ratio = ratio;
        }
    }

    /// After a certificate that found the gap `gap` of the problem solved, the fit aiming at
    /// `goal` ([`goal`]): calibrates, and sets the target to the estimate that predicts `goal`
    /// (half of `gap` when a check failed although `gap` met the goal, which happens when the
    /// Lasso reduction's certificate adds to the solved gap).
    pub fn aim(&mut self, gap: f64, goal: f64) {
        self.calibrate(gap);
        self.aim_at(if gap <= goal { 0.5 * gap } else { goal });
    }

    /// Sets the target to the estimate that predicts the gap `gap` (an inner solve's target).
    pub fn aim_at(&mut self, gap: f64) {
        self.target = self.ratio * gap;
    }
}

/// The gap at which a fit with certificate `c` counts its problem as solved: `tol D`, at most
/// the final `tol P` as `P >= P* >= D` (a target `tol P` taken early, when `P` is still high,
/// lets checks come too early); but at least `tol P / 2`, which bounds the extra solving while
/// `D` is far below `P` (the first checks) or not positive.
pub(crate) fn goal(tol: f64, c: &Certificate) -> f64 {
    tol * c.dual.max(0.5 * c.primal)
}

/// The fit-wide epoch and time budget, shared by every [`drive`] call of one fit.
///
/// An interrupt counts as running out of time (every solver already stops cleanly then);
/// [`Clock::interrupted`] tells the two apart for the status.
pub(crate) struct Clock {
    start: Instant,
    max_seconds: Option<f64>,
    max_epochs: u32,
    interrupt: Option<Interrupt>,
    /// Whether the interrupt check said stop.
    pub interrupted: bool,
    /// Passes made so far, in full-pass equivalents rounded up (see [`Clock::add_pass`]).
    pub epochs: u32,
    /// Full-pass equivalents made so far.
    work: f64,
}

impl Clock {
    pub fn new(cfg: &FitConfig) -> Self {
        Self::limits(cfg.max_epochs, cfg.max_seconds, cfg.interrupt)
    }
    /// A clock for `max_epochs` passes, `max_seconds` and the `interrupt` check (a CRF fit's).
    pub fn limits(max_epochs: u32, max_seconds: Option<f64>, interrupt: Option<Interrupt>) -> Self {
        Self {
            start: Instant::now(),
            max_seconds,
            max_epochs,
            interrupt,
            interrupted: false,
            epochs: 0,
            work: 0.0,
        }
    }
    /// A clock with the fit's interrupt check but no epoch or time limit: a CoCoA+ round, whose
    /// budget the driver of the rounds keeps.
    pub fn unlimited(cfg: &FitConfig) -> Self {
        Self { max_epochs: u32::MAX, max_seconds: None, ..Self::new(cfg) }
    }
    /// Counts a pass that visited `share` of the rows (1 for a full pass; less when shrinking
    /// left rows out, so that the epoch budget measures work, as the user reads it).
    /// The count is rounded up but never above `max_epochs` (a last partial pass can start just
    /// below the budget).
    pub fn add_pass(&mut self, share: f64) {
        self.work += share;
        self.epochs = (self.work.ceil().min(u32::MAX as f64) as u32).min(self.max_epochs);
    }
    /// Full-pass equivalents made so far, not rounded: what a path reports as the entries
    /// its fits visited.
    pub fn work(&self) -> f64 {
        self.work
    }
    pub fn remaining(&self) -> u32 {
        self.max_epochs.saturating_sub(self.epochs)
    }
    pub fn out_of_time(&mut self) -> bool {
        self.interrupted = self.interrupted || self.interrupt.is_some_and(|i| i.requested());
        self.interrupted || self.max_seconds.is_some_and(|s| self.start.elapsed().as_secs_f64() >= s)
    }
}

/// Limits of one [`drive`] call (capped by the [`Clock`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Passes allowed in this call.
    pub max_epochs: u32,
    /// Check after every this many passes of this call.
    pub check_every: u32,
    /// Also check after the last pass of this call.
    pub check_last: bool,
}

/// What a check decides.
pub(crate) enum Verdict {
    Continue,
    /// The check's target is met: stop this call.
    Stop,
}

/// Why a [`drive`] call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// A check returned [`Verdict::Stop`].
    Stopped,
    /// The call's (or the fit's) epoch budget ran out.
    Epochs,
    /// `max_seconds` ran out.
    Seconds,
}

/// How a [`drive`] call ended.
pub(crate) struct Run {
    pub end: End,
    /// Passes made in this call.
    pub epochs: u32,
    /// Full-pass equivalents made in this call ([`Clock::add_pass`]).
    pub work: f64,
    /// Whether a check ran after the last pass.
    pub checked_last: bool,
}

impl Run {
    /// The fit status when this call was the last one and a stop means convergence.
    pub fn status(&self) -> Status {
        match self.end {
            End::Stopped => Status::Converged,
            End::Epochs => Status::MaxEpochs,
            End::Seconds => Status::MaxSeconds,
        }
    }
}

/// Run passes of `solver` in `order` (a scratch buffer holding `solver.active()`) until `check`
/// stops it, `budget` or `clock` runs out. `check` runs every `check_every` passes (for a
/// solver with a running estimate: those where it has [`Coordinate::settled`]), after the last
/// pass when `check_last`, and always when time is up. Rows a pass drops leave the permutation
/// (the tail of `order`) until a check ([`Coordinate::resume`]).
pub(crate) fn drive<S: Coordinate>(
    solver: &mut S,
    order: &mut [u32],
    budget: Budget,
    sampling: Sampling,
    clock: &mut Clock,
    rng: &mut Xoshiro256PlusPlus,
    mut check: impl FnMut(&mut S) -> Verdict,
) -> Run {
    let max = budget.max_epochs.min(clock.remaining());
    let mut run = Run { end: End::Epochs, epochs: 0, work: 0.0, checked_last: false };
    let mut kept = order.len();
    // Full passes add exactly 1.0, so without shrinking this is `run.epochs < max`.
    while run.work < max as f64 {
        draw(solver, &mut order[..kept], sampling, rng);
        // A solver without coordinates (Pdprox's full passes) gets an empty order; a pass over
        // no kept row still counts one row, so the budget always advances.
        let share = if order.is_empty() { 1.0 } else { kept.max(1) as f64 / order.len() as f64 };
        kept = solver.pass(&mut order[..kept]);
        run.epochs += 1;
        run.work += share;
        clock.add_pass(share);
        let out_of_time = clock.out_of_time();
        let scheduled = run.epochs.is_multiple_of(budget.check_every);
        let due = match solver.settled() {
            Some(settled) => settled && scheduled,
            None => scheduled,
        };
        run.checked_last = due || (run.work >= max as f64 && budget.check_last) || out_of_time;
        if run.checked_last {
            if let Verdict::Stop = check(solver) {
                run.end = End::Stopped;
                return run;
            }
            if out_of_time {
                run.end = End::Seconds;
                return run;
            }
            // The rows shrunk away come back, but those the check found settled.
            kept = solver.resume(order);
        }
    }
    run
}

/// Fills `order` (the rows a pass keeps: some of `solver.active()`, each once; all of them when
/// as many) with the next pass's rows: a fresh permutation of them, or as many draws from
/// `solver.active()` (uniform, or by the stored gaps).
pub(crate) fn draw<S: Coordinate>(
    solver: &S,
    order: &mut [u32],
    sampling: Sampling,
    rng: &mut Xoshiro256PlusPlus,
) {
    match sampling {
        Sampling::Permutation if order.len() >= BUCKETED_ROWS && order.len() == solver.active().len() => {
            bucket_permutation(solver.active(), order, rng)
        }
        Sampling::Permutation => block_shuffle(order, rng),
        Sampling::Uniform => {
            let active = solver.active();
            for slot in order.iter_mut() {
                *slot = active[rng.random_range(0..active.len())];
            }
        }
        // Drawn from the gaps stored at the epoch's start; the pass keeps storing fresh ones.
        Sampling::Gap => {
            let (active, gaps) = (solver.active(), solver.gaps());
            for slot in order.iter_mut() {
                *slot = match gaps {
                    Some(gaps) => active[gaps.draw(rng)],
                    None => active[rng.random_range(0..active.len())],
                };
            }
        }
    }
}

/// Rows per bucket of [`block_shuffle`] (as a power of two).
const BUCKET_BITS: u32 = 5;

/// Passes over fewer rows than this keep a uniform permutation: their per-row arrays and rows
/// stay in cache in any order.
const BUCKETED_ROWS: usize = 1 << 15;

/// A fresh random permutation of `order`'s rows, drawn by buckets on large fits: the buckets of
/// 32 consecutive rows (by row number) in a random order, each bucket's rows in a random order
/// (SySCD's buckets, Ioannou et al., NeurIPS 2019). A uniform permutation sends every step to
/// a random row: a cache miss for the row and for each of its per-row values (dual, label,
/// curvature) on 200,000 rows; a bucket reads neighbouring rows and values. On the CoNLL-2003
/// tokens (203,621 rows, l2 = 1e-4, to 1e-6) the passes cost 20-30% less for every loss and
/// the fits took as many epochs, also with the rows sorted by label (`epoch_cost` bench).
fn block_shuffle(order: &mut [u32], rng: &mut Xoshiro256PlusPlus) {
    if order.len() < BUCKETED_ROWS {
        order.shuffle(rng);
        return;
    }
    let bucket = |i: u32| (i >> BUCKET_BITS) as usize;
    let buckets = order.iter().map(|&i| bucket(i) + 1).max().unwrap_or(0);
    let mut rank: Vec<u32> = (0..buckets as u32).collect();
    rank.shuffle(rng);
    // A counting sort of the rows by their bucket's rank, then a shuffle inside each bucket.
    let mut start = vec![0usize; buckets + 1];
    for &i in order.iter() {
        start[rank[bucket(i)] as usize + 1] += 1;
    }
    for b in 0..buckets {
        start[b + 1] += start[b];
    }
    let mut next = start.clone();
    let mut sorted = vec![0u32; order.len()];
    for &i in order.iter() {
        let r = rank[bucket(i)] as usize;
        sorted[next[r]] = i;
        next[r] += 1;
    }
    for b in 0..buckets {
        sorted[start[b]..start[b + 1]].shuffle(rng);
    }
    order.copy_from_slice(&sorted);
}

/// [`block_shuffle`] of every row of a pass, written from `active` (the rows in ascending
/// order) instead of sorted from the last pass's order: the buckets in a random order, each
/// bucket's rows copied from `active` and shuffled in place. Only streaming reads and writes
/// (the counting sort of [`block_shuffle`] scatters every row: half the cost of the draw of a
/// pass over 203,621 rows).
fn bucket_permutation(active: &[u32], order: &mut [u32], rng: &mut Xoshiro256PlusPlus) {
    debug_assert!(active.len() == order.len() && active.windows(2).all(|p| p[0] < p[1]));
    let bucket = |i: u32| (i >> BUCKET_BITS) as usize;
    let buckets = active.last().map_or(0, |&i| bucket(i) + 1);
    // `start[b]..start[b + 1]`: bucket `b`'s rows in `active`.
    let mut start = vec![0usize; buckets + 1];
    for &i in active {
        start[bucket(i) + 1] += 1;
    }
    for b in 0..buckets {
        start[b + 1] += start[b];
    }
    let mut sequence: Vec<u32> = (0..buckets as u32).collect();
    sequence.shuffle(rng);
    let mut at = 0;
    for &b in &sequence {
        let rows = &active[start[b as usize]..start[b as usize + 1]];
        let slots = &mut order[at..at + rows.len()];
        slots.copy_from_slice(rows);
        slots.shuffle(rng);
        at += rows.len();
    }
}

/// Turns a certified statement about the solved problem into the original problem's
/// certificate, and applies the stopping rule (`gap <= tol * max(P, tiny)`, DESIGN.md section 3).
pub(crate) struct Judge<'p, 'a, D: Rows, L: BlockLoss> {
    tol: f64,
    /// The Lasso reduction, when the problem solved stands for one (`l2 = 0`).
    lasso: Option<Reduction<'p, 'a, D, L>>,
}

impl<'p, 'a, D: Rows, L: BlockLoss> Judge<'p, 'a, D, L> {
    /// The rule for `tol`, through the reduction when there is one.
    pub fn new(tol: f64, lasso: Option<Reduction<'p, 'a, D, L>>) -> Self {
        Self { tol, lasso }
    }

    /// The original problem's certificate at `w` (length `d + 1`) and duals `alpha`, given the
    /// solved problem's primal `P_s(w)` and a certified bound `bound >= P_s(w) - P_s*`.
    pub fn original(&mut self, w: &[f64], alpha: &[f64], primal: f64, bound: f64) -> Certificate {
        let bound = bound.max(0.0);
        match &mut self.lasso {
            None => Certificate { primal, dual: primal - bound, gap: bound },
            Some(reduction) => reduction.certificate(w, alpha, bound),
        }
    }

    /// Whether a certificate meets `tol` ([`meets`]).
    pub fn met(&self, c: &Certificate) -> bool {
        meets(self.tol, c)
    }
}

/// The stopping rule of every linear fit: `gap <= tol * max(P, tiny)` (DESIGN.md section 3), and
/// a finite gap.
pub(crate) fn meets(tol: f64, c: &Certificate) -> bool {
    c.gap.is_finite() && c.gap <= tol * c.primal.max(f64::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    /// Large passes visit every kept row once, bucket by bucket (each bucket's rows in
    /// consecutive slots), the same for the same seed; the buckets' order and their rows' order
    /// are random.
    #[test]
    fn block_shuffle_is_a_permutation_by_buckets() {
        // The kept rows of a shrinking pass: any subset, in any order.
        let mut kept: Vec<u32> = (0..3 * BUCKETED_ROWS as u32).filter(|i| i % 7 != 3).rev().collect();
        let mut sorted = kept.clone();
        sorted.sort_unstable();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        block_shuffle(&mut kept, &mut rng);
        let mut again: Vec<u32> = sorted.clone();
        block_shuffle(&mut again, &mut Xoshiro256PlusPlus::seed_from_u64(11));
        let runs = assert_bucketed(&kept, &sorted);
        // The same seed from another starting order gives another order (the draw permutes
        // the slots it is given), but the same bucket structure.
        let again_buckets: Vec<u32> = again.iter().map(|&i| i >> BUCKET_BITS).collect();
        assert_eq!(1 + again_buckets.windows(2).filter(|p| p[0] != p[1]).count(), runs);
        let mut third = sorted.clone();
        block_shuffle(&mut third, &mut Xoshiro256PlusPlus::seed_from_u64(11));
        assert_eq!(third, again, "deterministic for a seed");
        // Small passes: a uniform permutation.
        let mut small: Vec<u32> = (0..100).collect();
        block_shuffle(&mut small, &mut rng);
        let mut check = small.clone();
        check.sort_unstable();
        assert_eq!(check, (0..100).collect::<Vec<u32>>());
    }

    /// Asserts that `order` permutes the ascending `rows` (3 buckets' worth) with one run of
    /// slots per bucket, buckets and rows within a bucket out of order; returns the run count.
    fn assert_bucketed(order: &[u32], rows: &[u32]) -> usize {
        let mut seen = order.to_vec();
        seen.sort_unstable();
        assert_eq!(seen, rows, "a permutation of the rows");
        let buckets: Vec<u32> = order.iter().map(|&i| i >> BUCKET_BITS).collect();
        let runs = 1 + buckets.windows(2).filter(|p| p[0] != p[1]).count();
        assert_eq!(runs, (3 * BUCKETED_ROWS) >> BUCKET_BITS, "one run of slots per bucket");
        assert!(buckets.windows(2).any(|p| p[0] > p[1]), "buckets in a random order");
        assert!(order.windows(2).any(|p| p[0] > p[1] && p[0] >> BUCKET_BITS == p[1] >> BUCKET_BITS));
        runs
    }

    /// A pass over every row writes the bucketed permutation from the rows themselves: each
    /// row once, one run of slots per bucket, buckets and rows in a random order, the same for
    /// the same seed whatever the last pass's order was.
    #[test]
    fn bucket_permutation_draws_every_row_by_buckets() {
        // The rows of the passes: those of positive weight, in ascending order.
        let active: Vec<u32> = (0..3 * BUCKETED_ROWS as u32).filter(|i| i % 5 != 2).collect();
        let mut order = active.clone();
        order.reverse();
        bucket_permutation(&active, &mut order, &mut Xoshiro256PlusPlus::seed_from_u64(3));
        assert_bucketed(&order, &active);
        let mut again = active.clone();
        bucket_permutation(&active, &mut again, &mut Xoshiro256PlusPlus::seed_from_u64(3));
        assert_eq!(again, order, "deterministic for a seed");
    }
}
