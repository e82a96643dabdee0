//! Damped Newton on the primal, for problems with few features.
//!
//! Solves the ridge problem of the SDCA solvers (`l1 = 0`, `l2 > 0`; see [`super::sdca`]):
//!
//! `P(w) = (1/n) sum_i s_i phi(x~_i . w) + (l2/2) ||w||^2`, `x~_i = (x_i, c)`,
//!
//! with the intercept as the constant feature `c = intercept_scaling` in the last slot of `w`,
//! penalised by `l2` like the others, for scalar losses with a (generalized) second derivative
//! ([`crate::loss::LossKind::newton_ready`]).
//!
//! Why a primal method: many tiny per-group fits (say 50 rows, 6 features) make SDCA pay about
//! 20 epochs of `n` exact dual steps (each with `exp` / `log` for logistic) plus a gap pass per
//! epoch, where Newton converges quadratically in a handful of iterations of `O(n d^2 + d^3)`.
//! The `d^3` of the factorisation is what limits it to few features.
//!
//! The `auto` rule (`chosen`): Newton runs when the loss has a second derivative (logistic,
//! squared, squared_hinge, smooth_hinge), `l1 = 0`, `l2 > 0`, `sampling` is not `"gap"` (asking
//! for gap sampling asks for SDCA) and `d + 1 <= 32` weights (intercept slot included). Its
//! iterations cost `O(n d^2 + d^3)` against SDCA's `O(n d)` epochs, and it needs 4 to 11 of them
//! where SDCA needs 4 to 2,000 epochs. Measured against the faster of plain and accelerated SDCA
//! (`benches/newton_crossover.rs`, logistic, `tol = 1e-6`, one thread): at `n = 50`, Newton is
//! 6-35x faster for `d <= 16`, 2x at `d = 32` and 3x slower at `d = 64`, at `l2 = 1e-2` and
//! `1e-4` alike. At `n = 5,000` and `l2 = 1e-2` (SDCA needs only 4-7 epochs) it is 2.4x faster
//! at `d <= 6`, 1.2x at `d = 16` and 1.7x slower at `d = 32`; at `l2 = 1e-4`, 5-6x faster up to
//! `d = 16`, 1.2x at `d = 32`, level at `d = 64`. The cut keeps the small groups, where the gain
//! is large, and bounds the loss on large, well-regularized problems near the cut to well
//! under 2x.
//!
//! Each iteration makes one pass at the current point for `P(w)`, the gradient, the certificate
//! below and the curvatures `D` ([`crate::loss::Loss::curvature`]: a generalized Hessian for the
//! piecewise-quadratic hinge losses, whose damped Newton method is still globally convergent and
//! locally superlinear); then builds the Hessian `H = (1/n) X~^T S D X~ + l2 I` from the stored
//! curvatures, solves `H p = -g` by Cholesky and backtracks (Armijo, halving) from the full step
//! (the loop that Newton-CG shares, [`super::damped_newton`]; this module is its [`Oracle`]).
//! A trial point is evaluated by the same full pass, so an accepted trial already holds the next
//! iteration's gradient: every pass counts as an epoch, and most iterations take one. The
//! Hessian is built only where a step is taken (not at rejected trials, nor at the last
//! iterate), so squared loss, whose first step lands on the optimum, costs one Hessian, one
//! factorisation and two passes: the normal equations plus the certifying pass.
//!
//! Dense data (at least half of the entries stored) runs the passes and the Hessian on blocks
//! of rows stored column by column ([`Columns`]), where every kernel is a vectorised loop of
//! the block's length; sparse rows keep row kernels whose cost follows their entries.
//!
//! Certificate (weak duality, no optimality assumed): the duals `alpha_i = dual_of(a_i) =
//! -phi'(a_i)` at the scores `a_i = x~_i . w` are feasible, and with `w(alpha) = (1/(l2 n))
//! sum_i s_i alpha_i x~_i` the dual of the user's problem is `D(alpha) = -(1/n) sum_i s_i
//! phi*(-alpha_i) - (l2/2) ||w(alpha)||^2`. Since `(1/n) sum_i s_i alpha_i a_i = l2 w(alpha) . w`,
//!
//! `P(w) - D(alpha) = (1/n) sum_i s_i FY_i + (l2/2) ||w - w(alpha)||^2`,
//!
//! `FY_i = phi(a_i) + phi*(-alpha_i) + alpha_i a_i` the row's Fenchel-Young gap (zero up to
//! rounding at the matched dual). The gradient is `g = l2 (w - w(alpha))`, so the gap is
//! `||g||^2 / (2 l2)` plus the rows' rounding: the duality gap is an exact gradient-norm test.
//! It is summed from these non-negative terms rather than as `P - D`, which would cancel at
//! small gaps. The solver's `alpha` rows' gaps are these `FY_i`; the regularizer's term makes up
//! the rest of the certificate, as for Pdprox.

