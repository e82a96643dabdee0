//! The Lasso reduction: `l2 = 0` with `l1 > 0` solved as an elastic net.
//!
//! Prox-SDCA needs a strongly convex regularizer, so the Lasso / pure-L1 problem is solved
//! through the reduction of Shalev-Shwartz and Zhang ("Proximal Stochastic Dual Coordinate
//! Ascent", 2012, section 3.2; "Accelerated Proximal Stochastic Dual Coordinate Ascent for
//! Regularized Loss Minimization", 2014). With the target accuracy `eps = tol P(0)` and a
//! certified radius `B >= ||w*||_2` of the original optimum, the elastic net with
//! `l2_used = eps / B^2` is solved. `B^2 = (P(0)/l1)^2` (`l1 ||w*||_1 <= P(w*) <= P(0)` as every
//! loss is `>= 0`), plus, with an intercept (which the original problem leaves unpenalised), the
//! square of a bound on `|b*| / intercept_scaling` from Jensen's inequality per class
//! (`lasso_radius_sq`). The fit reports both problems: [`super::FitResult::solved_gap`] for the
//! elastic net actually solved and [`super::FitResult::certificate`] for the original one, with
//! the certified bound `min(S + (l2_used/2)(B^2 - ||w||^2), P_0(w) - D_0(theta))`: the first term
//! is the paper's argument (`P_0(w) - P_0* <= S + (l2_used/2)(||w*||^2 - ||w||^2)` for any bound
//! `S` on the elastic net's suboptimality), the second the original problem's own duality gap at
//! the duals rescaled into its feasible set (`Reduction`'s `dual`).
//!
//! The reduction is for scalar losses only (the config rejects `l2 = 0` with a multiclass
//! loss), so its dual works on one dual per row.

use super::{Certificate, Problem};
use crate::config::FitConfig;
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::BlockLoss;

/// The elastic net that stands for a Lasso problem, and how its certificates transfer.
pub(crate) struct Reduction<'p, 'a, D: Rows, L: BlockLoss> {
    problem: &'p Problem<'a, D>,
    loss: L,
    l1: f64,
    bias: f64,
    /// The `l2` of the elastic net solved.
    pub l2_used: f64,
    /// `B^2 >= ||w*||^2` of the original optimum (all `d + 1` slots).
    radius_sq: f64,
    scratch: Vec<f64>,
}

impl<'p, 'a, D: Rows, L: BlockLoss> Reduction<'p, 'a, D, L> {
    /// The reduction of the problem `cfg` describes when its `l2` is 0, else `None`.
    /// Errors when the intercept of the problem cannot be bounded.
    pub fn of(problem: &'p Problem<'a, D>, loss: L, cfg: &FitConfig) -> Result<Option<Self>> {
        if cfg.l2 > 0.0 {
            return Ok(None);
        }
        let bias = cfg.intercept_scaling;
        let d1 = (problem.x.n_cols() + 1) * loss.k();
        let p0 = problem.mean_loss(loss, bias, &vec![0.0; d1]);
        let radius_sq = lasso_radius_sq(problem, loss, p0, cfg.l1, bias)?;
        // eps = tol P(0), lambda = eps / B^2; P(0) = 0 means w = 0 is optimal and any lambda works.
        let l2 = if p0 > 0.0 && radius_sq > 0.0 { cfg.tol * p0 / radius_sq } else { cfg.tol };
        // Any finite lambda keeps the reduction's bound valid; `tol P(0)` can overflow.
        let l2_used = l2.clamp(1e-300, 1e300);
        Ok(Some(Self { problem, loss, l1: cfg.l1, bias, l2_used, radius_sq, scratch: Vec::new() }))
    }

    /// The original problem's certificate at `w` (length `d + 1`) and duals `alpha`, given a
    /// certified bound `bound >= P_s(w) - P_s*` on the elastic net solved.
    pub fn certificate(&mut self, w: &[f64], alpha: &[f64], bound: f64) -> Certificate {
        // The Lasso objective from scratch, not `P_s - (l2_used/2)||w||^2`: far from the optimum
        // (a warm start) that L2 term can dwarf `P_0`, and the difference cancel to noise.
        let primal = self.primal(w);
        let half_sq = 0.5 * self.l2_used * w.iter().map(|v| v * v).sum::<f64>();
        let reach = 0.5 * self.l2_used * self.radius_sq;
        // The same cancellation can hit the reduction's bound: add its rounding error.
        let reduction = bound + reach - half_sq + 4.0 * f64::EPSILON * (bound + reach + half_sq);
        let gap = reduction.min(primal - self.dual(alpha)).max(0.0);
        Certificate { primal, dual: primal - gap, gap }
    }

