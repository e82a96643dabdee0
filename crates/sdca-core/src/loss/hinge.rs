//! Hinge loss `max(0, 1 - y a)`: the L1-loss SVM (Shalev-Shwartz & Zhang 2013 section 6.1).

use super::{box_slopes, clamp, Loss};

/// `phi(a, y) = max(0, 1 - y a)`; dual `b = alpha y in [0, 1]`, `phi*(-alpha) = -b`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hinge;

impl Loss for Hinge {
    const NAME: &'static str = "hinge";
    const CLASSIFICATION: bool = true;

    #[inline]
    fn value(&self, a: f64, y: f64) -> f64 {
        (1.0 - y * a).max(0.0)
    }
    #[inline]
    fn conj_neg(&self, alpha: f64, y: f64) -> f64 {
        let b = alpha * y;
        if (0.0..=1.0).contains(&b) {
            -b
        } else {
            f64::INFINITY
        }
    }
    /// `b' = clamp(b + (1 - y a) / q, 0, 1)`: liblinear's dual CD step with `C = 1/(l2 n)`.
    #[inline]
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64 {
        y * clamp(alpha * y + (1.0 - y * a) / q, 0.0, 1.0)
    }
    #[inline]
    fn dual_of(&self, a: f64, y: f64) -> f64 {
        if y * a < 1.0 {
            y
        } else {
            0.0
        }
    }
    fn smoothness(&self) -> f64 {
        0.0
    }
    /// `-phi*(-b) = b y` on `b y in [0, 1]`: slope `y` between the ends `min(0, y)` and
    /// `max(0, y)`.
    #[inline]
    fn dual_slopes(&self, alpha: f64, y: f64) -> Option<(f64, f64)> {
        box_slopes(alpha, y.min(0.0), y.max(0.0), y, y)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_loss_checks() {
        super::super::testing::check_loss(super::Hinge);
    }
}
