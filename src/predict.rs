//! `predict`: scores, classes or probabilities from a model column (or a broadcast literal).
//!
//! Each row may carry its own model (after a join with per-group models), so the model's
//! `coef` list is read through its offsets, without copying, and every row uses its own slice.
//! A multiclass model (`coef` a list of per-class lists) gives one score per class: `decision`
//! and `proba` (softmax, multinomial models) are then lists, and `class` is the arg-max. The
//! numbers (scores, probabilities, the class) come from `sdca_core::predict`; this module moves
//! the model columns and the rows.

use polars::prelude::*;
use sdca_core::predict::{self, LinearModel};
use sdca_core::{Rows, SdcaError};

use crate::convert::{self, Features};
use crate::error::compute;
use crate::fit::split;
use crate::kwargs::PredictKwargs;
use crate::output;

/// The model fields `predict` reads, flattened for row access.
struct Models {
    /// Per model: its coefficients `values[lo..hi]`, output-major (`k` blocks of `d`).
    span: Vec<(usize, usize)>,
    /// Per model: its intercepts `intercepts[lo..lo + k]`, `k` the outputs.
    icept: Vec<(usize, usize)>,
    values: Float64Chunked,
    intercepts: Vec<f64>,
    loss: Vec<Option<String>>,
    classes: Option<ListChunked>,
    valid: Vec<bool>,
}

/// The row offsets of a single-chunk list column.
fn offsets(ca: &ListChunked) -> Vec<i64> {
    ca.downcast_as_array().offsets().as_slice().to_vec()
}

fn read_models(model: &Series) -> PolarsResult<Models> {
    let name = model.name();
    let st = model.struct_().map_err(|_| {
        compute(format!(
            "column {name:?}: predict needs a model struct (the output of fit), got {}",
            model.dtype()
        ))
    })?;
    let field = |f: &str| {
        st.field_by_name(f).map_err(|_| {
            compute(format!("column {name:?}: model struct has no field {f:?}; pass the output of fit"))
        })
    };
    let coef = field("coef")?.rechunk();
    let coef = coef.list()?;
    let outer = offsets(coef);
    let valid: Vec<bool> = model
        .is_not_null()
        .iter()
        .zip(coef.is_not_null().iter())
        .map(|(a, b)| a.unwrap_or(false) && b.unwrap_or(false))
        .collect();
    // Multiclass: coef is a list of per-class lists; map row offsets through the class lists.
    let (span, values, classes_per_row) = match coef.inner_dtype() {
        DataType::List(_) => {
            let inner = coef.get_inner().rechunk();
            let inner = inner.list()?;
            let io = offsets(inner);
            let span: Vec<(usize, usize)> =
                outer.windows(2).map(|w| (io[w[0] as usize] as usize, io[w[1] as usize] as usize)).collect();
            let k: Vec<usize> = outer.windows(2).map(|w| (w[1] - w[0]) as usize).collect();
            for (m, w) in outer.windows(2).enumerate() {
                let widths: Vec<i64> = (w[0]..w[1]).map(|c| io[c as usize + 1] - io[c as usize]).collect();
                if valid[m] && widths.windows(2).any(|p| p[0] != p[1]) {
                    return Err(compute(format!(
                        "column {name:?}, row {m}: the per-class coef lists have different lengths {widths:?}"
                    )));
                }
            }
            (span, inner.get_inner().cast(&DataType::Float64)?.rechunk(), k)
        }
        _ => {
            let span = outer.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect();
            (span, coef.get_inner().cast(&DataType::Float64)?.rechunk(), vec![1; valid.len()])
        }
    };
    let intercept = field("intercept")?;
    let (icept, intercepts) = match intercept.dtype() {
        DataType::List(_) => {
            let ic = intercept.rechunk();
            let ic = ic.list()?;
            let io = offsets(ic);
            let vals = ic.get_inner().cast(&DataType::Float64)?;
            let spans: Vec<(usize, usize)> =
                io.windows(2).map(|w| (w[0] as usize, (w[1] - w[0]) as usize)).collect();
            (spans, vals.f64()?.iter().map(|v| v.unwrap_or(0.0)).collect())
        }
        _ => {
            let vals = intercept.cast(&DataType::Float64)?;
            (
                (0..vals.len()).map(|m| (m, 1)).collect(),
                vals.f64()?.iter().map(|v| v.unwrap_or(0.0)).collect(),
            )
        }
    };
    for (m, (&(_, kb), &k)) in icept.iter().zip(&classes_per_row).enumerate() {
        if valid[m] && kb != k {
            return Err(compute(format!(
                "column {name:?}, row {m}: the model has {k} coef blocks but {kb} intercepts"
            )));
        }
    }
    let loss = field("loss")?.str()?.iter().map(|s| s.map(str::to_owned)).collect();
    let classes = field("classes").ok().map(|c| c.list().cloned()).transpose()?;
    Ok(Models { span, icept, values: values.f64()?.clone(), intercepts, loss, classes, valid })
}

