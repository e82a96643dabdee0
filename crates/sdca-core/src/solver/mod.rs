//! The epoch driver and the public fit entries.
//!
//! Like argmin's executor, `drive` owns the loop: it draws the coordinate order of each epoch
//! (uniform with replacement or a fresh permutation, from a seeded RNG), calls a check every
//! `check_every` epochs (and at the end of its budget), and stops when the check says so, on
//! `max_epochs` or on `max_seconds`. A solver only supplies one pass of coordinate updates
//! (`Coordinate`); the plain solver (`sdca::run`) and the inner solves of the accelerated one
//! (`accelerated::run`) run the same pass under the same driver.
//!
//! With `shrinking` (the default), a plain SDCA pass over a permutation leaves out the rows
//! whose box-constrained dual is settled at a bound (liblinear's shrinking, `shrink`): `drive`
//! keeps them at the tail of the order and brings them back, and checks, when the solver
//! reports that the rows kept look solved (`Coordinate::settled`).
//!
//! The one `match` from the loss enum to a monomorphised solver sits in [`fit_from`]; then
//! `solve` picks the problem actually solved and the solver:
//!
//! - **Elastic net / ridge** (`l2 > 0`): solved as given.
//! - **Lasso / pure L1** (`l2 = 0`, `l1 > 0`): the reduction of `prox-sdca.txt` section 3.2
//!   (`papers/notes/prox-sdca.md` section 3.2, `accelerated-prox-sdca.md` section 2.5). With the
//!   target accuracy `eps = tol P(0)` and a certified radius `B >= ||w*||_2` of the original
//!   optimum, the elastic net with `l2_used = eps / B^2` is solved. `B^2 = (P(0)/l1)^2`
//!   (`l1 ||w*||_1 <= P(w*) <= P(0)` as every loss is `>= 0`), plus, with an intercept (which
//!   the original problem leaves unpenalised), the square of a bound on `|b*| / intercept_scaling`
//!   from Jensen's inequality per class (`lasso_radius_sq`). The result reports both problems:
//!   [`FitResult::solved_gap`] for the elastic net actually solved and
//!   [`FitResult::certificate`] for the original one, with the certified bound
//!   `min(S + (l2_used/2)(B^2 - ||w||^2), P_0(w) - D_0(theta))`: the first term is the paper's
//!   argument (`P_0(w) - P_0* <= S + (l2_used/2)(||w*||^2 - ||w||^2)` for any bound `S` on
//!   the elastic net's suboptimality), the second the original problem's own duality gap at the
//!   duals rescaled into its feasible set (`Judge::lasso_dual`).
//! - **Newton** (`solver="auto"`, first rule): damped Newton on the primal ([`newton`]) when the
//!   loss has a second derivative (logistic, squared, squared_hinge, smooth_hinge), `l1 = 0`,
//!   `l2 > 0`, `sampling` is not `"gap"` (asking for gap sampling asks for SDCA) and
//!   `d + 1 <= 32` weights (intercept slot included). Its iterations cost `O(n d^2 + d^3)`
//!   against SDCA's `O(n d)` epochs, and it needs 4 to 11 of them where SDCA needs 4 to 2,000
//!   epochs. Measured against the faster of plain and accelerated SDCA
//!   (`benches/newton_crossover.rs`, logistic, `tol = 1e-6`, one thread): at `n = 50`, Newton
//!   is 6-35x faster for `d <= 16`, 2x at `d = 32` and 3x slower at `d = 64`, at `l2 = 1e-2`
//!   and `1e-4` alike. At `n = 5,000` and `l2 = 1e-2` (SDCA needs only 4-7 epochs) it is 2.4x
//!   faster at `d <= 6`, 1.2x at `d = 16` and 1.7x slower at `d = 32`; at `l2 = 1e-4`, 5-6x
//!   faster up to `d = 16`, 1.2x at `d = 32`, level at `d = 64`. The cut keeps the small groups,
//!   where the gain is large, and bounds the loss on large, well-regularized problems near the
//!   cut to well under 2x.
//! - **Solver** (`solver="auto"`, otherwise): accelerated Prox-SDCA when the loss is smooth
//!   (`gamma =` [`BlockLoss::smoothness`] `> 0`) and `R^2 / (gamma l2_used) > 10 n`
//!   (`accelerated-prox-sdca.txt` Figure 2), plain Prox-SDCA otherwise. `R^2 = max_i s_i
//!   (||x_i||^2 + intercept_scaling^2)`: the row norm includes the intercept feature, and a weight
//!   `s_i` scales the loss of row `i`, so its smoothness, as `||x_i||^2` does.

pub mod accelerated;
pub mod newton;
pub mod pdprox;
pub mod sdca;
mod shrink;

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::config::{FitConfig, Interrupt, Sampling, SolverKind, NEWTON_MAX_FEATURES};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{
    Absolute, BlockLoss, EpsilonInsensitive, Hinge, Logistic, LossKind, MulticlassHinge, Multinomial,
    Quantile, SmoothHinge, Squared, SquaredHinge,
};
use crate::reg::{soft_threshold, ElasticNet, L2};
use crate::sampling::GapSampler;

/// Why a fit stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The relative duality gap reached `tol`.
    Converged,
    /// `max_epochs` passes were made first.
    MaxEpochs,
    /// `max_seconds` ran out first.
    MaxSeconds,
    /// The config's `interrupt` check asked to stop (Ctrl-C).
    Interrupted,
}

impl Status {
    /// Short machine-readable reason.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Converged => "ok",
            Self::MaxEpochs => "max_epochs reached before tol",
            Self::MaxSeconds => "max_seconds reached before tol",
            Self::Interrupted => "interrupted",
        }
    }
}

/// The data of one fit: rows, labels and optional sample weights, validated together.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a, D: Rows> {
    /// Feature rows.
    pub x: &'a D,
    /// Labels: `{-1, +1}` for binary losses, class indices `0..k` for multiclass losses,
    /// finite reals otherwise.
    pub y: &'a [f64],
    /// Sample weights `s_i >= 0` (default 1).
    pub weights: Option<&'a [f64]>,
    /// Scores per row: the number of classes `k` (largest label + 1) for a multiclass loss,
    /// else 1.
    pub n_outputs: usize,
}

impl<'a, D: Rows> Problem<'a, D> {
    /// Checks lengths, labels against the loss and weights.
    pub fn new(x: &'a D, y: &'a [f64], weights: Option<&'a [f64]>, loss: LossKind) -> Result<Self> {
        Self::checked(x, y, weights, loss, true)
    }

    /// One partition of a distributed problem ([`local_round`]): the checks of [`Problem::new`]
    /// except that its rows may hold a single class (the whole problem was checked for two);
    /// `n_outputs` is the whole problem's number of scores.
    pub fn partition(
        x: &'a D,
        y: &'a [f64],
        weights: Option<&'a [f64]>,
        loss: LossKind,
        n_outputs: usize,
    ) -> Result<Self> {
        let p = Self::checked(x, y, weights, loss, false)?;
        if p.n_outputs > n_outputs {
            return Err(SdcaError::ShapeMismatch {
                what: "partition classes vs the whole problem's",
                expected: n_outputs,
                got: p.n_outputs,
            });
        }
        Ok(Self { n_outputs, ..p })
    }

    fn checked(
        x: &'a D,
        y: &'a [f64],
        weights: Option<&'a [f64]>,
        loss: LossKind,
        two_classes: bool,
    ) -> Result<Self> {
        let n = x.n_rows();
        if y.len() != n {
            return Err(SdcaError::ShapeMismatch {
                what: "labels vs feature rows",
                expected: n,
                got: y.len(),
            });
        }
        if n == 0 {
            return Err(SdcaError::Empty { what: "zero rows" });
        }
        if let Some(s) = weights {
            if s.len() != n {
                return Err(SdcaError::ShapeMismatch {
                    what: "weights vs feature rows",
                    expected: n,
                    got: s.len(),
                });
            }
            if let Some(row) = s.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
                return Err(SdcaError::InvalidWeight { row, value: s[row] });
            }
            if s.iter().all(|w| *w == 0.0) {
                return Err(SdcaError::Empty { what: "every sample weight is zero" });
            }
        }
        if loss.is_multiclass() {
            return Self::multiclass(x, y, weights, loss, two_classes);
        }
        let classification = loss.is_classification();
        for (row, &v) in y.iter().enumerate() {
            let ok = if classification { v == 1.0 || v == -1.0 } else { v.is_finite() };
            if !ok {
                return Err(SdcaError::InvalidLabel {
                    row,
                    value: v,
                    loss: loss.name(),
                    expected: if classification {
                        "binary losses take labels in {-1, +1}, {0, 1} or booleans"
                    } else {
                        "regression labels must be finite numbers"
                    },
                });
            }
        }
        if classification && two_classes {
            let weight = |i: usize| weights.map_or(1.0, |s| s[i]);
            let has = |c: f64| (0..n).any(|i| y[i] == c && weight(i) > 0.0);
            if !(has(1.0) && has(-1.0)) {
                let label = if has(1.0) { "+1" } else { "-1" };
                return Err(SdcaError::OneClass { label: label.into() });
            }
        }
        Ok(Self { x, y, weights, n_outputs: 1 })
    }

    /// Multiclass labels: class indices `0..k` with at least two classes of positive weight.
    fn multiclass(
        x: &'a D,
        y: &'a [f64],
        weights: Option<&'a [f64]>,
        loss: LossKind,
        two_classes: bool,
    ) -> Result<Self> {
        let mut k = 0usize;
        for (row, &v) in y.iter().enumerate() {
            if !(v >= 0.0 && v.fract() == 0.0 && v < u32::MAX as f64) {
                return Err(SdcaError::InvalidLabel {
                    row,
                    value: v,
                    loss: loss.name(),
                    expected: "multiclass losses take class indices 0..k (the plugin maps labels to them)",
                });
            }
            k = k.max(v as usize + 1);
        }
        let weight = |i: usize| weights.map_or(1.0, |s| s[i]);
        let first = (0..y.len()).find(|&i| weight(i) > 0.0).map(|i| y[i]);
        if let Some(c) = first.filter(|_| two_classes) {
            if (0..y.len()).all(|i| weight(i) == 0.0 || y[i] == c) {
                return Err(SdcaError::OneClass { label: format!("class index {c}") });
            }
        }
        Ok(Self { x, y, weights, n_outputs: k })
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        self.y.len()
    }

    #[inline(always)]
    pub(crate) fn weight(&self, i: usize) -> f64 {
        self.weights.map_or(1.0, |s| s[i])
    }
}

