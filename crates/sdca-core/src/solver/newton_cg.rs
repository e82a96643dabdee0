//! Newton-CG on the primal, for multinomial logistic regression with few features.
//!
//! Solves the ridge problem of the SDCA solvers for the multinomial loss (`l1 = 0`, `l2 > 0`):
//!
//! `P(W) = (1/n) sum_i s_i phi(W^T x~_i, y_i) + (l2/2) ||W||^2`, `x~_i = (x_i, c)`,
//!
//! `W` the `(d + 1) x k` feature-major model (the intercept as the constant feature
//! `c = intercept_scaling`, penalised like the others, as in [`super::newton`]).
//!
//! Why a primal method: SDCA's multinomial block step solves a `k`-dimensional problem per row
//! by nested Newton, `k` exponentials and logarithms a step (three quarters of a fit's time on
//! the letter-recognition set), where the primal gradient needs `k` exponentials per row and a
//! Hessian-vector product none: the passes of Newton-CG are the dense block kernels. Unlike
//! binary Newton, the Hessian (`(d + 1) k` square, `n (d + 1)^2 k^2 / 2` to build) is never
//! formed: conjugate gradients need only products with it.
//!
//! The `auto` rule (`chosen`): Newton-CG runs for the multinomial loss when `l1 = 0`, `l2 > 0`,
//! `sampling` is not `"gap"` and `d + 1 <= 32` weights per class (the binary rule's cut,
//! [`NEWTON_AUTO_MAX_DIM`]). Measured against the faster of plain and accelerated SDCA (the
//! `multiclass` example, one thread, `tol = 1e-6`, CPU seconds of single runs on a shared
//! machine) on the letter-recognition set (26 classes, standardized, no intercept) and on
//! wider copies of it (noise features correlated with the originals appended), at `l2 = 1e-2`,
//! `1e-3`, `1e-4`: with `d = 16`, 2x, 10x, 22x faster on 1,000 rows and 2.5x, 1.8x, 5x on
//! 20,000 (0.39 s against 1.99 s at `1e-4`, 0.36 s since the preconditioner's sums run on the
//! block kernel); `d = 32`: 1.5x, 4x, 10x faster on 1,000 rows, on
//! 20,000 1.1x and 1.2x slower, 3.5x faster; `d = 64`: level, 2x, 4x faster on 1,000 rows, on
//! 20,000 2.1x and 1.5x slower, 1.8x faster; `d = 128`: 1.9x slower to level on 1,000 rows and
//! 4.4x slower to 1.1x slower on 20,000. SDCA needs only a few epochs at large `l2` and many
//! rows, where the preconditioner's `O(n d^2 k)` build and the conjugate gradients do not pay;
//! Newton-CG's cost barely grows as `l2` falls. The cut keeps the few-feature fits, where the
//! gain is large at every `l2`, and bounds the loss near it to about 1.2x.
//!
//! Each iteration: one pass at the current point for `P(W)`, the gradient and the certificate
//! below; a pass that builds the block-Jacobi preconditioner ([`Blocks`]: per class, the block
//! of the Hessian `H = (1/n) sum_i s_i (x~_i x~_i^T) (x) (diag(p_i) - p_i p_i^T) + l2 I` on its
//! own weights, `p_i` the softmax of the row's scores; on letter it cut the passes from 154 to
//! 100 against the diagonal); then preconditioned conjugate gradients on `H step = -g`, each
//! product `H v` one pass (`u_i = V^T x~_i`, [`Multinomial::curvature_times`], `x~_i` times the
//! result: the multiclass block kernels `dot_block` / `axpy_block`), until the residual is
//! below `min(1/2, sqrt(||g||)) ||g||` (a superlinear forcing sequence, Nocedal and Wright,
//! "Numerical Optimization", 2006, Theorem 7.2; `||g||` or a cap of 0.1 took 30-40% more
//! passes), or below half the gradient norm at which the certificate meets `tol`; then Armijo
//! backtracking from the full step, in the loop binary Newton shares ([`super::damped_newton`],
//! whose [`Oracle`] `Cg` is here). Every pass counts as an epoch.
//! One thread (the parallel partitions of `n_threads` serve scalar losses only), deterministic.
//! Memory: two points (`2 n k` duals, inside the estimate's `3 n k`, [`crate::budget`]), nine
//! `(d + 1) k` arrays and the blocks, about `1.5 min(d + 1, 32)` doubles per weight, which the
//! estimate counts for every fit of several outputs.
//!
//! Certificate (weak duality, as for binary Newton): the duals `alpha_i = e_y - p_i` matched to
//! the scores are feasible, with `W(alpha) = (1/(l2 n)) sum_i s_i x~_i alpha_i^T` the dual of the
//! user's problem is `D(alpha) = -(1/n) sum_i s_i phi*(-alpha_i) - (l2/2) ||W(alpha)||^2` and
//!
//! `P(W) - D(alpha) = (1/n) sum_i s_i FY_i + (l2/2) ||W - W(alpha)||^2 = (1/n) sum_i s_i FY_i +
//! ||grad P(W)||^2 / (2 l2)`,
//!
//! summed from these non-negative terms (`FY_i`, the row's Fenchel-Young gap, is zero up to
//! rounding). The returned duals are these `alpha_i` (0 for rows of zero weight), so the
//! multiclass row gaps and `check` apply as to any fit; their mean is not the gap (the
//! regularizer's term makes up the rest, as for binary Newton).

