//! Gap Safe screening: features proven zero at the optimum leave the fit.
//!
//! Fercoq, Gramfort and Salmon, "Mind the duality gap: safer rules for the Lasso", ICML 2015;
//! Ndiaye, Fercoq, Gramfort and Salmon, "Gap Safe screening rules for sparsity enforcing
//! penalties", JMLR 2017 (section 3, the sphere test; section 4.2, sequential screening along a
//! path). Our objective (DESIGN.md section 3), with the intercept a constant feature of value
//! `bias` and weight `c`:
//!
//! `P(w, c) = (1/n) sum_i s_i phi(x_i . w + bias c, y_i) + l1 ||w||_1 + (l2/2)(||w||^2 + c^2)`
//!
//! (for the Lasso, `l2 = 0`, the intercept is unpenalised). Its Fenchel dual over `theta`, with
//! `u = (1/n) sum_i s_i theta_i x_i` and `u_c = (bias/n) sum_i s_i theta_i`, is
//!
//! `D(theta) = -(1/n) sum_i s_i phi*(-theta_i) - sum_j soft(u_j, l1)^2 / (2 l2) - u_c^2 / (2 l2)`
//!
//! for `l2 > 0`, and for `l2 = 0` the conjugate term alone on the set `|u_j| <= l1` (and
//! `u_c = 0` with an intercept). At the optimum `w*_j = 0` whenever `|u*_j| < l1`.
//!
//! For a `(1/gamma)`-smooth loss `phi*` is `gamma`-strongly convex, so `D` is strongly concave in
//! the norm `sum_i s_i t_i^2` with modulus `gamma / n`, and for any feasible `theta` and any `w`,
//! `(gamma / (2n)) sum_i s_i (theta_i - theta*_i)^2 <= D(theta*) - D(theta) <= P(w) - D(theta) = G`.
//! By Cauchy-Schwarz (weights `s_i`), `|u_j - u*_j| <= ||x_j||_s sqrt(2 G / (gamma n))` with
//! `||x_j||_s^2 = sum_i s_i x_ij^2`: the sphere test `|u_j| + ||x_j||_s sqrt(2 G / (gamma n)) < l1`
//! proves `w*_j = 0`. The dual point is the model's matched duals `theta_i = -phi'(x_i . w + b)`
//! (for `l2 = 0` moved into the feasible set as in [`super::lasso`]: the larger side of
//! `sum_i s_i theta_i` scaled down to balance it, then all scaled to meet the box), so along a
//! path the previous model screens the next value's problem (sequential screening).
//!
//! Screening is a reduction: the fit runs on a copy of the surviving columns, warm-started from
//! the previous model's, and its model is mapped back with zeros for the screened features. The
//! optimum of the reduced problem is the full problem's (the screened coordinates are zero at
//! the full optimum), so the reduced fit's gap bounds the full problem's suboptimality too. The
//! certificate returned is the full problem's primal at the mapped model with the smaller of
//! that gap and the full problem's own duality gap at the mapped model's matched duals (the
//! test's formula over every feature); should it miss `tol` where the reduced fit met it, the
//! full problem is fitted from the mapped model.

use super::{fit_from, meets, Certificate, FitResult, Problem, Status, Warm};
use crate::config::{FitConfig, SolverKind};
use crate::data::{CsrView, DenseView, Rows};
use crate::error::{Result, SdcaError};
use crate::loss::{with_scalar_loss, Loss};
use crate::reg::soft_threshold;

/// Whether Gap Safe screening applies to fits under `cfg`: an `l1` penalty, a smooth scalar
/// loss (squared, logistic, smooth hinge, squared hinge), no group penalty, a dual solver.
pub fn applies(cfg: &FitConfig) -> bool {
    let smooth = with_scalar_loss!(cfg.loss, |loss| Loss::smoothness(&loss) > 0.0, multiclass => false);
    smooth && cfg.l1 > 0.0 && cfg.groups.is_none() && cfg.solver != SolverKind::Pdprox
}

