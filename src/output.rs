//! Result structs to Polars columns, next to the output-type functions for those dtypes.
//!
//! The model struct (DESIGN.md section 4) has one fixed layout; only `classes` follows the
//! label's dtype, so `predict(kind="class")` can return the original label dtype at plan time.
//! `l2_used` and `solved_gap` describe the problem actually solved: they differ from `l2` and
//! `gap` only for the Lasso (`l2 = 0`), solved as an elastic net with a small `l2_used`.

use std::cell::RefCell;
use std::rc::Rc;

use polars::prelude::*;
use polars_arrow::array::{
    new_null_array, Array, BooleanArray, ListArray, PrimitiveArray, StructArray, Utf8ViewArray,
};
use polars_arrow::datatypes::ArrowDataType;
use polars_arrow::offset::OffsetsBuffer;
use sdca_core::solver::Certificate;
use sdca_core::{FitResult, RowOutputs, Status};

use crate::fit::Fitted;

fn list(dt: DataType) -> DataType {
    DataType::List(Box::new(dt))
}

/// The dtype of a per-output quantity: a number for scalar losses, a list with one entry per
/// class for multiclass losses.
fn per_output(dt: DataType, multiclass: bool) -> DataType {
    if multiclass {
        list(dt)
    } else {
        dt
    }
}