use super::damped_newton::{self, Oracle, Point};
use super::newton::{cholesky, cholesky_apply, NEWTON_AUTO_MAX_DIM};
use super::sdca::scores_into;
use super::{Clock, Context, Outcome, Status};
use crate::config::{FitConfig, Sampling, SolverKind};
use crate::data::{DenseView, Rows};
use crate::error::{Result, SdcaError};
use crate::loss::{LossKind, Multinomial};
use crate::math::dot;

/// The data, the loss and the scratch of the passes.
struct NewtonCg<'p, 'a, D: Rows> {
    problem: &'p super::Problem<'a, D>,
    loss: Multinomial,
    l2: f64,
    /// Constant feature value (0 without intercept).
    bias: f64,
    /// One row's `k` scores or curvature terms.
    row: Vec<f64>,
}

impl<D: Rows> NewtonCg<'_, '_, D> {
    /// `out += x~_i a^T` for the `k` values `a`.
    #[inline(always)]
    fn add_row(&self, i: usize, a: &[f64], out: &mut [f64]) {
        let x = self.problem.x;
        x.axpy_block(i, a, out);
        let dk = x.n_cols() * a.len();
        for (o, &ac) in out[dk..].iter_mut().zip(a) {
            *o += self.bias * ac;
        }
    }

    /// `out = H v` at the point whose duals are `alpha` (module docs).
    fn hessian_times(&mut self, alpha: &[f64], v: &[f64], out: &mut [f64]) {
        let p = self.problem;
        let k = self.loss.k;
        out.iter_mut().for_each(|o| *o = 0.0);
        let mut row = std::mem::take(&mut self.row);
        for (i, alpha) in alpha.chunks_exact(k).enumerate() {
            let s = p.weight(i);
            if s == 0.0 {
                continue;
            }
            scores_into(p.x, i, v, self.bias, &mut row);
            self.loss.curvature_times(alpha, p.y[i], s, &mut row);
            self.add_row(i, &row, out);
        }
        self.row = row;
        let nf = p.n() as f64;
        for (o, &vj) in out.iter_mut().zip(v) {
            *o = *o / nf + self.l2 * vj;
        }
    }
}

/// Features of `x~` per diagonal block of the preconditioner.
const BLOCK: usize = 32;

/// The block-Jacobi preconditioner of the conjugate gradients: the blocks of `H` that couple the
/// weights of one class on one chunk of at most [`BLOCK`] consecutive features of `x~` (one
/// chunk for `d + 1 <= BLOCK`: per class, `(1/n) sum_i s_i p_ic (1 - p_ic) x~_i x~_i^T + l2 I`),
/// each factorised by Cholesky.
struct Blocks {
    /// Weights per class, `d + 1`.
    m: usize,
    k: usize,
    /// Per chunk, the upper triangle of its block for every class: pairs `j <= l` in row order,
    /// then the class.
    sums: Vec<f64>,
    /// Per chunk and class, the Cholesky factor (`size x size` of `BLOCK^2` slots).
    factors: Vec<f64>,
    /// One row of `x~`, a chunk's products `x_j x_l` (`j <= l`), the row's curvatures
    /// `s p_c (1 - p_c)`, one block's right-hand side.
    xs: Vec<f64>,
    products: Vec<f64>,
    h: Vec<f64>,
    b: Vec<f64>,
}

