//! (Prox-)SDCA for scalar losses.
//!
//! Solves `min_w (1/n) sum_i s_i phi(x_i . w + b, y_i) + (l2/2)||w||^2 + l1 ||w||_1` by
//! maximising its dual one coordinate at a time (Shalev-Shwartz & Zhang, `sdca.txt` Procedure
//! SDCA / SDCA-Perm; `prox-sdca.txt` Figure 1, Option I, for `l1 > 0`).
//!
//! State: `alpha` (one per row) and the unscaled dual sum `v = sum_i s_i alpha_i x_i`
//! (`papers/notes/sdca.md` section 2.5), from which `w = link(v / (l2 n))` is derived on the fly,
//! so a step costs two sparse row operations whatever `l1` is. The step for row `i` is the
//! exact maximiser of the dual along `alpha_i` with `q_i = s_i ||x_i||^2 / (l2 n)` (weights
//! enter only through `q` and the scale of the update).
//!
//! Intercept: a constant feature of value `intercept_scaling` is appended (liblinear's
//! treatment), so the intercept is penalised by `l2` (never by `l1`). `v` carries it in its
//! last slot.
//!
//! Errata handled (see `papers/notes/sdca.md` section 6 and `prox-sdca.md` section 9): the
//! squared loss carries the 1/2 factor; rows with `q_i = 0` cannot move `w`, so their dual is
//! set to its optimum `-phi'(score)` once and never sampled; `v` is rebuilt from `alpha` at
//! every certificate to remove rounding drift.

use rand_xoshiro::Xoshiro256PlusPlus;

use super::{drive, Certificate, Coordinate, FitResult, Problem};
use crate::config::FitConfig;
use crate::data::Rows;
use crate::error::Result;
use crate::loss::Loss;
use crate::reg::{ElasticNet, Reg, L2};

struct State<'p, 'a, D: Rows, L: Loss, R: Reg> {
    problem: &'p Problem<'a, D>,
    loss: L,
    reg: R,
    l2: f64,
    l1: f64,
    /// `1 / (l2 n)`.
    scale: f64,
    /// Constant feature value (0 without intercept).
    bias: f64,
    alpha: Vec<f64>,
    /// `sum_i s_i alpha_i x_i`, length `d + 1` (last slot: intercept feature).
    v: Vec<f64>,
    /// `s_i ||x_i||^2 / (l2 n)` (including the intercept feature).
    q: Vec<f64>,
    active: Vec<u32>,
}

impl<D: Rows, L: Loss, R: Reg> State<'_, '_, D, L, R> {
    fn weights(&self) -> Vec<f64> {
        let d = self.problem.x.n_cols();
        let mut w: Vec<f64> = self.v[..d].iter().map(|&vj| self.reg.link(vj * self.scale)).collect();
        w.push(self.v[d] * self.scale);
        w
    }
}

impl<D: Rows, L: Loss, R: Reg> Coordinate for State<'_, '_, D, L, R> {
    fn active(&self) -> &[u32] {
        &self.active
    }

    fn pass(&mut self, order: &[u32]) {
        let x = self.problem.x;
        let d = x.n_cols();
        for &i in order {
            let i = i as usize;
            let y = self.problem.y[i];
            let s = self.problem.weight(i);
            let a = self.reg.dot(x, i, &self.v, self.scale) + self.bias * self.v[d] * self.scale;
            let old = self.alpha[i];
            let new = self.loss.dual_step(old, a, y, self.q[i]);
            let delta = new - old;
            if delta != 0.0 {
                self.alpha[i] = new;
                x.axpy(i, s * delta, &mut self.v);
                self.v[d] += s * delta * self.bias;
            }
        }
    }

    fn certify(&mut self) -> Certificate {
        let p = self.problem;
        let (x, n, d) = (p.x, p.n(), p.x.n_cols());
        self.v.iter_mut().for_each(|vj| *vj = 0.0);
        for i in 0..n {
            let sa = p.weight(i) * self.alpha[i];
            if sa != 0.0 {
                x.axpy(i, sa, &mut self.v);
                self.v[d] += sa * self.bias;
            }
        }
        let w = self.weights();
        let (mut loss_sum, mut conj_sum, mut gap_sum) = (0.0, 0.0, 0.0);
        for i in 0..n {
            let s = p.weight(i);
            if s == 0.0 {
                continue;
            }
            let a = x.dot(i, &w) + self.bias * w[d];
            let (y, al) = (p.y[i], self.alpha[i]);
            loss_sum += s * self.loss.value(a, y);
            conj_sum += s * self.loss.conj_neg(al, y);
            gap_sum += s * self.loss.block_gap(al, a, y);
        }
        let sq: f64 = w.iter().map(|v| v * v).sum();
        let l1_norm: f64 = w[..d].iter().map(|v| v.abs()).sum();
        let nf = n as f64;
        let primal = loss_sum / nf + 0.5 * self.l2 * sq + self.l1 * l1_norm;
        let dual = -conj_sum / nf - 0.5 * self.l2 * sq;
        Certificate { primal, dual, gap: (gap_sum / nf).max(0.0) }
    }
}

