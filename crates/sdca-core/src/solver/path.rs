//! Regularization paths: one certified model per penalty value, in decreasing order, each
//! warm-started from the previous one.
//!
//! A path runs over `l1` (the Lasso / elastic-net path, `l2` fixed, or tied to `l1` by
//! scikit-learn's `l1_ratio`: `l2 = l1 (1 - l1_ratio) / l1_ratio`) or over `l2` (a ridge-type
//! path, `l1` fixed). The `l1` grid either is given or starts at `l1_max`, the exact smallest
//! `l1` whose optimum has `w = 0`, and falls geometrically to `l1_max * l1_min_ratio`.
//!
//! # `l1_max`, with the intercept
//!
//! At `w = 0` the problem left is the intercept-only one,
//! `f(c) = (1/n) sum_i s_i phi(bias c, y_i) + (l2/2) c^2` (`c` the weight of the constant
//! feature of value `bias`, regularized by `l2` as in every fit; unpenalised for the Lasso).
//! `(w, c) = (0, c*)` is optimal for `l1` exactly when some duals `alpha_i in -d phi(bias c*)`
//! make the intercept stationary, `(bias/n) sum_i s_i alpha_i = l2 c*`, and satisfy the
//! features' condition `|u_j| <= l1` with `u = (1/n) sum_i s_i alpha_i x_i` (the `l2 w_j` term
//! vanishes at `w_j = 0`). For a smooth loss the duals are unique, `alpha_i = -phi'(bias c*)`,
//! so `l1_max = ||u||_inf` is exact; `c*` is found by bisection on `f'`, which is monotone, to
//! adjacent floating-point numbers.
//!
//! For a non-smooth loss whose intercept-only optimum sits on a kink of some rows' loss (the
//! absolute loss at the weighted median, the hinge at a margin of exactly 1), those rows'
//! duals may be anything in their subdifferential that keeps the intercept stationary. The
//! bisection's last bracket gives each row its two one-sided slopes, and one common convex
//! weight makes the intercept stationary: `w = 0` is then certified optimal at the returned
//! `l1_max`, but the smallest such value would need a linear program over the kink rows' duals,
//! so the model may stay zero somewhat below it. Without an intercept a row whose score 0 sits on
//! a kink takes [`crate::loss::Loss::dual_of`]'s choice. For multiclass losses (which need
//! `l2 > 0`) `c*` comes from a fit of the intercepts alone at a relative gap of `1e-13`, so
//! `l1_max` is exact up to that fit's accuracy.
//!
//! For `l1 >= l1_max` the model is known in closed form, `w = 0` with the intercept `c*`; the
//! path returns it with its certificate (duals `alpha` above) and `solver = "closed_form"`
//! instead of running a solver.
//!
//! # Warm starts
//!
//! Each fit starts from the previous model ([`Warm`]): its scores give matched duals
//! `-phi'(x_i . w + b)`, which for a smooth loss are the previous optimum's duals, a feasible
//! start whose gap for the next penalty is small when the grid is fine.

use super::lasso::Reduction;
use super::{cd, fit_from, screen, Certificate, FitResult, Problem, Status, Warm};
use crate::config::{FitConfig, FitParams, GroupNorm, Groups, Interrupt};
use crate::data::{DenseView, Rows};
use crate::error::{Result, SdcaError};
use crate::loss::{with_scalar_loss, BlockLoss};
use crate::reg::soft_threshold;

/// The penalty a path runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Penalty {
    /// `l1` decreases, `l2` fixed (Lasso / elastic-net path).
    L1,
    /// `l2` decreases, `l1` fixed (ridge-type path).
    L2,
}

impl Penalty {
    /// The option's name, `"l1"` or `"l2"`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::L1 => "l1",
            Self::L2 => "l2",
        }
    }
}

/// The grid of a path as the user gave it: wide types, checked by [`PathParams::check`]. The
/// defaults come from the option schema ([`crate::options::PATH_OPTIONS`]).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PathParams {
    /// Given `l1` values (a path over `l1`); `None`: computed from `l1_max`.
    pub l1: Option<Vec<f64>>,
    /// Given `l2` values (a path over `l2`, `l1` fixed).
    pub l2: Option<Vec<f64>>,
    /// Number of computed `l1` values.
    pub n_l1: i64,
    /// `l1_min / l1_max` of a computed `l1` grid, in `(0, 1)`.
    pub l1_min_ratio: f64,
    /// Number of computed `l2` values: a ridge-type path when set.
    pub n_l2: Option<i64>,
    /// `l2_min / l2_max` of a computed `l2` grid, in `(0, 1)`.
    pub l2_min_ratio: f64,
    /// scikit-learn's `ElasticNet` mixings `rho` in `(0, 1]`: each an `l1` path whose `l2` is
    /// tied to `l1`, `l2 = l1 (1 - rho) / rho` (its `alpha` is `l1 / rho`); `None`: `l2` fixed.
    /// A path takes one value ([`PathParams::check`]); a cross-validation runs one path per
    /// value ([`PathParams::check_each`], [`crate::cv::cross_validate`]).
    pub l1_ratio: Option<Vec<f64>>,
    /// Sequential Gap Safe screening ([`super::screen`]) where it applies.
    pub screening: bool,
}

impl Default for PathParams {
    fn default() -> Self {
        use crate::options::{boolean, float, int, PATH_OPTIONS as O};
        Self {
            l1: None,
            l2: None,
            n_l1: const { int(O, "n_l1") },
            l1_min_ratio: const { float(O, "l1_min_ratio") },
            n_l2: None,
            l2_min_ratio: const { float(O, "l2_min_ratio") },
            l1_ratio: None,
            screening: const { boolean(O, "screening") },
        }
    }
}

/// Where the values of a path come from.
#[derive(Debug, Clone, PartialEq)]
enum Grid {
    /// Given, sorted decreasing.
    Given(Vec<f64>),
    /// `n` values from `l1_max` down to `l1_max * ratio`, geometric.
    FromL1Max { n: usize, ratio: f64 },
    /// `n` values from `L2_TOP / n_rows` down to that times `ratio`, geometric.
    L2 { n: usize, ratio: f64 },
}

/// The top of a computed `l2` grid times the number of rows: `l2 = 1e4 / n` is scikit-learn's
/// `C = 1e-4`, the smallest of `LogisticRegressionCV`'s default `Cs`.
pub const L2_TOP: f64 = 1e4;

