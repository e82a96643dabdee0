//! SDCA for linear-chain CRFs (Le Priol, Piché, Lacoste-Julien, UAI 2018, `papers/sdca-crf.txt`
//! Algorithm 2 with the details of App. A; implementation digest `papers/notes/sdca-crf.md`).
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
//! One step on sequence `i` (note section 2.1): forward-backward at the current `w` gives
//! `nu_i`; the block gap `KL~(mu_i || nu_i)` is stored for sampling and the running estimate;
//! `delta = nu_i - mu_i` gives the primal direction `v = -(1/(lambda n)) sum_C sum_y_C delta_C
//! F_C`, which touches only the attribute columns active in sequence `i` plus the bias and
//! transition blocks (sparse scatter, note section 2.3); the exact line search
//! (`crf/line_search.rs`) picks `gamma` in `[0, 1]`; then `log mu_i <- logaddexp(log(1 -
//! gamma) + log mu_i, log gamma + log nu_i)` and `w <- w + gamma v`, so `w = w^(mu)` holds at all
//! times.
//!
//! Initialisation (note section 5.1): eps-smoothed one-hot marginals of the true labels
//! (`eps = 1e-10`, never uniform), `w = w^(mu)` (about 0), every stored gap 100.
//!
//! Stopping: the running estimate `G = mean_i g_i` of the stored gaps (within a factor 2 of the
//! truth, note section 3.3) triggers a full pass when `G <= tol * (D + G)` (at most once per
//! `n / 10` steps); so does the end of every `check_every`-th epoch. A full pass recomputes `w = w^(mu)` from the marginals (no
//! rounding drift), then the true `P`, `D` and gap; the fit stops when
//! `gap <= tol * max(P, tiny)`. The pass also replaces the stored gaps by the true ones.
//!
//! Errata and choices (note section 7): `f'(0)`, `f'(1)` from closed forms; NaN in the line
//! search falls back to bisection; `T = 1` chains use the node entropy and `T = 2` the single
//! edge; log-marginals clamped `<= 0`; block gaps clamped `>= 0`.

use std::time::Instant;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::chain::ChainWorkspace;
use super::config::{CrfConfig, CrfSampling};
use super::line_search::{mix_log, safeguarded_newton, BlockLine};
use super::marginals::{chain_entropy, chain_kl, zeros, LogMarginals};
use super::model::{memory_estimate, unary_scores, CrfProblem, CrfWeights, Emission, Layout, TokenRows};
use crate::error::{Result, SdcaError};
use crate::sampling::GapSampler;
use crate::solver::{Certificate, Status};

/// `eps` of the smoothed one-hot initial marginals `mu_t(k) = eps/K + (1 - eps)[k = y_t]`.
const INIT_SMOOTHING: f64 = 1e-10;
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
    /// Mean number of slope evaluations per Newton line search (searches that ended at 0 or 1
    /// without iterating are not counted).
    pub mean_line_search_iters: f64,
    /// Estimated peak memory in bytes ([`memory_estimate`]).
    pub memory_bytes: u64,
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

/// What [`State::direction`] leaves for the line search and the update.
#[derive(Debug, Clone, Copy)]
struct Direction {
    /// `KL~(mu_i || nu_i)`, clamped at 0.
    gap: f64,
    /// `<w, v>`.
    wv: f64,
    /// `||v||^2`.
    vv: f64,
}

