//! Cyclic coordinate descent on the primal, for the squared loss with an L1 penalty, over
//! working sets.
//!
//! Friedman, Hastie and Tibshirani, "Regularization Paths for Generalized Linear Models via
//! Coordinate Descent", Journal of Statistical Software 33(1), 2010 (the update); Massias,
//! Gramfort and Salmon, "Celer: a Fast Solver for the Lasso with Dual Extrapolation", ICML 2018
//! (working sets ranked by the dual point, Algorithm 4; dual extrapolation, section 3);
//! Bertrand, Klopfenstein, Massias et al., "Beyond L1: Faster and Better Sparse Models with
//! skglm", NeurIPS 2022 (Anderson acceleration of the primal iterates, Algorithm 2); Fercoq,
//! Gramfort and Salmon, "Mind the duality gap: safer rules for the Lasso", ICML 2015, and Ndiaye,
//! Fercoq, Gramfort and Salmon, JMLR 2017 (dynamic Gap Safe screening).
//!
//! Why a primal method: with more features than rows, or a tiny `l2` (the Lasso reduction's
//! `l2_used`), the dual of SDCA is badly conditioned (`R^2 / (l2 n)` huge) and SDCA needs
//! thousands of epochs where coordinate descent over the features needs tens: on 200 x 5,000
//! Gaussian data, a 100-value Lasso path took 91 CPU-s with SDCA (still above `tol` at many
//! values) against scikit-learn's 3.9 s (`benchmarks/paths.py`).
//!
//! The problem is the user's, `l2 = 0` included (no Lasso reduction: coordinate descent needs
//! no strong convexity):
//!
//! `P(w) = (1/(2n)) sum_i s_i (x~_i . w - y_i)^2 + l1 ||w_{:d}||_1 + (l2/2) ||w||^2`,
//!
//! `x~_i = (x_i, c)` with the intercept feature `c` in slot `d` (penalised by `l2` only, so
//! unpenalised for the Lasso). The columns are stored scaled by `sqrt(s_i)` (rows of zero
//! weight dropped) with the residuals `r_i = sqrt(s_i)(x~_i . w - y_i)`, so one coordinate's
//! update reads one column: `g_j = (1/n) sum_i x_ij r_i`, `h_j = (1/n) sum_i x_ij^2`,
//! `w_j <- soft(h_j w_j - g_j, l1) / (h_j + l2)` (no `soft` for the intercept slot), and the
//! residuals move by the column times the change.
//!
//! # The dual point and the certificate
//!
//! The squared loss's dual, in the scaled duals `t_i = sqrt(s_i) theta_i`, is
//! `D(t) = -(1/n) sum_i (t_i^2 / 2 - t_i sqrt(s_i) y_i)`, minus
//! `sum_j soft(u_j, l1)^2 / (2 l2) + u_c^2 / (2 l2)` for `l2 > 0`, where `u_j = (1/n) sum_i
//! x_ij t_i` (scaled columns) and `u_c` the same for the intercept column; for `l2 = 0` it is
//! constrained to `|u_j| <= l1` and, with an intercept, `u_c = 0`. A candidate `t` (minus the
//! residuals, or their extrapolation) is moved into that set as in [`super::screen`]: the larger
//! side of `u_c` scaled down to balance it, then everything scaled to meet the box. Each check
//! of the outer loop recomputes the residuals from the model, takes the best of the residual
//! point, the extrapolated point of the last inner solve and the best earlier point, over every
//! feature not screened (the screened ones are zero at the optimum, so that problem's optimum is
//! the full one's and its gap bounds the same suboptimality); the certificate a fit returns is
//! over every feature ("Completing the certificate" below), so it never rests on the screening
//! (should it then miss `tol`, the fit goes on without screening).
//!
//! Dynamic screening: `D` is `(1/n)`-strongly concave in `sum_i t_i^2` (the squared loss is
//! 1-smooth), so `|u_j - u*_j| <= ||x_j||_s sqrt(2 G / n)`, and a feature with
//! `|u_j| + ||x_j||_s sqrt(2 G / n) < l1` is zero at the optimum: it is set to zero and leaves
//! the fit.
//!
//! # Completing the certificate
//!
//! The full certificate needs `u_j` of the screened features too, which cost a pass over their
//! columns at every fit's end: on the dense Lasso path (200 x 5,000) that was 28% of the entries
//! visited. Most of them need no product: `u` is linear in `t`, so `|u_j(t)| <= |u_j(t_A)| +
//! ||x_j||_s ||t - t_A|| / n` for the fit's first dual point `t_A` (its anchor, whose `u` is over
//! every feature), plus the products' rounding (`n eps ||x_j|| ||t_A|| / n`). A feature whose
//! bound is below `l1` can neither change the scaling into the box nor add to the dual (its
//! `soft(u_j, l1)` is 0), so it keeps the bound; the others are computed. The certificate is the
//! one a full pass would give, bit for bit. The bounds carry into the next fit of a path as
//! upper bounds of `|u_j|` ("loose" entries of its first point): wherever one could change a
//! decision there (the scaling, or a Gap Safe test it fails), its exact `u_j` is computed first,
//! so every decision (scaling, screening, working sets) and every certificate is the one of
//! exact products. Measured on the dense Lasso path: entries visited 3.18e8 -> 2.57e8, CPU
//! 0.345 -> 0.295 s (medians of 6), the same 220 outer iterations and objectives.
//!
//! # Working sets (celer)
//!
//! After each check, the working set is the support plus the features whose constraint the
//! dual point is nearest to violating, ranked by `(l1 - |u_j|) / ||x_j||_s` (the distance of the
//! dual point to the feature's constraint hyperplane), `max(10, 2 |support|)` features in all
//! (doubled when the last inner solve did not halve the gap: the features it needed were
//! outside), plus the intercept. The inner solve is coordinate descent over the working set
//! until that subproblem's own duality gap (the dual restricted to its features, computed every
//! [`INNER_CHECK`] epochs with its extrapolated residuals) is below [`INNER_TOL`] times the
//! last certified gap. Every [`EXTRAPOLATE`] `+ 1` epochs, the inner solve tries the Anderson
//! combination of its last iterates (skglm) and keeps it when it lowers the objective: on an
//! ill-conditioned support (as many nonzeros as rows) plain coordinate descent converges
//! linearly and slowly. Every sweep counts as the share of the stored entries it visited
//! ([`super::Clock::add_pass`]).
//!
//! The outer check after an inner solve that met its tolerance starts from that solve's last
//! point: any duals certify any model, and its `u` over the working set is computed already,
//! so only the other features' products are read, at its duals, and its certificate is taken
//! against the refreshed model's objective ([`Columns::widen`]). On the `enet` row of
//! `benchmarks/paths.py` the outer checks read 28.4 -> 9.6 million entries, on the dense Lasso
//! row 14.4 -> 10.5 million, with the same outer iterations.
//!
//! # Sign-fixed Newton steps
//!
//! After each sweep, unless the step was tried for the support's current signs, the inner solve
//! tries the minimiser of `P` with those signs fixed (there `P` is quadratic: one Cholesky solve
//! of the support's Gram matrix) and keeps it when it lowers `P`; when it reached that
//! minimiser (no sign changed on the way, see [`Descent::up_to_sign_change`]), the inner solve
//! checks its gap at once, since on the right support the step lands on the subproblem's
//! optimum (a step cut short at a sign change has never met the tolerance there: on the dense
//! Lasso row, checking after those too read 16.4 million more entries for the same path). The
//! Gram products depend on the columns only, so a step computes only those of the features
//! that joined the support ([`Gram`]), each by the shorter read ([`Columns::cross`]): the
//! support's columns, or, for a sparse input, the rows of the feature's entries. The factor is
//! kept with the products and follows the support: a rank-one update of the rows after each
//! feature that leaves, a row appended for each that joins, `O(m^2)` each instead of a
//! factorisation's `m^3 / 3` (Golub and Van Loan, "Matrix Computations", section 6.5.4; the
//! rotations of LINPACK's `dchud`). Its cost, those reads plus the factor's work, is capped by
//! [`NEWTON_WORK`] passes and by [`NEWTON_SHARE`] times the entries the inner solve's sweeps
//! have visited: along a warm-started path an inner solve often needs only a few sweeps, and a
//! step costing more than those can save no more than it costs. On the `enet` row of
//! `benchmarks/paths.py` (50,000 CoNLL tokens, `l2` tied to `l1`), where the inner solves used
//! to run ten sweeps between checks, the steps took the path from 436 to 189 million entries
//! read; on the dense Lasso row, from 318 to 199 million. Updating the factor instead of
//! factorising, and trying the step after every sweep instead of only after a sweep that kept
//! the signs, took the dense Lasso row's sweeps from 61.8 to 38.5 million entries (the path
//! from 132.4 to 112.7 million with screening, 195.0 to 173.9 million without; CPU 0.27 to
//! 0.14 s), the same objectives.

//! # Dense columns
//!
//! When every feature column stores every kept row (a dense input), the row indices are not
//! stored and the column kernels read a column and the residuals side by side, eight running
//! sums at a time, compiled for AVX2 when the CPU has it (runtime detection; the portable loop
//! otherwise, with the same bits). A sparse input keeps the indexed loops, and a second copy
//! of its entries, by row, for the Newton step's products ([`Columns::cross`]).
//!
//! # Paths
//!
//! The fits of a path share one copy of the columns ([`Shared`]): building it is a pass over the
//! data and a copy of it, once per path instead of once per value. Each fit's first
//! certificate is the last fit's dual point, whose `u` is over every feature: moved into this
//! fit's feasible set (scaled to the new box `|u_j| <= l1`: `u` is linear in `t`), it is a valid
//! certificate without a pass over the columns, so the first working set and the first Gap
//! Safe screening come for free, and on a fine grid that point is already close. Along an
//! elastic-net path (`l2` tied to `l1`) the point carries over too: for `l2 > 0` the dual has
//! no constraint and `u` does not depend on the penalty (on 50,000 CoNLL tokens, the `enet`
//! row of `benchmarks/paths.py`, a pass fewer per fit: 499 to 436 million entries read). The
//! last Newton step's Gram products carry over too, and so do the last fit's residuals: the
//! next fit starts from that model, and the fit's last refresh computed them from it, so they
//! have the bits a refresh would give and the fit starts without one (on the `enet` row, 37.7
//! to 20.1 million entries of refreshes, the same objectives to the bit).
//!
//! The duals returned with the model are the certificate's `theta`: `coef` is the primal
//! iterate, equal to `w(theta)` only at the optimum.

use std::collections::VecDeque;

use super::path::Visits;
use super::{accelerated, screen, Certificate, Clock, Context, FitResult, Outcome, Problem, Status, Warm};
use crate::budget::zeros;
use crate::config::{FitConfig, Sampling, SolverKind};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{with_scalar_loss, Loss, LossKind, Squared};
use crate::reg::soft_threshold;
use kernel::tri;

/// Anderson's memory: iterates whose combination makes the extrapolated points, plus one.
const EXTRAPOLATE: usize = 5;

/// The smallest working set (celer's `p0`).
const WS_MIN: usize = 10;

/// An inner solve stops at this share of the last certified gap (celer's `tol_ratio_inner`).
const INNER_TOL: f64 = 0.3;

/// Epochs between the inner solve's gap checks (celer's `gap_freq`).
const INNER_CHECK: u32 = 10;

/// The most work, in passes, of one sign-fixed Newton step (module docs).
const NEWTON_WORK: f64 = 20.0;

/// The most work of one sign-fixed Newton step, in entries, as a multiple of the entries the
/// inner solve's sweeps have visited so far (module docs).
const NEWTON_SHARE: f64 = 3.0;

/// Whether coordinate descent runs (proximal Newton for a loss other than squared,
/// [`super::prox_newton`]): `Cd` asks for it (an error for a loss without a second derivative,
/// a group penalty or gap sampling); `Auto` for a smooth loss (squared, logistic, squared or
/// smooth hinge) with an L1 penalty, without gap sampling or a group penalty, when the dual is
/// badly conditioned: `l2 = 0` (which SDCA solves only through a reduction with a tiny `l2`), at
/// least as many features as rows, or, for the squared loss, where `auto` would otherwise run
/// accelerated Prox-SDCA (`R^2 / l2 > 10 n`; not yet measured for proximal Newton); a single
/// `auto` fit with `l2 > 0` hands over to Prox-SDCA when coordinate descent has not converged
/// within the work of Prox-SDCA's predicted epochs ([`handover`]). On a well-conditioned dual
/// with many more rows than features, plain Prox-SDCA wins: on 203,621 CoNLL tokens x 94,204
/// attributes at `l2 = 1e-4` (`R^2 / (l2 n)` = 0.05), coordinate descent took 0.95 s to 1e-8
/// against 0.31 s (`make bench`, the elastic-net row).
pub(crate) fn chosen<D: Rows>(cfg: &FitConfig, problem: &Problem<'_, D>) -> Result<bool> {
    let domain = cfg.loss.newton_ready() && cfg.groups.is_none() && cfg.sampling != Sampling::Gap;
    match cfg.solver {
        SolverKind::Cd if !domain => Err(SdcaError::InvalidParameter {
            name: "solver",
            message: format!(
                "\"cd\" (coordinate descent, proximal Newton) solves the squared, logistic, \
                 squared_hinge and smooth_hinge losses without group penalties or \
                 sampling=\"gap\", and this fit has loss={:?}{}{}; use solver=\"auto\" or \"sdca\"",
                cfg.loss.name(),
                if cfg.groups.is_some() { " with a group penalty" } else { "" },
                if cfg.sampling == Sampling::Gap { " with sampling=\"gap\"" } else { "" },
            ),
        }),
        SolverKind::Cd => Ok(true),
        SolverKind::Auto if !(domain && cfg.l1 > 0.0) => Ok(false),
        SolverKind::Auto => {
            let (n, d) = (problem.n(), problem.x.n_cols());
            // For the losses of proximal Newton, only where the dual is worst: elsewhere the
            // accelerated Prox-SDCA the rule below would pick has not been measured against it.
            let squared = cfg.loss == LossKind::Squared;
            Ok(cfg.l2 == 0.0
                || d >= n
                || squared && {
                    let r2 = problem.max_row_sq(cfg.intercept_scaling);
                    accelerated::chosen(SolverKind::Auto, cfg.loss.smoothness(), r2, cfg.l2, n)
                })
        }
        _ => Ok(false),
    }
}

