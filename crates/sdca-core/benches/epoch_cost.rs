//! Cost of linear fits on a CSR matrix dumped from the benchmark data, for profiling without
//! Python (`valgrind --tool=callgrind` on the bench binary, CPU time per epoch).
//!
//! Dump a data set with `python benchmarks/dump_csr.py OUT` (files `OUT.{indptr,indices,values,y}`
//! of raw little-endian int64, uint32, float64, float64 and `OUT.json` with `n`, `d`), then run
//! `cargo bench -p sdca-core --bench epoch_cost -- data=OUT loss=logistic l2=1e-4 tol=1e-6`.
//! Options (`key=value`): `data`, `loss`, `l2`, `l1`, `tol`, `max_epochs`, `check_every`,
//! `sampling`, `solver`, `n_threads`, `reps` (timed fits, after one warm-up), `intercept`
//! (0/1), `stream` (1: also time one streaming pass `X @ v`).
//! Prints one line per fit: CPU seconds, epochs, ns per non-zero per epoch, status, gap.

use std::collections::HashMap;
use std::time::Instant;

use sdca_core::{fit, CsrView, FitParams, Problem, Rows};

/// Process CPU seconds (user + system, all threads) to the nanosecond where the OS has
/// `clock_gettime` (`/proc/self/stat` counts 10 ms ticks: 5% of a 0.2 s fit), else from
/// `/proc/self/stat`.
fn cpu_seconds() -> f64 {
    #[cfg(target_os = "linux")]
    {
        #[repr(C)]
        struct Timespec {
            sec: i64,
            nsec: i64,
        }
        extern "C" {
            fn clock_gettime(clock: i32, out: *mut Timespec) -> i32;
        }
        const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
        let mut t = Timespec { sec: 0, nsec: 0 };
        // SAFETY: `t` is a valid `struct timespec` (two 64-bit fields on 64-bit Linux).
        if unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut t) } == 0 {
            return t.sec as f64 + t.nsec as f64 * 1e-9;
        }
    }
    cpu::cpu_seconds()
}

#[path = "support/cpu.rs"]
mod cpu;

fn read<T: Copy + Default>(path: &str, size: usize) -> Vec<T> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let n = bytes.len() / size;
    let mut out = vec![T::default(); n];
    // SAFETY: `out` holds `n` plain-old-data values of `size` bytes each; the file is raw
    // little-endian values of that type written by numpy's `tofile`.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.as_mut_ptr() as *mut u8, n * size) };
    out
}

