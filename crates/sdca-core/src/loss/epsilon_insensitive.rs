//! Epsilon-insensitive loss `max(0, |a - y| - epsilon)` (support vector regression).

use super::{box_slopes, clamp, Loss};

/// `phi(a, y) = max(0, |a - y| - epsilon)`; `phi*(-alpha) = -alpha y + epsilon |alpha|` on
/// `|alpha| <= 1` (Shalev-Shwartz & Zhang 2013).
#[derive(Debug, Clone, Copy)]
pub struct EpsilonInsensitive {
    /// Half-width of the tube, `>= 0`.
    pub epsilon: f64,
}

impl Loss for EpsilonInsensitive {
    const NAME: &'static str = "epsilon_insensitive";
    const CLASSIFICATION: bool = false;

    #[inline]
    fn value(&self, a: f64, y: f64) -> f64 {
        ((a - y).abs() - self.epsilon).max(0.0)
    }
    #[inline]
    fn conj_neg(&self, alpha: f64, y: f64) -> f64 {
        if alpha.abs() <= 1.0 {
            -alpha * y + self.epsilon * alpha.abs()
        } else {
            f64::INFINITY
        }
    }
    /// Soft-threshold of the unconstrained step by `epsilon / q`, then the box:
    /// `c = alpha + (y - a)/q`, `alpha' = clamp(sign(c) max(|c| - epsilon/q, 0), -1, 1)`.
    #[inline]
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64 {
        let c = alpha + (y - a) / q;
        let shrunk = c.abs() - self.epsilon / q;
        if shrunk > 0.0 {
            clamp(c.signum() * shrunk, -1.0, 1.0)
        } else {
            0.0
        }
    }
    #[inline]
    fn dual_of(&self, a: f64, y: f64) -> f64 {
        if y - a > self.epsilon {
            1.0
        } else if a - y > self.epsilon {
            -1.0
        } else {
            0.0
        }
    }
    fn smoothness(&self) -> f64 {
        0.0
    }
    /// `-phi*(-b) = b y - epsilon |b|` on `[-1, 1]`: the kink at `b = 0` is a vertex too,
    /// with slope `y - epsilon` up and `y + epsilon` down (rows inside the tube sit there).
    #[inline]
    fn dual_slopes(&self, alpha: f64, y: f64) -> Option<(f64, f64)> {
        let up = if alpha >= 0.0 { y - self.epsilon } else { y + self.epsilon };
        let down = if alpha > 0.0 { y - self.epsilon } else { y + self.epsilon };
        box_slopes(alpha, -1.0, 1.0, up, down)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_loss_checks() {
        for e in [0.0, 0.1, 1.0] {
            super::super::testing::check_loss(super::EpsilonInsensitive { epsilon: e });
        }
    }
}