/// Primal, dual and gap at one point, all for the objective of DESIGN.md section 3 with the
/// user's `l2` and `l1`.
///
/// For plain SDCA on an elastic net (`l2 > 0`) this is the duality certificate: `dual` is
/// `D(alpha)` and `gap = mean_i s_i (phi + phi* + alpha a) = P - D` (up to rounding). For the
/// accelerated solver and the Lasso reduction, `gap` is a certified upper bound on
/// `P(w) - P(w*)` (see [`FitResult`]) and `dual = primal - gap` a certified lower bound on the
/// optimum `P(w*)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Certificate {
    /// `P(w)`.
    pub primal: f64,
    /// `D(alpha)`, or a certified lower bound on `P(w*)` (equal to `primal - gap`).
    pub dual: f64,
    /// Certified bound on `P(w) - P(w*)`, `>= 0`.
    pub gap: f64,
}

/// A fitted linear model with its certificate.
///
/// Two problems can be involved: the **original** one the user asked for (`l2`, `l1` of the
/// config) and the one **actually solved** (`l2_used`, `l1`). They differ only for the Lasso
/// (`l2 = 0`), which is solved as an elastic net with the small `l2_used` chosen from `tol`
/// (module docs). [`FitResult::certificate`], [`FitResult::gap_trace`], [`FitResult::status`]
/// and `tol` always refer to the original problem; [`FitResult::solved_gap`] to the solved one.
///
/// `alpha` are the duals of the solver's last problem: for `"sdca"`, of the solved problem, with
/// `coef` its exact primal partner, so [`row_outputs`]' row gaps average to `solved_gap`. For
/// `"newton"` they are `alpha_i = -phi'(x_i . w + b)` at its model, the feasible duals of its
/// certificate ([`newton`]): their row gaps are zero up to rounding, and the regularizer's term
/// `(l2/2)||w - w(alpha)||^2` makes up `certificate.gap`. For
/// `"accelerated"` they are the duals of the last inner (proximal) problem: every `alpha_i` is
/// feasible and converges to the optimal dual, but the row gaps average to that inner problem's
/// gap, not to `certificate.gap`. For `"pdprox"` they are the feasible duals `theta` of its
/// certificate ([`pdprox`]); their row gaps are non-negative, and the regularizer's
/// Fenchel-Young term makes up the rest of `certificate.gap`.
#[derive(Debug, Clone, PartialEq)]
pub struct FitResult {
    /// Weights, `d` per output, output-major: `coef[c d + j]` is feature `j`'s weight for score
    /// `c` (one output for scalar losses, one per class for multiclass losses).
    pub coef: Vec<f64>,
    /// Intercepts, one per output (0 without `fit_intercept`).
    pub intercept: Vec<f64>,
    /// Dual variables, `n x n_outputs` row-major (DESIGN.md section 3 convention).
    pub alpha: Vec<f64>,
    /// Scores per row: 1, or the number of classes `k` of a multiclass loss.
    pub n_outputs: usize,
    /// Final certificate for the original problem.
    pub certificate: Certificate,
    /// Epochs run (passes of coordinate updates, over all inner calls; gap checks not counted;
    /// a pass that leaves out shrunk rows counts as the share of rows it visits, the total
    /// rounded up). For `"newton"`: passes over the data,
    /// each gradient-and-Hessian pass and each line-search trial.
    pub epochs: u32,
    /// Why it stopped.
    pub status: Status,
    /// `certificate.gap` (the original problem's certified bound) after each check. For
    /// `"newton"`: one entry per iterate, the starting point included. For
    /// `"accelerated"`: one entry per outer iteration that was checked (every outer iteration
    /// with the inner gap target; with `inner_epochs`, the first one ending at least
    /// `check_every` epochs after the previous check).
    pub gap_trace: Vec<f64>,
    /// Name of the solver that ran: `"sdca"`, `"accelerated"`, `"pdprox"` or `"newton"`.
    pub solver: &'static str,
    /// The L2 weight of the problem actually solved: the config's `l2`, or for the Lasso
    /// (`l2 = 0`) the reduction's `tol P(0) / B^2`.
    pub l2_used: f64,
    /// Certified bound on the suboptimality of `coef` for the problem actually solved
    /// (`l2_used`, `l1`). For `"sdca"` its duality gap `P - D` at (`coef`, `alpha`); for
    /// `"accelerated"` the smallest of that duality gap, the bound of Figure 2's stopping rule 2
    /// (`(1 + rho/mu) eps_t + (rho kappa / (2 mu)) ||w_t - y_{t-1}||^2`) and, when every inner
    /// call met its target, `xi_t` (rule 1). Equals `certificate.gap` unless `l2 = 0`.
    pub solved_gap: f64,
    /// Outer iterations of the accelerated solver, Newton steps taken by `"newton"` (0 for
    /// `"sdca"`).
    pub outer_iterations: u32,
}

/// A starting model for [`fit_from`]: the duals start at `alpha_i = -phi'(x_i . coef +
/// intercept)` ([`BlockLoss::dual_of`]), a dual-feasible point matched to the model's scores, and the
/// solver's primal is derived from them as usual. Warm starts pay off along a path of
/// decreasing `l1` / `l2`, starting each fit from the previous model. The intercept is ignored
/// when the fit has no intercept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Warm<'a> {
    /// Weights, `d` per output, output-major as [`FitResult::coef`].
    pub coef: &'a [f64],
    /// Intercepts, one per output.
    pub intercept: &'a [f64],
}

impl<'a> From<&'a FitResult> for Warm<'a> {
    fn from(fit: &'a FitResult) -> Self {
        Self { coef: &fit.coef, intercept: &fit.intercept }
    }
}

impl FitResult {
    /// Whether the gap met `tol`.
    pub fn converged(&self) -> bool {
        self.status == Status::Converged
    }
}

/// Per-row outputs of a fit (for `fit_rows`).
#[derive(Debug, Clone, PartialEq)]
pub struct RowOutputs {
    /// Scores `x_i . w + b`, `n x n_outputs` row-major.
    pub decision: Vec<f64>,
    /// Weighted block gaps `s_i (phi + phi* + alpha a)`; their mean is the model's gap.
    pub gap: Vec<f64>,
    /// Weighted loss terms `s_i phi(x_i . w + b, y_i)`; their mean is the loss part of `P`.
    pub loss: Vec<f64>,
}

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
    /// For a solver that shrinks, after each pass: whether the rows kept met their gap target,
    /// so that every row is active again and the certificate is due now. `None` for the
    /// others, whose checks follow `check_every`.
    fn settled(&mut self) -> Option<bool> {
        None
    }
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
        Self {
            start: Instant::now(),
            max_seconds: cfg.max_seconds,
            max_epochs: cfg.max_epochs,
            interrupt: cfg.interrupt,
            interrupted: false,
            epochs: 0,
            work: 0.0,
        }
    }
    /// Counts a pass that visited `share` of the rows (1 for a full pass; less when shrinking
    /// left rows out, so that the epoch budget measures work, as the user reads it).
    /// The count is rounded up but never above `max_epochs` (a last partial pass can start just
    /// below the budget).
    pub fn add_pass(&mut self, share: f64) {
        self.work += share;
        self.epochs = (self.work.ceil().min(u32::MAX as f64) as u32).min(self.max_epochs);
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
/// solver that shrinks: when it has [`Coordinate::settled`]), after the last pass when
/// `check_last`, and always when time is up. Rows a pass drops leave the permutation (the tail
/// of `order`) until the solver settles.
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
        let order_kept = &mut order[..kept];
        match sampling {
            Sampling::Permutation => order_kept.shuffle(rng),
            Sampling::Uniform => {
                let active = solver.active();
                for slot in order_kept.iter_mut() {
                    *slot = active[rng.random_range(0..active.len())];
                }
            }
            // Drawn from the gaps stored at the epoch's start; the pass keeps storing fresh ones.
            Sampling::Gap => {
                let (active, gaps) = (solver.active(), solver.gaps());
                for slot in order_kept.iter_mut() {
                    *slot = match gaps {
                        Some(gaps) => active[gaps.draw(rng)],
                        None => active[rng.random_range(0..active.len())],
                    };
                }
            }
        }
        // A solver without coordinates (Pdprox's full passes) gets an empty order; a pass over
        // no kept row still counts one row, so the budget always advances.
        let share = if order.is_empty() { 1.0 } else { kept.max(1) as f64 / order.len() as f64 };
        kept = solver.pass(&mut order[..kept]);
        run.epochs += 1;
        run.work += share;
        clock.add_pass(share);
        let out_of_time = clock.out_of_time();
        let due = match solver.settled() {
            Some(settled) => {
                if settled {
                    kept = order.len();
                }
                settled
            }
            None => run.epochs.is_multiple_of(budget.check_every),
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
        }
    }
    run
}

