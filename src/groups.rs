//! `fit_groups`: one model per group of a key from a single plugin call.
//!
//! `group_by(key).agg(fit(...))` calls the plugin once per group, and every call pays a fixed
//! cost: the Arrow FFI import of each input column and the export of the model struct
//! (callgrind, 50-row logistic groups: about 270,000 instructions, more than a short fit). Here
//! Polars passes whole columns once; the rows are bucketed by the dense group id that Python
//! computes (`pl.struct(by).rank("dense")`), each group's columns are gathered and fitted with
//! the same `fit::fit_one` as the per-group path, in parallel on a Rayon pool, and the models
//! come back as one column built field by field (`output::models`), with the same fields and
//! values as the per-group structs (so a group's model equals its `group_by` model bit for bit).

use polars::prelude::*;
use rayon::prelude::*;

use crate::convert;
use crate::error::compute;
use crate::fit;
use crate::kwargs::FitKwargs;
use crate::output;

/// The data inputs (label, features, weights, warm start), the group id and the key columns.
fn split_inputs<'a>(
    inputs: &'a [Series],
    kw: &FitKwargs,
) -> PolarsResult<(&'a [Series], &'a Series, &'a [Series])> {
    let data = n_data_inputs(kw);
    if inputs.len() < data + 2 {
        return Err(compute(format!(
            "internal error: fit_groups expected {data} data inputs, a group id and keys, got {} inputs; \
             please report",
            inputs.len()
        )));
    }
    Ok((&inputs[..data], &inputs[data], &inputs[data + 1..]))
}

/// Output dtype: the key fields, then the model struct named after the label.
pub fn output_fields(keys: &[Field], label: &Field, model: DataType) -> PolarsResult<Vec<Field>> {
    if let Some(k) = keys.iter().find(|k| k.name() == label.name()) {
        return Err(compute(format!(
            "fit_groups: the key {:?} has the label's name; rename one of them",
            k.name()
        )));
    }
    Ok(keys.iter().cloned().chain([Field::new(label.name().clone(), model)]).collect())
}

/// Number of data inputs before the group id.
pub fn n_data_inputs(kw: &FitKwargs) -> usize {
    1 + usize::try_from(kw.layout.n_feature_inputs).unwrap_or(0)
        + usize::from(kw.layout.has_weights)
        + usize::from(kw.layout.has_warm_start)
        + usize::from(kw.layout.has_folds)
}

/// Each group's data inputs: the rows `idx` of every column.
fn take(data: &[Series], idx: &IdxCa) -> PolarsResult<Vec<Series>> {
    data.iter().map(|s| s.take(idx)).collect()
}

