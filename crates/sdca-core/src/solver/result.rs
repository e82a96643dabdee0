//! What a fit returns: the model, its duals, its certificate and why it stopped; and the
//! per-row outputs of a fitted model on its training rows.

use super::sdca::scores_into;
use super::Problem;
use crate::config::FitConfig;
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{with_loss, BlockLoss};

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
    /// A CoCoA+ fit ran its `max_rounds` first ([`super::Coordinator`]).
    MaxRounds,
}

impl Status {
    /// Short machine-readable reason.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Converged => "ok",
            Self::MaxEpochs => "max_epochs reached before tol",
            Self::MaxSeconds => "max_seconds reached before tol",
            Self::Interrupted => "interrupted",
            Self::MaxRounds => "max_rounds reached before tol",
        }
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
/// certificate ([`super::newton`]): their row gaps are zero up to rounding, and the regularizer's term
/// `(l2/2)||w - w(alpha)||^2` makes up `certificate.gap`. For
/// `"accelerated"` they are the duals of the last inner (proximal) problem: every `alpha_i` is
/// feasible and converges to the optimal dual, but the row gaps average to that inner problem's
/// gap, not to `certificate.gap`. For `"pdprox"` they are the feasible duals `theta` of its
/// certificate ([`super::pdprox`]); their row gaps are non-negative, and the regularizer's
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
    let rows = with_loss!(cfg.loss, k, |loss| rows_for(problem, loss, fit))?;
    // Rows outside the objective (zero weight) can overflow where the fit itself did not.
    if rows.decision.iter().chain(&rows.gap).any(|v| !v.is_finite()) {
        return Err(SdcaError::NonFiniteResult { what: "the per-row decision values" });
    }
    Ok(rows)
}

fn rows_for<D: Rows, L: BlockLoss>(problem: &Problem<'_, D>, loss: L, fit: &FitResult) -> Result<RowOutputs> {
    let (n, d, k) = (problem.n(), problem.x.n_cols(), fit.n_outputs);
    // Back to the feature-major layout, the intercepts as the weights of a feature of value 1.
    let mut w = crate::budget::zeros((d + 1) * k)?;
    for c in 0..k {
        for j in 0..d {
            w[j * k + c] = fit.coef[c * d + j];
        }
        w[d * k + c] = fit.intercept[c];
    }
    let mut decision = crate::budget::zeros(n * k)?;
    let mut gap = crate::budget::with_capacity(n)?;
    let mut losses = crate::budget::with_capacity(n)?;
    for (i, scores) in decision.chunks_exact_mut(k).enumerate() {
        scores_into(problem.x, i, &w, 1.0, scores);
        let s = problem.weight(i);
        let alpha = &fit.alpha[i * k..(i + 1) * k];
        gap.push(if s > 0.0 { (s * loss.block_gap(alpha, scores, problem.y[i])).max(0.0) } else { 0.0 });
        losses.push(if s > 0.0 { s * loss.value(scores, problem.y[i]) } else { 0.0 });
    }
    Ok(RowOutputs { decision, gap, loss: losses })
}
