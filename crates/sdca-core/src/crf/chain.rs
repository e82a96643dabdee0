//! Exact inference on one linear chain: scaled forward-backward and Viterbi.
//!
//! A chain of length `T` over `K` labels has unary scores `theta_t(k)` (row-major `T x K`) and
//! one transition matrix `W[k, l]` shared by every edge (row-major `K x K`, `k = y_t`,
//! `l = y_{t+1}`). A labelling scores
//!
//! ```text
//! s(y) = sum_{t=1..T} theta_t(y_t) + sum_{t=1..T-1} W[y_t, y_{t+1}],   p(y) = exp(s(y) - log Z)
//! ```
//!
//! Forward-backward in probability space with per-position scaling (Rabiner's scaled
//! recursions, as in CRFsuite and Wapiti; Le Priol et al. 2018 gives the log
//! form). With `m_t = max_k theta_t(k)`, `psi_t(k) = exp(theta_t(k) - m_t)` (one `exp` per token
//! and label) and `E = exp(W - max W)` (one `exp` per transition and pass):
//!
//! ```text
//! a_1 = psi_1                         a_t(l) = psi_t(l) sum_k alpha_{t-1}(k) E[k,l]
//! s_t = sum_l a_t(l),  alpha_t = a_t / s_t,  c_t = log s_t + m_t (+ max W for t > 1)
//! log Z = sum_t c_t                                    (compensated sum)
//! beta_T = 1                          b_t(k) = sum_l E[k,l] psi_{t+1}(l) beta_{t+1}(l)
//! z_t = sum_k alpha_t(k) b_t(k),      beta_t = b_t / max_k b_t(k)
//! nu_{t,t+1}(k,l) = alpha_t(k) E[k,l] psi_{t+1}(l) beta_{t+1}(l) / z_t
//! nu_t(k) = alpha_t(k) b_t(k) / z_t  (t < T),          nu_T(l) = alpha_T(l)
//! ```
//!
//! Both exponentials go through the vectorised `exp` of `crf/vlog.rs`; `alpha_t` is a
//! vector-matrix product with `E` and `b_t` one with its transpose (kept next to `E`), each
//! summed row by row with a block of running sums in registers, and the recursion is compiled
//! for AVX2 where the CPU has it (no fused multiply-add: the same bits either way).
//!
//! Every `alpha_t` and `beta_t` is normalised at its own position, so each marginal is a
//! product of a few numbers of order one divided by a local normaliser: its relative error is a
//! few ulps whatever `T` is, and `log Z` is a sum of `T` local terms, each with a relative error
//! of a few ulps, added with compensation, so its error is `O(eps sum_t |c_t|)`, not growing
//! faster than `log Z` itself. Node marginals are the row sums of the edge marginals, so the
//! stored dual marginals are consistent by construction.
//!
//! When scaling cannot represent the recursion (a local normaliser below the normal `f64`
//! range, which takes score differences beyond about 700 within one position or transition
//! row), or when the caller needs finite logs of every marginal and some `alpha` or `beta`
//! underflowed, the same recursion runs in log space, still normalised per position (every
//! `LSE` max-shifted): slower (an `exp` per lattice cell), equally accurate.
//!
//! Logs of the marginals, when asked for, come as per-position factors (no log per lattice
//! cell): `log nu_t(k) = lnode_t(k)` and `log nu_{t,t+1}(k,l) = la_t(k) + W[k,l] + lb_{t+1}(l)`.
//!
//! Viterbi runs the max-product recursion on the scores, shifted by the maximum at each
//! position (no growth with `T`), and follows back-pointers; ties go to the lowest label, so
//! the path is deterministic.
//!
//! Edge arrays are row-major `(T - 1) x K x K`: entry `[t][k][l]` is the edge `(t, t+1)` with
//! `y_t = k`, `y_{t+1} = l`. A chain of length 1 has no edges.

pub use crate::math::log_sum_exp;

use super::vlog::exp_sub;

/// Columns per register block of [`vec_mat`]: sixteen accumulators (four AVX2 registers).
const COLS: usize = 16;
/// Zeros after the last row of the matrices given to [`vec_mat`] (the exponentiated
/// transitions): its last block, rounded up to whole vectors of four, may read that far.
const PAD: usize = 4;

/// `out[l] = sum_j x[j] m[j][l]` (`m` row-major `x.len() x out.len()`, followed by at least
/// [`PAD`] more entries), each sum taken in the order `j = 0, 1, ...` from `0.0`: the running
/// sums of a block of [`COLS`] columns stay in registers while the rows stream by. The columns
/// left over (`K mod 16`) make one block of the next multiple of four, its extra columns
/// (reading the next row, or the padding) computed and dropped: a fixed width compiles to whole
/// vectors, where a loop to the remainder's width compiled to a comparison per cell.
#[inline(always)]
fn vec_mat(x: &[f64], m: &[f64], out: &mut [f64]) {
    let k = out.len();
    debug_assert!(m.len() >= x.len() * k + PAD);
    let mut c0 = 0;
    while c0 + COLS <= k {
        col_block::<COLS>(x, m, k, c0, out);
        c0 += COLS;
    }
    match (k - c0).div_ceil(4) {
        0 => {}
        1 => col_block::<4>(x, m, k, c0, out),
        2 => col_block::<8>(x, m, k, c0, out),
        3 => col_block::<12>(x, m, k, c0, out),
        _ => col_block::<COLS>(x, m, k, c0, out),
    }
}

