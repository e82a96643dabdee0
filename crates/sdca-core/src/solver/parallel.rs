//! Plain SDCA on several threads: shared-memory CoCoA+ (Ma et al. 2015, "Adding vs. Averaging
//! in Distributed Primal-Dual Optimization", Algorithm 1; run on the threads of one machine as in
//! SySCD, Ioannou et al. 2019, and Snap ML, Duenner et al. 2018) with an adaptive damping, a
//! safe merge step and blocks regrouped every round.
//!
//! The rows are split into `B = K m` blocks of (nearly) equal size, random rows in ascending
//! order, fixed for the fit (`m = 256`, [`BLOCKS_PER_THREAD`], with at least
//! [`MIN_BLOCK_ROWS`] rows a block). Each round the blocks are dealt at random to the `K`
//! threads (`m` each, in a random order); a thread runs one SDCA pass over each of its blocks
//! in turn, against its local model: the round's global `w = grad g*(v / (l2 n))` plus `sigma'
//! / (l2 n)` times the changes of its blocks so far. That is one pass on the CoCoA+ subproblem
//! of its group of rows, `G_k(d) = -(1/n) sum_i phi*(..) - (1/n) w . A_k d - (sigma' / (2 l2
//! n^2)) ||A_k d||^2` (a block's [`State`] of weight `l2 n / (sigma' n_b)`). The blocks have no
//! point of their own: the thread lends each block its local point for the pass
//! ([`State::swap_point`]), so a block costs O(its visited rows) per round and a thread O(d)
//! (its point set from `w`, and its change read back). The states persist across rounds:
//! their duals, shrinking thresholds and random streams (seeded from `seed` and the block), so
//! the same seed and `K` give the same bits whatever the scheduling.
//!
//! Why regroup. With fixed partitions, CoCoA+ was slow on CoNLL-2003 tokens (logistic, `l2 =
//! 1e-4`): 108 passes on 2 threads against 6 on one. After five rounds the partitions' changes
//! `dv_k` were anti-correlated (`||sum_k dv_k||^2 < sum_k ||dv_k||^2 / 2`): the model was
//! nearly right, and the partitions traded dual mass between them along directions where `v`
//! does not move. Each local subproblem charges its own change of `v` there (`sigma' A_k d`),
//! so in a direction where the rows' loss curvature `H_k` is large next to `l2 n / sigma'` the
//! imbalance shrinks only by `H_k / (H_k + l2 n / sigma')` per round (the gap fell by 3% a round).
//! No scalar `sigma'` fixes this (`sigma' = 1` still needed 61 passes). Blocks dealt anew every
//! round turn most of that trade into trade within a thread, which its sequential passes settle
//! as one-thread SDCA does. To 1e-7 on 2 threads: 78 passes with `m = 2`, 24 with `m = 16`,
//! 10 with `m = 64`, 7 (as one thread) with `m = 256`; hinge (shrinking) 18, 16, 18 and 15
//! (one thread: 7). Blocks lent their thread's point make `m` cheap.
//!
//! The merge. With `S = sum_k ||dv_k||^2`, `T = ||sum_k dv_k||^2` and `rho = T / S`, the true
//! dual after the round's step `d` is exactly `D(alpha + d) = sum_k G_k(d_k) + (sigma' S - T) /
//! (2 l2 n^2)` (for `l1 > 0` it is at least that, `g*` being `1/l2`-smooth). Each pass raises its
//! `G_k`, and `G_k` is concave along `d_k`, so the step `gamma d` with `gamma = min(1, sigma' /
//! rho)` raises the true dual by at least `gamma sum_k (G_k(d_k) - G_k(0))` (CoCoA+'s bound with
//! `sigma'` replaced by the measured `rho`): every merge is a feasible (a convex combination of
//! feasible duals) dual ascent step, whatever `sigma'`. The next round's `sigma'` is this
//! round's `rho`, clamped to `[1, K]`; the first round takes CoCoA+'s safe `sigma' = K`. A
//! merge with `gamma < 1` moves the visited rows' duals back to `start + gamma (alpha - start)`.
//! The merge and the ratio cost O(K d) per round.
//!
//! The certificate is the exact duality gap of the full problem, as for one thread: the dual
//! sum is rebuilt from every block's duals (in parallel, summed in block order), the model
//! recomputed from it, and one read-only pass per block at that model sums the losses,
//! conjugates and block gaps (again summed in block order). It runs when the running estimate
//! (the blocks' estimates, summed) says `tol` may be met, on the `check_every` schedule, exactly
//! as [`super::driver::drive`] decides for one thread. The fit then continues from the rebuilt
//! dual sum, which removes the merges' rounding drift.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::driver::draw;
use super::sdca::{Objective, State};
use super::{goal, meets, shrink, Context, Coordinate, Estimate, Outcome, Problem, Start, Status};
use crate::config::Sampling;
use crate::data::Rows;
use crate::error::{Result, SdcaError};
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