use super::damped_newton::{self, Oracle, Point};
use super::{Clock, Context, Outcome, Problem, Status};
use crate::config::{FitConfig, Sampling, SolverKind, NEWTON_MAX_FEATURES};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{BlockLoss, Matched};
use crate::math::dot;

/// Doubles of `X~` one [`Columns`] block holds at most (256 KiB).
const BLOCK_VALUES: usize = 1 << 15;

/// A block of consecutive rows of `X~` stored column by column, for dense data: the scores,
/// the gradient and the Hessian then become loops over columns of the block's length
/// (`X~ w` as axpys, `X~^T slope` and `X~^T diag(curve) X~` as dot products), which vectorise,
/// where row-by-row kernels on rows of a few entries spend most of their time on loop
/// overhead (callgrind, 50 x 6 logistic: 44,000 instructions a pass and 35,000 a Hessian by
/// rows). A problem that fits in one block is transposed once per fit.
struct Columns {
    /// Rows per block.
    rows: usize,
    /// Columns stored: `d + 1` with the intercept feature, `d` without.
    cols: usize,
    /// `z[j * len + r] = x~_{start + r, j}` for the loaded block `start..start + len`.
    z: Vec<f64>,
    /// The first row of the loaded block.
    loaded: Option<usize>,
    /// Per row of the block: the scores, then the slopes `-s_i alpha_i`.
    a: Vec<f64>,
    /// Per row of the block: a column scaled by the curvatures.
    scaled: Vec<f64>,
}

impl Columns {
    /// Columns for `x` when at least half of its `n x d` entries are stored (every dense
    /// view), else `None` (sparse rows keep the row kernels, whose cost follows their entries).
    fn new<D: Rows>(x: &D, bias: f64) -> Result<Option<Self>> {
        let (n, d) = (x.n_rows(), x.n_cols());
        let mut stored = 0usize;
        for i in 0..n {
            x.for_each_nz(i, |_, _| stored += 1);
        }
        if n == 0 || d == 0 || stored.saturating_mul(2) < n.saturating_mul(d) {
            return Ok(None);
        }
        let cols = d + usize::from(bias > 0.0);
        let rows = n.min(BLOCK_VALUES / cols).max(1);
        Ok(Some(Self {
            rows,
            cols,
            z: crate::budget::zeros(rows * cols)?,
            loaded: None,
            a: crate::budget::zeros(rows)?,
            scaled: crate::budget::zeros(rows)?,
        }))
    }

    /// Loads rows `start..start + len` of `X~` (no-op when they already are).
    fn load<D: Rows>(&mut self, x: &D, bias: f64, start: usize, len: usize) {
        if self.loaded == Some(start) {
            return;
        }
        let (z, d) = (&mut self.z[..self.cols * len], x.n_cols());
        z.iter_mut().for_each(|v| *v = 0.0);
        for r in 0..len {
            x.for_each_nz(start + r, |j, v| z[j * len + r] = v);
        }
        if self.cols > d {
            z[d * len..].iter_mut().for_each(|v| *v = bias);
        }
        self.loaded = Some(start);
    }
}

/// The last two (score, label) pairs of a cold pass and their terms ([`Newton::row`]).
type Last = [Option<(f64, f64, Matched)>; 2];

/// The data, the loss and the scratch of the passes.
struct Newton<'p, 'a, D: Rows, L: BlockLoss> {
    problem: &'p Problem<'a, D>,
    loss: L,
    l2: f64,
    /// Constant feature value (0 without intercept).
    bias: f64,
    /// The column kernels' scratch, for dense data ([`Columns::new`]).
    columns: Option<Columns>,
    /// The Hessian, then its Cholesky factor ([`Newton::hessian`]).
    h: Vec<f64>,
}

impl<D: Rows, L: BlockLoss> Oracle for Newton<'_, '_, D, L> {
    fn point(&self) -> Result<Point> {
        let n = self.problem.n();
        Point::new(self.problem.x.n_cols() + 1, n, n)
    }

    fn evaluate(&mut self, pt: &mut Point) {
        pt.grad.iter_mut().for_each(|g| *g = 0.0);
        let (loss_sum, fy_sum) = if self.columns.is_some() { self.by_columns(pt) } else { self.by_rows(pt) };
        pt.finish(self.problem.n(), self.l2, loss_sum, fy_sum);
    }

