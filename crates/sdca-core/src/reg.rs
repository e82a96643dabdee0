//! Regularizers and their link maps `w = grad g*(v)`.
//!
//! The solvers keep the dual sum `u = (1/(l2 n)) sum_i s_i alpha_i x_i` (stored unscaled as
//! `v = l2 n u`) and derive `w` from it coordinate by coordinate, so sparse rows stay
//! O(nnz) per step: with `g(w) = ||w||^2/2 + (l1/l2) ||w||_1` (elastic net, `prox-sdca.txt`
//! eq. 7) the link is soft-thresholding, with pure L2 it is the identity. For both,
//! `g*(u) = ||link(u)||^2 / 2` ([`Reg::conj`]).
//!
//! # Shifted regularizer
//!
//! The inner problems of the accelerated solver (`accelerated-prox-sdca.txt` Figure 2,
//! `papers/notes/accelerated-prox-sdca.md` section 1.3) use `g~(w) = g(w) - z . w` with a fixed
//! shift `z`. Its conjugate is `g~*(u) = g*(u + z)` and its link is `w = link(u + z)`: the same
//! scalar map applied to the shifted dual sum. The solvers therefore store `v + z l2 n` (the
//! shift in unscaled units) in place of `v`; a coordinate step adds `s_i delta x_i` to it as
//! before and the row kernels ([`Reg::dot`]) need no change. Because `z` is constant within an
//! inner solve, a step touches only `supp(x_i)`; moving the shift costs O(d) once per outer
//! iteration.

use crate::data::Rows;

/// Soft-thresholding `sign(x) max(|x| - t, 0)`: the prox map of `t |.|`. A non-finite `x`
/// stays non-finite: an overflowed dual sum against an overflowed threshold (`l1 / l2` at a
/// tiny `l2`) is undefined, not a zero weight.
#[inline(always)]
pub fn soft_threshold(x: f64, t: f64) -> f64 {
    if x > t {
        x - t
    } else if x < -t {
        x + t
    } else if x.is_finite() {
        0.0
    } else {
        x - t
    }
}

/// A coordinate-separable regularizer, seen through its link map.
pub trait Reg: Copy + Send + Sync {
    /// `w_j = grad_j g*(u_j)` for the scaled dual sum `u_j`.
    fn link(&self, u: f64) -> f64;

    /// The `k = out.len()` scores `x_i . w_c` for `w = link(v * scale)` (feature-major,
    /// `v[j k + c]`), with `v` the unscaled (possibly shifted) dual sum.
    fn dot<D: Rows>(&self, x: &D, i: usize, v: &[f64], scale: f64, out: &mut [f64]);

    /// `g*(u)` for one coordinate: `link(u)^2 / 2` for the regularizers here (Fenchel-Young holds
    /// with equality at `w = link(u)`: `g(w) + g*(u) = w u`).
    #[inline(always)]
    fn conj(&self, u: f64) -> f64 {
        let w = self.link(u);
        0.5 * w * w
    }
}

/// Pure L2: `w = u`.
#[derive(Debug, Clone, Copy, Default)]
pub struct L2;

impl Reg for L2 {
    #[inline(always)]
    fn link(&self, u: f64) -> f64 {
        u
    }
    #[inline(always)]
    fn dot<D: Rows>(&self, x: &D, i: usize, v: &[f64], scale: f64, out: &mut [f64]) {
        x.dot_block(i, v, out, |vj| vj);
        out.iter_mut().for_each(|o| *o *= scale);
    }
}

/// Elastic net `(l2/2)||w||^2 + l1 ||w||_1`: `w = soft_threshold(u, l1 / l2)`.
#[derive(Debug, Clone, Copy)]
pub struct ElasticNet {
    /// `l1 / l2` (`sigma / lambda` of the papers).
    pub threshold: f64,
}

impl Reg for ElasticNet {
    #[inline(always)]
    fn link(&self, u: f64) -> f64 {
        soft_threshold(u, self.threshold)
    }
    #[inline(always)]
    fn dot<D: Rows>(&self, x: &D, i: usize, v: &[f64], scale: f64, out: &mut [f64]) {
        let t = self.threshold;
        x.dot_block(i, v, out, |vj| soft_threshold(vj * scale, t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The link map solves `argmax_w w.u - g(w)`: check against a fine grid.
    /// Found by the `fit` fuzz target: `soft_threshold(inf, inf)` was 0, so an overflowed dual
    /// sum vanished from the dual objective and the Lasso certified a gap of 0.05 on a
    /// `1e299` objective.
    #[test]
    fn soft_threshold_keeps_overflow_visible() {
        assert!(soft_threshold(f64::INFINITY, f64::INFINITY).is_nan());
        assert!(soft_threshold(f64::NAN, 1.0).is_nan());
        assert_eq!(soft_threshold(-f64::INFINITY, f64::INFINITY), -f64::INFINITY);
        assert_eq!(soft_threshold(1e300, f64::INFINITY), 0.0);
        assert_eq!((soft_threshold(-0.5, 1.0), soft_threshold(3.0, 1.0)), (0.0, 2.0));
    }

    #[test]
    fn link_is_conjugate_gradient() {
        let reg = ElasticNet { threshold: 0.3 };
        for k in -30..=30 {
            let u = k as f64 / 10.0;
            let g = |w: f64| 0.5 * w * w + 0.3 * w.abs();
            let best = (-40_000..=40_000)
                .map(|j| j as f64 / 10_000.0)
                .max_by(|a, b| (a * u - g(*a)).total_cmp(&(b * u - g(*b))))
                .unwrap();
            assert!((reg.link(u) - best).abs() < 2e-4, "u {u}: {} vs {best}", reg.link(u));
            // Fenchel-Young equality at the link: g(w) + g*(u) = w u.
            let w = reg.link(u);
            assert!((g(w) + reg.conj(u) - w * u).abs() < 1e-12, "u {u}");
        }
    }

    /// The shifted link `link(u + z)` solves `argmax_w w.u - (g(w) - z w)`, the inner
    /// regularizer of the accelerated solver.
    #[test]
    fn shifted_link_is_shifted_conjugate_gradient() {
        let reg = ElasticNet { threshold: 0.25 };
        for z in [-1.3, -0.1, 0.0, 0.2, 0.9] {
            for k in -20..=20 {
                let u = k as f64 / 8.0;
                let obj = |w: f64| w * u - (0.5 * w * w + 0.25 * w.abs() - z * w);
                let best = crate::loss::testing::argmax(obj, -10.0, 10.0);
                assert!((reg.link(u + z) - best).abs() < 1e-7, "u {u} z {z}");
                // g~*(u) = g*(u + z).
                assert!((obj(reg.link(u + z)) - reg.conj(u + z)).abs() < 1e-12, "u {u} z {z}");
            }
        }
        assert_eq!(L2.link(0.7 + 0.2), 0.7 + 0.2);
    }
}
