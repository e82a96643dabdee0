//! The linear solvers and their public entry, [`fit_from`].
//!
//! [`fit_from`] checks the memory budget and the warm start ([`Warm`]), and makes the one
//! `match` from the loss enum to a monomorphised solver (`crate::loss::with_loss`); then `solve`
//! picks the problem actually solved and the solver:
//!
//! - **Elastic net / ridge** (`l2 > 0`): solved as given.
//! - **Lasso / pure L1** (`l2 = 0`, `l1 > 0`): solved as an elastic net with a small `l2_used`
//!   chosen from `tol`, with a certificate for the original problem ([`lasso`]).
//! - **Newton** (`solver="auto"`, first rule): damped Newton on the primal for ridge problems
//!   with few features ([`newton`], whose docs give the rule and its measurements); for the
//!   multinomial loss, Newton-CG (`newton_cg`, with its own measurements).
//! - **Accelerated or plain Prox-SDCA** (`solver="auto"`, otherwise): accelerated when the
//!   loss is smooth and the problem ill-conditioned ([`accelerated`], which gives the rule),
//!   else plain ([`sdca`]).
//! - **Pdprox** (`solver="pdprox"`): full primal-dual passes for a non-smooth loss with a
//!   non-smooth penalty ([`pdprox`]).
//!
//! Modules by concern: `problem` (the data, checked once), `result` (what a fit returns),
//! `driver` (the epoch loop, the budget and the stopping rule), `warm` (warm starts), [`lasso`]
//! (the reduction), and one module per algorithm (`sdca` with `shrink`, `accelerated`,
//! `newton`, `newton_cg`, `pdprox`, `cocoa`). Every solver of a fit reads one `Context`.

pub mod accelerated;
mod cd;
mod cocoa;
mod damped_newton;
mod driver;
pub mod lasso;
mod multiclass;
pub mod newton;
mod newton_cg;
mod parallel;
pub mod path;
pub mod pdprox;
mod problem;
mod prox_newton;
mod result;
pub mod screen;
pub mod sdca;
mod shrink;
mod warm;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub use cocoa::{local_round, Aggregation, Coordinator, LocalRound, RoundSpec};
pub(crate) use driver::{drive, goal, meets, Budget, Clock, Coordinate, End, Estimate, Judge, Verdict};
pub use path::{fit_path, Path, PathConfig, PathParams, Penalty, Visits, ZeroModel};
pub use problem::Problem;
pub(crate) use result::Outcome;
pub use result::{row_outputs, Certificate, FitResult, RowOutputs, Status};
pub(crate) use warm::Start;
pub use warm::Warm;

use crate::config::{FitConfig, SolverKind};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{with_loss, with_scalar_loss, BlockLoss};
use lasso::Reduction;

/// What every solver of one fit reads and shares: the data, the loss, the checked options, the
/// problem actually solved (its `l2`), its stopping rule, the fit-wide budget and the random
/// stream. One value instead of long argument lists.
pub(crate) struct Context<'p, 'a, D: Rows, L: BlockLoss> {
    pub problem: &'p Problem<'a, D>,
    pub loss: L,
    pub cfg: &'p FitConfig,
    /// The `l2` of the problem solved: the user's, or the Lasso reduction's `l2_used`.
    pub l2: f64,
    /// `s_i (||x_i||^2 + bias^2)` per row ([`Problem::row_sq`]), filled by the dual solvers
    /// (Newton does not need it).
    pub row_sq: Vec<f64>,
    pub judge: Judge<'p, 'a, D, L>,
    pub clock: Clock,
    pub rng: Xoshiro256PlusPlus,
}

