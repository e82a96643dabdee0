//! One CoCoA+ round on one partition of the rows (Ma et al. 2015, "Adding vs. Averaging in
//! Distributed Primal-Dual Optimization"; Smith et al. 2018 for a general regularizer).
//!
//! Distributed SDCA splits the rows into `K` partitions, each owning its duals. A round starts
//! from the global primal point `w = grad g*(v / (l2 n))` (`v = sum_i s_i alpha_i x_i` over *all*
//! rows, kept by the driver) and each partition approximately maximises its local subproblem
//!
//! `G_k(d) = -(1/n) sum_{i in P_k} s_i phi*(-(alpha_i + d_i)) - (1/n) w . A_k d
//!          - (sigma / (2 l2 n^2)) ||A_k d||^2`
//!
//! (`A_k d = sum_{i in P_k} s_i d_i x_i`) by `local_epochs` passes of the ordinary SDCA step.
//! That is exactly [`State`]'s step with the curvature `q_i` multiplied by `sigma` and the
//! primal point `w + sigma A_k d / (l2 n)`: a state with weight `l2 n / (sigma n_k)` on its own
//! `n_k` rows, re-centred so that its point is `w` at the round's start ([`State::center_at`]),
//! and the L2 link (the quadratic upper bound of `g*`, which is `1/l2`-smooth for every
//! `l2`-strongly convex `g = (l2/2)||w||^2 + l1 ||w||_1`; Smith et al., Assumption 1).
//!
//! The driver then adds `gamma A_k d` of every partition to `v` and each partition its
//! `gamma d` to its duals: `gamma = 1, sigma = K` ("adding", CoCoA+) or `gamma = 1/K,
//! sigma = 1` ("averaging", CoCoA).

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::sdca::{Objective, State};
use super::{drive, Budget, Clock, Coordinate, Problem, Verdict};
use crate::config::{FitConfig, Sampling};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{with_loss, BlockLoss};
use crate::reg::L2;

/// The driver's choices for one round.
#[derive(Debug, Clone, Copy)]
pub struct RoundSpec {
    /// Rows of the whole problem (all partitions): the `n` of the objective.
    pub n_total: usize,
    /// Subproblem curvature factor `sigma' >= 1` (`K` for adding, `1` for averaging).
    pub sigma: f64,
    /// Aggregation weight `gamma in (0, 1]` applied to this round's dual change.
    pub gamma: f64,
    /// SDCA passes over the partition's rows.
    pub local_epochs: u32,
    /// Mixed into the fit's seed so that every (partition, round) draws its own orders
    /// deterministically.
    pub stream: u64,
}

/// What one partition sends back: its share of the update and of the certificate.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalRound {
    /// `gamma A_k d`, feature-major `(d + 1) x k` like the model (last row: the intercept
    /// feature), to be added to the global dual sum `v`.
    pub delta_v: Vec<f64>,
    /// `sum_{i in P_k} s_i phi(x_i . w + b)` at the round's starting point `w`.
    pub loss_sum: f64,
    /// `sum_{i in P_k} s_i phi*(-alpha_i)` at the round's starting duals.
    pub conj_sum: f64,
    /// `sum_{i in P_k} s_i (phi + phi* + alpha a)` at the start: the partition's share of the
    /// duality gap `P(w) - D(alpha) = (1/n) sum` over all partitions (exact when `w` is the
    /// driver's `grad g*(v / (l2 n))`).
    pub gap_sum: f64,
}