/// The model struct's fields, in order. Multiclass models hold one `coef` list and one
/// intercept per class (in `classes` order).
pub fn model_fields(label: &DataType, multiclass: bool) -> Vec<Field> {
    use DataType::*;
    vec![
        Field::new("coef".into(), per_output(list(Float64), multiclass)),
        Field::new("intercept".into(), per_output(Float64, multiclass)),
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

/// The `fit_rows` struct's fields (multiclass: per-class scores and duals as lists).
pub fn rows_fields(prediction: &DataType, multiclass: bool) -> Vec<Field> {
    vec![
        Field::new("prediction".into(), prediction.clone()),
        Field::new("decision".into(), per_output(DataType::Float64, multiclass)),
        Field::new("dual".into(), per_output(DataType::Float64, multiclass)),
        Field::new("gap".into(), DataType::Float64),
        Field::new("loss".into(), DataType::Float64),
    ]
}

fn list_of(name: &str, values: Series) -> PolarsResult<Series> {
    Ok(values.implode()?.into_series().with_name(name.into()))
}

/// A one-row `List(Float64)`.
pub fn f64_list(name: &str, v: &[f64]) -> PolarsResult<Series> {
    list_of(name, Series::new("".into(), v))
}

/// A `k x m` row-major matrix as a one-row `List(List(Float64))`.
pub fn matrix(name: &str, v: &[f64], k: usize) -> PolarsResult<Series> {
    let m = v.len().checked_div(k).unwrap_or(0);
    let rows: Vec<Series> = (0..k).map(|r| Series::new("".into(), &v[r * m..(r + 1) * m])).collect();
    let inner = Series::new("".into(), rows);
    let inner = if k == 0 { inner.cast(&list(DataType::Float64))? } else { inner };
    list_of(name, inner)
}

/// `n` rows of `k` values each (`values` row-major; `None`: a null row) as `Float64` for
/// `k = 1` (scalar losses) or `List(Float64)` (multiclass).
pub fn blocks(name: &str, values: &[Option<&[f64]>], multiclass: bool) -> Series {
    if !multiclass {
        return Series::new(name.into(), values.iter().map(|v| v.map(|b| b[0])).collect::<Vec<_>>());
    }
    let width = values.iter().flatten().map(|b| b.len()).max().unwrap_or(0);
    let mut builder = ListPrimitiveChunkedBuilder::<Float64Type>::new(
        name.into(),
        values.len(),
        values.len() * width,
        DataType::Float64,
    );
    for v in values {
        match v {
            Some(b) => builder.append_slice(b),
            None => builder.append_null(),
        }
    }
    builder.finish().into_series()
}

/// What every model row records about the request, fitted or not.
pub struct ModelMeta<'a> {
    pub label_dtype: &'a DataType,
    pub loss: &'a str,
    pub multiclass: bool,
    pub l2: f64,
    pub l1: f64,
}

/// The model struct's dtype for one label dtype and its physical Arrow type, with the Arrow
/// type of each field: built once per thread and reused while the label dtype stays the same
/// (a `group_by().agg` builds one model per group).
pub struct ModelType {
    label: DataType,
    multiclass: bool,
    /// The model struct's dtype.
    dtype: DataType,
    /// Whether `dtype` has no logical type (its Arrow type is `arrow`).
    physical: bool,
    arrow: ArrowDataType,
    children: Vec<ArrowDataType>,
    /// A one-row null `classes` (regression models): `new_null_array` costs about 18,000
    /// instructions a call (callgrind), a clone shares its buffers.
    null_classes: Option<Box<dyn Array>>,
}

thread_local! {
    static MODEL_TYPE: RefCell<Option<Rc<ModelType>>> = const { RefCell::new(None) };
}

fn model_type(label: &DataType, multiclass: bool) -> Rc<ModelType> {
    MODEL_TYPE.with(|cell| {
        if let Some(t) = cell.borrow().as_ref() {
            if t.multiclass == multiclass && &t.label == label {
                return Rc::clone(t);
            }
        }
        let dtype = DataType::Struct(model_fields(label, multiclass));
        let arrow = dtype.to_physical().to_arrow(CompatLevel::newest());
        let children = match &arrow {
            ArrowDataType::Struct(fields) => fields.iter().map(|f| f.dtype().clone()).collect(),
            _ => Vec::new(),
        };
        let null_classes = children.get(2).map(|dt| new_null_array(dt.clone(), 1));
        let physical = dtype.to_arrow(CompatLevel::newest()) == arrow;
        let t = Rc::new(ModelType {
            label: label.clone(),
            multiclass,
            dtype,
            physical,
            arrow,
            children,
            null_classes,
        });
        *cell.borrow_mut() = Some(Rc::clone(&t));
        t
    })
}

/// A one-row list of `values` (an Arrow array of the list's child type).
fn one_list(dtype: &ArrowDataType, values: Box<dyn Array>) -> PolarsResult<Box<dyn Array>> {
    let len = i64::try_from(values.len()).map_err(|_| polars_err!(ComputeError: "list too long"))?;
    Ok(ListArray::<i64>::try_new(dtype.clone(), OffsetsBuffer::one_with_length(len), values, None)?.boxed())
}

fn f64s(v: &[f64]) -> Box<dyn Array> {
    PrimitiveArray::<f64>::from_slice(v).boxed()
}

fn text(v: &str) -> Box<dyn Array> {
    Utf8ViewArray::from_slice_values([v]).boxed()
}

/// A one-row model struct from a successful fit.
///
/// Built as one Arrow struct array from the fields' arrays, against the cached [`ModelType`]:
/// one `Series` per field and `StructChunked::from_series` cost about 75,000 instructions a
/// model (callgrind), as much as the fit of a 50-row group. A label dtype whose physical array
/// does not match the cached type (which `try_new` checks) takes [`model_by_series`].
pub fn model(
    name: &str,
    meta: &ModelMeta<'_>,
    fit: &FitResult,
    classes: Option<&Series>,
    n_rows: usize,
) -> PolarsResult<Series> {
    match model_arrays(meta, fit, classes, n_rows) {
        Ok((t, array)) => Ok(wrap(name, &*t, array)),
        Err(_) => model_by_series(name, meta, fit, classes, n_rows),
    }
}

/// A struct row type that the plugin builds as a bare Arrow array and exports as built
/// ([`crate::agg`]): the model struct ([`ModelType`]) and `fit_packed`'s row ([`PackedType`]).
pub trait RowType {
    /// The Polars dtype of the struct column.
    fn dtype(&self) -> &DataType;
}

impl RowType for ModelType {
    fn dtype(&self) -> &DataType {
        &self.dtype
    }
}

impl RowType for PackedType {
    fn dtype(&self) -> &DataType {
        &self.dtype
    }
}

/// The column of a struct array built by `StructArray::try_new` against `t`'s physical Arrow
/// type ([`model_array`], [`models`], [`packed`]).
pub fn wrap<T: RowType>(name: &str, t: &T, array: Box<dyn Array>) -> Series {
    // SAFETY: the callers' `try_new` checked every field's array against the struct's Arrow
    // type, which is `t.dtype()`'s physical type: what `StructChunked::from_series` builds and
    // then passes to the same constructor.
    let ca = unsafe { StructChunked::from_chunks_and_dtype(name.into(), vec![array], t.dtype().clone()) };
    ca.into_series()
}

/// A one-row model as the bare Arrow struct array of the model dtype, for the hand-written
/// export of `fit` ([`crate::agg`]): `Some` only when the model dtype has no logical type
/// (the label's dtype is physical), so that this array is what Polars itself would export, and
/// the array built (else [`model`]'s `Series` takes over).
pub fn model_array(
    meta: &ModelMeta<'_>,
    fit: &FitResult,
    classes: Option<&Series>,
    n_rows: usize,
) -> Option<(Rc<ModelType>, Box<dyn Array>)> {
    let t = model_type(meta.label_dtype, meta.multiclass);
    if !t.physical {
        return None;
    }
    model_arrays(meta, fit, classes, n_rows).ok()
}

fn model_arrays(
    meta: &ModelMeta<'_>,
    fit: &FitResult,
    classes: Option<&Series>,
    n_rows: usize,
) -> PolarsResult<(Rc<ModelType>, Box<dyn Array>)> {
    let t = model_type(meta.label_dtype, meta.multiclass);
    let Some(ch) = t.children.get(..18) else { polars_bail!(ComputeError: "model type") };
    let c = fit.certificate;
    let (coef, intercept) = if meta.multiclass {
        let k = fit.n_outputs;
        let m = fit.coef.len().checked_div(k).unwrap_or(0);
        let inner = match &ch[0] {
            ArrowDataType::LargeList(f) => f.dtype().clone(),
            _ => polars_bail!(ComputeError: "model type"),
        };
        let offsets: Vec<i64> = (0..=k).map(|r| (r * m) as i64).collect();
        let rows =
            ListArray::<i64>::try_new(inner, OffsetsBuffer::try_from(offsets)?, f64s(&fit.coef), None)?;
        (one_list(&ch[0], rows.boxed())?, one_list(&ch[1], f64s(&fit.intercept))?)
    } else {
        polars_ensure!(fit.intercept.len() == 1, ComputeError: "one intercept");
        (one_list(&ch[0], f64s(&fit.coef))?, f64s(&fit.intercept))
    };
    let classes = match classes {
        Some(s) => {
            let s = s.rechunk();
            let Some(values) = s.chunks().first() else { polars_bail!(ComputeError: "no chunk") };
            one_list(&ch[2], values.clone())?
        }
        None => t.null_classes.clone().unwrap_or_else(|| new_null_array(ch[2].clone(), 1)),
    };
    let fields = vec![
        coef,
        intercept,
        classes,
        text(meta.loss),
        f64s(&[meta.l2]),
        f64s(&[meta.l1]),
        f64s(&[fit.l2_used]),
        text(fit.solver),
        f64s(&[c.primal]),
        f64s(&[c.dual]),
        f64s(&[c.gap]),
        f64s(&[fit.solved_gap]),
        PrimitiveArray::<u32>::from_slice([fit.epochs]).boxed(),
        BooleanArray::from_slice([fit.converged()]).boxed(),
        one_list(&ch[14], f64s(&fit.gap_trace))?,
        PrimitiveArray::<u64>::from_slice([n_rows as u64]).boxed(),
        PrimitiveArray::<u64>::from_slice([(fit.coef.len() / fit.n_outputs.max(1)) as u64]).boxed(),
        text(fit.status.as_str()),
    ];
    let array = StructArray::try_new(t.arrow.clone(), 1, fields, None)?.boxed();
    Ok((t, array))
}

/// Offsets of a list column whose rows have the given lengths.
fn offsets(lengths: impl Iterator<Item = usize>) -> PolarsResult<OffsetsBuffer<i64>> {
    let mut out = vec![0i64];
    let mut end = 0i64;
    for len in lengths {
        end += i64::try_from(len).map_err(|_| polars_err!(ComputeError: "list too long"))?;
        out.push(end);
    }
    OffsetsBuffer::try_from(out)
}

/// The slices `parts` end to end as one `f64` array, copied once, into a buffer of their exact
/// size that the array then owns: a path's 100 dense models are 75 MB, and a growing `collect`
/// plus a copy into the array cost more than a third of the elastic-net path row's fits.
fn concat_f64s<'a>(parts: impl Iterator<Item = &'a [f64]> + Clone) -> Box<dyn Array> {
    let mut values = Vec::with_capacity(parts.clone().map(<[f64]>::len).sum());
    parts.for_each(|p| values.extend_from_slice(p));
    PrimitiveArray::<f64>::from_vec(values).boxed()
}

