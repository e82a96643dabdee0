//! Cyclic coordinate descent on the primal, for the squared loss with an L1 penalty.
//!
//! Friedman, Hastie and Tibshirani, "Regularization Paths for Generalized Linear Models via
//! Coordinate Descent", Journal of Statistical Software 33(1), 2010 (the update, the active-set
//! sweeps); Fercoq, Gramfort and Salmon, "Mind the duality gap: safer rules for the Lasso", ICML
//! 2015, and Ndiaye, Fercoq, Gramfort and Salmon, JMLR 2017 (dynamic Gap Safe screening).
//!
//! Why a primal method: with more features than rows, or a tiny `l2` (the Lasso reduction's
//! `l2_used`), the dual of SDCA is badly conditioned (`R^2 / (l2 n)` huge) and SDCA needs
//! thousands of epochs where coordinate descent over the features needs tens: on 200 x 5,000
//! Gaussian data, a 100-value Lasso path took 91 CPU-s with SDCA (still above `tol` at many
//! values) against scikit-learn's 3.9 s (`benchmarks/paths.py`).
//!
//! The problem is the user's, `l2 = 0` included (no Lasso reduction: coordinate descent needs
//! no strong convexity):
//!
//! `P(w) = (1/(2n)) sum_i s_i (x~_i . w - y_i)^2 + l1 ||w_{:d}||_1 + (l2/2) ||w||^2`,
//!
//! `x~_i = (x_i, c)` with the intercept feature `c` in slot `d` (penalised by `l2` only, so
//! unpenalised for the Lasso). The columns are stored scaled by `sqrt(s_i)` (rows of zero
//! weight dropped) with the residuals `r_i = sqrt(s_i)(x~_i . w - y_i)`, so one coordinate's
//! update reads one column: `g_j = (1/n) sum_i x_ij r_i`, `h_j = (1/n) sum_i x_ij^2`,
//! `w_j <- soft(h_j w_j - g_j, l1) / (h_j + l2)` (no `soft` for the intercept slot), and the
//! residuals move by the column times the change.
//!
//! One outer iteration: a sweep over every feature not screened, a check (below; every
//! `check_every` outer iterations), then sweeps over the support (the nonzero weights) only,
//! until one decreases `P` by less than `tol P / 10` (it can no longer matter) or they have
//! cost as much as the full sweep and the check (three passes). On an ill-conditioned support
//! (as many nonzeros as rows) the descent converges linearly and slowly, and a rule that
//! stopped the support sweeps once one gained less than a share of the gap spent most of the
//! fit in checks. Every sweep counts as the share of the stored entries it visited
//! ([`super::Clock::add_pass`]).
//!
//! The check is Gap Safe screening's dual point ([`super::screen`]): the duals matched to the
//! scores, moved into the dual's feasible set when `l2 = 0` (balanced for the unpenalised
//! intercept, scaled into the box `|u_j| <= l1`), their dual value and the gap `P(w) - D(theta)`
//! (two passes over the rows, independent of the residuals kept here). The duals are returned
//! with the model, as Newton does: `coef` is the primal iterate, equal to `w(alpha)` only at the
//! optimum. Dynamic screening: `D` is `(1/n)`-strongly concave in `sum_i s_i t_i^2` (the squared
//! loss is 1-smooth), so `|u_j - u*_j| <= ||x_j||_s sqrt(2 G / n)`, and a feature with
//! `|u_j| + ||x_j||_s sqrt(2 G / n) < l1` is zero at the optimum: it is set to zero and leaves
//! the sweeps for the rest of the fit.

use std::collections::VecDeque;

use super::{accelerated, screen, Certificate, Context, Outcome, Problem, Status};
use crate::budget::zeros;
use crate::config::{FitConfig, Sampling, SolverKind};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{BlockLoss, Loss, LossKind};
use crate::reg::soft_threshold;

/// Residual vectors of the last full sweeps whose Anderson combination makes the extrapolated
/// dual point, plus one.
const EXTRAPOLATE: usize = 5;

