//! Which block (a CRF sequence, or a row of a linear fit) to update next: uniform, or
//! proportional to the stored block duality gaps.
//!
//! Gap sampling (Le Priol et al. 2018 section 5 and 6.3, note section 3): each visit of
//! block `i` measures its block gap (for a CRF `g_i = KL~(mu_i || nu_i)`, for a linear fit the
//! row's Fenchel-Young gap) for free, and the sampler stores it until the next visit. With
//! probability `non_uniform` (0.8 in the paper) the next block is drawn with probability
//! `g_i / sum_j g_j`, otherwise uniformly. Every gap starts at [`INITIAL_GAP`] so that unvisited
//! blocks come first. The stored gaps are stale (measured before each update); the paper shows
//! gap sampling still beats uniform, while a deterministic argmax does not converge, so it is
//! not offered. Uniform sampling is `non_uniform = 0`.
//!
//! [`SumTree`] holds the gaps in a flat binary tree of partial sums (leaves at `cap..cap + n`,
//! `cap` a power of two): an update recomputes each ancestor as `left + right` (no drifting
//! deltas, pitfall 9), a draw descends from the root; both cost `O(log n)`. The root is the
//! total, so `sum_i g_i / n` is the running gap estimate of the stopping rule.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Stored gap of a sequence that was never visited (the paper's "fake" gap).
pub const INITIAL_GAP: f64 = 100.0;

/// Partial sums over `n >= 1` non-negative weights.
#[derive(Debug, Clone, PartialEq)]
pub struct SumTree {
    n: usize,
    cap: usize,
    tree: Vec<f64>,
}

impl SumTree {
    /// A tree over `weights` (each finite and `>= 0`; `weights` non-empty).
    pub fn new(weights: &[f64]) -> Self {
        let n = weights.len().max(1);
        let cap = n.next_power_of_two();
        let mut tree = vec![0.0; 2 * cap];
        tree[cap..cap + weights.len()].copy_from_slice(weights);
        for j in (1..cap).rev() {
            tree[j] = tree[2 * j] + tree[2 * j + 1];
        }
        Self { n: weights.len(), cap, tree }
    }

    /// Number of weights.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are no weights.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Sum of all weights.
    #[inline]
    pub fn total(&self) -> f64 {
        self.tree[1]
    }

    /// Weight `i`.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        self.tree[self.cap + i]
    }

    /// Sets weight `i` (finite, `>= 0`) and recomputes its ancestors from their children.
    pub fn set(&mut self, i: usize, weight: f64) {
        debug_assert!(i < self.n && weight >= 0.0 && weight.is_finite());
        let mut j = self.cap + i;
        self.tree[j] = weight;
        while j > 1 {
            j /= 2;
            self.tree[j] = self.tree[2 * j] + self.tree[2 * j + 1];
        }
    }

    /// The index `i` with `sum_{j<i} w_j <= r < sum_{j<=i} w_j`, for `r` in `[0, total)`.
    ///
    /// Never returns a zero-weight index while the total is positive, even when rounding puts
    /// `r` at or past a boundary; returns 0 when every weight is 0.
    pub fn find(&self, mut r: f64) -> usize {
        let mut j = 1;
        while j < self.cap {
            let (left, right) = (self.tree[2 * j], self.tree[2 * j + 1]);
            if (r < left && left > 0.0) || right <= 0.0 {
                j *= 2;
            } else {
                r -= left;
                j = 2 * j + 1;
            }
        }
        j - self.cap
    }
}

/// The sampling rule with its stored gaps.
#[derive(Debug, Clone, PartialEq)]
pub struct GapSampler {
    non_uniform: f64,
    gaps: SumTree,
}

impl GapSampler {
    /// `n >= 1` blocks, every stored gap at [`INITIAL_GAP`]; a fraction `non_uniform` of the
    /// draws follows the gaps (`0`: uniform sampling).
    pub fn new(non_uniform: f64, n: usize) -> Self {
        Self { non_uniform, gaps: SumTree::new(&vec![INITIAL_GAP; n]) }
    }

