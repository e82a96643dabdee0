//! K-fold cross-validation of a regularization path.
//!
//! The grid is computed once on all rows (for an `l1` path it starts at the whole problem's
//! `l1_max`, as scikit-learn's `LassoCV` and glmnet's `cv.glmnet` do), so every fold scores the
//! same values. Each fold fits the path on its training rows (a zero-copy view of the rows,
//! [`Subset`]) and scores every model on its held-out rows; a value's score is the mean over the
//! folds of the held-out (weighted) mean, with the standard error `sd / sqrt(K)` of the fold
//! scores (`sd` with `K - 1` degrees of freedom). The value chosen is the best mean, or with the
//! one-standard-error rule (Hastie, Tibshirani and Friedman, "The Elements of Statistical
//! Learning", section 7.10) the largest penalty whose mean is within one standard error of the
//! best. The model is then refit on all rows, by the path down to the chosen value.
//!
//! Folds are drawn from the seed: for classification losses stratified (each class's rows
//! shuffled, then dealt to the folds in turn, continuing across classes so that fold sizes
//! differ by at most one), else the rows shuffled and dealt. A fold column replaces the draw.
//! Folds run in parallel when asked (each fold's result depends only on its rows and the
//! seed, so the results are the same bits on any number of threads).

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use crate::data::Rows;
use crate::error::{Result, SdcaError};
use crate::loss::{BlockLoss, Hinge, Logistic, LossKind, MulticlassHinge, Multinomial};
use crate::solver::{fit_path, FitResult, Path, PathConfig, Penalty, Problem};

/// A held-out score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scoring {
    /// Mean `log(1 + exp(-y a))` (binary logistic) or `log sum_j exp(a_j) - a_y` (multinomial).
    LogLoss,
    /// Share of rows whose predicted class is right (higher is better).
    Accuracy,
    /// Mean `(a - y)^2`.
    SquaredError,
    /// Mean `|a - y|`.
    AbsoluteError,
    /// Mean hinge loss: `max(0, 1 - y a)`, or Crammer-Singer's `max_j (delta(j, y) + a_j - a_y)`.
    Hinge,
}

impl Scoring {
    /// Accepted names (`"auto"`: log-loss for logistic and multinomial, accuracy for the other
    /// classification losses, squared error for regression).
    pub const NAMES: &'static [&'static str] =
        &["auto", "log_loss", "accuracy", "squared_error", "absolute_error", "hinge"];

    /// The user-facing name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::LogLoss => "log_loss",
            Self::Accuracy => "accuracy",
            Self::SquaredError => "squared_error",
            Self::AbsoluteError => "absolute_error",
            Self::Hinge => "hinge",
        }
    }

    /// Whether a larger score is better.
    pub fn greater_is_better(&self) -> bool {
        matches!(self, Self::Accuracy)
    }

    /// The score of one row with scores `a` and label `y` (a class index for multiclass); the
    /// log-loss and hinge are the losses' own values.
    fn row(&self, a: &[f64], y: f64) -> f64 {
        let k = a.len();
        match (self, a) {
            (Self::LogLoss, [_]) => Logistic.value(a, y),
            (Self::LogLoss, _) => Multinomial { k }.value(a, y),
            (Self::Accuracy, [t]) => f64::from(u8::from((*t > 0.0) == (y > 0.0))),
            (Self::Accuracy, _) => f64::from(u8::from(crate::predict::class_index(a) == y as usize)),
            (Self::SquaredError, _) => (a[0] - y).powi(2),
            (Self::AbsoluteError, _) => (a[0] - y).abs(),
            (Self::Hinge, [_]) => Hinge.value(a, y),
            (Self::Hinge, _) => MulticlassHinge { k, smoothing: 0.0 }.value(a, y),
        }
    }
}

/// What `select=` accepts.
pub const SELECT: &[&str] = &["best", "one_standard_error"];

/// Cross-validation as the user gave it; checked by [`CvParams::check`]. Defaults come from the
/// option schema ([`crate::options::CV_OPTIONS`]).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CvParams {
    /// Number of folds drawn from the seed (ignored with a fold column).
    pub folds: i64,
    /// Scoring name ([`Scoring::NAMES`]).
    pub scoring: String,
    /// `"best"` or `"one_standard_error"`.
    pub select: String,
    /// Whether folds come from a column (the plugin passes its values to [`folds_from_ids`]).
    pub fold_column: bool,
}