/// The solver state: dual marginals, the primal `w = w^(mu)`, and work buffers.
#[derive(Debug, Clone)]
struct State<'p, 'a, D: TokenRows> {
    problem: &'p CrfProblem<'a, D>,
    lay: Layout,
    n: usize,
    lambda: f64,
    /// `lambda n`.
    lam_n: f64,
    line_tol: f64,
    /// `[emission (A x K) | bias | start | end | transition]`.
    w: Vec<f64>,
    mu: LogMarginals,
    /// `H~(mu_i)` and its sum.
    entropy: Vec<f64>,
    entropy_sum: f64,
    /// `||w||^2`, maintained as `||w + g v||^2 = ||w||^2 + 2 g <w,v> + g^2 ||v||^2`.
    wn2: f64,
    sampler: GapSampler,
    // Work buffers, sized for the longest sequence before the first step.
    chain: ChainWorkspace,
    theta: Vec<f64>,
    nu: (Vec<f64>, Vec<f64>),
    delta: (Vec<f64>, Vec<f64>),
    next: (Vec<f64>, Vec<f64>),
    /// Position of each attribute in `active`, or [`INACTIVE`].
    pos: Vec<u32>,
    active: Vec<u32>,
    /// Emission part of `v` on the active attributes (`|active| x K`).
    v_em: Vec<f64>,
    /// `[bias | start | end | transition]` part of `v`.
    v_rest: Vec<f64>,
    w_work: Vec<f64>,
    r_work: Vec<f64>,
    line_searches: u64,
    line_evals: u64,
    /// `mean_i |log Z_i| + |s_i(y_i)|` at the last certificate: the scale of its rounding.
    score_scale: f64,
}

impl<'p, 'a, D: TokenRows> State<'p, 'a, D> {
    fn new(problem: &'p CrfProblem<'a, D>, cfg: &CrfConfig, lambda: f64) -> Result<Self> {
        let (k, a, n) = (problem.n_labels(), problem.n_attributes(), problem.n_sequences());
        let lay = Layout { k, a };
        let mut mu = LogMarginals::new(problem.starts(), k)?;
        let (kf, eps) = (k as f64, INIT_SMOOTHING);
        let (node_on, node_off) = ((eps / kf - eps).ln_1p(), (eps / kf).ln());
        let (edge_on, edge_off) = ((eps / (kf * kf) - eps).ln_1p(), (eps / (kf * kf)).ln());
        let mut entropy = vec![0.0; n];
        let y = problem.y();
        for (i, h) in entropy.iter_mut().enumerate() {
            let rows = problem.sequence(i);
            let labels = &y[rows];
            let (node, edge) = mu.block_mut(i);
            node.fill(node_off);
            edge.fill(edge_off);
            for (t, &l) in labels.iter().enumerate() {
                node[t * k + l as usize] = node_on;
            }
            for (t, p) in labels.windows(2).enumerate() {
                edge[(t * k + p[0] as usize) * k + p[1] as usize] = edge_on;
            }
            *h = mu.entropy(i);
        }
        let max_len = problem.max_len();
        // Largest active attribute set of a sequence, for the emission part of `v`.
        let mut pos = vec![INACTIVE; a];
        let mut active: Vec<u32> = Vec::new();
        let mut max_active = 0;
        for i in 0..n {
            for row in problem.sequence(i) {
                problem.x().for_each_entry(row, |j, _| {
                    if pos[j] == INACTIVE {
                        pos[j] = active.len() as u32;
                        active.push(j as u32);
                    }
                });
            }
            max_active = max_active.max(active.len());
            active.iter().for_each(|&j| pos[j as usize] = INACTIVE);
            active.clear();
        }
        let entropy_sum = entropy.iter().sum();
        let mut state = Self {
            problem,
            lay,
            n,
            lambda,
            lam_n: lambda * n as f64,
            line_tol: cfg.line_search_tol,
            w: zeros(lay.dim())?,
            mu,
            entropy,
            entropy_sum,
            wn2: 0.0,
            sampler: GapSampler::new(if cfg.sampling == CrfSampling::Gap { cfg.non_uniform } else { 0.0 }, n),
            chain: ChainWorkspace::with_capacity(max_len, k),
            theta: vec![0.0; max_len * k],
            nu: (vec![0.0; max_len * k], vec![0.0; (max_len - 1) * k * k]),
            delta: (vec![0.0; max_len * k], vec![0.0; (max_len - 1) * k * k]),
            next: (vec![0.0; max_len * k], vec![0.0; (max_len - 1) * k * k]),
            pos,
            active: Vec::with_capacity(max_active),
            v_em: vec![0.0; max_active * k],
            v_rest: vec![0.0; 3 * k + k * k],
            w_work: zeros(lay.dim())?,
            r_work: vec![0.0; k],
            line_searches: 0,
            line_evals: 0,
            score_scale: 0.0,
        };
        state.resync();
        Ok(state)
    }