/// Per feature, once per problem: the sphere test's norms and the stored entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns {
    /// `||x_j||_s = sqrt(sum_i s_i x_ij^2)`.
    pub norms: Vec<f64>,
    /// Stored entries of column `j` (every entry of a dense row counts).
    pub nnz: Vec<u64>,
}

impl Columns {
    /// The columns of `problem`; one pass over the rows.
    pub fn of<D: Rows>(problem: &Problem<'_, D>) -> Self {
        let d = problem.x.n_cols();
        let (mut sq, mut nnz) = (vec![0.0; d], vec![0u64; d]);
        for i in 0..problem.n() {
            let s = problem.weight(i);
            problem.x.for_each_nz(i, |j, x| {
                sq[j] += s * x * x;
                nnz[j] += 1;
            });
        }
        Self { norms: sq.into_iter().map(f64::sqrt).collect(), nnz }
    }

    /// Stored entries of the columns not flagged in `zero`.
    pub fn nnz_kept(&self, zero: &[bool]) -> u64 {
        self.nnz.iter().zip(zero).filter(|(_, &z)| !z).map(|(c, _)| c).sum()
    }
}

/// A certificate of the full problem at a model and the `u` of its feasible duals (module
/// docs).
#[derive(Clone)]
pub(crate) struct DualPoint {
    pub certificate: Certificate,
    pub u: Vec<f64>,
}

/// The certificate at the model (`coef`, `intercept`) with its matched duals moved into the
/// feasible set, and their `u` (module docs). Two passes over the rows.
pub(crate) fn dual_point<D: Rows, L: Loss>(
    problem: &Problem<'_, D>,
    loss: L,
    cfg: &FitConfig,
    coef: &[f64],
    intercept: f64,
) -> DualPoint {
    let (n, bias) = (problem.n(), cfg.intercept_scaling);
    let (l1, l2, nf) = (cfg.l1, cfg.l2, problem.n() as f64);
    let b = if bias > 0.0 { intercept } else { 0.0 };
    let mut theta = vec![0.0; n];
    let mut data = 0.0;
    for (i, t) in theta.iter_mut().enumerate() {
        let s = problem.weight(i);
        if s > 0.0 {
            let a = problem.x.dot(i, coef) + b;
            data += s * loss.value(a, problem.y[i]);
            *t = loss.dual_of(a, problem.y[i]);
        }
    }
    let c = if bias > 0.0 { intercept / bias } else { 0.0 };
    let sq = coef.iter().map(|w| w * w).sum::<f64>() + c * c;
    let primal = data / nf + l1 * coef.iter().map(|w| w.abs()).sum::<f64>() + 0.5 * l2 * sq;
    feasible(problem, loss, cfg, theta, primal)
}