/// Where a solver starts: a primal point (length `d + 1`, last slot the intercept feature's
/// weight) and feasible duals.
pub(crate) struct Start {
    pub w: Vec<f64>,
    pub alpha: Vec<f64>,
}

impl Start {
    /// `alpha_i = dual_of(scores_i)` at the feature-major model `w` (zero model: the cold start,
    /// where only rows that cannot move `w` get a non-zero dual), and for a warm start the dual
    /// sum `sum_i s_i x_i alpha_i^T` of the rows that move `w` (empty when cold).
    fn new<D: Rows, L: BlockLoss>(
        problem: &Problem<'_, D>,
        loss: L,
        bias: f64,
        row_sq: &[f64],
        w: Vec<f64>,
    ) -> (Self, Vec<f64>) {
        let (n, d, k) = (problem.n(), problem.x.n_cols(), loss.k());
        let cold = w.iter().all(|&v| v == 0.0);
        let mut alpha = vec![0.0; n * k];
        let mut scores = vec![0.0; k];
        // Warm: the dual sum of the rows that move `w`, in the same pass (the scaling needs it).
        let mut sum = if cold { Vec::new() } else { vec![0.0; (d + 1) * k] };
        for (i, block) in alpha.chunks_exact_mut(k).enumerate() {
            let s = problem.weight(i);
            if s > 0.0 && !(cold && row_sq[i] > 0.0) {
                sdca::scores_into(problem.x, i, &w, bias, &mut scores);
                loss.dual_of(&scores, problem.y[i], block);
                if !cold && row_sq[i] > 0.0 {
                    scores.iter_mut().zip(block.iter()).for_each(|(t, &a)| *t = s * a);
                    problem.x.axpy_block(i, &scores, &mut sum);
                    sum[d * k..].iter_mut().zip(&scores).for_each(|(v, &t)| *v += bias * t);
                }
            }
        }
        (Self { w, alpha }, sum)
    }
}

/// Mean weighted loss `(1/n) sum_i s_i phi(scores_i)` at the feature-major model `w`.
pub(crate) fn mean_loss<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    bias: f64,
    w: &[f64],
) -> f64 {
    let mut scores = vec![0.0; loss.k()];
    let mut sum = 0.0;
    for i in (0..problem.n()).filter(|&i| problem.weight(i) > 0.0) {
        sdca::scores_into(problem.x, i, w, bias, &mut scores);
        sum += problem.weight(i) * loss.value(&scores, problem.y[i]);
    }
    sum / problem.n() as f64
}

/// What a solver returns before it becomes a [`FitResult`].
pub(crate) struct Outcome {
    /// Primal point, length `d + 1`.
    pub w: Vec<f64>,
    pub alpha: Vec<f64>,
    pub certificate: Certificate,
    pub solved_gap: f64,
    pub status: Status,
    pub gap_trace: Vec<f64>,
    pub solver: &'static str,
    pub outer_iterations: u32,
}

/// Turns a certified statement about the solved problem into the original problem's
/// certificate, and applies the stopping rule (`gap <= tol * max(P, tiny)`, DESIGN.md section 3).
///
/// The Lasso reduction (`lasso`) is for scalar losses only (the config rejects `l2 = 0` with a
/// multiclass loss), so its dual works on one dual per row.
pub(crate) struct Judge<'p, 'a, D: Rows, L: BlockLoss> {
    problem: &'p Problem<'a, D>,
    loss: L,
    tol: f64,
    l2_used: f64,
    l1: f64,
    bias: f64,
    /// Lasso reduction: `B^2 >= ||w*||^2` of the original optimum (all `d + 1` slots).
    lasso: Option<f64>,
    scratch: Vec<f64>,
}

impl<D: Rows, L: BlockLoss> Judge<'_, '_, D, L> {
    /// The original problem's certificate at `w` (length `d + 1`) and duals `alpha`, given the
    /// solved problem's primal `P_s(w)` and a certified bound `bound >= P_s(w) - P_s*`.
    pub fn original(&mut self, w: &[f64], alpha: &[f64], primal: f64, bound: f64) -> Certificate {
        let bound = bound.max(0.0);
        let Some(radius_sq) = self.lasso else {
            return Certificate { primal, dual: primal - bound, gap: bound };
        };
        // The Lasso objective from scratch, not `P_s - (l2_used/2)||w||^2`: far from the optimum
        // (a warm start) that L2 term can dwarf `P_0`, and the difference cancel to noise.
        let primal = self.lasso_primal(w);
        let half_sq = 0.5 * self.l2_used * w.iter().map(|v| v * v).sum::<f64>();
        let reach = 0.5 * self.l2_used * radius_sq;
        // The same cancellation can hit the reduction's bound: add its rounding error.
        let reduction = bound + reach - half_sq + 4.0 * f64::EPSILON * (bound + reach + half_sq);
        let gap = reduction.min(primal - self.lasso_dual(alpha)).max(0.0);
        Certificate { primal, dual: primal - gap, gap }
    }

    /// `P_0(w) = (1/n) sum_i s_i phi(x_i . w + b) + l1 ||w||_1`, the original (`l2 = 0`)
    /// objective; one pass over the rows.
    fn lasso_primal(&self, w: &[f64]) -> f64 {
        let p = self.problem;
        let (x, d) = (p.x, p.x.n_cols());
        let loss: f64 = (0..p.n())
            .filter(|&i| p.weight(i) > 0.0)
            .map(|i| p.weight(i) * self.loss.value(&[x.dot(i, w) + self.bias * w[d]], p.y[i]))
            .sum();
        loss / p.n() as f64 + self.l1 * w[..d].iter().map(|v| v.abs()).sum::<f64>()
    }

    /// Whether a certificate meets `tol`.
    pub fn met(&self, c: &Certificate) -> bool {
        c.gap.is_finite() && c.gap <= self.tol * c.primal.max(f64::MIN_POSITIVE)
    }

    /// The original (`l2 = 0`) problem's dual at `alpha` moved into its feasible set:
    /// `D_0(theta) = -(1/n) sum_i s_i phi*(-theta_i)` subject to
    /// `||(1/n) sum_i s_i theta_i x_i||_inf <= l1` and, with an unpenalised intercept,
    /// `sum_i s_i theta_i = 0`. `theta_i = c f_i alpha_i` with `f_i in [0, 1]` scaling down the
    /// side (`s_i alpha_i > 0` or `< 0`) with the larger sum so the two balance, and `c <= 1` the
    /// largest factor meeting the box. Each `theta_i` is a convex combination of `alpha_i` and 0,
    /// both in the loss's dual domain (`phi*(0) = -inf phi` is finite), so `theta` is feasible.
    /// One pass over the rows.
    fn lasso_dual(&mut self, alpha: &[f64]) -> f64 {
        let p = self.problem;
        let (x, n, d) = (p.x, p.n(), p.x.n_cols());
        let (mut pos, mut neg) = (0.0, 0.0);
        for (i, a) in alpha.iter().enumerate() {
            let sa = p.weight(i) * a;
            if sa > 0.0 {
                pos += sa;
            } else {
                neg -= sa;
            }
        }
        let (f_pos, f_neg) = match self.bias > 0.0 {
            false => (1.0, 1.0),
            true if pos > neg => (neg / pos, 1.0),
            true if neg > pos => (1.0, pos / neg),
            true => (1.0, 1.0),
        };
        let factor = |sa: f64| if sa > 0.0 { f_pos } else { f_neg };
        self.scratch.clear();
        self.scratch.resize(d, 0.0);
        for (i, a) in alpha.iter().enumerate() {
            let sa = p.weight(i) * a;
            if sa != 0.0 {
                x.axpy(i, sa * factor(sa), &mut self.scratch);
            }
        }
        let nf = n as f64;
        let top = self.scratch.iter().fold(0.0f64, |m, g| m.max(g.abs())) / nf;
        // A hair inside the box so that rounding cannot leave theta infeasible.
        let c = if top > self.l1 { self.l1 / top * (1.0 - 1e-12) } else { 1.0 };
        let mut conj = 0.0;
        for (i, a) in alpha.iter().enumerate() {
            let s = p.weight(i);
            if s > 0.0 {
                let sa = s * a;
                conj += s * self.loss.conj_neg(&[c * factor(sa) * a], p.y[i]);
            }
        }
        -conj / nf
    }
}

/// Whether the accelerated solver runs: `kind` asks for it (`Auto`: when
/// `R^2 / (gamma l2) > 10 n`, Figure 2's condition; `Accelerated`: whenever its ridge weight
/// `kappa = R^2 / (gamma n) - l2` is positive) and the loss is smooth (`gamma > 0`).
pub(crate) fn use_accelerated(kind: SolverKind, gamma: f64, r2: f64, l2: f64, n: usize) -> bool {
    if !(gamma > 0.0 && r2 > 0.0) {
        return false;
    }
    let condition = r2 / (gamma * l2);
    match kind {
        SolverKind::Sdca | SolverKind::Pdprox | SolverKind::Newton => false,
        // The shift kappa n w multiplies the squared row norms by n: at extreme feature scales it
        // overflows, while plain SDCA's updates are scale-free, so auto keeps those on SDCA.
        SolverKind::Auto => condition > 10.0 * n as f64 && r2 * (n as f64) < 1e150,
        SolverKind::Accelerated => condition > n as f64,
    }
}

/// The most weights (`d + 1`, the intercept slot included) for which `solver="auto"` picks
/// Newton (module docs).
pub(crate) const NEWTON_AUTO_MAX_DIM: usize = 32;