    /// Builds the Hessian from the curvatures of `here` and solves `H p = -g` by Cholesky.
    fn direction(&mut self, here: &Point, step: &mut [f64], _: &mut Clock) -> Result<Option<Status>> {
        step.iter_mut().zip(&here.grad).for_each(|(p, g)| *p = -g);
        self.hessian(&here.curve);
        if !cholesky_solve(&mut self.h, step.len(), step) {
            return Err(SdcaError::NonFiniteResult { what: "the Newton step (the Hessian overflowed)" });
        }
        Ok(None)
    }
}

impl<D: Rows, L: BlockLoss> Newton<'_, '_, D, L> {
    /// One row's terms at the score `a` (`s > 0`): fills `alpha_i` and `curve_i`, adds to the
    /// sums of `s_i phi` and of the Fenchel-Young gaps, and returns the slope `-s_i alpha_i`.
    /// In a pass at `w = 0` (a cold start) of a classification loss (`last` is `Some`) every
    /// score is 0 and the labels are +-1, so the rows reuse the terms of the last two labels met (the same function of the same arguments, so
    /// the same bits): with binary labels the pass makes two `Loss::matched` calls instead of
    /// `n` (for logistic each is an `exp` and a `log1p`). Other passes call `matched` for
    /// every row: checking the last pairs there cost more than it saved (callgrind, the 500
    /// logistic fits of `examples/small_fits.rs`: 88.2M instructions without reuse, 90.2M
    /// reusing in every pass, 86.4M reusing in cold passes only). Regression labels rarely
    /// repeat, and squared loss's terms cost less than the check (the squared fits: 52.8M
    /// instructions without reuse, 54.3M reusing in cold passes).
    #[inline(always)]
    fn row(
        &self,
        pt: &mut Point,
        i: usize,
        s: f64,
        a: f64,
        sums: &mut (f64, f64),
        last: Option<&mut Last>,
    ) -> f64 {
        // The matched dual, `phi(a)` (shared with `P`), the row's Fenchel-Young gap and
        // `phi''(a)` in one call (`Loss::matched`).
        let y = self.problem.y[i];
        let row = match last {
            None => self.loss.matched(&[a], y),
            Some(last) => {
                let same = |e: &Option<(f64, f64, Matched)>| {
                    e.filter(|(la, ly, _)| la.to_bits() == a.to_bits() && ly.to_bits() == y.to_bits())
                        .map(|e| e.2)
                };
                match same(&last[0]).or_else(|| same(&last[1])) {
                    Some(m) => m,
                    None => {
                        let m = self.loss.matched(&[a], y);
                        last[1] = last[0];
                        last[0] = Some((a, y, m));
                        m
                    }
                }
            }
        };
        pt.alpha[i] = row.alpha;
        pt.curve[i] = s * row.curvature;
        sums.0 += s * row.value;
        sums.1 += s * row.gap;
        -s * row.alpha
    }

    /// The rows' part of [`Newton::evaluate`], row by row: `grad` gets `-sum_i s_i alpha_i
    /// x~_i` (= `sum_i s_i phi'(a_i) x~_i`); returns the sums of `s_i phi(a_i)` and of the
    /// rows' Fenchel-Young gaps.
    fn by_rows(&self, pt: &mut Point) -> (f64, f64) {
        let p = self.problem;
        let (x, n, d) = (p.x, p.n(), p.x.n_cols());
        let (mut sums, mut last) = ((0.0, 0.0), [None; 2]);
        let cold = L::CLASSIFICATION && pt.w.iter().all(|&v| v == 0.0);
        for i in 0..n {
            let s = p.weight(i);
            if s == 0.0 {
                pt.alpha[i] = 0.0;
                pt.curve[i] = 0.0;
                continue;
            }
            let a = x.dot(i, &pt.w) + self.bias * pt.w[d];
            let slope = self.row(pt, i, s, a, &mut sums, cold.then_some(&mut last));
            x.axpy(i, slope, &mut pt.grad);
            pt.grad[d] += slope * self.bias;
        }
        sums
    }

    /// [`Newton::by_rows`] by blocks of columns ([`Columns`]).
    fn by_columns(&mut self, pt: &mut Point) -> (f64, f64) {
        let p = self.problem;
        let (x, n) = (p.x, p.n());
        let Some(mut c) = self.columns.take() else { return (f64::NAN, f64::NAN) };
        let (mut sums, mut last) = ((0.0, 0.0), [None; 2]);
        let cold = L::CLASSIFICATION && pt.w.iter().all(|&v| v == 0.0);
        let mut start = 0;
        while start < n {
            let len = c.rows.min(n - start);
            c.load(x, self.bias, start, len);
            let a = &mut c.a[..len];
            a.iter_mut().for_each(|v| *v = 0.0);
            for (zj, &wj) in c.z.chunks_exact(len).zip(&pt.w[..c.cols]) {
                if wj != 0.0 {
                    a.iter_mut().zip(zj).for_each(|(ar, &z)| *ar += wj * z);
                }
            }
            for (r, ar) in a.iter_mut().enumerate() {
                let i = start + r;
                let s = p.weight(i);
                if s == 0.0 {
                    pt.alpha[i] = 0.0;
                    pt.curve[i] = 0.0;
                    *ar = 0.0;
                } else {
                    *ar = self.row(pt, i, s, *ar, &mut sums, cold.then_some(&mut last));
                }
            }
            for (g, zj) in pt.grad.iter_mut().zip(c.z.chunks_exact(len).take(c.cols)) {
                *g += dot(zj, a);
            }
            start += len;
        }
        self.columns = Some(c);
        sums
    }