    /// Recomputes `w = w^(mu)` and `||w||^2` from the marginals.
    fn resync(&mut self) {
        let mut w = std::mem::take(&mut self.w_work);
        self.w_hat_into(&mut w);
        self.w_work = std::mem::replace(&mut self.w, w);
        self.wn2 = self.w.iter().map(|v| v * v).sum();
    }

    /// `w^(mu) = (1/(lambda n)) sum_i sum_C sum_y_C (F_C(y_i,C) - F_C(y_C)) mu_i,C(y_C)`, with the
    /// one-hot minus marginal difference formed per clique (no cancellation of large sums).
    fn w_hat_into(&mut self, out: &mut [f64]) {
        let (k, lay, p) = (self.lay.k, self.lay, self.problem);
        out.fill(0.0);
        let r = &mut self.r_work;
        let (bias, trans) = (lay.bias(), lay.trans());
        for i in 0..self.n {
            let rows = p.sequence(i);
            let (t_len, first) = (rows.len(), rows.start);
            let (node, edge) = self.mu.block(i);
            for (t, row) in rows.enumerate() {
                let yt = p.y()[row] as usize;
                for (kk, rv) in r.iter_mut().enumerate() {
                    let l = node[t * k + kk];
                    *rv = if kk == yt { -l.exp_m1() } else { -l.exp() };
                }
                for (kk, &rv) in r.iter().enumerate() {
                    out[bias + kk] += rv;
                    if t == 0 {
                        out[bias + k + kk] += rv;
                    }
                    if t + 1 == t_len {
                        out[bias + 2 * k + kk] += rv;
                    }
                }
                p.x().for_each_entry(row, |a, xv| {
                    for (o, &rv) in out[a * k..(a + 1) * k].iter_mut().zip(r.iter()) {
                        *o += xv * rv;
                    }
                });
            }
            for t in 0..t_len.saturating_sub(1) {
                let truth = p.y()[first + t] as usize * k + p.y()[first + t + 1] as usize;
                for (j, &l) in edge[t * k * k..(t + 1) * k * k].iter().enumerate() {
                    out[trans + j] += if j == truth { -l.exp_m1() } else { -l.exp() };
                }
            }
        }
        let scale = 1.0 / self.lam_n;
        out.iter_mut().for_each(|o| *o *= scale);
    }