/// A checked path: the fit's options, the penalty it runs over and its grid.
#[derive(Debug, Clone, PartialEq)]
pub struct PathConfig {
    fit: FitParams,
    penalty: Penalty,
    grid: Grid,
    /// The `l1_ratio` of an `l1` path that ties `l2` to `l1`; `None`: `l2` fixed.
    l1_ratio: Option<f64>,
    /// `l2 / l1` along an `l1` path with an `l1_ratio`; `None`: `l2` fixed.
    l2_per_l1: Option<f64>,
    /// Sequential Gap Safe screening where it applies.
    pub screening: bool,
    /// Asked after every epoch of every fit (see [`FitConfig::interrupt`]).
    pub interrupt: Option<Interrupt>,
}

fn invalid(name: &'static str, message: impl Into<String>) -> SdcaError {
    SdcaError::InvalidParameter { name, message: message.into() }
}

fn count(name: &'static str, n: i64) -> Result<usize> {
    match n {
        1..=100_000 => Ok(n as usize),
        _ => Err(invalid(name, format!("got {n}; must be in 1..=100000 (the number of grid values)"))),
    }
}

fn ratio(name: &'static str, r: f64) -> Result<f64> {
    if r.is_finite() && r > 0.0 && r < 1.0 {
        Ok(r)
    } else {
        Err(invalid(name, format!("got {r}; must be in (0, 1) (the smallest grid value over the largest)")))
    }
}

impl PathParams {
    /// Checks the grid against the fit's options `fit` (the fixed penalty comes from them).
    /// A given grid is sorted into decreasing order. Errors name the option: a given grid
    /// that is empty or holds a value out of range, both penalties given as lists, a count or
    /// ratio out of range, more than one `l1_ratio` (a path is one curve), or fit options that
    /// do not check for some value of the grid.
    pub fn check(&self, fit: &FitParams) -> Result<PathConfig> {
        let mut paths = self.check_each(fit)?;
        match (paths.pop(), paths.is_empty()) {
            (Some(path), true) => Ok(path),
            _ => Err(invalid(
                "l1_ratio",
                format!(
                    "a path runs one l1_ratio, got {} values; pass one value, or cross-validate \
                     them with fit_cv (one path per value)",
                    paths.len() + 1
                ),
            )),
        }
    }

    /// One checked path per `l1_ratio` value, in the order given (one path without an
    /// `l1_ratio`), each as [`PathParams::check`] would check it alone. Errors as
    /// [`PathParams::check`], and for an empty `l1_ratio` list.
    pub fn check_each(&self, fit: &FitParams) -> Result<Vec<PathConfig>> {
        let (penalty, grid) = match (&self.l1, &self.l2, self.n_l2) {
            (Some(_), Some(_), _) => {
                return Err(invalid(
                    "l1",
                    "a path runs over one penalty; pass a list for l1 or for l2, not both",
                ))
            }
            (None, Some(values), _) => (Penalty::L2, Grid::Given(given("l2", values)?)),
            (Some(values), None, _) => (Penalty::L1, Grid::Given(given("l1", values)?)),
            (None, None, Some(n)) => (
                Penalty::L2,
                Grid::L2 { n: count("n_l2", n)?, ratio: ratio("l2_min_ratio", self.l2_min_ratio)? },
            ),
            (None, None, None) => (
                Penalty::L1,
                Grid::FromL1Max {
                    n: count("n_l1", self.n_l1)?,
                    ratio: ratio("l1_min_ratio", self.l1_min_ratio)?,
                },
            ),
        };
        let ratios: Vec<Option<f64>> = match &self.l1_ratio {
            None => vec![None],
            Some(_) if penalty == Penalty::L2 => {
                return Err(invalid(
                    "l1_ratio",
                    "l1_ratio ties l2 to l1 along an l1 path; drop the l2 list or n_l2, or l1_ratio",
                ))
            }
            Some(values) if values.is_empty() => {
                return Err(invalid(
                    "l1_ratio",
                    "the list is empty; pass at least one value in (0, 1], or no l1_ratio",
                ))
            }
            Some(values) => match values.iter().find(|r| !(r.is_finite() && **r > 0.0 && **r <= 1.0)) {
                Some(r) => {
                    return Err(invalid(
                        "l1_ratio",
                        format!("got {r}; each value must be in (0, 1] (1: the Lasso's l2 = 0)"),
                    ))
                }
                None => match values.iter().enumerate().find(|(i, r)| values[..*i].contains(r)) {
                    Some((_, r)) => {
                        return Err(invalid(
                            "l1_ratio",
                            format!("{r} is given twice; pass each value once (one path each)"),
                        ))
                    }
                    None => values.iter().map(|&r| Some(r)).collect(),
                },
            },
        };
        ratios
            .into_iter()
            .map(|l1_ratio| {
                let path = PathConfig {
                    fit: fit.clone(),
                    penalty,
                    grid: grid.clone(),
                    l1_ratio,
                    l2_per_l1: l1_ratio.map(|r| (1.0 - r) / r),
                    screening: self.screening,
                    interrupt: None,
                };
                // The fixed options and the grid's ends must check (e.g. l2 = 0 needs every
                // l1 > 0).
                path.config(None)?;
                if let Grid::Given(values) = &path.grid {
                    for &v in [values[0], values[values.len() - 1]].iter() {
                        path.config(Some(v))?;
                    }
                }
                Ok(path)
            })
            .collect()
    }
}

/// A given grid: finite values `>= 0`, sorted decreasing.
fn given(name: &'static str, values: &[f64]) -> Result<Vec<f64>> {
    if values.is_empty() {
        return Err(invalid(name, "the grid is empty; pass at least one value"));
    }
    if let Some(v) = values.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
        return Err(invalid(name, format!("grid value {v} is not a finite number >= 0")));
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    Ok(sorted)
}

impl PathConfig {
    /// The penalty the path runs over.
    pub fn penalty(&self) -> Penalty {
        self.penalty
    }

    /// The `l1_ratio` this path ties `l2` to `l1` by (`None`: `l2` fixed).
    pub fn l1_ratio(&self) -> Option<f64> {
        self.l1_ratio
    }

    /// The fit's options (the varying penalty as the user passed it).
    pub fn fit_params(&self) -> &FitParams {
        &self.fit
    }

