//! Multiclass losses on a score vector `a = W^T x in R^k`: Crammer-Singer (optionally smoothed)
//! and multinomial (softmax cross-entropy).
//!
//! Labels are class indices `y in {0, ..., k-1}` (stored as `f64` like every label). The dual
//! variable of a row is a k-vector `alpha` with `W = (1/(l2 n)) sum_i s_i x_i alpha_i^T`
//! (DESIGN.md section 3), so each block step moves the k columns of `W` along `x_i` and the
//! solvers run these losses through the same pass as the scalar ones ([`super::BlockLoss`]).
//!
//! **Crammer-Singer** `phi(a, y) = max_j (delta(j, y) + a_j - a_y)`, `delta(j, y) = [j != y]`.
//! Its dual domain (Shalev-Shwartz & Zhang 2012, with the corrected sign) is
//! `-alpha = sum_{j != y} beta_j (e_j - e_y)` with `beta >= 0`, `sum beta <= 1`: `alpha_j =
//! -beta_j` off the label and `alpha_y = ||beta||_1` (the bookkeeping value of
//! Shalev-Shwartz & Zhang 2014, here exact). `phi*(-alpha) = -alpha_y`.
//! The smoothed variant (`smoothing = gamma > 0`, Lemma 2 of Shalev-Shwartz & Zhang 2014) adds
//! `(gamma/2) ||beta||^2` to the conjugate, making `phi` `(1/gamma)`-smooth.
//!
//! The exact block step (section 2.7 of the accelerated note, problem (22)): with the scores
//! `s^ = a - q alpha_old` of the model without row `i`, `mu_j = (1 + s^_j - s^_y) / (gamma + q)`
//! and `C = q / (gamma + q)`, the new `beta` minimises `||beta - mu||^2 + C ||beta||_1^2` over
//! `beta >= 0`, `||beta||_1 <= 1`. The paper sorts; we use the equivalent threshold form
//! `beta = max(mu - tau, 0)`: stationarity in `z = ||beta||_1` gives `tau = C z`, a monotone
//! 1-D equation solved exactly by support iteration (`threshold`), and when its `z` exceeds 1
//! the cap is active and `tau` is the simplex projection's threshold. This avoids the printed
//! `OptimizeDual`'s off-by-one (the note's erratum) and any scratch buffer.
//!
//! **Multinomial** `phi(a, y) = log sum_j exp(a_j) - a_y`. Its dual domain is `alpha = e_y - p`
//! with `p` in the probability simplex and `phi*(-alpha) = sum_j p_j ln p_j`. The block step
//! maximises `-sum p ln p + p . s^ - (q/2) ||e_y - p||^2` over the simplex: stationarity gives
//! `ln p_j + q p_j = b_j - nu` with `b_j = s^_j + q [j = y]`, each `p_j(nu)` found by Newton in
//! `ln p_j` from a start where the convex residual is nonnegative (monotone convergence), and
//! the multiplier `nu` by safeguarded Newton on `sum_j p_j(nu) = 1` inside the bracket
//! `[lse(b) - q, lse(b)]` (at `q = 0` the root is `lse(b)`; each `p_j <= 1` bounds the other
//! side). The loss is `1/2`-smooth in the score vector (the softmax Hessian's largest eigenvalue is
//! at most `1/2`), so `gamma = 2`. On Fashion-MNIST (60,000 x 784, 10 classes, `l2 = 1e-4`, no
//! intercept, one thread) `solver="auto"` (accelerated SDCA with this step) reached
//! `(P - P*) / P* <= 1e-6` in 24 CPU seconds (`tol = 3e-6`, the `multiclass` example, one run
//! on a loaded machine) against 165 s for lbfgs (`tol = 1e-6`, `benchmarks/multiclass_goals.py`).

use super::BlockLoss;
use crate::math::{dot, log_sum_exp, xlogx};