/// Work of the support sweeps after a check, at most, in full passes: as much as the full sweep
/// and the check before them (three passes), so neither half dominates.
const SUPPORT_WORK: f64 = 3.0;

/// Whether coordinate descent runs: `Cd` asks for it (an error for another loss than squared, a
/// group penalty or gap sampling); `Auto` for the squared loss with an L1 penalty, without gap
/// sampling or a group penalty, when the dual is badly conditioned: the Lasso itself (`l2 = 0`,
/// which SDCA solves only through a reduction with a tiny `l2`), at least as many features as
/// rows, or where `auto` would otherwise run accelerated Prox-SDCA (`R^2 / l2 > 10 n`). On a
/// well-conditioned dual with many more rows than features, plain Prox-SDCA wins: on 203,621
/// CoNLL tokens x 94,204 attributes at `l2 = 1e-4` (`R^2 / (l2 n)` = 0.05), coordinate descent
/// took 0.95 s to 1e-8 against 0.31 s (`make bench`, the elastic-net row).
pub(crate) fn chosen<D: Rows>(cfg: &FitConfig, problem: &Problem<'_, D>) -> Result<bool> {
    let domain = cfg.loss == LossKind::Squared && cfg.groups.is_none() && cfg.sampling != Sampling::Gap;
    match cfg.solver {
        SolverKind::Cd if !domain => Err(SdcaError::InvalidParameter {
            name: "solver",
            message: format!(
                "\"cd\" (coordinate descent) solves the squared loss without group penalties or \
                 sampling=\"gap\", and this fit has loss={:?}; use solver=\"auto\" or \"sdca\"",
                cfg.loss.name()
            ),
        }),
        SolverKind::Cd => Ok(true),
        SolverKind::Auto if !(domain && cfg.l1 > 0.0) => Ok(false),
        SolverKind::Auto => {
            let (n, d) = (problem.n(), problem.x.n_cols());
            Ok(cfg.l2 == 0.0 || d >= n || {
                let r2 = problem.row_sq(cfg.intercept_scaling)?.into_iter().fold(0.0, f64::max);
                accelerated::chosen(SolverKind::Auto, cfg.loss.smoothness(), r2, cfg.l2, n)
            })
        }
        _ => Ok(false),
    }
}

/// The columns of `x~` scaled by `sqrt(s_i)`, rows of zero weight dropped (module docs).
struct Columns {
    /// Column `j`'s entries are `start[j]..start[j + 1]`.
    start: Vec<usize>,
    rows: Vec<u32>,
    values: Vec<f64>,
    /// `sqrt(s_i) c` per kept row: the intercept column (empty without an intercept).
    bias: Vec<f64>,
    /// Original row of each kept row.
    kept: Vec<u32>,
    /// `h_j = (1/n) sum_i x_ij^2`, intercept slot last.
    h: Vec<f64>,
}

impl Columns {
    fn of<D: Rows>(ctx: &Context<'_, '_, D, impl BlockLoss>) -> Result<Self> {
        let (p, c) = (ctx.problem, ctx.bias());
        let (x, d, nf) = (p.x, p.x.n_cols(), p.n() as f64);
        let kept: Vec<u32> = (0..p.n()).filter(|&i| p.weight(i) > 0.0).map(|i| i as u32).collect();
        let mut count = zeros::<usize>(d + 1)?;
        for &i in &kept {
            x.for_each_nz(i as usize, |j, _| count[j + 1] += 1);
        }
        for j in 0..d {
            count[j + 1] += count[j];
        }
        let start = count.clone();
        let nnz = start[d];
        let (mut rows, mut values) = (zeros::<u32>(nnz)?, zeros::<f64>(nnz)?);
        let mut next = count;
        for (k, &i) in kept.iter().enumerate() {
            let root = p.weight(i as usize).sqrt();
            x.for_each_nz(i as usize, |j, v| {
                rows[next[j]] = k as u32;
                values[next[j]] = root * v;
                next[j] += 1;
            });
        }
        let bias: Vec<f64> = if c > 0.0 {
            kept.iter().map(|&i| c * p.weight(i as usize).sqrt()).collect()
        } else {
            Vec::new()
        };
        let mut h: Vec<f64> =
            (0..d).map(|j| values[start[j]..start[j + 1]].iter().map(|v| v * v).sum::<f64>() / nf).collect();
        h.push(bias.iter().map(|v| v * v).sum::<f64>() / nf);
        Ok(Self { start, rows, values, bias, kept, h })
    }