    /// The same path over the given values (sorted decreasing): every fold of a
    /// cross-validation runs the grid computed once on all rows.
    pub fn with_values(&self, mut values: Vec<f64>) -> Self {
        values.sort_by(|a, b| b.total_cmp(a));
        Self { grid: Grid::Given(values), ..self.clone() }
    }

    /// The fit's options with the varying penalty at a valid stand-in value (1, or the user's
    /// value when larger): what every fit of the path shares, for checks made before the grid
    /// is known.
    pub fn representative(&self) -> FitParams {
        let mut p = self.fit.clone();
        match self.penalty {
            Penalty::L1 => {
                let l1 = p.l1.max(1.0);
                self.set_l1(&mut p, l1)
            }
            Penalty::L2 => p.l2 = p.l2.max(1.0),
        }
        p
    }

    /// Sets `l1` to `v`, and `l2` with it when the path ties them.
    fn set_l1(&self, p: &mut FitParams, v: f64) {
        p.l1 = v;
        if let Some(t) = self.l2_per_l1 {
            p.l2 = t * v;
        }
    }

    /// Whether `l2` moves with `l1` (an `l1_ratio` below 1): the zero model, which depends on
    /// `l2` through the intercept, then differs from one value to the next.
    pub fn tied(&self) -> bool {
        self.l2_per_l1.is_some_and(|t| t > 0.0)
    }

    /// The checked config of the fit at grid value `value` (`None`: of [`Self::representative`]).
    pub fn config(&self, value: Option<f64>) -> Result<FitConfig> {
        let mut p = self.representative();
        match (value, self.penalty) {
            (Some(v), Penalty::L1) => self.set_l1(&mut p, v),
            (Some(v), Penalty::L2) => p.l2 = v,
            (None, _) => {}
        }
        let mut cfg = p.check()?;
        cfg.interrupt = self.interrupt;
        Ok(cfg)
    }

    /// The grid for `problem`, decreasing, with the closed-form zero model of an `l1` path
    /// (`None` for an `l2` path).
    pub fn grid<D: Rows>(&self, problem: &Problem<'_, D>) -> Result<(Vec<f64>, Option<ZeroModel>)> {
        let zero = match self.penalty {
            Penalty::L1 if self.tied() => Some(self.tied_zero(problem)?),
            Penalty::L1 => Some(ZeroModel::of(problem, &self.config(None)?, &self.fit)?),
            Penalty::L2 => None,
        };
        let geometric = |top: f64, n: usize, ratio: f64| -> Vec<f64> {
            (0..n).map(|k| if n == 1 { top } else { top * ratio.powf(k as f64 / (n - 1) as f64) }).collect()
        };
        let values = match (&self.grid, &zero) {
            (Grid::Given(v), _) => v.clone(),
            (Grid::FromL1Max { n, ratio }, Some(z)) => {
                if z.l1_max == 0.0 {
                    // Every feature is zero (or the zero model fits exactly) at any l1: one value.
                    vec![0.0]
                } else {
                    geometric(z.l1_max, *n, *ratio)
                }
            }
            (Grid::L2 { n, ratio }, _) => geometric(L2_TOP / problem.n() as f64, *n, *ratio),
            (Grid::FromL1Max { .. }, None) => {
                return Err(SdcaError::Internal("an l1 grid without its zero model; please report".into()))
            }
        };
        Ok((values, zero))
    }
}

impl PathConfig {
    /// The zero model at the top of a tied path: `l1_max` depends on `l2 = t l1` through the
    /// intercept-only optimum, so the top is the fixed point `l1 = l1_max(t l1)`, found by
    /// iterating from the value at `l2 = t`, to adjacent floating-point numbers (without an
    /// intercept `l1_max` does not depend on `l2` and the first step is exact). The path then
    /// tests each value against the zero model at its own `l2` ([`fit_path`]).
    fn tied_zero<D: Rows>(&self, problem: &Problem<'_, D>) -> Result<ZeroModel> {
        let first = self.config(Some(1.0))?;
        let mut zero = ZeroModel::of(problem, &first, &self.fit)?;
        for _ in 0..TIED_ITERATIONS {
            if zero.l1_max == 0.0 || zero.free_of_l2(&first) {
                break;
            }
            let next = ZeroModel::of(problem, &self.config(Some(zero.l1_max))?, &self.fit)?;
            let settled = (next.l1_max - zero.l1_max).abs() <= 4.0 * f64::EPSILON * zero.l1_max;
            zero = next;
            if settled {
                break;
            }
        }
        Ok(zero)
    }
}

/// Iterations of [`PathConfig::tied_zero`]'s fixed point at the most (each an intercept-only
/// solve; the map contracts by `t` times the slope of `l1_max` in `l2`, far below 1).
const TIED_ITERATIONS: usize = 100;

/// The optimum at `w = 0` and the smallest `l1` for which it is optimal (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct ZeroModel {
    /// The smallest `l1` whose optimum is `w = 0`.
    pub l1_max: f64,
    /// The intercepts at that optimum (one per output; 0 without an intercept).
    pub intercept: Vec<f64>,
    /// Its duals, `n x k` row-major (see [`FitResult::alpha`]).
    pub alpha: Vec<f64>,
    /// The intercept-only fit of a multiclass loss (`None` for scalar losses, whose model is
    /// exact).
    intercept_fit: Option<FitResult>,
}

impl ZeroModel {
    /// The zero model of `problem` under `cfg` (its `l1` is not used; `params` are the options
    /// `cfg` was checked from, for the intercept-only fit of a multiclass loss).
    pub fn of<D: Rows>(problem: &Problem<'_, D>, cfg: &FitConfig, params: &FitParams) -> Result<Self> {
        let bias = cfg.intercept_scaling;
        let (n, d) = (problem.n(), problem.x.n_cols());
        let (alpha, intercept, intercept_fit) = with_scalar_loss!(cfg.loss, |loss| {
            let (c, alpha) = stationary_intercept(problem, loss, cfg.l2, bias)?;
            (alpha, vec![bias * c], None)
        }, multiclass => {
            let none = DenseView::new(&[], n, 0)?;
            let p0 = Problem::new(&none, problem.y, problem.weights, cfg.loss)?;
            let fit_params = FitParams { l1: 0.0, tol: 1e-13, max_epochs: 100_000, solver: "auto".into(), ..params.clone() };
            let mut c0 = fit_params.check()?;
            c0.interrupt = cfg.interrupt;
            let fit = fit_from(&p0, &c0, None)?;
            (fit.alpha.clone(), fit.intercept.clone(), Some(fit))
        });
        let k = intercept.len();
        let mut u = vec![0.0; d * k];
        let mut scaled = vec![0.0; k];
        for i in (0..n).filter(|&i| problem.weight(i) > 0.0) {
            scaled.iter_mut().zip(&alpha[i * k..(i + 1) * k]).for_each(|(t, a)| *t = problem.weight(i) * a);
            problem.x.axpy_block(i, &scaled, &mut u);
        }
        u.iter_mut().for_each(|v| *v /= n as f64);
        let l1_max = dual_norm(&u, k, cfg.groups.as_ref());
        Ok(Self { l1_max, intercept, alpha, intercept_fit })
    }