impl Blocks {
    fn new(m: usize, k: usize) -> Result<Self> {
        let chunks = m.div_ceil(BLOCK);
        let width = m.min(BLOCK);
        Ok(Self {
            m,
            k,
            sums: crate::budget::zeros(chunks * width * (width + 1) / 2 * k)?,
            factors: crate::budget::zeros(chunks * width * width * k)?,
            xs: crate::budget::zeros(m)?,
            products: crate::budget::zeros(width * (width + 1) / 2)?,
            h: crate::budget::zeros(k)?,
            b: crate::budget::zeros(width)?,
        })
    }

    /// The chunks: first feature and size.
    fn chunks(&self) -> impl Iterator<Item = (usize, usize)> {
        let m = self.m;
        (0..m).step_by(BLOCK).map(move |start| (start, BLOCK.min(m - start)))
    }

    /// Builds and factorises the blocks at the point whose duals are `alpha`; `false` when a
    /// block cannot be factorised (it overflowed).
    fn build<D: Rows>(&mut self, nc: &NewtonCg<'_, '_, D>, alpha: &[f64]) -> bool {
        let p = nc.problem;
        let (m, k, d) = (self.m, self.k, p.x.n_cols());
        let width = m.min(BLOCK);
        let packed = width * (width + 1) / 2;
        self.sums.iter_mut().for_each(|v| *v = 0.0);
        for (i, alpha) in alpha.chunks_exact(k).enumerate() {
            let s = p.weight(i);
            if s == 0.0 {
                continue;
            }
            nc.loss.curvature_diagonal(alpha, p.y[i], s, &mut self.h);
            self.xs.iter_mut().for_each(|v| *v = 0.0);
            let xs = &mut self.xs;
            p.x.for_each_nz(i, |j, v| xs[j] = v);
            xs[d] = nc.bias;
            // Per chunk, `sums[pair][c] += (x_j x_l) h_c` over the pairs `j <= l`: the products
            // `x_j x_l` as one row, added times `h` by the dense block kernel (`axpy_block`).
            for (g, start) in (0..m).step_by(BLOCK).enumerate() {
                let size = BLOCK.min(m - start);
                let xg = &self.xs[start..start + size];
                let mut products = self.products.iter_mut();
                for (j, &xj) in xg.iter().enumerate() {
                    for (&xl, o) in xg[j..].iter().zip(products.by_ref()) {
                        *o = xj * xl;
                    }
                }
                let pairs = size * (size + 1) / 2;
                let Ok(row) = DenseView::new(&self.products[..pairs], 1, pairs) else { return false };
                row.axpy_block(0, &self.h, &mut self.sums[g * packed * k..(g + 1) * packed * k]);
            }
        }
        let nf = p.n() as f64;
        for (g, (_, size)) in self.chunks().collect::<Vec<_>>().into_iter().enumerate() {
            for c in 0..k {
                let at = (g * k + c) * width * width;
                let f = &mut self.factors[at..at + size * size];
                let mut pair = g * packed;
                for j in 0..size {
                    for l in j..size {
                        let sum = self.sums[pair * k + c] / nf;
                        f[j * size + l] = if j == l { sum + nc.l2 } else { sum };
                        pair += 1;
                    }
                }
                if !cholesky(f, size) {
                    return false;
                }
            }
        }
        true
    }

    /// `z = M^{-1} r`.
    fn apply(&mut self, r: &[f64], z: &mut [f64]) {
        let (k, width) = (self.k, self.m.min(BLOCK));
        for (g, (start, size)) in self.chunks().collect::<Vec<_>>().into_iter().enumerate() {
            for c in 0..k {
                let b = &mut self.b[..size];
                for (j, bj) in b.iter_mut().enumerate() {
                    *bj = r[(start + j) * k + c];
                }
                let at = (g * k + c) * width * width;
                cholesky_apply(&self.factors[at..at + size * size], size, b);
                for (j, &bj) in b.iter().enumerate() {
                    z[(start + j) * k + c] = bj;
                }
            }
        }
    }
}