/// A list column of `f64` rows (`None`: a null row).
fn f64_lists(dtype: &ArrowDataType, rows: &[Option<&[f64]>]) -> PolarsResult<Box<dyn Array>> {
    let values = concat_f64s(rows.iter().flatten().copied());
    let validity = rows.iter().any(|r| r.is_none()).then(|| rows.iter().map(|r| r.is_some()).collect());
    let offsets = offsets(rows.iter().map(|r| r.map_or(0, |v| v.len())))?;
    Ok(ListArray::<i64>::try_new(dtype.clone(), offsets, values, validity)?.boxed())
}

/// The model rows of many groups as one struct column ([`crate::groups::fit_models`]): the
/// same fields, dtypes and values as one [`model`] or [`null_model`] per group stacked, built
/// field by field. Falls back to stacking those when a label's physical array does not match
/// the cached type.
pub fn models(name: &str, meta: &ModelMeta<'_>, fitted: &[Fitted]) -> PolarsResult<Series> {
    match models_by_arrays(name, meta, fitted, None) {
        Ok(s) => Ok(s),
        Err(_) => {
            let mut out: Option<Series> = None;
            for f in fitted {
                let m = match f {
                    Fitted::Model { fit, classes, n_rows } => {
                        model_by_series(name, meta, fit, classes.as_ref(), *n_rows)?
                    }
                    Fitted::Failed(status) => null_model(name, meta, status)?,
                };
                match out.as_mut() {
                    Some(s) => {
                        s.append(&m)?;
                    }
                    None => out = Some(m),
                }
            }
            let out = out.ok_or_else(|| polars_err!(ComputeError: "fit_groups: the frame has no rows"))?;
            Ok(out.rechunk())
        }
    }
}

