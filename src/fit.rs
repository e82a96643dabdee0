//! One group's fit: inputs to core views, the core fit, and `on_error` handling.

use std::rc::Rc;

use polars::prelude::*;
use polars_arrow::array::Array;
use sdca_core::budget;
use sdca_core::{FitConfig, FitResult, Problem, RowOutputs, Rows, SdcaError, Status, Warm};

use crate::convert::{self, Features, Labels};
use crate::error::{compute, param, InColumn};
use crate::interrupt;
use crate::kwargs::{one_of, FitKwargs, Layout};
use crate::output::{self, ModelMeta};
use sdca_core::options::{NULL_POLICIES, ON_ERROR};

/// Converted inputs of one group.
pub struct Group {
    /// Warm-start coefficients (output-major) and intercepts.
    warm: Option<(Vec<f64>, Vec<f64>)>,
    pub(crate) labels: Labels,
    pub(crate) features: Features,
    pub(crate) weights: Option<(String, Vec<f64>)>,
    pub(crate) label_name: String,
    /// Input row of each fitted row, when `null_policy="drop"` removed some.
    kept: Option<Vec<IdxSize>>,
}

impl Group {
    /// The input row of each fitted row, when `null_policy="drop"` removed some.
    pub fn kept(&self) -> Option<&[IdxSize]> {
        self.kept.as_deref()
    }
}

/// Splits `inputs` by the layout: first, features, weights (a warm-start model, when present,
/// is the last input and is taken off by [`warm_input`] first).
pub fn split<'a>(
    inputs: &'a [Series],
    layout: &Layout,
) -> PolarsResult<(&'a Series, &'a [Series], Option<&'a Series>)> {
    let k = usize::try_from(layout.n_feature_inputs).unwrap_or(0);
    let expected = 1 + k + usize::from(layout.has_weights);
    if k == 0 || inputs.len() != expected {
        return Err(compute(format!(
            "internal error: expected {expected} inputs, got {}; please report",
            inputs.len()
        )));
    }
    Ok((&inputs[0], &inputs[1..1 + k], layout.has_weights.then(|| &inputs[1 + k])))
}

/// Separates the warm-start model input (the last one) from the data inputs.
pub fn warm_input<'a>(inputs: &'a [Series], layout: &Layout) -> (&'a [Series], Option<&'a Series>) {
    match inputs.split_last() {
        Some((warm, data)) if layout.has_warm_start => (data, Some(warm)),
        _ => (inputs, None),
    }
}

/// The warm-start model's coefficients (output-major, flattened across classes for a
/// multiclass model) and intercepts (its first row), or `None` when it is null. Nulls become NaN,
/// which the core rejects with its message.
fn warm_model(s: &Series) -> PolarsResult<Option<(Vec<f64>, Vec<f64>)>> {
    let bad =
        || compute(format!("warm_start: expected a model struct (the output of fit), got {}", s.dtype()));
    let st = s.struct_().map_err(|_| bad())?;
    let first = |name: &str| -> PolarsResult<Option<Series>> {
        let field = st.field_by_name(name).map_err(|_| bad())?;
        Ok(match field.dtype() {
            DataType::List(_) => field.list()?.get_as_series(0),
            _ => Some(field.head(Some(1))),
        })
    };
    let values = |s: Series| -> PolarsResult<Vec<f64>> {
        let s = if matches!(s.dtype(), DataType::List(_)) {
            s.explode(ExplodeOptions { empty_as_null: false, keep_nulls: true })?
        } else {
            s
        };
        Ok(s.cast(&DataType::Float64)?.f64()?.iter().map(|v| v.unwrap_or(f64::NAN)).collect())
    };
    let (Some(coef), Some(intercept)) = (first("coef")?, first("intercept")?) else { return Ok(None) };
    if s.null_count() == s.len() {
        return Ok(None);
    }
    Ok(Some((values(coef)?, values(intercept)?)))
}

/// Checks the policies that are not solver parameters.
pub fn check_policies(kw: &FitKwargs) -> PolarsResult<()> {
    one_of("on_error", &kw.on_error, ON_ERROR)?;
    one_of("null_policy", &kw.layout.null_policy, NULL_POLICIES)
}

/// Converts the inputs of one group, and checks the fit's memory against the budget
/// (`max_memory`, else `cfg.memory_budget`) before the solver allocates: here the width's origin
/// is known, so that the error names it (the largest sparse index, `n_features`, a vector
/// column).
pub fn prepare(inputs: &[Series], kw: &FitKwargs, cfg: &FitConfig) -> PolarsResult<Group> {
    let (inputs, warm) = warm_input(inputs, &kw.layout);
    let warm = warm.map(warm_model).transpose()?.flatten();
    let (inputs, kept) = convert::apply_null_policy(inputs, &kw.layout.null_policy, true)?;
    let (label, feats, weights) = split(&inputs, &kw.layout)?;
    let labels = convert::labels(label, &cfg.loss)?;
    let features = convert::features(feats, &kw.layout)?;
    check_memory(cfg, &labels, &features, label.name())?;
    let weights =
        weights.map(|w| Ok::<_, PolarsError>((w.name().to_string(), convert::weights(w)?))).transpose()?;
    Ok(Group { warm, labels, features, weights, label_name: label.name().to_string(), kept })
}

