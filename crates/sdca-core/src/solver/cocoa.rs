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
//! The driver ([`Coordinator`]) then adds `gamma A_k d` of every partition to `v` and each
//! partition its `gamma d` to its duals: `gamma = 1, sigma = K` ("adding", CoCoA+) or
//! `gamma = 1/K, sigma = 1` ("averaging", CoCoA). It certifies each round's model by the global
//! duality gap, summed from the partitions' shares, and stops by the rule of every linear fit.
//! Only the scheduling of the partitions (Ray actors, threads) and the data movement live
//! outside the core.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::sdca::{Objective, State};
use super::{drive, meets, Budget, Certificate, Clock, Coordinate, FitResult, Problem, Status, Verdict};
use crate::config::{FitConfig, Sampling};
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{with_loss, BlockLoss};
use crate::reg::{soft_threshold, L2};

/// How the partitions' updates combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    /// CoCoA+: every update added (`gamma = 1`), subproblems damped by `sigma' = K`.
    Add,
    /// CoCoA: updates averaged (`gamma = 1/K`, `sigma' = 1`).
    Average,
}

impl Aggregation {
    /// Accepted names.
    pub const NAMES: &'static [&'static str] = &["add", "average"];

    /// The aggregation called `name`.
    pub fn named(name: &str) -> Result<Self> {
        match name {
            "add" => Ok(Self::Add),
            "average" => Ok(Self::Average),
            other => Err(SdcaError::InvalidParameter {
                name: "aggregation",
                message: format!("unknown value {other:?}; expected one of add, average"),
            }),
        }
    }
}

/// The driver of a CoCoA+ fit over `K` partitions: the global dual sum, the model of each
/// round, the certificate from the partitions' shares, the stopping rule and the model
/// returned. The partitions run [`local_round`] wherever they live; a lost one restarts from
/// zero duals (feasible), and its share leaves the dual sum.
#[derive(Debug, Clone)]
pub struct Coordinator {
    l2: f64,
    l1: f64,
    tol: f64,
    bias: f64,
    n_total: usize,
    d: usize,
    sigma: f64,
    gamma: f64,
    aggregation: Aggregation,
    local_epochs: u32,
    max_rounds: u32,
    max_restarts: u32,
    /// `sum_i s_i alpha_i x_i` over all partitions, `d + 1` (intercept feature last).
    v: Vec<f64>,
    /// Each partition's part of `v`.
    shares: Vec<Vec<f64>>,
    /// The current round's model.
    w: Vec<f64>,
    /// The last certified model and its certificate.
    certified: Option<(Vec<f64>, Certificate)>,
    gap_trace: Vec<f64>,
    rounds: u32,
    restarts: u32,
    status: Option<Status>,
}

impl Coordinator {
    /// A fit of `n_total` rows and `d` features in `parts` partitions under `cfg` (`l2 > 0`, a
    /// scalar loss), `local_epochs` SDCA passes per partition and round, at most `max_rounds`
    /// rounds and `max_restarts` lost partitions.
    pub fn new(
        cfg: &FitConfig,
        shape: (usize, usize, usize),
        aggregation: Aggregation,
        local_epochs: u32,
        (max_rounds, max_restarts): (u32, u32),
    ) -> Result<Self> {
        let (n_total, d, parts) = shape;
        if cfg.l2 <= 0.0 || cfg.loss.is_multiclass() || parts == 0 || local_epochs == 0 || max_rounds == 0 {
            return Err(SdcaError::InvalidParameter {
                name: "cocoa",
                message: format!(
                    "CoCoA+ needs l2 > 0 (got {}), a binary or regression loss (got {:?}), at least one \
                     partition, local_epochs >= 1 and max_rounds >= 1",
                    cfg.l2,
                    cfg.loss.name()
                ),
            });
        }
        let (sigma, gamma) = match aggregation {
            Aggregation::Add => (parts as f64, 1.0),
            Aggregation::Average => (1.0, 1.0 / parts as f64),
        };
        Ok(Self {
            l2: cfg.l2,
            l1: cfg.l1,
            tol: cfg.tol,
            bias: cfg.intercept_scaling,
            n_total,
            d,
            sigma,
            gamma,
            aggregation,
            local_epochs,
            max_rounds,
            max_restarts,
            v: vec![0.0; d + 1],
            shares: vec![vec![0.0; d + 1]; parts],
            w: vec![0.0; d + 1],
            certified: None,
            gap_trace: Vec::new(),
            rounds: 0,
            restarts: 0,
            status: None,
        })
    }

