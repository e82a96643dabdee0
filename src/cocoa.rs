//! CoCoA+ for `polars_sdca.distributed.fit_cocoa`: a partition (one worker's rows and duals)
//! and the driver (the core's `Coordinator` and the model struct).
//!
//! The worker (a Ray actor or a driver thread) converts its partition's columns once, with the
//! same code and checks as `fit`, keeps the duals between rounds, and runs each round with
//! `sdca_core::local_round` with the GIL released. Models and updates cross as little-endian
//! `f64` bytes (one `(d + 1)`-vector each way per round), the driver's only traffic. The
//! driver's numbers (the link, the sums, the certificate, the stopping rule) are the core's;
//! Python only schedules the workers and moves the bytes.

use polars::prelude::*;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3_polars::PySeries;
use sdca_core::{Aggregation, Coordinator, FitConfig, LocalRound, Problem, RoundSpec, Rows};

use crate::convert::{self, Features};
use crate::fit::{self, Group};
use crate::kwargs::FitKwargs;
use crate::output::{self, ModelMeta};

/// One partition's converted rows, its duals and the checked fit parameters.
#[pyclass(module = "polars_sdca._internal")]
pub struct CocoaPartition {
    group: Group,
    cfg: FitConfig,
    alpha: Vec<f64>,
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// `f64` values from little-endian bytes.
fn floats(bytes: &[u8], what: &str) -> PyResult<Vec<f64>> {
    if !bytes.len().is_multiple_of(8) {
        return Err(value_error(format!(
            "{what}: {} bytes is not a whole number of float64 values",
            bytes.len()
        )));
    }
    Ok(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
}

#[pymethods]
impl CocoaPartition {
    /// Converts `inputs` (label, features..., weights, laid out as the pickled `fit` kwargs
    /// `packed` say) and starts from zero duals.
    #[new]
    fn new(inputs: Vec<PySeries>, packed: &[u8]) -> PyResult<Self> {
        let kw: FitKwargs = serde_pickle::from_slice(packed, Default::default())
            .map_err(|e| PyTypeError::new_err(format!("invalid keyword arguments: {e}")))?;
        let mut cfg = kw.params.check().map_err(value_error)?;
        cfg.memory_budget = convert::default_budget();
        if cfg.loss.is_multiclass() {
            return Err(value_error(format!(
                "fit_cocoa does not support the multiclass loss {:?} yet; use fit in a select",
                kw.params.loss
            )));
        }
        fit::check_policies(&kw).map_err(value_error)?;
        let inputs: Vec<Series> = inputs.into_iter().map(|s| s.0).collect();
        let inputs = convert::aligned(&inputs, &kw.layout, convert::Call::Fit).map_err(value_error)?;
        fit::split(&inputs, &kw.layout).map_err(value_error)?;
        let group = fit::prepare(&inputs, &kw, &cfg).map_err(value_error)?;
        let alpha = vec![0.0; group.labels.y.len()];
        Ok(Self { group, cfg, alpha })
    }

    /// Rows of the partition (after `null_policy`).
    #[getter]
    fn n_rows(&self) -> usize {
        self.alpha.len()
    }

    /// Feature width: declared, inferred from the largest sparse index, or the dense width.
    #[getter]
    fn n_features(&self) -> usize {
        match &self.group.features {
            Features::Sparse(s) => s.n_cols(),
            Features::Dense(d) => d.n_cols(),
        }
    }

    /// Whether the loss is a binary classification loss (labels become `{-1, +1}`).
    #[getter]
    fn classification(&self) -> bool {
        self.cfg.loss.is_classification()
    }

    /// One CoCoA+ round from the global model `w` (`(d + 1)` float64 bytes, the last one the
    /// intercept feature's weight) with the driver's `spec` for this partition
    /// ([`CocoaDriver::spec`]): returns `(gamma A_k d as bytes, loss sum, conjugate sum, gap
    /// sum)` and moves the duals by `gamma d`.
    fn round<'py>(
        &mut self,
        py: Python<'py>,
        w: &[u8],
        spec: (usize, f64, f64, u32, u64),
    ) -> PyResult<(Bound<'py, PyBytes>, f64, f64, f64)> {
        let w = floats(w, "w")?;
        let (n_total, sigma, gamma, local_epochs, stream) = spec;
        let spec = RoundSpec { n_total, sigma, gamma, local_epochs, stream };
        // Disjoint borrows: the view borrows the rows, the round moves the duals.
        let Self { group, cfg, alpha } = self;
        let out = py
            .detach(|| match &group.features {
                Features::Sparse(s) => {
                    let width = w.len().saturating_sub(1);
                    run(&s.view_with_width(width)?, group, cfg, &spec, alpha, &w)
                }
                Features::Dense(d) => run(&d.view()?, group, cfg, &spec, alpha, &w),
            })
            .map_err(value_error)?;
        let bytes: Vec<u8> = out.delta_v.iter().flat_map(|v| v.to_le_bytes()).collect();
        Ok((PyBytes::new(py, &bytes), out.loss_sum, out.conj_sum, out.gap_sum))
    }
}

/// The core round on one view of the partition's rows.
fn run<D: Rows>(
    x: &D,
    g: &Group,
    cfg: &FitConfig,
    spec: &RoundSpec,
    alpha: &mut [f64],
    w: &[f64],
) -> PolarsResult<LocalRound> {
    let weights = g.weights.as_ref().map(|(_, w)| w.as_slice());
    let problem = Problem::partition(x, &g.labels.y, weights, cfg.loss, 1)
        .map_err(|e| crate::error::compute(format!("column {:?}: {e}", g.label_name)))?;
    sdca_core::local_round(&problem, cfg, spec, alpha, w).map_err(crate::error::param)
}

/// The driver of one CoCoA+ fit: the core's [`Coordinator`], and what the model struct needs.
#[pyclass(module = "polars_sdca._internal")]
pub struct CocoaDriver {
    coordinator: Coordinator,
    kw: FitKwargs,
    label: Series,
    classes: Option<Series>,
}

/// A round's outcome from Python: `(update bytes, loss sum, conjugate sum, gap sum)`, or
/// `None` for a lost worker.
type Outcome = Option<(Vec<u8>, f64, f64, f64)>;

#[pymethods]
impl CocoaDriver {
    /// A fit of `shape = (rows, features, partitions)` under the pickled `fit` kwargs
    /// `packed`; `label` is the whole label column (its dtype and classes name the model's).
    #[new]
    fn new(
        packed: &[u8],
        label: PySeries,
        shape: (usize, usize, usize),
        aggregation: &str,
        local_epochs: u32,
        budget: (u32, u32),
    ) -> PyResult<Self> {
        let kw: FitKwargs = serde_pickle::from_slice(packed, Default::default())
            .map_err(|e| PyTypeError::new_err(format!("invalid keyword arguments: {e}")))?;
        let cfg = kw.params.check().map_err(value_error)?;
        let aggregation = Aggregation::named(aggregation).map_err(value_error)?;
        let coordinator =
            Coordinator::new(&cfg, shape, aggregation, local_epochs, budget).map_err(value_error)?;
        let label = label.0;
        let classes = match cfg.loss.is_classification() {
            true => convert::labels(&label, &cfg.loss).map_err(value_error)?.classes,
            false => None,
        };
        Ok(Self { coordinator, kw, label, classes })
    }

