//! The one conversion from core errors to Polars errors.
//!
//! Polars re-wraps every plugin error as `ComputeError` and only the message crosses the FFI,
//! so the message must say everything: the column, the row and the fix (STYLE.md 2.2).

use polars::prelude::{PolarsError, PolarsResult};
use sdca_core::SdcaError;

/// Adds the column (or argument) a core error is about and converts it.
pub trait InColumn<T> {
    /// `Err(e)` becomes `ComputeError("column {name:?}: {e}")`.
    fn in_column(self, name: &str) -> PolarsResult<T>;
}

impl<T> InColumn<T> for Result<T, SdcaError> {
    fn in_column(self, name: &str) -> PolarsResult<T> {
        self.map_err(|e| compute(format!("column {name:?}: {e}")))
    }
}

/// A `ComputeError` with a message that never contains NUL (the FFI needs a C string).
pub fn compute(msg: String) -> PolarsError {
    PolarsError::ComputeError(msg.replace('\0', " ").into())
}

/// A parameter error (no column involved).
pub fn param(e: SdcaError) -> PolarsError {
    compute(e.to_string())
}
