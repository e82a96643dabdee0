//! The data of one fit, validated once: rows, labels against the loss, sample weights.

use super::sdca::scores_into;
use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{BlockLoss, LossKind};

/// The data of one fit: rows, labels and optional sample weights, validated together.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a, D: Rows> {
    /// Feature rows.
    pub x: &'a D,
    /// Labels: `{-1, +1}` for binary losses, class indices `0..k` for multiclass losses,
    /// finite reals otherwise.
    pub y: &'a [f64],
    /// Sample weights `s_i >= 0` (default 1).
    pub weights: Option<&'a [f64]>,
    /// Scores per row: the number of classes `k` (largest label + 1) for a multiclass loss,
    /// else 1.
    pub n_outputs: usize,
}

impl<'a, D: Rows> Problem<'a, D> {
    /// Checks lengths, labels against the loss and weights.
    pub fn new(x: &'a D, y: &'a [f64], weights: Option<&'a [f64]>, loss: LossKind) -> Result<Self> {
        Self::checked(x, y, weights, loss, true)
    }

    /// One partition of a distributed problem ([`super::local_round`]): the checks of [`Problem::new`]
    /// except that its rows may hold a single class (the whole problem was checked for two);
    /// `n_outputs` is the whole problem's number of scores.
    pub fn partition(
        x: &'a D,
        y: &'a [f64],
        weights: Option<&'a [f64]>,
        loss: LossKind,
        n_outputs: usize,
    ) -> Result<Self> {
        let p = Self::checked(x, y, weights, loss, false)?;
        if p.n_outputs > n_outputs {
            return Err(SdcaError::ShapeMismatch {
                what: "partition classes vs the whole problem's",
                expected: n_outputs,
                got: p.n_outputs,
            });
        }
        Ok(Self { n_outputs, ..p })
    }

    fn checked(
        x: &'a D,
        y: &'a [f64],
        weights: Option<&'a [f64]>,
        loss: LossKind,
        two_classes: bool,
    ) -> Result<Self> {
        let n = x.n_rows();
        if y.len() != n {
            return Err(SdcaError::ShapeMismatch {
                what: "labels vs feature rows",
                expected: n,
                got: y.len(),
            });
        }
        if n == 0 {
            return Err(SdcaError::Empty { what: "zero rows" });
        }
        if let Some(s) = weights {
            if s.len() != n {
                return Err(SdcaError::ShapeMismatch {
                    what: "weights vs feature rows",
                    expected: n,
                    got: s.len(),
                });
            }
            if let Some(row) = s.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
                return Err(SdcaError::InvalidWeight { row, value: s[row] });
            }
            if s.iter().all(|w| *w == 0.0) {
                return Err(SdcaError::Empty { what: "every sample weight is zero" });
            }
        }
        if loss.is_multiclass() {
            return Self::multiclass(x, y, weights, loss, two_classes);
        }
        let classification = loss.is_classification();
        for (row, &v) in y.iter().enumerate() {
            let ok = if classification { v == 1.0 || v == -1.0 } else { v.is_finite() };
            if !ok {
                return Err(SdcaError::InvalidLabel {
                    row,
                    value: v,
                    loss: loss.name(),
                    expected: if classification {
                        "binary losses take labels in {-1, +1}, {0, 1} or booleans"
                    } else {
                        "regression labels must be finite numbers"
                    },
                });
            }
        }
        if classification && two_classes {
            let weight = |i: usize| weights.map_or(1.0, |s| s[i]);
            let has = |c: f64| (0..n).any(|i| y[i] == c && weight(i) > 0.0);
            if !(has(1.0) && has(-1.0)) {
                let label = if has(1.0) { "+1" } else { "-1" };
                return Err(SdcaError::OneClass { label: label.into() });
            }
        }
        Ok(Self { x, y, weights, n_outputs: 1 })
    }

    /// Multiclass labels: class indices `0..k` with at least two classes of positive weight.
    fn multiclass(
        x: &'a D,
        y: &'a [f64],
        weights: Option<&'a [f64]>,
        loss: LossKind,
        two_classes: bool,
    ) -> Result<Self> {
        let mut k = 0usize;
        for (row, &v) in y.iter().enumerate() {
            if !(v >= 0.0 && v.fract() == 0.0 && v < u32::MAX as f64) {
                return Err(SdcaError::InvalidLabel {
                    row,
                    value: v,
                    loss: loss.name(),
                    expected: "multiclass losses take class indices 0..k (the plugin maps labels to them)",
                });
            }
            k = k.max(v as usize + 1);
        }
        let weight = |i: usize| weights.map_or(1.0, |s| s[i]);
        let first = (0..y.len()).find(|&i| weight(i) > 0.0).map(|i| y[i]);
        if let Some(c) = first.filter(|_| two_classes) {
            if (0..y.len()).all(|i| weight(i) == 0.0 || y[i] == c) {
                return Err(SdcaError::OneClass { label: format!("class index {c}") });
            }
        }
        Ok(Self { x, y, weights, n_outputs: k })
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        self.y.len()
    }

    #[inline(always)]
    pub(crate) fn weight(&self, i: usize) -> f64 {
        self.weights.map_or(1.0, |s| s[i])
    }

    /// `s_i (||x_i||^2 + bias^2)` per row: the squared norm of each weighted row with its
    /// intercept feature, from which the dual steps' curvatures follow.
    pub(crate) fn row_sq(&self, bias: f64) -> Result<Vec<f64>> {
        let mut out = crate::budget::with_capacity(self.n())?;
        out.extend(self.row_sqs(bias));
        Ok(out)
    }

    /// `R^2`: the largest of [`Self::row_sq`], without keeping the rows' values (the solver
    /// choices' conditioning tests).
    pub(crate) fn max_row_sq(&self, bias: f64) -> f64 {
        self.row_sqs(bias).fold(0.0, f64::max)
    }

    /// The values of [`Self::row_sq`], row by row.
    fn row_sqs(&self, bias: f64) -> impl Iterator<Item = f64> + '_ {
        (0..self.n()).map(move |i| self.weight(i) * (self.x.sq_norm(i) + bias * bias))
    }

    /// Mean weighted loss `(1/n) sum_i s_i phi(scores_i)` at the feature-major model `w`.
    pub(crate) fn mean_loss<L: BlockLoss>(&self, loss: L, bias: f64, w: &[f64]) -> f64 {
        let mut scores = vec![0.0; loss.k()];
        let mut sum = 0.0;
        for i in (0..self.n()).filter(|&i| self.weight(i) > 0.0) {
            scores_into(self.x, i, w, bias, &mut scores);
            sum += self.weight(i) * loss.value(&scores, self.y[i]);
        }
        sum / self.n() as f64
    }
}
