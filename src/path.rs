//! `fit_path` and `fit_cv`: a group's regularization path and its cross-validation.
//!
//! The inputs are `fit`'s (label, features, weights), and for `fit_cv` optionally a fold column
//! last; the numbers come from `sdca_core::solver::fit_path` and `sdca_core::cv`. A path is one
//! `List` of model structs (one per grid value, in decreasing order, each with its own `l1` and
//! `l2`); a cross-validation is one struct: the model refit at the chosen value and the curves
//! of held-out scores as lists, one entry per (`l1_ratio`, value) pair with the `l1_ratio` as a
//! list of its own, so that `explode` gives a long frame with one curve per ratio to plot.

use polars::prelude::*;
use sdca_core::cv::{self, Curve, CvConfig, CvResult, Pick};
use sdca_core::solver::{fit_path, Path, PathConfig};
use sdca_core::FitResult;

use crate::convert::Features;
use crate::error::{compute, param};
use crate::fit::{self, Fitted, Group};
use crate::interrupt;
use crate::kwargs::{FitKwargs, Layout, PathKwargs};
use crate::output::{self, model_fields, ModelMeta};
use crate::threads;

fn list(dt: DataType) -> DataType {
    DataType::List(Box::new(dt))
}

/// The dtype of a path: a list of model structs, `fit`'s fields and the two of
/// [`SCREENING_FIELDS`].
pub fn path_dtype(label: &DataType, multiclass: bool) -> DataType {
    let mut fields = model_fields(label, multiclass);
    fields.extend(SCREENING_FIELDS.map(|name| Field::new(name.into(), DataType::UInt64)));
    list(DataType::Struct(fields))
}

/// The fields a path's models have beyond `fit`'s (`Path::screened`, `Path::nnz_visited`): the
/// features Gap Safe screening left out of the value's passes, and the stored matrix entries
/// those passes visited, so that a user sees what screening saved; null in a failed group's
/// model.
const SCREENING_FIELDS: [&str; 2] = ["screened", "nnz_visited"];

/// `models` (a struct column of `fit`'s fields) with the [`SCREENING_FIELDS`] appended, and
/// `l1` / `l2` replaced when each row has its own.
fn with_screening(
    models: Series,
    penalties: Option<(Vec<f64>, Vec<f64>)>,
    screened: Vec<Option<u64>>,
    visited: Vec<Option<u64>>,
) -> PolarsResult<Series> {
    let mut cols = models.struct_()?.fields_as_series();
    if let Some((l1, l2)) = penalties {
        for col in cols.iter_mut() {
            match col.name().as_str() {
                "l1" => *col = Series::new("l1".into(), &l1),
                "l2" => *col = Series::new("l2".into(), &l2),
                _ => {}
            }
        }
    }
    let [s, v] = SCREENING_FIELDS;
    cols.push(Series::new(s.into(), screened));
    cols.push(Series::new(v.into(), visited));
    Ok(StructChunked::from_series(models.name().clone(), models.len(), cols.iter())?.into_series())
}

/// The fields of a cross-validation's struct.
pub fn cv_fields(label: &DataType, multiclass: bool) -> Vec<Field> {
    use DataType::*;
    vec![
        Field::new("model".into(), Struct(model_fields(label, multiclass))),
        Field::new("penalty".into(), String),
        Field::new("l1_ratio".into(), list(Float64)),
        Field::new("values".into(), list(Float64)),
        Field::new("mean".into(), list(Float64)),
        Field::new("se".into(), list(Float64)),
        Field::new("fold_scores".into(), list(list(Float64))),
        Field::new("best".into(), Float64),
        Field::new("chosen".into(), Float64),
        Field::new("best_l1_ratio".into(), Float64),
        Field::new("chosen_l1_ratio".into(), Float64),
        Field::new("scoring".into(), String),
    ]
}