impl<'p, 'a, D: Rows, L: BlockLoss> Context<'p, 'a, D, L> {
    /// The context of a fit of `problem` with `loss` under `cfg`, through the Lasso reduction
    /// when `cfg.l2` is 0 (except for Pdprox, which solves `l2 = 0` as it is). The clock starts
    /// now.
    fn new(problem: &'p Problem<'a, D>, loss: L, cfg: &'p FitConfig) -> Result<Self> {
        let lasso = Reduction::of(problem, loss, cfg)?;
        Ok(Self::with(problem, loss, cfg, lasso))
    }

    /// The context of a fit that solves `l2 = 0` as it is (Pdprox, coordinate descent).
    fn exact(problem: &'p Problem<'a, D>, loss: L, cfg: &'p FitConfig) -> Self {
        Self::with(problem, loss, cfg, None)
    }

    fn with(
        problem: &'p Problem<'a, D>,
        loss: L,
        cfg: &'p FitConfig,
        lasso: Option<Reduction<'p, 'a, D, L>>,
    ) -> Self {
        let l2 = lasso.as_ref().map_or(cfg.l2, |r| r.l2_used);
        Self {
            problem,
            loss,
            cfg,
            l2,
            row_sq: Vec::new(),
            judge: Judge::new(cfg.tol, lasso),
            clock: Clock::new(cfg),
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed),
        }
    }

    /// The value of the constant feature that carries the intercept (0 without one).
    pub fn bias(&self) -> f64 {
        self.cfg.intercept_scaling
    }

    /// The [`FitResult`] of a solver's outcome: back to the output-major layout, with the
    /// budget's count of epochs and the interrupt.
    fn finish(&self, out: Outcome) -> FitResult {
        let (d, k, bias) = (self.problem.x.n_cols(), self.loss.k(), self.bias());
        FitResult {
            coef: (0..k).flat_map(|c| (0..d).map(move |j| (j, c))).map(|(j, c)| out.w[j * k + c]).collect(),
            intercept: out.w[d * k..].iter().map(|v| bias * v).collect(),
            alpha: out.alpha,
            n_outputs: k,
            certificate: out.certificate,
            epochs: self.clock.epochs,
            status: if self.clock.interrupted { Status::Interrupted } else { out.status },
            gap_trace: out.gap_trace,
            solver: out.solver,
            l2_used: self.l2,
            solved_gap: out.solved_gap,
            outer_iterations: out.outer_iterations,
        }
    }
}

/// Fit a regularized linear model (DESIGN.md section 3) with the configured solver, from
/// scratch: `fit_from(problem, cfg, None)`.
pub fn fit<D: Rows>(problem: &Problem<'_, D>, cfg: &FitConfig) -> Result<FitResult> {
    fit_from(problem, cfg, None)
}

/// Fit a regularized linear model (DESIGN.md section 3), optionally warm-started from a model
/// ([`Warm`]).
///
/// Solves the elastic net (or, for `l2 = 0`, the Lasso through the reduction of [`lasso`]) with
/// plain Prox-SDCA (Shalev-Shwartz and Zhang, "Proximal Stochastic Dual Coordinate Ascent",
/// 2012, Figure 1), Accelerated Prox-SDCA (Shalev-Shwartz and Zhang, "Accelerated Proximal
/// Stochastic Dual Coordinate Ascent for Regularized Loss Minimization", 2014, Figure 2),
/// Pdprox or, for ridge problems with few features, damped Newton ([`newton`]), as chosen by
/// `cfg.solver` (module docs). Returns the model, its duals and a certificate for the original
/// problem. Errors: a warm model of the wrong width or with non-finite values; a Lasso problem
/// whose intercept cannot be bounded; a fit that overflowed `f64`
/// ([`SdcaError::NonFiniteResult`]).
pub fn fit_from<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    warm: Option<&Warm<'_>>,
) -> Result<FitResult> {
    let (d, k) = (problem.x.n_cols(), problem.n_outputs);
    crate::budget::check_linear(&cfg.budget(), problem.n(), d, k, crate::budget::Width::Features)?;
    let w = Warm::start(warm, d, k, cfg.intercept_scaling)?;
    let primal_cd = cd::chosen(cfg, problem)?;
    let fit = if newton_cg::chosen(cfg, d) {
        let mut ctx = Context::new(problem, crate::loss::Multinomial { k }, cfg)?;
        let out = newton_cg::run(&mut ctx, w)?;
        ctx.finish(out)
    } else if primal_cd {
        match cd::handover(cfg, problem) {
            Some(passes) => handed_over(problem, cfg, passes, w)?,
            None => primal(problem, cfg, w)?,
        }
    } else if cfg.solver == SolverKind::Pdprox {
        primal(problem, cfg, w)?
    } else {
        with_loss!(cfg.loss, k, |loss| solve(problem, loss, cfg, w))?
    };
    finite(fit)
}