/// Full passes of coordinate descent that cost about one Prox-SDCA epoch: on the Turkish Web
/// Treebank tokens of `make bench` (81,370 x 87,933, 8 entries a row), a pass-equivalent of
/// coordinate descent took 3.3 ms and an epoch of Prox-SDCA 11 ms.
const SDCA_EPOCH_PASSES: f64 = 3.0;

/// The passes coordinate descent gets in an `auto` fit that Prox-SDCA solves too (`l2 > 0`)
/// before it hands its model over to Prox-SDCA, or `None` when it runs to the end (another
/// `solver`, `l2 = 0`, or a budget not below `max_epochs`).
///
/// `auto` runs coordinate descent where the dual may be badly conditioned ([`chosen`]), but
/// with as many features as rows the dual can be fine while the primal is not: near-duplicate
/// columns (a token's word and its lower-cased word) leave coordinate descent only the small
/// `l2` to tell their weights apart, and it converges slowly. Prox-SDCA's epochs are known in
/// advance, about `(1 + R^2 / (gamma l2 n)) ln(1 / tol)` (Shalev-Shwartz and Zhang 2012,
/// Theorem 1), whatever the columns; coordinate descent's are not, so it gets the work those
/// epochs would cost. On the Treebank's elastic net (`l2 = 1e-5`, `l1 = 1e-3 l1_max`, to 3e-8)
/// coordinate descent took 713 passes, 2.4 s, and Prox-SDCA 64 epochs, 0.72 s; on 50,000
/// CoNLL tokens at the same `l1` ratio and `l2`, coordinate descent took 38 passes (0.16 s)
/// and Prox-SDCA 63 epochs (0.59 s), well within its budget of 124 passes.
pub(crate) fn handover<D: Rows>(cfg: &FitConfig, problem: &Problem<'_, D>) -> Option<u32> {
    if cfg.solver != SolverKind::Auto || cfg.l2 <= 0.0 {
        return None;
    }
    let n = problem.n() as f64;
    let r2 = problem.max_row_sq(cfg.intercept_scaling);
    let epochs = (1.0 + r2 / (cfg.loss.smoothness() * cfg.l2 * n)) * (1.0 / cfg.tol).ln().max(1.0);
    let passes = (SDCA_EPOCH_PASSES * epochs).ceil();
    (passes < f64::from(cfg.max_epochs)).then_some(passes as u32)
}

/// The columns of `x~` scaled by `sqrt(s_i)`, rows of zero weight dropped, the intercept's
/// column last (module docs). Built once per problem: a path's fits share them.
pub(crate) struct Columns {
    /// Column `j`'s entries are `start[j]..start[j + 1]` (`d + 1` columns, the intercept's
    /// empty without an intercept).
    start: Vec<usize>,
    /// Kept row of each entry; empty when `dense`.
    rows: Vec<u32>,
    values: Vec<f64>,
    /// Every feature column stores every kept row (a dense input), in order: the entry `k` of a
    /// column is row `k`'s, so the kernels read the column and the residuals side by side,
    /// without the row indices' indirection.
    dense: bool,
    /// Original row of each kept row.
    pub(super) kept: Vec<u32>,
    /// `sqrt(s_i)` per kept row.
    pub(super) root: Vec<f64>,
    /// `sqrt(s_i) y_i` per kept row.
    y: Vec<f64>,
    /// `s_i` per kept row.
    pub(super) weight: Vec<f64>,
    /// `y_i` per kept row.
    pub(super) label: Vec<f64>,
    /// `h_j = (1/n) sum_i x_ij^2`, intercept slot last.
    pub(super) h: Vec<f64>,
    /// `||x_j||_s = sqrt(n h_j)`, the columns' norms of the Gap Safe sphere and of the bounds
    /// that complete a certificate (module docs), intercept slot last.
    pub(super) norms: Vec<f64>,
    /// The same entries by kept row (row `k`'s are `row_start[k]..row_start[k + 1]`), for the
    /// products of a column with few entries ([`Self::cross`]); empty when `dense`.
    row_start: Vec<usize>,
    row_cols: Vec<u32>,
    row_values: Vec<f64>,
    /// Per column, the stored entries of the rows it has entries in: the cost of its products
    /// read by rows; empty when `dense`.
    row_reach: Vec<usize>,
}

/// The scratch of [`Columns::cross`]: a column made dense (zero between calls) and each
/// feature's position among the slots (`u32::MAX` for none), filled on first use.
#[derive(Default)]
struct Cross {
    dense: Vec<f64>,
    at: Vec<u32>,
}

impl Columns {
    /// The columns of `problem` with the constant feature `c` (0: no intercept).
    pub(crate) fn of<D: Rows>(problem: &Problem<'_, D>, c: f64) -> Result<Self> {
        let p = problem;
        let (x, d, nf) = (p.x, p.x.n_cols(), p.n() as f64);
        let kept: Vec<u32> = (0..p.n()).filter(|&i| p.weight(i) > 0.0).map(|i| i as u32).collect();
        let m = kept.len();
        let mut count = zeros::<usize>(d + 2)?;
        for &i in &kept {
            x.for_each_nz(i as usize, |j, _| count[j + 1] += 1);
        }
        let dense = count[1..=d].iter().all(|&c| c == m);
        count[d + 1] = if c > 0.0 { m } else { 0 };
        for j in 0..=d {
            count[j + 1] += count[j];
        }
        let start = count.clone();
        let nnz = start[d + 1];
        let mut rows = if dense { Vec::new() } else { zeros::<u32>(nnz)? };
        let mut values = zeros::<f64>(nnz)?;
        let mut next = count;
        let root: Vec<f64> = kept.iter().map(|&i| p.weight(i as usize).sqrt()).collect();
        for (k, &i) in kept.iter().enumerate() {
            let mut put = |j: usize, v: f64| {
                if !dense {
                    rows[next[j]] = k as u32;
                }
                values[next[j]] = v;
                next[j] += 1;
            };
            x.for_each_nz(i as usize, |j, v| put(j, root[k] * v));
            if c > 0.0 {
                put(d, c * root[k]);
            }
        }
        // The rows of a sparse input: `values`' entries again, in row order.
        let by_row = if dense { 0 } else { nnz };
        let mut row_start = crate::budget::with_capacity::<usize>(if dense { 0 } else { m + 1 })?;
        let (mut row_cols, mut row_values) =
            (crate::budget::with_capacity::<u32>(by_row)?, crate::budget::with_capacity::<f64>(by_row)?);
        let mut row_reach = zeros::<usize>(if dense { 0 } else { d + 1 })?;
        if !dense {
            for (k, &i) in kept.iter().enumerate() {
                row_start.push(row_cols.len());
                let mut put = |j: usize, v: f64| {
                    row_cols.push(j as u32);
                    row_values.push(v);
                };
                x.for_each_nz(i as usize, |j, v| put(j, root[k] * v));
                if c > 0.0 {
                    put(d, c * root[k]);
                }
                let row = &row_cols[row_start[k]..];
                row.iter().for_each(|&j| row_reach[j as usize] += row.len());
            }
            row_start.push(row_cols.len());
        }
        let y = kept.iter().zip(&root).map(|(&i, s)| s * p.y[i as usize]).collect();
        let weight = kept.iter().map(|&i| p.weight(i as usize)).collect();
        let label = kept.iter().map(|&i| p.y[i as usize]).collect();
        let h: Vec<f64> =
            (0..=d).map(|j| values[start[j]..start[j + 1]].iter().map(|v| v * v).sum::<f64>() / nf).collect();
        // A column whose squared norm overflows (features near 1e154, or an intercept feature
        // `c = intercept_scaling` near 1e154) leaves no coordinate step and no balanced dual point
        // (fuzz: `c = 3.8e256`, an intercept constraint violated by 3e254).
        if h.iter().any(|h| !h.is_finite()) {
            return Err(SdcaError::NonFiniteResult { what: "a column's squared norm in coordinate descent" });
        }
        Ok(Self {
            start,
            rows,
            values,
            dense,
            kept,
            root,
            y,
            weight,
            label,
            norms: h.iter().map(|h| (h * nf).sqrt()).collect(),
            h,
            row_start,
            row_cols,
            row_values,
            row_reach,
        })
    }

    /// The stored values of column `j`.
    fn values(&self, j: usize) -> &[f64] {
        &self.values[self.start[j]..self.start[j + 1]]
    }

    /// `sqrt(s_i) c` per kept row: the intercept column (empty without an intercept).
    fn bias(&self) -> &[f64] {
        self.values(self.h.len() - 1)
    }

    /// `f(k, x_kj)` for each stored entry of column `j`, `k` its kept row.
    pub(super) fn for_each(&self, j: usize, mut f: impl FnMut(usize, f64)) {
        let values = self.values(j);
        if self.dense {
            values.iter().enumerate().for_each(|(k, &v)| f(k, v));
        } else {
            let rows = &self.rows[self.start[j]..self.start[j + 1]];
            rows.iter().zip(values).for_each(|(&k, &v)| f(k as usize, v));
        }
    }

    /// `sum_i x_ij a_i` and `sum_i x_ij b_i` in one read of column `j`.
    fn dot2(&self, j: usize, a: &[f64], b: &[f64]) -> (f64, f64) {
        let values = self.values(j);
        if self.dense {
            kernel::dot2(values, &a[..values.len()], &b[..values.len()])
        } else {
            let rows = &self.rows[self.start[j]..self.start[j + 1]];
            rows.iter()
                .zip(values)
                .fold((0.0, 0.0), |(p, q), (&k, v)| (p + v * a[k as usize], q + v * b[k as usize]))
        }
    }

    /// `(1/n) sum_i x_ij r_i` (`nf = n`).
    pub(super) fn grad(&self, j: usize, r: &[f64], nf: f64) -> f64 {
        let values = self.values(j);
        let sum = if self.dense {
            kernel::dot(values, &r[..values.len()])
        } else {
            let rows = &self.rows[self.start[j]..self.start[j + 1]];
            rows.iter().zip(values).map(|(&k, v)| v * r[k as usize]).sum::<f64>()
        };
        sum / nf
    }

    /// `r += delta x_j`.
    pub(super) fn shift(&self, j: usize, delta: f64, r: &mut [f64]) {
        if self.dense {
            let values = self.values(j);
            kernel::axpy(delta, values, &mut r[..values.len()]);
        } else {
            self.for_each(j, |k, v| r[k] += delta * v);
        }
    }

    /// `out[a] = (1/n) sum_i x_ib x_ij` for each feature `j = slots[a]` (`nf = n`), by the
    /// shorter read: column `b` made dense against the slots' entries, or, for a sparse input,
    /// the rows of `b`'s entries, each scanned for the slots' features (`Cross::at`). A feature
    /// in few rows then costs those rows' entries, not every entry of the slots' columns (some
    /// of which may be in every row). Returns the entries visited.
    fn cross(&self, b: usize, slots: &[usize], out: &mut [f64], scratch: &mut Cross, nf: f64) -> usize {
        let entries = self.entries(slots);
        let by_columns = entries + 2 * self.len(b);
        if self.cross_cost(b, entries) == by_columns {
            scratch.dense.resize(self.root.len(), 0.0);
            self.shift(b, 1.0, &mut scratch.dense);
            for (o, &j) in out.iter_mut().zip(slots) {
                *o = self.grad(j, &scratch.dense, nf);
            }
            // Back to zero exactly: (0 + v) - v = 0.
            self.shift(b, -1.0, &mut scratch.dense);
            return by_columns;
        }
        if scratch.at.is_empty() {
            scratch.at.resize(self.h.len(), u32::MAX);
            slots.iter().enumerate().for_each(|(a, &j)| scratch.at[j] = a as u32);
        }
        out.iter_mut().for_each(|o| *o = 0.0);
        self.for_each(b, |k, v| {
            let row = self.row_start[k]..self.row_start[k + 1];
            for (&j, &x) in self.row_cols[row.clone()].iter().zip(&self.row_values[row]) {
                if let Some(o) = out.get_mut(scratch.at[j as usize] as usize) {
                    *o += v * x;
                }
            }
        });
        out.iter_mut().for_each(|o| *o /= nf);
        self.row_reach[b] + self.len(b)
    }

    /// The entries [`Self::cross`] visits for column `b` against slots of `entries` entries.
    fn cross_cost(&self, b: usize, entries: usize) -> usize {
        let by_columns = entries + 2 * self.len(b);
        if self.dense {
            by_columns
        } else {
            by_columns.min(self.row_reach[b] + self.len(b))
        }
    }

    /// Stored entries of column `j` (the intercept column's: one per kept row).
    pub(super) fn len(&self, j: usize) -> usize {
        self.start[j + 1] - self.start[j]
    }

    /// `sum_i a_i x_ij^2`: column `j`'s squared norm with the per-row weights `a` (the
    /// curvatures of a Newton step's quadratic model, [`super::prox_newton`]).
    pub(super) fn weighted_sq(&self, j: usize, a: &[f64]) -> f64 {
        let values = self.values(j);
        if self.dense {
            values.iter().zip(a).map(|(v, a)| a * v * v).sum()
        } else {
            let rows = &self.rows[self.start[j]..self.start[j + 1]];
            rows.iter().zip(values).map(|(&k, v)| a[k as usize] * v * v).sum()
        }
    }

    /// `q_i += delta a_i x_ij`: [`Self::shift`] with the per-row weights `a`.
    pub(super) fn shift_weighted(&self, j: usize, delta: f64, a: &[f64], q: &mut [f64]) {
        self.for_each(j, |k, v| q[k] += delta * a[k] * v);
    }

    /// Balances the two sides of `u_c` for `l2 = 0` with an intercept (each `theta_i` moves
    /// towards 0; module docs). No pass over the columns.
    fn balance(&self, theta: &mut [f64], l2: f64) {
        if l2 != 0.0 || self.bias().is_empty() {
            return;
        }
        let (f_pos, f_neg) = super::screen::balancing(theta.iter().zip(&self.weight).map(|(t, s)| s * t));
        theta.iter_mut().for_each(|t| *t *= if *t > 0.0 { f_pos } else { f_neg });
    }

    /// The scaled duals `t_i = sqrt(s_i) theta_i`, whose products with the stored columns are
    /// `u` (module docs).
    fn scaled(&self, theta: &[f64]) -> Vec<f64> {
        theta.iter().zip(&self.root).map(|(t, r)| t * r).collect()
    }

    /// `u_c` of the scaled duals `t` (0 without an intercept).
    fn u_c(&self, t: &[f64], nf: f64) -> f64 {
        kernel::dot(self.bias(), &t[..self.bias().len()]) / nf
    }

