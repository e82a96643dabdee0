//! Exact line search of one SDCA block step, by safeguarded Newton on the slope.
//!
//! Along `mu_gamma = (1 - gamma) mu + gamma nu = mu + gamma delta` (nodes and edges alike) and
//! `w + gamma v`, the block-`i` part of `n D` is (`papers/sdca-crf.txt` eq. 15 and 20, note
//! section 2.4)
//!
//! ```text
//! f(gamma)   = H~(mu_gamma) - (lambda n / 2) ||w + gamma v||^2
//! f'(gamma)  = <delta, log nu - log mu_gamma>_chain - gamma lambda n ||v||^2
//! f''(gamma) = -<delta^2 / mu_gamma>_chain - lambda n ||v||^2            (<= 0)
//! f'(0) = KL~(mu||nu) + KL~(nu||mu) >= 0,      f'(1) = -lambda n ||v||^2 <= 0
//! ```
//!
//! The slope uses `-<delta, log nu>_chain = lambda n <w, v>`, true because `nu` is the chain
//! distribution of the current `w`. So no oracle call is needed, and the endpoint slopes have
//! closed forms (pitfall 6 of the note: no `log(1 - gamma)` at `gamma = 1`). The root of `f'` is
//! bracketed in `[0, 1]`; [`safeguarded_newton`] finds it with rtsafe (Numerical Recipes 9.4),
//! stopping when the last step is shorter than `tol` (the paper's "sub-precision", 1e-3).
//! Terms `delta^2 / mu_gamma` are computed as `exp(2 log|delta| - log mu_gamma)` (pitfall 4).

use super::chain::log_add_exp;
use super::marginals::chain_fold;

/// `log((1 - gamma) exp(a) + gamma exp(b))`, exact at `gamma` in `{0, 1}`, clamped to `<= 0`.
#[inline]
pub(crate) fn mix_log(gamma: f64, a: f64, b: f64) -> f64 {
    if gamma <= 0.0 {
        a
    } else if gamma >= 1.0 {
        b
    } else {
        log_add_exp((-gamma).ln_1p() + a, gamma.ln() + b).min(0.0)
    }
}

/// One block's line-search data: log-marginals `mu` (stored) and `nu` (oracle), their
/// difference `delta = nu - mu`, and `lambda n ||v||^2`.
pub(crate) struct BlockLine<'s> {
    /// Chain length.
    pub t_len: usize,
    /// Number of labels.
    pub k: usize,
    /// `log mu`, nodes and edges.
    pub mu: (&'s [f64], &'s [f64]),
    /// `log nu`, nodes and edges.
    pub nu: (&'s [f64], &'s [f64]),
    /// `nu - mu`, nodes and edges.
    pub delta: (&'s [f64], &'s [f64]),
    /// `lambda n ||v||^2`.
    pub curvature: f64,
}

#[inline]
fn terms(gamma: f64, lmu: f64, lnu: f64, d: f64) -> [f64; 2] {
    if d == 0.0 {
        return [0.0, 0.0];
    }
    let lg = mix_log(gamma, lmu, lnu);
    [d * (lnu - lg), (2.0 * d.abs().ln() - lg).exp()]
}

impl BlockLine<'_> {
    /// `f'(0) = <delta, log nu - log mu>_chain`, the symmetrised divergence.
    pub(crate) fn slope_at_zero(&self) -> f64 {
        let (mn, me) = self.mu;
        let (nn, ne) = self.nu;
        let (dn, de) = self.delta;
        let [s] =
            chain_fold(self.t_len, self.k, |j| [dn[j] * (nn[j] - mn[j])], |j| [de[j] * (ne[j] - me[j])]);
        s
    }

    /// `f'(1) = -lambda n ||v||^2`.
    pub(crate) fn slope_at_one(&self) -> f64 {
        -self.curvature
    }

    /// `(f'(gamma), f''(gamma))`.
    pub(crate) fn derivatives(&self, gamma: f64) -> (f64, f64) {
        let (mn, me) = self.mu;
        let (nn, ne) = self.nu;
        let (dn, de) = self.delta;
        let [d1, d2] = chain_fold(
            self.t_len,
            self.k,
            |j| terms(gamma, mn[j], nn[j], dn[j]),
            |j| terms(gamma, me[j], ne[j], de[j]),
        );
        (d1 - gamma * self.curvature, -d2 - self.curvature)
    }
}