/// A fit by a primal method: coordinate descent where [`cd::chosen`] says so, else Pdprox.
fn primal<D: Rows>(problem: &Problem<'_, D>, cfg: &FitConfig, w: Vec<f64>) -> Result<FitResult> {
    let primal_cd = cfg.solver != SolverKind::Pdprox;
    Ok(with_scalar_loss!(cfg.loss, |loss| {
        let mut ctx = Context::exact(problem, loss, cfg);
        let out = if primal_cd { cd::run(&mut ctx, w)? } else { pdprox::run(&mut ctx, w)? };
        ctx.finish(out)
    }, multiclass => return Err(SdcaError::Internal(format!(
        "{} reached with loss {:?}, which the config rejects; please report",
        cfg.solver.name(),
        cfg.loss.name()
    )))))
}

/// Coordinate descent for at most `passes`, then, if it has not met `tol`, Prox-SDCA from its
/// model for the rest of the budget ([`cd::handover`]). The result is Prox-SDCA's (its solver,
/// certificate and duals), with the passes and the gap checks of both.
fn handed_over<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    passes: u32,
    w: Vec<f64>,
) -> Result<FitResult> {
    let start = std::time::Instant::now();
    let first = primal(problem, &cfg.limited(passes, cfg.max_seconds), w)?;
    if first.status != Status::MaxEpochs {
        return Ok(first);
    }
    let left = |limit: f64| limit - start.elapsed().as_secs_f64();
    if cfg.max_seconds.is_some_and(|s| left(s) <= 0.0) {
        return Ok(FitResult { status: Status::MaxSeconds, ..first });
    }
    let rest = cfg.limited(cfg.max_epochs.saturating_sub(first.epochs), cfg.max_seconds.map(left));
    let (d, k) = (problem.x.n_cols(), problem.n_outputs);
    let w = Warm::start(Some(&Warm::from(&first)), d, k, cfg.intercept_scaling)?;
    let mut fit = with_loss!(cfg.loss, k, |loss| solve(problem, loss, &rest, w))?;
    fit.epochs += first.epochs;
    fit.gap_trace = first.gap_trace.into_iter().chain(fit.gap_trace).collect();
    Ok(fit)
}

/// The fit, or the error naming its first non-finite output.
fn finite(fit: FitResult) -> Result<FitResult> {
    // Valid but extreme input (values near 1e150, a tiny l2 against large data) can overflow
    // inside the solver; NaN or infinity in a model is garbage, so it is an error instead.
    let c = &fit.certificate;
    let outputs: [(&'static str, &[f64]); 4] = [
        ("the fit's coef", &fit.coef),
        ("the fit's intercept", &fit.intercept),
        ("the fit's dual variables", &fit.alpha),
        ("the fit's duality gap certificate", &[c.primal, c.dual, c.gap, fit.solved_gap]),
    ];
    match outputs.iter().find(|(_, v)| v.iter().any(|x| !x.is_finite())) {
        Some(&(what, _)) => Err(SdcaError::NonFiniteResult { what }),
        None => Ok(fit),
    }
}

/// The problem actually solved, the solver, and the run.
fn solve<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    cfg: &FitConfig,
    w: Vec<f64>,
) -> Result<FitResult> {
    let mut ctx = Context::new(problem, loss, cfg)?;
    let out =
        if newton::chosen(cfg, problem.x.n_cols())? { newton::run(&mut ctx, w)? } else { dual(&mut ctx, w)? };
    Ok(ctx.finish(out))
}

