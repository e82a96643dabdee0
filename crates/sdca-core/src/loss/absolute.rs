//! Absolute deviation `|a - y|` (least absolute deviations; Shalev-Shwartz & Zhang 2013 section 6.1).

use super::{box_slopes, clamp, Loss};

/// `phi(a, y) = |a - y|`; `phi*(-alpha) = -alpha y` on `|alpha| <= 1`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Absolute;

impl Loss for Absolute {
    const NAME: &'static str = "absolute";
    const CLASSIFICATION: bool = false;

    #[inline]
    fn value(&self, a: f64, y: f64) -> f64 {
        (a - y).abs()
    }
    #[inline]
    fn conj_neg(&self, alpha: f64, y: f64) -> f64 {
        if alpha.abs() <= 1.0 {
            -alpha * y
        } else {
            f64::INFINITY
        }
    }
    /// `alpha' = clamp(alpha + (y - a) / q, -1, 1)`.
    #[inline]
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64 {
        clamp(alpha + (y - a) / q, -1.0, 1.0)
    }
    #[inline]
    fn dual_of(&self, a: f64, y: f64) -> f64 {
        if y > a {
            1.0
        } else if y < a {
            -1.0
        } else {
            0.0
        }
    }
    fn smoothness(&self) -> f64 {
        0.0
    }
    /// `-phi*(-b) = b y` on `[-1, 1]`.
    #[inline]
    fn dual_slopes(&self, alpha: f64, y: f64) -> Option<(f64, f64)> {
        box_slopes(alpha, -1.0, 1.0, y, y)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_loss_checks() {
        super::super::testing::check_loss(super::Absolute);
    }
}