    /// Rows of the whole problem.
    pub fn n_rows(&self) -> usize {
        self.n_total
    }

    /// Whether the fit has stopped (converged or out of rounds).
    pub fn done(&self) -> bool {
        self.status.is_some()
    }

    /// Starts the next round: its model `w = grad g*(v / (l2 n))` (soft-thresholded features,
    /// the intercept feature's weight last) and the spec of partition `k` is [`Self::spec`].
    pub fn model(&mut self) -> &[f64] {
        let scale = 1.0 / (self.l2 * self.n_total as f64);
        let t = self.l1 / self.l2;
        let d = self.d;
        for (j, (wj, vj)) in self.w.iter_mut().zip(&self.v).enumerate() {
            *wj = if j < d { soft_threshold(vj * scale, t) } else { vj * scale };
        }
        &self.w
    }

    /// The round's spec for partition `k` (its own random stream per round and partition).
    pub fn spec(&self, k: usize) -> RoundSpec {
        RoundSpec {
            n_total: self.n_total,
            sigma: self.sigma,
            gamma: self.gamma,
            local_epochs: self.local_epochs,
            stream: (u64::from(self.rounds) << 20) | k as u64,
        }
    }

    /// Takes the round's outcomes, one per partition (`None`: the partition was lost and
    /// restarts from zero duals), in partition order. Returns the certificate of the round's
    /// model, or `None` when a partition was lost (the round does not count as certified).
    /// Errors when more partitions were lost than `max_restarts` allows, or an update does not
    /// have the model's width.
    pub fn absorb(&mut self, outcomes: &[Option<LocalRound>]) -> Result<Option<Certificate>> {
        if outcomes.len() != self.shares.len() {
            return Err(SdcaError::ShapeMismatch {
                what: "CoCoA+ round outcomes vs partitions",
                expected: self.shares.len(),
                got: outcomes.len(),
            });
        }
        if let Some(bad) = outcomes.iter().flatten().find(|o| o.delta_v.len() != self.v.len()) {
            return Err(SdcaError::ShapeMismatch {
                what: "CoCoA+ update vs features",
                expected: self.v.len(),
                got: bad.delta_v.len(),
            });
        }
        self.rounds += 1;
        for (share, out) in
            self.shares.iter_mut().zip(outcomes).filter_map(|(s, o)| o.as_ref().map(|o| (s, o)))
        {
            for ((vj, sj), dj) in self.v.iter_mut().zip(share.iter_mut()).zip(&out.delta_v) {
                *vj += dj;
                *sj += dj;
            }
        }
        let lost = outcomes.iter().filter(|o| o.is_none()).count();
        if lost > 0 {
            self.restarts += lost as u32;
            if self.restarts > self.max_restarts {
                return Err(SdcaError::WorkersLost {
                    restarts: self.restarts,
                    max_restarts: self.max_restarts,
                });
            }
            for (share, _) in self.shares.iter_mut().zip(outcomes).filter(|(_, o)| o.is_none()) {
                self.v.iter_mut().zip(share.iter_mut()).for_each(|(vj, sj)| {
                    *vj -= *sj;
                    *sj = 0.0;
                });
            }
            self.stop_at_budget();
            return Ok(None);
        }
        let nf = self.n_total as f64;
        let (loss, conj, gap) = outcomes
            .iter()
            .flatten()
            .fold((0.0, 0.0, 0.0), |(l, c, g), o| (l + o.loss_sum, c + o.conj_sum, g + o.gap_sum));
        let sq: f64 = self.w.iter().map(|v| v * v).sum();
        let l1_norm: f64 = self.w[..self.d].iter().map(|v| v.abs()).sum();
        let primal = loss / nf + 0.5 * self.l2 * sq + self.l1 * l1_norm;
        let c = Certificate { primal, dual: -conj / nf - 0.5 * self.l2 * sq, gap: (gap / nf).max(0.0) };
        self.gap_trace.push(c.gap);
        self.certified = Some((self.w.clone(), c));
        if meets(self.tol, &c) {
            self.status = Some(Status::Converged);
        } else {
            self.stop_at_budget();
        }
        Ok(Some(c))
    }

