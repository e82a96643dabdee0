//! Pinball (quantile) loss `tau (y - a)_+ + (1 - tau) (a - y)_+`, `tau` in `(0, 1)`.
//!
//! Like `absolute` (its `tau = 1/2` case up to a factor 2) it is a maximum of linear functions
//! over a box: `phi(a, y) = max_{alpha in [tau - 1, tau]} alpha (y - a)`, so its conjugate is
//! linear on that box and both the exact SDCA step and the Pdprox dual step are clips
//! (Yang et al. 2015, the box form of the pinball row).

use super::{box_slopes, clamp, Loss};

/// `phi(a, y) = tau (y - a)_+ + (1 - tau) (a - y)_+`; `phi*(-alpha) = -alpha y` on
/// `tau - 1 <= alpha <= tau`.
#[derive(Debug, Clone, Copy)]
pub struct Quantile {
    /// The quantile level `tau`, in `(0, 1)`.
    pub quantile: f64,
}

impl Loss for Quantile {
    const NAME: &'static str = "quantile";
    const CLASSIFICATION: bool = false;

    #[inline]
    fn value(&self, a: f64, y: f64) -> f64 {
        let r = y - a;
        if r >= 0.0 {
            self.quantile * r
        } else {
            (self.quantile - 1.0) * r
        }
    }
    #[inline]
    fn conj_neg(&self, alpha: f64, y: f64) -> f64 {
        if (self.quantile - 1.0..=self.quantile).contains(&alpha) {
            -alpha * y
        } else {
            f64::INFINITY
        }
    }
    /// `alpha' = clamp(alpha + (y - a) / q, tau - 1, tau)`: the conjugate is linear on the box.
    #[inline]
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64 {
        clamp(alpha + (y - a) / q, self.quantile - 1.0, self.quantile)
    }
    #[inline]
    fn dual_of(&self, a: f64, y: f64) -> f64 {
        if y > a {
            self.quantile
        } else if y < a {
            self.quantile - 1.0
        } else {
            0.0
        }
    }
    fn smoothness(&self) -> f64 {
        0.0
    }
    /// `-phi*(-b) = b y` on `[tau - 1, tau]`.
    #[inline]
    fn dual_slopes(&self, alpha: f64, y: f64) -> Option<(f64, f64)> {
        box_slopes(alpha, self.quantile - 1.0, self.quantile, y, y)
    }
}

#[cfg(test)]
mod tests {
    use super::{Loss, Quantile};

    #[test]
    fn passes_loss_checks() {
        // The shared checks search alpha on [-1, 1], a superset of the box [tau - 1, tau].
        for tau in [0.1, 0.5, 0.9] {
            super::super::testing::check_loss(Quantile { quantile: tau });
        }
    }

    #[test]
    fn is_the_pinball_loss() {
        let loss = Quantile { quantile: 0.8 };
        assert_eq!(loss.value(1.0, 3.0), 0.8 * 2.0);
        assert!((loss.value(3.0, 1.0) - 0.2 * 2.0).abs() < 1e-15);
        assert_eq!(loss.value(2.0, 2.0), 0.0);
        assert_eq!(loss.conj_neg(0.81, 1.0), f64::INFINITY);
        assert_eq!(loss.conj_neg(-0.21, 1.0), f64::INFINITY);
    }
}