/// Whether Newton runs: `Newton` asks for it (an error beyond [`NEWTON_MAX_FEATURES`]
/// features); `Auto` on its domain (module docs): a loss with a curvature, `l1 = 0`, `l2 > 0`,
/// no gap sampling (asking for it asks for SDCA) and `d + 1 <= NEWTON_AUTO_MAX_DIM`.
pub(crate) fn use_newton(cfg: &FitConfig, d: usize) -> Result<bool> {
    match cfg.solver {
        SolverKind::Newton if d > NEWTON_MAX_FEATURES => Err(SdcaError::InvalidParameter {
            name: "solver",
            message: format!(
                "\"newton\" takes at most {NEWTON_MAX_FEATURES} features (each iteration factorises a \
                 (d + 1) x (d + 1) Hessian) and this fit has {d}; use solver=\"auto\" or \"sdca\""
            ),
        }),
        SolverKind::Newton => Ok(true),
        SolverKind::Auto => Ok(cfg.loss.newton_ready()
            && cfg.l1 == 0.0
            && cfg.l2 > 0.0
            && cfg.sampling != Sampling::Gap
            && d < NEWTON_AUTO_MAX_DIM),
        SolverKind::Sdca | SolverKind::Accelerated | SolverKind::Pdprox => Ok(false),
    }
}

/// Largest `[lo, hi]` with `f <= level` on it, for convex `f` with `f(a0) <= level`; each end is
/// rounded outward (a point where `f > level`) or infinite.
fn sublevel(f: impl Fn(f64) -> f64, a0: f64, level: f64) -> (f64, f64) {
    let end = |dir: f64| {
        let mut good = a0;
        let mut h = a0.abs().max(1.0);
        let mut bad = loop {
            let a = a0 + dir * h;
            if f(a) > level {
                break a;
            }
            good = a;
            h *= 2.0;
            if h > 1e30 {
                return dir * f64::INFINITY;
            }
        };
        for _ in 0..200 {
            let mid = 0.5 * (good + bad);
            if mid == good || mid == bad || (bad - good).abs() <= 1e-9 * (1.0 + bad.abs()) {
                break;
            }
            if f(mid) > level {
                bad = mid;
            } else {
                good = mid;
            }
        }
        bad
    };
    (end(-1.0), end(1.0))
}

/// `B^2 >= ||w*||^2 + (b* / bias)^2` for an optimum `(w*, b*)` of the original problem with
/// `l2 = 0` (`P(0)` its value at zero).
///
/// Features: `l1 ||w*||_1 <= P(w*) <= P(0)`, so `||w*||_2 <= W1 = P(0) / l1`. Intercept (not
/// penalised): every loss is `>= 0`, so the rows of one group (one class; all rows for
/// regression, whose losses depend on the residual `a - y` only) carry at most `n P(0)` of loss,
/// and by Jensen the convex loss at the group's mean score (residual) is at most
/// `n P(0) / S_g`, `S_g` the group's weight. That mean is `m_g . w* + b*` (minus the mean label),
/// `m_g` the group's mean row, with `|m_g . w*| <= ||m_g||_inf W1`: an interval for `b*`.
fn lasso_radius_sq<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    p0: f64,
    l1: f64,
    bias: f64,
) -> Result<f64> {
    let w1 = p0 / l1;
    if bias == 0.0 {
        return Ok(w1 * w1);
    }
    let (x, n, d) = (problem.x, problem.n(), problem.x.n_cols());
    let groups: &[Option<f64>] = if L::CLASSIFICATION { &[Some(1.0), Some(-1.0)] } else { &[None] };
    let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
    let mut mean = vec![0.0; d];
    for &class in groups {
        let member = |i: usize| class.is_none_or(|c| problem.y[i] == c) && problem.weight(i) > 0.0;
        mean.iter_mut().for_each(|m| *m = 0.0);
        let (mut total, mut label) = (0.0, 0.0);
        for i in (0..n).filter(|&i| member(i)) {
            let s = problem.weight(i);
            x.axpy(i, s, &mut mean);
            total += s;
            label += s * problem.y[i];
        }
        if total == 0.0 {
            continue;
        }
        let reach = mean.iter().fold(0.0f64, |m, v| m.max(v.abs())) / total * w1;
        // Rounding slack on the level, so that the Jensen start point is inside.
        let level = n as f64 * p0 / total * (1.0 + 1e-9) + 1e-300;
        let (a_lo, a_hi) = match class {
            Some(c) => sublevel(|a| loss.value(&[a], c), 0.0, level),
            None => {
                let ybar = label / total;
                let (r_lo, r_hi) = sublevel(|r| loss.value(&[r], 0.0), -ybar, level);
                (r_lo + ybar, r_hi + ybar)
            }
        };
        lo = lo.max(a_lo - reach);
        hi = hi.min(a_hi + reach);
    }
    let b = lo.abs().max(hi.abs());
    if !b.is_finite() {
        return Err(SdcaError::InvalidParameter {
            name: "l2",
            message: "l2 = 0 with an intercept: no bound on the intercept of this problem; \
                      set l2 > 0 or fit_intercept=False"
                .into(),
        });
    }
    Ok(w1 * w1 + (b / bias).powi(2))
}

/// Calls `$body` with `$l` bound to the concrete loss of `$kind` (one monomorphised copy each);
/// `$k` is the number of classes of a multiclass loss.
macro_rules! with_loss {
    ($kind:expr, $k:expr, |$l:ident| $body:expr) => {
        match $kind {
            LossKind::Hinge => {
                let $l = Hinge;
                $body
            }
            LossKind::SmoothHinge { smoothing } => {
                let $l = SmoothHinge { smoothing };
                $body
            }
            LossKind::SquaredHinge => {
                let $l = SquaredHinge;
                $body
            }
            LossKind::Logistic => {
                let $l = Logistic;
                $body
            }
            LossKind::Squared => {
                let $l = Squared;
                $body
            }
            LossKind::Absolute => {
                let $l = Absolute;
                $body
            }
            LossKind::EpsilonInsensitive { epsilon } => {
                let $l = EpsilonInsensitive { epsilon };
                $body
            }
            LossKind::Quantile { quantile } => {
                let $l = Quantile { quantile };
                $body
            }
            LossKind::MulticlassHinge { smoothing } => {
                let $l = MulticlassHinge { k: $k, smoothing };
                $body
            }
            LossKind::Multinomial => {
                let $l = Multinomial { k: $k };
                $body
            }
        }
    };
}

// After `with_loss!`, which it uses (textual macro scope).
mod cocoa;
pub use cocoa::{local_round, LocalRound, RoundSpec};

/// Fit a regularized linear model (DESIGN.md section 3) with the configured solver, from
/// scratch: `fit_from(problem, cfg, None)`.
pub fn fit<D: Rows>(problem: &Problem<'_, D>, cfg: &FitConfig) -> Result<FitResult> {
    fit_from(problem, cfg, None)
}

