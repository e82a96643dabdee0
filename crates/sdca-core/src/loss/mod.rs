//! Scalar losses: value, conjugate, exact dual coordinate step.
//!
//! Conventions (DESIGN.md section 3, Shalev-Shwartz & Zhang 2013): the primal loss is
//! `phi(a, y)` at the score `a = x . w + b`; each row has one dual variable `alpha` with
//! `w = grad g*(v)`, `v = (1 / (l2 n)) sum_i s_i alpha_i x_i`. For binary margin losses labels
//! are `y in {-1, +1}` and `b = alpha * y` is the box-constrained quantity.
//!
//! A loss supplies scalars and never loops; the solvers in `crate::solver` drive them.
//!
//! The solvers see every loss as a [`BlockLoss`]: `k` scores and `k` duals per row. Scalar
//! losses ([`Loss`]) are blocks of one through a blanket impl; the multiclass losses
//! ([`multiclass`]) are blocks of `k` classes. One solver path serves both, and for `k = 1` the
//! block loops have a single iteration the compiler folds away.

mod absolute;
mod epsilon_insensitive;
mod hinge;
mod logistic;
pub mod multiclass;
mod quantile;
mod smooth_hinge;
mod squared;
mod squared_hinge;

pub use absolute::Absolute;
pub use epsilon_insensitive::EpsilonInsensitive;
pub use hinge::Hinge;
pub use logistic::{sigmoid, Logistic};
pub use multiclass::{MulticlassHinge, Multinomial};
pub use quantile::Quantile;
pub use smooth_hinge::SmoothHinge;
pub use squared::Squared;
pub use squared_hinge::SquaredHinge;

/// A convex scalar loss with the pieces SDCA needs.
pub trait Loss: Copy + Send + Sync {
    /// The name users pass as `loss=`.
    const NAME: &'static str;
    /// Margin losses take labels in `{-1, +1}`; the others take any finite real label.
    const CLASSIFICATION: bool;

    /// `phi(a, y)`.
    fn value(&self, a: f64, y: f64) -> f64;

    /// `phi*(-alpha, y)`, the convex conjugate at `-alpha`; `+inf` outside its domain.
    fn conj_neg(&self, alpha: f64, y: f64) -> f64;

    /// The exact dual coordinate step (Option I of Shalev-Shwartz & Zhang 2012, Figure 1): returns
    /// `argmax_b -phi*(-b) - (b - alpha) a - (q / 2) (b - alpha)^2` with `q > 0` the scaled
    /// squared row norm `s_i ||x_i||^2 / (l2 n)`.
    fn dual_step(&self, alpha: f64, a: f64, y: f64, q: f64) -> f64;

    /// [`Loss::dual_step`] and the row's Fenchel-Young gap before it ([`Loss::block_gap`] at
    /// `alpha` and `a`), for the solvers' running gap estimate. A loss whose exact gap costs
    /// more than its step (the logistic loss: logarithms) may return a cheaper value that is
    /// exact to second order near the optimum; the estimate only decides when to certify.
    #[inline]
    fn dual_step_gap(&self, alpha: f64, a: f64, y: f64, q: f64) -> (f64, f64) {
        (self.dual_step(alpha, a, y, q), self.block_gap(alpha, a, y))
    }

    /// Whether the step keeps a hint per row between visits ([`Loss::dual_step_hinted`]).
    const HINTED: bool = false;

    /// [`Loss::dual_step_gap`] with the row's hint `[dual, aux]`, which the step wrote at the
    /// row's last visit (both 0 before the first). A loss whose step starts from a costly
    /// function of the dual keeps it in `aux` next to the dual it belongs to (the logistic
    /// loss: the dual's logit, one `ln` a step); the hint counts only while its dual equals
    /// `alpha` bit for bit, so a dual changed elsewhere (a parallel merge, a restart from the
    /// best iterate) only costs the function again. The default ignores the hint.
    #[inline]
    fn dual_step_hinted(&self, alpha: f64, a: f64, y: f64, q: f64, _hint: &mut [f64; 2]) -> (f64, f64) {
        self.dual_step_gap(alpha, a, y, q)
    }