/// The certificate of `primal` (the objective at some model) with the duals `theta` (zero at
/// rows of zero weight) moved into the feasible set as in the module docs, and their `u`. One
/// pass over the rows. A `theta` outside the loss's dual domain gives the dual `-inf`.
fn feasible<D: Rows, L: Loss>(
    problem: &Problem<'_, D>,
    loss: L,
    cfg: &FitConfig,
    mut theta: Vec<f64>,
    primal: f64,
) -> DualPoint {
    let (n, d, bias) = (problem.n(), problem.x.n_cols(), cfg.intercept_scaling);
    let (l1, l2, nf) = (cfg.l1, cfg.l2, problem.n() as f64);
    if l2 == 0.0 && bias > 0.0 {
        // Balance the two sides of sum_i s_i theta_i (each theta_i moves towards 0).
        let (f_pos, f_neg) = balancing(theta.iter().enumerate().map(|(i, &t)| problem.weight(i) * t));
        for (i, t) in theta.iter_mut().enumerate() {
            *t *= if problem.weight(i) * *t > 0.0 { f_pos } else { f_neg };
        }
    }
    let mut u = vec![0.0; d];
    let mut sum = 0.0;
    for (i, &t) in theta.iter().enumerate() {
        let s = problem.weight(i);
        if s > 0.0 && t != 0.0 {
            problem.x.axpy(i, s * t / nf, &mut u);
            sum += s * t;
        }
    }
    // Into the box |u_j| <= l1: everything times l1 / top, applied as `/ top * l1` so that no
    // factor is subnormal (fuzz: a warm intercept of -1e39 at l1 = 1e-286 made l1 / top ~ 1e-322,
    // rounded to one digit, and the "feasible" dual 3.5e-4 outside the box).
    let top = u.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if l2 == 0.0 && top > l1 {
        let into = |v: &mut f64| *v = *v / top * l1;
        theta.iter_mut().for_each(into);
        u.iter_mut().for_each(into);
        sum = sum / top * l1;
    }
    let conj: f64 = (0..n)
        .filter(|&i| problem.weight(i) > 0.0)
        .map(|i| problem.weight(i) * loss.conj_neg(theta[i], problem.y[i]))
        .sum();
    let mut dual = -conj / nf;
    if l2 > 0.0 {
        let u_c = bias * sum / nf;
        // (l2/2) ||w(theta)||^2 with w = soft(u, l1) / l2: dividing before squaring keeps the
        // terms normal where u^2 / (2 l2) would underflow (fuzz: u ~ 1e-164 at l2 = 1e-93).
        let model = |v: f64| v / l2;
        let sq: f64 =
            u.iter().map(|&v| model(soft_threshold(v, l1)).powi(2)).sum::<f64>() + model(u_c).powi(2);
        dual -= 0.5 * l2 * sq;
    }
    // A dual above the primal is rounding (weak duality): the gap is then 0 and `D` is `P`.
    // (`-inf` and NaN duals leave an infinite gap: no certificate.)
    let dual = if dual.is_nan() { f64::NEG_INFINITY } else { dual };
    let gap = (primal - dual).max(0.0);
    DualPoint { certificate: Certificate { primal, dual: dual.min(primal), gap }, u }
}

/// The sequential Gap Safe test of the problem `cfg` describes, from the model (`coef`,
/// `intercept`): `true` for each feature proven zero at the optimum. `norms` are
/// [`Columns::of`]'s. All `false` when screening does not apply ([`applies`]).
pub fn gap_safe<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    norms: &[f64],
    coef: &[f64],
    intercept: f64,
) -> Result<Vec<bool>> {
    let d = problem.x.n_cols();
    if !applies(cfg) || problem.n_outputs != 1 {
        return Ok(vec![false; d]);
    }
    if coef.len() != d || norms.len() != d {
        return Err(SdcaError::Internal("screening: widths disagree; please report".into()));
    }
    let point = with_scalar_loss!(cfg.loss, |loss| {
        (dual_point(problem, loss, cfg, coef, intercept), Loss::smoothness(&loss))
    }, multiclass => return Ok(vec![false; d]));
    let (DualPoint { certificate: c, u, .. }, gamma) = point;
    let reach = reach(&c, gamma, problem.n() as f64);
    Ok(u.iter().zip(norms).map(|(&uj, &nj)| proves_zero(uj, nj, reach, cfg.l1)).collect())
}

/// The Gap Safe sphere's radius per unit of a column's norm around a dual point certified by
/// `c`, for a `(1 / gamma)`-smooth loss over `n` rows: the dual is `(gamma / n)`-strongly
/// concave in `sum_i t_i^2`. The gap computes as a difference: its rounding error is added
/// before taking the root.
pub(crate) fn reach(c: &Certificate, gamma: f64, n: f64) -> f64 {
    let gap = c.gap + 8.0 * f64::EPSILON * (c.primal.abs() + c.dual.abs());
    (2.0 * gap / (gamma * n)).sqrt()
}

/// Whether the sphere test proves a feature zero at the optimum: its `u` (or an upper bound of
/// `|u|`) plus its column's `norm` times the sphere's `reach` stays below `l1`, with a margin
/// for the rounding of `u`.
pub(crate) fn proves_zero(u: f64, norm: f64, reach: f64, l1: f64) -> bool {
    (u.abs() + norm * reach) * (1.0 + 1e-9) < l1
}

/// The surviving columns as an owned matrix: dense when every entry of the kept columns is
/// stored (a dense input), else CSR.
enum Compact {
    Dense(Vec<f64>, usize, usize),
    Csr(Vec<i64>, Vec<u32>, Vec<f64>, usize),
}

