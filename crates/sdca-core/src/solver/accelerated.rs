//! Accelerated Prox-SDCA (Shalev-Shwartz & Zhang 2014 Figure 2, Theorem 3).
//!
//! Minimises `P(w) = (1/n) sum_i s_i phi(x_i . w + b) + (l2/2)||w||^2 + l1 ||w||_1` for a
//! `(1/gamma)`-smooth loss when `R^2 / (gamma l2) >> n` makes plain Prox-SDCA slow. Each outer
//! iteration `t` approximately minimises the proximal problem `P(w) + (kappa/2)||w - y_{t-1}||^2`
//! with the plain solver's `sdca::State` and pass (no second coordinate loop): the inner problem is
//! the same losses with the regularizer weight `lambda~ = l2 + kappa`, the L1 threshold
//! `l1 / lambda~`, and the shift `z_t = (kappa / lambda~) y_{t-1}` inside the link
//! (`crate::reg`, "Shifted regularizer"). Then `y_t = w_t + beta (w_t - w_{t-1})`.
//!
//! Constants (notes section 7): `kappa = R^2/(gamma n) - l2` (so the inner condition number
//! `R^2 / (lambda~ gamma)` is exactly `n`), `mu = l2/2`, `rho = mu + kappa`,
//! `eta = sqrt(mu/rho)`, `beta = (1 - eta)/(1 + eta)`, `xi_1 = (1 + rho/mu) (P(w_1) - D(alpha_1))`,
//! `xi_t = (1 - eta/2)^(t-1) xi_1`, inner target `eps_in = eta xi_{t-1} / (2 (1 + rho/mu))`.
//!
//! Warm starts, as in the notes (section 1.3, pitfall 3): `lambda~` does not depend on `t`, so
//! `alpha` and the dual sum carry over between outer iterations and only the shift moves (O(d)).
//! A warm model `w_1` (`crate::solver::Warm`) starts the outer loop at `y_1 = w_1` with its
//! matched duals `alpha_1`; the proof of Theorem 3 goes through with `h_1(z) = P(w_1) +
//! Q(z; w_1, w_1)` at accuracy `P(w_1) - D(alpha_1)` (Lemma 3 with `y = w_1`), which gives the
//! `xi_1` above (the paper's `w_1 = 0`, `alpha_1 = 0` is the special case).
//!
//! Stopping (checked on the original problem, after the inner call): the certified bound on
//! `P(w_t) - P(w*)` is the smallest of
//! - the duality gap `P(w_t) - D(alpha_t)` of the original problem (`alpha_t` is feasible for it:
//!   the losses are the same);
//! - rule 2, `(1 + rho/mu) eps_t + (rho kappa / (2 mu)) ||w_t - y_{t-1}||^2` with `eps_t` the
//!   inner gap (Lemma 3 with `z = w*`);
//! - rule 1, `xi_t`, while every inner call has met its target (Theorem 3's proof:
//!   `P(w_t) - P(w*) <= xi_t`); rule 1's `t >= 1 + (2/eta) ln(xi_1/eps)` is `xi_t <= eps` with
//!   `(1 - eta/2)^(t-1) <= e^(-eta (t-1)/2)`.
//!
//! The fit stops when that bound (made into the original problem's certificate by
//! `super::Judge`) meets `tol`. With `inner_epochs = Some(k)` (Remark 1's practical variant) each
//! inner call runs `k` epochs without an inner gap check; rule 1 is then unavailable and the
//! outer bound is computed whenever `check_every` epochs have passed since the last check.
//! Intercept: its slot of `w`, `y` and `z` is penalised by `l2` and `kappa` only, never by `l1`.

use super::sdca::{self, Eval, Objective, State};
use super::{drive, Budget, Certificate, Context, Coordinate, End, Outcome, Start, Status, Verdict};
use crate::config::{Sampling, SolverKind};
use crate::data::Rows;
use crate::error::Result;
use crate::loss::BlockLoss;
use crate::math::dist_sq;
use crate::reg::{ElasticNet, Reg, L2};