    /// A dual value matching the score `a`: `-phi'(a)` (a subgradient choice for non-smooth
    /// losses). Fenchel-Young holds with equality there; used for rows that cannot move `w`
    /// (zero rows) and for warm starts.
    fn dual_of(&self, a: f64, y: f64) -> f64;

    /// `gamma` such that `phi` is `(1 / gamma)`-smooth (`phi*` is `gamma`-strongly convex);
    /// `0` for non-smooth losses. Drives the accelerated solver's `auto` rule.
    fn smoothness(&self) -> f64;

    /// For a dual box on which `phi*` is piecewise linear ([`LossKind::has_box_linear_dual`]):
    /// the one-sided slopes `(up, down)` of `-phi*(-b, y)` in `b` at `b = alpha`, `up` to the
    /// right and `down` to the left, with `up = -inf` at the box's upper end and `down = +inf`
    /// at its lower end. Minus the score, they are the dual's slopes along the row's
    /// coordinate, which is what shrinking tests (`crate::solver::shrink`). `None` (the
    /// default) for the other losses, which are never shrunk.
    fn dual_slopes(&self, _alpha: f64, _y: f64) -> Option<(f64, f64)> {
        None
    }

    /// `phi''(a, y)`, the curvature in the Newton solver's Hessian (`crate::solver::newton`);
    /// where `phi'` has a kink, one of its one-sided slopes (a generalized Hessian). Only the
    /// losses of [`LossKind::newton_ready`] override it: the default NaN marks the others, which
    /// the config never sends to Newton (and a NaN Hessian fails its factorisation with an
    /// error rather than a wrong model).
    #[inline]
    fn curvature(&self, _a: f64, _y: f64) -> f64 {
        f64::NAN
    }

    /// The Fenchel-Young gap of one row, `phi(a) + phi*(-alpha) + alpha a >= 0`: zero exactly
    /// when `alpha` and `a` are optimal for each other; the mean over rows is the duality gap.
    #[inline]
    fn block_gap(&self, alpha: f64, a: f64, y: f64) -> f64 {
        self.value(a, y) + self.conj_neg(alpha, y) + alpha * a
    }

    /// Everything the Newton solver needs of a row at the score `a`, in one call: the matched
    /// dual ([`Loss::dual_of`]), `phi(a)`, the Fenchel-Young gap of that pair (zero up to
    /// rounding; kept so the certificate is the exact `P - D`) and [`Loss::curvature`]. A loss
    /// whose pieces share work overrides it: the logistic loss needs one `exp` and one `ln_1p`
    /// instead of six transcendental calls, most of a small dense group's fit.
    #[inline]
    fn matched(&self, a: f64, y: f64) -> Matched {
        let alpha = self.dual_of(a, y);
        let value = self.value(a, y);
        let gap = value + self.conj_neg(alpha, y) + alpha * a;
        Matched { alpha, value, gap, curvature: self.curvature(a, y) }
    }
}

/// A row's terms at a score `a` with its matched dual ([`Loss::matched`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Matched {
    /// `-phi'(a)`: the dual matched to `a`.
    pub alpha: f64,
    /// `phi(a)`.
    pub value: f64,
    /// `phi(a) + phi*(-alpha) + alpha a`, zero up to rounding.
    pub gap: f64,
    /// `phi''(a)` (NaN where [`Loss::curvature`] is not defined).
    pub curvature: f64,
}

/// A loss as the solvers see it: `k` scores `a` and `k` duals `alpha` per row (`k = 1` for
/// scalar losses), with the same pieces as [`Loss`] on slices of length `k`.
pub trait BlockLoss: Copy + Send + Sync {
    /// Classification losses take class labels (`{-1, +1}`, or class indices for `k > 1`).
    const CLASSIFICATION: bool;
    /// `k = 1` is known at compile time (scalar losses), so the solvers' block loops fold to
    /// scalar code; `false` for losses whose `k` is only known at run time.
    const SCALAR: bool = false;