/// The factors `(f_pos, f_neg)` that make `sum_k terms_k` zero when the positive terms are
/// scaled by `f_pos` and the negative ones by `f_neg`: the larger side scaled down to the
/// smaller (the Lasso's dual with an intercept needs `sum_i s_i theta_i = 0`; module docs).
/// When the ratio of the sides is below the normal range, both are zeroed: a subnormal or
/// underflowed factor loses the balance it is meant to make (fuzz: one positive term `7e-212`
/// against `1e152`, the negative side scaled to 0 and the positive left whole), and the zero
/// dual is always feasible.
pub(crate) fn balancing(terms: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut pos, mut neg) = (0.0, 0.0);
    for t in terms {
        if t > 0.0 {
            pos += t;
        } else {
            neg -= t;
        }
    }
    if pos == neg {
        return (1.0, 1.0);
    }
    let ratio = pos.min(neg) / pos.max(neg);
    if ratio < f64::MIN_POSITIVE {
        (0.0, 0.0)
    } else if pos > neg {
        (ratio, 1.0)
    } else {
        (1.0, ratio)
    }
}

fn compact<D: Rows>(x: &D, keep: &[usize]) -> Compact {
    let (n, d) = (x.n_rows(), x.n_cols());
    let mut to = vec![u32::MAX; d];
    for (k, &j) in keep.iter().enumerate() {
        to[j] = k as u32;
    }
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0i64);
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    for i in 0..n {
        x.for_each_nz(i, |j, v| {
            if to[j] != u32::MAX {
                indices.push(to[j]);
                values.push(v);
            }
        });
        indptr.push(indices.len() as i64);
    }
    let dk = keep.len();
    if values.len() == n * dk {
        Compact::Dense(values, n, dk)
    } else {
        Compact::Csr(indptr, indices, values, dk)
    }
}

/// What a screened fit did: the fit (of the full problem), the features screened and the
/// stored entries of the matrix its passes ran over (both problems' when the full one had to
/// be fitted after all, and then no feature counts as screened).
#[derive(Debug, Clone, PartialEq)]
pub struct Screened {
    /// The fit, with the full problem's certificate.
    pub fit: FitResult,
    /// Features left out of the passes.
    pub screened: usize,
    /// Stored entries of the matrix the passes ran over (the surviving columns').
    pub nnz: u64,
}

