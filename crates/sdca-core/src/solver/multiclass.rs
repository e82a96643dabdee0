//! Shrinking for the Crammer-Singer dual: liblinear's working set of rows for block duals.
//!
//! Keerthi, Sundararajan, Chang, Hsieh and Lin ("A sequential dual method for large scale
//! multi-class linear SVMs", KDD 2008, section 4; `Solver_MCSVM_CS` in liblinear's
//! `linear.cpp`) solve the Crammer-Singer dual one row block at a time and shrink: a class whose
//! dual sits at its bound with its gradient `G_m` below the smallest gradient `minG` of the
//! classes off their bound stays there, and a row with at most one class left cannot move (its
//! duals sum to zero) and leaves the passes. In our terms (`crate::loss::multiclass`) the block
//! is `alpha_m = -beta_m` off the label and `alpha_y = ||beta||_1 <= 1`, `G_m = a_m + delta(m, y)`
//! at the scores `a`, and [`crate::loss::BlockLoss::vertex_slack`] returns, at a vertex (one
//! class off its bound), the row's `slack`: how far the other classes' gradients lie below the
//! free one's. Such a row's exact block step does not move
//! it, and its Fenchel-Young gap is 0.
//!
//! The rule is liblinear's: a row is dropped when it is at a vertex with a positive slack
//! ([`drops`]). The binary rule of `super::shrink` (Hsieh et al., ICML 2008), which drops a row
//! only when its slack exceeds the largest violation `maxG - minG` of the previous pass, was
//! tried first: on the letter-recognition set (20,000 x 16, 26 classes, `l2 = 1e-3`, `tol =
//! 1e-6`) it needed 99 passes' work and 2.8 s of CPU against 62 and 1.2 s for liblinear's rule
//! (30 s and 1,477 passes without shrinking). A row dropped too early costs nothing wrong: rows
//! come back, and the certificate runs over **all** rows, when the state's running gap estimate
//! (`super::Estimate`) meets its target, as for the binary losses; a stop is only ever certified
//! on the full problem and the gap returned is the exact one of `State::evaluate`. Only
//! permutations shrink (uniform draws revisit rows, gap sampling already skips rows whose gap is
//! 0). The smoothed loss is never at a vertex away from `beta = 0` and is left to the
//! accelerated solver.
//!
//! On Fashion-MNIST (60,000 x 784, 10 classes, no intercept, one thread; the `multiclass`
//! example, CPU seconds, single runs on a loaded machine) the first tolerance reaching
//! `(P - P*) / P* <= 1e-6` took 7.3 s at `l2 = 1e-2` (`tol = 3e-6`, 30 passes' work) and
//! 32 s at `l2 = 1e-3` (`tol = 1e-6`, 128), against liblinear's 7.3 s and 63 s
//! (`benchmarks/multiclass_goals.py`'s ladders). Liblinear's per-row work is far smaller (it
//! reads only the non-zeros and, for each row, only its classes not shrunk), but it needs
//! many more of its cheap passes for the same objective; here the dense block kernels (the
//! row's `k` scores and the update of its `k` columns) are three quarters of the time.

use crate::config::{FitConfig, Sampling};
use crate::loss::LossKind;

/// Whether a plain SDCA fit shrinks blocks: asked for, a permutation per pass, and the plain
/// Crammer-Singer loss.
pub(crate) fn applies(cfg: &FitConfig) -> bool {
    cfg.shrinking
        && cfg.sampling == Sampling::Permutation
        && matches!(cfg.loss, LossKind::MulticlassHinge { smoothing } if smoothing == 0.0)
}

/// Whether a pass drops a row with the [`crate::loss::BlockLoss::vertex_slack`] `slack`: at a
/// vertex whose other classes' gradients lie strictly below the free one's.
#[inline(always)]
pub(crate) fn drops(slack: Option<f64>) -> bool {
    slack.is_some_and(|s| s > 0.0)
}

#[cfg(test)]
mod tests {
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::loss::{BlockLoss, MulticlassHinge};
    use crate::reg::L2;
    use crate::solver::sdca::{Objective, State};
    use crate::solver::testing::{shrinking_passes, toy_classes};
    use crate::solver::{fit, row_outputs, FitResult, Problem, Status};

    /// `P` at the returned model and `D` at the returned duals through their own model
    /// `W(alpha) = sum_i s_i x_i alpha_i^T / (l2 n)` (intercept feature 1), recomputed from
    /// scratch with no state of the solver.
    fn recomputed(x: &[f64], y: &[f64], s: &[f64], d: usize, k: usize, l2: f64, r: &FitResult) -> (f64, f64) {
        let (n, loss) = (y.len(), MulticlassHinge { k, smoothing: 0.0 });
        let nf = n as f64;
        let feature = |i: usize, j: usize| if j < d { x[i * d + j] } else { 1.0 };
        // Model slot (j, c): coef is class-major `c d + j`, the intercept last.
        let model = |j: usize, c: usize| if j < d { r.coef[c * d + j] } else { r.intercept[c] };
        let w_alpha = |j: usize, c: usize| {
            (0..n).map(|i| s[i] * r.alpha[i * k + c] * feature(i, j)).sum::<f64>() / (l2 * nf)
        };
        let (mut loss_sum, mut conj_sum) = (0.0, 0.0);
        for (i, (&si, &yi)) in s.iter().zip(y).enumerate() {
            let a: Vec<f64> = (0..k).map(|c| (0..=d).map(|j| feature(i, j) * model(j, c)).sum()).collect();
            loss_sum += si * loss.value(&a, yi);
            conj_sum += si * loss.conj_neg(&r.alpha[i * k..(i + 1) * k], yi);
        }
        let slots = || (0..=d).flat_map(|j| (0..k).map(move |c| (j, c)));
        let sq: f64 = slots().map(|(j, c)| model(j, c).powi(2)).sum();
        let sq_alpha: f64 = slots().map(|(j, c)| w_alpha(j, c).powi(2)).sum();
        (loss_sum / nf + 0.5 * l2 * sq, -conj_sum / nf - 0.5 * l2 * sq_alpha)
    }

