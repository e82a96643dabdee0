//! Stochastic dual coordinate ascent solvers for regularized linear models.
//!
//! The core of polars-sdca: pure Rust, no Polars, no Python. Solvers take borrowed row views
//! ([`data::CsrView`], [`data::DenseView`]) and a checked [`config::FitConfig`], and return
//! plain structs carrying the duality-gap certificate.
//!
//! Objective (DESIGN.md section 3):
//! `P(w, b) = (1/n) sum_i s_i phi(x_i . w + b, y_i) + (l2/2)||w||^2 + l1 ||w||_1`.
//!
//! References, cited in the code by authors and year:
//! - Shalev-Shwartz & Zhang 2013: "Stochastic Dual Coordinate Ascent Methods for Regularized
//!   Loss Minimization", JMLR 14 (arXiv:1209.1873).
//! - Shalev-Shwartz & Zhang 2012: "Proximal Stochastic Dual Coordinate Ascent"
//!   (arXiv:1211.2717).
//! - Shalev-Shwartz & Zhang 2014: "Accelerated Proximal Stochastic Dual Coordinate Ascent for
//!   Regularized Loss Minimization", ICML 2014 and Math. Programming 155 (arXiv:1309.2375).
//! - Le Priol, Piché & Lacoste-Julien 2018: "Adaptive Stochastic Dual Coordinate Ascent for
//!   Conditional Random Fields", UAI 2018 (arXiv:1712.08577).
//! - Yang, Mahdavi, Jin & Zhu 2015: "An Efficient Primal-Dual Prox Method for Non-Smooth
//!   Optimization", Machine Learning 98 (arXiv:1201.5283).
//! - Ma, Smith, Jaggi, Jordan, Richtárik & Takáč 2015: "Adding vs. Averaging in Distributed
//!   Primal-Dual Optimization", ICML 2015 (arXiv:1502.03508).
#![warn(missing_docs)]

pub mod budget;
pub mod config;
pub mod crf;
pub mod cv;
pub mod data;
pub mod error;
pub mod loss;
pub mod math;
pub mod options;
pub mod predict;
pub mod reg;
pub mod sampling;
mod simd;
pub mod solver;

pub use config::{FitConfig, FitParams, Interrupt, SolverKind};
pub use data::{CsrView, DenseView, Rows};
pub use error::{Result, SdcaError};
pub use solver::{
    fit, fit_from, local_round, memory_estimate, row_outputs, Aggregation, Coordinator, FitResult,
    LocalRound, Problem, RoundSpec, RowOutputs, Status, Warm,
};
