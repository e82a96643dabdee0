//! The CRF dual variables: node and edge marginals per sequence, stored as probabilities.
//!
//! The dual of Le Priol et al. 2018 eq. 3 has one distribution `alpha_i` over the `K^T`
//! labellings of sequence `i`. On a chain it is represented exactly by its clique marginals
//! Node marginals `mu_t` in `Delta_K` (`t = 1..T`) and edge marginals
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
//! sum_k u` ([`lattice_fold`]), added block by block with compensation so that its rounding
//! error is a few ulps of `sum |terms|` whatever the length; the `log` of each cell is the
//! vectorised one of `crf/vlog.rs`. Special cases: `T = 1` sums the
//! single node, `T = 2` the single edge (no separator). Entropies use `0 log 0 = 0`.
//!
//! Storage: two flat arenas of `f64` probabilities (the oracle's marginals
//! go straight into them, and a step is `mu <- mu + gamma (nu - mu)`, no `exp` or `log`), nodes
//! `[t][k]` at `node_off[i] = K * start_i` and edges `[t][k][l]` at `edge_off[i] = K^2 *
//! (start_i - i)`, about `8 (K N + K^2 (N - n))` bytes for `N` tokens in `n` sequences. A step
//! keeps every entry `>= 0` in floating point: `nu - mu >= -mu` and `gamma (nu - mu) >= -mu`
//! are rounded monotonically.

use std::marker::PhantomData;

use rayon::prelude::*;

use super::chain::Sum;
use super::vlog::{entropy_kl, xlogx_sum};
use crate::error::{Result, SdcaError};

/// Lattice cells per block of a [`lattice_fold`]: blocks are summed plainly (in SIMD lanes),
/// blocks added with compensation.
const BLOCK: usize = 256;

/// Folds `M` chain sums at once from a blockwise term function: `f(edge, range)` returns the sums
/// of the terms of the edge (`edge = true`, flat entries `(t * K + k) * K + l`) or node (flat
/// entries `t * K + k`) cells in `range`. Edges count `+`, interior nodes `-`; a single node
/// (`T = 1`) counts `+`. Blocks of [`BLOCK`] cells are added with compensation, so the rounding
/// is a few ulps of `sum |terms|` whatever the length.
#[inline]
pub(crate) fn lattice_fold<const M: usize>(
    t_len: usize,
    k: usize,
    mut f: impl FnMut(bool, std::ops::Range<usize>) -> [f64; M],
) -> [f64; M] {
    let mut acc = [Sum::default(); M];
    let mut run = |edge: bool, range: std::ops::Range<usize>, sign: f64| {
        let mut start = range.start;
        while start < range.end {
            let end = (start + BLOCK).min(range.end);
            let v = f(edge, start..end);
            for m in 0..M {
                acc[m].add(sign * v[m]);
            }
            start = end;
        }
    };
    if t_len == 1 {
        run(false, 0..k, 1.0);
    } else {
        run(true, 0..(t_len - 1) * k * k, 1.0);
        run(false, k..(t_len - 1) * k, -1.0);
    }
    acc.map(|a| a.get())
}

/// Junction-tree entropy `H~(mu)` of a chain from its marginals.
pub(crate) fn chain_entropy(t_len: usize, k: usize, node: &[f64], edge: &[f64]) -> f64 {
    let [h] = lattice_fold(t_len, k, |e, r| [if e { xlogx_sum(&edge[r]) } else { xlogx_sum(&node[r]) }]);
    -h
}

/// `(H~(mu), KL~(mu || nu))` from the marginals `mu` and the logs of `nu` per cell (nodes `T x K`,
/// edges `(T-1) x K x K`). Each divergence term is `mu (log mu - log nu)`, small where `mu` is
/// close to `nu`, so the sum is accurate near the optimum. Not clamped: rounding can make the
/// divergence slightly negative.
pub(crate) fn chain_entropy_kl(
    t_len: usize,
    k: usize,
    (mu_node, mu_edge): (&[f64], &[f64]),
    (lnu_node, lnu_edge): (&[f64], &[f64]),
) -> (f64, f64) {
    let [h, d] = lattice_fold(t_len, k, |e, r| {
        if e {
            entropy_kl(&mu_edge[r.clone()], &lnu_edge[r])
        } else {
            entropy_kl(&mu_node[r.clone()], &lnu_node[r])
        }
    });
    (-h, d)
}