/// The block of [`vec_mat`] at columns `c0..c0 + W` (those below `k` written).
#[inline(always)]
fn col_block<const W: usize>(x: &[f64], m: &[f64], k: usize, c0: usize, out: &mut [f64]) {
    let mut acc = [0.0; W];
    for (j, &xj) in x.iter().enumerate() {
        let row: &[f64; W] = m[j * k + c0..j * k + c0 + W].try_into().unwrap_or(&[0.0; W]);
        for c in 0..W {
            acc[c] += xj * row[c];
        }
    }
    let w = (k - c0).min(W);
    out[c0..c0 + w].copy_from_slice(&acc[..w]);
}

/// Neumaier's compensated sum: the rounding error of `n` additions stays `O(eps sum |x|)`
/// instead of `O(n eps sum |x|)` (the sums over the positions of long chains).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sum {
    s: f64,
    c: f64,
}

impl Sum {
    /// Adds `x`.
    #[inline]
    pub(crate) fn add(&mut self, x: f64) {
        let t = self.s + x;
        if self.s.abs() >= x.abs() {
            self.c += (self.s - t) + x;
        } else {
            self.c += (x - t) + self.s;
        }
        self.s = t;
    }

    /// The sum. Once it has overflowed, the plain sum: the compensation of an infinite sum is
    /// `inf - inf` (fuzz: block gaps of `1e306` summed to NaN where `+inf` is the bound).
    #[inline]
    pub(crate) fn get(&self) -> f64 {
        if self.s.is_finite() {
            self.s + self.c
        } else {
            self.s
        }
    }
}

/// Transition scores with their scaled exponentials, computed once per set of weights.
#[derive(Debug, Clone, Default)]
pub struct Transitions {
    /// `W`, `K x K`.
    scores: Vec<f64>,
    /// `exp(W - max W)`, then [`PAD`] zeros.
    exp: Vec<f64>,
    /// Its transpose (`exp_t[l * K + k] = exp[k * K + l]`; the same padding): the backward
    /// recursion as a sum of rows.
    exp_t: Vec<f64>,
    /// `max W` (0 for an empty or non-finite matrix).
    max: f64,
}

impl Transitions {
    /// Copies `W` (`K x K`) and exponentiates it once.
    pub fn new(trans: &[f64]) -> Self {
        let mut t = Self::default();
        t.set(trans);
        t
    }

    /// Replaces the matrix, reusing the buffers.
    pub fn set(&mut self, trans: &[f64]) {
        self.scores.clear();
        self.scores.extend_from_slice(trans);
        let m = trans.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        self.max = if m.is_finite() { m } else { 0.0 };
        let n = trans.len();
        self.exp.resize(n + PAD, 0.0);
        exp_sub(trans, self.max, &mut self.exp[..n]);
        self.exp[n..].fill(0.0);
        self.exp_t.resize(n + PAD, 0.0);
        self.exp_t[n..].fill(0.0);
        let k = (trans.len() as f64).sqrt().round() as usize;
        if k * k == trans.len() {
            for (j, row) in self.exp[..n].chunks_exact(k).enumerate() {
                for (l, &v) in row.iter().enumerate() {
                    self.exp_t[l * k + j] = v;
                }
            }
        }
    }

    /// `W`.
    pub fn scores(&self) -> &[f64] {
        &self.scores
    }
}

/// Per-position logs of the marginals of one chain (each `T x K`): `log nu_t(k) = lnode[t][k]`
/// and `log nu_{t,t+1}(k,l) = la[t][k] + W[k,l] + lb[t+1][l]` (`lb[0]` is unused).
pub struct LogFactors<'a> {
    /// `log alpha_t(k)`.
    pub la: &'a mut [f64],
    /// `theta_t(l) + log beta_t(l) - log z_{t-1} - c_t + log s_t`, i.e. the edge factor.
    pub lb: &'a mut [f64],
    /// `log nu_t(k)`.
    pub lnode: &'a mut [f64],
}

/// Reusable buffers for [`ChainWorkspace::marginals`] and [`ChainWorkspace::viterbi`].
///
/// Buffers grow to the longest chain seen and are then reused, so a solver allocates them once.
#[derive(Debug, Clone, Default)]
pub struct ChainWorkspace {
    psi: Vec<f64>,
    alpha: Vec<f64>,
    beta: Vec<f64>,
    /// `c_t`, the log of the forward normaliser (score shift included).
    lscale: Vec<f64>,
    /// `z_t`, the normaliser of the edge `(t, t+1)`.
    z: Vec<f64>,
    tmp: Vec<f64>,
    tmp2: Vec<f64>,
    back: Vec<u32>,
    /// Calls that took the log-space path (for tests and diagnostics).
    log_space_calls: u64,
}

/// Smallest accepted local normaliser of the scaled recursion: normal `f64`s with a margin of
/// `K^2` below them, so no product in a position underflows into subnormals unnoticed.
const TINY: f64 = 1e-280;

