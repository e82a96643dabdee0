//! SDCA for linear-chain CRFs (Le Priol, Piché and Lacoste-Julien, UAI 2018, Algorithm 2 with
//! the details of App. A).
//!
//! Primal (eq. 1-2), for `n` sequences with features `F(x, y)` of [`crate::crf::model`]:
//!
//! ```text
//! P(w) = (lambda/2) ||w||^2 + (1/n) sum_i [ log Z(x_i; w) - w . F(x_i, y_i) ]
//! ```
//!
//! Dual (eq. 3) over per-sequence label distributions, kept as clique marginals `mu_i`
//! (`crf/marginals.rs`):
//!
//! ```text
//! D(mu) = (1/n) sum_i H~(mu_i) - (lambda/2) ||w^(mu)||^2
//! w^(mu) = (1/(lambda n)) sum_i sum_t sum_y_C (F_C(x_i, y_i,C) - F_C(x_i, y_C)) mu_i,C(y_C)
//! P(w^(mu)) - D(mu) = (1/n) sum_i KL~(mu_i || nu_i),  nu_i = p(. | x_i; w^(mu))   (eq. 11)
//! ```
//!
//! One step on sequence `i`: the scaled forward-backward (`crf/chain.rs`) at
//! the current `w` writes `nu_i` into the step's buffers, which become `delta = nu_i - mu_i` in
//! the same pass; the block gap comes without a `log` per lattice cell, from
//!
//! ```text
//! KL~(mu_i || nu_i) = -H~(mu_i) - <mu_i, log nu_i>_chain
//!                   = log Z_i - sum_t <mu_t, theta_t> - sum_t <mu_{t,t+1}, W> - H~(mu_i)
//! ```
//!
//! (`log nu(y) = s(y) - log Z` and `mu_i` is locally consistent), and is stored for sampling and
//! the running estimate; `v = -(1/(lambda n)) sum_C sum_y_C delta_C F_C` touches only the
//! attribute columns active in sequence `i` (positions precomputed once per fit) plus the bias
//! and transition blocks (sparse scatter); the exact line search
//! (`crf/line_search.rs`) picks `gamma` in `[0, 1]` at a cost of one `log` per lattice cell and
//! evaluation, which also gives `H~(mu_i + gamma delta)`; then `mu_i <- mu_i + gamma delta` and
//! `w <- w + gamma v`, so `w = w^(mu)` holds at all times.
//!
//! Several threads (`n_threads > 1`): the steps run as a pipeline of `L = min(2 n_threads, n /
//! 512)` steps in flight ([`State::pipeline`]). The calling thread (the driver) copies the
//! weights step `q`'s oracle reads (the emission rows of its sequence's attributes, the biases
//! and the transitions: `<w, v>` comes from the scores) right after it has applied step `q - L`;
//! any thread then scores the tokens from that copy (the bits of scoring them at `w`),
//! exponentiates the transitions and computes the oracle and the line search's evaluations at
//! those weights; and the driver
//! applies the steps in order, each at the current weights, helping with the oracles while the
//! next one is not ready. The evaluations' chain sums do not depend on `w` (only the scalar
//! `<w, v>` does), so each step re-scores the evaluated points at the current weights and moves
//! to the one that raises the dual most (no serial evaluation). The move of `mu_i` is deferred
//! to the slot's next oracle, and a sequence is drawn only when no step in flight or with a
//! pending move holds it, so the threads always work on distinct sequences. A direction from a
//! stale oracle is still feasible (`mu_i + gamma (nu_i - mu_i)` stays in the marginal polytope)
//! and every step still raises the dual, so the certificate and the monotone dual hold. Which
//! thread runs which oracle does not change any result: the fit depends on the seed and the
//! thread count only. Unlike blocks of oracles with a join per block, which this replaced, no
//! thread waits for the others at fixed points: on CoNLL NER with 2 threads the steps ran 1.56
//! times as fast as on one (1.42 for blocks of 8), per step.
//!
//! Initialisation: eps-smoothed one-hot marginals of the true labels
//! (`eps = 1e-10`, never uniform), `w = w^(mu)` (about 0), every stored gap 100.
//!
//! Stopping: the running estimate `G = mean_i g_i` of the stored gaps (within a factor 2 of the
//! truth) triggers a full pass when `G <= tol * (D + G)` (at most once per
//! `n / 10` steps); so does the end of every `check_every`-th epoch. A full pass recomputes
//! `w = w^(mu)` from the marginals (no rounding drift), then the true `P`, `D` and gap (block
//! gaps summed as `mu (log mu - log nu)` terms, accurate near the optimum), in fixed chunks of
//! sequences whose partial sums are added in order, so it gives the same bits on any number of
//! threads; the fit stops when `gap <= tol * max(P, tiny)`. The pass also replaces the stored
//! gaps by the true ones.
//!
//! Errata and choices: `f'(1)` from a closed form; NaN in the line search falls
//! back to bisection; `T = 1` chains use the node entropy and `T = 2` the single edge; block
//! gaps clamped `>= 0`; sums over positions compensated, so rounding does not grow with the
//! length of a sequence.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::chain::{ChainWorkspace, LogFactors, Sum, Transitions};
use super::config::{CrfConfig, CrfSampling};
use super::line_search::{search, BlockLine, Memo, Raw, Scalars};
use super::marginals::{chain_entropy, chain_entropy_kl, reserve, zeros, Marginals, SharedBlocks};
use super::model::{
    memory_estimate, unary_scores, unary_scores_local, CrfProblem, CrfWeights, Emission, Layout, TokenRows,
};
use crate::data::prefetch;
use crate::error::{Result, SdcaError};
use crate::sampling::GapSampler;
use crate::solver::{meets, Certificate, Clock, Status};

/// `eps` of the smoothed one-hot initial marginals `mu_t(k) = eps/K + (1 - eps)[k = y_t]`.
const INIT_SMOOTHING: f64 = 1e-10;
/// Steps in flight per thread in the parallel pipeline (its lag `L` is this times the thread
/// count): an oracle sees the weights `L` steps before its own, so a longer pipeline keeps the
/// threads busier but its oracles staler. On CoNLL NER with 2 threads, epochs to 1e-5 were 14
/// at `L = 3`, `4` and `6` and 16 at `L = 8` (13 on one thread); the wall times at 3 to 6 were
/// within the noise of this machine.
pub(crate) const IN_FLIGHT_PER_THREAD: usize = 2;
/// At most `n / 512` steps are in flight: the staler the oracles relative to the data, the
/// slower the convergence (300 sequences sharing 40 attributes in blocks of 8 stalled at a
/// relative gap of 1e-4 after 100 epochs, against 57 epochs to 1e-8 on one thread). Fits of
/// fewer than 1,024 sequences run the sequential algorithm whatever `n_threads` is.
const MIN_SEQUENCES_PER_SLOT: usize = 512;
/// Sequences per chunk of the certificate pass (fixed, so the certificate does not depend on
/// the thread count).
const CERTIFY_CHUNK: usize = 32;
/// Marker of an attribute outside the current sequence's active set.
const INACTIVE: u32 = u32::MAX;

/// A fitted linear-chain CRF with its duality-gap certificate.
#[derive(Debug, Clone, PartialEq)]
pub struct CrfFit {
    /// Number of labels `K`.
    pub n_labels: usize,
    /// Number of attributes `A`.
    pub n_attributes: usize,
    /// Number of training sequences `n`.
    pub n_sequences: usize,
    /// Number of training tokens (rows) `N`.
    pub n_tokens: usize,
    /// Emission weights `E`, `K x A` row-major (`emission[k * A + a]`).
    pub emission: Vec<f64>,
    /// Transition weights `W`, `K x K` row-major (`transition[k * K + l]`: `y_t = k`,
    /// `y_{t+1} = l`).
    pub transition: Vec<f64>,
    /// Label bias at the first token of a sequence.
    pub start: Vec<f64>,
    /// Label bias at the last token of a sequence.
    pub end: Vec<f64>,
    /// Label bias at every token.
    pub bias: Vec<f64>,
    /// The L2 strength used (`lambda`; `1/n` unless given).
    pub l2: f64,
    /// `P(w)`.
    pub primal: f64,
    /// `D(mu)`.
    pub dual: f64,
    /// `mean_i KL~(mu_i || nu_i) >= 0`, equal to `P - D` up to rounding.
    pub gap: f64,
    /// Epochs started (`ceil(steps / n)`).
    pub epochs: u32,
    /// Sequence updates made.
    pub steps: u64,
    /// Why the fit stopped.
    pub status: Status,
    /// True gap after each full check, the last one being the final certificate.
    pub gap_trace: Vec<f64>,
    /// Per-sequence block gaps `KL~(mu_i || nu_i)` at the final weights; their mean is `gap`.
    pub block_gaps: Vec<f64>,
    /// Mean number of evaluations per line search, counting those made in parallel (searches
    /// that ended at 0 without one are not counted).
    pub mean_line_search_iters: f64,
    /// Estimated peak memory in bytes ([`memory_estimate`]).
    pub memory_bytes: u64,
    /// Oracle threads used (with more than one, a pipeline of `2` steps in flight per thread).
    pub n_threads: usize,
}

impl CrfFit {
    /// Whether the relative gap met `tol`.
    pub fn converged(&self) -> bool {
        self.status == Status::Converged
    }

    /// The weights as a prediction view.
    pub fn weights(&self) -> CrfWeights<'_> {
        CrfWeights::from_parts(
            (self.n_labels, self.n_attributes),
            &self.emission,
            &self.transition,
            (&self.start, &self.end, &self.bias),
        )
    }
}

/// Unary scores of `rows` under the solver's weight vector.
fn scores<D: TokenRows>(x: &D, rows: std::ops::Range<usize>, w: &[f64], lay: Layout, theta: &mut [f64]) {
    let k = lay.k;
    let em = Emission { em: &w[..lay.bias()], a_stride: k, k_stride: 1, n_attr: lay.a };
    let b = &w[lay.bias()..lay.trans()];
    unary_scores(x, rows, em, (&b[..k], &b[k..2 * k], &b[2 * k..]), k, theta);
}

/// Per sequence, its distinct attributes (in order of first appearance) and, for every stored
/// entry of its rows in [`TokenRows::for_each_entry`] order, the entry's position among them:
/// the emission part of a direction is then accumulated without a per-attribute map.
#[derive(Debug, Clone)]
struct AttrIndex {
    active: Vec<u32>,
    active_off: Vec<usize>,
    local: Vec<u32>,
    local_off: Vec<usize>,
    max_active: usize,
}

impl AttrIndex {
    fn new<D: TokenRows>(problem: &CrfProblem<'_, D>) -> Result<Self> {
        let (n, x) = (problem.n_sequences(), problem.x());
        let mut entries = 0usize;
        for row in 0..problem.n_tokens() {
            x.for_each_entry(row, |_, _| entries += 1);
        }
        let mut local: Vec<u32> = reserve(entries)?;
        let mut active: Vec<u32> = reserve(entries.min(n.saturating_mul(problem.n_attributes())))?;
        let (mut active_off, mut local_off) = (reserve(n + 1)?, reserve(n + 1)?);
        active_off.push(0);
        local_off.push(0);
        let mut pos: Vec<u32> = reserve(problem.n_attributes())?;
        pos.resize(problem.n_attributes(), INACTIVE);
        let mut max_active = 0;
        for i in 0..n {
            let first = active.len();
            for row in problem.sequence(i) {
                x.for_each_entry(row, |a, _| {
                    if pos[a] == INACTIVE {
                        pos[a] = (active.len() - first) as u32;
                        active.push(a as u32);
                    }
                    local.push(pos[a]);
                });
            }
            for &a in &active[first..] {
                pos[a as usize] = INACTIVE;
            }
            max_active = max_active.max(active.len() - first);
            active_off.push(active.len());
            local_off.push(local.len());
        }
        Ok(Self { active, active_off, local, local_off, max_active })
    }

    #[inline]
    fn active(&self, i: usize) -> &[u32] {
        &self.active[self.active_off[i]..self.active_off[i + 1]]
    }

    #[inline]
    fn local(&self, i: usize) -> &[u32] {
        &self.local[self.local_off[i]..self.local_off[i + 1]]
    }
}

/// The read-only part of a fit, shared by the oracles.
#[derive(Clone)]
struct Ctx<'p, 'a, D: TokenRows> {
    problem: &'p CrfProblem<'a, D>,
    lay: Layout,
    /// `lambda n`.
    lam_n: f64,
    line_tol: f64,
    index: AttrIndex,
}

/// One step's oracle, direction and line-search memo; also the scratch of a certificate chunk.
#[derive(Debug, Clone, Default)]
struct Slot {
    /// The sequence.
    i: usize,
    chain: ChainWorkspace,
    theta: Vec<f64>,
    /// `nu`, then `delta = nu - mu`: nodes (`T x K`) and edges (`(T-1) x K x K`).
    dn: Vec<f64>,
    de: Vec<f64>,
    /// Per-position logs of `nu` (certificate only).
    la: Vec<f64>,
    lb: Vec<f64>,
    lnode: Vec<f64>,
    /// Emission part of `v` on the sequence's active attributes (`|active| x K`).
    v_em: Vec<f64>,
    /// `[bias | start | end | transition]` part of `v`.
    v_rest: Vec<f64>,
    /// Block gap at the oracle's weights (clamped at 0).
    gap: f64,
    /// `<w, v>` at the oracle's weights; `||v||^2`.
    wv: f64,
    vv: f64,
    /// `H~(mu_i)` when the oracle ran, and `H~(nu_i) = log Z - E_nu s(y)` (the line search's
    /// start).
    h_old: f64,
    h_one: f64,
    /// Line-search evaluations made with the oracle.
    memo: Memo,
    /// A step `(sequence, gamma)` whose move of `mu` (by `gamma delta`) is still to be made (the
    /// parallel solver defers it to the slot's next oracle).
    pending: Option<(usize, f64)>,
    /// `W` and its exponentials at the weights of the scores in `theta` (parallel solver).
    trans: Transitions,
    /// The weights a task's oracle reads, as the driver copied them when it released the task
    /// (parallel solver): the emission rows of the sequence's active attributes (`|active| x
    /// K`, in [`AttrIndex`] order) and `[bias | start | end | transition]`. The oracle's thread
    /// scores the tokens and exponentiates `W` from them, off the driver's serial path.
    w_em: Vec<f64>,
    w_rest: Vec<f64>,
}

impl Slot {
    fn ensure(&mut self, t_len: usize, k: usize, n_active: usize) {
        let (nn, ne) = (t_len * k, t_len.saturating_sub(1) * k * k);
        for v in [&mut self.theta, &mut self.dn, &mut self.la, &mut self.lb, &mut self.lnode] {
            if v.len() < nn {
                v.resize(nn, 0.0);
            }
        }
        if self.de.len() < ne {
            self.de.resize(ne, 0.0);
        }
        for v in [&mut self.v_em, &mut self.w_em] {
            if v.len() < n_active * k {
                v.resize(n_active * k, 0.0);
            }
        }
        if self.v_rest.len() != 3 * k + k * k {
            self.v_rest.resize(3 * k + k * k, 0.0);
        }
    }
}

