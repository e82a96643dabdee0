//! Linear-chain conditional random fields trained by SDCA (Le Priol, Piché and Lacoste-Julien,
//! "Adaptive Stochastic Dual Coordinate Ascent for Conditional Random Fields", UAI 2018).
//!
//! Model: `n` sequences, sequence `i` a run of token rows with attributes `x_t` (width `A`) and
//! labels `y_t` in `0..K`. With emission `E` (`K x A`), per-label `bias`, `start` and `end`
//! weights and transitions `W` (`K x K`), a labelling scores
//!
//! ```text
//! s(y) = sum_t [ E[y_t] . x_t + bias[y_t] ] + start[y_1] + end[y_T] + sum_{t<T} W[y_t, y_{t+1}]
//! p(y | x) = exp(s(y) - log Z(x)),
//! P(w) = (lambda/2) ||w||^2 + (1/n) sum_i [ log Z(x_i) - s_i(y_i) ]      (lambda = 1/n by default)
//! ```
//!
//! [`crf_fit`] maximises the dual `D(mu) = (1/n) sum_i H~(mu_i) - (lambda/2) ||w^(mu)||^2` over
//! per-sequence clique marginals, one sequence at a time, and certifies the result by the gap
//! `P - D >= 0`. Modules, each with the math it implements:
//!
//! - [`chain`]: scaled forward-backward (probability space, log space as a fallback) and
//!   Viterbi on one chain;
//! - `marginals`: the dual variables (node and edge marginals), chain entropy and KL;
//! - `line_search`: exact step size by safeguarded Newton;
//! - [`crate::sampling`]: uniform or gap-proportional choice of the next sequence (sum tree);
//! - [`model`]: data, feature map and weight layout; [`predict`]: Viterbi labels and marginals;
//! - [`sdca`]: the solver and its stopping rule; [`config`]: parameters.

pub mod chain;
pub mod config;
mod line_search;
mod marginals;
pub mod model;
pub mod predict;
pub mod sdca;
mod vlog;

pub use config::{CrfConfig, CrfParams, CrfSampling};
pub use model::{memory_estimate, CrfProblem, CrfWeights, RowRef, TokenRows};
pub use predict::{crf_marginals, crf_predict, CrfMarginals};
pub use sdca::{crf_fit, crf_fit_on, CrfFit};