/// Checks the kwargs when the plan is built: the path and, for `fit_cv`, the folds and scoring
/// against the loss. Returns `fit`'s kwargs for the shared checks.
pub fn check(kw: &PathKwargs) -> PolarsResult<FitKwargs> {
    if kw.cv.is_none() {
        kw.checked()?; // a path runs one l1_ratio
    }
    let fit_kw = kw.fit_kwargs()?;
    if kw.layout.has_warm_start {
        return Err(compute(
            "invalid parameter `warm_start`: a path warm-starts each fit from the previous one; \
             drop warm_start"
                .into(),
        ));
    }
    if let Some(c) = &kw.cv {
        let cfg = fit_kw.params.check().map_err(param)?;
        c.check(cfg.loss).map_err(param)?;
        if c.fold_column != kw.layout.has_folds {
            return Err(compute("internal error: fold column and layout disagree; please report".into()));
        }
    }
    Ok(fit_kw)
}

/// The fold column (the last input, when the layout has one) and the other inputs.
fn split_folds<'a>(inputs: &'a [Series], layout: &Layout) -> (&'a [Series], Option<&'a Series>) {
    match inputs.split_last() {
        Some((folds, data)) if layout.has_folds => (data, Some(folds)),
        _ => (inputs, None),
    }
}

/// Runs `f` on the group's core problem (sparse or dense features).
fn on_problem<T>(
    g: &Group,
    cfg: &sdca_core::FitConfig,
    f: impl Fn(&sdca_core::Problem<'_, sdca_core::CsrView<'_>>) -> sdca_core::Result<T>,
    h: impl Fn(&sdca_core::Problem<'_, sdca_core::DenseView<'_>>) -> sdca_core::Result<T>,
) -> PolarsResult<T> {
    let in_label = |e: sdca_core::SdcaError| compute(format!("column {:?}: {e}", g.label_name));
    match &g.features {
        Features::Sparse(s) => f(&fit::problem(&s.view()?, g, cfg)?).map_err(in_label),
        Features::Dense(d) => h(&fit::problem(&d.view()?, g, cfg)?).map_err(in_label),
    }
}

/// The model's metadata at grid value `value`: its `l1` and `l2` as the path sets them (the
/// varying one, and `l2` tied to `l1` by an `l1_ratio`).
fn meta_at<'a>(meta: &ModelMeta<'a>, config: &PathConfig, value: f64) -> PolarsResult<ModelMeta<'a>> {
    let cfg = config.config(Some(value)).map_err(param)?;
    let (l1, l2) = (cfg.l1, cfg.l2);
    Ok(ModelMeta { label_dtype: meta.label_dtype, loss: meta.loss, multiclass: meta.multiclass, l1, l2 })
}

/// The models of a path as one row of a list of structs, built field by field
/// ([`output::models`]): one struct per value appended and imploded copied every coefficient
/// twice (75 MB of fresh memory for the 100 dense models of the elastic-net row of
/// `benchmarks/paths.py`).
fn models(
    name: &str,
    meta: &ModelMeta<'_>,
    config: &PathConfig,
    fitted: Path,
    g: &Group,
) -> PolarsResult<Series> {
    if fitted.fits.is_empty() {
        return Err(compute("internal error: an empty path; please report".into()));
    }
    if fitted.fits.iter().any(|f| f.status == sdca_core::Status::Interrupted) {
        return Err(interrupt::error());
    }
    let metas = fitted.values.iter().take(fitted.fits.len()).map(|&v| meta_at(meta, config, v));
    let (l1, l2): (Vec<f64>, Vec<f64>) =
        metas.map(|m| m.map(|m| (m.l1, m.l2))).collect::<PolarsResult<_>>()?;
    let n_rows = g.labels.y.len();
    let screened = fitted.screened.iter().map(|&s| Some(s as u64)).collect();
    let visited = fitted.nnz_visited.iter().map(|&v| Some(v)).collect();
    let rows: Vec<Fitted> = fitted
        .fits
        .into_iter()
        .map(|fit| Fitted::Model { fit, classes: g.labels.classes.clone(), n_rows })
        .collect();
    let rows = output::models(name, meta, &rows)?;
    let rows = with_screening(rows, Some((l1, l2)), screened, visited)?;
    Ok(rows.implode()?.into_series().with_name(name.into()))
}

