//! Plain SDCA on several threads: per-thread partitions of the rows merged every pass by
//! shared-memory CoCoA+ (Ma et al. 2015, "Adding vs. Averaging in Distributed Primal-Dual
//! Optimization", Algorithm 1 with `gamma = 1`, `sigma' = K`; run on the threads of one machine
//! as in SySCD, Ioannou et al. 2019, and Snap ML, Duenner et al. 2018).
//!
//! The rows are split into `K` contiguous partitions of (nearly) equal size, fixed for the fit.
//! Each round every partition runs one SDCA pass over its rows on its own thread, against the
//! round's global model `w = grad g*(v / (l2 n))`, on its local subproblem (the CoCoA+
//! subproblem of [`super::cocoa`]: the step's curvature `q_i` times `sigma' = K`, which is a
//! [`State`] of weight `l2 n / (K n_k)` on its `n_k` rows, re-centred on `w` at the round's
//! start by [`State::recenter`]). The partitions' changes of the dual sum are then added to `v`
//! in partition order. The states persist across rounds: their duals, their shrinking
//! thresholds and their random streams (seeded from `seed` and the partition), so that a round
//! costs one pass plus `O(K d)` for the merge, and the same seed and `K` give the same bits
//! whatever the scheduling.
//!
//! The certificate is the exact duality gap of the full problem, as for one thread: the dual
//! sum is rebuilt from every partition's duals (in parallel, summed in partition order), the
//! model recomputed from it, and one read-only pass per partition at that model sums the
//! losses, conjugates and block gaps (again summed in partition order). It runs when the
//! running estimate (the partitions' estimates, summed) says `tol` may be met, on the
//! `check_every` schedule, exactly as [`super::driver::drive`] decides for one thread. The fit
//! then continues from the rebuilt dual sum, which removes the merges' rounding drift.
//!
//! CoCoA+'s rate with `K` partitions is at worst that of one partition with `sigma' = K` times
//! the curvature: more passes than one thread needs, each `K` times cheaper in wall time.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::driver::draw;
use super::sdca::{Objective, State};
use super::{goal, meets, shrink, Context, Coordinate, Estimate, Outcome, Problem, Start, Status};
use crate::config::Sampling;
use crate::data::Rows;
use crate::error::Result;
use crate::loss::BlockLoss;
use crate::reg::{soft_threshold, L2};

/// The partitions of a fit under `cfg.n_threads`: `Some(K)`, `K >= 2`, when the fit runs in
/// parallel (a scalar loss, plain SDCA on an `l2 > 0` problem, at least two rows), else `None`.
pub(crate) fn partitions<D: Rows, L: BlockLoss>(ctx: &Context<'_, '_, D, L>) -> Option<usize> {
    let threads = ctx.cfg.n_threads.unwrap_or(1).min(ctx.problem.n());
    (threads >= 2 && L::SCALAR && ctx.cfg.l2 > 0.0 && ctx.l2 == ctx.cfg.l2).then_some(threads)
}

/// Some rows of a matrix (ascending), as a matrix.
struct RowSet<'a, D> {
    x: &'a D,
    rows: Vec<usize>,
}

impl<D: Rows> Rows for RowSet<'_, D> {
    #[inline(always)]
    fn n_rows(&self) -> usize {
        self.rows.len()
    }
    #[inline(always)]
    fn n_cols(&self) -> usize {
        self.x.n_cols()
    }
    #[inline(always)]
    fn dot(&self, i: usize, w: &[f64]) -> f64 {
        self.x.dot(self.rows[i], w)
    }
    #[inline(always)]
    fn dot_map<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], f: F) -> f64 {
        self.x.dot_map(self.rows[i], v, f)
    }
    #[inline(always)]
    fn axpy(&self, i: usize, a: f64, v: &mut [f64]) {
        self.x.axpy(self.rows[i], a, v)
    }
    #[inline(always)]
    fn sq_norm(&self, i: usize) -> f64 {
        self.x.sq_norm(self.rows[i])
    }
    #[inline(always)]
    fn for_each_nz<F: FnMut(usize, f64)>(&self, i: usize, f: F) {
        self.x.for_each_nz(self.rows[i], f)
    }
    #[inline(always)]
    fn dot_block<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], out: &mut [f64], f: F) {
        self.x.dot_block(self.rows[i], v, out, f)
    }
    #[inline(always)]
    fn axpy_block(&self, i: usize, a: &[f64], v: &mut [f64]) {
        self.x.axpy_block(self.rows[i], a, v)
    }
    fn dot_checked(&self, i: usize, w: &[f64]) -> Result<f64> {
        self.x.dot_checked(self.rows[i], w)
    }
    #[inline(always)]
    fn prefetch_offsets(&self, i: usize) {
        self.x.prefetch_offsets(self.rows[i])
    }
    #[inline(always)]
    fn prefetch_row(&self, i: usize) {
        self.x.prefetch_row(self.rows[i])
    }
}

