//! Logistic loss `log(1 + exp(-y a))` with an exact dual step.
//!
//! Shalev-Shwartz & Zhang 2013 section 6.2 gives only an approximate step. We solve the 1-D dual
//! subproblem exactly instead: in the logit `t` of `b = alpha y = sigma(t)` the optimality
//! condition is `f(t) = t + m + q (sigma(t) - b0) = 0` with `m = y a`. `f` is increasing with
//! `1 <= f' <= 1 + q/4`, and the root lies in `[-m - q (1 - b0), -m + q b0]`, so safeguarded
//! Newton (bisection fallback) converges with no boundary trouble.
//!
//! Cost (liblinear's dual solver for logistic regression, Yu, Huang & Lin 2011, makes the same
//! point: a modified Newton method from a good start needs few inner iterations). The step
//! starts at the current dual's logit `t0 = ln(b0 / (1 - b0))`, where `sigma(t0) = b0` is known,
//! so the first Newton step needs no `exp`; each further iterate costs one. It stops when the
//! Newton correction is below the size at which the next iterate would change `t` by less than
//! rounding (`0.05 q step^2 <= 1e-16 (1 + |t|)`: Newton's error is at most
//! `max|f''| / (2 min f') step^2 <= q step^2 / 20`), and the dual of the last iterate comes from
//! the first-order update `sigma(t - step) = s - s (1 - s) step` (error `step^2 / 10`) instead
//! of one more `exp`. Near the optimum, where the logits move little between epochs, a step is
//! one `ln` and one `exp` (before: one `ln` and about five `exp`). The SDCA passes keep each
//! row's last logit next to its dual ([`Loss::dual_step_hinted`]), which spares the `ln`: a
//! step is then one `exp` and three divisions.

use super::{Loss, Matched};
use crate::math::xlogx;

/// `phi(m) = log(1 + exp(-m))`; dual `b = alpha y in [0, 1]`,
/// `phi*(-alpha) = b ln b + (1 - b) ln(1 - b)` with `0 ln 0 = 0`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Logistic;

/// Numerically stable `1 / (1 + exp(-t))`: the logistic model's probability of the positive
/// class at score `t`.
#[inline]
pub fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// Stable `log(1 + exp(x))`.
#[inline]
fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// `(1 - b) ln(1 - b)` for `b` in `[0, 1]`, through `ln_1p`: `ln` of a rounded `1 - b` keeps
/// no digit of a `b` below machine precision (fuzz: a Newton fit at `l2 = 1e-13` whose duals
/// `b ~ 3e-11` put a relative error of 1e-6 into its certificate's conjugate term).
#[inline]
fn xlog1mx(b: f64) -> f64 {
    if b < 1.0 {
        (1.0 - b) * (-b).ln_1p()
    } else {
        0.0
    }
}