    /// The candidate duals `theta` (one per kept row) moved into the feasible set of the
    /// problem over the features `scope` (and the intercept), with their certificate against
    /// `primal` for `loss` (module docs). A pass over the columns of `scope`.
    pub(super) fn point<L: Loss>(
        &self,
        loss: L,
        theta: Vec<f64>,
        scope: &[usize],
        primal: f64,
        penalty: (f64, f64),
        nf: f64,
    ) -> Point {
        self.spread(self.best(loss, theta, None, scope, primal, penalty, nf), scope)
    }

    /// The better (higher dual) of the candidates `a` and `b` (both read in one pass over the
    /// columns of `scope`), as [`Self::point`] makes each, with its `u` in `scope`'s order
    /// ([`Self::spread`] makes it a [`Point`]). The products go to buffers of `scope`'s
    /// length, so a check of a small working set (the inner solve's) touches no vector of
    /// length `d`, and a point allocates one such vector instead of one per candidate. The
    /// same bits as certifying each candidate's point and keeping the better ([`better`]).
    #[allow(clippy::too_many_arguments)]
    fn best<L: Loss>(
        &self,
        loss: L,
        mut a: Vec<f64>,
        b: Option<Vec<f64>>,
        scope: &[usize],
        primal: f64,
        penalty: (f64, f64),
        nf: f64,
    ) -> Compact {
        self.balance(&mut a, penalty.1);
        let ta = self.scaled(&a);
        let mut ua = Vec::with_capacity(scope.len());
        let mut ca = self.u_c(&ta, nf);
        let within = 0..scope.len();
        match b {
            None => {
                ua.extend(scope.iter().map(|&j| self.grad(j, &ta, nf)));
                let c = self.certify(loss, &mut a, &mut ua, within, &mut ca, primal, penalty, nf);
                Compact { theta: a, u: ua, u_c: ca, certificate: c }
            }
            Some(mut b) => {
                self.balance(&mut b, penalty.1);
                let tb = self.scaled(&b);
                let mut ub = Vec::with_capacity(scope.len());
                for &j in scope {
                    let (p, q) = self.dot2(j, &ta, &tb);
                    ua.push(p / nf);
                    ub.push(q / nf);
                }
                let mut cb = self.u_c(&tb, nf);
                let x = self.certify(loss, &mut a, &mut ua, within.clone(), &mut ca, primal, penalty, nf);
                let y = self.certify(loss, &mut b, &mut ub, within, &mut cb, primal, penalty, nf);
                // `better`'s choice: `b` only when its dual is higher; its own certificate is
                // then the one `better` builds (both share `primal`).
                if y.dual > x.dual {
                    Compact { theta: b, u: ub, u_c: cb, certificate: y }
                } else {
                    Compact { theta: a, u: ua, u_c: ca, certificate: x }
                }
            }
        }
    }

    /// The point of [`Self::best`]'s result over `scope`: its `u` over every feature, zero
    /// outside `scope`.
    fn spread(&self, c: Compact, scope: &[usize]) -> Point {
        let mut u = vec![0.0; self.h.len() - 1];
        scope.iter().zip(&c.u).for_each(|(&j, v)| u[j] = *v);
        Point { theta: c.theta, u, u_c: c.u_c, certificate: c.certificate }
    }

    /// The point `last` of an inner solve's final check (its `u` over the features `within`)
    /// widened to the features `scope` (increasing, holding `within`): the others' products at
    /// its duals, and its certificate against `primal` over `scope` (module docs, "Working
    /// sets"). Any duals certify any model, so the solve's point, whose `u` over the working set
    /// is already computed, stands for the check of the model it left. Returns the point and
    /// the entries read.
    #[allow(clippy::too_many_arguments)]
    fn widen<L: Loss>(
        &self,
        loss: L,
        last: Compact,
        within: &[usize],
        scope: &[usize],
        primal: f64,
        penalty: (f64, f64),
        nf: f64,
    ) -> (Point, usize) {
        let t = self.scaled(&last.theta);
        let mut u = vec![0.0; self.h.len() - 1];
        within.iter().zip(&last.u).for_each(|(&j, v)| u[j] = *v);
        let mut visited = t.len();
        let mut known = within.iter().peekable();
        for &j in scope {
            if known.next_if_eq(&&j).is_none() {
                u[j] = self.grad(j, &t, nf);
                visited += self.len(j);
            }
        }
        let scope = scope.iter().copied();
        (self.finish(loss, last.theta, u, last.u_c, scope, primal, penalty, nf), visited)
    }

    /// The balanced duals `theta` with their `u` (over `scope`) and `u_c`, scaled into the box
    /// for `l2 = 0`, and their certificate for `loss` against `primal`. No pass over the
    /// columns.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish<L: Loss>(
        &self,
        loss: L,
        mut theta: Vec<f64>,
        mut u: Vec<f64>,
        mut u_c: f64,
        scope: impl Iterator<Item = usize> + Clone,
        primal: f64,
        penalty: (f64, f64),
        nf: f64,
    ) -> Point {
        let certificate = self.certify(loss, &mut theta, &mut u, scope, &mut u_c, primal, penalty, nf);
        Point { theta, u, u_c, certificate }
    }

    /// [`Self::finish`] in place: `theta`, the entries `scope` of `u` and `u_c` scaled into the
    /// box for `l2 = 0`, and their certificate. The scaling factors are at most 1, so a `theta`
    /// in the loss's dual domain stays there (each product rounds towards a smaller magnitude,
    /// never out of the domain).
    #[allow(clippy::too_many_arguments)]
    fn certify<L: Loss>(
        &self,
        loss: L,
        theta: &mut [f64],
        u: &mut [f64],
        scope: impl Iterator<Item = usize> + Clone,
        u_c: &mut f64,
        primal: f64,
        penalty: (f64, f64),
        nf: f64,
    ) -> Certificate {
        let (l1, l2) = penalty;
        if l2 == 0.0 {
            // Into the box |u_j| <= l1, as `/ top * l1` (no subnormal factor; see screen.rs).
            let top = scope.clone().fold(0.0f64, |m, j| m.max(u[j].abs()));
            if top > l1 {
                let into = |v: &mut f64| *v = *v / top * l1;
                theta.iter_mut().for_each(into);
                scope.clone().for_each(|j| into(&mut u[j]));
                into(u_c);
            }
        }
        let conj: f64 = theta
            .iter()
            .zip(&self.weight)
            .zip(&self.label)
            .map(|((t, s), y)| s * loss.conj_neg(*t, *y))
            .sum();
        let mut dual = -conj / nf;
        if l2 > 0.0 {
            // (l2/2) ||w(t)||^2 with w = soft(u, l1) / l2, divided before squaring (screen.rs).
            let model = |v: f64| v / l2;
            let sq: f64 =
                scope.map(|j| model(soft_threshold(u[j], l1)).powi(2)).sum::<f64>() + model(*u_c).powi(2);
            dual -= 0.5 * l2 * sq;
        }
        // A dual above the primal is rounding (weak duality); NaN leaves no certificate.
        let dual = if dual.is_nan() { f64::NEG_INFINITY } else { dual };
        let gap = (primal - dual).max(0.0);
        Certificate { primal, dual: dual.min(primal), gap }
    }

    /// `point` certified over every feature, its `u` completed over the features `rest` (those
    /// it lacks, or holds only a bound of) from the fit's `anchor` (module docs, "Completing the
    /// certificate"): a feature whose bound proves `|u_j| < l1` keeps the bound, the others are
    /// computed. Returns the point, which features kept a bound, and the stored entries read
    /// (the columns computed, plus the rows for the distance to the anchor). `None` when no
    /// feature is in `rest` (the point is complete). One pass over the features: the rest
    /// completed, and for `l2 > 0` the features that can add to the dual listed: those not
    /// proven `|u_j| <= l1` (elsewhere `soft(u_j, l1) = 0`, and a sum's `+ 0` keeps its bits).
    #[allow(clippy::too_many_arguments)]
    fn complete<L: Loss>(
        &self,
        loss: L,
        mut point: Point,
        rest: impl Fn(usize) -> bool,
        anchor: &Anchor,
        penalty: (f64, f64),
        nf: f64,
    ) -> std::result::Result<(Point, Vec<bool>, usize), Point> {
        let d = self.h.len() - 1;
        let Some(first) = (0..d).find(|&j| rest(j)) else { return Err(point) };
        let t = self.scaled(&point.theta);
        let dist = t.iter().zip(&anchor.t).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt() / nf;
        // The rounding of the anchor's products, |fl(x . t) - x . t| <= n eps ||x|| ||t||, over n.
        let slack = f64::EPSILON * anchor.t.iter().map(|v| v * v).sum::<f64>().sqrt();
        let mut loose = vec![false; d];
        let mut visited = 2 * t.len();
        let (l1, l2) = penalty;
        let mut hot = Vec::new();
        for j in 0..d {
            if j >= first && rest(j) {
                // The anchor's u, or (the fit's first point, not yet kept apart) this point's own.
                let at = anchor.u.as_ref().map_or(point.u[j], |u| u[j]);
                let bound = (at.abs() + self.norms[j] * (dist + slack)) * (1.0 + 1e-9);
                if bound < l1 {
                    // Proven `|u_j| < l1`: no term of the dual.
                    (point.u[j], loose[j]) = (bound, true);
                    continue;
                }
                point.u[j] = self.grad(j, &t, nf);
                visited += self.len(j);
            }
            if l2 > 0.0 && (point.u[j].abs() > l1 || point.u[j].is_nan()) {
                hot.push(j);
            }
        }
        let primal = point.certificate.primal;
        let point = if l2 > 0.0 {
            self.finish(loss, point.theta, point.u, point.u_c, hot.into_iter(), primal, penalty, nf)
        } else {
            self.finish(loss, point.theta, point.u, point.u_c, 0..d, primal, penalty, nf)
        };
        Ok((point, loose, visited))
    }

    /// The exact `u_j` of `point`'s duals for each feature `j` whose entry is only a bound
    /// (`loose`) and `needed(j, bound)`; those are no longer loose. Returns the entries read.
    fn sharpen(
        &self,
        point: &mut Point,
        loose: &mut [bool],
        needed: impl Fn(usize, f64) -> bool,
        nf: f64,
    ) -> usize {
        self.sharpen_listing(point, loose, needed, None, nf)
    }

    /// [`Self::sharpen`], and when `hot` is given (a list and `l1`), the features that can add to
    /// the dual for `l2 > 0` afterwards (`|u_j| > l1` or NaN) pushed to the list, increasing, in
    /// the same scan.
    fn sharpen_listing(
        &self,
        point: &mut Point,
        loose: &mut [bool],
        needed: impl Fn(usize, f64) -> bool,
        mut hot: Option<(&mut Vec<usize>, f64)>,
        nf: f64,
    ) -> usize {
        let mut t: Option<Vec<f64>> = None;
        let mut visited = 0;
        for (j, loose) in loose.iter_mut().enumerate() {
            if *loose && needed(j, point.u[j]) {
                let t = t.get_or_insert_with(|| self.scaled(&point.theta));
                point.u[j] = self.grad(j, t, nf);
                *loose = false;
                visited += self.len(j);
            }
            if let Some((hot, l1)) = hot.as_mut() {
                let (u, l1) = (point.u[j], *l1);
                if u.abs() > l1 || u.is_nan() {
                    hot.push(j);
                }
            }
        }
        visited
    }

    /// Stored entries of the columns `scope`.
    pub(super) fn entries(&self, scope: &[usize]) -> usize {
        scope.iter().map(|&j| self.len(j)).sum()
    }

    /// Stored entries of every column, the intercept's included (at least 1): one pass.
    pub(super) fn pass(&self) -> f64 {
        self.values.len().max(1) as f64
    }
}

/// The dense kernels of [`Columns`]: eight running sums (the compiler keeps them in vector
/// registers: two lanes with SSE2, four with AVX2, the same bits either way) instead of one
/// dependent chain of additions.
mod kernel {
    const LANES: usize = 8;

    crate::simd::kernel! {
        /// `sum_k a_k b_k`.
        #[inline]
        pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 as dot_portable {
            let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
            let tail = ca.remainder().iter().zip(cb.remainder());
            let mut p = [0.0f64; LANES];
            for (a, b) in ca.zip(cb) {
                for l in 0..LANES {
                    p[l] += a[l] * b[l];
                }
            }
            tail.fold(sum(p), |p, (a, b)| p + a * b)
        }
    }

    /// The lanes' sum, in a fixed order.
    #[inline(always)]
    fn sum(v: [f64; LANES]) -> f64 {
        ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
    }

    crate::simd::kernel! {
        /// `(sum_k x_k a_k, sum_k x_k b_k)`, reading `x` once.
        #[inline]
        pub(super) fn dot2(x: &[f64], a: &[f64], b: &[f64]) -> (f64, f64) as dot2_portable {
            let (cx, ca, cb) = (x.chunks_exact(LANES), a.chunks_exact(LANES), b.chunks_exact(LANES));
            let tail = cx.remainder().iter().zip(ca.remainder().iter().zip(cb.remainder()));
            let (mut p, mut q) = ([0.0f64; LANES], [0.0f64; LANES]);
            for (x, (a, b)) in cx.zip(ca.zip(cb)) {
                for l in 0..LANES {
                    p[l] += x[l] * a[l];
                    q[l] += x[l] * b[l];
                }
            }
            tail.fold((sum(p), sum(q)), |(p, q), (x, (a, b))| (p + x * a, q + x * b))
        }
    }

    /// Where row `a` of a lower triangle packed by rows starts.
    #[inline(always)]
    pub(super) fn tri(a: usize) -> usize {
        a * (a + 1) / 2
    }

    crate::simd::kernel! {
        /// Turns the rows `from..to` of `l`, a lower triangle packed by rows whose rows before
        /// `from` are a Cholesky factor `L` (`G = L L^T`) and whose rows `from..to` hold those
        /// of the symmetric positive definite `G`, into the factor's rows, row by row (Crout):
        /// each entry is a dot product of two rows' leading parts, both contiguous, in
        /// [`dot_portable`]'s eight lanes. With `from = 0` it factorises `G`; with `from = to -
        /// 1` it appends a row to a factor. The upper factor of
        /// `super::super::newton::cholesky` reads `L`'s columns instead, one cache line per
        /// entry: on the dense Lasso path (supports near 200) its factorisations were 39% of the
        /// CPU time. `false` when a pivot is not positive (or not finite).
        #[inline]
        pub(super) fn cholesky(l: &mut [f64], from: usize, to: usize) -> bool as cholesky_portable {
            for i in from..to {
                let (done, rest) = l.split_at_mut(tri(i));
                let row = &mut rest[..=i];
                for j in 0..i {
                    let above = &done[tri(j)..tri(j) + j];
                    let s = row[j] - dot_portable(&row[..j], above);
                    row[j] = s / done[tri(j) + j];
                }
                let pivot = row[i] - dot_portable(&row[..i], &row[..i]);
                if !(pivot > 0.0 && pivot.is_finite()) {
                    return false;
                }
                row[i] = pivot.sqrt();
            }
            true
        }
    }