/// The constants of Figure 2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Params {
    /// Extra ridge weight `R^2/(gamma n) - l2`, `> 0`.
    pub kappa: f64,
    /// `l2 / 2`.
    pub mu: f64,
    /// `mu + kappa`.
    pub rho: f64,
    /// `sqrt(mu / rho)`.
    pub eta: f64,
    /// Momentum `(1 - eta)/(1 + eta)`.
    pub beta: f64,
}

impl Params {
    /// Constants for `R^2 = max_i s_i ||x_i||^2`, smoothness `gamma`, weight `l2`, `n` rows.
    /// Callers check `kappa > 0` (`super::use_accelerated`).
    pub fn new(r2: f64, gamma: f64, l2: f64, n: usize) -> Self {
        let kappa = r2 / (gamma * n as f64) - l2;
        let mu = 0.5 * l2;
        let rho = mu + kappa;
        let eta = (mu / rho).sqrt();
        Self { kappa, mu, rho, eta, beta: (1.0 - eta) / (1.0 + eta) }
    }

    /// `1 + rho / mu` (`= 1 + eta^-2`).
    fn ratio(&self) -> f64 {
        1.0 + self.rho / self.mu
    }
}

/// The best certified point of a run so far.
struct Best {
    w: Vec<f64>,
    alpha: Vec<f64>,
    certificate: Certificate,
    /// Its bound on the solved problem's suboptimality.
    bound: f64,
}

/// Accelerated Prox-SDCA on the problem solved (`ctx.l2`) from `start`, with the inner link
/// soft-thresholding at `l1 / (l2 + kappa)` when `l1 > 0`.
pub(crate) fn run<D: Rows, L: BlockLoss>(
    ctx: &mut Context<'_, '_, D, L>,
    acc: &Params,
    start: Start,
) -> Result<Outcome> {
    let l1 = ctx.cfg.l1;
    if l1 > 0.0 {
        run_linked(ctx, ElasticNet { threshold: l1 / (ctx.l2 + acc.kappa) }, acc, start)
    } else {
        run_linked(ctx, L2, acc, start)
    }
}