    /// Whether this zero model is also the one at any other `l2` (of fits like `cfg`): for a
    /// scalar loss without an intercept, whose duals are `dual_of(0)` at every `l2` (a
    /// multiclass loss's come from a fit at `cfg`'s `l2`).
    fn free_of_l2(&self, cfg: &FitConfig) -> bool {
        cfg.intercept_scaling == 0.0 && self.intercept_fit.is_none()
    }

    /// The model at `cfg.l1 >= l1_max` (`w = 0`) as a fit, with its certificate for `cfg`.
    pub fn fit_result<D: Rows>(&self, problem: &Problem<'_, D>, cfg: &FitConfig) -> Result<FitResult> {
        let (d, k) = (problem.x.n_cols(), self.intercept.len());
        let certificate = match &self.intercept_fit {
            // Same primal, and the same dual: the features' conjugate term is zero at l1 >= l1_max.
            Some(fit) => fit.certificate,
            None => with_scalar_loss!(cfg.loss, |loss| self.certificate(problem, loss, cfg),
                multiclass => return Err(SdcaError::Internal("a scalar zero model for a multiclass loss; please report".into())))?,
        };
        let converged = super::meets(cfg.tol, &certificate);
        Ok(FitResult {
            coef: vec![0.0; d * k],
            intercept: self.intercept.clone(),
            alpha: self.alpha.clone(),
            n_outputs: k,
            certificate,
            epochs: 0,
            status: if converged { Status::Converged } else { Status::MaxEpochs },
            gap_trace: vec![certificate.gap],
            solver: "closed_form",
            l2_used: cfg.l2,
            solved_gap: certificate.gap,
            outer_iterations: 0,
        })
    }

    /// `P(0, c*)` and the dual at `alpha` for `cfg` (the Lasso's dual through the reduction's
    /// feasible rescaling, which is exact here up to rounding).
    fn certificate<D: Rows, L: BlockLoss>(
        &self,
        problem: &Problem<'_, D>,
        loss: L,
        cfg: &FitConfig,
    ) -> Result<Certificate> {
        let (n, d, bias) = (problem.n(), problem.x.n_cols(), cfg.intercept_scaling);
        let c = if bias > 0.0 { self.intercept[0] / bias } else { 0.0 };
        let mut w = vec![0.0; d + 1];
        w[d] = c;
        let primal = problem.mean_loss(loss, bias, &w) + 0.5 * cfg.l2 * c * c;
        let dual = match Reduction::of(problem, loss, cfg)? {
            Some(mut lasso) => lasso.dual(&self.alpha),
            None => {
                let nf = n as f64;
                let mut conj = 0.0;
                let mut sum = 0.0;
                let mut u = vec![0.0; d];
                for i in (0..n).filter(|&i| problem.weight(i) > 0.0) {
                    let (s, a) = (problem.weight(i), self.alpha[i]);
                    conj += s * loss.conj_neg(&[a], problem.y[i]);
                    sum += s * a;
                    problem.x.axpy(i, s * a, &mut u);
                }
                let feats: f64 = u.iter().map(|v| soft_threshold(v / nf, cfg.l1).powi(2)).sum::<f64>();
                let icept = (bias * sum / nf).powi(2);
                -conj / nf - 0.5 * (feats + icept) / cfg.l2
            }
        };
        let gap = (primal - dual).max(0.0);
        Ok(Certificate { primal, dual: primal - gap, gap })
    }
}

/// The weight `c*` of the constant feature minimising `f(c) = (1/n) sum_i s_i phi(bias c) +
/// (l2/2) c^2`, and duals in `-d phi(bias c*)` that make it stationary (module docs). Bisection
/// on the monotone `f'(c) = l2 c - (bias/n) sum_i s_i dual_of(bias c)`.
fn stationary_intercept<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    l2: f64,
    bias: f64,
) -> Result<(f64, Vec<f64>)> {
    let (n, nf) = (problem.n(), problem.n() as f64);
    let duals_at = |c: f64, out: &mut [f64]| {
        for (i, a) in out.iter_mut().enumerate() {
            let mut one = [0.0];
            loss.dual_of(&[bias * c], problem.y[i], &mut one);
            *a = one[0];
        }
    };
    let slope = |alpha: &[f64], c: f64| {
        let sum: f64 = (0..n).map(|i| problem.weight(i) * alpha[i]).sum();
        l2 * c - bias * sum / nf
    };
    let mut alpha = vec![0.0; n];
    if bias == 0.0 {
        duals_at(0.0, &mut alpha);
        return Ok((0.0, alpha));
    }
    let at = |c: f64, out: &mut Vec<f64>| {
        duals_at(c, out);
        slope(out, c)
    };
    // Bracket the root, g(lo) < 0 < g(hi), doubling outward (g is non-decreasing).
    let (mut lo_alpha, mut hi_alpha) = (vec![0.0; n], vec![0.0; n]);
    let (mut lo, mut hi) = (-1.0f64, 1.0f64);
    let mut g_lo = at(lo, &mut lo_alpha);
    while g_lo >= 0.0 {
        if g_lo == 0.0 {
            return Ok((lo, lo_alpha));
        }
        lo *= 2.0;
        if lo < -1e300 {
            return Err(no_intercept());
        }
        g_lo = at(lo, &mut lo_alpha);
    }
    let mut g_hi = at(hi, &mut hi_alpha);
    while g_hi <= 0.0 {
        if g_hi == 0.0 {
            return Ok((hi, hi_alpha));
        }
        hi *= 2.0;
        if hi > 1e300 {
            return Err(no_intercept());
        }
        g_hi = at(hi, &mut hi_alpha);
    }
    for _ in 0..2100 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        let g = at(mid, &mut alpha);
        if g == 0.0 {
            return Ok((mid, alpha));
        }
        if g < 0.0 {
            (lo, g_lo) = (mid, g);
            std::mem::swap(&mut lo_alpha, &mut alpha);
        } else {
            (hi, g_hi) = (mid, g);
            std::mem::swap(&mut hi_alpha, &mut alpha);
        }
    }
    // Adjacent numbers: one convex weight t makes (1 - t) g(lo) + t g(hi) = 0, and the duals
    // the same combination of the two sides' (each row's one-sided slopes at a kink).
    let t = g_lo / (g_lo - g_hi);
    for (a, (&l, &h)) in alpha.iter_mut().zip(lo_alpha.iter().zip(&hi_alpha)) {
        *a = (1.0 - t) * l + t * h;
    }
    Ok(((1.0 - t) * lo + t * hi, alpha))
}