/// Largest `tau >= 0` with `tau = c sum_j max(u_j - tau, 0)` (`cap = None`), or with
/// `sum_j max(u_j - tau, 0) = cap` (`cap = Some(z)`, `sum_j max(u_j, 0) > z`), over the `k`
/// entries `u(j)` but the label slot `skip`. Support iteration: start from the positive entries;
/// each round's `tau` is at most the root and only drops entries below it, so it stops after at
/// most `k` rounds. The rounds select without branches: whether an entry is above `tau` is
/// unpredictable, and the mispredictions cost more than the sums (on letter recognition, 26
/// classes, the branching form took a third of a Crammer-Singer fit); adding `0.0` for the
/// entries left out keeps the sums bit for bit.
fn threshold(k: usize, skip: usize, u: impl Fn(usize) -> f64, c: f64, cap: Option<f64>) -> f64 {
    let mut tau = 0.0f64;
    for _ in 0..=k {
        let (mut sum, mut count) = (0.0, 0.0f64);
        for j in 0..k {
            let v = u(j);
            let take = (v > tau) & (j != skip);
            sum += if take { v } else { 0.0 };
            count += if take { 1.0 } else { 0.0 };
        }
        if count == 0.0 {
            return tau;
        }
        let next = match cap {
            None => c * sum / (1.0 + c * count),
            Some(z) => (sum - z) / count,
        };
        if next <= tau {
            return tau;
        }
        tau = next;
    }
    tau
}

/// `sum_{j != skip} max(u_j - tau, 0)`.
fn mass(k: usize, skip: usize, u: impl Fn(usize) -> f64, tau: f64) -> f64 {
    (0..k).filter(|&j| j != skip).map(|j| (u(j) - tau).max(0.0)).sum()
}

/// The threshold of the Euclidean projection of `u` (label slot excluded) onto
/// `S = {beta >= 0, ||beta||_1 <= 1}`: `beta = max(u - tau, 0)`.
fn project_threshold(k: usize, skip: usize, u: impl Fn(usize) -> f64 + Copy) -> f64 {
    if mass(k, skip, u, 0.0) <= 1.0 {
        0.0
    } else {
        threshold(k, skip, u, 0.0, Some(1.0))
    }
}

/// The label as a class index (labels are validated by `Problem::new`).
#[inline]
fn class(y: f64) -> usize {
    y as usize
}

/// Crammer-Singer multiclass hinge, smoothed when `smoothing > 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MulticlassHinge {
    /// Number of classes `k >= 2`.
    pub k: usize,
    /// `gamma >= 0`: `0` is the plain Crammer-Singer loss.
    pub smoothing: f64,
}

impl MulticlassHinge {
    /// The user-facing name of the plain loss.
    pub const NAME: &'static str = "multiclass_hinge";
    /// The user-facing name of the smoothed loss.
    pub const SMOOTH_NAME: &'static str = "multiclass_smooth_hinge";

    /// `u_j = (1 + a_j - a_y) / gamma` off the label (`gamma > 0`), written into `out`.
    fn scaled_margins(&self, a: &[f64], y: usize, out: &mut [f64]) {
        for (j, o) in out.iter_mut().enumerate() {
            *o = if j == y { 0.0 } else { (1.0 + a[j] - a[y]) / self.smoothing };
        }
    }
}

impl BlockLoss for MulticlassHinge {
    const CLASSIFICATION: bool = true;