    crate::simd::kernel! {
        /// Solves `L L^T z = b` in place for the factor `L` (order `m`) of [`cholesky`]: forward
        /// by rows, then backward by rows too (each solved entry taken out of the ones before
        /// it), so both substitutions read `L` contiguously.
        #[inline]
        pub(super) fn cholesky_apply(l: &[f64], m: usize, b: &mut [f64]) as cholesky_apply_portable {
            for i in 0..m {
                let row = &l[tri(i)..tri(i) + i];
                b[i] = (b[i] - dot_portable(row, &b[..i])) / l[tri(i) + i];
            }
            for i in (0..m).rev() {
                b[i] /= l[tri(i) + i];
                let z = b[i];
                b[..i].iter_mut().zip(&l[tri(i)..tri(i) + i]).for_each(|(b, l)| *b -= l * z);
            }
        }
    }

    /// The rank-one update `L' L'^T = L L^T + x x^T` of the rows and columns `from..m` of the
    /// factor `l` (packed as [`cholesky`]'s; `x` holds rows `from..m`, overwritten), by the
    /// rotations of LINPACK's `dchud`, column by column. `false` when a diagonal entry is not
    /// positive (or not finite).
    pub(super) fn cholesky_update(l: &mut [f64], from: usize, m: usize, x: &mut [f64]) -> bool {
        for j in from..m {
            let (diag, xj) = (l[tri(j) + j], x[j - from]);
            let r = diag.hypot(xj);
            if !(r > 0.0 && r.is_finite() && diag > 0.0) {
                return false;
            }
            let (c, s) = (r / diag, xj / diag);
            l[tri(j) + j] = r;
            for i in j + 1..m {
                let e = &mut l[tri(i) + j];
                *e = (*e + s * x[i - from]) / c;
                x[i - from] = c * x[i - from] - s * *e;
            }
        }
        true
    }

    crate::simd::kernel! {
        /// `r += delta x`.
        #[inline]
        pub(super) fn axpy(delta: f64, x: &[f64], r: &mut [f64]) as axpy_portable {
            r.iter_mut().zip(x).for_each(|(r, x)| *r += delta * x);
        }
    }
}

/// Feasible duals `theta` (one per kept row; module docs), their `u` (zero outside the scope
/// they were computed over), `u_c` and their certificate.
#[derive(Clone)]
pub(crate) struct Point {
    theta: Vec<f64>,
    pub(super) u: Vec<f64>,
    u_c: f64,
    pub(super) certificate: Certificate,
}

/// A [`Point`] whose `u` holds only the features of the scope it was computed over, in that
/// scope's order ([`Columns::best`]).
pub(super) struct Compact {
    theta: Vec<f64>,
    u: Vec<f64>,
    u_c: f64,
    certificate: Certificate,
}

/// The better of two points for the same primal (the higher dual).
fn better(a: Point, b: Option<Point>) -> Point {
    match b {
        Some(b) if b.certificate.dual > a.certificate.dual => {
            let primal = a.certificate.primal;
            let dual = b.certificate.dual.min(primal);
            Point { certificate: Certificate { primal, dual, gap: primal - dual }, ..b }
        }
        _ => a,
    }
}

/// The state of the descent.
struct Descent<'c> {
    cols: &'c Columns,
    l1: f64,
    l2: f64,
    nf: f64,
    /// Model, intercept feature's weight in slot `d`.
    w: Vec<f64>,
    /// `sqrt(s_i)(x~_i . w - y_i)` per kept row.
    r: Vec<f64>,
    /// The products of the last Newton step's slots (a path's fits share them).
    gram: &'c mut Gram,
    /// The residuals at the last inner solve's gap checks, for the extrapolated dual point.
    history: VecDeque<Vec<f64>>,
    /// The slots whose weight may be nonzero, increasing (every nonzero weight's is here): the
    /// penalty's sums run over these instead of every feature.
    live: Vec<usize>,
    /// The last inner solve's final check, when it met its tolerance: its point (`u` over the
    /// solve's features) and those features, increasing; the model has not moved since.
    settled: Option<(Compact, Vec<usize>)>,
}

/// The products `X_S^T X_S / n` and `X_S^T y / n` of the slots `S` of the last sign-fixed
/// Newton step, and the Cholesky factor of its system `X_S^T X_S / n + l2 I`, in the order the
/// slots joined: the next step, whose support differs in a few features, computes only the
/// products of those, and updates the factor instead of factorising again (module docs). They
/// depend on the columns only (the factor on `l2` too), so a path's fits share them.
#[derive(Default)]
struct Gram {
    /// The slots, in the order they joined.
    slots: Vec<usize>,
    /// `X_S^T X_S / n`, its lower triangle packed by rows (row `a` is `tri(a)..tri(a + 1)`).
    gram: Vec<f64>,
    xty: Vec<f64>,
    /// The lower Cholesky factor of `gram + l2 I`, packed as `gram`, with that `l2`; `None` when
    /// it is to be built from `gram` (none yet, or a pivot of an update was not positive).
    factor: Option<(Vec<f64>, f64)>,
}

impl Gram {
    /// The positions (in `self.slots`) of the slots not in `support` (increasing), and the
    /// features of `support` (increasing) not in `self.slots`.
    fn changes(&self, support: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let leave =
            (0..self.slots.len()).filter(|&a| support.binary_search(&self.slots[a]).is_err()).collect();
        let mut known = self.slots.clone();
        known.sort_unstable();
        let join = support.iter().copied().filter(|j| known.binary_search(j).is_err()).collect();
        (leave, join)
    }

    /// The flops of bringing the factor to a support of `m` slots at `l2` (without the
    /// products), given [`Gram::changes`]' `leave` and `joins` slots that join: a rank-one
    /// update of the rows after each slot that leaves and a row per slot that joins, or,
    /// without a factor for `l2`, a factorisation's `m^3 / 3`.
    fn work(&self, leave: &[usize], joins: usize, m: usize, l2: f64) -> f64 {
        let m = m as f64;
        if self.factor.as_ref().is_none_or(|f| f.1 != l2) {
            return m * m * m / 3.0;
        }
        let after = |a: &usize| ((self.slots.len() - a) as f64).powi(2);
        leave.iter().map(after).sum::<f64>() + joins as f64 * m * m / 2.0
    }

    /// Removes the slot at position `a`: its row and column of the products, and of the factor
    /// by a rank-one update of the rows after it (`L' L'^T = L_22 L_22^T + x x^T`, `x` the
    /// removed column's entries below the diagonal).
    fn remove(&mut self, a: usize) {
        let m = self.slots.len();
        self.slots.remove(a);
        self.xty.remove(a);
        unpack(&mut self.gram, a, m);
        if let Some((l, _)) = &mut self.factor {
            let mut x = unpack(l, a, m);
            if !kernel::cholesky_update(l, a, m - 1, &mut x) {
                self.factor = None;
            }
        }
    }

    /// Appends the slot `j` with its products `row` (with the slots in their order, then with
    /// itself) and `x_j^T y / n`; the factor, if any, gets its row.
    fn push(&mut self, j: usize, row: &[f64], xty: f64) {
        let m = self.slots.len();
        self.slots.push(j);
        self.xty.push(xty);
        self.gram.extend_from_slice(row);
        if let Some((l, l2)) = &mut self.factor {
            l.extend_from_slice(row);
            l[tri(m) + m] += *l2;
            if !kernel::cholesky(l, m, m + 1) {
                self.factor = None;
            }
        }
    }

    /// The factor of the system at `l2`, built from the products when it is missing or for
    /// another `l2`; `None` when the system is not positive definite.
    fn factor(&mut self, l2: f64) -> Option<&[f64]> {
        if self.factor.as_ref().is_none_or(|f| f.1 != l2) {
            let mut l = self.gram.clone();
            (0..self.slots.len()).for_each(|a| l[tri(a) + a] += l2);
            self.factor = kernel::cholesky(&mut l, 0, self.slots.len()).then_some((l, l2));
        }
        self.factor.as_ref().map(|f| f.0.as_slice())
    }
}

/// Removes row and column `a` of the lower triangle `p` of order `m` packed by rows; returns
/// the column's entries below the diagonal.
fn unpack(p: &mut Vec<f64>, a: usize, m: usize) -> Vec<f64> {
    let mut below = Vec::with_capacity(m - a - 1);
    let mut to = tri(a);
    for i in a + 1..m {
        let row = tri(i);
        below.push(p[row + a]);
        p.copy_within(row..row + a, to);
        p.copy_within(row + a + 1..row + i + 1, to + a);
        to += i;
    }
    p.truncate(to);
    below
}

