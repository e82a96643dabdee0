//! Epochs, wall time and certified gap of plain SDCA with and without shrinking on a CSR
//! problem read from raw files (median of `--repeat` fits each).
//!
//! The files are `PREFIX.shape` (text: `rows cols nnz`), `PREFIX.indptr` (little-endian
//! `i64`, `rows + 1`), `PREFIX.indices` (`u32`), `PREFIX.values` (`f64`) and `PREFIX.y`
//! (`f64`, one label per row). The CoNLL-2003 token matrix of the benchmarks can be exported so
//! from `benchmarks/cases.py` `load_sparse` with numpy's `tofile`. Data is never committed.
//!
//! ```text
//! cargo run --release -p sdca-core --example shrinking -- /tmp/conll hinge 1e-4 1e-6 3
//! ```

use std::time::Instant;

use sdca_core::{fit, CsrView, FitParams, Problem};

fn read<T>(path: &str, parse: impl Fn(&[u8]) -> T, width: usize) -> Vec<T> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(width).map(parse).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or_else(|| default.into());
    let prefix = arg(1, "/tmp/shrink-data/conll");
    let loss = arg(2, "hinge");
    let l2: f64 = arg(3, "1e-4").parse().expect("l2");
    let tol: f64 = arg(4, "1e-6").parse().expect("tol");
    let repeat: usize = arg(5, "3").parse().expect("repeat");

    let shape = std::fs::read_to_string(format!("{prefix}.shape")).expect("shape file");
    let dims: Vec<usize> = shape.split_whitespace().map(|s| s.parse().expect("shape")).collect();
    let indptr = read(&format!("{prefix}.indptr"), |b| i64::from_le_bytes(b.try_into().unwrap()), 8);
    let indices = read(&format!("{prefix}.indices"), |b| u32::from_le_bytes(b.try_into().unwrap()), 4);
    let values = read(&format!("{prefix}.values"), |b| f64::from_le_bytes(b.try_into().unwrap()), 8);
    let mut y = read(&format!("{prefix}.y"), |b| f64::from_le_bytes(b.try_into().unwrap()), 8);
    if !["hinge", "smooth_hinge", "squared_hinge", "logistic"].contains(&loss.as_str()) {
        // A regression target for the regression losses: the labels shifted off zero.
        y.iter_mut().for_each(|v| *v = 0.5 * *v + 0.25);
    }
    let x = CsrView::new(&indptr, &indices, &values, dims[1]).expect("csr");
    println!("{} rows x {} features, {} nnz; loss {loss}, l2 {l2}, tol {tol}", dims[0], dims[1], dims[2]);

    for shrinking in [false, true] {
        let params = FitParams {
            loss: loss.clone(),
            l2,
            tol,
            fit_intercept: false,
            max_epochs: 100_000,
            solver: "sdca".into(),
            shrinking,
            ..Default::default()
        };
        let cfg = params.check().expect("config");
        let problem = Problem::new(&x, &y, None, cfg.loss).expect("problem");
        let mut runs: Vec<(f64, u32, f64, f64, usize)> = (0..repeat)
            .map(|_| {
                let t = Instant::now();
                let r = fit(&problem, &cfg).expect("fit");
                let secs = t.elapsed().as_secs_f64();
                let c = r.certificate;
                (secs, r.epochs, c.gap / c.primal, c.primal, r.gap_trace.len())
            })
            .collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (secs, epochs, rel_gap, primal, checks) = runs[runs.len() / 2];
        let all: Vec<String> = runs.iter().map(|r| format!("{:.3}", r.0)).collect();
        println!(
            "shrinking={shrinking:<5} epochs {epochs:>4} checks {checks:>3}  {secs:.3} s (runs {})  P {primal:.12}  gap/P {rel_gap:.2e}",
            all.join(", ")
        );
    }
}