/// One sequence's node and edge marginals, mutable.
pub(crate) type BlockMut<'m> = (&'m mut [f64], &'m mut [f64]);

/// Per-sequence marginals in two flat arenas.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Marginals {
    k: usize,
    node: Vec<f64>,
    edge: Vec<f64>,
    node_off: Vec<usize>,
    edge_off: Vec<usize>,
}

/// `len` zeros ([`reserve`], then written).
pub(crate) fn zeros(len: usize) -> Result<Vec<f64>> {
    let mut v = reserve(len)?;
    v.resize(len, 0.0);
    Ok(v)
}

/// Size of a transparent huge page on Linux (x86-64 and aarch64 with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// An empty vector with room for `len` values (a refused allocation is an error), its memory
/// advised to be backed by huge pages.
///
/// A CRF step reads the emission rows of about 150 attributes at random places in `w` (9.5 MB
/// on CoNLL NER): on 4 KiB pages nearly every row is a TLB miss and a page walk, and those
/// walks cost about 40% of an epoch (0.35 against 0.20 CPU s per epoch on NER, medians of 8
/// runs). Linux backs a region with transparent huge pages at its first touch when the
/// region was advised so (`madvise(MADV_HUGEPAGE)`; in THP's `madvise` mode, a common default,
/// nothing else does), so the advice is given here, before anything is written, for the
/// 2 MiB-aligned part of buffers of at least two such pages. An allocator may hand out memory
/// it used before, already backed by small pages: those are dropped first (`MADV_DONTNEED`;
/// the vector holds nothing yet), so the first write faults in huge ones. Elsewhere, or if the
/// kernel declines, nothing changes.
pub(crate) fn reserve<T>(len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| SdcaError::AllocationFailed {
        bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    })?;
    advise_huge_pages(&v);
    Ok(v)
}