    /// Whether the fit has stopped.
    #[getter]
    fn done(&self) -> bool {
        self.coordinator.done()
    }

    /// Starts the next round: its model as float64 bytes.
    fn model<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let bytes: Vec<u8> = self.coordinator.model().iter().flat_map(|v| v.to_le_bytes()).collect();
        PyBytes::new(py, &bytes)
    }

    /// Partition `k`'s round arguments: `(n_total, sigma, gamma, local_epochs, stream)`.
    fn spec(&self, k: usize) -> (usize, f64, f64, u32, u64) {
        let s = self.coordinator.spec(k);
        (s.n_total, s.sigma, s.gamma, s.local_epochs, s.stream)
    }

    /// Takes the round's outcomes in partition order; returns `(primal, dual, gap)` of the
    /// round's model, or `None` when a worker was lost.
    fn absorb(&mut self, outcomes: Vec<Outcome>) -> PyResult<Option<(f64, f64, f64)>> {
        let outcomes = outcomes
            .into_iter()
            .map(|o| {
                o.map(|(delta, loss_sum, conj_sum, gap_sum)| {
                    Ok(LocalRound { delta_v: floats(&delta, "update")?, loss_sum, conj_sum, gap_sum })
                })
                .transpose()
            })
            .collect::<PyResult<Vec<_>>>()?;
        let c = self.coordinator.absorb(&outcomes).map_err(value_error)?;
        Ok(c.map(|c| (c.primal, c.dual, c.gap)))
    }

    /// The model struct of `fit` (one row, named after the label) for the last certified model.
    fn result(&self) -> PyResult<PySeries> {
        let fit = self.coordinator.result();
        let meta = ModelMeta {
            label_dtype: self.label.dtype(),
            loss: &self.kw.params.loss,
            multiclass: false,
            l2: self.kw.params.l2,
            l1: self.kw.params.l1,
        };
        let n_rows = self.coordinator.n_rows();
        let model = output::model(self.label.name(), &meta, &fit, self.classes.as_ref(), n_rows)
            .map_err(value_error)?;
        Ok(PySeries(model))
    }
}
