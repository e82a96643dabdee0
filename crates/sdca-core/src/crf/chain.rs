//! Exact inference on one linear chain: log-space forward-backward and Viterbi.
//!
//! A chain of length `T` over `K` labels has unary scores `theta_t(k)` (row-major `T x K`) and
//! one transition matrix `W[k, l]` shared by every edge (row-major `K x K`, `k = y_t`,
//! `l = y_{t+1}`). A labelling scores
//!
//! ```text
//! s(y) = sum_{t=1..T} theta_t(y_t) + sum_{t=1..T-1} W[y_t, y_{t+1}],   p(y) = exp(s(y) - log Z)
//! ```
//!
//! Forward-backward (`papers/notes/sdca-crf.md` section 2.2), every quantity a log, every `LSE`
//! a max-shifted log-sum-exp:
//!
//! ```text
//! fwd_1(k) = theta_1(k)               fwd_t(l) = theta_t(l) + LSE_k (fwd_{t-1}(k) + W[k,l])
//! bwd_T(k) = 0                        bwd_t(k) = LSE_l (W[k,l] + theta_{t+1}(l) + bwd_{t+1}(l))
//! log Z    = LSE_k fwd_T(k)
//! log nu_t(k)         = fwd_t(k) + bwd_t(k) - log Z
//! log nu_{t,t+1}(k,l) = fwd_t(k) + W[k,l] + theta_{t+1}(l) + bwd_{t+1}(l) - log Z
//! ```
//!
//! Log-marginals are clamped to `<= 0` (pitfall 1 of the note). Cost `O(T K^2)`. Viterbi runs the
//! same recursion with `max` in place of `LSE` and follows back-pointers; ties go to the lowest
//! label, so the path is deterministic.
//!
//! Edge arrays are row-major `(T - 1) x K x K`: entry `[t][k][l]` is the edge `(t, t+1)` with
//! `y_t = k`, `y_{t+1} = l`. A chain of length 1 has no edges.

/// `log(sum_j exp(x_j))`, shifted by the maximum; `-inf` for an empty or all `-inf` input.
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + xs.iter().map(|&x| (x - m).exp()).sum::<f64>().ln()
}

/// `log(exp(a) + exp(b))` without overflow; `-inf` when both are `-inf`.
#[inline]
pub fn log_add_exp(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// Reusable buffers for [`ChainWorkspace::log_marginals`] and [`ChainWorkspace::viterbi`].
///
/// Buffers grow to the longest chain seen and are then reused, so a solver allocates them once.
#[derive(Debug, Clone, Default)]
pub struct ChainWorkspace {
    fwd: Vec<f64>,
    bwd: Vec<f64>,
    tmp: Vec<f64>,
    tmp2: Vec<f64>,
    back: Vec<u32>,
}

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
        if self.fwd.len() < t_len * k {
            self.fwd.resize(t_len * k, 0.0);
            self.bwd.resize(t_len * k, 0.0);
            self.back.resize(t_len * k, 0);
        }
        if self.tmp.len() < k {
            self.tmp.resize(k, 0.0);
            self.tmp2.resize(k, 0.0);
        }
    }

    /// Forward-backward: writes the node log-marginals (`T x K`) and edge log-marginals
    /// (`(T-1) x K x K`) and returns `log Z`.
    ///
    /// `unary` is `T x K` with `T >= 1`, `trans` is `K x K`; every score must be finite.
    pub fn log_marginals(
        &mut self,
        unary: &[f64],
        trans: &[f64],
        k: usize,
        node: &mut [f64],
        edge: &mut [f64],
    ) -> f64 {
        let t_len = unary.len() / k;
        debug_assert!(k > 0 && t_len > 0 && unary.len() == t_len * k);
        debug_assert!(trans.len() == k * k && node.len() == t_len * k);
        debug_assert!(edge.len() == (t_len - 1) * k * k);
        self.ensure(t_len, k);
        let fwd = &mut self.fwd[..t_len * k];
        let bwd = &mut self.bwd[..t_len * k];
        let tmp = &mut self.tmp[..k];
        let tmp2 = &mut self.tmp2[..k];

        fwd[..k].copy_from_slice(&unary[..k]);
        for t in 1..t_len {
            let (done, rest) = fwd.split_at_mut(t * k);
            let prev = &done[(t - 1) * k..];
            for l in 0..k {
                for (j, slot) in tmp.iter_mut().enumerate() {
                    *slot = prev[j] + trans[j * k + l];
                }
                rest[l] = unary[t * k + l] + log_sum_exp(tmp);
            }
        }
        bwd[(t_len - 1) * k..].fill(0.0);
        for t in (0..t_len - 1).rev() {
            let (cur, next) = bwd.split_at_mut((t + 1) * k);
            for l in 0..k {
                tmp[l] = unary[(t + 1) * k + l] + next[l];
            }
            for j in 0..k {
                for l in 0..k {
                    tmp2[l] = trans[j * k + l] + tmp[l];
                }
                cur[t * k + j] = log_sum_exp(tmp2);
            }
        }
        let log_z = log_sum_exp(&fwd[(t_len - 1) * k..]);

        for (j, out) in node.iter_mut().enumerate() {
            *out = (fwd[j] + bwd[j] - log_z).min(0.0);
        }
        for t in 0..t_len - 1 {
            for l in 0..k {
                tmp[l] = unary[(t + 1) * k + l] + bwd[(t + 1) * k + l] - log_z;
            }
            let block = &mut edge[t * k * k..(t + 1) * k * k];
            for j in 0..k {
                let f = fwd[t * k + j];
                for l in 0..k {
                    block[j * k + l] = (f + trans[j * k + l] + tmp[l]).min(0.0);
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
        let score = &mut self.fwd[..t_len * k];
        let back = &mut self.back[..t_len * k];

        score[..k].copy_from_slice(&unary[..k]);
        for t in 1..t_len {
            let (done, rest) = score.split_at_mut(t * k);
            let prev = &done[(t - 1) * k..];
            for l in 0..k {
                let (mut best, mut arg) = (f64::NEG_INFINITY, 0u32);
                for (j, &p) in prev.iter().enumerate() {
                    let v = p + trans[j * k + l];
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
        best
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

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
    fn log_sum_exp_edge_cases() {
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert!((log_sum_exp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((log_sum_exp(&[-1000.0, f64::NEG_INFINITY]) + 1000.0).abs() < 1e-12);
        assert_eq!(log_add_exp(f64::NEG_INFINITY, f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert!((log_add_exp(0.0, 0.0) - 2f64.ln()).abs() < 1e-15);
        assert!((log_add_exp(-3.0, 5.0) - log_sum_exp(&[-3.0, 5.0])).abs() < 1e-15);
    }
}