/// [`models`] built field by field; `classes`, when given, is the `classes` field already
/// stacked (a `List(label)` array of one row per group, as [`packed`] rows carry it).
fn models_by_arrays(
    name: &str,
    meta: &ModelMeta<'_>,
    fitted: &[Fitted],
    classes: Option<Box<dyn Array>>,
) -> PolarsResult<Series> {
    let t = model_type(meta.label_dtype, meta.multiclass);
    let Some(ch) = t.children.get(..18) else { polars_bail!(ComputeError: "model type") };
    let n = fitted.len();
    let fits: Vec<Option<&FitResult>> = fitted
        .iter()
        .map(|f| match f {
            Fitted::Model { fit, .. } => Some(fit),
            Fitted::Failed(_) => None,
        })
        .collect();
    let each = |f: fn(&FitResult) -> f64| -> Box<dyn Array> {
        PrimitiveArray::<f64>::from_iter(fits.iter().map(|r| r.map(f))).boxed()
    };
    let coefs: Vec<Option<&[f64]>> = fits.iter().map(|r| r.map(|f| f.coef.as_slice())).collect();
    let intercepts: Vec<Option<&[f64]>> = fits.iter().map(|r| r.map(|f| f.intercept.as_slice())).collect();
    let (coef, intercept) = if meta.multiclass {
        // `coef`: per group a list of `k` rows of `m` values.
        let inner_dtype = match &ch[0] {
            ArrowDataType::LargeList(f) => f.dtype().clone(),
            _ => polars_bail!(ComputeError: "model type"),
        };
        let mut row_lengths = Vec::new();
        let mut per_group = Vec::with_capacity(n);
        for r in &fits {
            let k = r.map_or(0, |f| f.n_outputs);
            let m = r.map_or(0, |f| f.coef.len().checked_div(k).unwrap_or(0));
            row_lengths.extend(std::iter::repeat_n(m, k));
            per_group.push(k);
        }
        let values = concat_f64s(fits.iter().flatten().map(|f| f.coef.as_slice()));
        let rows = ListArray::<i64>::try_new(inner_dtype, offsets(row_lengths.into_iter())?, values, None)?;
        let validity = fits.iter().any(|r| r.is_none()).then(|| fits.iter().map(|r| r.is_some()).collect());
        let coef = ListArray::<i64>::try_new(
            ch[0].clone(),
            offsets(per_group.into_iter())?,
            rows.boxed(),
            validity,
        )?;
        (coef.boxed(), f64_lists(&ch[1], &intercepts)?)
    } else {
        polars_ensure!(fits.iter().flatten().all(|f| f.intercept.len() == 1), ComputeError: "one intercept");
        (f64_lists(&ch[0], &coefs)?, each(|f| f.intercept[0]))
    };
    let classes = if let Some(classes) = classes {
        polars_ensure!(classes.len() == n && classes.dtype() == &ch[2], ComputeError: "model type");
        classes
    } else {
        let mut arrays: Vec<Box<dyn Array>> = Vec::new();
        let mut lengths = Vec::with_capacity(n);
        let mut valid = Vec::with_capacity(n);
        for f in fitted {
            match f {
                Fitted::Model { classes: Some(c), .. } => {
                    let c = c.rechunk();
                    let Some(values) = c.chunks().first() else { polars_bail!(ComputeError: "no chunk") };
                    lengths.push(values.len());
                    arrays.push(values.clone());
                    valid.push(true);
                }
                _ => {
                    lengths.push(0);
                    valid.push(false);
                }
            }
        }
        let child = match &ch[2] {
            ArrowDataType::LargeList(f) => f.dtype().clone(),
            _ => polars_bail!(ComputeError: "model type"),
        };
        let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
        let values = if refs.is_empty() {
            polars_arrow::array::new_empty_array(child)
        } else {
            polars_arrow::compute::concatenate::concatenate(&refs)?
        };
        let validity = valid.iter().any(|v| !v).then(|| valid.iter().copied().collect());
        ListArray::<i64>::try_new(ch[2].clone(), offsets(lengths.into_iter())?, values, validity)?.boxed()
    };
    let traces: Vec<Option<&[f64]>> = fits.iter().map(|r| r.map(|f| f.gap_trace.as_slice())).collect();
    let status: Vec<&str> = fitted
        .iter()
        .map(|f| match f {
            Fitted::Model { fit, .. } => fit.status.as_str(),
            Fitted::Failed(s) => s.as_str(),
        })
        .collect();
    let fields = vec![
        coef,
        intercept,
        classes,
        Utf8ViewArray::from_slice_values(vec![meta.loss; n]).boxed(),
        f64s(&vec![meta.l2; n]),
        f64s(&vec![meta.l1; n]),
        each(|f| f.l2_used),
        Utf8ViewArray::from_slice(fits.iter().map(|r| r.map(|f| f.solver)).collect::<Vec<_>>()).boxed(),
        each(|f| f.certificate.primal),
        each(|f| f.certificate.dual),
        each(|f| f.certificate.gap),
        each(|f| f.solved_gap),
        PrimitiveArray::<u32>::from_iter(fits.iter().map(|r| r.map(|f| f.epochs))).boxed(),
        BooleanArray::from_slice(fits.iter().map(|r| r.is_some_and(|f| f.converged())).collect::<Vec<_>>())
            .boxed(),
        f64_lists(&ch[14], &traces)?,
        PrimitiveArray::<u64>::from_iter(fitted.iter().map(|f| match f {
            Fitted::Model { n_rows, .. } => Some(*n_rows as u64),
            Fitted::Failed(_) => None,
        }))
        .boxed(),
        PrimitiveArray::<u64>::from_iter(
            fits.iter().map(|r| r.map(|f| (f.coef.len() / f.n_outputs.max(1)) as u64)),
        )
        .boxed(),
        Utf8ViewArray::from_slice_values(status).boxed(),
    ];
    // `try_new` checks every field against `t.dtype`'s physical Arrow type, as `wrap` needs.
    let array = StructArray::try_new(t.arrow.clone(), n, fields, None)?.boxed();
    Ok(wrap(name, &*t, array))
}