    /// The name users pass as `loss=`.
    fn name(&self) -> &'static str;

    /// Scores (and duals) per row.
    fn k(&self) -> usize;

    /// `phi(a, y)`.
    fn value(&self, a: &[f64], y: f64) -> f64;

    /// `phi*(-alpha, y)`; `+inf` outside the dual domain.
    fn conj_neg(&self, alpha: &[f64], y: f64) -> f64;

    /// The exact block step: writes into `out` the maximiser over `b` of
    /// `-phi*(-b) - (b - alpha) . a - (q / 2) ||b - alpha||^2`, `q > 0` the scaled squared row
    /// norm (`a` are the scores at the current model, which includes `alpha`'s contribution).
    fn dual_step(&self, alpha: &[f64], a: &[f64], y: f64, q: f64, out: &mut [f64]);

    /// [`BlockLoss::dual_step`], returning the row's gap before it (an estimate of
    /// [`BlockLoss::block_gap`] at `alpha` and `a`, exact by default; see
    /// [`Loss::dual_step_gap`]).
    #[inline]
    fn dual_step_gap(&self, alpha: &[f64], a: &[f64], y: f64, q: f64, out: &mut [f64]) -> f64 {
        self.dual_step(alpha, a, y, q, out);
        self.block_gap(alpha, a, y)
    }

    /// Whether the step keeps a hint per row ([`Loss::HINTED`]; never for blocks).
    const HINTED: bool = false;

    /// [`BlockLoss::dual_step_gap`] with the row's hint ([`Loss::dual_step_hinted`]).
    #[inline]
    fn dual_step_hinted(
        &self,
        alpha: &[f64],
        a: &[f64],
        y: f64,
        q: f64,
        out: &mut [f64],
        _hint: &mut [f64; 2],
    ) -> f64 {
        self.dual_step_gap(alpha, a, y, q, out)
    }

    /// A dual matching the scores `a` (Fenchel-Young with equality), written into `out`.
    fn dual_of(&self, a: &[f64], y: f64, out: &mut [f64]);

    /// `gamma` such that `phi` is `(1 / gamma)`-smooth in the scores; `0` when not smooth.
    fn smoothness(&self) -> f64;

    /// [`Loss::dual_slopes`] of a scalar loss; `None` for blocks (never shrunk).
    #[inline]
    fn dual_slopes(&self, _alpha: &[f64], _y: f64) -> Option<(f64, f64)> {
        None
    }

    /// For a block whose dual is a polytope on which `phi*` is linear (plain Crammer-Singer):
    /// when exactly one dual of the row is off its bound (a vertex), how far the dual's
    /// gradients `G_m` of the other classes lie below the free one's (liblinear's
    /// `Solver_MCSVM_CS`, Keerthi, Sundararajan, Chang, Hsieh and Lin, KDD 2008: `G_m = a_m +
    /// delta(m, y)` for Crammer-Singer); `-inf` off a vertex. A positive slack means the exact
    /// block step would not move the row and its Fenchel-Young gap is 0: block shrinking
    /// (`crate::solver::multiclass`) drops it. `None` (the default) for the other losses.
    #[inline]
    fn vertex_slack(&self, _alpha: &[f64], _a: &[f64], _y: f64) -> Option<f64> {
        None
    }

    /// [`Loss::curvature`] of a scalar loss (`a` of length 1); NaN for block losses, which the
    /// Newton solver does not take.
    #[inline]
    fn curvature(&self, _a: &[f64], _y: f64) -> f64 {
        f64::NAN
    }

    /// The row's Fenchel-Young gap `phi(a) + phi*(-alpha) + alpha . a >= 0`.
    #[inline]
    fn block_gap(&self, alpha: &[f64], a: &[f64], y: f64) -> f64 {
        let dot: f64 = alpha.iter().zip(a).map(|(al, a)| al * a).sum();
        self.value(a, y) + self.conj_neg(alpha, y) + dot
    }

