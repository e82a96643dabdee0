//! Epochs, wall time and certified gap of a multiclass fit on a dense problem read from raw files
//! (for profiling under callgrind or perf and for step-by-step timing of the multiclass
//! solvers; measure CPU time with `/usr/bin/time` on a shared machine).
//!
//! The files are `PREFIX.shape` (text: `rows cols`), `PREFIX.x` (little-endian `f64`,
//! row-major) and `PREFIX.y` (`f64` class indices `0..k`); for the letter-recognition set of
//! `benchmarks/multiclass_goals.py`, write them from its `load("letter")` with numpy's
//! `tofile`. Data is never committed. No intercept, one thread; the solver defaults to
//! `"sdca"` (`"newton"` runs Newton-CG for the multinomial loss).
//!
//! ```text
//! cargo run --release -p sdca-core --example multiclass -- /tmp/mc/letter multiclass_hinge 1e-3 1e-6 [rows] [shrinking] [solver]
//! ```

use std::time::Instant;

use sdca_core::{fit, DenseView, FitParams, Problem};

fn read(path: &str) -> Vec<f64> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or_else(|| default.into());
    let prefix = arg(1, "/tmp/mc/letter");
    let loss = arg(2, "multiclass_hinge");
    let l2: f64 = arg(3, "1e-3").parse().expect("l2");
    let tol: f64 = arg(4, "1e-6").parse().expect("tol");
    let shape = std::fs::read_to_string(format!("{prefix}.shape")).expect("shape file");
    let dims: Vec<usize> = shape.split_whitespace().map(|s| s.parse().expect("shape")).collect();
    let rows: usize = arg(5, &dims[0].to_string()).parse().expect("rows");
    let shrinking: bool = arg(6, "true").parse().expect("shrinking");
    let solver = arg(7, "sdca");
    let (n, d) = (rows.min(dims[0]), dims[1]);
    let mut x = read(&format!("{prefix}.x"));
    let mut y = read(&format!("{prefix}.y"));
    x.truncate(n * d);
    y.truncate(n);
    let view = DenseView::new(&x, n, d).expect("dense");
    let params = FitParams {
        loss: loss.clone(),
        l2,
        tol,
        fit_intercept: false,
        max_epochs: 100_000,
        solver: solver.clone(),
        shrinking,
        ..Default::default()
    };
    let cfg = params.check().expect("config");
    let problem = Problem::new(&view, &y, None, cfg.loss).expect("problem");
    let t = Instant::now();
    let r = fit(&problem, &cfg).expect("fit");
    let secs = t.elapsed().as_secs_f64();
    let c = r.certificate;
    println!(
        "{n} x {d}, {loss}, l2 {l2}, tol {tol}, {} shrinking {shrinking}: epochs {} checks {} {secs:.3} s  P {:.12}  gap/P {:.2e}",
        r.solver,
        r.epochs,
        r.gap_trace.len(),
        c.primal,
        c.gap / c.primal
    );
}