/// Fit with (Prox-)SDCA; dispatches on the regularizer (L2 or elastic net).
pub(crate) fn solve<D: Rows, L: Loss>(
    problem: &Problem<'_, D>,
    loss: L,
    cfg: &FitConfig,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<FitResult> {
    if cfg.l1 > 0.0 {
        run(problem, loss, ElasticNet { threshold: cfg.l1 / cfg.l2 }, cfg, rng)
    } else {
        run(problem, loss, L2, cfg, rng)
    }
}

fn run<D: Rows, L: Loss, R: Reg>(
    problem: &Problem<'_, D>,
    loss: L,
    reg: R,
    cfg: &FitConfig,
    rng: &mut Xoshiro256PlusPlus,
) -> Result<FitResult> {
    let (x, n, d) = (problem.x, problem.n(), problem.x.n_cols());
    let scale = 1.0 / (cfg.l2 * n as f64);
    let bias = cfg.intercept_scaling;
    let mut alpha = vec![0.0; n];
    let mut q = vec![0.0; n];
    let mut active = Vec::with_capacity(n);
    for i in 0..n {
        let s = problem.weight(i);
        q[i] = s * (x.sq_norm(i) + bias * bias) * scale;
        if q[i] > 0.0 {
            active.push(i as u32);
        } else if s > 0.0 {
            // An all-zero row without intercept: its score is always 0.
            alpha[i] = loss.dual_of(0.0, problem.y[i]);
        }
    }
    let mut state = State {
        problem,
        loss,
        reg,
        l2: cfg.l2,
        l1: cfg.l1,
        scale,
        bias,
        alpha,
        v: vec![0.0; d + 1],
        q,
        active,
    };
    let trace = drive(&mut state, cfg, rng);
    let w = state.weights();
    Ok(FitResult {
        coef: w[..d].to_vec(),
        intercept: bias * w[d],
        alpha: state.alpha,
        certificate: trace.certificate,
        epochs: trace.epochs,
        status: trace.status,
        gap_trace: trace.gap_trace,
        solver: "sdca",
    })
}

#[cfg(test)]
mod tests {
    use crate::config::FitParams;
    use crate::data::DenseView;
    use crate::loss::LossKind;
    use crate::solver::{fit, row_outputs, Problem, Status};

    /// A small deterministic problem: `n x d` row-major features and labels.
    fn toy(n: usize, d: usize, classification: bool) -> (Vec<f64>, Vec<f64>) {
        let mut state = 0x2545F4914F6CDD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let x: Vec<f64> = (0..n * d).map(|_| next()).collect();
        let truth: Vec<f64> = (0..d).map(|j| if j % 2 == 0 { 1.0 } else { -0.5 }).collect();
        let y = (0..n)
            .map(|i| {
                let s: f64 = (0..d).map(|j| x[i * d + j] * truth[j]).sum::<f64>() + 0.3 * next();
                if classification {
                    if s > 0.0 {
                        1.0
                    } else {
                        -1.0
                    }
                } else {
                    s
                }
            })
            .collect();
        (x, y)
    }

    fn params(loss: &str) -> FitParams {
        FitParams { loss: loss.into(), l2: 1e-2, tol: 1e-10, max_epochs: 5000, ..Default::default() }
    }

    #[test]
    fn every_loss_reaches_tol_with_valid_certificate() {
        for loss in LossKind::NAMES {
            let cls = ["hinge", "smooth_hinge", "squared_hinge", "logistic"].contains(loss);
            let (x, y) = toy(120, 5, cls);
            let view = DenseView::new(&x, 120, 5).unwrap();
            // Non-smooth losses converge sublinearly (`sdca.txt` Theorem 2): a looser target.
            let tol = if ["hinge", "absolute", "epsilon_insensitive"].contains(loss) { 1e-5 } else { 1e-10 };
            for l1 in [0.0, 1e-3] {
                let cfg = FitParams { l1, tol, ..params(loss) }.check().unwrap();
                let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
                let r = fit(&p, &cfg).unwrap();
                let c = r.certificate;

                assert_eq!(r.status, Status::Converged, "{loss} l1={l1}: {c:?} after {}", r.epochs);
                assert!(c.gap >= 0.0 && c.gap <= tol * c.primal, "{loss}: {c:?}");
                assert!((c.primal - c.dual - c.gap).abs() <= 1e-9 * c.primal.max(1.0), "{loss}: {c:?}");
                let rows = row_outputs(&p, &cfg, &r).unwrap();
                let mean: f64 = rows.gap.iter().sum::<f64>() / 120.0;
                assert!((mean - c.gap).abs() <= 1e-12 + 1e-9 * c.gap, "{loss}: {mean} vs {}", c.gap);
            }
        }
    }

    #[test]
    fn squared_loss_matches_normal_equations() {
        let (n, d, l2) = (60, 3, 0.05);
        let (x, y) = toy(n, d, false);
        let view = DenseView::new(&x, n, d).unwrap();
        let cfg = FitParams { fit_intercept: false, l2, ..params("squared") }.check().unwrap();
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        // (X^T X + l2 n I) w = X^T y, solved by Gaussian elimination.
        let mut a = vec![vec![0.0; d + 1]; d];
        for i in 0..n {
            for j in 0..d {
                for k in 0..d {
                    a[j][k] += x[i * d + j] * x[i * d + k];
                }
                a[j][d] += x[i * d + j] * y[i];
            }
        }
        for (j, row) in a.iter_mut().enumerate() {
            row[j] += l2 * n as f64;
        }
        for c in 0..d {
            let pivot = a[c].clone();
            for (r2, row) in a.iter_mut().enumerate() {
                if r2 != c {
                    let f = row[c] / pivot[c];
                    row.iter_mut().zip(&pivot).for_each(|(x, p)| *x -= f * p);
                }
            }
        }
        // Strong convexity: ||w - w*|| <= sqrt(2 gap / l2).
        let radius = (2.0 * r.certificate.gap / l2).sqrt();
        let dist: f64 = (0..d).map(|j| (r.coef[j] - a[j][d] / a[j][j]).powi(2)).sum::<f64>().sqrt();
        assert!(dist <= radius + 1e-12, "distance {dist} > certified radius {radius}");
        assert_eq!(r.intercept, 0.0);
    }

    #[test]
    fn same_seed_same_model_and_weights_equal_duplicates() {
        let (x, y) = toy(50, 4, true);
        let view = DenseView::new(&x, 50, 4).unwrap();
        let cfg = FitParams { max_epochs: 7, ..params("hinge") }.check().unwrap();
        let p = Problem::new(&view, &y, None, cfg.loss).unwrap();
        assert_eq!(fit(&p, &cfg).unwrap(), fit(&p, &cfg).unwrap());

        // Weight 2 on every row is the problem with each row twice at the same n-scaling.
        let w2 = vec![2.0; 50];
        let cfg = params("logistic").check().unwrap();
        let pw = Problem::new(&view, &y, Some(&w2), cfg.loss).unwrap();
        let rw = fit(&pw, &cfg).unwrap();
        let xx: Vec<f64> = x.iter().chain(x.iter()).copied().collect();
        let yy: Vec<f64> = y.iter().chain(y.iter()).copied().collect();
        let v2 = DenseView::new(&xx, 100, 4).unwrap();
        // (1/50) sum 2 phi + (l2/2)|w|^2 = 2 [(1/100) sum_dup phi + (l2/4)|w|^2].
        let cfg2 = FitParams { l2: 5e-3, ..params("logistic") }.check().unwrap();
        let rd = fit(&Problem::new(&v2, &yy, None, cfg2.loss).unwrap(), &cfg2).unwrap();
        // Both are within their certified radius sqrt(2 gap / strong convexity) of w*.
        let radius = (2.0 * rw.certificate.gap / 1e-2).sqrt() + (2.0 * rd.certificate.gap / 5e-3).sqrt();
        let dist: f64 = rw.coef.iter().zip(&rd.coef).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
        assert!(dist <= radius, "{dist} > {radius}");
    }

    #[test]
    fn zero_rows_and_one_class_are_handled() {
        let x = [0.0, 0.0, 1.0, 2.0, -1.0, 0.5];
        let view = DenseView::new(&x, 3, 2).unwrap();
        let cfg = FitParams { fit_intercept: false, ..params("absolute") }.check().unwrap();
        let y = [0.0, 1.0, -1.0];
        let r = fit(&Problem::new(&view, &y, None, cfg.loss).unwrap(), &cfg).unwrap();
        assert!(r.certificate.gap.is_finite() && r.coef.iter().all(|c| c.is_finite()));
        let cfg = params("hinge").check().unwrap();
        assert!(Problem::new(&view, &[1.0, 1.0, 1.0], None, cfg.loss).is_err());
        assert!(Problem::new(&view, &[1.0, 0.0, -1.0], None, cfg.loss).is_err());
    }
}