/// Asks the CPU for the memory a step on `i` reads, all at once (no effect on results): the
/// emission rows of its attributes in `w`, its token rows, then the positions of its entries
/// among its attributes and its marginals `mu`, which the oracle reads after the
/// forward-backward. Every one is at a random place in arrays larger than
/// the caches (on CoNLL NER, 9.5 MB of weights and 130 MB of marginals), and the loops that read
/// them would otherwise wait on memory a few lines at a time.
fn prefetch_step<D: TokenRows>(ctx: &Ctx<'_, '_, D>, w: &[f64], mu: (&[f64], &[f64]), i: usize) {
    prefetch_scores(ctx, w, i);
    prefetch_block(ctx, mu, i);
}

/// The first part of [`prefetch_step`]: what the unary scores of `i` read (its emission rows in
/// `w` and its token rows).
fn prefetch_scores<D: TokenRows>(ctx: &Ctx<'_, '_, D>, w: &[f64], i: usize) {
    prefetch_rows(ctx, w, i);
    prefetch_tokens(ctx, i);
}

/// The emission rows of `i`'s attributes in `w`. The parallel solver's driver asks for them
/// before it copies them for a task: on its serial path, the reads of a task's weights took 15%
/// of a 2-thread CoNLL NER run's samples, more than the driver's share of the oracles.
fn prefetch_rows<D: TokenRows>(ctx: &Ctx<'_, '_, D>, w: &[f64], i: usize) {
    let k = ctx.lay.k;
    for &a in ctx.index.active(i) {
        let row = w.as_ptr().wrapping_add(a as usize * k);
        prefetch(row);
        prefetch(row.wrapping_add(k - 1));
    }
}

/// The token rows of `i`.
fn prefetch_tokens<D: TokenRows>(ctx: &Ctx<'_, '_, D>, i: usize) {
    for row in ctx.problem.sequence(i) {
        ctx.problem.x().prefetch_row(row);
    }
}

/// The second part of [`prefetch_step`]: the entry positions and the marginals `mu` of `i`.
fn prefetch_block<D: TokenRows>(ctx: &Ctx<'_, '_, D>, (mu_n, mu_e): (&[f64], &[f64]), i: usize) {
    let local = ctx.index.local(i);
    for line in local.chunks(16) {
        prefetch(line.as_ptr());
    }
    if let Some(last) = local.last() {
        prefetch(last);
    }
    for m in [mu_n, mu_e] {
        for line in m.chunks(8) {
            prefetch(line.as_ptr());
        }
        if let Some(last) = m.last() {
            prefetch(last);
        }
    }
}

/// The unary scores of `s.i` at the weights `w`, into `s.theta` (the oracle's only read of `w`).
fn theta_of<D: TokenRows>(ctx: &Ctx<'_, '_, D>, w: &[f64], s: &mut Slot) {
    let (k, p) = (ctx.lay.k, ctx.problem);
    let rows = p.sequence(s.i);
    let t_len = rows.len();
    s.ensure(t_len, k, ctx.index.active(s.i).len());
    scores(p.x(), rows, w, ctx.lay, &mut s.theta[..t_len * k]);
}

/// Copies the weights the oracle of `s.i` reads into `s.w_em` and `s.w_rest` (the parallel
/// solver's driver, when it releases a task): `|active| x K` numbers plus the `3K + K^2` of the
/// biases and transitions, against `nnz x K` multiply-adds to score the tokens.
fn copy_weights<D: TokenRows>(ctx: &Ctx<'_, '_, D>, w: &[f64], s: &mut Slot) {
    let (k, lay) = (ctx.lay.k, ctx.lay);
    let act = ctx.index.active(s.i);
    s.ensure(ctx.problem.sequence(s.i).len(), k, act.len());
    for (dst, &a) in s.w_em.chunks_exact_mut(k).zip(act) {
        let a = a as usize;
        dst.copy_from_slice(&w[a * k..(a + 1) * k]);
    }
    s.w_rest.clear();
    s.w_rest.extend_from_slice(&w[lay.bias()..]);
}

/// The unary scores of `s.i` from the weights copied into the slot ([`copy_weights`]): the
/// bits of [`theta_of`] at the weights they were copied from.
fn theta_of_copy<D: TokenRows>(ctx: &Ctx<'_, '_, D>, s: &mut Slot) {
    let (k, p) = (ctx.lay.k, ctx.problem);
    let rows = p.sequence(s.i);
    let t_len = rows.len();
    let n_act = ctx.index.active(s.i).len();
    s.ensure(t_len, k, n_act);
    let b = &s.w_rest[..3 * k];
    let bias = (&b[..k], &b[k..2 * k], &b[2 * k..]);
    let em = &s.w_em[..n_act * k];
    unary_scores_local(p.x(), rows, ctx.index.local(s.i), em, bias, k, &mut s.theta[..t_len * k]);
}

/// The oracle of `s.i` at the weights `w` (transitions exponentiated in `trans`): fills `delta`,
/// `v`, the block gap and the scalars of the line search.
fn oracle<D: TokenRows>(
    ctx: &Ctx<'_, '_, D>,
    w: &[f64],
    trans: &Transitions,
    mu: (&[f64], &[f64]),
    h_old: f64,
    s: &mut Slot,
) {
    theta_of(ctx, w, s);
    oracle_scored(ctx, trans, mu, h_old, s);
}

crate::simd::kernel! {
    /// [`oracle`] from the scores already in `s.theta` (`mu` is the block of `s.i`). `<w, v>` comes
    /// from the scores, `-(1/(lambda n)) (sum_t <delta_t, theta_t> + sum_t <delta_{t,t+1}, W>)`
    /// (`theta` is `w` applied to the features), so the weights are not read again.
    fn oracle_scored<D: TokenRows>(
        ctx: &Ctx<'_, '_, D>,
        trans: &Transitions,
        mu: (&[f64], &[f64]),
        h_old: f64,
        s: &mut Slot,
    ) as oracle_scored_portable {
        let (mu_n, mu_e) = mu;
        let (k, p) = (ctx.lay.k, ctx.problem);
        let i = s.i;
        let rows = p.sequence(i);
        let t_len = rows.len();
        let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
        let loc = ctx.index.local(i);
        let n_act = ctx.index.active(i).len();
        s.ensure(t_len, k, n_act);
        let theta = &s.theta[..nn];
        let (dn, de) = (&mut s.dn[..nn], &mut s.de[..ne]);
        let log_z = s.chain.marginals(theta, trans, k, dn, de, None);
        let wt = trans.scores();
        let v_rest = &mut s.v_rest;
        v_rest.fill(0.0);
        // One pass per position: <mu, theta> and <mu, W> for the gap, <nu, theta> and <nu, W> for
        // H~(nu), delta in place, <delta, theta> and <delta, W> for <w, v>, the dense part of v
        // (scaled by -1/(lambda n) at the end).
        let (mut lin, mut lin_nu, mut dot) = (Sum::default(), Sum::default(), Sum::default());
        for t in 0..t_len {
            let (th, mn) = (&theta[t * k..(t + 1) * k], &mu_n[t * k..(t + 1) * k]);
            let d = &mut dn[t * k..(t + 1) * k];
            let [mut local, mut local_nu, mut local_dot] = clique_terms(mn, th, d, &mut v_rest[..k]);
            if t == 0 {
                v_rest[k..2 * k].iter_mut().zip(d.iter()).for_each(|(v, x)| *v += x);
            }
            if t + 1 == t_len {
                v_rest[2 * k..3 * k].iter_mut().zip(d.iter()).for_each(|(v, x)| *v += x);
            }
            if t + 1 < t_len {
                let me = &mu_e[t * k * k..(t + 1) * k * k];
                let d = &mut de[t * k * k..(t + 1) * k * k];
                let [e_mu, e_nu, e_delta] = clique_terms(me, wt, d, &mut v_rest[3 * k..]);
                local += e_mu;
                local_nu += e_nu;
                local_dot += e_delta;
            }
            lin.add(local);
            lin_nu.add(local_nu);
            dot.add(local_dot);
        }
        s.h_one = log_z - lin_nu.get();
        let gap = log_z - lin.get() - h_old;
        s.gap = if gap > 0.0 { gap } else { 0.0 };
        let c = -1.0 / ctx.lam_n;
        let v_em = &mut s.v_em[..n_act * k];
        v_em.fill(0.0);
        let mut e = 0;
        for (t, row) in rows.enumerate() {
            let d = &dn[t * k..(t + 1) * k];
            p.x().for_each_entry(row, |_, xv| {
                let q = loc[e] as usize * k;
                e += 1;
                for (o, &dk) in v_em[q..q + k].iter_mut().zip(d) {
                    *o += xv * dk;
                }
            });
        }
        s.wv = c * dot.get();
        s.vv = scale_sq_norm(v_em, c) + scale_sq_norm(v_rest, c);
        s.h_old = h_old;
        s.memo.clear();
    }
}

/// Lanes of the sums over a clique's cells: independent accumulators, so the loops vectorise
/// and do not wait on one chain of additions.
const LANES: usize = 4;

crate::simd::kernel! {
/// One clique block of a step (a node's `K` cells or an edge's `K^2`): turns the oracle's
/// marginals `nu` in `d` into `delta = nu - mu` in place, adds `delta` to the direction's
/// block `v`, and returns `[<mu, s>, <nu, s>, <delta, s>]` for the scores `s`, each summed in
/// [`LANES`] lanes added as `(l0 + l1) + (l2 + l3)`. With AVX2, `clique_avx2` makes the same
/// operations on whole lanes (the compiler turned these loops into two-wide and scalar code).
#[inline]
fn clique_terms(mu: &[f64], s: &[f64], d: &mut [f64], v: &mut [f64]) -> [f64; 3] as clique_terms_portable {
    let n = mu.len();
    debug_assert!(s.len() == n && d.len() == n && v.len() == n);
    let (mut a0, mut a1, mut a2) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
    let body = n - n % LANES;
    for (((m, sc), d), v) in mu[..body]
        .chunks_exact(LANES)
        .zip(s[..body].chunks_exact(LANES))
        .zip(d[..body].chunks_exact_mut(LANES))
        .zip(v[..body].chunks_exact_mut(LANES))
    {
        let m: &[f64; LANES] = m.try_into().unwrap_or(&[0.0; LANES]);
        let sc: &[f64; LANES] = sc.try_into().unwrap_or(&[0.0; LANES]);
        let mut nu = [0.0; LANES];
        nu.copy_from_slice(d);
        let mut dd = [0.0; LANES];
        for l in 0..LANES {
            a0[l] += m[l] * sc[l];
            a1[l] += nu[l] * sc[l];
            dd[l] = nu[l] - m[l];
            a2[l] += dd[l] * sc[l];
        }
        d.copy_from_slice(&dd);
        for l in 0..LANES {
            v[l] += dd[l];
        }
    }
    clique_tail(mu, s, d, v, body..n, [a0, a1, a2])
} avx2: clique_avx2::clique_terms
}

/// The end of [`clique_terms`] shared by its portable and AVX2 bodies: the cells `tail` (fewer
/// than [`LANES`]) added to the first lanes of the sums `acc`, then each sum's lanes added as
/// `(l0 + l1) + (l2 + l3)`.
#[inline(always)]
fn clique_tail(
    mu: &[f64],
    s: &[f64],
    d: &mut [f64],
    v: &mut [f64],
    tail: std::ops::Range<usize>,
    mut acc: [[f64; LANES]; 3],
) -> [f64; 3] {
    for (l, j) in tail.enumerate() {
        acc[0][l] += mu[j] * s[j];
        acc[1][l] += d[j] * s[j];
        d[j] -= mu[j];
        acc[2][l] += d[j] * s[j];
        v[j] += d[j];
    }
    acc.map(|a| (a[0] + a[1]) + (a[2] + a[3]))
}

#[cfg(target_arch = "x86_64")]
mod clique_avx2 {
    //! [`super::clique_terms`] with AVX2 intrinsics: the portable body's operations, lane for
    //! lane and in the same order (the same bits).
    use std::arch::x86_64::*;

    use super::LANES;

    /// Safe to call with AVX2 for any lengths (the shortest slice bounds the loop).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn clique_terms(mu: &[f64], s: &[f64], d: &mut [f64], v: &mut [f64]) -> [f64; 3] {
        let n = mu.len().min(s.len()).min(d.len()).min(v.len());
        let body = n - n % LANES;
        let (mut a0, mut a1, mut a2) = (_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd());
        let mut j = 0;
        while j < body {
            let m = _mm256_loadu_pd(mu.as_ptr().add(j));
            let sc = _mm256_loadu_pd(s.as_ptr().add(j));
            let nu = _mm256_loadu_pd(d.as_ptr().add(j));
            a0 = _mm256_add_pd(a0, _mm256_mul_pd(m, sc));
            a1 = _mm256_add_pd(a1, _mm256_mul_pd(nu, sc));
            let dd = _mm256_sub_pd(nu, m);
            a2 = _mm256_add_pd(a2, _mm256_mul_pd(dd, sc));
            _mm256_storeu_pd(d.as_mut_ptr().add(j), dd);
            let vj = v.as_mut_ptr().add(j);
            _mm256_storeu_pd(vj, _mm256_add_pd(_mm256_loadu_pd(vj), dd));
            j += LANES;
        }
        let (mut b0, mut b1, mut b2) = ([0.0; LANES], [0.0; LANES], [0.0; LANES]);
        _mm256_storeu_pd(b0.as_mut_ptr(), a0);
        _mm256_storeu_pd(b1.as_mut_ptr(), a1);
        _mm256_storeu_pd(b2.as_mut_ptr(), a2);
        super::clique_tail(mu, s, d, v, body..n, [b0, b1, b2])
    }
}