    fn stop_at_budget(&mut self) {
        if self.rounds >= self.max_rounds {
            self.status = Some(Status::MaxRounds);
        }
    }

    /// The fit: the last certified model (zero before any round) with its certificate, one gap
    /// per certified round, `epochs` = rounds x local passes. The duals stay with the
    /// partitions, so `alpha` is empty.
    pub fn result(&self) -> FitResult {
        let d = self.d;
        let (w, certificate) = self.certified.clone().unwrap_or_else(|| {
            let inf = Certificate { primal: f64::INFINITY, dual: f64::NEG_INFINITY, gap: f64::INFINITY };
            (vec![0.0; d + 1], inf)
        });
        FitResult {
            coef: w[..d].to_vec(),
            intercept: vec![self.bias * w[d]],
            alpha: Vec::new(),
            n_outputs: 1,
            certificate,
            epochs: self.rounds.saturating_mul(self.local_epochs),
            status: self.status.unwrap_or(Status::MaxRounds),
            gap_trace: self.gap_trace.clone(),
            solver: match self.aggregation {
                Aggregation::Add => "cocoa+",
                Aggregation::Average => "cocoa",
            },
            l2_used: self.l2,
            solved_gap: certificate.gap,
            outer_iterations: self.rounds,
        }
    }
}

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
    let out = with_loss!(cfg.loss, k, |loss| round(problem, loss, cfg, spec, alpha, w))?;
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
) -> Result<LocalRound> {
    let (n, bias) = (problem.n(), cfg.intercept_scaling);
    let row_sq = problem.row_sq(bias)?;
    // Scale `1 / (l2_local n)` = `sigma / (l2 n_total)`.
    let l2_local = cfg.l2 * spec.n_total as f64 / (spec.sigma * n as f64);
    let objective = Objective { l2: l2_local, l1: 0.0, bias };
    let mut state = State::new(problem, loss, L2, objective, &row_sq, alpha.to_vec())?;
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
    Ok(LocalRound { delta_v, loss_sum: e.loss * nf, conj_sum: e.conj * nf, gap_sum: e.gap * nf })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::loss::LossKind;
    use crate::solver::{fit, testing::toy};

    /// A CoCoA+ fit through the [`Coordinator`]: partitions of contiguous rows run in turn;
    /// `lose_at` drops partition 1's outcome in that round (its duals restart from zero).
    /// Returns `(P, gap, rounds)` and checks the gap identity `P - D = gap` every round.
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
        mode: Aggregation,
        local_epochs: u32,
        lose_at: Option<u32>,
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
        let mut coordinator = Coordinator::new(&cfg, (n, d, parts), mode, local_epochs, (2000, 1)).unwrap();
        while !coordinator.done() {
            let round = coordinator.result().outer_iterations;
            let w = coordinator.model().to_vec();
            let outcomes: Vec<Option<LocalRound>> = (0..parts)
                .map(|p| {
                    if p == 1 && lose_at == Some(round) {
                        alphas[1].iter_mut().for_each(|a| *a = 0.0);
                        return None;
                    }
                    let ys = &y[bounds[p]..bounds[p + 1]];
                    let ss = s.map(|s| &s[bounds[p]..bounds[p + 1]]);
                    let problem = Problem::partition(&views[p], ys, ss, cfg.loss, 1).unwrap();
                    Some(local_round(&problem, &cfg, &coordinator.spec(p), &mut alphas[p], &w).unwrap())
                })
                .collect();
            if let Some(c) = coordinator.absorb(&outcomes).unwrap() {
                assert!(((c.primal - c.dual) - c.gap).abs() <= 1e-9 * c.primal.abs().max(1.0));
            }
        }
        let r = coordinator.result();
        assert_eq!(r.status, Status::Converged, "CoCoA+ did not converge in 2000 rounds");
        Run { primal: r.certificate.primal, gap: r.certificate.gap, rounds: r.outer_iterations }
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
                for mode in [Aggregation::Add, Aggregation::Average] {
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
        let r = cocoa(&x, &y, None, 4, &p, 3, Aggregation::Add, 1, None);
        assert!(r.primal - star <= 2e-10 * star.abs());
        // Sorted labels: each partition of a binary problem holds one class.
        let (x, mut y) = toy(100, 3, true, 9);
        let mut rows: Vec<usize> = (0..100).collect();
        rows.sort_by(|&a, &b| y[a].total_cmp(&y[b]));
        let xs: Vec<f64> = rows.iter().flat_map(|&i| x[i * 3..i * 3 + 3].to_vec()).collect();
        y.sort_by(f64::total_cmp);
        let p = params("logistic", 0.0, true);
        let star = optimum(&xs, &y, None, 3, &p);
        let r = cocoa(&xs, &y, None, 3, &p, 2, Aggregation::Add, 3, None);
        assert!(r.primal - star <= 2e-10 * star);
    }

    #[test]
    fn one_round_of_one_partition_is_an_sdca_epoch_and_deterministic() {
        let (x, y) = toy(150, 4, true, 1);
        let p = params("logistic", 0.0, true);
        let a = cocoa(&x, &y, None, 4, &p, 1, Aggregation::Add, 1, None);
        let b = cocoa(&x, &y, None, 4, &p, 1, Aggregation::Add, 1, None);
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
        let r = cocoa(&x, &y, None, 5, &p, 3, Aggregation::Add, 2, Some(6));
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

#[cfg(test)]
mod coordinator_tests {
    use super::*;
    use crate::config::FitParams;

    /// Lost partitions past `max_restarts` stop the fit with an error; the budget of rounds
    /// counts lost rounds too, and the result is the last certified model.
    #[test]
    fn lost_partitions_and_the_round_budget() {
        let cfg = FitParams { l2: 0.1, ..Default::default() }.check().unwrap();
        let mut c = Coordinator::new(&cfg, (10, 2, 2), Aggregation::Add, 1, (3, 1)).unwrap();
        let ok =
            |dv: f64| Some(LocalRound { delta_v: vec![dv; 3], loss_sum: 7.0, conj_sum: -6.0, gap_sum: 1.0 });
        c.model();
        let cert = c.absorb(&[ok(1.0), ok(2.0)]).unwrap().unwrap();
        assert_eq!(cert.gap, 0.2);
        let w = c.model().to_vec();
        assert!(w[0] > 0.0 && w[2] > 0.0);
        assert_eq!(c.absorb(&[ok(1.0), None]).unwrap(), None, "a lost round certifies nothing");
        c.model();
        let err = c.absorb(&[None, ok(1.0)]).unwrap_err();
        assert!(matches!(err, SdcaError::WorkersLost { restarts: 2, max_restarts: 1 }), "{err}");
        // The budget: three rounds, the last one certified.
        let mut c = Coordinator::new(&cfg, (10, 2, 2), Aggregation::Average, 2, (2, 0)).unwrap();
        for _ in 0..2 {
            c.model();
            c.absorb(&[ok(1.0), ok(1.0)]).unwrap();
        }
        let r = c.result();
        assert_eq!((r.status, r.epochs, r.solver, r.gap_trace.len()), (Status::MaxRounds, 4, "cocoa", 2));
        assert!(c.done());
        assert!(c.absorb(&[ok(1.0)]).is_err(), "one outcome per partition");
        assert!(Aggregation::named("sum").is_err());
    }
}