    fn name(&self) -> &'static str {
        if self.smoothing > 0.0 {
            Self::SMOOTH_NAME
        } else {
            Self::NAME
        }
    }

    #[inline]
    fn k(&self) -> usize {
        self.k
    }

    fn value(&self, a: &[f64], y: f64) -> f64 {
        let y = class(y);
        let margin = |j: usize| 1.0 + a[j] - a[y];
        if self.smoothing == 0.0 {
            return (0..self.k).filter(|&j| j != y).map(margin).fold(0.0, f64::max);
        }
        // max_{beta in S} beta . (gamma u) - (gamma/2) ||beta||^2, attained at beta = Proj_S(u).
        let g = self.smoothing;
        let u = |j: usize| margin(j) / g;
        let tau = project_threshold(self.k, y, u);
        (0..self.k)
            .filter(|&j| j != y)
            .map(|j| {
                let b = (u(j) - tau).max(0.0);
                g * (b * u(j) - 0.5 * b * b)
            })
            .sum()
    }

    fn conj_neg(&self, alpha: &[f64], y: f64) -> f64 {
        let y = class(y);
        let (mut total, mut sq) = (0.0, 0.0);
        for (j, &al) in alpha.iter().enumerate() {
            if j != y {
                let beta = -al;
                if beta < -1e-12 {
                    return f64::INFINITY;
                }
                total += beta;
                sq += beta * beta;
            }
        }
        if total > 1.0 + 1e-9 || (alpha[y] - total).abs() > 1e-9 {
            return f64::INFINITY;
        }
        -total + 0.5 * self.smoothing * sq
    }

    /// The threshold `tau` from the sorted positive `mu` (the support-iteration form's root,
    /// `threshold`, found in one scan): the positives are packed at the front of `out` (most
    /// rows near the optimum have none or a few), sorted, and the support is the longest prefix
    /// `r` with `mu_(r) > tau_r`, `tau_r = C S_r / (1 + C r)` uncapped and `(S_r - 1) / r` when
    /// the uncapped sum `S_r - r tau_r` exceeds the cap. `mu` is then recomputed for the
    /// output. On letter recognition (26 classes) the support iteration's unpredictable
    /// comparisons took half of a fit's time.
    fn dual_step(&self, alpha: &[f64], a: &[f64], y: f64, q: f64, out: &mut [f64]) {
        let y = class(y);
        let denom = self.smoothing + q;
        // s^ = a - q alpha_old; mu_j = (1 + s^_j - s^_y) / (gamma + q).
        let base = a[y] - q * alpha[y];
        let mu = |j: usize| (1.0 + (a[j] - q * alpha[j]) - base) / denom;
        let mut m = 0;
        for j in 0..self.k {
            let v = mu(j);
            // Branch-free packing: the slot is overwritten unless `v` counts.
            out[m] = v;
            m += usize::from((v > 0.0) & (j != y));
        }
        if m == 0 {
            out.iter_mut().for_each(|o| *o = 0.0);
            return;
        }
        let top = &mut out[..m];
        top.sort_unstable_by(|u, v| v.total_cmp(u));
        let c = q / denom;
        // The longest prefix `r` whose smallest entry lies above `tau_r`: its sum, `r`, `tau_r`.
        let root = |tau_at: &dyn Fn(f64, f64) -> f64| {
            let (mut sum, mut support, mut tau) = (0.0, 0.0, 0.0);
            for &v in top.iter() {
                let t = tau_at(sum + v, support + 1.0);
                if v <= t {
                    break;
                }
                (sum, support, tau) = (sum + v, support + 1.0, t);
            }
            (sum, support, tau)
        };
        let (sum, support, mut tau) = root(&|s, r| c * s / (1.0 + c * r));
        if sum - support * tau > 1.0 {
            tau = root(&|s, r| (s - 1.0) / r).2;
        }
        let mut total = 0.0;
        for (j, o) in out.iter_mut().enumerate() {
            let beta = if j == y { 0.0 } else { (mu(j) - tau).max(0.0) };
            total += beta;
            *o = -beta;
        }
        if total > 1.0 {
            // Rounding: scale back onto the cap.
            out.iter_mut().for_each(|o| *o /= total);
            total = 1.0;
        }
        out[y] = total;
    }

    fn dual_of(&self, a: &[f64], y: f64, out: &mut [f64]) {
        let yi = class(y);
        if self.smoothing > 0.0 {
            self.scaled_margins(a, yi, out);
            let tau = project_threshold(self.k, yi, |j| out[j]);
            let mut total = 0.0;
            for (j, o) in out.iter_mut().enumerate() {
                if j != yi {
                    let beta = (*o - tau).max(0.0);
                    total += beta;
                    *o = -beta;
                }
            }
            out[yi] = total;
            return;
        }
        out.iter_mut().for_each(|o| *o = 0.0);
        let worst = (0..self.k).filter(|&j| j != yi).max_by(|&i, &j| a[i].total_cmp(&a[j]));
        if let Some(j) = worst {
            if 1.0 + a[j] - a[yi] > 0.0 {
                out[j] = -1.0;
                out[yi] = 1.0;
            }
        }
    }

    fn smoothness(&self) -> f64 {
        self.smoothing
    }

    /// liblinear's `G_m = a_m + delta(m, y)` (its `w_m . x_i + e_i^m`, our duals being its own
    /// divided by `C`): `alpha_m = -beta_m` is off its bound when `beta_m > 0`, and `alpha_y =
    /// ||beta||_1` when below 1 (the cap; a sum within `1e-12` of it counts as on it, as the
    /// capped step's sum is 1 only up to rounding).
    fn vertex_slack(&self, alpha: &[f64], a: &[f64], y: f64) -> Option<f64> {
        if self.smoothing > 0.0 {
            return None;
        }
        let yi = class(y);
        // Without branches: which classes are off their bound is unpredictable.
        let (mut free, mut count) = (0, 0);
        for (m, &al) in alpha.iter().enumerate() {
            let off_bound = if m == yi { al < 1.0 - 1e-12 } else { al < 0.0 };
            free = if off_bound { m } else { free };
            count += usize::from(off_bound);
        }
        if count != 1 {
            return Some(f64::NEG_INFINITY);
        }
        let grad = |m: usize| if m == yi { a[m] } else { a[m] + 1.0 };
        let mut others = f64::NEG_INFINITY;
        for m in 0..self.k {
            let g = if m == free { f64::NEG_INFINITY } else { grad(m) };
            others = if g > others { g } else { others };
        }
        Some(grad(free) - others)
    }
}