impl ChainWorkspace {
    /// An empty workspace (grows on first use).
    pub fn new() -> Self {
        Self::default()
    }

    /// A workspace sized for chains of up to `max_len` nodes over `k` labels.
    pub fn with_capacity(max_len: usize, k: usize) -> Self {
        let mut w = Self::default();
        w.ensure(max_len, k);
        w
    }

    fn ensure(&mut self, t_len: usize, k: usize) {
        if self.psi.len() < t_len * k {
            self.psi.resize(t_len * k, 0.0);
            self.alpha.resize(t_len * k, 0.0);
            self.beta.resize(t_len * k, 0.0);
            self.back.resize(t_len * k, 0);
        }
        if self.lscale.len() < t_len {
            self.lscale.resize(t_len, 0.0);
            self.z.resize(t_len, 0.0);
        }
        if self.tmp.len() < k * k.max(1) {
            self.tmp.resize(k * k, 0.0);
            self.tmp2.resize(k * k, 0.0);
        }
    }

    /// Number of calls so far that needed the log-space path.
    pub fn log_space_calls(&self) -> u64 {
        self.log_space_calls
    }

    /// Forward-backward: writes the node marginals (`T x K`) and edge marginals
    /// (`(T-1) x K x K`), as probabilities, and returns `log Z`. With `logs`, also the
    /// per-position logs of the marginals ([`LogFactors`]), every one finite.
    ///
    /// `unary` is `T x K` with `T >= 1`; every score must be finite.
    pub fn marginals(
        &mut self,
        unary: &[f64],
        trans: &Transitions,
        k: usize,
        node: &mut [f64],
        edge: &mut [f64],
        logs: Option<LogFactors<'_>>,
    ) -> f64 {
        let t_len = unary.len() / k;
        debug_assert!(k > 0 && t_len > 0 && unary.len() == t_len * k);
        debug_assert!(trans.scores.len() == k * k && node.len() == t_len * k);
        debug_assert!(edge.len() == (t_len - 1) * k * k);
        self.ensure(t_len, k);
        match scaled(self, unary, trans, k, node, edge, logs.is_some()) {
            Some(log_z) => {
                if let Some(l) = logs {
                    self.scaled_logs(unary, trans, k, l);
                }
                log_z
            }
            None => {
                self.log_space_calls += 1;
                self.log_space(unary, trans, k, node, edge, logs)
            }
        }
    }
}

crate::simd::kernel! {
    /// The probability-space recursion of [`ChainWorkspace::marginals`] in `ws`'s buffers;
    /// `None` when a normaliser leaves the normal range (or, with `strict`, when some `alpha`
    /// or `beta` entry does, since its log is needed).
    fn scaled(
        ws: &mut ChainWorkspace,
        unary: &[f64],
        trans: &Transitions,
        k: usize,
        node: &mut [f64],
        edge: &mut [f64],
        strict: bool,
    ) -> Option<f64> as scaled_portable {
        let t_len = unary.len() / k;
        let n = t_len * k;
        let (psi, alpha, beta) = (&mut ws.psi[..n], &mut ws.alpha[..n], &mut ws.beta[..n]);
        let (lscale, zs) = (&mut ws.lscale[..t_len], &mut ws.z[..t_len]);
        let (e, et) = (&trans.exp[..k * k + PAD], &trans.exp_t[..k * k + PAD]);
        let floor = if strict { f64::MIN_POSITIVE } else { 0.0 };
        let mut log_z = Sum::default();
        for t in 0..t_len {
            let th = &unary[t * k..(t + 1) * k];
            let m = th.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let ps = &mut psi[t * k..(t + 1) * k];
            exp_sub(th, m, ps);
            let (done, rest) = alpha.split_at_mut(t * k);
            let a = &mut rest[..k];
            let mut shift = m;
            if t == 0 {
                a.copy_from_slice(ps);
            } else {
                vec_mat(&done[(t - 1) * k..], e, a);
                for (al, &p) in a.iter_mut().zip(ps.iter()) {
                    *al *= p;
                }
                shift += trans.max;
            }
            let s: f64 = a.iter().sum();
            if !(s >= TINY && s.is_finite()) {
                return None;
            }
            let inv = 1.0 / s;
            let mut low = f64::INFINITY;
            for al in a.iter_mut() {
                *al *= inv;
                low = low.min(*al);
            }
            if low < floor {
                return None;
            }
            lscale[t] = s.ln() + shift;
            log_z.add(lscale[t]);
        }
        // Backward, fused with the marginals.
        let last = (t_len - 1) * k;
        beta[last..].fill(1.0);
        node[last..].copy_from_slice(&alpha[last..]);
        let g = &mut ws.tmp[..k];
        for t in (0..t_len - 1).rev() {
            let (cur, next) = beta.split_at_mut((t + 1) * k);
            for ((gl, &p), &b) in g.iter_mut().zip(&psi[(t + 1) * k..(t + 2) * k]).zip(&next[..k]) {
                *gl = p * b;
            }
            let b = &mut cur[t * k..];
            let al = &alpha[t * k..(t + 1) * k];
            // b_t(j) = sum_l E[j, l] g(l), as a sum of the rows of E^T.
            vec_mat(g, et, b);
            let mut z = 0.0;
            let mut top = 0.0f64;
            for (&a, &v) in al.iter().zip(b.iter()) {
                z += a * v;
                top = top.max(v);
            }
            if !(z >= TINY && z.is_finite() && top >= TINY) {
                return None;
            }
            zs[t] = z;
            let inv_z = 1.0 / z;
            let nd = &mut node[t * k..(t + 1) * k];
            let block = &mut edge[t * k * k..(t + 1) * k * k];
            for (j, (nj, &bj)) in nd.iter_mut().zip(b.iter()).enumerate() {
                let aj = al[j] * inv_z;
                *nj = aj * bj;
                for ((o, &ej), &gl) in
                    block[j * k..(j + 1) * k].iter_mut().zip(&e[j * k..(j + 1) * k]).zip(g.iter())
                {
                    *o = aj * ej * gl;
                }
            }
            let inv = 1.0 / top;
            let mut low = f64::INFINITY;
            for bj in b.iter_mut() {
                *bj *= inv;
                low = low.min(*bj);
            }
            if low < floor {
                return None;
            }
        }
        Some(log_z.get())
    }
}

