//! Regularizers: their link maps `w = grad g*(v)` (SDCA) and prox maps ([`ProxPenalty`], Pdprox).
//!
//! The solvers keep the dual sum `u = (1/(l2 n)) sum_i s_i alpha_i x_i` (stored unscaled as
//! `v = l2 n u`) and derive `w` from it coordinate by coordinate, so sparse rows stay
//! O(nnz) per step: with `g(w) = ||w||^2/2 + (l1/l2) ||w||_1` (elastic net, Shalev-Shwartz & Zhang 2012
//! eq. 7) the link is soft-thresholding, with pure L2 it is the identity. For both,
//! `g*(u) = ||link(u)||^2 / 2` ([`Reg::conj`]).
//!
//! # Shifted regularizer
//!
//! The inner problems of the accelerated solver (Shalev-Shwartz & Zhang 2014 Figure 2,
//! Shalev-Shwartz & Zhang 2014) use `g~(w) = g(w) - z . w` with a fixed
//! shift `z`. Its conjugate is `g~*(u) = g*(u + z)` and its link is `w = link(u + z)`: the same
//! scalar map applied to the shifted dual sum. The solvers therefore store `v + z l2 n` (the
//! shift in unscaled units) in place of `v`; a coordinate step adds `s_i delta x_i` to it as
//! before and the row kernels ([`Reg::dot`]) need no change. Because `z` is constant within an
//! inner solve, a step touches only `supp(x_i)`; moving the shift costs O(d) once per outer
//! iteration.

use crate::config::{GroupNorm, Groups};
use crate::data::Rows;

