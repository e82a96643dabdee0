//! CPU seconds of one CRF SDCA epoch on a problem dumped from the benchmarks, without Python
//! (issue 18's goal row; also the binary to profile with `perf record` or callgrind).
//!
//! Dump a problem with `python benchmarks/dump_crf.py /tmp/crf-ner` (files
//! `PREFIX.{indptr,indices,values,starts,y}`: raw little-endian int64, uint32, float64, uint64,
//! uint32, and `PREFIX.json` with `attributes` and `labels`), then
//!
//! ```text
//! cargo run --release -p sdca-core --example crf_epoch -- /tmp/crf-ner 3 3 1 gap
//! ```
//!
//! Arguments: prefix, timed epochs `E`, repetitions, `n_threads`, sampling, and optionally a
//! relative gap `tol` (`0` for none), the fit's `check_every` (default 1) and `dense` (fit on
//! dense rows, as the plugin does for an `Array` column such as OCR's pixels; default sparse). As in `benchmarks/crf_goals.py`, an epoch costs `(fit of 1 + E epochs -
//! fit of 1 epoch) / E` with `check_every = 0`, so the setup and the final certificate cancel.
//! Prints each repetition and the median, with the certificate of the longer fit (same seed and
//! threads: same bits). With `tol`, also one fit to that gap (`check_every = 1`): its epochs,
//! CPU seconds and certificate.

use sdca_core::crf::{crf_fit, CrfFit, CrfParams, CrfProblem, TokenRows};
use sdca_core::{CsrView, DenseView};

#[path = "../benches/support/cpu.rs"]
mod cpu;
use cpu::cpu_seconds;

fn read<T>(path: &str, width: usize, parse: impl Fn(&[u8]) -> T) -> Vec<T> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(width).map(parse).collect()
}

fn field(meta: &str, key: &str) -> usize {
    meta.split(&format!("\"{key}\":"))
        .nth(1)
        .and_then(|s| s.trim().split([',', '}']).next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("{key} missing from the json"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or_else(|| default.into());
    let prefix = arg(1, "/tmp/crf-ner");
    let i64s = |b: &[u8]| i64::from_le_bytes(b.try_into().unwrap_or_default());
    let indptr = read(&format!("{prefix}.indptr"), 8, i64s);
    let indices =
        read(&format!("{prefix}.indices"), 4, |b| u32::from_le_bytes(b.try_into().unwrap_or_default()));
    let values =
        read(&format!("{prefix}.values"), 8, |b| f64::from_le_bytes(b.try_into().unwrap_or_default()));
    let starts: Vec<usize> =
        read(&format!("{prefix}.starts"), 8, i64s).into_iter().map(|s| s as usize).collect();
    let y = read(&format!("{prefix}.y"), 4, |b| u32::from_le_bytes(b.try_into().unwrap_or_default()));
    let meta = std::fs::read_to_string(format!("{prefix}.json")).expect("the json of the dump");
    let (a, k) = (field(&meta, "attributes"), field(&meta, "labels"));
    let x = CsrView::new(&indptr, &indices, &values, a).expect("valid CSR");
    let dense = arg(8, "sparse") == "dense";
    if dense {
        let n_rows = starts.last().copied().unwrap_or(0);
        let mut rows = vec![0.0; n_rows * a];
        for r in 0..n_rows {
            let (idx, val) = x.row(r);
            for (&j, &v) in idx.iter().zip(val) {
                rows[r * a + j as usize] = v;
            }
        }
        let d = DenseView::new(&rows, n_rows, a).expect("valid dense rows");
        run(&args, &d, &starts, &y, k);
    } else {
        run(&args, &x, &starts, &y, k);
    }
}

fn run<D: TokenRows + Sync>(args: &[String], x: &D, starts: &[usize], y: &[u32], k: usize) {
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or_else(|| default.into());
    let prefix = arg(1, "/tmp/crf-ner");
    let epochs: u32 = arg(2, "3").parse().expect("epochs");
    let reps: usize = arg(3, "3").parse().expect("repetitions");
    let threads: i64 = arg(4, "1").parse().expect("n_threads");
    let sampling = arg(5, "gap");
    let problem = CrfProblem::new(x, starts, y, k).expect("valid problem");
    println!(
        "{prefix}: {} sequences, {} tokens, {k} labels, {} attributes ({}); {epochs} timed epochs, \
         n_threads {threads}, sampling {sampling}",
        problem.n_sequences(),
        problem.n_tokens(),
        problem.n_attributes(),
        arg(8, "sparse"),
    );

    let tol: Option<f64> = args.get(6).map(|t| t.parse().expect("tol")).filter(|&t| t > 0.0);
    let period: i64 = arg(7, "1").parse().expect("check_every");
    let fit = |max_epochs: u32, tol: f64| -> (f64, f64, CrfFit) {
        let cfg = CrfParams {
            max_epochs: i64::from(max_epochs),
            check_every: if tol > 0.0 { period } else { 0 },
            tol: tol.max(1e-300),
            n_threads: Some(threads),
            sampling: sampling.clone(),
            ..Default::default()
        }
        .check()
        .expect("valid parameters");
        let (c0, w0) = (cpu_seconds(), std::time::Instant::now());
        let f = crf_fit(&problem, &cfg).expect("fit");
        (cpu_seconds() - c0, w0.elapsed().as_secs_f64(), f)
    };
    let (mut per_epoch, mut per_epoch_wall) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for rep in 0..reps {
        let (one, one_wall, _) = fit(1, 0.0);
        let (more, more_wall, f) = fit(1 + epochs, 0.0);
        let e = (more - one) / f64::from(epochs);
        let e_wall = (more_wall - one_wall) / f64::from(epochs);
        per_epoch.push(e);
        per_epoch_wall.push(e_wall);
        println!(
            "rep {rep}: 1 epoch {one:.2} s, {} epochs {more:.2} s: {e:.3} CPU s / epoch \
             ({e_wall:.3} wall s); P {:.12} D {:.12} gap {:.3e}, line search {:.2} evals",
            1 + epochs,
            f.primal,
            f.dual,
            f.gap,
            f.mean_line_search_iters,
        );
    }
    per_epoch.sort_by(f64::total_cmp);
    per_epoch_wall.sort_by(f64::total_cmp);
    if reps > 0 {
        println!("median {:.3} CPU s / epoch ({:.3} wall s)", per_epoch[reps / 2], per_epoch_wall[reps / 2]);
    }
    if let Some(tol) = tol {
        let (cpu, wall, f) = fit(1000, tol);
        println!(
            "fit to tol {tol:e}: {} epochs, {} checks, {cpu:.2} CPU s ({wall:.2} wall s), {:?}; P {:.12} \
             gap {:.3e}, line search {:.2} evals",
            f.epochs,
            f.gap_trace.len(),
            f.status,
            f.primal,
            f.gap,
            f.mean_line_search_iters,
        );
    }
}