/// Runs `per_group` on the data inputs and every group's rows, in parallel; rows with a null key form their
/// own group, as in `group_by`. Returns the per-group values (in group-id order) and the key
/// fields (each group's first key values).
fn map_groups<T: Send>(
    inputs: &[Series],
    kw: &FitKwargs,
    per_group: impl Fn(&[Series], &IdxCa) -> PolarsResult<T> + Sync,
) -> PolarsResult<(Vec<T>, Vec<Series>)> {
    let (data, id, keys) = split_inputs(inputs, kw)?;
    let id = id.cast(&DataType::UInt64)?;
    let id = id.u64()?;
    let n_groups = id.max().unwrap_or(0) as usize;
    // Dense ranks start at 1; a null rank cannot come from `rank("dense")` of a struct.
    let bad = || compute("internal error: null group id; please report".into());
    // Each group's rows are counted first and pushed into vectors of that capacity: growing
    // them by doubling cost a `realloc` and a copy per doubling (perf, 20,000 groups of 50
    // rows: 4% of a `fit_groups` run in `memmove` and jemalloc's `rallocx`).
    let mut counts = vec![0usize; n_groups];
    for g in id.iter() {
        let g = g.filter(|&g| g >= 1 && g as usize <= n_groups).ok_or_else(bad)?;
        counts[g as usize - 1] += 1;
    }
    let mut rows: Vec<Vec<IdxSize>> = counts.into_iter().map(Vec::with_capacity).collect();
    for (r, g) in id.iter().enumerate() {
        let g = g.filter(|&g| g >= 1).ok_or_else(bad)?;
        rows[g as usize - 1].push(r as IdxSize);
    }
    // Each group's first row carries its key (dense ranks leave no group empty).
    let first: Vec<IdxSize> = rows
        .iter()
        .map(|r| r.first().copied())
        .collect::<Option<_>>()
        .ok_or_else(|| compute("internal error: an empty group; please report".into()))?;
    if n_groups == 0 {
        return Err(compute("fit_groups: the frame has no rows".into()));
    }
    let values: Vec<T> = rows
        .into_par_iter()
        .map(|idx| {
            let idx = IdxCa::from_vec("".into(), idx);
            per_group(data, &idx).map_err(|e| match keys.first() {
                // Name the group by its first key value.
                Some(k) => {
                    let key =
                        k.get(idx.get(0).unwrap_or(0) as usize).map(|v| v.to_string()).unwrap_or_default();
                    compute(format!("group {}={key}: {e}", k.name()))
                }
                None => e,
            })
        })
        .collect::<PolarsResult<_>>()?;
    let first = IdxCa::from_vec("".into(), first);
    let fields: Vec<Series> = keys.iter().map(|k| k.take(&first)).collect::<PolarsResult<_>>()?;
    Ok((values, fields))
}

/// The output struct: the key fields, then `model` named after the label.
fn with_keys(mut fields: Vec<Series>, model: Series, label: &Series) -> PolarsResult<Series> {
    let n = model.len();
    fields.push(model.with_name(label.name().clone()));
    Ok(StructChunked::from_series(label.name().clone(), n, fields.iter())?.into_series())
}

/// Fits every group with `per_group` (a path or a cross-validation, from the group's data
/// inputs) and stacks the per-group values.
pub fn fit_groups(
    inputs: &[Series],
    kw: &FitKwargs,
    per_group: impl Fn(&[Series]) -> PolarsResult<Series> + Sync,
) -> PolarsResult<Series> {
    let (models, keys) = map_groups(inputs, kw, |data, idx| per_group(&take(data, idx)?))?;
    let mut model = match models.first() {
        Some(first) => first.clone(),
        None => return Err(compute("fit_groups: the frame has no rows".into())),
    };
    for m in &models[1..] {
        model.append(m)?;
    }
    with_keys(keys, model.rechunk(), &inputs[0])
}

/// `fit_groups` of `fit`: every group's model ([`fit::fit_one`]), built as one struct column
/// ([`output::models`]) rather than one struct per group stacked by `append`, which cost about
/// 60,000 instructions a group (callgrind, 50-row groups: the appends and the drops of the
/// per-group structs), more than a squared-loss fit. Dense numeric inputs without nulls take
/// [`Gather`].
pub fn fit_models(inputs: &[Series], kw: &FitKwargs) -> PolarsResult<Series> {
    let label = &inputs[0];
    let (fitted, keys) = match Gather::new(inputs, kw)? {
        Some(gather) => map_groups(inputs, kw, |_, idx| fit::fit_with(kw, |cfg| gather.group(idx, cfg)))?,
        None => map_groups(inputs, kw, |data, idx| fit::fit_one(&take(data, idx)?, kw))?,
    };
    let model = output::models(label.name(), &fit::meta(label, kw), &fitted)?;
    with_keys(keys, model, label)
}

