//! Pdprox: the primal-dual prox method for a non-smooth loss plus a non-smooth regularizer.
//!
//! Problem (DESIGN.md section 3, with `R` of [`ProxPenalty`]):
//! `min_w P(w) = (1/n) sum_i s_i phi(x~_i . w, y_i) + R(w)`, `x~_i = (x_i, intercept_scaling)`.
//! The intercept is the weight `w_b` of that constant feature and gets the same treatment as in
//! the SDCA solvers, so switching `solver` never changes the problem: `(l2/2) w_b^2` and no
//! `l1` or group term (with `l2 = 0` it is unpenalised: the prox is the identity on it,
//! Yang et al. 2015). A loss with a box-constrained linear
//! dual is `phi(a) = max_alpha -alpha a - phi*(-alpha)` (hinge, absolute, epsilon_insensitive,
//! quantile), which gives the saddle problem (Yang et al. 2015 eq. 2, 8)
//!
//! `min_w max_alpha F(w, alpha) = (1/n) sum_i s_i (-alpha_i x~_i . w - phi*(-alpha_i)) + R(w)`
//!
//! with the bilinear coupling `H = -(1/n) X~^T S`. Each pass is a dual step, then a primal
//! prox step (the note's section 2):
//!
//! - **`"dual"`** (default, Algorithm 3, the note's recommendation): `alpha = prox(beta at
//!   z_{t-1})`, `w = prox_{gamma R}(w + (gamma/n) X~^T (s alpha))`, `z_t = X~ w` and the
//!   algebraic correction `beta = alpha - (gamma s_i / n)(z_t - z_{t-1})`, **not** projected
//!   (section 2.3, pitfall 5).
//! - **`"primal"`** (Algorithm 2): `w = prox_{gamma R}(u + (gamma/n) g_{t-1})`,
//!   `alpha = prox(alpha at z_t)`, `g_t = X~^T (s alpha)`, `u = w + (gamma/n)(g_t - g_{t-1})`.
//!
//! "prox(alpha at z)" is [`Loss::dual_step`] with `q_i = n / (gamma s_i)`: the maximiser of
//! `-phi*(-b) - b z - (q/2)(b - alpha)^2`. For hinge, absolute and quantile it is the paper's
//! `Proj(alpha + gamma G_alpha)` (clip to the box); for epsilon_insensitive with one dual per row
//! it is the prox of the `epsilon |b|` term plus the box, which is Chambolle-Pock's dual step (the
//! note's section 2.5: Algorithm 3 is CP with theta = 1; its analysis covers any prox). The same
//! holds for `squared`, whose conjugate is quadratic: it is accepted too (a smooth loss, but the
//! group penalties are still only reachable here).
//!
//! **Step.** `gamma = 1 / sqrt(2c)`, `c >= ||H||^2` (Lemma 3), with `||H||^2` estimated by
//! [`POWER_STEPS`] power-iteration steps on `X~^T S^2 X~` from a seeded start, inflated by 2% and
//! capped by the Frobenius bound `sum_i s_i^2 ||x~_i||^2 / n^2` (section 2.8; Pdprox's condition
//! `gamma^2 c <= 1/2` has a factor 2 of slack over CP's `gamma^2 ||H||^2 < 1`, which absorbs the
//! power method's under-estimate). The power steps are set-up work and not counted as epochs.
//!
//! **Certificate** (section 2.11). `P` is evaluated exactly at the returned `w` (`z` is cached;
//! the averaged `z` is the mean of the cached ones). The dual `D(theta) = -(1/n) sum_i s_i
//! phi*(-theta_i) - R*((1/n) X~^T (s theta))` needs a feasible `theta`: with an intercept and
//! `l2 = 0` the unpenalised coordinate requires `sum_i s_i theta_i = 0`, met by scaling down the side (positive
//! or negative `s_i alpha_i`) with the larger sum; for `l2 = 0`, `R*` is the indicator of
//! `||u||_* <= l1`, met by the rescale `c <= c_max = min(1, l1 / ||u||_*)`; for `l2 > 0`,
//! `c_max = 1`. The best `c` in `[0, c_max]` is an endpoint when `D(c theta)` is linear there
//! (box-linear losses with `l2 = 0`), else found by golden section (it is concave in `c`). Each `theta_i` is a
//! convex combination of `alpha_i` and 0, both in the box, so `theta` is feasible and
//! `gap = P(w) - D(theta) >= P(w) - P(w*)`. Candidates: the averaged duals (Theorem 6) and the
//! last ones (CP's last iterate often converges faster on these piecewise-linear problems); the
//! larger `D` is kept. One extra pass per check computes `X~^T (s alpha_avg)` when an intercept
//! forces the sign split (otherwise it is a running mean).

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{drive, Budget, Certificate, Context, Coordinate, Judge, Outcome, Problem, Verdict};
use crate::config::{PdproxOutput, PdproxVariant};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::Loss;
use crate::reg::{ProxPenalty, ProxScratch};