/// Runs one CoCoA+ round for the partition `problem` from its duals `alpha` (updated in place
/// to `alpha + gamma d`) and the global feature-major model `w` (`(d + 1) x k`, intercept
/// feature last, unscaled by `intercept_scaling`). Uses `cfg`'s loss, `l2` (> 0), intercept,
/// sampling and seed; `l1` only enters through `w`, which the driver computes.
pub fn local_round<D: Rows>(
    problem: &Problem<'_, D>,
    cfg: &FitConfig,
    spec: &RoundSpec,
    alpha: &mut [f64],
    w: &[f64],
) -> Result<LocalRound> {
    let (n, k) = (problem.n(), problem.n_outputs);
    let width = (problem.x.n_cols() + 1) * k;
    if alpha.len() != n * k || w.len() != width {
        return Err(SdcaError::ShapeMismatch {
            what: if alpha.len() != n * k {
                "CoCoA duals vs partition rows"
            } else {
                "CoCoA model vs features"
            },
            expected: if alpha.len() != n * k { n * k } else { width },
            got: if alpha.len() != n * k { alpha.len() } else { w.len() },
        });
    }
    let valid = |v: f64, lo: f64, hi: f64| v.is_finite() && v >= lo && v <= hi;
    if !(cfg.l2 > 0.0 && valid(spec.sigma, 1.0, f64::MAX) && valid(spec.gamma, f64::MIN_POSITIVE, 1.0))
        || spec.n_total < n
        || spec.local_epochs == 0
    {
        return Err(SdcaError::InvalidParameter {
            name: "cocoa",
            message: format!(
                "a CoCoA+ round needs l2 > 0 (got {}), sigma >= 1 (got {}), gamma in (0, 1] (got {}), \
                 n_total >= partition rows ({} < {n}) and local_epochs >= 1 (got {})",
                cfg.l2, spec.sigma, spec.gamma, spec.n_total, spec.local_epochs
            ),
        });
    }
    if let Some(bad) = w.iter().chain(alpha.iter()).find(|v| !v.is_finite()) {
        return Err(SdcaError::InvalidParameter {
            name: "cocoa",
            message: format!("the round's model or duals hold the non-finite value {bad}"),
        });
    }
    let out = with_loss!(cfg.loss, k, |loss| round(problem, loss, cfg, spec, alpha, w));
    if [out.loss_sum, out.conj_sum, out.gap_sum].iter().chain(&out.delta_v).any(|v| !v.is_finite()) {
        return Err(SdcaError::NonFiniteResult { what: "the CoCoA+ round's update" });
    }
    Ok(out)
}