fn model_row(name: &str, meta: &ModelMeta<'_>, fit: &FitResult, g: &Group, n: usize) -> PolarsResult<Series> {
    if fit.status == sdca_core::Status::Interrupted {
        return Err(interrupt::error());
    }
    output::model(name, meta, fit, g.labels.classes.as_ref(), n)
}

/// `fit_path`: the group's path as one list of model structs.
pub fn path(inputs: &[Series], kw: &PathKwargs) -> PolarsResult<Series> {
    let fit_kw = check(kw)?;
    fit::check_policies(&fit_kw)?;
    let mut config = kw.checked()?;
    config.interrupt = interrupt::arm();
    let cfg = config.config(None).map_err(param)?;
    let label = &inputs[0];
    let meta = fit::meta(label, &fit_kw);
    let result = fit::prepare(inputs, &fit_kw, &cfg).and_then(|g| {
        let fitted = on_problem(&g, &cfg, |p| fit_path(p, &config), |p| fit_path(p, &config))?;
        models(label.name(), &meta, &config, fitted, &g)
    });
    match result {
        Err(e) if kw.on_error == "null" && !interrupt::is_interrupt(&e) => {
            let null = output::null_model(label.name(), &meta, &fit::status_of(&e))?;
            let null = with_screening(null, None, vec![None], vec![None])?;
            Ok(null.implode()?.into_series().with_name(label.name().clone()))
        }
        other => other,
    }
}

/// The fold of each fitted row: from the fold column (its dense ranks, nulls refused; rows the
/// null policy dropped left out), or drawn from the seed.
fn folds(
    g: &Group,
    column: Option<&Series>,
    c: &CvConfig,
    cfg: &sdca_core::FitConfig,
) -> PolarsResult<Vec<u32>> {
    let Some(s) = column else {
        let classification = cfg.loss.is_classification() || cfg.loss.is_multiclass();
        let k = c.folds.unwrap_or(2);
        return cv::draw_folds(&g.labels.y, classification, k, cfg.seed).map_err(param);
    };
    let name = s.name().clone();
    let ids = s.cast(&DataType::Int64)?;
    let ids = ids.i64()?;
    if let Some(row) = ids.iter().position(|v| v.is_none()) {
        return Err(compute(format!("column {name:?}, row {row}: null fold id; fill it or drop the row")));
    }
    let all: Vec<i64> = ids.into_no_null_iter().collect();
    let kept: Vec<i64> = match g.kept() {
        Some(rows) => rows.iter().map(|&r| all[r as usize]).collect(),
        None => all,
    };
    cv::folds_from_ids(&kept).map(|(f, _)| f).map_err(|e| compute(format!("column {name:?}: {e}")))
}

/// `fit_cv`: the group's cross-validated path as one struct.
pub fn cross_validate(inputs: &[Series], kw: &PathKwargs) -> PolarsResult<Series> {
    let fit_kw = check(kw)?;
    fit::check_policies(&fit_kw)?;
    let mut configs = kw.checked_each()?;
    let armed = interrupt::arm();
    configs.iter_mut().for_each(|c| c.interrupt = armed);
    let first =
        configs.first().ok_or_else(|| compute("internal error: no path to fit; please report".into()))?;
    let cfg = first.config(None).map_err(param)?;
    let c =
        kw.cv.as_ref().ok_or_else(|| compute("internal error: fit_cv without cv; please report".into()))?;
    let c = c.check(cfg.loss).map_err(param)?;
    let (data, fold_column) = split_folds(inputs, &kw.layout);
    let label = &data[0];
    let meta = fit::meta(label, &fit_kw);
    let result = fit::prepare(data, &fit_kw, &cfg).and_then(|g| {
        let ids = folds(&g, fold_column, &c, &cfg)?;
        let k = ids.iter().max().map_or(1, |&m| m as usize + 1);
        let parallel = threads::resolve(None, k * configs.len(), u64::MAX) > 1;
        let work = || {
            on_problem(
                &g,
                &cfg,
                |p| cv::cross_validate(p, &configs, &ids, &c, parallel),
                |p| cv::cross_validate(p, &configs, &ids, &c, parallel),
            )
        };
        let result = match threads::pool().filter(|_| parallel) {
            Some(pool) => pool.install(work)?,
            None => work()?,
        };
        let config = &configs[result.chosen.path];
        let meta = meta_at(&meta, config, result.chosen_value())?;
        let model = model_row(label.name(), &meta, &result.model, &g, g.labels.y.len())?;
        cv_row(label.name(), model, Some(&result))
    });
    match result {
        Err(e) if kw.on_error == "null" && !interrupt::is_interrupt(&e) => {
            let null = output::null_model(label.name(), &meta, &fit::status_of(&e))?;
            cv_row(label.name(), null, None)
        }
        other => other,
    }
}