impl Default for CvParams {
    fn default() -> Self {
        use crate::options::{int, text, CV_OPTIONS as O};
        Self {
            folds: const { int(O, "folds") },
            scoring: const { text(O, "scoring") }.into(),
            select: const { text(O, "select") }.into(),
            fold_column: false,
        }
    }
}

/// Checked cross-validation settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CvConfig {
    /// Folds to draw (`None`: from a column).
    pub folds: Option<usize>,
    /// The held-out score.
    pub scoring: Scoring,
    /// Whether the one-standard-error rule picks the value.
    pub one_standard_error: bool,
}

fn invalid(name: &'static str, message: impl Into<String>) -> SdcaError {
    SdcaError::InvalidParameter { name, message: message.into() }
}

impl CvParams {
    /// Checks the settings for a fit with loss `loss`: scorings that need class probabilities
    /// or classes are refused for the other losses, naming the ones that fit.
    pub fn check(&self, loss: LossKind) -> Result<CvConfig> {
        let folds = match (self.fold_column, self.folds) {
            (true, _) => None,
            (false, k @ 2..=100_000) => Some(k as usize),
            (false, k) => return Err(invalid("folds", format!("got {k}; must be >= 2, or a fold column"))),
        };
        let classification = loss.is_classification() || loss.is_multiclass();
        let scoring = match self.scoring.as_str() {
            "auto" => match loss {
                LossKind::Logistic | LossKind::Multinomial => Scoring::LogLoss,
                _ if classification => Scoring::Accuracy,
                _ => Scoring::SquaredError,
            },
            "log_loss" => Scoring::LogLoss,
            "accuracy" => Scoring::Accuracy,
            "squared_error" => Scoring::SquaredError,
            "absolute_error" => Scoring::AbsoluteError,
            "hinge" => Scoring::Hinge,
            other => {
                return Err(invalid(
                    "scoring",
                    format!("unknown value {other:?}; expected one of {}", Scoring::NAMES.join(", ")),
                ))
            }
        };
        let fits = match scoring {
            Scoring::LogLoss => matches!(loss, LossKind::Logistic | LossKind::Multinomial),
            Scoring::Accuracy | Scoring::Hinge => classification,
            Scoring::SquaredError | Scoring::AbsoluteError => !loss.is_multiclass(),
        };
        if !fits {
            let want = match scoring {
                Scoring::LogLoss => "loss logistic or multinomial (class probabilities)",
                Scoring::Accuracy | Scoring::Hinge => "a classification loss",
                _ => "a binary or regression loss (one score per row)",
            };
            return Err(invalid(
                "scoring",
                format!("{:?} needs {want}, and loss is {:?}", scoring.name(), loss.name()),
            ));
        }
        let one_standard_error = match self.select.as_str() {
            "best" => false,
            "one_standard_error" => true,
            other => {
                return Err(invalid(
                    "select",
                    format!("unknown value {other:?}; expected one of {}", SELECT.join(", ")),
                ))
            }
        };
        Ok(CvConfig { folds, scoring, one_standard_error })
    }
}

/// Fold ids `0..k` for the rows of labels `y`, drawn from `seed`: stratified by label when
/// `classification` (module docs), else shuffled and dealt. Errors when there are fewer rows
/// than folds.
pub fn draw_folds(y: &[f64], classification: bool, k: usize, seed: u64) -> Result<Vec<u32>> {
    if y.len() < k {
        return Err(invalid("folds", format!("{k} folds need at least {k} rows, got {}", y.len())));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..y.len()).collect();
    if classification {
        // Rows grouped by class (classes in increasing order), shuffled within each class.
        order.sort_by(|&a, &b| y[a].total_cmp(&y[b]));
        let mut start = 0;
        while start < order.len() {
            let end = start + order[start..].iter().take_while(|&&i| y[i] == y[order[start]]).count();
            order[start..end].shuffle(&mut rng);
            start = end;
        }
    } else {
        order.shuffle(&mut rng);
    }
    let mut folds = vec![0u32; y.len()];
    for (p, &i) in order.iter().enumerate() {
        folds[i] = (p % k) as u32;
    }
    Ok(folds)
}

