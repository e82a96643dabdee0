//! The epoch driver and the public fit entry.
//!
//! Like argmin's executor, [`drive`] owns the loop: it draws the coordinate order of each epoch
//! (uniform with replacement or a fresh permutation, from a seeded RNG), asks the solver for a
//! certificate every `check_every` epochs, records the gap trace, and stops on the relative gap
//! `tol`, `max_epochs` or `max_seconds`. A solver only supplies one pass of coordinate updates
//! and a certificate ([`Coordinate`]).
//!
//! The one `match` from the loss enum to a monomorphised solver sits in [`fit`].

pub mod sdca;

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::config::{FitConfig, Sampling};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{
    Absolute, EpsilonInsensitive, Hinge, Logistic, Loss, LossKind, SmoothHinge, Squared, SquaredHinge,
};

/// Why a fit stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The relative duality gap reached `tol`.
    Converged,
    /// `max_epochs` passes were made first.
    MaxEpochs,
    /// `max_seconds` ran out first.
    MaxSeconds,
}

impl Status {
    /// Short machine-readable reason.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Converged => "ok",
            Self::MaxEpochs => "max_epochs reached before tol",
            Self::MaxSeconds => "max_seconds reached before tol",
        }
    }
}

/// The data of one fit: rows, labels and optional sample weights, validated together.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a, D: Rows> {
    /// Feature rows.
    pub x: &'a D,
    /// Labels: `{-1, +1}` for classification losses, finite reals otherwise.
    pub y: &'a [f64],
    /// Sample weights `s_i >= 0` (default 1).
    pub weights: Option<&'a [f64]>,
}

impl<'a, D: Rows> Problem<'a, D> {
    /// Checks lengths, labels against the loss and weights.
    pub fn new(x: &'a D, y: &'a [f64], weights: Option<&'a [f64]>, loss: LossKind) -> Result<Self> {
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
        if classification {
            let weight = |i: usize| weights.map_or(1.0, |s| s[i]);
            let has = |c: f64| (0..n).any(|i| y[i] == c && weight(i) > 0.0);
            if !(has(1.0) && has(-1.0)) {
                let label = if has(1.0) { "+1" } else { "-1" };
                return Err(SdcaError::OneClass { label: label.into() });
            }
        }
        Ok(Self { x, y, weights })
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

/// Primal, dual and gap at one point, all for the objective of DESIGN.md section 3.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Certificate {
    /// `P(w)`.
    pub primal: f64,
    /// `D(alpha)`.
    pub dual: f64,
    /// `mean_i s_i (phi + phi* + alpha a) >= 0`, equal to `P - D` up to rounding.
    pub gap: f64,
}

/// A fitted linear model with its certificate.
#[derive(Debug, Clone, PartialEq)]
pub struct FitResult {
    /// Weights, one per feature.
    pub coef: Vec<f64>,
    /// Intercept (0 without `fit_intercept`).
    pub intercept: f64,
    /// Dual variables, one per row (DESIGN.md section 3 convention).
    pub alpha: Vec<f64>,
    /// Final certificate.
    pub certificate: Certificate,
    /// Epochs run.
    pub epochs: u32,
    /// Why it stopped.
    pub status: Status,
    /// Gap after each check.
    pub gap_trace: Vec<f64>,
    /// Name of the solver that ran.
    pub solver: &'static str,
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
    /// Scores `x_i . w + b`.
    pub decision: Vec<f64>,
    /// Weighted block gaps `s_i (phi + phi* + alpha a)`; their mean is the model's gap.
    pub gap: Vec<f64>,
}

/// One solver's contribution to the loop: a pass of coordinate updates and a certificate.
pub(crate) trait Coordinate {
    /// Rows that take part in sampling (others have fixed duals).
    fn active(&self) -> &[u32];
    /// Update the coordinates in `order`.
    fn pass(&mut self, order: &[u32]);
    /// Resynchronise the primal from the duals and compute the certificate.
    fn certify(&mut self) -> Certificate;
}

/// How a [`drive`] run ended.
pub(crate) struct Trace {
    pub certificate: Certificate,
    pub epochs: u32,
    pub status: Status,
    pub gap_trace: Vec<f64>,
}

/// Run epochs of `solver` until the relative gap, the epoch cap or the time budget stops it.
pub(crate) fn drive<S: Coordinate>(solver: &mut S, cfg: &FitConfig, rng: &mut Xoshiro256PlusPlus) -> Trace {
    let start = Instant::now();
    let mut order: Vec<u32> = solver.active().to_vec();
    let mut gap_trace = Vec::new();
    let mut last = None;
    let mut epochs = 0;
    let mut status = Status::MaxEpochs;
    while epochs < cfg.max_epochs {
        match cfg.sampling {
            Sampling::Permutation => order.shuffle(rng),
            Sampling::Uniform => {
                let active = solver.active();
                for slot in order.iter_mut() {
                    *slot = active[rng.random_range(0..active.len())];
                }
            }
        }
        solver.pass(&order);
        epochs += 1;
        let out_of_time = cfg.max_seconds.is_some_and(|s| start.elapsed().as_secs_f64() >= s);
        if epochs % cfg.check_every == 0 || epochs == cfg.max_epochs || out_of_time {
            let c = solver.certify();
            gap_trace.push(c.gap);
            last = Some(c);
            if c.gap <= cfg.tol * c.primal.max(f64::MIN_POSITIVE) {
                status = Status::Converged;
                break;
            }
            if out_of_time {
                status = Status::MaxSeconds;
                break;
            }
        }
    }
    let certificate = last.unwrap_or_else(|| solver.certify());
    Trace { certificate, epochs, status, gap_trace }
}

/// Calls `$body` with `$l` bound to the concrete loss of `$kind` (one monomorphised copy each).
macro_rules! with_loss {
    ($kind:expr, |$l:ident| $body:expr) => {
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
        }
    };
}

/// Fit a regularized linear model (DESIGN.md section 3) with the configured solver.
pub fn fit<D: Rows>(problem: &Problem<'_, D>, cfg: &FitConfig) -> Result<FitResult> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    with_loss!(cfg.loss, |loss| sdca::solve(problem, loss, cfg, &mut rng))
}

/// Per-row decision values and weighted block gaps of a fitted model on its training rows.
pub fn row_outputs<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    fit: &FitResult,
) -> Result<RowOutputs> {
    if fit.alpha.len() != problem.n() || fit.coef.len() != problem.x.n_cols() {
        return Err(SdcaError::Internal("row_outputs: fit does not match the problem".into()));
    }
    with_loss!(cfg.loss, |loss| Ok(rows_for(problem, loss, fit)))
}

fn rows_for<D: Rows, L: Loss>(problem: &Problem<'_, D>, loss: L, fit: &FitResult) -> RowOutputs {
    let n = problem.n();
    let mut decision = Vec::with_capacity(n);
    let mut gap = Vec::with_capacity(n);
    for i in 0..n {
        let a = problem.x.dot(i, &fit.coef) + fit.intercept;
        let s = problem.weight(i);
        decision.push(a);
        gap.push(if s > 0.0 { (s * loss.block_gap(fit.alpha[i], a, problem.y[i])).max(0.0) } else { 0.0 });
    }
    RowOutputs { decision, gap }
}
