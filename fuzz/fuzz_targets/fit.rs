//! `sdca_core::fit_from` on small random problems with random parameters, every loss and
//! solver.
//!
//! Inputs: up to 40 rows and 12 features, dense or CSR; labels, weights and features from
//! [`Num`] (zeros, `1e+-150`, `1e+-330`, NaN, infinities); every `FitParams` field (unknown
//! names and out-of-range values included; `max_epochs <= 64` bounds each run; `max_seconds` is
//! left unset so a failure replays exactly); an optional warm start of any width. Every error
//! must be typed and not `Internal`; every fit that returns `Ok` must pass the independent
//! checks of `reference::check_fit` (finite outputs, `gap >= 0`, `P >= D`, the returned gap
//! equal to `P - D` recomputed from the returned model and duals, `converged => gap <= tol P`),
//! and its per-row outputs must be finite (or a typed error).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use sdca_core::{fit_from, row_outputs, CsrView, DenseView, FitConfig, FitParams, Problem, Rows, Warm};
use sdca_core_fuzz::{fill, not_internal, reference, Built, Matrix, Num};

const LOSSES: [&str; 9] = [
    "hinge",
    "smooth_hinge",
    "squared_hinge",
    "logistic",
    "squared",
    "absolute",
    "epsilon_insensitive",
    "quantile",
    "hinj",
];
const SOLVERS: [&str; 5] = ["auto", "sdca", "accelerated", "pdprox", "newton"];
const SAMPLINGS: [&str; 4] = ["permutation", "uniform", "gap", "cyclic"];

#[derive(Arbitrary, Debug)]
struct Params {
    loss: u8,
    smoothing: Num,
    epsilon: Num,
    l2: Num,
    l1: Num,
    solver: u8,
    sampling: u8,
    tol: Num,
    max_epochs: u8,
    check_every: u8,
    seed: u16,
    fit_intercept: bool,
    intercept_scaling: Num,
    inner_epochs: Option<u8>,
}

impl Params {
    fn get(&self) -> FitParams {
        FitParams {
            loss: LOSSES[self.loss as usize % LOSSES.len()].into(),
            smoothing: self.smoothing.get(),
            epsilon: self.epsilon.get(),
            l2: self.l2.get(),
            l1: self.l1.get(),
            solver: SOLVERS[self.solver as usize % SOLVERS.len()].into(),
            sampling: SAMPLINGS[self.sampling as usize % SAMPLINGS.len()].into(),
            tol: self.tol.get(),
            max_epochs: self.max_epochs as i64 % 65,
            check_every: self.check_every as i64 % 9,
            seed: self.seed as i64,
            fit_intercept: self.fit_intercept,
            intercept_scaling: self.intercept_scaling.get(),
            max_seconds: None,
            // Not drawn: a new field would change how the committed seeds decode.
            max_memory: None,
            inner_epochs: self.inner_epochs.map(|k| k as i64 % 9),
            ..FitParams::default()
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    x: Matrix,
    labels: Vec<Num>,
    /// Use the labels as drawn; otherwise classification labels become their sign (`+-1`).
    raw_labels: bool,
    weights: Option<Vec<Num>>,
    params: Params,
    /// Warm model values and whether its width is one too many.
    warm: Option<(Vec<Num>, Num, bool)>,
}

fn run<D: Rows>(x: &D, m: &Built, input: &Input, cfg: &FitConfig) {
    let mut y = fill(&input.labels, m.n);
    if cfg.loss.is_classification() && !input.raw_labels {
        y.iter_mut().for_each(|v| *v = if *v > 0.0 { 1.0 } else { -1.0 });
    }
    let s = input.weights.as_ref().map(|w| fill(w, m.n));
    let problem = match Problem::new(x, &y, s.as_deref(), cfg.loss) {
        Ok(p) => p,
        Err(e) => return not_internal(&e),
    };
    let warm_coef = input.warm.as_ref().map(|(pool, _, wide)| fill(pool, m.d + *wide as usize));
    let warm_intercept = input.warm.as_ref().map(|(_, b, _)| [b.get()]);
    let warm =
        warm_coef.as_ref().zip(warm_intercept.as_ref()).map(|(coef, intercept)| Warm { coef, intercept });
    let r = match fit_from(&problem, cfg, warm.as_ref()) {
        Ok(r) => r,
        Err(e) => return not_internal(&e),
    };
    if let Err(e) = reference::check_fit(&m.dense, &y, s.as_deref(), cfg, &r) {
        panic!(
            "{e}\nconfig {cfg:?}\nx ({} x {}, row-major, sparse {}) {:?}\ny {y:?}\nweights {s:?}\nwarm {:?}",
            m.n, m.d, m.sparse, m.dense, input.warm
        );
    }
    // Zero-weight rows are outside the objective and may overflow where the fit did not: a
    // typed error then, never a non-finite output.
    match row_outputs(&problem, cfg, &r) {
        Ok(rows) => {
            assert!(rows.decision.iter().chain(&rows.gap).all(|v| v.is_finite()), "row outputs {rows:?}")
        }
        Err(e) => not_internal(&e),
    }
}

fuzz_target!(|input: Input| {
    let cfg = match input.params.get().check() {
        Ok(cfg) => cfg,
        Err(e) => return not_internal(&e),
    };
    let m = input.x.build(40, 12);
    if m.sparse {
        match CsrView::new(&m.indptr, &m.indices, &m.values, m.d) {
            Ok(x) => run(&x, &m, &input, &cfg),
            Err(e) => not_internal(&e),
        }
    } else {
        match DenseView::new(&m.dense, m.n, m.d) {
            Ok(x) => run(&x, &m, &input, &cfg),
            Err(e) => not_internal(&e),
        }
    }
});