/// Power-iteration steps of the step-size estimate (the note suggests 20-50).
pub const POWER_STEPS: usize = 30;

/// Pdprox (Algorithms 2 and 3 of Wang, Chen and Yang, "Primal-Dual Prox Method for Non-smooth
/// Optimization", the note's errata in its sections 2.4 and 6.9) on the problem of `ctx`, whose
/// checked config has `solver = "pdprox"` (so its loss is one [`crate::loss::LossKind::pdprox_ready`]
/// accepts), from the feature-major start `w` (length `d + 1`, the last slot the intercept
/// feature's weight; zero for a cold start, whose duals start at 0, a warm start's at `dual_of`
/// its scores). The outcome's `w` is the last or averaged iterate (`cfg.output`), its `alpha`
/// the feasible duals `theta` of the certificate and its gap a certified bound on
/// `P(coef) - P*`; every pass (one `X w` and one `X^T r`) is an epoch. Errors: `groups` of the
/// wrong length.
pub(crate) fn run<D: Rows, L: Loss>(ctx: &mut Context<'_, '_, D, L>, w: Vec<f64>) -> Result<Outcome> {
    let (problem, loss, cfg) = (ctx.problem, ctx.loss, ctx.cfg);
    let (n, d) = (problem.n(), problem.x.n_cols());
    if let Some(g) = &cfg.groups {
        if g.of.len() != d {
            return Err(SdcaError::InvalidParameter {
                name: "groups",
                message: format!(
                    "has {} entries for {d} features; pass one group id per feature",
                    g.of.len()
                ),
            });
        }
    }
    let bias = cfg.intercept_scaling;
    let gamma = 1.0 / (2.0 * coupling_bound(problem, bias, &mut ctx.rng)).sqrt();
    // Each variant keeps only its own correction buffer (`u`: d + 1, `beta`: n).
    let primal = cfg.pdprox_variant == PdproxVariant::Primal;
    let zeros = crate::budget::zeros::<f64>;
    let mut s = Pdprox {
        problem,
        loss,
        judge: &ctx.judge,
        pen: ProxPenalty::new(cfg.l2, cfg.l1, cfg.groups.as_ref()),
        bias,
        gamma,
        variant: cfg.pdprox_variant,
        output: cfg.output,
        linear: cfg.loss.has_box_linear_dual(),
        u: if primal { w.clone() } else { Vec::new() },
        w,
        alpha: zeros(n)?,
        beta: if primal { Vec::new() } else { zeros(n)? },
        z: zeros(n)?,
        z_prev: zeros(n)?,
        g_pos: zeros(d + 1)?,
        g_neg: zeros(d + 1)?,
        g: zeros(d + 1)?,
        g_prev: zeros(d + 1)?,
        sum_w: zeros(d + 1)?,
        sum_z: zeros(n)?,
        sum_alpha: zeros(n)?,
        sum_g: zeros(d + 1)?,
        passes: 0,
        scratch: ProxScratch::default(),
        certificate: Certificate { primal: f64::INFINITY, dual: f64::NEG_INFINITY, gap: f64::INFINITY },
        theta: zeros(n)?,
        gap_trace: Vec::new(),
    };
    let mut z = std::mem::take(&mut s.z);
    s.scores(&s.w, &mut z);
    s.z = z;
    // A warm start's duals match its scores (Fenchel-Young equality); a cold start's are 0.
    if s.w.iter().any(|&v| v != 0.0) {
        for i in (0..n).filter(|&i| problem.weight(i) > 0.0) {
            s.alpha[i] = loss.dual_of(s.z[i], problem.y[i]);
        }
        if !primal {
            s.beta.copy_from_slice(&s.alpha);
        }
    }
    s.refresh_gradient();
    let budget = Budget { max_epochs: cfg.max_epochs, check_every: cfg.check_every, check_last: true };
    let run = drive(&mut s, &mut [], budget, cfg.sampling, &mut ctx.clock, &mut ctx.rng, |s| s.check());
    let t = s.passes.max(1) as f64;
    let w_out: Vec<f64> = match s.output {
        PdproxOutput::Last => s.w,
        PdproxOutput::Average => s.sum_w.iter().map(|v| v / t).collect(),
    };
    Ok(Outcome {
        w: w_out,
        alpha: s.theta,
        certificate: s.certificate,
        solved_gap: s.certificate.gap,
        status: run.status(),
        gap_trace: s.gap_trace,
        solver: "pdprox",
        outer_iterations: 0,
    })
}