/// The exact dual step in the logit (module docs) at `b0 = alpha y` and the margin `m = y a`:
/// the new `b`, its logit (the last Newton point) and the second-order gap estimate
/// ([`Loss::dual_step_gap`]). `logit` is `t0 = ln(b0 / (1 - b0))` when the caller kept it.
#[inline]
fn solve(b0: f64, m: f64, q: f64, logit: Option<f64>) -> (f64, f64, f64) {
    let (mut lo, mut hi) = (-m - q * (1.0 - b0), -m + q * b0);
    let interior = b0 > 0.0 && b0 < 1.0;
    let mut gap = 0.0;
    // Start from the current dual (its logit, where sigma is b0 without an `exp`), pulled
    // into the bracket. `f64::clamp` would panic on a NaN end (`q = inf` times `b0 = 0`,
    // from a row norm that overflowed).
    let mut t = if interior {
        let t0 = logit.unwrap_or_else(|| (b0 / (1.0 - b0)).ln());
        let f0 = t0 + m;
        gap = 0.5 * b0 * (1.0 - b0) * f0 * f0;
        let next = t0 - f0 / (1.0 + q * b0 * (1.0 - b0));
        if f0 > 0.0 {
            hi = hi.min(t0);
        } else {
            lo = lo.max(t0);
        }
        super::clamp(next, lo, hi)
    } else {
        0.5 * (lo + hi)
    };
    // Newton converges to a step below rounding within a handful of iterates. The test
    // `q step^2 <= 2e-15 (1 + |t|)` needs no division (`q > 0` on the rows of a pass).
    for _ in 0..64 {
        let s = sigmoid(t);
        let f = t + m + q * (s - b0);
        if f == 0.0 {
            return (s, t, gap);
        }
        if f > 0.0 {
            hi = t;
        } else {
            lo = t;
        }
        let d = s * (1.0 - s);
        let step = f / (1.0 + q * d);
        // Converged: the next Newton point is within rounding of the root, and its dual is
        // `s - d step` to within `step^2 / 10`. Testing this before the bracket matters:
        // at convergence `t` is a bracket end, so the next point would not be strictly
        // inside and a bisection would throw the iterate away.
        let scale = 1.0 + t.abs();
        if q.max(1e-300) * step * step <= 2e-15 * scale || step.abs() <= 1e-13 * scale {
            return (super::clamp(s - d * step, 0.0, 1.0), t - step, gap);
        }
        let next = t - step;
        t = if next > lo && next < hi { next } else { 0.5 * (lo + hi) };
    }
    (sigmoid(t), t, gap)
}

impl Loss for Logistic {
    const NAME: &'static str = "logistic";
    const CLASSIFICATION: bool = true;

