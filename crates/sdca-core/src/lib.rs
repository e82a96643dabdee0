//! Stochastic dual coordinate ascent solvers for regularized linear models.
//!
//! The core of polars-sdca: pure Rust, no Polars, no Python. Solvers take borrowed row views
//! ([`data::CsrView`], [`data::DenseView`]) and a checked [`config::FitConfig`], and return
//! plain structs carrying the duality-gap certificate.
//!
//! Objective (DESIGN.md section 3):
//! `P(w, b) = (1/n) sum_i s_i phi(x_i . w + b, y_i) + (l2/2)||w||^2 + l1 ||w||_1`.
#![warn(missing_docs)]

pub mod config;
pub mod crf;
pub mod data;
pub mod error;
pub mod loss;
pub mod math;
pub mod options;
pub mod predict;
pub mod reg;
pub mod sampling;
pub mod solver;

pub use config::{FitConfig, FitParams, Interrupt, SolverKind};
pub use data::{CsrView, DenseView, Rows};
pub use error::{Result, SdcaError};
pub use solver::{
    fit, fit_from, local_round, memory_estimate, row_outputs, Aggregation, Coordinator, FitResult,
    LocalRound, Problem, RoundSpec, RowOutputs, Status, Warm,
};
