//! Every `#[polars_expr]` of the plugin: unpack, call a topic module, return.
//!
//! Registration flags (Python side): `fit` is an aggregation (`returns_scalar=True`),
//! `fit_rows` sees whole groups, `predict` is elementwise.

use polars::prelude::*;
use pyo3_polars::derive::polars_expr;

use crate::convert::{aligned, check_feature_dtypes, Call};
use crate::error::param;
use crate::fit::{self, split};
use crate::kwargs::{FitKwargs, Packed, PathKwargs, PredictKwargs};
use crate::output::{
    model_fields, packed_fields, packed_label, rows_fields, unpack_models as unpack, ModelMeta, ModelType,
    PackedType,
};
use crate::path;
use crate::predict;

fn fit_checked_fields(fields: &[Field], kw: &FitKwargs) -> PolarsResult<DataType> {
    let cfg = kw.params.check().map_err(param)?;
    fit::check_policies(kw)?;
    let label = fields.first().ok_or_else(|| polars_err!(ComputeError: "fit needs a label column"))?;
    let k = usize::try_from(kw.layout.n_feature_inputs).unwrap_or(0);
    check_feature_dtypes(fields.get(1..1 + k).unwrap_or(&[]))?;
    if cfg.loss.is_multiclass() {
        crate::convert::check_class_dtype(label.name(), label.dtype(), "multiclass labels")?;
    }
    Ok(fit::prediction_dtype(label.dtype(), cfg.loss.is_classification() || cfg.loss.is_multiclass()))
}

pub fn fit_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let kwargs = kwargs.fit()?;
    fit_checked_fields(fields, &kwargs)?;
    let multiclass = fit::is_multiclass(&kwargs);
    Ok(Field::new(fields[0].name().clone(), DataType::Struct(model_fields(fields[0].dtype(), multiclass))))
}

fn fit_rows_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let kwargs = kwargs.fit()?;
    let prediction = fit_checked_fields(fields, &kwargs)?;
    let multiclass = fit::is_multiclass(&kwargs);
    Ok(Field::new(fields[0].name().clone(), DataType::Struct(rows_fields(&prediction, multiclass))))
}

fn predict_output(fields: &[Field], kwargs: PredictKwargs) -> PolarsResult<Field> {
    let model = fields.first().ok_or_else(|| polars_err!(ComputeError: "predict needs a model column"))?;
    Ok(Field::new(model.name().clone(), predict::output_dtype(model.dtype(), &kwargs.kind)?))
}

/// `fit` (its plugin symbols are written out in [`crate::agg`]).
pub fn fit(inputs: Vec<Series>, kwargs: &FitKwargs) -> PolarsResult<fit::Row<ModelType>> {
    let inputs = crate::convert::aligned_owned(inputs, &kwargs.layout, Call::Fit)?;
    split(fit::warm_input(&inputs, &kwargs.layout).0, &kwargs.layout)?;
    fit::model(&inputs, kwargs)
}

/// `fit_packed` (its plugin symbols are written out in [`crate::agg`]).
pub fn fit_packed(inputs: Vec<Series>, kwargs: &FitKwargs) -> PolarsResult<fit::Row<PackedType>> {
    let inputs = crate::convert::aligned_owned(inputs, &kwargs.layout, Call::Fit)?;
    split(fit::warm_input(&inputs, &kwargs.layout).0, &kwargs.layout)?;
    fit::packed(&inputs, kwargs)
}

pub fn fit_packed_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let kwargs = kwargs.fit()?;
    fit_checked_fields(fields, &kwargs)?;
    Ok(Field::new(fields[0].name().clone(), DataType::Struct(packed_fields(fields[0].dtype()))))
}

/// The model field of `unpack_models` over a `fit_packed` column `packed`.
fn unpack_field(packed: &Field, kwargs: &FitKwargs) -> PolarsResult<Field> {
    let label = packed_label(packed.dtype())?;
    Ok(Field::new(packed.name().clone(), DataType::Struct(model_fields(&label, fit::is_multiclass(kwargs)))))
}

