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
//! Several elastic-net mixings (scikit-learn's `ElasticNetCV(l1_ratio=[...])`,
//! `LogisticRegressionCV(l1_ratios=[...])`) are several paths over the same folds, one per
//! `l1_ratio`, each with its own grid (from its own tied `l1_max` when computed). Each path is
//! scored as above, a curve per ratio, and the choice runs over every (ratio, value) pair: the
//! best mean (the first ratio given, then the largest penalty, on ties), or with the
//! one-standard-error rule, of the pairs within one standard error of the best, the one nearest
//! its path's top (the smallest index in its grid, so the largest `l1`, or the largest
//! `l1 / l1_max`, of its path), the better mean among pairs at the same index. The refit runs the
//! chosen ratio's path on all rows.
//!
//! Folds are drawn from the seed: for classification losses stratified (each class's rows
//! shuffled, then dealt to the folds in turn, continuing across classes so that fold sizes
//! differ by at most one), else the rows shuffled and dealt. A fold column replaces the draw.
//! The (fold, path) fits run in parallel when asked (each depends only on its rows, its path
//! and the seed, so the results are the same bits on any number of threads).

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

/// One path's curve of held-out scores: its `l1_ratio`, grid and per-value scores.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// The path's `l1_ratio` (`None`: `l2` fixed, or an `l2` path).
    pub l1_ratio: Option<f64>,
    /// The grid, decreasing.
    pub values: Vec<f64>,
    /// Per value: the mean held-out score over the folds.
    pub mean: Vec<f64>,
    /// Per value: its standard error.
    pub se: Vec<f64>,
    /// Per fold, per value: the fold's held-out score (NaN where the fold's path stopped early).
    pub fold_scores: Vec<Vec<f64>>,
}

/// A `(path, value)` pair: the curve's index in [`CvResult::curves`] and the value's in its
/// grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    /// The path (one per `l1_ratio`, in the order given).
    pub path: usize,
    /// The value's index in that path's grid (0: the largest penalty).
    pub value: usize,
}

/// A cross-validated path, or several (one per `l1_ratio`) over the same folds.
#[derive(Debug, Clone, PartialEq)]
pub struct CvResult {
    /// The penalty the paths run over.
    pub penalty: Penalty,
    /// One curve per path, in the order the paths were given.
    pub curves: Vec<Curve>,
    /// The pair of the best mean.
    pub best: Pick,
    /// The pair chosen (`best`, or the one-standard-error rule's).
    pub chosen: Pick,
    /// The scoring used.
    pub scoring: Scoring,
    /// The model refit on all rows at the chosen pair.
    pub model: FitResult,
}

impl CvResult {
    /// The chosen pair's curve.
    pub fn chosen_curve(&self) -> &Curve {
        &self.curves[self.chosen.path]
    }

    /// The chosen value.
    pub fn chosen_value(&self) -> f64 {
        self.chosen_curve().values[self.chosen.value]
    }
}

/// One fold's rows: the training rows (as indices, labels and weights) and the held-out ones.
struct Fold {
    train: Vec<usize>,
    y_train: Vec<f64>,
    w_train: Option<Vec<f64>>,
    test: Vec<usize>,
    y_test: Vec<f64>,
    w_test: Option<Vec<f64>>,
}

