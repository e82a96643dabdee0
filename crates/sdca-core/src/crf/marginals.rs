//! The CRF dual variables: node and edge marginals per sequence, stored as logs.
//!
//! The dual of `papers/sdca-crf.txt` eq. 3 has one distribution `alpha_i` over the `K^T`
//! labellings of sequence `i`. On a chain it is represented exactly by its clique marginals
//! (note section 1.5): node marginals `mu_t` in `Delta_K` (`t = 1..T`) and edge marginals
//! `mu_{t,t+1}` in `Delta_{K^2}` (`t = 1..T-1`). The junction tree of the chain (cliques: the
//! edges, separators: the interior nodes) gives
//!
//! ```text
//! alpha(y) = prod_{t<T} mu_{t,t+1}(y_t, y_{t+1}) / prod_{t=2..T-1} mu_t(y_t)
//! H~(mu)      = sum_{t<T} H(mu_{t,t+1})          - sum_{t=2..T-1} H(mu_t)
//! KL~(mu||nu) = sum_{t<T} KL(mu_{t,t+1}||nu_{t,t+1}) - sum_{t=2..T-1} KL(mu_t||nu_t)
//! ```
//!
//! Every such quantity is a *chain sum* `<e, u>_chain = sum_edges sum_{kl} e - sum_{interior}
//! sum_k u` ([`chain_fold`]). Special cases: `T = 1` sums the single node, `T = 2` the single
//! edge (no separator). Entropies use `0 log 0 = 0` and are computed from logs as
//! `-sum exp(l) l`.
//!
//! Storage (note section 2.6): two flat arenas of `f64` logs, nodes `[t][k]` at
//! `node_off[i] = K * start_i` and edges `[t][k][l]` at `edge_off[i] = K^2 * (start_i - i)`,
//! about `8 (K N + K^2 (N - n))` bytes for `N` tokens in `n` sequences.

use crate::error::{Result, SdcaError};

/// Folds `M` chain sums at once: `node(j)` and `edge(j)` return the terms of flat node entry `j`
/// (`t * K + k`) and flat edge entry `j` (`(t * K + k) * K + l`). Edges count `+`, interior
/// nodes `-`; a single node (`T = 1`) counts `+`.
#[inline]
pub(crate) fn chain_fold<const M: usize>(
    t_len: usize,
    k: usize,
    mut node: impl FnMut(usize) -> [f64; M],
    mut edge: impl FnMut(usize) -> [f64; M],
) -> [f64; M] {
    let mut acc = [0.0; M];
    if t_len == 1 {
        for j in 0..k {
            let v = node(j);
            for m in 0..M {
                acc[m] += v[m];
            }
        }
        return acc;
    }
    for j in 0..(t_len - 1) * k * k {
        let v = edge(j);
        for m in 0..M {
            acc[m] += v[m];
        }
    }
    for j in k..(t_len - 1) * k {
        let v = node(j);
        for m in 0..M {
            acc[m] -= v[m];
        }
    }
    acc
}

/// `p log p` from `l = log p`, with `0 log 0 = 0`.
#[inline]
fn plogp(l: f64) -> f64 {
    if l == f64::NEG_INFINITY {
        0.0
    } else {
        l.exp() * l
    }
}

/// `p (log p - log q)` from logs, with `0 log 0 = 0`.
#[inline]
fn kl_term(lp: f64, lq: f64) -> f64 {
    if lp == f64::NEG_INFINITY {
        0.0
    } else {
        lp.exp() * (lp - lq)
    }
}

/// Junction-tree entropy `H~(mu)` of a chain from its log-marginals.
pub(crate) fn chain_entropy(t_len: usize, k: usize, node: &[f64], edge: &[f64]) -> f64 {
    let [h] = chain_fold(t_len, k, |j| [-plogp(node[j])], |j| [-plogp(edge[j])]);
    h
}

/// Junction-tree divergence `KL~(mu || nu)` from log-marginals; not clamped, so rounding can
/// make it slightly negative.
pub(crate) fn chain_kl(
    t_len: usize,
    k: usize,
    (mu_node, mu_edge): (&[f64], &[f64]),
    (nu_node, nu_edge): (&[f64], &[f64]),
) -> f64 {
    let [d] =
        chain_fold(t_len, k, |j| [kl_term(mu_node[j], nu_node[j])], |j| [kl_term(mu_edge[j], nu_edge[j])]);
    d
}

/// Per-sequence log-marginals in two flat arenas.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogMarginals {
    k: usize,
    node: Vec<f64>,
    edge: Vec<f64>,
    node_off: Vec<usize>,
    edge_off: Vec<usize>,
}