/// Fit a regularized linear model (DESIGN.md section 3), optionally warm-started from a model
/// ([`Warm`]).
///
/// Solves the elastic net (or, for `l2 = 0`, the Lasso through the reduction of
/// `prox-sdca.txt` section 3.2) with plain Prox-SDCA (`prox-sdca.txt` Figure 1), Accelerated
/// Prox-SDCA (`accelerated-prox-sdca.txt` Figure 2), Pdprox or, for ridge problems with few
/// features, damped Newton ([`newton`]), as chosen by `cfg.solver` (module docs).
/// Returns the model, its duals and a certificate for the original problem; errata in
/// `papers/notes/prox-sdca.md` section 9 and `papers/notes/accelerated-prox-sdca.md` section 6.
/// Errors: a warm model of the wrong width or with non-finite values; a Lasso problem whose
/// intercept cannot be bounded; a fit that overflowed `f64` ([`SdcaError::NonFiniteResult`]).
pub fn fit_from<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    warm: Option<&Warm<'_>>,
) -> Result<FitResult> {
    let (d, k) = (problem.x.n_cols(), problem.n_outputs);
    if let Some(limit) = cfg.max_memory {
        let needed = memory_estimate(problem.n(), d, k);
        if needed > limit {
            return Err(SdcaError::MemoryLimit {
                what: "linear",
                advice: "fit fewer rows, features or classes per group",
                needed,
                limit,
            });
        }
    }
    // The solvers' feature-major layout: slot `j k + c`, the intercept feature in row `d`.
    let mut w = vec![0.0; (d + 1) * k];
    if let Some(m) = warm {
        if m.coef.len() != d * k || m.intercept.len() != k {
            return Err(SdcaError::ShapeMismatch {
                what: if k == 1 {
                    "warm start coef vs n_features"
                } else {
                    "warm start coef vs n_features x classes (and one intercept per class)"
                },
                expected: d * k,
                got: m.coef.len(),
            });
        }
        if let Some(bad) = m.coef.iter().chain(m.intercept).find(|v| !v.is_finite()) {
            return Err(SdcaError::InvalidParameter {
                name: "warm_start",
                message: format!("the warm model holds the non-finite value {bad}; pass a fitted model"),
            });
        }
        for c in 0..k {
            for j in 0..d {
                w[j * k + c] = m.coef[c * d + j];
            }
            if cfg.intercept_scaling > 0.0 {
                w[d * k + c] = m.intercept[c] / cfg.intercept_scaling;
            }
        }
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let fit = if cfg.solver == SolverKind::Pdprox {
        pdprox::fit(problem, cfg, w, &mut rng)?
    } else {
        with_loss!(cfg.loss, k, |loss| solve(problem, loss, cfg, w, &mut rng))?
    };
    // Valid but extreme input (values near 1e150, a tiny l2 against large data) can overflow
    // inside the solver; NaN or infinity in a model is garbage, so it is an error instead.
    let c = &fit.certificate;
    let outputs: [(&'static str, &[f64]); 4] = [
        ("the fit's coef", &fit.coef),
        ("the fit's intercept", &fit.intercept),
        ("the fit's dual variables", &fit.alpha),
        ("the fit's duality gap certificate", &[c.primal, c.dual, c.gap, fit.solved_gap]),
    ];
    match outputs.iter().find(|(_, v)| v.iter().any(|x| !x.is_finite())) {
        Some(&(what, _)) => Err(SdcaError::NonFiniteResult { what }),
        None => Ok(fit),
    }
}

/// The problem actually solved, the solver, and the run.
fn solve<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    cfg: &FitConfig,
    w: Vec<f64>,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<FitResult> {
    let d = problem.x.n_cols();
    let bias = cfg.intercept_scaling;
    let (l2_used, lasso) = if cfg.l2 > 0.0 {
        (cfg.l2, None)
    } else {
        let p0 = mean_loss(problem, loss, bias, &vec![0.0; w.len()]);
        let radius_sq = lasso_radius_sq(problem, loss, p0, cfg.l1, bias)?;
        // eps = tol P(0), lambda = eps / B^2; P(0) = 0 means w = 0 is optimal and any lambda works.
        let l2 = if p0 > 0.0 && radius_sq > 0.0 { cfg.tol * p0 / radius_sq } else { cfg.tol };
        // Any finite lambda keeps the reduction's bound valid; `tol P(0)` can overflow.
        (l2.clamp(1e-300, 1e300), Some(radius_sq))
    };
    let mut judge =
        Judge { problem, loss, tol: cfg.tol, l2_used, l1: cfg.l1, bias, lasso, scratch: Vec::new() };
    let mut clock = Clock::new(cfg);
    let out = if use_newton(cfg, d)? {
        newton::run(problem, loss, l2_used, bias, w, &mut judge, &mut clock)?
    } else {
        run_sdca(problem, loss, cfg, w, rng, l2_used, lasso.is_some(), &mut judge, &mut clock)
    };
    let k = loss.k();
    Ok(FitResult {
        coef: (0..k).flat_map(|c| (0..d).map(move |j| (j, c))).map(|(j, c)| out.w[j * k + c]).collect(),
        intercept: out.w[d * k..].iter().map(|v| bias * v).collect(),
        alpha: out.alpha,
        n_outputs: k,
        certificate: out.certificate,
        epochs: clock.epochs,
        status: if clock.interrupted { Status::Interrupted } else { out.status },
        gap_trace: out.gap_trace,
        solver: out.solver,
        l2_used,
        solved_gap: out.solved_gap,
        outer_iterations: out.outer_iterations,
    })
}

/// `s_i (||x_i||^2 + bias^2)` per row: the squared norm of each weighted row with its intercept
/// feature, from which the dual steps' curvatures follow.
pub(crate) fn row_sq<D: Rows>(problem: &Problem<'_, D>, bias: f64) -> Vec<f64> {
    (0..problem.n()).map(|i| problem.weight(i) * (problem.x.sq_norm(i) + bias * bias)).collect()
}

/// The dual solvers (module docs): plain or accelerated Prox-SDCA from the model `w`.
#[allow(clippy::too_many_arguments)]
fn run_sdca<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    cfg: &FitConfig,
    w: Vec<f64>,
    rng: &mut Xoshiro256PlusPlus,
    l2_used: f64,
    lasso: bool,
    judge: &mut Judge<'_, '_, D, L>,
    clock: &mut Clock,
) -> Outcome {
    let (n, bias) = (problem.n(), cfg.intercept_scaling);
    let row_sq = &row_sq(problem, bias)[..];
    let r2 = row_sq.iter().fold(0.0f64, |m, &r| m.max(r));
    let warm = w.iter().any(|&v| v != 0.0);
    let (mut start, sum) = Start::new(problem, loss, bias, row_sq, w);
    if warm {
        scale_to_best_dual(problem, loss, &mut start.alpha, &sum, row_sq, l2_used, cfg.l1);
    }
    let gamma = loss.smoothness();
    if use_accelerated(cfg.solver, gamma, r2, l2_used, n) {
        let acc = accelerated::Params::new(r2, gamma, l2_used, n);
        let inner = l2_used + acc.kappa;
        let out = if cfg.l1 > 0.0 {
            let reg = ElasticNet { threshold: cfg.l1 / inner };
            accelerated::run(problem, loss, reg, &acc, l2_used, row_sq, start, cfg, judge, clock, rng)
        } else {
            accelerated::run(problem, loss, L2, &acc, l2_used, row_sq, start, cfg, judge, clock, rng)
        };
        if !lasso {
            certify_plain(problem, loss, l2_used, row_sq, out, cfg, judge, clock, rng)
        } else {
            out
        }
    } else if cfg.l1 > 0.0 {
        let reg = ElasticNet { threshold: cfg.l1 / l2_used };
        sdca::run(problem, loss, reg, l2_used, row_sq, start, cfg, judge, clock, rng)
    } else {
        sdca::run(problem, loss, L2, l2_used, row_sq, start, cfg, judge, clock, rng)
    }
}

/// Scales the warm-start duals of the rows that move `w` by the `c in [0, 1]` maximising the
/// dual `D(c alpha)` of the problem solved (`l2`, `l1`).
///
/// The previous model's duals are feasible for the new problem, but after a change of `l1` or
/// `l2` the link map sends them to a far larger `w`: measured on 50,000 CoNLL tokens (logistic,
/// `l2 = 1e-6`, one step along an `l1` path), `D(alpha)` was 250 below the optimum where the
/// cold start `D(0)` is 0.42 below and the best `c` (about 0.5) 0.027 below. `D(c alpha)` is
/// concave in `c` (a concave function along a segment of the feasible set), so a golden-section
/// search finds the best scaling; the endpoints keep the cold start and the unscaled duals in
/// the running. Rows that cannot move `w` keep their exact duals. `v` is those rows' dual sum
/// ([`Start::new`] builds it in its pass); O(n k + d k) per evaluation.
fn scale_to_best_dual<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    alpha: &mut [f64],
    v: &[f64],
    row_sq: &[f64],
    l2: f64,
    l1: f64,
) {
    let (n, d, k) = (problem.n(), problem.x.n_cols(), loss.k());
    let movable = |i: usize| problem.weight(i) > 0.0 && row_sq[i] > 0.0;
    let mut sa = vec![0.0; k];
    let (scale, t, dk) = (1.0 / (l2 * n as f64), l1 / l2, d * k);
    let dual = |c: f64| {
        let mut conj = 0.0;
        for i in (0..n).filter(|&i| movable(i)) {
            for (b, &a) in sa.iter_mut().zip(&alpha[i * k..(i + 1) * k]) {
                *b = c * a;
            }
            conj += problem.weight(i) * loss.conj_neg(&sa, problem.y[i]);
        }
        let feats: f64 = v[..dk].iter().map(|vj| soft_threshold(c * vj * scale, t).powi(2)).sum();
        let icept: f64 = v[dk..].iter().map(|vj| (c * vj * scale).powi(2)).sum();
        -conj / n as f64 - 0.5 * l2 * (feats + icept)
    };
    // Each evaluation costs about a tenth of an epoch (a conjugate per row), and D is flat near
    // its maximum: 12 golden-section steps (c to 3e-3) are enough.
    let c = argmax_concave(1.0, 12, dual).map_or(1.0, |(c, _)| c);
    if c != 1.0 {
        for i in (0..n).filter(|&i| movable(i)) {
            alpha[i * k..(i + 1) * k].iter_mut().for_each(|a| *a *= c);
        }
    }
}

/// The best of `f` on `[0, hi]` for a concave `f`: `steps` golden-section steps (one new
/// evaluation each), then the bracket's midpoint against both ends, so that a maximum at an end
/// (the cold start or the unscaled duals of a warm start) is kept. `None` when no candidate is
/// finite.
pub(crate) fn argmax_concave(hi: f64, steps: usize, mut f: impl FnMut(f64) -> f64) -> Option<(f64, f64)> {
    let ratio = (5f64.sqrt() - 1.0) / 2.0;
    let (mut lo, mut up) = (0.0f64, hi);
    let (mut m1, mut m2) = (up - ratio * up, ratio * up);
    let (mut f1, mut f2) = (f(m1), f(m2));
    for _ in 0..steps {
        if f1 < f2 {
            (lo, m1, f1) = (m1, m2, f2);
            m2 = lo + ratio * (up - lo);
            f2 = f(m2);
        } else {
            (up, m2, f2) = (m2, m1, f1);
            m1 = up - ratio * (up - lo);
            f1 = f(m1);
        }
    }
    [0.5 * (lo + up), 0.0, hi].into_iter().map(|c| (c, f(c))).filter(|(_, value)| value.is_finite()).fold(
        None,
        |best: Option<(f64, f64)>, cv| match best {
            Some(b) if b.1 >= cv.1 => Some(b),
            _ => Some(cv),
        },
    )
}