/// Whether Newton-CG runs: the multinomial loss with `solver="newton"`, or with `"auto"` on its
/// domain (module docs): `l1 = 0`, `l2 > 0`, no gap sampling (asking for it asks for SDCA)
/// and `d + 1 <= NEWTON_AUTO_MAX_DIM` weights per class, the binary rule's cut.
pub(crate) fn chosen(cfg: &FitConfig, d: usize) -> bool {
    cfg.loss == LossKind::Multinomial
        && match cfg.solver {
            SolverKind::Newton => true,
            SolverKind::Auto => {
                cfg.l1 == 0.0 && cfg.l2 > 0.0 && cfg.sampling != Sampling::Gap && d < NEWTON_AUTO_MAX_DIM
            }
            SolverKind::Sdca | SolverKind::Accelerated | SolverKind::Pdprox | SolverKind::Cd => false,
        }
}

/// Conjugate-gradient steps per Newton iteration at most.
const MAX_CG: usize = 250;

/// Newton-CG's half of the damped Newton method: the passes, and the preconditioned conjugate
/// gradients that find the direction, with their vectors (each `(d + 1) k`).
struct Cg<'p, 'a, D: Rows> {
    passes: NewtonCg<'p, 'a, D>,
    /// The fit's relative gap target, which bounds how exactly a direction is solved for.
    tol: f64,
    blocks: Blocks,
    residual: Vec<f64>,
    z: Vec<f64>,
    direction: Vec<f64>,
    hd: Vec<f64>,
}

impl<D: Rows> Oracle for Cg<'_, '_, D> {
    fn point(&self) -> Result<Point> {
        let (p, k) = (self.passes.problem, self.passes.loss.k);
        Point::new((p.x.n_cols() + 1) * k, p.n() * k, 0)
    }

    fn evaluate(&mut self, pt: &mut Point) {
        let p = self.passes.problem;
        let k = self.passes.loss.k;
        pt.grad.iter_mut().for_each(|g| *g = 0.0);
        let mut row = std::mem::take(&mut self.passes.row);
        let (mut loss_sum, mut fy_sum) = (0.0, 0.0);
        for (i, alpha) in pt.alpha.chunks_exact_mut(k).enumerate() {
            let s = p.weight(i);
            if s == 0.0 {
                alpha.iter_mut().for_each(|a| *a = 0.0);
                continue;
            }
            scores_into(p.x, i, &pt.w, self.passes.bias, &mut row);
            let (value, fy) = self.passes.loss.matched(&row, p.y[i], alpha);
            loss_sum += s * value;
            fy_sum += s * fy;
            // The slope `s_i (p_i - e_y) = -s_i alpha_i`.
            row.iter_mut().zip(alpha.iter()).for_each(|(r, &a)| *r = -s * a);
            self.passes.add_row(i, &row, &mut pt.grad);
        }
        self.passes.row = row;
        pt.finish(p.n(), self.passes.l2, loss_sum, fy_sum);
    }