fn run_linked<D: Rows, L: BlockLoss, R: Reg>(
    ctx: &mut Context<'_, '_, D, L>,
    reg: R,
    acc: &Params,
    start: Start,
) -> Result<Outcome> {
    let (problem, loss, cfg, l2) = (ctx.problem, ctx.loss, ctx.cfg, ctx.l2);
    let (n, dk) = (problem.n(), problem.x.n_cols() * loss.k());
    let (nf, l1, bias) = (n as f64, cfg.l1, cfg.intercept_scaling);
    let inner_l2 = l2 + acc.kappa;
    let (judge, clock, rng) = (&mut ctx.judge, &mut ctx.clock, &mut ctx.rng);
    let ratio = acc.ratio();
    // Primal and dual of the original problem (weight l2) at the state's duals and at `w`, from
    // an evaluation `e` made at `w`.
    let original = |st: &State<'_, '_, D, L, R>, e: &Eval, w: &[f64]| -> (f64, f64) {
        let sq: f64 = w.iter().map(|v| v * v).sum();
        let l1_norm: f64 = w[..dk].iter().map(|v| v.abs()).sum();
        (e.loss + 0.5 * l2 * sq + l1 * l1_norm, -e.conj - 0.5 * l2 * st.link_sq_at(l2))
    };

    let Start { w: w_start, alpha } = start;
    // The inner problem's shift z = (kappa / l2~) y, unscaled: z l2~ n = kappa n y.
    let mut shift = crate::budget::with_capacity(w_start.len())?;
    shift.extend(w_start.iter().map(|v| acc.kappa * nf * v));
    let objective = Objective { l2: inner_l2, l1, bias };
    let mut state = State::new(problem, loss, reg, objective, &ctx.row_sq, alpha)?;
    state.set_shift(&shift);
    state.refresh_w();
    // The inner gap checks run when the running estimate says the inner target may be met
    // (gap sampling keeps its schedule, as in the plain solver).
    state = if cfg.sampling == Sampling::Gap { state.sample_by_gaps() } else { state.estimating() };

    // xi_1 = (1 + rho/mu) (P(w_1) - D(alpha_1)).
    let loss_at_start = problem.mean_loss(loss, bias, &w_start);
    let e0 = state.evaluate();
    let (p1, d1) = original(&state, &Eval { loss: loss_at_start, ..e0 }, &w_start);
    let mut xi = ratio * (p1 - d1).max(0.0);
    let mut xi_valid = cfg.inner_epochs.is_none();

    let mut order = state.active().to_vec();
    let mut w_prev = w_start.clone();
    let mut y_prev = w_start;
    let mut gap_trace = Vec::new();
    let mut last: Option<(Certificate, f64)> = None;
    let mut best: Option<Best> = None;
    let mut since_check = 0u32;
    let mut outer = 0u32;
    let mut status = Status::MaxEpochs;
    while clock.remaining() > 0 {
        outer += 1;
        // Inner call: Prox-SDCA on P~_t from the current duals.
        let eps_in = acc.eta * xi / (2.0 * ratio);
        let (budget, target) = match cfg.inner_epochs {
            Some(k) => {
                let due = since_check.saturating_add(k) >= cfg.check_every;
                (Budget { max_epochs: k, check_every: u32::MAX, check_last: due }, None)
            }
            None => (
                Budget { max_epochs: u32::MAX, check_every: cfg.check_every, check_last: true },
                Some(eps_in),
            ),
        };
        let mut inner = None;
        if let (Some(est), Some(eps)) = (&mut state.estimate, target) {
            est.aim_at(eps);
        }
        let run = drive(&mut state, &mut order, budget, cfg.sampling, clock, rng, |st| {
            let e = st.evaluate();
            inner = Some(e);
            if let (Some(est), Some(eps)) = (&mut st.estimate, target) {
                est.calibrate(e.gap);
                est.aim_at(eps);
            }
            match target {
                Some(eps) if e.gap <= eps => Verdict::Stop,
                _ => Verdict::Continue,
            }
        });
        since_check = since_check.saturating_add(run.epochs);
        if target.is_some() && run.end != End::Stopped {
            xi_valid = false;
        }
        xi *= 1.0 - 0.5 * acc.eta;
        let stopping = run.end == End::Seconds || clock.remaining() == 0;
        let e = match inner {
            Some(e) if run.checked_last => Some(e),
            _ if stopping => Some(state.evaluate()),
            _ => {
                state.refresh_w();
                None
            }
        };
        if let Some(e) = e {
            since_check = 0;
            let w_t = &state.w;
            let (primal, dual) = original(&state, &e, w_t);
            let rule2 = ratio * e.gap + acc.rho * acc.kappa / (2.0 * acc.mu) * dist_sq(w_t, &y_prev);
            let mut bound = (primal - dual).max(0.0).min(rule2);
            if xi_valid {
                bound = bound.min(xi);
            }
            let c = judge.original(w_t, &state.alpha, primal, bound);
            gap_trace.push(c.gap);
            last = Some((c, bound));
            if judge.met(&c) {
                status = Status::Converged;
                break;
            }
            // The certified gap is not monotone over outer iterations: keep the best point
            // in case the budget ends the run first.
            if best.as_ref().is_none_or(|b: &Best| c.gap < b.certificate.gap) {
                best = Some(Best { w: w_t.clone(), alpha: state.alpha.clone(), certificate: c, bound });
            }
        }
        if run.end == End::Seconds {
            status = Status::MaxSeconds;
            break;
        }
        if clock.remaining() == 0 {
            break;
        }
        // y_t = w_t + beta (w_t - w_{t-1}); the next inner problem is shifted by it.
        for (((y, wp), z), &w) in y_prev.iter_mut().zip(&mut w_prev).zip(&mut shift).zip(&state.w) {
            *y = w + acc.beta * (w - *wp);
            *wp = w;
            *z = acc.kappa * nf * *y;
        }
        state.set_shift(&shift);
    }
    if let (Some(b), Some((c, _))) = (best, last) {
        if status != Status::Converged && b.certificate.gap < c.gap {
            gap_trace.push(b.certificate.gap);
            state.w = b.w;
            state.alpha = b.alpha;
            last = Some((b.certificate, b.bound));
        }
    }
    let (certificate, solved_gap) = last.unwrap_or_else(|| {
        // No pass could run: certify the start (its gap as the bound).
        let (primal, dual) = original(&state, &Eval { loss: loss_at_start, ..e0 }, &w_prev);
        state.w.copy_from_slice(&w_prev);
        let bound = (primal - dual).max(0.0);
        (judge.original(&w_prev, &state.alpha, primal, bound), bound)
    });
    Ok(Outcome {
        w: state.w,
        alpha: state.alpha,
        certificate,
        solved_gap,
        status,
        gap_trace,
        solver: "accelerated",
        outer_iterations: outer,
    })
}