impl ChainWorkspace {
    /// [`LogFactors`] from the scaled recursion's `alpha`, `beta`, `c_t` and `z_t`.
    fn scaled_logs(&mut self, unary: &[f64], trans: &Transitions, k: usize, l: LogFactors<'_>) {
        let t_len = unary.len() / k;
        let (alpha, beta) = (&self.alpha[..t_len * k], &self.beta[..t_len * k]);
        for (o, &a) in l.la[..t_len * k].iter_mut().zip(alpha) {
            *o = a.ln();
        }
        // log z_{t-1} in the prob path is relative to the shifts of position t:
        // log nu_{t-1,t}(k,l) = la_{t-1}(k) + (W[k,l] - max W) + (theta_t(l) - m_t) + log beta_t(l)
        //                       - log z_{t-1}
        //                     = la_{t-1}(k) + W[k,l] + lb_t(l).
        for t in 1..t_len {
            let th = &unary[t * k..(t + 1) * k];
            let m = th.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let c = trans.max + m + self.z[t - 1].ln();
            for ((o, &x), &b) in l.lb[t * k..(t + 1) * k].iter_mut().zip(th).zip(&beta[t * k..(t + 1) * k]) {
                *o = x + b.ln() - c;
            }
        }
        l.lb[..k].fill(0.0);
        // Node logs: log nu_t(k) = log alpha_t(k) + log b_t(k) - log z_t, with b_t = beta_t times
        // the backward normaliser; equivalently log of the row sum, computed as a local LSE of
        // the edge logs would cost K^2 logs, so use alpha and beta: nu_t(k) is proportional to
        // alpha_t(k) beta_t(k) at each position.
        for t in 0..t_len {
            let (a, b) = (&alpha[t * k..(t + 1) * k], &beta[t * k..(t + 1) * k]);
            let norm: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            let ln_norm = norm.ln();
            for ((o, &x), &y) in l.lnode[t * k..(t + 1) * k].iter_mut().zip(a).zip(b) {
                *o = x.ln() + y.ln() - ln_norm;
            }
        }
    }