    /// Oracle, block gap and primal direction for sequence `i`: fills `nu`, `delta`, `active`,
    /// `v_em` and `v_rest`, and stores the block gap in the sampler.
    fn direction(&mut self, i: usize) -> Direction {
        let (k, lay, x) = (self.lay.k, self.lay, self.problem.x());
        let rows = self.problem.sequence(i);
        let t_len = rows.len();
        let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
        scores(x, rows.clone(), &self.w, lay, &mut self.theta[..nn]);
        let (nu_n, nu_e) = (&mut self.nu.0[..nn], &mut self.nu.1[..ne]);
        self.chain.log_marginals(&self.theta[..nn], &self.w[lay.trans()..], k, nu_n, nu_e);
        let (mu_n, mu_e) = self.mu.block(i);
        let gap = chain_kl(t_len, k, (mu_n, mu_e), (&*nu_n, &*nu_e)).max(0.0);
        self.sampler.set_gap(i, gap);

        let (d_n, d_e) = (&mut self.delta.0[..nn], &mut self.delta.1[..ne]);
        for ((d, m), v) in d_n.iter_mut().zip(mu_n).zip(nu_n.iter()) {
            *d = v.exp() - m.exp();
        }
        for ((d, m), v) in d_e.iter_mut().zip(mu_e).zip(nu_e.iter()) {
            *d = v.exp() - m.exp();
        }

        // v = c sum_C sum_y_C delta_C F_C, c = -1/(lambda n): sparse emission part + dense rest.
        let c = -1.0 / self.lam_n;
        let v_rest = &mut self.v_rest;
        v_rest.fill(0.0);
        let (pos, active, v_em) = (&mut self.pos, &mut self.active, &mut self.v_em);
        active.clear();
        for (t, row) in rows.enumerate() {
            let dt = &d_n[t * k..(t + 1) * k];
            for (kk, &d) in dt.iter().enumerate() {
                v_rest[kk] += c * d;
                if t == 0 {
                    v_rest[k + kk] += c * d;
                }
                if t + 1 == t_len {
                    v_rest[2 * k + kk] += c * d;
                }
            }
            x.for_each_entry(row, |a, xv| {
                let mut p = pos[a];
                if p == INACTIVE {
                    p = active.len() as u32;
                    pos[a] = p;
                    active.push(a as u32);
                    let s = p as usize * k;
                    if v_em.len() < s + k {
                        v_em.resize(s + k, 0.0);
                    }
                    v_em[s..s + k].fill(0.0);
                }
                let s = p as usize * k;
                for (vv, &d) in v_em[s..s + k].iter_mut().zip(dt) {
                    *vv += c * xv * d;
                }
            });
        }
        let v_trans = &mut v_rest[3 * k..];
        for de in d_e.chunks_exact(k * k) {
            for (vv, &d) in v_trans.iter_mut().zip(de) {
                *vv += c * d;
            }
        }

        let (mut wv, mut vv) = (0.0, 0.0);
        for (p, &a) in active.iter().enumerate() {
            let a = a as usize;
            for (wj, vj) in self.w[a * k..(a + 1) * k].iter().zip(&v_em[p * k..(p + 1) * k]) {
                wv += wj * vj;
                vv += vj * vj;
            }
        }
        for (wj, vj) in self.w[lay.bias()..].iter().zip(v_rest.iter()) {
            wv += wj * vj;
            vv += vj * vj;
        }
        Direction { gap, wv, vv }
    }

