//! Keyword arguments as they arrive from Python (pickled), before any checking.
//!
//! Fields are wide (`f64`, `i64`, `String`, `Option`) so that a bad value reaches
//! `sdca_core::FitParams::check` and fails there with our wording, not inside serde. Python
//! passes every key; `deny_unknown_fields` catches a wrapper that drifted from this file.

use serde::Deserialize;

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
    pub loss: String,
    pub smoothing: f64,
    pub epsilon: f64,
    pub l2: f64,
    pub l1: f64,
    pub solver: String,
    pub sampling: String,
    pub tol: f64,
    pub max_epochs: i64,
    pub check_every: i64,
    pub seed: i64,
    pub fit_intercept: bool,
    pub intercept_scaling: f64,
    pub max_seconds: Option<f64>,
}

impl FitKwargs {
    /// The solver parameters, unchecked. Core options the plugin does not expose keep their
    /// defaults.
    #[allow(clippy::needless_update)]
    pub fn params(&self) -> FitParams {
        FitParams {
            loss: self.loss.clone(),
            smoothing: self.smoothing,
            epsilon: self.epsilon,
            l2: self.l2,
            l1: self.l1,
            solver: self.solver.clone(),
            sampling: self.sampling.clone(),
            tol: self.tol,
            max_epochs: self.max_epochs,
            check_every: self.check_every,
            seed: self.seed,
            fit_intercept: self.fit_intercept,
            intercept_scaling: self.intercept_scaling,
            max_seconds: self.max_seconds,
            ..FitParams::default()
        }
    }
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
    pub l2: Option<f64>,
    pub tol: f64,
    pub max_epochs: i64,
    pub check_every: i64,
    pub sampling: String,
    pub non_uniform: f64,
    pub seed: i64,
    pub max_memory: Option<i64>,
    pub max_seconds: Option<f64>,
    pub max_sequence_length: Option<i64>,
}

impl CrfKwargs {
    /// The CRF solver parameters, unchecked (`line_search_tol` keeps the core default).
    pub fn params(&self) -> sdca_core::crf::CrfParams {
        sdca_core::crf::CrfParams {
            l2: self.l2,
            tol: self.tol,
            max_epochs: self.max_epochs,
            check_every: self.check_every,
            sampling: self.sampling.clone(),
            non_uniform: self.non_uniform,
            seed: self.seed,
            max_memory: self.max_memory,
            max_seconds: self.max_seconds,
            max_sequence_length: self.max_sequence_length,
            ..sdca_core::crf::CrfParams::default()
        }
    }
}

/// Kwargs of `crf_predict` (inputs: model, features, sequence).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrfPredictKwargs {
    /// Input layout (weights unused).
    pub layout: Layout,
}