/// The dual solvers (module docs): plain or accelerated Prox-SDCA from the model `w`.
fn dual<D: Rows, L: BlockLoss>(ctx: &mut Context<'_, '_, D, L>, w: Vec<f64>) -> Result<Outcome> {
    ctx.row_sq = ctx.problem.row_sq(ctx.bias())?;
    let r2 = ctx.row_sq.iter().fold(0.0f64, |m, &r| m.max(r));
    let warm = w.iter().any(|&v| v != 0.0);
    let (mut start, sum) = Start::new(ctx, w)?;
    if warm {
        warm::scale_to_best_dual(ctx, &mut start.alpha, &sum);
    }
    let (n, gamma) = (ctx.problem.n(), ctx.loss.smoothness());
    if accelerated::chosen(ctx.cfg.solver, gamma, r2, ctx.l2, n) {
        let acc = accelerated::Params::new(r2, gamma, ctx.l2, n);
        let out = accelerated::run(ctx, &acc, start)?;
        if ctx.cfg.l2 > 0.0 {
            accelerated::certify_plain(ctx, out)
        } else {
            Ok(out)
        }
    } else if let Some(k) = parallel::partitions(ctx) {
        parallel::run(ctx, start, k)
    } else {
        sdca::run(ctx, start)
    }
}

/// Bytes a linear fit of `n` rows, `d` features and `k` scores per row allocates, an upper
/// estimate over every solver, checked against `max_memory` or the default memory budget before
/// the fit starts ([`crate::budget::linear_bytes`]).
pub fn memory_estimate(n: usize, d: usize, k: usize) -> u64 {
    crate::budget::linear_bytes(n, d, k)
}

#[cfg(test)]
pub(crate) mod testing {
    //! Small deterministic problems and an independent Lasso solver for the solver tests.

    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::sdca::State;
    use super::Coordinate;
    use crate::data::Rows;
    use crate::loss::BlockLoss;
    use crate::reg::L2;

    /// [`toy`]'s regression problem with its targets cut into three classes (`< 0`, `< 1`,
    /// the rest) for the multiclass losses.
    pub fn toy_three_classes(n: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let (x, t) = toy(n, d, false, seed);
        let y = t
            .iter()
            .map(|&v| {
                if v < 0.0 {
                    0.0
                } else if v < 1.0 {
                    1.0
                } else {
                    2.0
                }
            })
            .collect();
        (x, y)
    }

    /// [`toy`]'s regression problem with its targets cut into `k` bands of width `4 / k` from
    /// `-1.5`, the classes `0..k`.
    pub fn toy_classes(n: usize, d: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let (x, t) = toy(n, d, false, seed);
        let y =
            t.iter().map(|v| (((v + 1.5) * k as f64 / 4.0).max(0.0) as usize).min(k - 1) as f64).collect();
        (x, y)
    }

    /// Sample weights with every seventh row zero, the others in `[0.5, 2)`.
    pub fn weights_with_zeros(n: usize) -> Vec<f64> {
        (0..n).map(|i| if i % 7 == 3 { 0.0 } else { 0.5 + (i % 5) as f64 * 0.3 }).collect()
    }