/// Whether the accelerated solver runs: `kind` asks for it (`Auto`: when
/// `R^2 / (gamma l2) > 10 n`, Figure 2's condition; `Accelerated`: whenever its ridge weight
/// `kappa = R^2 / (gamma n) - l2` is positive) and the loss is smooth (`gamma > 0`).
pub(crate) fn chosen(kind: SolverKind, gamma: f64, r2: f64, l2: f64, n: usize) -> bool {
    if !(gamma > 0.0 && r2 > 0.0) {
        return false;
    }
    let condition = r2 / (gamma * l2);
    match kind {
        SolverKind::Sdca | SolverKind::Pdprox | SolverKind::Newton | SolverKind::Cd => false,
        // The shift kappa n w multiplies the squared row norms by n: at extreme feature scales it
        // overflows, while plain SDCA's updates are scale-free, so auto keeps those on SDCA.
        SolverKind::Auto => condition > 10.0 * n as f64 && r2 * (n as f64) < 1e150,
        SolverKind::Accelerated => condition > n as f64,
    }
}

/// Re-certifies an accelerated solution on the original problem with plain SDCA from its duals.
///
/// At the accelerated fixed point the inner duals are the original problem's optimal duals
/// (only the regularizer is shifted, the loss part is the same), so plain SDCA started from them
/// meets `tol` after one pass. Its certificate is the Fenchel-Young form of DESIGN.md section 3,
/// whose per-row terms (`row_outputs`) average to the reported gap, as for every other fit.
/// When the budget ran out first, the model returned is `w(alpha)` of those duals with its own
/// certificate, so the model and its certificate always agree.
pub(crate) fn certify_plain<D: Rows, L: BlockLoss>(
    ctx: &mut Context<'_, '_, D, L>,
    acc: Outcome,
) -> Result<Outcome> {
    // Kept in case the budget runs out first: the accelerated iterate may then be far better
    // than `w(alpha)` of its inner duals.
    let (acc_w, acc_alpha) = (acc.w.clone(), acc.alpha.clone());
    let start = Start { w: acc.w, alpha: acc.alpha };
    let plain = sdca::run(ctx, start)?;
    let mut gap_trace = acc.gap_trace;
    gap_trace.extend(plain.gap_trace);
    // With no budget left for a pass, `plain` only certified the start: judge that certificate.
    let status = if ctx.judge.met(&plain.certificate) {
        Status::Converged
    } else if acc.status == Status::MaxSeconds {
        Status::MaxSeconds
    } else {
        plain.status
    };
    let (solver, outer_iterations) = (acc.solver, acc.outer_iterations);
    if status != Status::Converged && acc.certificate.gap < plain.certificate.gap {
        // Stopped by the budget with the accelerated iterate certified better: return it (its
        // row gaps then average to the last inner problem's gap, see `FitResult`).
        gap_trace.push(acc.certificate.gap);
        return Ok(Outcome { w: acc_w, alpha: acc_alpha, gap_trace, status, ..acc });
    }
    Ok(Outcome { gap_trace, status, solver, outer_iterations, ..plain })
}

#[cfg(test)]
mod tests {
    use super::super::testing::{csr_of, toy};
    use crate::config::FitParams;
    use crate::data::{CsrView, DenseView};
    use crate::solver::{fit, FitResult, Problem, Status};

    fn run(x: &[f64], y: &[f64], d: usize, p: FitParams) -> FitResult {
        let view = DenseView::new(x, y.len(), d).unwrap();
        let cfg = p.check().unwrap();
        fit(&Problem::new(&view, y, None, cfg.loss).unwrap(), &cfg).unwrap()
    }

