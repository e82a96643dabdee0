//! Profiling driver for the Lasso path of `benchmarks/paths.py` (not a timed bench; that
//! script's `screening` row runs it): the 100-value path (`l1` from `l1_max` to
//! `1e-3 l1_max`, intercept) on a dense row-major `n x d` matrix and its labels read from raw
//! little-endian f64 files, so the solver can be profiled without the plugin. Prints one JSON
//! line per run: the CPU seconds, the values and how many converged, the epochs and outer
//! iterations, the worst relative gap, the sum of the objectives (a change of kernels must
//! keep them within the gaps), the features screened and the matrix entries visited (summed
//! over the values: `Path::screened`, `Path::nnz_visited`).
//!
//! Dump the data of `paths.py` (200 x 5,000 Gaussian, seed 0) with
//! `X.astype('<f8').tofile('/tmp/lasso_X.bin'); y.astype('<f8').tofile('/tmp/lasso_y.bin')`, then
//! `cargo run --release -p sdca-core --example lasso_path -- /tmp/lasso_X.bin /tmp/lasso_y.bin
//! 200 [repeat] [on|off] [tol]` (screening on by default, `tol = 1e-6`); profile with
//! `perf record -e cpu-clock` on the built example.
use sdca_core::solver::{fit_path, PathParams};
use sdca_core::{DenseView, FitParams, Problem};

fn read(path: &str) -> Vec<f64> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
}

/// CPU seconds of this process (user + system, `/proc/self/stat`, clock ticks of 10 ms): the
/// machine is shared, so wall time is noisy.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |k: usize| fields.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
    (ticks(11) + ticks(12)) / 100.0
}

const USAGE: &str = "usage: lasso_path X.bin y.bin n_rows [repeat] [on|off] [tol]";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("{USAGE}");
        std::process::exit(2);
    }
    let (x, y) = (read(&args[1]), read(&args[2]));
    let n: usize = args[3].parse().unwrap_or_else(|e| panic!("n_rows {:?}: {e}; {USAGE}", args[3]));
    let repeat: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let screening = args.get(5).is_none_or(|s| s != "off");
    let tol: f64 = args.get(6).and_then(|s| s.parse().ok()).unwrap_or(1e-6);
    let d = x.len() / n.max(1);
    let view = DenseView::new(&x, n, d).unwrap_or_else(|e| panic!("X.bin: {e}"));
    let base = FitParams { loss: "squared".into(), l2: 0.0, tol, ..Default::default() };
    let path = PathParams { screening, ..Default::default() }.check(&base).unwrap_or_else(|e| panic!("{e}"));
    let loss = path.config(None).unwrap_or_else(|e| panic!("{e}")).loss;
    let p = Problem::new(&view, &y, None, loss).unwrap_or_else(|e| panic!("y.bin: {e}"));
    for _ in 0..repeat {
        let start = cpu_seconds();
        let out = fit_path(&p, &path).unwrap_or_else(|e| panic!("{e}"));
        let secs = cpu_seconds() - start;
        let epochs: u64 = out.fits.iter().map(|f| u64::from(f.epochs)).sum();
        let outer: u64 = out.fits.iter().map(|f| u64::from(f.outer_iterations)).sum();
        let worst = out.fits.iter().map(|f| f.certificate.gap / f.certificate.primal).fold(0.0, f64::max);
        let sum: f64 = out.fits.iter().map(|f| f.certificate.primal).sum();
        let converged = out.fits.iter().filter(|f| f.converged()).count();
        let screened: usize = out.screened.iter().sum();
        let visited: u64 = out.nnz_visited.iter().sum();
        println!(
            "{{\"cpu\": {secs:.3}, \"values\": {}, \"converged\": {converged}, \"epochs\": {epochs}, \
             \"outer\": {outer}, \"worst_gap_rel\": {worst:e}, \"sum_primal\": {sum:.12}, \
             \"screened\": {screened}, \"nnz_visited\": {visited}}}",
            out.fits.len()
        );
    }
}