    /// Runs `passes` shrinking passes of `st` over its `n` rows as the epoch driver does (a
    /// fresh permutation of the rows the last pass kept, from a fixed seed; the pass; [`Coordinate::settled`]; a
    /// fresh `w`); after each, calls `dropped(st, before, i)` for every row `i` the pass left
    /// out (`before`: the duals before the pass) and checks that the order still holds every
    /// row. Returns how many rows the last pass kept.
    pub fn shrinking_passes<D: Rows, L: BlockLoss>(
        st: &mut State<'_, '_, D, L, L2>,
        n: usize,
        passes: usize,
        mut dropped: impl FnMut(&State<'_, '_, D, L, L2>, &[f64], usize),
    ) -> usize {
        let mut order: Vec<u32> = (0..n as u32).collect();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let mut kept = n;
        for _ in 0..passes {
            order[..kept].shuffle(&mut rng);
            let before = st.alpha.clone();
            kept = st.pass(&mut order[..kept]);
            Coordinate::settled(st);
            st.refresh_w();
            for &i in &order[kept..] {
                dropped(st, &before, i as usize);
            }
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert!(sorted.iter().enumerate().all(|(j, &i)| i as usize == j), "order lost a row");
        }
        kept
    }

    /// The non-zeros of the row-major `n x d` matrix `x` as CSR (`indptr`, `indices`, `values`).
    pub fn csr_of(x: &[f64], n: usize, d: usize) -> (Vec<i64>, Vec<u32>, Vec<f64>) {
        let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
        for row in x.chunks(d).take(n) {
            for (j, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
                indices.push(j as u32);
                values.push(v);
            }
            indptr.push(indices.len() as i64);
        }
        (indptr, indices, values)
    }

    /// `(P, D)` of an L1 / elastic-net fit of a scalar loss recomputed from its model and duals
    /// alone (DESIGN.md section 3 and the dual of `screen.rs`), after checking that the duals
    /// are feasible for `l2 = 0` (the box `|u_j| <= l1`, and `sum_i s_i alpha_i = 0` with an
    /// intercept).
    pub fn certify_l1<D: Rows>(
        p: &super::Problem<'_, D>,
        cfg: &crate::config::FitConfig,
        r: &super::FitResult,
    ) -> (f64, f64) {
        use crate::loss::{with_scalar_loss, Loss};
        use crate::reg::soft_threshold;
        let (n, d, bias) = (p.n(), p.x.n_cols(), cfg.intercept_scaling);
        let nf = n as f64;
        let b = r.intercept.first().copied().unwrap_or(0.0);
        let c = if bias > 0.0 { b / bias } else { 0.0 };
        with_scalar_loss!(cfg.loss, |loss| {
            let (mut data, mut conj, mut u, mut sum, mut size) = (0.0, 0.0, vec![0.0; d], 0.0, 0.0);
            for i in (0..n).filter(|&i| p.weight(i) > 0.0) {
                let (s, a) = (p.weight(i), p.x.dot(i, &r.coef) + b);
                data += s * Loss::value(&loss, a, p.y[i]);
                conj += s * Loss::conj_neg(&loss, r.alpha[i], p.y[i]);
                p.x.for_each_nz(i, |j, v| u[j] += s * r.alpha[i] * v / nf);
                sum += s * r.alpha[i];
                size += s * r.alpha[i].abs();
            }
            let sq = r.coef.iter().map(|w| w * w).sum::<f64>() + c * c;
            let primal = data / nf + cfg.l1 * r.coef.iter().map(|w| w.abs()).sum::<f64>() + 0.5 * cfg.l2 * sq;
            let u_c = bias * sum / nf;
            let dual = if cfg.l2 == 0.0 {
                assert!(u.iter().all(|u| u.abs() <= cfg.l1 * (1.0 + 1e-12)), "outside the box");
                assert!(bias == 0.0 || sum.abs() <= 1e-12 * size, "unbalanced: {sum} of {size}");
                -conj / nf
            } else {
                let w2: f64 = u.iter().map(|&u| (soft_threshold(u, cfg.l1) / cfg.l2).powi(2)).sum::<f64>()
                    + (u_c / cfg.l2).powi(2);
                -conj / nf - 0.5 * cfg.l2 * w2
            };
            (primal, dual)
        }, multiclass => unreachable!())
    }