    /// [`Loss::matched`] of a scalar loss (`a` of length 1); NaN terms for block losses, which
    /// the Newton solver does not take.
    #[inline]
    fn matched(&self, _a: &[f64], _y: f64) -> Matched {
        Matched { alpha: f64::NAN, value: f64::NAN, gap: f64::NAN, curvature: f64::NAN }
    }
}

impl<L: Loss> BlockLoss for L {
    const CLASSIFICATION: bool = L::CLASSIFICATION;
    const SCALAR: bool = true;

    fn name(&self) -> &'static str {
        L::NAME
    }
    #[inline(always)]
    fn k(&self) -> usize {
        1
    }
    #[inline(always)]
    fn value(&self, a: &[f64], y: f64) -> f64 {
        Loss::value(self, a[0], y)
    }
    #[inline(always)]
    fn conj_neg(&self, alpha: &[f64], y: f64) -> f64 {
        Loss::conj_neg(self, alpha[0], y)
    }
    #[inline(always)]
    fn dual_step(&self, alpha: &[f64], a: &[f64], y: f64, q: f64, out: &mut [f64]) {
        out[0] = Loss::dual_step(self, alpha[0], a[0], y, q);
    }
    #[inline(always)]
    fn dual_step_gap(&self, alpha: &[f64], a: &[f64], y: f64, q: f64, out: &mut [f64]) -> f64 {
        let (step, gap) = Loss::dual_step_gap(self, alpha[0], a[0], y, q);
        out[0] = step;
        gap
    }
    const HINTED: bool = L::HINTED;
    #[inline(always)]
    fn dual_step_hinted(
        &self,
        alpha: &[f64],
        a: &[f64],
        y: f64,
        q: f64,
        out: &mut [f64],
        hint: &mut [f64; 2],
    ) -> f64 {
        let (step, gap) = Loss::dual_step_hinted(self, alpha[0], a[0], y, q, hint);
        out[0] = step;
        gap
    }
    #[inline(always)]
    fn dual_of(&self, a: &[f64], y: f64, out: &mut [f64]) {
        out[0] = Loss::dual_of(self, a[0], y);
    }
    #[inline(always)]
    fn smoothness(&self) -> f64 {
        Loss::smoothness(self)
    }
    #[inline(always)]
    fn curvature(&self, a: &[f64], y: f64) -> f64 {
        Loss::curvature(self, a[0], y)
    }
    #[inline(always)]
    fn block_gap(&self, alpha: &[f64], a: &[f64], y: f64) -> f64 {
        Loss::block_gap(self, alpha[0], a[0], y)
    }
    #[inline(always)]
    fn dual_slopes(&self, alpha: &[f64], y: f64) -> Option<(f64, f64)> {
        Loss::dual_slopes(self, alpha[0], y)
    }
    #[inline(always)]
    fn matched(&self, a: &[f64], y: f64) -> Matched {
        Loss::matched(self, a[0], y)
    }
}

/// Calls `$body` with `$l` bound to the concrete scalar loss of `$kind` (one monomorphised copy
/// each), or evaluates `$multiclass` for a multiclass loss. With [`with_loss`] the one place
/// where a loss name becomes a type: the solvers that take scalar losses only (Pdprox) use this
/// one directly.
macro_rules! with_scalar_loss {
    ($kind:expr, |$l:ident| $body:expr, multiclass => $multiclass:expr) => {
        match $kind {
            $crate::loss::LossKind::Hinge => {
                let $l = $crate::loss::Hinge;
                $body
            }
            $crate::loss::LossKind::SmoothHinge { smoothing } => {
                let $l = $crate::loss::SmoothHinge { smoothing };
                $body
            }
            $crate::loss::LossKind::SquaredHinge => {
                let $l = $crate::loss::SquaredHinge;
                $body
            }
            $crate::loss::LossKind::Logistic => {
                let $l = $crate::loss::Logistic;
                $body
            }
            $crate::loss::LossKind::Squared => {
                let $l = $crate::loss::Squared;
                $body
            }
            $crate::loss::LossKind::Absolute => {
                let $l = $crate::loss::Absolute;
                $body
            }
            $crate::loss::LossKind::EpsilonInsensitive { epsilon } => {
                let $l = $crate::loss::EpsilonInsensitive { epsilon };
                $body
            }
            $crate::loss::LossKind::Quantile { quantile } => {
                let $l = $crate::loss::Quantile { quantile };
                $body
            }
            $crate::loss::LossKind::MulticlassHinge { .. } | $crate::loss::LossKind::Multinomial => {
                $multiclass
            }
        }
    };
}
pub(crate) use with_scalar_loss;