fn round<D: Rows, L: BlockLoss>(
    problem: &Problem<'_, D>,
    loss: L,
    cfg: &FitConfig,
    spec: &RoundSpec,
    alpha: &mut [f64],
    w: &[f64],
) -> LocalRound {
    let (n, bias) = (problem.n(), cfg.intercept_scaling);
    let row_sq = problem.row_sq(bias);
    // Scale `1 / (l2_local n)` = `sigma / (l2 n_total)`.
    let l2_local = cfg.l2 * spec.n_total as f64 / (spec.sigma * n as f64);
    let objective = Objective { l2: l2_local, l1: 0.0, bias };
    let mut state = State::new(problem, loss, L2, objective, &row_sq, alpha.to_vec());
    if cfg.sampling == Sampling::Gap {
        state = state.sample_by_gaps();
    }
    state.center_at(w);
    // The certificate's shares at the round's start (at `w` up to rounding of the re-centring).
    let e = state.evaluate();
    let nf = n as f64;
    let start = state.dual_point();
    let mut order = state.active().to_vec();
    let mut rng =
        Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ spec.stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    // The round's own budget: the fit's `max_epochs` / `max_seconds` count rounds on the driver.
    let mut clock = Clock::unlimited(cfg);
    let budget = Budget { max_epochs: spec.local_epochs, check_every: u32::MAX, check_last: false };
    drive(&mut state, &mut order, budget, cfg.sampling, &mut clock, &mut rng, |_| Verdict::Continue);
    let end = state.dual_point();
    let delta_v: Vec<f64> = end.iter().zip(&start).map(|(e, s)| spec.gamma * (e - s)).collect();
    if spec.gamma == 1.0 {
        alpha.copy_from_slice(&state.alpha);
    } else {
        for (a, &new) in alpha.iter_mut().zip(&state.alpha) {
            *a += spec.gamma * (new - *a);
        }
    }
    LocalRound { delta_v, loss_sum: e.loss * nf, conj_sum: e.conj * nf, gap_sum: e.gap * nf }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::loss::LossKind;
    use crate::reg::soft_threshold;
    use crate::solver::{fit, testing::toy};

    /// A CoCoA+ driver as the Python one: partitions of contiguous rows, `w` from the global dual
    /// sum, the certificate from the partitions' shares. Returns `(P, gap, rounds)`.
    struct Run {
        primal: f64,
        gap: f64,
        rounds: u32,
    }

    #[allow(clippy::too_many_arguments)]
    fn cocoa(
        x: &[f64],
        y: &[f64],
        s: Option<&[f64]>,
        d: usize,
        params: &FitParams,
        parts: usize,
        mode: Mode,
        local_epochs: u32,
        reset_at: Option<u32>,
    ) -> Run {
        let cfg = params.check().unwrap();
        let n = y.len();
        let bounds: Vec<usize> = (0..=parts).map(|p| p * n / parts).collect();
        let views: Vec<DenseView<'_>> = (0..parts)
            .map(|p| {
                DenseView::new(&x[bounds[p] * d..bounds[p + 1] * d], bounds[p + 1] - bounds[p], d).unwrap()
            })
            .collect();
        let mut alphas: Vec<Vec<f64>> = (0..parts).map(|p| vec![0.0; bounds[p + 1] - bounds[p]]).collect();
        let (sigma, gamma) = match mode {
            Mode::Add => (parts as f64, 1.0),
            Mode::Average => (1.0, 1.0 / parts as f64),
        };
        let mut v = vec![0.0; d + 1];
        // The dual sum of each partition, so a reset partition's share can be taken back out.
        let mut shares = vec![vec![0.0; d + 1]; parts];
        let scale = 1.0 / (cfg.l2 * n as f64);
        for round in 0..2000u32 {
            let w: Vec<f64> = v
                .iter()
                .enumerate()
                .map(|(j, vj)| if j < d { soft_threshold(vj * scale, cfg.l1 / cfg.l2) } else { vj * scale })
                .collect();
            if reset_at == Some(round) {
                // A lost partition: zero duals are feasible; its share leaves the sum.
                alphas[1].iter_mut().for_each(|a| *a = 0.0);
                v.iter_mut().zip(&shares[1]).for_each(|(vj, sj)| *vj -= sj);
                shares[1].iter_mut().for_each(|sj| *sj = 0.0);
                continue;
            }
            let (mut loss, mut conj, mut gap) = (0.0, 0.0, 0.0);
            let mut deltas = Vec::new();
            for p in 0..parts {
                let ys = &y[bounds[p]..bounds[p + 1]];
                let ss = s.map(|s| &s[bounds[p]..bounds[p + 1]]);
                let problem = Problem::partition(&views[p], ys, ss, cfg.loss, 1).unwrap();
                let spec = RoundSpec {
                    n_total: n,
                    sigma,
                    gamma,
                    local_epochs,
                    stream: (round as u64) << 16 | p as u64,
                };
                let out = local_round(&problem, &cfg, &spec, &mut alphas[p], &w).unwrap();
                loss += out.loss_sum;
                conj += out.conj_sum;
                gap += out.gap_sum;
                deltas.push(out.delta_v);
            }
            let sq: f64 = w.iter().map(|v| v * v).sum();
            let l1: f64 = w[..d].iter().map(|v| v.abs()).sum();
            let primal = loss / n as f64 + 0.5 * cfg.l2 * sq + cfg.l1 * l1;
            let dual = -conj / n as f64 - 0.5 * cfg.l2 * sq;
            assert!(((primal - dual) - gap / n as f64).abs() <= 1e-9 * primal.abs().max(1.0));
            if gap / n as f64 <= cfg.tol * primal {
                return Run { primal, gap: gap / n as f64, rounds: round };
            }
            for (p, dv) in deltas.iter().enumerate() {
                v.iter_mut().zip(dv).for_each(|(vj, dj)| *vj += dj);
                shares[p].iter_mut().zip(dv).for_each(|(sj, dj)| *sj += dj);
            }
        }
        panic!("CoCoA+ did not converge in 2000 rounds");
    }

    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Mode {
        Add,
        Average,
    }

    fn params(loss: &str, l1: f64, intercept: bool) -> FitParams {
        FitParams {
            loss: loss.into(),
            l2: 1e-2,
            l1,
            tol: 1e-10,
            fit_intercept: intercept,
            max_epochs: 100_000,
            ..Default::default()
        }
    }

    fn optimum(x: &[f64], y: &[f64], s: Option<&[f64]>, d: usize, p: &FitParams) -> f64 {
        let view = DenseView::new(x, y.len(), d).unwrap();
        let problem = Problem::new(&view, y, s, p.check().unwrap().loss).unwrap();
        fit(&problem, &FitParams { tol: 1e-13, solver: "sdca".into(), ..p.clone() }.check().unwrap())
            .unwrap()
            .certificate
            .primal
    }

    #[test]
    fn adding_and_averaging_reach_the_single_machine_optimum() {
        let (x, y) = toy(240, 5, true, 3);
        let weights: Vec<f64> = (0..240).map(|i| [1.0, 0.5, 0.0, 2.0][i % 4]).collect();
        for (loss, l1, intercept, s) in [
            ("logistic", 0.0, false, None),
            ("hinge", 0.0, true, Some(weights.as_slice())),
            ("logistic", 3e-3, true, Some(weights.as_slice())),
            ("smooth_hinge", 1e-3, false, None),
        ] {
            let p = params(loss, l1, intercept);
            let star = optimum(&x, &y, s, 5, &p);
            for parts in [1, 2, 4] {
                for mode in [Mode::Add, Mode::Average] {
                    let r = cocoa(&x, &y, s, 5, &p, parts, mode, 2, None);
                    assert!(
                        r.primal - star <= 2e-10 * star,
                        "{loss} K={parts} {mode:?}: {} vs {star}",
                        r.primal
                    );
                    assert!(r.primal - star >= -1e-12 * star, "{loss}: below the optimum");
                    assert!(r.gap >= r.primal - star - 1e-14, "{loss}: gap {} < subopt", r.gap);
                }
            }
        }
    }

    #[test]
    fn regression_losses_and_one_class_partitions() {
        let (x, y) = toy(200, 4, false, 5);
        let p = params("squared", 0.0, true);
        let star = optimum(&x, &y, None, 4, &p);
        let r = cocoa(&x, &y, None, 4, &p, 3, Mode::Add, 1, None);
        assert!(r.primal - star <= 2e-10 * star.abs());
        // Sorted labels: each partition of a binary problem holds one class.
        let (x, mut y) = toy(100, 3, true, 9);
        let mut rows: Vec<usize> = (0..100).collect();
        rows.sort_by(|&a, &b| y[a].total_cmp(&y[b]));
        let xs: Vec<f64> = rows.iter().flat_map(|&i| x[i * 3..i * 3 + 3].to_vec()).collect();
        y.sort_by(f64::total_cmp);
        let p = params("logistic", 0.0, true);
        let star = optimum(&xs, &y, None, 3, &p);
        let r = cocoa(&xs, &y, None, 3, &p, 2, Mode::Add, 3, None);
        assert!(r.primal - star <= 2e-10 * star);
    }

    #[test]
    fn one_round_of_one_partition_is_an_sdca_epoch_and_deterministic() {
        let (x, y) = toy(150, 4, true, 1);
        let p = params("logistic", 0.0, true);
        let a = cocoa(&x, &y, None, 4, &p, 1, Mode::Add, 1, None);
        let b = cocoa(&x, &y, None, 4, &p, 1, Mode::Add, 1, None);
        assert_eq!((a.primal, a.gap, a.rounds), (b.primal, b.gap, b.rounds));
        // Plain SDCA with permutations needs about as many epochs as K = 1 needs rounds.
        let view = DenseView::new(&x, 150, 4).unwrap();
        let cfg = FitParams { solver: "sdca".into(), ..p }.check().unwrap();
        let f = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        assert!(
            (a.rounds as f64) <= 1.5 * f.epochs as f64 + 2.0,
            "{} rounds vs {} epochs",
            a.rounds,
            f.epochs
        );
        assert!((a.primal - f.certificate.primal).abs() <= 1e-9 * a.primal);
    }

    #[test]
    fn a_partition_restarting_from_zero_keeps_the_gap_valid() {
        let (x, y) = toy(240, 5, true, 7);
        let p = params("hinge", 0.0, true);
        let star = optimum(&x, &y, None, 5, &p);
        let r = cocoa(&x, &y, None, 5, &p, 3, Mode::Add, 2, Some(6));
        assert!(r.primal - star <= 2e-10 * star && r.gap >= r.primal - star - 1e-14);
    }

    #[test]
    fn bad_rounds_are_errors() {
        let (x, y) = toy(20, 2, true, 1);
        let view = DenseView::new(&x, 20, 2).unwrap();
        let cfg = params("logistic", 0.0, false).check().unwrap();
        let problem = Problem::partition(&view, &y, None, LossKind::Logistic, 1).unwrap();
        let spec = RoundSpec { n_total: 20, sigma: 1.0, gamma: 1.0, local_epochs: 1, stream: 0 };
        let w = vec![0.0; 3];
        assert!(local_round(&problem, &cfg, &spec, &mut [0.0; 19], &w).is_err());
        assert!(local_round(&problem, &cfg, &spec, &mut [0.0; 20], &w[..2]).is_err());
        assert!(local_round(&problem, &cfg, &RoundSpec { sigma: 0.5, ..spec }, &mut [0.0; 20], &w).is_err());
        assert!(local_round(&problem, &cfg, &RoundSpec { n_total: 10, ..spec }, &mut [0.0; 20], &w).is_err());
        assert!(local_round(&problem, &cfg, &spec, &mut [0.0; 20], &[f64::NAN, 0.0, 0.0]).is_err());
        assert!(local_round(&problem, &cfg, &spec, &mut [0.0; 20], &w).is_ok());
    }
}