/// Fits the problem `cfg` describes with the features flagged in `zero` left out (module docs),
/// warm-started from `warm` (a model of the full width). The model has zeros at the screened
/// features and the full problem's certificate; when that misses `tol` although the reduced
/// fit met it, the full problem is fitted from the mapped model. Errors as [`fit_from`].
pub fn fit_screened<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    warm: Option<&Warm<'_>>,
    zero: &[bool],
    columns: &Columns,
) -> Result<Screened> {
    let full_nnz = columns.nnz.iter().sum::<u64>();
    let d = problem.x.n_cols();
    let keep: Vec<usize> = (0..d).filter(|&j| !zero[j]).collect();
    let screened = d - keep.len();
    let sub_coef: Option<Vec<f64>> = warm.map(|m| keep.iter().map(|&j| m.coef[j]).collect());
    let sub_warm = match (warm, &sub_coef) {
        (Some(m), Some(c)) => Some(Warm { coef: c, intercept: m.intercept }),
        _ => None,
    };
    let (y, weights, n_outputs) = (problem.y, problem.weights, problem.n_outputs);
    let (mut fit, nnz) = match compact(problem.x, &keep) {
        Compact::Dense(values, n, dk) => {
            let view = DenseView::new(&values, n, dk)?;
            let p = Problem { x: &view, y, weights, n_outputs };
            (fit_from(&p, cfg, sub_warm.as_ref())?, values.len() as u64)
        }
        Compact::Csr(indptr, indices, values, dk) => {
            let view = CsrView::new(&indptr, &indices, &values, dk)?;
            let p = Problem { x: &view, y, weights, n_outputs };
            (fit_from(&p, cfg, sub_warm.as_ref())?, values.len() as u64)
        }
    };
    let mut coef = vec![0.0; d];
    for (k, &j) in keep.iter().enumerate() {
        coef[j] = fit.coef[k];
    }
    fit.coef = coef;
    // The full problem's certificate at the mapped model; the reduced fit's gap bounds the same
    // suboptimality (its optimum is the full one's: every screened feature is zero there), so
    // the smaller of the two gaps is certified, against the primal computed on the full problem.
    let reduced_gap = fit.certificate.gap;
    let mut c = with_scalar_loss!(cfg.loss, |loss| {
        dual_point(problem, loss, cfg, &fit.coef, fit.intercept[0]).certificate
    }, multiclass => return Err(SdcaError::Internal("screening a multiclass fit; please report".into())));
    if reduced_gap < c.gap {
        c = Certificate { primal: c.primal, dual: c.primal - reduced_gap, gap: reduced_gap };
    }
    fit.certificate = c;
    if fit.status == Status::Converged && !meets(cfg.tol, &fit.certificate) {
        let epochs = fit.epochs;
        let mut full = fit_from(problem, cfg, Some(&Warm::from(&fit)))?;
        full.epochs = full.epochs.saturating_add(epochs);
        return Ok(Screened { fit: full, screened: 0, nnz: nnz + full_nnz });
    }
    Ok(Screened { fit, screened, nnz })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FitParams;
    use crate::solver::testing::toy;
    use crate::solver::{fit, fit_path, PathParams};

    /// The sides balance exactly in the normal range, and a side too small to scale the other
    /// to (a subnormal or underflowed factor) zeroes both.
    #[test]
    fn balancing_keeps_the_sum_zero_or_gives_zero() {
        let scaled = |terms: &[f64]| {
            let (p, q) = balancing(terms.iter().copied());
            terms.iter().map(|&t| t * if t > 0.0 { p } else { q }).sum::<f64>()
        };
        assert_eq!(scaled(&[3.0, -1.0, -0.5]), 0.0);
        assert_eq!(balancing([2.0, -2.0].into_iter()), (1.0, 1.0));
        assert_eq!(balancing([0.0, -0.0].into_iter()), (1.0, 1.0));
        assert_eq!(balancing([7e-212, -1e152, -1e150].into_iter()), (0.0, 0.0));
        assert_eq!(balancing([1e-300, -1e10].into_iter()), (0.0, 0.0));
        assert_eq!(balancing([0.0, -1.0].into_iter()), (0.0, 0.0));
    }

    const SMOOTH: [(&str, bool); 4] =
        [("squared", false), ("logistic", true), ("smooth_hinge", true), ("squared_hinge", true)];

    fn params(loss: &str, l2: f64, l1: f64, intercept: bool) -> FitParams {
        FitParams {
            loss: loss.into(),
            l2,
            l1,
            fit_intercept: intercept,
            tol: 1e-9,
            max_epochs: 20_000,
            ..Default::default()
        }
    }

    /// Random problems (p > n, weights on some), every smooth loss, elastic net and Lasso, with
    /// and without an intercept: a feature the test screens at `l1` from a model fitted at a
    /// larger `l1` is zero at the optimum of `l1` (a fit certified to a relative gap of 1e-9:
    /// within its certified radius of 0 for `l2 > 0`), and the test screens some.
    #[test]
    fn screened_features_are_zero_at_the_optimum() {
        let mut screened_any = 0;
        for seed in 0..3u64 {
            let (n, d) = (30, 50);
            for (loss, cls) in SMOOTH {
                let (x, y) = toy(n, d, cls, 100 + seed);
                let view = DenseView::new(&x, n, d).unwrap();
                let weights: Vec<f64> =
                    (0..n).map(|i| 0.5 + ((i * 7 + seed as usize) % 5) as f64 / 4.0).collect();
                for (l2, intercept, weighted) in
                    [(1e-3, true, false), (0.0, true, true), (1e-2, false, true), (0.0, false, false)]
                {
                    let w = weighted.then_some(&weights[..]);
                    let base = params(loss, l2, 1.0, intercept);
                    let cfg0 = base.check().unwrap();
                    let p = Problem::new(&view, &y, w, cfg0.loss).unwrap();
                    let path = PathParams { n_l1: 2, ..Default::default() }.check(&base).unwrap();
                    let (_, z) = path.grid(&p).unwrap();
                    let l1_max = z.unwrap().l1_max;
                    let columns = Columns::of(&p);
                    for (hi, lo) in [(0.6, 0.5), (0.25, 0.2)] {
                        let case = format!(
                            "{loss} seed {seed} l2 {l2} intercept {intercept} weighted {weighted} l1 {lo}"
                        );
                        let prev = fit(
                            &p,
                            &FitParams { l1: hi * l1_max, tol: 1e-6, ..base.clone() }.check().unwrap(),
                        )
                        .unwrap();
                        let cfg = FitParams { l1: lo * l1_max, ..base.clone() }.check().unwrap();
                        let proven =
                            gap_safe(&p, &cfg, &columns.norms, &prev.coef, prev.intercept[0]).unwrap();
                        let best = fit(&p, &cfg).unwrap();
                        assert!(best.converged(), "{case}: {best:?}");
                        let radius = if l2 > 0.0 { (2.0 * best.certificate.gap / l2).sqrt() } else { 1e-4 };
                        for j in (0..d).filter(|&j| proven[j]) {
                            assert!(
                                best.coef[j].abs() <= radius,
                                "{case}: feature {j} screened but w*_j = {}",
                                best.coef[j]
                            );
                        }
                        screened_any += proven.iter().filter(|&&z| z).count();
                        // The screened fit: zeros where screened, the full problem's certificate,
                        // and the optimum's objective.
                        let s = fit_screened(&p, &cfg, Some(&Warm::from(&prev)), &proven, &columns).unwrap();
                        assert!(s.fit.converged(), "{case}: {:?}", s.fit);
                        let c = s.fit.certificate;
                        assert!(c.gap <= 1e-9 * c.primal.max(1e-300) * 1.0001, "{case}: {c:?}");
                        let ours = s.fit.certificate.primal;
                        let theirs = best.certificate.primal;
                        assert!(
                            (ours - theirs).abs() <= c.gap + best.certificate.gap + 1e-14 * theirs,
                            "{case}: {ours} vs {theirs}"
                        );
                    }
                }
            }
        }
        assert!(screened_any > 100, "the test screened only {screened_any} features in all");
    }

    /// A path with screening equals the path without, value by value (objective within 1e-8
    /// relative at tol 1e-9), and screens features on a p >> n problem.
    #[test]
    fn screened_path_equals_the_unscreened_one() {
        let (n, d) = (40, 200);
        for (loss, cls) in SMOOTH {
            let (x, y) = toy(n, d, cls, 7);
            let view = DenseView::new(&x, n, d).unwrap();
            // Elastic net: the Lasso path at tol 1e-9 can stop at max_epochs with or without
            // screening (its reduction's small l2); the screening test above covers l2 = 0.
            for l2 in [1e-4, 1e-3] {
                let base = params(loss, l2, 1.0, true);
                let run = |screening: bool| {
                    let path = PathParams { n_l1: 12, l1_min_ratio: 1e-2, screening, ..Default::default() };
                    let cfg = path.check(&base).unwrap();
                    let p = Problem::new(&view, &y, None, cfg.config(None).unwrap().loss).unwrap();
                    fit_path(&p, &cfg).unwrap()
                };
                let (on, off) = (run(true), run(false));
                assert_eq!(on.values, off.values);
                for (k, (a, b)) in on.fits.iter().zip(&off.fits).enumerate() {
                    let case = format!("{loss} l2 {l2} value {k}");
                    assert!(a.converged() && b.converged(), "{case}: {a:?} {b:?}");
                    let (pa, pb) = (a.certificate.primal, b.certificate.primal);
                    assert!((pa - pb).abs() <= 1e-8 * pb.abs(), "{case}: {pa} vs {pb}");
                }
                // Entries visited are reported (`nnz_visited`), not asserted: on this small
                // elastic net the savings are within the screening passes' own cost.
                assert!(on.screened.iter().sum::<usize>() > 0, "{loss} l2 {l2}");
                assert!(off.screened.iter().skip(1).all(|&s| s == 0));
            }
        }
    }
}