/// Fold ids `0..k` from a column's values (each distinct value a fold, in increasing order of
/// value); errors with fewer than two distinct values.
pub fn folds_from_ids(ids: &[i64]) -> Result<(Vec<u32>, usize)> {
    let mut distinct = ids.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 {
        return Err(invalid(
            "folds",
            "the fold column holds fewer than two distinct values; pass at least two folds",
        ));
    }
    let folds = ids.iter().map(|v| distinct.partition_point(|d| d < v) as u32).collect();
    Ok((folds, distinct.len()))
}

/// The rows `rows` of a matrix, as a matrix (no copy): row `i` is the inner row `rows[i]`.
#[derive(Debug, Clone, Copy)]
pub struct Subset<'a, D: Rows> {
    inner: &'a D,
    rows: &'a [usize],
}

impl<'a, D: Rows> Subset<'a, D> {
    /// The view; errors when a row index is out of range.
    pub fn new(inner: &'a D, rows: &'a [usize]) -> Result<Self> {
        match rows.iter().find(|&&r| r >= inner.n_rows()) {
            Some(&r) => {
                Err(SdcaError::Internal(format!("row subset index {r} >= {}; please report", inner.n_rows())))
            }
            None => Ok(Self { inner, rows }),
        }
    }
}

impl<D: Rows> Rows for Subset<'_, D> {
    fn n_rows(&self) -> usize {
        self.rows.len()
    }
    fn n_cols(&self) -> usize {
        self.inner.n_cols()
    }
    #[inline]
    fn dot(&self, i: usize, w: &[f64]) -> f64 {
        self.inner.dot(self.rows[i], w)
    }
    #[inline]
    fn dot_map<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], f: F) -> f64 {
        self.inner.dot_map(self.rows[i], v, f)
    }
    #[inline]
    fn axpy(&self, i: usize, a: f64, v: &mut [f64]) {
        self.inner.axpy(self.rows[i], a, v)
    }
    fn sq_norm(&self, i: usize) -> f64 {
        self.inner.sq_norm(self.rows[i])
    }
    #[inline]
    fn for_each_nz<F: FnMut(usize, f64)>(&self, i: usize, f: F) {
        self.inner.for_each_nz(self.rows[i], f)
    }
    #[inline]
    fn dot_block<F: Fn(f64) -> f64>(&self, i: usize, v: &[f64], out: &mut [f64], f: F) {
        self.inner.dot_block(self.rows[i], v, out, f)
    }
    #[inline]
    fn axpy_block(&self, i: usize, a: &[f64], v: &mut [f64]) {
        self.inner.axpy_block(self.rows[i], a, v)
    }
    fn dot_checked(&self, i: usize, w: &[f64]) -> Result<f64> {
        self.inner.dot_checked(self.rows[i], w)
    }
}

/// A cross-validated path.
#[derive(Debug, Clone, PartialEq)]
pub struct CvResult {
    /// The penalty the path runs over.
    pub penalty: Penalty,
    /// The grid, decreasing.
    pub values: Vec<f64>,
    /// Per value: the mean held-out score over the folds.
    pub mean: Vec<f64>,
    /// Per value: its standard error.
    pub se: Vec<f64>,
    /// Per fold, per value: the fold's held-out score (NaN where the fold's path stopped early).
    pub fold_scores: Vec<Vec<f64>>,
    /// Index of the best mean.
    pub best: usize,
    /// Index of the value chosen (`best`, or the one-standard-error rule's).
    pub chosen: usize,
    /// The scoring used.
    pub scoring: Scoring,
    /// The model refit on all rows at the chosen value.
    pub model: FitResult,
}

