//! An independent evaluation of the objective of DESIGN.md section 3, for the property tests
//! (`tests/properties.rs`) and the `fit` fuzz target (`fuzz/`, which includes this file by path).
//!
//! Written from the contract, not from the solver: it reads a dense row-major copy of the
//! features (never a core view), spells out every loss and its conjugate, rebuilds the primal
//! point of the duals itself, and sums the terms in its own order. A fit is then checked against
//! these numbers, so an error in the solver's own evaluator cannot hide behind itself.
//!
//! ```text
//! P(w, b) = (1/n) sum_i s_i phi(x_i . w + b, y_i) + (l2/2)(||w||^2 + (b/c)^2) + l1 ||w||_1
//! D(alpha) = -(1/n) sum_i s_i phi*(-alpha_i, y_i) - (l2/2) ||w(alpha)||^2
//! w(alpha)_j = soft(u_j, l1/l2), (b/c)(alpha) = u_c,  u = (1/(l2 n)) sum_i s_i alpha_i (x_i, c)
//! ```
//!
//! `c` is `intercept_scaling` (the constant feature carrying the intercept, penalised by `l2`
//! only) or 0 without an intercept.
//!
//! Every value comes with a rounding allowance, so that the checks hold on badly scaled data
//! (the fuzz target draws values up to `1e150`) without hiding real errors: [`REL`] times the
//! terms of each sum, and for each score `x_i . w + b` (which can cancel: `x . w ~ y ~ 1e150`)
//! the change of its loss when the score moves by [`DOT`] times its own terms.

use sdca_core::loss::LossKind;
use sdca_core::{FitConfig, FitResult, Status};

/// A problem as the contract states it, on a dense row-major `n x d` matrix.
#[derive(Debug, Clone, Copy)]
pub struct Objective<'a> {
    /// Row-major features, `y.len() * d` values.
    pub x: &'a [f64],
    /// Number of features.
    pub d: usize,
    /// Labels.
    pub y: &'a [f64],
    /// Sample weights (`None`: all 1).
    pub s: Option<&'a [f64]>,
    /// The loss.
    pub loss: LossKind,
    /// L2 strength (`lambda`).
    pub l2: f64,
    /// L1 strength (`sigma`).
    pub l1: f64,
    /// Constant feature value carrying the intercept (0: no intercept).
    pub bias: f64,
}

/// Relative rounding allowance of a sum of at most a few dozen terms (their count times the
/// machine epsilon is below `1e-14`): a larger difference is not rounding.
pub const REL: f64 = 1e-10;
/// Relative error allowance of a dot product of at most 13 terms, as a fraction of the sum of
/// their absolute values (`(d + 2) eps < 4e-15`).
pub const DOT: f64 = 1e-13;
/// Absolute slack: products of values near `1e-150` lose their relative precision below
/// `1e-308`, and a term of `1e-300` can vanish in one evaluation and not in the other.
pub const UNDERFLOW: f64 = 1e-290;

/// A value and an upper bound on its rounding error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    /// The value.
    pub value: f64,
    /// Absolute rounding allowance.
    pub error: f64,
}

/// `phi(a, y)` of every loss (DESIGN.md section 3; `smooth_hinge` is Shalev-Shwartz & Zhang 2013 eq. 6).
pub fn phi(loss: LossKind, a: f64, y: f64) -> f64 {
    match loss {
        LossKind::Hinge => f64::max(0.0, 1.0 - y * a),
        LossKind::SmoothHinge { smoothing: g } => {
            let m = y * a;
            if m >= 1.0 {
                0.0
            } else if m <= 1.0 - g {
                1.0 - m - g / 2.0
            } else {
                (1.0 - m).powi(2) / (2.0 * g)
            }
        }
        LossKind::SquaredHinge => f64::max(0.0, 1.0 - y * a).powi(2),
        LossKind::Logistic => {
            // log(1 + exp(-m)) without overflow for either sign of m.
            let m = y * a;
            if m > 0.0 {
                (-m).exp().ln_1p()
            } else {
                -m + m.exp().ln_1p()
            }
        }
        LossKind::Squared => (a - y).powi(2) / 2.0,
        LossKind::Absolute => (a - y).abs(),
        LossKind::EpsilonInsensitive { epsilon } => f64::max(0.0, (a - y).abs() - epsilon),
        LossKind::Quantile { quantile } => f64::max(quantile * (y - a), (quantile - 1.0) * (y - a)),
        LossKind::MulticlassHinge { .. } | LossKind::Multinomial => unreachable!("scalar losses only"),
    }
}