/// `c >= ||H||^2 = sigma_max(S X~)^2 / n^2`: the power estimate inflated by 2%, capped by the
/// Frobenius bound; 1 when the coupling vanishes (any step is then valid).
fn coupling_bound<D: Rows>(problem: &Problem<'_, D>, bias: f64, rng: &mut Xoshiro256PlusPlus) -> f64 {
    let (x, n, d) = (problem.x, problem.n(), problem.x.n_cols());
    let nf = n as f64;
    let frobenius: f64 =
        (0..n).map(|i| problem.weight(i).powi(2) * (x.sq_norm(i) + bias * bias)).sum::<f64>() / (nf * nf);
    let mut v: Vec<f64> = (0..=d).map(|_| rng.random_range(-1.0..1.0)).collect();
    let mut mv = vec![0.0; d + 1];
    let mut estimate = 0.0;
    for _ in 0..POWER_STEPS {
        let norm = v.iter().map(|t| t * t).sum::<f64>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            break;
        }
        v.iter_mut().for_each(|t| *t /= norm);
        mv.iter_mut().for_each(|t| *t = 0.0);
        for i in 0..n {
            let s = problem.weight(i);
            let t = s * s * (x.dot(i, &v) + bias * v[d]);
            x.axpy(i, t, &mut mv[..d]);
            mv[d] += bias * t;
        }
        estimate = mv.iter().map(|t| t * t).sum::<f64>().sqrt();
        std::mem::swap(&mut v, &mut mv);
    }
    let c = (1.02 * estimate / (nf * nf)).min(frobenius);
    if c > 0.0 && c.is_finite() {
        c
    } else {
        1.0
    }
}

/// A dual candidate: `theta_i = scale f(s_i alpha_i) alpha_i` and its value `D(theta)`.
struct DualPoint {
    value: f64,
    scale: f64,
    f_pos: f64,
    f_neg: f64,
}

/// The solver state of one fit.
struct Pdprox<'p, 'a, 'j, D: Rows, L: Loss> {
    problem: &'p Problem<'a, D>,
    loss: L,
    /// The stopping rule (`tol`).
    judge: &'j Judge<'p, 'a, D, L>,
    pen: ProxPenalty,
    bias: f64,
    gamma: f64,
    variant: PdproxVariant,
    output: PdproxOutput,
    /// Whether `phi*` is linear on rays from 0 in the dual box ([`LossKind::has_box_linear_dual`]).
    linear: bool,
    /// Primal iterate, `d + 1` (last: the intercept feature's weight).
    w: Vec<f64>,
    /// `"primal"`: the corrected primal copy `u` (empty for `"dual"`).
    u: Vec<f64>,
    /// Duals `alpha_t`.
    alpha: Vec<f64>,
    /// `"dual"`: the correction point `beta` (empty for `"primal"`).
    beta: Vec<f64>,
    /// `z = X~ w_t` and its previous value.
    z: Vec<f64>,
    z_prev: Vec<f64>,
    /// `X~^T (s alpha_t)` split by the sign of `s_i alpha_i` (for the intercept balance), their
    /// sum and the previous sum.
    g_pos: Vec<f64>,
    g_neg: Vec<f64>,
    g: Vec<f64>,
    g_prev: Vec<f64>,
    /// Running sums for the averages.
    sum_w: Vec<f64>,
    sum_z: Vec<f64>,
    sum_alpha: Vec<f64>,
    sum_g: Vec<f64>,
    passes: u32,
    scratch: ProxScratch,
    /// The last check's certificate, feasible duals and the gaps so far.
    certificate: Certificate,
    theta: Vec<f64>,
    gap_trace: Vec<f64>,
}