    /// Preconditioned CG on `H step = -g` from `step = 0` (module docs): one pass builds the
    /// preconditioner, one pass per product `H v`.
    fn direction(&mut self, here: &Point, step: &mut [f64], clock: &mut Clock) -> Result<Option<Status>> {
        let gnorm = dot(&here.grad, &here.grad).sqrt();
        let target = 0.5 * (2.0 * self.passes.l2 * self.tol * here.primal).sqrt();
        let enough = (gnorm.sqrt().min(0.5) * gnorm).max(target);
        if clock.remaining() == 0 {
            return Ok(Some(Status::MaxEpochs));
        }
        if !self.blocks.build(&self.passes, &here.alpha) {
            return Err(SdcaError::NonFiniteResult {
                what: "the Newton preconditioner (the Hessian overflowed)",
            });
        }
        clock.add_pass(1.0);
        let (residual, z, direction, hd) =
            (&mut self.residual, &mut self.z, &mut self.direction, &mut self.hd);
        step.iter_mut().for_each(|s| *s = 0.0);
        residual.iter_mut().zip(&here.grad).for_each(|(r, g)| *r = -g);
        self.blocks.apply(residual, z);
        direction.copy_from_slice(z);
        let mut rz = dot(residual, z);
        for _ in 0..MAX_CG {
            if clock.remaining() == 0 {
                return Ok(Some(Status::MaxEpochs));
            }
            self.passes.hessian_times(&here.alpha, direction, hd);
            clock.add_pass(1.0);
            if clock.out_of_time() {
                return Ok(Some(Status::MaxSeconds));
            }
            // `H` is positive definite: no curvature means a zero direction (or an overflow, which
            // the next pass reports).
            let curve = dot(direction, hd);
            if curve.is_nan() || curve <= 0.0 {
                break;
            }
            let t = rz / curve;
            step.iter_mut().zip(direction.iter()).for_each(|(s, p)| *s += t * p);
            residual.iter_mut().zip(hd.iter()).for_each(|(r, h)| *r -= t * h);
            if dot(residual, residual).sqrt() <= enough {
                break;
            }
            self.blocks.apply(residual, z);
            let next = dot(residual, z);
            let beta = next / rz;
            rz = next;
            direction.iter_mut().zip(z.iter()).for_each(|(p, z)| *p = z + beta * *p);
        }
        Ok(None)
    }
}

/// Newton-CG ([`damped_newton::run`]) from the model `w` (feature-major `(d + 1) x k`; zero
/// for a cold start) on the multinomial ridge problem (module docs), each direction found by
/// preconditioned conjugate gradients. Errors when the preconditioner cannot be factorised
/// (the Hessian overflowed) or an iterate's objective is not finite.
pub(crate) fn run<D: Rows>(ctx: &mut Context<'_, '_, D, Multinomial>, w: Vec<f64>) -> Result<Outcome> {
    let (problem, k) = (ctx.problem, ctx.loss.k);
    let dim = (problem.x.n_cols() + 1) * k;
    let passes =
        NewtonCg { problem, loss: ctx.loss, l2: ctx.l2, bias: ctx.bias(), row: crate::budget::zeros(k)? };
    let scratch = || crate::budget::zeros::<f64>(dim);
    let mut cg = Cg {
        passes,
        tol: ctx.cfg.tol,
        blocks: Blocks::new(problem.x.n_cols() + 1, k)?,
        residual: scratch()?,
        z: scratch()?,
        direction: scratch()?,
        hd: scratch()?,
    };
    damped_newton::run(ctx, &mut cg, w)
}

#[cfg(test)]
mod tests {
    use crate::config::FitParams;
    use crate::data::{CsrView, DenseView, Rows};
    use crate::loss::{BlockLoss, Multinomial};
    use crate::solver::testing::{csr_of, toy_classes, weights_with_zeros};
    use crate::solver::{fit, fit_from, row_outputs, FitResult, Problem, Status, Warm};

    fn params(solver: &str, l2: f64, intercept: bool) -> FitParams {
        FitParams {
            loss: "multinomial".into(),
            solver: solver.into(),
            l2,
            tol: 1e-10,
            max_epochs: 100_000,
            fit_intercept: intercept,
            ..Default::default()
        }
    }

    /// `P(W)` and `D(alpha)` from scratch at the returned model and duals (the intercept
    /// feature of value 1, the default `intercept_scaling`, when `intercept`), with no state of
    /// the solver.
    fn recomputed<D: Rows>(
        p: &Problem<'_, D>,
        k: usize,
        l2: f64,
        intercept: bool,
        r: &FitResult,
    ) -> (f64, f64) {
        let (n, d, loss) = (p.n(), p.x.n_cols(), Multinomial { k });
        let mut w_alpha = vec![0.0; (d + 1) * k];
        let (mut loss_sum, mut conj_sum) = (0.0, 0.0);
        for i in (0..n).filter(|&i| p.weight(i) > 0.0) {
            let s = p.weight(i);
            let mut a: Vec<f64> = r.intercept.clone();
            p.x.for_each_nz(i, |j, v| (0..k).for_each(|c| a[c] += v * r.coef[c * d + j]));
            let alpha = &r.alpha[i * k..(i + 1) * k];
            loss_sum += s * loss.value(&a, p.y[i]);
            conj_sum += s * loss.conj_neg(alpha, p.y[i]);
            let scaled: Vec<f64> = alpha.iter().map(|al| s * al).collect();
            p.x.axpy_block(i, &scaled, &mut w_alpha);
            if intercept {
                w_alpha[d * k..].iter_mut().zip(&scaled).for_each(|(w, a)| *w += a);
            }
        }
        let nf = n as f64;
        let sq: f64 = r.coef.iter().chain(&r.intercept).map(|v| v * v).sum();
        let sq_alpha: f64 = w_alpha.iter().map(|v| (v / (l2 * nf)).powi(2)).sum();
        (loss_sum / nf + 0.5 * l2 * sq, -conj_sum / nf - 0.5 * l2 * sq_alpha)
    }