    /// Draws the next block.
    pub fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> usize {
        let n = self.gaps.len();
        if self.non_uniform > 0.0 {
            let total = self.gaps.total();
            if rng.random::<f64>() < self.non_uniform && total > 0.0 {
                return self.gaps.find(rng.random::<f64>() * total).min(n - 1);
            }
        }
        rng.random_range(0..n)
    }

    /// Stores the block gap of block `i` (negative or NaN values are stored as 0).
    pub fn set_gap(&mut self, i: usize, gap: f64) {
        self.gaps.set(i, if gap > 0.0 && gap.is_finite() { gap } else { 0.0 });
    }

    /// Stored gap of block `i`.
    pub fn gap(&self, i: usize) -> f64 {
        self.gaps.get(i)
    }

    /// Sum of the stored gaps.
    pub fn total(&self) -> f64 {
        self.gaps.total()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn sums_and_find_match_a_linear_scan() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        for n in [1usize, 2, 3, 5, 8, 13] {
            let mut w: Vec<f64> = (0..n).map(|_| rng.random_range(0.0..2.0)).collect();
            let mut t = SumTree::new(&w);
            for _ in 0..20 {
                let i = rng.random_range(0..n);
                w[i] = if rng.random::<f64>() < 0.3 { 0.0 } else { rng.random_range(0.0..2.0) };
                t.set(i, w[i]);
                let total: f64 = w.iter().sum();
                assert!((t.total() - total).abs() < 1e-12);
                if total == 0.0 {
                    assert_eq!(t.find(0.0), 0);
                    continue;
                }
                for _ in 0..10 {
                    let r = rng.random::<f64>() * total;
                    let i = t.find(r);
                    let below: f64 = w[..i].iter().sum();
                    assert!(
                        w[i] > 0.0 && below <= r + 1e-12 && r < below + w[i] + 1e-12,
                        "n={n} r={r} i={i}"
                    );
                }
                // Boundaries: r = total (rounding overshoot) still lands on a positive weight.
                assert!(w[t.find(total)] > 0.0 && w[t.find(total * (1.0 + 1e-15))] > 0.0);
            }
        }
    }

    #[test]
    fn gap_sampling_follows_the_gaps() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let mut s = GapSampler::new(1.0, 4);
        for (i, g) in [1.0, 0.0, 3.0, -5.0].into_iter().enumerate() {
            s.set_gap(i, g);
        }
        assert_eq!(s.gap(3), 0.0);
        let mut count = [0usize; 4];
        let draws = 20_000;
        for _ in 0..draws {
            count[s.draw(&mut rng)] += 1;
        }
        assert_eq!((count[1], count[3]), (0, 0));
        let frac = count[2] as f64 / draws as f64;
        assert!((frac - 0.75).abs() < 0.02, "{frac}");

        // Mixed with uniform: P(i) = 0.8 g_i / G + 0.2 / n.
        let mut s = GapSampler::new(0.8, 4);
        for (i, g) in [1.0, 0.0, 3.0, 0.0].into_iter().enumerate() {
            s.set_gap(i, g);
        }
        let mut count = [0usize; 4];
        for _ in 0..draws {
            count[s.draw(&mut rng)] += 1;
        }
        let frac1 = count[1] as f64 / draws as f64;
        assert!((frac1 - 0.05).abs() < 0.01, "{frac1}");

        // Uniform ignores the gaps; all-zero gaps fall back to uniform.
        for non_uniform in [0.0, 0.8] {
            let mut s = GapSampler::new(non_uniform, 4);
            if non_uniform > 0.0 {
                (0..4).for_each(|i| s.set_gap(i, 0.0));
            } else {
                s.set_gap(0, 50.0);
            }
            let mut count = [0usize; 4];
            for _ in 0..draws {
                count[s.draw(&mut rng)] += 1;
            }
            assert!(count.iter().all(|&c| (c as f64 / draws as f64 - 0.25).abs() < 0.02), "{count:?}");
        }
    }
}