pub(crate) fn zeros(len: usize) -> Result<Vec<f64>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| SdcaError::AllocationFailed { bytes: (len as u64).saturating_mul(8) })?;
    v.resize(len, 0.0);
    Ok(v)
}

impl LogMarginals {
    /// Zero-filled storage for sequences `[starts[i], starts[i+1])` (validated offsets) over `k`
    /// labels.
    pub(crate) fn new(starts: &[usize], k: usize) -> Result<Self> {
        let n = starts.len() - 1;
        let node_off: Vec<usize> = starts.iter().map(|&s| s * k).collect();
        let edge_off: Vec<usize> = starts.iter().enumerate().map(|(i, &s)| (s - i) * k * k).collect();
        let node = zeros(node_off[n])?;
        let edge = zeros(edge_off[n])?;
        Ok(Self { k, node, edge, node_off, edge_off })
    }

    /// Length `T` of sequence `i`.
    #[inline]
    pub(crate) fn len_of(&self, i: usize) -> usize {
        (self.node_off[i + 1] - self.node_off[i]) / self.k
    }

    /// Node (`T x K`) and edge (`(T-1) x K x K`) log-marginals of sequence `i`.
    #[inline]
    pub(crate) fn block(&self, i: usize) -> (&[f64], &[f64]) {
        (
            &self.node[self.node_off[i]..self.node_off[i + 1]],
            &self.edge[self.edge_off[i]..self.edge_off[i + 1]],
        )
    }

    /// Mutable node and edge log-marginals of sequence `i`.
    #[inline]
    pub(crate) fn block_mut(&mut self, i: usize) -> (&mut [f64], &mut [f64]) {
        (
            &mut self.node[self.node_off[i]..self.node_off[i + 1]],
            &mut self.edge[self.edge_off[i]..self.edge_off[i + 1]],
        )
    }