/// Whether `alpha` is in the dual domain of the loss at label `y` (`b = y alpha` for the margin
/// losses): where `phi*(-alpha, y)` is finite.
pub fn in_domain(loss: LossKind, alpha: f64, y: f64) -> bool {
    let b = y * alpha;
    match loss {
        LossKind::Hinge | LossKind::SmoothHinge { .. } | LossKind::Logistic => (0.0..=1.0).contains(&b),
        LossKind::SquaredHinge => b >= 0.0,
        LossKind::Squared => alpha.is_finite(),
        LossKind::Absolute | LossKind::EpsilonInsensitive { .. } => alpha.abs() <= 1.0,
        LossKind::Quantile { quantile } => (quantile - 1.0..=quantile).contains(&alpha),
        LossKind::MulticlassHinge { .. } | LossKind::Multinomial => unreachable!("scalar losses only"),
    }
}

/// `phi*(-alpha, y) = sup_a (-alpha a - phi(a, y))` on the dual domain, and the sum of the
/// absolute values of its parts (they can cancel: `alpha^2 / 2 - alpha y`).
pub fn conj_neg(loss: LossKind, alpha: f64, y: f64) -> (f64, f64) {
    let b = y * alpha;
    let parts: [f64; 2] = match loss {
        LossKind::Hinge => [-b, 0.0],
        LossKind::SmoothHinge { smoothing } => [-b, smoothing * b * b / 2.0],
        LossKind::SquaredHinge => [-b, b * b / 4.0],
        LossKind::Logistic => {
            // (1 - b) ln(1 - b) through ln_1p: ln(1 - b) of a rounded 1 - b loses b's digits.
            let xlogx = |t: f64| if t > 0.0 { t * t.ln() } else { 0.0 };
            [xlogx(b), if b < 1.0 { (1.0 - b) * (-b).ln_1p() } else { 0.0 }]
        }
        LossKind::Squared => [alpha * alpha / 2.0, -alpha * y],
        LossKind::Absolute | LossKind::Quantile { .. } => [-alpha * y, 0.0],
        LossKind::EpsilonInsensitive { epsilon } => [epsilon * alpha.abs(), -alpha * y],
        LossKind::MulticlassHinge { .. } | LossKind::Multinomial => unreachable!("scalar losses only"),
    };
    (parts[0] + parts[1], parts[0].abs() + parts[1].abs())
}

/// `sign(u) max(|u| - t, 0)`; NaN for an infinite `u` against an infinite `t` (undefined).
pub fn soft(u: f64, t: f64) -> f64 {
    if u.abs() <= t {
        0.0
    } else {
        u.signum() * (u.abs() - t)
    }
}

/// A score with the bound on its rounding error.
struct Score {
    a: f64,
    error: f64,
}