    /// `h = grad^2 P(w) = (1/n) X~^T diag(curve) X~ + l2 I` at the point whose pass filled
    /// `curve`: row-major `(d + 1) x (d + 1)`; the upper triangle is what [`cholesky_solve`]
    /// reads.
    fn hessian(&mut self, curve: &[f64]) {
        let p = self.problem;
        let (x, n, d, bias) = (p.x, p.n(), p.x.n_cols(), self.bias);
        let dim = d + 1;
        let h = &mut self.h;
        h.iter_mut().for_each(|v| *v = 0.0);
        if let Some(c) = self.columns.as_mut() {
            // Upper triangle, one dot product of block columns per entry.
            let mut start = 0;
            while start < n {
                let len = c.rows.min(n - start);
                c.load(x, bias, start, len);
                let (z, scaled) = (&c.z[..c.cols * len], &mut c.scaled[..len]);
                for j in 0..c.cols {
                    let zj = &z[j * len..(j + 1) * len];
                    scaled
                        .iter_mut()
                        .zip(zj)
                        .zip(&curve[start..start + len])
                        .for_each(|((u, &z), &cr)| *u = cr * z);
                    for (k, zk) in z.chunks_exact(len).enumerate().skip(j) {
                        h[j * dim + k] += dot(scaled, zk);
                    }
                }
                start += len;
            }
        } else {
            // Both triangles: row `i` adds `curve_i x~_ij x~_i` to row `j` of `h` for each
            // stored `x_ij`, one axpy of the row per entry (`nnz_i^2` products).
            for (i, &c) in curve.iter().enumerate() {
                if c == 0.0 {
                    continue;
                }
                x.for_each_nz(i, |j, v| {
                    let row = &mut h[j * dim..(j + 1) * dim];
                    x.axpy(i, c * v, row);
                    row[d] += c * v * bias;
                });
                if bias > 0.0 {
                    let row = &mut h[d * dim..];
                    x.axpy(i, c * bias, row);
                    row[d] += c * bias * bias;
                }
            }
        }
        let nf = n as f64;
        h.iter_mut().for_each(|v| *v /= nf);
        for j in 0..dim {
            h[j * dim + j] += self.l2;
        }
    }
}

/// Solves `H z = b` in place (`b` becomes `z`) for a symmetric positive definite `H` given by
/// its upper triangle (row-major `dim x dim`), which is overwritten by its Cholesky factor `R`
/// (`H = R^T R`). `false` when a pivot is not positive (a non-finite Hessian).
pub(crate) fn cholesky_solve(h: &mut [f64], dim: usize, b: &mut [f64]) -> bool {
    let factored = cholesky(h, dim);
    if factored {
        cholesky_apply(h, dim, b);
    }
    factored
}

/// Overwrites the upper triangle of the symmetric positive definite `h` (row-major `dim x
/// dim`) by its Cholesky factor `R` (`H = R^T R`); `false` when a pivot is not positive.
pub(crate) fn cholesky(h: &mut [f64], dim: usize) -> bool {
    for j in 0..dim {
        let pivot = h[j * dim + j] - (0..j).map(|k| h[k * dim + j].powi(2)).sum::<f64>();
        if !(pivot > 0.0 && pivot.is_finite()) {
            return false;
        }
        let r = pivot.sqrt();
        h[j * dim + j] = r;
        for i in j + 1..dim {
            let dot: f64 = (0..j).map(|k| h[k * dim + j] * h[k * dim + i]).sum();
            h[j * dim + i] = (h[j * dim + i] - dot) / r;
        }
    }
    true
}

/// Solves `R^T R z = b` in place for the factor `R` of [`cholesky`].
pub(crate) fn cholesky_apply(h: &[f64], dim: usize, b: &mut [f64]) {
    for j in 0..dim {
        let dot: f64 = (0..j).map(|k| h[k * dim + j] * b[k]).sum();
        b[j] = (b[j] - dot) / h[j * dim + j];
    }
    for j in (0..dim).rev() {
        let dot: f64 = (j + 1..dim).map(|k| h[j * dim + k] * b[k]).sum();
        b[j] = (b[j] - dot) / h[j * dim + j];
    }
}