/// One row of the cross-validation struct (`None`: a failed group, nulls but the model): the
/// curves concatenated, one entry per (`l1_ratio`, value) pair.
fn cv_row(name: &PlSmallStr, model: Series, r: Option<&CvResult>) -> PolarsResult<Series> {
    let all = |f: fn(&Curve) -> &[f64]| -> Option<Vec<f64>> {
        r.map(|r| r.curves.iter().flat_map(|c| f(c).iter().copied()).collect())
    };
    let f64s = |field: &str, v: Option<Vec<f64>>| -> PolarsResult<Series> {
        match v {
            Some(v) => output::f64_list(field, &v),
            None => Ok(Series::full_null(field.into(), 1, &list(DataType::Float64))),
        }
    };
    let ratios = match r {
        Some(r) => {
            let each: Vec<Option<f64>> =
                r.curves.iter().flat_map(|c| vec![c.l1_ratio; c.values.len()]).collect();
            Series::new("".into(), each).implode()?.into_series().with_name("l1_ratio".into())
        }
        None => Series::full_null("l1_ratio".into(), 1, &list(DataType::Float64)),
    };
    let fold_scores = match r {
        Some(r) => {
            let k = r.curves.first().map_or(0, |c| c.fold_scores.len());
            // Fold-major: each fold's scores over every curve, in the order of `values`.
            let flat: Vec<f64> = (0..k)
                .flat_map(|f| r.curves.iter().flat_map(move |c| c.fold_scores[f].iter().copied()))
                .collect();
            output::matrix("fold_scores", &flat, k)?
        }
        None => Series::full_null("fold_scores".into(), 1, &list(list(DataType::Float64))),
    };
    let at = |p: fn(&CvResult) -> Pick, r: &CvResult| r.curves[p(r).path].values[p(r).value];
    let ratio_at = |p: fn(&CvResult) -> Pick, r: &CvResult| r.curves[p(r).path].l1_ratio;
    let cols = [
        model.with_name("model".into()),
        Series::new("penalty".into(), [r.map(|r| r.penalty.name())]),
        ratios,
        f64s("values", all(|c| &c.values))?,
        f64s("mean", all(|c| &c.mean))?,
        f64s("se", all(|c| &c.se))?,
        fold_scores,
        Series::new("best".into(), [r.map(|r| at(|r| r.best, r))]),
        Series::new("chosen".into(), [r.map(|r| at(|r| r.chosen, r))]),
        Series::new("best_l1_ratio".into(), [r.and_then(|r| ratio_at(|r| r.best, r))]),
        Series::new("chosen_l1_ratio".into(), [r.and_then(|r| ratio_at(|r| r.chosen, r))]),
        Series::new("scoring".into(), [r.map(|r| r.scoring.name())]),
    ];
    Ok(StructChunked::from_series(name.clone(), 1, cols.iter())?.into_series())
}

/// Whether the path's loss is multiclass (for the output dtype).
pub fn is_multiclass(kw: &PathKwargs) -> bool {
    kw.fit_kwargs().is_ok_and(|f| fit::is_multiclass(&f))
}