/// One partition: its SDCA state on its local subproblem, the order of its passes (rows a pass
/// shrank away at the tail, after `kept`), its random stream and its round's change of `v`.
struct Part<'p, 'a, D: Rows, L: BlockLoss> {
    state: State<'p, 'a, RowSet<'a, D>, L, L2>,
    order: Vec<u32>,
    kept: usize,
    rng: Xoshiro256PlusPlus,
    /// The round's change of the dual sum (first its starting point).
    delta: Vec<f64>,
    /// The partition's dual sum, rebuilt from its duals at the last certificate.
    own: Vec<f64>,
    /// Whether `own` is fresh (no pass since it was rebuilt).
    fresh: bool,
    /// Rows the last pass visited.
    visits: usize,
    /// The full problem's `l2`.
    l2: f64,
}

impl<D: Rows, L: BlockLoss> Part<'_, '_, D, L> {
    /// One pass on the local subproblem centred at `w`; leaves the change of `v` in `delta`.
    fn round(&mut self, w: &[f64], sampling: Sampling) {
        self.state.recenter(w, self.fresh.then_some(self.own.as_slice()));
        self.fresh = false;
        self.delta.copy_from_slice(self.state.point());
        draw(&self.state, &mut self.order[..self.kept], sampling, &mut self.rng);
        self.visits = self.kept;
        self.kept = self.state.pass(&mut self.order[..self.kept]);
        for (dj, &vj) in self.delta.iter_mut().zip(self.state.point()) {
            *dj = vj - *dj;
        }
    }
}

/// `w = grad g*(v / (l2 n))`: features soft-thresholded at `l1 / l2`, the intercept slot last.
fn link(v: &[f64], w: &mut [f64], l2: f64, l1: f64, n: usize) {
    let (scale, t, d) = (1.0 / (l2 * n as f64), l1 / l2, v.len() - 1);
    for (j, (wj, vj)) in w.iter_mut().zip(v).enumerate() {
        *wj = if j < d { soft_threshold(vj * scale, t) } else { vj * scale };
    }
}