    /// The line-search view of block `i` after [`State::direction`].
    fn line(&self, i: usize, dir: &Direction) -> BlockLine<'_> {
        let k = self.lay.k;
        let t_len = self.mu.len_of(i);
        let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
        BlockLine {
            t_len,
            k,
            mu: self.mu.block(i),
            nu: (&self.nu.0[..nn], &self.nu.1[..ne]),
            delta: (&self.delta.0[..nn], &self.delta.1[..ne]),
            curvature: self.lam_n * dir.vv,
        }
    }

    /// Writes `log(mu + gamma delta)` of block `i` into `next` and returns `(H~(mu + gamma
    /// delta), n (D_new - D_old))`, the dual gain from the entropy change and `||w + gamma v||^2`.
    fn candidate(&mut self, i: usize, gamma: f64, dir: &Direction) -> (f64, f64) {
        let k = self.lay.k;
        let t_len = self.mu.len_of(i);
        let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
        let (mu_n, mu_e) = self.mu.block(i);
        let (next_n, next_e) = (&mut self.next.0[..nn], &mut self.next.1[..ne]);
        for ((o, &m), &v) in next_n.iter_mut().zip(mu_n).zip(&self.nu.0[..nn]) {
            *o = mix_log(gamma, m, v);
        }
        for ((o, &m), &v) in next_e.iter_mut().zip(mu_e).zip(&self.nu.1[..ne]) {
            *o = mix_log(gamma, m, v);
        }
        let h_new = chain_entropy(t_len, k, next_n, next_e);
        let gain = h_new - self.entropy[i] - self.lam_n * gamma * (dir.wv + 0.5 * gamma * dir.vv);
        (h_new, gain)
    }

    /// Moves block `i` to the marginals in `next` (from [`State::candidate`] at `gamma`) and `w`
    /// to `w + gamma v`.
    fn commit(&mut self, i: usize, gamma: f64, dir: &Direction, h_new: f64) {
        let (k, lay) = (self.lay.k, self.lay);
        let (mu_n, mu_e) = self.mu.block_mut(i);
        let (nn, ne) = (mu_n.len(), mu_e.len());
        mu_n.copy_from_slice(&self.next.0[..nn]);
        mu_e.copy_from_slice(&self.next.1[..ne]);
        for (p, &a) in self.active.iter().enumerate() {
            let a = a as usize;
            for (wj, vj) in self.w[a * k..(a + 1) * k].iter_mut().zip(&self.v_em[p * k..(p + 1) * k]) {
                *wj += gamma * vj;
            }
        }
        for (wj, vj) in self.w[lay.bias()..].iter_mut().zip(&self.v_rest) {
            *wj += gamma * vj;
        }
        self.wn2 += gamma * (2.0 * dir.wv + gamma * dir.vv);
        self.entropy_sum += h_new - self.entropy[i];
        self.entropy[i] = h_new;
    }

    fn clear_active(&mut self) {
        for &a in &self.active {
            self.pos[a as usize] = INACTIVE;
        }
        self.active.clear();
    }

    /// One SDCA step on sequence `i`; returns `(gamma, block gap, n (D_new - D_old))`.
    ///
    /// The line search stops on the length of its last step, so in principle `gamma` can
    /// overshoot a tiny optimal step enough to lower the dual. The candidate marginals are
    /// computed before they are committed, so this is checked for free: a gain below rounding
    /// noise halves `gamma` (never seen in tests: the worst gain over 64 000 random steps was
    /// -5e-14, rounding), and the block is left unchanged if halving does not help.
    fn step(&mut self, i: usize) -> (f64, f64, f64) {
        let dir = self.direction(i);
        let (mut gamma, calls) = {
            let line = self.line(i, &dir);
            safeguarded_newton(
                |g| line.derivatives(g),
                line.slope_at_zero(),
                line.slope_at_one(),
                self.line_tol,
            )
        };
        if calls > 0 {
            self.line_searches += 1;
            self.line_evals += u64::from(calls);
        }
        let mut gain = 0.0;
        if gamma > 0.0 {
            let mut halvings = 0;
            loop {
                let (h_new, g) = self.candidate(i, gamma, &dir);
                let noise = 1e-12 * (1.0 + h_new.abs() + self.entropy[i].abs());
                if g >= -noise {
                    self.commit(i, gamma, &dir, h_new);
                    gain = g;
                    break;
                }
                halvings += 1;
                if halvings > 30 {
                    gamma = 0.0;
                    break;
                }
                gamma *= 0.5;
            }
        }
        self.clear_active();
        (gamma, dir.gap, gain)
    }

    /// `D` from the incrementally kept entropies and `||w||^2`.
    fn dual_estimate(&self) -> f64 {
        self.entropy_sum / self.n as f64 - 0.5 * self.lambda * self.wn2
    }

    /// Full pass: resynchronise `w`, then the true `P`, `D` and gap; refreshes the stored gaps
    /// and entropies and writes the block gaps.
    fn certify(&mut self, block_gaps: &mut [f64]) -> Certificate {
        self.resync();
        let (k, lay, p) = (self.lay.k, self.lay, self.problem);
        let (mut nll, mut gaps, mut ent, mut scale) = (0.0, 0.0, 0.0, 0.0);
        for (i, block_gap) in block_gaps.iter_mut().enumerate() {
            let rows = p.sequence(i);
            let t_len = rows.len();
            let (nn, ne) = (t_len * k, (t_len - 1) * k * k);
            let y = &p.y()[rows.clone()];
            let theta = &mut self.theta[..nn];
            scores(p.x(), rows, &self.w, lay, theta);
            let trans = &self.w[lay.trans()..];
            let (nu_n, nu_e) = (&mut self.nu.0[..nn], &mut self.nu.1[..ne]);
            let log_z = self.chain.log_marginals(theta, trans, k, nu_n, nu_e);
            let mut truth: f64 = y.iter().enumerate().map(|(t, &l)| theta[t * k + l as usize]).sum();
            truth += y.windows(2).map(|q| trans[q[0] as usize * k + q[1] as usize]).sum::<f64>();
            nll += log_z - truth;
            scale += log_z.abs() + truth.abs();
            let g = chain_kl(t_len, k, self.mu.block(i), (&*nu_n, &*nu_e)).max(0.0);
            self.sampler.set_gap(i, g);
            *block_gap = g;
            gaps += g;
            self.entropy[i] = self.mu.entropy(i);
            ent += self.entropy[i];
        }
        self.entropy_sum = ent;
        let nf = self.n as f64;
        self.score_scale = scale / nf;
        let reg = 0.5 * self.lambda * self.wn2;
        Certificate { primal: reg + nll / nf, dual: ent / nf - reg, gap: gaps / nf }
    }
}