impl<D: Rows, L: Loss> Pdprox<'_, '_, '_, D, L> {
    fn n(&self) -> usize {
        self.problem.n()
    }

    /// `q_i = n / (gamma s_i)`, the inverse dual step of row `i`.
    fn q(&self, i: usize) -> f64 {
        self.n() as f64 / (self.gamma * self.problem.weight(i))
    }

    /// `out = X~ w`.
    fn scores(&self, w: &[f64], out: &mut [f64]) {
        let (x, d) = (self.problem.x, self.problem.x.n_cols());
        out.iter_mut().enumerate().for_each(|(i, o)| *o = x.dot(i, w) + self.bias * w[d]);
    }

    /// `(pos, neg) = X~^T (s alpha)` split by the sign of `s_i alpha_i`.
    fn adjoint(&self, alpha: &[f64], pos: &mut [f64], neg: &mut [f64]) {
        let (x, d) = (self.problem.x, self.problem.x.n_cols());
        pos.iter_mut().chain(neg.iter_mut()).for_each(|v| *v = 0.0);
        for (i, &a) in alpha.iter().enumerate() {
            let sa = self.problem.weight(i) * a;
            let out = if sa > 0.0 { &mut *pos } else { &mut *neg };
            if sa != 0.0 {
                x.axpy(i, sa, &mut out[..d]);
                out[d] += self.bias * sa;
            }
        }
    }

    /// `g_prev <- g`, then `g = X~^T (s alpha_t)` (split into `g_pos`, `g_neg`).
    fn refresh_gradient(&mut self) {
        std::mem::swap(&mut self.g, &mut self.g_prev);
        let (mut pos, mut neg) = (std::mem::take(&mut self.g_pos), std::mem::take(&mut self.g_neg));
        self.adjoint(&self.alpha, &mut pos, &mut neg);
        self.g.iter_mut().zip(pos.iter().zip(&neg)).for_each(|(g, (p, m))| *g = p + m);
        (self.g_pos, self.g_neg) = (pos, neg);
    }

    /// `alpha_i <- prox(from_i at z_i)` for every row of positive weight.
    fn dual_step(&mut self, from_beta: bool) {
        for i in 0..self.n() {
            if self.problem.weight(i) > 0.0 {
                let start = if from_beta { self.beta[i] } else { self.alpha[i] };
                self.alpha[i] = self.loss.dual_step(start, self.z[i], self.problem.y[i], self.q(i));
            }
        }
    }

    /// `w <- prox_{gamma R}(base + (gamma/n) g)`; the intercept slot only by its L2 term.
    fn primal_step(&mut self, from_u: bool) {
        let step = self.gamma / self.n() as f64;
        if from_u {
            for ((w, u), g) in self.w.iter_mut().zip(&self.u).zip(&self.g) {
                *w = u + step * g;
            }
        } else {
            self.w.iter_mut().zip(&self.g).for_each(|(w, g)| *w += step * g);
        }
        let d = self.w.len() - 1;
        self.pen.prox(&mut self.w[..d], self.gamma, &mut self.scratch);
        self.w[d] /= 1.0 + self.gamma * self.pen.l2;
    }

    /// `D(theta)` for `theta_i = c f_i alpha_i`, given the split `X~^T (s alpha)`.
    fn dual_value(&mut self, alpha: &[f64], pos: &[f64], neg: &[f64]) -> DualPoint {
        let p = self.problem;
        let (n, d) = (p.n(), p.x.n_cols());
        let nf = n as f64;
        // Intercept balance when it is unpenalised: sum_i s_i theta_i = 0 (pos[d], -neg[d] are
        // the two sides' sums, times bias). With l2 > 0 its conjugate term is finite instead.
        let (sp, sn) = (pos[d], -neg[d]);
        let (f_pos, f_neg) = match self.bias > 0.0 && self.pen.l2 == 0.0 {
            false => (1.0, 1.0),
            true if sp > sn => (sn / sp, 1.0),
            true if sn > sp => (1.0, sp / sn),
            true => (1.0, 1.0),
        };
        let u: Vec<f64> = pos[..d].iter().zip(&neg[..d]).map(|(a, b)| (f_pos * a + f_neg * b) / nf).collect();
        // (l2/2) w_b^2 has conjugate u_b^2 / (2 l2); u_b = 0 after the balance when l2 = 0.
        let u_bias = (f_pos * pos[d] + f_neg * neg[d]) / nf;
        let l2 = self.pen.l2;
        let bias_conj = move |c: f64| if l2 > 0.0 { (c * u_bias).powi(2) / (2.0 * l2) } else { 0.0 };
        let loss = self.loss;
        let at = |c: f64, scratch: &mut ProxScratch, pen: &ProxPenalty| {
            let conj: f64 = (0..n)
                .filter(|&i| p.weight(i) > 0.0)
                .map(|i| {
                    let f = if p.weight(i) * alpha[i] > 0.0 { f_pos } else { f_neg };
                    p.weight(i) * loss.conj_neg(c * f * alpha[i], p.y[i])
                })
                .sum();
            let cu: Vec<f64> = u.iter().map(|v| c * v).collect();
            -conj / nf - pen.conj(&cu, scratch) - bias_conj(c)
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        // With l2 = 0, R* is an indicator: c_max keeps c u in the ball (a hair inside so that
        // rounding cannot leave it).
        let norm = self.pen.dual_norm(&u);
        let c_max =
            if self.pen.l2 == 0.0 && norm > self.pen.l1 { self.pen.l1 / norm * (1.0 - 1e-12) } else { 1.0 };
        let (scale, value) = if self.pen.l2 == 0.0 && self.linear {
            // D(c theta) is linear on [0, c_max] (the conjugates are linear, or linear plus
            // epsilon |.|, on rays from 0): an endpoint is best.
            [(0.0, at(0.0, &mut scratch, &self.pen)), (c_max, at(c_max, &mut scratch, &self.pen))]
                .into_iter()
                .fold((0.0, f64::NEG_INFINITY), |b, cv| if cv.1 > b.1 { cv } else { b })
        } else {
            crate::math::argmax_concave(c_max, 40, |c| at(c, &mut scratch, &self.pen))
                .unwrap_or((0.0, f64::NEG_INFINITY))
        };
        self.scratch = scratch;
        DualPoint { value, scale, f_pos, f_neg }
    }

    /// Certificate of the current output iterate against the better of the last and averaged
    /// duals; records it and says whether `tol` is met.
    fn check(&mut self) -> Verdict {
        let p = self.problem;
        let (n, d) = (p.n(), p.x.n_cols());
        let t = self.passes.max(1) as f64;
        let (w_out, z_out): (Vec<f64>, Vec<f64>) = match self.output {
            PdproxOutput::Last => (self.w.clone(), self.z.clone()),
            PdproxOutput::Average => {
                (self.sum_w.iter().map(|v| v / t).collect(), self.sum_z.iter().map(|v| v / t).collect())
            }
        };
        let loss: f64 = (0..n)
            .filter(|&i| p.weight(i) > 0.0)
            .map(|i| p.weight(i) * self.loss.value(z_out[i], p.y[i]))
            .sum();
        let primal = loss / n as f64 + self.pen.value(&w_out[..d]) + 0.5 * self.pen.l2 * w_out[d].powi(2);

        let (g_pos, g_neg) = (std::mem::take(&mut self.g_pos), std::mem::take(&mut self.g_neg));
        let alpha_last = std::mem::take(&mut self.alpha);
        let last = self.dual_value(&alpha_last, &g_pos, &g_neg);
        let alpha_avg: Vec<f64> = self.sum_alpha.iter().map(|v| v / t).collect();
        let (mut pos, mut neg) = (vec![0.0; d + 1], vec![0.0; d + 1]);
        if self.bias > 0.0 {
            self.adjoint(&alpha_avg, &mut pos, &mut neg);
        } else {
            pos.iter_mut().zip(&self.sum_g).for_each(|(v, s)| *v = s / t);
        }
        let avg = self.dual_value(&alpha_avg, &pos, &neg);
        let (best, source) = if avg.value >= last.value { (avg, &alpha_avg) } else { (last, &alpha_last) };
        self.theta = source
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                let f = if p.weight(i) * a > 0.0 { best.f_pos } else { best.f_neg };
                best.scale * f * a
            })
            .collect();
        (self.g_pos, self.g_neg, self.alpha) = (g_pos, g_neg, alpha_last);

        let gap = (primal - best.value).max(0.0);
        self.certificate = Certificate { primal, dual: primal - gap, gap };
        self.gap_trace.push(gap);
        if self.judge.met(&self.certificate) {
            Verdict::Stop
        } else {
            Verdict::Continue
        }
    }

    fn accumulate(&mut self) {
        let add = |sum: &mut Vec<f64>, v: &[f64]| sum.iter_mut().zip(v).for_each(|(s, x)| *s += x);
        add(&mut self.sum_w, &self.w);
        add(&mut self.sum_z, &self.z);
        add(&mut self.sum_alpha, &self.alpha);
        add(&mut self.sum_g, &self.g);
        self.passes += 1;
    }
}

