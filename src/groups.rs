//! `fit_groups`: one model per group of a key from a single plugin call.
//!
//! `group_by(key).agg(fit(...))` calls the plugin once per group, and every call pays a fixed
//! cost: the Arrow FFI import of each input column and the export of the model struct
//! (callgrind, 50-row logistic groups: about 270,000 instructions, more than a short fit). Here
//! Polars passes whole columns once; the rows are bucketed by the dense group id that Python
//! computes (`pl.struct(by).rank("dense")`), each group's columns are gathered and fitted with
//! the same `fit::model` as the per-group path (so a group's model equals its `group_by` model
//! bit for bit), in parallel on a Rayon pool, and the models come back as one column.

use polars::prelude::*;
use rayon::prelude::*;

use crate::error::compute;
use crate::kwargs::FitKwargs;

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

/// Fits every group with `per_group` (`fit::model`, a path or a cross-validation, from the
/// group's data inputs); rows with a null key form their own group, as in `group_by`.
pub fn fit_groups(
    inputs: &[Series],
    kw: &FitKwargs,
    per_group: impl Fn(&[Series]) -> PolarsResult<Series> + Sync,
) -> PolarsResult<Series> {
    let (data, id, keys) = split_inputs(inputs, kw)?;
    let id = id.cast(&DataType::UInt64)?;
    let id = id.u64()?;
    let n_groups = id.max().unwrap_or(0) as usize;
    let mut rows: Vec<Vec<IdxSize>> = vec![Vec::new(); n_groups];
    for (r, g) in id.iter().enumerate() {
        // Dense ranks start at 1; a null rank cannot come from `rank("dense")` of a struct.
        let g = g
            .filter(|&g| g >= 1)
            .ok_or_else(|| compute("internal error: null group id; please report".into()))?;
        rows[g as usize - 1].push(r as IdxSize);
    }
    // Each group's first row carries its key (dense ranks leave no group empty).
    let first: Vec<IdxSize> = rows
        .iter()
        .map(|r| r.first().copied())
        .collect::<Option<_>>()
        .ok_or_else(|| compute("internal error: an empty group; please report".into()))?;
    let label_name = data[0].name().clone();
    let models: Vec<Series> = rows
        .into_par_iter()
        .map(|idx| {
            let idx = IdxCa::from_vec("".into(), idx);
            let part: Vec<Series> = data.iter().map(|s| s.take(&idx)).collect::<PolarsResult<_>>()?;
            per_group(&part).map_err(|e| match keys.first() {
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
    let mut model = match models.first() {
        Some(first) => first.clone(),
        None => return Err(compute("fit_groups: the frame has no rows".into())),
    };
    for m in &models[1..] {
        model.append(m)?;
    }
    let first = IdxCa::from_vec("".into(), first);
    let mut fields: Vec<Series> = keys.iter().map(|k| k.take(&first)).collect::<PolarsResult<_>>()?;
    fields.push(model.rechunk().with_name(label_name.clone()));
    Ok(StructChunked::from_series(label_name, n_groups, fields.iter())?.into_series())
}