/// Multinomial logistic regression (softmax cross-entropy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Multinomial {
    /// Number of classes `k >= 2`.
    pub k: usize,
}

impl Multinomial {
    /// The user-facing name.
    pub const NAME: &'static str = "multinomial";

    /// A row's terms at the scores `a` for the primal solver (`crate::solver::newton_cg`), in
    /// one softmax: writes the matched dual `alpha = e_y - p`, `p = softmax(a)`, into `alpha`
    /// and returns `phi(a)` and the row's Fenchel-Young gap `phi(a) + phi*(-alpha) + alpha . a`
    /// (zero up to rounding). The entropy `sum_j p_j ln p_j` takes `ln p_j = a_j - lse(a)`,
    /// which costs no logarithm: `k` exponentials and one `ln` per row instead of
    /// [`BlockLoss::dual_of`], [`BlockLoss::value`] and [`BlockLoss::conj_neg`]'s `3k + 2`
    /// transcendental calls.
    #[inline]
    pub(crate) fn matched(&self, a: &[f64], y: f64, alpha: &mut [f64]) -> (f64, f64) {
        let yi = class(y);
        let m = a.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        let mut total = 0.0;
        for (e, &aj) in alpha.iter_mut().zip(a) {
            *e = (aj - m).exp();
            total += *e;
        }
        let lse = m + total.ln();
        let value = (lse - a[yi]).max(0.0);
        let (mut entropy, mut dot) = (0.0, 0.0);
        for (j, (al, &aj)) in alpha.iter_mut().zip(a).enumerate() {
            let p = *al / total;
            entropy += p * (aj - lse);
            *al = if j == yi { 1.0 - p } else { -p };
            dot += *al * aj;
        }
        (value, value + entropy + dot)
    }