    fn column(&self, j: usize) -> (&[u32], &[f64]) {
        let range = self.start[j]..self.start[j + 1];
        (&self.rows[range.clone()], &self.values[range])
    }

    /// `(1/n) sum_i x_ij r_i` (`nf = n`).
    fn grad(&self, j: usize, r: &[f64], nf: f64) -> f64 {
        if j == self.h.len() - 1 {
            return self.bias.iter().zip(r).map(|(b, r)| b * r).sum::<f64>() / nf;
        }
        let (rows, values) = self.column(j);
        rows.iter().zip(values).map(|(&k, v)| v * r[k as usize]).sum::<f64>() / nf
    }

    /// `r += delta x_j`.
    fn shift(&self, j: usize, delta: f64, r: &mut [f64]) {
        if j == self.h.len() - 1 {
            r.iter_mut().zip(&self.bias).for_each(|(r, b)| *r += delta * b);
            return;
        }
        let (rows, values) = self.column(j);
        for (&k, v) in rows.iter().zip(values) {
            r[k as usize] += delta * v;
        }
    }

    /// Stored entries of column `j` (the intercept column's: one per kept row).
    fn len(&self, j: usize) -> usize {
        if j == self.h.len() - 1 {
            self.bias.len()
        } else {
            self.start[j + 1] - self.start[j]
        }
    }
}

/// The state of the descent.
struct Descent<'c> {
    cols: &'c Columns,
    l1: f64,
    l2: f64,
    nf: f64,
    /// Model, intercept feature's weight in slot `d`.
    w: Vec<f64>,
    /// `sqrt(s_i)(x~_i . w - y_i)` per kept row.
    r: Vec<f64>,
}

impl Descent<'_> {
    /// The exact minimisation over coordinate `j`; returns the decrease of `P`.
    fn update(&mut self, j: usize) -> f64 {
        let (h, old) = (self.cols.h[j], self.w[j]);
        let curvature = h + self.l2;
        if curvature == 0.0 {
            return 0.0; // an empty column without l2: its weight stays 0
        }
        let z = h * old - self.cols.grad(j, &self.r, self.nf);
        let l1 = if j == self.w.len() - 1 { 0.0 } else { self.l1 };
        let new = soft_threshold(z, l1) / curvature;
        let delta = new - old;
        if delta == 0.0 {
            return 0.0;
        }
        self.cols.shift(j, delta, &mut self.r);
        self.w[j] = new;
        // The objective is (curvature / 2)(w - z / curvature)^2 + l1 |w| + const along j, so
        // the exact step decreases it by at least (curvature / 2) delta^2.
        0.5 * curvature * delta * delta
    }
}

