//! Invariants of every fit, on random small problems, for every loss and solver (issue 8).
//!
//! Each case draws a problem (dense or CSR, sample weights or not, intercept or not) and
//! parameters (`l2` including the Lasso's `l2 = 0`, `l1`, sampling, `tol`, `max_epochs`,
//! `inner_epochs`, seed) and fits it with every loss and every solver that loss accepts, then
//! checks the result against the independent evaluation of `support` (the contract's formulas,
//! recomputed from a dense copy): finite outputs, `gap >= 0`, `P >= D`, the returned gap equal
//! to `P - D` recomputed from the returned coefficients and duals, a converged fit within `tol`.
//! Further properties: permuting the rows (and switching dense and sparse storage) leaves the
//! optimum within the certified gaps; the same seed gives the identical result.
//!
//! Case counts are sized so this file runs in well under 20 s in a debug build; set
//! `PROPTEST_CASES` for a longer run (it overrides every count here).

mod support;

use proptest::prelude::*;
use sdca_core::{fit, CsrView, DenseView, FitParams, FitResult, Problem, Rows};

/// `default` cases, unless `PROPTEST_CASES` is set (then proptest's own reading of it wins).
fn cases(default: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default;
    }
    config
}

/// Every loss with its parameter, and whether it is smooth (only smooth losses take
/// `solver="accelerated"`).
fn losses() -> impl Strategy<Value = Vec<(FitParams, bool)>> {
    (0.2..2.0f64, 0.0..0.5f64).prop_map(|(smoothing, epsilon)| {
        [
            ("hinge", false),
            ("smooth_hinge", true),
            ("squared_hinge", true),
            ("logistic", true),
            ("squared", true),
            ("absolute", false),
            ("epsilon_insensitive", false),
        ]
        .into_iter()
        .map(|(loss, smooth)| {
            (FitParams { loss: loss.into(), smoothing, epsilon, ..FitParams::default() }, smooth)
        })
        .collect()
    })
}

/// A random problem: `n x d` features (a third of them zero), a real target whose sign gives
/// the classes (rows 0 and 1 are forced into different classes), optional weights (some zero,
/// rows 0 and 1 positive) and the storage.
#[derive(Debug, Clone)]
struct Data {
    d: usize,
    x: Vec<f64>,
    target: Vec<f64>,
    weights: Option<Vec<f64>>,
    sparse: bool,
    /// CSR rows stored in reverse index order (unsorted rows are allowed).
    reversed: bool,
}