/// Re-certifies an accelerated solution on the original problem with plain SDCA from its duals.
///
/// At the accelerated fixed point the inner duals are the original problem's optimal duals
/// (only the regularizer is shifted, the loss part is the same), so plain SDCA started from them
/// meets `tol` after one pass. Its certificate is the Fenchel-Young form of DESIGN.md section 3,
/// whose per-row terms (`row_outputs`) average to the reported gap, as for every other fit.
/// When the budget ran out first, the model returned is `w(alpha)` of those duals with its own
/// certificate, so the model and its certificate always agree.
#[allow(clippy::too_many_arguments)]
fn certify_plain<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    l2: f64,
    row_sq: &[f64],
    acc: Outcome,
    cfg: &FitConfig,
    judge: &mut Judge<'_, '_, D, L>,
    clock: &mut Clock,
    rng: &mut Xoshiro256PlusPlus,
) -> Outcome {
    // Kept in case the budget runs out first: the accelerated iterate may then be far better
    // than `w(alpha)` of its inner duals.
    let (acc_w, acc_alpha) = (acc.w.clone(), acc.alpha.clone());
    let start = Start { w: acc.w, alpha: acc.alpha };
    let plain = if cfg.l1 > 0.0 {
        sdca::run(
            problem,
            loss,
            ElasticNet { threshold: cfg.l1 / l2 },
            l2,
            row_sq,
            start,
            cfg,
            judge,
            clock,
            rng,
        )
    } else {
        sdca::run(problem, loss, L2, l2, row_sq, start, cfg, judge, clock, rng)
    };
    let mut gap_trace = acc.gap_trace;
    gap_trace.extend(plain.gap_trace);
    // With no budget left for a pass, `plain` only certified the start: judge that certificate.
    let status = if judge.met(&plain.certificate) {
        Status::Converged
    } else if acc.status == Status::MaxSeconds {
        Status::MaxSeconds
    } else {
        plain.status
    };
    let (solver, outer_iterations) = (acc.solver, acc.outer_iterations);
    if status != Status::Converged && acc.certificate.gap < plain.certificate.gap {
        // Stopped by the budget with the accelerated iterate certified better: return it (its
        // row gaps then average to the last inner problem's gap, see `FitResult`).
        gap_trace.push(acc.certificate.gap);
        return Outcome { w: acc_w, alpha: acc_alpha, gap_trace, status, ..acc };
    }
    Outcome { gap_trace, status, solver, outer_iterations, ..plain }
}

/// Bytes a linear fit of `n` rows, `d` features and `k` scores per row allocates, an upper
/// estimate checked against `max_memory` before it starts: `n k` duals and the result's copy,
/// two row norms and two `u32` row lists per row, and up to seven `(d + 1) k` model arrays
/// (dual sum, primal point, start, result; the accelerated solver's shift, extrapolation and best
/// iterate). The input data is borrowed, not counted.
pub fn memory_estimate(n: usize, d: usize, k: usize) -> u64 {
    let (n, d, k) = (n as u128, d as u128 + 1, k as u128);
    let bytes = 16 * n * k + 24 * n + 56 * d * k;
    u64::try_from(bytes).unwrap_or(u64::MAX)
}

/// Per-row decision values, weighted block gaps and weighted loss terms of a fitted model on its
/// training rows.
///
/// The gaps are the Fenchel-Young gaps of (`coef`, `alpha`); see [`FitResult`] for what their
/// mean certifies with each solver.
pub fn row_outputs<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    fit: &FitResult,
) -> Result<RowOutputs> {
    let (n, d, k) = (problem.n(), problem.x.n_cols(), fit.n_outputs);
    if k != problem.n_outputs || fit.alpha.len() != n * k || fit.coef.len() != d * k {
        return Err(SdcaError::Internal("row_outputs: fit does not match the problem".into()));
    }
    let rows = with_loss!(cfg.loss, k, |loss| rows_for(problem, loss, fit));
    // Rows outside the objective (zero weight) can overflow where the fit itself did not.
    if rows.decision.iter().chain(&rows.gap).any(|v| !v.is_finite()) {
        return Err(SdcaError::NonFiniteResult { what: "the per-row decision values" });
    }
    Ok(rows)
}