impl Objective<'_> {
    fn n(&self) -> usize {
        self.y.len()
    }

    fn weight(&self, i: usize) -> f64 {
        self.s.map_or(1.0, |s| s[i])
    }

    fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.d..(i + 1) * self.d]
    }

    /// `x_i . w + b`; its error is [`DOT`] times its terms and the label (the loss of a
    /// regression row reads `a - y`), plus the absolute error of each product that underflows
    /// (at most `2^-1074`, with no relative precision left): a huge sample weight or `1 / l2`
    /// magnifies it (fuzz: subnormal features, weights `1e219`, every score rounded to 0).
    fn score(&self, i: usize, coef: &[f64], intercept: f64) -> Score {
        let terms = self.row(i).iter().zip(coef).map(|(x, w)| x * w);
        let (a, size) = terms.fold((intercept, intercept.abs()), |(a, m), t| (a + t, m + t.abs()));
        let underflow = (self.d + 1) as f64 * f64::from_bits(1);
        Score { a, error: DOT * (size + self.y[i].abs()) + underflow }
    }

    /// The loss of row `i` at score `a` and how much it can move within the score's error.
    fn loss_at(&self, i: usize, score: &Score) -> (f64, f64) {
        let (y, a) = (self.y[i], score.a);
        let value = phi(self.loss, a, y);
        let moved = [a - score.error, a + score.error].map(|b| (phi(self.loss, b, y) - value).abs());
        (value, moved[0].max(moved[1]))
    }

    /// `P(w, b)` (every term `>= 0`).
    pub fn primal(&self, coef: &[f64], intercept: f64) -> Value {
        assert_eq!(coef.len(), self.d, "model width");
        let nf = self.n() as f64;
        let (mut loss, mut moved) = (0.0, 0.0);
        for i in (0..self.n()).filter(|&i| self.weight(i) > 0.0) {
            let (value, error) = self.loss_at(i, &self.score(i, coef, intercept));
            loss += self.weight(i) * value;
            moved += self.weight(i) * error;
        }
        // The intercept feature's weight b / c is only known through b = c (b / c), which has
        // few digits left when it is subnormal.
        let slot = if self.bias > 0.0 { intercept / self.bias } else { 0.0 };
        let slot_digits = if slot == 0.0 { 0.0 } else { DOT + f64::from_bits(1) / intercept.abs() };
        let sq = coef.iter().map(|w| w * w).sum::<f64>() + slot * slot;
        let l1 = coef.iter().map(|w| w.abs()).sum::<f64>();
        let value = loss / nf + self.l2 / 2.0 * sq + self.l1 * l1;
        let error = REL * value
            + moved / nf
            + 2.0 * self.l2 * slot * slot * slot_digits
            + self.underflow_of_squares()
            + self.underflow_of_rows();
        Value { value, error }
    }

    /// The primal point of the duals: `w(alpha)` and, in slot `d`, the weight `b(alpha) / c` of
    /// the intercept feature (needs `l2 > 0`), with the error bound of each slot (`DOT` times
    /// the terms of its dual sum; the link is 1-Lipschitz). Each `alpha_i`, and each product
    /// `s_i alpha_i`, is known to the subnormal grid at best, as in [`Self::lasso_dual`]: a
    /// solver that works in the scaled duals `sqrt(s_i) alpha_i` (coordinate descent) sums
    /// them with another rounding (fuzz: weights `1.2e-315`, `c = 8.9e299`, the intercept
    /// slot `1e-24` apart).
    pub fn model_of(&self, alpha: &[f64]) -> (Vec<f64>, Vec<f64>) {
        assert!(self.l2 > 0.0, "the dual needs l2 > 0");
        let scale = 1.0 / (self.l2 * self.n() as f64);
        let (mut u, mut size) = (vec![0.0; self.d + 1], vec![0.0; self.d + 1]);
        let grid = f64::from_bits(2);
        for (i, &a) in alpha.iter().enumerate() {
            let sa = self.weight(i) * a;
            for ((uj, mj), x) in u.iter_mut().zip(&mut size).zip(self.row(i).iter().chain([&self.bias])) {
                *uj += sa * x;
                *mj += (sa * x).abs() + grid * (1.0 + self.weight(i)) * x.abs() / DOT;
            }
        }
        let t = self.l1 / self.l2;
        let mut w: Vec<f64> = u[..self.d].iter().map(|&uj| soft(uj * scale, t)).collect();
        w.push(u[self.d] * scale);
        (w, size.iter().map(|m| DOT * m * scale + UNDERFLOW).collect())
    }

    /// `D(alpha)` (needs `l2 > 0`; every `alpha_i` in its dual domain).
    pub fn dual(&self, alpha: &[f64]) -> Value {
        assert_eq!(alpha.len(), self.n(), "one dual per row");
        let nf = self.n() as f64;
        let (mut conj, mut size) = (0.0, 0.0);
        for (i, &a) in alpha.iter().enumerate().filter(|&(i, _)| self.weight(i) > 0.0) {
            let (value, parts) = conj_neg(self.loss, a, self.y[i]);
            conj += self.weight(i) * value;
            size += self.weight(i) * parts;
        }
        let (w, error) = self.model_of(alpha);
        let reg = self.l2 / 2.0 * w.iter().map(|w| w * w).sum::<f64>();
        let moved = self.l2 * w.iter().zip(&error).map(|(w, e)| (w.abs() + e) * e).sum::<f64>();
        Value {
            value: -conj / nf - reg,
            error: REL * (size / nf + reg) + moved + self.underflow_of_squares() + self.underflow_of_rows(),
        }
    }

    /// Absolute slack of the weighted row terms: each of the few operations that make a row's
    /// loss, conjugate or `alpha a` term (and this file's own `phi(a +- e) - phi(a)`) loses up
    /// to `2^-1074` when its result underflows, before the row's weight multiplies it. A huge
    /// weight magnifies that (fuzz: weights `3.6e233`, labels `1e-150`, duals `1e-235`: every
    /// `alpha_i a_i` is 0 in one order of evaluation and `1.6e-152 / n` in another).
    fn underflow_of_rows(&self) -> f64 {
        const OPS_PER_ROW: f64 = 8.0;
        let weights: f64 = (0..self.n()).map(|i| self.weight(i).max(0.0)).sum();
        OPS_PER_ROW * f64::from_bits(1) * weights / self.n() as f64
    }

    /// The Lasso's (`l2 = 0`) dual at `theta`, `D_0(theta) = -(1/n) sum_i s_i phi*(-theta_i)`,
    /// or why `theta` is not in its feasible set: `|u_j| <= l1` with `u = (1/n) sum_i s_i
    /// theta_i x_i`, and `sum_i s_i theta_i = 0` with an (unpenalised) intercept, each within
    /// [`DOT`] times its terms.
    pub fn lasso_dual(&self, theta: &[f64]) -> Result<Value, String> {
        let nf = self.n() as f64;
        let (mut u, mut size) = (vec![0.0; self.d + 1], vec![0.0; self.d + 1]);
        let (mut conj, mut parts) = (0.0, 0.0);
        // Each theta_i, and each product s_i theta_i, is known to the subnormal grid at best (a
        // balanced intercept at `c = 8.9e299` left `sum_i s_i theta_i c / n = -1.3e-24`):
        // `2^-1073 (1 + s_i) |x_ij| / n` each.
        let grid = f64::from_bits(2);
        for (i, &t) in theta.iter().enumerate().filter(|&(i, _)| self.weight(i) > 0.0) {
            let st = self.weight(i) * t;
            for ((uj, mj), x) in u.iter_mut().zip(&mut size).zip(self.row(i).iter().chain([&self.bias])) {
                *uj += st * x / nf;
                *mj += (st * x / nf).abs() + grid * (1.0 + self.weight(i)) * x.abs() / nf / DOT;
            }
            let (value, terms) = conj_neg(self.loss, t, self.y[i]);
            conj += self.weight(i) * value;
            parts += self.weight(i) * terms;
        }
        for j in 0..self.d {
            if u[j].abs() > self.l1 * (1.0 + 1e-12) + DOT * size[j] + UNDERFLOW {
                return Err(format!("lasso dual infeasible: |u_{j}| = {} > l1 = {}", u[j].abs(), self.l1));
            }
        }
        if self.bias > 0.0 && u[self.d].abs() > DOT * size[self.d] + UNDERFLOW {
            return Err(format!("lasso dual infeasible: sum_i s_i theta_i c / n = {} != 0", u[self.d]));
        }
        Ok(Value { value: -conj / nf, error: REL * parts / nf + self.underflow_of_rows() })
    }

    /// Absolute slack of `(l2 / 2) ||w||^2`: each square below `f64::MIN_POSITIVE` keeps no
    /// relative precision, and a huge `l2` (the fuzz target reaches `1e219`) magnifies what it
    /// lost into the range of the objective itself.
    fn underflow_of_squares(&self) -> f64 {
        UNDERFLOW + self.l2 * (self.d as f64 + 1.0) * f64::MIN_POSITIVE
    }

    /// The rounding allowance of a solver's duality gap evaluated, as DESIGN.md section 3 does,
    /// row by row as `phi + phi* + alpha a`: the `alpha a` terms cancel against the others, and
    /// each moves with its score.
    pub fn cross(&self, coef: &[f64], intercept: f64, alpha: &[f64]) -> f64 {
        let sum: f64 = (0..self.n())
            .filter(|&i| self.weight(i) > 0.0)
            .map(|i| {
                let score = self.score(i, coef, intercept);
                self.weight(i) * alpha[i].abs() * (REL * score.a.abs() + score.error)
            })
            .sum();
        sum / self.n() as f64
    }
}

