//! polars-sdca: the Polars plugin layer.
//!
//! Columns become core views (`convert`), kwargs are checked once (`kwargs` into
//! `sdca_core::FitParams::check`), results become Struct columns (`output`). No numerics here:
//! the solvers live in `sdca-core`.
#![deny(clippy::unwrap_used, clippy::expect_used)]

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
mod predict;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

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

/// Checks pickled `crf_fit` kwargs with the plugin's own checks (`ValueError` at build time).
#[pyfunction]
fn check_crf_kwargs(pickled: &[u8]) -> PyResult<()> {
    let kw: kwargs::CrfKwargs = serde_pickle::from_slice(pickled, Default::default())
        .map_err(|e| PyTypeError::new_err(format!("invalid keyword arguments: {e}")))?;
    kw.params.check().map_err(|e| PyValueError::new_err(e.to_string()))?;
    crf::check_policies(&kw).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(())
}

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(check_fit_kwargs, m)?)?;
    m.add_function(wrap_pyfunction!(check_crf_kwargs, m)?)?;
    m.add_class::<cocoa::CocoaPartition>()?;
    Ok(())
}
