//! Squared hinge `max(0, 1 - y a)^2`: the L2-loss SVM.

use super::Loss;

/// `phi(m) = max(0, 1 - m)^2`; dual `b = alpha y >= 0`, `phi*(-alpha) = -b + b^2 / 4`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SquaredHinge;

impl Loss for SquaredHinge {
    const NAME: &'static str = "squared_hinge";
    const CLASSIFICATION: bool = true;

    #[inline]
    fn value(&self, a: f64, y: f64) -> f64 {
        let r = (1.0 - y * a).max(0.0);
        r * r
    }
    #[inline]
    fn conj_neg(&self, alpha: f64, y: f64) -> f64 {
        let b = alpha * y;
        if b >= 0.0 {
            -b + 0.25 * b * b
        } else {
            f64::INFINITY
        }
    }
    /// `b' = max(0, b + (1 - m - b/2) / (q + 1/2))` (Shalev-Shwartz & Zhang 2013).
    #[inline]
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64 {
        let b = alpha * y;
        let nb = b + (1.0 - y * a - 0.5 * b) / (q + 0.5);
        y * if nb > 0.0 { nb } else { 0.0 }
    }
    #[inline]
    fn dual_of(&self, a: f64, y: f64) -> f64 {
        y * (2.0 * (1.0 - y * a)).max(0.0)
    }
    fn smoothness(&self) -> f64 {
        0.5
    }
    /// `2` on the active side `y a < 1`, `0` from the kink on.
    #[inline]
    fn curvature(&self, a: f64, y: f64) -> f64 {
        if y * a < 1.0 {
            2.0
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_loss_checks() {
        super::super::testing::check_loss(super::SquaredHinge);
    }
}
