//! Prediction with a fitted linear model: scores, class probabilities and the predicted class.
//!
//! The CRF's counterpart is [`crate::crf::predict`]. A model is read as the fit returns it
//! ([`crate::solver::FitResult`]): `coef` output-major (`k` blocks of `d` weights, one per
//! score) and one intercept per score; `k = 1` for binary and regression models.

use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::sigmoid;
use crate::math::log_sum_exp;

/// A fitted linear model, borrowed.
#[derive(Debug, Clone, Copy)]
pub struct LinearModel<'a> {
    coef: &'a [f64],
    intercept: &'a [f64],
}

impl<'a> LinearModel<'a> {
    /// Wraps `coef` (`k` blocks of `d`) and `k` intercepts; errors when `coef` does not split
    /// into `k` equal blocks.
    pub fn new(coef: &'a [f64], intercept: &'a [f64]) -> Result<Self> {
        let k = intercept.len();
        if k == 0 || !coef.len().is_multiple_of(k) {
            return Err(SdcaError::ShapeMismatch {
                what: "model coef vs its intercepts (k blocks of d weights)",
                expected: k.max(1) * (coef.len() / k.max(1)),
                got: coef.len(),
            });
        }
        Ok(Self { coef, intercept })
    }

    /// Scores per row `k`.
    pub fn n_outputs(&self) -> usize {
        self.intercept.len()
    }

    /// Features `d` the model was fitted on.
    pub fn width(&self) -> usize {
        self.coef.len() / self.n_outputs()
    }

    /// The `k` scores `x_r . w_c + b_c` of row `r` into `out`. Errors when the row holds a
    /// feature index the model does not have ([`SdcaError::IndexOutOfRange`]).
    pub fn scores_into<D: Rows>(&self, x: &D, r: usize, out: &mut [f64]) -> Result<()> {
        let d = self.width();
        for (c, (o, &b)) in out.iter_mut().zip(self.intercept).enumerate() {
            *o = x.dot_checked(r, &self.coef[c * d..(c + 1) * d])? + b;
        }
        Ok(())
    }
}

/// Class probabilities from the scores of a probabilistic model into `out`: the sigmoid of a
/// binary logistic model's one score (the positive class's probability), the softmax of a
/// multinomial model's `k` scores.
pub fn probabilities(scores: &[f64], out: &mut [f64]) {
    match scores {
        [t] => out[0] = sigmoid(*t),
        _ => {
            let lse = log_sum_exp(scores);
            out.iter_mut().zip(scores).for_each(|(p, s)| *p = (s - lse).exp());
        }
    }
}

/// Whether a model of loss `loss` defines class probabilities for `probabilities`: logistic
/// (one score) and multinomial (`k` scores).
pub fn has_probabilities(loss: &str) -> bool {
    matches!(loss, "logistic" | "multinomial")
}

/// The predicted class index from a row's scores: the sign of one binary score (index 1 is the
/// positive class), the first largest of `k` class scores.
pub fn class_index(scores: &[f64]) -> usize {
    match scores {
        [d] => usize::from(*d > 0.0),
        _ => scores.iter().enumerate().fold(0, |best, (c, &v)| if v > scores[best] { c } else { best }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CsrView, DenseView};

    #[test]
    fn scores_probabilities_and_classes() {
        let x = [1.0, 2.0, -1.0, 0.5];
        let view = DenseView::new(&x, 2, 2).unwrap();
        // Two classes' weights (output-major) and intercepts.
        let m = LinearModel::new(&[1.0, 0.0, 0.0, 1.0], &[0.5, -0.5]).unwrap();
        let mut s = [0.0; 2];
        m.scores_into(&view, 0, &mut s).unwrap();
        assert_eq!(s, [1.5, 1.5]);
        assert_eq!(class_index(&s), 0, "ties go to the first class");
        m.scores_into(&view, 1, &mut s).unwrap();
        assert_eq!(s, [-0.5, 0.0]);
        assert_eq!(class_index(&s), 1);
        let mut p = [0.0; 2];
        probabilities(&s, &mut p);
        assert!((p[0] + p[1] - 1.0).abs() < 1e-15 && (p[1] / p[0] - 0.5f64.exp()).abs() < 1e-12);
        probabilities(&[0.0], &mut p[..1]);
        assert_eq!(p[0], 0.5);
        assert_eq!((class_index(&[-0.1]), class_index(&[0.0]), class_index(&[2.0])), (0, 0, 1));
    }

    #[test]
    fn unknown_sparse_index_is_an_error() {
        let (indptr, indices, values) = ([0i64, 1], [3u32], [1.0]);
        let view = CsrView::new(&indptr, &indices, &values, 4).unwrap();
        let m = LinearModel::new(&[1.0, 2.0], &[0.0]).unwrap();
        let err = m.scores_into(&view, 0, &mut [0.0]).unwrap_err();
        assert!(matches!(err, SdcaError::IndexOutOfRange { index: 3, n_features: 2, .. }), "{err}");
        assert!(LinearModel::new(&[1.0, 2.0, 3.0], &[0.0, 0.0]).is_err());
    }
}