/// Whether a model dtype is multiclass (per-class coef lists).
fn is_multiclass(fields: &[Field]) -> bool {
    fields.iter().any(|f| {
        f.name().as_str() == "coef"
            && matches!(f.dtype(), DataType::List(i) if matches!(i.as_ref(), DataType::List(_)))
    })
}

/// Output dtype of `predict` from the model column's dtype.
pub fn output_dtype(model: &DataType, kind: &str) -> PolarsResult<DataType> {
    let DataType::Struct(fields) = model else {
        return Err(compute(format!("predict needs a model struct column (the output of fit), got {model}")));
    };
    for required in ["coef", "intercept", "loss"] {
        if !fields.iter().any(|f| f.name().as_str() == required) {
            return Err(compute(format!("model struct has no field {required:?}; pass the output of fit")));
        }
    }
    match kind {
        "decision" | "proba" if is_multiclass(fields) => Ok(DataType::List(Box::new(DataType::Float64))),
        "decision" | "proba" => Ok(DataType::Float64),
        "class" => match fields.iter().find(|f| f.name().as_str() == "classes").map(|f| f.dtype()) {
            Some(DataType::List(inner)) => Ok(inner.as_ref().clone()),
            _ => Err(compute(
                "model struct has no `classes` list; kind=\"class\" needs a classification model".into(),
            )),
        },
        other => Err(compute(format!(
            "invalid parameter `kind`: unknown value {other:?}; expected one of decision, class, proba"
        ))),
    }
}

/// Every row's scores (`k` of its model's outputs), row-major in one buffer; `None` for rows
/// whose model is null.
fn decisions<D: Rows>(x: &D, m: &Models, name: &str) -> PolarsResult<Vec<Option<Vec<f64>>>> {
    let values = m
        .values
        .cont_slice()
        .map_err(|_| compute(format!("column {name:?}: model coefficients contain nulls")))?;
    let broadcast = m.valid.len() == 1;
    (0..x.n_rows())
        .map(|r| {
            let j = if broadcast { 0 } else { r };
            if !m.valid[j] {
                return Ok(None);
            }
            let ((lo, hi), (ilo, k)) = (m.span[j], m.icept[j]);
            let in_row = |e: SdcaError| match e {
                SdcaError::IndexOutOfRange { row, index, n_features } => compute(format!(
                    "column {name:?}, row {row}: feature index {index} >= model width {n_features}; the model was fitted on fewer features (pass n_features when fitting)"
                )),
                other => compute(format!("column {name:?}, row {r}: {other}")),
            };
            let model = LinearModel::new(&values[lo..hi], &m.intercepts[ilo..ilo + k]).map_err(in_row)?;
            let mut scores = vec![0.0; k];
            model.scores_into(x, r, &mut scores).map_err(in_row)?;
            Ok(Some(scores))
        })
        .collect()
}

