//! Warm starts: a fitted model as the starting point of a new fit.
//!
//! The model's scores give matched duals `alpha_i = -phi'(x_i . w + b)` (feasible for any
//! `l1`, `l2`), and the duals of the rows that move `w` are then scaled by the best factor in
//! `[0, 1]` for the new problem's dual.

use super::sdca::scores_into;
use super::{Context, FitResult};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::BlockLoss;
use crate::reg::soft_threshold;

/// A starting model for [`super::fit_from`]: the duals start at `alpha_i = -phi'(x_i . coef +
/// intercept)` ([`BlockLoss::dual_of`]), a dual-feasible point matched to the model's scores, and the
/// solver's primal is derived from them as usual. Warm starts pay off along a path of
/// decreasing `l1` / `l2`, starting each fit from the previous model. The intercept is ignored
/// when the fit has no intercept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Warm<'a> {
    /// Weights, `d` per output, output-major as [`super::FitResult::coef`].
    pub coef: &'a [f64],
    /// Intercepts, one per output.
    pub intercept: &'a [f64],
}

impl<'a> From<&'a FitResult> for Warm<'a> {
    fn from(fit: &'a FitResult) -> Self {
        Self { coef: &fit.coef, intercept: &fit.intercept }
    }
}

impl Warm<'_> {
    /// The solvers' feature-major start `w` (`(d + 1) x k`, slot `j k + c`, the intercept
    /// feature in row `d`) for `d` features and `k` outputs: zero for a cold start (`None`).
    /// Errors: a model of the wrong width, or with non-finite values.
    pub(crate) fn start(warm: Option<&Self>, d: usize, k: usize, intercept_scaling: f64) -> Result<Vec<f64>> {
        let mut w = crate::budget::zeros(d.saturating_add(1).saturating_mul(k))?;
        let Some(m) = warm else { return Ok(w) };
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
            if intercept_scaling > 0.0 {
                w[d * k + c] = m.intercept[c] / intercept_scaling;
            }
        }
        Ok(w)
    }
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
    pub fn new<D: Rows, L: BlockLoss>(ctx: &Context<'_, '_, D, L>, w: Vec<f64>) -> Result<(Self, Vec<f64>)> {
        let (problem, loss, bias, row_sq) = (ctx.problem, ctx.loss, ctx.bias(), &ctx.row_sq[..]);
        let (n, d, k) = (problem.n(), problem.x.n_cols(), loss.k());
        let cold = w.iter().all(|&v| v == 0.0);
        let mut alpha = crate::budget::zeros(n * k)?;
        let mut scores = vec![0.0; k];
        // Warm: the dual sum of the rows that move `w`, in the same pass (the scaling needs it).
        let mut sum = if cold { Vec::new() } else { crate::budget::zeros((d + 1) * k)? };
        for (i, block) in alpha.chunks_exact_mut(k).enumerate() {
            let s = problem.weight(i);
            if s > 0.0 && !(cold && row_sq[i] > 0.0) {
                scores_into(problem.x, i, &w, bias, &mut scores);
                loss.dual_of(&scores, problem.y[i], block);
                if !cold && row_sq[i] > 0.0 {
                    scores.iter_mut().zip(block.iter()).for_each(|(t, &a)| *t = s * a);
                    problem.x.axpy_block(i, &scores, &mut sum);
                    sum[d * k..].iter_mut().zip(&scores).for_each(|(v, &t)| *v += bias * t);
                }
            }
        }
        Ok((Self { w, alpha }, sum))
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
pub(crate) fn scale_to_best_dual<D: Rows, L: BlockLoss>(
    ctx: &Context<'_, '_, D, L>,
    alpha: &mut [f64],
    v: &[f64],
) {
    let (problem, loss, row_sq, l2, l1) = (ctx.problem, ctx.loss, &ctx.row_sq[..], ctx.l2, ctx.cfg.l1);
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
    let c = crate::math::argmax_concave(1.0, 12, dual).map_or(1.0, |(c, _)| c);
    if c != 1.0 {
        for i in (0..n).filter(|&i| movable(i)) {
            alpha[i * k..(i + 1) * k].iter_mut().for_each(|a| *a *= c);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::error::SdcaError;
    use crate::loss::LossKind;
    use crate::solver::testing::toy;
    use crate::solver::{fit, fit_from, FitResult, Problem, Status, Warm};

    fn params(loss: &str, l2: f64, l1: f64) -> FitParams {
        FitParams { loss: loss.into(), l2, l1, tol: 1e-8, max_epochs: 20_000, ..Default::default() }
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
}