/// How a run ended.
struct Run {
    certificate: Certificate,
    steps: u64,
    status: Status,
    gap_trace: Vec<f64>,
}

fn drive<D: TokenRows>(
    state: &mut State<'_, '_, D>,
    cfg: &CrfConfig,
    rng: &mut Xoshiro256PlusPlus,
    block_gaps: &mut [f64],
) -> Run {
    let started = Instant::now();
    let n = state.n as u64;
    let max_steps = u64::from(cfg.max_epochs) * n;
    // An estimate-triggered check waits this many steps after the previous check, so that an
    // estimate sitting at the threshold cannot trigger a pass at every step.
    let spacing = (n / 10).max(1);
    let period = u64::from(cfg.check_every) * n;
    let mut next_periodic = period;
    let (mut steps, mut last_check) = (0u64, None::<(u64, Certificate)>);
    let mut gap_trace = Vec::new();
    let mut status = Status::MaxEpochs;
    let converged = |c: &Certificate| c.gap <= cfg.tol * c.primal.max(f64::MIN_POSITIVE);
    while steps < max_steps {
        let i = state.sampler.draw(rng);
        state.step(i);
        steps += 1;
        let estimate = state.sampler.total() / n as f64;
        let since = last_check.map_or(steps, |(s, _)| steps - s);
        let mut check = since >= spacing
            && estimate <= cfg.tol * (state.dual_estimate() + estimate).max(f64::MIN_POSITIVE);
        if period > 0 && steps == next_periodic {
            next_periodic += period;
            check = true;
        }
        if check {
            let c = state.certify(block_gaps);
            gap_trace.push(c.gap);
            last_check = Some((steps, c));
            if converged(&c) {
                status = Status::Converged;
                break;
            }
        }
        if cfg.interrupt.is_some_and(|i| i.requested()) {
            status = Status::Interrupted;
            break;
        }
        if cfg.max_seconds.is_some_and(|s| started.elapsed().as_secs_f64() >= s) {
            status = Status::MaxSeconds;
            break;
        }
    }
    let certificate = match last_check {
        Some((s, c)) if s == steps => c,
        _ => {
            let c = state.certify(block_gaps);
            gap_trace.push(c.gap);
            if converged(&c) {
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
/// sequences of `problem` (`papers/sdca-crf.txt` eq. 1-3, Algorithm 2; errata and choices in
/// `papers/notes/sdca-crf.md` section 7), `lambda = cfg.l2` or `1/n`.
///
/// Inputs: a validated [`CrfProblem`] (sparse or dense token rows, sequence offsets, labels in
/// `0..K`) and a checked [`CrfConfig`]. Errors: a sequence longer than `max_sequence_length`
/// ([`SdcaError::SequenceTooLong`]), an estimate above `max_memory` or the default memory
/// budget ([`SdcaError::MemoryLimit`]), a refused allocation, or a fit that overflowed `f64`
/// ([`SdcaError::NonFiniteResult`]). Output: the weights split by block,
/// `P`, `D`, the gap certificate (`P - D = mean_i KL~(mu_i || nu_i) >= 0`), the per-sequence
/// block gaps and the gap trace. The same seed gives the same result bit for bit (unless
/// `max_seconds` stops the run).
pub fn crf_fit<D: TokenRows>(problem: &CrfProblem<'_, D>, cfg: &CrfConfig) -> Result<CrfFit> {
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
    let (k, a) = (problem.n_labels(), problem.n_attributes());
    let memory_bytes = memory_estimate(problem.n_tokens(), n, k, a, problem.max_len());
    crate::budget::check_crf(&cfg.budget(), problem.n_tokens(), n, k, a, problem.max_len())?;
    // No buffer can exceed `isize::MAX` bytes; this also keeps every size below from overflowing.
    if memory_bytes >= isize::MAX as u64 {
        return Err(SdcaError::AllocationFailed { bytes: memory_bytes });
    }
    let lambda = cfg.l2_for(n);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let mut state = State::new(problem, cfg, lambda)?;
    let mut block_gaps = vec![0.0; n];
    let run = drive(&mut state, cfg, &mut rng, &mut block_gaps);

    let lay = state.lay;
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
    // At 1e-9 a fit with scores near 3e7 passed with P - D = 0.0168 against a reported gap of
    // 0.0025. Half the fuzz harness's allowance (1e-10 of its scale, a bound on both |log Z| and
    // |s(y)|, so at least half of `score_scale`) keeps every accepted fit within its check.
    let rounding = 5e-11 * (state.score_scale + c.primal.abs() + c.dual.abs());
    if (c.primal - c.dual - c.gap).abs() > rounding {
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
        mean_line_search_iters: if state.line_searches > 0 {
            state.line_evals as f64 / state.line_searches as f64
        } else {
            0.0
        },
        memory_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crf::chain::log_sum_exp;
    use crate::crf::chain::tests::all_paths;
    use crate::crf::config::CrfParams;
    use crate::crf::marginals::chain_fold;
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
        let (p, lay, k) = (s.problem, s.lay, s.lay.k);
        let mut acc = vec![0.0; lay.dim()];
        let mut h = 0.0;
        for i in 0..s.n {
            let rows = p.sequence(i);
            let t_len = rows.len();
            let truth = features(p, lay, i, &p.y()[rows]);
            let (node, edge) = s.mu.block(i);
            for y in all_paths(t_len, k) {
                let la = if t_len == 1 {
                    node[y[0] as usize]
                } else {
                    let e: f64 =
                        (0..t_len - 1).map(|t| edge[(t * k + y[t] as usize) * k + y[t + 1] as usize]).sum();
                    e - (1..t_len - 1).map(|t| node[t * k + y[t] as usize]).sum::<f64>()
                };
                let alpha = la.exp();
                h -= alpha * la;
                for (o, (ft, f)) in acc.iter_mut().zip(truth.iter().zip(features(p, lay, i, &y))) {
                    *o += alpha * (ft - f);
                }
            }
        }
        let w: Vec<f64> = acc.iter().map(|v| v / s.lam_n).collect();
        (h / s.n as f64 - 0.5 * s.lambda * dot(&w, &w), w)
    }

    impl<D: TokenRows> State<'_, '_, D> {
        /// Moves block `i` by exactly `gamma` (no safeguard).
        fn apply(&mut self, i: usize, gamma: f64, dir: &Direction) {
            let (h_new, _) = self.candidate(i, gamma, dir);
            self.commit(i, gamma, dir, h_new);
        }

        /// `D(mu)` recomputed from scratch (entropies and `w^(mu)`).
        fn exact_dual(&mut self) -> f64 {
            let mut w = vec![0.0; self.lay.dim()];
            self.w_hat_into(&mut w);
            let h: f64 = (0..self.n).map(|i| self.mu.entropy(i)).sum();
            h / self.n as f64 - 0.5 * self.lambda * dot(&w, &w)
        }
    }

    fn max_diff(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
    }

    #[test]
    fn objectives_and_gap_identity_match_enumeration() {
        let t = toy(1, &[1, 2, 3, 4, 2, 1], 3, 5, 2);
        let x = t.view();
        let p = CrfProblem::new(&x, &t.starts, &t.y, 3).unwrap();
        let cfg = params().check().unwrap();
        let lambda = cfg.l2_for(6);
        let mut s = State::new(&p, &cfg, lambda).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(4);
        let mut gaps = vec![0.0; 6];
        for round in 0..4 {
            let c = s.certify(&mut gaps);
            let (d_brute, w_brute) = brute_dual(&s);
            let p_brute = brute_primal(&p, s.lay, &s.w, lambda);
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
                let i = s.sampler.draw(&mut rng);
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
        let mut s = State::new(&p, &cfg, 0.2).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for _ in 0..7 {
            let i = s.sampler.draw(&mut rng);
            s.step(i);
        }
        let nf = s.n as f64;
        for i in 0..s.n {
            let mut base = s.clone();
            let dir = base.direction(i);
            let f = |g: f64| {
                let mut c = base.clone();
                c.apply(i, g, &dir);
                nf * c.exact_dual()
            };
            let line = base.line(i, &dir);
            let (mu, nu) = (line.mu, line.nu);
            let sym = chain_kl(line.t_len, 3, mu, nu) + chain_kl(line.t_len, 3, nu, mu);
            assert!((line.slope_at_zero() - sym).abs() < 1e-12, "f'(0) is the symmetrised KL");
            // The closed forms at the ends agree with the general formula next to them.
            let d0 = line.derivatives(1e-9).0 + 1e-9 * line.derivatives(1e-9).1;
            assert!(
                (line.slope_at_zero() - d0).abs() < 1e-6 * (1.0 + sym),
                "{} vs {d0}",
                line.slope_at_zero()
            );
            assert!((line.slope_at_one() - line.derivatives(1.0 - 1e-12).0).abs() < 1e-9);
            // The slope formula rests on -<delta, log nu>_chain = lambda n <w, v>: compare with the
            // direct derivative of H~(mu + gamma delta) - (lambda n / 2)||w + gamma v||^2 at 0.
            let (dn, de) = line.delta;
            let [direct] = chain_fold(line.t_len, 3, |j| [-dn[j] * mu.0[j]], |j| [-de[j] * mu.1[j]]);
            let direct = direct - s.lam_n * dir.wv;
            assert!(
                (line.slope_at_zero() - direct).abs() < 1e-9 * (1.0 + sym),
                "{} vs {direct}",
                line.slope_at_zero()
            );
            for g in [0.1, 0.5, 0.9] {
                let h = 1e-5;
                let (d1, d2) = line.derivatives(g);
                let fd1 = (f(g + h) - f(g - h)) / (2.0 * h);
                let fd2 = (line.derivatives(g + h).0 - line.derivatives(g - h).0) / (2.0 * h);
                assert!((d1 - fd1).abs() < 1e-8 * (1.0 + d1.abs()), "seq {i} gamma {g}: f' {d1} vs {fd1}");
                assert!((d2 - fd2).abs() < 1e-8 * (1.0 + d2.abs()), "seq {i} gamma {g}: f'' {d2} vs {fd2}");
                assert!(d2 < 0.0);
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
            let mut s = State::new(&p, &cfg, cfg.l2_for(12)).unwrap();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(6);
            let mut d_prev = s.exact_dual();
            let mut moved = 0;
            for step in 0..600 {
                let i = s.sampler.draw(&mut rng);
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
            let mut w_hat = vec![0.0; s.lay.dim()];
            s.w_hat_into(&mut w_hat);
            let diff = max_diff(&s.w, &w_hat);
            assert!(diff < 1e-10, "{sampling}: incremental w is {diff} away from w^(mu)");
        }
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