    /// Same optimum (objective within the two certified gaps, weights within the strong
    /// convexity radii) and far fewer epochs than plain Prox-SDCA at a tiny `l2`
    /// (`R^2 / (gamma l2 n)` in the hundreds), for the theoretical inner target and the
    /// fixed-epochs variant.
    fn reaches_the_plain_optimum_in_fewer_epochs(loss: &str) {
        let (n, d, l2, l1) = (300, 3, 1e-5, 1e-3);
        {
            let (x, y) = toy(n, d, loss != "squared", 4);
            let base =
                FitParams { loss: loss.into(), l2, l1, tol: 1e-6, max_epochs: 100_000, ..Default::default() };
            let plain = run(&x, &y, d, FitParams { solver: "sdca".into(), check_every: 20, ..base.clone() });
            for inner_epochs in [None, Some(1), Some(5)] {
                let acc =
                    run(&x, &y, d, FitParams { solver: "accelerated".into(), inner_epochs, ..base.clone() });
                let (cp, ca) = (plain.certificate, acc.certificate);
                let case = format!(
                    "{loss} {inner_epochs:?}: plain {cp:?} {:?} after {} epochs, accelerated {ca:?} {:?} after {}",
                    plain.status, plain.epochs, acc.status, acc.epochs
                );
                assert_eq!((plain.status, acc.status), (Status::Converged, Status::Converged), "{case}");
                assert_eq!((plain.solver, acc.solver), ("sdca", "accelerated"), "{case}");
                assert!(ca.gap <= 1e-6 * ca.primal && (ca.primal - ca.dual - ca.gap).abs() < 1e-15, "{case}");
                assert!((cp.primal - ca.primal).abs() <= cp.gap + ca.gap, "{case}");
                let radius = (2.0 * cp.gap / l2).sqrt() + (2.0 * ca.gap / l2).sqrt();
                let mut dist: f64 = plain.coef.iter().zip(&acc.coef).map(|(a, b)| (a - b).powi(2)).sum();
                dist = (dist + (plain.intercept[0] - acc.intercept[0]).powi(2)).sqrt();
                assert!(dist <= radius, "{case}: distance {dist} > {radius}");
                assert!(3 * acc.epochs < plain.epochs, "{case}");
                assert_eq!(acc.gap_trace.last(), Some(&ca.gap));
                assert!(acc.solved_gap == ca.gap && acc.l2_used == l2, "{case}");
            }
        }
    }