impl Descent<'_> {
    /// The exact minimisation over coordinate `j`; returns the decrease of `P`.
    fn update(&mut self, j: usize) -> f64 {
        let (h, old) = (self.cols.h[j], self.w[j]);
        let curvature = h + self.l2;
        let l1 = if j == self.w.len() - 1 { 0.0 } else { self.l1 };
        if curvature == 0.0 {
            // An empty column without l2: the weight is optimal at 0 (a warm start's is not).
            if l1 > 0.0 && old != 0.0 {
                self.w[j] = 0.0;
                return l1 * old.abs();
            }
            return 0.0;
        }
        let z = h * old - self.cols.grad(j, &self.r, self.nf);
        let new = soft_threshold(z, l1) / curvature;
        let delta = new - old;
        if delta == 0.0 {
            return 0.0;
        }
        self.cols.shift(j, delta, &mut self.r);
        self.w[j] = new;
        // The objective is (curvature / 2)(w - z / curvature)^2 + l1 |w| + const along j, so
        // the exact step decreases it by at least (curvature / 2) delta^2.
        0.5 * curvature * delta * delta
    }

    /// The residuals recomputed from the model (no drift); returns the entries visited. Over
    /// `live` (increasing, every nonzero weight's slot): the shifts of a scan of every slot, in
    /// the same order, without the scan.
    fn refresh(&mut self) -> usize {
        let cols = self.cols;
        self.r.iter_mut().zip(&cols.y).for_each(|(r, y)| *r = -y);
        let mut visited = self.r.len();
        for &j in self.live.iter().filter(|&&j| self.w[j] != 0.0) {
            cols.shift(j, self.w[j], &mut self.r);
            visited += cols.len(j);
        }
        visited
    }

    /// `P(w)` from the residuals (module docs).
    fn primal(&self) -> f64 {
        let d = self.w.len() - 1;
        let data = self.r.iter().map(|r| r * r).sum::<f64>() / (2.0 * self.nf);
        // Over `live`: the zero weights elsewhere add nothing, so the sums have the bits of sums
        // over every slot.
        let w = |j: &usize| self.w[*j];
        let l1 = self.live.iter().filter(|&&j| j < d).map(w).map(f64::abs).sum::<f64>();
        data + self.l1 * l1 + 0.5 * self.l2 * self.live.iter().map(w).map(|v| v * v).sum::<f64>()
    }

    /// The certificate of the problem over the features `scope`: the residual point and the
    /// extrapolation of `history` (both from one read of the columns), the better one, its `u`
    /// in `scope`'s order; the columns' entries visited.
    fn candidates(&self, scope: &[usize]) -> (Compact, usize) {
        let primal = self.primal();
        let penalty = (self.l1, self.l2);
        let entries = self.cols.entries(scope) + self.r.len();
        // theta_i = -phi'(x~_i . w) = -r_i / sqrt(s_i).
        let neg = |r: &[f64]| r.iter().zip(&self.cols.root).map(|(v, s)| -v / s).collect::<Vec<f64>>();
        let history = &self.history;
        let other = anderson(history).map(|c| neg(&combine(history, &c)));
        (self.cols.best(Squared, neg(&self.r), other, scope, primal, penalty, self.nf), entries)
    }

    /// [`Self::candidates`] as a point (`u` over every feature, zero outside `scope`).
    fn check(&self, scope: &[usize]) -> (Point, usize) {
        let (best, entries) = self.candidates(scope);
        (self.cols.spread(best, scope), entries)
    }

    /// The point of the segment from the support's weights to the sign-fixed minimiser `target`
    /// where the first weight reaches zero (that weight set to exactly zero), or `target` when
    /// no sign changes. On the segment the signs hold, so `P` is the quadratic that `target`
    /// minimises and falls all along it: the move lowers `P` even when `target` itself, with a
    /// flipped sign, would not. This is how the support changes between nearly collinear
    /// columns, where the optimum's weight moves from one column to the other and coordinate
    /// descent alone needs a sweep count of the order of the pair's condition number (a 6 x 5
    /// Lasso stalled at a relative gap of 1e-5 after 20,000 sweeps). Returns whether the point
    /// is `target` (no sign changed) too.
    fn up_to_sign_change(&self, slots: &[usize], mut target: Vec<f64>) -> (Vec<f64>, bool) {
        let d = self.w.len() - 1;
        let mut first: Option<(f64, usize)> = None;
        for (a, (&j, &t)) in slots.iter().zip(&target).enumerate() {
            let w = self.w[j];
            if j < d && w != 0.0 && (t == 0.0 || t.signum() != w.signum()) {
                let at = w / (w - t);
                if first.is_none_or(|(best, _)| at < best) {
                    first = Some((at, a));
                }
            }
        }
        if let Some((at, zeroed)) = first {
            for (&j, t) in slots.iter().zip(target.iter_mut()) {
                *t = self.w[j] + at * (*t - self.w[j]);
            }
            target[zeroed] = 0.0;
        }
        (target, first.is_none())
    }

    /// Moves the slots `slots` to `target` when that lowers `P` (the objective's change is
    /// computed on the rows the slots touch, in the scratch `z`, zero outside them); returns
    /// the entries visited and whether it moved.
    fn try_move(
        &mut self,
        slots: &[usize],
        target: &[f64],
        z: &mut [f64],
        touched: &mut Touched,
    ) -> (usize, bool) {
        let d = self.w.len() - 1;
        let cols = self.cols;
        let Touched { rows: touched, seen } = touched;
        touched.clear();
        let mut visited = 0;
        let mut change = 0.0;
        for (&j, &new) in slots.iter().zip(target) {
            let old = self.w[j];
            let delta = new - old;
            if delta == 0.0 {
                continue;
            }
            if j < d {
                change += self.l1 * (new.abs() - old.abs());
            }
            change += 0.5 * self.l2 * (new * new - old * old);
            cols.for_each(j, |k, v| {
                if !seen[k] {
                    seen[k] = true;
                    touched.push(k as u32);
                }
                z[k] += delta * v;
            });
            visited += cols.len(j);
        }
        let data: f64 = touched
            .iter()
            .map(|&k| {
                let (r, dz) = (self.r[k as usize], z[k as usize]);
                dz * (2.0 * r + dz)
            })
            .sum::<f64>()
            / (2.0 * self.nf);
        let accept = (data + change).is_finite() && data + change < 0.0;
        for &k in touched.iter() {
            if accept {
                self.r[k as usize] += z[k as usize];
            }
            z[k as usize] = 0.0;
            seen[k as usize] = false;
        }
        if accept {
            for (&j, &new) in slots.iter().zip(target) {
                self.w[j] = new;
            }
        }
        (visited, accept)
    }

    /// The minimiser of `P` over the support `slots` (features with their signs, then the
    /// intercept, increasing) with those signs fixed: there `P` is quadratic and its minimiser
    /// solves `(X_S^T X_S / n + l2 I) w_S = X_S^T y / n - l1 sign(w_S)` (scaled columns), in
    /// `slots`' order. [`Gram`] holds the last step's products and factor: the slots that left
    /// are taken out of both, the products of those that joined are computed by
    /// [`Columns::cross`] and appended. `None` when the system is not positive definite.
    /// Returns the entries visited too.
    fn newton(&mut self, slots: &[usize]) -> (Option<Vec<f64>>, usize) {
        let (cols, d, nf) = (self.cols, self.w.len() - 1, self.nf);
        let gram = &mut *self.gram;
        if gram.factor.as_ref().is_some_and(|f| f.1 != self.l2) {
            gram.factor = None;
        }
        let (leave, join) = gram.changes(slots);
        // From the last: a removal moves the slots after it.
        leave.iter().rev().for_each(|&a| gram.remove(a));
        // The products of each slot that joins with every slot (those of two that join twice).
        let order: Vec<usize> = gram.slots.iter().chain(&join).copied().collect();
        let (mut scratch, mut row) = (Cross::default(), vec![0.0; order.len()]);
        let mut visited = 0;
        for (b, &jb) in order.iter().enumerate().skip(gram.slots.len()) {
            visited += cols.cross(jb, &order, &mut row, &mut scratch, nf);
            gram.push(jb, &row[..=b], cols.grad(jb, &cols.y, nf));
            visited += cols.len(jb);
        }
        let w = &self.w;
        let sign = |j: usize| if j < d { self.l1 * w[j].signum() } else { 0.0 };
        let mut rhs: Vec<f64> = gram.slots.iter().zip(&gram.xty).map(|(&j, v)| v - sign(j)).collect();
        let m = rhs.len();
        let Some(l) = gram.factor(self.l2) else { return (None, visited) };
        kernel::cholesky_apply(l, m, &mut rhs);
        // Back to the order of `slots` (increasing).
        let mut solved: Vec<(usize, f64)> = gram.slots.iter().copied().zip(rhs).collect();
        solved.sort_unstable_by_key(|&(j, _)| j);
        (Some(solved.into_iter().map(|(_, v)| v).collect()), visited)
    }

    /// The features of `scope` in the support, each with whether its weight is positive.
    fn signs(&self, scope: &[usize]) -> Vec<(usize, bool)> {
        scope.iter().filter(|&&j| self.w[j] != 0.0).map(|&j| (j, self.w[j] > 0.0)).collect()
    }

    /// Coordinate descent over the working set `slots` (features, then the intercept) until
    /// the subproblem's gap is below `tol` or the clock runs out (module docs). `history` gets
    /// the residuals at the gap checks.
    fn inner(&mut self, slots: &[usize], tol: f64, meter: &mut Meter<'_>) {
        let d = self.w.len() - 1;
        let scope: Vec<usize> = slots.iter().copied().filter(|&j| j < d).collect();
        let entries = self.cols.entries(slots);
        let total = meter.total;
        let mut iterates: VecDeque<Vec<f64>> = VecDeque::with_capacity(EXTRAPOLATE + 1);
        let (mut z, mut touched) = (vec![0.0; self.r.len()], Touched::new(self.r.len()));
        self.history.clear();
        // The slots may make nonzero any weight of `slots` (both lists increase).
        let mut live: Vec<usize> = self.live.iter().chain(slots).copied().collect();
        live.sort_unstable();
        live.dedup();
        self.live = live;
        self.settled = None;
        let mut epoch = 0u32;
        // The support's signs at the last Newton step.
        let mut tried: Vec<(usize, bool)> = Vec::new();
        // Entries the sweeps of this solve visited: a Newton step may cost as much (module docs).
        let mut swept = 0.0;
        loop {
            for &j in slots {
                self.update(j);
            }
            meter.charge(|v| &mut v.sweeps, entries);
            swept += entries as f64;
            epoch += 1;
            if entries == 0 {
                // Nothing stored: the sweep cannot move; it counts as a pass so the fit ends.
                meter.clock.add_pass(1.0);
                return;
            }
            iterates.push_back(slots.iter().map(|&j| self.w[j]).collect());
            if iterates.len() == EXTRAPOLATE + 1 {
                if let Some(c) = anderson(&iterates) {
                    let target = combine(&iterates, &c);
                    let (visited, _) = self.try_move(slots, &target, &mut z, &mut touched);
                    meter.charge(|v| &mut v.moves, visited);
                }
                iterates.clear();
            }
            // Try the sign-fixed minimiser of the signs after each sweep, once per signs, and
            // when it lands on it, check at once (module docs).
            let signs = self.signs(&scope);
            let mut landed = false;
            if signs != tried {
                let support: Vec<usize> =
                    signs.iter().map(|&(j, _)| j).chain(slots.iter().copied().filter(|&j| j == d)).collect();
                // The products not in `gram`, and the factor's update (or factorisation).
                let entries = self.cols.entries(&support);
                let (leave, join) = self.gram.changes(&support);
                let products: usize = join.iter().map(|&j| self.cols.cross_cost(j, entries)).sum();
                let cost = products as f64 + self.gram.work(&leave, join.len(), support.len(), self.l2);
                if cost <= (NEWTON_SHARE * swept).min(NEWTON_WORK * total) {
                    let (target, visited) = self.newton(&support);
                    meter.charge(|v| &mut v.newton, visited);
                    if let Some((target, reached)) = target.map(|t| self.up_to_sign_change(&support, t)) {
                        let (visited, accepted) = self.try_move(&support, &target, &mut z, &mut touched);
                        meter.charge(|v| &mut v.moves, visited);
                        // Only the full step can land on the subproblem's optimum.
                        landed = accepted && reached;
                    }
                    tried = signs;
                }
            }
            if landed || epoch.is_multiple_of(INNER_CHECK) {
                // The oldest residuals' buffer, reused once the memory is full.
                let mut last = if self.history.len() == EXTRAPOLATE + 1 {
                    self.history.pop_front().unwrap_or_default()
                } else {
                    Vec::with_capacity(self.r.len())
                };
                last.clear();
                last.extend_from_slice(&self.r);
                self.history.push_back(last);
                let (best, visited) = self.candidates(&scope);
                meter.charge(|v| &mut v.inner_checks, visited);
                if best.certificate.gap <= tol {
                    self.settled = Some((best, scope));
                    return;
                }
            }
            if meter.clock.remaining() == 0 || meter.clock.out_of_time() {
                return;
            }
        }
    }
}

/// Anderson extrapolation's weights (Massias, Gramfort and Salmon, ICML 2018, section 3; skglm's
/// `AndersonAcceleration`): for the last iterates (three to [`EXTRAPOLATE`] `+ 1`), the affine
/// weights of the last ones whose combined differences have the least norm; `None` before there
/// are three or when the system is degenerate. Near the optimum the iterates of coordinate
/// descent converge linearly and slowly, and their extrapolation is much closer to the limit.
fn anderson(history: &VecDeque<Vec<f64>>) -> Option<Vec<f64>> {
    if history.len() < 3 {
        return None;
    }
    let k = history.len() - 1;
    let diffs: Vec<Vec<f64>> =
        (0..k).map(|m| history[m + 1].iter().zip(&history[m]).map(|(a, b)| a - b).collect()).collect();
    let mut gram = vec![0.0; k * k];
    for a in 0..k {
        for b in a..k {
            gram[a * k + b] = diffs[a].iter().zip(&diffs[b]).map(|(x, y)| x * y).sum();
        }
    }
    let trace: f64 = (0..k).map(|a| gram[a * k + a]).sum();
    if !(trace > 0.0 && trace.is_finite()) {
        return None;
    }
    (0..k).for_each(|a| gram[a * k + a] += 1e-10 * trace);
    let mut z = vec![1.0; k];
    if !super::newton::cholesky_solve(&mut gram, k, &mut z) {
        return None;
    }
    let sum: f64 = z.iter().sum();
    if !(sum.is_finite() && sum != 0.0) {
        return None;
    }
    Some(z.iter().map(|c| c / sum).collect())
}

/// `sum_m c_m history[m + 1]`: the extrapolated iterate of [`anderson`]'s weights `c`.
fn combine(history: &VecDeque<Vec<f64>>, c: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; history[0].len()];
    for (c, r) in c.iter().zip(history.iter().skip(1)) {
        out.iter_mut().zip(r).for_each(|(o, v)| *o += c * v);
    }
    out
}

/// The rows a trial move ([`Descent::try_move`]) changes, each listed once in the order first
/// reached: `seen` marks them, so the list needs no sort to drop a row reached again (a row's
/// change may cancel to zero and move again). Sorting it cost about 5% of the elastic-net
/// path row (perf).
struct Touched {
    rows: Vec<u32>,
    seen: Vec<bool>,
}

impl Touched {
    fn new(n: usize) -> Self {
        Self { rows: Vec::new(), seen: vec![false; n] }
    }
}

/// The working set (module docs): the support, then the features not screened whose dual
/// constraint `u` is nearest to violating, `size` in all, in increasing order. `kept`: the
/// features not screened, increasing (a screened feature's weight is zero).
fn working_set(
    w: &[f64],
    u: &[f64],
    norms: &[f64],
    kept: impl Iterator<Item = usize> + Clone,
    l1: f64,
    size: usize,
) -> Vec<usize> {
    let mut set: Vec<usize> = kept.clone().filter(|&j| w[j] != 0.0).collect();
    // The ranking is a total order (ties by index), so the features chosen do not depend on
    // the order they come in.
    let mut rest: Vec<(f64, usize)> =
        kept.filter(|&j| w[j] == 0.0 && norms[j] > 0.0).map(|j| ((l1 - u[j].abs()) / norms[j], j)).collect();
    let want = size.saturating_sub(set.len()).min(rest.len());
    if want > 0 && want < rest.len() {
        rest.select_nth_unstable_by(want - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    }
    set.extend(rest[..want].iter().map(|&(_, j)| j));
    set.sort_unstable();
    set
}

/// A primal method over working sets, as [`descend`] drives it: coordinate descent for the
/// squared loss ([`Descent`]) or proximal Newton for the other smooth losses
/// ([`super::prox_newton`]). Both keep their model with its per-row terms (residuals, scores)
/// in step; the outer loop (certificates, screening, working sets) is the same for both.
pub(super) trait Primal {
    /// The model, the intercept feature's weight in slot `d`.
    fn model(&self) -> &[f64];
    /// Takes the model out (the fit is over).
    fn take_model(&mut self) -> Vec<f64>;
    /// The slots whose weight may be nonzero, increasing (every nonzero weight's is here), when
    /// the method keeps them; `None`: scan the model.
    fn live(&self) -> Option<&[usize]> {
        None
    }
    /// The per-row terms recomputed from the model (no drift); returns the entries visited.
    fn refresh(&mut self) -> usize;
    /// Takes the per-row terms out (the fit is over), for the next fit of a path from the same
    /// model ([`Shared`]); `None` when the method does not hand them on.
    fn take_rows(&mut self) -> Option<Vec<f64>> {
        None
    }
    /// Takes the point of the last inner solve's final check, when the solve met its tolerance
    /// there and the model has not moved since, with the features its `u` is over (increasing).
    fn take_settled(&mut self) -> Option<(Compact, Vec<usize>)> {
        None
    }
    /// `P(w)` from the per-row terms.
    fn primal(&self) -> f64;
    /// The certificate of the problem over the features `scope` (the best candidate dual
    /// point the method has) and the entries visited.
    fn check(&self, scope: &[usize]) -> (Point, usize);
    /// Sets the weight of feature `j` to zero (screened) and updates the per-row terms.
    fn zero(&mut self, j: usize);
    /// Solves the problem over the working set `slots` (features, then the intercept) until
    /// its gap is below `tol` or the clock runs out.
    fn inner(&mut self, slots: &[usize], tol: f64, meter: &mut Meter<'_>);
}

impl Primal for Descent<'_> {
    fn model(&self) -> &[f64] {
        &self.w
    }
    fn take_model(&mut self) -> Vec<f64> {
        std::mem::take(&mut self.w)
    }
    fn live(&self) -> Option<&[usize]> {
        Some(&self.live)
    }
    fn refresh(&mut self) -> usize {
        Descent::refresh(self)
    }
    fn take_rows(&mut self) -> Option<Vec<f64>> {
        Some(std::mem::take(&mut self.r))
    }
    fn take_settled(&mut self) -> Option<(Compact, Vec<usize>)> {
        self.settled.take()
    }
    fn primal(&self) -> f64 {
        Descent::primal(self)
    }
    fn check(&self, scope: &[usize]) -> (Point, usize) {
        Descent::check(self, scope)
    }
    fn zero(&mut self, j: usize) {
        if self.w[j] != 0.0 {
            self.cols.shift(j, -self.w[j], &mut self.r);
            self.w[j] = 0.0;
        }
    }
    fn inner(&mut self, slots: &[usize], tol: f64, meter: &mut Meter<'_>) {
        Descent::inner(self, slots, tol, meter)
    }
}

/// The method for the loss of `ctx` from the model `w` on the columns `cols`: coordinate
/// descent for the squared loss (with the Newton products `gram`), proximal Newton for the
/// other losses [`chosen`] admits. `support`: the slots of `w`'s nonzero weights, increasing,
/// when known (`None`: a scan of `w`). `rows`: coordinate descent's residuals of `w`, as its
/// refresh would compute them (`None`: zeros, to be refreshed).
fn method<'c, D: Rows, L: Loss + 'c>(
    ctx: &Context<'_, '_, D, L>,
    cols: &'c Columns,
    w: Vec<f64>,
    support: Option<Vec<usize>>,
    rows: Option<Vec<f64>>,
    gram: &'c mut Gram,
) -> Result<Box<dyn Primal + 'c>> {
    let (l1, l2, nf) = (ctx.cfg.l1, ctx.l2, ctx.problem.n() as f64);
    Ok(if ctx.cfg.loss == LossKind::Squared {
        let r = match rows {
            Some(r) => r,
            None => zeros::<f64>(cols.kept.len())?,
        };
        let history = VecDeque::with_capacity(EXTRAPOLATE + 1);
        let live = support.unwrap_or_else(|| (0..w.len()).filter(|&j| w[j] != 0.0).collect());
        Box::new(Descent { cols, l1, l2, nf, w, r, gram, history, live, settled: None })
    } else {
        Box::new(super::prox_newton::ProxNewton::new(cols, ctx.loss, (l1, l2), nf, w)?)
    })
}