fn unpack_models_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let packed = fields.first().ok_or_else(|| polars_err!(ComputeError: "unpack_models needs one input"))?;
    unpack_field(packed, &*kwargs.fit()?)
}

/// The model structs of `fit_packed` rows, for every group in one call (elementwise).
#[polars_expr(output_type_func_with_kwargs = unpack_models_output)]
fn unpack_models(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kw = kwargs.fit()?;
    let packed = inputs.first().ok_or_else(|| polars_err!(ComputeError: "unpack_models needs one input"))?;
    let label = packed_label(packed.dtype())?;
    let meta = ModelMeta {
        label_dtype: &label,
        loss: &kw.params.loss,
        multiclass: fit::is_multiclass(&kw),
        l2: kw.params.l2,
        l1: kw.params.l1,
    };
    unpack(packed, &meta)
}

fn fit_groups_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let kw = kwargs.fit()?;
    let model = fit_output(fields, kwargs.clone())?;
    let keys = fields.get(crate::groups::n_data_inputs(&kw) + 1..).unwrap_or(&[]);
    let label = &fields[0];
    Ok(Field::new(
        label.name().clone(),
        DataType::Struct(crate::groups::output_fields(keys, label, model.dtype().clone())?),
    ))
}

#[polars_expr(output_type_func_with_kwargs = fit_groups_output)]
fn fit_groups(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kwargs = kwargs.fit()?;
    let inputs = aligned(inputs, &kwargs.layout, Call::FitGroups)?;
    let kw: &FitKwargs = &kwargs;
    crate::groups::fit_models(&inputs, kw)
}

fn fit_path_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let kw = kwargs.path()?;
    let fit_kw = path::check(&kw)?;
    fit_checked_fields(fields, &fit_kw)?;
    Ok(Field::new(fields[0].name().clone(), path::path_dtype(fields[0].dtype(), path::is_multiclass(&kw))))
}

#[polars_expr(output_type_func_with_kwargs = fit_path_output)]
fn fit_path(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kwargs = kwargs.path()?;
    path::path(&aligned(inputs, &kwargs.layout, Call::Fit)?, &kwargs)
}

fn fit_cv_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let kw = kwargs.path()?;
    let fit_kw = path::check(&kw)?;
    fit_checked_fields(fields, &fit_kw)?;
    let multiclass = path::is_multiclass(&kw);
    Ok(Field::new(fields[0].name().clone(), DataType::Struct(path::cv_fields(fields[0].dtype(), multiclass))))
}

#[polars_expr(output_type_func_with_kwargs = fit_cv_output)]
fn fit_cv(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kwargs = kwargs.path()?;
    path::cross_validate(&aligned(inputs, &kwargs.layout, Call::Fit)?, &kwargs)
}

/// `fit_groups` over paths or cross-validations: the per-group value's dtype from `value`.
fn path_groups_output(
    fields: &[Field],
    kwargs: Packed,
    value: fn(&[Field], Packed) -> PolarsResult<Field>,
) -> PolarsResult<Field> {
    let kw = kwargs.path()?.fit_kwargs()?;
    let per_group = value(fields, kwargs)?;
    let keys = fields.get(crate::groups::n_data_inputs(&kw) + 1..).unwrap_or(&[]);
    let label = &fields[0];
    Ok(Field::new(
        label.name().clone(),
        DataType::Struct(crate::groups::output_fields(keys, label, per_group.dtype().clone())?),
    ))
}

fn fit_path_groups_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    path_groups_output(fields, kwargs, fit_path_output)
}

fn fit_cv_groups_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    path_groups_output(fields, kwargs, fit_cv_output)
}

#[polars_expr(output_type_func_with_kwargs = fit_path_groups_output)]
fn fit_path_groups(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kwargs = kwargs.path()?;
    let inputs = aligned(inputs, &kwargs.layout, Call::FitGroups)?;
    let kw: &PathKwargs = &kwargs;
    crate::groups::fit_groups(&inputs, &kw.fit_kwargs()?, |part| path::path(part, kw))
}