impl<D: Rows, L: Loss> Coordinate for Pdprox<'_, '_, '_, D, L> {
    /// A Pdprox pass is a deterministic full iteration: there is no coordinate order to sample.
    fn active(&self) -> &[u32] {
        &[]
    }

    fn pass(&mut self, order: &mut [u32]) -> usize {
        match self.variant {
            PdproxVariant::Dual => {
                self.dual_step(true);
                self.refresh_gradient();
                self.primal_step(false);
                std::mem::swap(&mut self.z, &mut self.z_prev);
                let mut z = std::mem::take(&mut self.z);
                self.scores(&self.w, &mut z);
                self.z = z;
                for i in 0..self.n() {
                    if self.problem.weight(i) > 0.0 {
                        self.beta[i] = self.alpha[i] - (self.z[i] - self.z_prev[i]) / self.q(i);
                    }
                }
            }
            PdproxVariant::Primal => {
                self.primal_step(true);
                let mut z = std::mem::take(&mut self.z);
                self.scores(&self.w, &mut z);
                self.z = z;
                self.dual_step(false);
                self.refresh_gradient();
                let step = self.gamma / self.n() as f64;
                for ((u, w), (g, gp)) in self.u.iter_mut().zip(&self.w).zip(self.g.iter().zip(&self.g_prev)) {
                    *u = w + step * (g - gp);
                }
            }
        }
        self.accumulate();
        order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::loss::{with_scalar_loss, LossKind};
    use crate::solver::testing::toy;
    use crate::solver::{FitResult, Status};

    /// A box-linear loss plus L1 (no L2) on dense `n x d` rows `x`, labels `y`, sample weights
    /// `s`, an intercept feature of value `bias` (0: none).
    struct L1Problem<'a> {
        x: &'a [f64],
        y: &'a [f64],
        s: &'a [f64],
        d: usize,
        loss: LossKind,
        l1: f64,
        bias: f64,
    }

    /// `P(v)` at `v = (w, w_bias)`.
    fn objective(p: &L1Problem<'_>, v: &[f64]) -> f64 {
        let L1Problem { x, y, s, d, loss, l1, bias } = *p;
        let n = y.len();
        let phi = |a: f64, y: f64| with_scalar_loss!(loss, |l| Loss::value(&l, a, y), multiclass => f64::NAN);
        let b = if bias > 0.0 { bias * v[d] } else { 0.0 };
        let loss_sum: f64 =
            (0..n).map(|i| s[i] * phi((0..d).map(|j| x[i * d + j] * v[j]).sum::<f64>() + b, y[i])).sum();
        loss_sum / n as f64 + l1 * v[..d].iter().map(|t| t.abs()).sum::<f64>()
    }

    /// The exact minimum of a piecewise-linear `P` (box-linear loss plus L1, no L2) by vertex
    /// enumeration: `P` is convex, piecewise linear and coercive, so a minimiser is a vertex of
    /// the arrangement of its kink hyperplanes (`x~_i . v = kink` of each row, `v_j = 0` of each
    /// feature). Every `m`-subset (`m` unknowns) is solved by Gaussian elimination; the least
    /// `P` over the non-singular ones is `P*`, up to rounding.
    fn exact_l1(p: &L1Problem<'_>) -> f64 {
        let L1Problem { x, y, d, loss, bias, .. } = *p;
        let m = d + usize::from(bias > 0.0);
        let mut planes: Vec<(Vec<f64>, f64)> = Vec::new();
        for (i, &yi) in y.iter().enumerate() {
            let mut normal = x[i * d..(i + 1) * d].to_vec();
            if bias > 0.0 {
                normal.push(bias);
            }
            let kinks = match loss {
                LossKind::Hinge => vec![yi],
                LossKind::EpsilonInsensitive { epsilon } => vec![yi - epsilon, yi + epsilon],
                _ => vec![yi],
            };
            kinks.into_iter().for_each(|k| planes.push((normal.clone(), k)));
        }
        for j in 0..d {
            let mut e = vec![0.0; m];
            e[j] = 1.0;
            planes.push((e, 0.0));
        }
        let mut best = f64::INFINITY;
        let mut pick = vec![0usize; m];
        fn subsets(k: usize, start: usize, total: usize, pick: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
            if k == pick.len() {
                f(pick);
                return;
            }
            for s in start..total {
                pick[k] = s;
                subsets(k + 1, s + 1, total, pick, f);
            }
        }
        let total = planes.len();
        subsets(0, 0, total, &mut pick, &mut |rows: &[usize]| {
            let mut a: Vec<Vec<f64>> = rows
                .iter()
                .map(|&r| {
                    let mut row = planes[r].0.clone();
                    row.push(planes[r].1);
                    row
                })
                .collect();
            for c in 0..m {
                let p = (c..m).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
                if a[p][c].abs() < 1e-10 {
                    return;
                }
                a.swap(c, p);
                let pivot = a[c].clone();
                for (r, row) in a.iter_mut().enumerate() {
                    if r != c {
                        let f = row[c] / pivot[c];
                        row.iter_mut().zip(&pivot).skip(c).for_each(|(x, p)| *x -= f * p);
                    }
                }
            }
            let v: Vec<f64> = (0..m).map(|c| a[c][m] / a[c][c]).collect();
            best = best.min(objective(p, &v));
        });
        best
    }

    fn params(loss: &str, l2: f64, l1: f64) -> FitParams {
        FitParams {
            loss: loss.into(),
            solver: "pdprox".into(),
            l2,
            l1,
            quantile: 0.3,
            epsilon: 0.1,
            tol: 1e-6,
            max_epochs: 200_000,
            ..Default::default()
        }
    }

    fn fit_toy(n: usize, d: usize, p: FitParams) -> (FitResult, Vec<f64>, Vec<f64>) {
        fit_weighted(n, d, p, None)
    }

    fn fit_weighted(n: usize, d: usize, p: FitParams, s: Option<&[f64]>) -> (FitResult, Vec<f64>, Vec<f64>) {
        let classification = p.loss == "hinge";
        let (x, y) = toy(n, d, classification, 3);
        let cfg = p.check().unwrap();
        let view = DenseView::new(&x, n, d).unwrap();
        let problem = Problem::new(&view, &y, s, cfg.loss).unwrap();
        (crate::solver::fit(&problem, &cfg).unwrap(), x, y)
    }

    /// Hinge, absolute, epsilon-insensitive and quantile with L1 against the exact optimum, for
    /// both variants, both outputs, with and without an intercept and sample weights (one row of
    /// weight 0): converged (to `tol = 1e-6`
    /// for the last iterate, `1e-4` for the O(1/T) average), and the gap is `>= 0` and bounds the
    /// true suboptimality at every stopping point, early ones included.
    #[test]
    fn l1_problems_match_the_exact_optimum() {
        let (n, d, l1) = (12, 2, 0.05);
        let ones = vec![1.0; n];
        let weights: Vec<f64> = (0..n).map(|i| [1.0, 2.0, 0.5, 0.0][i % 4]).collect();
        for loss in ["hinge", "absolute", "epsilon_insensitive", "quantile"] {
            for (intercept, s) in
                [(false, None), (true, None), (false, Some(&weights)), (true, Some(&weights))]
            {
                let p = FitParams { fit_intercept: intercept, ..params(loss, 0.0, l1) };
                let cfg = p.clone().check().unwrap();
                let (_, x, y) = fit_toy(n, d, p.clone());
                let bias = cfg.intercept_scaling;
                let sw = s.unwrap_or(&ones);
                let problem = L1Problem { x: &x, y: &y, s: sw, d, loss: cfg.loss, l1, bias };
                let exact = exact_l1(&problem);
                for variant in ["dual", "primal"] {
                    for output in ["last", "average"] {
                        for max_epochs in [3, 40, 200_000] {
                            let tol = if output == "last" { 1e-6 } else { 1e-4 };
                            let q = FitParams {
                                tol,
                                pdprox_variant: variant.into(),
                                output: output.into(),
                                max_epochs,
                                ..p.clone()
                            };
                            let (r, _, _) = fit_weighted(n, d, q, s.map(|v| v.as_slice()));
                            let c = r.certificate;
                            let what = format!(
                                "{loss} icpt={intercept} weighted={} {variant}/{output} T={max_epochs}",
                                s.is_some()
                            );
                            let mut v = r.coef.clone();
                            v.push(if bias > 0.0 { r.intercept[0] / bias } else { 0.0 });
                            let at = objective(&problem, &v);
                            assert!((at - c.primal).abs() <= 1e-12 * at.max(1.0), "{what}: P {at} vs {c:?}");
                            assert!(c.gap >= 0.0, "{what}: {c:?}");
                            assert!(c.primal - exact >= -1e-12, "{what}: below the optimum {exact}: {c:?}");
                            assert!(c.primal - exact <= c.gap + 1e-12, "{what}: gap {c:?} vs P* {exact}");
                            if max_epochs == 200_000 {
                                assert_eq!(r.status, Status::Converged, "{what}: {c:?} after {}", r.epochs);
                                assert!(c.primal - exact <= tol * c.primal, "{what}: {c:?} vs {exact}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// Singleton groups make the group lasso and L1-inf penalties the plain L1 norm: the same
    /// iterates, so the same model.
    #[test]
    fn singleton_groups_are_l1() {
        let base = FitParams { max_epochs: 300, ..params("hinge", 0.0, 0.02) };
        let (plain, _, _) = fit_toy(30, 4, base.clone());
        for norm in ["l2", "linf"] {
            let p = FitParams { groups: Some(vec![5, 1, 9, 2]), group_norm: norm.into(), ..base.clone() };
            let (grouped, _, _) = fit_toy(30, 4, p);
            for (a, b) in plain.coef.iter().zip(&grouped.coef) {
                assert!((a - b).abs() <= 1e-12, "{norm}: {:?} vs {:?}", plain.coef, grouped.coef);
            }
            assert!((plain.certificate.gap - grouped.certificate.gap).abs() <= 1e-12, "{norm}");
        }
    }

    /// Group penalties, with and without L2: the certificate is consistent with a long run (a
    /// valid gap is at least `P - P_ref >= P - P*`), the long run converges, and whole groups
    /// are zero in the last iterate when `l1` is large.
    #[test]
    fn group_penalties_certify() {
        for (norm, l2) in [("l2", 0.0), ("l2", 1e-2), ("linf", 0.0), ("linf", 1e-2)] {
            let groups = Some(vec![0, 0, 1, 1, 1, 2]);
            let p = FitParams { groups, group_norm: norm.into(), ..params("absolute", l2, 0.03) };
            let (reference, _, _) = fit_toy(40, 6, FitParams { tol: 1e-9, ..p.clone() });
            assert_eq!(reference.status, Status::Converged, "{norm} {l2}: {:?}", reference.certificate);
            for max_epochs in [5, 50, 500] {
                let (r, _, _) = fit_toy(40, 6, FitParams { max_epochs, ..p.clone() });
                let c = r.certificate;
                assert!(c.gap >= 0.0 && c.gap >= c.primal - reference.certificate.primal - 1e-12, "{c:?}");
            }
            // |u_j| <= max |x_ij| <= 1, so every group's dual norm at w = 0 is below 3 < l1.
            let (zero, _, _) = fit_toy(40, 6, FitParams { l1: 4.0, ..p.clone() });
            assert!(zero.coef.iter().all(|&v| v == 0.0), "{norm} {l2}: {:?}", zero.coef);
        }
    }

    /// With `l2 > 0` the problem is an elastic net SDCA also solves: the optima agree within the
    /// two certified gaps.
    #[test]
    fn elastic_net_agrees_with_sdca() {
        for loss in ["hinge", "quantile"] {
            let p = FitParams { tol: 1e-8, ..params(loss, 0.05, 0.01) };
            let (pd, _, _) = fit_toy(50, 3, p.clone());
            let (sd, _, _) = fit_toy(50, 3, FitParams { solver: "sdca".into(), ..p });
            let (a, b) = (pd.certificate, sd.certificate);
            assert_eq!(pd.status, Status::Converged, "{loss}: {a:?}");
            assert!((a.primal - b.primal).abs() <= a.gap + b.gap + 1e-12, "{loss}: {a:?} vs {b:?}");
            assert!(a.primal >= b.dual - 1e-12 && b.primal >= a.dual - 1e-12, "{loss}: {a:?} vs {b:?}");
        }
    }

    /// Squared loss with L1 and `l2 = 0` is the Lasso: against cyclic coordinate descent.
    #[test]
    fn squared_loss_matches_the_lasso() {
        let (n, d, l1) = (40, 5, 0.02);
        for intercept in [false, true] {
            let p = FitParams { fit_intercept: intercept, tol: 1e-8, ..params("squared", 0.0, l1) };
            let (r, x, y) = fit_toy(n, d, p);
            let (w, b, objective) = crate::solver::testing::lasso_cd(&x, &y, d, l1, intercept);
            let c = r.certificate;
            assert_eq!(r.status, Status::Converged, "{c:?}");
            assert!(
                c.primal - objective <= c.gap + 1e-12 && c.primal >= objective - 1e-12,
                "{c:?} vs {objective}"
            );
            let dist: f64 = r.coef.iter().zip(&w).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(dist < 1e-3 && (r.intercept[0] - b).abs() < 1e-3, "{:?} vs {w:?}", r.coef);
        }
    }

    /// The time budget and the interrupt hook stop after the pass that sees them, with the
    /// certificate of that pass.
    #[test]
    fn budgets_stop_with_a_certificate() {
        let p = FitParams { max_seconds: Some(1e-9), ..params("hinge", 0.0, 0.01) };
        let (r, _, _) = fit_toy(30, 3, p);
        assert_eq!((r.status, r.epochs, r.gap_trace.len()), (Status::MaxSeconds, 1, 1));
        assert!(r.certificate.gap >= 0.0 && r.certificate.gap.is_finite(), "{:?}", r.certificate);
        let mut cfg = params("absolute", 0.0, 0.01).check().unwrap();
        cfg.interrupt = Some(crate::config::Interrupt(|| true));
        let (x, y) = toy(30, 3, false, 3);
        let view = DenseView::new(&x, 30, 3).unwrap();
        let r = crate::solver::fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        assert_eq!((r.status, r.epochs), (Status::Interrupted, 1));
    }

    #[test]
    fn same_seed_same_model_and_checked_groups() {
        let p = FitParams { max_epochs: 50, ..params("absolute", 0.0, 0.01) };
        let (a, _, _) = fit_toy(20, 3, p.clone());
        let (b, _, _) = fit_toy(20, 3, p.clone());
        assert_eq!(a, b);
        assert_eq!(a.epochs, 50);
        assert_eq!(a.gap_trace.len(), 50);
        assert_eq!(a.solver, "pdprox");
        let cfg = FitParams { groups: Some(vec![0, 1]), ..p }.check().unwrap();
        let (x, y) = toy(20, 3, false, 3);
        let view = DenseView::new(&x, 20, 3).unwrap();
        let problem = Problem::new(&view, &y, None, cfg.loss).unwrap();
        let err = crate::solver::fit(&problem, &cfg).unwrap_err();
        assert!(matches!(err, SdcaError::InvalidParameter { name: "groups", .. }), "{err}");
        assert!(err.to_string().contains("2 entries for 3 features"), "{err}");
    }
}