    /// CSR and dense views of the same sparse data give the same fit (the inner pass touches
    /// only `supp(x_i)`; zeros contribute exactly nothing), and a seed fixes the result.
    #[test]
    fn sparse_equals_dense_and_seed_fixes_the_fit() {
        let (n, d) = (120, 30);
        let (mut x, y) = toy(n, d, true, 9);
        x.iter_mut().filter(|v| v.abs() < 0.8).for_each(|v| *v = 0.0);
        let (indptr, indices, values) = csr_of(&x, n, d);
        let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
        let dense = DenseView::new(&x, n, d).unwrap();
        for inner_epochs in [None, Some(2)] {
            let cfg = FitParams {
                loss: "smooth_hinge".into(),
                l2: 1e-6,
                l1: 1e-3,
                tol: 1e-5,
                solver: "accelerated".into(),
                inner_epochs,
                ..Default::default()
            };
            let cfg = cfg.check().unwrap();
            let a = fit(&Problem::new(&csr, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
            let b = fit(&Problem::new(&dense, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
            assert_eq!((a.solver, a.status), ("accelerated", Status::Converged));
            assert_eq!(a, b);
            assert_eq!(a, fit(&Problem::new(&csr, &y, None, cfg.loss).unwrap(), &cfg).unwrap());
            assert!(a.coef.contains(&0.0) && a.outer_iterations > 1);
        }
    }

    #[test]
    fn smooth_hinge_reaches_the_plain_optimum_in_fewer_epochs() {
        reaches_the_plain_optimum_in_fewer_epochs("smooth_hinge");
    }

    #[test]
    fn logistic_reaches_the_plain_optimum_in_fewer_epochs() {
        reaches_the_plain_optimum_in_fewer_epochs("logistic");
    }

    #[test]
    fn squared_reaches_the_plain_optimum_in_fewer_epochs() {
        reaches_the_plain_optimum_in_fewer_epochs("squared");
    }
}

#[cfg(test)]
mod budget_tests {
    use super::super::testing::toy;
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::solver::{fit, Problem, Status};

    /// Stopped by `max_epochs`, an accelerated fit returns the better certified of its iterate
    /// and `w(alpha)` of its inner duals (the latter can be far worse at small `l2`).
    #[test]
    fn a_budget_stop_keeps_the_better_certified_model() {
        let (x, y) = toy(400, 4, true, 3);
        let view = DenseView::new(&x, 400, 4).unwrap();
        let base = FitParams { loss: "smooth_hinge".into(), l2: 1e-7, tol: 1e-12, ..Default::default() };
        let cfg = FitParams { solver: "accelerated".into(), max_epochs: 40, ..base.clone() }.check().unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        let c = r.certificate;
        assert_eq!((r.status, r.solver), (Status::MaxEpochs, "accelerated"));
        assert_eq!(r.gap_trace.last(), Some(&c.gap));
        assert!((c.primal - c.dual - c.gap).abs() <= 1e-12 * c.primal.max(1.0));
        // No earlier certified point of this fit was better than the one returned.
        let best = r.gap_trace.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(c.gap <= 1.5 * best + 1e-15, "returned {} but {best} was certified", c.gap);
    }
}

#[cfg(test)]
mod rule_tests {
    use super::*;
    use crate::config::FitParams;
    use crate::data::{DenseView, Rows};
    use crate::solver::testing::toy;
    use crate::solver::{fit, Problem};

    fn params(loss: &str, l2: f64, l1: f64) -> FitParams {
        FitParams { loss: loss.into(), l2, l1, tol: 1e-8, max_epochs: 20_000, ..Default::default() }
    }

    #[test]
    fn auto_rule_follows_the_condition_number() {
        // R^2 / (gamma l2) against 10 n (Figure 2's condition).
        let (auto, acc, plain) = (SolverKind::Auto, SolverKind::Accelerated, SolverKind::Sdca);
        assert!(chosen(auto, 1.0, 1.0, 1e-4, 900));
        assert!(!chosen(auto, 1.0, 1.0, 1e-4, 1100));
        assert!(!chosen(auto, 4.0, 1.0, 1e-4, 300)); // logistic: gamma = 4
        assert!(!chosen(auto, 0.0, 1.0, 1e-12, 10)); // non-smooth loss
        assert!(chosen(acc, 1.0, 1.0, 1e-4, 5000)); // kappa > 0
        assert!(!chosen(acc, 1.0, 1.0, 1e-4, 20_000)); // kappa <= 0: fallback
        assert!(!chosen(plain, 1.0, 1.0, 1e-12, 10));

        // End to end: n = 200, R^2 = max ||x_i||^2 + 1 (intercept feature), gamma = 1.
        let (n, d) = (200, 4);
        let (x, y) = toy(n, d, true, 1);
        let view = DenseView::new(&x, n, d).unwrap();
        let r2 = (0..n).map(|i| view.sq_norm(i) + 1.0).fold(0.0, f64::max);
        let threshold = r2 / (10.0 * n as f64); // l2 where R^2 / l2 = 10 n
        for (loss, l2, want) in [
            ("smooth_hinge", 0.5 * threshold, "accelerated"),
            ("smooth_hinge", 2.0 * threshold, "sdca"),
            ("logistic", 0.5 * threshold, "sdca"), // gamma = 4 moves the threshold down 4x
            ("logistic", 0.1 * threshold, "accelerated"),
            ("hinge", 1e-9, "sdca"),
        ] {
            let cfg = FitParams { max_epochs: 3, ..params(loss, l2, 1e-3) }.check().unwrap();
            let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
            assert_eq!(r.solver, want, "{loss} l2 = {l2:e}");
        }
        // Explicit "accelerated" where kappa <= 0 runs plain Prox-SDCA and says so.
        let cfg =
            FitParams { solver: "accelerated".into(), ..params("squared", 10.0 * r2, 0.0) }.check().unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        assert_eq!((r.solver, r.outer_iterations), ("sdca", 0));
    }
}