/// One block: its SDCA state on its local subproblem (without a point of its own: its lane
/// lends it one, [`State::swap_point`]), the order of its passes (rows a pass shrank away at the
/// tail, after `kept`), its random stream and the duals of its round's start.
struct Part<'p, 'a, D: Rows, L: BlockLoss> {
    state: State<'p, 'a, RowSet<'a, D>, L, L2>,
    problem: &'p Problem<'a, RowSet<'a, D>>,
    order: Vec<u32>,
    kept: usize,
    rng: Xoshiro256PlusPlus,
    /// The visited rows' duals at the round's start (a merge with `gamma < 1` moves them back
    /// towards these).
    start: Vec<f64>,
    /// `s_i (||x_i||^2 + bias^2)` of the block's rows (the curvatures follow `sigma'`).
    row_sq: &'p [f64],
    /// The `sigma'` of the state's subproblem.
    sigma: f64,
    /// Rows the last pass visited.
    visits: usize,
    /// The full problem's `l2` and rows, and the intercept feature's value.
    l2: f64,
    n: usize,
    bias: f64,
}

impl<D: Rows, L: BlockLoss> Part<'_, '_, D, L> {
    /// One pass on the local subproblem with damping `sigma` from the lane's local point
    /// (unscaled: the local model times `l2 n / sigma`), to which it adds its changes.
    fn round(&mut self, point: &mut Vec<f64>, sigma: f64, sampling: Sampling) {
        if sigma != self.sigma {
            // The CoCoA+ subproblem: scale `1 / (l2_local n_b) = sigma' / (l2 n)`.
            let n_k = self.state.alpha.len() as f64;
            self.state.set_l2(self.l2 * self.n as f64 / (sigma * n_k), self.row_sq);
            self.sigma = sigma;
        }
        draw(&self.state, &mut self.order[..self.kept], sampling, &mut self.rng);
        for &i in &self.order[..self.kept] {
            self.start[i as usize] = self.state.alpha[i as usize];
        }
        self.visits = self.kept;
        self.state.swap_point(point);
        self.kept = self.state.pass(&mut self.order[..self.kept]);
        self.state.swap_point(point);
    }

    /// Takes `gamma < 1` times the round's step: the visited rows' duals move back to `start +
    /// gamma (alpha - start)`.
    fn scale(&mut self, gamma: f64) {
        // The rows the pass visited (a pass keeps the set of its rows, in some order); a row
        // drawn twice is moved once, its start then being its new dual.
        for &i in &self.order[..self.visits] {
            let (a, s) = (&mut self.state.alpha[i as usize], &mut self.start[i as usize]);
            *a = *s + gamma * (*a - *s);
            *s = *a;
        }
    }

    /// Adds the block's dual sum `sum_i s_i alpha_i x_i` (intercept feature last) to `out`.
    fn add_dual_sum(&self, out: &mut [f64]) {
        let (x, d) = (self.problem.x, out.len() - 1);
        for (i, &a) in self.state.alpha.iter().enumerate() {
            let t = self.problem.weight(i) * a;
            if t != 0.0 {
                x.axpy(i, t, out);
                out[d] += t * self.bias;
            }
        }
    }
}

/// Blocks of rows per thread (module docs).
const BLOCKS_PER_THREAD: usize = 256;

/// Rows per block at least (each block's state is built with a dense point, `O(d)` once per
/// fit, and has fixed costs per round); fewer blocks on small fits.
const MIN_BLOCK_ROWS: usize = 256;

/// One thread's round: its local point and the change of `v` of its group of blocks.
struct Lane {
    /// The local point: the round's model times `l2 n / sigma'` plus the changes of the
    /// group's blocks so far (the blocks' states read it at that scale).
    point: Vec<f64>,
    delta: Vec<f64>,
}

