//! A Lasso path through two nearly collinear columns (found by `tests/test_screening.py`): the
//! optimum's weight moves from one column of the pair to the other, which coordinate descent
//! alone does at the pair's conditioning (it stalled at a relative gap of 1e-5 after 20,000
//! sweeps; the sign-fixed Newton move clipped at the first sign change takes about 20).

use sdca_core::solver::{fit_path, PathParams};
use sdca_core::{DenseView, FitParams, Problem};

#[test]
fn a_nearly_collinear_pair_does_not_stall_the_path() {
    #[rustfmt::skip]
    let x = [
        -8.01931425, -8.02060367, -2.48361622, 4.20445238, 11.36046532,
        1.09706399, 1.09708468, -7.84780355, 7.48745771, 16.34783043,
        2.72768776, 2.72764987, -9.58265205, 16.00019089, 2.02882441,
        -17.32134842, -17.32165276, -11.63225973, -6.29288094, -4.88005823,
        -7.13313372, -7.13418164, -0.63085972, -5.89431258, 4.09637827,
        8.29855307, 8.29815688, -2.56730126, -9.80747356, -1.73155225,
    ];
    let y = [8.34514679, -1.12982192, -3.30960947, 19.25437698, 7.99957128, -9.65579582];
    let view = DenseView::new(&x, 6, 5).unwrap();
    let base = FitParams {
        loss: "squared".into(),
        l2: 0.0,
        fit_intercept: false,
        tol: 1e-10,
        max_epochs: 1_000,
        seed: 5,
        ..Default::default()
    };
    let path = PathParams { n_l1: 8, l1_min_ratio: 0.02, ..Default::default() }.check(&base).unwrap();
    let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
    let out = fit_path(&p, &path).unwrap();
    for (v, f) in out.values.iter().zip(&out.fits) {
        assert!(f.converged(), "l1 {v}: {} epochs, gap {:e}, coef {:?}", f.epochs, f.certificate.gap, f.coef);
    }
}
