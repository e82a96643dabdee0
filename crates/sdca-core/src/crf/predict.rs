//! Prediction with fitted CRF weights: Viterbi labels and per-token marginals.
//!
//! For each sequence the unary scores `theta_t(k)` of [`crate::crf::model`] are built from the
//! weights (attributes the model does not know, index `>= A`, are ignored), then
//! [`ChainWorkspace::viterbi`] gives `argmax_y s(y)` and [`ChainWorkspace::marginals`] (scaled
//! forward-backward) gives `p(y_t = k | x)` and `log Z`, with an error that does not grow with
//! the length of the sequence.

use super::chain::{ChainWorkspace, Transitions};
use super::model::{check_starts, unary_scores, CrfWeights, TokenRows};
use crate::error::{Result, SdcaError};

/// Per-token label marginals of a set of sequences.
#[derive(Debug, Clone, PartialEq)]
pub struct CrfMarginals {
    /// Number of labels `K`.
    pub n_labels: usize,
    /// `p(y_t = k | x)` for every row `t`, row-major `N x K`.
    pub node: Vec<f64>,
    /// `log Z(x_i)` per sequence.
    pub log_partition: Vec<f64>,
}

fn for_each_sequence<D: TokenRows>(
    model: &CrfWeights<'_>,
    x: &D,
    starts: &[usize],
    mut f: impl FnMut(usize, &[f64], &mut ChainWorkspace),
) -> Result<()> {
    check_starts(starts, x.n_rows())?;
    let k = model.n_labels();
    let max_len = starts.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let mut theta = vec![0.0; max_len * k];
    let mut ws = ChainWorkspace::with_capacity(max_len, k);
    for (i, w) in starts.windows(2).enumerate() {
        let th = &mut theta[..(w[1] - w[0]) * k];
        unary_scores(x, w[0]..w[1], model.emission_view(), (model.bias(), model.start(), model.end()), k, th);
        f(i, th, &mut ws);
    }
    Ok(())
}

/// Viterbi labels, one per row, of the sequences `starts[i]..starts[i + 1]` of `x`.
///
/// Offsets are checked as in [`crate::crf::CrfProblem::new`]; feature columns beyond the model's
/// `n_attributes` are ignored. Ties go to the lowest label.
pub fn crf_predict<D: TokenRows>(model: &CrfWeights<'_>, x: &D, starts: &[usize]) -> Result<Vec<u32>> {
    let mut labels = vec![0u32; x.n_rows()];
    for_each_sequence(model, x, starts, |i, theta, ws| {
        ws.viterbi(theta, model.transition(), model.n_labels(), &mut labels[starts[i]..starts[i + 1]]);
    })?;
    Ok(labels)
}