/// The dual norm of the penalty at the features' dual point `u` (`d x k` feature-major): `l1`
/// times it bounds `|u|` at an optimum with `w = 0`. `||u||_inf` for the L1 norm; for the group
/// penalties of Pdprox (`crate::config::GroupNorm`) `max_g ||u_g||_2 / sqrt(d_g)` (group lasso)
/// or `max_g ||u_g||_1` (L1-inf).
fn dual_norm(u: &[f64], k: usize, groups: Option<&Groups>) -> f64 {
    let Some(g) = groups else { return u.iter().fold(0.0f64, |m, v| m.max(v.abs())) };
    let mut acc = vec![0.0f64; g.n_groups];
    let mut size = vec![0usize; g.n_groups];
    // A group list of the wrong length fails in the fit itself (Pdprox checks it).
    for (&gj, uj) in g.of.iter().zip(u.chunks_exact(k)) {
        size[gj] += 1;
        for &v in uj {
            match g.norm {
                GroupNorm::L2 => acc[gj] += v * v,
                GroupNorm::Linf => acc[gj] += v.abs(),
            }
        }
    }
    acc.iter()
        .zip(&size)
        .map(|(&a, &s)| match g.norm {
            GroupNorm::L2 => (a / s.max(1) as f64).sqrt(),
            GroupNorm::Linf => a,
        })
        .fold(0.0, f64::max)
}

fn no_intercept() -> SdcaError {
    invalid(
        "fit_intercept",
        "the intercept-only problem has no finite minimiser (the loss keeps falling as the \
         intercept grows); set l2 > 0 or fit_intercept=False",
    )
}

/// A fitted path: the grid values in decreasing order and one model per value.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    /// The penalty the path runs over.
    pub penalty: Penalty,
    /// Its values, decreasing.
    pub values: Vec<f64>,
    /// One model per value (fewer when a fit was interrupted). Their `alpha` are empty: a path
    /// keeps only the models.
    pub fits: Vec<FitResult>,
    /// `l1_max` of an `l1` path.
    pub l1_max: Option<f64>,
    /// Per model: the features Gap Safe screening left out of its passes (all of them for the
    /// closed-form zero model).
    pub screened: Vec<usize>,
    /// Per model: the stored matrix entries its passes visited, `epochs` times those of the
    /// columns kept, plus the screening test's and the full certificate's passes (four over the
    /// whole matrix); the solvers' own certificate passes are not counted. Coordinate descent
    /// counts exactly the entries its sweeps, Newton steps and certificates read (the
    /// intercept's column included), since its fits along a path take a few passes each and
    /// rounding each up to whole passes would hide the screening's savings.
    pub nnz_visited: Vec<u64>,
    /// Per model: where the entries of `nnz_visited` went, for coordinate descent (zero for the
    /// other solvers and the closed-form zero model).
    pub visits: Vec<Visits>,
}

/// Where the stored entries a coordinate-descent fit read went, by what read them (their sum is
/// the fit's `Path::nnz_visited`). An entry counts each time it is read; a check also counts
/// one read per row (the residuals or duals it sums over), a sweep does not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Visits {
    /// Coordinate updates over the working sets (proximal Newton: its quadratic models' steps).
    pub sweeps: u64,
    /// Candidate moves: extrapolated and sign-fixed Newton points tried (proximal Newton: its
    /// line searches).
    pub moves: u64,
    /// The Gram products of the sign-fixed Newton steps.
    pub newton: u64,
    /// The inner solves' gap checks, over their working sets.
    pub inner_checks: u64,
    /// The per-row terms recomputed from the model (residuals, scores).
    pub refresh: u64,
    /// Exact products for the first dual point's features it carried only bounds of.
    pub seed: u64,
    /// The outer loop's certificates over the features not screened.
    pub checks: u64,
    /// The products that complete a certificate over the screened features and those only
    /// bounded.
    pub completion: u64,
}

impl Visits {
    /// Every part's reads.
    pub fn total(&self) -> u64 {
        let parts = [self.sweeps, self.moves, self.newton, self.inner_checks];
        parts.iter().sum::<u64>() + self.refresh + self.seed + self.checks + self.completion
    }

    /// The reads of both tallies, part by part.
    pub fn add(&self, other: &Self) -> Self {
        Self {
            sweeps: self.sweeps + other.sweeps,
            moves: self.moves + other.moves,
            newton: self.newton + other.newton,
            inner_checks: self.inner_checks + other.inner_checks,
            refresh: self.refresh + other.refresh,
            seed: self.seed + other.seed,
            checks: self.checks + other.checks,
            completion: self.completion + other.completion,
        }
    }
}