/// Coordinate descent (or, for a loss other than squared, proximal Newton) from the model `w`
/// (length `d + 1`; zero for a cold start) on the problem of `ctx` (module docs; `ctx` without
/// the Lasso reduction), until its judge accepts the certificate or the clock runs out. Errors
/// when the objective stops being finite.
pub(crate) fn run<D: Rows, L: Loss>(ctx: &mut Context<'_, '_, D, L>, w: Vec<f64>) -> Result<Outcome> {
    let cols = Columns::of(ctx.problem, ctx.bias())?;
    let mut gram = Gram::default();
    let mut s = method(ctx, &cols, w, None, None, &mut gram)?;
    descend(ctx, &cols, s.as_mut(), None, true, false).map(|done| done.out)
}

/// What the fits of a path share (module docs, "Paths"): the columns, built once, the last
/// fit's dual point, certified over every feature, and its last Newton step's products.
pub(crate) struct Shared {
    cols: Columns,
    seed: Option<Seed>,
    gram: Gram,
    /// The last fit's model: the next fit, warm-started from it, starts from this copy
    /// ([`fit_shared`]'s `resume`) instead of a pass over every feature.
    last: Option<Last>,
}

/// A fit's model as the next fit of a path resumes it.
struct Last {
    /// Feature-major, the intercept feature's weight in slot `d`.
    w: Vec<f64>,
    /// The slots of its nonzero weights, increasing.
    support: Vec<usize>,
    /// Its per-row terms as the fit's last refresh left them ([`Primal::take_rows`]): the next
    /// fit, from the same model, starts without a refresh (module docs, "Paths").
    rows: Option<Vec<f64>>,
}

/// A fit's final dual point (`u` over every feature) and the `l2` it was certified at.
struct Seed {
    point: Point,
    l2: f64,
    /// The features whose `u` is an upper bound of `|u_j|` (module docs, "Completing the
    /// certificate").
    loose: Vec<bool>,
}

/// A fit's first dual point, whose `u` is over every feature (exact, or an upper bound of `|u_j|`
/// where `loose`), with its scaled duals `t`: the reference of the bounds that complete the
/// certificate (module docs, "Completing the certificate").
struct Anchor {
    t: Vec<f64>,
    /// `None` while the point in hand is the first one (its own `u`, copied only when the fit
    /// goes on past it).
    u: Option<Vec<f64>>,
    loose: Vec<bool>,
}

impl Shared {
    /// The shared state of the fits of `problem` with the constant feature `bias`.
    pub(crate) fn of<D: Rows>(problem: &Problem<'_, D>, bias: f64) -> Result<Self> {
        Ok(Self { cols: Columns::of(problem, bias)?, seed: None, gram: Gram::default(), last: None })
    }
}

/// A fit of `problem` under `cfg` (for which [`chosen`] said yes) by coordinate descent (or
/// proximal Newton) from `warm`, on the columns of `shared`. Its first certificate is the last
/// fit's dual point moved into this problem's feasible set, so the fit starts with the working
/// set (and, with `screening`, the Gap Safe screening) it gives, without a pass over the
/// columns (module docs, "Paths"); without `screening` no feature is screened. `resume`: `warm`
/// is the model the last fit on `shared` returned, so the fit starts from `shared`'s copy of it
/// (the same start, without `d`-long passes to rebuild and check it). Returns the fit and the
/// features screened at its end and the stored entries its passes read (its clock's work, not
/// rounded up to whole passes as `epochs` is) with where they went. Errors as
/// [`super::fit_from`].
pub(crate) fn fit_shared<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    warm: Option<&Warm<'_>>,
    resume: bool,
    shared: &mut Shared,
    screening: bool,
) -> Result<(FitResult, usize, u64, Visits)> {
    let (d, k) = (problem.x.n_cols(), problem.n_outputs);
    crate::budget::check_linear(&cfg.budget(), problem.n(), d, k, crate::budget::Width::Features)?;
    let bias = cfg.intercept_scaling;
    let (w, support, rows) = match shared.last.take().filter(|_| resume && warm.is_some() && k == 1) {
        // Warm::start's start from that model: the intercept slot from the returned intercept.
        // The residuals are that model's only when the round trip keeps the slot's bits.
        Some(Last { mut w, support, rows }) => {
            let slot = if bias > 0.0 { (bias * w[d]) / bias } else { 0.0 };
            let rows = rows.filter(|_| slot.to_bits() == w[d].to_bits());
            w[d] = slot;
            (w, Some(support), rows)
        }
        None => (Warm::start(warm, d, k, bias)?, None, None),
    };
    with_scalar_loss!(cfg.loss, |loss| {
        let mut ctx = Context::exact(problem, loss, cfg);
        // For l2 > 0 every theta is feasible (the dual has no constraint of its own), so an
        // elastic-net path's seed carries over although its l2 moves with l1; for l2 = 0, only
        // a point feasible at l2 = 0 (balanced for the intercept).
        let seed = shared.seed.take().filter(|s| cfg.l2 > 0.0 || s.l2 == 0.0);
        let fresh = rows.is_some();
        let mut s = method(&ctx, &shared.cols, w, support, rows, &mut shared.gram)?;
        let done = descend(&mut ctx, &shared.cols, s.as_mut(), seed, screening, fresh)?;
        shared.seed = Some(done.seed);
        let visited = (ctx.clock.work() * shared.cols.pass()).round() as u64;
        let (fit, w) = result(&ctx, done.out, &done.support)?;
        shared.last = Some(Last { w, support: done.support, rows: s.take_rows() });
        Ok((fit, done.screened, visited, done.visits))
    }, multiclass => Err(SdcaError::Internal(format!(
        "coordinate descent reached with loss {:?}, which it refuses; please report",
        cfg.loss.name()
    ))))
}

/// [`Context::finish`] and [`super::finite`] of the outcome `out` of one output whose model's
/// weights other than zero are in the slots `support` (increasing): the coefficients scattered
/// into zeros and only those checked, so neither reads every feature. The same result and the
/// same errors; returns the model too.
fn result<D: Rows, L: Loss>(
    ctx: &Context<'_, '_, D, L>,
    out: Outcome,
    support: &[usize],
) -> Result<(FitResult, Vec<f64>)> {
    let d = ctx.problem.x.n_cols();
    let w = out.w;
    let mut coef = vec![0.0; d];
    support.iter().filter(|&&j| j < d).for_each(|&j| coef[j] = w[j]);
    let intercept = vec![ctx.bias() * w[d]];
    let c = out.certificate;
    let bad = |v: &[f64]| v.iter().any(|x| !x.is_finite());
    let outputs: [(&'static str, bool); 4] = [
        ("the fit's coef", support.iter().any(|&j| j < d && !w[j].is_finite())),
        ("the fit's intercept", bad(&intercept)),
        ("the fit's dual variables", bad(&out.alpha)),
        ("the fit's duality gap certificate", bad(&[c.primal, c.dual, c.gap, out.solved_gap])),
    ];
    if let Some(&(what, _)) = outputs.iter().find(|(_, bad)| *bad) {
        return Err(SdcaError::NonFiniteResult { what });
    }
    let fit = FitResult {
        coef,
        intercept,
        alpha: out.alpha,
        n_outputs: 1,
        certificate: c,
        epochs: ctx.clock.epochs,
        status: if ctx.clock.interrupted { Status::Interrupted } else { out.status },
        gap_trace: out.gap_trace,
        solver: out.solver,
        l2_used: ctx.l2,
        solved_gap: out.solved_gap,
        outer_iterations: out.outer_iterations,
    };
    Ok((fit, w))
}

/// What [`descend`] returns.
struct Descended {
    out: Outcome,
    /// Its dual point, the next fit's seed.
    seed: Seed,
    /// Features screened at the end.
    screened: usize,
    /// The slots of the model's weights other than `+0`, increasing.
    support: Vec<usize>,
    /// Where the entries it read went.
    visits: Visits,
}

/// A fit's clock with the tally of where its reads went ([`Visits`]): each read is charged to
/// one part and counted as its share of a pass on the clock.
pub(super) struct Meter<'m> {
    pub(super) clock: &'m mut Clock,
    visits: Visits,
    /// Stored entries of every column ([`Columns::pass`]).
    pub(super) total: f64,
}

impl Meter<'_> {
    /// Charges `entries` read to the part `part` of the tally and to the clock.
    pub(super) fn charge(&mut self, part: fn(&mut Visits) -> &mut u64, entries: usize) {
        *part(&mut self.visits) += entries as u64;
        self.clock.add_pass(entries as f64 / self.total);
    }
}

/// [`run`] with the method `s` on the columns `cols`, from the dual point `seed`, with Gap Safe
/// screening when `screening` (module docs, "Paths"). `fresh`: the method's per-row terms are
/// already those of its model, as a refresh would leave them (the first refresh is skipped).
fn descend<D: Rows, L: Loss>(
    ctx: &mut Context<'_, '_, D, L>,
    cols: &Columns,
    s: &mut dyn Primal,
    seed: Option<Seed>,
    mut screening: bool,
    mut fresh: bool,
) -> Result<Descended> {
    let (problem, cfg, loss) = (ctx.problem, ctx.cfg, ctx.loss);
    let (d, nf, bias) = (problem.x.n_cols(), problem.n() as f64, ctx.bias());
    let intercept: Option<usize> = (bias > 0.0).then_some(d);
    let judge = &ctx.judge;
    let mut meter = Meter { clock: &mut ctx.clock, visits: Visits::default(), total: cols.pass() };
    let norms = &cols.norms;
    let mut screened = vec![false; d];
    // The features not screened, increasing (`None`: every feature).
    let mut kept: Option<Vec<usize>> = None;
    let mut gap_trace = Vec::new();
    let mut outer = 0u32;
    let mut best: Option<Point> = None;
    let (mut ws_size, mut last_gap) = (0usize, f64::INFINITY);
    // The seed's features whose u is only a bound, and this fit's anchor (its first point).
    let (mut seed, mut loose) = match seed {
        Some(s) => (Some(s.point), s.loose),
        None => (None, vec![false; d]),
    };
    let mut anchor: Option<Anchor> = None;
    let penalty = (cfg.l1, ctx.l2);
    // The Gap Safe sphere (screen.rs) for this loss's smoothness.
    let reach = |c: &Certificate| screen::reach(c, loss.smoothness(), nf);
    let safe = |u: f64, norm: f64, reach: f64| screen::proves_zero(u, norm, reach, cfg.l1);
    let (status, point) = loop {
        outer += 1;
        if !std::mem::take(&mut fresh) {
            let refreshed = s.refresh();
            meter.charge(|v| &mut v.refresh, refreshed);
        }
        let point = match seed.take() {
            // Its u is over every feature, and nothing is screened yet; the features it only
            // bounds get their exact u where the bound could change a decision (module docs).
            Some(mut p) => {
                // For l2 = 0, the exact u's top scales the point into the box.
                let top = |p: &Point| (0..d).filter(|&j| !loose[j]).fold(0.0f64, |m, j| m.max(p.u[j].abs()));
                let into = if penalty.1 == 0.0 { top(&p).max(cfg.l1) } else { cfg.l1 };
                // For l2 > 0, the certificate sums over the features that can add to the dual
                // (the loose ones' bounds are below l1 now), listed in the same scan.
                let mut scope = (penalty.1 > 0.0).then(Vec::new);
                let at = |_, bound| bound >= into;
                let listing = scope.as_mut().map(|v| (v, cfg.l1));
                let visited = cols.sharpen_listing(&mut p, &mut loose, at, listing, nf);
                let mut p = match scope {
                    Some(scope) => {
                        cols.finish(loss, p.theta, p.u, p.u_c, scope.into_iter(), s.primal(), penalty, nf)
                    }
                    None => cols.finish(loss, p.theta, p.u, p.u_c, 0..d, s.primal(), penalty, nf),
                };
                let reach = if screening { reach(&p.certificate) } else { f64::INFINITY };
                let kept = |j: usize, bound: f64| !safe(bound, norms[j], reach);
                let visited = visited + cols.sharpen(&mut p, &mut loose, kept, nf);
                meter.charge(|v| &mut v.seed, visited);
                p
            }
            None => {
                let scope: Vec<usize> = kept.clone().unwrap_or_else(|| (0..d).collect());
                // The inner solve's last point, its u over the working set already computed
                // (module docs, "Working sets").
                let (point, visited) = match s.take_settled() {
                    Some((last, within)) => cols.widen(loss, last, &within, &scope, s.primal(), penalty, nf),
                    None => s.check(&scope),
                };
                meter.charge(|v| &mut v.checks, visited);
                point
            }
        };
        let primal = point.certificate.primal;
        if !primal.is_finite() {
            return Err(SdcaError::NonFiniteResult { what: "the coordinate descent iterate's objective" });
        }
        // The first point's u is over every feature (nothing is screened yet).
        let anchor = anchor.get_or_insert_with(|| Anchor {
            t: cols.scaled(&point.theta),
            u: None,
            loose: std::mem::take(&mut loose),
        });
        // The best dual point so far (every one stays feasible).
        let point = better(point, best.take());
        let c = point.certificate;
        if !c.gap.is_finite() {
            return Err(SdcaError::NonFiniteResult { what: "the coordinate descent iterate's duality gap" });
        }
        let met = judge.met(&c);
        let late = meter.clock.out_of_time();
        if met || late || meter.clock.remaining() == 0 {
            // The certificate returned is over every feature (module docs): the point's u
            // completed over the screened features and those the anchor only bounds.
            let rest = |j: usize| screened[j] || anchor.loose[j];
            let (full, bounded) = match cols.complete(loss, point, rest, anchor, penalty, nf) {
                Err(point) => (point, vec![false; d]),
                Ok((full, bounded, visited)) => {
                    meter.charge(|v| &mut v.completion, visited);
                    (full, bounded)
                }
            };
            loose = bounded;
            gap_trace.push(full.certificate.gap);
            if judge.met(&full.certificate) {
                break (Status::Converged, full);
            }
            if late || meter.clock.remaining() == 0 {
                break (if late { Status::MaxSeconds } else { Status::MaxEpochs }, full);
            }
            // The screening's certificate met tol and the full one did not: go on without it.
            // The first point was completed in place: its bounds (at distance 0) stand for it.
            if anchor.u.is_none() {
                anchor.u = Some(full.u.clone());
                anchor.loose.clone_from(&loose);
            }
            screened.iter_mut().for_each(|z| *z = false);
            (screening, best, kept) = (false, None, None);
            continue;
        }
        gap_trace.push(c.gap);
        // The fit goes on past its first point: the anchor keeps its u.
        if anchor.u.is_none() {
            anchor.u = Some(point.u.clone());
        }
        // Dynamic Gap Safe screening (module docs), over the features not screened yet, in
        // increasing order; those it keeps are the next ones.
        if screening {
            let reach = reach(&c);
            let mut next = Vec::new();
            let mut test = |j: usize| {
                if safe(point.u[j], norms[j], reach) {
                    screened[j] = true;
                    // Most screened features are zero already: no call for them.
                    if s.model()[j] != 0.0 {
                        s.zero(j);
                    }
                } else {
                    next.push(j);
                }
            };
            match &kept {
                None => (0..d).for_each(&mut test),
                Some(k) => k.iter().copied().for_each(&mut test),
            }
            kept = Some(next);
        }
        // The working set (module docs), grown when the last inner solve did not halve the gap.
        let w = s.model();
        let all = 0..if kept.is_some() { 0 } else { d };
        let features = all.chain(kept.iter().flatten().copied());
        let support = features.clone().filter(|&j| w[j] != 0.0).count();
        let mut size = WS_MIN.max(2 * support);
        if c.gap > 0.5 * last_gap {
            size = size.max(2 * ws_size);
        }
        last_gap = c.gap;
        let mut slots = working_set(w, &point.u, norms, features, cfg.l1, size);
        ws_size = slots.len();
        slots.extend(intercept);
        best = Some(point);
        s.inner(&slots, INNER_TOL * c.gap, &mut meter);
    };
    let c = point.certificate;
    let mut alpha = vec![0.0; problem.n()];
    for (&i, theta) in cols.kept.iter().zip(&point.theta) {
        alpha[i as usize] = *theta;
    }
    // Every weight other than +0 is in `live` (a zero weight is +0 or -0).
    let support: Vec<usize> = match s.live() {
        Some(live) => live.iter().copied().filter(|&j| s.model()[j].to_bits() != 0).collect(),
        None => (0..=d).filter(|&j| s.model()[j].to_bits() != 0).collect(),
    };
    let out = Outcome {
        w: s.take_model(),
        alpha,
        certificate: c,
        solved_gap: c.gap,
        status,
        gap_trace,
        solver: "cd",
        outer_iterations: outer,
    };
    let screened = kept.map_or(0, |k| d - k.len());
    let visits = meter.visits;
    Ok(Descended { out, seed: Seed { point, l2: ctx.l2, loose }, screened, support, visits })
}