/// The most weights (`d + 1`, the intercept slot included) for which `solver="auto"` picks
/// Newton (module docs).
pub(crate) const NEWTON_AUTO_MAX_DIM: usize = 32;

/// Whether Newton runs: `Newton` asks for it (an error beyond [`NEWTON_MAX_FEATURES`]
/// features); `Auto` on its domain (the module docs): a loss with a curvature, `l1 = 0`, `l2 > 0`,
/// no gap sampling (asking for it asks for SDCA) and `d + 1 <= NEWTON_AUTO_MAX_DIM`.
pub(crate) fn chosen(cfg: &FitConfig, d: usize) -> Result<bool> {
    match cfg.solver {
        SolverKind::Newton if d > NEWTON_MAX_FEATURES => Err(SdcaError::InvalidParameter {
            name: "solver",
            message: format!(
                "\"newton\" takes at most {NEWTON_MAX_FEATURES} features (each iteration factorises a \
                 (d + 1) x (d + 1) Hessian) and this fit has {d}; use solver=\"auto\" or \"sdca\""
            ),
        }),
        SolverKind::Newton => Ok(true),
        SolverKind::Auto => Ok(cfg.loss.newton_ready()
            && cfg.l1 == 0.0
            && cfg.l2 > 0.0
            && cfg.sampling != Sampling::Gap
            && d < NEWTON_AUTO_MAX_DIM),
        SolverKind::Sdca | SolverKind::Accelerated | SolverKind::Pdprox | SolverKind::Cd => Ok(false),
    }
}

/// Damped Newton ([`damped_newton::run`]) from the model `w` (feature-major, length `d + 1`;
/// zero for a cold start) on the ridge problem with weight `l2` (module docs), each direction
/// a Cholesky solve of the Hessian. Errors when the Hessian cannot be factorised (it
/// overflowed) or an iterate's objective is not finite.
pub(crate) fn run<D: Rows, L: BlockLoss>(ctx: &mut Context<'_, '_, D, L>, w: Vec<f64>) -> Result<Outcome> {
    let (problem, bias) = (ctx.problem, ctx.bias());
    let dim = problem.x.n_cols() + 1;
    let columns = Columns::new(problem.x, bias)?;
    let h = crate::budget::zeros(dim * dim)?;
    let mut newton = Newton { problem, loss: ctx.loss, l2: ctx.l2, bias, columns, h };
    damped_newton::run(ctx, &mut newton, w)
}

#[cfg(test)]
mod tests {
    use super::cholesky_solve;
    use crate::config::FitParams;
    use crate::data::{CsrView, DenseView, Rows};
    use crate::error::SdcaError;
    use crate::loss::{BlockLoss, Logistic, LossKind, SmoothHinge, Squared, SquaredHinge};
    use crate::solver::testing::{toy, weights_with_zeros};
    use crate::solver::{fit, fit_from, FitResult, Problem, Status, Warm};

    const LOSSES: [&str; 4] = ["logistic", "squared", "squared_hinge", "smooth_hinge"];

    fn params(loss: &str, solver: &str, l2: f64) -> FitParams {
        FitParams {
            loss: loss.into(),
            smoothing: 0.5,
            solver: solver.into(),
            l2,
            tol: 1e-12,
            max_epochs: 100_000,
            ..Default::default()
        }
    }

    /// The same rows as CSR, small entries dropped, each row's entries listed in reverse.
    fn sparse(x: &mut [f64], n: usize, d: usize) -> (Vec<i64>, Vec<u32>, Vec<f64>) {
        x.iter_mut().filter(|v| v.abs() < 0.4).for_each(|v| *v = 0.0);
        let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
        for i in 0..n {
            for j in (0..d).rev().filter(|&j| x[i * d + j] != 0.0) {
                indices.push(j as u32);
                values.push(x[i * d + j]);
            }
            indptr.push(indices.len() as i64);
        }
        (indptr, indices, values)
    }

    /// `D(alpha)` of the user's problem from scratch (module docs), for a scalar loss.
    fn dual<D: Rows, L: BlockLoss>(p: &Problem<'_, D>, loss: L, r: &FitResult, l2: f64, bias: f64) -> f64 {
        let (n, d) = (p.n(), p.x.n_cols());
        let mut u = vec![0.0; d + 1];
        let mut conj = 0.0;
        for i in (0..n).filter(|&i| p.weight(i) > 0.0) {
            let sa = p.weight(i) * r.alpha[i];
            p.x.axpy(i, sa, &mut u);
            u[d] += sa * bias;
            conj += p.weight(i) * loss.conj_neg(&r.alpha[i..=i], p.y[i]);
        }
        let scale = 1.0 / (l2 * n as f64);
        -conj / n as f64 - 0.5 * l2 * u.iter().map(|v| (v * scale).powi(2)).sum::<f64>()
    }