/// Fits the path of `path` on `problem`: one certified model per grid value, in decreasing
/// order, each warm-started from the previous model; for `l1 >= l1_max` the closed-form zero
/// model (module docs). With `screening` (where [`screen::applies`]), each fit first runs the
/// Gap Safe test from the previous model (the zero model for the first) and leaves the features
/// it proves zero out ([`screen::fit_screened`]; the certificate stays the full problem's).
/// Stops early (fewer models) when a fit was interrupted. Errors as [`fit_from`], for the first
/// value that fails.
pub fn fit_path<D: Rows>(problem: &Problem<'_, D>, path: &PathConfig) -> Result<Path> {
    let (values, zero) = path.grid(problem)?;
    let d = problem.x.n_cols();
    let mut fits: Vec<FitResult> = Vec::with_capacity(values.len());
    let (mut screened, mut nnz_visited) =
        (Vec::with_capacity(values.len()), Vec::with_capacity(values.len()));
    let mut visits = Vec::with_capacity(values.len());
    let mut columns: Option<screen::Columns> = None;
    let mut shared: Option<cd::Shared> = None;
    // Whether the last model came from `shared` (its next fit then resumes from its copy).
    let mut resume = false;
    let mut total: Option<u64> = None;
    let zero_coef = vec![0.0; d];
    let mut zero = zero;
    for &v in &values {
        let cfg = path.config(Some(v))?;
        let stale = zero.as_ref().is_none_or(|z| !z.free_of_l2(&cfg));
        if path.tied() && stale && fits.last().is_none_or(|f| f.solver == "closed_form") {
            // The zero model at this value's own l2, while the values are still at zero.
            zero = Some(ZeroModel::of(problem, &cfg, &path.fit)?);
        }
        let at_zero = matches!(&zero, Some(z) if path.penalty == Penalty::L1 && v >= z.l1_max);
        // The model the test starts from: the previous one, or the zero model.
        let from: Option<(&[f64], f64)> = match (fits.last(), &zero) {
            (Some(f), _) => Some((&f.coef, f.intercept.first().copied().unwrap_or(0.0))),
            (None, Some(z)) => Some((&zero_coef, z.intercept.first().copied().unwrap_or(0.0))),
            (None, None) => None,
        };
        let warm = fits.last().map(Warm::from);
        let resumed = std::mem::take(&mut resume);
        let none = Visits::default();
        let (mut fit, left_out, visited, parts) = match (&zero, from) {
            (Some(z), _) if at_zero => (z.fit_result(problem, &cfg)?, d, 0, none),
            _ if cd::chosen(&cfg, problem)? => {
                let shared = match &mut shared {
                    Some(s) => s,
                    None => shared.insert(cd::Shared::of(problem, cfg.intercept_scaling)?),
                };
                let (fit, left_out, visited, parts) =
                    cd::fit_shared(problem, &cfg, warm.as_ref(), resumed, shared, path.screening)?;
                resume = true;
                (fit, left_out, visited, parts)
            }
            (_, Some((coef, intercept)))
                if path.screening && screen::applies(&cfg) && problem.n_outputs == 1 =>
            {
                let cols = columns.get_or_insert_with(|| screen::Columns::of(problem));
                let full: u64 = cols.nnz.iter().sum();
                let proven = screen::gap_safe(problem, &cfg, &cols.norms, coef, intercept)?;
                if proven.iter().any(|&z| z) {
                    let s = screen::fit_screened(problem, &cfg, warm.as_ref(), &proven, cols)?;
                    let visited = u64::from(s.fit.epochs) * s.nnz + 4 * full;
                    (s.fit, s.screened, visited, none)
                } else {
                    let fit = fit_from(problem, &cfg, warm.as_ref())?;
                    let visited = u64::from(fit.epochs) * full + 2 * full;
                    (fit, 0, visited, none)
                }
            }
            _ => {
                let fit = fit_from(problem, &cfg, warm.as_ref())?;
                let full = *total.get_or_insert_with(|| nnz_total(problem));
                let visited = u64::from(fit.epochs) * full;
                (fit, 0, visited, none)
            }
        };
        fit.alpha = Vec::new();
        let interrupted = fit.status == Status::Interrupted;
        fits.push(fit);
        screened.push(left_out);
        nnz_visited.push(visited);
        visits.push(parts);
        if interrupted {
            break;
        }
    }
    let l1_max = zero.map(|z| z.l1_max);
    Ok(Path { penalty: path.penalty, values, fits, l1_max, screened, nnz_visited, visits })
}

