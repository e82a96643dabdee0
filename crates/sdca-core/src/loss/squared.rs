//! Squared loss `(a - y)^2 / 2` (ridge regression).
//!
//! Note the factor 1/2, which Shalev-Shwartz & Zhang 2013 omits: with it, `Ridge(alpha = l2 n)` in
//! scikit-learn has the same minimiser (DESIGN.md section 3).

use super::Loss;

/// `phi(a, y) = (a - y)^2 / 2`; `phi*(-alpha) = -alpha y + alpha^2 / 2`, alpha unconstrained.
#[derive(Debug, Clone, Copy, Default)]
pub struct Squared;

impl Loss for Squared {
    const NAME: &'static str = "squared";
    const CLASSIFICATION: bool = false;

    #[inline]
    fn value(&self, a: f64, y: f64) -> f64 {
        0.5 * (a - y) * (a - y)
    }
    #[inline]
    fn conj_neg(&self, alpha: f64, y: f64) -> f64 {
        -alpha * y + 0.5 * alpha * alpha
    }
    /// `alpha' = alpha + (y - a - alpha) / (1 + q)`.
    #[inline]
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64 {
        alpha + (y - a - alpha) / (1.0 + q)
    }
    #[inline]
    fn dual_of(&self, a: f64, y: f64) -> f64 {
        y - a
    }
    fn smoothness(&self) -> f64 {
        1.0
    }
    #[inline]
    fn curvature(&self, _a: f64, _y: f64) -> f64 {
        1.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_loss_checks() {
        super::super::testing::check_loss(super::Squared);
    }
}