/// Soft-thresholding `sign(x) max(|x| - t, 0)`: the prox map of `t |.|`. A non-finite `x`
/// stays non-finite: an overflowed dual sum against an overflowed threshold (`l1 / l2` at a
/// tiny `l2`) is undefined, not a zero weight.
#[inline(always)]
pub fn soft_threshold(x: f64, t: f64) -> f64 {
    // A select instead of jumps on the sign, with the same bits: `|x| - t` with `x`'s sign is
    // `x - t` for `x > t` and `-(-x - t) = x + t` for `x < -t` (rounding is symmetric). `a` is
    // NaN only for a NaN `x` or an infinite `x` against an infinite `t`.
    let a = x.abs() - t;
    let shrunk = if a > 0.0 { a.copysign(x) } else { 0.0 };
    if a.is_nan() {
        x - t
    } else {
        shrunk
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

/// `v <- Proj_{||.||_1 <= z}(v)`, the Euclidean projection on the L1 ball of radius `z >= 0`
/// (Duchi et al. 2008; Yang et al. 2015). `scratch` holds the sorted
/// magnitudes, so a caller running it every pass allocates nothing.
pub fn project_l1_ball(v: &mut [f64], z: f64, scratch: &mut Vec<f64>) {
    if v.iter().map(|x| x.abs()).sum::<f64>() <= z {
        return;
    }
    scratch.clear();
    scratch.extend(v.iter().map(|x| x.abs()));
    scratch.sort_unstable_by(|a, b| b.total_cmp(a));
    // theta = (sum of the rho largest - z) / rho for the largest rho with u_rho > that value.
    let (mut sum, mut theta) = (0.0, 0.0);
    for (j, &u) in scratch.iter().enumerate() {
        sum += u;
        let t = (sum - z) / (j + 1) as f64;
        if u > t {
            theta = t;
        }
    }
    v.iter_mut().for_each(|x| *x = soft_threshold(*x, theta));
}

/// The regularizer of the Pdprox solver, `R(w) = (l2/2)||w||^2 + l1 h(w)`, seen through its
/// prox map, its conjugate and the dual norm of `h` (Yang et al. 2015 and
/// 3.4). `h` is `||w||_1`, the group lasso `sum_g sqrt(d_g) ||w_g||_2` or the L1-inf norm
/// `sum_g ||w_g||_inf` ([`crate::config::GroupNorm`]). It acts on the `d` feature weights
/// only: the intercept is not penalised.
///
/// Every map reduces to the prox of the norm `t h` (soft-thresholding, group shrinkage, or
/// `v - Proj_{t B_1}(v)` by Moreau's identity for the L-inf norm), because `h` is positively
/// homogeneous: `prox_{s R}(v) = prox_{s l1 h}(v) / (1 + s l2)`, and for `l2 > 0`,
/// `R*(u) = dist(u, l1 B_*)^2 / (2 l2) = ||prox_{l1 h}(u)||^2 / (2 l2)` (`B_*` the unit ball of
/// the dual norm). For `l2 = 0`, `R*` is the indicator of `||u||_* <= l1`.
#[derive(Debug, Clone)]
pub struct ProxPenalty {
    /// L2 strength (`lambda` of the papers), `>= 0`.
    pub l2: f64,
    /// Weight of `h`, `>= 0`.
    pub l1: f64,
    /// `None`: `h = ||.||_1`. Otherwise the features of each group, contiguous.
    groups: Option<GroupIndex>,
}

/// Work buffers of [`ProxPenalty`]'s maps, kept by the caller across passes so the maps
/// allocate nothing.
#[derive(Debug, Clone, Default)]
pub struct ProxScratch {
    group: Vec<f64>,
    proj: Vec<f64>,
    sorted: Vec<f64>,
}

/// Group members laid out contiguously (`members[starts[g]..starts[g + 1]]`).
#[derive(Debug, Clone)]
struct GroupIndex {
    members: Vec<usize>,
    starts: Vec<usize>,
    norm: GroupNorm,
}

impl ProxPenalty {
    /// The penalty on `d` features; `groups.of` must have length `d` (checked by the caller).
    pub fn new(l2: f64, l1: f64, groups: Option<&Groups>) -> Self {
        let groups = groups.map(|g| {
            let mut starts = vec![0usize; g.n_groups + 1];
            g.of.iter().for_each(|&k| starts[k + 1] += 1);
            for k in 0..g.n_groups {
                starts[k + 1] += starts[k];
            }
            let mut fill = starts.clone();
            let mut members = vec![0usize; g.of.len()];
            for (j, &k) in g.of.iter().enumerate() {
                members[fill[k]] = j;
                fill[k] += 1;
            }
            GroupIndex { members, starts, norm: g.norm }
        });
        Self { l2, l1, groups }
    }

    /// Calls `f(weight, values)` on each group of `v` gathered into `buf` (one group for each
    /// feature under plain L1, with weight 1), writing `values` back to `v` afterwards.
    fn each_group(&self, v: &mut [f64], buf: &mut Vec<f64>, mut f: impl FnMut(f64, &mut Vec<f64>)) {
        let Some(g) = &self.groups else {
            for x in v.iter_mut() {
                buf.clear();
                buf.push(*x);
                f(1.0, buf);
                *x = buf[0];
            }
            return;
        };
        for k in 0..g.starts.len() - 1 {
            let idx = &g.members[g.starts[k]..g.starts[k + 1]];
            buf.clear();
            buf.extend(idx.iter().map(|&j| v[j]));
            let weight = match g.norm {
                GroupNorm::L2 => (idx.len() as f64).sqrt(),
                GroupNorm::Linf => 1.0,
            };
            f(weight, buf);
            idx.iter().zip(buf.iter()).for_each(|(&j, &x)| v[j] = x);
        }
    }

    /// Same traversal, read only: `sum_g f(weight, v_g)`.
    fn sum_groups(&self, v: &[f64], f: impl Fn(f64, &[f64]) -> f64) -> Vec<f64> {
        match &self.groups {
            None => v.iter().map(|x| f(1.0, std::slice::from_ref(x))).collect(),
            Some(g) => (0..g.starts.len() - 1)
                .map(|k| {
                    let idx = &g.members[g.starts[k]..g.starts[k + 1]];
                    let vals: Vec<f64> = idx.iter().map(|&j| v[j]).collect();
                    let weight = match g.norm {
                        GroupNorm::L2 => (idx.len() as f64).sqrt(),
                        GroupNorm::Linf => 1.0,
                    };
                    f(weight, &vals)
                })
                .collect(),
        }
    }

    fn norm(&self) -> GroupNorm {
        self.groups.as_ref().map_or(GroupNorm::L2, |g| g.norm)
    }

    /// `R(w) = (l2/2)||w||^2 + l1 h(w)`.
    pub fn value(&self, w: &[f64]) -> f64 {
        let linf = self.norm() == GroupNorm::Linf;
        let h: f64 = self
            .sum_groups(w, |weight, g| {
                if linf {
                    g.iter().fold(0.0f64, |m, x| m.max(x.abs()))
                } else {
                    weight * g.iter().map(|x| x * x).sum::<f64>().sqrt()
                }
            })
            .iter()
            .sum();
        0.5 * self.l2 * w.iter().map(|x| x * x).sum::<f64>() + self.l1 * h
    }

    /// The dual norm of `h` at `u`: `max_j |u_j|`, `max_g ||u_g||_2 / sqrt(d_g)` or
    /// `max_g ||u_g||_1`.
    pub fn dual_norm(&self, u: &[f64]) -> f64 {
        let linf = self.norm() == GroupNorm::Linf;
        self.sum_groups(u, |weight, g| {
            if linf {
                g.iter().map(|x| x.abs()).sum::<f64>()
            } else {
                g.iter().map(|x| x * x).sum::<f64>().sqrt() / weight
            }
        })
        .into_iter()
        .fold(0.0f64, f64::max)
    }

    /// `v <- prox_{t h}(v)`, the prox of the norm part alone.
    fn prox_norm(&self, v: &mut [f64], t: f64, scratch: &mut ProxScratch) {
        let ProxScratch { group, proj, sorted } = scratch;
        match self.norm() {
            GroupNorm::L2 => self.each_group(v, group, |weight, g| {
                let norm = g.iter().map(|x| x * x).sum::<f64>().sqrt();
                let keep = if norm > t * weight { 1.0 - t * weight / norm } else { 0.0 };
                g.iter_mut().for_each(|x| *x *= keep);
            }),
            // Moreau: prox_{t ||.||_inf}(v) = v - Proj_{||.||_1 <= t}(v).
            GroupNorm::Linf => self.each_group(v, group, |_, g| {
                proj.clear();
                proj.extend_from_slice(g);
                project_l1_ball(proj, t, sorted);
                g.iter_mut().zip(proj.iter()).for_each(|(x, pj)| *x -= pj);
            }),
        }
    }

    /// `v <- argmin_w ||w - v||^2 / 2 + s R(w)`, `s > 0` (the primal step of Pdprox).
    pub fn prox(&self, v: &mut [f64], s: f64, scratch: &mut ProxScratch) {
        if self.l1 > 0.0 {
            self.prox_norm(v, s * self.l1, scratch);
        }
        if self.l2 > 0.0 {
            let shrink = 1.0 / (1.0 + s * self.l2);
            v.iter_mut().for_each(|x| *x *= shrink);
        }
    }

    /// The conjugate `R*(u) = sup_w u . w - R(w)`: `||prox_{l1 h}(u)||^2 / (2 l2)` for `l2 > 0`;
    /// for `l2 = 0`, `0` when `||u||_* <= l1` and `+inf` otherwise.
    pub fn conj(&self, u: &[f64], scratch: &mut ProxScratch) -> f64 {
        if self.l2 == 0.0 {
            return if self.dual_norm(u) <= self.l1 { 0.0 } else { f64::INFINITY };
        }
        let mut p = u.to_vec();
        self.prox_norm(&mut p, self.l1, scratch);
        p.iter().map(|x| x * x).sum::<f64>() / (2.0 * self.l2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The link map solves `argmax_w w.u - g(w)`: check against a fine grid.
    /// Found by the `fit` fuzz target: `soft_threshold(inf, inf)` was 0, so an overflowed dual
    /// sum vanished from the dual objective and the Lasso certified a gap of 0.05 on a
    /// `1e299` objective.
    /// `argmin_w ||w - v||^2 / 2 + s R(w)` on a 2-D grid refined around its best point.
    fn brute_prox(pen: &ProxPenalty, v: &[f64; 2], s: f64) -> [f64; 2] {
        let obj = |w: &[f64; 2]| 0.5 * ((w[0] - v[0]).powi(2) + (w[1] - v[1]).powi(2)) + s * pen.value(w);
        let (mut best, mut step) = ([0.0, 0.0], 0.05);
        let mut center = [0.0, 0.0];
        for round in 0..8 {
            let half = if round == 0 { 80 } else { 20 };
            for a in -half..=half {
                for b in -half..=half {
                    let w = [center[0] + a as f64 * step, center[1] + b as f64 * step];
                    if obj(&w) < obj(&best) {
                        best = w;
                    }
                }
            }
            center = best;
            step /= 8.0;
        }
        best
    }

    fn penalties() -> Vec<ProxPenalty> {
        let pair = |norm| Groups { of: vec![0, 0], n_groups: 1, norm };
        let split = Groups { of: vec![0, 1], n_groups: 2, norm: GroupNorm::L2 };
        vec![
            ProxPenalty::new(0.0, 0.7, None),
            ProxPenalty::new(0.5, 0.7, None),
            ProxPenalty::new(0.0, 0.7, Some(&pair(GroupNorm::L2))),
            ProxPenalty::new(0.3, 0.7, Some(&pair(GroupNorm::L2))),
            ProxPenalty::new(0.0, 0.7, Some(&pair(GroupNorm::Linf))),
            ProxPenalty::new(0.3, 0.7, Some(&pair(GroupNorm::Linf))),
            ProxPenalty::new(0.0, 0.7, Some(&split)),
            ProxPenalty::new(0.8, 0.0, None),
        ]
    }

    #[test]
    fn prox_maps_match_brute_force() {
        let mut scratch = ProxScratch::default();
        for (p, pen) in penalties().iter().enumerate() {
            for v in [[1.3, -0.4], [0.2, 0.1], [-2.0, 1.9], [0.9, 0.0], [-0.3, 3.1]] {
                for s in [0.3, 1.0, 2.5] {
                    let mut got = v.to_vec();
                    pen.prox(&mut got, s, &mut scratch);
                    let want = brute_prox(pen, &v, s);
                    let err = (got[0] - want[0]).abs().max((got[1] - want[1]).abs());
                    assert!(err < 1e-6, "penalty {p}, v {v:?}, s {s}: {got:?} vs {want:?}");
                }
            }
        }
    }

    /// Fenchel-Young for `R` and `R*`, equality at `w = grad R*(u)`, and `R*(u)` against the
    /// supremum over a grid; the dual norm is the tightest `|u . w| <= ||u||_* h(w)`.
    #[test]
    fn conjugates_and_dual_norms_are_consistent() {
        let mut scratch = ProxScratch::default();
        for (p, pen) in penalties().iter().enumerate() {
            for u in [[0.3, -0.2], [1.5, 0.4], [-0.6, 0.65], [2.0, -3.0]] {
                let conj = pen.conj(&u, &mut scratch);
                let grid_sup = (-300..=300)
                    .flat_map(|a| (-300..=300).map(move |b| [a as f64 / 50.0, b as f64 / 50.0]))
                    .map(|w| u[0] * w[0] + u[1] * w[1] - pen.value(&w))
                    .fold(f64::NEG_INFINITY, f64::max);
                if conj.is_finite() {
                    assert!(grid_sup <= conj + 1e-9, "penalty {p}, u {u:?}: sup {grid_sup} > R* {conj}");
                    // Equality at the maximiser w = grad R*(u) = prox_{l1 h}(u) / l2 (w = 0 for
                    // l2 = 0, where R* is an indicator).
                    let mut w = if pen.l2 > 0.0 { u.to_vec() } else { vec![0.0; 2] };
                    pen.prox_norm(&mut w, pen.l1, &mut scratch);
                    if pen.l2 > 0.0 {
                        w.iter_mut().for_each(|x| *x /= pen.l2);
                    }
                    let at = u[0] * w[0] + u[1] * w[1] - pen.value(&w);
                    assert!(
                        (at - conj).abs() <= 1e-12 * (1.0 + conj),
                        "penalty {p}, u {u:?}: {at} vs {conj}"
                    );
                } else {
                    // Unbounded: the grid supremum grows with the grid.
                    assert!(pen.l2 == 0.0 && pen.dual_norm(&u) > pen.l1 && grid_sup > 0.1, "penalty {p}");
                }
                if pen.l1 > 0.0 {
                    let h = |w: &[f64]| (pen.value(w) - 0.5 * pen.l2 * (w[0] * w[0] + w[1] * w[1])) / pen.l1;
                    let dn = pen.dual_norm(&u);
                    let best = (0..720)
                        .map(|k| {
                            let t = k as f64 * std::f64::consts::PI / 360.0;
                            let w = [t.cos(), t.sin()];
                            (u[0] * w[0] + u[1] * w[1]) / h(&w)
                        })
                        .fold(0.0f64, f64::max);
                    assert!(
                        best <= dn * (1.0 + 1e-12) && best >= dn * (1.0 - 1e-3),
                        "penalty {p}: {best} vs {dn}"
                    );
                }
            }
        }
    }

    #[test]
    fn l1_ball_projection_is_the_closest_point() {
        let mut sorted = Vec::new();
        let v = [0.8, -1.5, 0.1, 2.2];
        let mut p = v.to_vec();
        project_l1_ball(&mut p, 2.0, &mut sorted);
        assert!((p.iter().map(|x| x.abs()).sum::<f64>() - 2.0).abs() < 1e-12);
        // Optimality: v - p = theta sign(p) on the support and |v_j| <= theta off it.
        let theta = (v[3] - p[3]).abs();
        for (a, b) in v.iter().zip(&p) {
            if *b != 0.0 {
                assert!(((a - b) - theta * b.signum()).abs() < 1e-12);
            } else {
                assert!(a.abs() <= theta + 1e-12);
            }
        }
        let mut inside = vec![0.1, -0.2];
        project_l1_ball(&mut inside, 1.0, &mut sorted);
        assert_eq!(inside, vec![0.1, -0.2]);
    }

    #[test]
    fn soft_threshold_keeps_overflow_visible() {
        assert!(soft_threshold(f64::INFINITY, f64::INFINITY).is_nan());
        assert!(soft_threshold(f64::NAN, 1.0).is_nan());
        assert_eq!(soft_threshold(-f64::INFINITY, f64::INFINITY), -f64::INFINITY);
        assert_eq!(soft_threshold(1e300, f64::INFINITY), 0.0);
        assert_eq!((soft_threshold(-0.5, 1.0), soft_threshold(3.0, 1.0)), (0.0, 2.0));
    }

    /// The select gives the bits of the textbook branches (`x - t`, `x + t`, `+0`, the
    /// non-finite `x - t`), signed zeros, subnormals, ties and overflow included.
    #[test]
    fn soft_threshold_has_the_bits_of_the_branches() {
        let branches = |x: f64, t: f64| {
            if x > t {
                x - t
            } else if x < -t {
                x + t
            } else if x.is_finite() {
                0.0
            } else {
                x - t
            }
        };
        let mut values = vec![0.0, -0.0, 5e-324, -5e-324, 1.0, -1.0, 0.3, -0.3, 0.1 + 0.2, 1e308, -1e308];
        values.extend([f64::MAX, f64::MIN, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f64::EPSILON]);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let v = f64::from_bits(state);
            if v.is_finite() {
                values.push(v);
                values.push(v * 1e-300);
            }
        }
        let thresholds = [0.0, 5e-324, 0.3, 1.0, 1e300, f64::INFINITY, 0.1 + 0.2];
        for &x in &values {
            for t in thresholds.into_iter().chain([x.abs(), x.abs() * 0.5]).filter(|t| *t >= 0.0) {
                let (got, want) = (soft_threshold(x, t), branches(x, t));
                assert!(
                    got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                    "{x:e} {t:e}: {got:e} vs {want:e}"
                );
            }
        }
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