/// [`model`] from one `Series` per field (any label dtype).
fn model_by_series(
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
    let (coef, intercept) = if meta.multiclass {
        (matrix("coef", &fit.coef, fit.n_outputs)?, f64_list("intercept", &fit.intercept)?)
    } else {
        (f64_list("coef", &fit.coef)?, Series::new("intercept".into(), &fit.intercept))
    };
    let cols = [
        coef,
        intercept,
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
        Series::new("n_features".into(), [(fit.coef.len() / fit.n_outputs.max(1)) as u64]),
        Series::new("status".into(), [fit.status.as_str()]),
    ];
    Ok(StructChunked::from_series(name.into(), 1, cols.iter())?.into_series())
}

/// A one-row model whose fit failed: every field null but the request and `status`.
pub fn null_model(name: &str, meta: &ModelMeta<'_>, status: &str) -> PolarsResult<Series> {
    let cols: Vec<Series> = model_fields(meta.label_dtype, meta.multiclass)
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
    multiclass: bool,
    fitted: Option<(&FitResult, &RowOutputs, Series)>,
    kept: Option<&[IdxSize]>,
) -> PolarsResult<Series> {
    let mut decision: Vec<Option<&[f64]>> = vec![None; n];
    let mut dual: Vec<Option<&[f64]>> = vec![None; n];
    let mut gap = vec![None; n];
    let mut loss = vec![None; n];
    let mut pred_idx: Vec<Option<IdxSize>> = vec![None; n];
    let prediction = match fitted {
        Some((fit, out, prediction)) => {
            let k = fit.n_outputs;
            for (i, (scores, alpha)) in
                out.decision.chunks_exact(k).zip(fit.alpha.chunks_exact(k)).enumerate()
            {
                let r = kept.map_or(i, |m| m[i] as usize);
                decision[r] = Some(scores);
                dual[r] = Some(alpha);
                gap[r] = Some(out.gap[i]);
                loss[r] = Some(out.loss[i]);
                pred_idx[r] = Some(i as IdxSize);
            }
            let idx: IdxCa = pred_idx.into_iter().collect();
            prediction.take(&idx)?.cast(prediction_dtype)?
        }
        None => Series::full_null("".into(), n, prediction_dtype),
    };
    let cols = [
        prediction.with_name("prediction".into()),
        blocks("decision", &decision, multiclass),
        blocks("dual", &dual, multiclass),
        Series::new("gap".into(), gap),
        Series::new("loss".into(), loss),
    ];
    Ok(StructChunked::from_series(name.into(), n, cols.iter())?.into_series())
}