/// Scales `x` by `c` in place and returns `||c x||^2`, summed in [`LANES`] lanes.
#[inline(always)]
fn scale_sq_norm(x: &mut [f64], c: f64) -> f64 {
    let mut acc = [0.0; LANES];
    let mut chunks = x.chunks_exact_mut(LANES);
    for ch in &mut chunks {
        for l in 0..LANES {
            ch[l] *= c;
            acc[l] += ch[l] * ch[l];
        }
    }
    for (l, xj) in chunks.into_remainder().iter_mut().enumerate() {
        *xj *= c;
        acc[l] += *xj * *xj;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

crate::simd::kernel! {
    /// `<w, v>` for a direction `v` on the attributes `act` (rows of `K` in `v_em`, as
    /// [`AttrIndex`] lists them) and `v_rest` on `[bias | start | end | transition]`. Four
    /// running sums: one would chain every product through the adder's latency, and in a
    /// parallel fit this product is on the driver's serial path. Each row adds its last `len mod
    /// 4` products to the first lanes, then its groups of four lane by lane; the lanes are added
    /// as `(l0 + l1) + (l2 + l3)`. `rows_avx2::direction_dot` makes the same operations on whole
    /// registers (the remainder by a masked load), so both give the same bits.
    #[inline]
    fn direction_dot(w: &[f64], lay: Layout, act: &[u32], v_em: &[f64], v_rest: &[f64]) -> f64
        as direction_dot_portable
    {
        let k = lay.k;
        let mut acc = [0.0; LANES];
        let mut add = |w: &[f64], v: &[f64]| {
            let (wc, vc) = (w.chunks_exact(LANES), v.chunks_exact(LANES));
            for (l, (wj, vj)) in wc.remainder().iter().zip(vc.remainder()).enumerate() {
                acc[l] += wj * vj;
            }
            for (wq, vq) in wc.zip(vc) {
                for ((a, wj), vj) in acc.iter_mut().zip(wq).zip(vq) {
                    *a += wj * vj;
                }
            }
        };
        for (q, &a) in act.iter().enumerate() {
            let a = a as usize;
            add(&w[a * k..(a + 1) * k], &v_em[q * k..(q + 1) * k]);
        }
        add(&w[lay.bias()..], v_rest);
        (acc[0] + acc[1]) + (acc[2] + acc[3])
    } avx2: rows_avx2::direction_dot
}

crate::simd::kernel! {
    /// `w <- w + gamma v` for a direction `v` laid out as in [`direction_dot`]: the rows of the
    /// attributes `act`, then the dense rest. One rounding per entry (`gamma * v`, then the sum),
    /// so `rows_avx2::add_rows`, four entries at a time, gives the same bits.
    #[inline]
    fn add_rows(w: &mut [f64], lay: Layout, act: &[u32], v_em: &[f64], v_rest: &[f64], gamma: f64)
        as add_rows_portable
    {
        let k = lay.k;
        for (q, &a) in act.iter().enumerate() {
            let a = a as usize;
            for (wj, vj) in w[a * k..(a + 1) * k].iter_mut().zip(&v_em[q * k..(q + 1) * k]) {
                *wj += gamma * vj;
            }
        }
        for (wj, vj) in w[lay.bias()..].iter_mut().zip(v_rest) {
            *wj += gamma * vj;
        }
    } avx2: rows_avx2::add_rows
}

#[cfg(target_arch = "x86_64")]
mod rows_avx2 {
    //! [`super::direction_dot`] and [`super::add_rows`] with AVX2 intrinsics: the portable
    //! bodies' operations, lane for lane and in the same order (the same bits). A row's last
    //! `len mod 4` entries go through masked loads and stores, which touch no memory in the
    //! masked lanes; the dot product adds `0 * 0 = +0` to the masked lanes, which leaves them
    //! unchanged (a lane that starts at `+0` never holds `-0`: in round-to-nearest a sum is `-0`
    //! only when both terms are).
    use std::arch::x86_64::*;

    use super::{Layout, LANES};

    /// The mask of the first `r` lanes (`r < 4`).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn first_lanes(r: usize) -> __m256i {
        const MASKS: [[i64; LANES]; LANES] = [[0, 0, 0, 0], [-1, 0, 0, 0], [-1, -1, 0, 0], [-1, -1, -1, 0]];
        _mm256_loadu_si256(MASKS[r].as_ptr().cast())
    }

    /// `acc += w * v` on one row: its last `len mod 4` products in the first lanes, then its
    /// groups of four.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn dot_row(acc: __m256d, mask: __m256i, w: &[f64], v: &[f64]) -> __m256d {
        let n = w.len().min(v.len());
        let body = n - n % LANES;
        let (wp, vp) = (w.as_ptr(), v.as_ptr());
        let mut acc = acc;
        if body < n {
            let wr = _mm256_maskload_pd(wp.add(body), mask);
            acc = _mm256_add_pd(acc, _mm256_mul_pd(wr, _mm256_maskload_pd(vp.add(body), mask)));
        }
        let mut j = 0;
        while j < body {
            acc = _mm256_add_pd(acc, _mm256_mul_pd(_mm256_loadu_pd(wp.add(j)), _mm256_loadu_pd(vp.add(j))));
            j += LANES;
        }
        acc
    }

    /// `w += gamma v` on one row.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn add_row(w: &mut [f64], mask: __m256i, v: &[f64], gamma: __m256d) {
        let n = w.len().min(v.len());
        let body = n - n % LANES;
        let (wp, vp) = (w.as_mut_ptr(), v.as_ptr());
        let mut j = 0;
        while j < body {
            let sum =
                _mm256_add_pd(_mm256_loadu_pd(wp.add(j)), _mm256_mul_pd(gamma, _mm256_loadu_pd(vp.add(j))));
            _mm256_storeu_pd(wp.add(j), sum);
            j += LANES;
        }
        if body < n {
            let wr = _mm256_maskload_pd(wp.add(body), mask);
            let sum = _mm256_add_pd(wr, _mm256_mul_pd(gamma, _mm256_maskload_pd(vp.add(body), mask)));
            _mm256_maskstore_pd(wp.add(body), mask, sum);
        }
    }

    /// Safe to call with AVX2 (slices are bounds-checked as in the portable body).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn direction_dot(
        w: &[f64],
        lay: Layout,
        act: &[u32],
        v_em: &[f64],
        v_rest: &[f64],
    ) -> f64 {
        let k = lay.k;
        let mask = first_lanes(k % LANES);
        let mut acc = _mm256_setzero_pd();
        for (q, &a) in act.iter().enumerate() {
            let a = a as usize;
            acc = dot_row(acc, mask, &w[a * k..(a + 1) * k], &v_em[q * k..(q + 1) * k]);
        }
        let rest = &w[lay.bias()..];
        let len = rest.len().min(v_rest.len());
        acc = dot_row(acc, first_lanes(len % LANES), &rest[..len], &v_rest[..len]);
        let mut l = [0.0; LANES];
        _mm256_storeu_pd(l.as_mut_ptr(), acc);
        (l[0] + l[1]) + (l[2] + l[3])
    }

    /// Safe to call with AVX2 (slices are bounds-checked as in the portable body).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn add_rows(
        w: &mut [f64],
        lay: Layout,
        act: &[u32],
        v_em: &[f64],
        v_rest: &[f64],
        gamma: f64,
    ) {
        let k = lay.k;
        let mask = first_lanes(k % LANES);
        let g = _mm256_set1_pd(gamma);
        for (q, &a) in act.iter().enumerate() {
            let a = a as usize;
            add_row(&mut w[a * k..(a + 1) * k], mask, &v_em[q * k..(q + 1) * k], g);
        }
        let rest = &mut w[lay.bias()..];
        let len = rest.len().min(v_rest.len());
        add_row(&mut rest[..len], first_lanes(len % LANES), &v_rest[..len], g);
    }
}

crate::simd::kernel! {
    /// `mu <- mu + gamma delta` for the block of slot `s` (entries kept `>= 0`).
    fn move_marginals(mu: (&mut [f64], &mut [f64]), s: &Slot, gamma: f64) as move_marginals_portable {
        let (mu_n, mu_e) = mu;
        for (m, d) in mu_n.iter_mut().zip(&s.dn) {
            *m = (*m + gamma * d).max(0.0);
        }
        for (m, d) in mu_e.iter_mut().zip(&s.de) {
            *m = (*m + gamma * d).max(0.0);
        }
    }
}

/// The line search of an oracle at the weights it saw (parallel pre-search): fills the memo.
fn pre_search<D: TokenRows>(ctx: &Ctx<'_, '_, D>, mu: (&[f64], &[f64]), s: &mut Slot) -> u32 {
    if s.gap <= 0.0 {
        return 0;
    }
    let k = ctx.lay.k;
    let t_len = mu.0.len() / k;
    let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
    let line = BlockLine { t_len, k, mu, delta: (&s.dn[..nn], &s.de[..ne]) };
    let sc = Scalars { lin: ctx.lam_n * s.wv, quad: ctx.lam_n * s.vv, stale: 0.0 };
    let start = sc.start(s.h_old, s.h_one);
    search(|g| line.eval(g), &sc, &mut s.memo, s.h_old, ctx.line_tol, start, u32::MAX).evals
}

/// A certificate chunk's partial sums and its sequences' `(block gap, entropy)`.
type ChunkResult = (Part, Vec<(f64, f64)>);

/// One sequence's share of a certificate.
#[derive(Debug, Clone, Copy, Default)]
struct Part {
    nll: Sum,
    gap: Sum,
    ent: Sum,
    scale: Sum,
}

/// Certificate terms of sequence `s.i` at `w`: `(log Z - s(y), |log Z| + |s(y)|, KL~, H~)`.
///
/// `full`: the divergence as a sum of `mu (log mu - log nu)` terms and the entropy recomputed
/// (one `log` per lattice cell, accurate for gaps near rounding); otherwise (the checks during a
/// run) `KL~ = log Z - <mu, theta> - <mu, W> - H~` with `H~ = h` as kept by the steps, which is the
/// same number without a `log` per cell, its rounding a few ulps of `log Z`.
fn certify_one<D: TokenRows>(
    ctx: &Ctx<'_, '_, D>,
    (w, trans, mu): (&[f64], &Transitions, &Marginals),
    h: f64,
    full: bool,
    s: &mut Slot,
) -> (f64, f64, f64, f64) {
    let (k, lay, p) = (ctx.lay.k, ctx.lay, ctx.problem);
    let rows = p.sequence(s.i);
    let t_len = rows.len();
    let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
    s.ensure(t_len, k, 0);
    let y = &p.y()[rows.clone()];
    let theta = &mut s.theta[..nn];
    scores(p.x(), rows, w, lay, theta);
    let logs = LogFactors { la: &mut s.la[..nn], lb: &mut s.lb[..nn], lnode: &mut s.lnode[..nn] };
    let log_z = s.chain.marginals(theta, trans, k, &mut s.dn[..nn], &mut s.de[..ne], full.then_some(logs));
    let wt = trans.scores();
    let mut truth = Sum::default();
    for (t, &l) in y.iter().enumerate() {
        let mut local = theta[t * k + l as usize];
        if t + 1 < t_len {
            local += wt[l as usize * k + y[t + 1] as usize];
        }
        truth.add(local);
    }
    let truth = truth.get();
    if !full {
        let (mu_n, mu_e) = mu.block(s.i);
        let mut lin = Sum::default();
        for t in 0..t_len {
            let mut local: f64 =
                mu_n[t * k..(t + 1) * k].iter().zip(&theta[t * k..(t + 1) * k]).map(|(m, x)| m * x).sum();
            if t + 1 < t_len {
                local += mu_e[t * k * k..(t + 1) * k * k].iter().zip(wt).map(|(m, x)| m * x).sum::<f64>();
            }
            lin.add(local);
        }
        let gap = log_z - lin.get() - h;
        return (log_z - truth, log_z.abs() + truth.abs(), gap.max(0.0), h);
    }
    // log nu on the edges, in place of nu.
    let (la, lb) = (&s.la[..nn], &s.lb[..nn]);
    for (t, block) in s.de[..ne].chunks_exact_mut(k * k).enumerate() {
        for (j, row) in block.chunks_exact_mut(k).enumerate() {
            let a = la[t * k + j];
            for ((o, &w), &b) in
                row.iter_mut().zip(&wt[j * k..(j + 1) * k]).zip(&lb[(t + 1) * k..(t + 2) * k])
            {
                *o = a + w + b;
            }
        }
    }
    let (h, gap) = chain_entropy_kl(t_len, k, mu.block(s.i), (&s.lnode[..nn], &s.de[..ne]));
    (log_z - truth, log_z.abs() + truth.abs(), gap.max(0.0), h)
}

/// A part of `w^(mu)` ([`State::w_hat_into`]): the emission rows of the attributes from the
/// given one on (as many as its output holds), the `[bias | start | end]` block, or the
/// transition cells from the given one on.
#[derive(Clone, Copy)]
enum WHatPart {
    Emission(usize),
    Biases,
    Transitions(usize),
}

/// Adds one part of `sum_i sum_C (F_C(y_i,C) - F_C(y_C)) mu_i,C(y_C)` into `out` (zeroed here),
/// sequence by sequence in order.
fn w_hat_part<D: TokenRows>(
    p: &CrfProblem<'_, D>,
    mu: &Marginals,
    k: usize,
    part: WHatPart,
    out: &mut [f64],
) {
    out.fill(0.0);
    let y = p.y();
    let mut r = vec![0.0; k];
    for i in 0..p.n_sequences() {
        let rows = p.sequence(i);
        let (t_len, first) = (rows.len(), rows.start);
        let (node, edge) = mu.block(i);
        match part {
            WHatPart::Emission(a0) => {
                let a1 = a0 + out.len() / k.max(1);
                for (t, row) in rows.enumerate() {
                    one_hot_minus(&mut r, &node[t * k..(t + 1) * k], y[row] as usize);
                    p.x().for_each_entry(row, |a, xv| {
                        if (a0..a1).contains(&a) {
                            for (o, &rv) in out[(a - a0) * k..(a - a0 + 1) * k].iter_mut().zip(&r) {
                                *o += xv * rv;
                            }
                        }
                    });
                }
            }
            WHatPart::Biases => {
                for (t, row) in rows.enumerate() {
                    one_hot_minus(&mut r, &node[t * k..(t + 1) * k], y[row] as usize);
                    for (kk, &rv) in r.iter().enumerate() {
                        out[kk] += rv;
                        if t == 0 {
                            out[k + kk] += rv;
                        }
                        if t + 1 == t_len {
                            out[2 * k + kk] += rv;
                        }
                    }
                }
            }
            WHatPart::Transitions(j0) => {
                for (t, block) in edge.chunks_exact(k * k).enumerate() {
                    let truth = y[first + t] as usize * k + y[first + t + 1] as usize;
                    // `o + (1 - m)` at the true pair, `o - m` (the same bits as `o + (-m)`)
                    // elsewhere: two straight loops around the true cell.
                    let block = &block[j0..j0 + out.len()];
                    let split = truth.saturating_sub(j0).min(out.len());
                    let (lo, hi) = out.split_at_mut(split);
                    for (o, &m) in lo.iter_mut().zip(&block[..split]) {
                        *o -= m;
                    }
                    let mut rest = hi.iter_mut().zip(&block[split..]);
                    if truth >= j0 {
                        if let Some((o, &m)) = rest.next() {
                            *o += 1.0 - m;
                        }
                    }
                    for (o, &m) in rest {
                        *o -= m;
                    }
                }
            }
        }
    }
}

/// `r = e_y - mu_t`: the true label's one-hot minus the node marginals of a token.
#[inline]
fn one_hot_minus(r: &mut [f64], node: &[f64], yt: usize) {
    for (kk, (rv, &m)) in r.iter_mut().zip(node).enumerate() {
        *rv = if kk == yt { 1.0 - m } else { -m };
    }
}

/// Where the parallel work runs: `threads` workers on `pool`, or on rayon's current pool.
#[derive(Clone, Copy)]
struct Exec<'a> {
    threads: usize,
    pool: Option<&'a rayon::ThreadPool>,
}

impl Exec<'_> {
    fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }

    /// Runs `main` on the calling thread with `helpers` copies of `help` on the pool, and
    /// returns when all have finished.
    fn with_helpers<'h, R>(
        &self,
        helpers: usize,
        help: &'h (dyn Fn() + Sync + 'h),
        main: impl FnOnce() -> R,
    ) -> R {
        let go = |scope: &rayon::Scope<'h>| {
            for _ in 0..helpers {
                scope.spawn(|_| help());
            }
            main()
        };
        match self.pool {
            Some(p) => p.in_place_scope(go),
            None => rayon::in_place_scope(go),
        }
    }
}

