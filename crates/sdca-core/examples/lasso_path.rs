//! Profiling driver for the Lasso path of `benchmarks/paths.py` (not a timed bench): the
//! 100-value path (`l1` from `l1_max` to `1e-3 l1_max`, intercept, `tol = 1e-6`) on a dense
//! row-major `n x d` matrix and its labels read from raw little-endian f64 files, so the solver
//! can be profiled without the plugin. Prints the CPU seconds, the epochs, the worst relative
//! gap and the sum of the objectives (a change of kernels must keep them within the gaps).
//!
//! Dump the data of `paths.py` (200 x 5,000 Gaussian, seed 0) with
//! `X.astype('<f8').tofile('/tmp/lasso_X.bin'); y.astype('<f8').tofile('/tmp/lasso_y.bin')`, then
//! `cargo run --release -p sdca-core --example lasso_path -- /tmp/lasso_X.bin /tmp/lasso_y.bin
//! 200 [repeat] [screening]`; profile with `perf record -e cpu-clock` on the built example.
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (x, y) = (read(&args[1]), read(&args[2]));
    let n: usize = args[3].parse().unwrap();
    let repeat: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let screening = args.get(5).is_none_or(|s| s != "off");
    let tol: f64 = args.get(6).and_then(|s| s.parse().ok()).unwrap_or(1e-6);
    let d = x.len() / n;
    let view = DenseView::new(&x, n, d).unwrap();
    let base = FitParams { loss: "squared".into(), l2: 0.0, tol, ..Default::default() };
    let path = PathParams { screening, ..Default::default() }.check(&base).unwrap();
    let p = Problem::new(&view, &y, None, path.config(None).unwrap().loss).unwrap();
    for _ in 0..repeat {
        let start = cpu_seconds();
        let out = fit_path(&p, &path).unwrap();
        let secs = cpu_seconds() - start;
        let epochs: u64 = out.fits.iter().map(|f| u64::from(f.epochs)).sum();
        let outer: u64 = out.fits.iter().map(|f| u64::from(f.outer_iterations)).sum();
        let worst = out.fits.iter().map(|f| f.certificate.gap / f.certificate.primal).fold(0.0, f64::max);
        let sum: f64 = out.fits.iter().map(|f| f.certificate.primal).sum();
        let converged = out.fits.iter().filter(|f| f.converged()).count();
        println!(
            "{secs:.2} CPU-s, {} values ({converged} converged), epochs {epochs}, outer {outer}, worst rel gap \
             {worst:.2e}, sum P {sum:.12}",
            out.fits.len()
        );
    }
}