/// Cross-validates `path` on `problem` with fold ids `folds` (`0..k`, one per row): the path on
/// each fold's training rows, the held-out scores per grid value, the value chosen and the model
/// refit on all rows (module docs). Folds run in parallel (on the current Rayon pool) when
/// `parallel`. Errors: a fold whose training rows cannot be fitted (a single class, all weights
/// zero), naming the fold, or as [`fit_path`].
pub fn cross_validate<D: Rows>(
    problem: &Problem<'_, D>,
    path: &PathConfig,
    folds: &[u32],
    cv: &CvConfig,
    parallel: bool,
) -> Result<CvResult> {
    let n = problem.n();
    if folds.len() != n {
        return Err(SdcaError::ShapeMismatch { what: "fold ids vs rows", expected: n, got: folds.len() });
    }
    let k = folds.iter().max().map_or(0, |&m| m as usize + 1);
    let (values, _) = path.grid(problem)?;
    let fixed = path.with_values(values.clone());
    let one = |f: usize| -> Result<Vec<f64>> {
        let train: Vec<usize> = (0..n).filter(|&i| folds[i] as usize != f).collect();
        let test: Vec<usize> = (0..n).filter(|&i| folds[i] as usize == f).collect();
        if test.is_empty() {
            return Err(invalid("folds", format!("fold {f} has no rows")));
        }
        let pick = |v: &[f64], rows: &[usize]| rows.iter().map(|&i| v[i]).collect::<Vec<f64>>();
        let (y_train, w_train) = (pick(problem.y, &train), problem.weights.map(|w| pick(w, &train)));
        let x_train = Subset::new(problem.x, &train)?;
        let loss = fixed.config(None)?.loss;
        let p = Problem::new(&x_train, &y_train, w_train.as_deref(), loss).map_err(|e| fold_error(f, e))?;
        let fitted = fit_path(&p, &fixed).map_err(|e| fold_error(f, e))?;
        let x_test = Subset::new(problem.x, &test)?;
        let (y_test, w_test) = (pick(problem.y, &test), problem.weights.map(|w| pick(w, &test)));
        Ok(held_out(&fitted, &x_test, &y_test, w_test.as_deref(), cv.scoring, values.len()))
    };
    let fold_scores: Vec<Vec<f64>> = if parallel {
        (0..k).into_par_iter().map(one).collect::<Result<_>>()?
    } else {
        (0..k).map(one).collect::<Result<_>>()?
    };
    let (mean, se) = summarise(&fold_scores, values.len());
    let (best, chosen) = choose(&mean, &se, cv);
    let refit = fit_path(problem, &path.with_values(values[..=chosen].to_vec()))?;
    let model = refit
        .fits
        .into_iter()
        .last()
        .ok_or_else(|| SdcaError::Internal("an empty refit path; please report".into()))?;
    Ok(CvResult {
        penalty: path.penalty(),
        values,
        mean,
        se,
        fold_scores,
        best,
        chosen,
        scoring: cv.scoring,
        model,
    })
}

fn fold_error(f: usize, e: SdcaError) -> SdcaError {
    match e {
        SdcaError::OneClass { label } => SdcaError::InvalidParameter {
            name: "folds",
            message: format!("the training rows of fold {f} hold a single class ({label}); use fewer folds or stratified folds"),
        },
        other => other,
    }
}

/// Each model's held-out score on the rows `x`, `y` (weighted mean); NaN for grid values the
/// path did not reach.
fn held_out<D: Rows>(
    fitted: &Path,
    x: &D,
    y: &[f64],
    w: Option<&[f64]>,
    scoring: Scoring,
    n_values: usize,
) -> Vec<f64> {
    let mut out = vec![f64::NAN; n_values];
    for (slot, fit) in out.iter_mut().zip(&fitted.fits) {
        let (k, d) = (fit.n_outputs, x.n_cols());
        let mut scores = vec![0.0; k];
        let (mut sum, mut total) = (0.0, 0.0);
        for (i, &yi) in y.iter().enumerate() {
            let s = w.map_or(1.0, |w| w[i]);
            if s == 0.0 {
                continue;
            }
            for (c, a) in scores.iter_mut().enumerate() {
                *a = x.dot(i, &fit.coef[c * d..(c + 1) * d]) + fit.intercept[c];
            }
            sum += s * scoring.row(&scores, yi);
            total += s;
        }
        *slot = if total > 0.0 { sum / total } else { f64::NAN };
    }
    out
}