/// What a step changes besides `w` and `mu`; in a parallel fit, the driver's alone.
#[derive(Clone)]
struct Books {
    /// `H~(mu_i)` and its sum.
    entropy: Vec<f64>,
    entropy_sum: f64,
    /// `||w||^2`, maintained as `||w + g v||^2 = ||w||^2 + 2 g <w,v> + g^2 ||v||^2`.
    wn2: f64,
    sampler: GapSampler,
    line_searches: u64,
    line_evals: u64,
}

/// Takes the step of slot `s` at the weights `w`: stores its block gap, finishes its line search
/// and moves `w` (not `mu`: the caller does, now or later). `fresh`: the oracle saw `w`, and the
/// search may evaluate new points on `mu` (the block of `s.i`); otherwise it takes the best point
/// its parallel pre-search evaluated, re-scored at `w` (measured on CoNLL NER: the same number
/// of epochs as finishing the search serially). Returns `(gamma, n (D_new - D_old))`, `gamma =
/// 0` when the block stays.
fn apply_step<D: TokenRows>(
    ctx: &Ctx<'_, '_, D>,
    w: &mut [f64],
    books: &mut Books,
    s: &mut Slot,
    mu: (&[f64], &[f64]),
    fresh: bool,
) -> (f64, f64) {
    let (k, lay) = (ctx.lay.k, ctx.lay);
    let i = s.i;
    books.sampler.set_gap(i, s.gap);
    if s.gap <= 0.0 {
        return (0.0, 0.0);
    }
    let act = ctx.index.active(i);
    let wv = if fresh { s.wv } else { direction_dot(w, lay, act, &s.v_em[..act.len() * k], &s.v_rest) };
    let lam_n = ctx.lam_n;
    let sc = Scalars { lin: lam_n * wv, quad: lam_n * s.vv, stale: lam_n * (wv - s.wv) };
    let t_len = mu.0.len() / k;
    let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
    let known = s.memo.len();
    let step = {
        let line = BlockLine { t_len, k, mu, delta: (&s.dn[..nn], &s.de[..ne]) };
        let budget = if fresh { u32::MAX } else { 0 };
        let start = sc.start(s.h_old, s.h_one);
        search(|g| line.eval(g), &sc, &mut s.memo, s.h_old, ctx.line_tol, start, budget)
    };
    let evals = known as u64 + u64::from(step.evals);
    if evals > 0 {
        books.line_searches += 1;
        books.line_evals += evals;
    }
    let Some(r) = step.point else {
        return (0.0, 0.0);
    };
    let gain = sc.gain(&r, s.h_old);
    move_weights(ctx, w, books, s, &r, wv);
    (r.gamma, gain)
}

/// `w <- w + gamma v` for the evaluated point `r` of slot `s`'s line (`wv = <w, v>` before the
/// move), with the books (`||w||^2`, the block's entropy and step size).
fn move_weights<D: TokenRows>(
    ctx: &Ctx<'_, '_, D>,
    w: &mut [f64],
    books: &mut Books,
    s: &Slot,
    r: &Raw,
    wv: f64,
) {
    let (k, i) = (ctx.lay.k, s.i);
    let act = ctx.index.active(i);
    let gamma = r.gamma;
    add_rows(w, ctx.lay, act, &s.v_em[..act.len() * k], &s.v_rest, gamma);
    books.wn2 += gamma * (2.0 * wv + gamma * s.vv);
    books.entropy_sum += r.entropy - books.entropy[i];
    books.entropy[i] = r.entropy;
}

/// Stages of a pipeline slot's task, kept with the task's number as `4 q + stage`: released
/// (its weights copied by the driver after step `q - L`), done (oracle and pre-search made).
const RELEASED: u64 = 1;
const DONE: u64 = 2;

/// What the threads of a pipeline share (see [`State::pipeline`]). Task `q` lives in slot
/// `q % L`; `claim` is the next task a thread may take for its oracle.
struct Pipe<'m> {
    slots: Vec<Mutex<Slot>>,
    stage: Vec<AtomicU64>,
    claim: AtomicU64,
    /// Tasks released so far.
    released: AtomicU64,
    /// Set when no task will be released any more.
    stop: AtomicBool,
    mu: SharedBlocks<'m>,
}

impl Pipe<'_> {
    fn at(&self, q: u64) -> (&Mutex<Slot>, &AtomicU64) {
        let j = (q % self.slots.len() as u64) as usize;
        (&self.slots[j], &self.stage[j])
    }

    /// Task `q`'s oracle: first the slot's pending move of `mu` (its previous task's step), then
    /// the oracle at the weights the driver copied into the slot (the tokens scored and the
    /// transitions exponentiated here, off the driver's serial path), then the pre-search.
    fn oracle<D: TokenRows>(&self, ctx: &Ctx<'_, '_, D>, q: u64) {
        let (slot, stage) = self.at(q);
        {
            let mut guard = slot.lock().unwrap_or_else(PoisonError::into_inner);
            let s = &mut *guard;
            if let Some((j, gamma)) = s.pending.take() {
                // SAFETY: the pipeline's schedule (`State::pipeline`): sequence `j` was last
                // stepped by task `q - L`, and no task in flight shares it.
                move_marginals(unsafe { self.mu.block_mut(j) }, s, gamma);
            }
            // SAFETY: as above, for task `q`'s own sequence: only this task reads or writes it.
            let mu = unsafe { self.mu.block(s.i) };
            prefetch_tokens(ctx, s.i);
            prefetch_block(ctx, mu, s.i);
            theta_of_copy(ctx, s);
            let mut trans = std::mem::take(&mut s.trans);
            trans.set(&s.w_rest[3 * ctx.lay.k..]);
            oracle_scored(ctx, &trans, mu, s.h_old, s);
            s.trans = trans;
            pre_search(ctx, mu, s);
        }
        stage.store(4 * q + DONE, Ordering::Release);
    }

    /// Runs the oracles of released tasks as they come; returns once the pipeline has stopped
    /// and every released task is claimed. A thread claims only released tasks, so no task waits
    /// on a thread that is busy elsewhere.
    fn work<D: TokenRows>(&self, ctx: &Ctx<'_, '_, D>) {
        let mut idle = 0;
        loop {
            if self.help_one(ctx) {
                idle = 0;
            } else if self.stop.load(Ordering::Acquire)
                && self.claim.load(Ordering::Acquire) >= self.released.load(Ordering::Acquire)
            {
                return;
            } else {
                backoff(&mut idle);
            }
        }
    }

    /// Runs the oracle of the next task on the calling thread if it is released and not claimed;
    /// `false` otherwise.
    fn help_one<D: TokenRows>(&self, ctx: &Ctx<'_, '_, D>) -> bool {
        let q = self.claim.load(Ordering::Acquire);
        if q >= self.released.load(Ordering::Acquire)
            || self.claim.compare_exchange(q, q + 1, Ordering::AcqRel, Ordering::Relaxed).is_err()
        {
            return false;
        }
        self.oracle(ctx, q);
        true
    }
}

/// Spins of [`backoff`] before it yields the core: a wait in the pipeline is mostly shorter than
/// an oracle (tens of microseconds), and a yield can hand the core away for a whole time slice.
/// With the blocks of parallel oracles this pipeline replaced, CoNLL NER epochs on 2 threads
/// took 0.204 s wall with 64 spins and 0.168 s with 64,000.
const SPINS: u32 = 1 << 14;

/// Waits a little: spins first (about [`SPINS`] pauses), then yields the core.
fn backoff(idle: &mut u32) {
    if *idle < SPINS {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
    *idle = idle.saturating_add(1);
}

/// `D = (1/n) sum_i H~(mu_i) - (lambda/2) ||w||^2` from the books' entropies and `||w||^2`.
fn dual_of(books: &Books, n: f64, lambda: f64) -> f64 {
    books.entropy_sum / n - 0.5 * lambda * books.wn2
}

/// Whether the running estimate of the gap (the mean stored block gap) says `tol` may be met:
/// the trigger of an early check, asked by the driver after every step.
fn estimate_meets(books: &Books, n: f64, lambda: f64, tol: f64) -> bool {
    let estimate = books.sampler.total() / n;
    estimate <= tol * (dual_of(books, n, lambda) + estimate).max(f64::MIN_POSITIVE)
}

/// The solver state: dual marginals, the primal `w = w^(mu)`, and work buffers.
#[derive(Clone)]
struct State<'p, 'a, D: TokenRows> {
    ctx: Ctx<'p, 'a, D>,
    n: usize,
    lambda: f64,
    /// `[emission (A x K) | bias | start | end | transition]`.
    w: Vec<f64>,
    mu: Marginals,
    books: Books,
    /// `W` and `exp(W - max W)` at the current weights (refreshed per block).
    trans: Transitions,
    /// One per step in flight (one when single-threaded).
    slots: Vec<Slot>,
    w_work: Vec<f64>,
    /// `mean_i |log Z_i| + |s_i(y_i)|` at the last certificate: the scale of its rounding.
    score_scale: f64,
}

impl<'p, 'a, D: TokenRows> State<'p, 'a, D> {
    fn new(
        problem: &'p CrfProblem<'a, D>,
        cfg: &CrfConfig,
        lambda: f64,
        slots: usize,
        exec: Exec<'_>,
    ) -> Result<Self> {
        let (k, a, n) = (problem.n_labels(), problem.n_attributes(), problem.n_sequences());
        let lay = Layout { k, a };
        let (kf, eps) = (k as f64, INIT_SMOOTHING);
        let (node_on, node_off) = (1.0 - eps + eps / kf, eps / kf);
        let (edge_on, edge_off) = (1.0 - eps + eps / (kf * kf), eps / (kf * kf));
        let parallel = exec.threads > 1;
        let mut mu = exec.run(|| Marginals::filled(problem.starts(), k, (node_off, edge_off), parallel))?;
        let y = problem.y();
        let ids: Vec<usize> = (0..n).collect();
        let init = |(i, (node, edge)): (usize, (&mut [f64], &mut [f64]))| -> f64 {
            let labels = &y[problem.sequence(i)];
            for (t, &l) in labels.iter().enumerate() {
                node[t * k + l as usize] = node_on;
            }
            for (t, p) in labels.windows(2).enumerate() {
                edge[(t * k + p[0] as usize) * k + p[1] as usize] = edge_on;
            }
            chain_entropy(labels.len(), k, node, edge)
        };
        let blocks = mu.blocks_mut(&ids).into_iter().enumerate();
        let mut entropy = zeros(n)?;
        if parallel {
            let blocks: Vec<_> = blocks.collect();
            exec.run(|| blocks.into_par_iter().map(init).collect_into_vec(&mut entropy));
        } else {
            entropy.iter_mut().zip(blocks).for_each(|(h, b)| *h = init(b));
        }
        let index = AttrIndex::new(problem)?;
        let max_len = problem.max_len();
        let mut slot = Slot::default();
        slot.ensure(max_len, k, index.max_active);
        let entropy_sum = entropy.iter().sum();
        let mut state = Self {
            ctx: Ctx { problem, lay, lam_n: lambda * n as f64, line_tol: cfg.line_search_tol, index },
            n,
            lambda,
            w: zeros(lay.dim())?,
            mu,
            books: Books {
                entropy,
                entropy_sum,
                wn2: 0.0,
                sampler: GapSampler::new(
                    if cfg.sampling == CrfSampling::Gap { cfg.non_uniform } else { 0.0 },
                    n,
                ),
                line_searches: 0,
                line_evals: 0,
            },
            trans: Transitions::default(),
            slots: vec![slot; slots.max(1)],
            w_work: zeros(lay.dim())?,
            score_scale: 0.0,
        };
        state.resync(exec);
        Ok(state)
    }

    /// Recomputes `w = w^(mu)` and `||w||^2` from the marginals.
    fn resync(&mut self, exec: Exec<'_>) {
        let mut w = std::mem::take(&mut self.w_work);
        self.w_hat_into(&mut w, exec);
        self.w_work = std::mem::replace(&mut self.w, w);
        self.books.wn2 = self.w.iter().map(|v| v * v).sum();
    }

    /// `w^(mu) = (1/(lambda n)) sum_i sum_C sum_y_C (F_C(y_i,C) - F_C(y_C)) mu_i,C(y_C)`, with the
    /// one-hot minus marginal difference formed per clique (no cancellation of large sums).
    ///
    /// The output is cut into parts ([`WHatPart`]: ranges of attributes, the biases, ranges of
    /// transition cells) that run in parallel. Each part passes over every sequence but adds
    /// only to its own entries, in the order of the serial pass, so the result has the same
    /// bits on any number of threads. It is a pass over the data and the marginals, run at the
    /// start of a fit and at every full certificate: on one thread it was about a fifth of a
    /// one-epoch fit on CoNLL NER.
    fn w_hat_into(&self, out: &mut [f64], exec: Exec<'_>) {
        let lay = self.ctx.lay;
        let (k, t) = (lay.k, exec.threads.max(1));
        let (emission, rest) = out.split_at_mut(lay.bias());
        let (biases, trans) = rest.split_at_mut(3 * k);
        let mut parts: Vec<(WHatPart, &mut [f64])> = Vec::with_capacity(2 * t + 1);
        let attrs = lay.a.div_ceil(t).max(1);
        for (q, chunk) in emission.chunks_mut(attrs * k).enumerate() {
            parts.push((WHatPart::Emission(q * attrs), chunk));
        }
        parts.push((WHatPart::Biases, biases));
        let cells = (k * k).div_ceil(t).max(1);
        for (q, chunk) in trans.chunks_mut(cells).enumerate() {
            parts.push((WHatPart::Transitions(q * cells), chunk));
        }
        let scale = 1.0 / self.ctx.lam_n;
        let fill = |(part, out): (WHatPart, &mut [f64])| {
            w_hat_part(self.ctx.problem, &self.mu, k, part, out);
            out.iter_mut().for_each(|o| *o *= scale);
        };
        if t > 1 {
            exec.run(|| parts.into_par_iter().for_each(fill));
        } else {
            parts.into_iter().for_each(fill);
        }
    }

    /// One SDCA step on sequence `i` (single-threaded); returns `(gamma, block gap,
    /// n (D_new - D_old))`.
    fn step(&mut self, i: usize) -> (f64, f64, f64) {
        self.trans.set(&self.w[self.ctx.lay.trans()..]);
        let s = &mut self.slots[0];
        s.i = i;
        prefetch_step(&self.ctx, &self.w, self.mu.block(i), i);
        oracle(&self.ctx, &self.w, &self.trans, self.mu.block(i), self.books.entropy[i], s);
        let gap = s.gap;
        let (gamma, gain) = apply_step(&self.ctx, &mut self.w, &mut self.books, s, self.mu.block(i), true);
        if gamma > 0.0 {
            move_marginals(self.mu.block_mut(i), s, gamma);
        }
        (gamma, gap, gain)
    }

    /// Makes the pending moves of `mu` (the last steps of a pipeline).
    fn flush(&mut self) {
        for s in &mut self.slots {
            if let Some((j, gamma)) = s.pending.take() {
                move_marginals(self.mu.block_mut(j), s, gamma);
            }
        }
    }

    /// Parallel steps, pipelined (see the module header): this thread copies task `q`'s weights
    /// after step `q - L` (`L` slots), its oracle and pre-search run on any thread,
    /// and this thread applies the steps in order at the current weights, helping with oracles
    /// while it waits. Runs at most `budget` steps, and stops releasing tasks once `stop` (asked
    /// after every step with the books and the steps made) says so; the tasks in flight are
    /// still applied and every move of `mu` is made before it returns. Returns the steps made.
    ///
    /// Why it is sound: a sequence is drawn only when no task in flight or with a pending move
    /// holds it, except the task `q - L` it replaces in the same slot, whose pending move the
    /// slot's next oracle makes first. So the threads always touch the blocks of distinct
    /// sequences ([`SharedBlocks`]), the driver reads only the block of the step it applies, and
    /// every step is an ascent step of the dual from the marginals it moves.
    fn pipeline(
        &mut self,
        rng: &mut Xoshiro256PlusPlus,
        exec: Exec<'_>,
        budget: u64,
        stop: &mut dyn FnMut(&Books, u64) -> bool,
    ) -> u64 {
        let l = self.slots.len() as u64;
        let (ctx, w, books, n) = (&self.ctx, &mut self.w, &mut self.books, self.n);
        let pipe = Pipe {
            slots: std::mem::take(&mut self.slots).into_iter().map(Mutex::new).collect(),
            stage: (0..l).map(|_| AtomicU64::new(u64::MAX)).collect(),
            claim: AtomicU64::new(0),
            released: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            mu: self.mu.shared(),
        };
        // The sequences of the last `2 L` tasks, by task number modulo `2 L`.
        let mut recent = vec![usize::MAX; 2 * l as usize];
        // Draws task `r`'s sequence and copies the weights its oracle reads (its slot is `s`).
        let mut release =
            |r: u64, s: &mut Slot, w: &[f64], books: &mut Books, rng: &mut Xoshiro256PlusPlus| {
                let busy = |i: usize| {
                    (r.saturating_sub(2 * l - 1)..r)
                        .any(|t| t + l != r && recent[(t % (2 * l)) as usize] == i)
                };
                let mut i = books.sampler.draw(rng);
                let mut tries = 0;
                while busy(i) && tries < 4 * l {
                    i = books.sampler.draw(rng);
                    tries += 1;
                }
                while busy(i) {
                    i = (i + 1) % n;
                }
                recent[(r % (2 * l)) as usize] = i;
                s.i = i;
                s.h_old = books.entropy[i];
                prefetch_rows(ctx, w, i);
                copy_weights(ctx, w, s);
            };
        let help = || pipe.work(ctx);
        let made = exec.with_helpers(exec.threads - 1, &help, || {
            let end = budget.max(1);
            let mut target = end.min(l);
            for r in 0..target {
                let (slot, stage) = pipe.at(r);
                release(r, &mut slot.lock().unwrap_or_else(PoisonError::into_inner), w, books, rng);
                stage.store(4 * r + RELEASED, Ordering::Release);
                pipe.released.store(r + 1, Ordering::Release);
            }
            let (mut q, mut stopping) = (0, false);
            while q < target {
                let (slot, stage) = pipe.at(q);
                let mut idle = 0;
                while stage.load(Ordering::Acquire) != 4 * q + DONE {
                    if pipe.help_one(ctx) {
                        idle = 0;
                    } else {
                        backoff(&mut idle);
                    }
                }
                let mut guard = slot.lock().unwrap_or_else(PoisonError::into_inner);
                let s = &mut *guard;
                // SAFETY: task `q`'s sequence is in no other task in flight and its oracle is
                // done: nothing writes its block until the slot's next oracle, released below.
                let mu = unsafe { pipe.mu.block(s.i) };
                let (gamma, _) = apply_step(ctx, w, books, s, mu, false);
                s.pending = (gamma > 0.0).then_some((s.i, gamma));
                q += 1;
                stopping |= stop(books, q);
                if target < end && !stopping {
                    release(target, s, w, books, rng);
                    stage.store(4 * target + RELEASED, Ordering::Release);
                    target += 1;
                    pipe.released.store(target, Ordering::Release);
                }
            }
            pipe.stop.store(true, Ordering::Release);
            q
        });
        self.slots =
            pipe.slots.into_iter().map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner)).collect();
        self.flush();
        made
    }

    #[cfg(test)]
    /// `D` from the incrementally kept entropies and `||w||^2`.
    fn dual_estimate(&self) -> f64 {
        dual_of(&self.books, self.n as f64, self.lambda)
    }

    /// Pass over every sequence: the true `P`, `D` and gap; refreshes the stored gaps and
    /// writes the block gaps. `full` (a fit's last certificate, and a check that would stop it)
    /// first resynchronises `w = w^(mu)` and recomputes the entropies and the divergences term
    /// by term ([`certify_one`]); the checks during a run use the steps' entropies and `w`
    /// (whose drift from `w^(mu)` is rounding).
    fn certify(&mut self, block_gaps: &mut [f64], exec: Exec<'_>, full: bool) -> Certificate {
        self.flush();
        if full {
            self.resync(exec);
        }
        self.trans.set(&self.w[self.ctx.lay.trans()..]);
        let n = self.n;
        let chunks = n.div_ceil(CERTIFY_CHUNK);
        let (ctx, w, trans, mu, entropy) = (&self.ctx, &self.w, &self.trans, &self.mu, &self.books.entropy);
        let per_chunk = |c: usize, s: &mut Slot| -> ChunkResult {
            let mut part = Part::default();
            let range = c * CERTIFY_CHUNK..((c + 1) * CERTIFY_CHUNK).min(n);
            let mut out = Vec::with_capacity(range.len());
            for i in range {
                s.i = i;
                let (nll, scale, g, h) = certify_one(ctx, (w, trans, mu), entropy[i], full, s);
                part.nll.add(nll);
                part.scale.add(scale);
                part.gap.add(g);
                part.ent.add(h);
                out.push((g, h));
            }
            (part, out)
        };
        let results: Vec<ChunkResult> = if exec.threads > 1 && chunks > 1 {
            let slots = &mut self.slots;
            let n_slots = slots.len().min(chunks);
            let mut done: Vec<Vec<(usize, ChunkResult)>> = exec.run(|| {
                slots[..n_slots]
                    .par_iter_mut()
                    .enumerate()
                    .map(|(q, s)| (q..chunks).step_by(n_slots).map(|c| (c, per_chunk(c, s))).collect())
                    .collect()
            });
            let mut flat: Vec<(usize, ChunkResult)> = done.drain(..).flatten().collect();
            flat.sort_unstable_by_key(|(c, _)| *c);
            flat.into_iter().map(|(_, r)| r).collect()
        } else {
            let s = &mut self.slots[0];
            (0..chunks).map(|c| per_chunk(c, s)).collect()
        };
        let mut total = Part::default();
        let mut i = 0;
        for (part, out) in results {
            total.nll.add(part.nll.get());
            total.scale.add(part.scale.get());
            total.gap.add(part.gap.get());
            total.ent.add(part.ent.get());
            for (g, h) in out {
                self.books.sampler.set_gap(i, g);
                block_gaps[i] = g;
                self.books.entropy[i] = h;
                i += 1;
            }
        }
        let ent = total.ent.get();
        self.books.entropy_sum = ent;
        let nf = self.n as f64;
        self.score_scale = total.scale.get() / nf;
        let reg = 0.5 * self.lambda * self.books.wn2;
        Certificate { primal: reg + total.nll.get() / nf, dual: ent / nf - reg, gap: total.gap.get() / nf }
    }
}