    /// The same recursion in log space, normalised at every position.
    fn log_space(
        &mut self,
        unary: &[f64],
        trans: &Transitions,
        k: usize,
        node: &mut [f64],
        edge: &mut [f64],
        logs: Option<LogFactors<'_>>,
    ) -> f64 {
        let t_len = unary.len() / k;
        let n = t_len * k;
        let w = &trans.scores[..k * k];
        // `alpha` and `beta` hold logs here.
        let (la, lbeta) = (&mut self.alpha[..n], &mut self.beta[..n]);
        let lscale = &mut self.lscale[..t_len];
        let (tmp, tmp2) = (&mut self.tmp[..k], &mut self.tmp2[..k]);
        let mut log_z = Sum::default();
        for t in 0..t_len {
            let (done, rest) = la.split_at_mut(t * k);
            let f = &mut rest[..k];
            for l in 0..k {
                f[l] = unary[t * k + l];
                if t > 0 {
                    let prev = &done[(t - 1) * k..];
                    for (j, slot) in tmp.iter_mut().enumerate() {
                        *slot = prev[j] + w[j * k + l];
                    }
                    f[l] += log_sum_exp(tmp);
                }
            }
            let c = log_sum_exp(f);
            f.iter_mut().for_each(|x| *x -= c);
            lscale[t] = c;
            log_z.add(c);
        }
        lbeta[(t_len - 1) * k..].fill(0.0);
        for t in (0..t_len - 1).rev() {
            let (cur, next) = lbeta.split_at_mut((t + 1) * k);
            for l in 0..k {
                tmp[l] = unary[(t + 1) * k + l] + next[l];
            }
            let b = &mut cur[t * k..];
            for j in 0..k {
                for l in 0..k {
                    tmp2[l] = w[j * k + l] + tmp[l];
                }
                b[j] = log_sum_exp(tmp2);
            }
            let top = b.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            b.iter_mut().for_each(|x| *x -= top);
        }
        // lnorm_t = LSE_k (la_t(k) + lbeta_t(k)): nu_t(k) = exp(la_t(k) + lbeta_t(k) - lnorm_t).
        let lnorm = &mut self.z[..t_len];
        for t in 0..t_len {
            for j in 0..k {
                tmp[j] = la[t * k + j] + lbeta[t * k + j];
            }
            lnorm[t] = log_sum_exp(tmp);
        }
        for t in 0..t_len {
            for j in 0..k {
                node[t * k + j] = (la[t * k + j] + lbeta[t * k + j] - lnorm[t]).min(0.0).exp();
            }
        }
        // Edge (t, t+1): la_t(k) + W[k,l] + theta_{t+1}(l) + lbeta_{t+1}(l) - log z_t with
        // log z_t = LSE over k, l of the same = c_{t+1} + lnorm_{t+1} - (shift of lbeta_{t+1}
        // already folded in lnorm).
        let lb_edge = &mut self.psi[..n];
        lb_edge[..k].fill(0.0);
        for t in 1..t_len {
            let lz = lscale[t] + lnorm[t];
            for l in 0..k {
                lb_edge[t * k + l] = unary[t * k + l] + lbeta[t * k + l] - lz;
            }
        }
        for t in 0..t_len - 1 {
            let block = &mut edge[t * k * k..(t + 1) * k * k];
            for j in 0..k {
                for l in 0..k {
                    block[j * k + l] =
                        (la[t * k + j] + w[j * k + l] + lb_edge[(t + 1) * k + l]).min(0.0).exp();
                }
            }
        }
        if let Some(out) = logs {
            out.la[..n].copy_from_slice(la);
            out.lb[..n].copy_from_slice(lb_edge);
            for t in 0..t_len {
                for j in 0..k {
                    out.lnode[t * k + j] = (la[t * k + j] + lbeta[t * k + j] - lnorm[t]).min(0.0);
                }
            }
        }
        log_z.get()
    }

    /// Forward-backward with log-marginals as output (nodes `T x K`, edges `(T-1) x K x K`),
    /// returning `log Z`: a convenience over [`ChainWorkspace::marginals`] for tests and
    /// references. Log-marginals are clamped to `<= 0`.
    pub fn log_marginals(
        &mut self,
        unary: &[f64],
        trans: &[f64],
        k: usize,
        node: &mut [f64],
        edge: &mut [f64],
    ) -> f64 {
        let t_len = unary.len() / k;
        let tr = Transitions::new(trans);
        let (mut p_node, mut p_edge) = (vec![0.0; node.len()], vec![0.0; edge.len()]);
        let (mut la, mut lb) = (vec![0.0; t_len * k], vec![0.0; t_len * k]);
        let log_z = self.marginals(
            unary,
            &tr,
            k,
            &mut p_node,
            &mut p_edge,
            Some(LogFactors { la: &mut la, lb: &mut lb, lnode: node }),
        );
        for t in 0..t_len.saturating_sub(1) {
            for j in 0..k {
                for l in 0..k {
                    edge[(t * k + j) * k + l] =
                        (la[t * k + j] + trans[j * k + l] + lb[(t + 1) * k + l]).min(0.0);
                }
            }
        }
        log_z
    }