/// Checks a fit of `x, y, s` (the dense copy; `cfg` its checked parameters) against the
/// contract, recomputing everything here: every output finite (gap trace: `>= 0`, `+inf`
/// allowed); the certificate's `gap >= 0`, `P >= D` and `P - D = gap`; its primal equal to
/// `P(coef, intercept)`; every dual in its loss's domain; `coef` the primal point `w(alpha)` of
/// the returned duals (except for Newton's and coordinate descent's primal iterates); the gap
/// `P - D` of the problem actually solved (`l2_used`) `>= 0` and equal to the returned one (a
/// Lasso solved as it is: `alpha` feasible for its dual, whose value is the certificate's); a converged fit within `tol`. Equalities hold within the
/// rounding allowances above. Returns the first violation.
pub fn check_fit(
    x: &[f64],
    y: &[f64],
    s: Option<&[f64]>,
    cfg: &FitConfig,
    r: &FitResult,
) -> Result<(), String> {
    let d = r.coef.len();
    let c = r.certificate;
    let finite = r.coef.iter().chain(&r.alpha).all(|v| v.is_finite())
        && [r.intercept[0], c.primal, c.dual, c.gap, r.l2_used, r.solved_gap].iter().all(|v| v.is_finite());
    if !finite {
        return Err(format!("non-finite output: {r:?}"));
    }
    // A check may not have had a finite bound yet (+inf: the accelerated solver's first bound at
    // an extreme l2); a NaN or negative bound is never valid.
    if r.gap_trace.iter().any(|g| g.is_nan() || *g < 0.0) {
        return Err(format!("gap trace entry NaN or < 0: {:?}", r.gap_trace));
    }
    if r.alpha.len() != y.len() || x.len() != y.len() * d {
        return Err(format!("shapes: {} duals, {} coef for {} rows", r.alpha.len(), d, y.len()));
    }
    if !(c.gap >= 0.0
        && c.primal >= c.dual
        && (c.primal - c.dual - c.gap).abs() <= REL * (c.primal.abs() + c.gap) + UNDERFLOW)
    {
        return Err(format!("certificate not a gap: {c:?}"));
    }
    if r.converged() && c.gap > cfg.tol * c.primal.max(f64::MIN_POSITIVE) {
        return Err(format!("converged but gap {} > tol {} * P {}", c.gap, cfg.tol, c.primal));
    }
    if r.epochs > cfg.max_epochs || (r.status == Status::Converged) != r.converged() {
        return Err(format!("{} epochs > max_epochs {}", r.epochs, cfg.max_epochs));
    }
    if let Some(i) =
        (0..y.len()).find(|&i| s.map_or(1.0, |s| s[i]) > 0.0 && !in_domain(cfg.loss, r.alpha[i], y[i]))
    {
        return Err(format!(
            "row {i}: dual {} outside the domain of {:?} at label {}",
            r.alpha[i], cfg.loss, y[i]
        ));
    }
    if cfg.intercept_scaling > 0.0 && !cfg.intercept_scaling.is_normal() {
        // A subnormal intercept feature c has almost no significant digits: the intercept slot
        // b / c of the objective cannot be recovered from the returned intercept b.
        return Ok(());
    }
    let user = Objective { x, d, y, s, loss: cfg.loss, l2: cfg.l2, l1: cfg.l1, bias: cfg.intercept_scaling };
    let mut p = user.primal(&r.coef, r.intercept[0]);
    // The intercept b = c w_b is rounded to the subnormal grid (2^-1074) when small: the slot
    // w_b = b / c recovered here is uncertain by u = 2^-1074 / c, which a tiny c magnifies
    // (fuzz: c = 2.3e-306, b underflowed to 0 with a slot of 1e-37), and so is its L2 term.
    if cfg.intercept_scaling > 0.0 {
        let u = f64::from_bits(1) / cfg.intercept_scaling;
        p.error += cfg.l2 * (r.intercept[0].abs() / cfg.intercept_scaling + u) * u;
    }
    if !p.value.is_finite() {
        return Ok(()); // the reference overflowed where the solver did not: nothing to compare
    }
    if (p.value - c.primal).abs() > p.error {
        return Err(format!(
            "certificate primal {} != P(coef, intercept) = {} +- {}",
            c.primal, p.value, p.error
        ));
    }
    // Pdprox certifies with a feasible dual of the saddle form (rescaled duals, `l2 = 0`
    // allowed: `solver/pdprox.rs`), not with the SDCA dual `D(alpha)` below; the checks above
    // (finite, `P - D = gap >= 0`, primal recomputed, duals in their domain) are what applies,
    // and its unit tests check `gap >= P - P*` against exact optima.
    if r.solver == "pdprox" {
        return Ok(());
    }
    // Coordinate descent solves the Lasso as it is and returns its feasible duals: the
    // certificate's dual is theirs.
    if r.l2_used == 0.0 {
        let dual = user.lasso_dual(&r.alpha)?;
        if (dual.value - c.dual).abs() > dual.error + REL * c.primal.abs() + UNDERFLOW {
            return Err(format!(
                "certificate dual {} != D_0(alpha) = {} +- {}",
                c.dual, dual.value, dual.error
            ));
        }
        return Ok(());
    }
    // The problem actually solved: the user's, or the Lasso's elastic net with l2_used.
    if cfg.l2 > 0.0 && (r.l2_used != cfg.l2 || r.solved_gap != c.gap) {
        return Err(format!("l2 > 0 but l2_used {} / solved_gap {} differ", r.l2_used, r.solved_gap));
    }
    let solved = Objective { l2: r.l2_used, ..user };
    let (p, dual) = (solved.primal(&r.coef, r.intercept[0]), solved.dual(&r.alpha));
    let gap = p.value - dual.value;
    let error = p.error + dual.error + solved.cross(&r.coef, r.intercept[0], &r.alpha);
    if !(gap.is_finite() && error.is_finite()) {
        return Ok(()); // as above
    }
    if gap < -error {
        return Err(format!("recomputed gap {gap} < 0 (P {} D {}, +- {error})", p.value, dual.value));
    }
    // The accelerated Lasso, and an accelerated fit stopped by its budget (which keeps its best
    // certified outer iterate), return the duals of an inner (proximal) problem, feasible for
    // the solved one but not matched to `coef` (FitResult's docs), and a bound of at most their
    // `P - D`. Every other fit returns a primal-dual pair and its exact gap.
    if r.solver == "accelerated" && (cfg.l2 == 0.0 || r.status != Status::Converged) {
        if r.solved_gap > gap + error {
            return Err(format!("returned bound {} > recomputed P - D = {gap} +- {error}", r.solved_gap));
        }
        return Ok(());
    }
    // Newton and coordinate descent return their primal iterate and the duals
    // `-phi'(x_i . w + b)` matched to it row by row, so `coef` is `w(alpha)` only at the optimum
    // (`solver/newton.rs`, `solver/cd.rs`); their gap is still the exact `P - D` of that pair,
    // checked below.
    if !matches!(r.solver, "newton" | "cd") {
        let (w, slot_error) = solved.model_of(&r.alpha);
        let c = cfg.intercept_scaling;
        let mut slots: Vec<(f64, f64, f64)> = (0..d).map(|j| (r.coef[j], w[j], slot_error[j])).collect();
        slots.push((r.intercept[0], c * w[d], c * slot_error[d]));
        if let Some((got, want, e)) = slots.into_iter().find(|(got, want, e)| (got - want).abs() > *e) {
            return Err(format!(
                "coef != w(alpha): {got} vs {want} +- {e} ({:?} {} vs {w:?})",
                r.coef, r.intercept[0]
            ));
        }
    }
    if (gap - r.solved_gap).abs() > error {
        return Err(format!(
            "returned gap {:e} != recomputed P - D = {gap:e} +- {error:e} (P {:e}, D {:e}; solver {}, {:?} after {} epochs)",
            r.solved_gap, p.value, dual.value, r.solver, r.status, r.epochs
        ));
    }
    Ok(())
}