fn rows_for<D: Rows, L: BlockLoss>(problem: &Problem<'_, D>, loss: L, fit: &FitResult) -> RowOutputs {
    let (n, d, k) = (problem.n(), problem.x.n_cols(), fit.n_outputs);
    // Back to the feature-major layout, the intercepts as the weights of a feature of value 1.
    let mut w = vec![0.0; (d + 1) * k];
    for c in 0..k {
        for j in 0..d {
            w[j * k + c] = fit.coef[c * d + j];
        }
        w[d * k + c] = fit.intercept[c];
    }
    let mut decision = vec![0.0; n * k];
    let mut gap = Vec::with_capacity(n);
    let mut losses = Vec::with_capacity(n);
    for (i, scores) in decision.chunks_exact_mut(k).enumerate() {
        sdca::scores_into(problem.x, i, &w, 1.0, scores);
        let s = problem.weight(i);
        let alpha = &fit.alpha[i * k..(i + 1) * k];
        gap.push(if s > 0.0 { (s * loss.block_gap(alpha, scores, problem.y[i])).max(0.0) } else { 0.0 });
        losses.push(if s > 0.0 { s * loss.value(scores, problem.y[i]) } else { 0.0 });
    }
    RowOutputs { decision, gap, loss: losses }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Small deterministic problems and an independent Lasso solver for the solver tests.

    /// `n x d` row-major features in `[-1, 1]` and labels from a sparse truth
    /// (`1, -0.5, 0, 1, ...`) plus noise and an offset of 0.5; classes are the sign.
    pub fn toy(n: usize, d: usize, classification: bool, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut state = 0x2545F4914F6CDD1Du64 ^ seed.wrapping_mul(0x9E3779B97F4A7C15);
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let x: Vec<f64> = (0..n * d).map(|_| next()).collect();
        let truth = |j: usize| [1.0, -0.5, 0.0][j % 3];
        let y = (0..n)
            .map(|i| {
                let s = (0..d).map(|j| x[i * d + j] * truth(j)).sum::<f64>() + 0.3 * next() + 0.5;
                match (classification, s > 0.0) {
                    (false, _) => s,
                    (true, true) => 1.0,
                    (true, false) => -1.0,
                }
            })
            .collect();
        (x, y)
    }

    /// Cyclic coordinate descent for the Lasso `(1/2n)||X w + b - y||^2 + l1 ||w||_1`, with an
    /// unpenalised intercept `b` when `intercept`; runs until no coordinate moves by more than
    /// `1e-14`. Returns `(w, b, objective)`.
    pub fn lasso_cd(x: &[f64], y: &[f64], d: usize, l1: f64, intercept: bool) -> (Vec<f64>, f64, f64) {
        let n = y.len();
        let nf = n as f64;
        let (mut w, mut b, mut r) = (vec![0.0; d], 0.0, y.to_vec());
        let col_sq: Vec<f64> =
            (0..d).map(|j| (0..n).map(|i| x[i * d + j].powi(2)).sum::<f64>() / nf).collect();
        for _ in 0..100_000 {
            let mut moved: f64 = 0.0;
            for j in 0..d {
                let rho = (0..n).map(|i| x[i * d + j] * r[i]).sum::<f64>() / nf + col_sq[j] * w[j];
                let new = crate::reg::soft_threshold(rho, l1) / col_sq[j];
                let step = new - w[j];
                if step != 0.0 {
                    (0..n).for_each(|i| r[i] -= step * x[i * d + j]);
                    w[j] = new;
                    moved = moved.max(step.abs());
                }
            }
            if intercept {
                let step = r.iter().sum::<f64>() / nf;
                r.iter_mut().for_each(|ri| *ri -= step);
                b += step;
                moved = moved.max(step.abs());
            }
            if moved < 1e-14 {
                break;
            }
        }
        let objective =
            r.iter().map(|v| v * v).sum::<f64>() / (2.0 * nf) + l1 * w.iter().map(|v| v.abs()).sum::<f64>();
        (w, b, objective)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{lasso_cd, toy};
    use super::*;
    use crate::config::FitParams;
    use crate::data::DenseView;

    fn params(loss: &str, l2: f64, l1: f64) -> FitParams {
        FitParams { loss: loss.into(), l2, l1, tol: 1e-8, max_epochs: 20_000, ..Default::default() }
    }

    #[test]
    fn max_memory_refuses_a_fit_before_it_allocates() {
        let (x, y) = toy(50, 4, true, 1);
        let view = DenseView::new(&x, 50, 4).unwrap();
        let needed = memory_estimate(50, 4, 1);
        assert_eq!(needed, 16 * 50 + 24 * 50 + 56 * 5);
        for (limit, ok) in [(needed - 1, false), (needed, true)] {
            let cfg = FitParams { max_memory: Some(limit as i64), ..params("logistic", 1e-2, 0.0) }
                .check()
                .unwrap();
            let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
            match fit(&p, &cfg) {
                Ok(r) => assert!(ok && r.converged()),
                Err(e) => {
                    assert!(!ok && matches!(e, SdcaError::MemoryLimit { what: "linear", .. }), "{e}");
                    assert!(e
                        .to_string()
                        .contains(&format!("needs about {needed} bytes > max_memory {limit}")));
                }
            }
        }
    }

    #[test]
    fn auto_rule_follows_the_condition_number() {
        // R^2 / (gamma l2) against 10 n (Figure 2's condition).
        let (auto, acc, plain) = (SolverKind::Auto, SolverKind::Accelerated, SolverKind::Sdca);
        assert!(use_accelerated(auto, 1.0, 1.0, 1e-4, 900));
        assert!(!use_accelerated(auto, 1.0, 1.0, 1e-4, 1100));
        assert!(!use_accelerated(auto, 4.0, 1.0, 1e-4, 300)); // logistic: gamma = 4
        assert!(!use_accelerated(auto, 0.0, 1.0, 1e-12, 10)); // non-smooth loss
        assert!(use_accelerated(acc, 1.0, 1.0, 1e-4, 5000)); // kappa > 0
        assert!(!use_accelerated(acc, 1.0, 1.0, 1e-4, 20_000)); // kappa <= 0: fallback
        assert!(!use_accelerated(plain, 1.0, 1.0, 1e-12, 10));

        // End to end: n = 200, R^2 = max ||x_i||^2 + 1 (intercept feature), gamma = 1.
        let (n, d) = (200, 4);
        let (x, y) = toy(n, d, true, 1);
        let view = DenseView::new(&x, n, d).unwrap();
        let r2 = (0..n).map(|i| view.sq_norm(i) + 1.0).fold(0.0, f64::max);
        let threshold = r2 / (10.0 * n as f64); // l2 where R^2 / l2 = 10 n
        for (loss, l2, want) in [
            ("smooth_hinge", 0.5 * threshold, "accelerated"),
            ("smooth_hinge", 2.0 * threshold, "sdca"),
            ("logistic", 0.5 * threshold, "sdca"), // gamma = 4 moves the threshold down 4x
            ("logistic", 0.1 * threshold, "accelerated"),
            ("hinge", 1e-9, "sdca"),
        ] {
            let cfg = FitParams { max_epochs: 3, ..params(loss, l2, 1e-3) }.check().unwrap();
            let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
            assert_eq!(r.solver, want, "{loss} l2 = {l2:e}");
        }
        // Explicit "accelerated" where kappa <= 0 runs plain Prox-SDCA and says so.
        let cfg =
            FitParams { solver: "accelerated".into(), ..params("squared", 10.0 * r2, 0.0) }.check().unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        assert_eq!((r.solver, r.outer_iterations), ("sdca", 0));
    }

    /// `l2 = 0` (Lasso) against cyclic coordinate descent run to 1e-14: the objective is within
    /// the reported bound, the support agrees, and the reported `l2_used` / `solved_gap` are the
    /// elastic net actually solved.
    #[test]
    fn lasso_matches_coordinate_descent_within_the_bound() {
        let (n, d) = (200, 8);
        let (x, y) = toy(n, d, false, 3);
        let view = DenseView::new(&x, n, d).unwrap();
        for intercept in [false, true] {
            for l1 in [0.3, 0.03] {
                let (w_ref, b_ref, p_ref) = lasso_cd(&x, &y, d, l1, intercept);
                let cfg = FitParams { fit_intercept: intercept, tol: 1e-7, ..params("squared", 0.0, l1) };
                let cfg = cfg.check().unwrap();
                let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
                let r = fit(&p, &cfg).unwrap();
                let c = r.certificate;
                let case = format!("intercept {intercept} l1 {l1}: {r:?} reference {p_ref}");
                assert_eq!((r.status, r.solver), (Status::Converged, "accelerated"), "{case}");
                assert!(c.gap <= 1e-7 * c.primal, "{case}");
                assert!(c.primal - p_ref <= c.gap + 1e-12 && p_ref - c.primal <= 1e-12, "{case}");
                // The reported primal is the Lasso objective at the model.
                let p_model =
                    (0..n).map(|i| 0.5 * (view.dot(i, &r.coef) + r.intercept[0] - y[i]).powi(2)).sum::<f64>()
                        / n as f64
                        + l1 * r.coef.iter().map(|w| w.abs()).sum::<f64>();
                assert!((p_model - c.primal).abs() <= 1e-12, "{case}");
                let support = |w: &[f64]| w.iter().map(|v| *v != 0.0).collect::<Vec<_>>();
                assert_eq!(support(&r.coef), support(&w_ref), "{case}");
                assert!((r.intercept[0] - b_ref).abs() < 1e-3, "{case}");
                // The problem actually solved: a tiny l2 from tol P(0) / B^2 and its own bound.
                assert!(r.l2_used > 0.0 && r.l2_used < 1e-6 && r.solved_gap >= 0.0, "{case}");
            }
        }
    }

    /// Shrinking is enabled by [`LossKind::has_box_linear_dual`] and runs on the loss's
    /// [`BlockLoss::dual_slopes`]: the two agree for every loss.
    #[test]
    fn box_linear_losses_have_dual_slopes() {
        for name in LossKind::NAMES {
            let kind = FitParams { loss: (*name).into(), ..Default::default() }.check().unwrap().loss;
            let has = with_loss!(kind, 3, |loss| loss.dual_slopes(&vec![0.0; loss.k()], 1.0).is_some());
            assert_eq!(has, kind.has_box_linear_dual(), "{}", kind.name());
        }
    }

    /// The radius `B` of the reduction bounds the optimum, intercept included, for regression
    /// and classification (checked against solutions computed here).
    #[test]
    fn lasso_radius_bounds_the_optimum() {
        // The Jensen bound treats regression losses as functions of the residual a - y.
        for kind in [LossKind::Squared, LossKind::Absolute, LossKind::EpsilonInsensitive { epsilon: 0.3 }] {
            with_loss!(kind, 1, |loss| for (a, y) in [(0.3, -1.2), (-2.0, 0.5), (1.0, 1.0)] {
                assert_eq!(loss.value(&[a], y), loss.value(&[a - y], 0.0), "{}", kind.name());
            });
        }
        let (n, d) = (150, 6);
        let (x, y) = toy(n, d, false, 5);
        let view = DenseView::new(&x, n, d).unwrap();
        for bias in [0.0, 1.0, 0.1] {
            for l1 in [0.5, 0.05, 0.005] {
                let (w, b, _) = lasso_cd(&x, &y, d, l1, bias > 0.0);
                let p = Problem::new(&view, &y, None, LossKind::Squared).unwrap();
                let p0 = y.iter().map(|v| 0.5 * v * v).sum::<f64>() / n as f64;
                let radius_sq = lasso_radius_sq(&p, Squared, p0, l1, bias).unwrap();
                let slot = if bias > 0.0 { b / bias } else { 0.0 };
                let norm_sq = w.iter().map(|v| v * v).sum::<f64>() + slot * slot;
                assert!(norm_sq <= radius_sq, "bias {bias} l1 {l1}: {norm_sq} > {radius_sq}");
            }
        }
        // Classification: both classes bound the intercept, from below and from above.
        let (x, y) = toy(n, d, true, 6);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = FitParams { tol: 1e-6, ..params("logistic", 0.0, 0.02) }.check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        let r = fit(&p, &cfg).unwrap();
        assert_eq!(r.status, Status::Converged, "{r:?}");
        let radius_sq = lasso_radius_sq(&p, Logistic, 2f64.ln(), 0.02, 1.0).unwrap();
        let norm_sq = r.coef.iter().map(|v| v * v).sum::<f64>() + r.intercept[0] * r.intercept[0];
        assert!(norm_sq <= radius_sq && radius_sq.is_finite(), "{norm_sq} > {radius_sq}");
    }

    /// A Lasso fit's certificate is valid for logistic loss too: a tighter fit's primal is never
    /// below the looser fit's certified lower bound, and both supports agree.
    #[test]
    fn logistic_lasso_bounds_nest() {
        let (n, d) = (200, 8);
        let (x, y) = toy(n, d, true, 8);
        let view = DenseView::new(&x, n, d).unwrap();
        let p = Problem::new(&view, &y, None, LossKind::Logistic).unwrap();
        let fit_at = |tol: f64| {
            let cfg = FitParams { tol, ..params("logistic", 0.0, 0.01) }.check().unwrap();
            fit(&p, &cfg).unwrap()
        };
        let (loose, tight) = (fit_at(1e-4), fit_at(1e-9));
        assert!(loose.converged() && tight.converged(), "{loose:?} {tight:?}");
        assert!(tight.certificate.primal >= loose.certificate.dual - 1e-12);
        assert!(loose.certificate.primal >= tight.certificate.dual - 1e-12);
        assert!(loose.certificate.primal - tight.certificate.primal <= loose.certificate.gap + 1e-12);
        let support = |r: &FitResult| r.coef.iter().map(|w| *w != 0.0).collect::<Vec<_>>();
        assert_eq!(support(&tight), support(&fit_at(1e-7)));
    }

    #[test]
    fn warm_start_from_the_optimum_converges_at_once() {
        let (n, d) = (300, 6);
        let (x, y) = toy(n, d, true, 11);
        let view = DenseView::new(&x, n, d).unwrap();
        for (solver, l2) in [("sdca", 1e-2), ("accelerated", 1e-5)] {
            let at = |tol: f64| FitParams { solver: solver.into(), tol, ..params("smooth_hinge", l2, 1e-3) };
            let cfg = at(1e-6).check().unwrap();
            let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
            let cold = fit(&p, &at(1e-12).check().unwrap()).unwrap();
            let warm = fit_from(&p, &cfg, Some(&Warm::from(&cold))).unwrap();
            assert_eq!((warm.solver, warm.status), (solver, Status::Converged), "{warm:?}");
            assert!(warm.epochs <= 2, "{solver}: {} epochs from the optimum", warm.epochs);
            let radius = (2.0 * (warm.certificate.gap + cold.certificate.gap) / l2).sqrt();
            let dist = warm.coef.iter().zip(&cold.coef).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
            assert!(dist <= radius, "{solver}: {dist} > {radius}");
        }
    }

    /// A path over decreasing `l1`, each fit warm-started from the previous model, takes fewer
    /// epochs in total than cold fits, and reaches the same models.
    #[test]
    fn warm_path_beats_cold_fits() {
        let (n, d) = (300, 6);
        let (x, y) = toy(n, d, true, 12);
        let view = DenseView::new(&x, n, d).unwrap();
        let p = Problem::new(&view, &y, None, LossKind::Logistic).unwrap();
        for l2 in [1e-3, 1e-5] {
            let (mut cold_epochs, mut warm_epochs) = (0, 0);
            let mut prev: Option<FitResult> = None;
            for k in 0..5 {
                let l1 = 0.05 * 0.5f64.powi(k);
                let cfg = FitParams { tol: 1e-6, ..params("logistic", l2, l1) }.check().unwrap();
                let cold = fit(&p, &cfg).unwrap();
                let warm = fit_from(&p, &cfg, prev.as_ref().map(Warm::from).as_ref()).unwrap();
                assert!(cold.converged() && warm.converged());
                assert!(
                    (cold.certificate.primal - warm.certificate.primal).abs()
                        <= cold.certificate.gap + warm.certificate.gap
                );
                cold_epochs += cold.epochs;
                warm_epochs += warm.epochs;
                prev = Some(warm);
            }
            assert!(warm_epochs < cold_epochs, "l2 {l2}: warm {warm_epochs} vs cold {cold_epochs} epochs");
        }
    }

    #[test]
    fn warm_start_is_checked() {
        let (x, y) = toy(20, 3, true, 1);
        let view = DenseView::new(&x, 20, 3).unwrap();
        let cfg = params("logistic", 1e-2, 0.0).check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        let short = Warm { coef: &[1.0, 2.0], intercept: &[0.0] };
        assert!(matches!(
            fit_from(&p, &cfg, Some(&short)),
            Err(SdcaError::ShapeMismatch { expected: 3, got: 2, .. })
        ));
        let nan = Warm { coef: &[1.0, f64::NAN, 0.0], intercept: &[0.0] };
        let err = fit_from(&p, &cfg, Some(&nan)).unwrap_err();
        assert!(matches!(err, SdcaError::InvalidParameter { name: "warm_start", .. }), "{err}");
    }

    /// Found by the `fit` fuzz target: valid but extreme input overflows inside the solver, and
    /// the fit says so with an error instead of returning NaN or infinity (or panicking).
    #[test]
    fn overflowing_fits_are_errors() {
        let (n, d) = (19, 1);
        let x = vec![0.0; n * d];
        let view = DenseView::new(&x, n, d).unwrap();
        // A warm intercept of -1e150 at l2 = 1e-150: the duals' model overflows.
        let y = vec![0.0; n];
        let p = FitParams {
            solver: "accelerated".into(),
            intercept_scaling: 7.8,
            tol: 1e-150,
            max_epochs: 15,
            ..params("squared", 1e-150, 1e-150)
        };
        let cfg = p.check().unwrap();
        let warm = Warm { coef: &[0.0], intercept: &[-1e150] };
        let err = fit_from(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg, Some(&warm)).unwrap_err();
        assert!(matches!(err, SdcaError::NonFiniteResult { .. }), "{err}");
        // The Lasso with a 1e150 intercept feature: q = inf in the logistic dual step.
        let y: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { 1.0 } else { -1.0 }).collect();
        let p = FitParams {
            intercept_scaling: 1e150,
            tol: 1e-150,
            max_epochs: 60,
            ..params("logistic", 0.0, 1e-150)
        };
        let cfg = p.check().unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg);
        assert!(matches!(r, Err(SdcaError::NonFiniteResult { .. })), "{r:?}");
    }

    /// Found by the `fit` fuzz target: a Lasso fit warm-started 1e150 away from its optimum
    /// (`w = 0`, `P* = 0`). The original primal was `P_s - (l2_used/2)||w||^2`, which cancelled
    /// to 0 against a `1e299` L2 term, and so could the reduction's bound: the certificate said
    /// `P = 0`, and could have said converged. Its primal is now the Lasso objective at the
    /// model, and its gap at least `P - P*`.
    #[test]
    fn lasso_certificate_survives_a_dominant_l2_term() {
        let (n, d, l1, c) = (2, 1, 6.2, 6.2);
        let (x, y) = (vec![0.0; n * d], vec![0.0; n]);
        let view = DenseView::new(&x, n, d).unwrap();
        let p = FitParams { intercept_scaling: c, tol: 1.0, max_epochs: 15, ..params("squared", 0.0, l1) };
        let cfg = p.check().unwrap();
        let warm = Warm { coef: &[1e150], intercept: &[0.0] };
        let r = fit_from(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg, Some(&warm)).unwrap();
        let (b, cert) = (r.intercept[0], r.certificate);
        let p_model = l1 * r.coef[0].abs() + b * b / 2.0;
        assert!((cert.primal - p_model).abs() <= 1e-12 * p_model, "{r:?}: P(model) = {p_model}");
        assert!(cert.gap >= cert.primal, "{r:?}: the optimum is 0");
    }

    /// Found by the `fit` fuzz target: `tol P(0)` overflowed (`tol = 1e150`, labels `1e150`) and
    /// the Lasso reduction reported `l2_used = inf`.
    #[test]
    fn lasso_l2_used_stays_finite() {
        let view = DenseView::new(&[6.0], 1, 1).unwrap();
        let p =
            FitParams { fit_intercept: false, tol: 1e150, max_epochs: 5, ..params("squared", 0.0, 1e150) };
        let cfg = p.check().unwrap();
        let r = fit(&Problem::new(&view, &[1e150], None, cfg.loss).unwrap(), &cfg).unwrap();
        assert!(r.l2_used.is_finite(), "{r:?}");
    }

    /// Found by the `fit` fuzz target: at the Lasso's floor `l2_used = 1e-300` the dual sum of
    /// the accelerated solver's certificate overflowed against an infinite threshold
    /// `l1 / l2_used` and was dropped, and the fit certified a gap of 0.05 on an objective of
    /// 2.4e299 whose model was 1.7e296 above the optimum. Identical columns reduce the problem
    /// to one variable `c = w_j` with a closed-form optimum.
    #[test]
    fn lasso_certificate_survives_an_overflowed_dual() {
        let (n, d, l1) = (37, 4, 1e150);
        let x = vec![-4.0; n * d];
        let y: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { -1.0 } else { -1e150 }).collect();
        let view = DenseView::new(&x, n, d).unwrap();
        let p = FitParams {
            solver: "accelerated".into(),
            sampling: "uniform".into(),
            fit_intercept: false,
            tol: 5.9e-322,
            max_epochs: 25,
            check_every: 7,
            seed: 13364,
            ..params("squared", 0.0, l1)
        };
        let cfg = p.check().unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg);
        // P(c) = mean((16 c + y)^2) / 2 + 4 l1 |c|, minimised at 256 c = -16 mean(y) - 4 l1.
        let ybar = y.iter().sum::<f64>() / n as f64;
        let objective = |c: f64| {
            y.iter().map(|v| (16.0 * c + v).powi(2)).sum::<f64>() / (2.0 * n as f64) + 4.0 * l1 * c.abs()
        };
        let best = objective((-16.0 * ybar - 4.0 * l1) / 256.0);
        // Either an honest certificate or the overflow error (what this fit gives now).
        match r {
            Ok(r) => {
                let c = r.certificate;
                assert!(c.primal - best <= c.gap + 1e-12 * c.primal, "{r:?}: P* = {best}");
            }
            Err(e) => assert!(matches!(e, SdcaError::NonFiniteResult { .. }), "{e}"),
        }
    }

    /// Found by the `fit` fuzz target: the accelerated solver took the unshifted dual sum as
    /// `v - shift`, where the shift `kappa n y ~ 1` dwarfs the sum `~1e-16`; at the Lasso's
    /// `l2_used ~ 2e-29` the difference's rounding made the solved problem's gap 0.00103
    /// against a true `P - D` of 0.00032. One row, so `P` and `D` are written out here.
    #[test]
    fn accelerated_lasso_gap_is_the_duality_gap() {
        let (x, y, l1) = (1e-204, 1.0, 1.0);
        let data = [x];
        let view = DenseView::new(&data, 1, 1).unwrap();
        let p = FitParams {
            solver: "accelerated".into(),
            tol: 2.04e-28,
            max_epochs: 40,
            check_every: 3,
            inner_epochs: Some(3),
            seed: 64816,
            ..params("squared", 0.0, l1)
        };
        let cfg = p.check().unwrap();
        let r = fit(&Problem::new(&view, &[y], None, cfg.loss).unwrap(), &cfg).unwrap();
        let (l2, a, w, b) = (r.l2_used, r.alpha[0], r.coef[0], r.intercept[0]);
        let primal = 0.5 * (x * w + b - y).powi(2) + 0.5 * l2 * (w * w + b * b) + l1 * w.abs();
        let (w_dual, b_dual) = (crate::reg::soft_threshold(a * x / l2, l1 / l2), a / l2);
        let dual = -(0.5 * a * a - a * y) - 0.5 * l2 * (w_dual * w_dual + b_dual * b_dual);
        let gap = primal - dual;
        assert_eq!(r.solver, "accelerated");
        assert!((r.solved_gap - gap).abs() <= 1e-9 * (primal.abs() + dual.abs()), "{r:?}: P - D = {gap}");
    }

    /// The intercept is penalised by `l2` only: with an `l1` that zeroes every feature, the
    /// squared loss's intercept is the minimiser of `(1/2n) sum (b - y_i)^2 + (l2/2) b^2`, for
    /// both solvers and for the Lasso (where it is unpenalised).
    #[test]
    fn intercept_escapes_l1() {
        let (n, d) = (100, 4);
        let (x, y) = toy(n, d, false, 2);
        let view = DenseView::new(&x, n, d).unwrap();
        let ybar = y.iter().sum::<f64>() / n as f64;
        for (solver, l2) in [("sdca", 1e-2), ("accelerated", 1e-5), ("auto", 0.0)] {
            let cfg = FitParams { solver: solver.into(), ..params("squared", l2, 10.0) }.check().unwrap();
            let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
            assert!(r.converged() && r.coef.iter().all(|w| *w == 0.0), "{solver}: {r:?}");
            let want = ybar / (1.0 + r.l2_used);
            let radius = (2.0 * r.solved_gap / r.l2_used).sqrt();
            assert!(
                (r.intercept[0] - want).abs() <= radius.min(1e-3) + 1e-12,
                "{solver}: {} vs {want}",
                r.intercept[0]
            );
        }
    }
}
