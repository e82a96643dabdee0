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

/// A value with the magnitude its rounding error scales with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    /// The value.
    pub value: f64,
    /// Sum of the absolute values of its terms.
    pub scale: f64,
}

/// `phi(a, y)` of every loss (DESIGN.md section 3; `smooth_hinge` is `sdca.txt` eq. 6).
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
    }
}

/// `phi*(-alpha, y) = sup_a (-alpha a - phi(a, y))`; `+inf` off the dual domain. For the margin
/// losses `b = y alpha` is the box-constrained quantity.
pub fn conj_neg(loss: LossKind, alpha: f64, y: f64) -> f64 {
    let b = y * alpha;
    let in_box = (0.0..=1.0).contains(&b);
    match loss {
        LossKind::Hinge if in_box => -b,
        LossKind::SmoothHinge { smoothing } if in_box => -b + smoothing * b * b / 2.0,
        LossKind::SquaredHinge if b >= 0.0 => -b + b * b / 4.0,
        LossKind::Logistic if in_box => {
            let xlogx = |t: f64| if t > 0.0 { t * t.ln() } else { 0.0 };
            xlogx(b) + xlogx(1.0 - b)
        }
        LossKind::Squared => alpha * alpha / 2.0 - alpha * y,
        LossKind::Absolute if alpha.abs() <= 1.0 => -alpha * y,
        LossKind::EpsilonInsensitive { epsilon } if alpha.abs() <= 1.0 => epsilon * alpha.abs() - alpha * y,
        _ => f64::INFINITY,
    }
}

/// `sign(u) max(|u| - t, 0)`.
pub fn soft(u: f64, t: f64) -> f64 {
    u.signum() * (u.abs() - t).max(0.0)
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

    /// `P(w, b)`: every term is `>= 0`, so the scale is the value.
    pub fn primal(&self, coef: &[f64], intercept: f64) -> Value {
        assert_eq!(coef.len(), self.d, "model width");
        let nf = self.n() as f64;
        let mut loss = 0.0;
        for i in 0..self.n() {
            let s = self.weight(i);
            if s > 0.0 {
                let a = self.row(i).iter().zip(coef).map(|(x, w)| x * w).sum::<f64>() + intercept;
                loss += s * phi(self.loss, a, self.y[i]);
            }
        }
        let slot = if self.bias > 0.0 { intercept / self.bias } else { 0.0 };
        let sq = coef.iter().map(|w| w * w).sum::<f64>() + slot * slot;
        let l1 = coef.iter().map(|w| w.abs()).sum::<f64>();
        let value = loss / nf + self.l2 / 2.0 * sq + self.l1 * l1;
        Value { value, scale: value }
    }

    /// The primal point of the duals, `(w(alpha), b(alpha))` (needs `l2 > 0`), and the largest
    /// `(1/(l2 n)) sum_i |s_i alpha_i x_ij|` over the coordinates: the scale of their rounding.
    pub fn model_of(&self, alpha: &[f64]) -> (Vec<f64>, f64, f64) {
        assert!(self.l2 > 0.0, "the dual needs l2 > 0");
        let scale = 1.0 / (self.l2 * self.n() as f64);
        let (mut u, mut u_abs) = (vec![0.0; self.d + 1], vec![0.0; self.d + 1]);
        for (i, &a) in alpha.iter().enumerate() {
            let sa = self.weight(i) * a;
            for ((uj, ej), x) in u.iter_mut().zip(&mut u_abs).zip(self.row(i).iter().chain([&self.bias])) {
                *uj += sa * x;
                *ej += (sa * x).abs();
            }
        }
        let t = self.l1 / self.l2;
        let coef = u[..self.d].iter().map(|&uj| soft(uj * scale, t)).collect();
        let rounding = u_abs.iter().fold(0.0f64, |m, e| m.max(e * scale));
        (coef, self.bias * u[self.d] * scale, rounding)
    }

    /// `D(alpha)` (needs `l2 > 0`); `-inf` when an `alpha_i` is off its loss's dual domain.
    pub fn dual(&self, alpha: &[f64]) -> Value {
        assert_eq!(alpha.len(), self.n(), "one dual per row");
        let nf = self.n() as f64;
        let (mut conj, mut conj_scale) = (0.0, 0.0);
        for (i, &a) in alpha.iter().enumerate() {
            let s = self.weight(i);
            if s > 0.0 {
                let c = s * conj_neg(self.loss, a, self.y[i]);
                conj += c;
                conj_scale += c.abs();
            }
        }
        let (coef, intercept, _) = self.model_of(alpha);
        let slot = if self.bias > 0.0 { intercept / self.bias } else { 0.0 };
        let reg = self.l2 / 2.0 * (coef.iter().map(|w| w * w).sum::<f64>() + slot * slot);
        Value { value: -conj / nf - reg, scale: conj_scale / nf + reg }
    }
}