    /// `H~(mu_i)`.
    pub(crate) fn entropy(&self, i: usize) -> f64 {
        let (node, edge) = self.block(i);
        chain_entropy(self.len_of(i), self.k, node, edge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crf::chain::tests::{all_paths, path_score};
    use crate::crf::chain::{log_sum_exp, ChainWorkspace};
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Log-marginals of a random chain distribution, or of a mixture of two (still consistent).
    fn random_marginals(rng: &mut Xoshiro256PlusPlus, t_len: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
        let mut ws = ChainWorkspace::new();
        let mut one = || {
            let unary: Vec<f64> = (0..t_len * k).map(|_| rng.random_range(-2.0..2.0)).collect();
            let trans: Vec<f64> = (0..k * k).map(|_| rng.random_range(-2.0..2.0)).collect();
            let mut node = vec![0.0; t_len * k];
            let mut edge = vec![0.0; (t_len - 1) * k * k];
            ws.log_marginals(&unary, &trans, k, &mut node, &mut edge);
            (node, edge)
        };
        let (a, b) = (one(), one());
        let mix = |x: &[f64], y: &[f64]| -> Vec<f64> {
            x.iter().zip(y).map(|(p, q)| (0.3 * p.exp() + 0.7 * q.exp()).ln()).collect()
        };
        (mix(&a.0, &b.0), mix(&a.1, &b.1))
    }

    /// `log alpha(y)` of the junction-tree distribution of the marginals.
    fn joint_log(node: &[f64], edge: &[f64], k: usize, y: &[u32]) -> f64 {
        let t_len = y.len();
        if t_len == 1 {
            return node[y[0] as usize];
        }
        let mut l = 0.0;
        for t in 0..t_len - 1 {
            l += edge[t * k * k + y[t] as usize * k + y[t + 1] as usize];
        }
        for t in 1..t_len - 1 {
            l -= node[t * k + y[t] as usize];
        }
        l
    }

    #[test]
    fn chain_entropy_and_kl_equal_joint_ones() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for k in 1..=3 {
            for t_len in 1..=5 {
                let mu = random_marginals(&mut rng, t_len, k);
                let nu = random_marginals(&mut rng, t_len, k);
                let (mut h, mut kl, mut mass) = (0.0, 0.0, 0.0);
                for y in all_paths(t_len, k) {
                    let lm = joint_log(&mu.0, &mu.1, k, &y);
                    let ln = joint_log(&nu.0, &nu.1, k, &y);
                    mass += lm.exp();
                    h -= lm.exp() * lm;
                    kl += lm.exp() * (lm - ln);
                }
                assert!((mass - 1.0).abs() < 1e-12, "junction tree is normalised");
                let h_chain = chain_entropy(t_len, k, &mu.0, &mu.1);
                let kl_chain = chain_kl(t_len, k, (&mu.0, &mu.1), (&nu.0, &nu.1));
                assert!((h - h_chain).abs() < 1e-10, "k={k} T={t_len}: {h} vs {h_chain}");
                assert!((kl - kl_chain).abs() < 1e-10, "k={k} T={t_len}: {kl} vs {kl_chain}");
                assert!(chain_kl(t_len, k, (&mu.0, &mu.1), (&mu.0, &mu.1)).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn entropy_of_a_chain_distribution_is_log_z_minus_mean_score() {
        // H(p) = log Z - E_p[s] for p = exp(s - log Z).
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let (t_len, k) = (4, 3);
        let unary: Vec<f64> = (0..t_len * k).map(|_| rng.random_range(-1.0..1.0)).collect();
        let trans: Vec<f64> = (0..k * k).map(|_| rng.random_range(-1.0..1.0)).collect();
        let scores: Vec<f64> = all_paths(t_len, k).iter().map(|y| path_score(&unary, &trans, k, y)).collect();
        let log_z = log_sum_exp(&scores);
        let mean: f64 = scores.iter().map(|s| (s - log_z).exp() * s).sum();
        let mut node = vec![0.0; t_len * k];
        let mut edge = vec![0.0; (t_len - 1) * k * k];
        ChainWorkspace::new().log_marginals(&unary, &trans, k, &mut node, &mut edge);
        assert!((chain_entropy(t_len, k, &node, &edge) - (log_z - mean)).abs() < 1e-10);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Forward-backward marginals are locally consistent for any scores, and the chain
        /// entropy and divergence of consistent marginals are non-negative.
        #[test]
        fn marginals_are_consistent_and_sums_non_negative(
            t_len in 1usize..7,
            k in 1usize..5,
            scale in 0.01f64..60.0,
            seed in 0u64..1_000_000,
            weight in 0.0f64..1.0,
        ) {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let mut ws = ChainWorkspace::new();
            let mut one = || {
                let unary: Vec<f64> = (0..t_len * k).map(|_| rng.random_range(-scale..scale)).collect();
                let trans: Vec<f64> = (0..k * k).map(|_| rng.random_range(-scale..scale)).collect();
                let mut node = vec![0.0; t_len * k];
                let mut edge = vec![0.0; (t_len - 1) * k * k];
                ws.log_marginals(&unary, &trans, k, &mut node, &mut edge);
                (node, edge)
            };
            let (a, b) = (one(), one());
            for t in 0..t_len.saturating_sub(1) {
                for j in 0..k {
                    let out: f64 = (0..k).map(|l| a.1[(t * k + j) * k + l].exp()).sum();
                    let inc: f64 = (0..k).map(|l| a.1[(t * k + l) * k + j].exp()).sum();
                    proptest::prop_assert!((out - a.0[t * k + j].exp()).abs() < 1e-9);
                    proptest::prop_assert!((inc - a.0[(t + 1) * k + j].exp()).abs() < 1e-9);
                }
            }
            let mix = |x: &[f64], y: &[f64]| -> Vec<f64> {
                x.iter().zip(y).map(|(p, q)| (weight * p.exp() + (1.0 - weight) * q.exp()).ln()).collect()
            };
            let m = (mix(&a.0, &b.0), mix(&a.1, &b.1));
            proptest::prop_assert!(chain_entropy(t_len, k, &m.0, &m.1) >= -1e-9);
            proptest::prop_assert!(chain_kl(t_len, k, (&m.0, &m.1), (&a.0, &a.1)) >= -1e-9);
            proptest::prop_assert!(chain_kl(t_len, k, (&a.0, &a.1), (&m.0, &m.1)) >= -1e-9);
        }
    }

    #[test]
    fn arena_offsets() {
        let starts = [0, 1, 3, 6];
        let mut m = LogMarginals::new(&starts, 2).unwrap();
        assert_eq!((m.len_of(0), m.len_of(1), m.len_of(2)), (1, 2, 3));
        let (n0, e0) = m.block(0);
        assert_eq!((n0.len(), e0.len()), (2, 0));
        let (n2, e2) = m.block(2);
        assert_eq!((n2.len(), e2.len()), (6, 8));
        let (n1, e1) = m.block_mut(1);
        n1.fill(-2f64.ln());
        e1.fill(-4f64.ln());
        assert!((m.entropy(1) - 4f64.ln()).abs() < 1e-15);
        assert_eq!(m.node.len(), 12);
        assert_eq!(m.edge.len(), 12);
    }
}