impl Lane {
    /// Runs the blocks of `group` in turn from the model `w` and leaves the group's change of
    /// the dual sum in `delta`: `O(d)` per lane, `O(rows)` per block.
    fn run<D: Rows, L: BlockLoss>(
        &mut self,
        group: Vec<&mut Part<'_, '_, D, L>>,
        w: &[f64],
        sigma: f64,
        unscale: f64,
        sampling: Sampling,
    ) {
        self.point.iter_mut().zip(w).for_each(|(p, &wj)| *p = wj * unscale);
        for part in group {
            part.round(&mut self.point, sigma, sampling);
        }
        for ((dj, &pj), &wj) in self.delta.iter_mut().zip(&self.point).zip(w) {
            *dj = pj - wj * unscale;
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

/// Plain SDCA from the duals of `start` on `k >= 2` threads (module docs), until the
/// certificate meets `tol` or the budget ends. The threads are the current Rayon pool's (the
/// plugin installs its own).
pub(crate) fn run<D: Rows, L: BlockLoss>(
    ctx: &mut Context<'_, '_, D, L>,
    start: Start,
    k: usize,
) -> Result<Outcome> {
    let (cfg, problem, bias) = (ctx.cfg, ctx.problem, ctx.bias());
    let (n, width) = (problem.n(), problem.x.n_cols() + 1);
    // Seeded random blocks (document-ordered data would give each thread a different
    // distribution, which slows CoCoA+ down), each block's rows in ascending order.
    let mut perm: Vec<usize> = (0..n).collect();
    perm.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0xD1B5_4A32_D192_ED03));
    // Blocks per thread (module docs), of at least `MIN_BLOCK_ROWS` rows when there are
    // enough rows for one block per thread.
    let blocks = (k * BLOCKS_PER_THREAD).min(n / MIN_BLOCK_ROWS).max(k).min(n);
    let mut sets: Vec<Vec<usize>> =
        (0..blocks).map(|p| perm[p * n / blocks..(p + 1) * n / blocks].to_vec()).collect();
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
    let mut parts = Vec::with_capacity(blocks);
    let sigma_max = k as f64;
    for (p, ((sub, alpha), row_sq)) in problems.iter().zip(alphas).zip(&row_sqs).enumerate() {
        // The CoCoA+ subproblem at `sigma' = K`: scale `1 / (l2_local n_b) = K / (l2 n)`.
        let objective = Objective { l2: ctx.l2 * n as f64 / (sigma_max * sub.n() as f64), l1: 0.0, bias };
        let mut state = State::new(sub, ctx.loss, L2, objective, row_sq, alpha)?;
        // The lanes lend the blocks their points: the state's own are dropped.
        state.swap_point(&mut Vec::new());
        state.w = Vec::new();
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
            start: crate::budget::zeros(sub.n())?,
            row_sq,
            sigma: sigma_max,
            visits: 0,
            l2: ctx.l2,
            n,
            bias,
            problem: sub,
            state,
        });
    }
    let active: usize = parts.iter().map(|p| p.order.len()).sum();
    let mut estimate = parts[0].state.estimate.is_some().then(Estimate::new);
    let (mut v, mut w) = (crate::budget::zeros(width)?, crate::budget::zeros(width)?);
    let mut sum = crate::budget::zeros(width)?;
    let mut lanes = (0..k)
        .map(|_| Ok(Lane { point: crate::budget::zeros(width)?, delta: crate::budget::zeros(width)? }))
        .collect::<Result<Vec<_>>>()?;
    let mut groups: Vec<usize> = (0..blocks).collect();
    let mut shuffler = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x6A09_E667_F3BC_C908);
    let (l2, l1) = (ctx.l2, cfg.l1);
    // The start: its dual sum and model (the first round starts there).
    certify(&mut parts, &mut lanes, &mut v, &mut w, l1);
    let mut gap_trace = Vec::new();
    let mut last = None;
    let mut status = Status::MaxEpochs;
    let mut rounds: u32 = 0;
    // The first round is damped as CoCoA+'s worst case; the next ones by the last ratio.
    let mut sigma = sigma_max;
    while ctx.clock.remaining() > 0 {
        // Each lane (thread) runs a random group of blocks in a random order, carrying its
        // local model from block to block.
        groups.shuffle(&mut shuffler);
        // The blocks' states read their points at the scale `sigma' / (l2 n)`.
        let unscale = l2 * n as f64 / sigma;
        {
            let mut slots: Vec<Option<&mut Part<'_, '_, D, L>>> = parts.iter_mut().map(Some).collect();
            let mut work: Vec<(&mut Lane, Vec<&mut Part<'_, '_, D, L>>)> = Vec::with_capacity(k);
            for (t, lane) in lanes.iter_mut().enumerate() {
                let ids = &groups[t * blocks / k..(t + 1) * blocks / k];
                // `groups` is a permutation and the lanes take disjoint slices of it: each slot once.
                let group =
                    ids.iter().map(|&b| slots[b].take()).collect::<Option<Vec<_>>>().ok_or_else(|| {
                        SdcaError::Internal("a block dealt to two threads; please report".into())
                    })?;
                work.push((lane, group));
            }
            let model = &w;
            work.into_par_iter()
                .for_each(|(lane, group)| lane.run(group, model, sigma, unscale, cfg.sampling));
        }
        rounds += 1;
        // The merge: `rho = ||sum_k dv_k||^2 / sum_k ||dv_k||^2`; the step `gamma = min(1,
        // sigma' / rho)` is an ascent step of the true dual (module docs).
        let deltas: Vec<&[f64]> = lanes.iter().map(|lane| &lane.delta[..]).collect();
        sum.copy_from_slice(deltas[0]);
        let mut own_sq: f64 = deltas[0].iter().map(|d| d * d).sum();
        for delta in &deltas[1..] {
            sum.iter_mut().zip(delta.iter()).for_each(|(s, d)| *s += d);
            own_sq += delta.iter().map(|d| d * d).sum::<f64>();
        }
        let sum_sq: f64 = sum.iter().map(|s| s * s).sum();
        let rho = if own_sq > 0.0 { (sum_sq / own_sq).min(sigma_max) } else { 1.0 };
        let gamma = if rho <= sigma { 1.0 } else { sigma / rho };
        sigma = rho.clamp(1.0, sigma_max);
        if gamma < 1.0 {
            parts.par_iter_mut().for_each(|p| p.scale(gamma));
        }
        v.iter_mut().zip(&sum).for_each(|(vj, s)| *vj += gamma * s);
        let mut visits = 0;
        for p in parts.iter_mut() {
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
        let (primal, gap) = certify(&mut parts, &mut lanes, &mut v, &mut w, l1);
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
            let (primal, gap) = certify(&mut parts, &mut lanes, &mut v, &mut w, l1);
            (ctx.judge.original(&w, &[], primal, gap), gap)
        }
    };
    let mut alpha = crate::budget::zeros(n)?;
    for (p, rows) in parts.iter().zip(&sets) {
        rows.iter().zip(&p.state.alpha).for_each(|(&i, &a)| alpha[i] = a);
    }
    Ok(Outcome { w, alpha, certificate, solved_gap, status, gap_trace, solver: "sdca", outer_iterations: 0 })
}

/// The exact certificate of the full problem at the blocks' duals as they stand (module
/// docs): rebuilds the dual sum `v` and the model `w` from them and returns the primal value at
/// `w` and the duality gap. The lanes' `delta` buffers hold the partial sums of contiguous runs
/// of blocks, added in block order (the same bits whatever the scheduling).
fn certify<D: Rows, L: BlockLoss>(
    parts: &mut [Part<'_, '_, D, L>],
    lanes: &mut [Lane],
    v: &mut [f64],
    w: &mut [f64],
    l1: f64,
) -> (f64, f64) {
    let run = parts.len().div_ceil(lanes.len());
    lanes.par_iter_mut().zip(parts.par_chunks(run)).for_each(|(lane, chunk)| {
        lane.delta.iter_mut().for_each(|d| *d = 0.0);
        chunk.iter().for_each(|p| p.add_dual_sum(&mut lane.delta));
    });
    v.iter_mut().for_each(|vj| *vj = 0.0);
    for lane in &lanes[..parts.len().div_ceil(run)] {
        v.iter_mut().zip(&lane.delta).for_each(|(vj, oj)| *vj += oj);
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