    /// One Newton-CG fit of `p` against the SDCA fit `sdca` of the same problem (see
    /// [`reaches_the_sdca_optimum`]).
    fn check_against<D: Rows>(
        p: &Problem<'_, D>,
        sdca: &FitResult,
        k: usize,
        l2: f64,
        intercept: bool,
        case: &str,
    ) {
        let cfg = params("newton", l2, intercept).check().unwrap();
        let r = fit(p, &cfg).unwrap();
        assert_eq!((r.solver, r.status), ("newton", Status::Converged), "{case}: {r:?}");
        assert!(r.gap_trace.len() <= 15, "{case}: {} iterations", r.gap_trace.len());
        let (a, b) = (r.certificate, sdca.certificate);
        assert!((a.primal - b.primal).abs() <= a.gap + b.gap + 1e-14, "{case}: {a:?} vs {b:?}");
        let radius = (2.0 * a.gap / l2).sqrt() + (2.0 * b.gap / l2).sqrt() + 1e-12;
        let dist = r
            .coef
            .iter()
            .chain(&r.intercept)
            .zip(sdca.coef.iter().chain(&sdca.intercept))
            .map(|(u, v)| (u - v).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(dist <= radius, "{case}: {dist} > {radius}");
        let (primal, dual) = recomputed(p, k, l2, intercept, &r);
        assert!((a.primal - primal).abs() <= 1e-12 * primal, "{case}: primal {primal} vs {a:?}");
        assert!((a.dual - dual).abs() <= 1e-12 * primal, "{case}: dual {dual} vs {a:?}");
        for i in (0..p.n()).filter(|&i| p.weight(i) == 0.0) {
            assert!(r.alpha[i * k..(i + 1) * k].iter().all(|&v| v == 0.0), "{case}: row {i}");
        }
        let rows = row_outputs(p, &cfg, &r).unwrap();
        assert!(rows.gap.iter().all(|g| *g <= 1e-14), "{case}: row gaps {:?}", rows.gap);
    }

    /// Newton-CG and plain SDCA reach the same certified optimum (dense and CSR rows, with and
    /// without intercept and weights) in a few Newton iterations; the certificate is the exact
    /// `P - D` at the returned model and duals, recomputed from scratch; the duals are zero on
    /// rows of zero weight and matched to the scores on the others (row gaps zero up to
    /// rounding: the regularizer's term makes up the gap).
    #[test]
    fn reaches_the_sdca_optimum() {
        let (n, d, k, l2) = (300, 5, 4, 1e-2);
        let (x, y) = toy_classes(n, d, k, 9);
        let (indptr, indices, values) = csr_of(&x, n, d);
        let dense = DenseView::new(&x, n, d).unwrap();
        let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
        let s = weights_with_zeros(n);
        for (intercept, s) in [(true, Some(&s[..])), (false, None), (true, None)] {
            let sdca_cfg = params("sdca", l2, intercept).check().unwrap();
            let dense_p = Problem::new(&dense, &y, s, sdca_cfg.loss).unwrap();
            let sdca = fit(&dense_p, &sdca_cfg).unwrap();
            assert!(sdca.converged(), "{sdca:?}");
            let case = format!("intercept {intercept} weights {}", s.is_some());
            check_against(&dense_p, &sdca, k, l2, intercept, &format!("dense {case}"));
            let csr_p = Problem::new(&csr, &y, s, sdca_cfg.loss).unwrap();
            check_against(&csr_p, &sdca, k, l2, intercept, &format!("csr {case}"));
        }
    }

    /// Stopped by `max_epochs` at any point (a gradient, preconditioner, CG or line-search
    /// pass), the certificate still bounds the suboptimality against a long SDCA run.
    #[test]
    fn early_stops_keep_a_valid_certificate() {
        let (n, d, k, l2) = (200, 4, 3, 1e-3);
        let (x, y) = toy_classes(n, d, k, 4);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = FitParams { tol: 1e-13, ..params("sdca", l2, true) }.check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        let best = fit(&p, &cfg).unwrap().certificate;
        assert!(best.gap <= 1e-13 * best.primal, "{best:?}");
        // `P* <= best.primal`: a certificate below `P - best.primal` would be wrong.
        let optimum = best.primal;
        let mut stopped = 0;
        for max_epochs in 1..=60 {
            let cfg = FitParams { max_epochs, ..params("newton", l2, true) }.check().unwrap();
            let r = fit(&p, &cfg).unwrap();
            let c = r.certificate;
            assert!(r.converged() || r.status == Status::MaxEpochs, "{max_epochs}: {:?}", r.status);
            stopped += usize::from(r.status == Status::MaxEpochs);
            assert!(c.gap >= c.primal - optimum - 1e-15, "{max_epochs}: {c:?} vs P* <= {optimum}");
            assert_eq!(r.gap_trace.last(), Some(&c.gap));
        }
        assert!(stopped >= 10, "only {stopped} budgets stopped the fit");
    }

    #[test]
    fn is_deterministic_and_ignores_the_seed() {
        let (n, d, k) = (250, 6, 5);
        let (x, y) = toy_classes(n, d, k, 2);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = params("newton", 1e-4, true).check().unwrap();
        let s = weights_with_zeros(n);
        let p = Problem::new(&view, &y, Some(&s), cfg.loss).unwrap();
        let first = fit(&p, &cfg).unwrap();
        assert!(first.converged(), "{first:?}");
        assert_eq!(first, fit(&p, &cfg).unwrap());
        let other = FitParams { seed: 99, ..params("newton", 1e-4, true) }.check().unwrap();
        assert_eq!(first, fit(&p, &other).unwrap());
    }

    /// A warm start from the optimum certifies at once; blocks of the preconditioner split
    /// the features when `d + 1` exceeds `BLOCK`, and the fit still converges.
    #[test]
    fn warm_start_and_wide_rows() {
        let (n, d, k) = (120, super::BLOCK + 7, 3);
        let (x, y) = toy_classes(n, d, k, 6);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = params("newton", 1e-2, true).check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        let best = fit(&p, &cfg).unwrap();
        assert!(best.converged(), "{best:?}");
        let again = fit_from(&p, &cfg, Some(&Warm::from(&best))).unwrap();
        assert_eq!((again.status, again.epochs, again.outer_iterations), (Status::Converged, 1, 0));
    }

    #[test]
    fn auto_picks_newton_cg_on_its_domain_only() {
        let n = 60;
        let solver_for = |d: usize, p: FitParams| {
            let (x, y) = toy_classes(n, d, 3, 3);
            let view = DenseView::new(&x, n, d).unwrap();
            let cfg = FitParams { max_epochs: 2, ..p }.check().unwrap();
            fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap().solver
        };
        let auto = || FitParams { tol: 1e-4, ..params("auto", 1e-3, true) };
        let last = super::NEWTON_AUTO_MAX_DIM - 1;
        assert_eq!(solver_for(4, auto()), "newton");
        assert_eq!(solver_for(last, auto()), "newton");
        assert_ne!(solver_for(last + 1, auto()), "newton");
        assert_eq!(solver_for(last + 1, params("newton", 1e-3, true)), "newton");
        let off_domain = [
            FitParams { l1: 1e-3, ..auto() },
            FitParams { sampling: "gap".into(), ..auto() },
            FitParams { loss: "multiclass_hinge".into(), ..auto() },
            FitParams { loss: "multiclass_smooth_hinge".into(), ..auto() },
            params("sdca", 1e-3, true),
            params("accelerated", 1e-6, true),
        ];
        for p in off_domain {
            let name = format!("{p:?}");
            assert_ne!(solver_for(4, p), "newton", "{name}");
        }
    }
}
