//! Linear fits on several threads (`n_threads`, shared-memory CoCoA+ in `solver::parallel`):
//! the certificate is the exact gap of the full problem (recomputed independently by
//! `support::check_fit`), the objective equals the one-thread fit's within the certified gaps,
//! and the same seed and thread count give the same bits.

mod support;

use sdca_core::{fit, CsrView, DenseView, FitParams, FitResult, Problem, Status};

/// `n x d` features in `[-1, 1]` (about a third zero), labels from a fixed truth plus noise
/// (their sign for classification), and weights in `{0, 0.5, 1, 2}`.
fn data(n: usize, d: usize, classification: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let x: Vec<f64> = (0..n * d).map(|_| next()).map(|v| if v.abs() < 0.35 { 0.0 } else { v }).collect();
    let y = (0..n)
        .map(|i| {
            let s: f64 = (0..d).map(|j| x[i * d + j] * [1.0, -0.5, 0.25][j % 3]).sum::<f64>() + 0.4 * next();
            match (classification, s > 0.0) {
                (false, _) => s,
                (true, true) => 1.0,
                (true, false) => -1.0,
            }
        })
        .collect();
    let s = (0..n).map(|i| [1.0, 0.5, 0.0, 2.0][i % 4]).collect();
    (x, y, s)
}

fn csr(x: &[f64], n: usize, d: usize) -> (Vec<i64>, Vec<u32>, Vec<f64>) {
    let (mut indptr, mut indices, mut values) = (vec![0i64], Vec::new(), Vec::new());
    for i in 0..n {
        for j in 0..d {
            if x[i * d + j] != 0.0 {
                indices.push(j as u32);
                values.push(x[i * d + j]);
            }
        }
        indptr.push(indices.len() as i64);
    }
    (indptr, indices, values)
}

const LOSSES: [&str; 4] = ["hinge", "logistic", "squared", "smooth_hinge"];

fn params(loss: &str, threads: i64) -> FitParams {
    FitParams {
        loss: loss.into(),
        l2: 1e-2,
        tol: if loss == "hinge" { 1e-6 } else { 1e-9 },
        solver: "sdca".into(),
        max_epochs: 100_000,
        n_threads: Some(threads),
        ..Default::default()
    }
}

/// Every loss, with and without an intercept, `l1` and weights, on 1 to 4 threads: a valid
/// certificate of the full problem that meets `tol`, and the one-thread objective within the
/// sum of the two certified gaps.
#[test]
fn every_thread_count_certifies_the_same_optimum() {
    let (n, d) = (300, 6);
    for loss in LOSSES {
        let (x, y, s) = data(n, d, loss != "squared");
        let view = DenseView::new(&x, n, d).unwrap();
        for (intercept, l1, weights) in [(true, 0.0, false), (false, 1e-3, true), (true, 1e-3, true)] {
            let weights = weights.then_some(s.as_slice());
            let run = |threads: i64| -> (sdca_core::FitConfig, FitResult) {
                let p = FitParams { fit_intercept: intercept, l1, ..params(loss, threads) };
                let cfg = p.check().unwrap();
                let r = fit(&Problem::new(&view, &y, weights, cfg.loss).unwrap(), &cfg).unwrap();
                (cfg, r)
            };
            let (_, one) = run(1);
            for threads in [2, 3, 4] {
                let (cfg, r) = run(threads);
                let case = format!("{loss} intercept={intercept} l1={l1} threads={threads}: {r:?}");
                assert_eq!(r.status, Status::Converged, "{case}");
                support::check_fit(&x, &y, weights, &cfg, &r).unwrap_or_else(|e| panic!("{case}: {e}"));
                let (a, b) = (one.certificate, r.certificate);
                assert!((a.primal - b.primal).abs() <= a.gap + b.gap, "{case}: {a:?} vs {b:?}");
            }
        }
    }
}

/// The same seed and thread count give the same bits (sparse rows, gap sampling too); another
/// seed gives another path to the same certified optimum.
#[test]
fn same_seed_and_threads_same_bits() {
    let (n, d) = (400, 8);
    let (x, y, _) = data(n, d, true);
    let (indptr, indices, values) = csr(&x, n, d);
    let view = CsrView::new(&indptr, &indices, &values, d).unwrap();
    for sampling in ["permutation", "uniform", "gap"] {
        let at = |seed: i64| {
            let p = FitParams { sampling: sampling.into(), seed, ..params("logistic", 2) };
            let cfg = p.check().unwrap();
            fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap()
        };
        let (a, b, other) = (at(7), at(7), at(8));
        assert_eq!(a, b, "{sampling}");
        assert_ne!(a.alpha, other.alpha, "{sampling}: the seed is used");
        let (ca, co) = (a.certificate, other.certificate);
        assert!((ca.primal - co.primal).abs() <= ca.gap + co.gap, "{sampling}");
    }
}

/// More threads than rows, a budget that ends before `tol`, and a fit the parallel path does
/// not take (the Lasso, `l2 = 0`) still return valid certificates.
#[test]
fn small_problems_budgets_and_fallbacks() {
    let (x, y, _) = data(3, 2, true);
    let view = DenseView::new(&x, 3, 2).unwrap();
    let cfg = params("logistic", 8).check().unwrap();
    let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
    support::check_fit(&x, &y, None, &cfg, &r).unwrap();
    assert!(r.converged());

    let (x, y, _) = data(200, 5, true);
    let view = DenseView::new(&x, 200, 5).unwrap();
    let cfg = FitParams { max_epochs: 2, tol: 1e-14, ..params("smooth_hinge", 2) }.check().unwrap();
    let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
    assert_eq!((r.status, r.epochs), (Status::MaxEpochs, 2));
    support::check_fit(&x, &y, None, &cfg, &r).unwrap();

    let lasso = FitParams { l2: 0.0, l1: 1e-2, loss: "squared".into(), ..params("squared", 2) };
    let cfg = lasso.check().unwrap();
    let (x, y, _) = data(200, 5, false);
    let view = DenseView::new(&x, 200, 5).unwrap();
    let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
    support::check_fit(&x, &y, None, &cfg, &r).unwrap();
    assert!(FitParams { n_threads: Some(0), ..Default::default() }.check().is_err());
}