    /// `P_0(w) = (1/n) sum_i s_i phi(x_i . w + b) + l1 ||w||_1`, the original (`l2 = 0`)
    /// objective; one pass over the rows.
    fn primal(&self, w: &[f64]) -> f64 {
        let p = self.problem;
        let (x, d) = (p.x, p.x.n_cols());
        let loss: f64 = (0..p.n())
            .filter(|&i| p.weight(i) > 0.0)
            .map(|i| p.weight(i) * self.loss.value(&[x.dot(i, w) + self.bias * w[d]], p.y[i]))
            .sum();
        loss / p.n() as f64 + self.l1 * w[..d].iter().map(|v| v.abs()).sum::<f64>()
    }

    /// The original (`l2 = 0`) problem's dual at `alpha` moved into its feasible set:
    /// `D_0(theta) = -(1/n) sum_i s_i phi*(-theta_i)` subject to
    /// `||(1/n) sum_i s_i theta_i x_i||_inf <= l1` and, with an unpenalised intercept,
    /// `sum_i s_i theta_i = 0`. `theta_i = c f_i alpha_i` with `f_i in [0, 1]` scaling down the
    /// side (`s_i alpha_i > 0` or `< 0`) with the larger sum so the two balance, and `c <= 1` the
    /// largest factor meeting the box. Each `theta_i` is a convex combination of `alpha_i` and 0,
    /// both in the loss's dual domain (`phi*(0) = -inf phi` is finite), so `theta` is feasible.
    /// One pass over the rows.
    pub(crate) fn dual(&mut self, alpha: &[f64]) -> f64 {
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
pub(super) fn lasso_radius_sq<D: Rows, L: BlockLoss>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::error::SdcaError;
    use crate::loss::{with_loss, Logistic, LossKind, Squared};
    use crate::solver::testing::{lasso_cd, toy};
    use crate::solver::{fit, fit_from, FitResult, Problem, Status, Warm};

    fn params(loss: &str, l2: f64, l1: f64) -> FitParams {
        FitParams { loss: loss.into(), l2, l1, tol: 1e-8, max_epochs: 20_000, ..Default::default() }
    }

    /// `l2 = 0` (Lasso) against a separate cyclic coordinate descent run to 1e-14: the objective
    /// is within the reported bound and the support agrees, through the reduction (accelerated
    /// SDCA, whose `l2_used` / `solved_gap` are the elastic net actually solved) and through
    /// `auto`'s coordinate descent (which solves `l2 = 0` as it is).
    #[test]
    fn lasso_matches_coordinate_descent_within_the_bound() {
        let (n, d) = (200, 8);
        let (x, y) = toy(n, d, false, 3);
        let view = DenseView::new(&x, n, d).unwrap();
        for (intercept, l1, solver) in [false, true]
            .into_iter()
            .flat_map(|b| [0.3, 0.03].map(move |l1| (b, l1)))
            .flat_map(|(b, l1)| [("accelerated", "accelerated"), ("auto", "cd")].map(move |s| (b, l1, s)))
        {
            {
                let (w_ref, b_ref, p_ref) = lasso_cd(&x, &y, d, l1, intercept);
                let base = params("squared", 0.0, l1);
                let cfg = FitParams { fit_intercept: intercept, tol: 1e-7, solver: solver.0.into(), ..base };
                let cfg = cfg.check().unwrap();
                let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
                let r = fit(&p, &cfg).unwrap();
                let c = r.certificate;
                let case = format!("intercept {intercept} l1 {l1}: {r:?} reference {p_ref}");
                assert_eq!((r.status, r.solver), (Status::Converged, solver.1), "{case}");
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
                // The problem actually solved: a tiny l2 from tol P(0) / B^2 and its own bound,
                // or the Lasso itself.
                match solver.1 {
                    "cd" => assert!(r.l2_used == 0.0 && r.solved_gap == c.gap, "{case}"),
                    _ => assert!(r.l2_used > 0.0 && r.l2_used < 1e-6 && r.solved_gap >= 0.0, "{case}"),
                }
            }
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
}