#[cfg(test)]
mod tests {
    use crate::config::FitParams;
    use crate::data::{CsrView, DenseView};
    use crate::error::SdcaError;
    use crate::solver::testing::{csr_of, toy};
    use crate::solver::{fit, fit_from, Problem, Status, Warm};

    fn params(solver: &str, l2: f64, l1: f64, intercept: bool) -> FitParams {
        FitParams {
            loss: "squared".into(),
            solver: solver.into(),
            l2,
            l1,
            fit_intercept: intercept,
            tol: 1e-11,
            max_epochs: 200_000,
            ..Default::default()
        }
    }

    /// Elastic net and Lasso, with and without an intercept, weights with zeros, dense and CSR,
    /// more features than rows and fewer: coordinate descent reaches the objective of
    /// accelerated Prox-SDCA within both certified gaps, converged at tol 1e-11, and a warm
    /// start from its own model converges within a few passes.
    #[test]
    fn matches_prox_sdca_within_the_gaps() {
        for (n, d, seed) in [(60, 150, 1u64), (200, 12, 2)] {
            let (mut x, y) = toy(n, d, false, seed);
            let weights: Vec<f64> =
                (0..n).map(|i| if i % 9 == 4 { 0.0 } else { 0.5 + (i % 4) as f64 * 0.5 }).collect();
            let dense = x.clone();
            x.iter_mut().filter(|v| v.abs() < 0.5).for_each(|v| *v = 0.0);
            let (indptr, indices, values) = csr_of(&x, n, d);
            let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
            let dense_view = DenseView::new(&dense, n, d).unwrap();
            for (l2, l1, intercept) in
                [(1e-2, 0.05, true), (0.0, 0.05, true), (0.0, 0.2, false), (1e-3, 0.01, false)]
            {
                let case = format!("n {n} d {d} l2 {l2} l1 {l1} intercept {intercept}");
                let cd = params("cd", l2, l1, intercept).check().unwrap();
                let reference =
                    FitParams { tol: 1e-9, ..params("accelerated", l2, l1, intercept) }.check().unwrap();
                let p = Problem::new(&dense_view, &y, Some(&weights), cd.loss).unwrap();
                let q = Problem::new(&csr, &y, Some(&weights), cd.loss).unwrap();
                for (what, r, s) in [
                    ("dense", fit(&p, &cd).unwrap(), fit(&p, &reference).unwrap()),
                    ("csr", fit(&q, &cd).unwrap(), fit(&q, &reference).unwrap()),
                ] {
                    assert_eq!((r.solver, r.status), ("cd", Status::Converged), "{case} {what}: {r:?}");
                    let (a, b) = (r.certificate, s.certificate);
                    assert!(a.gap <= 1e-11 * a.primal, "{case} {what}: {a:?}");
                    assert!(
                        (a.primal - b.primal).abs() <= a.gap + b.gap + 1e-13 * b.primal,
                        "{case} {what}: {a:?} {b:?}"
                    );
                    assert_eq!(r.l2_used, l2, "{case} {what}");
                    let warm = Warm::from(&r);
                    let again = match what {
                        "dense" => fit_from(&p, &cd, Some(&warm)),
                        _ => fit_from(&q, &cd, Some(&warm)),
                    };
                    // A warm start restores the model, not the extrapolated dual point that
                    // certified it: a few checks rebuild one.
                    assert!(
                        again.as_ref().is_ok_and(|f| f.converged() && f.epochs <= 15),
                        "{case} {what}: {again:?}"
                    );
                }
            }
        }
    }

    /// A 40-value Lasso path on a p >> n problem with a sparse truth (Gaussian-like rows from
    /// `toy`, 120 x 1,500, 12 true features), down to `l1_max / 50`: every value is certified at
    /// tol 1e-6 within the default `max_epochs`, with sequential screening on and off, and the
    /// two paths' objectives agree within their gaps.
    #[test]
    fn lasso_path_certifies_every_value() {
        use crate::solver::{fit_path, PathParams};
        let (n, d) = (120, 1500);
        let (x, noise) = toy(n, d, false, 11);
        let y: Vec<f64> = (0..n)
            .map(|i| {
                (0..12).map(|k| x[i * d + k * 97 % d] * (1.0 + k as f64 / 6.0)).sum::<f64>() + 0.1 * noise[i]
            })
            .collect();
        let view = DenseView::new(&x, n, d).unwrap();
        let base = FitParams { loss: "squared".into(), l2: 0.0, tol: 1e-6, ..Default::default() };
        let run = |screening: bool| {
            let path = PathParams { n_l1: 40, l1_min_ratio: 0.02, screening, ..Default::default() }
                .check(&base)
                .unwrap();
            let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
            fit_path(&p, &path).unwrap()
        };
        let (on, off) = (run(true), run(false));
        for (k, (a, b)) in on.fits.iter().zip(&off.fits).enumerate() {
            assert!(a.converged() && b.converged(), "value {k}: {a:?} {b:?}");
            assert!(a.solver == "cd" || a.solver == "closed_form", "value {k}: {}", a.solver);
            let (ca, cb) = (a.certificate, b.certificate);
            assert!(ca.gap <= 1e-6 * ca.primal && cb.gap <= 1e-6 * cb.primal, "value {k}");
            assert!((ca.primal - cb.primal).abs() <= ca.gap + cb.gap + 1e-14 * cb.primal, "value {k}");
        }
        assert!(on.fits.last().unwrap().coef.iter().filter(|v| **v != 0.0).count() >= 12);
    }

    /// Along a screened path (squared and logistic, Lasso and elastic net, with an intercept and
    /// weights with zeros, dense and CSR), the certificate of every fit is the one of its
    /// returned duals recomputed over every feature (feasible, the same dual), although the
    /// completions keep bounds instead of products for many screened features; and the path's
    /// objectives agree with those of a path without screening within the gaps.
    #[test]
    fn bounded_completions_certify_over_every_feature() {
        use crate::solver::testing::weights_with_zeros;
        let (n, d) = (80, 400);
        let (mut x, t) = toy(n, d, false, 21);
        let dense = x.clone();
        x.iter_mut().filter(|v| v.abs() < 0.4).for_each(|v| *v = 0.0);
        let (indptr, indices, values) = csr_of(&x, n, d);
        let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
        let dense = DenseView::new(&dense, n, d).unwrap();
        let weights = weights_with_zeros(n);
        let labels: Vec<f64> = t.iter().map(|v| if *v > 0.5 { 1.0 } else { -1.0 }).collect();
        let mut kept = 0;
        for (loss, y, l2) in [
            ("squared", &t, 0.0),
            ("squared", &t, 1e-3),
            ("logistic", &labels, 0.0),
            ("logistic", &labels, 1e-3),
        ] {
            let base = FitParams { loss: loss.into(), tol: 1e-9, ..params("cd", l2, 1.0, true) };
            let case = format!("{loss} l2 {l2}");
            kept += screened_path(
                &Problem::new(&dense, y, Some(&weights), base.check().unwrap().loss).unwrap(),
                &base,
                &case,
            );
            kept += screened_path(
                &Problem::new(&csr, y, Some(&weights), base.check().unwrap().loss).unwrap(),
                &base,
                &case,
            );
        }
        assert!(kept > 1000, "the completions kept {kept} bounds");
    }

    /// [`bounded_completions_certify_over_every_feature`] on one problem: a 25-value path with
    /// and without screening; returns the bounds the screened path's completions kept.
    fn screened_path<D: crate::data::Rows>(p: &Problem<'_, D>, base: &FitParams, case: &str) -> usize {
        use super::{fit_shared, Shared};
        use crate::solver::testing::certify_l1;
        let mut kept = 0;
        let mut run = |screening: bool| {
            let cfg = base.check().unwrap();
            let mut shared = Shared::of(p, cfg.intercept_scaling).unwrap();
            let mut warm: Option<crate::solver::FitResult> = None;
            let mut out = Vec::new();
            for k in 0..25 {
                let l1 = 0.05 * 0.85f64.powi(k);
                let cfg = FitParams { l1, ..base.clone() }.check().unwrap();
                let start = warm.as_ref().map(Warm::from);
                let (r, _, _, _) =
                    fit_shared(p, &cfg, start.as_ref(), start.is_some(), &mut shared, screening).unwrap();
                let case = format!("{case} l1 {l1} screening {screening}");
                assert!(r.converged(), "{case}: {r:?}");
                let (primal, dual) = certify_l1(p, &cfg, &r);
                let c = r.certificate;
                assert!((primal - c.primal).abs() <= 1e-12 * primal.abs(), "{case}: {primal} {c:?}");
                assert!((dual - c.dual).abs() <= 1e-11 * primal.abs(), "{case}: {dual} {c:?}");
                if screening {
                    kept += shared.seed.as_ref().map_or(0, |s| s.loose.iter().filter(|&&b| b).count());
                }
                out.push(c);
                warm = Some(r);
            }
            out
        };
        let (on, off) = (run(true), run(false));
        for (a, b) in on.iter().zip(&off) {
            assert!(
                (a.primal - b.primal).abs() <= a.gap + b.gap + 1e-13 * b.primal.abs(),
                "{case}: {a:?} {b:?}"
            );
        }
        kept
    }

    /// The anytime moves (Anderson extrapolation, the sign-fixed Newton step) are taken only
    /// when they lower the objective, so a fit warm-started from a loose one ends at most at its
    /// start's objective, within that start's certified gap of it.
    #[test]
    fn warm_started_fit_never_rises_above_its_start() {
        let (n, d) = (50, 300);
        let (x, y) = toy(n, d, false, 12);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = FitParams { tol: 1e-9, max_epochs: 2000, ..params("cd", 0.0, 0.02, true) }.check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        let loose =
            fit(&p, &FitParams { tol: 1e-2, ..params("cd", 0.0, 0.02, true) }.check().unwrap()).unwrap();
        let tight = fit_from(&p, &cfg, Some(&Warm::from(&loose))).unwrap();
        assert!(tight.converged(), "{tight:?}");
        assert!(tight.certificate.primal <= loose.certificate.primal, "{tight:?} {loose:?}");
        assert!(loose.certificate.primal - tight.certificate.primal <= loose.certificate.gap + 1e-15);
    }

