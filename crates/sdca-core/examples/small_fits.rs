//! Profiling driver for the many-small-groups case (not a timed bench): `groups` fits of 50 x 6
//! (5 N(0, 1) features and a constant column, no intercept), logistic or squared, `l2 = 1e-2`,
//! `tol = 1e-6`, the shapes of `benchmarks/newton_groups.py`. Prints the mean epochs and the sum
//! of the objectives (a change of solver kernels must keep them).
//!
//! Run: `cargo run --release -p sdca-core --example small_fits -- logistic 500 [solver]`; per
//! fit instructions: `valgrind --tool=callgrind --toggle-collect='sdca_core::solver::newton::run*'`
//! on the built example.
use sdca_core::{fit, DenseView, FitParams, Problem};

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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let loss = args.get(1).map_or("logistic", |s| s.as_str());
    let groups: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(500);
    let solver = args.get(3).map_or("auto", |s| s.as_str());
    let (n, d) = (50, 6);
    let mut g = Normal(12345);
    let mut epochs = 0u64;
    let mut total = 0.0;
    for _ in 0..groups {
        let truth: Vec<f64> = (0..d).map(|_| g.next()).collect();
        let x: Vec<f64> = (0..n * d).map(|k| if k % d == d - 1 { 1.0 } else { g.next() }).collect();
        let y: Vec<f64> = (0..n)
            .map(|i| {
                let a: f64 = (0..d).map(|j| x[i * d + j] * truth[j]).sum();
                if loss == "squared" {
                    a + 0.5 * g.next()
                } else if g.uniform() < 1.0 / (1.0 + (-a).exp()) {
                    1.0
                } else {
                    -1.0
                }
            })
            .collect();
        let p = FitParams {
            loss: loss.into(),
            solver: solver.into(),
            l2: 1e-2,
            tol: 1e-6,
            fit_intercept: false,
            max_epochs: 100_000,
            ..Default::default()
        };
        let cfg = p.check().unwrap();
        let view = DenseView::new(&x, n, d).unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        epochs += r.epochs as u64;
        total += r.certificate.primal;
    }
    println!(
        "{loss} {solver}: {groups} fits, mean epochs {:.2}, sum P {total:.12e}",
        epochs as f64 / groups as f64
    );
}