/// Per value: the mean of the fold scores and its standard error `sd / sqrt(K)` (NaN scores
/// of a fold are left out).
fn summarise(fold_scores: &[Vec<f64>], n_values: usize) -> (Vec<f64>, Vec<f64>) {
    (0..n_values)
        .map(|v| {
            let s: Vec<f64> = fold_scores.iter().map(|f| f[v]).filter(|x| x.is_finite()).collect();
            let k = s.len() as f64;
            if s.is_empty() {
                return (f64::NAN, f64::NAN);
            }
            let mean = s.iter().sum::<f64>() / k;
            let var =
                if s.len() > 1 { s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0) } else { 0.0 };
            (mean, (var / k).sqrt())
        })
        .unzip()
}

/// The index of the best mean and of the value chosen: the best, or with the
/// one-standard-error rule the first (largest penalty) whose mean is within one standard error
/// of the best.
fn choose(mean: &[f64], se: &[f64], cv: &CvConfig) -> (usize, usize) {
    let better = |a: f64, b: f64| if cv.scoring.greater_is_better() { a > b } else { a < b };
    let best = (0..mean.len())
        .filter(|&v| mean[v].is_finite())
        .fold(None, |b: Option<usize>, v| match b {
            Some(b) if !better(mean[v], mean[b]) => Some(b),
            _ => Some(v),
        })
        .unwrap_or(0);
    if !cv.one_standard_error {
        return (best, best);
    }
    let bound = if cv.scoring.greater_is_better() { mean[best] - se[best] } else { mean[best] + se[best] };
    let within = |v: usize| if cv.scoring.greater_is_better() { mean[v] >= bound } else { mean[v] <= bound };
    let chosen = (0..=best).find(|&v| mean[v].is_finite() && within(v)).unwrap_or(best);
    (best, chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::solver::testing::toy;
    use crate::solver::{fit, PathParams};

    #[test]
    fn folds_are_stratified_balanced_and_seeded() {
        let y: Vec<f64> = (0..103).map(|i| if i % 4 == 0 { 1.0 } else { -1.0 }).collect();
        let f = draw_folds(&y, true, 5, 3).unwrap();
        assert_eq!(f, draw_folds(&y, true, 5, 3).unwrap());
        assert_ne!(f, draw_folds(&y, true, 5, 4).unwrap());
        for fold in 0..5u32 {
            let size = f.iter().filter(|&&v| v == fold).count();
            let pos = (0..103).filter(|&i| f[i] == fold && y[i] > 0.0).count();
            assert!((20..=21).contains(&size), "{size}");
            assert!((5..=6).contains(&pos), "fold {fold}: {pos} positives");
        }
        assert!(draw_folds(&y[..3], false, 5, 0).is_err());
        let (ids, k) = folds_from_ids(&[7, -1, 7, 3]).unwrap();
        assert_eq!((ids, k), (vec![2, 0, 2, 1], 3));
        assert!(folds_from_ids(&[1, 1]).is_err());
    }

    #[test]
    fn subset_rows_are_the_inner_rows() {
        let (x, _) = toy(10, 3, false, 1);
        let view = DenseView::new(&x, 10, 3).unwrap();
        let rows = [7usize, 2, 2];
        let s = Subset::new(&view, &rows).unwrap();
        let w = [1.0, -2.0, 0.5];
        assert_eq!((s.n_rows(), s.n_cols()), (3, 3));
        for (i, &r) in rows.iter().enumerate() {
            assert_eq!(s.dot(i, &w), view.dot(r, &w));
            assert_eq!(s.sq_norm(i), view.sq_norm(r));
        }
        assert!(Subset::new(&view, &[10]).is_err());
    }

    /// The scores equal a hand-written loop over the folds: each fold's path fitted on its
    /// training rows (copied) and scored on its held-out rows; the refit is the path on all rows
    /// at the chosen value.
    #[test]
    fn cv_equals_a_hand_written_fold_loop() {
        let (n, d) = (120, 5);
        let (x, y) = toy(n, d, true, 5);
        let view = DenseView::new(&x, n, d).unwrap();
        let base = FitParams {
            loss: "logistic".into(),
            l2: 1e-3,
            tol: 1e-9,
            max_epochs: 10_000,
            ..Default::default()
        };
        let path = PathParams { n_l1: 6, l1_min_ratio: 1e-2, ..Default::default() }.check(&base).unwrap();
        let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
        let folds = draw_folds(&y, true, 4, 0).unwrap();
        for select in ["best", "one_standard_error"] {
            let cv = CvParams { folds: 4, select: select.into(), ..Default::default() }
                .check(LossKind::Logistic)
                .unwrap();
            assert_eq!(cv.scoring, Scoring::LogLoss);
            let r = cross_validate(&p, &path, &folds, &cv, true).unwrap();
            assert_eq!(r, cross_validate(&p, &path, &folds, &cv, false).unwrap(), "threads change nothing");
            for f in 0..4u32 {
                let train: Vec<usize> = (0..n).filter(|&i| folds[i] != f).collect();
                let xt: Vec<f64> = train.iter().flat_map(|&i| x[i * d..(i + 1) * d].to_vec()).collect();
                let yt: Vec<f64> = train.iter().map(|&i| y[i]).collect();
                let vt = DenseView::new(&xt, train.len(), d).unwrap();
                let pt = Problem::new(&vt, &yt, None, LossKind::Logistic).unwrap();
                let fitted = fit_path(&pt, &path.with_values(r.values.clone())).unwrap();
                for (v, m) in fitted.fits.iter().enumerate() {
                    let test: Vec<usize> = (0..n).filter(|&i| folds[i] == f).collect();
                    let score = test
                        .iter()
                        .map(|&i| {
                            let a = view.dot(i, &m.coef) + m.intercept[0];
                            (1.0 + (-y[i] * a).exp()).ln()
                        })
                        .sum::<f64>()
                        / test.len() as f64;
                    assert!((score - r.fold_scores[f as usize][v]).abs() <= 1e-12, "fold {f} value {v}");
                }
            }
            let mean0 = r.fold_scores.iter().map(|s| s[0]).sum::<f64>() / 4.0;
            assert!((mean0 - r.mean[0]).abs() < 1e-15);
            assert!(r.mean.iter().enumerate().all(|(v, m)| *m >= r.mean[r.best] || v == r.best));
            if select == "best" {
                assert_eq!(r.chosen, r.best);
            } else {
                assert!(r.chosen <= r.best && r.mean[r.chosen] <= r.mean[r.best] + r.se[r.best]);
            }
            let refit = fit(&p, &path.config(Some(r.values[r.chosen])).unwrap()).unwrap();
            let (a, b) = (r.model.certificate, refit.certificate);
            assert!((a.primal - b.primal).abs() <= a.gap + b.gap, "{a:?} {b:?}");
        }
    }

    #[test]
    fn scorings_are_checked_against_the_loss() {
        let cv = |s: &str| CvParams { scoring: s.into(), ..Default::default() };
        assert_eq!(cv("auto").check(LossKind::Squared).unwrap().scoring, Scoring::SquaredError);
        assert_eq!(cv("auto").check(LossKind::Hinge).unwrap().scoring, Scoring::Accuracy);
        assert_eq!(cv("auto").check(LossKind::Multinomial).unwrap().scoring, Scoring::LogLoss);
        for (s, loss) in [
            ("log_loss", LossKind::Hinge),
            ("accuracy", LossKind::Squared),
            ("squared_error", LossKind::Multinomial),
        ] {
            let err = cv(s).check(loss).unwrap_err();
            assert!(matches!(err, SdcaError::InvalidParameter { name: "scoring", .. }), "{err}");
        }
        assert!(cv("r2").check(LossKind::Squared).is_err());
        assert!(CvParams { folds: 1, ..Default::default() }.check(LossKind::Squared).is_err());
        assert!(CvParams { select: "min".into(), ..Default::default() }.check(LossKind::Squared).is_err());
        // Row scores.
        assert!((Scoring::LogLoss.row(&[0.0], 1.0) - 2f64.ln()).abs() < 1e-15);
        assert_eq!(Scoring::LogLoss.row(&[-800.0], 1.0), 800.0);
        assert_eq!(Scoring::Accuracy.row(&[0.3], -1.0), 0.0);
        assert_eq!(Scoring::Hinge.row(&[0.25], 1.0), 0.75);
        assert_eq!(Scoring::Hinge.row(&[1.0, 0.5, 0.0], 1.0), 1.5);
        assert!((Scoring::LogLoss.row(&[0.0, 0.0], 1.0) - 2f64.ln()).abs() < 1e-15);
    }
}