/// Checks a fit of `x, y, s` (the dense copy; `cfg` its checked parameters) against the
/// contract, recomputing everything here: every output finite; the certificate's `gap >= 0`,
/// `P >= D` and `P - D = gap`; its primal equal to `P(coef, intercept)`; `coef` the primal
/// point `w(alpha)` of the returned duals; the gap `P - D` of the problem actually solved
/// (`l2_used`) `>= -1e-12` relative and equal to the returned one; a converged fit within `tol`.
/// Returns the first violation.
pub fn check_fit(
    x: &[f64],
    y: &[f64],
    s: Option<&[f64]>,
    cfg: &FitConfig,
    r: &FitResult,
) -> Result<(), String> {
    let d = r.coef.len();
    let c = r.certificate;
    let finite = r.coef.iter().chain(&r.alpha).chain(&r.gap_trace).all(|v| v.is_finite())
        && [r.intercept, c.primal, c.dual, c.gap, r.l2_used, r.solved_gap].iter().all(|v| v.is_finite());
    if !finite {
        return Err(format!("non-finite output: {r:?}"));
    }
    if r.alpha.len() != y.len() || x.len() != y.len() * d {
        return Err(format!("shapes: {} duals, {} coef for {} rows", r.alpha.len(), d, y.len()));
    }
    if !(c.gap >= 0.0
        && c.primal >= c.dual
        && (c.primal - c.dual - c.gap).abs() <= 1e-12 * (c.primal.abs() + c.gap))
    {
        return Err(format!("certificate not a gap: {c:?}"));
    }
    if r.converged() && c.gap > cfg.tol * c.primal.max(f64::MIN_POSITIVE) {
        return Err(format!("converged but gap {} > tol {} * P {}", c.gap, cfg.tol, c.primal));
    }
    if r.epochs > cfg.max_epochs || (r.status == Status::Converged) != r.converged() {
        return Err(format!("{} epochs > max_epochs {}", r.epochs, cfg.max_epochs));
    }
    let user = Objective { x, d, y, s, loss: cfg.loss, l2: cfg.l2, l1: cfg.l1, bias: cfg.intercept_scaling };
    let p = user.primal(&r.coef, r.intercept);
    if (p.value - c.primal).abs() > 1e-10 * p.scale {
        return Err(format!("certificate primal {} != P(coef, intercept) = {}", c.primal, p.value));
    }
    // The problem actually solved: the user's, or the Lasso's elastic net with l2_used.
    if cfg.l2 > 0.0 && (r.l2_used != cfg.l2 || r.solved_gap != c.gap) {
        return Err(format!("l2 > 0 but l2_used {} / solved_gap {} differ", r.l2_used, r.solved_gap));
    }
    let solved = Objective { l2: r.l2_used, ..user };
    let (p, dual) = (solved.primal(&r.coef, r.intercept), solved.dual(&r.alpha));
    let (gap, scale) = (p.value - dual.value, p.scale + dual.scale);
    if gap.is_nan() || gap < -1e-12 * scale {
        return Err(format!("recomputed gap {gap} < 0 (P {} D {})", p.value, dual.value));
    }
    // The accelerated Lasso returns the duals of its last inner (proximal) problem, feasible for
    // the solved one but not matched to `coef` (FitResult's docs), and a bound of at most its
    // `P - D`. The solver's `D` subtracts the proximal shift `kappa n y` from its dual sum, which
    // costs digits at the Lasso's tiny `l2_used`, hence the looser rounding allowance. Every
    // other fit returns a primal-dual pair and its exact gap.
    if r.solver == "accelerated" && cfg.l2 == 0.0 {
        if r.solved_gap > gap + 1e-6 * scale {
            return Err(format!(
                "returned bound {} > recomputed P - D = {gap} (scale {scale})",
                r.solved_gap
            ));
        }
        return Ok(());
    }
    let (w, b, rounding) = solved.model_of(&r.alpha);
    let link_err = r.coef.iter().zip(&w).map(|(a, b)| (a - b).abs()).fold((r.intercept - b).abs(), f64::max);
    if link_err > (1e-9 * rounding + 1e-300) * cfg.intercept_scaling.max(1.0) {
        return Err(format!(
            "coef != w(alpha): {:?} {} vs {w:?} {b} (error {link_err})",
            r.coef, r.intercept
        ));
    }
    if (gap - r.solved_gap).abs() > 1e-9 * scale {
        return Err(format!("returned gap {} != recomputed P - D = {gap} (scale {scale})", r.solved_gap));
    }
    Ok(())
}