    /// Viterbi: writes the highest-scoring labelling into `path` (length `T`) and returns its
    /// score `s(y)`. Ties go to the lowest label.
    pub fn viterbi(&mut self, unary: &[f64], trans: &[f64], k: usize, path: &mut [u32]) -> f64 {
        let t_len = unary.len() / k;
        debug_assert!(k > 0 && t_len > 0 && unary.len() == t_len * k);
        debug_assert!(trans.len() == k * k && path.len() == t_len);
        self.ensure(t_len, k);
        let score = &mut self.alpha[..t_len * k];
        let back = &mut self.back[..t_len * k];
        // Scores are shifted by their maximum at each position (kept in `shift`), so they stay
        // of the size of one position's scores whatever `T` is.
        let mut shift = Sum::default();
        score[..k].copy_from_slice(&unary[..k]);
        for t in 1..t_len {
            let (done, rest) = score.split_at_mut(t * k);
            let prev = &done[(t - 1) * k..];
            let top = prev.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            shift.add(top);
            for l in 0..k {
                let (mut best, mut arg) = (f64::NEG_INFINITY, 0u32);
                for (j, &p) in prev.iter().enumerate() {
                    let v = (p - top) + trans[j * k + l];
                    if v > best {
                        best = v;
                        arg = j as u32;
                    }
                }
                rest[l] = best + unary[t * k + l];
                back[t * k + l] = arg;
            }
        }
        let last = &score[(t_len - 1) * k..];
        let (mut best, mut arg) = (f64::NEG_INFINITY, 0u32);
        for (j, &v) in last.iter().enumerate() {
            if v > best {
                best = v;
                arg = j as u32;
            }
        }
        path[t_len - 1] = arg;
        for t in (1..t_len).rev() {
            path[t - 1] = back[t * k + path[t] as usize];
        }
        shift.add(best);
        shift.get()
    }
}
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Every column of [`vec_mat`] is the plain sum in row order, whatever `K` (whole blocks,
    /// rounded-up last blocks reading the padding).
    #[test]
    fn vec_mat_is_the_plain_sum_in_row_order() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(12);
        for k in 1..=50 {
            let x: Vec<f64> = (0..k).map(|_| rng.random_range(0.0..1.0)).collect();
            let mut m: Vec<f64> = (0..k * k).map(|_| rng.random_range(0.0..1.0)).collect();
            m.extend([0.0; PAD]);
            let mut out = vec![f64::NAN; k];
            vec_mat(&x, &m, &mut out);
            for l in 0..k {
                let mut s = 0.0;
                for j in 0..k {
                    s += x[j] * m[j * k + l];
                }
                assert_eq!(out[l].to_bits(), s.to_bits(), "k={k} l={l}");
            }
        }
    }

    /// A compensated sum that overflows is `+inf`, not NaN; below overflow it is exact where
    /// the plain sum is not.
    #[test]
    fn compensated_sum_overflows_to_infinity() {
        let mut s = Sum::default();
        [1e308, 1e308, 1.0].iter().for_each(|&x| s.add(x));
        assert_eq!(s.get(), f64::INFINITY);
        let mut s = Sum::default();
        [1.0, 1e100, 1.0, -1e100].iter().for_each(|&x| s.add(x));
        assert_eq!(s.get(), 2.0);
    }

    /// Every labelling of a chain of length `t_len` over `k` labels.
    pub(crate) fn all_paths(t_len: usize, k: usize) -> Vec<Vec<u32>> {
        let total = k.pow(t_len as u32);
        (0..total)
            .map(|mut code| {
                (0..t_len)
                    .map(|_| {
                        let y = (code % k) as u32;
                        code /= k;
                        y
                    })
                    .collect()
            })
            .collect()
    }

    /// `s(y)` computed from its definition.
    pub(crate) fn path_score(unary: &[f64], trans: &[f64], k: usize, y: &[u32]) -> f64 {
        let mut s: f64 = y.iter().enumerate().map(|(t, &l)| unary[t * k + l as usize]).sum();
        for p in y.windows(2) {
            s += trans[p[0] as usize * k + p[1] as usize];
        }
        s
    }

    fn random_scores(
        rng: &mut Xoshiro256PlusPlus,
        t_len: usize,
        k: usize,
        scale: f64,
    ) -> (Vec<f64>, Vec<f64>) {
        let unary = (0..t_len * k).map(|_| rng.random_range(-scale..scale)).collect();
        let trans = (0..k * k).map(|_| rng.random_range(-scale..scale)).collect();
        (unary, trans)
    }

    #[test]
    fn forward_backward_matches_enumeration() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut ws = ChainWorkspace::new();
        for k in 1..=3 {
            for t_len in 1..=5 {
                for _ in 0..3 {
                    let (unary, trans) = random_scores(&mut rng, t_len, k, 2.0);
                    let paths = all_paths(t_len, k);
                    let scores: Vec<f64> = paths.iter().map(|y| path_score(&unary, &trans, k, y)).collect();
                    let log_z_brute = log_sum_exp(&scores);
                    let mut node_b = vec![0.0; t_len * k];
                    let mut edge_b = vec![0.0; (t_len - 1) * k * k];
                    for (y, s) in paths.iter().zip(&scores) {
                        let p = (s - log_z_brute).exp();
                        for t in 0..t_len {
                            node_b[t * k + y[t] as usize] += p;
                        }
                        for t in 0..t_len - 1 {
                            edge_b[t * k * k + y[t] as usize * k + y[t + 1] as usize] += p;
                        }
                    }
                    let mut node = vec![0.0; t_len * k];
                    let mut edge = vec![0.0; (t_len - 1) * k * k];
                    let log_z = ws.log_marginals(&unary, &trans, k, &mut node, &mut edge);
                    assert!((log_z - log_z_brute).abs() < 1e-10, "k={k} T={t_len}: {log_z} vs {log_z_brute}");
                    for (a, b) in node.iter().zip(&node_b) {
                        assert!(*a <= 0.0 && (a.exp() - b).abs() < 1e-10, "node k={k} T={t_len}");
                    }
                    for (a, b) in edge.iter().zip(&edge_b) {
                        assert!(*a <= 0.0 && (a.exp() - b).abs() < 1e-10, "edge k={k} T={t_len}");
                    }
                }
            }
        }
    }

    #[test]
    fn viterbi_matches_enumeration() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut ws = ChainWorkspace::with_capacity(2, 2);
        for k in 1..=3 {
            for t_len in 1..=5 {
                for _ in 0..3 {
                    let (unary, trans) = random_scores(&mut rng, t_len, k, 2.0);
                    let (mut best, mut best_y) = (f64::NEG_INFINITY, vec![]);
                    for y in all_paths(t_len, k) {
                        let s = path_score(&unary, &trans, k, &y);
                        if s > best {
                            best = s;
                            best_y = y;
                        }
                    }
                    let mut path = vec![0; t_len];
                    let s = ws.viterbi(&unary, &trans, k, &mut path);
                    assert_eq!(path, best_y, "k={k} T={t_len}");
                    assert!((s - best).abs() < 1e-10);
                    assert!((path_score(&unary, &trans, k, &path) - s).abs() < 1e-10);
                }
            }
        }
    }

    #[test]
    fn extreme_scores_stay_normalised() {
        // Transition spreads far beyond exp's range take the log-space path.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut ws = ChainWorkspace::new();
        let (k, t_len) = (4, 30);
        let (unary, trans) = random_scores(&mut rng, t_len, k, 800.0);
        let mut node = vec![0.0; t_len * k];
        let mut edge = vec![0.0; (t_len - 1) * k * k];
        let log_z = ws.log_marginals(&unary, &trans, k, &mut node, &mut edge);
        assert!(log_z.is_finite());
        for t in 0..t_len {
            let s: f64 = node[t * k..(t + 1) * k].iter().map(|l| l.exp()).sum();
            assert!((s - 1.0).abs() < 1e-9 && node.iter().all(|l| *l <= 0.0 && !l.is_nan()));
        }
        for t in 0..t_len - 1 {
            let s: f64 = edge[t * k * k..(t + 1) * k * k].iter().map(|l| l.exp()).sum();
            assert!((s - 1.0).abs() < 1e-9);
        }
        let mut path = vec![0; t_len];
        let best = ws.viterbi(&unary, &trans, k, &mut path);
        assert!((path_score(&unary, &trans, k, &path) - best).abs() < 1e-9);
    }

    #[test]
    fn compensated_sum_keeps_small_terms() {
        let mut s = Sum::default();
        s.add(1.0);
        for _ in 0..1_000_000 {
            s.add(1e-16);
        }
        s.add(-1.0);
        // A plain sum loses every small term (1 + 1e-16 rounds to 1) and returns 0.
        assert!((s.get() - 1e-10).abs() < 1e-20, "{}", s.get());
    }

    /// Brute-force marginals and `log Z` of a chain.
    fn brute(unary: &[f64], trans: &[f64], k: usize) -> (f64, Vec<f64>, Vec<f64>) {
        let t_len = unary.len() / k;
        let paths = all_paths(t_len, k);
        let scores: Vec<f64> = paths.iter().map(|y| path_score(unary, trans, k, y)).collect();
        let log_z = log_sum_exp(&scores);
        let mut node = vec![0.0; t_len * k];
        let mut edge = vec![0.0; (t_len - 1) * k * k];
        for (y, s) in paths.iter().zip(&scores) {
            let p = (s - log_z).exp();
            for t in 0..t_len {
                node[t * k + y[t] as usize] += p;
            }
            for t in 0..t_len - 1 {
                edge[t * k * k + y[t] as usize * k + y[t + 1] as usize] += p;
            }
        }
        (log_z, node, edge)
    }

    #[test]
    fn scaled_marginals_and_log_factors_match_enumeration() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(17);
        let mut ws = ChainWorkspace::new();
        // Scale 2: the scaled path; scale 900: transitions 1800 apart underflow exp(W - max W),
        // so the log-space path takes over.
        for (scale, log_space) in [(2.0, false), (900.0, true)] {
            let before = ws.log_space_calls();
            for k in 1..=3 {
                for t_len in 1..=5 {
                    let (unary, trans) = random_scores(&mut rng, t_len, k, scale);
                    let (log_z_b, node_b, edge_b) = brute(&unary, &trans, k);
                    let tr = Transitions::new(&trans);
                    let mut node = vec![0.0; t_len * k];
                    let mut edge = vec![0.0; (t_len - 1) * k * k];
                    let (mut la, mut lb, mut ln) =
                        (vec![0.0; t_len * k], vec![0.0; t_len * k], vec![0.0; t_len * k]);
                    let logs = LogFactors { la: &mut la, lb: &mut lb, lnode: &mut ln };
                    let log_z = ws.marginals(&unary, &tr, k, &mut node, &mut edge, Some(logs));
                    let tol = 1e-12 * (1.0 + log_z_b.abs());
                    assert!((log_z - log_z_b).abs() < tol, "k={k} T={t_len}: {log_z} vs {log_z_b}");
                    for (a, b) in node.iter().zip(&node_b) {
                        assert!((a - b).abs() < 1e-10, "node k={k} T={t_len}: {a} vs {b}");
                    }
                    for (a, b) in edge.iter().zip(&edge_b) {
                        assert!((a - b).abs() < 1e-10, "edge k={k} T={t_len}: {a} vs {b}");
                    }
                    // The log factors give the logs of the marginals wherever they are not tiny.
                    for t in 0..t_len {
                        for j in 0..k {
                            let b = node_b[t * k + j];
                            if b > 1e-100 {
                                assert!((ln[t * k + j] - b.ln()).abs() < 1e-9, "log node {t} {j}");
                            }
                            for l in 0..k {
                                if t + 1 < t_len {
                                    let e = edge_b[(t * k + j) * k + l];
                                    if e > 1e-100 {
                                        let le = la[t * k + j] + trans[j * k + l] + lb[(t + 1) * k + l];
                                        assert!(
                                            (le - e.ln()).abs() < 1e-9,
                                            "log edge {t} {j} {l}: {le} vs {}",
                                            e.ln()
                                        );
                                    }
                                }
                            }
                        }
                    }
                    // Without log factors the same marginals come out.
                    let mut node2 = vec![0.0; t_len * k];
                    let mut edge2 = vec![0.0; (t_len - 1) * k * k];
                    assert_eq!(ws.marginals(&unary, &tr, k, &mut node2, &mut edge2, None), log_z);
                    assert!(node2.iter().zip(&node).all(|(a, b)| (a - b).abs() < 1e-14));
                }
            }
            assert_eq!(ws.log_space_calls() > before, log_space, "scale {scale}");
        }
    }

    /// The scaled recursion compiled for AVX2 (when the CPU has it) gives the bits of its
    /// portable body, for label counts on both sides of [`vec_mat`]'s column blocks.
    #[test]
    fn scaled_recursion_matches_its_portable_body() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(23);
        let (mut ws, mut wp) = (ChainWorkspace::new(), ChainWorkspace::new());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for k in [1, 2, 5, 16, 19] {
            for t_len in [1, 2, 7] {
                let (unary, trans) = random_scores(&mut rng, t_len, k, 2.0);
                let tr = Transitions::new(&trans);
                ws.ensure(t_len, k);
                wp.ensure(t_len, k);
                let (mut node, mut edge) = (vec![0.0; t_len * k], vec![0.0; (t_len - 1) * k * k]);
                let (mut node_p, mut edge_p) = (node.clone(), edge.clone());
                let z = scaled(&mut ws, &unary, &tr, k, &mut node, &mut edge, true);
                let z_p = scaled_portable(&mut wp, &unary, &tr, k, &mut node_p, &mut edge_p, true);
                assert!(z.is_some(), "k={k} T={t_len}");
                assert_eq!(z.map(f64::to_bits), z_p.map(f64::to_bits), "log Z, k={k} T={t_len}");
                assert_eq!(bits(&node), bits(&node_p), "node, k={k} T={t_len}");
                assert_eq!(bits(&edge), bits(&edge_p), "edge, k={k} T={t_len}");
            }
        }
    }

    /// `log Z` of a chain with the same scores `theta` at every position and transitions `W`
    /// (two labels), in closed form: `Z = psi^T (E D)^(T-1) 1` with `D = diag(exp theta)`,
    /// through the eigenvalues of the 2 x 2 matrix `E D`.
    fn two_label_log_z(theta: [f64; 2], w: [f64; 4], t_len: usize) -> f64 {
        let d = [theta[0].exp(), theta[1].exp()];
        // M = E D: M[j][l] = exp(W[j,l]) d[l]; Z = d^T M^(T-1) 1.
        let m = [w[0].exp() * d[0], w[1].exp() * d[1], w[2].exp() * d[0], w[3].exp() * d[1]];
        let (tr, det) = (m[0] + m[3], m[0] * m[3] - m[1] * m[2]);
        let disc = (tr * tr / 4.0 - det).sqrt();
        let (l1, l2) = (tr / 2.0 + disc, tr / 2.0 - disc);
        // M^n = (l1^n (M - l2 I) - l2^n (M - l1 I)) / (l1 - l2), so
        // d^T M^n 1 = l1^n a - l2^n b with a = d^T (M - l2 I) 1 / (l1 - l2), b likewise.
        let row = |x: f64| d[0] * (m[0] + m[1] - x) + d[1] * (m[2] + m[3] - x);
        let (a, b) = (row(l2) / (l1 - l2), row(l1) / (l1 - l2));
        let n = (t_len - 1) as f64;
        n * l1.ln() + (a - (l2 / l1).powf(n) * b).ln()
    }

    #[test]
    fn log_z_error_does_not_grow_with_length() {
        let (theta, w) = ([0.3, -0.4], [0.5, -1.0, 0.2, 0.7]);
        let mut ws = ChainWorkspace::new();
        let tr = Transitions::new(&w);
        let mut worst = 0.0f64;
        for t_len in [10usize, 1000, 100_000, 1_000_000] {
            let unary: Vec<f64> = (0..t_len).flat_map(|_| theta).collect();
            let mut node = vec![0.0; t_len * 2];
            let mut edge = vec![0.0; (t_len - 1) * 4];
            let log_z = ws.marginals(&unary, &tr, 2, &mut node, &mut edge, None);
            let exact = two_label_log_z(theta, w, t_len);
            let rel = ((log_z - exact) / exact).abs();
            worst = worst.max(rel);
            assert!(rel < 1e-14, "T={t_len}: log Z {log_z} vs {exact} (relative {rel:e})");
            // Interior marginals are the stationary ones, identical at every interior position.
            let mid = t_len / 2;
            assert!((node[mid * 2] - node[(mid + 1) * 2]).abs() < 1e-13 || t_len < 100);
            assert!((node[mid * 2] + node[mid * 2 + 1] - 1.0).abs() < 1e-14);
            let vit = ws.viterbi(&unary, &w, 2, &mut vec![0; t_len]);
            assert!(vit <= log_z && vit.is_finite());
        }
        assert!(worst < 1e-14, "{worst:e}");
        assert_eq!(ws.log_space_calls(), 0);
    }
}
