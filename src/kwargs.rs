//! Keyword arguments as they arrive from Python (pickled), before any checking.
//!
//! Fields are wide (`f64`, `i64`, `String`, `Option`) so that a bad value reaches
//! `sdca_core::FitParams::check` and fails there with our wording, not inside serde. Python
//! passes every key; `deny_unknown_fields` catches a wrapper that drifted from this file.

use serde::Deserialize;

use sdca_core::crf::CrfParams;
use sdca_core::FitParams;

/// How the plugin's input columns are laid out.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// Number of feature inputs after the first input (label or model).
    pub n_feature_inputs: i64,
    /// Whether the last input is a sample-weight column.
    pub has_weights: bool,
    /// Sparse width; inferred as `max index + 1` when `None`.
    pub n_features: Option<i64>,
    /// `"raise"` or `"drop"`: what to do with rows holding nulls.
    pub null_policy: String,
    /// Whether the last input is a warm-start model struct (fit only).
    #[serde(default)]
    pub has_warm_start: bool,
    /// The user's name of each input, for messages (inside `group_by` the series arrive
    /// unnamed).
    pub names: Vec<String>,
}

/// Kwargs of `fit` and `fit_rows`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitKwargs {
    /// Input layout.
    pub layout: Layout,
    /// `"raise"` or `"null"`: what a failed group yields.
    pub on_error: String,
    /// The solver parameters, unchecked (checked by `FitParams::check`).
    pub params: FitParams,
}

/// Kwargs of `predict`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredictKwargs {
    /// Input layout (weights unused).
    pub layout: Layout,
    /// `"decision"`, `"class"` or `"proba"`.
    pub kind: String,
}

/// Kwargs of `crf_fit` and `crf_fit_rows` (inputs: tag, features, sequence).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrfKwargs {
    /// Input layout (`has_weights` unused; the last input is the sequence column).
    pub layout: Layout,
    /// `"raise"` or `"null"`: what a failed group yields.
    pub on_error: String,
    /// The CRF solver parameters, unchecked (checked by `CrfParams::check`).
    pub params: CrfParams,
}

/// Kwargs of `crf_predict` (inputs: model, features, sequence).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrfPredictKwargs {
    /// Input layout (weights unused).
    pub layout: Layout,
}