fn data() -> impl Strategy<Value = Data> {
    (2usize..=14, 1usize..=5).prop_flat_map(|(n, d)| {
        let entry = prop_oneof![1 => Just(0.0), 2 => -3.0..3.0f64];
        let weight = prop_oneof![1 => Just(0.0), 4 => 0.1..3.0f64];
        (
            proptest::collection::vec(entry, n * d),
            proptest::collection::vec(-4.0..4.0f64, n),
            proptest::option::of(proptest::collection::vec(weight, n)),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(move |(x, mut target, mut weights, sparse, reversed)| {
                target[0] = target[0].abs().max(0.5);
                target[1] = -target[1].abs().max(0.5);
                if let Some(s) = weights.as_mut() {
                    s[0] = s[0].max(1.0);
                    s[1] = s[1].max(1.0);
                }
                Data { d, x, target, weights, sparse, reversed }
            })
    })
}

/// Parameters shared by every loss of a case: regularization (one case in eight is the Lasso,
/// `l2 = 0`), intercept, sampling, stopping and seed.
fn common() -> impl Strategy<Value = FitParams> {
    let l2 = prop_oneof![1 => Just(0.0), 7 => (-5.0..0.0f64).prop_map(|e| 10f64.powf(e))];
    let l1 = prop_oneof![1 => Just(0.0), 1 => (-4.0..-1.0f64).prop_map(|e| 10f64.powf(e))];
    (
        (l2, l1, any::<bool>(), prop_oneof![Just(1.0), 0.3..3.0f64]),
        (
            prop::sample::select(vec!["uniform", "permutation", "gap"]),
            1i64..=3,
            prop::sample::select(vec![1e-3, 1e-6, 1e-9]),
            1i64..=300,
        ),
        (proptest::option::of(1i64..=5), 0i64..=u32::MAX as i64),
    )
        .prop_map(
            |(
                (l2, l1, fit_intercept, intercept_scaling),
                (sampling, check_every, tol, max_epochs),
                (inner_epochs, seed),
            )| {
                FitParams {
                    l2,
                    // The Lasso needs l1 > 0.
                    l1: if l2 == 0.0 { l1.max(1e-2) } else { l1 },
                    fit_intercept,
                    intercept_scaling,
                    sampling: sampling.into(),
                    check_every,
                    tol,
                    max_epochs,
                    inner_epochs,
                    seed,
                    ..FitParams::default()
                }
            },
        )
}

impl Data {
    fn n(&self) -> usize {
        self.target.len()
    }

    /// Labels for `params.loss`: the sign of the target for classification losses.
    fn labels(&self, params: &FitParams) -> Vec<f64> {
        let classification = params.check().map(|c| c.loss.is_classification()).unwrap_or(false);
        self.target
            .iter()
            .map(|&t| {
                if !classification {
                    t
                } else if t > 0.0 {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect()
    }

    /// The rows in the order `perm` (`perm[k]` is the old row of new row `k`).
    fn permuted(&self, perm: &[usize]) -> Data {
        let rows = |i: usize| &self.x[i * self.d..(i + 1) * self.d];
        Data {
            x: perm.iter().flat_map(|&i| rows(i).iter().copied()).collect(),
            target: perm.iter().map(|&i| self.target[i]).collect(),
            weights: self.weights.as_ref().map(|s| perm.iter().map(|&i| s[i]).collect()),
            ..self.clone()
        }
    }

    /// Fits with the storage of `self.sparse` and checks the fit against `support::check_fit`.
    fn fit(&self, params: &FitParams) -> Result<FitResult, TestCaseError> {
        let cfg = params.check().map_err(|e| TestCaseError::fail(format!("params: {e}")))?;
        let y = self.labels(params);
        let s = self.weights.as_deref();
        let r = if self.sparse {
            let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
            for row in self.x.chunks(self.d) {
                let mut entries: Vec<(u32, f64)> =
                    row.iter().enumerate().filter(|(_, x)| **x != 0.0).map(|(j, x)| (j as u32, *x)).collect();
                if self.reversed {
                    entries.reverse();
                }
                indices.extend(entries.iter().map(|e| e.0));
                values.extend(entries.iter().map(|e| e.1));
                indptr.push(indices.len() as i64);
            }
            let view = CsrView::new(&indptr, &indices, &values, self.d).expect("valid csr");
            solve(&view, &y, s, &cfg)
        } else {
            let view = DenseView::new(&self.x, self.n(), self.d).expect("valid dense");
            solve(&view, &y, s, &cfg)
        }?;
        support::check_fit(&self.x, &y, s, &cfg, &r)
            .map_err(|e| TestCaseError::fail(format!("{} / {}: {e}", params.loss, params.solver)))?;
        Ok(r)
    }
}

fn solve<D: Rows>(
    x: &D,
    y: &[f64],
    s: Option<&[f64]>,
    cfg: &sdca_core::FitConfig,
) -> Result<FitResult, TestCaseError> {
    let problem =
        Problem::new(x, y, s, cfg.loss).map_err(|e| TestCaseError::fail(format!("problem: {e}")))?;
    fit(&problem, cfg).map_err(|e| TestCaseError::fail(format!("fit: {e}")))
}

/// Every (loss, solver) pair a fit accepts, with the case's common parameters.
fn every_fit(losses: &[(FitParams, bool)], common: &FitParams) -> Vec<FitParams> {
    let mut out = Vec::new();
    for (loss, smooth) in losses {
        let solvers: &[&str] = if *smooth { &["sdca", "accelerated", "auto"] } else { &["sdca", "auto"] };
        for solver in solvers {
            out.push(FitParams {
                loss: loss.loss.clone(),
                smoothing: loss.smoothing,
                epsilon: loss.epsilon,
                solver: (*solver).into(),
                ..common.clone()
            });
        }
    }
    out
}

/// `(w, b/c)` of a fit (`c` the intercept feature, 0 for none): the vector whose distance to
/// the optimum the strong convexity of `P` (modulus `l2`) bounds.
fn point(r: &FitResult, c: f64) -> Vec<f64> {
    let slot = if c > 0.0 { r.intercept[0] / c } else { 0.0 };
    r.coef.iter().copied().chain([slot]).collect()
}

/// A problem with a random permutation of its rows.
fn data_and_permutation() -> impl Strategy<Value = (Data, Vec<usize>)> {
    data().prop_flat_map(|data| {
        let rows: Vec<usize> = (0..data.n()).collect();
        (Just(data), Just(rows).prop_shuffle())
    })
}

proptest! {
    #![proptest_config(cases(192))]

    /// For every loss and solver: finite outputs, `gap >= 0`, `P >= D`, the returned gap equal
    /// to the recomputed `P - D` (and `>= -1e-12` relative), `converged => gap <= tol P`
    /// (`support::check_fit`, run inside `Data::fit`).
    #[test]
    fn certificate_holds_for_every_loss_and_solver(data in data(), losses in losses(), common in common()) {
        for params in every_fit(&losses, &common) {
            data.fit(&params)?;
        }
    }

}

proptest! {
    #![proptest_config(cases(40))]

    /// Permuting the rows, and storing them the other way (dense / CSR), leaves the optimum
    /// unchanged within the certificates: `|P1 - P2| <= gap1 + gap2`, and for `l2 > 0`
    /// `||w1 - w2|| <= sqrt(2 gap1 / l2) + sqrt(2 gap2 / l2)` (strong convexity).
    #[test]
    fn row_permutation_keeps_the_optimum(
        (data, perm) in data_and_permutation(),
        losses in losses(),
        common in common(),
    ) {
        let common = FitParams { tol: 1e-8, max_epochs: 500, ..common };
        let moved = Data { sparse: !data.sparse, ..data.permuted(&perm) };
        for params in every_fit(&losses, &common) {
            let (a, b) = (data.fit(&params)?, moved.fit(&params)?);
            let (ca, cb) = (a.certificate, b.certificate);
            // The gaps are clamped at 0 and carry rounding of the order of 1e-12 P.
            let slack = 1e-12 * (ca.primal + cb.primal) + 1e-300;
            prop_assert!(
                (ca.primal - cb.primal).abs() <= ca.gap + cb.gap + slack,
                "{} / {}: P {} vs {} with gaps {} {}", params.loss, params.solver, ca.primal, cb.primal, ca.gap, cb.gap
            );
            if params.l2 > 0.0 {
                let c = params.check().map(|c| c.intercept_scaling).unwrap_or(1.0);
                let dist = point(&a, c).iter().zip(&point(&b, c)).map(|(u, v)| (u - v).powi(2)).sum::<f64>().sqrt();
                let radius = (2.0 * (ca.gap + slack) / params.l2).sqrt() + (2.0 * (cb.gap + slack) / params.l2).sqrt();
                prop_assert!(dist <= radius, "{} / {}: ||w1 - w2|| {dist} > {radius}", params.loss, params.solver);
            }
        }
    }

}

proptest! {
    #![proptest_config(cases(48))]

    /// The same seed gives the identical result, bit for bit, for every loss and solver.
    #[test]
    fn same_seed_same_result(data in data(), losses in losses(), common in common()) {
        for params in every_fit(&losses, &common) {
            prop_assert_eq!(data.fit(&params)?, data.fit(&params)?, "{} / {}", params.loss, params.solver);
        }
    }
}