/// A group from converted parts (no warm start, no dropped rows), its memory checked as in
/// [`prepare`].
pub fn group(
    cfg: &FitConfig,
    labels: Labels,
    features: Features,
    weights: Option<(String, Vec<f64>)>,
    label_name: &str,
) -> PolarsResult<Group> {
    check_memory(cfg, &labels, &features, label_name)?;
    Ok(Group { warm: None, labels, features, weights, label_name: label_name.to_string(), kept: None })
}

/// The budget check of [`prepare`]; the error names the label or the feature column.
fn check_memory(cfg: &FitConfig, labels: &Labels, features: &Features, label_name: &str) -> PolarsResult<()> {
    let (d, width, features_name) = features.width();
    let k = match &labels.classes {
        Some(classes) if cfg.loss.is_multiclass() => classes.len(),
        _ => 1,
    };
    budget::check_linear(&cfg.budget(), labels.y.len(), d, k, width).map_err(|e| {
        let column = match &e {
            SdcaError::MemoryLimit { what: "the dual variables", .. } => label_name,
            _ => features_name,
        };
        compute(format!("column {column:?}: {e}"))
    })
}

/// The core problem of a prepared group on its feature view `x`; errors name the label or
/// weight column.
pub fn problem<'a, D: Rows>(x: &'a D, g: &'a Group, cfg: &FitConfig) -> PolarsResult<Problem<'a, D>> {
    let w = g.weights.as_ref().map(|(_, w)| w.as_slice());
    Problem::new(x, &g.labels.y, w, cfg.loss).map_err(|e| match (&e, &g.weights) {
        (SdcaError::InvalidWeight { .. }, Some((name, _))) => compute(format!("column {name:?}: {e}")),
        _ => compute(format!("column {:?}: {e}", g.label_name)),
    })
}

fn solve_on<D: Rows>(
    x: &D,
    g: &Group,
    cfg: &FitConfig,
    rows: bool,
) -> PolarsResult<(FitResult, Option<RowOutputs>)> {
    let problem = problem(x, g, cfg)?;
    let warm = g.warm.as_ref().map(|(coef, intercept)| Warm { coef, intercept });
    let fit = sdca_core::fit_from(&problem, cfg, warm.as_ref()).map_err(param)?;
    if fit.status == Status::Interrupted {
        return Err(interrupt::error());
    }
    let out =
        if rows { Some(sdca_core::row_outputs(&problem, cfg, &fit).in_column(&g.label_name)?) } else { None };
    Ok((fit, out))
}

/// Runs the core fit on a prepared group.
pub fn solve(g: &Group, cfg: &FitConfig, rows: bool) -> PolarsResult<(FitResult, Option<RowOutputs>)> {
    match &g.features {
        Features::Sparse(s) => solve_on(&s.view()?, g, cfg, rows),
        Features::Dense(d) => solve_on(&d.view()?, g, cfg, rows),
    }
}

pub fn meta<'a>(label: &'a Series, kw: &'a FitKwargs) -> ModelMeta<'a> {
    ModelMeta {
        label_dtype: label.dtype(),
        loss: &kw.params.loss,
        multiclass: is_multiclass(kw),
        l2: kw.params.l2,
        l1: kw.params.l1,
    }
}

/// Whether the requested loss is multiclass (unchecked parameters: a bad loss name fails in
/// `check` before any output is built).
pub fn is_multiclass(kw: &FitKwargs) -> bool {
    kw.params.check().is_ok_and(|c| c.loss.is_multiclass())
}

/// The text a failed group records as its `status`.
pub fn status_of(e: &PolarsError) -> String {
    match e {
        PolarsError::ComputeError(msg) => msg.to_string(),
        other => other.to_string(),
    }
}

/// One group's fit as a model row sees it.
pub enum Fitted {
    /// A fit, the classes of a classification loss and the number of rows fitted.
    Model { fit: FitResult, classes: Option<Series>, n_rows: usize },
    /// A failed fit under `on_error="null"`: the status text.
    Failed(String),
}

/// Fits one group, with `on_error` applied: `Ok(Fitted::Failed)` for a failed fit under
/// `on_error="null"` (an interrupt is always an error).
pub fn fit_one(inputs: &[Series], kw: &FitKwargs) -> PolarsResult<Fitted> {
    fit_with(kw, |cfg| prepare(inputs, kw, cfg))
}

