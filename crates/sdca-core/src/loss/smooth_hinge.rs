//! Smoothed hinge (Shalev-Shwartz & Zhang 2013 eq. 6): the hinge with a quadratic piece of width `gamma`.

use super::{clamp, Loss};

/// `phi(m) = 0` if `m > 1`, `1 - m - gamma/2` if `m < 1 - gamma`, `(1 - m)^2 / (2 gamma)`
/// otherwise, at the margin `m = y a`. Its conjugate is the hinge's plus `(gamma/2) alpha^2`,
/// which makes `phi` `(1/gamma)`-smooth and SDCA linearly convergent.
#[derive(Debug, Clone, Copy)]
pub struct SmoothHinge {
    /// `gamma > 0`.
    pub smoothing: f64,
}

impl Loss for SmoothHinge {
    const NAME: &'static str = "smooth_hinge";
    const CLASSIFICATION: bool = true;

    #[inline]
    fn value(&self, a: f64, y: f64) -> f64 {
        let m = y * a;
        let g = self.smoothing;
        if m >= 1.0 {
            0.0
        } else if m <= 1.0 - g {
            1.0 - m - 0.5 * g
        } else {
            (1.0 - m) * (1.0 - m) / (2.0 * g)
        }
    }
    #[inline]
    fn conj_neg(&self, alpha: f64, y: f64) -> f64 {
        let b = alpha * y;
        if (0.0..=1.0).contains(&b) {
            -b + 0.5 * self.smoothing * b * b
        } else {
            f64::INFINITY
        }
    }
    /// `b' = clamp(b + (1 - m - gamma b) / (q + gamma), 0, 1)` (Shalev-Shwartz & Zhang 2013 section 6.2).
    #[inline]
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64 {
        let b = alpha * y;
        let g = self.smoothing;
        y * clamp(b + (1.0 - y * a - g * b) / (q + g), 0.0, 1.0)
    }
    #[inline]
    fn dual_of(&self, a: f64, y: f64) -> f64 {
        y * clamp((1.0 - y * a) / self.smoothing, 0.0, 1.0)
    }
    fn smoothness(&self) -> f64 {
        self.smoothing
    }
    /// `1 / gamma` inside the quadratic piece `1 - gamma < y a < 1`, `0` outside.
    #[inline]
    fn curvature(&self, a: f64, y: f64) -> f64 {
        let m = y * a;
        if m > 1.0 - self.smoothing && m < 1.0 {
            1.0 / self.smoothing
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_loss_checks() {
        for g in [1e-3, 0.1, 1.0, 3.0] {
            super::super::testing::check_loss(SmoothHinge { smoothing: g });
        }
    }

    #[test]
    fn sandwiched_by_hinge() {
        let h = super::super::Hinge;
        for g in [0.01, 1.0] {
            let s = SmoothHinge { smoothing: g };
            for k in -40..40 {
                let a = k as f64 / 10.0;
                let (hv, sv) = (h.value(a, 1.0), s.value(a, 1.0));
                assert!(sv <= hv + 1e-15 && hv - g / 2.0 <= sv + 1e-15);
            }
        }
    }
}