    /// `auto` runs coordinate descent for the Lasso, for an elastic net with at least as many
    /// features as rows, and where the dual is badly conditioned; else Prox-SDCA.
    #[test]
    fn auto_picks_cd_for_the_lasso_and_wide_elastic_nets() {
        let solver_for = |n: usize, d: usize, l2: f64, l1: f64| {
            let (x, y) = toy(n, d, false, 4);
            let view = DenseView::new(&x, n, d).unwrap();
            let cfg = FitParams { max_epochs: 2, ..params("auto", l2, l1, true) }.check().unwrap();
            fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap().solver
        };
        assert_eq!(solver_for(100, 40, 0.0, 0.05), "cd");
        assert_eq!(solver_for(40, 100, 1e-2, 0.05), "cd");
        assert_eq!(solver_for(40, 40, 1e-2, 0.05), "cd");
        // Well-conditioned dual (R^2 / l2 <= 10 n): Prox-SDCA; badly conditioned: cd.
        assert_ne!(solver_for(100, 40, 1.0, 0.05), "cd");
        assert_eq!(solver_for(100, 40, 1e-4, 0.05), "cd");
        assert_ne!(solver_for(40, 100, 1e-2, 0.0), "cd");
    }

    /// `auto`'s budget for coordinate descent is the work of Prox-SDCA's predicted epochs
    /// (`3 (1 + R^2 / (gamma l2 n)) ln(1 / tol)` passes), for `auto` with `l2 > 0` only and only
    /// below `max_epochs`; a fit handed over at that budget is Prox-SDCA's from coordinate
    /// descent's model: converged, at the optimum of `cd` within both certified gaps, with the
    /// passes and the gap checks of both.
    #[test]
    fn auto_hands_slow_coordinate_descent_over_to_prox_sdca() {
        let (n, d) = (60, 150);
        let (x, y) = toy(n, d, false, 3);
        let view = DenseView::new(&x, n, d).unwrap();
        let r2 = (0..n).map(|i| x[i * d..(i + 1) * d].iter().map(|v| v * v).sum::<f64>()).fold(0.0, f64::max);
        let (l2, l1) = (r2 / n as f64, 0.05);
        let cfg = |solver: &str, max_epochs: i64| {
            FitParams { tol: 1e-9, max_epochs, ..params(solver, l2, l1, true) }.check().unwrap()
        };
        let p = Problem::new(&view, &y, None, cfg("auto", 1000).loss).unwrap();
        // R^2 is the largest row norm with the intercept's feature (1).
        let passes = (3.0 * (1.0 + (r2 + 1.0) / (l2 * n as f64)) * 1e9f64.ln()).ceil() as u32;
        assert_eq!(super::handover(&cfg("auto", 1000), &p), Some(passes));
        assert_eq!(super::handover(&cfg("auto", i64::from(passes)), &p), None);
        assert_eq!(super::handover(&cfg("cd", 1000), &p), None);
        let lasso = FitParams { tol: 1e-9, ..params("auto", 0.0, l1, true) }.check().unwrap();
        assert_eq!(super::handover(&lasso, &p), None);

        let cd = fit(&p, &cfg("cd", 100_000)).unwrap();
        let auto = cfg("auto", 1000);
        let handed = super::super::handed_over(&p, &auto, 2, vec![0.0; d + 1]).unwrap();
        assert_eq!((handed.solver, handed.status), ("sdca", Status::Converged), "{handed:?}");
        let (a, b) = (handed.certificate, cd.certificate);
        assert!(a.gap <= 1e-9 * a.primal && b.gap <= 1e-9 * b.primal, "{a:?} {b:?}");
        assert!((a.primal - b.primal).abs() <= a.gap + b.gap + 1e-14 * a.primal, "{a:?} {b:?}");
        let alone = super::super::handed_over(&p, &auto, 1000, vec![0.0; d + 1]).unwrap();
        assert_eq!(alone.solver, "cd", "{alone:?}");
        let first =
            fit(&p, &FitParams { tol: 1e-9, max_epochs: 2, ..params("cd", l2, l1, true) }.check().unwrap())
                .unwrap();
        assert_eq!(first.status, Status::MaxEpochs);
        let rest = fit_from(
            &p,
            &FitParams { tol: 1e-9, max_epochs: 998, ..params("sdca", l2, l1, true) }.check().unwrap(),
            Some(&Warm::from(&first)),
        )
        .unwrap();
        assert_eq!(handed.epochs, first.epochs + rest.epochs);
        assert_eq!(handed.gap_trace.len(), first.gap_trace.len() + rest.gap_trace.len());
        assert_eq!(handed.coef, rest.coef, "the hand-over is Prox-SDCA from cd's model");
    }

    /// The dispatched column kernels (AVX2 when the CPU has it) give the bits of the portable
    /// loops, the fallback of a CPU without AVX2, and those agree with a plain sum within
    /// rounding, for every length around the eight lanes.
    #[test]
    fn column_kernels_match_the_portable_loops() {
        use super::kernel::{axpy, axpy_portable, dot, dot2, dot2_portable, dot_portable};
        for len in (0..=19).chain([203]) {
            let x: Vec<f64> = (0..len).map(|k| ((k * 37) % 11) as f64 / 3.0 - 1.7).collect();
            let a: Vec<f64> = (0..len).map(|k| ((k * 53) % 29) as f64 / 7.0 - 2.1).collect();
            let b: Vec<f64> =
                (0..len).map(|k| if k % 3 == 1 { 0.0 } else { k as f64 * 0.37 - 1.0 }).collect();
            assert_eq!(dot(&x, &a).to_bits(), dot_portable(&x, &a).to_bits(), "dot, len {len}");
            let (p, q) = dot2(&x, &a, &b);
            let (pp, qp) = dot2_portable(&x, &a, &b);
            assert_eq!((p.to_bits(), q.to_bits()), (pp.to_bits(), qp.to_bits()), "dot2, len {len}");
            assert_eq!(p.to_bits(), dot_portable(&x, &a).to_bits(), "dot2's first sum, len {len}");
            for (got, other) in [(p, &a), (q, &b)] {
                let plain: f64 = x.iter().zip(other).map(|(x, o)| x * o).sum();
                let size: f64 = x.iter().zip(other).map(|(x, o)| (x * o).abs()).sum();
                assert!((got - plain).abs() <= 1e-14 * size, "len {len}: {got} vs {plain}");
            }
            let (mut r, mut rp) = (b.clone(), b.clone());
            axpy(-0.3, &x, &mut r);
            axpy_portable(-0.3, &x, &mut rp);
            assert_eq!(r, rp, "axpy, len {len}");
            assert!(r.iter().zip(&x).zip(&b).all(|((r, x), b)| *r == b + -0.3 * x), "axpy, len {len}");
        }
    }

    /// The row-wise Cholesky factorisation of the Newton step (AVX2 when the CPU has it) gives
    /// the bits of its portable loops, solves `G z = b` for an SPD `G` within rounding, for
    /// sizes around the eight lanes, and refuses a matrix that is not positive definite.
    #[test]
    fn row_cholesky_solves_spd_systems() {
        use super::kernel::{cholesky, cholesky_apply, cholesky_apply_portable, cholesky_portable, tri};
        for m in [1usize, 2, 7, 8, 9, 17, 40] {
            let full = spd(m);
            // Its lower triangle packed by rows.
            let g: Vec<f64> =
                (0..m).flat_map(|r| (0..=r).map(move |c| (r, c))).map(|(r, c)| full(r, c)).collect();
            let b: Vec<f64> = (0..m).map(|k| k as f64 - 1.5).collect();
            let (mut l, mut lp) = (g.clone(), g.clone());
            assert!(cholesky(&mut l, 0, m) && cholesky_portable(&mut lp, 0, m), "m {m}");
            assert_eq!(l, lp, "m {m}");
            // Row by row (appending) gives the same bits.
            let mut rows = g.clone();
            assert!((0..m).all(|a| cholesky(&mut rows[..tri(a + 1)], a, a + 1)), "m {m}");
            assert_eq!(rows, l, "m {m}");
            let (mut z, mut zp) = (b.clone(), b.clone());
            cholesky_apply(&l, m, &mut z);
            cholesky_apply_portable(&lp, m, &mut zp);
            assert_eq!(z, zp, "m {m}");
            for (r, &br) in b.iter().enumerate() {
                let gz: f64 = (0..m).map(|c| full(r, c) * z[c]).sum();
                assert!((gz - br).abs() <= 1e-11 * (1.0 + br.abs()), "m {m} row {r}: {gz} vs {br}");
            }
        }
        let mut bad = vec![1.0, 2.0, 1.0];
        assert!(!cholesky(&mut bad, 0, 2));
        let mut nan = vec![f64::NAN];
        assert!(!cholesky(&mut nan, 0, 1));
    }

    /// `G = A^T A / m + I / 2` for a fixed `A` (symmetric positive definite, order `m`), by
    /// entry.
    fn spd(m: usize) -> impl Fn(usize, usize) -> f64 {
        let a: Vec<f64> = (0..m * m).map(|k| ((k * 7 % 11) as f64 - 5.0) / 3.0).collect();
        move |r, c| {
            (0..m).map(|k| a[k * m + r] * a[k * m + c]).sum::<f64>() / m as f64
                + if r == c { 0.5 } else { 0.0 }
        }
    }

    /// The Newton step's [`super::Gram`] follows a support through removals (rank-one updates of
    /// the factor) and appends (a row each): its factor is the one a factorisation of the
    /// remaining products gives, within rounding, and a new `l2` factorises again.
    #[test]
    fn gram_factor_follows_its_slots() {
        use super::Gram;
        let (m, l2) = (30, 0.1);
        let full = spd(m);
        let mut gram = Gram { factor: Some((Vec::new(), l2)), ..Gram::default() };
        let push = |gram: &mut Gram, j: usize| {
            let row: Vec<f64> = gram.slots.iter().chain([&j]).map(|&k| full(k, j)).collect();
            gram.push(j, &row, j as f64 - 3.5);
        };
        (0..20).for_each(|j| push(&mut gram, j));
        for (a, j) in [(3, 20), (0, 21), (17, 22), (9, 23), (10, 24)] {
            gram.remove(a);
            push(&mut gram, j);
        }
        for a in [15, 2] {
            gram.remove(a);
        }
        let slots = gram.slots.clone();
        assert!(gram.factor.is_some() && slots.len() == 18);
        let mut fresh = Gram::default();
        slots.iter().for_each(|&j| push(&mut fresh, j));
        assert!(fresh.gram == gram.gram && fresh.xty == gram.xty);
        let updated = gram.factor(l2).unwrap().to_vec();
        let built = fresh.factor(l2).unwrap().to_vec();
        for (u, b) in updated.iter().zip(&built) {
            assert!((u - b).abs() <= 1e-12 * (1.0 + b.abs()), "{u} vs {b}");
        }
        assert_ne!(gram.factor(2.0 * l2).unwrap(), updated.as_slice());
        assert_eq!(gram.factor(2.0 * l2).unwrap(), fresh.factor(2.0 * l2).unwrap());
    }

    /// A dense input stores no row indices and runs the dense kernels; the CSR copy of the same
    /// matrix, without its zeros, the indexed loops. Every column operation agrees within
    /// rounding, and so do the fits: the same objective within the certified gaps and, for
    /// `l2 > 0`, the same model within `sqrt(2 gap / l2)` of the optimum each (strong convexity).
    #[test]
    fn dense_and_indexed_columns_give_the_same_model() {
        use super::Columns;
        let (n, d) = (45, 70);
        let (mut x, y) = toy(n, d, false, 21);
        x.iter_mut().filter(|v| v.abs() < 0.3).for_each(|v| *v = 0.0);
        let weights: Vec<f64> = (0..n).map(|i| if i % 7 == 3 { 0.0 } else { 1.0 + (i % 3) as f64 }).collect();
        let (indptr, indices, values) = csr_of(&x, n, d);
        let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
        let dense = DenseView::new(&x, n, d).unwrap();
        let loss = params("cd", 0.0, 0.1, true).check().unwrap().loss;
        let (p, q) = (
            Problem::new(&dense, &y, Some(&weights), loss).unwrap(),
            Problem::new(&csr, &y, Some(&weights), loss).unwrap(),
        );
        let (a, b) = (Columns::of(&p, 1.5).unwrap(), Columns::of(&q, 1.5).unwrap());
        assert!(a.dense && !b.dense && a.rows.is_empty());
        let m = a.kept.len();
        let r: Vec<f64> = (0..m).map(|k| ((k * 31) % 17) as f64 / 5.0 - 1.6).collect();
        let t: Vec<f64> = (0..m).map(|k| ((k * 13) % 7) as f64 - 3.0).collect();
        for j in 0..=d {
            let close = |u: f64, v: f64| (u - v).abs() <= 1e-13 * (1.0 + u.abs());
            assert!(a.h[j] == b.h[j] && close(a.grad(j, &r, 45.0), b.grad(j, &r, 45.0)), "column {j}");
            let ((pa, qa), (pb, qb)) = (a.dot2(j, &r, &t), b.dot2(j, &r, &t));
            assert!(close(pa, pb) && close(qa, qb), "column {j}");
            let (mut ra, mut rb) = (r.clone(), r.clone());
            a.shift(j, 0.7, &mut ra);
            b.shift(j, 0.7, &mut rb);
            assert_eq!(ra, rb, "column {j}");
        }
        for (l2, l1) in [(0.0, 0.05), (1e-2, 0.02)] {
            let cfg = params("cd", l2, l1, true).check().unwrap();
            let (u, v) = (fit(&p, &cfg).unwrap(), fit(&q, &cfg).unwrap());
            assert!(u.converged() && v.converged(), "{u:?} {v:?}");
            let (cu, cv) = (u.certificate, v.certificate);
            assert!((cu.primal - cv.primal).abs() <= cu.gap + cv.gap + 1e-13 * cu.primal, "{cu:?} {cv:?}");
            if l2 > 0.0 {
                let reach = (2.0 * cu.gap / l2).sqrt() + (2.0 * cv.gap / l2).sqrt() + 1e-12;
                let apart = u.coef.iter().zip(&v.coef).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
                assert!(apart <= reach, "l2 {l2}: models {apart} apart > {reach}");
            }
        }
    }

    /// `solver="cd"` takes the smooth losses only, with a message naming the fix.
    #[test]
    fn cd_refuses_other_losses() {
        let (x, y) = toy(20, 3, true, 3);
        let view = DenseView::new(&x, 20, 3).unwrap();
        let cfg = FitParams { loss: "hinge".into(), ..params("cd", 1e-2, 0.1, true) }.check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        match fit(&p, &cfg) {
            Err(SdcaError::InvalidParameter { name: "solver", message }) => {
                assert!(message.contains("logistic") && message.contains("loss=\"hinge\""), "{message}")
            }
            other => panic!("{other:?}"),
        }
    }
}