/// Calls `$body` with `$l` bound to the concrete loss of `$kind` as a [`BlockLoss`] (one
/// monomorphised copy each); `$k` is the number of classes of a multiclass loss.
macro_rules! with_loss {
    ($kind:expr, $k:expr, |$l:ident| $body:expr) => {
        $crate::loss::with_scalar_loss!($kind, |$l| $body, multiclass => match $kind {
            $crate::loss::LossKind::MulticlassHinge { smoothing } => {
                let $l = $crate::loss::MulticlassHinge { k: $k, smoothing };
                $body
            }
            _ => {
                let $l = $crate::loss::Multinomial { k: $k };
                $body
            }
        })
    };
}
pub(crate) use with_loss;

/// The loss chosen by name, with its parameters (checked in [`crate::config`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossKind {
    /// `max(0, 1 - y a)`.
    Hinge,
    /// Smoothed hinge with parameter `smoothing` (`gamma` of Shalev-Shwartz & Zhang 2013 eq. 6).
    SmoothHinge {
        /// Width of the quadratic piece, `> 0`.
        smoothing: f64,
    },
    /// `max(0, 1 - y a)^2`.
    SquaredHinge,
    /// `log(1 + exp(-y a))`.
    Logistic,
    /// `(a - y)^2 / 2`.
    Squared,
    /// `|a - y|`.
    Absolute,
    /// `max(0, |a - y| - epsilon)`.
    EpsilonInsensitive {
        /// Half-width of the insensitive tube, `>= 0`.
        epsilon: f64,
    },
    /// Pinball loss `tau (y - a)_+ + (1 - tau) (a - y)_+`.
    Quantile {
        /// The quantile level `tau`, in `(0, 1)`.
        quantile: f64,
    },
    /// Crammer-Singer `max_j (delta(j, y) + a_j - a_y)`, smoothed when `smoothing > 0`.
    MulticlassHinge {
        /// `gamma >= 0` of the smoothed loss (`0`: plain).
        smoothing: f64,
    },
    /// Softmax cross-entropy `log sum_j exp(a_j) - a_y`.
    Multinomial,
}