/// Root of a decreasing slope `f'` on `[0, 1]` by rtsafe: Newton steps while they stay inside
/// the bracket and at least halve, bisection otherwise (also on NaN). `deriv(x)` returns
/// `(f'(x), f''(x))`; `slope0 = f'(0)` and `slope1 = f'(1)` are given in closed form. Returns
/// the step and the number of `deriv` calls.
pub(crate) fn safeguarded_newton<F: FnMut(f64) -> (f64, f64)>(
    mut deriv: F,
    slope0: f64,
    slope1: f64,
    tol: f64,
) -> (f64, u32) {
    // No ascent direction (or NaN): keep the block.
    if slope0.is_nan() || slope0 <= 0.0 {
        return (0.0, 0);
    }
    if slope1 >= 0.0 {
        return (1.0, 0);
    }
    // xh: f' > 0 side, xl: f' < 0 side (Numerical Recipes' names).
    let (mut xh, mut xl) = (0.0f64, 1.0f64);
    let mut x = 0.5;
    let (mut dx, mut dxold) = (1.0f64, 1.0f64);
    let (mut u, mut h) = deriv(x);
    let mut calls = 1;
    if u < 0.0 {
        xl = x;
    } else {
        xh = x;
    }
    for _ in 0..100 {
        if u == 0.0 {
            return (x, calls);
        }
        let newton = u / h;
        let x_try = x - newton;
        let (lo, hi) = (xl.min(xh), xl.max(xh));
        if x_try >= lo && x_try <= hi && newton.abs() <= 0.5 * dxold.abs() {
            dxold = dx;
            dx = newton;
            x = x_try;
        } else {
            dxold = dx;
            dx = 0.5 * (xh - xl);
            x = xl + dx;
        }
        if dx.abs() < tol {
            return (x, calls);
        }
        (u, h) = deriv(x);
        calls += 1;
        if u < 0.0 {
            xl = x;
        } else {
            xh = x;
        }
    }
    (x, calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_finds_roots_of_smooth_slopes() {
        // f'(x) = c - x^3 - x, decreasing, root in (0, 1) for c in (0, 2).
        for c in [1e-6, 0.01, 0.3, 1.0, 1.9] {
            let (x, calls) =
                safeguarded_newton(|x| (c - x * x * x - x, -3.0 * x * x - 1.0), c, c - 2.0, 1e-10);
            assert!((c - x * x * x - x).abs() < 1e-9, "c={c}: x={x}");
            assert!(calls <= 10, "c={c}: {calls} calls");
        }
        // A slope that is steep near 0 (like the entropy at the simplex border): log(r / x).
        let r: f64 = 1e-7;
        let (x, _) = safeguarded_newton(|x| ((r / x).ln(), -1.0 / x), f64::INFINITY, (r).ln(), 1e-12);
        assert!((x - r).abs() < 1e-12, "{x}");
    }

    #[test]
    fn newton_handles_ends_and_nan() {
        assert_eq!(safeguarded_newton(|_| unreachable!(), 0.0, -1.0, 1e-3), (0.0, 0));
        assert_eq!(safeguarded_newton(|_| unreachable!(), f64::NAN, -1.0, 1e-3), (0.0, 0));
        assert_eq!(safeguarded_newton(|_| unreachable!(), 1.0, 0.0, 1e-3), (1.0, 0));
        // NaN curvature everywhere: pure bisection still converges on the sign of f'.
        let (x, calls) = safeguarded_newton(|x| (0.3 - x, f64::NAN), 0.3, -0.7, 1e-6);
        assert!((x - 0.3).abs() < 1e-6 && calls > 10, "{x} after {calls}");
        // Zero curvature (u / h = inf) also falls back to bisection.
        let (x, _) = safeguarded_newton(|x| (0.7 - x, 0.0), 0.7, -0.3, 1e-6);
        assert!((x - 0.7).abs() < 1e-6);
    }

    #[test]
    fn mix_log_is_exact_at_the_ends() {
        assert_eq!(mix_log(0.0, -3.0, -1.0), -3.0);
        assert_eq!(mix_log(1.0, -3.0, -1.0), -1.0);
        let m = mix_log(0.25, (0.2f64).ln(), (0.6f64).ln());
        assert!((m.exp() - (0.75 * 0.2 + 0.25 * 0.6)).abs() < 1e-15);
        assert_eq!(mix_log(0.5, f64::NEG_INFINITY, f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert!(mix_log(0.5, 0.0, 0.0) <= 0.0);
    }
}