/// Per-token marginals `p(y_t = k | x)` and `log Z` per sequence (same inputs as
/// [`crf_predict`]).
pub fn crf_marginals<D: TokenRows>(model: &CrfWeights<'_>, x: &D, starts: &[usize]) -> Result<CrfMarginals> {
    let k = model.n_labels();
    let mut node = vec![0.0; x.n_rows() * k];
    let mut log_partition = Vec::with_capacity(starts.len().saturating_sub(1));
    let mut edge: Vec<f64> = Vec::new();
    let trans = Transitions::new(model.transition());
    for_each_sequence(model, x, starts, |i, theta, ws| {
        let t_len = starts[i + 1] - starts[i];
        edge.resize((t_len - 1) * k * k, 0.0);
        let out = &mut node[starts[i] * k..starts[i + 1] * k];
        log_partition.push(ws.marginals(theta, &trans, k, out, &mut edge, None));
        // Renormalised per token: at scores of 1e16 and more the scores themselves carry more
        // rounding than the marginals' sum can absorb (two labels tied at 6e154 both got 1).
        for token in out.chunks_mut(k) {
            let total: f64 = token.iter().sum();
            token.iter_mut().for_each(|p| *p /= total);
        }
    })?;
    // Scores that overflowed (weights times features beyond 1e308) leave NaN.
    if node.iter().chain(&log_partition).any(|v| !v.is_finite()) {
        return Err(SdcaError::NonFiniteResult { what: "the crf marginals" });
    }
    Ok(CrfMarginals { n_labels: k, node, log_partition })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crf::chain::log_sum_exp;
    use crate::crf::chain::tests::all_paths;
    use crate::data::{CsrView, DenseView};
    use crate::error::SdcaError;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    #[test]
    fn viterbi_and_marginals_match_enumeration() {
        let (k, a) = (3usize, 4usize);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(21);
        let mut draw = |len: usize| -> Vec<f64> { (0..len).map(|_| rng.random_range(-1.5..1.5)).collect() };
        let (emission, transition) = (draw(k * a), draw(k * k));
        let (start, end, bias) = (draw(k), draw(k), draw(k));
        let model = CrfWeights::new(k, a, &emission, &transition, &start, &end, &bias).unwrap();
        // Ten tokens in sequences of length 1, 2, 4, 3; columns 4 and 5 are unknown to the model.
        let starts = [0usize, 1, 3, 7, 10];
        let mut indptr = vec![0i64];
        let (mut indices, mut values, mut known) = (vec![], vec![], vec![0.0; 10 * a]);
        for row in 0..10 {
            for j in 0..6u32 {
                // Two entries out of three are stored.
                if (row as u32 + j + 1) % 3 < 2 {
                    let v = 0.5 + (row as f64 + j as f64) / 7.0;
                    indices.push(j);
                    values.push(v);
                    if (j as usize) < a {
                        known[row * a + j as usize] = v;
                    }
                }
            }
            indptr.push(indices.len() as i64);
        }
        let x = CsrView::new(&indptr, &indices, &values, 6).unwrap();
        let labels = crf_predict(&model, &x, &starts).unwrap();
        let marg = crf_marginals(&model, &x, &starts).unwrap();
        for (i, w) in starts.windows(2).enumerate() {
            let t_len = w[1] - w[0];
            let score = |y: &[u32]| -> f64 {
                let mut s = start[y[0] as usize] + end[y[t_len - 1] as usize];
                for (t, &l) in y.iter().enumerate() {
                    let l = l as usize;
                    s += bias[l]
                        + (0..a).map(|c| known[(w[0] + t) * a + c] * emission[l * a + c]).sum::<f64>();
                }
                s + y.windows(2).map(|q| transition[q[0] as usize * k + q[1] as usize]).sum::<f64>()
            };
            let paths = all_paths(t_len, k);
            let scores: Vec<f64> = paths.iter().map(|y| score(y)).collect();
            let best = (0..paths.len()).max_by(|&p, &q| scores[p].total_cmp(&scores[q])).unwrap();
            assert_eq!(&labels[w[0]..w[1]], &paths[best][..], "sequence {i}");
            let log_z = log_sum_exp(&scores);
            assert!((marg.log_partition[i] - log_z).abs() < 1e-10);
            for t in 0..t_len {
                for l in 0..k {
                    let brute: f64 = paths
                        .iter()
                        .zip(&scores)
                        .filter(|(y, _)| y[t] as usize == l)
                        .map(|(_, s)| (s - log_z).exp())
                        .sum();
                    assert!((marg.node[(w[0] + t) * k + l] - brute).abs() < 1e-10);
                }
            }
        }
        // A dense view of the known columns predicts the same labels.
        let dense = DenseView::new(&known, 10, a).unwrap();
        assert_eq!(crf_predict(&model, &dense, &starts).unwrap(), labels);
        // Bad offsets are reported, not indexed.
        assert!(matches!(
            crf_predict(&model, &x, &[0, 4, 4, 10]),
            Err(SdcaError::EmptySequence { sequence: 1, row: 4 })
        ));
        assert!(crf_marginals(&model, &x, &[0, 4, 11]).is_err());
    }

    /// Found by the `crf` fuzz target: two labels tied at a score of 6e154 both got marginal 1
    /// (`log Z = m + ln 2` rounds to `m`), and the single label of a 5-token chain scored 1e151
    /// got NaN in the middle tokens; scores that overflow are an error.
    #[test]
    fn marginals_are_distributions_at_huge_scores() {
        let big = [2e154, 0.0, 2e154];
        let model = CrfWeights::new(3, 0, &[], &[0.0; 9], &big, &big, &big).unwrap();
        let x = DenseView::new(&[], 1, 0).unwrap();
        let marg = crf_marginals(&model, &x, &[0, 1]).unwrap();
        assert_eq!(marg.node, [0.5, 0.0, 0.5]);
        assert_eq!(crf_predict(&model, &x, &[0, 1]).unwrap(), [0]);

        let one = [1e150];
        let model = CrfWeights::new(1, 1, &one, &one, &one, &one, &one).unwrap();
        let x = DenseView::new(&[0.0; 5], 5, 1).unwrap();
        assert_eq!(crf_marginals(&model, &x, &[0, 5]).unwrap().node, [1.0; 5]);
        let x = DenseView::new(&[1e300; 5], 5, 1).unwrap();
        let err = crf_marginals(&model, &x, &[0, 5]).unwrap_err();
        assert!(matches!(err, SdcaError::NonFiniteResult { .. }), "{err}");
    }
}