/// Plain SDCA from the duals of `start` on `k >= 2` partitions of the rows (module docs), until
/// the certificate meets `tol` or the budget ends. The partitions run on the current Rayon pool
/// (the plugin installs its own).
pub(crate) fn run<D: Rows, L: BlockLoss>(
    ctx: &mut Context<'_, '_, D, L>,
    start: Start,
    k: usize,
) -> Result<Outcome> {
    let (cfg, problem, bias) = (ctx.cfg, ctx.problem, ctx.bias());
    let (n, width) = (problem.n(), problem.x.n_cols() + 1);
    // A seeded random partition (document-ordered data would give each thread a different
    // distribution, which slows CoCoA+ down), each partition's rows in ascending order.
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0xD1B5_4A32_D192_ED03));
    let mut sets: Vec<Vec<usize>> = (0..k).map(|p| perm[p * n / k..(p + 1) * n / k].to_vec()).collect();
    sets.iter_mut().for_each(|s| s.sort_unstable());
    let gather = |rows: &[usize], of: &[f64]| rows.iter().map(|&i| of[i]).collect::<Vec<f64>>();
    let ys: Vec<Vec<f64>> = sets.iter().map(|r| gather(r, problem.y)).collect();
    let ss: Vec<Option<Vec<f64>>> = sets.iter().map(|r| problem.weights.map(|s| gather(r, s))).collect();
    let row_sqs: Vec<Vec<f64>> = sets.iter().map(|r| gather(r, &ctx.row_sq)).collect();
    let alphas: Vec<Vec<f64>> = sets.iter().map(|r| gather(r, &start.alpha)).collect();
    let views: Vec<RowSet<'_, D>> = sets.iter().map(|r| RowSet { x: problem.x, rows: r.clone() }).collect();
    let problems = views
        .iter()
        .zip(ys.iter().zip(&ss))
        .map(|(view, (y, s))| Problem::partition(view, y, s.as_deref(), cfg.loss, 1))
        .collect::<Result<Vec<_>>>()?;
    let mut parts = Vec::with_capacity(k);
    for (p, ((sub, alpha), row_sq)) in problems.iter().zip(alphas).zip(&row_sqs).enumerate() {
        // The CoCoA+ subproblem: scale `1 / (l2_local n_k) = K / (l2 n)`.
        let objective = Objective { l2: ctx.l2 * n as f64 / (k as f64 * sub.n() as f64), l1: 0.0, bias };
        let state = State::new(sub, ctx.loss, L2, objective, row_sq, alpha)?;
        let state = match cfg.sampling {
            Sampling::Gap => state.sample_by_gaps(),
            _ if shrink::applies(cfg) => state.shrinking(),
            _ => state.estimating(),
        };
        let order = state.active().to_vec();
        let stream = (p as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        parts.push(Part {
            kept: order.len(),
            order,
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ stream),
            delta: crate::budget::zeros(width)?,
            own: crate::budget::zeros(width)?,
            fresh: false,
            visits: 0,
            l2: ctx.l2,
            state,
        });
    }
    let active: usize = parts.iter().map(|p| p.order.len()).sum();
    let mut estimate = parts[0].state.estimate.is_some().then(Estimate::new);
    let (mut v, mut w) = (crate::budget::zeros(width)?, crate::budget::zeros(width)?);
    let (l2, l1) = (ctx.l2, cfg.l1);
    // The start: its dual sum and model (the first round starts there).
    certify(&mut parts, &mut v, &mut w, l1);
    let mut gap_trace = Vec::new();
    let mut last = None;
    let mut status = Status::MaxEpochs;
    let mut rounds: u32 = 0;
    while ctx.clock.remaining() > 0 {
        let model = &w;
        parts.par_iter_mut().for_each(|p| p.round(model, cfg.sampling));
        rounds += 1;
        let mut visits = 0;
        for p in parts.iter_mut() {
            v.iter_mut().zip(&p.delta).for_each(|(vj, dj)| *vj += dj);
            if let (Some(g), Some(e)) = (&mut estimate, &mut p.state.estimate) {
                g.merge(e);
            }
            visits += p.visits;
        }
        let share = if active == 0 { 1.0 } else { visits.max(1) as f64 / active as f64 };
        ctx.clock.add_pass(share);
        let out_of_time = ctx.clock.out_of_time();
        let scheduled = rounds.is_multiple_of(cfg.check_every);
        let due = match &mut estimate {
            Some(e) => e.settled(n) && scheduled,
            None => scheduled,
        };
        let budget_out = ctx.clock.remaining() == 0;
        if !(due || budget_out || out_of_time) {
            link(&v, &mut w, l2, l1, n);
            continue;
        }
        // Rows shrunk away come back for the certificate's pass and the next round.
        parts.iter_mut().for_each(|p| p.kept = p.order.len());
        let (primal, gap) = certify(&mut parts, &mut v, &mut w, l1);
        let c = ctx.judge.original(&w, &[], primal, gap);
        gap_trace.push(c.gap);
        last = Some((c, gap));
        if let Some(e) = &mut estimate {
            e.aim(gap, goal(cfg.tol, &c));
        }
        if meets(cfg.tol, &c) {
            status = Status::Converged;
            break;
        }
        if out_of_time {
            status = Status::MaxSeconds;
            break;
        }
    }
    // No round could run (exhausted budget): certify the start.
    let (certificate, solved_gap) = match last {
        Some(last) => last,
        None => {
            let (primal, gap) = certify(&mut parts, &mut v, &mut w, l1);
            (ctx.judge.original(&w, &[], primal, gap), gap)
        }
    };
    let mut alpha = crate::budget::zeros(n)?;
    for (p, rows) in parts.iter().zip(&sets) {
        rows.iter().zip(&p.state.alpha).for_each(|(&i, &a)| alpha[i] = a);
    }
    Ok(Outcome { w, alpha, certificate, solved_gap, status, gap_trace, solver: "sdca", outer_iterations: 0 })
}

/// The exact certificate of the full problem at the partitions' duals as they stand (module
/// docs): rebuilds the dual sum `v` and the model `w` from them and returns the primal value at
/// `w` and the duality gap.
fn certify<D: Rows, L: BlockLoss>(
    parts: &mut [Part<'_, '_, D, L>],
    v: &mut [f64],
    w: &mut [f64],
    l1: f64,
) -> (f64, f64) {
    parts.par_iter_mut().for_each(|p| {
        p.state.dual_sum(&mut p.own);
        p.fresh = true;
    });
    v.iter_mut().for_each(|vj| *vj = 0.0);
    for p in parts.iter() {
        v.iter_mut().zip(&p.own).for_each(|(vj, oj)| *vj += oj);
    }
    let n: usize = parts.iter().map(|p| p.state.alpha.len()).sum();
    let l2 = parts[0].l2;
    link(v, w, l2, l1, n);
    let model: &[f64] = w;
    let sums: Vec<[f64; 3]> = parts.par_iter_mut().map(|p| p.state.sums_at(model)).collect();
    let [loss, _, gap] = sums.iter().fold([0.0; 3], |a, s| [a[0] + s[0], a[1] + s[1], a[2] + s[2]]);
    let (nf, d) = (n as f64, w.len() - 1);
    let sq: f64 = w.iter().map(|x| x * x).sum();
    let l1_norm: f64 = w[..d].iter().map(|x| x.abs()).sum();
    (loss / nf + 0.5 * l2 * sq + l1 * l1_norm, (gap / nf).max(0.0))
}