/// Dual extrapolation (Massias, Gramfort and Salmon, "Celer: a Fast Solver for the Lasso with
/// Dual Extrapolation", ICML 2018, section 3): the affine combination of the last residual
/// vectors (three to [`EXTRAPOLATE`] `+ 1`) whose combined differences have the least norm
/// (Anderson's), `None` before there are three or when the system is degenerate. Near the optimum the
/// residuals of coordinate descent converge linearly and slowly, and the dual point they give
/// lags the primal; their extrapolation is much closer to the dual optimum.
fn anderson(history: &VecDeque<Vec<f64>>) -> Option<Vec<f64>> {
    if history.len() < 3 {
        return None;
    }
    let k = history.len() - 1;
    let diffs: Vec<Vec<f64>> =
        (0..k).map(|m| history[m + 1].iter().zip(&history[m]).map(|(a, b)| a - b).collect()).collect();
    let mut gram = vec![0.0; k * k];
    for a in 0..k {
        for b in a..k {
            gram[a * k + b] = diffs[a].iter().zip(&diffs[b]).map(|(x, y)| x * y).sum();
        }
    }
    let trace: f64 = (0..k).map(|a| gram[a * k + a]).sum();
    if !(trace > 0.0 && trace.is_finite()) {
        return None;
    }
    (0..k).for_each(|a| gram[a * k + a] += 1e-10 * trace);
    let mut z = vec![1.0; k];
    if !super::newton::cholesky_solve(&mut gram, k, &mut z) {
        return None;
    }
    let sum: f64 = z.iter().sum();
    if !(sum.is_finite() && sum != 0.0) {
        return None;
    }
    let mut out = vec![0.0; history[0].len()];
    for (c, r) in z.iter().zip(history.iter().skip(1)) {
        out.iter_mut().zip(r).for_each(|(o, v)| *o += c / sum * v);
    }
    Some(out)
}