#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(v: &Vec<T>) {
    use std::ffi::{c_int, c_void};
    extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
    // `<asm-generic/mman-common.h>`, the same on every Linux architecture.
    const MADV_DONTNEED: c_int = 4;
    const MADV_HUGEPAGE: c_int = 14;
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < 2 * HUGE_PAGE {
        return;
    }
    let start = v.as_ptr() as usize;
    let (lo, hi) = (start.next_multiple_of(HUGE_PAGE), (start + bytes) / HUGE_PAGE * HUGE_PAGE);
    if hi > lo {
        // SAFETY: `[lo, hi)` lies inside the vector's allocation (private anonymous memory, as
        // every allocator's), which nothing else uses and which holds no value yet: dropping
        // its pages leaves it valid (read as zeros until written), and the advice changes how
        // the kernel backs it, never its validity. A failure (an old kernel, THP disabled)
        // leaves the pages as they were.
        unsafe {
            madvise(lo as *mut c_void, hi - lo, MADV_DONTNEED);
            madvise(lo as *mut c_void, hi - lo, MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages<T>(_v: &Vec<T>) {}

impl Marginals {
    #[cfg(test)]
    /// Zero-filled storage for sequences `[starts[i], starts[i+1])` (validated offsets) over `k`
    /// labels.
    pub(crate) fn new(starts: &[usize], k: usize) -> Result<Self> {
        Self::filled(starts, k, (0.0, 0.0), false)
    }

    /// Storage as [`Self::new`] with every node entry `fill.0` and every edge entry `fill.1`,
    /// written in parallel (on the current rayon pool) when `parallel`: the first write to a
    /// page is where the kernel zeroes it, and on POS tagging (45 labels) the edge marginals
    /// take 3 GB.
    pub(crate) fn filled(starts: &[usize], k: usize, fill: (f64, f64), parallel: bool) -> Result<Self> {
        let n = starts.len() - 1;
        let node_off: Vec<usize> = starts.iter().map(|&s| s * k).collect();
        let edge_off: Vec<usize> = starts.iter().enumerate().map(|(i, &s)| (s - i) * k * k).collect();
        let build = |len: usize, value: f64| -> Result<Vec<f64>> {
            let mut v = reserve(len)?;
            if parallel {
                v.par_extend(rayon::iter::repeat_n(value, len));
            } else {
                v.resize(len, value);
            }
            Ok(v)
        };
        let node = build(node_off[n], fill.0)?;
        let edge = build(edge_off[n], fill.1)?;
        Ok(Self { k, node, edge, node_off, edge_off })
    }

    #[cfg(test)]
    /// Length `T` of sequence `i`.
    #[inline]
    pub(crate) fn len_of(&self, i: usize) -> usize {
        (self.node_off[i + 1] - self.node_off[i]) / self.k
    }

    /// Node (`T x K`) and edge (`(T-1) x K x K`) marginals of sequence `i`.
    #[inline]
    pub(crate) fn block(&self, i: usize) -> (&[f64], &[f64]) {
        (
            &self.node[self.node_off[i]..self.node_off[i + 1]],
            &self.edge[self.edge_off[i]..self.edge_off[i + 1]],
        )
    }

    /// Mutable node and edge marginals of sequence `i`.
    #[inline]
    pub(crate) fn block_mut(&mut self, i: usize) -> (&mut [f64], &mut [f64]) {
        (
            &mut self.node[self.node_off[i]..self.node_off[i + 1]],
            &mut self.edge[self.edge_off[i]..self.edge_off[i + 1]],
        )
    }

    /// The blocks as shared by the threads of a pipeline of steps ([`SharedBlocks`]), for as
    /// long as the returned view lives.
    pub(crate) fn shared(&mut self) -> SharedBlocks<'_> {
        SharedBlocks {
            node: self.node.as_mut_ptr(),
            edge: self.edge.as_mut_ptr(),
            node_off: &self.node_off,
            edge_off: &self.edge_off,
            _owner: PhantomData,
        }
    }

    /// Node and edge marginals of the distinct sequences `ids`, in that order.
    pub(crate) fn blocks_mut(&mut self, ids: &[usize]) -> Vec<BlockMut<'_>> {
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_unstable_by_key(|&j| ids[j]);
        let mut out: Vec<(usize, BlockMut<'_>)> = Vec::with_capacity(ids.len());
        let (mut node, mut edge) = (&mut self.node[..], &mut self.edge[..]);
        let (mut node_at, mut edge_at) = (0, 0);
        for j in order {
            let i = ids[j];
            let (n0, n1, e0, e1) =
                (self.node_off[i], self.node_off[i + 1], self.edge_off[i], self.edge_off[i + 1]);
            debug_assert!(n0 >= node_at && e0 >= edge_at, "sequences must be distinct");
            let (_, rest) = std::mem::take(&mut node).split_at_mut(n0 - node_at);
            let (nb, rest) = rest.split_at_mut(n1 - n0);
            node = rest;
            let (_, rest) = std::mem::take(&mut edge).split_at_mut(e0 - edge_at);
            let (eb, rest) = rest.split_at_mut(e1 - e0);
            edge = rest;
            (node_at, edge_at) = (n1, e1);
            out.push((j, (nb, eb)));
        }
        out.sort_unstable_by_key(|(j, _)| *j);
        out.into_iter().map(|(_, b)| b).collect()
    }

    #[cfg(test)]
    /// `H~(mu_i)`.
    pub(crate) fn entropy(&self, i: usize) -> f64 {
        let (node, edge) = self.block(i);
        chain_entropy(self.len_of(i), self.k, node, edge)
    }
}

/// The marginals of every sequence, shared by the threads of the pipelined parallel steps
/// (`crf/sdca.rs`): each thread reads and writes the blocks of the sequences its tasks own, and
/// the pipeline's schedule keeps the owners of a block apart (no two threads touch the same
/// block unless both only read it). Borrow-checked slices cannot express "disjoint, but decided
/// at run time, step by step", hence raw access with the schedule as the safety argument; the
/// view holds the `&mut Marginals` it came from, so nothing else touches the storage meanwhile.
pub(crate) struct SharedBlocks<'m> {
    node: *mut f64,
    edge: *mut f64,
    node_off: &'m [usize],
    edge_off: &'m [usize],
    _owner: PhantomData<&'m mut [f64]>,
}

// SAFETY: the view is a `&mut` borrow of plain `f64` storage spread over threads; what may be
// touched where is the callers' contract on `block` and `block_mut`.
unsafe impl Send for SharedBlocks<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for SharedBlocks<'_> {}

impl SharedBlocks<'_> {
    /// Node and edge marginals of sequence `i`.
    ///
    /// # Safety
    ///
    /// No thread may write block `i` while the returned slices live.
    #[inline]
    pub(crate) unsafe fn block(&self, i: usize) -> (&[f64], &[f64]) {
        let (n0, n1, e0, e1) =
            (self.node_off[i], self.node_off[i + 1], self.edge_off[i], self.edge_off[i + 1]);
        // SAFETY: the offsets are those of the storage this view borrows (in bounds, `n0 <= n1`,
        // `e0 <= e1`), and the caller guarantees no concurrent write to these ranges.
        unsafe {
            (
                std::slice::from_raw_parts(self.node.add(n0), n1 - n0),
                std::slice::from_raw_parts(self.edge.add(e0), e1 - e0),
            )
        }
    }

    /// Mutable node and edge marginals of sequence `i`.
    ///
    /// # Safety
    ///
    /// No other thread may read or write block `i` while the returned slices live.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn block_mut(&self, i: usize) -> (&mut [f64], &mut [f64]) {
        let (n0, n1, e0, e1) =
            (self.node_off[i], self.node_off[i + 1], self.edge_off[i], self.edge_off[i + 1]);
        // SAFETY: in bounds as in `block`; the caller guarantees exclusive access to the ranges.
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.node.add(n0), n1 - n0),
                std::slice::from_raw_parts_mut(self.edge.add(e0), e1 - e0),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crf::chain::tests::{all_paths, path_score};
    use crate::crf::chain::{log_sum_exp, ChainWorkspace};
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    type Pair = (Vec<f64>, Vec<f64>);

    /// Log-marginals of a random chain distribution.
    fn chain_logs(rng: &mut Xoshiro256PlusPlus, t_len: usize, k: usize, scale: f64) -> Pair {
        let unary: Vec<f64> = (0..t_len * k).map(|_| rng.random_range(-scale..scale)).collect();
        let trans: Vec<f64> = (0..k * k).map(|_| rng.random_range(-scale..scale)).collect();
        let mut node = vec![0.0; t_len * k];
        let mut edge = vec![0.0; (t_len - 1) * k * k];
        ChainWorkspace::new().log_marginals(&unary, &trans, k, &mut node, &mut edge);
        (node, edge)
    }

    fn exp(p: &Pair) -> Pair {
        (p.0.iter().map(|l| l.exp()).collect(), p.1.iter().map(|l| l.exp()).collect())
    }

    /// Marginals of a mixture of two chain distributions (consistent, not a chain
    /// distribution itself).
    fn mixture(a: &Pair, b: &Pair, weight: f64) -> Pair {
        let mix = |x: &[f64], y: &[f64]| -> Vec<f64> {
            x.iter().zip(y).map(|(p, q)| weight * p + (1.0 - weight) * q).collect()
        };
        (mix(&a.0, &b.0), mix(&a.1, &b.1))
    }

    /// `log alpha(y)` of the junction-tree distribution of the marginals.
    fn joint_log(node: &[f64], edge: &[f64], k: usize, y: &[u32]) -> f64 {
        let t_len = y.len();
        if t_len == 1 {
            return node[y[0] as usize].ln();
        }
        let mut l = 0.0;
        for t in 0..t_len - 1 {
            l += edge[t * k * k + y[t] as usize * k + y[t + 1] as usize].ln();
        }
        for t in 1..t_len - 1 {
            l -= node[t * k + y[t] as usize].ln();
        }
        l
    }

    #[test]
    fn blocks_mut_hands_out_the_named_blocks_in_order() {
        let starts = [0usize, 2, 3, 7, 8];
        let mut m = Marginals::new(&starts, 2).unwrap();
        for i in 0..4 {
            let (node, edge) = m.block_mut(i);
            node.fill(i as f64);
            edge.fill(10.0 + i as f64);
        }
        let got = m.blocks_mut(&[3, 0, 2]);
        let seen: Vec<(usize, usize, f64, f64)> = got
            .iter()
            .map(|(n, e)| {
                (n.len(), e.len(), n.first().copied().unwrap_or(-1.0), e.first().copied().unwrap_or(-1.0))
            })
            .collect();
        assert_eq!(seen, vec![(2, 0, 3.0, -1.0), (4, 4, 0.0, 10.0), (8, 12, 2.0, 12.0)]);
    }

    #[test]
    fn chain_entropy_and_kl_equal_joint_ones() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        for k in 1..=3 {
            for t_len in 1..=5 {
                let (a, b) =
                    (exp(&chain_logs(&mut rng, t_len, k, 2.0)), exp(&chain_logs(&mut rng, t_len, k, 2.0)));
                let mu = mixture(&a, &b, 0.3);
                let lnu = chain_logs(&mut rng, t_len, k, 2.0);
                let nu = exp(&lnu);
                let (mut h, mut kl, mut mass) = (0.0, 0.0, 0.0);
                for y in all_paths(t_len, k) {
                    let lm = joint_log(&mu.0, &mu.1, k, &y);
                    let ln = joint_log(&nu.0, &nu.1, k, &y);
                    mass += lm.exp();
                    h -= lm.exp() * lm;
                    kl += lm.exp() * (lm - ln);
                }
                assert!((mass - 1.0).abs() < 1e-12, "junction tree is normalised");
                let (h_chain, kl_chain) = chain_entropy_kl(t_len, k, (&mu.0, &mu.1), (&lnu.0, &lnu.1));
                assert!((h - h_chain).abs() < 1e-10, "k={k} T={t_len}: {h} vs {h_chain}");
                assert!((h - chain_entropy(t_len, k, &mu.0, &mu.1)).abs() < 1e-10);
                assert!((kl - kl_chain).abs() < 1e-10, "k={k} T={t_len}: {kl} vs {kl_chain}");
                let lmu = (
                    mu.0.iter().map(|p| p.ln()).collect::<Vec<_>>(),
                    mu.1.iter().map(|p| p.ln()).collect::<Vec<_>>(),
                );
                assert!(chain_entropy_kl(t_len, k, (&mu.0, &mu.1), (&lmu.0, &lmu.1)).1.abs() < 1e-14);
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
        let p = exp(&(node, edge));
        assert!((chain_entropy(t_len, k, &p.0, &p.1) - (log_z - mean)).abs() < 1e-10);
    }

    #[test]
    fn chain_sums_of_long_chains_do_not_drift() {
        // A chain of 10^6 identical independent positions: H~ = T H(p), exactly.
        let (t_len, k) = (1_000_000usize, 2usize);
        let p = [0.3, 0.7];
        let node: Vec<f64> = (0..t_len).flat_map(|_| p).collect();
        let edge: Vec<f64> =
            (0..t_len - 1).flat_map(|_| [p[0] * p[0], p[0] * p[1], p[1] * p[0], p[1] * p[1]]).collect();
        let h1 = -(p[0] * p[0].ln() + p[1] * p[1].ln());
        let h = chain_entropy(t_len, k, &node, &edge);
        let exact = t_len as f64 * h1;
        assert!(((h - exact) / exact).abs() < 1e-14, "{h} vs {exact}");
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
            let la = chain_logs(&mut rng, t_len, k, scale);
            let lb = chain_logs(&mut rng, t_len, k, scale);
            let (a, b) = (exp(&la), exp(&lb));
            for t in 0..t_len.saturating_sub(1) {
                for j in 0..k {
                    let out: f64 = (0..k).map(|l| a.1[(t * k + j) * k + l]).sum();
                    let inc: f64 = (0..k).map(|l| a.1[(t * k + l) * k + j]).sum();
                    proptest::prop_assert!((out - a.0[t * k + j]).abs() < 1e-9);
                    proptest::prop_assert!((inc - a.0[(t + 1) * k + j]).abs() < 1e-9);
                }
            }
            let m = mixture(&a, &b, weight);
            proptest::prop_assert!(chain_entropy(t_len, k, &m.0, &m.1) >= -1e-9);
            proptest::prop_assert!(chain_entropy_kl(t_len, k, (&m.0, &m.1), (&la.0, &la.1)).1 >= -1e-9);
        }
    }

    #[test]
    fn arena_offsets() {
        let starts = [0, 1, 3, 6];
        let mut m = Marginals::new(&starts, 2).unwrap();
        assert_eq!((m.len_of(0), m.len_of(1), m.len_of(2)), (1, 2, 3));
        let (n0, e0) = m.block(0);
        assert_eq!((n0.len(), e0.len()), (2, 0));
        let (n2, e2) = m.block(2);
        assert_eq!((n2.len(), e2.len()), (6, 8));
        let (n1, e1) = m.block_mut(1);
        n1.fill(0.5);
        e1.fill(0.25);
        assert!((m.entropy(1) - 4f64.ln()).abs() < 1e-15);
        assert_eq!(m.node.len(), 12);
        assert_eq!(m.edge.len(), 12);
    }
}