#[polars_expr(output_type_func_with_kwargs = fit_cv_groups_output)]
fn fit_cv_groups(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kwargs = kwargs.path()?;
    let inputs = aligned(inputs, &kwargs.layout, Call::FitGroups)?;
    let kw: &PathKwargs = &kwargs;
    crate::groups::fit_groups(&inputs, &kw.fit_kwargs()?, |part| path::cross_validate(part, kw))
}

#[polars_expr(output_type_func_with_kwargs = fit_rows_output)]
fn fit_rows(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kwargs = kwargs.fit()?;
    let inputs = aligned(inputs, &kwargs.layout, Call::Fit)?;
    split(fit::warm_input(&inputs, &kwargs.layout).0, &kwargs.layout)?;
    fit::rows(&inputs, &kwargs)
}

#[polars_expr(output_type_func_with_kwargs = predict_output)]
fn predict(inputs: &[Series], kwargs: PredictKwargs) -> PolarsResult<Series> {
    predict::predict(&aligned(inputs, &kwargs.layout, Call::Predict)?, &kwargs)
}

fn crf_checked(fields: &[Field], kw: &crate::kwargs::CrfKwargs) -> PolarsResult<DataType> {
    kw.params.check().map_err(param)?;
    crate::crf::check_policies(kw)?;
    let tag = fields.first().ok_or_else(|| polars_err!(ComputeError: "crf_fit needs a tag column"))?;
    crate::crf::check_tag_dtype(tag.name(), tag.dtype())?;
    let k = usize::try_from(kw.layout.n_feature_inputs).unwrap_or(0);
    check_feature_dtypes(fields.get(1..1 + k).unwrap_or(&[]))?;
    Ok(tag.dtype().clone())
}

fn crf_fit_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let kwargs = kwargs.crf()?;
    let tag = crf_checked(fields, &kwargs)?;
    Ok(Field::new(fields[0].name().clone(), DataType::Struct(crate::crf::model_fields(&tag))))
}

fn crf_fit_rows_output(fields: &[Field], kwargs: Packed) -> PolarsResult<Field> {
    let kwargs = kwargs.crf()?;
    let tag = crf_checked(fields, &kwargs)?;
    Ok(Field::new(fields[0].name().clone(), DataType::Struct(crate::crf::rows_fields(&tag))))
}

fn crf_predict_output(fields: &[Field], kwargs: crate::kwargs::CrfPredictKwargs) -> PolarsResult<Field> {
    let model =
        fields.first().ok_or_else(|| polars_err!(ComputeError: "crf_predict needs a model column"))?;
    Ok(Field::new(model.name().clone(), crate::crf::predict_dtype(model.dtype(), &kwargs.kind)?))
}

#[polars_expr(output_type_func_with_kwargs = crf_fit_output)]
fn crf_fit(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kwargs = kwargs.crf()?;
    let inputs = aligned(inputs, &kwargs.layout, Call::Crf)?;
    crate::crf::split(&inputs, &kwargs.layout)?;
    crate::crf::model(&inputs, &kwargs)
}

#[polars_expr(output_type_func_with_kwargs = crf_fit_rows_output)]
fn crf_fit_rows(inputs: &[Series], kwargs: Packed) -> PolarsResult<Series> {
    let kwargs = kwargs.crf()?;
    let inputs = aligned(inputs, &kwargs.layout, Call::Crf)?;
    crate::crf::split(&inputs, &kwargs.layout)?;
    crate::crf::rows(&inputs, &kwargs)
}

#[polars_expr(output_type_func_with_kwargs = crf_predict_output)]
fn crf_predict(inputs: &[Series], kwargs: crate::kwargs::CrfPredictKwargs) -> PolarsResult<Series> {
    crate::crf::predict(&aligned(inputs, &kwargs.layout, Call::CrfPredict)?, &kwargs)
}