impl LossKind {
    /// Every accepted name, for error messages.
    pub const NAMES: &'static [&'static str] = &[
        "hinge",
        "smooth_hinge",
        "squared_hinge",
        "logistic",
        "squared",
        "absolute",
        "epsilon_insensitive",
        "quantile",
        "multiclass_hinge",
        "multiclass_smooth_hinge",
        "multinomial",
    ];

    /// The user-facing name.
    pub fn name(&self) -> &'static str {
        with_loss!(*self, 2, |l| BlockLoss::name(&l))
    }

    /// Whether labels are classes with one score vector of `k` classes per row.
    pub fn is_multiclass(&self) -> bool {
        matches!(self, Self::MulticlassHinge { .. } | Self::Multinomial)
    }

    /// `gamma` of the loss: `phi` is `(1/gamma)`-smooth; `0` when it is not smooth.
    pub fn smoothness(&self) -> f64 {
        with_loss!(*self, 2, |l| BlockLoss::smoothness(&l))
    }

    /// Whether the loss is a maximum of linear functions over a box of duals, so
    /// `phi*(-alpha)` is linear (or, for `epsilon_insensitive`, linear plus `epsilon |alpha|`) on
    /// a box (Yang et al. 2015): Pdprox's bilinear saddle form.
    pub fn has_box_linear_dual(&self) -> bool {
        matches!(self, Self::Hinge | Self::Absolute | Self::EpsilonInsensitive { .. } | Self::Quantile { .. })
    }

    /// The losses `solver="pdprox"` accepts: the box-linear ones, and `squared`, whose dual
    /// step ([`Loss::dual_step`]) is also the exact prox of its conjugate (Chambolle-Pock's dual
    /// step with a quadratic `phi*`).
    pub fn pdprox_ready(&self) -> bool {
        self.has_box_linear_dual() || matches!(self, Self::Squared)
    }

    /// The losses `solver="newton"` accepts: scalar losses with a (generalized) second
    /// derivative, [`Loss::curvature`].
    pub fn newton_ready(&self) -> bool {
        matches!(self, Self::Logistic | Self::Squared | Self::SquaredHinge | Self::SmoothHinge { .. })
    }

    /// Whether labels must be binary classes.
    pub fn is_classification(&self) -> bool {
        matches!(self, Self::Hinge | Self::SmoothHinge { .. } | Self::SquaredHinge | Self::Logistic)
    }
}

/// [`Loss::dual_slopes`] on the box `[lo, hi]` given the slopes inside it: an end has no
/// slope pointing out of the box (`-inf` up at `hi`, `+inf` down at `lo`). The duals sit exactly
/// on an end, as [`clamp`] returns the bound itself.
#[inline(always)]
pub(crate) fn box_slopes(alpha: f64, lo: f64, hi: f64, up: f64, down: f64) -> Option<(f64, f64)> {
    let up = if alpha >= hi { f64::NEG_INFINITY } else { up };
    let down = if alpha <= lo { f64::INFINITY } else { down };
    Some((up, down))
}