/// Whole label, feature and weight columns as `f64`, from which each group's row-major
/// features, labels and weights are gathered directly: a `take` of every column per group and
/// the conversion of the taken series cost about 45,000 instructions a 50-row group
/// (callgrind), more than its squared-loss fit. Only for what the per-group path would convert
/// the same way: separate numeric feature columns, a numeric label of a scalar loss, no nulls,
/// no warm start.
struct Gather {
    /// The label as `f64`, its dtype and name.
    label: Series,
    label_dtype: DataType,
    label_name: String,
    features: Vec<Series>,
    weights: Option<Series>,
    /// The feature columns' names, and joined (the names `convert::features` gives).
    columns: Vec<String>,
    joined: String,
    /// A binary loss's classes for the negative class 0 and -1 ([`convert::class_series`]),
    /// built once: building and casting them per group cost more than the labels' checks
    /// (perf, 20,000 groups). Groups share their arrays.
    classes: [Option<Series>; 2],
}

impl Gather {
    fn new(inputs: &[Series], kw: &FitKwargs) -> PolarsResult<Option<Self>> {
        let layout = &kw.layout;
        let Ok(cfg) = kw.params.check() else { return Ok(None) };
        if layout.has_warm_start || layout.has_folds || cfg.loss.is_multiclass() {
            return Ok(None);
        }
        let Ok((label, feats, weights)) = fit::split(&inputs[..n_data_inputs(kw)], layout) else {
            return Ok(None);
        };
        let numeric = |s: &Series| convert::is_number(s.dtype()) && s.null_count() == 0;
        if !(numeric(label) && feats.iter().all(numeric) && weights.is_none_or(numeric)) {
            return Ok(None);
        }
        let as_f64 = |s: &Series| -> PolarsResult<Series> { Ok(s.cast(&DataType::Float64)?.rechunk()) };
        let features = feats.iter().map(as_f64).collect::<PolarsResult<Vec<_>>>()?;
        let columns: Vec<String> = feats.iter().map(|c| c.name().to_string()).collect();
        let joined = columns.join(", ");
        let name = label.name().as_str();
        let class = |negative| -> PolarsResult<Option<Series>> {
            cfg.loss
                .is_classification()
                .then(|| convert::class_series(name, negative, label.dtype()))
                .transpose()
        };
        let classes = [class(0.0)?, class(-1.0)?];
        Ok(Some(Self {
            label: as_f64(label)?,
            label_dtype: label.dtype().clone(),
            label_name: label.name().to_string(),
            features,
            weights: weights.map(as_f64).transpose()?,
            columns,
            joined,
            classes,
        }))
    }

    /// The group of rows `idx`, as `fit::prepare` would convert their taken columns.
    fn group(&self, idx: &IdxCa, cfg: &sdca_core::FitConfig) -> PolarsResult<fit::Group> {
        let rows = idx.cont_slice()?;
        let slice = |s: &Series| -> PolarsResult<Vec<f64>> {
            let v = s.f64()?.cont_slice()?;
            rows.iter()
                .map(|&r| v.get(r as usize).copied().ok_or_else(|| compute("row out of range".into())))
                .collect()
        };
        let d = self.features.len();
        let mut x = sdca_core::budget::zeros(rows.len() * d)
            .map_err(|e| compute(format!("columns {:?}: {e}", self.joined)))?;
        for (j, s) in self.features.iter().enumerate() {
            let v = s.f64()?.cont_slice()?;
            for (r, &i) in rows.iter().enumerate() {
                x[r * d + j] = *v.get(i as usize).ok_or_else(|| compute("row out of range".into()))?;
            }
        }
        let features = convert::Features::Dense(convert::Dense::from_rows(
            x,
            rows.len(),
            self.columns.clone(),
            self.joined.clone(),
        ));
        let name = self.label_name.as_str();
        let (y, negative) = convert::binary_labels(slice(&self.label)?, name, &self.label_dtype, &cfg.loss)?;
        let classes = match negative {
            None => None,
            Some(negative) => match &self.classes[usize::from(negative != 0.0)] {
                Some(c) => Some(c.clone()),
                None => Some(convert::class_series(name, negative, &self.label_dtype)?),
            },
        };
        let labels = convert::Labels { y, classes };
        let weights = match &self.weights {
            Some(w) => Some((w.name().to_string(), slice(w)?)),
            None => None,
        };
        fit::group(cfg, labels, features, weights, name)
    }
}
