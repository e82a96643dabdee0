//! Where `solver="auto"` should stop picking Newton: time per fit of Newton against plain and
//! accelerated SDCA (what `auto` would pick otherwise) for logistic ridge problems,
//! `tol = 1e-6`, one thread.
//!
//! Run: `cargo bench -p sdca-core --bench newton_crossover`. Rows are `d` N(0, 1) features with
//! an intercept; labels are drawn from a logistic model with N(0, 1) weights. Each cell is the
//! best of three repetitions of the mean time over `groups` problems of `n` rows.

use std::time::Instant;

use sdca_core::{fit, DenseView, FitParams, Problem};

/// xorshift64* uniform in (0, 1) and Box-Muller normals: the bench needs no RNG crate.
struct Normal(u64);

impl Normal {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn next(&mut self) -> f64 {
        (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
    }
}

fn problem(n: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut g = Normal(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1);
    let truth: Vec<f64> = (0..d).map(|_| g.next()).collect();
    let x: Vec<f64> = (0..n * d).map(|_| g.next()).collect();
    let y = (0..n)
        .map(|i| {
            let a: f64 = (0..d).map(|j| x[i * d + j] * truth[j]).sum();
            if g.uniform() < 1.0 / (1.0 + (-a).exp()) {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    (x, y)
}

fn main() {
    println!("| n | d | l2 | newton us/fit | sdca us/fit | accelerated us/fit | best dual / newton | newton epochs | sdca epochs |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for n in [50, 5_000] {
        let groups = if n == 50 { 400 } else { 4 };
        for l2 in [1e-2, 1e-4] {
            for d in [2, 6, 16, 32, 64] {
                let data: Vec<_> = (0..groups).map(|s| problem(n, d, s as u64 + 1)).collect();
                let mut row = Vec::new();
                for solver in ["newton", "sdca", "accelerated"] {
                    let p = FitParams {
                        loss: "logistic".into(),
                        l2,
                        tol: 1e-6,
                        max_epochs: 100_000,
                        ..Default::default()
                    };
                    let cfg = FitParams { solver: solver.into(), ..p }.check().unwrap();
                    let mut best = f64::INFINITY;
                    let mut epochs = 0;
                    for _ in 0..3 {
                        epochs = 0;
                        let start = Instant::now();
                        for (x, y) in &data {
                            let view = DenseView::new(x, n, d).unwrap();
                            let r = fit(&Problem::new(&view, y, None, cfg.loss).unwrap(), &cfg).unwrap();
                            assert!(r.converged(), "{solver} n {n} d {d} l2 {l2}: {:?}", r.status);
                            assert!(r.solver == solver || solver == "accelerated");
                            epochs += r.epochs as usize;
                        }
                        best = best.min(start.elapsed().as_secs_f64() / groups as f64);
                    }
                    row.push((best * 1e6, epochs as f64 / groups as f64));
                }
                println!(
                    "| {n} | {d} | {l2:e} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} |",
                    row[0].0,
                    row[1].0,
                    row[2].0,
                    row[1].0.min(row[2].0) / row[0].0,
                    row[0].1,
                    row[1].1
                );
            }
        }
    }
}
