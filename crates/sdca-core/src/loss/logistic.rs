//! Logistic loss `log(1 + exp(-y a))` with an exact dual step.
//!
//! Shalev-Shwartz & Zhang 2013 section 6.2 gives only an approximate step. We solve the 1-D dual subproblem
//! exactly instead: in the logit `t` of `b = alpha y = sigma(t)` the optimality condition is
//! `f(t) = t + m + q (sigma(t) - b0) = 0` with `m = y a`. `f` is increasing with
//! `1 <= f' <= 1 + q/4`, and the root lies in `[-m - q (1 - b0), -m + q b0]`, so safeguarded
//! Newton (bisection fallback) converges in a handful of iterations with no boundary trouble.

use super::Loss;
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
        let b0 = alpha * y;
        let m = y * a;
        let (mut lo, mut hi) = (-m - q * (1.0 - b0), -m + q * b0);
        // Start from the current dual (its logit), pulled into the bracket. `f64::clamp` would
        // panic on a NaN end (`q = inf` times `b0 = 0`, from a row norm that overflowed).
        let start = if b0 > 0.0 && b0 < 1.0 { (b0 / (1.0 - b0)).ln() } else { 0.5 * (lo + hi) };
        let mut t = super::clamp(start, lo, hi);
        for _ in 0..64 {
            let s = sigmoid(t);
            let f = t + m + q * (s - b0);
            if f == 0.0 {
                break;
            }
            if f > 0.0 {
                hi = t;
            } else {
                lo = t;
            }
            let step = f / (1.0 + q * s * (1.0 - s));
            // Converged: the Newton point is within rounding of `t`. Testing this before the
            // bracket matters: at convergence `t` is a bracket end, so the next point would
            // not be strictly inside and a bisection would throw the iterate away.
            if step.abs() <= 1e-13 * (1.0 + t.abs()) {
                t -= step;
                break;
            }
            let next = t - step;
            t = if next > lo && next < hi { next } else { 0.5 * (lo + hi) };
        }
        y * sigmoid(t)
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

    /// Found by the `fit` fuzz target: an overflowed `q = inf` at `b0 = 0` made the bracket
    /// `[-inf, NaN]`, and `f64::clamp` panicked on it.
    #[test]
    fn infinite_q_does_not_panic() {
        for alpha in [0.0, 1.0, 0.5] {
            Logistic.dual_step(alpha, 0.0, 1.0, f64::INFINITY);
        }
    }
}
