//! `predict`: scores, classes or probabilities from a model column (or a broadcast literal).
//!
//! Each row may carry its own model (after a join with per-group models), so the model's
//! `coef` list is read through its offsets, without copying, and every row uses its own slice.

use polars::prelude::*;
use sdca_core::{Rows, SdcaError};

use crate::convert::{self, Features};
use crate::error::compute;
use crate::fit::split;
use crate::kwargs::PredictKwargs;

/// The model fields `predict` reads, flattened for row access.
struct Models {
    offsets: Vec<i64>,
    coef: Float64Chunked,
    intercept: Vec<Option<f64>>,
    loss: Vec<Option<String>>,
    classes: Option<ListChunked>,
    valid: Vec<bool>,
}

fn read_models(model: &Series) -> PolarsResult<Models> {
    let st = model.struct_().map_err(|_| {
        compute(format!(
            "column {:?}: predict needs a model struct (the output of fit), got {}",
            model.name(),
            model.dtype()
        ))
    })?;
    let field = |name: &str| {
        st.field_by_name(name).map_err(|_| {
            compute(format!(
                "column {:?}: model struct has no field {name:?}; pass the output of fit",
                model.name()
            ))
        })
    };
    let coef = field("coef")?.rechunk();
    let coef = coef.list()?;
    let offsets = coef.downcast_as_array().offsets().as_slice().to_vec();
    let inner = coef.get_inner().cast(&DataType::Float64)?.rechunk();
    let valid: Vec<bool> = model
        .is_not_null()
        .iter()
        .zip(coef.is_not_null().iter())
        .map(|(a, b)| a.unwrap_or(false) && b.unwrap_or(false))
        .collect();
    let intercept = field("intercept")?.cast(&DataType::Float64)?.f64()?.iter().collect();
    let loss = field("loss")?.str()?.iter().map(|s| s.map(str::to_owned)).collect();
    let classes = field("classes").ok().map(|c| c.list().cloned()).transpose()?;
    Ok(Models { offsets, coef: inner.f64()?.clone(), intercept, loss, classes, valid })
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

fn decisions<D: Rows>(x: &D, m: &Models, name: &str) -> PolarsResult<Vec<Option<f64>>> {
    let values = m
        .coef
        .cont_slice()
        .map_err(|_| compute(format!("column {name:?}: model coefficients contain nulls")))?;
    let broadcast = m.valid.len() == 1;
    (0..x.n_rows())
        .map(|r| {
            let k = if broadcast { 0 } else { r };
            if !m.valid[k] {
                return Ok(None);
            }
            let w = &values[m.offsets[k] as usize..m.offsets[k + 1] as usize];
            let b = m.intercept[k].unwrap_or(0.0);
            let d = x.dot_checked(r, w).map_err(|e| match e {
                SdcaError::IndexOutOfRange { row, index, n_features } => compute(format!(
                    "column {name:?}, row {row}: feature index {index} >= model width {n_features}; the model was fitted on fewer features (pass n_features when fitting)"
                )),
                other => compute(format!("column {name:?}, row {r}: {other}")),
            })?;
            Ok(Some(d + b))
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
    let (kept_inputs, kept) = convert::apply_null_policy(&inputs[1..], "drop")?;
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
                .map(|k| (models.offsets[k + 1] - models.offsets[k]) as usize)
                .max()
                .unwrap_or(0);
            decisions(&s.view_with_width(widest.max(s.n_cols()))?, &models, s.name())?
        }
        Features::Dense(d) => decisions(&d.view()?, &models, d.name())?,
    };
    let broadcast = models.valid.len() == 1;
    let model_of = |k: usize| if broadcast { 0 } else { k };
    let values: Series = match kw.kind.as_str() {
        "decision" => Series::new("".into(), &dec),
        "proba" => {
            for (k, d) in dec.iter().enumerate() {
                if d.is_some() && models.loss[model_of(k)].as_deref() != Some("logistic") {
                    return Err(compute(format!(
                        "column {:?}: kind=\"proba\" needs a logistic model, got loss {:?}; use kind=\"decision\"",
                        model.name(),
                        models.loss[model_of(k)]
                    )));
                }
            }
            Series::new("".into(), dec.iter().map(|d| d.map(sdca_core::loss::sigmoid)).collect::<Vec<_>>())
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
                    Some(_) if hi - lo != 2 => {
                        return Err(compute(format!(
                            "column {:?}: kind=\"class\" needs a classification model, got loss {:?}",
                            model.name(),
                            models.loss[m]
                        )))
                    }
                    Some(d) => idx.push(Some((lo + i64::from(*d > 0.0)) as IdxSize)),
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