/// Clamp into `[lo, hi]`; NaN maps to `lo` so a degenerate step never poisons the duals.
#[inline(always)]
pub(crate) fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
    if x >= hi {
        hi
    } else if x > lo {
        x
    } else {
        lo
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Checks every loss must pass (STYLE.md 2.5): Fenchel-Young, the dual step is the 1-D
    //! argmax, block gaps are never negative.
    use super::Loss;

    /// Golden-section maximum of a concave `f` on `[lo, hi]`.
    pub fn argmax(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
        let (lo, hi) = crate::math::golden_section(lo, hi, 300, f);
        0.5 * (lo + hi)
    }

    pub fn labels<L: Loss>() -> Vec<f64> {
        if L::CLASSIFICATION {
            vec![-1.0, 1.0]
        } else {
            vec![-2.5, 0.0, 0.3, 4.0]
        }
    }

    /// The dual domain in `alpha` for a label (bounded so golden search is well defined).
    pub fn domain<L: Loss>(y: f64) -> (f64, f64) {
        if L::CLASSIFICATION {
            if y > 0.0 {
                (0.0, if L::NAME == "squared_hinge" { 200.0 } else { 1.0 })
            } else {
                (if L::NAME == "squared_hinge" { -200.0 } else { -1.0 }, 0.0)
            }
        } else if L::NAME == "squared" {
            (-100.0, 100.0)
        } else {
            (-1.0, 1.0)
        }
    }

    /// A loss with a curvature ([`Loss::curvature`] not NaN): it is one of the one-sided
    /// difference quotients of `phi' = -dual_of` at every score (both agree off the kinks).
    fn check_curvature<L: Loss>(loss: L, y: f64, scores: &[f64]) {
        let h = 1e-6;
        let slope = |a: f64| -loss.dual_of(a, y);
        for &a in scores.iter().chain(&[0.5, 0.95, -0.7]) {
            let c = loss.curvature(a, y);
            if c.is_nan() {
                continue;
            }
            let (left, right) = ((slope(a) - slope(a - h)) / h, (slope(a + h) - slope(a)) / h);
            let tol = 1e-4 * (1.0 + c.abs());
            assert!(
                c >= 0.0 && ((c - left).abs() <= tol || (c - right).abs() <= tol),
                "{}: curvature {c} vs one-sided quotients {left}, {right} (a {a} y {y})",
                L::NAME
            );
        }
    }

    pub fn check_loss<L: Loss>(loss: L) {
        let scores = [-30.0, -3.0, -1.0, -0.2, 0.0, 0.4, 0.999, 1.0, 1.7, 5.0, 40.0];
        let qs = [1e-3, 0.1, 1.0, 7.0];
        for y in labels::<L>() {
            check_curvature(loss, y, &scores);
            let (lo, hi) = domain::<L>(y);
            for &a in &scores {
                // Fenchel-Young: >= 0 everywhere, = 0 at the matching dual.
                for k in 0..=20 {
                    let alpha = lo + (hi - lo) * k as f64 / 20.0;
                    let g = loss.block_gap(alpha, a, y);
                    assert!(g >= -1e-12, "{}: FY {g} at alpha {alpha} a {a} y {y}", L::NAME);
                }
                let d = loss.dual_of(a, y);
                let g = loss.block_gap(d, a, y);
                assert!(g.abs() <= 1e-9 * (1.0 + a.abs()), "{}: FY at dual_of = {g} (a {a} y {y})", L::NAME);
                // The dual step is the exact 1-D maximiser.
                for &q in &qs {
                    for k in 0..=4 {
                        let alpha = lo + (hi - lo) * k as f64 / 4.0;
                        let obj =
                            |b: f64| -loss.conj_neg(b, y) - (b - alpha) * a - 0.5 * q * (b - alpha).powi(2);
                        let got = loss.dual_step(alpha, a, y, q);
                        assert!(
                            got >= lo - 1e-12 && got <= hi + 1e-12,
                            "{}: step {got} left the domain",
                            L::NAME
                        );
                        let best = argmax(obj, lo, hi);
                        let shortfall = obj(best) - obj(got);
                        assert!(
                            shortfall <= 1e-9 * (1.0 + obj(best).abs()),
                            "{}: step {got} vs argmax {best}, shortfall {shortfall} (alpha {alpha} a {a} y {y} q {q})",
                            L::NAME
                        );
                    }
                }
            }
            check_slopes(loss, y, lo, hi);
        }
    }

    /// [`Loss::dual_slopes`], where given, are the one-sided derivatives of `-phi*(-b)`, and
    /// infinite exactly at the box's ends (which the dual step reaches exactly).
    fn check_slopes<L: Loss>(loss: L, y: f64, lo: f64, hi: f64) {
        let ends = [loss.dual_step(0.0, -1e9, y, 1.0), loss.dual_step(0.0, 1e9, y, 1.0)];
        let f = |b: f64| -loss.conj_neg(b, y);
        let h = 1e-7;
        let grid = (0..=40).map(|k| lo + (hi - lo) * k as f64 / 40.0);
        for alpha in grid.chain(ends).chain([0.0]) {
            let near_end = ends.iter().any(|&e| alpha != e && (alpha - e).abs() < 1e-6);
            let Some((up, down)) = loss.dual_slopes(alpha, y) else { return };
            if !f(alpha).is_finite() || near_end {
                continue;
            }
            for (slope, dir, inf) in [(up, 1.0, f64::NEG_INFINITY), (down, -1.0, f64::INFINITY)] {
                let moved = f(alpha + dir * h);
                if slope == inf {
                    assert!(moved.is_infinite(), "{}: slope {slope} inside the box at {alpha}", L::NAME);
                } else {
                    let diff = dir * (moved - f(alpha)) / h;
                    assert!((diff - slope).abs() <= 1e-6, "{}: slope {slope} vs {diff} at {alpha}", L::NAME);
                }
            }
        }
    }
}
