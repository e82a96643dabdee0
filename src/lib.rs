//! polars-sdca: the Polars plugin layer.
//!
//! Columns become core views (`convert`), kwargs are checked once (`kwargs` into
//! `sdca_core::FitParams::check`), results become Struct columns (`output`). No numerics here:
//! the solvers live in `sdca-core`.
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod agg;
mod cocoa;
mod convert;
mod crf;
mod error;
mod expressions;
mod fit;
mod groups;
mod interrupt;
mod kwargs;
mod output;
mod path;
mod predict;
mod sparse;
mod threads;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3_polars::PySeries;
use sdca_core::options::{self, Kind, Spec, Value};

#[global_allocator]
static ALLOC: pyo3_polars::PolarsAllocator = pyo3_polars::PolarsAllocator::new();

/// Checks pickled `fit` kwargs with the same code the plugin runs, so Python can raise
/// `ValueError` when the expression is built, before any data is read.
#[pyfunction]
fn check_fit_kwargs(pickled: &[u8]) -> PyResult<()> {
    let kw: kwargs::FitKwargs = serde_pickle::from_slice(pickled, Default::default())
        .map_err(|e| PyTypeError::new_err(format!("invalid keyword arguments: {e}")))?;
    kw.params.check().map_err(|e| PyValueError::new_err(e.to_string()))?;
    fit::check_policies(&kw).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(())
}

/// Checks pickled `fit_path` / `fit_cv` kwargs with the plugin's own checks (`ValueError` at
/// build time).
#[pyfunction]
fn check_path_kwargs(pickled: &[u8]) -> PyResult<()> {
    let kw: kwargs::PathKwargs = serde_pickle::from_slice(pickled, Default::default())
        .map_err(|e| PyTypeError::new_err(format!("invalid keyword arguments: {e}")))?;
    let fit_kw = path::check(&kw).map_err(|e| PyValueError::new_err(e.to_string()))?;
    fit::check_policies(&fit_kw).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(())
}

/// Checks pickled `crf_fit` kwargs with the plugin's own checks (`ValueError` at build time).
#[pyfunction]
fn check_crf_kwargs(pickled: &[u8]) -> PyResult<()> {
    let kw: kwargs::CrfKwargs = serde_pickle::from_slice(pickled, Default::default())
        .map_err(|e| PyTypeError::new_err(format!("invalid keyword arguments: {e}")))?;
    kw.params.check().map_err(|e| PyValueError::new_err(e.to_string()))?;
    crf::check_policies(&kw).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(())
}

/// One option of the schema (`sdca_core::options`) as a Python dict: `name`, `kind`
/// ("float", "int", "bool", "choice", "int_list", "column", "model"), `choices` (a list, or
/// None), `default`, `help` and `applies`.
fn option_dict<'py>(py: Python<'py>, spec: &Spec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", spec.name)?;
    let (kind, choices) = match spec.kind {
        Kind::Float => ("float", None),
        Kind::Int => ("int", None),
        Kind::Bool => ("bool", None),
        Kind::Choice(names) => ("choice", Some(names.to_vec())),
        Kind::IntList => ("int_list", None),
        Kind::Column => ("column", None),
        Kind::Model => ("model", None),
    };
    d.set_item("kind", kind)?;
    d.set_item("choices", choices)?;
    match spec.default {
        Value::Float(v) => d.set_item("default", v)?,
        Value::Int(v) => d.set_item("default", v)?,
        Value::Bool(v) => d.set_item("default", v)?,
        Value::Text(v) => d.set_item("default", v)?,
        Value::Null => d.set_item("default", py.None())?,
    }
    d.set_item("help", spec.help)?;
    d.set_item("applies", spec.applies)?;
    Ok(d)
}

/// The options of the linear fits, from the core's schema (the one source of names, kinds,
/// defaults, choices and help).
#[pyfunction]
fn fit_options(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    options::FIT_OPTIONS.iter().map(|s| option_dict(py, s)).collect()
}

/// The grid options of `fit_path` and `fit_cv`, from the core's schema.
#[pyfunction]
fn path_options(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    options::PATH_OPTIONS.iter().map(|s| option_dict(py, s)).collect()
}

/// The cross-validation options of `fit_cv`, from the core's schema.
#[pyfunction]
fn cv_options(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    options::CV_OPTIONS.iter().map(|s| option_dict(py, s)).collect()
}

/// The options of the CRF fits, from the core's schema.
#[pyfunction]
fn crf_options(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    options::CRF_OPTIONS.iter().map(|s| option_dict(py, s)).collect()
}

/// The sparse feature column of CSR arrays (a `scipy.sparse` matrix's `indptr`, `indices`,
/// `data`), with `indptr` as the list offsets.
#[pyfunction]
fn csr_column(name: &str, indptr: PySeries, indices: PySeries, values: PySeries) -> PyResult<PySeries> {
    sparse::csr_column(name, &indptr.0, &indices.0, &values.0)
        .map(PySeries)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(fit_options, m)?)?;
    m.add_function(wrap_pyfunction!(crf_options, m)?)?;
    m.add_function(wrap_pyfunction!(csr_column, m)?)?;
    m.add_function(wrap_pyfunction!(check_fit_kwargs, m)?)?;
    m.add_function(wrap_pyfunction!(check_crf_kwargs, m)?)?;
    m.add_function(wrap_pyfunction!(check_path_kwargs, m)?)?;
    m.add_function(wrap_pyfunction!(path_options, m)?)?;
    m.add_function(wrap_pyfunction!(cv_options, m)?)?;
    m.add_class::<cocoa::CocoaPartition>()?;
    m.add_class::<cocoa::CocoaDriver>()?;
    Ok(())
}