/// Cross-validates `paths` on `problem` with fold ids `folds` (`0..k`, one per row): each path
/// (one per `l1_ratio`; they differ only in it) on each fold's training rows, the held-out
/// scores per grid value, the pair chosen over every path's values and the model refit on all
/// rows (module docs). Every path runs its own grid, computed on all rows, over the same folds.
/// The (fold, path) fits run in parallel (on the current Rayon pool) when `parallel`. Errors: no
/// path, a fold whose training rows cannot be fitted (a single class, all weights zero), naming
/// the fold, or as [`fit_path`].
pub fn cross_validate<D: Rows>(
    problem: &Problem<'_, D>,
    paths: &[PathConfig],
    folds: &[u32],
    cv: &CvConfig,
    parallel: bool,
) -> Result<CvResult> {
    let n = problem.n();
    if folds.len() != n {
        return Err(SdcaError::ShapeMismatch { what: "fold ids vs rows", expected: n, got: folds.len() });
    }
    let first = paths
        .first()
        .ok_or_else(|| SdcaError::Internal("cross-validation of no path; please report".into()))?;
    let k = folds.iter().max().map_or(0, |&m| m as usize + 1);
    // Each path's grid on all rows (its own l1_max), then that path over those values.
    let grids: Vec<Vec<f64>> = paths.iter().map(|p| Ok(p.grid(problem)?.0)).collect::<Result<_>>()?;
    let fixed: Vec<PathConfig> = paths.iter().zip(&grids).map(|(p, g)| p.with_values(g.clone())).collect();
    let pick = |v: &[f64], rows: &[usize]| rows.iter().map(|&i| v[i]).collect::<Vec<f64>>();
    let rows: Vec<Fold> = (0..k)
        .map(|f| {
            let train: Vec<usize> = (0..n).filter(|&i| folds[i] as usize != f).collect();
            let test: Vec<usize> = (0..n).filter(|&i| folds[i] as usize == f).collect();
            if test.is_empty() {
                return Err(invalid("folds", format!("fold {f} has no rows")));
            }
            Ok(Fold {
                y_train: pick(problem.y, &train),
                w_train: problem.weights.map(|w| pick(w, &train)),
                y_test: pick(problem.y, &test),
                w_test: problem.weights.map(|w| pick(w, &test)),
                train,
                test,
            })
        })
        .collect::<Result<_>>()?;
    let loss = first.config(None)?.loss;
    let one = |(f, r): (usize, usize)| -> Result<Vec<f64>> {
        let fold = &rows[f];
        let x_train = Subset::new(problem.x, &fold.train)?;
        let p = Problem::new(&x_train, &fold.y_train, fold.w_train.as_deref(), loss)
            .map_err(|e| fold_error(f, e))?;
        let fitted = fit_path(&p, &fixed[r]).map_err(|e| fold_error(f, e))?;
        let x_test = Subset::new(problem.x, &fold.test)?;
        let n_values = fitted.values.len();
        Ok(held_out(&fitted, &x_test, &fold.y_test, fold.w_test.as_deref(), cv.scoring, n_values))
    };
    // Path-major: entry `r * k + f` is path r on fold f.
    let pairs: Vec<(usize, usize)> = (0..paths.len()).flat_map(|r| (0..k).map(move |f| (f, r))).collect();
    let mut scores: Vec<Vec<f64>> = if parallel {
        pairs.into_par_iter().map(one).collect::<Result<_>>()?
    } else {
        pairs.into_iter().map(one).collect::<Result<_>>()?
    };
    let mut curves = Vec::with_capacity(paths.len());
    for (path, values) in paths.iter().zip(grids).rev() {
        let fold_scores = scores.split_off(scores.len() - k);
        let (mean, se) = summarise(&fold_scores, values.len());
        curves.push(Curve { l1_ratio: path.l1_ratio(), values, mean, se, fold_scores });
    }
    curves.reverse();
    let (best, chosen) = choose(&curves, cv);
    let values = &curves[chosen.path].values;
    let refit = fit_path(problem, &paths[chosen.path].with_values(values[..=chosen.value].to_vec()))?;
    let model = refit
        .fits
        .into_iter()
        .last()
        .ok_or_else(|| SdcaError::Internal("an empty refit path; please report".into()))?;
    Ok(CvResult { penalty: first.penalty(), curves, best, chosen, scoring: cv.scoring, model })
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

/// The pair of the best mean over every curve (the first in curve order, then value order,
/// on ties) and the pair chosen: the best, or with the one-standard-error rule the pair
/// nearest its path's top (the largest penalty of its path, the smallest value index) whose
/// mean is within one standard error of the best, the better mean among pairs at the same
/// index. With one curve this is the largest penalty within one standard error of the best.
fn choose(curves: &[Curve], cv: &CvConfig) -> (Pick, Pick) {
    let better = |a: f64, b: f64| if cv.scoring.greater_is_better() { a > b } else { a < b };
    let mean = |p: Pick| curves[p.path].mean[p.value];
    let pairs = || {
        curves
            .iter()
            .enumerate()
            .flat_map(|(path, c)| (0..c.mean.len()).map(move |value| Pick { path, value }))
    };
    let best = pairs()
        .filter(|&p| mean(p).is_finite())
        .fold(None, |b: Option<Pick>, p| match b {
            Some(b) if !better(mean(p), mean(b)) => Some(b),
            _ => Some(p),
        })
        .unwrap_or(Pick { path: 0, value: 0 });
    if !cv.one_standard_error {
        return (best, best);
    }
    let se = curves[best.path].se[best.value];
    let bound = if cv.scoring.greater_is_better() { mean(best) - se } else { mean(best) + se };
    let within = |p: Pick| {
        let m = mean(p);
        m.is_finite() && if cv.scoring.greater_is_better() { m >= bound } else { m <= bound }
    };
    let chosen = pairs()
        .filter(|&p| within(p))
        .fold(None, |c: Option<Pick>, p| match c {
            Some(c) if p.value > c.value || (p.value == c.value && !better(mean(p), mean(c))) => Some(c),
            _ => Some(p),
        })
        .unwrap_or(best);
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
            let r = cross_validate(&p, std::slice::from_ref(&path), &folds, &cv, true).unwrap();
            assert_eq!(
                r,
                cross_validate(&p, std::slice::from_ref(&path), &folds, &cv, false).unwrap(),
                "threads change nothing"
            );
            let c = &r.curves[0];
            assert_eq!((r.curves.len(), c.l1_ratio), (1, None));
            for f in 0..4u32 {
                let train: Vec<usize> = (0..n).filter(|&i| folds[i] != f).collect();
                let xt: Vec<f64> = train.iter().flat_map(|&i| x[i * d..(i + 1) * d].to_vec()).collect();
                let yt: Vec<f64> = train.iter().map(|&i| y[i]).collect();
                let vt = DenseView::new(&xt, train.len(), d).unwrap();
                let pt = Problem::new(&vt, &yt, None, LossKind::Logistic).unwrap();
                let fitted = fit_path(&pt, &path.with_values(c.values.clone())).unwrap();
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
                    assert!((score - c.fold_scores[f as usize][v]).abs() <= 1e-12, "fold {f} value {v}");
                }
            }
            let mean0 = c.fold_scores.iter().map(|s| s[0]).sum::<f64>() / 4.0;
            assert!((mean0 - c.mean[0]).abs() < 1e-15);
            let (best, chosen) = (r.best.value, r.chosen.value);
            assert!(c.mean.iter().enumerate().all(|(v, m)| *m >= c.mean[best] || v == best));
            if select == "best" {
                assert_eq!(r.chosen, r.best);
            } else {
                assert!(chosen <= best && c.mean[chosen] <= c.mean[best] + c.se[best]);
            }
            let refit = fit(&p, &path.config(Some(r.chosen_value())).unwrap()).unwrap();
            let (a, b) = (r.model.certificate, refit.certificate);
            assert!((a.primal - b.primal).abs() <= a.gap + b.gap, "{a:?} {b:?}");
        }
    }

    /// Several `l1_ratio` values over the same folds. Each fold score of each (ratio, value)
    /// equals a cold plain fit at that pair (`l2 = l1 (1 - rho) / rho`) on the fold's copied
    /// training rows, scored on its held-out rows, within the certificates' bound: both models
    /// are within `sqrt(2 gap / l2)` of the fold's optimum in `(w, c)` (the objective is
    /// `l2`-strongly convex, the intercept's constant feature included), and the log-loss is
    /// 1-Lipschitz in the score. Each curve is the same bits as the ratio cross-validated
    /// alone (its own grid from its own `l1_max`); the pair chosen is the argmin over those
    /// single-ratio calls; the refit is a fit at the chosen pair.
    #[test]
    fn several_l1_ratios_equal_single_ratio_calls_and_plain_fits() {
        let (n, d, k) = (150, 6, 4);
        let (x, y) = toy(n, d, true, 7);
        let view = DenseView::new(&x, n, d).unwrap();
        let tol = 1e-12;
        let base =
            FitParams { loss: "logistic".into(), l2: 0.0, tol, max_epochs: 100_000, ..Default::default() };
        let ratios = [0.2, 0.9, 0.5];
        let grid =
            PathParams { n_l1: 5, l1_min_ratio: 2e-2, l1_ratio: Some(ratios.to_vec()), ..Default::default() };
        let paths = grid.check_each(&base).unwrap();
        let p = Problem::new(&view, &y, None, LossKind::Logistic).unwrap();
        let folds = draw_folds(&y, true, k, 1).unwrap();
        let cv = CvParams::default().check(LossKind::Logistic).unwrap();
        let r = cross_validate(&p, &paths, &folds, &cv, true).unwrap();
        assert_eq!(r, cross_validate(&p, &paths, &folds, &cv, false).unwrap(), "threads change nothing");
        assert_eq!(r.curves.len(), 3);
        let mut argmin: Option<(f64, Pick)> = None;
        for (i, (c, path)) in r.curves.iter().zip(&paths).enumerate() {
            let rho = ratios[i];
            assert_eq!(c.l1_ratio, Some(rho));
            assert_eq!(c.values, path.grid(&p).unwrap().0, "ratio {rho}: its own grid");
            let alone = cross_validate(&p, std::slice::from_ref(path), &folds, &cv, false).unwrap();
            assert_eq!(&alone.curves[0], c, "ratio {rho}: the same bits alone");
            let m = c.mean[alone.best.value];
            if argmin.is_none_or(|(m0, _)| m < m0) {
                argmin = Some((m, Pick { path: i, value: alone.best.value }));
            }
            for f in 0..k as u32 {
                let (train, test): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| folds[i] != f);
                let xt: Vec<f64> = train.iter().flat_map(|&i| x[i * d..(i + 1) * d].to_vec()).collect();
                let yt: Vec<f64> = train.iter().map(|&i| y[i]).collect();
                let vt = DenseView::new(&xt, train.len(), d).unwrap();
                let pt = Problem::new(&vt, &yt, None, LossKind::Logistic).unwrap();
                let reach = test.iter().map(|&i| (view.sq_norm(i) + 1.0).sqrt()).fold(0.0, f64::max);
                for (v, &l1) in c.values.iter().enumerate() {
                    let cfg = path.config(Some(l1)).unwrap();
                    assert!((cfg.l2 - l1 * (1.0 - rho) / rho).abs() <= 1e-15 * cfg.l2);
                    let m = fit(&pt, &cfg).unwrap();
                    assert!(m.converged(), "ratio {rho} fold {f} l1 {l1}");
                    let score = test
                        .iter()
                        .map(|&i| (1.0 + (-y[i] * (view.dot(i, &m.coef) + m.intercept[0])).exp()).ln())
                        .sum::<f64>()
                        / test.len() as f64;
                    let cert = m.certificate;
                    let path_gap = tol * cert.primal / (1.0 - tol);
                    let bound = reach * ((2.0 * cert.gap / cfg.l2).sqrt() + (2.0 * path_gap / cfg.l2).sqrt());
                    let got = c.fold_scores[f as usize][v];
                    assert!(
                        (score - got).abs() <= bound + 1e-14,
                        "ratio {rho} fold {f} value {v}: {score} {got}"
                    );
                }
            }
        }
        assert_eq!(r.best, argmin.unwrap().1, "the argmin over single-ratio calls");
        assert_eq!(r.chosen, r.best);
        let c = r.chosen_curve();
        let cfg = paths[r.chosen.path].config(Some(r.chosen_value())).unwrap();
        let refit = fit(&p, &cfg).unwrap();
        let (a, b) = (r.model.certificate, refit.certificate);
        assert!((a.primal - b.primal).abs() <= a.gap + b.gap, "{a:?} {b:?}");
        assert_eq!(c.l1_ratio, Some(ratios[r.chosen.path]));
    }

    /// The choice over (path, value) pairs: the best mean (the first on ties), and the
    /// one-standard-error rule's pair nearest its path's top within the bound, the better mean
    /// at the same index.
    #[test]
    fn the_choice_runs_over_every_pair() {
        let curve = |mean: Vec<f64>, se: Vec<f64>| Curve {
            l1_ratio: None,
            values: vec![1.0; mean.len()],
            mean,
            se,
            fold_scores: Vec::new(),
        };
        let cfg = |scoring, one_standard_error| CvConfig { folds: Some(2), scoring, one_standard_error };
        let loss = Scoring::SquaredError;
        let curves = [
            curve(vec![1.0, 0.6, 0.5], vec![0.1, 0.1, 0.1]),
            curve(vec![0.68, 0.4, 0.45], vec![0.1, 0.3, 0.1]),
            curve(vec![0.66, 0.4, f64::NAN], vec![0.1, 0.1, f64::NAN]),
        ];
        let pick = |path, value| Pick { path, value };
        // Best: 0.4 first reached by path 1 (path 2 ties later). One SE: bound 0.7; index 0
        // holds 0.68 (path 1) and 0.66 (path 2): the better mean.
        assert_eq!(choose(&curves, &cfg(loss, false)), (pick(1, 1), pick(1, 1)));
        assert_eq!(choose(&curves, &cfg(loss, true)), (pick(1, 1), pick(2, 0)));
        // Greater is better: the bound is below the best.
        let acc: Vec<Curve> =
            curves.iter().map(|c| curve(c.mean.iter().map(|m| 1.0 - m).collect(), c.se.clone())).collect();
        assert_eq!(choose(&acc, &cfg(Scoring::Accuracy, true)), (pick(1, 1), pick(2, 0)));
        // One path: the largest penalty within one SE of the best.
        let one = [curve(vec![0.9, 0.52, 0.5, 0.7], vec![0.0, 0.0, 0.05, 0.0])];
        assert_eq!(choose(&one, &cfg(loss, true)), (pick(0, 2), pick(0, 1)));
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