// --- `fit` in a `group_by().agg`: one packed row per group, unpacked for all groups at once ---
//
// The host (polars `ApplyExpr::apply_multiple_group_aware`) imports each group's output from
// the plugin ABI, keeps it until every group is done, then concatenates the rows field by
// field. For the 18-field model struct that cost more than the fit (perf, 20,000 groups of
// 50 rows: the import of the exported struct, the concatenation, and the export itself made
// about 60% of the `agg`, and the kept rows ~20 KB a group). A packed row is two fields: the
// model's numbers and texts in one binary value, and `classes` (which carries the label dtype
// to the unpacking call's output type); `unpack_models` turns the stacked rows into the model
// struct column in one call, with [`models`]' builder.

/// The fields of `fit_packed`'s row for a label of dtype `label`.
pub fn packed_fields(label: &DataType) -> Vec<Field> {
    vec![Field::new("model".into(), DataType::Binary), Field::new("classes".into(), list(label.clone()))]
}

/// The label dtype recorded in a packed row's dtype (its `classes` field).
pub fn packed_label(dtype: &DataType) -> PolarsResult<DataType> {
    if let DataType::Struct(fields) = dtype {
        if let [model, classes] = fields.as_slice() {
            if let (DataType::Binary, DataType::List(label)) = (model.dtype(), classes.dtype()) {
                return Ok((**label).clone());
            }
        }
    }
    polars_bail!(ComputeError: "unpack_models: expected the output of fit_packed, got {dtype}")
}

const PACKED_MODEL: u8 = 1;
const PACKED_FAILED: u8 = 2;

fn status_code(s: Status) -> u8 {
    match s {
        Status::Converged => 0,
        Status::MaxEpochs => 1,
        Status::MaxSeconds => 2,
        Status::Interrupted => 3,
        Status::MaxRounds => 4,
    }
}

fn status_from(code: u8) -> Option<Status> {
    Some(match code {
        0 => Status::Converged,
        1 => Status::MaxEpochs,
        2 => Status::MaxSeconds,
        3 => Status::Interrupted,
        4 => Status::MaxRounds,
        _ => return None,
    })
}

