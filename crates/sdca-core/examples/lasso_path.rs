//! Profiling driver for the paths of `benchmarks/paths.py` (not a timed bench; that script's
//! `screening` row runs it): a 100-value path (`l1` from `l1_max` to `1e-3 l1_max`) read from
//! raw little-endian files, so the solver can be profiled without the plugin. Prints one JSON
//! line per run: the CPU seconds, the values and how many converged, the epochs and outer
//! iterations, the worst relative gap, the sum of the objectives (a change of kernels must
//! keep them within the gaps), the features screened and the matrix entries visited (summed
//! over the values: `Path::screened`, `Path::nnz_visited`), and where those entries went
//! (`Path::visits`, summed part by part: sweeps, moves, Newton products, inner checks,
//! refreshes, the seed's products, the outer checks and the completions).
//!
//! Two inputs:
//!
//! - the dense Lasso row (200 x 5,000 Gaussian, seed 0, intercept): dump it with
//!   `X.astype('<f8').tofile('/tmp/lasso_X.bin'); y.astype('<f8').tofile('/tmp/lasso_y.bin')`,
//!   then `cargo run --release -p sdca-core --example lasso_path -- /tmp/lasso_X.bin
//!   /tmp/lasso_y.bin 200 [repeat] [on|off] [tol]` (screening on by default, `tol = 1e-6`);
//! - the sparse rows (CoNLL tokens, no intercept, as `paths.py`'s `enet` and `l1_logistic`):
//!   `python benchmarks/dump_csr.py /tmp/conll50k --n-rows 50000`, then `... --example
//!   lasso_path -- csr /tmp/conll50k [repeat] [on|off] [tol] [squared|logistic] [l1_ratio]`
//!   (default `squared` with `l1_ratio` 0.5, the `enet` row; `logistic` runs at `l2 = 0`).
//!
//! Profile with `perf record -e cpu-clock` on the built example.
use sdca_core::solver::{fit_path, PathParams, Visits};
use sdca_core::{CsrView, DenseView, FitParams, Problem, Rows};

/// Raw little-endian values of `N` bytes each, as numpy's `tofile` writes them.
fn read<T, const N: usize>(path: &str, from: fn([u8; N]) -> T) -> Vec<T> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(N).map(|b| from(b.try_into().unwrap())).collect()
}

/// CPU seconds of this process (user + system, `/proc/self/stat`, clock ticks of 10 ms): the
/// machine is shared, so wall time is noisy.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |k: usize| fields.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::NAN);
    (ticks(11) + ticks(12)) / 100.0
}

const USAGE: &str = "usage: lasso_path X.bin y.bin n_rows [repeat] [on|off] [tol]\n   \
                     or: lasso_path csr PREFIX [repeat] [on|off] [tol] [squared|logistic] [l1_ratio]";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("{USAGE}");
        std::process::exit(2);
    }
    // The arguments after the input's: repeat, screening, tol.
    let csr = args[1] == "csr";
    let rest = &args[if csr { 3 } else { 4 }..];
    let repeat: usize = rest.first().and_then(|s| s.parse().ok()).unwrap_or(1);
    let screening = rest.get(1).is_none_or(|s| s != "off");
    let tol: f64 = rest.get(2).and_then(|s| s.parse().ok()).unwrap_or(1e-6);
    if csr {
        let prefix = &args[2];
        let indptr = read(&format!("{prefix}.indptr"), i64::from_le_bytes);
        let indices = read(&format!("{prefix}.indices"), u32::from_le_bytes);
        let values = read(&format!("{prefix}.values"), f64::from_le_bytes);
        let mut y = read(&format!("{prefix}.y"), f64::from_le_bytes);
        // `d` from dump_csr.py's `PREFIX.json` (trailing features may be empty).
        let meta = std::fs::read_to_string(format!("{prefix}.json"))
            .unwrap_or_else(|e| panic!("{prefix}.json: {e}"));
        let d: usize = meta
            .split("\"d\":")
            .nth(1)
            .and_then(|s| s.split([',', '}']).next())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| panic!("{prefix}.json: no \"d\""));
        let view = CsrView::new(&indptr, &indices, &values, d).unwrap_or_else(|e| panic!("{prefix}: {e}"));
        let loss = rest.get(3).map_or("squared", String::as_str);
        let ratio: f64 = rest.get(4).and_then(|s| s.parse().ok()).unwrap_or(0.5);
        if loss == "logistic" {
            // The 0 / 1 labels of dump_csr.py as the core's -1 / +1 (paths.py's Python calls map them).
            y.iter_mut().for_each(|v| *v = if *v > 0.0 { 1.0 } else { -1.0 });
        }
        let base = FitParams { loss: loss.into(), l2: 0.0, tol, fit_intercept: false, ..Default::default() };
        let l1_ratio = (loss == "squared").then(|| vec![ratio]);
        run(&view, &y, base, PathParams { screening, l1_ratio, ..Default::default() }, repeat);
    } else {
        let (x, y) = (read(&args[1], f64::from_le_bytes), read(&args[2], f64::from_le_bytes));
        let n: usize = args[3].parse().unwrap_or_else(|e| panic!("n_rows {:?}: {e}; {USAGE}", args[3]));
        let view = DenseView::new(&x, n, x.len() / n.max(1)).unwrap_or_else(|e| panic!("X.bin: {e}"));
        let base = FitParams { loss: "squared".into(), l2: 0.0, tol, ..Default::default() };
        run(&view, &y, base, PathParams { screening, ..Default::default() }, repeat);
    }
}

/// `repeat` runs of the path `path` over `x` with the fit options `base`, one JSON line each.
fn run<D: Rows>(x: &D, y: &[f64], base: FitParams, path: PathParams, repeat: usize) {
    let path = path.check(&base).unwrap_or_else(|e| panic!("{e}"));
    let loss = path.config(None).unwrap_or_else(|e| panic!("{e}")).loss;
    let p = Problem::new(x, y, None, loss).unwrap_or_else(|e| panic!("y: {e}"));
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
        let v = out.visits.iter().fold(Visits::default(), |a, b| a.add(b));
        println!(
            "{{\"cpu\": {secs:.3}, \"values\": {}, \"converged\": {converged}, \"epochs\": {epochs}, \
             \"outer\": {outer}, \"worst_gap_rel\": {worst:e}, \"sum_primal\": {sum:.12}, \
             \"screened\": {screened}, \"nnz_visited\": {visited}, \"sweeps\": {}, \"moves\": {}, \
             \"newton\": {}, \"inner_checks\": {}, \"refresh\": {}, \"seed\": {}, \"checks\": {}, \
             \"completion\": {}}}",
            out.fits.len(),
            v.sweeps,
            v.moves,
            v.newton,
            v.inner_checks,
            v.refresh,
            v.seed,
            v.checks,
            v.completion
        );
    }
}