    /// With and without shrinking, with an intercept and sample weights (some zero), the plain
    /// Crammer-Singer fit reaches the same certified optimum: objectives within the sum of the
    /// certified gaps, models within their certified radii `sqrt(2 gap / l2)`. The certificate
    /// returned is exact (its primal and dual equal the values recomputed from scratch at the
    /// returned model and duals, and the row gaps average to it), and a fit is reproducible.
    #[test]
    fn block_shrinking_reaches_the_same_optimum() {
        let (n, d) = (400, 5);
        let s: Vec<f64> = (0..n).map(|i| [0.0, 0.5, 1.0, 2.0][(i * 7 + i / 3) % 4]).collect();
        for (k, l2, tol) in [(3, 1e-2, 1e-7), (7, 1e-3, 1e-6)] {
            let (x, y) = toy_classes(n, d, k, 9);
            let view = DenseView::new(&x, n, d).unwrap();
            let base = FitParams {
                loss: "multiclass_hinge".into(),
                l2,
                tol,
                solver: "sdca".into(),
                max_epochs: 100_000,
                ..Default::default()
            };
            let at = |shrinking: bool| {
                let cfg = FitParams { shrinking, ..base.clone() }.check().unwrap();
                let p = Problem::new(&view, &y, Some(&s), cfg.loss).unwrap();
                let r = fit(&p, &cfg).unwrap();
                let c = r.certificate;
                let case = format!("k={k} shrinking={shrinking}: {c:?} in {} epochs", r.epochs);
                assert_eq!(r.status, Status::Converged, "{case}");
                assert!(c.gap <= tol * c.primal, "{case}");
                let (primal, dual) = recomputed(&x, &y, &s, d, k, l2, &r);
                assert!((c.primal - primal).abs() <= 1e-12 * primal, "{case}: primal {primal}");
                assert!((c.dual - dual).abs() <= 1e-12 * primal, "{case}: dual {dual}");
                let rows = row_outputs(&p, &cfg, &r).unwrap();
                let mean = rows.gap.iter().sum::<f64>() / n as f64;
                assert!((mean - c.gap).abs() <= 1e-12 + 1e-9 * c.gap, "{case}: rows {mean}");
                assert_eq!(r, fit(&p, &cfg).unwrap(), "{case}: not reproducible");
                r
            };
            let (plain, shrunk) = (at(false), at(true));
            let (cp, cs) = (plain.certificate, shrunk.certificate);
            let case = format!("k={k}: plain {cp:?} in {}, shrunk {cs:?} in {}", plain.epochs, shrunk.epochs);
            assert!((cp.primal - cs.primal).abs() <= cp.gap + cs.gap + 1e-15, "{case}");
            let model = |r: &FitResult| r.coef.iter().chain(&r.intercept).copied().collect::<Vec<_>>();
            let dist = model(&plain).iter().zip(model(&shrunk)).map(|(a, b)| (a - b).powi(2)).sum::<f64>();
            let radius = (2.0 * cp.gap / l2).sqrt() + (2.0 * cs.gap / l2).sqrt();
            assert!(dist.sqrt() <= radius, "{case}: distance {} > {radius}", dist.sqrt());
        }
    }

    /// A pass drops only rows at a vertex of their block (one class off its bound), which it
    /// leaves unmoved; the dropped rows sit at the tail of the order, which keeps
    /// every row.
    #[test]
    fn dropped_blocks_are_settled() {
        let (n, d, k, l2) = (300, 4, 5, 1e-2);
        let (x, y) = toy_classes(n, d, k, 5);
        let view = DenseView::new(&x, n, d).unwrap();
        let loss = MulticlassHinge { k, smoothing: 0.0 };
        let p =
            Problem::new(&view, &y, None, crate::loss::LossKind::MulticlassHinge { smoothing: 0.0 }).unwrap();
        let row_sq: Vec<f64> = (0..n).map(|i| x[i * d..(i + 1) * d].iter().map(|v| v * v).sum()).collect();
        let objective = Objective { l2, l1: 0.0, bias: 0.0 };
        let mut st =
            State::new(&p, loss, L2, objective, &row_sq, vec![0.0; n * k]).unwrap().shrinking_blocks();
        let kept = shrinking_passes(&mut st, n, 30, |st, before, i| {
            let block = &st.alpha[i * k..(i + 1) * k];
            assert_eq!(block, &before[i * k..(i + 1) * k], "row {i} moved after it was dropped");
            let yi = y[i] as usize;
            let off = (0..k).filter(|&m| if m == yi { block[m] < 1.0 - 1e-12 } else { block[m] < 0.0 });
            assert_eq!(off.count(), 1, "row {i} dropped off a vertex: {block:?}");
        });
        assert!(kept < n / 2, "only {} of {n} rows dropped", n - kept);
    }
}