    /// `u <- s (diag(p) - p p^T) u`: the softmax Hessian (the curvature of `phi` in the scores)
    /// at the probabilities `p = e_y - alpha` of the dual block `alpha`, scaled by the row
    /// weight `s`. Without branches on the label in the loops (`p_j = -alpha_j`, then the
    /// label's term), so that they vectorise.
    #[inline]
    pub(crate) fn curvature_times(&self, alpha: &[f64], y: f64, s: f64, u: &mut [f64]) {
        let yi = class(y);
        let uy = u[yi];
        let mean = uy - dot(alpha, u);
        for (uj, &al) in u.iter_mut().zip(alpha) {
            *uj = -s * al * (*uj - mean);
        }
        u[yi] += s * (uy - mean);
    }

    /// The diagonal of [`Multinomial::curvature_times`]'s matrix: `out_j = s p_j (1 - p_j)`.
    #[inline]
    pub(crate) fn curvature_diagonal(&self, alpha: &[f64], y: f64, s: f64, out: &mut [f64]) {
        let yi = class(y);
        for (j, (o, &al)) in out.iter_mut().zip(alpha).enumerate() {
            let p = if j == yi { 1.0 - al } else { -al };
            *o = s * p * (1.0 - p);
        }
    }
}

/// `p` with `ln p + q p = t`: Newton in `u = ln p` on the convex increasing
/// `f(u) = u + q e^u - t`, from `u0 = min(t, ln(t / q))` (or `t` when `t <= 0`) where `f >= 0`,
/// so the iterates decrease monotonically to the root.
fn solve_lnp(t: f64, q: f64) -> f64 {
    let mut u = if t > 0.0 && q > 0.0 { t.min((t / q).ln()) } else { t };
    for _ in 0..100 {
        let e = q * u.exp();
        let step = (u + e - t) / (1.0 + e);
        u -= step;
        if step.abs() <= 1e-15 * (1.0 + u.abs()) {
            break;
        }
    }
    u.exp()
}

/// Iterations of [`warm_newton`] before it gives up.
const WARM_NEWTON_STEPS: usize = 12;

/// The multinomial block step by Newton on the whole stationarity system from the previous
/// block: unknowns `u_j = ln p_j` and `nu`, equations `F_j = u_j + q e^{u_j} + nu - b_j = 0` and
/// `G = sum_j e^{u_j} - 1 = 0`, started at `p = e_y - alpha` (the previous block's
/// probabilities) with `nu` their `p`-weighted mean of `b_j - u_j - q p_j`. The Jacobian is a
/// diagonal `1 + q p_j` bordered by `1` and `p`, so a step costs `k` exponentials:
/// `dnu = (G - sum p_j F_j / d_j) / sum p_j / d_j`, `du_j = -(F_j + dnu) / d_j`. Near the
/// solution (late passes, where the step moves little) it converges quadratically in two or
/// three steps instead of the nested solve's dozens of inner Newton steps per class. It gives up
/// (`false`, `out` still `b`) when a previous probability is not positive (the zero start),
/// when a step is large (`|du_j| > 4`: far from the solution, where the bracketed nested solve
/// is safe) or after [`WARM_NEWTON_STEPS`]; on success `out` holds the new block
/// `e_y - p / sum(p)`.
fn warm_newton(alpha: &[f64], yi: usize, q: f64, out: &mut [f64]) -> bool {
    const MAX_K: usize = 64;
    let k = out.len();
    if k > MAX_K {
        return false;
    }
    let mut u = [0.0f64; MAX_K];
    let mut p = [0.0f64; MAX_K];
    let (u, p) = (&mut u[..k], &mut p[..k]);
    let mut nu = 0.0;
    for j in 0..k {
        let pj = if j == yi { 1.0 - alpha[j] } else { -alpha[j] };
        if pj.is_nan() || pj <= 0.0 {
            return false;
        }
        p[j] = pj;
        u[j] = pj.ln();
        nu += pj * (out[j] - u[j] - q * pj);
    }
    for _ in 0..WARM_NEWTON_STEPS {
        let (mut g, mut num, mut den) = (-1.0, 0.0, 0.0);
        for j in 0..k {
            let f = u[j] + q * p[j] + nu - out[j];
            let dj = 1.0 + q * p[j];
            g += p[j];
            num += p[j] * f / dj;
            den += p[j] / dj;
        }
        let dnu = (g - num) / den;
        let mut big = 0.0f64;
        for j in 0..k {
            let f = u[j] + q * p[j] + nu - out[j];
            let du = -(f + dnu) / (1.0 + q * p[j]);
            big = big.max(du.abs());
            u[j] += du;
            p[j] = u[j].exp();
        }
        nu += dnu;
        if big.is_nan() || big > 4.0 {
            return false;
        }
        // Quadratic convergence: a step of 1e-9 leaves an error near 1e-18.
        if big <= 1e-9 {
            let total: f64 = p.iter().sum();
            for (j, o) in out.iter_mut().enumerate() {
                let pj = p[j] / total;
                *o = if j == yi { 1.0 - pj } else { -pj };
            }
            return true;
        }
    }
    false
}