/// Stored entries of the whole matrix (every entry of a dense row counts).
fn nnz_total<D: Rows>(problem: &Problem<'_, D>) -> u64 {
    let x = problem.x;
    (0..x.n_rows())
        .map(|i| {
            let mut c = 0u64;
            x.for_each_nz(i, |_, _| c += 1);
            c
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseView;
    use crate::solver::fit;
    use crate::solver::testing::{lasso_cd, toy, toy_three_classes};

    fn params(loss: &str, l2: f64) -> FitParams {
        FitParams { loss: loss.into(), l2, tol: 1e-10, max_epochs: 100_000, ..Default::default() }
    }

    /// `l1_max` is exact for smooth losses: at `l1_max` the zero model is optimal (its
    /// certificate, and a fit there, say so), and just below it the optimum is not zero (the
    /// fitted objective is below `P(0, c*)` by more than its gap).
    #[test]
    fn l1_max_is_exact_for_smooth_losses() {
        let (n, d) = (120, 6);
        for (loss, l2, cls) in [
            ("squared", 0.0, false),
            ("squared", 1e-2, false),
            ("logistic", 0.0, true),
            ("logistic", 1e-3, true),
            ("smooth_hinge", 1e-3, true),
            ("squared_hinge", 0.0, true),
        ] {
            for intercept in [true, false] {
                let (x, y) = toy(n, d, cls, 4);
                let view = DenseView::new(&x, n, d).unwrap();
                let base = FitParams { fit_intercept: intercept, ..params(loss, l2) };
                let path = PathParams { n_l1: 3, ..Default::default() }.check(&base).unwrap();
                let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
                let (values, zero) = path.grid(&p).unwrap();
                let z = zero.unwrap();
                let case = format!("{loss} l2={l2} intercept={intercept} l1_max={}", z.l1_max);
                assert_eq!(values[0], z.l1_max, "{case}");
                let at_max = z.fit_result(&p, &path.config(Some(z.l1_max)).unwrap()).unwrap();
                assert!(at_max.converged() && at_max.certificate.gap <= 1e-12, "{case}: {at_max:?}");
                assert!(at_max.coef.iter().all(|c| *c == 0.0));
                // Just below, the optimum is not zero: the zero model's objective exceeds a
                // certified fit's by more than the fit's gap.
                let below = FitParams { l1: z.l1_max * (1.0 - 1e-2), tol: 1e-12, ..base.clone() };
                let cfg = below.check().unwrap();
                let r = fit(&p, &cfg).unwrap();
                let zero_primal = z.fit_result(&p, &cfg).unwrap().certificate.primal;
                assert!(r.converged(), "{case}: {r:?}");
                assert!(zero_primal - r.certificate.primal > r.certificate.gap, "{case}: {r:?}");
                assert!(r.coef.iter().any(|c| *c != 0.0), "{case}");
                // Just above, a fit is zero up to its certified radius (the Lasso's reduction
                // and SDCA's iterates sit within rounding of the threshold).
                let above = FitParams { l1: z.l1_max * (1.0 + 1e-6), ..base.clone() }.check().unwrap();
                let r = fit(&p, &above).unwrap();
                assert!(r.converged(), "{case}");
                // Coordinate descent's exact soft-threshold returns zeros there.
                let radius = if r.l2_used > 0.0 { (2.0 * r.solved_gap / r.l2_used).sqrt() } else { 0.0 };
                assert!(r.coef.iter().all(|c| c.abs() <= radius + 1e-12), "{case}: {:?}", r.coef);
            }
        }
    }

    /// An `l1_ratio` path ties `l2 = l1 (1 - rho) / rho`: its top is the exact fixed point
    /// (the zero model certified there, its intercept at that top's own `l2`; a fit just below
    /// is not zero), and every model equals a cold fit at its `(l1, l2)`.
    #[test]
    fn l1_ratio_paths_tie_l2_to_l1() {
        let (n, d) = (120, 6);
        for (loss, cls) in [("logistic", true), ("squared", false)] {
            for intercept in [true, false] {
                let (x, y) = toy(n, d, cls, 5);
                let view = DenseView::new(&x, n, d).unwrap();
                let base = FitParams { fit_intercept: intercept, ..params(loss, 0.0) };
                let rho = 0.3;
                let grid = PathParams {
                    n_l1: 6,
                    l1_min_ratio: 1e-2,
                    l1_ratio: Some(vec![rho]),
                    ..Default::default()
                };
                let path = grid.check(&base).unwrap();
                let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
                let out = fit_path(&p, &path).unwrap();
                let case = format!("{loss} intercept={intercept}");
                let top = out.values[0];
                for (v, m) in out.values.iter().zip(&out.fits) {
                    let cfg = path.config(Some(*v)).unwrap();
                    assert!((cfg.l2 - v * (1.0 - rho) / rho).abs() <= 1e-15 * cfg.l2, "{case}");
                    let cold = fit(&p, &cfg).unwrap();
                    let (a, b) = (m.certificate, cold.certificate);
                    assert!(m.converged() && cold.converged(), "{case} l1={v}: {m:?}");
                    assert!((a.primal - b.primal).abs() <= 1e-8 * b.primal, "{case} l1={v}");
                }
                // The top: zero and certified there (closed form), not zero just below.
                assert_eq!(out.fits[0].solver, "closed_form", "{case}");
                assert!(out.fits[0].certificate.gap <= 1e-12 * out.fits[0].certificate.primal, "{case}");
                let below = path.config(Some(top * (1.0 - 1e-3))).unwrap();
                let zero = ZeroModel::of(&p, &below, &base).unwrap();
                let r = fit(&p, &below).unwrap();
                let zero_primal = zero.fit_result(&p, &below).unwrap().certificate.primal;
                assert!(zero_primal - r.certificate.primal > r.certificate.gap, "{case}: {r:?}");
                assert!(r.coef.iter().any(|c| *c != 0.0), "{case}");
            }
        }
        // l1_ratio = 1 is the fixed-l2 path at l2 = 0; out of (0, 1] or with an l2 path: errors.
        let base = params("squared", 0.0);
        let lasso = PathParams { l1_ratio: Some(vec![1.0]), ..Default::default() }.check(&base).unwrap();
        assert!(!lasso.tied());
        assert_eq!(lasso.config(Some(0.5)).unwrap().l2, 0.0);
        for bad in [
            PathParams { l1_ratio: Some(vec![0.0]), ..Default::default() },
            PathParams { l1_ratio: Some(vec![1.5]), ..Default::default() },
            PathParams { l1_ratio: Some(vec![f64::NAN]), ..Default::default() },
            PathParams { l1_ratio: Some(vec![0.5]), l2: Some(vec![1.0]), ..Default::default() },
            PathParams { l1_ratio: Some(vec![0.5]), n_l2: Some(3), ..Default::default() },
            PathParams { l1_ratio: Some(vec![]), ..Default::default() },
            PathParams { l1_ratio: Some(vec![0.5, 0.0]), ..Default::default() },
            PathParams { l1_ratio: Some(vec![0.5, 1.0]), ..Default::default() },
            PathParams { l1_ratio: Some(vec![0.5, 0.2, 0.5]), ..Default::default() },
        ] {
            let err = bad.check(&base).unwrap_err().to_string();
            assert!(err.contains("l1_ratio"), "{err}");
        }
        // Several values: one path each, in the order given, each its own tie.
        let each = PathParams { l1_ratio: Some(vec![0.5, 1.0, 0.2]), ..Default::default() };
        let paths = each.check_each(&base).unwrap();
        let ratios: Vec<Option<f64>> = paths.iter().map(PathConfig::l1_ratio).collect();
        assert_eq!(ratios, [Some(0.5), Some(1.0), Some(0.2)]);
        let l2s: Vec<f64> = paths.iter().map(|p| p.config(Some(2.0)).unwrap().l2).collect();
        assert_eq!(l2s, [2.0, 0.0, 8.0]);
        assert!(each.check(&base).unwrap_err().to_string().contains("fit_cv"));
        assert_eq!(PathParams::default().check_each(&base).unwrap()[0].l1_ratio(), None);
    }

    /// The squared-loss Lasso's `l1_max` against its closed form `||X^T (y - ybar)||_inf / n`
    /// and against coordinate descent (zero at `l1_max`, not below).
    #[test]
    fn l1_max_of_the_lasso_matches_the_closed_form() {
        let (n, d) = (90, 5);
        let (x, y) = toy(n, d, false, 9);
        let view = DenseView::new(&x, n, d).unwrap();
        let ybar = y.iter().sum::<f64>() / n as f64;
        let want = (0..d)
            .map(|j| ((0..n).map(|i| x[i * d + j] * (y[i] - ybar)).sum::<f64>() / n as f64).abs())
            .fold(0.0f64, f64::max);
        let cfg = params("squared", 0.0);
        let path = PathParams::default().check(&cfg).unwrap();
        let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
        let z = ZeroModel::of(&p, &path.config(None).unwrap(), &cfg).unwrap();
        assert!((z.l1_max - want).abs() <= 1e-14 * want, "{} vs {want}", z.l1_max);
        assert!((z.intercept[0] - ybar).abs() <= 1e-14);
        let (w, _, _) = lasso_cd(&x, &y, d, z.l1_max, true);
        assert!(w.iter().all(|v| *v == 0.0), "{w:?}");
        let (w, _, _) = lasso_cd(&x, &y, d, z.l1_max * (1.0 - 1e-4), true);
        assert!(w.iter().any(|v| *v != 0.0), "{w:?}");
    }

    /// The absolute loss's intercept-only optimum sits on a kink (the median): the duals keep
    /// the intercept stationary, and `w = 0` is certified optimal at the returned `l1_max`.
    #[test]
    fn kinks_keep_the_intercept_stationary() {
        let (n, d) = (41, 3);
        let (x, y) = toy(n, d, false, 2);
        let view = DenseView::new(&x, n, d).unwrap();
        for l2 in [0.0, 1e-2] {
            let base = FitParams { tol: 1e-6, ..params("absolute", l2) };
            let path = PathParams::default().check(&base).unwrap();
            let cfg = path.config(None).unwrap();
            let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
            let z = ZeroModel::of(&p, &cfg, &base).unwrap();
            let sum: f64 = z.alpha.iter().sum();
            assert!((sum / n as f64 - l2 * z.intercept[0]).abs() <= 1e-12, "l2 {l2}: {sum}");
            assert!(z.alpha.iter().all(|a| (-1.0..=1.0).contains(a)));
            let r = z.fit_result(&p, &path.config(Some(z.l1_max)).unwrap()).unwrap();
            assert!(r.certificate.gap <= 1e-12, "l2 {l2}: {r:?}");
        }
    }

    /// Every model of a path equals a separate cold fit at the same penalty (objectives within
    /// their gaps, and within 1e-8 relative at a tight tolerance), for an l1 path and an l2
    /// path, and the grid is decreasing from `l1_max`.
    #[test]
    fn path_models_equal_separate_fits() {
        let (n, d) = (150, 8);
        for (loss, l2, cls) in [("logistic", 1e-3, true), ("squared", 0.0, false), ("hinge", 1e-2, true)] {
            let (x, y) = toy(n, d, cls, 7);
            let view = DenseView::new(&x, n, d).unwrap();
            let tol = if loss == "hinge" { 1e-7 } else { 1e-10 };
            let base = FitParams { tol, ..params(loss, l2) };
            let path = PathParams { n_l1: 8, l1_min_ratio: 1e-2, ..Default::default() }.check(&base).unwrap();
            let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
            let out = fit_path(&p, &path).unwrap();
            assert_eq!(out.fits.len(), 8);
            assert!(out.values.windows(2).all(|w| w[0] > w[1]));
            assert_eq!(Some(out.values[0]), out.l1_max);
            for (v, m) in out.values.iter().zip(&out.fits) {
                let cold = fit(&p, &path.config(Some(*v)).unwrap()).unwrap();
                let (a, b) = (m.certificate, cold.certificate);
                assert!(m.converged() && cold.converged(), "{loss} l1={v}: {m:?}");
                assert!((a.primal - b.primal).abs() <= a.gap + b.gap + 1e-15, "{loss} l1={v}");
                if loss != "hinge" {
                    assert!((a.primal - b.primal).abs() <= 1e-8 * b.primal, "{loss} l1={v}");
                }
            }
        }
        // A ridge path over a given l2 grid (sorted decreasing).
        let (x, y) = toy(n, d, true, 8);
        let view = DenseView::new(&x, n, d).unwrap();
        let base = params("logistic", 1.0);
        let path =
            PathParams { l2: Some(vec![1e-3, 1e-1, 1e-2]), ..Default::default() }.check(&base).unwrap();
        let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
        let out = fit_path(&p, &path).unwrap();
        assert_eq!(
            (out.penalty, out.values.clone(), out.l1_max),
            (Penalty::L2, vec![1e-1, 1e-2, 1e-3], None)
        );
        for (v, m) in out.values.iter().zip(&out.fits) {
            let cold = fit(&p, &path.config(Some(*v)).unwrap()).unwrap();
            assert!((m.certificate.primal - cold.certificate.primal).abs() <= 1e-8 * cold.certificate.primal);
        }
    }

    /// Multiclass: the intercepts-only fit gives `l1_max`; the path's first model is zero and
    /// certified, the next ones are not zero.
    #[test]
    fn multiclass_paths_start_at_zero() {
        let (n, d) = (90, 4);
        let (x, y) = toy_three_classes(n, d, 3);
        let view = DenseView::new(&x, n, d).unwrap();
        let base = FitParams { tol: 1e-9, ..params("multinomial", 1e-2) };
        let path = PathParams { n_l1: 3, l1_min_ratio: 0.1, ..Default::default() }.check(&base).unwrap();
        let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
        let out = fit_path(&p, &path).unwrap();
        assert_eq!(out.fits[0].coef, vec![0.0; 3 * d]);
        assert!(out.fits[0].converged());
        assert!(out.fits[1].coef.iter().any(|c| *c != 0.0) && out.fits[2].converged());
    }

    #[test]
    fn bad_grids_name_the_option() {
        let base = params("logistic", 1e-3);
        let cases: Vec<(PathParams, &str)> = vec![
            (PathParams { l1: Some(vec![]), ..Default::default() }, "l1"),
            (PathParams { l1: Some(vec![0.1, f64::NAN]), ..Default::default() }, "l1"),
            (PathParams { l2: Some(vec![-1.0]), ..Default::default() }, "l2"),
            (PathParams { l1: Some(vec![0.1]), l2: Some(vec![0.1]), ..Default::default() }, "l1"),
            (PathParams { n_l1: 0, ..Default::default() }, "n_l1"),
            (PathParams { l1_min_ratio: 1.0, ..Default::default() }, "l1_min_ratio"),
            (PathParams { n_l2: Some(-1), ..Default::default() }, "n_l2"),
            (PathParams { n_l2: Some(3), l2_min_ratio: 0.0, ..Default::default() }, "l2_min_ratio"),
        ];
        for (p, name) in cases {
            let err = p.check(&base).unwrap_err();
            assert!(matches!(err, SdcaError::InvalidParameter { name: n, .. } if n == name), "{err}");
        }
        // The Lasso needs every l1 > 0: a grid reaching 0 fails on the fit's own check.
        let lasso = params("squared", 0.0);
        let err = PathParams { l1: Some(vec![0.1, 0.0]), ..Default::default() }.check(&lasso).unwrap_err();
        assert!(matches!(err, SdcaError::InvalidParameter { name: "l2", .. }), "{err}");
    }
}