/// How a run ended.
struct Run {
    certificate: Certificate,
    steps: u64,
    status: Status,
    gap_trace: Vec<f64>,
}

/// The CRF's loop: sequence steps (one at a time, or pipelined on several threads) until the certificate
/// meets `tol` by the stopping rule of every fit ([`meets`]) or the fit's [`Clock`] (epochs of
/// `n` steps, `max_seconds`, the interrupt check) runs out. A check runs every `check_every`
/// epochs, and earlier when the running estimate of the gap (the mean of the stored block
/// gaps) says `tol` may be met, at most once per `n / 10` steps so that an estimate sitting at
/// the threshold cannot trigger a pass at every step.
fn drive<D: TokenRows>(
    state: &mut State<'_, '_, D>,
    cfg: &CrfConfig,
    rng: &mut Xoshiro256PlusPlus,
    block_gaps: &mut [f64],
    exec: Exec<'_>,
) -> Run {
    let mut clock = Clock::limits(cfg.max_epochs, cfg.max_seconds, cfg.interrupt);
    let n = state.n as u64;
    let max_steps = u64::from(cfg.max_epochs) * n;
    let spacing = (n / 10).max(1);
    let period = u64::from(cfg.check_every) * n;
    let mut next_periodic = period;
    let (mut steps, mut last_check) = (0u64, None::<(u64, Certificate)>);
    let mut gap_trace = Vec::new();
    let mut status = Status::MaxEpochs;
    let parallel = state.slots.len() > 1;
    while steps < max_steps {
        let made = if parallel {
            let (base, nf, lambda) = (steps, n as f64, state.lambda);
            let mut halt = |books: &Books, made: u64| {
                clock.add_pass(1.0 / nf);
                let now = base + made;
                let since = last_check.map_or(now, |(s, _)| now - s);
                (since >= spacing && estimate_meets(books, nf, lambda, cfg.tol))
                    || (period > 0 && now >= next_periodic)
                    || clock.out_of_time()
            };
            state.pipeline(rng, exec, max_steps - steps, &mut halt)
        } else {
            let i = state.books.sampler.draw(rng);
            state.step(i);
            clock.add_pass(1.0 / n as f64);
            1
        };
        steps += made;
        let since = last_check.map_or(steps, |(s, _)| steps - s);
        let mut check = since >= spacing && estimate_meets(&state.books, n as f64, state.lambda, cfg.tol);
        if period > 0 && steps >= next_periodic {
            while next_periodic <= steps {
                next_periodic += period;
            }
            check = true;
        }
        if check {
            let mut c = state.certify(block_gaps, exec, false);
            if meets(cfg.tol, &c) {
                c = state.certify(block_gaps, exec, true);
            }
            gap_trace.push(c.gap);
            last_check = Some((steps, c));
            if meets(cfg.tol, &c) {
                status = Status::Converged;
                break;
            }
        }
        if clock.out_of_time() {
            status = if clock.interrupted { Status::Interrupted } else { Status::MaxSeconds };
            break;
        }
    }
    let certificate = match last_check {
        Some((s, c)) if s == steps && status == Status::Converged => c,
        _ => {
            let c = state.certify(block_gaps, exec, true);
            if let Some(last) = gap_trace.last_mut().filter(|_| last_check.is_some_and(|(s, _)| s == steps)) {
                *last = c.gap;
            } else {
                gap_trace.push(c.gap);
            }
            if meets(cfg.tol, &c) {
                status = Status::Converged;
            }
            c
        }
    };
    Run { certificate, steps, status, gap_trace }
}

/// Fit a linear-chain CRF by SDCA with exact line search and optional gap sampling.
///
/// Solves `min_w (lambda/2)||w||^2 + (1/n) sum_i [log Z(x_i; w) - w . F(x_i, y_i)]` over the
/// sequences of `problem` (Le Priol et al. 2018 eq. 1-3, Algorithm 2; errata and choices in
/// Le Priol et al. 2018), `lambda = cfg.l2` or `1/n`.
///
/// Inputs: a validated [`CrfProblem`] (sparse or dense token rows, sequence offsets, labels in
/// `0..K`) and a checked [`CrfConfig`]. Errors: a sequence longer than `max_sequence_length`
/// ([`SdcaError::SequenceTooLong`]), an estimate above `max_memory` or the default memory
/// budget ([`SdcaError::MemoryLimit`]), a refused allocation, or a fit that overflowed `f64`
/// ([`SdcaError::NonFiniteResult`]). Output: the weights split by block,
/// `P`, `D`, the gap certificate (`P - D = mean_i KL~(mu_i || nu_i) >= 0`), the per-sequence
/// block gaps and the gap trace. The same seed and `n_threads` give the same result bit for bit
/// (unless `max_seconds` stops the run). With `n_threads > 1` the parallel work runs on rayon's
/// current pool; [`crf_fit_on`] names a pool.
pub fn crf_fit<D: TokenRows>(problem: &CrfProblem<'_, D>, cfg: &CrfConfig) -> Result<CrfFit> {
    crf_fit_on(problem, cfg, None)
}