/// One group's fit as the bytes of a packed row (little-endian; read by [`unpack`]).
fn pack(fitted: &Fitted) -> Vec<u8> {
    match fitted {
        Fitted::Model { fit, n_rows, .. } => {
            let floats = fit.coef.len() + fit.intercept.len() + fit.gap_trace.len() + 5;
            let mut out = Vec::with_capacity(1 + 6 * 8 + 4 + 1 + fit.solver.len() + 8 * floats);
            out.push(PACKED_MODEL);
            for v in [*n_rows, fit.n_outputs, fit.coef.len(), fit.intercept.len(), fit.gap_trace.len()] {
                out.extend_from_slice(&(v as u64).to_le_bytes());
            }
            out.extend_from_slice(&fit.epochs.to_le_bytes());
            out.push(status_code(fit.status));
            let c = fit.certificate;
            for v in [fit.l2_used, c.primal, c.dual, c.gap, fit.solved_gap] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            for v in fit.coef.iter().chain(&fit.intercept).chain(&fit.gap_trace) {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&(fit.solver.len() as u64).to_le_bytes());
            out.extend_from_slice(fit.solver.as_bytes());
            out
        }
        Fitted::Failed(status) => {
            let mut out = Vec::with_capacity(1 + status.len());
            out.push(PACKED_FAILED);
            out.extend_from_slice(status.as_bytes());
            out
        }
    }
}

/// A cursor over a packed row's bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> PolarsResult<&'a [u8]> {
        polars_ensure!(n <= self.0.len(), ComputeError: "unpack_models: truncated model row; please report");
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> PolarsResult<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    fn size(&mut self) -> PolarsResult<usize> {
        usize::try_from(u64::from_le_bytes(self.array()?))
            .map_err(|_| polars_err!(ComputeError: "unpack_models: bad model row; please report"))
    }
    fn f64(&mut self) -> PolarsResult<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }
    fn f64s(&mut self, n: usize) -> PolarsResult<Vec<f64>> {
        let bytes = self.take(
            n.checked_mul(8)
                .ok_or_else(|| polars_err!(ComputeError: "unpack_models: bad model row; please report"))?,
        )?;
        Ok(bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).collect())
    }
}

/// The solver names of [`FitResult::solver`] met so far: a packed row records the name as
/// text, the model's `FitResult` needs a `&'static str` (a handful of names per process).
fn solver_name(name: &str) -> &'static str {
    static NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    const KNOWN: [&str; 7] = ["sdca", "accelerated", "pdprox", "newton", "cd", "closed_form", "lbfgs"];
    if let Some(k) = KNOWN.iter().find(|k| **k == name) {
        return k;
    }
    let Ok(mut names) = NAMES.lock() else { return "unknown" };
    if let Some(k) = names.iter().find(|k| **k == name) {
        return k;
    }
    if names.len() >= 64 {
        return "unknown";
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.push(leaked);
    leaked
}

/// The fit a packed row records ([`pack`]'s inverse; `classes` are in the row's other field).
fn unpack(bytes: &[u8]) -> PolarsResult<Fitted> {
    let mut r = Reader(bytes);
    match r.array::<1>()?[0] {
        PACKED_FAILED => Ok(Fitted::Failed(String::from_utf8_lossy(r.0).into_owned())),
        PACKED_MODEL => {
            let (n_rows, n_outputs, n_coef, n_intercept, n_trace) =
                (r.size()?, r.size()?, r.size()?, r.size()?, r.size()?);
            let epochs = u32::from_le_bytes(r.array()?);
            let status = status_from(r.array::<1>()?[0])
                .ok_or_else(|| polars_err!(ComputeError: "unpack_models: bad model status; please report"))?;
            let (l2_used, primal, dual, gap, solved_gap) = (r.f64()?, r.f64()?, r.f64()?, r.f64()?, r.f64()?);
            let (coef, intercept, gap_trace) = (r.f64s(n_coef)?, r.f64s(n_intercept)?, r.f64s(n_trace)?);
            let len = r.size()?;
            let solver = solver_name(std::str::from_utf8(r.take(len)?).unwrap_or("unknown"));
            let fit = FitResult {
                coef,
                intercept,
                alpha: Vec::new(),
                n_outputs,
                certificate: Certificate { primal, dual, gap },
                epochs,
                status,
                gap_trace,
                solver,
                l2_used,
                solved_gap,
                outer_iterations: 0,
            };
            Ok(Fitted::Model { fit, classes: None, n_rows })
        }
        _ => polars_bail!(ComputeError: "unpack_models: unknown model row; please report"),
    }
}

