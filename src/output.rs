//! Result structs to Polars columns, next to the output-type functions for those dtypes.
//!
//! The model struct (DESIGN.md section 4) has one fixed layout; only `classes` follows the
//! label's dtype, so `predict(kind="class")` can return the original label dtype at plan time.
//! `l2_used` and `solved_gap` describe the problem actually solved: they differ from `l2` and
//! `gap` only for the Lasso (`l2 = 0`), solved as an elastic net with a small `l2_used`.

use polars::prelude::*;
use sdca_core::{FitResult, RowOutputs};

fn list(dt: DataType) -> DataType {
    DataType::List(Box::new(dt))
}

/// The model struct's fields, in order.
pub fn model_fields(label: &DataType) -> Vec<Field> {
    use DataType::*;
    vec![
        Field::new("coef".into(), list(Float64)),
        Field::new("intercept".into(), Float64),
        Field::new("classes".into(), list(label.clone())),
        Field::new("loss".into(), String),
        Field::new("l2".into(), Float64),
        Field::new("l1".into(), Float64),
        Field::new("l2_used".into(), Float64),
        Field::new("solver".into(), String),
        Field::new("primal".into(), Float64),
        Field::new("dual".into(), Float64),
        Field::new("gap".into(), Float64),
        Field::new("solved_gap".into(), Float64),
        Field::new("epochs".into(), UInt32),
        Field::new("converged".into(), Boolean),
        Field::new("gap_trace".into(), list(Float64)),
        Field::new("n_rows".into(), UInt64),
        Field::new("n_features".into(), UInt64),
        Field::new("status".into(), String),
    ]
}

/// The `fit_rows` struct's fields.
pub fn rows_fields(prediction: &DataType) -> Vec<Field> {
    vec![
        Field::new("prediction".into(), prediction.clone()),
        Field::new("decision".into(), DataType::Float64),
        Field::new("dual".into(), DataType::Float64),
        Field::new("gap".into(), DataType::Float64),
    ]
}

fn list_of(name: &str, values: Series) -> PolarsResult<Series> {
    Ok(values.implode()?.into_series().with_name(name.into()))
}

fn f64_list(name: &str, v: &[f64]) -> PolarsResult<Series> {
    list_of(name, Series::new("".into(), v))
}

/// What every model row records about the request, fitted or not.
pub struct ModelMeta<'a> {
    pub label_dtype: &'a DataType,
    pub loss: &'a str,
    pub l2: f64,
    pub l1: f64,
}

/// A one-row model struct from a successful fit.
pub fn model(
    name: &str,
    meta: &ModelMeta<'_>,
    fit: &FitResult,
    classes: Option<&Series>,
    n_rows: usize,
) -> PolarsResult<Series> {
    let c = fit.certificate;
    let classes = match classes {
        Some(c) => list_of("classes", c.clone())?,
        None => Series::full_null("classes".into(), 1, &list(meta.label_dtype.clone())),
    };
    let cols = [
        f64_list("coef", &fit.coef)?,
        Series::new("intercept".into(), [fit.intercept]),
        classes,
        Series::new("loss".into(), [meta.loss]),
        Series::new("l2".into(), [meta.l2]),
        Series::new("l1".into(), [meta.l1]),
        Series::new("l2_used".into(), [fit.l2_used]),
        Series::new("solver".into(), [fit.solver]),
        Series::new("primal".into(), [c.primal]),
        Series::new("dual".into(), [c.dual]),
        Series::new("gap".into(), [c.gap]),
        Series::new("solved_gap".into(), [fit.solved_gap]),
        Series::new("epochs".into(), [fit.epochs]),
        Series::new("converged".into(), [fit.converged()]),
        f64_list("gap_trace", &fit.gap_trace)?,
        Series::new("n_rows".into(), [n_rows as u64]),
        Series::new("n_features".into(), [fit.coef.len() as u64]),
        Series::new("status".into(), [fit.status.as_str()]),
    ];
    Ok(StructChunked::from_series(name.into(), 1, cols.iter())?.into_series())
}

/// A one-row model whose fit failed: every field null but the request and `status`.
pub fn null_model(name: &str, meta: &ModelMeta<'_>, status: &str) -> PolarsResult<Series> {
    let cols: Vec<Series> = model_fields(meta.label_dtype)
        .into_iter()
        .map(|f| match f.name().as_str() {
            "loss" => Series::new("loss".into(), [meta.loss]),
            "l2" => Series::new("l2".into(), [meta.l2]),
            "l1" => Series::new("l1".into(), [meta.l1]),
            "status" => Series::new("status".into(), [status]),
            "converged" => Series::new("converged".into(), [false]),
            _ => Series::full_null(f.name().clone(), 1, f.dtype()),
        })
        .collect();
    Ok(StructChunked::from_series(name.into(), 1, cols.iter())?.into_series())
}

/// Per-row outputs scattered back to `n` rows (`kept` maps fitted rows to input rows; dropped
/// rows and failed fits give nulls).
pub fn rows(
    name: &str,
    n: usize,
    prediction_dtype: &DataType,
    fitted: Option<(&FitResult, &RowOutputs, Series)>,
    kept: Option<&[IdxSize]>,
) -> PolarsResult<Series> {
    let mut decision = vec![None; n];
    let mut dual = vec![None; n];
    let mut gap = vec![None; n];
    let mut pred_idx: Vec<Option<IdxSize>> = vec![None; n];
    let prediction = match fitted {
        Some((fit, out, prediction)) => {
            for k in 0..out.decision.len() {
                let r = kept.map_or(k, |m| m[k] as usize);
                decision[r] = Some(out.decision[k]);
                dual[r] = Some(fit.alpha[k]);
                gap[r] = Some(out.gap[k]);
                pred_idx[r] = Some(k as IdxSize);
            }
            let idx: IdxCa = pred_idx.into_iter().collect();
            prediction.take(&idx)?.cast(prediction_dtype)?
        }
        None => Series::full_null("".into(), n, prediction_dtype),
    };
    let cols = [
        prediction.with_name("prediction".into()),
        Series::new("decision".into(), decision),
        Series::new("dual".into(), dual),
        Series::new("gap".into(), gap),
    ];
    Ok(StructChunked::from_series(name.into(), n, cols.iter())?.into_series())
}