/// Coordinate descent from the model `w` (length `d + 1`; zero for a cold start) on the
/// problem of `ctx` (module docs; `ctx` without the Lasso reduction), until its judge accepts the
/// certificate or the clock runs out. Errors when the objective stops being finite.
pub(crate) fn run<D: Rows, L: Loss>(ctx: &mut Context<'_, '_, D, L>, w: Vec<f64>) -> Result<Outcome> {
    let cols = Columns::of(ctx)?;
    let (problem, loss, cfg) = (ctx.problem, ctx.loss, ctx.cfg);
    let (d, nf, bias) = (problem.x.n_cols(), problem.n() as f64, ctx.bias());
    let slots: Vec<usize> = (0..d).chain((bias > 0.0).then_some(d)).collect();
    let total: f64 = slots.iter().map(|&j| cols.len(j) as f64).sum::<f64>().max(1.0);
    let mut r = zeros::<f64>(cols.kept.len())?;
    for (k, &i) in cols.kept.iter().enumerate() {
        let i = i as usize;
        let a = problem.x.dot(i, &w[..d]) + bias * w[d];
        r[k] = problem.weight(i).sqrt() * (a - problem.y[i]);
    }
    let mut s = Descent { cols: &cols, l1: cfg.l1, l2: ctx.l2, nf, w, r };
    let norms: Vec<f64> = cols.h.iter().map(|h| (h * nf).sqrt()).collect();
    let mut screened = vec![false; d + 1];
    let mut gap_trace = Vec::new();
    let every = cfg.check_every.max(1);
    let mut outer = 0u32;
    let mut residuals: VecDeque<Vec<f64>> = VecDeque::with_capacity(EXTRAPOLATE + 1);
    let mut best: Option<screen::DualPoint> = None;
    let (status, point) = loop {
        // A full sweep over the features not screened.
        let mut visited = 0usize;
        for &j in slots.iter().filter(|&&j| !screened[j]) {
            s.update(j);
            visited += cols.len(j);
        }
        ctx.clock.add_pass(visited as f64 / total);
        outer += 1;
        if residuals.len() == EXTRAPOLATE + 1 {
            residuals.pop_front();
        }
        residuals.push_back(s.r.clone());
        let late = ctx.clock.out_of_time();
        let last = ctx.clock.remaining() == 0 || late;
        if !(outer - 1).is_multiple_of(every) && !last {
            continue;
        }
        let intercept = bias * s.w[d];
        let mut point = screen::dual_point(problem, loss, cfg, &s.w[..d], intercept);
        let primal = point.certificate.primal;
        if !primal.is_finite() {
            return Err(SdcaError::NonFiniteResult { what: "the coordinate descent iterate's objective" });
        }
        ctx.clock.add_pass(2.0);
        // Dual extrapolation, and the best dual point so far (every one stays feasible).
        if let Some(r) = anderson(&residuals) {
            let mut theta = vec![0.0; problem.n()];
            for (k, &i) in cols.kept.iter().enumerate() {
                theta[i as usize] = -r[k] / problem.weight(i as usize).sqrt();
            }
            let other = screen::feasible(problem, loss, cfg, theta, primal);
            ctx.clock.add_pass(1.0);
            if other.certificate.dual > point.certificate.dual {
                point = other;
            }
        }
        if let Some(b) = best.take() {
            if b.certificate.dual > point.certificate.dual {
                let dual = b.certificate.dual.min(primal);
                point =
                    screen::DualPoint { certificate: Certificate { primal, dual, gap: primal - dual }, ..b };
            }
        }
        best = Some(point.clone());
        let c = point.certificate;
        if !c.gap.is_finite() {
            return Err(SdcaError::NonFiniteResult { what: "the coordinate descent iterate's duality gap" });
        }
        gap_trace.push(c.gap);
        if ctx.judge.met(&c) {
            break (Status::Converged, point);
        }
        if last || ctx.clock.remaining() == 0 {
            break (if late { Status::MaxSeconds } else { Status::MaxEpochs }, point);
        }
        // Dynamic Gap Safe screening (module docs), with the rounding of the gap added.
        let reach = ((2.0 * c.gap + 8.0 * f64::EPSILON * (c.primal.abs() + c.dual.abs())) / nf).sqrt();
        for j in 0..d {
            if !screened[j] && (point.u[j].abs() + norms[j] * reach) * (1.0 + 1e-9) < s.l1 {
                screened[j] = true;
                if s.w[j] != 0.0 {
                    cols.shift(j, -s.w[j], &mut s.r);
                    s.w[j] = 0.0;
                }
            }
        }
        // Sweeps over the support (module docs).
        let negligible = 0.1 * cfg.tol * c.primal;
        let mut spent = 0.0;
        while spent < SUPPORT_WORK && ctx.clock.remaining() > 0 {
            let (mut decrease, mut visited) = (0.0, 0usize);
            for &j in &slots {
                if !screened[j] && s.w[j] != 0.0 {
                    decrease += s.update(j);
                    visited += cols.len(j);
                }
            }
            ctx.clock.add_pass(visited as f64 / total);
            spent += visited as f64 / total;
            if visited == 0 || decrease <= negligible {
                break;
            }
        }
    };
    let c = point.certificate;
    Ok(Outcome {
        w: s.w,
        alpha: point.theta,
        certificate: c,
        solved_gap: c.gap,
        status,
        gap_trace,
        solver: "cd",
        outer_iterations: outer,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::FitParams;
    use crate::data::{CsrView, DenseView};
    use crate::error::SdcaError;
    use crate::solver::testing::{csr_of, toy};
    use crate::solver::{fit, fit_from, Problem, Status, Warm};

    fn params(solver: &str, l2: f64, l1: f64, intercept: bool) -> FitParams {
        FitParams {
            loss: "squared".into(),
            solver: solver.into(),
            l2,
            l1,
            fit_intercept: intercept,
            tol: 1e-11,
            max_epochs: 200_000,
            ..Default::default()
        }
    }

    /// Elastic net and Lasso, with and without an intercept, weights with zeros, dense and CSR,
    /// more features than rows and fewer: coordinate descent reaches the objective of
    /// accelerated Prox-SDCA within both certified gaps, converged at tol 1e-11, and a warm
    /// start from its own model converges within a few passes.
    #[test]
    fn matches_prox_sdca_within_the_gaps() {
        for (n, d, seed) in [(60, 150, 1u64), (200, 12, 2)] {
            let (mut x, y) = toy(n, d, false, seed);
            let weights: Vec<f64> =
                (0..n).map(|i| if i % 9 == 4 { 0.0 } else { 0.5 + (i % 4) as f64 * 0.5 }).collect();
            let dense = x.clone();
            x.iter_mut().filter(|v| v.abs() < 0.5).for_each(|v| *v = 0.0);
            let (indptr, indices, values) = csr_of(&x, n, d);
            let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
            let dense_view = DenseView::new(&dense, n, d).unwrap();
            for (l2, l1, intercept) in
                [(1e-2, 0.05, true), (0.0, 0.05, true), (0.0, 0.2, false), (1e-3, 0.01, false)]
            {
                let case = format!("n {n} d {d} l2 {l2} l1 {l1} intercept {intercept}");
                let cd = params("cd", l2, l1, intercept).check().unwrap();
                let reference =
                    FitParams { tol: 1e-9, ..params("accelerated", l2, l1, intercept) }.check().unwrap();
                let p = Problem::new(&dense_view, &y, Some(&weights), cd.loss).unwrap();
                let q = Problem::new(&csr, &y, Some(&weights), cd.loss).unwrap();
                for (what, r, s) in [
                    ("dense", fit(&p, &cd).unwrap(), fit(&p, &reference).unwrap()),
                    ("csr", fit(&q, &cd).unwrap(), fit(&q, &reference).unwrap()),
                ] {
                    assert_eq!((r.solver, r.status), ("cd", Status::Converged), "{case} {what}: {r:?}");
                    let (a, b) = (r.certificate, s.certificate);
                    assert!(a.gap <= 1e-11 * a.primal, "{case} {what}: {a:?}");
                    assert!(
                        (a.primal - b.primal).abs() <= a.gap + b.gap + 1e-13 * b.primal,
                        "{case} {what}: {a:?} {b:?}"
                    );
                    assert_eq!(r.l2_used, l2, "{case} {what}");
                    let warm = Warm::from(&r);
                    let again = match what {
                        "dense" => fit_from(&p, &cd, Some(&warm)),
                        _ => fit_from(&q, &cd, Some(&warm)),
                    };
                    // A warm start restores the model, not the extrapolated dual point that
                    // certified it: a few checks rebuild one.
                    assert!(
                        again.as_ref().is_ok_and(|f| f.converged() && f.epochs <= 15),
                        "{case} {what}: {again:?}"
                    );
                }
            }
        }
    }

    /// `auto` runs coordinate descent for the Lasso, for an elastic net with at least as many
    /// features as rows, and where the dual is badly conditioned; else Prox-SDCA.
    #[test]
    fn auto_picks_cd_for_the_lasso_and_wide_elastic_nets() {
        let solver_for = |n: usize, d: usize, l2: f64, l1: f64| {
            let (x, y) = toy(n, d, false, 4);
            let view = DenseView::new(&x, n, d).unwrap();
            let cfg = FitParams { max_epochs: 2, ..params("auto", l2, l1, true) }.check().unwrap();
            fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap().solver
        };
        assert_eq!(solver_for(100, 40, 0.0, 0.05), "cd");
        assert_eq!(solver_for(40, 100, 1e-2, 0.05), "cd");
        assert_eq!(solver_for(40, 40, 1e-2, 0.05), "cd");
        // Well-conditioned dual (R^2 / l2 <= 10 n): Prox-SDCA; badly conditioned: cd.
        assert_ne!(solver_for(100, 40, 1.0, 0.05), "cd");
        assert_eq!(solver_for(100, 40, 1e-4, 0.05), "cd");
        assert_ne!(solver_for(40, 100, 1e-2, 0.0), "cd");
    }

    /// `solver="cd"` takes the squared loss only, with a message naming the fix.
    #[test]
    fn cd_refuses_other_losses() {
        let (x, y) = toy(20, 3, true, 3);
        let view = DenseView::new(&x, 20, 3).unwrap();
        let cfg = FitParams { loss: "logistic".into(), ..params("cd", 1e-2, 0.1, true) }.check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        match fit(&p, &cfg) {
            Err(SdcaError::InvalidParameter { name: "solver", message }) => {
                assert!(message.contains("squared") && message.contains("logistic"), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}