    /// A deterministic stream of numbers in `[-1, 1)` (xorshift), the same for a given `seed`.
    pub fn uniform(seed: u64) -> impl FnMut() -> f64 {
        let mut state = 0x2545F4914F6CDD1Du64 ^ seed.wrapping_mul(0x9E3779B97F4A7C15);
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    /// `n x d` row-major features in `[-1, 1]` and labels from a sparse truth
    /// (`1, -0.5, 0, 1, ...`) plus noise and an offset of 0.5; classes are the sign.
    pub fn toy(n: usize, d: usize, classification: bool, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut next = uniform(seed);
        let x: Vec<f64> = (0..n * d).map(|_| next()).collect();
        let truth = |j: usize| [1.0, -0.5, 0.0][j % 3];
        let y = (0..n)
            .map(|i| {
                let s = (0..d).map(|j| x[i * d + j] * truth(j)).sum::<f64>() + 0.3 * next() + 0.5;
                match (classification, s > 0.0) {
                    (false, _) => s,
                    (true, true) => 1.0,
                    (true, false) => -1.0,
                }
            })
            .collect();
        (x, y)
    }

    /// Cyclic coordinate descent for the Lasso `(1/2n)||X w + b - y||^2 + l1 ||w||_1`, with an
    /// unpenalised intercept `b` when `intercept`; runs until no coordinate moves by more than
    /// `1e-14`. Returns `(w, b, objective)`.
    pub fn lasso_cd(x: &[f64], y: &[f64], d: usize, l1: f64, intercept: bool) -> (Vec<f64>, f64, f64) {
        let n = y.len();
        let nf = n as f64;
        let (mut w, mut b, mut r) = (vec![0.0; d], 0.0, y.to_vec());
        let col_sq: Vec<f64> =
            (0..d).map(|j| (0..n).map(|i| x[i * d + j].powi(2)).sum::<f64>() / nf).collect();
        for _ in 0..100_000 {
            let mut moved: f64 = 0.0;
            for j in 0..d {
                let rho = (0..n).map(|i| x[i * d + j] * r[i]).sum::<f64>() / nf + col_sq[j] * w[j];
                let new = crate::reg::soft_threshold(rho, l1) / col_sq[j];
                let step = new - w[j];
                if step != 0.0 {
                    (0..n).for_each(|i| r[i] -= step * x[i * d + j]);
                    w[j] = new;
                    moved = moved.max(step.abs());
                }
            }
            if intercept {
                let step = r.iter().sum::<f64>() / nf;
                r.iter_mut().for_each(|ri| *ri -= step);
                b += step;
                moved = moved.max(step.abs());
            }
            if moved < 1e-14 {
                break;
            }
        }
        let objective =
            r.iter().map(|v| v * v).sum::<f64>() / (2.0 * nf) + l1 * w.iter().map(|v| v.abs()).sum::<f64>();
        (w, b, objective)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::toy;
    use super::*;
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::loss::LossKind;

    fn params(loss: &str, l2: f64, l1: f64) -> FitParams {
        FitParams { loss: loss.into(), l2, l1, tol: 1e-8, max_epochs: 20_000, ..Default::default() }
    }

    #[test]
    fn max_memory_refuses_a_fit_before_it_allocates() {
        let (x, y) = toy(50, 4, true, 1);
        let view = DenseView::new(&x, 50, 4).unwrap();
        let needed = memory_estimate(50, 4, 1);
        assert_eq!(needed, crate::budget::linear_bytes(50, 4, 1));
        for (limit, ok) in [(needed - 1, false), (needed, true)] {
            let cfg = FitParams { max_memory: Some(limit as i64), ..params("logistic", 1e-2, 0.0) }
                .check()
                .unwrap();
            let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
            match fit(&p, &cfg) {
                Ok(r) => assert!(ok && r.converged()),
                Err(e) => {
                    assert!(
                        !ok && matches!(e, SdcaError::MemoryLimit { needed: n, max_memory: true, .. } if n == needed),
                        "{e}"
                    );
                    assert!(e
                        .to_string()
                        .contains(&format!("more than max_memory={}", crate::budget::count(limit))));
                }
            }
        }
    }

    /// Shrinking is enabled by [`LossKind::has_box_linear_dual`] and runs on the loss's
    /// [`BlockLoss::dual_slopes`]: the two agree for every loss.
    #[test]
    fn box_linear_losses_have_dual_slopes() {
        for name in LossKind::NAMES {
            let kind = FitParams { loss: (*name).into(), ..Default::default() }.check().unwrap().loss;
            let has = with_loss!(kind, 3, |loss| loss.dual_slopes(&vec![0.0; loss.k()], 1.0).is_some());
            assert_eq!(has, kind.has_box_linear_dual(), "{}", kind.name());
        }
    }

    /// Found by the `fit` fuzz target: valid but extreme input overflows inside the solver, and
    /// the fit says so with an error instead of returning NaN or infinity (or panicking).
    #[test]
    fn overflowing_fits_are_errors() {
        let (n, d) = (19, 1);
        let x = vec![0.0; n * d];
        let view = DenseView::new(&x, n, d).unwrap();
        // A warm intercept of -1e250 at l2 = 1e-100 (the fuzz case had -1e150 at 1e-150, below
        // today's smallest l2): the duals' model overflows.
        let y = vec![0.0; n];
        let p = FitParams {
            solver: "accelerated".into(),
            intercept_scaling: 7.8,
            tol: 1e-150,
            max_epochs: 15,
            ..params("squared", 1e-100, 1e-150)
        };
        let cfg = p.check().unwrap();
        let warm = Warm { coef: &[0.0], intercept: &[-1e250] };
        let err = fit_from(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg, Some(&warm)).unwrap_err();
        assert!(matches!(err, SdcaError::NonFiniteResult { .. }), "{err}");
        // The Lasso with a 1e150 intercept feature through the reduction: q = inf in the
        // logistic dual step. (`auto` runs proximal Newton there, which has no such step.)
        let y: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { 1.0 } else { -1.0 }).collect();
        let p = FitParams {
            solver: "accelerated".into(),
            intercept_scaling: 1e150,
            tol: 1e-150,
            max_epochs: 60,
            ..params("logistic", 0.0, 1e-150)
        };
        let cfg = p.check().unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg);
        assert!(matches!(r, Err(SdcaError::NonFiniteResult { .. })), "{r:?}");
    }

    /// The intercept is penalised by `l2` only: with an `l1` that zeroes every feature, the
    /// squared loss's intercept is the minimiser of `(1/2n) sum (b - y_i)^2 + (l2/2) b^2`, for
    /// both solvers and for the Lasso (where it is unpenalised).
    #[test]
    fn intercept_escapes_l1() {
        let (n, d) = (100, 4);
        let (x, y) = toy(n, d, false, 2);
        let view = DenseView::new(&x, n, d).unwrap();
        let ybar = y.iter().sum::<f64>() / n as f64;
        for (solver, l2) in [("sdca", 1e-2), ("accelerated", 1e-5), ("auto", 0.0)] {
            let cfg = FitParams { solver: solver.into(), ..params("squared", l2, 10.0) }.check().unwrap();
            let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
            assert!(r.converged() && r.coef.iter().all(|w| *w == 0.0), "{solver}: {r:?}");
            let want = ybar / (1.0 + r.l2_used);
            let radius = (2.0 * r.solved_gap / r.l2_used).sqrt();
            assert!(
                (r.intercept[0] - want).abs() <= radius.min(1e-3) + 1e-12,
                "{solver}: {} vs {want}",
                r.intercept[0]
            );
        }
    }
}