impl BlockLoss for Multinomial {
    const CLASSIFICATION: bool = true;

    fn name(&self) -> &'static str {
        Self::NAME
    }

    #[inline]
    fn k(&self) -> usize {
        self.k
    }

    fn value(&self, a: &[f64], y: f64) -> f64 {
        (log_sum_exp(a) - a[class(y)]).max(0.0)
    }

    fn conj_neg(&self, alpha: &[f64], y: f64) -> f64 {
        let y = class(y);
        let (mut total, mut ent) = (0.0, 0.0);
        for (j, &al) in alpha.iter().enumerate() {
            let p = if j == y { 1.0 - al } else { -al };
            if p < -1e-12 {
                return f64::INFINITY;
            }
            total += p;
            ent += xlogx(p);
        }
        if (total - 1.0).abs() > 1e-9 {
            return f64::INFINITY;
        }
        ent
    }

    fn dual_step(&self, alpha: &[f64], a: &[f64], y: f64, q: f64, out: &mut [f64]) {
        let yi = class(y);
        // b_j = s^_j + q [j = y] with s^ = a - q alpha_old; kept in `out` until p overwrites it.
        for (j, o) in out.iter_mut().enumerate() {
            *o = a[j] - q * alpha[j] + if j == yi { q } else { 0.0 };
        }
        if warm_newton(alpha, yi, q, out) {
            return;
        }
        let hi = log_sum_exp(out);
        let (mut lo, mut hi) = (hi - q, hi);
        let sum_at = |nu: f64, b: &[f64]| -> (f64, f64) {
            let (mut g, mut dg) = (-1.0, 0.0);
            for &bj in b {
                let p = solve_lnp(bj - nu, q);
                g += p;
                dg -= p / (1.0 + q * p);
            }
            (g, dg)
        };
        let mut nu = hi;
        for _ in 0..100 {
            let (g, dg) = sum_at(nu, out);
            if g.abs() <= 1e-15 {
                break;
            }
            if g > 0.0 {
                lo = nu;
            } else {
                hi = nu;
            }
            let newton = nu - g / dg;
            nu = if dg < 0.0 && newton > lo && newton < hi { newton } else { 0.5 * (lo + hi) };
            if hi - lo <= 1e-15 * (1.0 + nu.abs()) {
                break;
            }
        }
        let mut total = 0.0;
        for o in out.iter_mut() {
            *o = solve_lnp(*o - nu, q);
            total += *o;
        }
        // alpha = e_y - p, with p renormalised onto the simplex against rounding.
        for (j, o) in out.iter_mut().enumerate() {
            let p = *o / total;
            *o = if j == yi { 1.0 - p } else { -p };
        }
    }

    fn dual_of(&self, a: &[f64], y: f64, out: &mut [f64]) {
        let yi = class(y);
        let lse = log_sum_exp(a);
        for (j, o) in out.iter_mut().enumerate() {
            let p = (a[j] - lse).exp();
            *o = if j == yi { 1.0 - p } else { -p };
        }
    }

    fn smoothness(&self) -> f64 {
        2.0
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::argmax;
    use super::*;

    /// Dual objective of one block step: `-phi*(-b) - (b - alpha) . a - (q/2) ||b - alpha||^2`.
    fn block_obj<L: BlockLoss>(loss: &L, b: &[f64], alpha: &[f64], a: &[f64], y: f64, q: f64) -> f64 {
        let lin: f64 = b.iter().zip(alpha).zip(a).map(|((b, al), a)| (b - al) * a).sum();
        let sq: f64 = b.iter().zip(alpha).map(|(b, al)| (b - al).powi(2)).sum();
        -loss.conj_neg(b, y) - lin - 0.5 * q * sq
    }

    fn rng(seed: u64) -> impl FnMut() -> f64 {
        let mut s = 0x9E3779B97F4A7C15u64 ^ seed;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    /// A random feasible dual for `loss` at label `y`: `dual_of` some random scores.
    fn feasible<L: BlockLoss>(loss: &L, y: f64, next: &mut impl FnMut() -> f64) -> Vec<f64> {
        let a: Vec<f64> = (0..loss.k()).map(|_| 3.0 * next()).collect();
        let mut out = vec![0.0; loss.k()];
        loss.dual_of(&a, y, &mut out);
        out
    }

    /// The block step beats every feasible point on random segments from it (the objective is
    /// concave, so a better point would show up along some segment), Fenchel-Young holds at
    /// `dual_of`, and block gaps are nonnegative.
    fn check_block<L: BlockLoss>(loss: L) {
        let mut next = rng(7);
        let k = loss.k();
        for trial in 0..300 {
            let y = (trial % k) as f64;
            let a: Vec<f64> = (0..k).map(|_| 4.0 * next()).collect();
            let q = [1e-3, 0.3, 1.0, 20.0][trial % 4];
            let alpha = feasible(&loss, y, &mut next);
            let mut step = vec![0.0; k];
            loss.dual_step(&alpha, &a, y, q, &mut step);
            let best = block_obj(&loss, &step, &alpha, &a, y, q);
            assert!(best.is_finite(), "{}: step left the domain: {step:?}", loss.name());
            for _ in 0..20 {
                let other = feasible(&loss, y, &mut next);
                let f = |t: f64| {
                    let p: Vec<f64> = step.iter().zip(&other).map(|(s, o)| s + t * (o - s)).collect();
                    block_obj(&loss, &p, &alpha, &a, y, q)
                };
                let t = argmax(f, 0.0, 1.0);
                assert!(
                    f(t) <= best + 1e-9 * (1.0 + best.abs()),
                    "{}: segment point t={t} beats the step by {} (q {q})",
                    loss.name(),
                    f(t) - best
                );
            }
            let mut d = vec![0.0; k];
            loss.dual_of(&a, y, &mut d);
            let fy = loss.block_gap(&d, &a, y);
            assert!(fy.abs() <= 1e-9 * (1.0 + loss.value(&a, y)), "{}: FY gap {fy} at dual_of", loss.name());
            assert!(loss.block_gap(&alpha, &a, y) >= -1e-12, "{}", loss.name());
        }
    }

    #[test]
    fn crammer_singer_step_is_the_block_argmax() {
        for k in [2, 3, 7] {
            check_block(MulticlassHinge { k, smoothing: 0.0 });
            check_block(MulticlassHinge { k, smoothing: 0.5 });
        }
    }

    /// The sorted-prefix step equals the support-iteration form of the threshold (`threshold`
    /// uncapped, then capped when the mass exceeds 1), ties, many violators, the cap and
    /// no violator included, up to rounding.
    #[test]
    fn crammer_singer_step_matches_the_support_iteration() {
        let mut next = rng(11);
        for trial in 0..2000 {
            let k = [2, 3, 5, 26][trial % 4];
            let smoothing = [0.0, 0.5][trial / 4 % 2];
            let loss = MulticlassHinge { k, smoothing };
            let y = trial % k;
            // Scores on a coarse grid give ties among the margins.
            let a: Vec<f64> = (0..k).map(|_| (4.0 * next()).round() / [1.0, 4.0][trial / 8 % 2]).collect();
            let q = [1e-3, 0.3, 1.0, 20.0][trial / 16 % 4];
            let alpha = feasible(&loss, y as f64, &mut next);
            let mut step = vec![0.0; k];
            loss.dual_step(&alpha, &a, y as f64, q, &mut step);
            let denom = smoothing + q;
            let mu: Vec<f64> =
                (0..k).map(|j| (1.0 + (a[j] - q * alpha[j]) - (a[y] - q * alpha[y])) / denom).collect();
            let mut tau = threshold(k, y, |j| mu[j], q / denom, None);
            if mass(k, y, |j| mu[j], tau) > 1.0 {
                tau = threshold(k, y, |j| mu[j], 0.0, Some(1.0));
            }
            let beta: Vec<f64> = (0..k).map(|j| if j == y { 0.0 } else { (mu[j] - tau).max(0.0) }).collect();
            let total: f64 = beta.iter().sum();
            for j in 0..k {
                let want = if j == y { total.min(1.0) } else { -beta[j] / total.max(1.0) };
                assert!(
                    (step[j] - want).abs() <= 1e-12,
                    "trial {trial} k {k} class {j}: {step:?} vs {beta:?}"
                );
            }
        }
    }

    #[test]
    fn multinomial_step_is_the_block_argmax() {
        for k in [2, 3, 6] {
            check_block(Multinomial { k });
        }
    }

    /// The smoothed value is `max_{beta in S} beta . (1 + a - a_y) - (gamma/2) ||beta||^2`:
    /// compare with a grid over `S` for three classes, and check `phi - gamma/2 <= phi~ <= phi`.
    #[test]
    fn smoothed_value_matches_its_definition() {
        let (plain, smooth) =
            (MulticlassHinge { k: 3, smoothing: 0.0 }, MulticlassHinge { k: 3, smoothing: 0.7 });
        let mut next = rng(3);
        for _ in 0..50 {
            let a: Vec<f64> = (0..3).map(|_| 2.0 * next()).collect();
            let y = 1.0;
            let mut best = f64::NEG_INFINITY;
            for i in 0..=200 {
                for j in 0..=(200 - i) {
                    let (b0, b2) = (i as f64 / 200.0, j as f64 / 200.0);
                    let v = b0 * (1.0 + a[0] - a[1]) + b2 * (1.0 + a[2] - a[1]) - 0.35 * (b0 * b0 + b2 * b2);
                    best = best.max(v);
                }
            }
            let v = smooth.value(&a, y);
            assert!((v - best).abs() < 2e-4 && v >= best - 1e-12, "{v} vs grid {best}");
            let p = plain.value(&a, y);
            assert!(p - 0.35 - 1e-12 <= v && v <= p + 1e-12);
        }
    }

    #[test]
    fn solve_lnp_is_exact_over_scales() {
        for q in [1e-9, 1e-3, 1.0, 1e3, 1e9] {
            for t in [-700.0, -30.0, -1.0, 0.0, 0.5, 5.0, 40.0, 1e4] {
                let p = solve_lnp(t, q);
                let r = p.ln() + q * p - t;
                assert!(p > 0.0 && r.abs() <= 1e-12 * (1.0 + t.abs()), "t {t} q {q}: residual {r}");
            }
        }
    }
}