fn main() {
    let args: HashMap<String, String> = std::env::args()
        .skip(1)
        .filter_map(|a| a.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect();
    let get = |k: &str, d: &str| args.get(k).cloned().unwrap_or_else(|| d.to_string());
    let Some(data) = args.get("data") else {
        eprintln!("usage: epoch_cost data=PREFIX [loss=.. l2=.. tol=.. ...] (see the module docs)");
        return;
    };
    let indptr: Vec<i64> = read(&format!("{data}.indptr"), 8);
    let indices: Vec<u32> = read(&format!("{data}.indices"), 4);
    let values: Vec<f64> = read(&format!("{data}.values"), 8);
    let y: Vec<f64> = read(&format!("{data}.y"), 8);
    let meta = std::fs::read_to_string(format!("{data}.json")).unwrap_or_default();
    let d: usize = meta
        .split("\"d\":")
        .nth(1)
        .and_then(|s| s.trim().split([',', '}']).next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| indices.iter().max().map_or(0, |&m| m as usize + 1));
    let x = CsrView::new(&indptr, &indices, &values, d).expect("valid CSR");
    let nnz = x.nnz() as f64;
    let mut y = y;
    let loss = get("loss", "logistic");
    if loss == "squared" || loss == "absolute" {
        // Keep the labels as real targets.
    } else {
        y.iter_mut().for_each(|v| *v = if *v > 0.0 { 1.0 } else { -1.0 });
    }
    let params = FitParams {
        loss: loss.clone(),
        l2: get("l2", "1e-4").parse().expect("l2"),
        l1: get("l1", "0").parse().expect("l1"),
        tol: get("tol", "1e-6").parse().expect("tol"),
        max_epochs: get("max_epochs", "100000").parse().expect("max_epochs"),
        check_every: get("check_every", "1").parse().expect("check_every"),
        sampling: get("sampling", "permutation"),
        solver: get("solver", "auto"),
        fit_intercept: get("intercept", "0") == "1",
        n_threads: args.get("n_threads").map(|v| v.parse().expect("n_threads")),
        ..Default::default()
    };
    let cfg = params.check().expect("valid parameters");
    let problem = Problem::new(&x, &y, None, cfg.loss).expect("valid problem");
    if get("stream", "0") == "1" {
        let v: Vec<f64> = (0..d).map(|j| (j % 7) as f64).collect();
        let mut out = vec![0.0; x.n_rows()];
        let mut best = f64::INFINITY;
        for _ in 0..20 {
            let t = Instant::now();
            for (i, o) in out.iter_mut().enumerate() {
                *o = x.dot(i, &v);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "stream X @ v: {:.2} ns/nnz (best of 20; sum {})",
            best * 1e9 / nnz,
            out.iter().sum::<f64>()
        );
    }
    if let Some(k) = args.get("cocoa") {
        let local: u32 = get("local", "1").parse().unwrap();
        cocoa_experiment(&indptr, &indices, &values, &y, d, &cfg, k.parse().unwrap(), local);
        return;
    }
    if get("kernel", "0") == "1" {
        kernel_experiment(&x);
        return;
    }
    let reps: usize = get("reps", "3").parse().expect("reps");
    let mut cpus = Vec::with_capacity(reps);
    for rep in 0..=reps {
        let (c0, t0) = (cpu_seconds(), Instant::now());
        let r = fit(&problem, &cfg).expect("fit");
        let (cpu, wall) = (cpu_seconds() - c0, t0.elapsed().as_secs_f64());
        let label = if rep == 0 { "warm-up" } else { "fit" };
        if rep > 0 {
            cpus.push(cpu);
        }
        println!(
            "{label}: cpu {cpu:.4} s wall {wall:.3} s, {} epochs ({:.1} ns/nnz/epoch wall), {} {:?}, gap {:.3e} rel {:.3e}, primal {:.12}, checks {}",
            r.epochs,
            wall * 1e9 / (nnz * r.epochs.max(1) as f64),
            r.solver,
            r.status,
            r.certificate.gap,
            r.certificate.gap / r.certificate.primal,
            r.certificate.primal,
            r.gap_trace.len(),
        );
        if get("trace", "0") == "1" {
            println!(
                "  trace: {:?}",
                r.gap_trace.iter().map(|g| format!("{:.2e}", g / r.certificate.primal)).collect::<Vec<_>>()
            );
        }
    }
    if !cpus.is_empty() {
        cpus.sort_by(f64::total_cmp);
        println!("median cpu {:.4} s of {} fits", cpus[cpus.len() / 2], cpus.len());
    }
}

#[allow(clippy::too_many_arguments)]
pub fn cocoa_experiment(
    indptr: &[i64],
    indices: &[u32],
    values: &[f64],
    y: &[f64],
    d: usize,
    cfg: &sdca_core::FitConfig,
    parts: usize,
    local: u32,
) {
    use sdca_core::{local_round, Aggregation, Coordinator};
    let n = y.len();
    let bounds: Vec<usize> = (0..=parts).map(|p| p * n / parts).collect();
    let views: Vec<CsrView<'_>> = (0..parts)
        .map(|p| CsrView::new(&indptr[bounds[p]..=bounds[p + 1]], indices, values, d).unwrap())
        .collect();
    let mut alphas: Vec<Vec<f64>> = (0..parts).map(|p| vec![0.0; bounds[p + 1] - bounds[p]]).collect();
    let mut c = Coordinator::new(cfg, (n, d, parts), Aggregation::Add, local, (1000, 0)).unwrap();
    let t = Instant::now();
    while !c.done() {
        let w = c.model().to_vec();
        let outs: Vec<_> = (0..parts)
            .map(|p| {
                let pr =
                    sdca_core::Problem::partition(&views[p], &y[bounds[p]..bounds[p + 1]], None, cfg.loss, 1)
                        .unwrap();
                Some(local_round(&pr, cfg, &c.spec(p), &mut alphas[p], &w).unwrap())
            })
            .collect();
        let cert = c.absorb(&outs).unwrap();
        if let Some(cert) = cert {
            println!("  round {}: rel gap {:.3e}", c.result().outer_iterations, cert.gap / cert.primal);
        }
    }
    let r = c.result();
    println!(
        "cocoa K={parts} local={local}: {} rounds, {:?}, {:.3}s",
        r.outer_iterations,
        r.status,
        t.elapsed().as_secs_f64()
    );
}

#[allow(dead_code)]
pub fn kernel_experiment(x: &CsrView<'_>) {
    let n = x.n_rows();
    let d = x.n_cols();
    let nnz = x.nnz() as f64;
    let mut v: Vec<f64> = (0..d).map(|j| (j % 7) as f64 * 1e-3).collect();
    let seq: Vec<u32> = (0..n as u32).collect();
    let mut perm = seq.clone();
    let mut st = 88172645463325252u64;
    for i in (1..n).rev() {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        perm.swap(i, (st % (i as u64 + 1)) as usize);
    }
    let mut block = Vec::new();
    let b = 16usize;
    let nb = n.div_ceil(b);
    let mut bperm: Vec<usize> = (0..nb).collect();
    for i in (1..nb).rev() {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        bperm.swap(i, (st % (i as u64 + 1)) as usize);
    }
    for &bk in &bperm {
        for i in bk * b..((bk + 1) * b).min(n) {
            block.push(i as u32);
        }
    }
    for (name, order) in [("sequential", &seq), ("random", &perm), ("blocks16", &block)] {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            for &i in order.iter() {
                let a = x.dot(i as usize, &v);
                x.axpy(i as usize, 1e-12 * a, &mut v);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{name}: dot+axpy {:.2} ns/nnz", best * 1e9 / nnz);
    }
}
