//! Keyword arguments as they arrive from Python (pickled), before any checking.
//!
//! Fields are wide (`f64`, `i64`, `String`, `Option`) so that a bad value reaches
//! `sdca_core::FitParams::check` and fails there with our wording, not inside serde. Python
//! passes every key; `deny_unknown_fields` catches a wrapper that drifted from this file.

use std::cell::RefCell;
use std::rc::Rc;
use std::thread::LocalKey;

use polars::prelude::PolarsResult;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::compute;

use sdca_core::crf::CrfParams;
use sdca_core::cv::CvParams;
use sdca_core::solver::{PathConfig, PathParams};
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
    /// Whether the last input is a fold column (`fit_cv` only; after the weights).
    #[serde(default)]
    pub has_folds: bool,
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

/// Kwargs of `fit_path` and `fit_cv` (and their `fit_groups` forms): a fit's, with the grid.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathKwargs {
    /// Input layout.
    pub layout: Layout,
    /// `"raise"` or `"null"`: what a failed group yields.
    pub on_error: String,
    /// The fit's parameters, unchecked; the varying penalty's value is replaced by the grid's.
    pub params: FitParams,
    /// The grid, unchecked (checked by `PathParams::check`).
    pub path: PathParams,
    /// Cross-validation (`fit_cv` only).
    #[serde(default)]
    pub cv: Option<CvParams>,
}

impl PathKwargs {
    /// The checked path (grid and fit options) of `fit_path`: one `l1_ratio` at most.
    pub fn checked(&self) -> PolarsResult<PathConfig> {
        self.path.check(&self.params).map_err(crate::error::param)
    }

    /// The checked paths of `fit_cv`: one per `l1_ratio` value, in the order given (one
    /// without an `l1_ratio`).
    pub fn checked_each(&self) -> PolarsResult<Vec<PathConfig>> {
        self.path.check_each(&self.params).map_err(crate::error::param)
    }

    /// The kwargs of one fit of the (first) path: the fit's options at the representative
    /// penalty, for the code shared with `fit` (input conversion, policies, model metadata;
    /// the paths of several `l1_ratio` values differ only in `l1` and `l2`).
    pub fn fit_kwargs(&self) -> PolarsResult<FitKwargs> {
        let first = self.checked_each()?.into_iter().next();
        let first = first.ok_or_else(|| compute("internal error: no path to fit; please report".into()))?;
        Ok(FitKwargs {
            layout: self.layout.clone(),
            on_error: self.on_error.clone(),
            params: first.representative(),
        })
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
    /// The CRF solver parameters, unchecked (checked by `CrfParams::check`).
    pub params: CrfParams,
}

/// Kwargs of `crf_predict` (inputs: model, features, sequence).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrfPredictKwargs {
    /// Input layout (weights unused).
    pub layout: Layout,
    /// `"labels"` (Viterbi) or `"marginals"` (`p(y_t = k | x)` per label, in the model's order).
    #[serde(default = "labels")]
    pub kind: String,
}

fn labels() -> String {
    "labels".into()
}

/// Checks a policy name against the schema's allowed values (`sdca_core::options`).
pub fn one_of(name: &str, value: &str, allowed: &[&str]) -> PolarsResult<()> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(compute(format!(
        "invalid parameter `{name}`: unknown value {value:?}; expected one of {}",
        allowed.join(", ")
    )))
}

/// The kwargs of the fits as Python sends them: the pickled payload as one `bytes` value.
///
/// pyo3-polars decodes a plugin's kwargs on every call, and a `group_by().agg` makes one call
/// per group: decoding the nested payload (layout, names, parameters) cost 100,000 instructions
/// a call, a fifth of a 50-row group's fit (callgrind). One `bytes` value decodes as a copy;
/// [`Packed::fit`] and [`Packed::crf`] then decode the payload once per thread and reuse it
/// while the same bytes keep arriving.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Packed {
    /// `pickle.dumps` of the payload.
    #[serde(with = "serde_bytes")]
    pub packed: Vec<u8>,
}

/// The last payload a thread decoded, by its bytes.
type Cache<T> = RefCell<Option<(Vec<u8>, Rc<T>)>>;

thread_local! {
    static FIT: Cache<FitKwargs> = const { RefCell::new(None) };
    static CRF: Cache<CrfKwargs> = const { RefCell::new(None) };
    static PATH: Cache<PathKwargs> = const { RefCell::new(None) };
    static RAW_FIT: Cache<FitKwargs> = const { RefCell::new(None) };
}

/// The `fit` kwargs from a plugin call's raw kwargs (the pickle of `{"packed": bytes}`), by
/// those bytes: every group's call of a `group_by().agg` passes the same bytes, so that neither
/// pickle is decoded again while they keep arriving (the hand-written entry of `fit`,
/// [`crate::agg`]).
pub fn fit_from_raw(raw: &[u8]) -> PolarsResult<Rc<FitKwargs>> {
    cached(&RAW_FIT, raw, |raw| unpickle::<Packed>(raw)?.fit())
}

impl Packed {
    /// The `fit` / `fit_rows` kwargs.
    pub fn fit(&self) -> PolarsResult<Rc<FitKwargs>> {
        decode(&FIT, &self.packed)
    }

    /// The `fit_path` / `fit_cv` kwargs.
    pub fn path(&self) -> PolarsResult<Rc<PathKwargs>> {
        decode(&PATH, &self.packed)
    }

    /// The `crf_fit` / `crf_fit_rows` kwargs.
    pub fn crf(&self) -> PolarsResult<Rc<CrfKwargs>> {
        decode(&CRF, &self.packed)
    }
}

fn decode<T: DeserializeOwned>(cache: &'static LocalKey<Cache<T>>, bytes: &[u8]) -> PolarsResult<Rc<T>> {
    cached(cache, bytes, |bytes| Ok(Rc::new(unpickle(bytes)?)))
}

/// The value `make` builds from `bytes`, kept in the thread's `cache` while the same bytes
/// keep arriving.
fn cached<T>(
    cache: &'static LocalKey<Cache<T>>,
    bytes: &[u8],
    make: impl FnOnce(&[u8]) -> PolarsResult<Rc<T>>,
) -> PolarsResult<Rc<T>> {
    cache.with(|cell| {
        if let Some((seen, value)) = cell.borrow().as_ref() {
            if seen.as_slice() == bytes {
                return Ok(Rc::clone(value));
            }
        }
        let value = make(bytes)?;
        *cell.borrow_mut() = Some((bytes.to_vec(), Rc::clone(&value)));
        Ok(value)
    })
}

fn unpickle<T: DeserializeOwned>(bytes: &[u8]) -> PolarsResult<T> {
    serde_pickle::from_slice(bytes, Default::default())
        .map_err(|e| compute(format!("invalid keyword arguments: {e}")))
}