/// [`crf_fit`] with the parallel work (when `cfg.n_threads > 1`) on `pool`; the driver stays on
/// the calling thread, so per-thread state (such as an interrupt check) keeps working.
pub fn crf_fit_on<D: TokenRows>(
    problem: &CrfProblem<'_, D>,
    cfg: &CrfConfig,
    pool: Option<&rayon::ThreadPool>,
) -> Result<CrfFit> {
    let n = problem.n_sequences();
    if let Some(max) = cfg.max_sequence_length {
        for sequence in 0..n {
            let rows = problem.sequence(sequence);
            if rows.len() > max {
                return Err(SdcaError::SequenceTooLong {
                    sequence,
                    start: rows.start,
                    end: rows.end,
                    length: rows.len(),
                    max,
                });
            }
        }
    }
    let threads = cfg.threads();
    let slots =
        if threads > 1 { (IN_FLIGHT_PER_THREAD * threads).min(n / MIN_SEQUENCES_PER_SLOT).max(1) } else { 1 };
    let (k, a) = (problem.n_labels(), problem.n_attributes());
    let memory_bytes = memory_estimate(problem, slots);
    crate::budget::check_crf(&cfg.budget(), memory_bytes, problem.n_tokens(), n, k, a, problem.max_len())?;
    // No buffer can exceed `isize::MAX` bytes; this also keeps every size below from overflowing.
    if memory_bytes >= isize::MAX as u64 {
        return Err(SdcaError::AllocationFailed { bytes: memory_bytes });
    }
    let lambda = cfg.l2_for(n);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let exec = Exec { threads, pool };
    let mut state = State::new(problem, cfg, lambda, slots, exec)?;
    let mut block_gaps = zeros(n)?;
    let run = drive(&mut state, cfg, &mut rng, &mut block_gaps, exec);

    let lay = state.ctx.lay;
    let w = &state.w;
    let mut emission = vec![0.0; k * a];
    for (attr, col) in w[..lay.bias()].chunks_exact(k.max(1)).enumerate() {
        for (kk, &v) in col.iter().enumerate() {
            emission[kk * a + attr] = v;
        }
    }
    let b = &w[lay.bias()..lay.trans()];
    let c = run.certificate;
    // Valid but extreme input (features near 1e200, a tiny l2) can overflow inside the solver;
    // NaN or infinity in a model is garbage, so it is an error instead.
    if w.iter().chain(&block_gaps).chain(&[c.primal, c.dual, c.gap]).any(|v| !v.is_finite()) {
        return Err(SdcaError::NonFiniteResult { what: "the crf fit's weights or certificate" });
    }
    // `P - D = mean_i KL(mu_i || nu_i)` holds at `w = w^(mu)` up to the rounding of the scores.
    // Scores beyond f64's precision (features near 1e140) make the oracle's node and edge
    // marginals disagree, the dual marginals leave the marginal polytope, and the identity
    // fails (P - D = 81 against a KL of 0.00025): such a certificate certifies nothing.
    // The allowance is relative to the size of the terms (`score_scale` bounds both |log Z| and
    // |s(y)|), and every sum behind the certificate is compensated over positions and
    // sequences, so it does not grow with the length of a sequence; half the fuzz harness's
    // allowance keeps every accepted fit within its check.
    // Terms whose size overflowed (scores near f64's limit: `|log Z| + |s(y)|` beyond 1.8e308)
    // leave no allowance to check against: the certificate is refused too.
    let rounding = 5e-11 * (state.score_scale + c.primal.abs() + c.dual.abs());
    if !rounding.is_finite() || (c.primal - c.dual - c.gap).abs() > rounding {
        return Err(SdcaError::NonFiniteResult {
            what: "the crf fit's certificate (scores beyond f64 precision)",
        });
    }
    Ok(CrfFit {
        n_labels: k,
        n_attributes: a,
        n_sequences: n,
        n_tokens: problem.n_tokens(),
        emission,
        transition: w[lay.trans()..].to_vec(),
        start: b[k..2 * k].to_vec(),
        end: b[2 * k..].to_vec(),
        bias: b[..k].to_vec(),
        l2: lambda,
        primal: c.primal,
        dual: c.dual,
        gap: c.gap,
        epochs: u32::try_from(run.steps.div_ceil(n as u64)).unwrap_or(u32::MAX),
        steps: run.steps,
        status: run.status,
        gap_trace: run.gap_trace,
        block_gaps,
        mean_line_search_iters: if state.books.line_searches > 0 {
            state.books.line_evals as f64 / state.books.line_searches as f64
        } else {
            0.0
        },
        memory_bytes,
        n_threads: threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crf::chain::log_sum_exp;
    use crate::crf::chain::tests::all_paths;
    use crate::crf::config::CrfParams;
    use crate::crf::predict::{crf_marginals, crf_predict};
    use crate::data::{CsrView, DenseView, Rows};
    use rand::Rng;

    /// Sparse sequences: `per_token` distinct attributes per token (indicators, some scaled),
    /// labels that follow the first attribute, the previous label, or chance.
    pub(crate) struct Toy {
        pub indptr: Vec<i64>,
        pub indices: Vec<u32>,
        pub values: Vec<f64>,
        pub starts: Vec<usize>,
        pub y: Vec<u32>,
        pub k: usize,
        pub a: usize,
    }

    impl Toy {
        pub fn view(&self) -> CsrView<'_> {
            CsrView::new(&self.indptr, &self.indices, &self.values, self.a).unwrap()
        }
        pub fn dense(&self) -> Vec<f64> {
            let n_rows = self.y.len();
            let mut d = vec![0.0; n_rows * self.a];
            for r in 0..n_rows {
                for j in self.indptr[r] as usize..self.indptr[r + 1] as usize {
                    d[r * self.a + self.indices[j] as usize] = self.values[j];
                }
            }
            d
        }
    }

    pub(crate) fn toy(seed: u64, lengths: &[usize], k: usize, a: usize, per_token: usize) -> Toy {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let (mut indptr, mut indices, mut values) = (vec![0i64], vec![], vec![]);
        let (mut starts, mut y) = (vec![0usize], vec![]);
        for &t_len in lengths {
            let mut prev = 0u32;
            for t in 0..t_len {
                let mut attrs: Vec<u32> = Vec::new();
                while attrs.len() < per_token.min(a) {
                    let j = rng.random_range(0..a as u32);
                    if !attrs.contains(&j) {
                        attrs.push(j);
                    }
                }
                let first = attrs[0];
                attrs.sort_unstable();
                for &j in &attrs {
                    indices.push(j);
                    values.push(if rng.random::<f64>() < 0.7 { 1.0 } else { rng.random_range(0.5..1.5) });
                }
                indptr.push(indices.len() as i64);
                let u = rng.random::<f64>();
                let label = if u < 0.6 {
                    first % k as u32
                } else if u < 0.8 && t > 0 {
                    prev
                } else {
                    rng.random_range(0..k as u32)
                };
                y.push(label);
                prev = label;
            }
            starts.push(y.len());
        }
        Toy { indptr, indices, values, starts, y, k, a }
    }

    fn params() -> CrfParams {
        CrfParams { tol: 1e-8, max_epochs: 500, ..Default::default() }
    }

    /// `F(x_i, y)` in the solver's layout, from the definition.
    fn features<D: TokenRows>(p: &CrfProblem<'_, D>, lay: Layout, i: usize, y: &[u32]) -> Vec<f64> {
        let (k, mut f) = (lay.k, vec![0.0; lay.dim()]);
        let rows = p.sequence(i);
        let t_len = rows.len();
        for (t, row) in rows.enumerate() {
            let l = y[t] as usize;
            p.x().for_each_entry(row, |a, xv| f[a * k + l] += xv);
            f[lay.bias() + l] += 1.0;
            if t == 0 {
                f[lay.bias() + k + l] += 1.0;
            }
            if t + 1 == t_len {
                f[lay.bias() + 2 * k + l] += 1.0;
            }
        }
        for q in y.windows(2) {
            f[lay.trans() + q[0] as usize * k + q[1] as usize] += 1.0;
        }
        f
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    /// `P(w)` by enumerating every labelling of every sequence.
    fn brute_primal<D: TokenRows>(p: &CrfProblem<'_, D>, lay: Layout, w: &[f64], lambda: f64) -> f64 {
        let n = p.n_sequences();
        let mut loss = 0.0;
        for i in 0..n {
            let rows = p.sequence(i);
            let scores: Vec<f64> =
                all_paths(rows.len(), lay.k).iter().map(|y| dot(w, &features(p, lay, i, y))).collect();
            loss += log_sum_exp(&scores) - dot(w, &features(p, lay, i, &p.y()[rows]));
        }
        0.5 * lambda * dot(w, w) + loss / n as f64
    }

    /// `(D(mu), w^(mu))` from the joint (junction-tree) distributions of the stored marginals.
    fn brute_dual<D: TokenRows>(s: &State<'_, '_, D>) -> (f64, Vec<f64>) {
        let (p, lay, k) = (s.ctx.problem, s.ctx.lay, s.ctx.lay.k);
        let mut acc = vec![0.0; lay.dim()];
        let mut h = 0.0;
        for i in 0..s.n {
            let rows = p.sequence(i);
            let t_len = rows.len();
            let truth = features(p, lay, i, &p.y()[rows]);
            let (node, edge) = s.mu.block(i);
            for y in all_paths(t_len, k) {
                let alpha = if t_len == 1 {
                    node[y[0] as usize]
                } else {
                    let e: f64 = (0..t_len - 1)
                        .map(|t| edge[(t * k + y[t] as usize) * k + y[t + 1] as usize])
                        .product();
                    e / (1..t_len - 1).map(|t| node[t * k + y[t] as usize]).product::<f64>()
                };
                if alpha > 0.0 {
                    h -= alpha * alpha.ln();
                }
                for (o, (ft, f)) in acc.iter_mut().zip(truth.iter().zip(features(p, lay, i, &y))) {
                    *o += alpha * (ft - f);
                }
            }
        }
        let w: Vec<f64> = acc.iter().map(|v| v / s.ctx.lam_n).collect();
        (h / s.n as f64 - 0.5 * s.lambda * dot(&w, &w), w)
    }

    const SERIAL: Exec<'static> = Exec { threads: 1, pool: None };

    impl<D: TokenRows> State<'_, '_, D> {
        /// Runs the oracle of sequence `i` at the current weights into slot 0.
        fn oracle_at(&mut self, i: usize) {
            self.trans.set(&self.w[self.ctx.lay.trans()..]);
            let s = &mut self.slots[0];
            s.i = i;
            oracle(&self.ctx, &self.w, &self.trans, self.mu.block(i), self.books.entropy[i], s);
        }

        /// The line of slot 0 and its scalars at the current weights.
        fn line0(&self) -> (BlockLine<'_>, Scalars) {
            let (k, s) = (self.ctx.lay.k, &self.slots[0]);
            let t_len = self.mu.len_of(s.i);
            let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
            let line = BlockLine { t_len, k, mu: self.mu.block(s.i), delta: (&s.dn[..nn], &s.de[..ne]) };
            let lam_n = self.ctx.lam_n;
            (line, Scalars { lin: lam_n * s.wv, quad: lam_n * s.vv, stale: 0.0 })
        }

        /// Moves the block of slot 0 by exactly `gamma` (no line search).
        fn move_by(&mut self, gamma: f64) {
            let r = self.line0().0.eval(gamma);
            let s = &self.slots[0];
            move_weights(&self.ctx, &mut self.w, &mut self.books, s, &r, s.wv);
            move_marginals(self.mu.block_mut(s.i), s, gamma);
        }

        /// `D(mu)` recomputed from scratch (entropies and `w^(mu)`).
        fn exact_dual(&mut self) -> f64 {
            self.flush();
            let mut w = vec![0.0; self.ctx.lay.dim()];
            self.w_hat_into(&mut w, SERIAL);
            let h: f64 = (0..self.n).map(|i| self.mu.entropy(i)).sum();
            h / self.n as f64 - 0.5 * self.lambda * dot(&w, &w)
        }
    }

    fn max_diff(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
    }

    /// `<p - q, log p - log q>_chain` by a plain loop (the symmetrised divergence).
    fn sym_kl(t_len: usize, k: usize, p: (&[f64], &[f64]), q: (&[f64], &[f64])) -> f64 {
        let term = |a: f64, b: f64| (a - b) * (a.ln() - b.ln());
        if t_len == 1 {
            return (0..k).map(|j| term(p.0[j], q.0[j])).sum();
        }
        let e: f64 = (0..(t_len - 1) * k * k).map(|j| term(p.1[j], q.1[j])).sum();
        e - (k..(t_len - 1) * k).map(|j| term(p.0[j], q.0[j])).sum::<f64>()
    }

    #[test]
    fn objectives_and_gap_identity_match_enumeration() {
        let t = toy(1, &[1, 2, 3, 4, 2, 1], 3, 5, 2);
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 3).unwrap();
        let cfg = params().check().unwrap();
        let lambda = cfg.l2_for(6);
        let mut s = State::new(&p, &cfg, lambda, 1, SERIAL).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let mut gaps = vec![0.0; 6];
        let mut cheap_gaps = vec![0.0; 6];
        for round in 0..4 {
            // The check during a run (steps' entropies, no resync) agrees with the full one.
            let cheap = s.certify(&mut cheap_gaps, SERIAL, false);
            let c = s.certify(&mut gaps, SERIAL, true);
            assert!((cheap.gap - c.gap).abs() < 1e-12 && (cheap.primal - c.primal).abs() < 1e-12);
            assert!((cheap.dual - c.dual).abs() < 1e-12 && max_diff(&gaps, &cheap_gaps) < 1e-12);
            let (d_brute, w_brute) = brute_dual(&s);
            let p_brute = brute_primal(&p, s.ctx.lay, &s.w, lambda);
            assert!(max_diff(&s.w, &w_brute) < 1e-10, "round {round}: w^(mu)");
            assert!((c.primal - p_brute).abs() < 1e-10, "round {round}: P {} vs {p_brute}", c.primal);
            assert!((c.dual - d_brute).abs() < 1e-10, "round {round}: D {} vs {d_brute}", c.dual);
            // Gap identity (eq. 11): P(w^(mu)) - D(mu) = mean_i KL~(mu_i || nu_i).
            assert!((p_brute - d_brute - c.gap).abs() < 1e-10, "round {round}");
            assert!(c.gap >= 0.0 && gaps.iter().all(|g| *g >= 0.0));
            if round == 0 {
                // Smoothed one-hot start: w ~ 0, P ~ P(0) = (N/n) log K, D ~ 0.
                assert!((c.primal - 13.0 / 6.0 * 3f64.ln()).abs() < 1e-6 && c.dual.abs() < 1e-6);
            }
            for _ in 0..5 {
                let i = s.books.sampler.draw(&mut rng);
                s.step(i);
            }
        }
    }

    #[test]
    fn line_search_derivatives_match_finite_differences() {
        let t = toy(2, &[1, 2, 3, 5, 4], 3, 6, 2);
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 3).unwrap();
        let cfg = params().check().unwrap();
        let mut s = State::new(&p, &cfg, 0.2, 1, SERIAL).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for _ in 0..7 {
            let i = s.books.sampler.draw(&mut rng);
            s.step(i);
        }
        let nf = s.n as f64;
        let mut gaps = vec![0.0; s.n];
        let c = s.certify(&mut gaps, SERIAL, true);
        assert!(c.gap > 0.0);
        for (i, &gap) in gaps.iter().enumerate() {
            let mut base = s.clone();
            base.oracle_at(i);
            // The oracle's block gap (log Z - <mu, theta> - <mu, W> - H~) is the certificate's KL.
            assert!((base.slots[0].gap - gap).abs() < 1e-12, "seq {i}: {} vs {}", base.slots[0].gap, gap);
            let f = |g: f64| {
                let mut c = base.clone();
                c.move_by(g);
                nf * c.exact_dual()
            };
            let (line, sc) = base.line0();
            let t_len = line.t_len;
            let mu = line.mu;
            let nu: (Vec<f64>, Vec<f64>) = (
                mu.0.iter().zip(line.delta.0).map(|(m, d)| m + d).collect(),
                mu.1.iter().zip(line.delta.1).map(|(m, d)| m + d).collect(),
            );
            // f'(0) is the symmetrised divergence, f'(1) its closed form.
            let sym = sym_kl(t_len, 3, mu, (&nu.0, &nu.1));
            let d0 = sc.derivatives(&line.eval(0.0)).0;
            assert!((d0 - sym).abs() < 1e-9 * (1.0 + sym), "f'(0) {d0} vs symmetrised KL {sym}");
            let d1 = sc.derivatives(&line.eval(1.0)).0;
            assert!(
                (sc.slope_at_one() - d1).abs() < 1e-9 * (1.0 + d1.abs()),
                "{} vs {d1}",
                sc.slope_at_one()
            );
            for g in [0.1, 0.5, 0.9] {
                let h = 1e-5;
                let r = line.eval(g);
                let (d1, d2) = sc.derivatives(&r);
                let fd1 = (f(g + h) - f(g - h)) / (2.0 * h);
                let fd2 =
                    (sc.derivatives(&line.eval(g + h)).0 - sc.derivatives(&line.eval(g - h)).0) / (2.0 * h);
                assert!((d1 - fd1).abs() < 1e-8 * (1.0 + d1.abs()), "seq {i} gamma {g}: f' {d1} vs {fd1}");
                assert!((d2 - fd2).abs() < 1e-8 * (1.0 + d2.abs()), "seq {i} gamma {g}: f'' {d2} vs {fd2}");
                assert!(d2 < 0.0);
                // The gain formula is the change of n D.
                let gain = sc.gain(&r, base.books.entropy[i]);
                let direct = f(g) - nf * base.clone().exact_dual();
                assert!((gain - direct).abs() < 1e-10 * (1.0 + gain.abs()), "gain {gain} vs {direct}");
            }
        }
    }

    #[test]
    fn dual_increases_at_every_step_and_w_stays_w_hat() {
        let lengths: Vec<usize> = (0..12).map(|i| 1 + (i * 5) % 7).collect();
        let t = toy(3, &lengths, 3, 10, 3);
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 3).unwrap();
        for sampling in ["uniform", "gap"] {
            let cfg = CrfParams { sampling: sampling.into(), ..params() }.check().unwrap();
            let mut s = State::new(&p, &cfg, cfg.l2_for(12), 1, SERIAL).unwrap();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(6);
            let mut d_prev = s.exact_dual();
            let mut moved = 0;
            for step in 0..600 {
                let i = s.books.sampler.draw(&mut rng);
                let (gamma, _, gain) = s.step(i);
                let d = s.exact_dual();
                let noise = 1e-13 * (1.0 + d.abs());
                assert!(d >= d_prev - noise, "{sampling} step {step}: D {d_prev} -> {d} (gamma {gamma})");
                assert!((gain / s.n as f64 - (d - d_prev)).abs() < 1e-11, "{sampling} step {step}: gain");
                assert!((s.dual_estimate() - d).abs() < 1e-10, "{sampling} step {step}: running D");
                moved += usize::from(gamma > 0.0);
                d_prev = d;
            }
            assert!(moved > 300, "{sampling}: only {moved} steps moved");
            let mut w_hat = vec![0.0; s.ctx.lay.dim()];
            s.w_hat_into(&mut w_hat, SERIAL);
            let diff = max_diff(&s.w, &w_hat);
            assert!(diff < 1e-10, "{sampling}: incremental w is {diff} away from w^(mu)");
        }
    }

    #[test]
    fn pipelined_stale_oracles_still_raise_the_dual() {
        // Several sequences share attributes, so the steps in flight see moved weights; short
        // pipelines (a stop after every few steps) drain and flush as a check would.
        let lengths: Vec<usize> = (0..16).map(|i| 1 + (i * 5) % 7).collect();
        let t = toy(13, &lengths, 3, 6, 3);
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 3).unwrap();
        let cfg = CrfParams { n_threads: Some(2), ..params() }.check().unwrap();
        let mut s = State::new(&p, &cfg, cfg.l2_for(16), 4, SERIAL).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut d_prev = s.exact_dual();
        let mut total = 0;
        for (run, length) in (0..40u64).map(|r| (r, 1 + r % 9)) {
            let mut seen = Vec::new();
            let made = s.pipeline(&mut rng, Exec { threads: 2, pool: None }, 50, &mut |books, made| {
                seen.push(made);
                assert!(books.entropy.iter().all(|h| h.is_finite()));
                made >= length
            });
            // The steps released before the stop are all applied: at most `L - 1` more.
            assert!((length..length + 4).contains(&made), "run {run}: {made} steps for {length}");
            assert_eq!(seen, (1..=made).collect::<Vec<_>>(), "run {run}: asked after every step");
            assert!(s.slots.iter().all(|slot| slot.pending.is_none()), "run {run}: moves left pending");
            let d = s.exact_dual();
            assert!(d >= d_prev - 1e-13 * (1.0 + d.abs()), "run {run}: D {d_prev} -> {d}");
            assert!((s.dual_estimate() - d).abs() < 1e-10, "run {run}: running D");
            d_prev = d;
            total += made;
        }
        assert!(total > 200);
        let mut w_hat = vec![0.0; s.ctx.lay.dim()];
        s.w_hat_into(&mut w_hat, SERIAL);
        assert!(max_diff(&s.w, &w_hat) < 1e-10);
        // The budget caps the steps.
        assert_eq!(s.pipeline(&mut rng, Exec { threads: 2, pool: None }, 3, &mut |_, _| false), 3);
    }

    /// `w^(mu)` has the same bits on any number of threads (its parts add in the serial order).
    #[test]
    fn w_hat_is_the_same_on_any_number_of_threads() {
        let lengths: Vec<usize> = (0..40).map(|i| 1 + (i * 7) % 11).collect();
        let t = toy(5, &lengths, 4, 30, 4);
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 4).unwrap();
        let cfg = params().check().unwrap();
        let mut s = State::new(&p, &cfg, cfg.l2_for(40), 1, SERIAL).unwrap();
        for i in 0..40 {
            s.step(i);
        }
        let mut one = vec![0.0; s.ctx.lay.dim()];
        s.w_hat_into(&mut one, SERIAL);
        for threads in [2, 3, 7] {
            let mut many = vec![f64::NAN; s.ctx.lay.dim()];
            s.w_hat_into(&mut many, Exec { threads, pool: None });
            assert!(one.iter().zip(&many).all(|(a, b)| a.to_bits() == b.to_bits()), "{threads} threads");
        }
        // And the parallel initialisation gives the serial state.
        let cfg2 = CrfParams { n_threads: Some(2), ..params() }.check().unwrap();
        let a = State::new(&p, &cfg, cfg.l2_for(40), 1, SERIAL).unwrap();
        let b = State::new(&p, &cfg2, cfg.l2_for(40), 1, Exec { threads: 2, pool: None }).unwrap();
        assert_eq!(a.books.entropy, b.books.entropy);
        assert_eq!(a.w, b.w);
        assert_eq!(a.mu.block(39), b.mu.block(39));
    }

    fn fit_toy(t: &Toy, params: CrfParams) -> CrfFit {
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, t.k).unwrap();
        crf_fit(&p, &params.check().unwrap()).unwrap()
    }

    fn check_certificate(f: &CrfFit, tol: f64) {
        assert_eq!(f.status, Status::Converged, "{:?} after {} epochs", f.gap_trace, f.epochs);
        assert!(f.gap >= 0.0 && f.gap <= tol * f.primal, "gap {} primal {}", f.gap, f.primal);
        assert!(
            (f.primal - f.dual - f.gap).abs() < 1e-12 * (1.0 + f.primal),
            "P - D = {}",
            f.primal - f.dual
        );
        let mean = f.block_gaps.iter().sum::<f64>() / f.block_gaps.len() as f64;
        assert!((mean - f.gap).abs() <= 1e-15 + 1e-12 * f.gap);
        assert_eq!(f.gap_trace.last(), Some(&f.gap));
    }

    #[test]
    fn converges_with_both_samplings() {
        let lengths: Vec<usize> = (0..30).map(|i| 1 + (i * 7) % 9).collect();
        assert!(lengths.contains(&1) && lengths.contains(&2));
        let t = toy(7, &lengths, 3, 25, 3);
        let mut epochs = vec![];
        for sampling in ["uniform", "gap"] {
            let f = fit_toy(&t, CrfParams { sampling: sampling.into(), ..params() });
            check_certificate(&f, 1e-8);
            assert!(f.mean_line_search_iters > 1.0 && f.mean_line_search_iters < 6.0);
            eprintln!(
                "{sampling}: {} epochs, P {:.12} gap {:.3e}, Newton evals/search {:.2}, trace {:?}",
                f.epochs, f.primal, f.gap, f.mean_line_search_iters, f.gap_trace
            );
            epochs.push((f.epochs, f.primal));
        }
        // Both reach the same optimum: |P1 - P2| <= gap1 + gap2.
        assert!((epochs[0].1 - epochs[1].1).abs() < 2e-8 * epochs[0].1);
    }

    #[test]
    fn threads_give_the_same_optimum_and_repeat_bit_for_bit() {
        let lengths: Vec<usize> = (0..1100).map(|i| 1 + (i * 7) % 9).collect();
        let t = toy(21, &lengths, 3, 400, 3);
        let serial = fit_toy(&t, CrfParams { tol: 1e-6, ..params() });
        check_certificate(&serial, 1e-6);
        assert_eq!(serial.n_threads, 1);
        for threads in [2, 3] {
            let p = CrfParams { n_threads: Some(threads), tol: 1e-6, ..params() };
            let a = fit_toy(&t, p.clone());
            check_certificate(&a, 1e-6);
            assert_eq!(a.n_threads, threads as usize);
            // Same optimum: |P_a - P_serial| <= gap_a + gap_serial.
            assert!((a.primal - serial.primal).abs() <= a.gap + serial.gap, "{threads} threads");
            // Same seed and thread count, same bits, on a dedicated pool or rayon's current one.
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let x = t.view();
            let problem = CrfProblem::new(&x, &t.starts, &t.y, t.k).unwrap();
            let b = crf_fit_on(&problem, &p.check().unwrap(), Some(&pool)).unwrap();
            assert_eq!(a, b, "{threads} threads");
        }
    }

    #[test]
    fn gap_sampling_is_not_slower_on_a_skewed_problem() {
        // Many single tokens and a few long sequences: the gaps concentrate on the long ones.
        let mut lengths = vec![1usize; 40];
        lengths.extend([12, 15, 10, 14]);
        let t = toy(8, &lengths, 3, 30, 2);
        let mut epochs = vec![];
        for sampling in ["uniform", "gap"] {
            let f = fit_toy(&t, CrfParams { sampling: sampling.into(), ..params() });
            check_certificate(&f, 1e-8);
            eprintln!("skewed {sampling}: {} epochs ({} steps)", f.epochs, f.steps);
            epochs.push(f.steps);
        }
        assert!(epochs[1] <= epochs[0], "gap {} steps > uniform {} steps", epochs[1], epochs[0]);
    }

    #[test]
    fn same_seed_same_fit() {
        let lengths: Vec<usize> = (0..15).map(|i| 1 + (i * 3) % 6).collect();
        let t = toy(9, &lengths, 3, 12, 2);
        let a = fit_toy(&t, CrfParams { max_epochs: 5, check_every: 2, ..params() });
        let b = fit_toy(&t, CrfParams { max_epochs: 5, check_every: 2, ..params() });
        assert_eq!(a, b);
        assert_eq!(a.status, Status::MaxEpochs);
        assert_eq!((a.epochs, a.steps, a.gap_trace.len()), (5, 75, 3));
        let c = fit_toy(&t, CrfParams { max_epochs: 5, seed: 1, ..params() });
        assert_ne!(a.emission, c.emission);
    }

    #[test]
    fn dense_and_sparse_views_agree() {
        let t = toy(10, &[3, 1, 2, 4, 5], 3, 6, 2);
        let sparse = fit_toy(&t, params());
        let buf = t.dense();
        let x = DenseView::new(&buf, t.y.len(), t.a).unwrap();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 3).unwrap();
        let dense = crf_fit(&p, &params().check().unwrap()).unwrap();
        assert!(max_diff(&sparse.emission, &dense.emission) < 1e-12);
        assert!(max_diff(&sparse.transition, &dense.transition) < 1e-12);
        assert!((sparse.primal - dense.primal).abs() < 1e-12);
    }

    /// Gradient and Hessian of `P` by enumeration.
    fn brute_newton_system<D: TokenRows>(
        p: &CrfProblem<'_, D>,
        lay: Layout,
        w: &[f64],
        lambda: f64,
    ) -> (Vec<f64>, Vec<Vec<f64>>) {
        let (d, n) = (lay.dim(), p.n_sequences() as f64);
        let mut g: Vec<f64> = w.iter().map(|v| lambda * v).collect();
        let mut hess = vec![vec![0.0; d]; d];
        for (j, row) in hess.iter_mut().enumerate() {
            row[j] = lambda;
        }
        for i in 0..p.n_sequences() {
            let rows = p.sequence(i);
            let paths = all_paths(rows.len(), lay.k);
            let feats: Vec<Vec<f64>> = paths.iter().map(|y| features(p, lay, i, y)).collect();
            let scores: Vec<f64> = feats.iter().map(|f| dot(w, f)).collect();
            let log_z = log_sum_exp(&scores);
            let truth = features(p, lay, i, &p.y()[rows]);
            let mut mean = vec![0.0; d];
            for (f, s) in feats.iter().zip(&scores) {
                let q = (s - log_z).exp();
                for j in 0..d {
                    mean[j] += q * f[j];
                    for l in 0..d {
                        hess[j][l] += q * f[j] * f[l] / n;
                    }
                }
            }
            for j in 0..d {
                g[j] += (mean[j] - truth[j]) / n;
                for l in 0..d {
                    hess[j][l] -= mean[j] * mean[l] / n;
                }
            }
        }
        (g, hess)
    }

    /// Solves `a x = b` by Gaussian elimination with partial pivoting.
    fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
        let d = b.len();
        for c in 0..d {
            let piv = (c..d).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
            a.swap(c, piv);
            b.swap(c, piv);
            let pivot = a[c].clone();
            for r in c + 1..d {
                let f = a[r][c] / pivot[c];
                for (x, p) in a[r][c..].iter_mut().zip(&pivot[c..]) {
                    *x -= f * p;
                }
                b[r] -= f * b[c];
            }
        }
        let mut x = vec![0.0; d];
        for c in (0..d).rev() {
            x[c] = (b[c] - (c + 1..d).map(|k| a[c][k] * x[k]).sum::<f64>()) / a[c][c];
        }
        x
    }

    #[test]
    fn optimum_matches_newton_on_the_primal() {
        let t = toy(11, &[1, 2, 3, 2, 1], 2, 3, 2);
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 2).unwrap();
        let lay = Layout { k: 2, a: 3 };
        let lambda = 0.2; // 1/n
        let mut w = vec![0.0; lay.dim()];
        for _ in 0..30 {
            let (g, h) = brute_newton_system(&p, lay, &w, lambda);
            if g.iter().map(|v| v * v).sum::<f64>().sqrt() < 1e-14 {
                break;
            }
            let step = solve(h, g);
            w.iter_mut().zip(&step).for_each(|(wj, s)| *wj -= s);
        }
        let p_star = brute_primal(&p, lay, &w, lambda);
        let f = fit_toy(&t, CrfParams { tol: 1e-12, ..params() });
        check_certificate(&f, 1e-12);
        assert!(f.primal >= p_star - 1e-12 && f.primal - p_star <= f.gap + 1e-12, "{} vs {p_star}", f.primal);
        assert!((f.primal - p_star).abs() < 1e-8);
        // Strong convexity: ||w - w*|| <= sqrt(2 gap / lambda).
        let mut ours = vec![0.0; lay.dim()];
        for kk in 0..2 {
            for a in 0..3 {
                ours[a * 2 + kk] = f.emission[kk * 3 + a];
            }
        }
        ours[lay.bias()..lay.bias() + 2].copy_from_slice(&f.bias);
        ours[lay.bias() + 2..lay.bias() + 4].copy_from_slice(&f.start);
        ours[lay.bias() + 4..lay.trans()].copy_from_slice(&f.end);
        ours[lay.trans()..].copy_from_slice(&f.transition);
        let dist = max_diff(&ours, &w);
        assert!(dist <= (2.0 * f.gap / lambda).sqrt() + 1e-9, "{dist}");
    }

    #[test]
    fn short_chains_and_one_label() {
        // Only T = 1: transitions never appear, so W stays exactly 0.
        let t = toy(12, &[1; 10], 3, 6, 2);
        let f = fit_toy(&t, params());
        check_certificate(&f, 1e-8);
        assert!(f.transition.iter().all(|&v| v == 0.0));
        // Only T = 2.
        let t = toy(13, &[2; 8], 3, 6, 2);
        check_certificate(&fit_toy(&t, params()), 1e-8);
        // K = 1: every distribution is a point mass; P = D = 0 from the start.
        let t = toy(14, &[1, 3, 2], 1, 4, 2);
        let f = fit_toy(&t, params());
        assert_eq!(f.status, Status::Converged);
        assert_eq!((f.primal, f.gap), (0.0, 0.0));
        assert_eq!(crf_predict(&f.weights(), &t.view(), &t.starts).unwrap(), vec![0; 6]);
    }

    #[test]
    fn predictions_on_training_data_match_enumeration() {
        let t = toy(15, &[2, 4, 1, 3], 3, 6, 2);
        let f = fit_toy(&t, params());
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 3).unwrap();
        let lay = Layout { k: 3, a: 6 };
        let mut w = vec![0.0; lay.dim()];
        for kk in 0..3 {
            for a in 0..6 {
                w[a * 3 + kk] = f.emission[kk * 6 + a];
            }
        }
        let b = lay.bias();
        w[b..b + 3].copy_from_slice(&f.bias);
        w[b + 3..b + 6].copy_from_slice(&f.start);
        w[b + 6..b + 9].copy_from_slice(&f.end);
        w[lay.trans()..].copy_from_slice(&f.transition);
        let labels = crf_predict(&f.weights(), &x, &t.starts).unwrap();
        let marg = crf_marginals(&f.weights(), &x, &t.starts).unwrap();
        for i in 0..4 {
            let rows = p.sequence(i);
            let paths = all_paths(rows.len(), 3);
            let scores: Vec<f64> = paths.iter().map(|y| dot(&w, &features(&p, lay, i, y))).collect();
            let best = (0..paths.len()).max_by(|&a, &b| scores[a].total_cmp(&scores[b])).unwrap();
            assert_eq!(&labels[rows.clone()], &paths[best][..]);
            let log_z = log_sum_exp(&scores);
            assert!((marg.log_partition[i] - log_z).abs() < 1e-10);
            for (t_pos, row) in rows.enumerate() {
                for kk in 0..3 {
                    let brute: f64 = paths
                        .iter()
                        .zip(&scores)
                        .filter(|(y, _)| y[t_pos] == kk as u32)
                        .map(|(_, s)| (s - log_z).exp())
                        .sum();
                    assert!((marg.node[row * 3 + kk] - brute).abs() < 1e-10);
                }
            }
        }
    }

    #[test]
    fn bad_input_is_reported() {
        let t = toy(16, &[2, 5, 1], 3, 6, 2);
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 3).unwrap();
        let cfg = CrfParams { max_sequence_length: Some(4), ..params() }.check().unwrap();
        let err = crf_fit(&p, &cfg).unwrap_err();
        assert_eq!(err, SdcaError::SequenceTooLong { sequence: 1, start: 2, end: 7, length: 5, max: 4 });
        assert!(err.to_string().contains("sequence 1 (rows 2..7) has length 5 > max_sequence_length 4"));
        let cfg = CrfParams { max_memory: Some(1000), ..params() }.check().unwrap();
        let err = crf_fit(&p, &cfg).unwrap_err();
        assert!(matches!(err, SdcaError::MemoryLimit { limit: 1000, needed, .. } if needed > 1000), "{err}");
        let cfg = CrfParams { max_memory: Some(1 << 30), max_sequence_length: Some(5), ..params() }
            .check()
            .unwrap();
        assert!(crf_fit(&p, &cfg).is_ok());
        // An absurd label count fails cleanly before any size arithmetic can overflow.
        let huge = CrfProblem::new(&x, &t.starts, &t.y, 1 << 40).unwrap();
        assert!(matches!(
            crf_fit(&huge, &params().check().unwrap()),
            Err(SdcaError::AllocationFailed { .. })
        ));
        assert!(matches!(CrfProblem::new(&x, &t.starts, &t.y, 2), Err(SdcaError::LabelOutOfRange { .. })));
        assert!(matches!(
            CrfProblem::new(&x, &[0, 2, 2, 8], &t.y, 3),
            Err(SdcaError::EmptySequence { sequence: 1, row: 2 })
        ));
    }

    /// One sequence of `t_len` tokens, two tags, one feature (issue 15, item 5).
    fn long_sequence(t_len: usize) -> (Vec<i64>, Vec<u32>, Vec<f64>, Vec<u32>) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(t_len as u64);
        let values: Vec<f64> = (0..t_len).map(|_| rng.random::<f64>()).collect();
        let y =
            values.iter().map(|&v| u32::from(rng.random::<f64>() < 0.2 + 0.6 * f64::from(v > 0.5))).collect();
        ((0..=t_len as i64).collect(), vec![0; t_len], values, y)
    }

    fn check_long(t_len: usize, max_epochs: i64) -> CrfFit {
        let (indptr, indices, values, y) = long_sequence(t_len);
        let x = CsrView::new(&indptr, &indices, &values, 1).unwrap();
        let starts = [0, t_len];
        let p = CrfProblem::new(&x, &starts, &y, 2).unwrap();
        let cfg = CrfParams { max_epochs, ..params() }.check().unwrap();
        let f = crf_fit(&p, &cfg).unwrap();
        // The certificate identity to a relative tolerance that does not depend on the length:
        // every sum behind P, D and the gap is compensated over positions.
        let scale = f.primal.abs() + f.dual.abs();
        assert!(
            (f.primal - f.dual - f.gap).abs() <= 1e-12 * scale,
            "T={t_len}: P - D - gap {:e}",
            f.primal - f.dual - f.gap
        );
        assert!(f.gap >= 0.0 && f.gap_trace.iter().all(|g| g.is_finite() && *g >= 0.0));
        assert_eq!((f.block_gaps.len(), f.block_gaps[0]), (1, f.gap));
        // The dual rose from about 0 and stays below the primal.
        assert!(f.dual > 0.0 && f.dual <= f.primal, "T={t_len}: D {} P {}", f.dual, f.primal);
        f
    }

    /// A CRF over one sequence of 200,000 tokens used to fail with "the crf fit's certificate
    /// (scores beyond f64 precision) overflowed f64": log-space forward-backward lost
    /// `O(T eps |score|)` per log-marginal, and the plain chain sums `O(T^2 eps)`.
    #[test]
    fn a_long_sequence_gets_a_valid_certificate() {
        let f = check_long(200_000, 4);
        assert_eq!((f.status, f.steps), (Status::MaxEpochs, 4));
    }

    #[test]
    #[cfg_attr(debug_assertions, ignore = "10^6 tokens: run in release (cargo test --release)")]
    fn a_million_token_sequence_gets_a_valid_certificate() {
        let f = check_long(1_000_000, 3);
        assert_eq!(f.n_tokens, 1_000_000);
        // Viterbi and marginals over the whole sequence.
        let (indptr, indices, values, _) = long_sequence(1_000_000);
        let x = CsrView::new(&indptr, &indices, &values, 1).unwrap();
        let m = crf_marginals(&f.weights(), &x, &[0, 1_000_000]).unwrap();
        assert!(
            m.log_partition[0].is_finite() && m.node.chunks(2).all(|p| (p[0] + p[1] - 1.0).abs() < 1e-12)
        );
        assert_eq!(crf_predict(&f.weights(), &x, &[0, 1_000_000]).unwrap().len(), 1_000_000);
    }

    /// Found by the `crf` fuzz target: one token with a feature of -3.3e207 made the emission
    /// weights 1.7e197, their scores overflowed, and the fit returned `P = NaN`, `gap = inf`.
    #[test]
    fn overflowing_fit_is_an_error() {
        let (indptr, indices, values) = ([0i64, 1], [0u32], [-3.3e207]);
        let x = CsrView::new(&indptr, &indices, &values, 5).unwrap();
        let p = CrfProblem::new(&x, &[0, 1], &[0], 2).unwrap();
        let cfg = CrfParams { max_epochs: 13, ..params() }.check().unwrap();
        let err = crf_fit(&p, &cfg).unwrap_err();
        assert!(matches!(err, SdcaError::NonFiniteResult { .. }), "{err}");
        assert!(err.to_string().starts_with("the crf fit's weights or certificate overflowed f64"), "{err}");
    }

    /// Found by the `crf` fuzz target: features of 1e140 drove the scores beyond f64's
    /// precision during the run, the oracle's node and edge marginals disagreed, and the fit
    /// returned a certificate with `P - D = 81` and a gap of 0.00025, converged.
    #[test]
    fn precision_loss_is_an_error() {
        let (n, a) = (22, 5);
        let dense: Vec<f64> =
            (0..n * a).map(|k| if k % 2 == 0 { 1.0126083155779656e140 } else { 0.0 }).collect();
        let indptr: Vec<i64> = (0..=n as i64).map(|i| i * a as i64).collect();
        let indices: Vec<u32> = (0..n).flat_map(|_| (0..a as u32).rev()).collect();
        let values: Vec<f64> =
            (0..n).flat_map(|i| (0..a).rev().map(move |j| (i, j))).map(|(i, j)| dense[i * a + j]).collect();
        let x = CsrView::new(&indptr, &indices, &values, a).unwrap();
        let (y, starts) = (vec![0u32; n], [0, n]);
        let p = CrfProblem::new(&x, &starts, &y, 3).unwrap();
        let cfg = CrfParams {
            tol: 1e150,
            max_epochs: 13,
            check_every: 1,
            sampling: "uniform".into(),
            non_uniform: 1.0,
            line_search_tol: 3.2593926861296e-311,
            ..params()
        };
        match crf_fit(&p, &cfg.check().unwrap()) {
            Ok(f) => assert!((f.primal - f.dual - f.gap).abs() <= 1e-9 * (1.0 + f.primal.abs()), "{f:?}"),
            Err(e) => assert!(matches!(e, SdcaError::NonFiniteResult { .. }), "{e}"),
        }
    }

    /// Found by the `crf` fuzz target (make test at 7ef31c6): a token feature of 1.7e159 next
    /// to one of -1e150 made scores near 1.4e308; the terms' size `|log Z| + |s(y)|` overflowed,
    /// the identity check's allowance became infinite, and the fit returned `P = 4.4e298` with
    /// a gap of 0.042, converged. Such a certificate is refused.
    #[test]
    fn overflowing_score_scale_is_an_error() {
        let mut dense = vec![-1e-150; 18];
        (dense[8], dense[9]) = (1.6825168321674117e159, -1e150);
        let x = DenseView::new(&dense, 18, 1).unwrap();
        let (y, starts) = (vec![0u32; 18], [0, 1, 2, 3, 18]);
        let p = CrfProblem::new(&x, &starts, &y, 2).unwrap();
        let cfg = CrfParams {
            tol: 6.070556640625,
            max_epochs: 11,
            check_every: 2,
            sampling: "uniform".into(),
            non_uniform: 1.0,
            line_search_tol: 0.447021484375,
            seed: 57049,
            max_memory: Some(2070848),
            n_threads: Some(2),
            ..Default::default()
        };
        match crf_fit(&p, &cfg.check().unwrap()) {
            Ok(f) => assert!((f.primal - f.dual - f.gap).abs() <= 1e-9 * (1.0 + f.primal.abs()), "{f:?}"),
            Err(e) => assert!(matches!(e, SdcaError::NonFiniteResult { .. }), "{e}"),
        }
    }

    #[test]
    fn budgets_stop_the_run_with_a_certificate() {
        let lengths: Vec<usize> = (0..20).map(|i| 1 + i % 5).collect();
        let t = toy(17, &lengths, 3, 10, 2);
        let f = fit_toy(&t, CrfParams { max_seconds: Some(1e-9), ..params() });
        assert_eq!((f.status, f.steps), (Status::MaxSeconds, 1));
        assert!(f.gap > 0.0 && (f.primal - f.dual - f.gap).abs() < 1e-10);
        let f = fit_toy(&t, CrfParams { max_epochs: 1, check_every: 0, ..params() });
        assert_eq!((f.status, f.steps, f.gap_trace.len()), (Status::MaxEpochs, 20, 1));
    }

    #[test]
    fn clique_terms_dispatched_and_portable_give_the_same_bits() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        for n in [0usize, 1, 3, 4, 7, 26, 81, 2025] {
            let mu: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
            let sc: Vec<f64> = (0..n).map(|_| rng.random_range(-3.0..3.0)).collect();
            let nu: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..1.0)).collect();
            let v0: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let (mut d1, mut v1, mut d2, mut v2) = (nu.clone(), v0.clone(), nu.clone(), v0.clone());
            let a = clique_terms(&mu, &sc, &mut d1, &mut v1);
            let b = clique_terms_portable(&mu, &sc, &mut d2, &mut v2);
            assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "n={n}");
            assert_eq!(d1, d2);
            assert_eq!(v1, v2);
            let plain: f64 = mu.iter().zip(&sc).map(|(m, s)| m * s).sum();
            assert!((a[0] - plain).abs() < 1e-12 * (1.0 + n as f64));
            assert!(d1.iter().zip(&nu).zip(&mu).all(|((d, n), m)| *d == n - m));
        }
    }

    /// The AVX2 copies of the step's row kernels give the portable bits, for label counts with
    /// every remainder mod four (and the dense rest with its own).
    #[test]
    fn row_kernels_dispatched_and_portable_give_the_same_bits() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(22);
        for k in [1usize, 2, 3, 4, 5, 9, 26, 45] {
            let lay = Layout { k, a: 13 };
            let w: Vec<f64> = (0..lay.dim()).map(|_| rng.random_range(-2.0..2.0)).collect();
            let act = [7u32, 0, 12, 3];
            let v_em: Vec<f64> = (0..act.len() * k).map(|_| rng.random_range(-1.0..1.0)).collect();
            let v_rest: Vec<f64> = (0..3 * k + k * k).map(|_| rng.random_range(-1.0..1.0)).collect();
            let a = direction_dot(&w, lay, &act, &v_em, &v_rest);
            let b = direction_dot_portable(&w, lay, &act, &v_em, &v_rest);
            assert_eq!(a.to_bits(), b.to_bits(), "k={k}");
            let (mut w1, mut w2) = (w.clone(), w.clone());
            add_rows(&mut w1, lay, &act, &v_em, &v_rest, 0.37);
            add_rows_portable(&mut w2, lay, &act, &v_em, &v_rest, 0.37);
            assert!(w1.iter().zip(&w2).all(|(x, y)| x.to_bits() == y.to_bits()), "k={k}");
            // Only the rows of `act` and the rest moved.
            let untouched = |j: usize| j < lay.bias() && !act.contains(&((j / k) as u32));
            assert!((0..w.len()).filter(|&j| untouched(j)).all(|j| w1[j] == w[j]));
        }
    }

    #[test]
    fn send_sync() {
        fn ok<T: Send + Sync>() {}
        ok::<CrfFit>();
        ok::<CrfConfig>();
        ok::<CrfParams>();
        ok::<CrfWeights<'static>>();
        ok::<crate::crf::CrfMarginals>();
        let _ = |x: &CsrView<'_>| x.n_rows();
    }
}