    #[inline]
    fn value(&self, a: f64, y: f64) -> f64 {
        softplus(-y * a)
    }
    #[inline]
    fn conj_neg(&self, alpha: f64, y: f64) -> f64 {
        let b = alpha * y;
        if (0.0..=1.0).contains(&b) {
            xlogx(b) + xlog1mx(b)
        } else {
            f64::INFINITY
        }
    }
    #[inline]
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64 {
        self.dual_step_gap(alpha, a, y, q).0
    }
    /// The gap estimate is the second-order value of the row's gap: the gap is the Bregman
    /// divergence of `softplus` between the dual's logit `t0` and `-m` (the logit of the dual
    /// matched to the score, `dual_of`), so `gap ~ b0 (1 - b0) (t0 + m)^2 / 2`; `t0 + m = f(t0)`
    /// is the first Newton residual. A row at a bound of `[0, 1]` (the cold start) gives 0.
    #[inline]
    fn dual_step_gap(&self, alpha: f64, a: f64, y: f64, q: f64) -> (f64, f64) {
        let (b, _, gap) = solve(alpha * y, y * a, q, None);
        (y * b, gap)
    }
    const HINTED: bool = true;
    /// The hint keeps the logit of the row's new dual (the last Newton point), so that the
    /// next visit starts there without the `ln` of `t0 = ln(b0 / (1 - b0))`: the stored logit
    /// is that of the dual to rounding (the dual is its first-order image, within `step^2 / 10`
    /// of `sigma`, below rounding at convergence), and it only sets where Newton starts and
    /// the gap estimate, never the root it converges to.
    #[inline]
    fn dual_step_hinted(&self, alpha: f64, a: f64, y: f64, q: f64, hint: &mut [f64; 2]) -> (f64, f64) {
        let logit = if hint[0] == alpha { Some(hint[1]) } else { None };
        let (b, t, gap) = solve(alpha * y, y * a, q, logit);
        let new = y * b;
        *hint = [new, t];
        (new, gap)
    }
    #[inline]
    fn dual_of(&self, a: f64, y: f64) -> f64 {
        y * sigmoid(-y * a)
    }
    fn smoothness(&self) -> f64 {
        4.0
    }
    /// `sigma(a) sigma(-a) = e / (1 + e)^2` with `e = exp(-|a|)`: one `exp`, no cancellation in
    /// either tail.
    #[inline]
    fn curvature(&self, a: f64, _y: f64) -> f64 {
        let e = (-a.abs()).exp();
        e / ((1.0 + e) * (1.0 + e))
    }
    /// All four terms from `e = exp(-|m|)` and `l = ln(1 + e)` at the margin `m = y a`:
    /// `phi = max(-m, 0) + l`; `b = sigma(-m)` and `1 - b = sigma(m)` each from `e` without a
    /// subtraction; `ln b = -(max(m, 0) + l)` and `ln(1 - b) = -phi`, so the conjugate
    /// `b ln b + (1 - b) ln(1 - b)` needs no further logarithm (and keeps the digits of a tiny
    /// `b` or `1 - b`); the curvature is `b (1 - b)`.
    #[inline]
    fn matched(&self, a: f64, y: f64) -> Matched {
        let m = y * a;
        let e = (-m.abs()).exp();
        let l = e.ln_1p();
        let (b, c) =
            if m >= 0.0 { (e / (1.0 + e), 1.0 / (1.0 + e)) } else { (1.0 / (1.0 + e), e / (1.0 + e)) };
        let value = (-m).max(0.0) + l;
        let conj = -(b * (m.max(0.0) + l) + c * value);
        let alpha = y * b;
        Matched { alpha, value, gap: value + conj + alpha * a, curvature: b * c }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_loss_checks() {
        super::super::testing::check_loss(Logistic);
    }

    #[test]
    fn extreme_margins_stay_finite() {
        for a in [-1e300, -800.0, 800.0, 1e300] {
            for y in [-1.0, 1.0] {
                assert!(Logistic.value(a, y).is_finite());
                let d = Logistic.dual_step(0.0, a, y, 1e-8);
                assert!(d.is_finite() && (0.0..=1.0).contains(&(d * y)));
                assert!(Logistic.block_gap(d, a, y).is_finite() || a.abs() > 1e200);
            }
        }
    }

    /// The one-`exp` terms equal the separate pieces (`dual_of`, `value`, `curvature`) to
    /// rounding, far into both tails, and their Fenchel-Young gap is zero (so the conjugate
    /// is `conj_neg`'s).
    #[test]
    fn matched_terms_equal_the_separate_pieces() {
        for a in [-1e300, -800.0, -40.0, -3.0, -1e-9, 0.0, 1e-9, 0.7, 25.0, 745.0, 1e300] {
            for y in [-1.0, 1.0] {
                let m = Logistic.matched(a, y);
                let alpha = Logistic.dual_of(a, y);
                let close = |u: f64, v: f64| (u - v).abs() <= 4.0 * f64::EPSILON * u.abs().max(v.abs());
                assert!(close(m.alpha, alpha), "alpha {a} {y}: {m:?}");
                assert!(close(m.value, Logistic.value(a, y)), "value {a} {y}: {m:?}");
                assert!(close(m.curvature, Logistic.curvature(a, y)), "curvature {a} {y}: {m:?}");
                // The separate pieces satisfy Fenchel-Young with equality too, so a zero gap
                // means the same conjugate.
                assert!(Logistic.block_gap(alpha, a, y).abs() <= 1e-15 * (1.0 + m.value + (alpha * a).abs()));
                assert!(
                    m.gap.abs() <= 4.0 * f64::EPSILON * (m.value + (m.alpha * a).abs()),
                    "gap {a} {y}: {m:?}"
                );
            }
        }
    }

    /// Found by the `fit` fuzz target: an overflowed `q = inf` at `b0 = 0` made the bracket
    /// `[-inf, NaN]`, and `f64::clamp` panicked on it.
    #[test]
    fn infinite_q_does_not_panic() {
        for alpha in [0.0, 1.0, 0.5] {
            Logistic.dual_step(alpha, 0.0, 1.0, f64::INFINITY);
        }
    }
}