/// [`fit_one`] of the group that `prepare` converts under the checked config.
pub fn fit_with(
    kw: &FitKwargs,
    prepare: impl FnOnce(&FitConfig) -> PolarsResult<Group>,
) -> PolarsResult<Fitted> {
    check_policies(kw)?;
    let mut cfg = kw.params.check().map_err(param)?;
    cfg.interrupt = interrupt::arm();
    cfg.memory_budget = convert::default_budget();
    let result = prepare(&cfg).and_then(|g| {
        let (fit, _) = solve(&g, &cfg, false)?;
        let n_rows = g.labels.y.len();
        Ok(Fitted::Model { fit, classes: g.labels.classes, n_rows })
    });
    match result {
        Err(e) if kw.on_error == "null" && !interrupt::is_interrupt(&e) => Ok(Fitted::Failed(status_of(&e))),
        other => other,
    }
}

/// One group's output row of `fit` (`T` = [`output::ModelType`]) or `fit_packed`
/// ([`output::PackedType`]), as [`crate::agg`] exports it.
pub enum Row<T> {
    /// The bare one-row struct array of `T`'s physical dtype (a successful fit of a label
    /// whose dtype is physical): exported without a `Series` around it.
    Arrow(PlSmallStr, Rc<T>, Box<dyn Array>),
    /// Any other row (a failed fit, a logical label dtype).
    Series(Series),
}

/// `fit`: one model row for the group.
pub fn model(inputs: &[Series], kw: &FitKwargs) -> PolarsResult<Row<output::ModelType>> {
    let label = &inputs[0];
    let meta = meta(label, kw);
    let row = match fit_one(inputs, kw)? {
        Fitted::Model { fit, classes, n_rows } => {
            if let Some((t, array)) = output::model_array(&meta, &fit, classes.as_ref(), n_rows) {
                return Ok(Row::Arrow(label.name().clone(), t, array));
            }
            match output::model(label.name(), &meta, &fit, classes.as_ref(), n_rows) {
                Err(e) if kw.on_error == "null" => output::null_model(label.name(), &meta, &status_of(&e)),
                other => other,
            }
        }
        Fitted::Failed(status) => output::null_model(label.name(), &meta, &status),
    };
    row.map(Row::Series)
}

/// `fit_packed`: one packed model row for the group ([`output::packed`]); `unpack_models`
/// turns the stacked rows into the model struct (what [`model`] returns for one group).
pub fn packed(inputs: &[Series], kw: &FitKwargs) -> PolarsResult<Row<output::PackedType>> {
    let label = &inputs[0];
    let fitted = fit_one(inputs, kw)?;
    let (t, array, physical) = output::packed(label.dtype(), &fitted)?;
    Ok(if physical {
        Row::Arrow(label.name().clone(), t, array)
    } else {
        Row::Series(output::wrap(label.name(), &*t, array))
    })
}

/// The dtype of `fit_rows`' prediction field.
pub fn prediction_dtype(label: &DataType, classification: bool) -> DataType {
    if classification {
        label.clone()
    } else {
        DataType::Float64
    }
}

/// `fit_rows`: per-row prediction, decision, dual, block gap and loss term of the group's fit.
pub fn rows(inputs: &[Series], kw: &FitKwargs) -> PolarsResult<Series> {
    check_policies(kw)?;
    let mut cfg = kw.params.check().map_err(param)?;
    cfg.interrupt = interrupt::arm();
    cfg.memory_budget = convert::default_budget();
    let label = &inputs[0];
    let classification = cfg.loss.is_classification() || cfg.loss.is_multiclass();
    let multiclass = cfg.loss.is_multiclass();
    let dtype = prediction_dtype(label.dtype(), classification);
    let result = prepare(inputs, kw, &cfg).and_then(|g| {
        let (fit, out) = solve(&g, &cfg, true)?;
        let out = out.ok_or_else(|| compute("internal error: missing row outputs; please report".into()))?;
        let prediction = match &g.labels.classes {
            Some(classes) => {
                let idx = IdxCa::from_vec(
                    "".into(),
                    out.decision
                        .chunks_exact(fit.n_outputs)
                        .map(|d| sdca_core::predict::class_index(d) as IdxSize)
                        .collect(),
                );
                classes.take(&idx)?
            }
            None => Series::new("".into(), &out.decision),
        };
        let fitted = Some((&fit, &out, prediction));
        output::rows(label.name(), label.len(), &dtype, multiclass, fitted, g.kept.as_deref())
    });
    match result {
        Err(e) if kw.on_error == "null" && !interrupt::is_interrupt(&e) => {
            output::rows(label.name(), label.len(), &dtype, multiclass, None, None)
        }
        other => other,
    }
}
