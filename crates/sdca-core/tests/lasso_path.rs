//! The Lasso and elastic-net paths of coordinate descent (`solver/cd.rs`, "Paths"): the fits of
//! a path share one copy of the columns, each starts from the last fit's dual point and Newton
//! products, and with `screening` the Gap Safe rules leave features out. None of that may
//! change a model or weaken a certificate: every value of the path must match a separate cold
//! fit at the same penalty, and its certificate must hold against the independent evaluation of
//! `support` (the path keeps no duals, so its certificate's dual is checked against an attained
//! primal value: the separate fit's, recomputed there).

mod support;

use sdca_core::solver::{fit_path, PathParams};
use sdca_core::{fit, CsrView, DenseView, FitParams, Problem, Rows};
use support::{check_fit, Objective};

/// A `p >> n` problem: `n x d` features in `[-1, 1]` with about a quarter of them zero (so
/// that the CSR copy takes the indexed loops), labels from eight true features plus noise and
/// an offset, and sample weights with zeros.
fn data(n: usize, d: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let x: Vec<f64> = (0..n * d)
        .map(|_| {
            let v = next();
            if v.abs() < 0.25 {
                0.0
            } else {
                v
            }
        })
        .collect();
    let y = (0..n)
        .map(|i| (0..8).map(|k| x[i * d + k * 29] * (1.0 + k as f64 / 4.0)).sum::<f64>() + 0.2 * next() + 0.7)
        .collect();
    let s = (0..n).map(|i| if i % 11 == 5 { 0.0 } else { 0.5 + (i % 4) as f64 * 0.5 }).collect();
    (x, y, s)
}

/// The non-zeros of the row-major `n x d` matrix `x` as CSR.
fn csr_of(x: &[f64], d: usize) -> (Vec<i64>, Vec<u32>, Vec<f64>) {
    let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
    for row in x.chunks(d) {
        for (j, &v) in row.iter().enumerate().filter(|(_, v)| **v != 0.0) {
            indices.push(j as u32);
            values.push(v);
        }
        indptr.push(indices.len() as i64);
    }
    (indptr, indices, values)
}

/// Every value of a 12-value path (dense and CSR storage; Lasso and elastic net; with and
/// without an intercept and sample weights; screening on and off), fitted to a relative gap of
/// `1e-10`, has the objective of a separate cold fit (which passes [`check_fit`]) within `1e-8`
/// relative; its reported primal is `P(coef, intercept)` recomputed; and its certificate is
/// valid: `gap >= P - P*`, with `P*` bounded above by the separate fit's recomputed objective,
/// and below it by the separate fit's recomputed dual.
#[test]
fn path_values_match_separate_fits_and_their_certificates_hold() {
    let (n, d) = (40, 240);
    let (x, y, s) = data(n, d);
    let (indptr, indices, values) = csr_of(&x, d);
    let csr = CsrView::new(&indptr, &indices, &values, d).unwrap();
    let dense = DenseView::new(&x, n, d).unwrap();
    for (l2, intercept, weighted) in
        [(0.0, true, true), (0.0, false, false), (1e-3, true, false), (1e-3, false, true)]
    {
        let base = FitParams {
            loss: "squared".into(),
            l2,
            fit_intercept: intercept,
            tol: 1e-10,
            max_epochs: 100_000,
            ..Default::default()
        };
        let s = weighted.then_some(&s[..]);
        for storage in ["dense", "csr"] {
            for screening in [true, false] {
                let case = format!(
                    "l2 {l2} intercept {intercept} weights {weighted} {storage} screening {screening}"
                );
                let path = PathParams { n_l1: 12, l1_min_ratio: 0.01, screening, ..Default::default() }
                    .check(&base)
                    .unwrap();
                let loss = path.config(None).unwrap().loss;
                let (got, separate) = match storage {
                    "dense" => run(&Problem::new(&dense, &y, s, loss).unwrap(), &path),
                    _ => run(&Problem::new(&csr, &y, s, loss).unwrap(), &path),
                };
                // Gap Safe screening leaves features out of the fits below l1_max.
                let left_out = got.screened[1..].iter().any(|&k| k > 0);
                assert_eq!(left_out, screening, "{case}: {:?}", got.screened);
                for ((v, f), (cfg, sep)) in got.values.iter().zip(&got.fits).zip(&separate) {
                    let case = format!("{case} l1 {v}");
                    assert!(f.converged() && sep.converged(), "{case}: {f:?} {sep:?}");
                    assert!(f.solver == "cd" || f.solver == "closed_form", "{case}: {}", f.solver);
                    check_fit(&x, &y, s, cfg, sep).unwrap_or_else(|e| panic!("{case}: separate fit: {e}"));
                    let objective = Objective {
                        x: &x,
                        d,
                        y: &y,
                        s,
                        loss: cfg.loss,
                        l2: cfg.l2,
                        l1: cfg.l1,
                        bias: cfg.intercept_scaling,
                    };
                    let (p, q) = (
                        objective.primal(&f.coef, f.intercept[0]),
                        objective.primal(&sep.coef, sep.intercept[0]),
                    );
                    let c = f.certificate;
                    assert!((p.value - c.primal).abs() <= p.error, "{case}: primal {} vs {p:?}", c.primal);
                    assert!((p.value - q.value).abs() <= 1e-8 * q.value, "{case}: P {p:?} vs separate {q:?}");
                    // gap >= P - P* with P* <= P(separate): the path's dual is below an attained primal.
                    assert!(c.primal - c.gap <= q.value + q.error + p.error, "{case}: {c:?} vs {q:?}");
                    // Weak duality across the two fits: D(separate), recomputed, is below P.
                    let lower = if l2 == 0.0 {
                        objective.lasso_dual(&sep.alpha).unwrap_or_else(|e| panic!("{case}: {e}"))
                    } else {
                        objective.dual(&sep.alpha)
                    };
                    assert!(
                        lower.value - lower.error <= p.value + p.error,
                        "{case}: D(separate) {lower:?} > P {p:?}"
                    );
                }
            }
        }
    }
}

/// The path of `path` on `problem`, with each value's config and a separate cold fit there.
fn run<D: Rows>(
    problem: &Problem<'_, D>,
    path: &sdca_core::solver::PathConfig,
) -> (sdca_core::solver::Path, Vec<(sdca_core::FitConfig, sdca_core::FitResult)>) {
    let got = fit_path(problem, path).unwrap();
    let separate = got
        .values
        .iter()
        .map(|&v| {
            let cfg = path.config(Some(v)).unwrap();
            let fit = fit(problem, &cfg).unwrap();
            (cfg, fit)
        })
        .collect();
    (got, separate)
}