    fn check_against_sdca<D: Rows>(x: &D, y: &[f64], s: Option<&[f64]>, loss: &str, intercept: bool) {
        let l2 = 1e-2;
        let at = |solver: &str| FitParams { fit_intercept: intercept, ..params(loss, solver, l2) };
        let cfg = at("newton").check().unwrap();
        let p = Problem::new(x, y, s, cfg.loss).unwrap();
        let newton = fit(&p, &cfg).unwrap();
        let sdca = fit(&p, &at("sdca").check().unwrap()).unwrap();
        let case = format!("{loss} intercept {intercept} weights {}", s.is_some());
        assert_eq!((newton.solver, newton.status), ("newton", Status::Converged), "{case}: {newton:?}");
        assert!(sdca.converged(), "{case}: {sdca:?}");
        let (a, b) = (newton.certificate, sdca.certificate);
        assert!((a.primal - b.primal).abs() <= 1e-10 * b.primal, "{case}: {a:?} vs {b:?}");
        assert!(newton.gap_trace.len() <= 25, "{case}: {} iterations", newton.gap_trace.len());
        // Strong convexity: both models lie within sqrt(2 gap / l2) of the optimum.
        let radius = (2.0 * a.gap / l2).sqrt() + (2.0 * b.gap / l2).sqrt() + 1e-12;
        let dist = newton
            .coef
            .iter()
            .chain(&newton.intercept)
            .zip(sdca.coef.iter().chain(&sdca.intercept))
            .map(|(u, v)| (u - v).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(dist <= radius, "{case}: {dist} > {radius}");
        // The certificate is the duality gap at the returned duals, and rows of zero weight
        // keep a zero dual as SDCA's do.
        let bias = cfg.intercept_scaling;
        let d_alpha = match cfg.loss {
            LossKind::Logistic => dual(&p, Logistic, &newton, l2, bias),
            LossKind::Squared => dual(&p, Squared, &newton, l2, bias),
            LossKind::SquaredHinge => dual(&p, SquaredHinge, &newton, l2, bias),
            LossKind::SmoothHinge { smoothing } => dual(&p, SmoothHinge { smoothing }, &newton, l2, bias),
            other => panic!("{other:?}"),
        };
        assert!((a.dual - d_alpha).abs() <= 1e-12 * a.primal, "{case}: {} vs D(alpha) {d_alpha}", a.dual);
        for i in (0..p.n()).filter(|&i| p.weight(i) == 0.0) {
            assert_eq!(newton.alpha[i], 0.0, "{case}: row {i}");
        }
    }

    #[test]
    fn reaches_the_sdca_optimum_for_every_loss() {
        let (n, d) = (90, 5);
        for loss in LOSSES {
            let classification = loss != "squared";
            let (mut x, y) = toy(n, d, classification, 21);
            let s = weights_with_zeros(n);
            let dense = DenseView::new(&x, n, d).unwrap();
            for intercept in [true, false] {
                check_against_sdca(&dense, &y, None, loss, intercept);
                check_against_sdca(&dense, &y, Some(&s), loss, intercept);
            }
            let (indptr, indices, values) = sparse(&mut x, n, d);
            let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
            check_against_sdca(&csr, &y, Some(&s), loss, true);
            check_against_sdca(&csr, &y, None, loss, false);
        }
    }

    /// The column kernels (dense views, here in two blocks: `n (d + 1)` exceeds
    /// `BLOCK_VALUES`) and the row kernels (a CSR view of the same matrix with under half of
    /// its entries stored) solve the same problem to the same optimum, weights and zero rows
    /// included.
    #[test]
    fn row_and_column_kernels_agree() {
        let (n, d) = (5_000, 8);
        assert!(n * (d + 1) > super::BLOCK_VALUES);
        for loss in LOSSES {
            let (mut x, y) = toy(n, d, loss != "squared", 8);
            x.iter_mut().filter(|v| v.abs() < 0.9).for_each(|v| *v = 0.0);
            x[7 * d..8 * d].iter_mut().for_each(|v| *v = 0.0);
            let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
            for i in 0..n {
                for j in (0..d).filter(|&j| x[i * d + j] != 0.0) {
                    indices.push(j as u32);
                    values.push(x[i * d + j]);
                }
                indptr.push(indices.len() as i64);
            }
            assert!(2 * values.len() < n * d, "{loss}: the CSR view must take the row kernels");
            let dense = DenseView::new(&x, n, d).unwrap();
            let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
            let s = weights_with_zeros(n);
            let cfg = FitParams { tol: 1e-10, ..params(loss, "newton", 1e-3) }.check().unwrap();
            let by_columns = fit(&Problem::new(&dense, &y, Some(&s), cfg.loss).unwrap(), &cfg).unwrap();
            let by_rows = fit(&Problem::new(&csr, &y, Some(&s), cfg.loss).unwrap(), &cfg).unwrap();
            assert!(by_columns.converged() && by_rows.converged(), "{loss}: {by_columns:?} {by_rows:?}");
            let (a, b) = (by_columns.certificate, by_rows.certificate);
            assert!((a.primal - b.primal).abs() <= 1e-10 * b.primal, "{loss}: {a:?} vs {b:?}");
            let radius = (2.0 * a.gap / 1e-3).sqrt() + (2.0 * b.gap / 1e-3).sqrt() + 1e-12;
            let dist = by_columns
                .coef
                .iter()
                .chain(&by_columns.intercept)
                .zip(by_rows.coef.iter().chain(&by_rows.intercept))
                .map(|(u, v)| (u - v).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(dist <= radius, "{loss}: {dist} > {radius}");
        }
    }

    /// Squared loss: the Hessian is constant, so the first full step lands on the optimum.
    #[test]
    fn squared_loss_converges_in_one_step() {
        let (n, d) = (200, 8);
        let (x, y) = toy(n, d, false, 4);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = params("squared", "newton", 1e-3).check().unwrap();
        let r = fit(&Problem::new(&view, &y, Some(&weights_with_zeros(n)), cfg.loss).unwrap(), &cfg).unwrap();
        assert_eq!((r.status, r.outer_iterations, r.epochs), (Status::Converged, 1, 2), "{r:?}");
        assert_eq!(r.gap_trace.len(), 2);
    }

    #[test]
    fn is_deterministic_and_ignores_the_seed() {
        let (n, d) = (150, 6);
        let (x, y) = toy(n, d, true, 5);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = params("logistic", "newton", 1e-4).check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        let first = fit(&p, &cfg).unwrap();
        assert_eq!(first, fit(&p, &cfg).unwrap());
        assert_eq!(
            first,
            fit(&p, &FitParams { seed: 99, ..params("logistic", "newton", 1e-4) }.check().unwrap()).unwrap()
        );
    }

    #[test]
    fn warm_start_from_the_optimum_and_along_a_path() {
        let (n, d) = (300, 6);
        let (x, y) = toy(n, d, true, 11);
        let view = DenseView::new(&x, n, d).unwrap();
        let p = Problem::new(&view, &y, None, LossKind::Logistic).unwrap();
        let at = |l2: f64| FitParams { tol: 1e-8, ..params("logistic", "newton", l2) }.check().unwrap();
        let best = fit(&p, &at(1e-3)).unwrap();
        let again = fit_from(&p, &at(1e-3), Some(&Warm::from(&best))).unwrap();
        assert_eq!(
            (again.status, again.epochs, again.outer_iterations),
            (Status::Converged, 1, 0),
            "{again:?}"
        );
        assert_eq!(again.coef, best.coef);
        // The next l2 of a path starts closer than zero does.
        let cold = fit(&p, &at(3e-4)).unwrap();
        let warm = fit_from(&p, &at(3e-4), Some(&Warm::from(&best))).unwrap();
        assert!(warm.converged() && cold.converged());
        assert!(warm.epochs < cold.epochs, "warm {} vs cold {} epochs", warm.epochs, cold.epochs);
        assert!((warm.certificate.primal - cold.certificate.primal).abs() <= 1e-8 * cold.certificate.primal);
    }

    /// Stopped by `max_epochs` at any point, the certificate still bounds the suboptimality.
    #[test]
    fn early_stops_keep_a_valid_certificate() {
        let (n, d) = (200, 6);
        let (x, y) = toy(n, d, true, 7);
        let view = DenseView::new(&x, n, d).unwrap();
        for loss in LOSSES {
            let p =
                Problem::new(&view, &y, None, params(loss, "newton", 1e-3).check().unwrap().loss).unwrap();
            let best = fit(&p, &params(loss, "sdca", 1e-3).check().unwrap()).unwrap().certificate;
            let optimum = best.primal - best.gap;
            for max_epochs in 1..=3 {
                let cfg = FitParams { max_epochs, ..params(loss, "newton", 1e-3) }.check().unwrap();
                let r = fit(&p, &cfg).unwrap();
                let c = r.certificate;
                let stopped = (r.status, r.epochs) == (Status::MaxEpochs, max_epochs as u32);
                assert!(stopped || r.converged(), "{loss} {max_epochs}: {:?} after {}", r.status, r.epochs);
                assert!(c.gap >= c.primal - optimum - 1e-12, "{loss} {max_epochs}: {c:?} vs P* {optimum}");
                assert_eq!(r.gap_trace.last(), Some(&c.gap));
            }
        }
    }

    #[test]
    fn auto_picks_newton_on_its_domain_only() {
        let n = 60;
        let solver_for = |d: usize, p: FitParams| {
            let (x, y) = toy(n, d, p.loss != "squared", 3);
            let view = DenseView::new(&x, n, d).unwrap();
            let cfg = FitParams { max_epochs: 2, ..p }.check().unwrap();
            fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).map(|r| r.solver)
        };
        let auto = |loss: &str| params(loss, "auto", 1e-2);
        for loss in LOSSES {
            assert_eq!(solver_for(6, auto(loss)).unwrap(), "newton", "{loss}");
            assert_eq!(solver_for(31, auto(loss)).unwrap(), "newton", "{loss}");
            assert_ne!(solver_for(32, auto(loss)).unwrap(), "newton", "{loss}");
        }
        let off_domain = [
            auto("hinge"),
            auto("absolute"),
            FitParams { l1: 1e-3, ..auto("logistic") },
            FitParams { l2: 0.0, l1: 1e-3, ..auto("squared") },
            FitParams { sampling: "gap".into(), ..auto("logistic") },
            params("logistic", "sdca", 1e-2),
            params("logistic", "accelerated", 1e-6),
        ];
        for p in off_domain {
            let name = format!("{p:?}");
            assert_ne!(solver_for(6, p).unwrap(), "newton", "{name}");
        }
        // Crammer-Singer: the plugin maps classes to indices; `toy` labels are -1 / +1, so shift
        // them (the multinomial loss has its own Newton, `super::newton_cg`).
        let (x, y) = toy(n, 4, true, 3);
        let y: Vec<f64> = y.iter().map(|v| (v + 1.0) / 2.0).collect();
        let view = DenseView::new(&x, n, 4).unwrap();
        let cfg = FitParams { loss: "multiclass_hinge".into(), max_epochs: 2, ..Default::default() }
            .check()
            .unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        assert_ne!(r.solver, "newton");
        // Asked for explicitly beyond its feature limit: an error that names the fix.
        let err = solver_for(crate::config::NEWTON_MAX_FEATURES + 1, params("logistic", "newton", 1e-2))
            .unwrap_err();
        assert!(matches!(err, SdcaError::InvalidParameter { name: "solver", .. }), "{err}");
        assert!(err.to_string().contains("solver=\"auto\""), "{err}");
    }

    /// A warm start that overflows the scores is an error, not a NaN model.
    #[test]
    fn overflowing_fits_are_errors() {
        let (n, d) = (20, 2);
        let (x, y) = toy(n, d, true, 1);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = params("squared", "newton", 1e-2).check().unwrap();
        let warm = Warm { coef: &[1e200, -1e200], intercept: &[0.0] };
        let err = fit_from(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg, Some(&warm)).unwrap_err();
        assert!(matches!(err, SdcaError::NonFiniteResult { .. }), "{err}");
    }

    #[test]
    fn cholesky_solves_a_small_spd_system() {
        // H = A^T A + I for a fixed A, upper triangle only; z checked by multiplying back.
        let dim = 5;
        let a: Vec<f64> = (0..dim * dim).map(|k| ((k * 7 % 11) as f64 - 5.0) / 3.0).collect();
        let full = |r: usize, c: usize| {
            (0..dim).map(|k| a[k * dim + r] * a[k * dim + c]).sum::<f64>() + if r == c { 1.0 } else { 0.0 }
        };
        let mut h = vec![0.0; dim * dim];
        for r in 0..dim {
            for c in r..dim {
                h[r * dim + c] = full(r, c);
            }
        }
        let b: Vec<f64> = (0..dim).map(|k| k as f64 - 1.5).collect();
        let mut z = b.clone();
        assert!(cholesky_solve(&mut h, dim, &mut z));
        for (r, &br) in b.iter().enumerate() {
            let hz: f64 = (0..dim).map(|c| full(r, c) * z[c]).sum();
            assert!((hz - br).abs() <= 1e-12, "row {r}: {hz} vs {br}");
        }
        let mut bad = vec![1.0, 2.0, 2.0, 1.0];
        assert!(!cholesky_solve(&mut bad, 2, &mut [1.0, 1.0]));
        let mut nan = vec![f64::NAN];
        assert!(!cholesky_solve(&mut nan, 1, &mut [1.0]));
    }
}