/// The packed row's dtype for one label dtype and its physical Arrow type, cached per thread
/// like [`ModelType`].
pub struct PackedType {
    label: DataType,
    /// The packed row's dtype.
    dtype: DataType,
    /// Whether `dtype` has no logical type (its Arrow type is `arrow`).
    physical: bool,
    arrow: ArrowDataType,
    classes: ArrowDataType,
    null_classes: Box<dyn Array>,
}

thread_local! {
    static PACKED_TYPE: RefCell<Option<Rc<PackedType>>> = const { RefCell::new(None) };
}

fn packed_type(label: &DataType) -> Rc<PackedType> {
    PACKED_TYPE.with(|cell| {
        if let Some(t) = cell.borrow().as_ref() {
            if &t.label == label {
                return Rc::clone(t);
            }
        }
        let dtype = DataType::Struct(packed_fields(label));
        let arrow = dtype.to_physical().to_arrow(CompatLevel::newest());
        let classes = match &arrow {
            ArrowDataType::Struct(fields) if fields.len() == 2 => fields[1].dtype().clone(),
            _ => list(label.clone()).to_physical().to_arrow(CompatLevel::newest()),
        };
        let null_classes = new_null_array(classes.clone(), 1);
        let physical = dtype.to_arrow(CompatLevel::newest()) == arrow;
        let t = Rc::new(PackedType { label: label.clone(), dtype, physical, arrow, classes, null_classes });
        *cell.borrow_mut() = Some(Rc::clone(&t));
        t
    })
}

/// One group's packed row as a bare Arrow struct array (`physical`: the dtype has no logical
/// type, so the array is what Polars would export), with its cached type.
pub fn packed(label: &DataType, fitted: &Fitted) -> PolarsResult<(Rc<PackedType>, Box<dyn Array>, bool)> {
    let t = packed_type(label);
    let bytes = pack(fitted);
    let model = polars_arrow::array::BinaryViewArray::from_slice_values([bytes.as_slice()]).boxed();
    let classes = match fitted {
        Fitted::Model { classes: Some(s), .. } => {
            let s = s.rechunk();
            let Some(values) = s.chunks().first() else { polars_bail!(ComputeError: "no chunk") };
            one_list(&t.classes, values.clone())?
        }
        _ => t.null_classes.clone(),
    };
    let array = StructArray::try_new(t.arrow.clone(), 1, vec![model, classes], None)?.boxed();
    let physical = t.physical;
    Ok((t, array, physical))
}

/// `unpack_models`: the model struct column of stacked packed rows (null rows stay null).
pub fn unpack_models(s: &Series, meta: &ModelMeta<'_>) -> PolarsResult<Series> {
    let st = s.struct_()?;
    let blobs = st.field_by_name("model")?;
    let blobs = blobs.binary()?;
    let classes = st.field_by_name("classes")?.rechunk();
    let mut fitted = Vec::with_capacity(s.len());
    for blob in blobs.iter() {
        // A null row (none of `fit_packed`'s own) becomes a null model below.
        fitted.push(match blob {
            Some(b) => unpack(b)?,
            None => Fitted::Failed(String::new()),
        });
    }
    let name = s.name().as_str();
    let classes_array = classes.chunks().first().cloned();
    let out = match models_by_arrays(name, meta, &fitted, classes_array) {
        Ok(out) => out,
        Err(_) => {
            // A logical label dtype: each group's classes as a `Series`, through `models`.
            let lists = classes.list()?;
            for (k, f) in fitted.iter_mut().enumerate() {
                if let Fitted::Model { classes, .. } = f {
                    *classes = lists.get_as_series(k);
                }
            }
            models(name, meta, &fitted)?
        }
    };
    let mut out = out;
    if st.null_count() > 0 {
        let mut ca = out.struct_()?.clone();
        ca.zip_outer_validity(st);
        out = ca.into_series();
    }
    Ok(out)
}