/// `predict` on one call's rows.
pub fn predict(inputs: &[Series], kw: &PredictKwargs) -> PolarsResult<Series> {
    let (model, _, _) = split(inputs, &kw.layout)?;
    let out_dtype = output_dtype(model.dtype(), &kw.kind)?;
    let n = inputs[1].len();
    if model.len() != n && model.len() != 1 {
        return Err(compute(format!(
            "column {:?} has {} rows but the features have {n}",
            model.name(),
            model.len()
        )));
    }
    // Rows with null features predict null, whatever the model.
    let (kept_inputs, kept) = convert::apply_null_policy(&inputs[1..], "drop", true)?;
    let mut models = read_models(model)?;
    if let Some(kept) = &kept {
        if model.len() != 1 {
            let idx = IdxCa::from_vec("".into(), kept.clone());
            models = read_models(&model.take(&idx)?)?;
        }
    }
    let feats = convert::features(&kept_inputs, &kw.layout)?;
    let dec = match &feats {
        Features::Sparse(s) => {
            let widest = (0..models.valid.len())
                .map(|m| (models.span[m].1 - models.span[m].0) / models.icept[m].1.max(1))
                .max()
                .unwrap_or(0);
            decisions(&s.view_with_width(widest.max(s.n_cols()))?, &models, s.name())?
        }
        Features::Dense(d) => decisions(&d.view()?, &models, d.name())?,
    };
    let broadcast = models.valid.len() == 1;
    let model_of = |k: usize| if broadcast { 0 } else { k };
    // Only `decision` and `proba` use this; their dtype is a list exactly for multiclass models.
    let multiclass = matches!(out_dtype, DataType::List(_));
    let values: Series = match kw.kind.as_str() {
        "decision" => {
            let rows: Vec<Option<&[f64]>> = dec.iter().map(|d| d.as_deref()).collect();
            output::blocks("", &rows, multiclass)
        }
        "proba" => {
            for (k, d) in dec.iter().enumerate() {
                let loss = models.loss[model_of(k)].as_deref().unwrap_or("");
                if d.is_some() && !predict::has_probabilities(loss) {
                    return Err(compute(format!(
                        "column {:?}: kind=\"proba\" needs a logistic or multinomial model, got loss {:?}; use kind=\"decision\"",
                        model.name(),
                        models.loss[model_of(k)]
                    )));
                }
            }
            let probs: Vec<Option<Vec<f64>>> = dec
                .iter()
                .map(|d| {
                    d.as_ref().map(|s| {
                        let mut p = vec![0.0; s.len()];
                        predict::probabilities(s, &mut p);
                        p
                    })
                })
                .collect();
            let rows: Vec<Option<&[f64]>> = probs.iter().map(|d| d.as_deref()).collect();
            output::blocks("", &rows, multiclass)
        }
        _ => {
            let classes =
                models.classes.as_ref().ok_or_else(|| compute("model has no classes".into()))?.rechunk();
            let offs = classes.downcast_as_array().offsets().as_slice().to_vec();
            let mut idx: Vec<Option<IdxSize>> = Vec::with_capacity(dec.len());
            for (k, d) in dec.iter().enumerate() {
                let m = model_of(k);
                let (lo, hi) = (offs[m], offs[m + 1]);
                match d {
                    Some(d) if (hi - lo) as usize != d.len().max(2) => {
                        return Err(compute(format!(
                            "column {:?}: kind=\"class\" needs a classification model, got loss {:?}",
                            model.name(),
                            models.loss[m]
                        )))
                    }
                    Some(d) => idx.push(Some((lo as usize + predict::class_index(d)) as IdxSize)),
                    None => idx.push(None),
                }
            }
            let idx: IdxCa = idx.into_iter().collect();
            classes.get_inner().take(&idx)?
        }
    };
    let values = values.cast(&out_dtype)?;
    let values = match kept {
        Some(kept) => {
            let mut back: Vec<Option<IdxSize>> = vec![None; n];
            for (k, r) in kept.iter().enumerate() {
                back[*r as usize] = Some(k as IdxSize);
            }
            let idx: IdxCa = back.into_iter().collect();
            values.take(&idx)?
        }
        None => values,
    };
    Ok(values.with_name(model.name().clone()))
}
